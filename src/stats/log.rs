//! fio's per-job log files (`write_lat_log`, `write_bw_log`,
//! `write_iops_log`), written while the job runs.
//!
//! File names are fio's: `<prefix>_{slat,clat,lat,bw,iops}.<jobnum>.log`
//! (`jobnum` counts jobs from 1 over the whole run), or without `.<jobnum>`
//! when `per_job_logs=0`; the prefix defaults to the job name. Lines are
//! fio 3.33's: `time_ms, value, ddir, bs, prio` with an offset column before
//! `prio` under `log_offset=1`; `prio` is the I/O priority value in hex
//! (`0x2003`) under `log_prio=1`, else 1 for the real-time class and 0
//! otherwise. Latencies are in ns, bandwidth in KiB/s (per-I/O entries:
//! bytes * 10^6 / clat ns, as fio computes them), IOPS in I/Os per second
//! (1 per I/O entry).
//!
//! With `log_avg_msec=0` every I/O is one line. Otherwise slat/clat/lat
//! samples are averaged per direction (fio's `add_log_sample`: a window
//! closes at the first sample at least `log_avg_msec` after the last
//! window start and is stamped with that sample's time; the rest is flushed
//! when the job ends), and bw/iops logs get one line per bandwidth/IOPS
//! sampling window. Averaged lines have bs, offset and prio 0, as in fio.
//!
//! Memory is constant: each file keeps at most `BUF_CAP` bytes of whole
//! lines and appends them to the file when full (open, write, close), so a
//! run with thousands of jobs holds no file descriptors between flushes.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::IoStat;
use crate::cgroup::{IoPrio, IoPrioClass};
use crate::job::JobSpec;
use crate::sim::time::{Ns, NS_PER_MS};

/// Bytes of complete lines buffered per log file before they are appended.
const BUF_CAP: usize = 16 * 1024;

/// One log file: a bounded buffer of whole lines, appended on flush.
#[derive(Debug)]
struct LogFile {
    path: PathBuf,
    buf: Vec<u8>,
    /// The first write error; further lines are dropped. Reported with the
    /// run's warnings (library code does not print).
    error: Option<String>,
}

impl LogFile {
    /// Create the file (truncated for per-job logs; shared logs are appended
    /// to, as fio never truncates them).
    fn create(path: PathBuf, truncate: bool) -> Result<LogFile, String> {
        let mut o = OpenOptions::new();
        if truncate {
            o.write(true).create(true).truncate(true);
        } else {
            o.append(true).create(true);
        }
        o.open(&path)
            .map_err(|e| format!("cannot create log file {}: {e}", path.display()))?;
        Ok(LogFile {
            path,
            buf: Vec::new(),
            error: None,
        })
    }

    #[inline]
    fn line(&mut self, args: std::fmt::Arguments) {
        if self.error.is_some() {
            return;
        }
        let start = self.buf.len();
        let _ = self.buf.write_fmt(args);
        if self.buf.len() >= BUF_CAP {
            // Flush the whole lines before this one; keep this one buffered
            // so every write is made of complete lines.
            let line = self.buf.split_off(start);
            self.flush();
            self.buf = line;
        }
    }

    fn flush(&mut self) {
        if self.buf.is_empty() || self.error.is_some() {
            self.buf.clear();
            return;
        }
        let r = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(&self.buf));
        if let Err(e) = r {
            self.error = Some(format!(
                "cannot write log file {}: {e}; no more entries were written to it",
                self.path.display()
            ));
        }
        self.buf.clear();
    }
}

/// fio's averaging window of one latency log and direction.
#[derive(Clone, Debug, Default)]
struct AvgWindow {
    stat: IoStat,
    /// Start of the current window, ms since the job's epoch.
    last_ms: u64,
}

/// A slat/clat/lat log with its per-direction windows.
#[derive(Debug)]
struct LatLog {
    file: LogFile,
    win: [AvgWindow; 3],
}

/// Which of a job's latency logs a sample is for.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Slat,
    Clat,
    Lat,
}

/// Everything a job logs. Created by [`JobLogs::open`]; lives in the job's
/// `JobStats` while it runs.
#[derive(Debug)]
pub(crate) struct JobLogs {
    /// The job's epoch (measurement start), ns.
    start: Ns,
    slat: Option<LatLog>,
    clat: Option<LatLog>,
    lat: Option<LatLog>,
    bw: Option<LogFile>,
    iops: Option<LogFile>,
    /// Averaging window of the latency logs, ms; 0 = every I/O.
    avg_ms: u64,
    /// bw/iops logs get an entry per I/O (fio's `per_unit_log`).
    pub(crate) unit_bw: bool,
    pub(crate) unit_iops: bool,
    max_value: bool,
    log_offset: bool,
    log_prio: bool,
    /// The job's I/O priority value (`class << 13 | level`), fio's
    /// `td->ioprio`: 0 unless prio/prioclass is set.
    ioprio: u16,
}

