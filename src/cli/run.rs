//! `elevator run`: build a `RunSpec` from fio's arguments and elevator's
//! options (or take one with `--spec`), run it, print fio's formats.

use super::args::{self, flag, valued, with_short, Opt, Parsed, Unknown, HELP};
use super::{emit, note, CliError};
use crate::fs::ext4::MountOptions;
use crate::job::{self, EngineKind, JobFile};
use crate::kernel::Version;
use crate::machine::Machine;
use crate::report::{self, RunReport};
use crate::run::{self, DeviceSource, JobSource, RunSpec, Setting, Switch};
use crate::sched;
use crate::sim::time::{parse_duration, Ns};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Read};
use std::path::Path;

/// The options that describe a run; `run` and `compare` share them.
pub const RUN_OPTS: &[Opt] = &[
    valued(
        "device",
        "NAME|FILE",
        "device model: a built-in profile (nvme (default), ram, hdd,\nsata-ssd) or a profile TOML file (`elevator devices`)",
    ),
    valued(
        "set",
        "NAME=VALUE",
        "a queue knob by its sysfs name (nr_requests, read_ahead_kb,\nnomerges, rotational, max_sectors_kb, write_cache); a\nscheduler tunable as iosched/NAME; a CPU cost in ns as\ncpu/NAME (submit_ns, driver_ns, complete_ns, lock_handoff_ns,\nwake_ns, wake_deep_ns, wake_deep_after_ns, sleep_ns,\nSCHED.insert_ns|dispatch_ns|complete_ns|merge_ns) or\ncpu/cost_spread (0-1, the variation of every CPU cost); a cgroup\nfile as cgroup:PATH/FILE (blkio.weight, blkio.bfq.weight,\nio.weight, io.bfq.weight); a vm sysctl as vm.NAME\n(dirty_ratio, dirty_bytes, dirty_background_ratio,\ndirty_background_bytes, dirty_expire_centisecs,\ndirty_writeback_centisecs) for buffered jobs. Repeatable",
    ),
    valued(
        "seed",
        "N",
        "random seed (default 2978585581, fio's FIO_RANDSEED); the\nsame inputs and seed give byte-identical output",
    ),
    valued(
        "cpus",
        "N",
        "simulated CPUs: software queues, the CPU -> queue map, CPU\ntime, fio's $ncpus (default 2)",
    ),
    valued("mem", "SIZE", "simulated memory, e.g. 16g (default): fio's $mb_memory"),
    valued(
        "cpu-speed",
        "X",
        "CPU speed relative to the ~2.4 GHz core the CPU costs are for\n(default 1; 2 halves every CPU cost)",
    ),
    valued(
        "cgroup-version",
        "1|2",
        "cgroup interface: 1 (blkio, default) or 2 (io)",
    ),
    valued(
        "kernel",
        "VERSION",
        "the block layer of that kernel (e.g. 2.6.39, 4.12, 4.19, 6.17;\ndefault the newest): dispatch loop, budgets, libata depth,\ndefault nr_requests; a scheduler the kernel did not have is\nan error (`elevator schedulers --kernel V`)",
    ),
    valued(
        "mount",
        "ext4[:OPTIONS]",
        "the jobs' files are on ext4 on the device, mounted with OPTIONS\nas mount -o takes them (data=ordered|writeback, nobarrier,\ncommit=N, journal_async_commit, noatime, ...): buffered jobs\nget the jbd2 journal's commits, flushes and FUA; direct jobs\next4's share of each call and the conversion of fallocated\nextents",
    ),
    valued(
        "dm",
        "crypt[:COSTS]",
        "the device is behind dm-crypt: writes are encrypted and\nsubmitted by a per-CPU kcryptd worker (the scheduler sees the\nworker, not the job), reads decrypted by it after they\ncomplete; COSTS sector_ns=N,bio_ns=N of CPU (default 1000,2000)",
    ),
    valued(
        "max-runtime",
        "DURATION",
        "cap every job's simulated time (e.g. 30s, 500ms, 2m)",
    ),
    valued(
        "switch",
        "TIME=NAME",
        "switch the scheduler at TIME: freeze, drain every request,\nswitch (nr_requests and tunables reset to the new scheduler's\ndefaults; --set iosched/ values apply to every scheduler that\nhas them), unfreeze. Repeatable, e.g. --switch 30s=mq-deadline",
    ),
    valued(
        "log-dir",
        "DIR",
        "where fio's job logs go (write_lat_log, write_bw_log,\nwrite_iops_log); default the current directory, created if\nmissing",
    ),
    valued(
        "spec",
        "FILE",
        "run a spec: a file from --print-spec, or a JSON result of an\nearlier run (its elevator.spec), reproduced byte for byte;\nother options given here replace the spec's",
    ),
    flag("no-progress", "no progress bar (it shows on a terminal for runs over a second)"),
];

