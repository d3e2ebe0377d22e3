//! Workload generators: one I/O stream per job. Offsets (sequential, uniform
//! random with full coverage, zipf/pareto/normal), block sizes, read/write mix,
//! and the rate limiter. Memory is O(1) in device size and I/O count.

use crate::job::{Ddir, JobSpec};
use crate::sim::time::Ns;

/// A byte range of the device a job's file occupies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub len: u64,
}

/// The files one job does I/O to (usually one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobLayout {
    pub files: Vec<Region>,
    /// Bytes of I/O the job does per loop (io_size, else size).
    pub io_bytes: u64,
}

/// One I/O to issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoUnit {
    pub ddir: Ddir,
    /// Absolute byte offset on the device.
    pub offset: u64,
    pub len: u64,
}

/// Place every job's files on a device of `device_bytes`.
pub fn layout(jobs: &[JobSpec], device_bytes: u64) -> Result<Vec<JobLayout>, String> {
    let _ = (jobs, device_bytes);
    todo!("workload layout")
}

/// Offsets, sizes and directions for one job.
pub struct Generator {}

impl Generator {
    pub fn new(spec: &JobSpec, layout: &JobLayout, seed: u64) -> Result<Generator, String> {
        let _ = (spec, layout, seed);
        todo!("workload generator")
    }
    /// The next I/O, or None when the job's I/O budget (size/io_size × loops,
    /// number_ios) is used up. Never None for `time_based` jobs.
    pub fn next_io(&mut self) -> Option<IoUnit> {
        todo!("workload generator")
    }
}

/// Rate limiting (`rate`, `rate_iops`, `rate_process`).
pub struct RateLimiter {}

impl RateLimiter {
    /// None when the job has no rate limit.
    pub fn new(spec: &JobSpec, seed: u64) -> Option<RateLimiter> {
        let _ = (spec, seed);
        todo!("rate limiter")
    }
    /// Earliest time at or after `now` at which an I/O of `ddir`/`bytes` may be
    /// issued, given the job started at `start`; records the I/O as issued.
    pub fn issue_at(&mut self, now: Ns, start: Ns, ddir: Ddir, bytes: u64) -> Ns {
        let _ = (now, start, ddir, bytes);
        todo!("rate limiter")
    }
}
