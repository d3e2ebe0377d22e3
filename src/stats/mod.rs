//! Statistics per job, as fio keeps them: bytes, ios, runtime, slat/clat/lat
//! with fio's log-linear latency histogram (percentiles match fio's), bw/iops
//! samples every `bwavgtime`, io depth distributions. Constant memory for any
//! run length.
//!
//! How the simulator drives a job's stats (mirrors where fio counts):
//! - `begin(now)` when measurement starts (job start, or end of `ramp_time`).
//! - `record_submit(nr, depth)` per submit call: `nr` I/Os sent, `depth` the
//!   job's I/Os in flight after it. Sync engines call `record_submit(1, 1)`
//!   and `record_complete(1)` for every I/O, as fio does for engines without
//!   a commit hook (that is what gives "submit: 4=100.0%").
//! - `record_complete(nr)` per reap call.
//! - `record_io` (or `record_io_at`, with the offset for `log_offset`) per
//!   completed read/write/trim, `record_sync` per fsync.
//! - `end(now)` when the job finishes.
//!
//! Jobs with `write_lat_log` / `write_bw_log` / `write_iops_log` are
//! created with [`JobStats::with_logs`] and stream fio-format log lines to
//! their files as I/Os complete (see [`log`]); without logs the hot path
//! pays one predictable branch.

pub mod hist;
mod ld;
pub mod log;

pub use hist::Histogram;
pub use log::log_path;

use log::JobLogs;

use crate::job::{Ddir, JobSpec};
use crate::sim::time::{Ns, NS_PER_MS};

/// fio's `struct io_stat`: running min/max/mean and sum of squared
/// deviations (Welford), updated exactly as fio's `add_stat_sample` does.
///
/// The latency stats a job records (slat, clat, lat, sync) do not go
/// through [`IoStat::add`]: their `min`, `max` and `samples` are kept up to
/// date per sample, while `mean` and `s` are computed from exact integer
/// sums kept beside them (`LatSums`) when the job ends or is merged (see
/// [`JobStats::settle`]).
#[derive(Clone, Debug, PartialEq)]
pub struct IoStat {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    /// Sum of squared deviations from the mean (fio's `S`).
    pub s: f64,
    pub samples: u64,
}

impl Default for IoStat {
    fn default() -> Self {
        IoStat::new()
    }
}

impl IoStat {
    pub fn new() -> IoStat {
        IoStat {
            min: u64::MAX,
            max: 0,
            mean: 0.0,
            s: 0.0,
            samples: 0,
        }
    }

    #[inline]
    pub fn add(&mut self, data: u64) {
        let val = data as f64;
        if data > self.max {
            self.max = data;
        }
        if data < self.min {
            self.min = data;
        }
        let delta = val - self.mean;
        // fio skips the update when delta is 0; same floating-point result
        // order as fio so means/stddevs print identically.
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    /// fio's `sum_stat`: latencies merge as one population (parallel
    /// Welford); bw/iops (`pure_sum`) are added up field by field, because a
    /// group's bandwidth is the sum of its jobs' bandwidths.
    pub fn merge(&mut self, src: &IoStat, pure_sum: bool) {
        if src.samples == 0 {
            return;
        }
        let first = self.samples == 0;
        if pure_sum {
            if first {
                *self = src.clone();
            } else {
                self.min += src.min;
                self.max += src.max;
                self.samples += src.samples;
                self.mean += src.mean;
                self.s += src.s;
            }
            return;
        }
        self.min = self.min.min(src.min);
        self.max = self.max.max(src.max);
        let (mean, s) = if first {
            (src.mean, src.s)
        } else {
            let delta = src.mean - self.mean;
            let n_d = self.samples as f64;
            let n_s = src.samples as f64;
            let mean = (src.mean * n_s + self.mean * n_d) / (n_d + n_s);
            let s = src.s + self.s + delta.powi(2) * (n_d * n_s) / (n_d + n_s);
            (mean, s)
        };
        self.samples += src.samples;
        self.mean = mean;
        self.s = s;
    }

    /// fio's `calc_lat`: `(min, max, mean, stddev)` or None without samples.
    /// Stddev is the sample standard deviation, sqrt(S / (n - 1)).
    pub fn calc(&self) -> Option<(u64, u64, f64, f64)> {
        if self.samples == 0 {
            return None;
        }
        let n = self.samples as f64;
        let dev = if n > 1.0 {
            (self.s / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some((self.min, self.max, self.mean, dev))
    }
}

/// A 192-bit unsigned integer, `hi * 2^128 + lo`: wide enough for a sum of
/// squares of up to 2^64 samples of any u64 value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct U192 {
    lo: u128,
    hi: u64,
}

impl U192 {
    #[inline(always)]
    fn add_u128(&mut self, v: u128) {
        let (lo, carry) = self.lo.overflowing_add(v);
        self.lo = lo;
        self.hi += carry as u64;
    }

    fn add(self, o: U192) -> U192 {
        let (lo, carry) = self.lo.overflowing_add(o.lo);
        U192 {
            lo,
            hi: self.hi + o.hi + carry as u64,
        }
    }

    /// `self - o`; callers guarantee `o <= self`.
    fn sub(self, o: U192) -> U192 {
        let (lo, borrow) = self.lo.overflowing_sub(o.lo);
        U192 {
            lo,
            hi: self.hi - o.hi - borrow as u64,
        }
    }

    /// `a * b`, exact (below 2^192).
    fn mul(a: u64, b: u128) -> U192 {
        let a = a as u128;
        let low = a * (b as u64 as u128);
        let high = a * (b >> 64);
        let (lo, carry) = low.overflowing_add(high << 64);
        U192 {
            lo,
            hi: (high >> 64) as u64 + carry as u64,
        }
    }

    fn to_f64(self) -> f64 {
        if self.hi == 0 {
            self.lo as f64
        } else {
            self.hi as f64 * 2f64.powi(128) + self.lo as f64
        }
    }
}

/// Exact running sums of a latency stat's samples: count, sum and sum of
/// squares, all integers, so adding a sample is a few integer adds and one
/// multiply (no floating-point division chain as in Welford's update), and
/// merging two stats is adding their sums.
///
/// Bounds: `n` counts samples (u64, as `IoStat::samples`); `sum` is below
/// `n * 2^64 <= 2^128` and `sumsq` below `n * 2^128 <= 2^192`, so neither
/// can overflow for any u64 values and any u64 number of samples. Realistic
/// runs (latencies up to ~1e12 ns = 2^40, up to ~1e10 = 2^34 samples) stay
/// below 2^74 and 2^114.
///
/// Mean and the sum of squared deviations `S` are derived only when asked
/// for ([`LatSums::mean_s`]): the integer parts are exact, leaving one or
/// two roundings to f64 (see there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LatSums {
    n: u64,
    sum: u128,
    sumsq: U192,
}

impl LatSums {
    #[inline(always)]
    fn add(&mut self, v: u64) {
        self.n += 1;
        self.sum += v as u128;
        self.sumsq.add_u128(v as u128 * v as u128);
    }

    fn merge(&mut self, o: &LatSums) {
        self.n += o.n;
        self.sum += o.sum;
        self.sumsq = self.sumsq.add(o.sumsq);
    }