/// `run`'s own options.
const OWN_OPTS: &[Opt] = &[
    valued(
        "scheduler",
        "NAME",
        "the scheduler (default none, or cfq for a --kernel before blk-mq; `elevator schedulers` lists them)",
    ),
    valued(
        "output-format",
        "FMT",
        "normal (default; fio's stdout), json, json+ (with latency\nbins), terse (fio's terse v3), or several comma-separated,\nprinted in fio's order",
    ),
    with_short(valued("output", "FILE", "write the report to FILE"), 'o'),
    flag("print-spec", "print the run's spec (JSON) instead of running it"),
    HELP,
];

fn all_opts() -> Vec<Opt> {
    let mut v = OWN_OPTS.to_vec();
    v.splice(1..1, RUN_OPTS.iter().copied());
    v
}

pub fn help() -> String {
    format!(
        "elevator run — simulate fio job files on a device model with one I/O scheduler

USAGE:
    elevator run [OPTIONS] [JOBFILE...] [FIO-OPTIONS...]
    elevator run --spec RESULT.json [OPTIONS]

Job files (`-` reads standard input) and fio's command-line job options
(--name=x --rw=randread ..., one or two dashes) are read as fio reads them.

{}
EXIT CODES:
    0 success; 1 failure (e.g. writing the output); 2 bad input (the message
    names file:line and option); 3 no job of the file can be modelled.
",
        args::options_help(&all_opts())
    )
}

/// Reads job files from disk (and `-` from standard input) and remembers
/// them, and the environment variables the job expands, for the spec.
struct Recorder {
    files: RefCell<BTreeMap<String, String>>,
    env: RefCell<BTreeMap<String, String>>,
}

impl Recorder {
    fn read(&self, p: &Path) -> Result<String, String> {
        let key = p.display().to_string();
        if let Some(t) = self.files.borrow().get(&key) {
            return Ok(t.clone());
        }
        let text = if key == "-" {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .map_err(|e| format!("reading standard input: {e}"))?;
            s
        } else {
            job::read_job_file(p)?
        };
        self.files.borrow_mut().insert(key, text.clone());
        Ok(text)
    }
    fn env(&self, name: &str) -> Option<String> {
        let v = std::env::var(name).ok();
        if let Some(v) = &v {
            self.env.borrow_mut().insert(name.to_string(), v.clone());
        }
        v
    }
}

/// Read fio's arguments (job files, includes, `${VAR}`s) into a job source,
/// and parse them for the notices.
pub fn record_job(args: &[String], machine: &Machine) -> Result<(JobSource, JobFile), CliError> {
    if args.is_empty() {
        return Err(CliError::bad(
            "no job file or fio options given (see `elevator run --help`)",
        ));
    }
    let rec = Recorder {
        files: RefCell::new(BTreeMap::new()),
        env: RefCell::new(BTreeMap::new()),
    };
    let read = |p: &Path| rec.read(p);
    let env = |n: &str| rec.env(n);
    let inputs = job::Inputs {
        read: &read,
        env: &env,
        machine,
    };
    let jf = job::parse_args(args, &inputs).map_err(|e| CliError::bad(e.to_string()))?;
    let src = JobSource {
        args: args.to_vec(),
        files: rec.files.into_inner(),
        env: rec.env.into_inner(),
    };
    Ok((src, jf))
}