/// fio's `td->ioprio` for a job: 0 unless `prio`/`prioclass` is set; an
/// unset class is best-effort, an unset level 0.
pub(crate) fn job_ioprio(spec: &JobSpec) -> u16 {
    IoPrio::fio_value(spec.prioclass, spec.prio)
}

/// Log settings of a job after fio's fixups: (bw per I/O, iops per I/O).
pub(crate) fn unit_logs(spec: &JobSpec) -> (bool, bool) {
    let unit =
        |log: &Option<String>, avgtime: u64| log.is_some() && spec.log_avg_msec.min(avgtime) == 0;
    (
        unit(&spec.write_bw_log, spec.bwavgtime_ms),
        unit(&spec.write_iops_log, spec.iopsavgtime_ms),
    )
}

/// The file a log goes to (fio's `gen_log_name`, under `--log-dir`).
pub fn log_path(spec: &JobSpec, prefix: &str, kind: &str) -> PathBuf {
    let pre = if prefix.is_empty() {
        spec.name.as_str()
    } else {
        prefix
    };
    let name = if spec.per_job_logs {
        format!("{pre}_{kind}.{}.log", spec.job_index + 1)
    } else {
        format!("{pre}_{kind}.log")
    };
    match &spec.log_dir {
        Some(d) => d.join(name),
        None => Path::new(&name).to_path_buf(),
    }
}

impl JobLogs {
    /// Create the job's log files; None when the job writes no logs.
    pub(crate) fn open(spec: &JobSpec) -> Result<Option<JobLogs>, String> {
        if spec.write_lat_log.is_none()
            && spec.write_bw_log.is_none()
            && spec.write_iops_log.is_none()
        {
            return Ok(None);
        }
        if let Some(dir) = &spec.log_dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create log directory {}: {e}", dir.display()))?;
        }
        let truncate = spec.per_job_logs;
        let file = |prefix: &Option<String>, kind: &str| -> Result<Option<LogFile>, String> {
            prefix
                .as_ref()
                .map(|p| LogFile::create(log_path(spec, p, kind), truncate))
                .transpose()
        };
        let lat = |kind: &str| -> Result<Option<LatLog>, String> {
            Ok(file(&spec.write_lat_log, kind)?.map(|file| LatLog {
                file,
                win: Default::default(),
            }))
        };
        let (unit_bw, unit_iops) = unit_logs(spec);
        Ok(Some(JobLogs {
            start: 0,
            slat: lat("slat")?,
            clat: lat("clat")?,
            lat: lat("lat")?,
            bw: file(&spec.write_bw_log, "bw")?,
            iops: file(&spec.write_iops_log, "iops")?,
            avg_ms: spec.log_avg_msec,
            unit_bw,
            unit_iops,
            max_value: spec.log_max_value,
            log_offset: spec.log_offset,
            log_prio: spec.log_prio,
            ioprio: job_ioprio(spec),
        }))
    }

    /// The job's epoch moves (measurement starts): windows start afresh.
    pub(crate) fn restart(&mut self, start: Ns) {
        self.start = start;
        for l in [&mut self.slat, &mut self.clat, &mut self.lat]
            .into_iter()
            .flatten()
        {
            l.win = Default::default();
        }
    }

    #[inline]
    fn ms(&self, t: Ns) -> u64 {
        t.saturating_sub(self.start) / NS_PER_MS
    }

    /// One completed read/write/trim, as fio's add_{slat,clat,lat}_sample
    /// and (per-I/O logs) add_bw_sample / add_iops_sample see it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn io(
        &mut self,
        ddir: usize,
        offset: u64,
        bytes: u64,
        slat: Option<Ns>,
        clat: Ns,
        lat: Ns,
        now: Ns,
        bw_rate: u64,
    ) {
        let t = self.ms(now);
        if let Some(s) = slat {
            // fio logs slat when the I/O is issued.
            let ti = self.ms(now.saturating_sub(clat));
            self.lat_sample(Kind::Slat, ti, s, ddir, bytes, offset);
        }
        self.lat_sample(Kind::Clat, t, clat, ddir, bytes, offset);
        self.lat_sample(Kind::Lat, t, lat, ddir, bytes, offset);
        if self.unit_bw {
            let line = Entry::io(self, t, bw_rate, ddir, bytes, offset);
            if let Some(f) = &mut self.bw {
                line.write(f);
            }
        }
        if self.unit_iops {
            let line = Entry::io(self, t, 1, ddir, bytes, offset);
            if let Some(f) = &mut self.iops {
                line.write(f);
            }
        }
    }

    fn lat_sample(&mut self, which: Kind, t: u64, val: u64, ddir: usize, bs: u64, off: u64) {
        let per_io = Entry::io(self, t, val, ddir, bs, off);
        let (avg_ms, windowed) = (self.avg_ms, Entry::window(self, 0, 0, 0));
        let max_value = self.max_value;
        let log = match which {
            Kind::Slat => &mut self.slat,
            Kind::Clat => &mut self.clat,
            Kind::Lat => &mut self.lat,
        };
        let Some(log) = log else { return };
        if avg_ms == 0 {
            per_io.write(&mut log.file);
            return;
        }
        let w = &mut log.win[ddir];
        w.stat.add(val);
        // Latency logs are written inline, so fio closes a window only once
        // a full period has passed (no 1 ms slack).
        if t < w.last_ms || t - w.last_ms < avg_ms {
            return;
        }
        let v = window_value(&w.stat, max_value);
        w.stat = IoStat::new();
        w.last_ms = t - t % avg_ms;
        Entry { t, v, ..windowed }
            .with_ddir(ddir)
            .write(&mut log.file);
    }

    /// One bandwidth (KiB/s) or IOPS window sample at `at` (ns), for
    /// windowed bw/iops logs.
    pub(crate) fn window_sample(&mut self, is_bw: bool, at: Ns, ddir: usize, rate: u64) {
        let unit = if is_bw { self.unit_bw } else { self.unit_iops };
        if unit {
            return;
        }
        let line = Entry::window(self, self.ms(at), rate, ddir);
        let f = if is_bw { &mut self.bw } else { &mut self.iops };
        if let Some(f) = f {
            line.write(f);
        }
    }

    /// The job ends at `now`: flush open latency windows (fio's
    /// `finalize_logs`) and write everything out; returns the files' write
    /// errors.
    pub(crate) fn finish(&mut self, now: Ns) -> Vec<String> {
        let t = self.ms(now);
        let windowed = Entry::window(self, t, 0, 0);
        let (avg_ms, max_value) = (self.avg_ms, self.max_value);
        for log in [&mut self.clat, &mut self.slat, &mut self.lat]
            .into_iter()
            .flatten()
        {
            if avg_ms > 0 {
                for (d, w) in log.win.iter_mut().enumerate() {
                    if w.stat.samples > 0 {
                        let v = window_value(&w.stat, max_value);
                        Entry { v, ..windowed }.with_ddir(d).write(&mut log.file);
                    }
                    *w = AvgWindow::default();
                }
            }
            log.file.flush();
        }
        for f in [&mut self.bw, &mut self.iops].into_iter().flatten() {
            f.flush();
        }
        let lat_files = [&self.clat, &self.slat, &self.lat]
            .into_iter()
            .flatten()
            .map(|l| &l.file);
        lat_files
            .chain([&self.bw, &self.iops].into_iter().flatten())
            .filter_map(|f| f.error.clone())
            .collect()
    }
}

