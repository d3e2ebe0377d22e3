//! The command line: `elevator run | schedulers | devices`.
//!
//! `run` takes fio's own arguments (job files and `--name=... --rw=...`
//! options, single or double dash) mixed with elevator's options, so a fio
//! command line works with `fio` replaced by `elevator run`.

use crate::block::knobs::{QueueKnobs, QUEUE_KNOBS};
use crate::device::{builtin_profiles, load_profile};
use crate::job::{self, EngineKind, JobFile};
use crate::report;
use crate::sched::{self, SCHEDULERS};
use crate::sim::switches;
use crate::sim::time::{Ns, NS_PER_MS, NS_PER_SEC, NS_PER_US};
use crate::sim::{simulate, SimConfig, DEFAULT_SEED};
use std::io::{IsTerminal, Write};

/// Exit code for bad input (job file, option, device profile, CLI value).
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit code when no job of the file can be modelled.
pub const EXIT_NOT_MODELLED: i32 = 3;

/// A CLI failure: message and exit code.
#[derive(Debug)]
pub struct CliError {
    pub code: i32,
    pub message: String,
}

fn bad(message: impl Into<String>) -> CliError {
    CliError {
        code: EXIT_BAD_INPUT,
        message: message.into(),
    }
}

pub const USAGE: &str = "\
elevator — a working model of the Linux block I/O stack and its I/O schedulers

USAGE:
    elevator run [OPTIONS] [JOBFILE...] [FIO-OPTIONS...]
    elevator schedulers
    elevator devices [--show NAME]
    elevator compare JOBFILE --schedulers LIST [RUN-OPTIONS]
    elevator lab JOBFILE --dev DEV [--schedulers LIST] [--repeat N] [OPTIONS]
    elevator validate JOBFILE --dev DEV [--profile P] [--repeat N] [OPTIONS]
    elevator calibrate DEV [-o PROFILE.toml]
    elevator loop create --size SIZE [--backing tmpfs|disk] | loop remove DEV
    elevator help

Run `elevator run --help` for the options of run, and `elevator COMMAND --help`
for the others (lab, validate, calibrate and loop need root and fio).
";

pub const RUN_HELP: &str = "\
elevator run — simulate fio job files on a device model with one I/O scheduler

USAGE:
    elevator run [OPTIONS] [JOBFILE...] [FIO-OPTIONS...]

Job files and fio's command-line job options (--name=x --rw=randread ..., one
or two dashes) are read exactly as fio reads them.

OPTIONS:
    --scheduler NAME        none (default), noop, deadline, mq-deadline
                            (`elevator schedulers` lists them with their tunables)
    --device NAME|FILE      device model: a built-in profile (nvme (default), ram,
                            hdd, sata-ssd) or a profile TOML file (`elevator devices`)
    --set KNOB=VALUE        queue sysfs knob (nr_requests, read_ahead_kb, nomerges,
                            rotational, max_sectors_kb, write_cache), a
                            scheduler tunable as iosched/NAME, or a CPU cost in
                            ns as cpu/NAME (submit_ns, driver_ns, complete_ns,
                            lock_handoff_ns, SCHED.insert_ns|dispatch_ns|
                            complete_ns|merge_ns); repeatable
    --seed N                random seed (default 2978585581, fio's FIO_RANDSEED);
                            same inputs and seed give byte-identical output
    --cpus N                simulated CPUs: software queues and hardware queue
                            mapping (default 2)
    --max-runtime DURATION  cap every job's simulated time (e.g. 30s, 500ms, 2m)
    --switch TIME=NAME      switch the scheduler at TIME (freeze, drain, switch);
                            repeatable, e.g. --switch 30s=mq-deadline
    --output-format FMT     normal (default), json, json+, terse (fio's terse v3), or
                            several comma-separated (normal,json), printed in fio's order
    --output FILE           write the report to FILE instead of stdout
    --log-dir DIR           write fio's job logs (write_lat_log, write_bw_log,
                            write_iops_log) into DIR instead of the current directory
    --no-progress           never show the progress bar (it shows on a terminal
                            for runs longer than a second)
    -h, --help              this help

EXIT CODES:
    0 success; 2 bad input (the message names file:line and option);
    3 no job of the file can be modelled.
";

/// Parse a duration like fio: plain number = seconds; suffixes ns, us, ms, s, m, h, d.
pub fn parse_duration(s: &str) -> Result<Ns, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("expected a duration like 30s, 500ms or 2m, got '{s}'"))?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => NS_PER_SEC,
        "ns" => 1,
        "us" | "usec" => NS_PER_US,
        "ms" | "msec" => NS_PER_MS,
        "m" | "min" => 60 * NS_PER_SEC,
        "h" => 3600 * NS_PER_SEC,
        "d" => 86400 * NS_PER_SEC,
        _ => {
            return Err(format!(
                "unknown time unit '{unit}' in '{s}' (ns, us, ms, s, m, h, d)"
            ))
        }
    };
    if !v.is_finite() || v < 0.0 {
        return Err(format!("expected a non-negative duration, got '{s}'"));
    }
    Ok((v * mult as f64).round() as Ns)
}