    /// `(mean, S)` with `S = sum((v - mean)^2)`; `n` must be > 0.
    ///
    /// With `sum = q*n + r` (`0 <= r < n`): `sum^2/n = q*(sum + r) + r^2/n`,
    /// so `S = T - r^2/n` with the integer `T = sumsq - q*sum - q*r`, and
    /// `r^2 = q2*n + r2` gives `S = (T - q2) - r2/n` where `T - q2` is an
    /// exact integer and `r2/n` a fraction in `[0, 1)`. No intermediate
    /// exceeds `sumsq`, and `S` never comes out negative: the only
    /// roundings are converting the integer part to f64 and the fraction.
    /// The mean is `q + r/n` the same way.
    fn mean_s(&self) -> (f64, f64) {
        let n = self.n as u128;
        let nf = self.n as f64;
        let (q, r) = (self.sum / n, self.sum % n);
        // q <= the largest sample, so it fits in u64; r < n.
        let mean = q as f64 + r as f64 / nf;
        let q = q as u64;
        let t = self.sumsq.sub(U192::mul(q, self.sum)).sub(U192::mul(q, r));
        let rr = r * r;
        let whole = t.sub(U192 { lo: rr / n, hi: 0 });
        let s = whole.to_f64() - (rr % n) as f64 / nf;
        (mean, s.max(0.0))
    }
}

/// One sample of a latency stat: min/max/samples in the IoStat, the rest
/// in its sums.
#[inline(always)]
fn record_lat(stat: &mut IoStat, sums: &mut LatSums, v: u64) {
    // Branches, as fio: new extremes are rare, so this is cheaper than
    // rewriting both every time.
    if v > stat.max {
        stat.max = v;
    }
    if v < stat.min {
        stat.min = v;
    }
    stat.samples += 1;
    sums.add(v);
}

/// Bring a latency stat's `mean` and `s` up to date with its sums.
///
/// The IoStat's mean and s stand for the samples that are not in the sums
/// (`samples - sums.n`: an IoStat set from outside, as lab imports do, or
/// the result of merging with one). When there are none, the stat is all
/// recorded samples and mean and s are just computed from the sums, which
/// are kept so that later merges stay exact. Otherwise the sums are folded
/// into mean and s (as fio merges two stats) and cleared.
fn settle_lat(stat: &mut IoStat, sums: &mut LatSums) {
    if sums.n == 0 {
        return;
    }
    let (mean, s) = sums.mean_s();
    let outside = stat.samples.saturating_sub(sums.n);
    if outside == 0 {
        stat.mean = mean;
        stat.s = s;
        return;
    }
    let mut base = IoStat {
        samples: outside,
        ..stat.clone()
    };
    base.merge(
        &IoStat {
            min: stat.min,
            max: stat.max,
            mean,
            s,
            samples: sums.n,
        },
        false,
    );
    *stat = base;
    *sums = LatSums::default();
}

/// fio's `sum_stat` for latency stats: exact (sums added) when both sides
/// are made of recorded samples only, else as [`IoStat::merge`].
fn merge_lat(dst: &mut IoStat, dsums: &mut LatSums, src: &IoStat, ssums: &LatSums) {
    if dst.samples == dsums.n && src.samples == ssums.n {
        if src.samples == 0 {
            return;
        }
        dst.min = dst.min.min(src.min);
        dst.max = dst.max.max(src.max);
        dst.samples += src.samples;
        dsums.merge(ssums);
        settle_lat(dst, dsums);
        return;
    }
    settle_lat(dst, dsums);
    let (mut src, mut ssums) = (src.clone(), *ssums);
    settle_lat(&mut src, &mut ssums);
    dst.merge(&src, false);
    // Everything is in dst's mean and s now.
    *dsums = LatSums::default();
}

/// Which latency a histogram / percentile list is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatKind {
    Slat,
    Clat,
    Lat,
}

/// Per data direction (fio keeps these arrays indexed by ddir).
#[derive(Clone, Debug, Default)]
pub struct DirStats {
    pub io_bytes: u64,
    /// I/Os completed (fio's `total_io_u`, "issued rwts").
    pub total_ios: u64,
    pub short_ios: u64,
    pub drop_ios: u64,
    pub slat: IoStat,
    pub clat: IoStat,
    pub lat: IoStat,
    /// KiB/s samples, one per `bwavgtime` window with I/O.
    pub bw: IoStat,
    /// IOPS samples, one per `iopsavgtime` window with I/O.
    pub iops: IoStat,
    pub slat_hist: Histogram,
    pub clat_hist: Histogram,
    pub lat_hist: Histogram,
    /// fio's `runtime[ddir]`: ms, rounded up from µs; 0 if no bytes moved.
    pub runtime_ms: u64,
    /// The same in ns, unrounded.
    pub runtime_ns: Ns,
    /// Exact sums behind `slat`, `clat` and `lat` ([`SLAT`], [`CLAT`],
    /// [`LAT`]).
    sums: [LatSums; 3],
}

const SLAT: usize = 0;
const CLAT: usize = 1;
const LAT: usize = 2;

/// Options that shape what is collected and how it is printed.
#[derive(Clone, Debug, PartialEq)]
pub struct StatOptions {
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// Sorted, at most 20, no zeros (fio's prepared `percentile_list`).
    pub percentile_list: Vec<f64>,
    /// Digits after the point when printing percentile names.
    pub percentile_precision: u32,
    pub bwavgtime_ms: u64,
    pub iopsavgtime_ms: u64,
    /// fio's `latency_depth` (the queue depth in use: `iodepth` when no
    /// latency target is set).
    pub latency_depth: u32,
    pub latency_target: u64,
    pub latency_window: u64,
    pub latency_percentile: f64,
    /// fio's `kb_base`: 1024 prints IEC units first, 1000 SI units first.
    pub kb_base: u32,
}

/// One averaging window series (fio's `__add_samples` for bw or iops).
/// Windows are aligned to the measurement start. A window's samples are held
/// back until the next boundary (or `end`) so that the last boundary only
/// counts if it lies at least `LOG_MSEC_SLACK` (1 ms) before the job ended:
/// fio's helper thread takes samples slightly after each boundary and misses
/// one that coincides with the end of the run (runtime=120s gives 239
/// samples with bwavgtime=500).
#[derive(Clone, Debug)]
struct Window {
    period: Ns,
    /// Next boundary, `u64::MAX` when sampling is off.
    next_at: Ns,
    /// Units (bytes or I/Os) completed since the last boundary, per ddir.
    acc: [u64; 3],
    /// Closed window awaiting commit: (boundary, units per ddir).
    pending: Option<(Ns, [u64; 3])>,
    /// bw windows report KiB/s, iops windows I/Os per second.
    is_kb: bool,
}

/// A job's open log files. Clones of `JobStats` (reports, group merges)
/// do not carry them: only the running job writes logs.
#[derive(Default)]
struct LogSlot(Option<Box<JobLogs>>);

impl Clone for LogSlot {
    fn clone(&self) -> LogSlot {
        LogSlot(None)
    }
}

