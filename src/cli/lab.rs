//! `elevator lab`, `validate`, `calibrate` and `loop`: the real-device
//! side. The work is in `crate::lab`; this layer parses options, prints and
//! maps failures to exit codes.

use super::args::{self, flag, valued, with_short, Opt, Parsed, Unknown, HELP};
use super::run::record_job;
use super::{emit, note, CliError};
use crate::device::load_profile;
use crate::lab::calibrate;
use crate::lab::loopdev::{self, Backing, LoopSpec};
use crate::lab::record::RecordedOptions;
use crate::lab::runner::{self, LabOptions, LabResult};
use crate::lab::validate::{self, Inputs, SimSettings};
use crate::lab::{journal, session, signal, LabError, LabErrorKind};
use crate::machine::Machine;
use crate::report::table;
use crate::report::{fio_json, fio_text, RunReport};
use crate::run::JobSource;
use crate::sim::time::{parse_duration, Ns, NS_PER_SEC};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// The options `lab` and `validate` share.
const LAB_OPTS: &[Opt] = &[
    valued(
        "dev",
        "DEV",
        "block device, e.g. /dev/loop0 (`elevator loop create`); it is\noverwritten",
    ),
    valued(
        "schedulers",
        "LIST",
        "comma-separated (default: all the device offers); schedulers\ncurrent kernels lack are simulation only (`elevator schedulers`)",
    ),
    valued(
        "set",
        "KNOB=VALUE",
        "queue/KNOB, iosched/NAME for every scheduler that has that\ntunable, or vm.NAME (a writeback sysctl, /proc/sys/vm/NAME,\nrestored afterwards); repeatable",
    ),
    valued("max-runtime", "DURATION", "cap every job's runtime (e.g. 3s)"),
    valued(
        "mount",
        "ext4[:OPTIONS]",
        "the jobs' files on a fresh ext4 made on DEV for every run,\nmounted with OPTIONS (the simulator's --mount)",
    ),
    valued(
        "repeat",
        "N",
        "N rounds, schedulers interleaved in each (A B C, A B C):\nmedians, spread, and ratios paired within rounds",
    ),
    valued(
        "save-json",
        "DIR",
        "keep fio's JSON of every run, the job fio ran and the logs\nfio wrote",
    ),
    valued("settle", "DURATION", "pause after switching scheduler (default 200ms)"),
    with_short(valued("output", "FILE", "write the result to FILE"), 'o'),
    flag("force", "run on a device that is in use (destroys its data)"),
    flag("quiet", "no progress lines on stderr"),
];

fn lab_opts() -> Vec<Opt> {
    let mut v = LAB_OPTS.to_vec();
    v.push(valued(
        "format",
        "FMT",
        "table (default), json, normal (fio's text per run); several\ncomma-separated",
    ));
    v.push(flag(
        "recover",
        "only undo what killed lab runs left behind (from the restore\njournal), then exit; no job file needed",
    ));
    v.push(HELP);
    v
}

/// Exit code when a lab command could not restore the device's settings,
/// remove its cgroups or its working directory (results are printed first).
pub const EXIT_NOT_RESTORED: i32 = 4;

/// The exit codes and the journal, for every lab command's help.
fn lab_exit_help() -> String {
    format!(
        "RESTORE JOURNAL:
    Before changing anything the lab writes what it will change (each queue
    file's value, cgroups, working directories, fio's process group) to
    {}/ID.json, durably. fio dies with the lab. After a
    kill -9 the next lab, validate or calibrate run restores from the journal
    before taking its baseline and says so; `elevator lab --recover` does it
    alone.

EXIT CODES:
    0 success; 1 failure (no root, no fio, device in use, fio failed);
    2 bad input (job file, option, or a --dev that does not exist or is not
    a block device; the message names the file, line and option);
    {EXIT_NOT_RESTORED} the settings, cgroups or working directory could not all be
    restored: the results are printed first, then what is left (the journal
    keeps it for --recover); 128+N stopped by signal N (everything restored).
",
        journal::DEFAULT_DIR
    )
}

