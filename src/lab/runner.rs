//! One lab session: a job file on a real device under each scheduler the
//! kernel offers, `repeat` rounds with the schedulers interleaved inside each
//! round (A B C D, A B C D, ...), so that slow drift of the machine hits every
//! scheduler alike and ratios can be paired within a round.
//!
//! Before anything is written, the queue's scheduler, knobs and tunables are
//! snapshotted and journaled ([`super::session`]); afterwards (also after an
//! error, a panic or Ctrl-C; after SIGKILL the next run does it) they are
//! written back in dependency order and checked, and the cgroups the session
//! created are removed.

use super::device::{in_write_order, limits_before_switch, BlockDev, Queue};
use super::fio::{self, CpuTimes};
use super::fsmount::FsSpec;
use super::jobfile::{self, Prepared, Rewrite, Target};
use super::session::Session;
use super::{signal, LabError};
use crate::block::stat::DiskStatFields;
use crate::job::JobFile;
use crate::report::RunReport;
use crate::sim::time::Ns;
use std::path::{Path, PathBuf};
use std::time::Duration;
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct LabOptions {
    pub job: PathBuf,
    pub dev: String,
    /// None: every scheduler the device offers.
    pub schedulers: Option<Vec<String>>,
    /// `--set KNOB=VALUE`: queue knobs, or `iosched/NAME` tunables (applied
    /// to each scheduler that has them).
    pub sets: Vec<(String, String)>,
    pub max_runtime: Option<Ns>,
    pub repeat: usize,
    pub force: bool,
    /// Pause after switching the scheduler, before fio starts.
    pub settle: Duration,
    /// Keep fio's raw JSON of every run here.
    pub save_json: Option<PathBuf>,
    /// Progress lines on stderr.
    pub verbose: bool,
    /// `--mount ext4[:OPTIONS]`: the jobs' files on a fresh ext4 per run.
    pub mount: Option<FsSpec>,
    /// A calibrated profile's reference probe, run before and after the
    /// rounds (`validate`).
    pub reference: Option<DriftReference>,
}

/// `calibrate`'s reference probe with what it measured then: run again under
/// none before and after the rounds, it shows how far the host's speed has
/// moved since, which moves every measured number against a simulation of
/// the host as calibrated.
#[derive(Clone, Debug)]
pub struct DriftReference {
    pub probe: &'static super::calibrate::Probe,
    pub runtime: Ns,
    /// Its IOPS when the profile was calibrated.
    pub calibrated_iops: f64,
}

impl DriftReference {
    /// How far `iops` of the probe now is from its calibrated IOPS, %.
    fn drift_pct(&self, iops: f64) -> f64 {
        (iops / self.calibrated_iops - 1.0) * 100.0
    }
}

/// A drift of the reference probe beyond this share is called out.
const DRIFT_NOTED: f64 = 0.10;

impl LabOptions {
    pub fn new(job: impl Into<PathBuf>, dev: &str) -> LabOptions {
        LabOptions {
            job: job.into(),
            dev: dev.to_string(),
            schedulers: None,
            sets: Vec::new(),
            max_runtime: None,
            repeat: 1,
            force: false,
            settle: Duration::from_millis(200),
            save_json: None,
            verbose: true,
            mount: None,
            reference: None,
        }
    }
}

/// One fio run.
#[derive(Clone, Debug)]
pub struct LabRun {
    pub scheduler: String,
    /// 1-based.
    pub round: usize,
    pub report: RunReport,
    /// Whole-machine CPU time during the run.
    pub cpu: CpuTimes,
    pub wall_ns: Ns,
    /// The device's `stat` every [`DISK_LOG_INTERVAL`] while fio ran,
    /// counted from fio's start.
    pub disk_log: Vec<DiskSample>,
}

/// How often the device's `stat` is sampled during a run.
pub const DISK_LOG_INTERVAL: Duration = Duration::from_millis(100);

/// One sample of the run's disk log.
#[derive(Clone, Debug, Default)]
pub struct DiskSample {
    /// Since fio started.
    pub ms: u64,
    /// Counted from fio's start (in_flight as sampled).
    pub stat: DiskStatFields,
    /// The machine's `Dirty:` and `Writeback:` of /proc/meminfo, KiB.
    pub dirty_kib: u64,
    pub writeback_kib: u64,
}

