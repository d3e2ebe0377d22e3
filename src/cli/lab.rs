//! Commands `lab`, `loop`, `calibrate`, `validate` and `compare`.

use super::{parse_duration, parse_run_args, sim_config, CliError, EXIT_BAD_INPUT};
use crate::device::load_profile;
use crate::job;
use crate::job::JobFile;
use crate::lab::calibrate;
use crate::lab::loopdev::{self, Backing, LoopSpec};
use crate::lab::runner::{self, LabOptions, LabResult};
use crate::lab::signal;
use crate::lab::validate::{self, Inputs, SimSettings};
use crate::report::table::{self, Column, Outcome};
use crate::report::{fio_json, fio_text, RunReport};
use crate::run::{simulate, SimConfig};
use crate::sched;
use crate::sim::time::{Ns, NS_PER_SEC};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

pub const LAB_HELP: &str = "\
elevator lab — run a fio job file on a real block device under the kernel's schedulers

USAGE:
    elevator lab JOBFILE --dev DEV [OPTIONS]

Needs root and fio. Every job's filename= is replaced by DEV: the device is
overwritten. A device that is mounted, has mounted partitions or holders, or
is swap is refused. Scheduler, queue knobs and tunables are restored
afterwards, and the cgroups made for the job removed (also on Ctrl-C).