impl std::fmt::Debug for LogSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "LogSlot(open)"
        } else {
            "LogSlot(none)"
        })
    }
}

impl Window {
    fn new(period_ms: u64, start: Ns, is_kb: bool) -> Window {
        let period = period_ms.saturating_mul(NS_PER_MS);
        Window {
            period,
            next_at: if period == 0 {
                u64::MAX
            } else {
                start.saturating_add(period)
            },
            acc: [0; 3],
            pending: None,
            is_kb,
        }
    }

    fn commit(&mut self, out: &mut [DirStats; 3], mut logs: Option<&mut JobLogs>) {
        let Some((at, units)) = self.pending.take() else {
            return;
        };
        let spent_ms = self.period / NS_PER_MS;
        for (d, delta) in units.iter().enumerate() {
            // fio adds no sample for a window without I/O in that direction.
            if *delta == 0 {
                continue;
            }
            let rate = if self.is_kb {
                delta * 1000 / spent_ms / 1024
            } else {
                delta * 1000 / spent_ms
            };
            let stat = if self.is_kb {
                &mut out[d].bw
            } else {
                &mut out[d].iops
            };
            stat.add(rate);
            if let Some(l) = logs.as_deref_mut() {
                l.window_sample(self.is_kb, at, d, rate);
            }
        }
    }

    /// Close every boundary at or before `now`.
    fn roll(&mut self, now: Ns, out: &mut [DirStats; 3], mut logs: Option<&mut JobLogs>) {
        if now < self.next_at {
            return;
        }
        self.commit(out, logs.as_deref_mut());
        self.pending = Some((self.next_at, self.acc));
        self.acc = [0; 3];
        let after = self.next_at.saturating_add(self.period);
        if now >= after {
            // A gap without completions: the skipped windows are empty, so
            // commit the one just closed and jump past them.
            self.commit(out, logs);
            let n = (now - self.next_at) / self.period;
            self.next_at = self.next_at.saturating_add((n + 1) * self.period);
        } else {
            self.next_at = after;
        }
    }

    fn finish(&mut self, now: Ns, out: &mut [DirStats; 3], mut logs: Option<&mut JobLogs>) {
        self.roll(now, out, logs.as_deref_mut());
        if let Some((b, _)) = self.pending {
            if b.saturating_add(NS_PER_MS) <= now {
                self.commit(out, logs);
            } else {
                self.pending = None;
            }
        }
    }
}

/// Everything fio reports for one job (or one group, after `merge`).
#[derive(Clone, Debug)]
pub struct JobStats {
    pub dirs: [DirStats; 3],
    pub sync: IoStat,
    /// Exact sums behind `sync`.
    sync_sums: LatSums,
    pub sync_hist: Histogram,
    /// fsync/fdatasync calls (fio's `total_io_u[DDIR_SYNC]`).
    pub sync_total: u64,
    /// Depth at submit, buckets 1,2,4,8,16,32,>=64 (fio's `io_u_map`).
    pub io_u_map: [u64; 7],
    /// I/Os per submit call, buckets 0,4,8,16,32,64,>64.
    pub io_u_submit: [u64; 7],
    /// I/Os per reap call, same buckets.
    pub io_u_complete: [u64; 7],
    pub total_submit: u64,
    pub total_complete: u64,
    /// Completion latency distribution (fio's `io_u_lat_n/u/m`, from clat).
    pub lat_n: [u64; 10],
    pub lat_u: [u64; 10],
    pub lat_m: [u64; 12],
    /// fio's `total_run_time` (JSON `job_runtime`): ms, rounded down.
    pub total_run_time_ms: u64,
    /// CPU time of the job's task in user space and in the kernel, ms,
    /// and its context switches (fio's getrusage figures).
    pub usr_time_ms: u64,
    pub sys_time_ms: u64,
    pub ctx: u64,
    pub majf: u64,
    pub minf: u64,
    /// Jobs folded into this (fio's `members`).
    pub members: u32,
    pub opts: StatOptions,
    start: Ns,
    /// CPU time the simulated task used since measurement began, ns
    /// (split into `usr_time_ms`/`sys_time_ms` when the job ends).
    cpu_ns: Ns,
    /// Earliest of the two windows' next boundaries (hot-path check).
    next_sample_at: Ns,
    bw_win: Window,
    iops_win: Window,
    /// Anything beyond the plain statistics to do per I/O: log files, or
    /// per-I/O bw/iops samples (hot-path check).
    slow: bool,
    /// fio's per-unit bw/iops logging (`log_avg_msec=0`): every I/O is a
    /// bw sample (bytes * 10^6 / clat ns) and an iops sample (1) instead of
    /// one sample per `bwavgtime` window.
    unit_bw: bool,
    unit_iops: bool,
    logs: LogSlot,
    /// Log files that could not be written, one message each (the run's
    /// warnings report them).
    pub log_errors: Vec<String>,
}

#[inline]
fn depth_bucket(depth: u32) -> usize {
    // fio's io_u_mark_depth (on cur_depth): buckets 1, 2-3, 4-7, ..., 32-63,
    // 64 and up; 0 falls in the default (last) bucket. That is the index of
    // the top set bit, capped at 6; for 0 the subtraction wraps to the cap.
    ((32 - depth.leading_zeros()).wrapping_sub(1)).min(6) as usize
}

#[inline]
fn batch_bucket(nr: u32) -> usize {
    // fio's __io_u_mark_map: 0, 1-4, 5-8, 9-16, 17-32, 33-64, more. For
    // nr >= 1 that is ceil(log2(nr)) - 1, at least 1 and at most 6.
    if nr == 0 {
        return 0;
    }
    let ceil_log2 = 32 - (nr - 1).leading_zeros();
    ceil_log2.saturating_sub(1).clamp(1, 6) as usize
}

/// fio's io_u_mark_lat_{nsec,usec,msec} bucket of a value in that unit (the
/// first 10 buckets are shared; msec adds 1000-1999 and 2000+).
const fn lat_bucket_of(v: u64) -> usize {
    match v {
        0..=1 => 0,
        2..=3 => 1,
        4..=9 => 2,
        10..=19 => 3,
        20..=49 => 4,
        50..=99 => 5,
        100..=249 => 6,
        250..=499 => 7,
        500..=749 => 8,
        750..=999 => 9,
        1000..=1999 => 10,
        _ => 11,
    }
}

/// [`lat_bucket_of`] for 0..=2000, so the per-I/O marking is one load.
static LAT_BUCKETS: [u8; 2001] = {
    let mut t = [0u8; 2001];
    let mut v = 0;
    while v < t.len() {
        t[v] = lat_bucket_of(v as u64) as u8;
        v += 1;
    }
    t
};

#[inline]
fn lat_bucket(v: u64) -> usize {
    LAT_BUCKETS[v.min(2000) as usize] as usize
}