/// Options of `run` after separating them from fio's arguments.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub scheduler: String,
    pub device: String,
    pub sets: Vec<(String, String)>,
    pub seed: u64,
    pub cpus: usize,
    pub max_runtime: Option<Ns>,
    pub switches: Vec<(Ns, String)>,
    pub formats: Vec<String>,
    pub output: Option<String>,
    /// Directory for job log files (`--log-dir`).
    pub log_dir: Option<String>,
    pub progress: bool,
    pub help: bool,
    /// Everything else: job files and fio options, in order.
    pub fio_args: Vec<String>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            scheduler: "none".into(),
            device: "nvme".into(),
            sets: Vec::new(),
            seed: DEFAULT_SEED,
            cpus: 2,
            max_runtime: None,
            switches: Vec::new(),
            formats: vec!["normal".into()],
            output: None,
            log_dir: None,
            progress: true,
            help: false,
            fio_args: Vec::new(),
        }
    }
}

/// Split `run`'s arguments into elevator's options and fio's.
pub fn parse_run_args(args: &[String]) -> Result<RunOptions, CliError> {
    let mut o = RunOptions::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        // Accept --opt=value, --opt value, and a single dash for fio-shared names.
        let stripped = a.strip_prefix("--").or_else(|| a.strip_prefix('-'));
        let Some(body) = stripped else {
            o.fio_args.push(a.clone());
            i += 1;
            continue;
        };
        let (name, inline) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (body, None),
        };
        let takes_value = matches!(
            name,
            "scheduler"
                | "device"
                | "set"
                | "seed"
                | "cpus"
                | "max-runtime"
                | "switch"
                | "output-format"
                | "output"
                | "log-dir"
        );
        if !takes_value {
            match name {
                "h" | "help" => o.help = true,
                "no-progress" => o.progress = false,
                _ => o.fio_args.push(a.clone()),
            }
            i += 1;
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i)
                    .cloned()
                    .ok_or_else(|| bad(format!("--{name}: expected a value")))?
            }
        };
        match name {
            "scheduler" => o.scheduler = value.trim().to_string(),
            "device" => o.device = value,
            "set" => {
                let (k, v) = value
                    .split_once('=')
                    .ok_or_else(|| bad(format!("--set {value}: expected KNOB=VALUE")))?;
                o.sets.push((k.trim().to_string(), v.to_string()));
            }
            "seed" => {
                o.seed = parse_u64(&value).map_err(|e| bad(format!("--seed: {e}")))?;
            }
            "cpus" => {
                let n = parse_u64(&value).map_err(|e| bad(format!("--cpus: {e}")))?;
                if n == 0 || n > 4096 {
                    return Err(bad(format!("--cpus: expected 1..4096, got {n}")));
                }
                o.cpus = n as usize;
            }
            "max-runtime" => {
                let d = parse_duration(&value).map_err(|e| bad(format!("--max-runtime: {e}")))?;
                if d == 0 {
                    return Err(bad("--max-runtime: must be greater than zero"));
                }
                o.max_runtime = Some(d);
            }
            "switch" => {
                let (t, n) = value.split_once('=').ok_or_else(|| {
                    bad(format!(
                        "--switch {value}: expected TIME=SCHEDULER, e.g. 30s=mq-deadline"
                    ))
                })?;
                let at = parse_duration(t).map_err(|e| bad(format!("--switch: {e}")))?;
                sched::create(n).map_err(|e| bad(format!("--switch: {e}")))?;
                o.switches.push((at, n.trim().to_string()));
            }
            "output-format" => {
                let mut f = Vec::new();
                for part in value.split(',') {
                    match part.trim() {
                        "normal" | "json" | "json+" | "terse" => f.push(part.trim().to_string()),
                        other => {
                            return Err(bad(format!(
                                "--output-format: unknown format '{other}' (normal, json, json+, terse, or several comma-separated)"
                            )))
                        }
                    }
                }
                o.formats = f;
            }
            "output" => o.output = Some(value),
            "log-dir" => o.log_dir = Some(value),
            _ => unreachable!("listed above"),
        }
        i += 1;
    }
    o.switches.sort_by_key(|(t, _)| *t);
    Ok(o)
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        t.parse()
    };
    r.map_err(|_| format!("expected a non-negative integer, got '{s}'"))
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn progress_printer(now: Ns, horizon: Option<Ns>) {
    use std::sync::OnceLock;
    static BAR: OnceLock<indicatif::ProgressBar> = OnceLock::new();
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    if start.elapsed().as_secs_f64() < 1.0 {
        return;
    }
    let bar = BAR.get_or_init(|| {
        let b = indicatif::ProgressBar::with_draw_target(
            Some(1000),
            indicatif::ProgressDrawTarget::stderr(),
        );
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} simulated {msg} [{bar:30}] {percent}% eta {eta}",
            )
            .expect("template")
            .progress_chars("=> "),
        );
        b
    });
    bar.set_message(format!("{:.1}s", now as f64 / 1e9));
    if let Some(h) = horizon.filter(|&h| h > 0) {
        bar.set_position((now.min(h) as u128 * 1000 / h as u128) as u64);
    }
    bar.tick();
}

