//! fio's normal (human) output, as fio 3.33 prints it: one block per job or
//! group entry, then "Run status group" lines, then "Disk stats".

use std::fmt::Write;

use super::numfmt::{ctime, num2str, Unit};
use super::{
    dist, lat_dist, layout, Entry, GroupRun, Item, JobStatus, RunReport, DDIR_NAMES,
    FIO_COMPAT_VERSION,
};
use crate::job::{BlockSizes, RwPattern};
use crate::stats::{Histogram, IoStat, JobStats};

/// fio's default `sig_figs`.
const SIG_FIGS: usize = 4;
/// fio's default `unit_base`: bytes.
const UNIT: Unit = Unit::BytePerSec;

/// The results part of fio's output (what fio prints after the jobs end):
/// a leading blank line, the job blocks, group status and disk stats.
pub fn render(report: &RunReport) -> String {
    let lay = layout(report);
    let mut out = String::from("\n");
    let time_buf = ctime(report.timestamp);
    for item in &lay.items {
        match *item {
            Item::Entry(i) => {
                let e = &lay.entries[i];
                let rs = &lay.groups[e.groupid as usize];
                job_block(&mut out, e, rs, &time_buf);
            }
            Item::NotModelled(j) => {
                let job = &report.jobs[j];
                let reason = match &job.status {
                    JobStatus::NotModelled(r) => r.as_str(),
                    JobStatus::Ran => "",
                };
                let _ = writeln!(out, "{}: not modelled: {}", job.spec.name, reason);
            }
        }
    }
    for rs in &lay.groups {
        // fio's group kb_base comes from the group's (last) entry.
        let kb_base = lay
            .entries
            .iter()
            .rev()
            .find(|e| e.groupid == rs.groupid)
            .map_or(1024, |e| e.stats.opts.kb_base);
        group_block(&mut out, rs, kb_base.is_power_of_two());
    }
    if !report.disk_util.is_empty() {
        out.push_str("\nDisk stats (read/write):\n");
        for du in &report.disk_util {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
                du.name,
                du.read_ios,
                du.write_ios,
                du.read_merges,
                du.write_merges,
                du.read_ticks,
                du.write_ticks,
                du.in_queue,
                du.util.min(100.0)
            );
        }
    }
    out
}

/// What fio prints before the run: one line per job section (`...` for
/// further clones), the version line and "Starting N processes".
pub fn render_preamble(report: &RunReport) -> String {
    let mut out = String::new();
    // fio prints nothing about scheduler switches; elevator adds one line
    // before fio's job lines when the run had any.
    let m = &report.elevator;
    if let Some(line) = super::switches::preamble_line(&m.switches, &m.switch_log) {
        out.push_str(&line);
        out.push('\n');
    }
    for job in &report.jobs {
        let s = &job.spec;
        if s.clone_index == 0 {
            let _ = writeln!(
                out,
                "{}: (g={}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
                s.name,
                s.group_id,
                rw_str(s.rw),
                bs_range(&s.bs[0], s.kb_base),
                bs_range(&s.bs[1], s.kb_base),
                bs_range(&s.bs[2], s.kb_base),
                s.ioengine.name,
                s.iodepth
            );
        } else if s.clone_index == 1 {
            out.push_str("...\n");
        }
    }
    let _ = writeln!(out, "{}", version_string(report));
    let n = report.jobs.len();
    let _ = writeln!(
        out,
        "Starting {} process{}",
        n,
        if n == 1 { "" } else { "es" }
    );
    out
}

/// Preamble followed by the results: everything fio writes to stdout when
/// stdout is not a terminal (no ETA lines).
pub fn render_full(report: &RunReport) -> String {
    let mut s = render_preamble(report);
    s.push_str(&render(report));
    s
}

pub(crate) fn version_string(report: &RunReport) -> String {
    if report.elevator.version.is_empty() {
        format!("fio-{}", FIO_COMPAT_VERSION)
    } else {
        format!("elevator-{}", report.elevator.version)
    }
}

