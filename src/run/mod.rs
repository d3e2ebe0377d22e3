//! The library entry: [`run`] takes a [`RunSpec`] — everything a simulation
//! needs, as data — and returns the [`RunReport`] fio's formats print. No
//! environment reads, no terminal output and no files besides the logs a job
//! asks for (in the spec's log directory) happen in here: warnings go into
//! the report and progress goes to a closure.
//!
//! Stages: the spec is checked and resolved (job files parsed from the
//! spec's own copies, the device profile read, settings sorted, schedulers
//! looked up in the registry), then the event loop (`engine`) runs it.

pub mod engine;
pub mod settings;
pub mod spec;
pub mod switches;

pub use spec::{DeviceSource, JobSource, RunSpec, Setting, Switch, DEFAULT_SEED};

use crate::block::elevator::ElevatorType;
use crate::device::{self, Profile};
use crate::job::{self, EngineKind, JobError, JobFile};
use crate::report::RunReport;
use crate::sched;
use crate::sim::time::Ns;
use std::path::Path;

/// Bad input, with where it came from when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputError {
    /// The file (job file, profile) the problem is in.
    pub file: Option<String>,
    /// 1-based line in `file`.
    pub line: Option<u32>,
    /// The option, setting or field at fault.
    pub option: Option<String>,
    pub message: String,
}

impl InputError {
    pub fn new(option: &str, message: impl Into<String>) -> InputError {
        InputError {
            file: None,
            line: None,
            option: Some(option.to_string()),
            message: message.into(),
        }
    }

    /// An error not tied to one option.
    pub fn message(message: impl Into<String>) -> InputError {
        InputError {
            file: None,
            line: None,
            option: None,
            message: message.into(),
        }
    }

    /// The same error, in `file` (a job file's check made after parsing).
    pub fn in_file(mut self, file: &str) -> InputError {
        self.file = Some(file.to_string());
        self
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) if line > 0 => write!(f, "{file}:{line}: ")?,
            (Some(file), _) => write!(f, "{file}: ")?,
            _ => {}
        }
        match &self.option {
            // A job file's option, as the parser's errors name them.
            Some(o) if self.file.is_some() || job::is_fio_option(o) => write!(f, "option '{o}': ")?,
            // A command-line setting or a spec field.
            Some(o) => write!(f, "{o}: ")?,
            None => {}
        }
        write!(f, "{}", self.message)
    }
}

impl From<JobError> for InputError {
    fn from(e: JobError) -> InputError {
        InputError {
            file: Some(e.file),
            line: Some(e.line),
            option: e.option,
            message: e.message,
        }
    }
}

/// Why a run did not produce a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The job, the device profile, a setting or the spec is wrong.
    Input(InputError),
    /// No job of the file can be modelled (network, exec, ... engines).
    NotModelled(String),
    /// The modelled kernel hangs, as the real one would with these settings
    /// (a task waits for a wake-up that nothing will send).
    Hung(String),
    /// The simulation broke one of its own invariants: a bug in elevator.
    Internal(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Input(e) => write!(f, "{e}"),
            Error::NotModelled(source) => write!(f, "{source}: no job can be modelled"),
            Error::Hung(m) => write!(f, "the modelled kernel hangs: {m}"),
            Error::Internal(m) => write!(f, "internal error: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<InputError> for Error {
    fn from(e: InputError) -> Error {
        Error::Input(e)
    }
}

impl From<JobError> for Error {
    fn from(e: JobError) -> Error {
        Error::Input(e.into())
    }
}

/// How far a run is: simulated time now, and its end when every job has a
/// time limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub now: Ns,
    pub horizon: Option<Ns>,
}

/// Run a simulation.
pub fn run(spec: &RunSpec) -> Result<RunReport, Error> {
    run_with_progress(spec, &mut |_| {})
}