/// `Dirty:` and `Writeback:` of /proc/meminfo, KiB.
fn dirty_kib() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("Dirty:"), field("Writeback:"))
}

/// Samples `/sys/block/DISK/stat` every [`DISK_LOG_INTERVAL`] when polled
/// (from fio's wait loop: no thread).
struct DiskSampler {
    stat: PathBuf,
    base: DiskStatFields,
    t0: Instant,
    next: Duration,
    log: Vec<DiskSample>,
}

impl DiskSampler {
    fn start(bd: &BlockDev, base: DiskStatFields) -> DiskSampler {
        DiskSampler {
            stat: bd.sys.join("stat"),
            base,
            t0: Instant::now(),
            next: DISK_LOG_INTERVAL,
            log: Vec::new(),
        }
    }

    fn poll(&mut self) {
        let now = self.t0.elapsed();
        if now < self.next {
            return;
        }
        self.next = now + DISK_LOG_INTERVAL;
        let Ok(text) = std::fs::read_to_string(&self.stat) else {
            return;
        };
        if let Ok(f) = DiskStatFields::parse(&text) {
            let (dirty, wb) = dirty_kib();
            self.log.push(DiskSample {
                ms: now.as_millis() as u64,
                stat: f.since(&self.base),
                dirty_kib: dirty,
                writeback_kib: wb,
            });
        }
    }
}

/// The disk log as CSV: ms, the stat fields by name, Dirty and Writeback.
pub fn disk_log_csv(log: &[DiskSample]) -> String {
    let names: Vec<&str> = DiskStatFields::default()
        .named()
        .iter()
        .map(|(n, _)| *n)
        .collect();
    let mut out = format!("ms,{},dirty_kib,writeback_kib\n", names.join(","));
    for x in log {
        let vals: Vec<String> = x.stat.named().iter().map(|(_, v)| v.to_string()).collect();
        out.push_str(&format!(
            "{},{},{},{}\n",
            x.ms,
            vals.join(","),
            x.dirty_kib,
            x.writeback_kib
        ));
    }
    out
}

impl LabRun {
    /// Busy CPU per completed I/O, us.
    pub fn cpu_us_per_io(&self) -> f64 {
        let ios = self.report.completed_ios();
        if ios == 0 {
            f64::NAN
        } else {
            self.cpu.busy_ns as f64 / 1000.0 / ios as f64
        }
    }

    /// The kworkers' and ksoftirqds' CPU per completed I/O, us; None when
    /// not measured (or no I/O completed).
    pub fn kthread_us_per_io(&self) -> Option<f64> {
        super::calibrate::per_io(&self.report, self.cpu.kthread_ns?)
    }
}

/// Everything a session produced.
#[derive(Clone, Debug, Default)]
pub struct LabResult {
    pub device: String,
    pub fio_version: String,
    /// Schedulers the device offers.
    pub offered: Vec<String>,
    /// Schedulers run, in the order asked.
    pub schedulers: Vec<String>,
    /// Schedulers asked for but not run: (name, reason).
    pub skipped: Vec<(String, String)>,
    /// Runs in execution order.
    pub runs: Vec<LabRun>,
    pub notes: Vec<String>,
    /// What recovering earlier, killed runs did before this one.
    pub recovered: Vec<String>,
    /// What could not be restored afterwards (the results are still good).
    pub unrestored: Vec<String>,
}

impl LabResult {
    /// Runs of one scheduler, in round order.
    pub fn runs_of(&self, sched: &str) -> Vec<&LabRun> {
        self.runs.iter().filter(|r| r.scheduler == sched).collect()
    }
}

/// Why a scheduler the device does not offer is not run.
pub fn not_offered_reason(name: &str) -> String {
    // Schedulers of older or out-of-tree kernels are never offered by a
    // current kernel; the simulator may still have them.
    let not_in_kernel = crate::sched::find(name).is_ok_and(|t| !t.lab);
    if not_in_kernel {
        "simulation only (not in this kernel)".into()
    } else {
        "not offered by this kernel for this device".into()
    }
}