/// `--device NAME|FILE` as a spec's device: a built-in profile or a file,
/// with its text (so the spec holds everything).
pub fn device_source(name: &str) -> Result<DeviceSource, CliError> {
    let p =
        crate::device::load_profile(name).map_err(|e| CliError::bad(format!("--device: {e}")))?;
    Ok(DeviceSource {
        name: name.to_string(),
        profile: Some(p.text),
    })
}

fn parse_u64(what: &str, s: &str) -> Result<u64, CliError> {
    let t = s.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|_| {
        CliError::bad(format!(
            "--{what}: expected a non-negative integer, got '{s}'"
        ))
    })
}

fn parse_size(what: &str, s: &str) -> Result<u64, CliError> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| {
        CliError::bad(format!(
            "--{what}: expected a size like 16g or 512m, got '{s}'"
        ))
    })?;
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(CliError::bad(format!(
                "--{what}: unknown unit in '{s}' (k, m, g, t)"
            )))
        }
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| CliError::bad(format!("--{what}: '{s}' is too large")))
}

fn duration(what: &str, v: &str) -> Result<Ns, CliError> {
    parse_duration(v).map_err(|e| CliError::bad(format!("--{what}: {e}")))
}

/// Apply the run-describing options of `p` to `spec`.
pub fn apply_run_options(p: &Parsed, spec: &mut RunSpec) -> Result<(), CliError> {
    if let Some(d) = p.get("device") {
        spec.device = device_source(d)?;
    }
    for kv in p.all("set") {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| CliError::bad(format!("--set {kv}: expected NAME=VALUE")))?;
        spec.settings.push(Setting {
            name: k.trim().to_string(),
            value: v.to_string(),
        });
    }
    if let Some(v) = p.get("seed") {
        spec.seed = parse_u64("seed", v)?;
    }
    if let Some(v) = p.get("cpus") {
        let n = parse_u64("cpus", v)?;
        spec.machine.cpus = u32::try_from(n).unwrap_or(u32::MAX);
    }
    if let Some(v) = p.get("mem") {
        spec.machine.memory = parse_size("mem", v)?;
    }
    if let Some(v) = p.get("cpu-speed") {
        spec.machine.cpu_speed = v.trim().parse().map_err(|_| {
            CliError::bad(format!(
                "--cpu-speed: expected a number like 1.5, got '{v}'"
            ))
        })?;
    }
    spec.machine
        .validate()
        .map_err(|e| CliError::bad(format!("machine: {e} (--cpus, --mem, --cpu-speed)")))?;
    if let Some(v) = p.get("cgroup-version") {
        spec.cgroup_version = match v.trim() {
            "1" => 1,
            "2" => 2,
            _ => {
                return Err(CliError::bad(format!(
                    "--cgroup-version: expected 1 or 2, got '{v}'"
                )))
            }
        };
    }
    if let Some(v) = p.get("kernel") {
        let era =
            crate::kernel::Era::parse(v).map_err(|e| CliError::bad(format!("--kernel: {e}")))?;
        spec.kernel = Some(era.version.to_string());
    }
    if let Some(v) = p.get("mount") {
        crate::fs::MountOptions::parse_mount(v)
            .map_err(|e| CliError::bad(format!("--mount: {e}")))?;
        spec.mount = Some(v.to_string());
    }
    if let Some(v) = p.get("dm") {
        crate::task::kcryptd::CryptCosts::parse(v)
            .map_err(|e| CliError::bad(format!("--dm: {e}")))?;
        spec.dm = Some(v.to_string());
    }
    if let Some(v) = p.get("max-runtime") {
        let d = duration("max-runtime", v)?;
        if d == 0 {
            return Err(CliError::bad("--max-runtime: must be greater than zero"));
        }
        spec.max_runtime_ns = Some(d);
    }
    for sw in p.all("switch") {
        let (t, n) = sw.split_once('=').ok_or_else(|| {
            CliError::bad(format!(
                "--switch {sw}: expected TIME=SCHEDULER, e.g. 30s=mq-deadline"
            ))
        })?;
        let at = duration("switch", t)?;
        let s = sched::find_simulated(n).map_err(|e| CliError::bad(format!("--switch: {e}")))?;
        spec.switches.push(Switch {
            at_ns: at,
            scheduler: s.name.to_string(),
        });
    }
    spec.switches.sort_by_key(|s| s.at_ns);
    if let Some(d) = p.get("log-dir") {
        spec.log_dir = Some(d.to_string());
    }
    Ok(())
}

