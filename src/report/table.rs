//! The comparison table of the source documents: per scheduler and job
//! group, bandwidth / IOPS / average latency for each data direction, plus
//! p99 completion latency. `compare` (simulation) and `lab` (real devices)
//! print the same table from the same [`RunReport`]s.
//!
//! A row is one reporting entry (a `group_reporting` group, or a job). Jobs
//! of the same name without `group_reporting` (`numjobs=10`) fold into one
//! row holding the per-job median, as the documents print them. With several
//! rounds (`--repeat`), each cell is the median over rounds, `±` is half the
//! min–max spread in percent of the median, and the last column is the IOPS
//! ratio to the first scheduler, paired within each round (median, and the
//! range over rounds): the quantity that survives run-to-run noise.

use super::{layout, RunReport};
use crate::job::Ddir;
use serde_json::{json, Value};
use std::fmt::Write;

/// One row's numbers from one run.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRow {
    /// Entry (job or group) name.
    pub name: String,
    pub groupid: u32,
    pub dir: Ddir,
    /// Entries folded into this row (median over them).
    pub jobs: usize,
    /// KiB/s, as fio's `bw`.
    pub bw_kib: f64,
    /// Median over the entries.
    pub iops: f64,
    /// The entries' sum: the group's throughput.
    pub iops_total: f64,
    /// The lowest entry's IOPS over the highest's (1 for a single entry):
    /// how evenly the group's jobs shared the device.
    pub iops_evenness: f64,
    /// Mean total latency (fio's `lat`), us.
    pub lat_mean_us: f64,
    /// 99th percentile of completion latency (fio's `clat`), us.
    pub p99_us: f64,
}

const DIR_NAMES: [&str; 3] = ["read", "write", "trim"];

pub fn dir_name(d: Ddir) -> &'static str {
    DIR_NAMES[d.index()]
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Rows of one run, in the order entries appear; directions without I/O are
/// left out.
pub fn group_rows(report: &RunReport) -> Vec<GroupRow> {
    let lay = layout(report);
    // (name, gid, dir) → per-entry values.
    let mut keys: Vec<(String, u32, Ddir)> = Vec::new();
    let mut vals: Vec<Vec<[f64; 4]>> = Vec::new();
    for e in &lay.entries {
        for d in Ddir::ALL {
            let ds = &e.stats.dirs[d.index()];
            if ds.total_ios == 0 || ds.runtime_ms == 0 {
                continue;
            }
            let rt = ds.runtime_ms as f64 / 1000.0;
            let bw = ds.io_bytes as f64 / 1024.0 / rt;
            let iops = ds.total_ios as f64 / rt;
            let lat = if ds.lat.samples > 0 {
                ds.lat.mean
            } else {
                ds.clat.mean
            } / 1000.0;
            let p99 = if ds.clat.samples > 0 && !ds.clat_hist.is_empty() {
                ds.clat_hist
                    .percentiles(ds.clat.samples, &[99.0])
                    .first()
                    .copied()
                    .unwrap_or(0) as f64
                    / 1000.0
            } else {
                f64::NAN
            };
            let key = (e.name.to_string(), e.groupid, d);
            let i = match keys.iter().position(|k| *k == key) {
                Some(i) => i,
                None => {
                    keys.push(key);
                    vals.push(Vec::new());
                    keys.len() - 1
                }
            };
            vals[i].push([bw, iops, lat, p99]);
        }
    }
    keys.into_iter()
        .zip(vals)
        .map(|((name, groupid, dir), v)| {
            let col = |k: usize| median(&mut v.iter().map(|x| x[k]).collect::<Vec<_>>());
            let (lo, hi) = v.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
                (lo.min(x[1]), hi.max(x[1]))
            });
            GroupRow {
                name,
                groupid,
                dir,
                jobs: v.len(),
                bw_kib: col(0),
                iops: col(1),
                iops_total: v.iter().map(|x| x[1]).sum(),
                iops_evenness: if hi > 0.0 { lo / hi } else { 1.0 },
                lat_mean_us: col(2),
                p99_us: col(3),
            }
        })
        .collect()
}

/// Median and range of one number over rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Stat {
    pub fn of(v: &[f64]) -> Option<Stat> {
        let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Stat {
            median: median(&mut v),
            min,
            max,
            n: v.len(),
        })
    }

    /// Half the min–max spread in percent of the median.
    pub fn spread_pct(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.max - self.min) / 2.0 / self.median.abs() * 100.0
        }
    }
}

/// What happened to one scheduler.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// One report per round.
    Runs(Vec<RunReport>),
    /// Not run, with the reason ("simulation only", "not simulated yet").
    Skipped(String),
}