/// The schedulers a current kernel can have (the registry's `lab` ones)
/// that `offered` lacks, each with why it is not run.
fn missing_defaults(offered: &[String]) -> Vec<(String, String)> {
    crate::sched::SCHEDULERS
        .iter()
        .filter(|t| t.lab && !offered.iter().any(|n| n == t.name))
        .map(|t| (t.name.to_string(), missing_reason(t.name)))
        .collect()
}

/// Why a scheduler the real kernel can have is not offered when the lab
/// runs its default set: the kernel loads a scheduler's module when its
/// name is written to `queue/scheduler` (`request_module("%s-iosched")` in
/// block/elevator.c), so a name still missing after that is not built.
fn missing_reason(name: &str) -> String {
    format!(
        "not offered by this kernel for this device (not built in, or its module is missing: `echo {name} > /sys/block/DEV/queue/scheduler` loads it if it exists); not run"
    )
}

/// The device named on the command line: it must exist and be a block
/// device (bad input otherwise).
pub fn open_device(dev: &str) -> Result<BlockDev, LabError> {
    BlockDev::open(dev).map_err(|e| LabError::input(format!("--dev {dev}: {e}")))
}

/// A note when other work keeps the machine busy before we start: on a
/// CPU-bound device (a tmpfs loop) it competes with fio and the device.
pub fn busy_note() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let load: f64 = text.split_whitespace().next()?.parse().ok()?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (load > 0.5 * cpus as f64).then(|| {
        format!(
            "the machine was busy before the runs (load average {load:.2} on {cpus} CPUs): other processes compete for CPU, which a CPU-bound device (tmpfs loop) measures as well"
        )
    })
}

/// `(name, value)` settings.
type Settings = Vec<(String, String)>;

/// Split `--set` into queue knobs and `iosched/` tunables, checking queue
/// knobs exist.
fn split_sets(q: &Queue, sets: &[(String, String)]) -> Result<(Settings, Settings), String> {
    let mut queue = Vec::new();
    let mut iosched = Vec::new();
    for (k, v) in sets {
        if let Some(n) = k.strip_prefix("iosched/") {
            iosched.push((n.to_string(), v.clone()));
        } else if k == "scheduler" || k.contains('/') || k.contains("..") {
            return Err(format!(
                "--set {k}: not a queue knob (use --schedulers for the scheduler, iosched/NAME for its tunables)"
            ));
        } else if q.has(k) {
            queue.push((k.clone(), v.clone()));
        } else {
            return Err(format!(
                "--set {k}: {} has no such queue attribute ({})",
                q.disk,
                q.path(k).display()
            ));
        }
    }
    Ok((queue, iosched))
}