/// Run a simulation, calling `progress` now and then.
pub fn run_with_progress(
    spec: &RunSpec,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunReport, Error> {
    let jobfile = parse_job(spec)?;
    let plan = engine::Config::resolve_on(spec, &jobfile, load_device(&spec.device)?)?;
    // A switch after every job's end never happens: say so (before the
    // run's own warnings), and after the run for the others that did not.
    let named: Vec<(Ns, String)> = plan
        .switches
        .iter()
        .map(|(at, t)| (*at, t.name.to_string()))
        .collect();
    let early = switches::warnings_before_run(&jobfile.jobs, plan.max_runtime, &named);
    let sim = engine::Simulation::new(&jobfile, plan)?;
    let mut report = sim.run(progress)?;
    let m = &mut report.elevator;
    let mut warnings: Vec<String> = early.iter().map(|(_, w)| w.clone()).collect();
    warnings.append(&mut m.warnings);
    for (i, ((at, name), outcome)) in m.switches.iter().zip(&m.switch_log).enumerate() {
        if early.iter().any(|(w, _)| *w == i) {
            continue;
        }
        if let Some(w) = crate::report::switches::warning_after_run(*at, name, outcome) {
            warnings.push(w);
        }
    }
    m.warnings = warnings;
    report.elevator.spec =
        Some(serde_json::to_value(spec).map_err(|e| Error::Internal(e.to_string()))?);
    report.timestamp = spec.timestamp;
    Ok(report)
}

/// Run `spec` on `profile` instead of the device the spec names: for the
/// lab's calibration, which tries many fitted profiles. The report carries
/// no spec (the profile is not in it).
pub fn run_on(spec: &RunSpec, profile: &Profile) -> Result<RunReport, Error> {
    let jobfile = parse_job(spec)?;
    let plan = engine::Config::resolve_on(spec, &jobfile, profile.clone())?;
    let sim = engine::Simulation::new(&jobfile, plan)?;
    let mut report = sim.run(&mut |_| {})?;
    report.timestamp = spec.timestamp;
    Ok(report)
}

/// Parse the spec's job (its files and environment, never the disk's) on its
/// machine, and give every job the log directory.
pub fn parse_job(spec: &RunSpec) -> Result<JobFile, Error> {
    spec.machine
        .validate()
        .map_err(|e| InputError::new("machine", e))?;
    let files = &spec.job.files;
    let read = |p: &Path| -> Result<String, String> {
        let key = p.display().to_string();
        files
            .get(&key)
            .cloned()
            .ok_or_else(|| format!("'{key}' is not among the run spec's job files"))
    };
    let env = |n: &str| spec.job.env.get(n).cloned();
    let inputs = job::Inputs {
        read: &read,
        env: &env,
        machine: &spec.machine,
    };
    let mut jf = job::parse_args(&spec.job.args, &inputs)?;
    if jf.jobs.is_empty() {
        return Err(InputError::new("job", format!("{}: no jobs defined", jf.source)).into());
    }
    if jf
        .jobs
        .iter()
        .all(|j| j.ioengine.kind == EngineKind::NotModelled)
    {
        let source = spec
            .job
            .args
            .iter()
            .find(|a| !a.starts_with('-') || *a == "-")
            .cloned()
            .unwrap_or_else(|| jf.source.clone());
        return Err(Error::NotModelled(source));
    }
    for j in &mut jf.jobs {
        let logs =
            j.write_lat_log.is_some() || j.write_bw_log.is_some() || j.write_iops_log.is_some();
        match &spec.log_dir {
            Some(dir) => j.log_dir = Some(dir.into()),
            None if logs && j.ioengine.kind != EngineKind::NotModelled => {
                return Err(InputError::new(
                    "log_dir",
                    format!(
                        "job '{}' writes logs (write_lat_log/write_bw_log/write_iops_log) but the run has no log directory",
                        j.name
                    ),
                )
                .into())
            }
            None => {}
        }
    }
    Ok(jf)
}

/// The device profile a spec names: its own TOML, or a built-in profile.
pub fn load_device(src: &DeviceSource) -> Result<Profile, Error> {
    let p = match &src.profile {
        Some(text) => device::profile::from_text(text, &src.name),
        None => device::profile::builtin(&src.name),
    };
    p.map_err(|e| InputError::new("device", e).into())
}

/// A scheduler of the run by name; it must be simulated.
pub(crate) fn scheduler(option: &str, name: &str) -> Result<&'static ElevatorType, Error> {
    sched::find_simulated(name).map_err(|e| InputError::new(option, e).into())
}

/// A scheduler of the run that kernel `v` had; it must be simulated.
pub(crate) fn scheduler_in(
    option: &str,
    name: &str,
    v: crate::kernel::Version,
) -> Result<&'static ElevatorType, Error> {
    sched::find_in_kernel(name, v).map_err(|e| InputError::new(option, e).into())
}

/// Run several specs side by side on up to `threads` threads; results come
/// back in the order of `specs` (each run is deterministic on its own).
pub fn run_many(specs: &[RunSpec], threads: usize) -> Vec<Result<RunReport, Error>> {
    run_many_with_progress(specs, threads, &|_| {})
}

/// [`run_many`], calling `done` now and then from the worker threads with
/// how much of the whole is done, in runs: each finished run counts 1, a
/// running one the share of its simulated time it has reached (0 while it
/// has no end time, e.g. a job of fixed size), so a bar moves during long
/// runs instead of only when one ends.
pub fn run_many_with_progress(
    specs: &[RunSpec],
    threads: usize,
    done: &(dyn Fn(f64) + Sync),
) -> Vec<Result<RunReport, Error>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let results: Mutex<Vec<Option<Result<RunReport, Error>>>> =
        Mutex::new((0..specs.len()).map(|_| None).collect());
    let shares = Mutex::new(vec![0.0f64; specs.len()]);
    let set_share = |i: usize, share: f64| {
        let mut v = shares.lock().expect("shares");
        v[i] = share;
        done(v.iter().sum());
    };
    let next = AtomicUsize::new(0);
    let workers = threads.clamp(1, specs.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(spec) = specs.get(i) else {
                    break;
                };
                let r = run_with_progress(spec, &mut |p| {
                    if let Some(h) = p.horizon.filter(|&h| h > 0) {
                        set_share(i, (p.now as f64 / h as f64).min(1.0));
                    }
                });
                results.lock().expect("results")[i] = Some(r);
                set_share(i, 1.0);
            });
        }
    });
    results
        .into_inner()
        .expect("results")
        .into_iter()
        .map(|r| {
            r.unwrap_or_else(|| Err(Error::Internal("a run of run_many did not finish".into())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn run_many_reports_progress_within_runs_and_ends_at_the_run_count() {
        let job = "[x]\nrw=randread\nsize=64m\nruntime=1\ntime_based\nioengine=libaio\ndirect=1\niodepth=8\n";
        let spec = RunSpec::new(JobSource::text("x.fio", job)).device("ram");
        let specs = [spec.clone(), spec];
        let seen = Mutex::new(Vec::new());
        let out = run_many_with_progress(&specs, 2, &|runs| seen.lock().unwrap().push(runs));
        assert!(out.iter().all(|r| r.is_ok()));
        let seen = seen.into_inner().unwrap();
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
        assert_eq!(*seen.last().unwrap(), 2.0);
        // Reported while running, not only as runs end.
        assert!(seen.iter().any(|&r| r.fract() > 0.0), "{seen:?}");
    }
}