pub fn lab_help() -> String {
    format!(
        "elevator lab — run a fio job file on a real block device under the kernel's schedulers

USAGE:
    elevator lab JOBFILE --dev DEV [OPTIONS]
    elevator lab --recover

Needs root and fio (apt-get install fio). The job file may send I/O only to
DEV: every option that names a file or device (filename, directory,
read_iolog's trace, replay_redirect, ...) is replaced by DEV, logs fio
writes go to the lab's private directory, and any other option that is not
known to be safe (exec_prerun, ioengine=external:..., ...) is refused, naming
the file, line and option. The device is overwritten. A device that is
mounted (in any mount namespace), has mounted partitions or holders, or is
swap is refused, and it is held open exclusively while the lab runs.
Scheduler, queue knobs and tunables are restored afterwards in dependency
order and checked, and the cgroups made for the job removed (also on
Ctrl-C).

{}
{}",
        args::options_help(&lab_opts()),
        lab_exit_help()
    )
}

fn validate_opts() -> Vec<Opt> {
    let mut v = LAB_OPTS.to_vec();
    v.extend([
        valued(
            "profile",
            "P",
            "device profile (built-in name or TOML file); calibrated\nfirst when not given",
        ),
        valued(
            "probe-time",
            "DURATION",
            "calibration probe length (default 2s)",
        ),
        valued(
            "model",
            "M",
            "calibration model (nvme, loop, ram; default: best fit)",
        ),
        valued("save-profile", "FILE", "keep the calibrated profile"),
        valued(
            "from-lab",
            "DIR",
            "measure nothing: the runs a --save-json DIR kept (same job\nfile; needs --profile; --dev, the run options and the\nmachine's CPUs and memory come from the record)",
        ),
        valued("cpus", "N", "simulated CPUs (default: this machine's)"),
        valued("format", "FMT", "table (default) or json"),
        HELP,
    ]);
    v
}

pub fn validate_help() -> String {
    format!(
        "elevator validate — the lab against the simulator on one job file

USAGE:
    elevator validate JOBFILE --dev DEV [--profile P] [OPTIONS]
    elevator validate JOBFILE --from-lab DIR --profile P [--cpus N] [--format FMT]

Runs the job on DEV under each scheduler (as `lab`) and in simulation on
the profile (calibrated first when --profile is not given), then prints per
scheduler and group measured vs simulated IOPS, mean and p99 latency with
their ratio (a group of several jobs: the median job), the group's IOPS
ratio to the first scheduler (its jobs' total; measured paired within
rounds vs simulated), and a summary: ranking agreement, mean absolute
percentage error, each group's share of its scheduler's IOPS when the job
has several groups (e.g. cgroup weights), how evenly a group's jobs shared
the device (lowest/highest job IOPS), and checks with tolerances: the
first scheduler's IOPS (±15%) and mean latency (±20%), every other
scheduler's IOPS ratio to it (±0.07), every group's share (±5 points),
every group's evenness (±0.15). With a profile `calibrate` wrote (its
[calibrated] table), calibrate's QD1 reference probe runs under none
before and after the rounds, and a note gives both against what it
measured then: how far the host's speed has moved since calibration.
Schedulers the simulator lacks are measured only. The job file is checked
as for `elevator lab`. `--save-json DIR` also keeps the session's record
(DIR/lab.json); `--from-lab DIR` sets those runs against the simulation
again without measuring (no root, no device): one measurement checked
against several profiles or builds, free of the machine's drift.

{}
{}",
        args::options_help(&validate_opts()),
        lab_exit_help()
    )
}

