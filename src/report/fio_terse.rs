//! fio's terse output (`--output-format=terse`, `--minimal`), version 3:
//! one semicolon-separated line per job (or group entry), field for field
//! as fio 3.33's `show_thread_status_terse_all` prints it.
//!
//! Layout: `3;<version>;<jobname>;<groupid>;<error>`, then read and write
//! (no trim in v3), each: KiB, bw KiB/s, IOPS, runtime ms; slat, clat
//! min/max/mean/stdev in µs; 20 completion-latency percentile fields
//! `p%=µs` (total-latency ones when `lat_percentiles=1`; unused ones print
//! `0%=0`); lat min/max/mean/stdev; bw min/max/agg%/mean/stdev. Then CPU
//! usr%, sys%, ctx, majf, minf; IO depths 1..>=64; latency buckets <=2µs
//! (which also holds all sub-µs I/Os) .. 1000µs and 2ms .. >=2000ms; nine
//! fields per disk; the job description if set. 121 fields before the disks.

use std::fmt::Write;

use super::fio_text::version_string;
use super::{dist, lat_dist, layout, Entry, GroupRun, RunReport};
use crate::stats::{Histogram, IoStat, JobStats};

/// Fields in a v3 line without disk stats or description (fio 3.33).
pub const FIELDS_V3: usize = 121;
/// Fields each disk adds.
pub const FIELDS_PER_DISK: usize = 9;

/// All terse lines of a run.
pub fn render(report: &RunReport) -> String {
    let lay = layout(report);
    let mut out = String::new();
    for e in &lay.entries {
        entry_line(&mut out, report, e, &lay.groups[e.groupid as usize]);
    }
    out
}

/// glibc prints the NaN of 0.0/0.0 as "-nan"; other values as `%.6f`.
fn f6(v: f64) -> String {
    if v.is_nan() {
        "-nan".to_string()
    } else {
        format!("{v:.6}")
    }
}