fn rw_str(rw: RwPattern) -> &'static str {
    match rw {
        RwPattern::Read => "read",
        RwPattern::Write => "write",
        RwPattern::Trim => "trim",
        RwPattern::RandRead => "randread",
        RwPattern::RandWrite => "randwrite",
        RwPattern::RandTrim => "randtrim",
        RwPattern::ReadWrite => "rw",
        RwPattern::RandRw => "randrw",
        RwPattern::TrimWrite => "trimwrite",
        RwPattern::RandTrimWrite => "randtrimwrite",
    }
}

fn bs_range(bs: &BlockSizes, kb_base: u32) -> String {
    let i2p = kb_base != 1000;
    let (lo, hi) = match bs {
        BlockSizes::Fixed(b) => (*b, *b),
        BlockSizes::Range { min, max } => (*min, *max),
        BlockSizes::Split(v) => {
            let lo = v.iter().map(|x| x.0).min().unwrap_or(0);
            let hi = v.iter().map(|x| x.0).max().unwrap_or(0);
            (lo, hi)
        }
    };
    format!(
        "{}-{}",
        num2str(lo, SIG_FIGS, 1, i2p, Unit::Byte),
        num2str(hi, SIG_FIGS, 1, i2p, Unit::Byte)
    )
}

fn job_block(out: &mut String, e: &Entry, rs: &GroupRun, time_buf: &str) {
    let ts = &e.stats;
    let bytes: u64 = ts.dirs.iter().map(|d| d.io_bytes).sum();
    let ios: u64 = ts.dirs.iter().map(|d| d.total_ios).sum();
    if bytes == 0 && ios == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={:2}: pid={}: {}",
        e.name, e.groupid, ts.members, 0, e.pid, time_buf
    );
    if let Some(desc) = e.description {
        let _ = writeln!(out, "  Description  : [{desc}]");
    }
    for d in 0..3 {
        if ts.dirs[d].io_bytes > 0 {
            ddir_status(out, ts, rs, d);
        }
    }
    show_latencies(out, ts);
    if ts.sync.samples > 0 {
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        if let Some((min, max, mean, dev)) = ts.sync.calc() {
            display_lat(out, "sync", min, max, mean, dev);
        }
        show_percentiles(
            out,
            &ts.sync_hist,
            &ts.sync,
            &ts.opts.percentile_list,
            ts.opts.percentile_precision,
            "sync",
        );
    }
    let runt = ts.total_run_time_ms;
    let (usr, sys) = if runt > 0 {
        (
            ts.usr_time_ms as f64 * 100.0 / runt as f64,
            ts.sys_time_ms as f64 * 100.0 / runt as f64,
        )
    } else {
        (0.0, 0.0)
    };
    let _ = writeln!(
        out,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}",
        usr, sys, ts.ctx, ts.majf, ts.minf
    );
    let m = dist(&ts.io_u_map, ios);
    let _ = writeln!(
        out,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%",
        m[0], m[1], m[2], m[3], m[4], m[5], m[6]
    );
    let m = dist(&ts.io_u_submit, ts.total_submit);
    let _ = writeln!(
        out,
        "     submit    : 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
        m[0], m[1], m[2], m[3], m[4], m[5], m[6]
    );
    let m = dist(&ts.io_u_complete, ts.total_complete);
    let _ = writeln!(
        out,
        "     complete  : 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
        m[0], m[1], m[2], m[3], m[4], m[5], m[6]
    );
    let t = |d: usize| ts.dirs[d].total_ios;
    let sh = |d: usize| ts.dirs[d].short_ios;
    let dr = |d: usize| ts.dirs[d].drop_ios;
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},{},{},0 dropped={},{},{},0",
        t(0),
        t(1),
        t(2),
        ts.sync_total,
        sh(0),
        sh(1),
        sh(2),
        dr(0),
        dr(1),
        dr(2)
    );
    let o = &ts.opts;
    if o.latency_depth > 0 {
        let _ = writeln!(
            out,
            "     latency   : target={}, window={}, percentile={:.2}%, depth={}",
            o.latency_target, o.latency_window, o.latency_percentile, o.latency_depth
        );
    }
}