fn finish_progress() {
    // The bar (if any) is cleared by leaving it; print a newline-free clear.
    if std::io::stderr().is_terminal() {
        eprint!("\r\x1b[2K");
    }
}

/// Build the simulation configuration from run options.
pub fn sim_config(o: &RunOptions) -> Result<SimConfig, CliError> {
    let profile = load_profile(&o.device).map_err(bad)?;
    sched::create(&o.scheduler).map_err(|e| bad(format!("--scheduler: {e}")))?;
    let mut knobs = QueueKnobs::default();
    let mut iosched = Vec::new();
    let mut cpu_costs = profile.cpu.clone().unwrap_or_default();
    for (k, v) in &o.sets {
        if let Some(name) = k.strip_prefix("iosched/") {
            iosched.push((name.to_string(), v.clone()));
        } else if let Some(name) = k.strip_prefix("cpu/") {
            cpu_costs
                .set(name, v)
                .map_err(|e| bad(format!("--set {e}")))?;
        } else if QUEUE_KNOBS.contains(&k.as_str()) {
            knobs.set(k, v).map_err(|e| bad(format!("--set {e}")))?;
        } else {
            return Err(bad(format!(
                "--set {k}: unknown knob (queue knobs: {}; scheduler tunables: iosched/NAME; CPU costs: cpu/NAME)",
                QUEUE_KNOBS.join(", ")
            )));
        }
    }
    Ok(SimConfig {
        scheduler: o.scheduler.clone(),
        profile,
        knobs,
        iosched,
        seed: o.seed,
        cpus: o.cpus,
        max_runtime: o.max_runtime,
        switches: o.switches.clone(),
        cpu_costs,
        progress: if o.progress && std::io::stderr().is_terminal() {
            Some(progress_printer)
        } else {
            None
        },
    })
}

/// Load the job file(s) / fio arguments.
pub fn load_jobs(o: &RunOptions) -> Result<JobFile, CliError> {
    if o.fio_args.is_empty() {
        return Err(bad(
            "no job file or fio options given (see `elevator run --help`)",
        ));
    }
    job::parse_args(&o.fio_args, &env_lookup).map_err(|e| bad(e.to_string()))
}

