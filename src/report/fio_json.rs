//! fio's JSON output (`--output-format=json`, and `json+` with latency
//! bins), key for key and in fio 3.33's order, plus an `"elevator"` object.
//!
//! The document is built as a small ordered tree so that [`to_string`] can
//! print it byte for byte as fio's `json.c` does (`"key" : value`, two-space
//! indent, floats as `%f`), while [`render`] hands the same tree to callers
//! as a `serde_json::Value`.

use std::fmt::Write;

use super::numfmt::ctime;
use super::{lat_dist, layout, Entry, GroupRun, JobStatus, RunReport, DDIR_NAMES};
use crate::report::fio_text::version_string;
use crate::sim::time::NS_PER_SEC;
use crate::stats::{Histogram, IoStat, JobStats};

/// A JSON value with fio's int/float distinction kept.
#[derive(Clone, Debug, PartialEq)]
pub enum J {
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
    /// Only in elevator's own object (fio's JSON has no booleans or nulls).
    Bool(bool),
    Null,
    /// A number printed exactly as given (a float that must round-trip).
    Num(String),
}

impl J {
    /// A serde value as a tree: numbers keep their exact text.
    pub fn from_value(v: &serde_json::Value) -> J {
        use serde_json::Value;
        match v {
            Value::Null => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => J::UInt(u),
                (None, Some(i)) => J::Int(i),
                _ => J::Num(n.to_string()),
            },
            Value::String(s) => J::Str(s.clone()),
            Value::Array(a) => J::Arr(a.iter().map(J::from_value).collect()),
            Value::Object(o) => J::Obj(
                o.iter()
                    .map(|(k, v)| (k.clone(), J::from_value(v)))
                    .collect(),
            ),
        }
    }
}

/// Ordered object builder.
#[derive(Default)]
struct Obj(Vec<(String, J)>);

impl Obj {
    fn new() -> Obj {
        Obj(Vec::new())
    }
    fn uint(&mut self, k: &str, v: u64) -> &mut Self {
        self.0.push((k.to_string(), J::UInt(v)));
        self
    }
    fn int(&mut self, k: &str, v: i64) -> &mut Self {
        self.0.push((k.to_string(), J::Int(v)));
        self
    }
    fn float(&mut self, k: &str, v: f64) -> &mut Self {
        self.0.push((k.to_string(), J::Float(v)));
        self
    }
    /// fio drops string values that are empty (its json string constructor
    /// returns NULL for them, so the pair is never added).
    fn fio_str(&mut self, k: &str, v: &str) -> &mut Self {
        if !v.is_empty() {
            self.0.push((k.to_string(), J::Str(v.to_string())));
        }
        self
    }
    fn str(&mut self, k: &str, v: &str) -> &mut Self {
        self.0.push((k.to_string(), J::Str(v.to_string())));
        self
    }
    fn val(&mut self, k: &str, v: J) -> &mut Self {
        self.0.push((k.to_string(), v));
        self
    }
    fn done(self) -> J {
        J::Obj(self.0)
    }
}

/// The fio JSON document as a `serde_json::Value` (key order preserved).
pub fn render(report: &RunReport) -> serde_json::Value {
    to_value(&tree(report, false))
}

/// The same with json+ latency bins.
pub fn render_plus(report: &RunReport) -> serde_json::Value {
    to_value(&tree(report, true))
}

/// The document printed exactly as fio prints it, with trailing newline.
pub fn to_string(report: &RunReport) -> String {
    print(&tree(report, false))
}

/// json+: as [`to_string`] plus a `"bins"` object (bucket value in ns →
/// count) in every latency object that has percentiles.
pub fn to_string_plus(report: &RunReport) -> String {
    print(&tree(report, true))
}

