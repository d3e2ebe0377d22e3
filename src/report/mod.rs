//! Reports: fio's normal text and JSON formats from one results type, which
//! both the simulator and the real-device lab fill.

use crate::job::JobSpec;
use crate::sim::time::Ns;
use crate::stats::JobStats;

/// Whether a job ran.
#[derive(Clone, Debug, PartialEq)]
pub enum JobStatus {
    Ran,
    /// The job's engine cannot be modelled (reason printed per job).
    NotModelled(String),
}

/// One job's outcome.
#[derive(Clone, Debug)]
pub struct JobResult {
    pub spec: JobSpec,
    pub stats: JobStats,
    pub status: JobStatus,
    /// Wall time the job existed, start to end, ns (fio's "elapsed", in s in JSON).
    pub elapsed_ns: Ns,
}

/// fio's `disk_util` entry (Linux /proc/diskstats deltas over the run).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_sectors: u64,
    pub write_sectors: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    /// ms, summed over requests (diskstats "time spent reading").
    pub read_ticks: u64,
    pub write_ticks: u64,
    /// ms, integral of requests in flight over time (weighted io ticks).
    pub in_queue: u64,
    /// Percent of the run with at least one request in flight.
    pub util: f64,
}

/// What elevator adds to fio's JSON (`"elevator": {...}`).
#[derive(Clone, Debug, Default)]
pub struct ElevatorMeta {
    pub version: String,
    /// "simulation" or "lab".
    pub mode: String,
    pub scheduler: String,
    pub device: String,
    /// Queue and scheduler knobs in effect, sysfs names (`nr_requests`, `iosched/fifo_batch`).
    pub knobs: Vec<(String, String)>,
    pub seed: u64,
    /// Scheduler switches `(at_ns, name)`.
    pub switches: Vec<(Ns, String)>,
}

/// A whole run, ready to print.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub global_options: Vec<(String, String)>,
    pub jobs: Vec<JobResult>,
    pub disk_util: Vec<DiskUtil>,
    pub elevator: ElevatorMeta,
    /// Seconds since the epoch printed as fio's timestamp (SOURCE_DATE_EPOCH or 0,
    /// so output is byte-identical across runs).
    pub timestamp: u64,
}
