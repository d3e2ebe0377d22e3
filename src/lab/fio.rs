//! fio itself: finding it, running it (stoppable by Ctrl-C), and reading its
//! JSON output into the same [`RunReport`] the simulator produces.
//!
//! With `--output-format=json+` fio prints every latency histogram bucket
//! ("bins"), so the imported histograms are fio's own and any percentile
//! comes out exactly as fio would compute it. Plain `json` has only the
//! percentile list; the histogram is then rebuilt from those points, which
//! reproduces the listed percentiles (others are approximations).

use super::journal::Journal;
use super::signal;
use crate::job::{JobFile, JobSpec};
use crate::report::{DiskUtil, ElevatorMeta, JobResult, JobStatus, RunReport};
use crate::sim::time::{Ns, NS_PER_MS, NS_PER_SEC};
use crate::stats::{hist, Histogram, IoStat, JobStats};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How to get fio when it is missing.
pub const INSTALL_HINT: &str = "fio is not installed (or not in PATH); install it with `apt-get install -y --no-install-recommends fio` (Debian/Ubuntu; without --no-install-recommends about 130 packages come along), `dnf install fio` (Fedora/RHEL) or from https://github.com/axboe/fio";

/// The fio executable in PATH.
pub fn find() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("fio"))
        .find(|p| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// fio in PATH and its version string (`fio-3.33`), or how to install it.
pub fn require() -> Result<(PathBuf, String), String> {
    let fio = find().ok_or_else(|| INSTALL_HINT.to_string())?;
    let out = Command::new(&fio)
        .arg("--version")
        .output()
        .map_err(|e| format!("{}: cannot run: {e}", fio.display()))?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Ok((fio, v))
}

/// Outcome of one fio run.
pub struct FioRun {
    /// fio's JSON document text.
    pub json: String,
    pub wall: Duration,
    /// fio's stderr (warnings).
    pub stderr: String,
}

/// The guard fio runs under: a shell that leads its own process group and
/// gets SIGTERM from the kernel when the lab dies (`PR_SET_PDEATHSIG`, set
/// before exec); the lab sends it SIGTERM itself to stop fio. Its trap stops
/// fio (SIGSTOP: no more forks), SIGKILLs fio's children — the job
/// processes, which fio puts in sessions of their own (`setsid`), so no
/// group signal reaches them — and then the whole group, fio and itself.
const GUARD: &str = r#"trap '
  kill -STOP "$pid" 2>/dev/null
  for p in /proc/[0-9]*; do
    read -r s 2>/dev/null < "$p/stat" || continue
    set -- ${s##*) }
    [ "$2" = "$pid" ] && kill -KILL "${p#/proc/}" 2>/dev/null
  done
  kill -KILL 0' TERM HUP INT
"$@" &
pid=$!
wait "$pid"
"#;

/// fio under its guard while it runs; stopped if dropped early (an error or
/// a panic in the lab).
struct Running<'a> {
    child: std::process::Child,
    journal: Option<&'a Journal>,
    done: bool,
}

impl Running<'_> {
    /// Ask the guard to kill fio and its jobs.
    fn stop(&mut self) {
        signal::send(self.child.id(), signal::SIGTERM);
    }

    /// Stop and wait; SIGKILL the group if the guard does not finish.
    fn stop_and_wait(&mut self) {
        self.stop();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        signal::send_group(self.child.id(), signal::SIGKILL);
        let _ = self.child.wait();
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.stop_and_wait();
        }
        if let Some(j) = self.journal {
            let _ = j.remove_process(self.child.id());
        }
    }
}

/// Run `fio --output-format=json+ JOBFILE` in `workdir`, under the guard
/// (see [`GUARD`]), its process group recorded in the journal. When a signal
/// arrives the whole group is killed; the caller sees an error naming the
/// signal. Nothing starts when a signal came before.
pub fn run(
    fio: &Path,
    jobfile: &Path,
    workdir: &Path,
    journal: Option<&Journal>,
) -> Result<FioRun, String> {
    run_ticking(fio, jobfile, workdir, journal, &mut || {})
}