/// The spec of the run `p` describes (its positionals and fio options are
/// the job, or `--spec` gives the base), and the parsed job.
pub fn build_spec(cmd: &str, p: &Parsed) -> Result<(RunSpec, JobFile), CliError> {
    let mut spec = match p.get("spec") {
        Some(file) => {
            if !p.rest.is_empty() {
                return Err(CliError::bad(format!(
                    "{cmd}: --spec {file} already holds the job; drop the job arguments ({})",
                    p.rest.join(" ")
                )));
            }
            let text = std::fs::read_to_string(file)
                .map_err(|e| CliError::bad(format!("--spec {file}: {e}")))?;
            RunSpec::from_json(&text).map_err(|e| CliError::bad(format!("--spec {file}: {e}")))?
        }
        None => {
            let mut s = RunSpec::new(JobSource::default());
            s.device = device_source("nvme")?;
            s.timestamp = std::env::var("SOURCE_DATE_EPOCH")
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            s
        }
    };
    apply_run_options(p, &mut spec)?;
    let jf = if p.get("spec").is_some() {
        run::parse_job(&spec)?
    } else {
        let (src, jf) = record_job(&p.rest, &spec.machine)?;
        spec.job = src;
        let logs = jf.jobs.iter().any(|j| {
            j.write_lat_log.is_some() || j.write_bw_log.is_some() || j.write_iops_log.is_some()
        });
        if logs && spec.log_dir.is_none() {
            // fio writes logs in the current directory.
            spec.log_dir = Some(".".into());
        }
        jf
    };
    Ok((spec, jf))
}

/// Notices about the job on stderr: ignored options, buffered I/O.
pub fn notices(jf: &JobFile, mount: Option<&str>) {
    if !jf.ignored.is_empty() {
        note(&format!(
            "ignored: {} (valid fio options the model does not use)",
            jf.ignored.join(", ")
        ));
    }
    if let Some(opts) = mount.and_then(|m| MountOptions::parse_mount(m).ok()) {
        if !opts.not_modelled.is_empty() {
            note(&format!(
                "note: mount options not modelled: {} (accepted as mount -o takes them; they change \
                 nothing in the simulation)",
                opts.not_modelled.join(", ")
            ));
        }
    }
    if jf
        .jobs
        .iter()
        .any(|j| !j.direct && j.ioengine.kind != EngineKind::Null)
    {
        note(&match mount {
            Some(m) => format!(
                "note: buffered I/O (direct=0) goes through the page-cache model; files are \
                 on {m} (jbd2 commits, flushes and FUA as mounted)"
            ),
            None => "note: buffered I/O (direct=0) goes through the page-cache model; files sit \
                     on the raw device (no ext4 journal: fsync is writeback + cache flush; \
                     --mount ext4 puts them on a file system)"
                .to_string(),
        });
    }
    if let Some(m) = mount.filter(|_| {
        jf.jobs
            .iter()
            .any(|j| j.direct && j.ioengine.kind != EngineKind::Null)
    }) {
        note(&format!(
            "note: direct I/O (direct=1) to files on {m}: ext4's share of each call, timestamps, \
             and the conversion of unwritten (fallocated) extents at a write's completion, \
             journalled; fio lays write-only files out with fallocate unless overwrite=1"
        ));
    }
    unlink_notices(jf, mount);
    for j in &jf.jobs {
        if j.ioengine.kind == EngineKind::NotModelled && j.clone_index == 0 {
            note(&format!(
                "job '{}': not modelled (ioengine={})",
                j.name, j.ioengine.name
            ));
        }
    }
}