OPTIONS:
    --dev DEV               block device, e.g. /dev/loop0 (`elevator loop create`)
    --schedulers LIST       comma-separated (default: all the device offers);
                            cfq, deadline, noop, tpps are simulation only
    --set KNOB=VALUE        queue/KNOB, or iosched/NAME for every scheduler that
                            has that tunable; repeatable
    --max-runtime DURATION  cap every job's runtime (e.g. 3s)
    --repeat N              N rounds, schedulers interleaved in each (A B C, A B C):
                            medians, spread, and ratios paired within rounds
    --format FMT            table (default), json, normal (fio's text per run);
                            several comma-separated
    --output FILE           write the result to FILE
    --save-json DIR         keep fio's JSON of every run and the job fio ran
    --settle DURATION       pause after switching scheduler (default 200ms)
    --force                 run on a device that is in use (destroys its data)
    --quiet                 no progress lines on stderr
";

pub const LOOP_HELP: &str = "\
elevator loop — file-backed loop devices for the lab

USAGE:
    elevator loop create --size SIZE [--backing tmpfs|disk] [--rotational 0|1] [--dir DIR]
    elevator loop remove DEV [--force]

create prints the device name. tmpfs backing (default) is a private tmpfs
mount: CPU-bound, the least noisy; disk backing is a file under DIR (default
/var/tmp): real I/O underneath, noisy. The backing is written in full first,
and attached with direct I/O. remove detaches and deletes the backing (and
tmpfs) of a device made by create, nothing else.
";

pub const CALIBRATE_HELP: &str = "\
elevator calibrate — fit a device profile for the simulator from fio probes

USAGE:
    elevator calibrate DEV [-o PROFILE.toml] [OPTIONS]

Probes (scheduler none): 4 KiB random read and write at QD 1, 4, 16, 64;
128 KiB sequential read and write; a 70/30 mix; 4 jobs of 4 KiB random read
and write at QD 16. Three models are fitted by simulating the probes (nvme,
nvme with the per-request work on the CPUs, ram); the best fit is written as
a documented TOML (comments hold the measured points) for
`elevator run --device FILE`. The fit's error per probe is printed.

OPTIONS:
    -o, --output FILE       profile file (default: print it)
    --probe-time DURATION   per probe (default 2s)
    --repeat N              median of N passes
    --cpus N                simulated CPUs (default: this machine's)
    --model M               write this fit instead of the best one: nvme (device-
                            bound), cpu (nvme with the per-request work on the
                            CPUs, [cpu] table), ram
    --force                 probe a device that is in use (destroys its data)
    --quiet                 no progress lines
";

pub const VALIDATE_HELP: &str = "\
elevator validate — the lab against the simulator on one job file

USAGE:
    elevator validate JOBFILE --dev DEV [--profile P] [OPTIONS]

Runs the job on DEV under each scheduler (as `lab`) and in simulation on
the profile (calibrated first when --profile is not given), then prints per
scheduler and group measured vs simulated IOPS, mean and p99 latency with
their ratio, the IOPS ratio to the first scheduler (measured paired within
rounds vs simulated), and a summary: ranking agreement and mean absolute
percentage error. Schedulers the simulator lacks are measured only.

OPTIONS:
    --dev DEV, --schedulers LIST, --set KNOB=VALUE, --max-runtime D,
    --repeat N, --force, --save-json DIR, --quiet   as for lab
    --profile P             device profile (built-in name or TOML file)
    --probe-time D          calibration probe length (default 2s)
    --model M               calibration model (nvme, cpu, ram; default: best fit)
    --save-profile FILE     keep the calibrated profile
    --cpus N                simulated CPUs (default: this machine's)
    --format FMT            table (default) or json
    --output FILE           write the result to FILE
";

pub const COMPARE_HELP: &str = "\
elevator compare — simulate one job file under several schedulers

USAGE:
    elevator compare JOBFILE --schedulers LIST [RUN-OPTIONS]

Prints the table of the source documents: per scheduler and group,
bw / iops / avg lat for reads and writes, p99 completion latency, and the
IOPS ratio to the first scheduler. Schedulers the simulator does not have yet
are listed as such.

OPTIONS:
    --schedulers LIST       comma-separated (default none,mq-deadline,kyber,bfq)
    --format FMT            table (default), json, normal (fio's text per scheduler)
    and the options of `elevator run` (--device, --set, --seed, --cpus,
    --max-runtime, --output, --no-progress)
";

fn bad(message: impl Into<String>) -> CliError {
    CliError {
        code: EXIT_BAD_INPUT,
        message: message.into(),
    }
}

fn failed(message: String) -> CliError {
    match signal::interrupted() {
        Some(sig) => CliError {
            code: signal::exit_code(sig),
            message: format!("{message} (everything was restored)"),
        },
        None => CliError { code: 1, message },
    }
}

/// A small option parser: `--name value`, `--name=value`, flags, positionals.
struct Args {
    opts: Vec<(String, String)>,
    flags: Vec<String>,
    positional: Vec<String>,
}

impl Args {
    fn parse(args: &[String], valued: &[&str], flags: &[&str]) -> Result<Args, CliError> {
        let mut a = Args {
            opts: Vec::new(),
            flags: Vec::new(),
            positional: Vec::new(),
        };
        let mut i = 0;
        while i < args.len() {
            let s = &args[i];
            i += 1;
            let body = match s.strip_prefix("--") {
                Some(b) => b,
                None if s.starts_with('-') && s.len() == 2 => &s[1..],
                None => {
                    a.positional.push(s.clone());
                    continue;
                }
            };
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            if valued.contains(&name) {
                let v = match inline {
                    Some(v) => v,
                    None => {
                        let v = args
                            .get(i)
                            .cloned()
                            .ok_or_else(|| bad(format!("--{name}: expected a value")))?;
                        i += 1;
                        v
                    }
                };
                a.opts.push((name.to_string(), v));
            } else if flags.contains(&name) && inline.is_none() {
                a.flags.push(name.to_string());
            } else {
                return Err(bad(format!("unknown option '{s}'")));
            }
        }
        Ok(a)
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.opts
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> Vec<&str> {
        self.opts
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    fn flag(&self, name: &str) -> bool {
        self.flags.iter().any(|f| f == name)
    }

    fn help(&self) -> bool {
        self.flag("h") || self.flag("help")
    }
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

fn sets(a: &Args) -> Result<Vec<(String, String)>, CliError> {
    a.all("set")
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| bad(format!("--set {kv}: expected KNOB=VALUE")))
        })
        .collect()
}

fn number(a: &Args, name: &str, default: usize, max: usize) -> Result<usize, CliError> {
    match a.get(name) {
        None => Ok(default),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 && n <= max => Ok(n),
            _ => Err(bad(format!("--{name}: expected 1..{max}, got '{v}'"))),
        },
    }
}

fn duration(a: &Args, name: &str) -> Result<Option<Ns>, CliError> {
    match a.get(name) {
        None => Ok(None),
        Some(v) => {
            let d = parse_duration(v).map_err(|e| bad(format!("--{name}: {e}")))?;
            if d == 0 {
                return Err(bad(format!("--{name}: must be greater than zero")));
            }
            Ok(Some(d))
        }
    }
}

fn formats(a: &Args, allowed: &[&str], default: &str) -> Result<Vec<String>, CliError> {
    let f = list(a.get("format").unwrap_or(default));
    for x in &f {
        if !allowed.contains(&x.as_str()) {
            return Err(bad(format!(
                "--format: unknown format '{x}' ({})",
                allowed.join(", ")
            )));
        }
    }
    Ok(f)
}

fn emit(out: &str, path: Option<&str>) -> Result<(), CliError> {
    match path {
        Some(p) => std::fs::write(p, out).map_err(|e| bad(format!("--output {p}: {e}"))),
        None => {
            let _ = std::io::stdout().lock().write_all(out.as_bytes());
            Ok(())
        }
    }
}

fn one_job(a: &Args, cmd: &str) -> Result<String, CliError> {
    match a.positional.as_slice() {
        [j] => Ok(j.clone()),
        [] => Err(bad(format!(
            "{cmd}: expected a job file (see `elevator {cmd} --help`)"
        ))),
        more => Err(bad(format!(
            "{cmd}: expected one job file, got {}",
            more.join(" ")
        ))),
    }
}

const LAB_VALUED: &[&str] = &[
    "dev",
    "schedulers",
    "set",
    "max-runtime",
    "format",
    "output",
    "repeat",
    "settle",
    "save-json",
];

fn lab_options(a: &Args, job: &str) -> Result<LabOptions, CliError> {
    let dev = a
        .get("dev")
        .ok_or_else(|| bad("--dev DEV is required (e.g. a device from `elevator loop create`)"))?;
    let mut o = LabOptions::new(job, dev);
    o.schedulers = a.get("schedulers").map(list);
    o.sets = sets(a)?;
    o.max_runtime = duration(a, "max-runtime")?;
    o.repeat = number(a, "repeat", 1, 1000)?;
    o.force = a.flag("force");
    if let Some(s) = duration(a, "settle")? {
        o.settle = Duration::from_nanos(s);
    }
    o.save_json = a.get("save-json").map(PathBuf::from);
    o.verbose = !a.flag("quiet");
    Ok(o)
}

fn lab_title(job: &str, r: &LabResult, o: &LabOptions) -> Vec<String> {
    let mut t = vec![format!(
        "lab: {job} on {} ({}), {} round(s){}",
        r.device,
        r.fio_version,
        o.repeat,
        o.max_runtime
            .map(|m| format!(", runtime capped at {:.3} s", m as f64 / NS_PER_SEC as f64))
            .unwrap_or_default()
    )];
    if !o.sets.is_empty() {
        t.push(format!(
            "set: {}",
            o.sets
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    t.push(String::new());
    t
}

fn runs_json(runs: &[(String, usize, &RunReport)]) -> serde_json::Value {
    serde_json::Value::Array(
        runs.iter()
            .map(|(s, r, rep)| json!({"scheduler": s, "round": r, "fio": fio_json::render(rep)}))
            .collect(),
    )
}

/// `elevator lab`.
pub fn cmd_lab(args: &[String]) -> Result<(), CliError> {
    let a = Args::parse(args, LAB_VALUED, &["force", "quiet", "h", "help"])?;
    if a.help() {
        print!("{LAB_HELP}");
        return Ok(());
    }
    let job = one_job(&a, "lab")?;
    let fmts = formats(&a, &["table", "json", "normal"], "table")?;
    let o = lab_options(&a, &job)?;
    let r = runner::run_lab(&o).map_err(failed)?;
    let cols = runner::columns(&r);
    let mut out = String::new();
    for f in &fmts {
        match f.as_str() {
            "json" => {
                let runs: Vec<(String, usize, &RunReport)> = r
                    .runs
                    .iter()
                    .map(|x| (x.scheduler.clone(), x.round, &x.report))
                    .collect();
                let doc = json!({
                    "mode": "lab",
                    "job": job,
                    "device": r.device,
                    "fio_version": r.fio_version,
                    "rounds": o.repeat,
                    "schedulers_offered": r.offered,
                    "notes": r.notes,
                    "table": table::to_json(&cols),
                    "runs": runs_json(&runs),
                });
                out.push_str(&serde_json::to_string_pretty(&doc).unwrap_or_default());
                out.push('\n');
            }
            "normal" => {
                for x in &r.runs {
                    out.push_str(&format!(
                        "=== {} (round {}) on {} ===\n",
                        x.scheduler, x.round, r.device
                    ));
                    out.push_str(&fio_text::render(&x.report));
                }
            }
            _ => {
                out.push_str(&table::render(&lab_title(&job, &r, &o), &cols));
                for n in &r.notes {
                    out.push_str(&format!("note: {n}\n"));
                }
            }
        }
    }
    emit(&out, a.get("output"))
}

/// `elevator loop create|remove`.
pub fn cmd_loop(args: &[String]) -> Result<(), CliError> {
    let a = Args::parse(
        args,
        &["size", "rotational", "backing", "dir"],
        &["force", "h", "help"],
    )?;
    if a.help() {
        print!("{LOOP_HELP}");
        return Ok(());
    }
    match a.positional.first().map(String::as_str) {
        Some("create") => {
            let size = loopdev::parse_size(
                a.get("size")
                    .ok_or_else(|| bad("loop create: --size is required (e.g. --size 4G)"))?,
            )
            .map_err(|e| bad(format!("--size: {e}")))?;
            let rotational = match a.get("rotational") {
                None => None,
                Some("0") => Some(false),
                Some("1") => Some(true),
                Some(v) => return Err(bad(format!("--rotational: expected 0 or 1, got '{v}'"))),
            };
            let backing = match a.get("backing").unwrap_or("tmpfs") {
                "tmpfs" => Backing::Tmpfs,
                "disk" => Backing::Disk,
                v => return Err(bad(format!("--backing: expected tmpfs or disk, got '{v}'"))),
            };
            let dev = loopdev::create(&LoopSpec {
                size,
                rotational,
                backing,
                dir: a.get("dir").map(PathBuf::from),
            })
            .map_err(|e| CliError {
                code: 1,
                message: e,
            })?;
            println!("{dev}");
            Ok(())
        }
        Some("remove") => {
            let dev = a
                .positional
                .get(1)
                .ok_or_else(|| bad("loop remove: expected a device, e.g. /dev/loop0"))?;
            loopdev::remove(dev, a.flag("force")).map_err(|e| CliError {
                code: 1,
                message: e,
            })
        }
        _ => Err(bad(format!("usage:\n{LOOP_HELP}"))),
    }
}

/// `elevator calibrate`.
pub fn cmd_calibrate(args: &[String]) -> Result<(), CliError> {
    let a = Args::parse(
        args,
        &["output", "o", "probe-time", "repeat", "cpus", "model"],
        &["force", "quiet", "h", "help"],
    )?;
    if a.help() {
        print!("{CALIBRATE_HELP}");
        return Ok(());
    }
    let dev =
        match a.positional.as_slice() {
            [d] => d.clone(),
            _ => return Err(bad(
                "calibrate: expected one device, e.g. elevator calibrate /dev/loop0 -o loop.toml",
            )),
        };
    let probe = duration(&a, "probe-time")?.unwrap_or(2 * NS_PER_SEC);
    let passes = number(&a, "repeat", 1, 100)?;
    let cpus = number(&a, "cpus", validate::machine_cpus(), 4096)?;
    let out = a.get("output").or_else(|| a.get("o"));
    let (toml, report) = calibrate::calibrate(
        &dev,
        a.flag("force"),
        probe,
        passes,
        cpus,
        a.get("model"),
        !a.flag("quiet"),
    )
    .map_err(failed)?;
    match out {
        Some(p) => {
            std::fs::write(p, &toml).map_err(|e| bad(format!("{p}: {e}")))?;
            print!("{report}");
            println!("profile written to {p} (use it with: elevator run --device {p} ...)");
        }
        None => {
            eprint!("{report}");
            print!("{toml}");
        }
    }
    Ok(())
}

/// `elevator validate`.
pub fn cmd_validate(args: &[String]) -> Result<(), CliError> {
    let mut valued = LAB_VALUED.to_vec();
    valued.extend(["profile", "probe-time", "save-profile", "cpus", "model"]);
    let a = Args::parse(args, &valued, &["force", "quiet", "h", "help"])?;
    if a.help() {
        print!("{VALIDATE_HELP}");
        return Ok(());
    }
    let job = one_job(&a, "validate")?;
    let fmts = formats(&a, &["table", "json"], "table")?;
    let o = lab_options(&a, &job)?;
    let jf =
        crate::lab::jobfile::parse_for_device(std::path::Path::new(&job), &o.dev).map_err(bad)?;
    let cpus = number(&a, "cpus", validate::machine_cpus(), 4096)?;
    let mut notes = Vec::new();
    let profile = match a.get("profile") {
        Some(p) => load_profile(p).map_err(bad)?,
        None => {
            let probe = duration(&a, "probe-time")?.unwrap_or(2 * NS_PER_SEC);
            eprintln!("validate: no --profile given: calibrating {} first", o.dev);
            let (toml, report) =
                calibrate::calibrate(&o.dev, o.force, probe, 1, cpus, a.get("model"), o.verbose)
                    .map_err(failed)?;
            eprint!("{report}");
            let tmp = crate::lab::TempDir::new("elevator-validate").map_err(failed)?;
            let path = match a.get("save-profile") {
                Some(p) => PathBuf::from(p),
                None => tmp.path().join("calibrated.toml"),
            };
            std::fs::write(&path, &toml).map_err(|e| bad(format!("{}: {e}", path.display())))?;
            if a.get("save-profile").is_some() {
                notes.push(format!("calibrated profile saved to {}", path.display()));
            }
            let p = load_profile(&path.display().to_string()).map_err(bad)?;
            notes.push(format!("profile: {} (calibrated now)", p.description));
            p
        }
    };
    if a.get("profile").is_some() {
        notes.push(format!(
            "profile: {} ({})",
            profile.name, profile.description
        ));
    }
    let lab = runner::run_lab(&o).map_err(failed)?;
    let settings = SimSettings {
        profile: profile.clone(),
        sets: o.sets.clone(),
        max_runtime: o.max_runtime,
        cpus,
    };
    let mut names = lab.schedulers.clone();
    for (s, _) in &lab.skipped {
        names.push(s.clone());
    }
    let mut sims = Vec::new();
    for s in &names {
        let r = if validate::simulated(s) {
            if o.verbose {
                eprintln!("validate: simulating {s} on {} ...", profile.name);
            }
            validate::simulate_with(&jf, s, &settings)
        } else {
            Err("not simulated yet".to_string())
        };
        sims.push((s.clone(), r));
    }
    let inp = Inputs { lab: &lab, sims };
    let mut out = String::new();
    for f in &fmts {
        if f == "json" {
            let mut v = validate::to_json(&inp);
            v["job"] = json!(job);
            v["device"] = json!(lab.device);
            v["profile"] = json!(profile.name);
            v["rounds"] = json!(o.repeat);
            out.push_str(&serde_json::to_string_pretty(&v).unwrap_or_default());
            out.push('\n');
        } else {
            let title = vec![
                format!(
                    "validate: {job} — lab on {} ({} round(s)) vs simulation on profile {} ({} CPUs)",
                    lab.device, o.repeat, profile.name, cpus
                ),
                String::new(),
            ];
            notes.extend(lab.notes.iter().cloned());
            out.push_str(&validate::render(&title, &inp, &notes));
        }
    }
    emit(&out, a.get("output"))
}

/// Run the planned simulations (None: skipped) on up to as many threads as
/// the machine has CPUs; results come back in plan order.
fn run_side_by_side(
    jf: &JobFile,
    planned: &[(String, Option<SimConfig>)],
) -> Vec<Option<Result<RunReport, String>>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let results: Mutex<Vec<Option<Result<RunReport, String>>>> =
        Mutex::new((0..planned.len()).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    let todo = planned.iter().filter(|(_, c)| c.is_some()).count();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(todo)
        .max(1);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((_, plan)) = planned.get(i) else {
                    break;
                };
                if let Some(cfg) = plan {
                    let rep = simulate(jf, cfg.clone());
                    results.lock().expect("results")[i] = Some(rep);
                }
            });
        }
    });
    results.into_inner().expect("results")
}

/// `elevator compare` (simulation).
pub fn cmd_compare(args: &[String]) -> Result<(), CliError> {
    // Take compare's own options out; the rest are `run`'s.
    let mut rest = Vec::new();
    let mut scheds: Option<String> = None;
    let mut format = "table".to_string();
    let mut i = 0;
    while i < args.len() {
        let s = &args[i];
        let (name, inline) = match s.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (s.as_str(), None),
        };
        if matches!(
            name,
            "--schedulers" | "-schedulers" | "--format" | "-format"
        ) {
            let v = match inline {
                Some(v) => v,
                None => {
                    i += 1;
                    args.get(i)
                        .cloned()
                        .ok_or_else(|| bad(format!("{name}: expected a value")))?
                }
            };
            if name.ends_with("schedulers") {
                scheds = Some(v);
            } else {
                format = v;
            }
        } else {
            rest.push(s.clone());
        }
        i += 1;
    }
    let o = parse_run_args(&rest)?;
    if o.help {
        print!("{COMPARE_HELP}");
        return Ok(());
    }
    let fmts = {
        let f = list(&format);
        for x in &f {
            if !["table", "json", "normal"].contains(&x.as_str()) {
                return Err(bad(format!(
                    "--format: unknown format '{x}' (table, json, normal)"
                )));
            }
        }
        f
    };
    let names = list(scheds.as_deref().unwrap_or("none,mq-deadline,kyber,bfq"));
    if names.is_empty() {
        return Err(bad("--schedulers: expected a comma-separated list"));
    }
    if o.fio_args.is_empty() {
        return Err(bad(
            "compare: expected a job file (see `elevator compare --help`)",
        ));
    }
    let jf = job::parse_args(&o.fio_args, &|n: &str| std::env::var(n).ok())
        .map_err(|e| bad(e.to_string()))?;
    // Every iosched/ setting must fit some scheduler of the list.
    let mut tunables: Vec<&'static str> = Vec::new();
    for n in &names {
        if let Ok(t) = sched::find(n) {
            tunables.extend(sched::tunable_names(t));
        }
    }
    for (k, _) in &o.sets {
        if let Some(t) = k.strip_prefix("iosched/") {
            if !tunables.contains(&t) {
                return Err(bad(format!(
                    "--set {k}: no simulated scheduler of the list ({}) has this tunable",
                    names.join(", ")
                )));
            }
        }
    }
    let long = jf
        .jobs
        .iter()
        .filter_map(|j| j.runtime)
        .max()
        .is_some_and(|r| r > 60 * NS_PER_SEC);
    if long && o.max_runtime.is_none() {
        eprintln!("elevator: note: the job runs for more than a minute of simulated time per scheduler; --max-runtime caps it");
    }
    // Configure every scheduler first (bad options fail before any run),
    // then run the simulations side by side on the machine's CPUs: they are
    // independent, and each is deterministic on its own.
    let mut device = String::new();
    let mut planned: Vec<(String, Option<SimConfig>)> = Vec::new();
    for n in &names {
        if !validate::simulated(n) {
            planned.push((n.clone(), None));
            continue;
        }
        let mut so = o.clone();
        so.scheduler = n.clone();
        let mine: Vec<&'static str> = sched::find(n).map(sched::tunable_names).unwrap_or_default();
        so.sets = o
            .sets
            .iter()
            .filter(|(k, _)| k.strip_prefix("iosched/").is_none_or(|t| mine.contains(&t)))
            .cloned()
            .collect();
        let mut cfg = sim_config(&so)?;
        device = cfg.profile.name.clone();
        if planned.iter().any(|(_, c)| c.is_some()) {
            // One progress bar: the first simulated scheduler drives it.
            cfg.progress = None;
        }
        planned.push((n.clone(), Some(cfg)));
    }
    let reports = run_side_by_side(&jf, &planned);
    let mut cols = Vec::new();
    for ((n, _), rep) in planned.iter().zip(reports) {
        cols.push(Column {
            scheduler: n.clone(),
            outcome: match rep {
                None => Outcome::Skipped("not simulated yet".into()),
                Some(r) => Outcome::Runs(vec![r.map_err(bad)?]),
            },
            cpu_us_per_io: Vec::new(),
        });
    }
    let mut out = String::new();
    for f in &fmts {
        match f.as_str() {
            "json" => {
                let runs: Vec<(String, usize, &RunReport)> = cols
                    .iter()
                    .filter_map(|c| match &c.outcome {
                        Outcome::Runs(r) => r.first().map(|x| (c.scheduler.clone(), 1, x)),
                        _ => None,
                    })
                    .collect();
                let doc = json!({
                    "mode": "simulation",
                    "job": jf.source,
                    "device": device,
                    "seed": o.seed,
                    "table": table::to_json(&cols),
                    "runs": runs_json(&runs),
                });
                out.push_str(&serde_json::to_string_pretty(&doc).unwrap_or_default());
                out.push('\n');
            }
            "normal" => {
                for c in &cols {
                    if let Outcome::Runs(r) = &c.outcome {
                        out.push_str(&format!(
                            "=== {} (simulation on {device}) ===\n",
                            c.scheduler
                        ));
                        for rep in r {
                            out.push_str(&fio_text::render(rep));
                        }
                    }
                }
            }
            _ => {
                let title = vec![
                    format!(
                        "compare: {} on {device} (simulation, seed {}{})",
                        o.fio_args.join(" "),
                        o.seed,
                        o.max_runtime
                            .map(|m| format!(
                                ", runtime capped at {:.3} s",
                                m as f64 / NS_PER_SEC as f64
                            ))
                            .unwrap_or_default()
                    ),
                    String::new(),
                ];
                out.push_str(&table::render(&title, &cols));
            }
        }
    }
    emit(&out, o.output.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn args() {
        let a = Args::parse(
            &s(&[
                "job.fio",
                "--dev",
                "/dev/loop0",
                "--set=nr_requests=64",
                "--set",
                "iosched/x=1",
                "--force",
            ]),
            LAB_VALUED,
            &["force"],
        )
        .unwrap();
        assert_eq!(a.positional, s(&["job.fio"]));
        assert_eq!(a.get("dev"), Some("/dev/loop0"));
        assert_eq!(a.all("set"), vec!["nr_requests=64", "iosched/x=1"]);
        assert!(a.flag("force"));
        assert!(Args::parse(&s(&["--bogus"]), LAB_VALUED, &[]).is_err());
        assert!(Args::parse(&s(&["--dev"]), LAB_VALUED, &[]).is_err());
        let o = lab_options(&a, "job.fio").unwrap();
        assert_eq!(o.sets.len(), 2);
        assert!(o.force);
    }

    #[test]
    fn lab_needs_a_device() {
        let e = cmd_lab(&s(&["job.fio"])).unwrap_err();
        assert!(e.message.contains("--dev"), "{}", e.message);
        let e = cmd_lab(&s(&["job.fio", "--dev", "/dev/x", "--repeat", "0"])).unwrap_err();
        assert!(e.message.contains("--repeat"), "{}", e.message);
    }

    #[test]
    fn compare_lists_unsimulated_schedulers() {
        let dir = crate::lab::TempDir::new("elevator-compare-test").unwrap();
        let job = dir.path().join("j.fio");
        std::fs::write(
            &job,
            "[global]\nioengine=libaio\ndirect=1\nbs=4k\nruntime=50ms\ntime_based\nfilename=/dev/x\n[r]\nrw=randread\niodepth=8\n",
        )
        .unwrap();
        let out = dir.path().join("out.txt");
        cmd_compare(&s(&[
            job.to_str().unwrap(),
            "--schedulers",
            "none,mq-deadline,kyber",
            "--output",
            out.to_str().unwrap(),
            "--no-progress",
        ]))
        .unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert!(text.contains("compare:"), "{text}");
        assert!(text.contains("mq-deadline"), "{text}");
        assert!(text.contains("kyber"), "{text}");
        assert!(text.contains("not simulated yet"), "{text}");
        assert!(text.contains("iops / none"), "{text}");
    }
}