/// Print notices about ignored options and unmodelled jobs to stderr.
fn notices(jf: &JobFile) {
    if !jf.ignored.is_empty() {
        eprintln!(
            "elevator: ignored: {} (valid fio options the model does not use)",
            jf.ignored.join(", ")
        );
    }
    if jf
        .jobs
        .iter()
        .any(|j| !j.direct && j.ioengine.kind != EngineKind::Null)
    {
        eprintln!("elevator: note: buffered I/O (direct=0) is simulated as direct I/O; the page cache is not modelled");
    }
    for j in &jf.jobs {
        if j.ioengine.kind == EngineKind::NotModelled && j.clone_index == 0 {
            eprintln!(
                "elevator: job '{}': not modelled (ioengine={})",
                j.name, j.ioengine.name
            );
        }
    }
}

/// `elevator run`.
pub fn cmd_run(args: &[String]) -> Result<(), CliError> {
    let o = parse_run_args(args)?;
    if o.help {
        print!("{RUN_HELP}");
        return Ok(());
    }
    let mut jf = load_jobs(&o)?;
    if let Some(dir) = &o.log_dir {
        for j in &mut jf.jobs {
            j.log_dir = Some(dir.into());
        }
    }
    let cfg = sim_config(&o)?;
    notices(&jf);
    if jf
        .jobs
        .iter()
        .all(|j| j.ioengine.kind == EngineKind::NotModelled)
    {
        let source = o
            .fio_args
            .iter()
            .find(|a| !a.starts_with('-'))
            .cloned()
            .unwrap_or_else(|| jf.source.clone());
        return Err(CliError {
            code: EXIT_NOT_MODELLED,
            message: format!("{source}: no job can be modelled"),
        });
    }
    // A switch after every job's end never happens: say so before the run
    // when the job file bounds the run's length, else after it.
    let warned = switches::warnings_before_run(&jf.jobs, cfg.max_runtime, &cfg.switches);
    for (_, w) in &warned {
        eprintln!("elevator: warning: {w}");
    }
    let showed_progress = cfg.progress.is_some();
    let rep = simulate(&jf, cfg).map_err(bad)?;
    if showed_progress {
        finish_progress();
    }
    let m = &rep.elevator;
    for (i, ((at, name), outcome)) in m.switches.iter().zip(&m.switch_log).enumerate() {
        if warned.iter().any(|(w, _)| *w == i) {
            continue;
        }
        if let Some(w) = switches::warning_after_run(*at, name, outcome) {
            eprintln!("elevator: warning: {w}");
        }
    }
    // fio prints its formats in a fixed order, whatever the order given:
    // the job lines of normal output first (fio prints them before the
    // run), then terse, then json (json+ when asked, which includes json),
    // then the normal results.
    let has = |f: &str| o.formats.iter().any(|x| x == f);
    let mut out = String::new();
    if has("normal") {
        out.push_str(&report::fio_text::render_preamble(&rep));
    }
    if has("terse") {
        out.push_str(&report::fio_terse::render(&rep));
    }
    if has("json+") {
        out.push_str(&report::fio_json::to_string_plus(&rep));
    } else if has("json") {
        out.push_str(&report::fio_json::to_string(&rep));
    }
    if has("normal") {
        out.push_str(&report::fio_text::render(&rep));
    }
    match &o.output {
        Some(path) => {
            std::fs::write(path, out).map_err(|e| bad(format!("--output {path}: {e}")))?
        }
        None => {
            let mut so = std::io::stdout().lock();
            let _ = so.write_all(out.as_bytes());
        }
    }
    Ok(())
}

/// `elevator schedulers`.
pub fn cmd_schedulers() -> String {
    let mut s = String::new();
    for info in SCHEDULERS {
        let avail = if info.in_mainline {
            "kernel: mainline"
        } else {
            "kernel: removed/never merged (simulation only)"
        };
        s.push_str(&format!("{}  ({avail})\n    {}\n", info.name, info.summary));
        match sched::create(info.name) {
            Ok(Some(e)) => {
                let t = e.tunables();
                if t.is_empty() {
                    s.push_str("    tunables: none\n");
                }
                for t in t {
                    s.push_str(&format!(
                        "    iosched/{:<18} default {:<10} unit {:<10} {}\n",
                        t.name, t.default, t.unit, t.help
                    ));
                }
            }
            Ok(None) => s.push_str("    tunables: none (no elevator)\n"),
            Err(_) => s.push_str("    (not built yet)\n"),
        }
        s.push('\n');
    }
    s.push_str("queue knobs (--set NAME=VALUE): ");
    s.push_str(&QUEUE_KNOBS.join(", "));
    s.push('\n');
    s
}