/// Where `unlink`/`unlink_each_loop` is not modelled (`FioJob::delete_files`).
fn unlink_notices(jf: &JobFile, mount: Option<&str>) {
    for j in jf.jobs.iter().filter(|j| j.unlink || j.unlink_each_loop) {
        if j.clone_index != 0 {
            continue;
        }
        let why = if mount.is_none() {
            "its files are regions of the raw device (fio unlinks regular files only; \
             --mount ext4 puts them on a file system)"
        } else if jf.jobs.iter().any(|o| {
            o.job_index != j.job_index && o.filenames.iter().any(|f| j.filenames.contains(f))
        }) {
            "another job names the same file, whose open descriptor keeps the deleted \
             inode alive; the model has one page-cache file per name"
        } else {
            continue;
        };
        note(&format!(
            "note: job '{}': unlink/unlink_each_loop not modelled: {why}",
            j.name
        ));
    }
}

/// Run `spec`, with a progress bar on a terminal when `progress` is on.
pub fn run_with_bar(spec: &RunSpec, progress: bool) -> Result<RunReport, CliError> {
    if !(progress && std::io::stderr().is_terminal()) {
        return Ok(run::run(spec)?);
    }
    let start = std::time::Instant::now();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let mut show = |p: run::Progress| {
        if start.elapsed().as_secs_f64() < 1.0 {
            return;
        }
        let b = bar.get_or_insert_with(|| {
            stderr_bar(
                1000,
                "{spinner} simulated {msg} [{bar:30}] {percent}% eta {eta}",
            )
        });
        b.set_message(format!("{:.1}s", p.now as f64 / 1e9));
        if let Some(h) = p.horizon.filter(|&h| h > 0) {
            b.set_position((p.now.min(h) as u128 * 1000 / h as u128) as u64);
        }
        b.tick();
    };
    let r = run::run_with_progress(spec, &mut show);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(r?)
}

/// A progress bar of `len` steps on stderr in the project's style.
fn stderr_bar(len: u64, template: &str) -> indicatif::ProgressBar {
    let b = indicatif::ProgressBar::with_draw_target(
        Some(len),
        indicatif::ProgressDrawTarget::stderr(),
    );
    b.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("template")
            .progress_chars("=> "),
    );
    b
}

/// Run `specs` side by side on every CPU of this machine, with a bar of
/// their progress (finished runs, and the running ones' simulated time) on
/// a terminal when `progress` is on and there are at least two runs.
pub fn run_many_with_bar(specs: &[RunSpec], progress: bool) -> Vec<Result<RunReport, run::Error>> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if !(progress && std::io::stderr().is_terminal()) || specs.len() < 2 {
        return run::run_many(specs, threads);
    }
    // Position in thousandths of a run: runs move the bar as their
    // simulated time advances, not only when they end.
    const STEPS: f64 = 1000.0;
    let bar = stderr_bar(
        specs.len() as u64 * STEPS as u64,
        &format!(
            "{{spinner}} {} runs [{{bar:30}}] {{percent}}% elapsed {{elapsed}} eta {{eta}}",
            specs.len()
        ),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(500));
    let out = run::run_many_with_progress(specs, threads, &|runs| {
        bar.set_position((runs * STEPS) as u64)
    });
    bar.finish_and_clear();
    out
}

/// The report in the formats asked, in fio's order: the job lines of normal
/// output first (fio prints them before the run), then terse, then json
/// (json+ when asked, which includes json), then the normal results.
pub fn render(rep: &RunReport, formats: &[String]) -> String {
    let has = |f: &str| formats.iter().any(|x| x == f);
    let mut out = String::new();
    if has("normal") {
        out.push_str(&report::fio_text::render_preamble(rep));
    }
    if has("terse") {
        out.push_str(&report::fio_terse::render(rep));
    }
    if has("json+") {
        out.push_str(&report::fio_json::to_string_plus(rep));
    } else if has("json") {
        out.push_str(&report::fio_json::to_string(rep));
    }
    if has("normal") {
        out.push_str(&report::fio_text::render(rep));
    }
    out
}