/// One scheduler's column of results.
#[derive(Clone, Debug)]
pub struct Column {
    pub scheduler: String,
    pub outcome: Outcome,
    /// Whole-machine busy CPU per completed I/O, us, per round (lab only).
    pub cpu_us_per_io: Vec<f64>,
}

/// The summarised numbers of one row of one scheduler.
#[derive(Clone, Debug)]
pub struct Cell {
    pub name: String,
    pub dir: Ddir,
    pub jobs: usize,
    pub bw_kib: Stat,
    pub iops: Stat,
    pub lat_mean_us: Stat,
    pub p99_us: Option<Stat>,
    /// IOPS / first scheduler's IOPS, paired by round.
    pub iops_ratio: Option<Stat>,
    /// Mean latency / first scheduler's, paired by round.
    pub lat_ratio: Option<Stat>,
}

/// Rows per round of a column, or None when it did not run.
fn rounds(c: &Column) -> Option<Vec<Vec<GroupRow>>> {
    match &c.outcome {
        Outcome::Runs(r) => Some(r.iter().map(group_rows).collect()),
        Outcome::Skipped(_) => None,
    }
}

fn find<'a>(rows: &'a [GroupRow], name: &str, gid: u32, dir: Ddir) -> Option<&'a GroupRow> {
    rows.iter()
        .find(|r| r.name == name && r.groupid == gid && r.dir == dir)
}

/// Summaries per column (None for skipped ones); ratios are to the first
/// column that ran.
pub fn summarize(cols: &[Column]) -> Vec<Option<Vec<Cell>>> {
    let per: Vec<Option<Vec<Vec<GroupRow>>>> = cols.iter().map(rounds).collect();
    let base = per.iter().flatten().next().cloned();
    per.iter()
        .map(|r| {
            let r = r.as_ref()?;
            let first = r.first()?;
            Some(
                first
                    .iter()
                    .map(|row| {
                        let pick = |f: &dyn Fn(&GroupRow) -> f64| -> Vec<f64> {
                            r.iter()
                                .filter_map(|rr| find(rr, &row.name, row.groupid, row.dir))
                                .map(f)
                                .collect()
                        };
                        let ratio = |f: &dyn Fn(&GroupRow) -> f64| -> Option<Stat> {
                            let b = base.as_ref()?;
                            let v: Vec<f64> = r
                                .iter()
                                .zip(b.iter())
                                .filter_map(|(mine, theirs)| {
                                    let a = find(mine, &row.name, row.groupid, row.dir)?;
                                    let t = find(theirs, &row.name, row.groupid, row.dir)?;
                                    let (x, y) = (f(a), f(t));
                                    (y > 0.0).then_some(x / y)
                                })
                                .collect();
                            Stat::of(&v)
                        };
                        let nan = Stat {
                            median: f64::NAN,
                            min: f64::NAN,
                            max: f64::NAN,
                            n: 0,
                        };
                        Cell {
                            name: row.name.clone(),
                            dir: row.dir,
                            jobs: row.jobs,
                            bw_kib: Stat::of(&pick(&|g| g.bw_kib)).unwrap_or(nan),
                            iops: Stat::of(&pick(&|g| g.iops)).unwrap_or(nan),
                            lat_mean_us: Stat::of(&pick(&|g| g.lat_mean_us)).unwrap_or(nan),
                            p99_us: Stat::of(&pick(&|g| g.p99_us)),
                            iops_ratio: ratio(&|g| g.iops),
                            lat_ratio: ratio(&|g| g.lat_mean_us),
                        }
                    })
                    .collect(),
            )
        })
        .collect()
}

/// A number with about four significant digits.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Left-aligned text columns, then right-aligned numeric columns. Rows
/// shorter than the longest (notes such as "simulation only") do not widen
/// the columns: their last cell is printed as it is.
pub fn align(rows: &[Vec<String>], left: usize) -> String {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0usize; ncol];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if r.len() == ncol || i + 1 < r.len() {
                w[i] = w[i].max(c.chars().count());
            }
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let pad = w[i].saturating_sub(c.chars().count());
            if r.len() < ncol && i + 1 == r.len() {
                line.push_str(c);
            } else if i < left {
                line.push_str(c);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(&" ".repeat(pad));
                line.push_str(c);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn group_label(c: &Cell) -> String {
    if c.jobs > 1 {
        format!("{} x{}", c.name, c.jobs)
    } else {
        c.name.clone()
    }
}

fn with_spread(s: &Stat) -> String {
    if s.n > 1 {
        format!("{} ±{:.0}%", num(s.median), s.spread_pct())
    } else {
        num(s.median)
    }
}

fn ratio_text(s: &Option<Stat>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{:.3} [{:.2}-{:.2}]", s.median, s.min, s.max),
        Some(s) => format!("{:.3}", s.median),
        None => "-".into(),
    }
}