const CALIBRATE_OPTS: &[Opt] = &[
    with_short(valued("output", "FILE", "profile file (default: print it)"), 'o'),
    valued("probe-time", "DURATION", "per probe (default 2s)"),
    valued("repeat", "N", "median of N passes"),
    valued("cpus", "N", "simulated CPUs (default: this machine's)"),
    valued(
        "model",
        "M",
        "write this fit instead of the best one: nvme (device-bound),\nloop (the CPUs are the device: a loop worker, [loop] and\n[cpu] host_speed), ram",
    ),
    valued("save-probes", "FILE", "also write the measured probes as JSON"),
    valued(
        "from-probes",
        "FILE",
        "fit probes saved with --save-probes (no device, no root)",
    ),
    flag("force", "probe a device that is in use (destroys its data)"),
    flag("quiet", "no progress lines"),
    HELP,
];

pub fn calibrate_help() -> String {
    format!(
        "elevator calibrate — fit a device profile for the simulator from fio probes

USAGE:
    elevator calibrate DEV [-o PROFILE.toml] [OPTIONS]
    elevator calibrate --from-probes PROBES.json [-o PROFILE.toml]

Probes (scheduler none): 4 KiB random read and write at QD 1, 4, 16, 64;
128 KiB sequential read and write; a 70/30 mix; 4 jobs of 4 KiB random read
and write at QD 16; 12 jobs of 4 KiB random reads at QD 4 (how a crowd of
tasks shares the CPUs with a loop device's worker); between them five pairs of the QD 64 reads under none
and under mq-deadline back to back (when the device offers it): fio's own CPU per
I/O beyond none's gives the speed of scheduler hooks on this host ([cpu] hook_speed),
their median IOPS ratio is its check; and 4 KiB buffered (psync) random reads and writes of a 16 MiB
range held in the page cache, for the speed of a buffered call ([cpu]
cache_speed, fitted to the reads). Three models are fitted by simulating the probes (nvme,
loop — the CPUs are the device —, ram); the best fit is written as
a documented TOML (comments hold the measured points) for
`elevator run --device FILE`. The fit's error per probe is printed.

{}
{}",
        args::options_help(CALIBRATE_OPTS),
        lab_exit_help()
    )
}

const LOOP_OPTS: &[Opt] = &[
    valued("size", "SIZE", "create: the device size, e.g. 4G"),
    valued(
        "backing",
        "tmpfs|disk",
        "create: a private tmpfs (default; CPU-bound, quiet) or a file\nunder --dir (real I/O underneath, noisy)",
    ),
    valued("rotational", "0|1", "create: the device's rotational flag"),
    valued("dir", "DIR", "create: where a disk backing file goes (default /var/tmp)"),
    flag("force", "remove: also a device elevator did not create"),
    HELP,
];

pub fn loop_help() -> String {
    format!(
        "elevator loop — file-backed loop devices for the lab

USAGE:
    elevator loop create --size SIZE [--backing tmpfs|disk] [--rotational 0|1] [--dir DIR]
    elevator loop remove DEV [--force]

create prints the device name. The backing is written in full first, and
attached with direct I/O. remove detaches and deletes the backing (and
tmpfs) of a device made by create, nothing else.

{}",
        args::options_help(LOOP_OPTS)
    )
}

fn failed(message: String) -> CliError {
    match signal::interrupted() {
        Some(sig) => CliError {
            code: signal::exit_code(sig),
            message: format!("{message} (everything was restored)"),
        },
        None => CliError::failed(message),
    }
}

/// A lab failure's exit code: not restored (4) first, then a signal
/// (128+N), bad input (2), failure (1).
fn lab_error(e: LabError) -> CliError {
    if !e.unrestored.is_empty() {
        return CliError {
            code: EXIT_NOT_RESTORED,
            message: e.to_string(),
        };
    }
    match (e.kind, signal::interrupted()) {
        (_, Some(_)) => failed(e.message),
        (LabErrorKind::Input, None) => CliError::bad(e.message),
        (LabErrorKind::Failed, None) => CliError::failed(e.message),
    }
}

/// After the results were printed: what could not be restored.
fn not_restored(what: &str, unrestored: &[String]) -> Result<(), CliError> {
    if unrestored.is_empty() {
        return Ok(());
    }
    Err(CliError {
        code: EXIT_NOT_RESTORED,
        message: format!(
            "{what}, but could not restore everything afterwards: {}. The restore journal keeps it; fix the cause and run `elevator lab --recover`",
            unrestored.join("; ")
        ),
    })
}

/// `elevator lab --recover`.
fn recover() -> Result<(), CliError> {
    if !crate::lab::is_root() {
        return Err(CliError::failed(
            "lab --recover needs root: it writes sysfs queue files and removes cgroups",
        ));
    }
    let r = session::recover_earlier(true);
    let mut out = String::new();
    for n in &r.notes {
        out.push_str(n);
        out.push('\n');
    }
    for n in &r.running {
        out.push_str(n);
        out.push('\n');
    }
    if out.is_empty() && r.problems.is_empty() {
        out = format!(
            "nothing to recover: no journal of a killed lab run in {}\n",
            journal::dir().display()
        );
    }
    emit(&out, None)?;
    if r.problems.is_empty() {
        Ok(())
    } else {
        Err(CliError {
            code: EXIT_NOT_RESTORED,
            message: format!("could not recover everything: {}", r.problems.join("; ")),
        })
    }
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

fn sets(a: &Parsed) -> Result<Vec<(String, String)>, CliError> {
    a.all("set")
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| CliError::bad(format!("--set {kv}: expected KNOB=VALUE")))
        })
        .collect()
}