/// [`run`], calling `tick` every 20 ms while fio runs (on this thread: the
/// lab stays single-threaded, so fio's guard is the child of the only
/// thread and its parent-death signal cannot be raced).
pub fn run_ticking(
    fio: &Path,
    jobfile: &Path,
    workdir: &Path,
    journal: Option<&Journal>,
    tick: &mut dyn FnMut(),
) -> Result<FioRun, String> {
    use std::os::unix::process::CommandExt;
    if let Some(sig) = signal::interrupted() {
        return Err(format!("interrupted by signal {sig}; fio not started"));
    }
    let out_path = workdir.join("fio-output.json");
    let err_path = workdir.join("fio-stderr.txt");
    let _ = std::fs::remove_file(&out_path);
    let stderr_file =
        std::fs::File::create(&err_path).map_err(|e| format!("{}: {e}", err_path.display()))?;
    let start = Instant::now();
    let me = std::process::id();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(GUARD)
        .arg("elevator-fio-guard")
        .arg(fio)
        .arg("--output-format=json+")
        .arg(format!("--output={}", out_path.display()))
        .arg("--eta=never")
        .arg(jobfile)
        .current_dir(workdir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(stderr_file));
    // SAFETY: die_with_parent makes only async-signal-safe system calls.
    unsafe {
        cmd.pre_exec(move || signal::die_with_parent(me, signal::SIGTERM));
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("{}: cannot start: {e}", fio.display()))?;
    let mut running = Running {
        child,
        journal: None,
        done: false,
    };
    if let Some(j) = journal {
        j.add_process(running.child.id())?;
        running.journal = Some(j);
    }
    let mut stop_sent: Option<Instant> = None;
    let status = loop {
        match running.child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => {}
            Err(e) => return Err(format!("waiting for fio: {e}")),
        }
        if signal::interrupted().is_some() {
            match stop_sent {
                None => {
                    running.stop();
                    stop_sent = Some(Instant::now());
                }
                Some(t) if t.elapsed() > Duration::from_secs(5) => {
                    signal::send_group(running.child.id(), signal::SIGKILL);
                }
                _ => {}
            }
        }
        tick();
        std::thread::sleep(Duration::from_millis(20));
    };
    // fio waits for its job processes before it exits, and the guard for
    // fio. Should the guard have died otherwise, nothing of fio may outlive
    // this call.
    running.done = true;
    drop(running);
    let left = super::journal::kill_fio_in(&[workdir.to_path_buf()]);
    if !left.is_empty() && signal::interrupted().is_none() {
        return Err(format!(
            "fio's guard ended ({status}) while fio still ran; killed fio (pids {})",
            left.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    let wall = start.elapsed();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    if let Some(sig) = signal::interrupted() {
        return Err(format!("interrupted by signal {sig}; fio stopped"));
    }
    let json = std::fs::read_to_string(&out_path).unwrap_or_default();
    if !status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(8).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "fio failed ({status}):\n  {}",
            if tail.is_empty() {
                "(no message)".to_string()
            } else {
                tail.join("\n  ")
            }
        ));
    }
    Ok(FioRun { json, wall, stderr })
}

/// fio may print notes into its output file before the document; the JSON
/// starts at the first line that opens an object.
fn json_start(text: &str) -> &str {
    if text.starts_with('{') {
        return text;
    }
    match text.find("\n{") {
        Some(i) => &text[i + 1..],
        None => text,
    }
}

fn u(v: &Value, k: &str) -> u64 {
    match v.get(k) {
        Some(Value::Number(n)) => n
            .as_u64()
            .or_else(|| n.as_i64().map(|x| x.max(0) as u64))
            .or_else(|| n.as_f64().map(|x| x.max(0.0) as u64))
            .unwrap_or(0),
        _ => 0,
    }
}