/// The table as text. `title` lines are printed first.
pub fn render(title: &[String], cols: &[Column]) -> String {
    let sums = summarize(cols);
    let first = cols
        .iter()
        .zip(&sums)
        .find(|(_, s)| s.is_some())
        .map(|(c, _)| c.scheduler.clone())
        .unwrap_or_default();
    let nrounds = cols
        .iter()
        .filter_map(|c| match &c.outcome {
            Outcome::Runs(r) => Some(r.len()),
            Outcome::Skipped(_) => None,
        })
        .max()
        .unwrap_or(0);
    let ran = sums.iter().filter(|s| s.is_some()).count();
    let mut out = String::new();
    for t in title {
        out.push_str(t);
        out.push('\n');
    }
    let mut rows = vec![vec![
        "scheduler".to_string(),
        "group".to_string(),
        "dir".to_string(),
        "bw KiB/s".to_string(),
        "iops".to_string(),
        "avg lat us".to_string(),
        "p99 clat us".to_string(),
        format!("iops / {first}"),
    ]];
    if ran < 2 {
        rows[0].pop();
    }
    for (c, s) in cols.iter().zip(&sums) {
        match (s, &c.outcome) {
            (Some(cells), _) => {
                for (i, cell) in cells.iter().enumerate() {
                    rows.push(vec![
                        if i == 0 {
                            c.scheduler.clone()
                        } else {
                            String::new()
                        },
                        group_label(cell),
                        dir_name(cell.dir).to_string(),
                        num(cell.bw_kib.median),
                        with_spread(&cell.iops),
                        with_spread(&cell.lat_mean_us),
                        cell.p99_us
                            .map(|p| with_spread(&p))
                            .unwrap_or_else(|| "-".into()),
                        ratio_text(&cell.iops_ratio),
                    ]);
                    if ran < 2 {
                        rows.last_mut().map(Vec::pop);
                    }
                }
                if cells.is_empty() {
                    rows.push(vec![c.scheduler.clone(), "(no I/O)".into()]);
                }
            }
            (None, Outcome::Skipped(why)) => rows.push(vec![c.scheduler.clone(), why.clone()]),
            (None, Outcome::Runs(_)) => rows.push(vec![c.scheduler.clone(), "(no runs)".into()]),
        }
    }
    out.push_str(&align(&rows, 3));
    // CPU per I/O (lab).
    let cpu: Vec<(String, Stat)> = cols
        .iter()
        .filter_map(|c| Some((c.scheduler.clone(), Stat::of(&c.cpu_us_per_io)?)))
        .collect();
    if !cpu.is_empty() {
        let base = cpu[0].1.median;
        let parts: Vec<String> = cpu
            .iter()
            .map(|(n, s)| {
                if n == &cpu[0].0 {
                    format!("{n} {:.2}", s.median)
                } else {
                    format!("{n} {:.2} ({:+.2})", s.median, s.median - base)
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "CPU us per I/O (whole machine: busy time / completed I/Os, median): {}",
            parts.join(", ")
        );
    }
    if cols.iter().zip(&sums).any(|(_, s)| {
        s.as_ref()
            .is_some_and(|cells| cells.iter().any(|c| c.jobs > 1))
    }) {
        out.push_str("xN: median over the N jobs of that name (per-job numbers, as the source documents print them)\n");
    }
    if nrounds > 1 {
        let _ = writeln!(
            out,
            "{nrounds} rounds, schedulers interleaved: medians; ± is half the min-max spread; ratios paired within each round [min-max]"
        );
    }
    out
}

fn stat_json(s: &Stat) -> Value {
    json!({"median": s.median, "min": s.min, "max": s.max, "n": s.n})
}

/// The table's numbers as JSON (one object per scheduler).
pub fn to_json(cols: &[Column]) -> Value {
    let sums = summarize(cols);
    let arr: Vec<Value> = cols
        .iter()
        .zip(&sums)
        .map(|(c, s)| match (s, &c.outcome) {
            (Some(cells), _) => json!({
                "scheduler": c.scheduler,
                "rounds": match &c.outcome { Outcome::Runs(r) => r.len(), _ => 0 },
                "cpu_us_per_io": Stat::of(&c.cpu_us_per_io).map(|s| stat_json(&s)),
                "groups": cells.iter().map(|cell| json!({
                    "name": cell.name,
                    "dir": dir_name(cell.dir),
                    "jobs": cell.jobs,
                    "bw_kib": stat_json(&cell.bw_kib),
                    "iops": stat_json(&cell.iops),
                    "lat_mean_us": stat_json(&cell.lat_mean_us),
                    "clat_p99_us": cell.p99_us.map(|s| stat_json(&s)),
                    "iops_ratio_to_first": cell.iops_ratio.map(|s| stat_json(&s)),
                    "lat_ratio_to_first": cell.lat_ratio.map(|s| stat_json(&s)),
                })).collect::<Vec<_>>(),
            }),
            (None, Outcome::Skipped(why)) => json!({"scheduler": c.scheduler, "skipped": why}),
            (None, Outcome::Runs(_)) => json!({"scheduler": c.scheduler, "rounds": 0}),
        })
        .collect();
    Value::Array(arr)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::JobSpec;
    use crate::report::{ElevatorMeta, JobResult, JobStatus};
    use crate::stats::JobStats;

    /// A report with one job per (name, ios, lat_ns) over 1 s.
    fn report(jobs: &[(&str, u32, u64, u64)]) -> RunReport {
        let jobs = jobs
            .iter()
            .enumerate()
            .map(|(i, (name, gid, ios, lat))| {
                let mut spec = JobSpec::with_defaults(name);
                spec.group_id = *gid;
                spec.job_index = i as u32;
                let mut st = JobStats::new(&spec);
                st.begin(0);
                for k in 0..*ios {
                    st.record_io(Ddir::Write, 4096, Some(0), *lat, *lat, k * 1000);
                }
                st.end(1_000_000_000);
                JobResult {
                    spec,
                    stats: st,
                    status: JobStatus::Ran,
                    elapsed_ns: 1_000_000_000,
                }
            })
            .collect();
        RunReport {
            global_options: vec![],
            jobs,
            disk_util: vec![],
            elevator: ElevatorMeta::default(),
            timestamp: 0,
        }
    }

    #[test]
    fn jobs_of_a_name_fold_into_their_median() {
        let r = report(&[
            ("w", 0, 100, 1000),
            ("w", 0, 300, 1000),
            ("w", 0, 200, 3000),
            ("r", 1, 50, 500),
        ]);
        let rows = group_rows(&r);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].name, "w");
        assert_eq!(rows[0].jobs, 3);
        assert_eq!(rows[0].iops, 200.0);
        assert_eq!(rows[0].lat_mean_us, 1.0);
        assert_eq!(rows[1].jobs, 1);
        assert!((rows[0].bw_kib - 200.0 * 4.0).abs() < 1e-9);
    }

    #[test]
    fn ratios_pair_rounds() {
        let a = vec![
            report(&[("x", 0, 100, 1000)]),
            report(&[("x", 0, 200, 1000)]),
        ];
        let b = vec![
            report(&[("x", 0, 90, 1000)]),
            report(&[("x", 0, 160, 1000)]),
        ];
        let cols = vec![
            Column {
                scheduler: "none".into(),
                outcome: Outcome::Runs(a),
                cpu_us_per_io: vec![8.0, 8.5],
            },
            Column {
                scheduler: "bfq".into(),
                outcome: Outcome::Runs(b),
                cpu_us_per_io: vec![12.0, 12.5],
            },
            Column {
                scheduler: "cfq".into(),
                outcome: Outcome::Skipped("simulation only (not in this kernel)".into()),
                cpu_us_per_io: vec![],
            },
        ];
        let s = summarize(&cols);
        let bfq = &s[1].as_ref().unwrap()[0];
        assert_eq!(bfq.iops_ratio.unwrap().min, 0.8);
        assert_eq!(bfq.iops_ratio.unwrap().max, 0.9);
        assert!(s[2].is_none());
        let text = render(&["title".into()], &cols);
        assert!(text.starts_with("title\n"), "{text}");
        assert!(text.contains("iops / none"), "{text}");
        assert!(text.contains("0.850 [0.80-0.90]"), "{text}");
        assert!(text.contains("cfq"), "{text}");
        assert!(text.contains("simulation only"), "{text}");
        assert!(text.contains("bfq 12.25 (+4.00)"), "{text}");
        assert!(text.contains("2 rounds"), "{text}");
        let j = to_json(&cols);
        assert_eq!(j[2]["skipped"], "simulation only (not in this kernel)");
        assert_eq!(j[1]["groups"][0]["iops"]["n"], 2);
    }

    #[test]
    fn numbers() {
        assert_eq!(num(12345.6), "12346");
        assert_eq!(num(123.45), "123.5");
        assert_eq!(num(1.2345), "1.234");
        assert_eq!(num(f64::NAN), "-");
    }
}
