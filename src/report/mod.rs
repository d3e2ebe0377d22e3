//! Reports: fio's normal text, JSON, json+ and terse formats from one
//! results type, which both the simulator and the real-device lab fill.

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
    /// The run's full description (a `RunSpec` as JSON) for a simulation,
    /// so the result can be re-run (`elevator run --spec`).
    pub spec: Option<serde_json::Value>,
    /// What the user should know about the run (a switch that failed...).
    pub warnings: Vec<String>,
    /// What became of each of `switches`, in the same order (simulation
    /// only; empty when unknown, e.g. for a report read from fio's JSON).
    pub switch_log: Vec<SwitchOutcome>,
    /// `/sys/block/DEV/stat` at the end of the run (simulation), printed as
    /// `"disk_stats"`.
    pub disk_stats: Option<crate::block::stat::DiskStatFields>,
    /// The kernel era of a simulation run with `--kernel` (printed as
    /// `"kernel"`); None for the default (newest) kernel and for the lab.
    pub kernel: Option<String>,
    /// The page cache over the run when some job did buffered I/O,
    /// printed as `"page_cache"` (absent for direct I/O).
    pub page_cache: Option<PageCacheReport>,
    /// CPU time the simulated machine was busy over the run, all CPUs
    /// (tasks, block layer, drivers' kernel threads, completions); None
    /// for the lab. Not printed; `calibrate` compares it per I/O with the
    /// machine's /proc/stat.
    pub cpu_busy_ns: Option<Ns>,
    /// Counts of a simulation to set beside the kernel's (`/proc/softirqs`,
    /// fio's `ctx`); None for the lab. Not printed.
    pub counters: Option<SimCounters>,
    /// The file system (`--mount`): its journal's work, printed as `"fs"`.
    pub fs: Option<FsReport>,
    /// Requests the driver took, when the run traced them (printed as
    /// `"requests"`).
    pub requests: Vec<crate::block::trace::TracedRq>,
}

/// What a simulation counted that the kernel counts too.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimCounters {
    /// Times fio jobs slept in `io_getevents` (or a synchronous call)
    /// waiting for their I/O.
    pub io_sleeps: u64,
    /// Those sleeps that ended with a wake-up from idle on their CPU.
    pub io_wakeups_charged: u64,
    /// BLOCK_SOFTIRQ runs a device raised from process context (the loop
    /// worker's completions), and the completions they ran.
    pub softirq_runs: u64,
    pub softirq_completions: u64,
    /// CPU time of device work a submitter ran inside `queue_rq` for the
    /// device's worker (the loop worker's commands run on the submitter's
    /// CPU, `[loop] nowait_percent`): counted in that task's CPU here,
    /// where the kernel counts it as its kworker's.
    pub inline_device_ns: u64,
    /// CPU time the model kept CPUs busy waking from idle (`[cpu]
    /// wake_ns`), part of `cpu_busy_ns`; the kernel counts it as idle.
    pub idle_wake_ns: u64,
    /// How many such wake-ups: a task or the device's worker woken on an
    /// idle CPU (the kernel's exits from idle).
    pub idle_wakes: u64,
}

/// What the mounted file system did.
#[derive(Clone, Debug, PartialEq)]
pub struct FsReport {
    /// `--mount` as given.
    pub mount: String,
    pub journal: crate::fs::jbd2::JournalStats,
    /// Where the journal is: first sector and length in 4 KiB blocks.
    pub journal_start_sector: u64,
    pub journal_blocks: u64,
}

/// The page-cache view of a buffered run.
#[derive(Clone, Debug, PartialEq)]
pub struct PageCacheReport {
    pub view: crate::cache::CacheView,
    /// The `vm.*` sysctls in effect.
    pub vm: Vec<(String, u64)>,
    /// Per job (in job order): time its writer slept in
    /// `balance_dirty_pages`.
    pub throttled_ns: Vec<(String, u64)>,
}

/// What became of one requested scheduler switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchOutcome {
    /// The queue drained from `drain_start` to `done`, then switched.
    Switched { drain_start: Ns, done: Ns },
    /// The scheduler was already the requested one: nothing happened.
    AlreadyActive,
    /// A later switch was requested while this one drained (from
    /// `drain_start`) and took its place.
    Superseded { drain_start: Ns },
    /// Asked for, still draining when the run ended.
    Unfinished { drain_start: Ns, run_end: Ns },
    /// The run ended at `run_end`, before the switch's time.
    NotReached { run_end: Ns },
}