fn number(a: &Parsed, name: &str, default: usize, max: usize) -> Result<usize, CliError> {
    match a.get(name) {
        None => Ok(default),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 && n <= max => Ok(n),
            _ => Err(CliError::bad(format!(
                "--{name}: expected 1..{max}, got '{v}'"
            ))),
        },
    }
}

fn duration(a: &Parsed, name: &str) -> Result<Option<Ns>, CliError> {
    match a.get(name) {
        None => Ok(None),
        Some(v) => {
            let d = parse_duration(v).map_err(|e| CliError::bad(format!("--{name}: {e}")))?;
            if d == 0 {
                return Err(CliError::bad(format!(
                    "--{name}: must be greater than zero"
                )));
            }
            Ok(Some(d))
        }
    }
}

fn formats(a: &Parsed, allowed: &[&str], default: &str) -> Result<Vec<String>, CliError> {
    let f = list(a.get("format").unwrap_or(default));
    for x in &f {
        if !allowed.contains(&x.as_str()) {
            return Err(CliError::bad(format!(
                "--format: unknown format '{x}' ({})",
                allowed.join(", ")
            )));
        }
    }
    Ok(f)
}

fn one_job(a: &Parsed, cmd: &str) -> Result<String, CliError> {
    match a.rest.as_slice() {
        [j] => Ok(j.clone()),
        [] => Err(CliError::bad(format!(
            "{cmd}: expected a job file (see `elevator {cmd} --help`)"
        ))),
        more => Err(CliError::bad(format!(
            "{cmd}: expected one job file, got {}",
            more.join(" ")
        ))),
    }
}

fn lab_options(a: &Parsed, job: &str) -> Result<LabOptions, CliError> {
    let dev = a.get("dev").ok_or_else(|| {
        CliError::bad("--dev DEV is required (e.g. a device from `elevator loop create`)")
    })?;
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
    o.mount = a
        .get("mount")
        .map(crate::lab::fsmount::parse)
        .transpose()
        .map_err(CliError::bad)?;
    Ok(o)
}