fn f(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

/// fio's `{min, max, mean, stddev, N}` as an IoStat (S = var × (N − 1)).
fn io_stat(min: u64, max: u64, mean: f64, dev: f64, n: u64) -> IoStat {
    if n == 0 {
        return IoStat::new();
    }
    IoStat {
        min,
        max,
        mean,
        s: dev * dev * (n.saturating_sub(1)) as f64,
        samples: n,
    }
}

/// Percentile keys and values of a latency object, ascending.
fn percentile_points(lat: &Value) -> Vec<(f64, u64)> {
    let mut pts: Vec<(f64, u64)> = match lat.get("percentile").and_then(Value::as_object) {
        Some(m) => m
            .iter()
            .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, v.as_u64()?)))
            .collect(),
        None => Vec::new(),
    };
    pts.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    pts
}

/// The histogram of one latency object: fio's bins when present, else one
/// bucket per listed percentile holding the samples up to it.
fn histogram(lat: &Value, n: u64, max: u64) -> Histogram {
    let mut h = Histogram::new();
    if let Some(bins) = lat.get("bins").and_then(Value::as_object) {
        for (k, c) in bins {
            if let (Ok(val), Some(c)) = (k.parse::<u64>(), c.as_u64()) {
                h.add_count(val, c);
            }
        }
        return h;
    }
    // Samples at or below each listed value: the smallest count that meets
    // fio's threshold p/100 x N. fio compares in extended precision, so a
    // threshold that is an integer in f64 may be a hair above it for fio;
    // check with the real percentile walk and move a sample where needed.
    let pts = percentile_points(lat);
    let list: Vec<f64> = pts.iter().map(|(p, _)| *p).collect();
    let mut upto: Vec<u64> = pts
        .iter()
        .map(|(p, _)| ((p / 100.0) * n as f64).ceil().min(n as f64) as u64)
        .collect();
    let build = |upto: &[u64]| {
        let mut h = Histogram::new();
        let mut done = 0u64;
        for (k, (_, v)) in pts.iter().enumerate() {
            let u = upto[k].max(done).min(n);
            if u > done {
                h.add_count(*v, u - done);
                done = u;
            }
        }
        if n > done {
            h.add_count(max, n - done);
        }
        h
    };
    let mut h = build(&upto);
    for _ in 0..4 {
        let got = h.percentiles(n, &list);
        let mut changed = false;
        for (k, (_, v)) in pts.iter().enumerate() {
            if got.get(k).is_some_and(|g| g > v) && upto[k] < n {
                upto[k] += 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
        h = build(&upto);
    }
    h
}

/// Parse fio's JSON (json or json+) into a report. `jobs` is the job file
/// fio ran as elevator parses it: entries are matched to its jobs by name and
/// group, which gives the report the jobs' real options (block sizes, rw).
/// Without it, or for an entry it lacks, a job with fio's defaults and the
/// entry's name and group stands in.
pub fn parse_json(text: &str, jobs: Option<&JobFile>) -> Result<RunReport, String> {
    let doc: Value = serde_json::from_str(json_start(text))
        .map_err(|e| format!("fio JSON output does not parse: {e}"))?;
    let arr = doc
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or("fio JSON output has no \"jobs\" array")?;
    let global_options = options(doc.get("global options"));
    let group_reporting_global = global_options
        .iter()
        .any(|(k, v)| k == "group_reporting" && v != "0");
    let mut used = vec![false; jobs.map_or(0, |j| j.jobs.len())];
    let mut results = Vec::with_capacity(arr.len());
    for entry in arr {
        let name = entry
            .get("jobname")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let gid = u(entry, "groupid") as u32;
        let job_options = options(entry.get("job options"));
        let mut spec = match jobs.and_then(|jf| {
            (0..jf.jobs.len())
                .find(|&i| !used[i] && jf.jobs[i].name == name && jf.jobs[i].group_id == gid)
        }) {
            Some(i) => {
                let jf = jobs.expect("matched");
                // A group_reporting entry stands for every job of its group.
                let first = &jf.jobs[i];
                let mut members = 0;
                for (k, j) in jf.jobs.iter().enumerate().skip(i) {
                    if k == i || (first.group_reporting && j.group_id == gid && !used[k]) {
                        used[k] = true;
                        members += 1;
                    }
                    if !first.group_reporting {
                        break;
                    }
                }
                let mut s = first.clone();
                s.numjobs = s.numjobs.max(members);
                s
            }
            None => {
                let mut s = JobSpec::with_defaults(&name);
                s.group_id = gid;
                s.group_reporting = group_reporting_global
                    || job_options
                        .iter()
                        .any(|(k, v)| k == "group_reporting" && v != "0");
                s
            }
        };
        spec.job_options = job_options;
        let stats = entry_stats(entry, &spec);
        let err = u(entry, "error");
        results.push(JobResult {
            spec,
            stats,
            status: if err == 0 {
                JobStatus::Ran
            } else {
                JobStatus::NotModelled(format!("fio reported error {err}"))
            },
            elapsed_ns: u(entry, "elapsed") * NS_PER_SEC,
        });
    }
    // Job indices in order, so pids and layout follow fio's entry order.
    for (i, r) in results.iter_mut().enumerate() {
        r.spec.job_index = i as u32;
    }
    let disk_util = doc
        .get("disk_util")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|d| DiskUtil {
                    name: d.get("name").and_then(Value::as_str).unwrap_or("").into(),
                    read_ios: u(d, "read_ios"),
                    write_ios: u(d, "write_ios"),
                    read_sectors: 0,
                    write_sectors: 0,
                    read_merges: u(d, "read_merges"),
                    write_merges: u(d, "write_merges"),
                    read_ticks: u(d, "read_ticks"),
                    write_ticks: u(d, "write_ticks"),
                    in_queue: u(d, "in_queue"),
                    util: f(d, "util"),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(RunReport {
        global_options,
        jobs: results,
        disk_util,
        elevator: ElevatorMeta {
            version: env!("CARGO_PKG_VERSION").to_string(),
            mode: "lab".into(),
            ..ElevatorMeta::default()
        },
        timestamp: u(&doc, "timestamp"),
    })
}

fn options(v: Option<&Value>) -> Vec<(String, String)> {
    match v.and_then(Value::as_object) {
        Some(m) => m
            .iter()
            .map(|(k, v)| {
                let s = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), s)
            })
            .collect(),
        None => Vec::new(),
    }
}

/// Percent values of a map in key order, turned back into counts of `total`.
fn counts<const N: usize>(v: Option<&Value>, keys: &[&str; N], total: u64) -> [u64; N] {
    let mut out = [0u64; N];
    if let Some(m) = v {
        for (i, k) in keys.iter().enumerate() {
            out[i] = (f(m, k) / 100.0 * total as f64).round() as u64;
        }
    }
    out
}

fn entry_stats(e: &Value, spec: &JobSpec) -> JobStats {
    let mut st = JobStats::new(spec);
    // The percentile list fio used, from the first latency object that has one.
    let mut list = Vec::new();
    for d in ["read", "write", "trim"] {
        for k in ["clat_ns", "lat_ns", "slat_ns"] {
            if list.is_empty() {
                if let Some(l) = e.get(d).and_then(|x| x.get(k)) {
                    list = percentile_points(l).into_iter().map(|(p, _)| p).collect();
                }
            }
        }
    }
    let has_pct = |k: &str| {
        ["read", "write", "trim"].iter().any(|d| {
            e.get(*d)
                .and_then(|x| x.get(k))
                .is_some_and(|l| l.get("percentile").is_some())
        })
    };
    if !list.is_empty() {
        st.opts.percentile_precision = hist::list_precision(&list);
        st.opts.percentile_list = list;
    }
    st.opts.clat_percentiles = has_pct("clat_ns") || (spec.clat_percentiles && !has_pct("lat_ns"));
    st.opts.lat_percentiles = has_pct("lat_ns");
    st.opts.slat_percentiles = has_pct("slat_ns");
    let mut total_ios = 0;
    for (i, dname) in ["read", "write", "trim"].iter().enumerate() {
        let Some(d) = e.get(*dname) else { continue };
        let ds = &mut st.dirs[i];
        ds.io_bytes = u(d, "io_bytes");
        ds.total_ios = u(d, "total_ios");
        ds.short_ios = u(d, "short_ios");
        ds.drop_ios = u(d, "drop_ios");
        ds.runtime_ms = u(d, "runtime");
        ds.runtime_ns = ds.runtime_ms * NS_PER_MS;
        for (key, stat, h) in [
            ("slat_ns", &mut ds.slat, &mut ds.slat_hist),
            ("clat_ns", &mut ds.clat, &mut ds.clat_hist),
            ("lat_ns", &mut ds.lat, &mut ds.lat_hist),
        ] {
            if let Some(l) = d.get(key) {
                let n = u(l, "N");
                *stat = io_stat(u(l, "min"), u(l, "max"), f(l, "mean"), f(l, "stddev"), n);
                if n > 0 && l.get("percentile").is_some() {
                    *h = histogram(l, n, u(l, "max"));
                }
            }
        }
        ds.bw = io_stat(
            u(d, "bw_min"),
            u(d, "bw_max"),
            f(d, "bw_mean"),
            f(d, "bw_dev"),
            u(d, "bw_samples"),
        );
        ds.iops = io_stat(
            u(d, "iops_min"),
            u(d, "iops_max"),
            f(d, "iops_mean"),
            f(d, "iops_stddev"),
            u(d, "iops_samples"),
        );
        total_ios += ds.total_ios;
    }
    if let Some(s) = e.get("sync") {
        st.sync_total = u(s, "total_ios");
        if let Some(l) = s.get("lat_ns") {
            let n = u(l, "N");
            st.sync = io_stat(u(l, "min"), u(l, "max"), f(l, "mean"), f(l, "stddev"), n);
            if n > 0 {
                st.sync_hist = histogram(l, n, u(l, "max"));
            }
        }
    }
    let runt = u(e, "job_runtime");
    st.total_run_time_ms = runt;
    st.usr_time_ms = (f(e, "usr_cpu") * runt as f64 / 100.0).round() as u64;
    st.sys_time_ms = (f(e, "sys_cpu") * runt as f64 / 100.0).round() as u64;
    st.ctx = u(e, "ctx");
    st.majf = u(e, "majf");
    st.minf = u(e, "minf");
    // fio prints these maps as percentages only; counts are rebuilt against
    // the I/O total (submit/complete calls are not in the JSON).
    let levels = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batches = ["0", "4", "8", "16", "32", "64", ">=64"];
    st.io_u_map = counts(e.get("iodepth_level"), &levels, total_ios);
    st.total_submit = total_ios;
    st.total_complete = total_ios;
    st.io_u_submit = counts(e.get("iodepth_submit"), &batches, total_ios);
    st.io_u_complete = counts(e.get("iodepth_complete"), &batches, total_ios);
    let lk = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    let lkm = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    st.lat_n = counts(e.get("latency_ns"), &lk, total_ios);
    st.lat_u = counts(e.get("latency_us"), &lk, total_ios);
    st.lat_m = counts(e.get("latency_ms"), &lkm, total_ios);
    if e.get("latency_depth").is_some() {
        st.opts.latency_depth = u(e, "latency_depth") as u32;
        st.opts.latency_target = u(e, "latency_target");
        st.opts.latency_percentile = f(e, "latency_percentile");
        st.opts.latency_window = u(e, "latency_window");
    }
    st
}

/// Busy and steal CPU time of the whole machine from /proc/stat, in ns,
/// the BLOCK softirqs run (its `softirq` line), and the CPU time of the
/// block layer's kernel threads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTimes {
    pub busy_ns: Ns,
    pub steal_ns: Ns,
    pub block_softirqs: u64,
    /// CPU time of the kworkers and ksoftirqds (`/proc/PID/schedstat`, its
    /// first field: ns on a CPU), where a loop device's commands,
    /// completions raised from process context and kblockd's queue runs
    /// execute; None when /proc could not be read (or a record kept before
    /// it was counted). A kworker that exits during a run takes its time
    /// with it; one created during it counts from 0.
    pub kthread_ns: Option<Ns>,
    /// Entries into the CPUs' idle states (the `usage` of every
    /// /sys/devices/system/cpu/cpuN/cpuidle/stateM): each ends in a wake-up
    /// of an idle CPU, the host's wake-up cost on a virtual machine. None
    /// without cpuidle (or a record kept before 2026-12-07h).
    pub idle_entries: Option<u64>,
}