fn entry_line(out: &mut String, report: &RunReport, e: &Entry, rs: &GroupRun) {
    let ts = &e.stats;
    let _ = write!(
        out,
        "3;{};{};{};{}",
        version_string(report),
        e.name,
        e.groupid,
        0
    );
    for d in 0..2 {
        ddir(out, ts, rs, d);
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
    let _ = write!(
        out,
        ";{}%;{}%;{};{};{}",
        f6(usr),
        f6(sys),
        ts.ctx,
        ts.majf,
        ts.minf
    );
    let ios: u64 = ts.dirs.iter().map(|d| d.total_ios).sum();
    for v in dist(&ts.io_u_map, ios) {
        let _ = write!(out, ";{v:3.1}%");
    }
    // fio's stat_calc_lat_nu: the ns buckets all count in the first µs one
    // (a 0/0 NaN when the job did no I/O).
    let mut lat_u = lat_dist(&ts.lat_u, ts);
    let ntotal: u64 = ts.lat_n.iter().sum();
    lat_u[0] += 100.0 * ntotal as f64 / ios as f64;
    for v in lat_u.iter().chain(lat_dist(&ts.lat_m, ts).iter()) {
        if v.is_nan() {
            out.push_str(";-nan%");
        } else {
            let _ = write!(out, ";{v:3.2}%");
        }
    }
    for du in &report.disk_util {
        let _ = write!(
            out,
            ";{};{};{};{};{};{};{};{};{:3.2}%",
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
    if let Some(desc) = e.description {
        let _ = write!(out, ";{desc}");
    }
    out.push('\n');
}

/// min/max/mean/stdev in µs (fio divides the ns values by 1000).
fn lat_fields(out: &mut String, st: &IoStat) {
    match st.calc() {
        Some((min, max, mean, dev)) => {
            let _ = write!(
                out,
                ";{};{};{};{}",
                min / 1000,
                max / 1000,
                f6(mean / 1000.0),
                f6(dev / 1000.0)
            );
        }
        None => out.push_str(";0;0;0.000000;0.000000"),
    }
}

/// fio's `show_ddir_status_terse` (v3).
fn ddir(out: &mut String, ts: &JobStats, rs: &GroupRun, d: usize) {
    let ds = &ts.dirs[d];
    let runt = ds.runtime_ms;
    let bw = (1000 * ds.io_bytes)
        .checked_div(runt)
        .map_or(0, |b| b / 1024);
    let iops = (1000 * ds.total_ios).checked_div(runt).unwrap_or(0);
    let _ = write!(out, ";{};{};{};{}", ds.io_bytes >> 10, bw, iops, runt);
    lat_fields(out, &ds.slat);
    lat_fields(out, &ds.clat);
    let o = &ts.opts;
    let (hist, samples): (Option<&Histogram>, u64) = if o.lat_percentiles {
        (Some(&ds.lat_hist), ds.lat.samples)
    } else if o.clat_percentiles {
        (Some(&ds.clat_hist), ds.clat.samples)
    } else {
        (None, 0)
    };
    let list: &[f64] = if hist.is_some() {
        &o.percentile_list
    } else {
        &[]
    };
    let vals = hist.map_or_else(Vec::new, |h| h.percentiles(samples, list));
    for i in 0..crate::stats::hist::LIST_MAX_LEN {
        match list.get(i) {
            Some(p) => {
                let v = vals.get(i).copied().unwrap_or(0);
                let _ = write!(out, ";{}%={}", f6(*p), v / 1000);
            }
            None => out.push_str(";0%=0"),
        }
    }
    lat_fields(out, &ds.lat);
    match ds.bw.calc() {
        Some((min, max, mean, dev)) => {
            // Unlike JSON's bw_agg, terse divides the untruncated mean by the
            // group's aggregate in whole KiB/s.
            let mut p = 100.0;
            if rs.agg[d] != 0 {
                p = mean * 100.0 / (rs.agg[d] / 1024) as f64;
                if p > 100.0 {
                    p = 100.0;
                }
            }
            let _ = write!(out, ";{min};{max};{}%;{};{}", f6(p), f6(mean), f6(dev));
        }
        None => out.push_str(";0;0;0.000000%;0.000000;0.000000"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Ddir, JobSpec};
    use crate::report::{DiskUtil, ElevatorMeta, JobResult, JobStatus};

    fn report(disks: Vec<DiskUtil>, desc: Option<&str>) -> RunReport {
        let mut spec = JobSpec::with_defaults("t");
        spec.description = desc.map(str::to_string);
        let mut stats = JobStats::new(&spec);
        stats.begin(0);
        for i in 1..=1000u64 {
            stats.record_io(Ddir::Read, 4096, None, 500 + i, 600 + i, i * 1_000_000);
        }
        stats.end(1_000_000_000);
        RunReport {
            global_options: vec![],
            jobs: vec![JobResult {
                spec,
                stats,
                status: JobStatus::Ran,
                elapsed_ns: 1_000_000_000,
            }],
            disk_util: disks,
            elevator: ElevatorMeta::default(),
            timestamp: 0,
        }
    }

    #[test]
    fn field_counts() {
        let n = |s: &str| s.trim_end_matches('\n').split(';').count();
        assert_eq!(n(&render(&report(vec![], None))), FIELDS_V3);
        let du = DiskUtil {
            name: "nvme0n1".into(),
            ..DiskUtil::default()
        };
        let two = vec![du.clone(), du];
        assert_eq!(
            n(&render(&report(two, Some("a job")))),
            FIELDS_V3 + 2 * FIELDS_PER_DISK + 1
        );
    }

    #[test]
    fn sub_microsecond_latencies_count_in_the_first_bucket() {
        let line = render(&report(vec![], None));
        let f: Vec<&str> = line.trim_end().split(';').collect();
        // All clats are 501..1500 ns: half below 1 µs, half in 1000..1999 ns
        // (the <=2 µs bucket too).
        assert_eq!(f[FIELDS_V3 - 22], "100.00%");
        assert_eq!(f[0..3], ["3", "fio-3.33", "t"]);
        assert!(line.ends_with(";0.00%\n"));
    }

    #[test]
    fn nan_when_no_io() {
        let mut r = report(vec![], None);
        r.jobs[0].stats = JobStats::new(&r.jobs[0].spec);
        let line = render(&r);
        assert!(line.contains(";-nan%;0.00%"), "{line}");
    }
}