/// The reference probe a calibrated profile names, to run around the rounds.
fn drift_reference(
    profile: &crate::device::Profile,
) -> Result<Option<runner::DriftReference>, String> {
    let Some(c) = profile.calibrated.as_ref() else {
        return Ok(None);
    };
    let probe = calibrate::probe_named(&c.reference_probe).ok_or_else(|| {
        let known: Vec<&str> = calibrate::PROBES.iter().map(|p| p.name).collect();
        format!(
            "profile {}: calibrated.reference_probe: '{}' is not one of calibrate's probes ({})",
            profile.name,
            c.reference_probe,
            known.join(", ")
        )
    })?;
    Ok(Some(runner::DriftReference {
        probe,
        runtime: c.probe_time_ms * crate::sim::time::NS_PER_MS,
        calibrated_iops: c.reference_iops,
    }))
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
    if let Some(m) = &o.mount {
        t.push(format!("mount: {} (a fresh ext4 for every run)", m.text));
    }
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
    let a = args::parse("lab", args, &lab_opts(), Unknown::Reject)?;
    if a.help() {
        return emit(&lab_help(), None);
    }
    if a.flag("recover") {
        if !a.rest.is_empty() {
            return Err(CliError::bad(
                "lab --recover takes no job file: it only undoes what killed runs left",
            ));
        }
        return recover();
    }
    let job = one_job(&a, "lab")?;
    let fmts = formats(&a, &["table", "json", "normal"], "table")?;
    let o = lab_options(&a, &job)?;
    let r = runner::run_lab(&o).map_err(lab_error)?;
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
                    "recovered": r.recovered,
                    "unrestored": r.unrestored,
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
    emit(&out, a.get("output"))?;
    not_restored("the lab runs finished (results above)", &r.unrestored)
}

/// `elevator loop create|remove`.
pub fn cmd_loop(args: &[String]) -> Result<(), CliError> {
    let a = args::parse("loop", args, LOOP_OPTS, Unknown::Reject)?;
    if a.help() {
        return emit(&loop_help(), None);
    }
    match a.rest.first().map(String::as_str) {
        Some("create") => {
            let size = loopdev::parse_size(a.get("size").ok_or_else(|| {
                CliError::bad("loop create: --size is required (e.g. --size 4G)")
            })?)
            .map_err(|e| CliError::bad(format!("--size: {e}")))?;
            let rotational = match a.get("rotational") {
                None => None,
                Some("0") => Some(false),
                Some("1") => Some(true),
                Some(v) => {
                    return Err(CliError::bad(format!(
                        "--rotational: expected 0 or 1, got '{v}'"
                    )))
                }
            };
            let backing = match a.get("backing").unwrap_or("tmpfs") {
                "tmpfs" => Backing::Tmpfs,
                "disk" => Backing::Disk,
                v => {
                    return Err(CliError::bad(format!(
                        "--backing: expected tmpfs or disk, got '{v}'"
                    )))
                }
            };
            let dev = loopdev::create(&LoopSpec {
                size,
                rotational,
                backing,
                dir: a.get("dir").map(PathBuf::from),
            })
            .map_err(CliError::failed)?;
            emit(&format!("{dev}\n"), None)
        }
        Some("remove") => {
            let dev = a
                .rest
                .get(1)
                .ok_or_else(|| CliError::bad("loop remove: expected a device, e.g. /dev/loop0"))?;
            loopdev::remove(dev, a.flag("force")).map_err(lab_error)
        }
        _ => Err(CliError::bad(format!(
            "loop: expected create or remove\n\n{}",
            loop_help()
        ))),
    }
}

/// `elevator calibrate`.
pub fn cmd_calibrate(args: &[String]) -> Result<(), CliError> {
    let a = args::parse("calibrate", args, CALIBRATE_OPTS, Unknown::Reject)?;
    if a.help() {
        return emit(&calibrate_help(), None);
    }
    let cpus = number(&a, "cpus", validate::machine_cpus(), 4096)?;
    let out = a.get("output");
    let c = match (a.get("from-probes"), a.rest.as_slice()) {
        (Some(file), []) => {
            let m = load_probes(file)?;
            calibrate::calibrate_from(&m, cpus, a.get("model"), !a.flag("quiet"))
                .map_err(lab_error)?
        }
        (None, [dev]) => {
            let probe = duration(&a, "probe-time")?.unwrap_or(2 * NS_PER_SEC);
            let passes = number(&a, "repeat", 1, 100)?;
            calibrate::calibrate(
                dev,
                a.flag("force"),
                probe,
                passes,
                cpus,
                a.get("model"),
                !a.flag("quiet"),
                a.get("save-probes").map(std::path::Path::new),
            )
            .map_err(lab_error)?
        }
        _ => return Err(CliError::bad(
            "calibrate: expected one device (elevator calibrate /dev/loop0 -o loop.toml) or --from-probes FILE without one",
        )),
    };

    let (toml, report) = (&c.toml, &c.report);
    match out {
        Some(p) => {
            std::fs::write(p, toml).map_err(|e| CliError::failed(format!("{p}: {e}")))?;
            emit(
                &format!(
                    "{report}profile written to {p} (use it with: elevator run --device {p} ...)\n"
                ),
                None,
            )?;
        }
        None => {
            eprint!("{report}");
            emit(toml, None)?;
        }
    }
    not_restored("the probes finished (profile above)", &c.unrestored)
}