/// fio's `__add_stat_to_log`: the mean rounded half up, or the maximum.
fn window_value(s: &IoStat, max_value: bool) -> u64 {
    if max_value {
        s.max
    } else {
        (s.mean + 0.5) as u64
    }
}

/// One log line.
#[derive(Clone, Copy, Debug)]
struct Entry {
    t: u64,
    v: u64,
    ddir: usize,
    bs: u64,
    offset: u64,
    prio: u16,
    log_offset: bool,
    log_prio: bool,
}

impl Entry {
    fn io(l: &JobLogs, t: u64, v: u64, ddir: usize, bs: u64, offset: u64) -> Entry {
        Entry {
            t,
            v,
            ddir,
            bs,
            offset,
            prio: l.ioprio,
            log_offset: l.log_offset,
            log_prio: l.log_prio,
        }
    }

    /// Averaged entries carry no bs, offset or priority.
    fn window(l: &JobLogs, t: u64, v: u64, ddir: usize) -> Entry {
        Entry {
            prio: 0,
            ..Entry::io(l, t, v, ddir, 0, 0)
        }
    }

    fn with_ddir(self, ddir: usize) -> Entry {
        Entry { ddir, ..self }
    }

    fn write(&self, f: &mut LogFile) {
        let (t, v, d, bs) = (self.t, self.v, self.ddir, self.bs);
        match (self.log_offset, self.log_prio) {
            (false, false) => {
                let p = u8::from(self.prio >> 13 == IoPrioClass::Rt as u16);
                f.line(format_args!("{t}, {v}, {d}, {bs}, {p}\n"));
            }
            (false, true) => {
                let p = self.prio;
                f.line(format_args!("{t}, {v}, {d}, {bs}, 0x{p:04x}\n"));
            }
            (true, false) => {
                let p = u8::from(self.prio >> 13 == IoPrioClass::Rt as u16);
                let o = self.offset;
                f.line(format_args!("{t}, {v}, {d}, {bs}, {o}, {p}\n"));
            }
            (true, true) => {
                let (o, p) = (self.offset, self.prio);
                f.line(format_args!("{t}, {v}, {d}, {bs}, {o}, 0x{p:04x}\n"));
            }
        }
    }
}