impl JobStats {
    pub fn new(spec: &JobSpec) -> JobStats {
        let list = match &spec.percentile_list {
            Some(l) => hist::prepare_list(l),
            None => hist::DEFAULT_PERCENTILES.to_vec(),
        };
        let precision = hist::list_precision(&list);
        let opts = StatOptions {
            clat_percentiles: spec.clat_percentiles,
            lat_percentiles: spec.lat_percentiles,
            slat_percentiles: spec.slat_percentiles,
            percentile_list: list,
            percentile_precision: precision,
            bwavgtime_ms: spec.bwavgtime_ms,
            iopsavgtime_ms: spec.iopsavgtime_ms,
            latency_depth: spec.iodepth,
            latency_target: 0,
            latency_window: 0,
            latency_percentile: 100.0,
            kb_base: if spec.kb_base == 0 {
                1024
            } else {
                spec.kb_base
            },
        };
        let (unit_bw, unit_iops) = log::unit_logs(spec);
        let mut opts = opts;
        if unit_bw {
            opts.bwavgtime_ms = 0;
        }
        if unit_iops {
            opts.iopsavgtime_ms = 0;
        }
        let mut st = JobStats::with_options(opts);
        st.unit_bw = unit_bw;
        st.unit_iops = unit_iops;
        st.slow = unit_bw || unit_iops;
        st
    }

    /// As [`JobStats::new`], and create the job's log files
    /// (`write_lat_log`, `write_bw_log`, `write_iops_log`) in the current
    /// directory or `spec.log_dir`. Errors name the file.
    pub fn with_logs(spec: &JobSpec) -> Result<JobStats, String> {
        let mut st = JobStats::new(spec);
        if let Some(l) = JobLogs::open(spec)? {
            st.logs = LogSlot(Some(Box::new(l)));
            st.slow = true;
        }
        Ok(st)
    }

    /// Empty stats with explicit options (lab mode, tests).
    pub fn with_options(opts: StatOptions) -> JobStats {
        let bw_win = Window::new(opts.bwavgtime_ms, 0, true);
        let iops_win = Window::new(opts.iopsavgtime_ms, 0, false);
        JobStats {
            dirs: Default::default(),
            sync: IoStat::new(),
            sync_sums: LatSums::default(),
            sync_hist: Histogram::new(),
            sync_total: 0,
            io_u_map: [0; 7],
            io_u_submit: [0; 7],
            io_u_complete: [0; 7],
            total_submit: 0,
            total_complete: 0,
            lat_n: [0; 10],
            lat_u: [0; 10],
            lat_m: [0; 12],
            total_run_time_ms: 0,
            usr_time_ms: 0,
            sys_time_ms: 0,
            ctx: 0,
            majf: 0,
            minf: 0,
            members: 1,
            start: 0,
            cpu_ns: 0,
            next_sample_at: bw_win.next_at.min(iops_win.next_at),
            bw_win,
            iops_win,
            slow: false,
            unit_bw: false,
            unit_iops: false,
            logs: LogSlot(None),
            log_errors: Vec::new(),
            opts,
        }
    }

    /// Measurement starts (job start, or end of ramp_time); resets counters.
    pub fn begin(&mut self, now: Ns) {
        let mut fresh = JobStats::with_options(self.opts.clone());
        fresh.members = self.members;
        fresh.start = now;
        fresh.bw_win = Window::new(self.opts.bwavgtime_ms, now, true);
        fresh.iops_win = Window::new(self.opts.iopsavgtime_ms, now, false);
        fresh.next_sample_at = fresh.bw_win.next_at.min(fresh.iops_win.next_at);
        fresh.slow = self.slow;
        fresh.unit_bw = self.unit_bw;
        fresh.unit_iops = self.unit_iops;
        fresh.logs = std::mem::take(&mut self.logs);
        if let Some(l) = fresh.logs.0.as_deref_mut() {
            l.restart(now);
        }
        *self = fresh;
    }

    /// An I/O completed inside `ramp_time`: its bytes and count only, which
    /// the reset at the ramp's end drops unless the job ends first.
    pub fn record_ramp_io(&mut self, ddir: Ddir, bytes: u64) {
        let ds = &mut self.dirs[ddir.index()];
        ds.io_bytes += bytes;
        ds.total_ios += 1;
    }

    /// One completed I/O. `slat` is None for sync engines (fio does not measure it).
    #[inline]
    pub fn record_io(
        &mut self,
        ddir: Ddir,
        bytes: u64,
        slat: Option<Ns>,
        clat: Ns,
        lat: Ns,
        now: Ns,
    ) {
        self.record_io_at(ddir, 0, bytes, slat, clat, lat, now);
    }