fn formats(v: Option<&str>) -> Result<Vec<String>, CliError> {
    let mut f = Vec::new();
    for part in v.unwrap_or("normal").split(',') {
        match part.trim() {
            "normal" | "json" | "json+" | "terse" => f.push(part.trim().to_string()),
            other => {
                return Err(CliError::bad(format!(
                    "--output-format: unknown format '{other}' (normal, json, json+, terse, or several comma-separated)"
                )))
            }
        }
    }
    Ok(f)
}

/// Without `--scheduler`, a `--kernel` without blk-mq runs its own default
/// elevator (CFQ), said in a note, instead of failing on `none`.
fn default_scheduler_for_era(spec: &mut RunSpec) {
    let Some(v) = spec.kernel.as_deref().and_then(|k| Version::parse(k).ok()) else {
        return;
    };
    let name = sched::default_for_kernel(v);
    if name != spec.scheduler {
        note(&format!(
            "note: no --scheduler: kernel {v} has no blk-mq 'none', so its default elevator, {name}, runs"
        ));
        spec.scheduler = name.to_string();
    }
}

/// `elevator run`.
pub fn cmd(argv: &[String]) -> Result<(), CliError> {
    let opts = all_opts();
    let p = args::parse("run", argv, &opts, Unknown::PassFio)?;
    if p.help() {
        return emit(&help(), None);
    }
    let fmts = formats(p.get("output-format"))?;
    let (mut spec, jf) = build_spec("run", &p)?;
    if let Some(s) = p.get("scheduler") {
        let t = sched::find_simulated(s).map_err(|e| CliError::bad(format!("--scheduler: {e}")))?;
        spec.scheduler = t.name.to_string();
    } else if p.get("spec").is_none() {
        default_scheduler_for_era(&mut spec);
    }
    if p.flag("print-spec") {
        return emit(&(spec.to_json() + "\n"), p.get("output"));
    }
    notices(&jf, spec.mount.as_deref());
    let rep = run_with_bar(&spec, !p.flag("no-progress"))?;
    for w in &rep.elevator.warnings {
        note(&format!("warning: {w}"));
    }
    emit(&render(&rep, &fmts), p.get("output"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn parsed(v: &[&str]) -> Parsed {
        args::parse("run", &s(v), &all_opts(), Unknown::PassFio).unwrap()
    }

    #[test]
    fn options_become_the_spec() {
        let p = parsed(&[
            "--name=a",
            "--rw=randwrite",
            "--size=1m",
            "--set",
            "nr_requests=64",
            "--switch=1s=none",
            "--cpus=4",
            "--mem=1g",
            "--seed=0x10",
            "--max-runtime=2s",
        ]);
        let (spec, jf) = build_spec("run", &p).unwrap();
        assert_eq!(jf.jobs.len(), 1);
        assert_eq!(
            spec.job.args,
            s(&["--name=a", "--rw=randwrite", "--size=1m"])
        );
        assert_eq!(spec.settings[0].name, "nr_requests");
        assert_eq!(
            spec.switches,
            vec![Switch {
                at_ns: 1_000_000_000,
                scheduler: "none".into()
            }]
        );
        assert_eq!((spec.machine.cpus, spec.machine.memory), (4, 1 << 30));
        assert_eq!(spec.seed, 16);
        assert_eq!(spec.max_runtime_ns, Some(2_000_000_000));
        assert!(
            spec.device.profile.is_some(),
            "the profile text is in the spec"
        );
    }

    #[test]
    fn errors_name_the_option() {
        let e = |v: &[&str]| build_spec("run", &parsed(v)).unwrap_err().message;
        assert!(e(&["--name=a", "--cpus=0"]).contains("cpus"));
        assert!(e(&["--name=a", "--switch", "soon"]).contains("--switch"));
        assert!(e(&["--name=a", "--seed", "x"]).contains("--seed"));
        assert!(e(&["--name=a", "--mem", "1q"]).contains("--mem"));
        assert!(e(&[]).contains("no job file"));
        assert!(formats(Some("xml")).unwrap_err().message.contains("xml"));
    }
}