impl SwitchOutcome {
    /// Whether the switch took place (or had nothing to do).
    pub fn happened(&self) -> bool {
        matches!(
            self,
            SwitchOutcome::Switched { .. } | SwitchOutcome::AlreadyActive
        )
    }
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

impl RunReport {
    /// Reads, writes and trims completed by all jobs.
    pub fn completed_ios(&self) -> u64 {
        self.jobs
            .iter()
            .map(|j| j.stats.dirs.iter().map(|d| d.total_ios).sum::<u64>())
            .sum()
    }
}

pub mod fio_json;
pub mod fio_terse;
pub mod fio_text;
pub mod numfmt;
pub mod switches;
pub mod table;

/// The fio version whose output layout we reproduce (the "fio version" string
/// itself names elevator).
pub const FIO_COMPAT_VERSION: &str = "3.33";

/// One printed stats block: a job, or with `group_reporting` a run of jobs
/// of the same group folded together (fio's `threadstats` entries).
#[derive(Clone, Debug)]
pub struct Entry<'a> {
    /// Name of the first job in the entry.
    pub name: &'a str,
    pub groupid: u32,
    /// First job's pid (deterministic: 1000 + job_index).
    pub pid: u32,
    pub stats: JobStats,
    /// "job options" of the entry: fio keeps the last member's list.
    pub job_options: &'a [(String, String)],
    /// Longest `elapsed_ns` of the members.
    pub elapsed_ns: Ns,
    /// First job's `description`.
    pub description: Option<&'a str>,
}

/// What goes where in the output, in job order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Item {
    Entry(usize),
    /// Index into `RunReport::jobs` of a job that did not run.
    NotModelled(usize),
}

/// fio's `group_run_stats` for one reporting group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRun {
    pub groupid: u32,
    /// ms per direction.
    pub max_run: [u64; 3],
    pub min_run: [u64; 3],
    /// Bytes/s per direction.
    pub max_bw: [u64; 3],
    pub min_bw: [u64; 3],
    pub iobytes: [u64; 3],
    /// Aggregate bandwidth: group bytes / longest runtime, bytes/s.
    pub agg: [u64; 3],
}

impl GroupRun {
    fn new(groupid: u32) -> GroupRun {
        GroupRun {
            groupid,
            max_run: [0; 3],
            min_run: [0; 3],
            max_bw: [0; 3],
            min_bw: [u64::MAX; 3],
            iobytes: [0; 3],
            agg: [0; 3],
        }
    }

    /// fio's `convert_agg_kbytes_percent`: a job's mean bw (KiB/s,
    /// truncated to an int as fio passes it) as percent of the group's.
    pub fn agg_percent(&self, d: usize, mean_kib: f64) -> f64 {
        if self.agg[d] <= 1024 {
            return 100.0;
        }
        let mean = mean_kib as i32 as f64;
        let p = mean * 100.0 / (self.agg[d] as f64 / 1024.0);
        p.min(100.0)
    }
}

/// Entries, output order and group totals, computed the way fio's
/// `__show_run_stats` does.
#[derive(Clone, Debug)]
pub struct Layout<'a> {
    pub entries: Vec<Entry<'a>>,
    pub items: Vec<Item>,
    /// Indexed by group id, 0..=highest group id of any job.
    pub groups: Vec<GroupRun>,
}

pub fn layout(report: &RunReport) -> Layout<'_> {
    let mut entries: Vec<Entry> = Vec::new();
    let mut items = Vec::new();
    let mut last_gid: Option<u32> = None;
    for (i, job) in report.jobs.iter().enumerate() {
        if let JobStatus::NotModelled(_) = job.status {
            // Like fio's stats=0 jobs: no entry, no effect on grouping.
            items.push(Item::NotModelled(i));
            continue;
        }
        let spec = &job.spec;
        // fio starts a new entry unless this job has group_reporting and is
        // in the same group as the previous one.
        let join = !entries.is_empty() && spec.group_reporting && last_gid == Some(spec.group_id);
        if join {
            let e = entries.last_mut().expect("non-empty");
            e.stats.merge(&job.stats);
            e.job_options = &spec.job_options;
            e.elapsed_ns = e.elapsed_ns.max(job.elapsed_ns);
        } else {
            items.push(Item::Entry(entries.len()));
            entries.push(Entry {
                name: &spec.name,
                groupid: spec.group_id,
                pid: 1000 + spec.job_index,
                stats: job.stats.clone(),
                job_options: &spec.job_options,
                elapsed_ns: job.elapsed_ns,
                description: spec.description.as_deref(),
            });
        }
        last_gid = Some(spec.group_id);
    }
    let max_gid = report.jobs.iter().map(|j| j.spec.group_id).max();
    let mut groups: Vec<GroupRun> = match max_gid {
        Some(g) => (0..=g).map(GroupRun::new).collect(),
        None => Vec::new(),
    };
    for e in &entries {
        let rs = &mut groups[e.groupid as usize];
        for (d, ds) in e.stats.dirs.iter().enumerate() {
            let runt = ds.runtime_ms;
            if runt == 0 {
                continue;
            }
            if runt < rs.min_run[d] || rs.min_run[d] == 0 {
                rs.min_run[d] = runt;
            }
            rs.max_run[d] = rs.max_run[d].max(runt);
            let bw = ds.io_bytes * 1000 / runt;
            rs.min_bw[d] = rs.min_bw[d].min(bw);
            rs.max_bw[d] = rs.max_bw[d].max(bw);
            rs.iobytes[d] += ds.io_bytes;
        }
    }
    for rs in groups.iter_mut() {
        for d in 0..3 {
            rs.agg[d] = (rs.iobytes[d] * 1000)
                .checked_div(rs.max_run[d])
                .unwrap_or(0);
        }
    }
    Layout {
        entries,
        items,
        groups,
    }
}