/// Whether a thread of this name (`/proc/PID/comm`) is one of the kernel
/// threads [`CpuTimes::kthread_ns`] counts. A kworker's name carries the
/// work it runs (`kworker/u4:2+loop0`), which changes; the prefix stays.
pub fn is_block_kthread(comm: &str) -> bool {
    comm.starts_with("kworker/") || comm.starts_with("ksoftirqd/")
}

/// The first field of a `schedstat` file: ns the task ran on a CPU.
pub fn schedstat_run_ns(text: &str) -> Option<Ns> {
    text.split_whitespace().next()?.parse().ok()
}

/// The CPU time of every kernel thread [`is_block_kthread`] names, from
/// /proc; None if /proc cannot be listed.
fn kthread_ns_now() -> Option<Ns> {
    let mut total: Ns = 0;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let dir = Path::new("/proc").join(pid);
        // Threads vanish between listing and reading: skip those.
        let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
            continue;
        };
        if !is_block_kthread(comm.trim_end()) {
            continue;
        }
        if let Some(ns) = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .as_deref()
            .and_then(schedstat_run_ns)
        {
            total += ns;
        }
    }
    Some(total)
}

/// The sum of every CPU's idle-state entries (see
/// [`CpuTimes::idle_entries`]); None when no CPU has cpuidle states.
fn idle_entries_now() -> Option<u64> {
    idle_entries_under(Path::new("/sys/devices/system/cpu"))
}