/// Run the session. Bad input (job file, options, device path) is refused
/// before anything changes. On any exit path the queue and cgroups are
/// restored in dependency order and checked; what could not be restored is
/// in [`LabResult::unrestored`] (the results are kept) or in the error.
pub fn run_lab(o: &LabOptions) -> Result<LabResult, LabError> {
    let bd = open_device(&o.dev)?;
    let q = bd.queue();
    let (offered, _) = q.schedulers().ok_or_else(|| {
        LabError::input(format!(
            "{} has no I/O scheduler (bio-based device, no queue/scheduler); the lab needs a blk-mq device such as a loop device",
            bd.path.display()
        ))
    })?;
    let wanted = o.schedulers.clone().unwrap_or_else(|| offered.clone());
    let mut result = LabResult {
        device: bd.path.display().to_string(),
        offered: offered.clone(),
        ..LabResult::default()
    };
    for s in &wanted {
        if offered.contains(s) {
            if !result.schedulers.contains(s) {
                result.schedulers.push(s.clone());
            }
        } else {
            result.skipped.push((s.clone(), not_offered_reason(s)));
        }
    }
    if o.schedulers.is_none() {
        // The default is what the kernel offers; say which of the
        // schedulers the real kernel can have are missing from it, so a
        // missing one is not mistaken for one left out on purpose.
        result.skipped.extend(missing_defaults(&offered));
    }
    if result.schedulers.is_empty() {
        return Err(LabError::input(format!(
            "none of the schedulers asked for ({}) is offered by {} (offered: {})",
            wanted.join(", "),
            bd.path.display(),
            offered.join(", ")
        )));
    }
    let env = |n: &str| std::env::var(n).ok();
    let target = Target {
        path: result.device.clone(),
        devno: bd.devno(),
        fs: o.mount.is_some(),
    };
    let prepared =
        jobfile::prepare(&o.job, &target, &env).map_err(|e| LabError::input(e.to_string()))?;
    let jf: JobFile = jobfile::parse_for_device(&o.job, &result.device, o.mount.is_some())
        .map_err(LabError::input)?;
    let (vm_sets, other_sets) = super::sysctl::split(&o.sets).map_err(LabError::input)?;
    let (queue_sets, iosched_sets) = split_sets(&q, &other_sets).map_err(LabError::input)?;
    if let Some(n) = busy_note() {
        result.notes.push(n);
    }
    let extra: Vec<String> = queue_sets.iter().map(|(k, _)| k.clone()).collect();
    let mut s = Session::start("lab", bd, o.force, &extra)?;
    result.fio_version = s.fio_version.clone();
    result.recovered = s.recovered.clone();
    let wanted_groups: Vec<(String, Option<u32>)> = jf
        .jobs
        .iter()
        .filter_map(|j| j.cgroup.clone().map(|c| (c, j.cgroup_weight)))
        .collect();
    let outcome = (|| {
        s.set_sysctls(&vm_sets).map_err(LabError::failed)?;
        if !wanted_groups.is_empty() {
            let note = s.create_groups(&wanted_groups)?;
            result.notes.push(note);
        }
        session(
            o,
            &mut s,
            &prepared,
            &jf,
            &queue_sets,
            &iosched_sets,
            &mut result,
        )
        .map_err(LabError::failed)
    })();
    let problems = s.finish();
    for p in &problems {
        super::say::line(&format!("elevator: warning: {p}"));
    }
    match outcome {
        Ok(()) => {
            result.unrestored = problems;
            Ok(result)
        }
        Err(mut e) => {
            e.unrestored = problems;
            Err(e)
        }
    }
}

/// Files fio wrote besides its output (logs, iologs), copied next to the
/// JSON when `--save-json` is given.
fn keep_outputs(work: &Path, skip: &[&str], dir: &Path, prefix: &str) -> Result<(), String> {
    let Ok(rd) = std::fs::read_dir(work) else {
        return Ok(());
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if skip.contains(&name.as_str())
            || name.starts_with("trace-")
            || name == super::journal::MARKER
            || !e.file_type().is_ok_and(|t| t.is_file())
        {
            continue;
        }
        let to = dir.join(format!("{prefix}-{name}"));
        std::fs::rename(e.path(), &to)
            .or_else(|_| std::fs::copy(e.path(), &to).map(|_| ()))
            .map_err(|err| format!("{}: {err}", to.display()))?;
    }
    Ok(())
}

/// One round's queue set-up: limits that a switch would reset, a fresh
/// instance of `sched`, its tunables (marking in `applied_iosched` those
/// it has), the queue's knobs.
fn set_up_queue(
    q: &Queue,
    sched: &str,
    queue_sets: &[(String, String)],
    iosched_sets: &[(String, String)],
    applied_iosched: &mut [bool],
) -> Result<(), String> {
    for (k, v) in limits_before_switch(queue_sets) {
        q.write(&k, &v)?;
    }
    q.start_scheduler(sched)?;
    for (i, (k, v)) in iosched_sets.iter().enumerate() {
        let attr = format!("iosched/{k}");
        if q.has(&attr) {
            q.write(&attr, v)?;
            applied_iosched[i] = true;
        }
    }
    for (k, v) in queue_sets {
        q.write(k, v)?;
    }
    Ok(())
}