/// Probes saved by `calibrate --save-probes`.
fn load_probes(file: &str) -> Result<calibrate::Measured, CliError> {
    let text = std::fs::read_to_string(file).map_err(|e| CliError::bad(format!("{file}: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        CliError::bad(format!(
            "{file}:{}:{}: not a probe file written by calibrate --save-probes: {e}",
            e.line(),
            e.column()
        ))
    })
}

/// `validate --from-lab DIR`: the session a `--save-json DIR` kept, and the
/// options it ran with. Options that would shape new runs are refused: the
/// record's own apply.
fn recorded_lab(
    a: &Parsed,
    job: &str,
    dir: &str,
) -> Result<(LabResult, LabOptions, RecordedOptions), CliError> {
    const RUN_SHAPING: [&str; 8] = [
        "dev",
        "schedulers",
        "set",
        "max-runtime",
        "mount",
        "repeat",
        "save-json",
        "settle",
    ];
    if let Some(x) = RUN_SHAPING.iter().find(|x| a.get(x).is_some()) {
        return Err(CliError::bad(format!(
            "--from-lab {dir}: --{x} is taken from the record; leave it out"
        )));
    }
    if a.get("profile").is_none() {
        return Err(CliError::bad(format!(
            "--from-lab {dir}: needs --profile (there is no device to calibrate)"
        )));
    }
    let calibrating = ["probe-time", "model", "save-profile"];
    if let Some(x) = calibrating.iter().find(|x| a.get(x).is_some()) {
        return Err(CliError::bad(format!(
            "--from-lab {dir}: --{x} is for calibrating a device first; --profile names the profile"
        )));
    }
    let (lab, rec) = crate::lab::record::load(std::path::Path::new(dir), std::path::Path::new(job))
        .map_err(CliError::bad)?;
    let mut o = LabOptions::new(job, &lab.device);
    o.sets = rec.sets.clone();
    o.max_runtime = rec.max_runtime_ns;
    o.repeat = rec.repeat;
    o.verbose = !a.flag("quiet");
    o.mount = rec
        .mount
        .as_deref()
        .map(crate::lab::fsmount::parse)
        .transpose()
        .map_err(|e| CliError::bad(format!("--from-lab {dir}: recorded --mount: {e}")))?;
    Ok((lab, o, rec))
}

/// The job the simulation runs: on a raw device, the jobs as fio's copy
/// runs them (their I/O on the device, `jobfile::sim_text_for_device`);
/// with `--mount`, or when the job replays traces, the file as given.
fn sim_job(job: &str, o: &LabOptions, machine: &Machine) -> Result<JobSource, CliError> {
    let (mut src, _) = record_job(&[job.to_string()], machine)?;
    if o.mount.is_some() {
        return Ok(src);
    }
    let env = |n: &str| std::env::var(n).ok();
    let text = crate::lab::jobfile::sim_text_for_device(std::path::Path::new(job), &o.dev, &env)
        .map_err(CliError::bad)?;
    if let Some(text) = text {
        src.files = std::collections::BTreeMap::from([(job.to_string(), text)]);
    }
    Ok(src)
}