/// [`idle_entries_now`] under `base` (a copy of /sys/devices/system/cpu).
fn idle_entries_under(base: &Path) -> Option<u64> {
    let mut total = None;
    for cpu in std::fs::read_dir(base).ok()?.flatten() {
        let name = cpu.file_name();
        let is_cpu = name
            .to_str()
            .and_then(|n| n.strip_prefix("cpu"))
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_cpu {
            continue;
        }
        let Ok(states) = std::fs::read_dir(cpu.path().join("cpuidle")) else {
            continue;
        };
        for state in states.flatten() {
            if let Some(n) = std::fs::read_to_string(state.path().join("usage"))
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
            {
                total = Some(total.unwrap_or(0) + n);
            }
        }
    }
    total
}

impl CpuTimes {
    pub fn now() -> CpuTimes {
        let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        CpuTimes {
            kthread_ns: kthread_ns_now(),
            idle_entries: idle_entries_now(),
            ..CpuTimes::parse(&text, signal::clock_ticks())
        }
    }

    /// busy = user + nice + system + irq + softirq; steal separately.
    /// The `softirq` line counts per kind after the total, in the order
    /// of include/linux/interrupt.h: HI, TIMER, NET_TX, NET_RX, BLOCK, ...
    pub fn parse(stat: &str, hz: u64) -> CpuTimes {
        let block_softirqs = stat
            .lines()
            .find_map(|l| l.strip_prefix("softirq "))
            .and_then(|l| l.split_whitespace().nth(5))
            .and_then(|x| x.parse().ok())
            .unwrap_or(0);
        let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else {
            return CpuTimes::default();
        };
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        let to_ns = |t: u64| t * (NS_PER_SEC / hz.max(1));
        CpuTimes {
            busy_ns: to_ns(g(0) + g(1) + g(2) + g(5) + g(6)),
            steal_ns: to_ns(g(7)),
            block_softirqs,
            kthread_ns: None,
            idle_entries: None,
        }
    }

    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            busy_ns: self.busy_ns.saturating_sub(earlier.busy_ns),
            steal_ns: self.steal_ns.saturating_sub(earlier.steal_ns),
            block_softirqs: self.block_softirqs.saturating_sub(earlier.block_softirqs),
            kthread_ns: match (self.kthread_ns, earlier.kthread_ns) {
                (Some(now), Some(then)) => Some(now.saturating_sub(then)),
                _ => None,
            },
            idle_entries: match (self.idle_entries, earlier.idle_entries) {
                (Some(now), Some(then)) => Some(now.saturating_sub(then)),
                _ => None,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat() {
        let s =
            "cpu  100 1 50 1000 7 3 2 4 0 0\ncpu0 1 2 3\nsoftirq 900 1 300 2 3 77 0 5 400 0 112\n";
        let c = CpuTimes::parse(s, 100);
        assert_eq!(c.busy_ns, 156 * 10_000_000);
        assert_eq!(c.steal_ns, 4 * 10_000_000);
        assert_eq!(c.block_softirqs, 77);
        assert_eq!(c.kthread_ns, None, "not in /proc/stat");
    }

    #[test]
    fn block_kthreads_by_name_and_their_cpu_time() {
        for comm in ["kworker/u4:2+loop0", "kworker/1:1H-kblockd", "ksoftirqd/0"] {
            assert!(is_block_kthread(comm), "{comm}");
        }
        for comm in ["fio", "kthreadd", "rcu_preempt", "loop0"] {
            assert!(!is_block_kthread(comm), "{comm}");
        }
        assert_eq!(schedstat_run_ns("1234567 89 10\n"), Some(1_234_567));
        assert_eq!(schedstat_run_ns(""), None);
        let a = CpuTimes {
            kthread_ns: Some(5_000),
            ..CpuTimes::default()
        };
        let b = CpuTimes {
            kthread_ns: Some(12_000),
            ..CpuTimes::default()
        };
        assert_eq!(b.since(&a).kthread_ns, Some(7_000));
        assert_eq!(b.since(&CpuTimes::default()).kthread_ns, None);
    }

    #[test]
    fn idle_entries_sum_every_cpu_s_states() {
        let base = std::env::temp_dir().join(format!("elevator-idle-{}", std::process::id()));
        let state = |cpu: &str, st: &str, usage: &str| {
            let d = base.join(cpu).join("cpuidle").join(st);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("usage"), usage).unwrap();
        };
        assert_eq!(idle_entries_under(&base), None);
        state("cpu0", "state0", "0\n");
        state("cpu0", "state1", "120\n");
        state("cpu1", "state1", "30\n");
        // Not a CPU's: cpufreq, the global cpuidle directory.
        state("cpufreq", "state1", "7\n");
        std::fs::create_dir_all(base.join("cpuidle").join("cpuidle")).unwrap();
        assert_eq!(idle_entries_under(&base), Some(150));
        let a = CpuTimes {
            idle_entries: Some(150),
            ..CpuTimes::default()
        };
        let b = CpuTimes {
            idle_entries: Some(100),
            ..CpuTimes::default()
        };
        assert_eq!(a.since(&b).idle_entries, Some(50));
        assert_eq!(a.since(&CpuTimes::default()).idle_entries, None);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn notes_before_the_document_are_skipped() {
        let t = "note: both iodepth >= 1 and synchronous I/O engine are selected\n{\n  \"jobs\" : []\n}\n";
        let r = parse_json(t, None).unwrap();
        assert!(r.jobs.is_empty());
        assert!(parse_json("garbage", None).is_err());
    }

    #[test]
    fn percentile_points_rebuild_the_listed_percentiles() {
        // fio prints bucket values (midpoints), as these are.
        let mid = |v: u64| hist::idx_to_val(hist::val_to_idx(v));
        let (p50, p99, p999) = (mid(5000), mid(20_000), mid(60_000));
        let lat: Value = serde_json::from_str(&format!(
            r#"{{"min":1000,"max":90000,"mean":5000.0,"stddev":100.0,"N":1000,
               "percentile":{{"50.000000":{p50},"99.000000":{p99},"99.900000":{p999}}}}}"#
        ))
        .unwrap();
        let h = histogram(&lat, 1000, 90000);
        assert_eq!(h.total(), 1000);
        assert_eq!(
            h.percentiles(1000, &[50.0, 99.0, 99.9]),
            vec![p50, p99, p999]
        );
    }
}