/// `elevator devices [--show NAME]`.
pub fn cmd_devices(args: &[String]) -> Result<String, CliError> {
    match args {
        [] => {
            let mut s = String::new();
            for p in builtin_profiles() {
                let q = &p.queue;
                s.push_str(&format!(
                    "{:<10} {:<9} {:>8.1} GB  hwq={:<4} qd={:<5} rot={}  {}\n",
                    p.name,
                    p.model,
                    q.capacity as f64 / 1e9,
                    q.nr_hw_queues,
                    q.queue_depth,
                    q.rotational as u8,
                    p.description
                ));
            }
            s.push_str(
                "show a profile: elevator devices --show NAME; use your own: --device FILE.toml\n",
            );
            Ok(s)
        }
        [flag, name] if flag == "--show" => Ok(load_profile(name).map_err(bad)?.text),
        _ => Err(bad("usage: elevator devices [--show NAME]")),
    }
}

/// Entry point: returns the process exit code.
pub fn main_with_args(args: Vec<String>) -> i32 {
    let (cmd, rest) = match args.split_first() {
        Some((c, r)) => (c.as_str(), r),
        None => {
            eprint!("{USAGE}");
            return EXIT_BAD_INPUT;
        }
    };
    let result = match cmd {
        "run" => cmd_run(rest),
        "schedulers" => {
            print!("{}", cmd_schedulers());
            Ok(())
        }
        "devices" => cmd_devices(rest).map(|s| print!("{s}")),
        "compare" => crate::lab::cli::cmd_compare(rest),
        "lab" => crate::lab::cli::cmd_lab(rest),
        "loop" => crate::lab::cli::cmd_loop(rest),
        "calibrate" => crate::lab::cli::cmd_calibrate(rest),
        "validate" => crate::lab::cli::cmd_validate(rest),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            Ok(())
        }
        "-V" | "--version" | "version" => {
            println!("elevator {}", env!("CARGO_PKG_VERSION"));
            Ok(())
        }
        other => Err(bad(format!("unknown command '{other}'\n\n{USAGE}"))),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("elevator: error: {}", e.message);
            e.code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), 30 * NS_PER_SEC);
        assert_eq!(parse_duration("500ms").unwrap(), 500 * NS_PER_MS);
        assert_eq!(parse_duration("2m").unwrap(), 120 * NS_PER_SEC);
        assert_eq!(parse_duration("7").unwrap(), 7 * NS_PER_SEC);
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("abc").is_err());
    }

    #[test]
    fn run_args_separate_fio_options() {
        let o = parse_run_args(&s(&[
            "-rw=randwrite",
            "--scheduler",
            "none",
            "-bs=4k",
            "--set",
            "nr_requests=64",
            "--switch=1s=none",
            "-group_reporting",
            "--output-format=normal,json",
        ]))
        .unwrap();
        assert_eq!(o.scheduler, "none");
        assert_eq!(o.sets, vec![("nr_requests".to_string(), "64".to_string())]);
        assert_eq!(
            o.fio_args,
            s(&["-rw=randwrite", "-bs=4k", "-group_reporting"])
        );
        assert_eq!(o.switches, vec![(NS_PER_SEC, "none".to_string())]);
        assert_eq!(o.formats, s(&["normal", "json"]));
    }

    #[test]
    fn run_args_errors_name_the_option() {
        let e = parse_run_args(&s(&["--cpus=0"])).unwrap_err();
        assert!(e.message.contains("--cpus"), "{}", e.message);
        let e = parse_run_args(&s(&["--switch", "soon"])).unwrap_err();
        assert!(e.message.contains("--switch"), "{}", e.message);
        let e = parse_run_args(&s(&["--output-format=xml"])).unwrap_err();
        assert!(e.message.contains("xml"), "{}", e.message);
        let e = parse_run_args(&s(&["--seed"])).unwrap_err();
        assert!(e.message.contains("--seed"), "{}", e.message);
    }

    #[test]
    fn unknown_set_knob_is_an_error() {
        let o = parse_run_args(&s(&["--set", "bogus=1", "x.fio"])).unwrap();
        let e = sim_config(&o).unwrap_err();
        assert!(e.message.contains("bogus"), "{}", e.message);
    }
}
