//! Statistics per job, as fio keeps them: bytes, ios, runtime, slat/clat/lat
//! with fio's log-linear latency histogram (percentiles match fio's), bw/iops
//! samples every `bwavgtime`, io depth distributions. Constant memory for any
//! run length.

use crate::job::{Ddir, JobSpec};
use crate::sim::time::Ns;

/// Everything fio reports for one job (or one group, after `merge`).
#[derive(Clone, Debug)]
pub struct JobStats {}

impl JobStats {
    pub fn new(spec: &JobSpec) -> JobStats {
        let _ = spec;
        todo!("stats")
    }
    /// Measurement starts (job start, or end of ramp_time); resets counters.
    pub fn begin(&mut self, now: Ns) {
        let _ = now;
        todo!("stats")
    }
    /// One completed I/O. `slat` is None for sync engines (fio does not measure it).
    pub fn record_io(&mut self, ddir: Ddir, bytes: u64, slat: Option<Ns>, clat: Ns, lat: Ns, now: Ns) {
        let _ = (ddir, bytes, slat, clat, lat, now);
        todo!("stats")
    }
    /// One completed fsync/fdatasync (`sync` object: total_ios, lat_ns).
    pub fn record_sync(&mut self, lat: Ns) {
        let _ = lat;
        todo!("stats")
    }
    /// One submit call that sent `nr` I/Os; `depth` is the job's queue depth
    /// (I/Os in flight) after it.
    pub fn record_submit(&mut self, nr: u32, depth: u32) {
        let _ = (nr, depth);
        todo!("stats")
    }
    /// One reap call that collected `nr` completions.
    pub fn record_complete(&mut self, nr: u32) {
        let _ = nr;
        todo!("stats")
    }
    /// Measurement ends (job finished).
    pub fn end(&mut self, now: Ns) {
        let _ = now;
        todo!("stats")
    }
    /// Fold another job's stats into this one (group_reporting).
    pub fn merge(&mut self, other: &JobStats) {
        let _ = other;
        todo!("stats")
    }
    /// Total I/Os completed per direction (for tests and tables).
    pub fn total_ios(&self, ddir: Ddir) -> u64 {
        let _ = ddir;
        todo!("stats")
    }
    /// Mean total latency (lat) in ns per direction, 0 when none.
    pub fn lat_mean_ns(&self, ddir: Ddir) -> f64 {
        let _ = ddir;
        todo!("stats")
    }
    /// Measured runtime in ns (fio's per-direction runtime, max over directions).
    pub fn runtime_ns(&self) -> Ns {
        todo!("stats")
    }
    /// Bytes per direction.
    pub fn io_bytes(&self, ddir: Ddir) -> u64 {
        let _ = ddir;
        todo!("stats")
    }
}