fn ddir_status(out: &mut String, ts: &JobStats, rs: &GroupRun, d: usize) {
    let ds = &ts.dirs[d];
    let runt = ds.runtime_ms;
    if runt == 0 {
        return;
    }
    let bw = 1000 * ds.io_bytes / runt;
    let iops = 1000 * ds.total_ios / runt;
    let kb_base = ts.opts.kb_base;
    let i2p = kb_base.is_power_of_two();
    // fio 3.33 reports zone resets on every write line.
    let post = if d == 1 { "; 0 zone resets" } else { "" };
    let _ = writeln!(
        out,
        "  {}: IOPS={}, BW={} ({})({}/{}msec){}",
        DDIR_NAMES[d],
        num2str(iops, SIG_FIGS, 1, false, Unit::None),
        num2str(bw, SIG_FIGS, 1, i2p, UNIT),
        num2str(bw, SIG_FIGS, 1, !i2p, UNIT),
        num2str(ds.io_bytes, SIG_FIGS, 1, i2p, Unit::Byte),
        runt,
        post
    );
    for (name, st) in [("slat", &ds.slat), ("clat", &ds.clat), (" lat", &ds.lat)] {
        if let Some((min, max, mean, dev)) = st.calc() {
            display_lat(out, name, min, max, mean, dev);
        }
    }
    let o = &ts.opts;
    let list = &o.percentile_list;
    let prec = o.percentile_precision;
    if o.slat_percentiles && ds.slat.samples > 0 {
        show_percentiles(out, &ds.slat_hist, &ds.slat, list, prec, "slat");
    }
    if o.clat_percentiles && ds.clat.samples > 0 {
        show_percentiles(out, &ds.clat_hist, &ds.clat, list, prec, "clat");
    }
    if o.lat_percentiles && ds.lat.samples > 0 {
        show_percentiles(out, &ds.lat_hist, &ds.lat, list, prec, "lat");
    }
    if let Some((mut min, mut max, mut mean, mut dev)) = ds.bw.calc() {
        let p_of_agg = rs.agg_percent(d, mean);
        let mut unit = if i2p { "KiB" } else { "kB" };
        let kb = kb_base as f64;
        if mean > kb * kb {
            // fio divides the integer min/max by a double and stores the
            // result back into an integer: truncation.
            min = (min as f64 / kb) as u64;
            max = (max as f64 / kb) as u64;
            mean /= kb;
            dev /= kb;
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({:>5}/s): min={:5}, max={:5}, per={:3.2}%, avg={:5.2}, stdev={:5.2}, samples={}",
            unit, min, max, p_of_agg, mean, dev, ds.bw.samples
        );
    }
    if let Some((min, max, mean, dev)) = ds.iops.calc() {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            min, max, mean, dev, ds.iops.samples
        );
    }
}

/// fio's `display_lat`: unit chosen from min/max/stddev, min/max with
/// `num2str(.., 6, ..)`, avg and stdev as `%5.02f`.
fn display_lat(out: &mut String, name: &str, min: u64, max: u64, mean: f64, dev: f64) {
    let (mut min, mut max, mut mean, mut dev) = (min, max, mean, dev);
    let base = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        min /= 1_000_000;
        max /= 1_000_000;
        mean /= 1_000_000.0;
        dev /= 1_000_000.0;
        "(msec)"
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        min /= 1000;
        max /= 1000;
        mean /= 1000.0;
        dev /= 1000.0;
        "(usec)"
    } else {
        "(nsec)"
    };
    let _ = writeln!(
        out,
        "    {} {}: min={}, max={}, avg={:5.2}, stdev={:5.2}",
        name,
        base,
        num2str(min, 6, 1, false, Unit::None),
        num2str(max, 6, 1, false, Unit::None),
        mean,
        dev
    );
}