/// `elevator validate`.
pub fn cmd_validate(args: &[String]) -> Result<(), CliError> {
    let a = args::parse("validate", args, &validate_opts(), Unknown::Reject)?;
    if a.help() {
        return emit(&validate_help(), None);
    }
    let job = one_job(&a, "validate")?;
    let fmts = formats(&a, &["table", "json"], "table")?;
    let recorded = match a.get("from-lab") {
        Some(dir) => Some(recorded_lab(&a, &job, dir)?),
        None => None,
    };
    let mut o = match &recorded {
        Some((_, o, _)) => o.clone(),
        None => lab_options(&a, &job)?,
    };
    // A recorded session is simulated on the machine that measured it.
    let kept = recorded.as_ref().map(|(_, _, r)| r);
    let cpus = number(
        &a,
        "cpus",
        kept.and_then(|r| r.cpus)
            .unwrap_or_else(validate::machine_cpus),
        4096,
    )?;
    let memory = match kept {
        Some(r) => r.memory.or_else(validate::machine_memory),
        None => validate::machine_memory(),
    };
    let machine = Machine {
        cpus: cpus.min(crate::machine::MAX_CPUS as usize) as u32,
        ..Machine::default()
    };
    let job_src = sim_job(&job, &o, &machine)?;
    let mut notes = Vec::new();
    let profile = match a.get("profile") {
        Some(p) => load_profile(p).map_err(CliError::bad)?,
        None => {
            let probe = duration(&a, "probe-time")?.unwrap_or(2 * NS_PER_SEC);
            note(&format!(
                "validate: no --profile given: calibrating {} first",
                o.dev
            ));
            let c = calibrate::calibrate(
                &o.dev,
                o.force,
                probe,
                1,
                cpus,
                a.get("model"),
                o.verbose,
                None,
            )
            .map_err(lab_error)?;
            eprint!("{}", c.report);
            if !c.unrestored.is_empty() {
                return not_restored("calibration finished (report above)", &c.unrestored);
            }
            let toml = c.toml;
            let tmp = crate::lab::TempDir::new("elevator-validate").map_err(failed)?;
            let path = match a.get("save-profile") {
                Some(p) => PathBuf::from(p),
                None => tmp.path().join("calibrated.toml"),
            };
            std::fs::write(&path, &toml)
                .map_err(|e| CliError::failed(format!("{}: {e}", path.display())))?;
            if a.get("save-profile").is_some() {
                notes.push(format!("calibrated profile saved to {}", path.display()));
            }
            let p = load_profile(&path.display().to_string()).map_err(CliError::bad)?;
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
    let lab = match recorded {
        Some((lab, ..)) => lab,
        None => {
            o.reference = drift_reference(&profile).map_err(CliError::bad)?;
            runner::run_lab(&o).map_err(lab_error)?
        }
    };
    let settings = SimSettings {
        profile: profile.clone(),
        sets: o.sets.clone(),
        max_runtime: o.max_runtime,
        cpus,
        memory,
        mount: o.mount.as_ref().map(|m| m.text.clone()),
    };
    let mut names = lab.schedulers.clone();
    for (s, _) in &lab.skipped {
        names.push(s.clone());
    }
    let mut sims = Vec::new();
    for s in &names {
        let r = if validate::simulated(s) {
            if o.verbose {
                note(&format!("validate: simulating {s} on {} ...", profile.name));
            }
            validate::simulate_with(&job_src, s, &settings)
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
            if let Some(dir) = a.get("from-lab") {
                v["recorded_in"] = json!(dir);
            }
            out.push_str(&serde_json::to_string_pretty(&v).unwrap_or_default());
            out.push('\n');
        } else {
            let title = vec![
                format!(
                    "validate: {job} — lab on {} ({} round(s){}) vs simulation on profile {} ({} CPUs)",
                    lab.device,
                    o.repeat,
                    a.get("from-lab")
                        .map(|d| format!(", recorded in {d}"))
                        .unwrap_or_default(),
                    profile.name,
                    cpus
                ),
                String::new(),
            ];
            notes.extend(lab.notes.iter().cloned());
            out.push_str(&validate::render(&title, &inp, &notes));
        }
    }
    emit(&out, a.get("output"))?;
    not_restored("the lab runs finished (results above)", &lab.unrestored)
}