/// Print a tree in fio's layout.
pub fn print(j: &J) -> String {
    let mut out = String::new();
    print_value(&mut out, j, 0);
    out.push('\n');
    out
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn escape(out: &mut String, s: &str) {
    // fio escapes only backslash and double quote; control characters are
    // escaped too so the output stays valid JSON.
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

fn print_value(out: &mut String, j: &J, level: usize) {
    match j {
        J::Int(v) => {
            let _ = write!(out, "{}", v);
        }
        J::UInt(v) => {
            let _ = write!(out, "{}", v);
        }
        J::Float(v) => {
            let v = if v.is_finite() { *v } else { 0.0 };
            let _ = write!(out, "{:.6}", v);
        }
        J::Str(s) => {
            out.push('"');
            escape(out, s);
            out.push('"');
        }
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Null => out.push_str("null"),
        J::Num(n) => out.push_str(n),
        J::Obj(pairs) => {
            out.push_str("{\n");
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                out.push('"');
                escape(out, k);
                out.push_str("\" : ");
                print_value(out, v, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
        J::Arr(vals) => {
            out.push_str("[\n");
            for (i, v) in vals.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                print_value(out, v, level + 1);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
    }
}

fn to_value(j: &J) -> serde_json::Value {
    use serde_json::Value;
    match j {
        J::Int(v) => Value::from(*v),
        J::UInt(v) => Value::from(*v),
        J::Float(v) => serde_json::Number::from_f64(*v)
            .map(Value::Number)
            .unwrap_or_else(|| Value::from(0.0)),
        J::Str(s) => Value::String(s.clone()),
        J::Obj(pairs) => {
            let mut m = serde_json::Map::new();
            for (k, v) in pairs {
                m.insert(k.clone(), to_value(v));
            }
            Value::Object(m)
        }
        J::Arr(vals) => Value::Array(vals.iter().map(to_value).collect()),
        J::Bool(b) => Value::Bool(*b),
        J::Null => Value::Null,
        J::Num(n) => serde_json::from_str(n).unwrap_or(Value::Null),
    }
}

fn options(list: &[(String, String)]) -> J {
    let mut o = Obj::new();
    for (k, v) in list {
        o.fio_str(k, v);
    }
    o.done()
}

/// The whole document as a tree.
pub fn tree(report: &RunReport, plus: bool) -> J {
    let lay = layout(report);
    let mut root = Obj::new();
    root.fio_str("fio version", &version_string(report))
        .uint("timestamp", report.timestamp)
        .uint("timestamp_ms", report.timestamp.saturating_mul(1000))
        .fio_str("time", &ctime(report.timestamp));
    if !report.global_options.is_empty() {
        root.val("global options", options(&report.global_options));
    }
    let jobs: Vec<J> = lay
        .entries
        .iter()
        .map(|e| job_json(e, &lay.groups[e.groupid as usize], plus))
        .collect();
    root.val("jobs", J::Arr(jobs));
    if !report.disk_util.is_empty() {
        let arr = report
            .disk_util
            .iter()
            .map(|du| {
                let mut o = Obj::new();
                o.fio_str("name", &du.name)
                    .uint("read_ios", du.read_ios)
                    .uint("write_ios", du.write_ios)
                    .uint("read_merges", du.read_merges)
                    .uint("write_merges", du.write_merges)
                    .uint("read_ticks", du.read_ticks)
                    .uint("write_ticks", du.write_ticks)
                    .uint("in_queue", du.in_queue)
                    .float("util", du.util.min(100.0));
                o.done()
            })
            .collect();
        root.val("disk_util", J::Arr(arr));
    }
    root.val("elevator", elevator_json(report));
    root.done()
}

fn elevator_json(report: &RunReport) -> J {
    let m = &report.elevator;
    let mut o = Obj::new();
    o.str("version", &m.version)
        .str("mode", &m.mode)
        .str("scheduler", &m.scheduler)
        .str("device", &m.device);
    if let Some(k) = &m.kernel {
        o.str("kernel", k);
    }
    let mut knobs = Obj::new();
    for (k, v) in &m.knobs {
        knobs.str(k, v);
    }
    o.val("knobs", knobs.done()).uint("seed", m.seed);
    let switches = m
        .switches
        .iter()
        .enumerate()
        .map(|(i, (at, name))| {
            let mut s = Obj::new();
            s.uint("at_ns", *at).str("scheduler", name);
            // What became of it, when known (simulation).
            if let Some(o) = m.switch_log.get(i) {
                use super::SwitchOutcome as O;
                let (outcome, start, done) = match *o {
                    O::Switched { drain_start, done } => {
                        ("switched", Some(drain_start), Some(done))
                    }
                    O::AlreadyActive => ("already_active", None, None),
                    O::Superseded { drain_start } => ("superseded", Some(drain_start), None),
                    O::Unfinished { drain_start, .. } => ("unfinished", Some(drain_start), None),
                    O::NotReached { .. } => ("not_reached", None, None),
                };
                s.str("outcome", outcome);
                if let Some(t) = start {
                    s.uint("drain_start_ns", t);
                }
                if let Some(t) = done {
                    s.uint("done_ns", t);
                }
            }
            s.done()
        })
        .collect();
    o.val("switches", J::Arr(switches));
    if let Some(ds) = &m.disk_stats {
        let mut d = Obj::new();
        for (k, v) in ds.named() {
            d.uint(k, v);
        }
        o.val("disk_stats", d.done());
    }
    if let Some(pc) = &m.page_cache {
        o.val("page_cache", page_cache(pc));
    }
    if let Some(fs) = &m.fs {
        o.val("fs", fs_report(fs));
    }
    if !m.requests.is_empty() {
        let rqs = m
            .requests
            .iter()
            .map(|r| {
                let mut t = Obj::new();
                t.uint("at_ns", r.at)
                    .str("rwbs", &r.rwbs())
                    .uint("sector", r.sector)
                    .uint("bytes", r.bytes)
                    .uint("pid", r.pid as u64);
                t.done()
            })
            .collect();
        o.val("requests", J::Arr(rqs));
    }
    let not_modelled: Vec<J> = report
        .jobs
        .iter()
        .filter_map(|j| match &j.status {
            JobStatus::NotModelled(r) => {
                let mut n = Obj::new();
                n.str("jobname", &j.spec.name).str("reason", r);
                Some(n.done())
            }
            JobStatus::Ran => None,
        })
        .collect();
    if !not_modelled.is_empty() {
        o.val("not_modelled", J::Arr(not_modelled));
    }
    if !m.warnings.is_empty() {
        o.val(
            "warnings",
            J::Arr(m.warnings.iter().map(|w| J::Str(w.clone())).collect()),
        );
    }
    if let Some(spec) = &m.spec {
        // The run's description, so `elevator run --spec` can repeat it.
        o.val("spec", J::from_value(spec));
    }
    o.done()
}

fn job_json(e: &Entry, rs: &GroupRun, plus: bool) -> J {
    let ts = &e.stats;
    let mut o = Obj::new();
    o.fio_str("jobname", e.name)
        .int("groupid", e.groupid as i64)
        .int("error", 0)
        .uint("eta", 0)
        // fio: seconds, rounded up.
        .uint("elapsed", e.elapsed_ns.div_ceil(NS_PER_SEC));
    if !e.job_options.is_empty() {
        o.val("job options", options(e.job_options));
    }
    for (d, name) in DDIR_NAMES.iter().enumerate() {
        o.val(name, dir_json(ts, rs, d, plus));
    }
    let mut sync = Obj::new();
    sync.uint("total_ios", ts.sync_total).val(
        "lat_ns",
        lat_json(
            ts,
            ts.opts.lat_percentiles || ts.opts.clat_percentiles,
            &ts.sync,
            &ts.sync_hist,
            plus,
        ),
    );
    o.val("sync", sync.done());
    let runt = ts.total_run_time_ms;
    let (usr, sys) = if runt > 0 {
        (
            ts.usr_time_ms as f64 * 100.0 / runt as f64,
            ts.sys_time_ms as f64 * 100.0 / runt as f64,
        )
    } else {
        (0.0, 0.0)
    };
    o.uint("job_runtime", runt)
        .float("usr_cpu", usr)
        .float("sys_cpu", sys)
        .uint("ctx", ts.ctx)
        .uint("majf", ts.majf)
        .uint("minf", ts.minf);
    let ios: u64 = ts.dirs.iter().map(|d| d.total_ios).sum();
    let level_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let batch_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    o.val(
        "iodepth_level",
        floats(&level_keys, &super::dist(&ts.io_u_map, ios)),
    );
    o.val(
        "iodepth_submit",
        floats(&batch_keys, &super::dist(&ts.io_u_submit, ts.total_submit)),
    );
    o.val(
        "iodepth_complete",
        floats(
            &batch_keys,
            &super::dist(&ts.io_u_complete, ts.total_complete),
        ),
    );
    let lat_keys = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    o.val(
        "latency_ns",
        floats(&lat_keys[..10], &lat_dist(&ts.lat_n, ts)),
    );
    o.val(
        "latency_us",
        floats(&lat_keys[..10], &lat_dist(&ts.lat_u, ts)),
    );
    o.val("latency_ms", floats(&lat_keys, &lat_dist(&ts.lat_m, ts)));
    let opts = &ts.opts;
    if opts.latency_depth > 0 {
        o.uint("latency_depth", opts.latency_depth as u64)
            .uint("latency_target", opts.latency_target)
            .float("latency_percentile", opts.latency_percentile)
            .uint("latency_window", opts.latency_window);
    }
    if let Some(desc) = e.description {
        o.fio_str("desc", desc);
    }
    o.done()
}

fn floats(keys: &[&str], vals: &[f64]) -> J {
    let mut o = Obj::new();
    for (k, v) in keys.iter().zip(vals.iter()) {
        o.float(k, *v);
    }
    o.done()
}

/// fio's `add_ddir_lat_json`.
fn lat_json(ts: &JobStats, percentiles: bool, st: &IoStat, h: &Histogram, plus: bool) -> J {
    let (min, max, mean, dev) = st.calc().unwrap_or((0, 0, 0.0, 0.0));
    let mut o = Obj::new();
    o.uint("min", min)
        .uint("max", max)
        .float("mean", mean)
        .float("stddev", dev)
        .uint("N", st.samples);
    if percentiles && st.samples > 0 {
        let list = &ts.opts.percentile_list;
        let vals = h.percentiles(st.samples, list);
        let mut p = Obj::new();
        for (pc, v) in list.iter().zip(vals.iter()) {
            p.uint(&format!("{:.6}", pc), *v);
        }
        o.val("percentile", p.done());
        // fio always has bins here; stats imported without a histogram
        // (lab mode) have none, and an empty object would trip readers such
        // as fio_jsonplus_clat2csv.
        let bins = h.bins();
        if plus && !bins.is_empty() {
            let mut b = Obj::new();
            for (val, n) in bins {
                b.uint(&val.to_string(), n);
            }
            o.val("bins", b.done());
        }
    }
    o.done()
}

/// fio's `add_ddir_status_json` for read/write/trim.
fn dir_json(ts: &JobStats, rs: &GroupRun, d: usize, plus: bool) -> J {
    let ds = &ts.dirs[d];
    let runt = ds.runtime_ms;
    let bw_bytes = (1000 * ds.io_bytes).checked_div(runt).unwrap_or(0);
    let iops = if runt > 0 {
        1000.0 * ds.total_ios as f64 / runt as f64
    } else {
        0.0
    };
    let opts = &ts.opts;
    let mut o = Obj::new();
    o.uint("io_bytes", ds.io_bytes)
        .uint("io_kbytes", ds.io_bytes >> 10)
        .uint("bw_bytes", bw_bytes)
        .uint("bw", bw_bytes / 1024)
        .float("iops", iops)
        .uint("runtime", runt)
        .uint("total_ios", ds.total_ios)
        .uint("short_ios", ds.short_ios)
        .uint("drop_ios", ds.drop_ios)
        .val(
            "slat_ns",
            lat_json(ts, opts.slat_percentiles, &ds.slat, &ds.slat_hist, plus),
        )
        .val(
            "clat_ns",
            lat_json(ts, opts.clat_percentiles, &ds.clat, &ds.clat_hist, plus),
        )
        .val(
            "lat_ns",
            lat_json(ts, opts.lat_percentiles, &ds.lat, &ds.lat_hist, plus),
        );
    let (min, max, agg, mean, dev) = match ds.bw.calc() {
        Some((min, max, mean, dev)) => (min, max, rs.agg_percent(d, mean), mean, dev),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    o.uint("bw_min", min)
        .uint("bw_max", max)
        .float("bw_agg", agg)
        .float("bw_mean", mean)
        .float("bw_dev", dev)
        .uint("bw_samples", ds.bw.samples);
    let (min, max, mean, dev) = ds.iops.calc().unwrap_or((0, 0, 0.0, 0.0));
    o.uint("iops_min", min)
        .uint("iops_max", max)
        .float("iops_mean", mean)
        .float("iops_stddev", dev)
        .uint("iops_samples", ds.iops.samples);
    o.done()
}

/// The file system: mount options and the journal's work.
fn fs_report(fs: &super::FsReport) -> J {
    let j = &fs.journal;
    let mut o = Obj::new();
    o.str("mount", &fs.mount)
        .uint("journal_start_sector", fs.journal_start_sector)
        .uint("journal_blocks", fs.journal_blocks)
        .uint("commits", j.commits)
        .uint("timer_commits", j.timer_commits)
        .uint("sync_commits", j.sync_commits)
        .uint("size_commits", j.size_commits)
        .uint("log_blocks", j.log_blocks)
        .uint("commit_blocks", j.commit_blocks)
        .uint("superblock_writes", j.superblock_writes)
        .uint("flushes", j.flushes)
        .uint("checkpoint_blocks", j.checkpoint_blocks);
    o.done()
}

/// The page-cache view: thresholds, peaks and totals in KiB (`/proc/meminfo`
/// units), the `vm.*` sysctls, per-job throttled time, and Dirty/Writeback
/// samples over time.
fn page_cache(pc: &super::PageCacheReport) -> J {
    let v = &pc.view;
    let kb = |pages: u64| pages * 4;
    let mut o = Obj::new();
    o.uint("capacity_kb", kb(v.capacity))
        .uint("background_thresh_kb", kb(v.bg_thresh))
        .uint("dirty_thresh_kb", kb(v.thresh))
        .uint("peak_dirty_kb", kb(v.peak_dirty))
        .uint("peak_writeback_kb", kb(v.peak_writeback))
        .uint("written_back_kb", kb(v.written_pages))
        .uint("read_in_kb", kb(v.read_pages))
        .uint("evicted_kb", kb(v.evicted_pages))
        .uint("cancelled_kb", kb(v.cancelled_pages));
    let mut vm = Obj::new();
    for (k, val) in &pc.vm {
        vm.uint(k, *val);
    }
    o.val("vm", vm.done());
    let throttled = pc
        .throttled_ns
        .iter()
        .map(|(name, ns)| {
            let mut t = Obj::new();
            t.str("jobname", name).uint("throttled_ns", *ns);
            t.done()
        })
        .collect();
    o.val("throttled", J::Arr(throttled));
    o.uint("sample_every_ns", v.sample_every);
    let samples = v
        .samples
        .iter()
        .map(|x| {
            let mut t = Obj::new();
            t.uint("at_ns", x.at)
                .uint("Dirty_kb", kb(x.dirty_pages))
                .uint("Writeback_kb", kb(x.writeback_pages))
                .uint("Cached_kb", kb(x.cached_pages));
            t.done()
        })
        .collect();
    o.val("samples", J::Arr(samples));
    o.done()
}