/// fio's `show_clat_percentiles`.
fn show_percentiles(
    out: &mut String,
    h: &Histogram,
    st: &IoStat,
    list: &[f64],
    precision: u32,
    pre: &str,
) {
    if list.is_empty() {
        return;
    }
    let vals = h.percentiles(st.samples, list);
    if vals.is_empty() {
        return;
    }
    let minv = *vals.iter().min().expect("non-empty");
    let maxv = *vals.iter().max().expect("non-empty");
    // Scale to usec/msec when the whole range is large enough.
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000u64, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    {} percentiles ({}):\n     |", pre, unit);
    let scaled = maxv / divisor;
    let time_width = if scaled == 0 {
        5
    } else {
        ((scaled as f64).log10() + 1.0) as usize
    }
    .max(5);
    let prec = precision as usize;
    let per_line = (80 - 7) / (prec + 10 + time_width);
    let len = vals.len();
    for (j, (p, v)) in list.iter().zip(vals.iter()).enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let is_last = j == len - 1;
        let mut v = *v;
        for _ in 0..scale_down {
            v = v.div_ceil(1000);
        }
        let _ = write!(
            out,
            " {:w$.p$}th=[{:tw$}]{}",
            p,
            v,
            if is_last { '\n' } else { ',' },
            w = prec + 3,
            p = prec,
            tw = time_width
        );
        if is_last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// fio's `show_latencies`: the nsec/usec/msec completion latency buckets,
/// five per line, only non-zero ones.
fn show_latencies(out: &mut String, ts: &JobStats) {
    const R10: [&str; 10] = [
        "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=",
    ];
    const R12: [&str; 12] = [
        "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=",
        ">=2000=",
    ];
    show_lat(out, &lat_dist(&ts.lat_n, ts), &R10, "nsec");
    show_lat(out, &lat_dist(&ts.lat_u, ts), &R10, "usec");
    show_lat(out, &lat_dist(&ts.lat_m, ts), &R12, "msec");
}

fn show_lat(out: &mut String, vals: &[f64], ranges: &[&str], msg: &str) {
    let mut new_line = true;
    let mut shown = false;
    let mut line = 0;
    for (v, r) in vals.iter().zip(ranges.iter()) {
        if *v <= 0.0 {
            continue;
        }
        shown = true;
        if new_line {
            if line > 0 {
                out.push('\n');
            }
            let _ = write!(out, "  lat ({})   : ", msg);
            new_line = false;
            line = 0;
        }
        if line > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}{:3.2}%", r, v);
        line += 1;
        if line == 5 {
            new_line = true;
        }
    }
    if shown {
        out.push('\n');
    }
}

/// fio's `show_group_stats`.
fn group_block(out: &mut String, rs: &GroupRun, i2p: bool) {
    const NAMES: [&str; 3] = ["   READ", "  WRITE", "   TRIM"];
    let _ = write!(out, "\nRun status group {} (all jobs):\n", rs.groupid);
    for (d, dname) in NAMES.iter().enumerate() {
        if rs.max_run[d] == 0 {
            continue;
        }
        let n = |v: u64, p2: bool, u: Unit| num2str(v, SIG_FIGS, 1, p2, u);
        let _ = writeln!(
            out,
            "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            dname,
            n(rs.agg[d], i2p, UNIT),
            n(rs.agg[d], !i2p, UNIT),
            n(rs.min_bw[d], i2p, UNIT),
            n(rs.max_bw[d], i2p, UNIT),
            n(rs.min_bw[d], !i2p, UNIT),
            n(rs.max_bw[d], !i2p, UNIT),
            n(rs.iobytes[d], i2p, Unit::Byte),
            n(rs.iobytes[d], !i2p, Unit::Byte),
            rs.min_run[d],
            rs.max_run[d]
        );
    }
}