/// The knobs and tunables as the kernel shows them after the set-up, the
/// cgroup files and vm sysctls written, for the report; a `--set` the
/// kernel shows differently goes into `notes` once.
fn knobs_as_set(
    q: &Queue,
    s: &Session,
    o: &LabOptions,
    queue_sets: &[(String, String)],
    notes: &mut Vec<String>,
) -> Vec<(String, String)> {
    for (k, v) in queue_sets {
        let now = q.read(k).unwrap_or_default();
        if &now != v {
            let note = format!("--set {k}={v}: the kernel shows '{now}'");
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    }
    let names: Vec<String> = queue_sets.iter().map(|(k, _)| k.clone()).collect();
    let mut knobs = q.snapshot(&names).knobs;
    knobs.extend(
        q.iosched()
            .into_iter()
            .map(|(k, v)| (format!("iosched/{k}"), v)),
    );
    if let Some(g) = s.groups() {
        knobs.extend(g.written.iter().cloned());
    }
    knobs.extend(vm_knobs(&o.sets));
    knobs
}

/// `--verbose`: a round's IOPS, CPU per I/O (and the kernel threads' part
/// of it), steal, and fio's first warnings.
fn print_round(run: &LabRun, fio_stderr: &str) {
    let ios = run.report.completed_ios();
    let secs = run
        .report
        .jobs
        .iter()
        .map(|j| j.stats.runtime_ns())
        .max()
        .unwrap_or(0) as f64
        / 1e9;
    let kthreads = run
        .kthread_us_per_io()
        .map_or(String::new(), |us| format!(" ({us:.2} in kernel threads)"));
    super::say::line(&format!(
        "{:.0} IOPS in all, {:.2} CPU us/IO{kthreads}, steal {:.2} s",
        if secs > 0.0 { ios as f64 / secs } else { 0.0 },
        run.cpu_us_per_io(),
        run.cpu.steal_ns as f64 / 1e9
    ));
    for w in fio_stderr.lines().filter(|l| !l.trim().is_empty()).take(3) {
        super::say::line(&format!("lab:   fio: {w}"));
    }
}

/// `--save-json`: a round's fio JSON, job file, fio output and stderr, and
/// the disk samples, under `dir` with the round's prefix.
fn save_round(
    dir: &Path,
    work: &Path,
    prefix: &str,
    json: &str,
    disk_log: &[DiskSample],
) -> Result<(), String> {
    let p = dir.join(format!("{prefix}.json"));
    std::fs::write(&p, json).map_err(|e| format!("{}: {e}", p.display()))?;
    keep_outputs(
        work,
        &["job.fio", "fio-output.json", "fio-stderr.txt"],
        dir,
        prefix,
    )?;
    let p = dir.join(format!("{prefix}-disk.csv"));
    std::fs::write(&p, disk_log_csv(disk_log)).map_err(|e| format!("{}: {e}", p.display()))
}

fn session(
    o: &LabOptions,
    s: &mut Session,
    prepared: &Prepared,
    jf: &JobFile,
    queue_sets: &[(String, String)],
    iosched_sets: &[(String, String)],
    result: &mut LabResult,
) -> Result<(), String> {
    let q = s.queue();
    let work = s.work().to_path_buf();
    let work = work.as_path();
    let mount_point = s.mount_point();
    let cg = |name: &str| s.groups().and_then(|g| g.fio_path(name));
    let dev = result.device.clone();
    let rewritten = prepared.render(&Rewrite {
        cgroup: &cg,
        max_runtime: o.max_runtime,
        trace_dir: work,
        directory: Some(&mount_point),
        keep_lab_options: false,
    })?;
    prepared.write_traces(work)?;
    let job_path = work.join("job.fio");
    std::fs::write(&job_path, &rewritten).map_err(|e| format!("{}: {e}", job_path.display()))?;
    if let Some(dir) = &o.save_json {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let _ = std::fs::write(dir.join("job-for-fio.fio"), &rewritten);
    }
    let queue_sets = in_write_order(queue_sets);
    let mut applied_iosched = vec![false; iosched_sets.len()];
    let total = o.repeat.max(1) * result.schedulers.len();
    let mut n = 0;
    let drift_before = match &o.reference {
        Some(r) => Some(reference_run(o, s, r, "before the rounds")?),
        None => None,
    };
    for round in 1..=o.repeat.max(1) {
        for sched in result.schedulers.clone() {
            if let Some(sig) = signal::interrupted() {
                return Err(format!("interrupted by signal {sig}"));
            }
            n += 1;
            set_up_queue(&q, &sched, &queue_sets, iosched_sets, &mut applied_iosched)?;
            let knobs = knobs_as_set(&q, s, o, &queue_sets, &mut result.notes);
            if let Some(m) = &o.mount {
                s.mount_fresh(m)?;
            }
            s.settle(o.settle)?;
            if o.verbose {
                super::say::part(&format!(
                    "lab: [{n}/{total}] round {round} {sched} on {dev} ... "
                ));
            }
            let stat0 = s.bd.stat()?;
            let mut sampler = DiskSampler::start(&s.bd, stat0.clone());
            let cpu0 = CpuTimes::now();
            let fr = s.run_fio_ticking(&job_path, &mut || sampler.poll());
            let cpu = CpuTimes::now().since(&cpu0);
            let disk_log = sampler.log;
            let disk = s.bd.stat()?.since(&stat0);
            s.unmount()?;
            let fr = match fr {
                Ok(fr) => fr,
                Err(e) => {
                    if o.verbose {
                        super::say::line("failed");
                    }
                    return Err(format!("{sched}, round {round}: {e}"));
                }
            };
            if let Some(dir) = &o.save_json {
                save_round(
                    dir,
                    work,
                    &super::record::run_prefix(round, &sched),
                    &fr.json,
                    &disk_log,
                )?;
            }
            let mut report = fio::parse_json(&fr.json, Some(jf))
                .map_err(|e| format!("{sched}, round {round}: {e}"))?;
            report.elevator.scheduler = sched.clone();
            report.elevator.device = dev.clone();
            report.elevator.knobs = knobs;
            report.elevator.disk_stats = Some(disk);
            let run = LabRun {
                scheduler: sched.clone(),
                round,
                report,
                cpu,
                wall_ns: fr.wall.as_nanos() as Ns,
                disk_log,
            };
            if o.verbose {
                print_round(&run, &fr.stderr);
            }
            result.runs.push(run);
        }
    }
    if let (Some(r), Some(before)) = (&o.reference, drift_before) {
        let after = reference_run(o, s, r, "after the rounds")?;
        result.notes.push(drift_note(r, before, after));
    }
    for (i, (k, _)) in iosched_sets.iter().enumerate() {
        if !applied_iosched[i] {
            result.notes.push(format!(
                "iosched/{k}: none of the schedulers run has this tunable; not applied"
            ));
        }
    }
    let steal: u64 = result.runs.iter().map(|r| r.cpu.steal_ns).sum();
    if steal > 0 {
        result.notes.push(format!(
            "CPU steal during the runs: {:.2} s in all (the hypervisor took CPU time)",
            steal as f64 / 1e9
        ));
    }
    if let Some(dir) = &o.save_json {
        let job_text =
            std::fs::read_to_string(&o.job).map_err(|e| format!("{}: {e}", o.job.display()))?;
        let options = super::record::RecordedOptions {
            sets: o.sets.clone(),
            max_runtime_ns: o.max_runtime,
            mount: o.mount.as_ref().map(|m| m.text.clone()),
            repeat: o.repeat.max(1),
            cpus: Some(super::validate::machine_cpus()),
            memory: super::validate::machine_memory(),
        };
        super::record::save(dir, &job_text, options, result)?;
    }
    Ok(())
}

/// One run of the reference probe under none (the queue's other knobs as
/// the rounds left them): its IOPS, None when the device does not offer
/// none.
fn reference_run(
    o: &LabOptions,
    s: &Session,
    r: &DriftReference,
    when: &str,
) -> Result<Option<f64>, String> {
    let q = s.queue();
    if !q
        .schedulers()
        .is_some_and(|(names, _)| names.iter().any(|n| n == "none"))
    {
        return Ok(None);
    }
    if let Some(sig) = signal::interrupted() {
        return Err(format!("interrupted by signal {sig}"));
    }
    q.set_scheduler("none")?;
    s.settle(o.settle)?;
    if o.verbose {
        super::say::part(&format!(
            "lab: reference {} (none) {when} ... ",
            r.probe.name
        ));
    }
    let iops = super::calibrate::run_probe(s, r.probe, r.runtime)
        .map_err(|e| format!("reference probe {}: {e}", r.probe.name))?
        .main_iops();
    if o.verbose {
        super::say::line(&format!(
            "{iops:.0} IOPS ({:+.1}% since calibrate)",
            r.drift_pct(iops)
        ));
    }
    Ok(Some(iops))
}

/// The drift line: the reference probe then and now.
fn drift_note(r: &DriftReference, before: Option<f64>, after: Option<f64>) -> String {
    let (Some(b), Some(a)) = (before, after) else {
        return format!(
            "host drift: not measured (the device does not offer none, which calibrate's reference probe {} ran under)",
            r.probe.name
        );
    };
    let pct = |v: f64| r.drift_pct(v);
    let mut line = format!(
        "host drift: calibrate's reference probe {} (none) measured {:.0} IOPS when the profile was calibrated; {b:.0} before the rounds ({:+.1}%), {a:.0} after ({:+.1}%)",
        r.probe.name,
        r.calibrated_iops,
        pct(b),
        pct(a)
    );
    let worst = pct(b).abs().max(pct(a).abs()) / 100.0;
    if worst > DRIFT_NOTED {
        line.push_str(
            ": the host runs at another speed than when it was calibrated, and the simulation models it as calibrated, so measured numbers move against simulated ones by about as much (calibrate again just before validating to compare like with like)",
        );
    }
    line
}

/// The `vm.*` settings as the run's knobs (name as given, value).
fn vm_knobs(sets: &[(String, String)]) -> Vec<(String, String)> {
    sets.iter()
        .filter(|(k, _)| k.starts_with("vm."))
        .cloned()
        .collect()
}

/// The table columns of a session, skipped schedulers after the measured ones.
pub fn columns(r: &LabResult) -> Vec<crate::report::table::Column> {
    use crate::report::table::{Column, Outcome};
    let mut cols: Vec<Column> = r
        .schedulers
        .iter()
        .map(|s| {
            let runs = r.runs_of(s);
            Column {
                scheduler: s.clone(),
                cpu_us_per_io: runs.iter().map(|x| x.cpu_us_per_io()).collect(),
                outcome: Outcome::Runs(runs.into_iter().map(|x| x.report.clone()).collect()),
            }
        })
        .collect();
    for (s, why) in &r.skipped {
        cols.push(Column {
            scheduler: s.clone(),
            outcome: Outcome::Skipped(why.clone()),
            cpu_us_per_io: Vec::new(),
        });
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drift_note_gives_the_reference_then_and_now_and_calls_out_a_large_drift() {
        let r = DriftReference {
            probe: super::super::calibrate::probe_named("randread-qd1").unwrap(),
            runtime: 2_000_000_000,
            calibrated_iops: 50_000.0,
        };
        let small = drift_note(&r, Some(52_000.0), Some(48_000.0));
        assert!(
            small.contains("50000 IOPS when the profile was calibrated"),
            "{small}"
        );
        assert!(
            small.contains("52000 before the rounds (+4.0%), 48000 after (-4.0%)"),
            "{small}"
        );
        assert!(!small.contains("another speed"), "{small}");
        // Either end beyond 10% is called out.
        let large = drift_note(&r, Some(51_000.0), Some(56_000.0));
        assert!(
            large.contains("(+12.0%): the host runs at another speed"),
            "{large}"
        );
        let missing = drift_note(&r, None, None);
        assert!(missing.starts_with("host drift: not measured"), "{missing}");
    }

    #[test]
    fn reasons() {
        assert!(not_offered_reason("cfq").contains("simulation only"));
        assert!(not_offered_reason("deadline").contains("simulation only"));
        assert!(not_offered_reason("tpps").contains("simulation only"));
        assert!(not_offered_reason("kyber").contains("not offered"));
    }

    #[test]
    fn a_kernel_without_bfq_has_it_named_as_missing() {
        let offered: Vec<String> = ["none", "mq-deadline", "kyber"].map(String::from).into();
        let missing = missing_defaults(&offered);
        let names: Vec<&str> = missing.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["bfq"]);
        assert!(missing[0].1.contains("echo bfq > "), "{}", missing[0].1);
        // Schedulers of older kernels are never expected of a current one.
        let all: Vec<String> = ["none", "mq-deadline", "kyber", "bfq"]
            .map(String::from)
            .into();
        assert!(missing_defaults(&all).is_empty());
    }
}