    /// [`JobStats::record_io`] with the I/O's offset (logged with
    /// `log_offset=1`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub fn record_io_at(
        &mut self,
        ddir: Ddir,
        offset: u64,
        bytes: u64,
        slat: Option<Ns>,
        clat: Ns,
        lat: Ns,
        now: Ns,
    ) {
        if now >= self.next_sample_at {
            self.roll_windows(now);
        }
        let d = ddir.index();
        let o = &self.opts;
        let ds = &mut self.dirs[d];
        ds.io_bytes += bytes;
        ds.total_ios += 1;
        if let Some(s) = slat {
            record_lat(&mut ds.slat, &mut ds.sums[SLAT], s);
            if o.slat_percentiles {
                ds.slat_hist.add(s);
            }
        }
        record_lat(&mut ds.clat, &mut ds.sums[CLAT], clat);
        if o.clat_percentiles {
            ds.clat_hist.add(clat);
        }
        record_lat(&mut ds.lat, &mut ds.sums[LAT], lat);
        if o.lat_percentiles {
            ds.lat_hist.add(lat);
        }
        // fio's io_u_mark_latency uses the completion latency.
        if clat < 1000 {
            self.lat_n[lat_bucket(clat)] += 1;
        } else if clat < 1_000_000 {
            self.lat_u[lat_bucket(clat / 1000)] += 1;
        } else {
            self.lat_m[lat_bucket(clat / 1_000_000)] += 1;
        }
        self.bw_win.acc[d] += bytes;
        self.iops_win.acc[d] += 1;
        if self.slow {
            self.record_slow(d, offset, bytes, slat, clat, lat, now);
        }
    }

    /// Per-I/O bw/iops samples and log lines (only for jobs that log).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn record_slow(
        &mut self,
        d: usize,
        offset: u64,
        bytes: u64,
        slat: Option<Ns>,
        clat: Ns,
        lat: Ns,
        now: Ns,
    ) {
        // fio's add_bw_sample: bytes * 10^6 / ns spent since issue.
        let bw_rate = (bytes.saturating_mul(1_000_000))
            .checked_div(clat)
            .unwrap_or(0);
        if self.unit_bw {
            self.dirs[d].bw.add(bw_rate);
        }
        if self.unit_iops {
            self.dirs[d].iops.add(1);
        }
        if let Some(l) = self.logs.0.as_deref_mut() {
            l.io(d, offset, bytes, slat, clat, lat, now, bw_rate);
        }
    }

    #[cold]
    fn roll_windows(&mut self, now: Ns) {
        let logs = &mut self.logs.0;
        self.bw_win.roll(now, &mut self.dirs, logs.as_deref_mut());
        self.iops_win.roll(now, &mut self.dirs, logs.as_deref_mut());
        self.next_sample_at = self.bw_win.next_at.min(self.iops_win.next_at);
    }

    /// One completed fsync/fdatasync (`sync` object: total_ios, lat_ns).
    pub fn record_sync(&mut self, lat: Ns) {
        record_lat(&mut self.sync, &mut self.sync_sums, lat);
        self.sync_hist.add(lat);
        self.sync_total += 1;
    }

    /// One submit call that sent `nr` I/Os; `depth` is the job's queue depth
    /// (I/Os in flight) after it.
    #[inline]
    pub fn record_submit(&mut self, nr: u32, depth: u32) {
        // fio's td_io_commit marks `nr` I/Os at the current depth, and the
        // engine's commit marks one submit call of `nr`.
        self.io_u_map[depth_bucket(depth)] += nr as u64;
        self.io_u_submit[batch_bucket(nr)] += 1;
        self.total_submit += 1;
    }

    /// One reap call that collected `nr` completions.
    #[inline]
    pub fn record_complete(&mut self, nr: u32) {
        self.io_u_complete[batch_bucket(nr)] += 1;
        self.total_complete += 1;
    }

    /// CPU time the job's task used in one step.
    #[inline]
    pub fn add_cpu(&mut self, ns: Ns) {
        self.cpu_ns += ns;
    }

    /// Split the task's CPU time into fio's `usr` and `sys` once the job
    /// has ended. Model assumption: fio's own user-space work is what its
    /// null engine costs per I/O (`user_per_io_ns`; the lab measured fio's
    /// null engine at 0.35-0.45 us per I/O, reference real-kernel-lab.md
    /// §8); the rest of the task's time is its system calls and the
    /// kernel work below them.
    pub fn settle_cpu(&mut self, user_per_io_ns: Ns) {
        let ios = self.dirs.iter().map(|d| d.total_ios).sum::<u64>() + self.sync_total;
        let usr = ios.saturating_mul(user_per_io_ns).min(self.cpu_ns);
        self.usr_time_ms = usr / NS_PER_MS;
        self.sys_time_ms = (self.cpu_ns - usr) / NS_PER_MS;
    }

    /// Measurement ends (job finished).
    pub fn end(&mut self, now: Ns) {
        let now = now.max(self.start);
        let logs = &mut self.logs.0;
        self.bw_win.finish(now, &mut self.dirs, logs.as_deref_mut());
        self.iops_win
            .finish(now, &mut self.dirs, logs.as_deref_mut());
        self.next_sample_at = u64::MAX;
        // Write out and close the job's logs.
        if let Some(mut l) = self.logs.0.take() {
            self.log_errors = l.finish(now);
        }
        let elapsed = now - self.start;
        // fio: runtime[ddir] = (elapsed_us + 999) / 1000, for directions that
        // moved bytes; total_run_time = mtime_since (rounded down).
        let elapsed_us = elapsed / 1000;
        for ds in self.dirs.iter_mut() {
            if ds.io_bytes > 0 {
                ds.runtime_ms = elapsed_us.div_ceil(1000);
                ds.runtime_ns = elapsed;
            }
        }
        self.total_run_time_ms = elapsed / NS_PER_MS;
        self.settle();
    }

    /// Compute the latency stats' (slat, clat, lat, sync) `mean` and `s`
    /// from their exact sums. [`JobStats::end`] and [`JobStats::merge`] do
    /// this; call it to read means of a job still running. `min`, `max`
    /// and `samples` are always current.
    pub fn settle(&mut self) {
        for ds in self.dirs.iter_mut() {
            settle_lat(&mut ds.slat, &mut ds.sums[SLAT]);
            settle_lat(&mut ds.clat, &mut ds.sums[CLAT]);
            settle_lat(&mut ds.lat, &mut ds.sums[LAT]);
        }
        settle_lat(&mut self.sync, &mut self.sync_sums);
    }

    /// Fold another job's stats into this one (group_reporting).
    pub fn merge(&mut self, other: &JobStats) {
        // fio's sum_thread_stats.
        for (dst, src) in self.dirs.iter_mut().zip(other.dirs.iter()) {
            merge_lat(
                &mut dst.clat,
                &mut dst.sums[CLAT],
                &src.clat,
                &src.sums[CLAT],
            );
            merge_lat(
                &mut dst.slat,
                &mut dst.sums[SLAT],
                &src.slat,
                &src.sums[SLAT],
            );
            merge_lat(&mut dst.lat, &mut dst.sums[LAT], &src.lat, &src.sums[LAT]);
            dst.bw.merge(&src.bw, true);
            dst.iops.merge(&src.iops, true);
            dst.io_bytes += src.io_bytes;
            dst.runtime_ms = dst.runtime_ms.max(src.runtime_ms);
            dst.runtime_ns = dst.runtime_ns.max(src.runtime_ns);
            dst.total_ios += src.total_ios;
            dst.short_ios += src.short_ios;
            dst.drop_ios += src.drop_ios;
            dst.slat_hist.merge(&src.slat_hist);
            dst.clat_hist.merge(&src.clat_hist);
            dst.lat_hist.merge(&src.lat_hist);
        }
        merge_lat(
            &mut self.sync,
            &mut self.sync_sums,
            &other.sync,
            &other.sync_sums,
        );
        self.sync_hist.merge(&other.sync_hist);
        self.sync_total += other.sync_total;
        self.usr_time_ms += other.usr_time_ms;
        self.sys_time_ms += other.sys_time_ms;
        self.ctx += other.ctx;
        self.majf += other.majf;
        self.minf += other.minf;
        for k in 0..7 {
            self.io_u_map[k] += other.io_u_map[k];
            self.io_u_submit[k] += other.io_u_submit[k];
            self.io_u_complete[k] += other.io_u_complete[k];
        }
        for (d, s) in self.lat_n.iter_mut().zip(other.lat_n.iter()) {
            *d += s;
        }
        for (d, s) in self.lat_u.iter_mut().zip(other.lat_u.iter()) {
            *d += s;
        }
        for (d, s) in self.lat_m.iter_mut().zip(other.lat_m.iter()) {
            *d += s;
        }
        self.total_run_time_ms += other.total_run_time_ms;
        self.total_submit += other.total_submit;
        self.total_complete += other.total_complete;
        self.members += other.members;
        // fio copies these per job; the last job of the group wins.
        self.opts.latency_depth = other.opts.latency_depth;
        self.opts.latency_target = other.opts.latency_target;
        self.opts.latency_window = other.opts.latency_window;
        self.opts.latency_percentile = other.opts.latency_percentile;
    }

    /// Total I/Os completed per direction (for tests and tables).
    pub fn total_ios(&self, ddir: Ddir) -> u64 {
        self.dirs[ddir.index()].total_ios
    }

    /// Mean total latency (lat) in ns per direction, 0 when none.
    pub fn lat_mean_ns(&self, ddir: Ddir) -> f64 {
        let ds = &self.dirs[ddir.index()];
        let (mut s, mut sums) = (ds.lat.clone(), ds.sums[LAT]);
        settle_lat(&mut s, &mut sums);
        if s.samples == 0 {
            0.0
        } else {
            s.mean
        }
    }

    /// Measured runtime in ns (fio's per-direction runtime, max over directions).
    pub fn runtime_ns(&self) -> Ns {
        self.dirs.iter().map(|d| d.runtime_ns).max().unwrap_or(0)
    }

    /// Bytes per direction.
    pub fn io_bytes(&self, ddir: Ddir) -> u64 {
        self.dirs[ddir.index()].io_bytes
    }

    /// Percentiles of one latency kind as fio computes them: `(percent,
    /// value ns)` for the prepared percentile list, empty when that kind's
    /// percentiles are off or there are no samples.
    pub fn percentiles(&self, kind: LatKind, ddir: Ddir) -> Vec<(f64, u64)> {
        let ds = &self.dirs[ddir.index()];
        let (on, stat, h) = match kind {
            LatKind::Slat => (self.opts.slat_percentiles, &ds.slat, &ds.slat_hist),
            LatKind::Clat => (self.opts.clat_percentiles, &ds.clat, &ds.clat_hist),
            LatKind::Lat => (self.opts.lat_percentiles, &ds.lat, &ds.lat_hist),
        };
        if !on || stat.samples == 0 {
            return Vec::new();
        }
        let list = &self.opts.percentile_list;
        list.iter()
            .copied()
            .zip(h.percentiles(stat.samples, list))
            .collect()
    }

    /// Sync (fsync) latency percentiles.
    pub fn sync_percentiles(&self) -> Vec<(f64, u64)> {
        if self.sync.samples == 0 {
            return Vec::new();
        }
        let list = &self.opts.percentile_list;
        list.iter()
            .copied()
            .zip(self.sync_hist.percentiles(self.sync.samples, list))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobSpec;

    #[test]
    fn cpu_time_splits_into_user_per_io_and_the_rest_as_system() {
        let mut st = JobStats::new(&JobSpec::with_defaults("c"));
        st.begin(0);
        for i in 0..1000 {
            st.record_io(Ddir::Read, 4096, Some(1_000), 10_000, 11_000, i * 1_000);
        }
        st.add_cpu(3_000_000);
        st.add_cpu(2_000_000);
        st.end(1_000_000);
        st.settle_cpu(2_000);
        assert_eq!((st.usr_time_ms, st.sys_time_ms), (2, 3));
        // Never more user time than the task ran.
        st.settle_cpu(10_000);
        assert_eq!((st.usr_time_ms, st.sys_time_ms), (5, 0));
    }

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn welford_matches_naive() {
        let mut st = IoStat::new();
        let mut seed = 7;
        let vals: Vec<u64> = (0..10_000)
            .map(|_| 1000 + lcg(&mut seed) % 50_000)
            .collect();
        for v in &vals {
            st.add(*v);
        }
        let n = vals.len() as f64;
        let mean = vals.iter().map(|v| *v as f64).sum::<f64>() / n;
        let var = vals.iter().map(|v| (*v as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let (min, max, m, dev) = st.calc().unwrap();
        assert_eq!(min, *vals.iter().min().unwrap());
        assert_eq!(max, *vals.iter().max().unwrap());
        assert!((m - mean).abs() / mean < 1e-12);
        assert!((dev - var.sqrt()).abs() / var.sqrt() < 1e-9);
        assert_eq!(IoStat::new().calc(), None);
        let mut one = IoStat::new();
        one.add(5);
        assert_eq!(one.calc(), Some((5, 5, 5.0, 0.0)));
    }

    #[test]
    fn latency_merge_equals_one_population() {
        let mut seed = 99;
        let (mut a, mut b, mut all) = (IoStat::new(), IoStat::new(), IoStat::new());
        for i in 0..5000 {
            let v = lcg(&mut seed) % 1_000_000;
            if i % 3 == 0 { &mut a } else { &mut b }.add(v);
            all.add(v);
        }
        a.merge(&b, false);
        let (x, y) = (a.calc().unwrap(), all.calc().unwrap());
        assert_eq!((x.0, x.1), (y.0, y.1));
        assert!((x.2 - y.2).abs() / y.2 < 1e-12);
        assert!((x.3 - y.3).abs() / y.3 < 1e-9);
        assert_eq!(a.samples, 5000);
    }

    /// Exact `(mean, n * S)` of integer samples: `n * S = n * sumsq - sum^2`.
    fn exact_ref(vals: &[u64]) -> (f64, u128) {
        let n = vals.len() as u128;
        let sum: u128 = vals.iter().map(|v| *v as u128).sum();
        let sumsq: u128 = vals.iter().map(|v| (*v as u128).pow(2)).sum();
        (sum as f64 / n as f64, n * sumsq - sum * sum)
    }

    fn recorded(vals: &[u64]) -> (IoStat, LatSums) {
        let (mut st, mut sums) = (IoStat::new(), LatSums::default());
        for v in vals {
            record_lat(&mut st, &mut sums, *v);
        }
        settle_lat(&mut st, &mut sums);
        (st, sums)
    }

    fn rel(a: f64, b: f64) -> f64 {
        if a == b {
            0.0
        } else {
            (a - b).abs() / a.abs().max(b.abs())
        }
    }

    #[test]
    fn exact_sums_match_exact_reference() {
        let mut seed = 7;
        for (len, range) in [(10_000, 50_000), (777, 3_000_000_000), (2, 10), (3, 1)] {
            let vals: Vec<u64> = (0..len).map(|_| 1000 + lcg(&mut seed) % range).collect();
            let (st, _) = recorded(&vals);
            let (mean, ns) = exact_ref(&vals);
            let n = vals.len() as f64;
            assert_eq!(st.samples, len);
            assert_eq!(st.min, *vals.iter().min().unwrap());
            assert_eq!(st.max, *vals.iter().max().unwrap());
            // Within rounding of the last bit or two.
            assert!(rel(st.mean, mean) <= 2.5e-16, "{} {}", st.mean, mean);
            assert!(rel(st.s, ns as f64 / n) <= 4.5e-16, "{} {}", st.s, ns);
            // And with the two-pass f64 reference, as for Welford above.
            let m2 = vals.iter().map(|v| *v as f64).sum::<f64>() / n;
            let var = vals.iter().map(|v| (*v as f64 - m2).powi(2)).sum::<f64>() / (n - 1.0);
            let (_, _, m, dev) = st.calc().unwrap();
            assert!(rel(m, m2) < 1e-14);
            assert!(rel(dev, var.sqrt()) < 1e-12);
        }
        // Same stddev definition as before: none without samples, 0 for one.
        let (mut st, mut sums) = (IoStat::new(), LatSums::default());
        settle_lat(&mut st, &mut sums);
        assert_eq!(st.calc(), None);
        let (one, _) = recorded(&[5]);
        assert_eq!(one.calc(), Some((5, 5, 5.0, 0.0)));
        // Constant samples: exactly zero deviation (Welford's is not always).
        let (c, _) = recorded(&[123_456_789; 1000]);
        assert_eq!(
            c.calc(),
            Some((123_456_789, 123_456_789, 123_456_789.0, 0.0))
        );
    }

    #[test]
    fn exact_merge_adds_sums() {
        let mut seed = 5;
        let vals: Vec<u64> = (0..9000).map(|_| lcg(&mut seed) % 5_000_000).collect();
        let (all, all_sums) = recorded(&vals);
        // Uneven split over three jobs, merged in an odd order.
        let parts: Vec<(IoStat, LatSums)> = (0..3)
            .map(|k| {
                let p: Vec<u64> = vals
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (i % 7).min(2) == k)
                    .map(|(_, v)| *v)
                    .collect();
                recorded(&p)
            })
            .collect();
        let (mut m, mut ms) = parts[2].clone();
        merge_lat(&mut m, &mut ms, &parts[0].0, &parts[0].1);
        merge_lat(&mut m, &mut ms, &parts[1].0, &parts[1].1);
        assert_eq!(m, all);
        assert_eq!(ms, all_sums);
        // Merging an empty stat changes nothing, either way round.
        let (e, es) = (IoStat::new(), LatSums::default());
        merge_lat(&mut m, &mut ms, &e, &es);
        assert_eq!(m, all);
        let (mut e2, mut es2) = (e.clone(), es);
        merge_lat(&mut e2, &mut es2, &all, &all_sums);
        assert_eq!(e2, all);
    }

    #[test]
    fn merge_with_imported_stat_is_fios_sum_stat() {
        // A stat set from outside (lab import: no sums) merges as fio does.
        let imported = IoStat {
            min: 100,
            max: 900,
            mean: 400.0,
            s: 2.5e6,
            samples: 50,
        };
        let (rec, rec_sums) = recorded(&[300, 500, 700, 1200]);
        let mut want = imported.clone();
        want.merge(&rec, false);
        let (mut a, mut asums) = (imported.clone(), LatSums::default());
        merge_lat(&mut a, &mut asums, &rec, &rec_sums);
        assert_eq!(a, want);
        let (mut b, mut bsums) = (rec.clone(), rec_sums);
        merge_lat(&mut b, &mut bsums, &imported, &LatSums::default());
        assert_eq!((b.min, b.max, b.samples), (100, 1200, 54));
        assert!(rel(b.mean, want.mean) < 1e-15 && rel(b.s, want.s) < 1e-14);
        // Samples recorded on top of such a stat are folded in at settle.
        let mut c = imported.clone();
        let mut cs = LatSums::default();
        for v in [300, 500, 700, 1200] {
            record_lat(&mut c, &mut cs, v);
        }
        settle_lat(&mut c, &mut cs);
        assert_eq!(c, want);
        assert_eq!(cs, LatSums::default());
    }

    #[test]
    fn exact_sums_do_not_overflow() {
        // Near u64::MAX: S is shift invariant, so it is that of the offsets.
        let mut seed = 11;
        let d: Vec<u64> = (0..1000).map(|_| lcg(&mut seed) % 1_000_000).collect();
        let top: Vec<u64> = d.iter().map(|x| u64::MAX - x).collect();
        let (st, _) = recorded(&top);
        let (_, ns) = exact_ref(&d);
        assert!(rel(st.s, ns as f64 / 1000.0) <= 4.5e-16);
        let mean_d = d.iter().sum::<u64>() as f64 / 1000.0;
        assert!(rel(st.mean, u64::MAX as f64 - mean_d) <= 2.5e-16);
        assert_eq!(st.max, u64::MAX - d.iter().min().unwrap());

        // 1e10 samples of ~1e12 ns (merge doubling: S doubles, mean stays).
        let base: Vec<u64> = (0..1000)
            .map(|_| 1_000_000_000_000 + lcg(&mut seed) % 1_000_000_000)
            .collect();
        let (mut st, mut sums) = recorded(&base);
        let (mean0, s0) = (st.mean, st.s);
        for _ in 0..24 {
            let (c, cs) = (st.clone(), sums);
            merge_lat(&mut st, &mut sums, &c, &cs);
        }
        assert_eq!(st.samples, 1000 << 24);
        assert!(rel(st.mean, mean0) <= 2.5e-16);
        assert!(rel(st.s, s0 * (1u64 << 24) as f64) <= 1e-15);

        // 2^40 samples of u64::MAX, and of 0 and u64::MAX alternating: the
        // sum of squares needs the 192-bit accumulator.
        let (mut st, mut sums) = recorded(&[u64::MAX, u64::MAX]);
        let (mut alt, mut alt_sums) = recorded(&[0, u64::MAX]);
        for _ in 0..39 {
            let (c, cs) = (st.clone(), sums);
            merge_lat(&mut st, &mut sums, &c, &cs);
            let (c, cs) = (alt.clone(), alt_sums);
            merge_lat(&mut alt, &mut alt_sums, &c, &cs);
        }
        assert!(sums.sumsq.hi > 0);
        assert_eq!(st.samples, 1 << 40);
        assert_eq!((st.mean, st.s), (u64::MAX as f64, 0.0));
        let half = u64::MAX as f64 / 2.0;
        assert!(rel(alt.mean, half) <= 2.5e-16);
        // Each sample is `half` away from the mean.
        assert!(rel(alt.s, half * half * (1u64 << 40) as f64) <= 1e-15);
    }

    #[test]
    fn u192_arithmetic() {
        let a = U192::mul(u64::MAX, u128::MAX);
        // (2^64 - 1)(2^128 - 1) = 2^192 - 2^128 - 2^64 + 1
        assert_eq!(a.hi, u64::MAX - 1);
        assert_eq!(a.lo, (u64::MAX as u128) << 64 | 1);
        let b = U192::mul(3, (1u128 << 127) + 5);
        assert_eq!((b.hi, b.lo), (1, (1u128 << 127) + 15));
        assert_eq!(a.sub(a), U192::default());
        assert_eq!(a.sub(b).add(b), a);
        let mut c = U192 {
            lo: u128::MAX,
            hi: 0,
        };
        c.add_u128(2);
        assert_eq!((c.hi, c.lo), (1, 1));
        assert_eq!(c.to_f64(), 2f64.powi(128));
    }

    #[test]
    fn bw_merge_is_pure_sum() {
        let (mut a, mut b) = (IoStat::new(), IoStat::new());
        for v in [100, 200] {
            a.add(v);
        }
        for v in [10, 30, 50] {
            b.add(v);
        }
        a.merge(&b, true);
        assert_eq!((a.min, a.max, a.samples), (110, 250, 5));
        assert_eq!(a.mean, 150.0 + 30.0);
    }

    fn spec() -> JobSpec {
        let mut s = JobSpec::with_defaults("t");
        s.lat_percentiles = true;
        s
    }

    /// Record the same deterministic stream into one JobStats, or split
    /// round-robin over `n` (as numjobs would); returns them ended.
    fn run(n: usize) -> Vec<JobStats> {
        let sp = spec();
        let mut v: Vec<JobStats> = (0..n).map(|_| JobStats::new(&sp)).collect();
        for s in v.iter_mut() {
            s.begin(0);
        }
        let mut seed = 3;
        let mut now = 0;
        for i in 0..20_000usize {
            now += 100_000 + lcg(&mut seed) % 200_000;
            let clat = 20_000 + lcg(&mut seed) % 2_000_000;
            let slat = 1_000 + lcg(&mut seed) % 5_000;
            let ddir = if i % 4 == 0 { Ddir::Write } else { Ddir::Read };
            let s = &mut v[i % n];
            s.record_submit(1, 1);
            s.record_io(ddir, 4096, Some(slat), clat, clat + slat, now);
            s.record_complete(1);
            if i % 100 == 0 {
                s.record_sync(50_000 + i as u64);
            }
        }
        for s in v.iter_mut() {
            s.end(now);
        }
        v
    }

    #[test]
    fn merge_equals_recording_everything_into_one() {
        let one = run(1).remove(0);
        let parts = run(4);
        let mut m = parts[0].clone();
        for p in &parts[1..] {
            m.merge(p);
        }
        for d in Ddir::ALL {
            let (a, b) = (&one.dirs[d.index()], &m.dirs[d.index()]);
            assert_eq!(a.io_bytes, b.io_bytes);
            assert_eq!(a.total_ios, b.total_ios);
            assert_eq!(a.clat_hist, b.clat_hist);
            assert_eq!(a.lat_hist, b.lat_hist);
            assert_eq!(a.runtime_ms, b.runtime_ms);
            // Exact sums: merged stats are bit for bit those of one job.
            assert_eq!(a.clat, b.clat);
            assert_eq!(a.slat, b.slat);
            assert_eq!(a.lat, b.lat);
            assert_eq!(
                one.percentiles(LatKind::Clat, d),
                m.percentiles(LatKind::Clat, d)
            );
            assert_eq!(
                one.percentiles(LatKind::Lat, d),
                m.percentiles(LatKind::Lat, d)
            );
        }
        assert_eq!(one.sync, m.sync);
        assert_eq!(one.sync_hist, m.sync_hist);
        assert_eq!(one.sync_total, m.sync_total);
        assert_eq!(one.lat_u, m.lat_u);
        assert_eq!(one.lat_m, m.lat_m);
        assert_eq!(one.io_u_map, m.io_u_map);
        assert_eq!(one.total_submit, m.total_submit);
        assert_eq!(m.members, 4);
        // Job runtimes add up (fio's total_run_time is a sum).
        assert_eq!(m.total_run_time_ms, 4 * one.total_run_time_ms);
    }

    #[test]
    fn bw_samples_per_window() {
        let mut s = JobStats::new(&JobSpec::with_defaults("w"));
        s.begin(1_000_000);
        // 1 MiB every 10 ms for 2 s from t = 1 ms: 100 MiB/s.
        let mut t = 1_000_000;
        for _ in 0..200 {
            t += 10 * NS_PER_MS;
            s.record_io(Ddir::Read, 1 << 20, None, 1000, 1000, t);
        }
        s.end(t);
        let d = &s.dirs[0];
        // Boundaries at +500, +1000, +1500 ms; +2000 coincides with the end
        // and is dropped as fio's helper thread would miss it.
        assert_eq!(d.bw.samples, 3);
        assert_eq!(d.iops.samples, 3);
        // 50 MiB per 500 ms window (the I/O at exactly the boundary falls in
        // the next window, so the first window has 49 I/Os).
        assert_eq!(d.bw.max, 50 * 1024 * 1000 / 500);
        assert_eq!(d.bw.min, 49 * 1024 * 1000 / 500);
        assert_eq!(d.iops.max, 100);
        assert_eq!(d.runtime_ms, 2000);
        assert_eq!(s.total_run_time_ms, 2000);
        // One ms past the last boundary and it counts.
        let mut s2 = s.clone();
        s2.begin(0);
        for i in 1..=100u64 {
            s2.record_io(Ddir::Read, 4096, None, 1000, 1000, i * 10 * NS_PER_MS);
        }
        s2.end(1001 * NS_PER_MS);
        assert_eq!(s2.dirs[0].bw.samples, 2);
    }

    #[test]
    fn gaps_produce_no_samples() {
        let mut s = JobStats::new(&JobSpec::with_defaults("g"));
        s.begin(0);
        s.record_io(Ddir::Write, 4096, None, 1000, 1000, 100 * NS_PER_MS);
        // 10 s gap, then one more I/O.
        s.record_io(Ddir::Write, 4096, None, 1000, 1000, 10_100 * NS_PER_MS);
        s.end(10_200 * NS_PER_MS);
        assert_eq!(s.dirs[1].bw.samples, 1);
        assert_eq!(s.dirs[1].iops.samples, 1);
        assert_eq!(s.dirs[1].iops.max, 2);
    }

    #[test]
    fn distributions() {
        let mut s = JobStats::new(&JobSpec::with_defaults("d"));
        s.begin(0);
        for (i, clat) in [500u64, 1_500, 250_000, 1_200_000, 3_000_000_000]
            .iter()
            .enumerate()
        {
            s.record_io(Ddir::Read, 512, None, *clat, *clat, i as u64);
        }
        assert_eq!(s.lat_n[8], 1);
        assert_eq!(s.lat_u[0], 1);
        assert_eq!(s.lat_u[7], 1);
        assert_eq!(s.lat_m[0], 1);
        assert_eq!(s.lat_m[11], 1);
        s.record_submit(1, 1);
        s.record_submit(8, 32);
        s.record_submit(64, 64);
        s.record_submit(0, 0);
        assert_eq!(s.io_u_map, [1, 0, 0, 0, 0, 8, 64]);
        assert_eq!(s.io_u_submit, [1, 1, 1, 0, 0, 1, 0]);
        s.record_complete(65);
        assert_eq!(s.io_u_complete[6], 1);
    }

    #[test]
    fn bucket_helpers_match_fio() {
        fn depth_ref(depth: u32) -> usize {
            match depth {
                1 => 0,
                2..=3 => 1,
                4..=7 => 2,
                8..=15 => 3,
                16..=31 => 4,
                32..=63 => 5,
                _ => 6,
            }
        }
        fn batch_ref(nr: u32) -> usize {
            match nr {
                0 => 0,
                1..=4 => 1,
                5..=8 => 2,
                9..=16 => 3,
                17..=32 => 4,
                33..=64 => 5,
                _ => 6,
            }
        }
        for v in (0..5000).chain([u32::MAX - 1, u32::MAX]) {
            assert_eq!(depth_bucket(v), depth_ref(v), "depth {v}");
            assert_eq!(batch_bucket(v), batch_ref(v), "batch {v}");
        }
        for v in (0..5000).chain([1 << 40, u64::MAX]) {
            assert_eq!(lat_bucket(v), lat_bucket_of(v), "lat {v}");
        }
    }

    #[test]
    fn begin_resets() {
        let mut s = JobStats::new(&JobSpec::with_defaults("r"));
        s.record_io(Ddir::Read, 4096, None, 1000, 1000, 5);
        s.record_submit(1, 1);
        s.begin(1_000_000_000);
        assert_eq!(s.io_bytes(Ddir::Read), 0);
        assert_eq!(s.total_submit, 0);
        s.record_io(Ddir::Read, 4096, None, 1000, 1000, 1_600_000_000);
        s.end(2_000_000_000);
        assert_eq!(s.dirs[0].runtime_ms, 1000);
        assert_eq!(s.lat_mean_ns(Ddir::Read), 1000.0);
        assert_eq!(s.runtime_ns(), 1_000_000_000);
    }
}