/// Percent of `part` in `total` as fio's `stat_calc_dist` (depth maps):
/// at least 0.1 when non-zero.
pub(crate) fn dist(map: &[u64], total: u64) -> Vec<f64> {
    map.iter()
        .map(|m| {
            if total == 0 {
                return 0.0;
            }
            let v = *m as f64 / total as f64 * 100.0;
            if v < 0.1 && *m > 0 {
                0.1
            } else {
                v
            }
        })
        .collect()
}

/// fio's `stat_calc_lat` (latency buckets): at least 0.01 when non-zero,
/// relative to all read/write/trim I/Os.
pub(crate) fn lat_dist(src: &[u64], stats: &JobStats) -> Vec<f64> {
    let total: u64 = stats.dirs.iter().map(|d| d.total_ios).sum();
    src.iter()
        .map(|s| {
            if total == 0 {
                return 0.0;
            }
            let v = *s as f64 / total as f64 * 100.0;
            if v < 0.01 && *s > 0 {
                0.01
            } else {
                v
            }
        })
        .collect()
}

/// fio's `io_ddir_name`.
pub(crate) const DDIR_NAMES: [&str; 3] = ["read", "write", "trim"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Ddir, JobSpec};

    fn job(name: &str, gid: u32, idx: u32, gr: bool, bytes: u64, runtime_ms: u64) -> JobResult {
        let mut spec = JobSpec::with_defaults(name);
        spec.group_id = gid;
        spec.job_index = idx;
        spec.group_reporting = gr;
        let mut stats = JobStats::new(&spec);
        stats.begin(0);
        for i in 0..bytes / 4096 {
            stats.record_io(Ddir::Read, 4096, None, 1000, 1000, i);
        }
        stats.end(runtime_ms * 1_000_000);
        JobResult {
            spec,
            stats,
            status: JobStatus::Ran,
            elapsed_ns: runtime_ms * 1_000_000,
        }
    }

    fn report(jobs: Vec<JobResult>) -> RunReport {
        RunReport {
            global_options: vec![],
            jobs,
            disk_util: vec![],
            elevator: ElevatorMeta::default(),
            timestamp: 0,
        }
    }

    #[test]
    fn group_reporting_folds_consecutive_jobs_of_a_group() {
        let mut nm = job("x", 1, 3, true, 0, 0);
        nm.status = JobStatus::NotModelled("no".into());
        let r = report(vec![
            job("a", 0, 0, true, 4096 * 10, 1000),
            job("a", 0, 1, true, 4096 * 30, 2000),
            job("b", 1, 2, true, 4096 * 5, 500),
            nm,
            job("b", 1, 4, true, 4096 * 5, 500),
            job("c", 3, 5, false, 4096, 100),
        ]);
        let lay = layout(&r);
        assert_eq!(lay.entries.len(), 3);
        assert_eq!(
            lay.items,
            vec![
                Item::Entry(0),
                Item::Entry(1),
                Item::NotModelled(3),
                Item::Entry(2)
            ]
        );
        assert_eq!(lay.entries[0].stats.members, 2);
        assert_eq!(lay.entries[0].pid, 1000);
        assert_eq!(lay.entries[1].stats.members, 2);
        assert_eq!(lay.entries[1].pid, 1002);
        assert_eq!(lay.groups.len(), 4);
        let g0 = &lay.groups[0];
        assert_eq!(g0.max_run[0], 2000);
        assert_eq!(g0.min_run[0], 2000);
        assert_eq!(g0.iobytes[0], 4096 * 40);
        assert_eq!(g0.agg[0], 4096 * 40 * 1000 / 2000);
        assert_eq!(lay.groups[2].max_run, [0; 3]);
    }

    #[test]
    fn without_group_reporting_every_job_is_an_entry() {
        let r = report(vec![
            job("a", 0, 0, false, 4096 * 10, 1000),
            job("a", 0, 1, false, 4096 * 30, 2000),
        ]);
        let lay = layout(&r);
        assert_eq!(lay.entries.len(), 2);
        let g = &lay.groups[0];
        assert_eq!((g.min_run[0], g.max_run[0]), (1000, 2000));
        assert_eq!(g.min_bw[0], 4096 * 10);
        assert_eq!(g.max_bw[0], 4096 * 30 / 2);
        // 10 of 20 KiB/s-equivalents: per= is the job's share of the group.
        assert_eq!(
            g.agg_percent(0, 20.9),
            20.0 * 100.0 / (g.agg[0] as f64 / 1024.0)
        );
    }

    #[test]
    fn distributions_floor_small_nonzero_values() {
        assert_eq!(dist(&[1, 999_999, 0], 1_000_000), vec![0.1, 99.9999, 0.0]);
        assert_eq!(dist(&[1, 2], 0), vec![0.0, 0.0]);
    }
}
