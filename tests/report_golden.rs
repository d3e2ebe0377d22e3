//! Golden tests for fio-format output: runs built from deterministic
//! synthetic samples are rendered as text, JSON, json+ and terse and
//! compared byte for byte with files in tests/golden/. `UPDATE_GOLDEN=1
//! cargo test --test report_golden` rewrites them. A second group of tests
//! rebuilds blocks of real fio 3.33 output from the numbers fio printed and
//! checks that the formatter reproduces them exactly; json+ output is also
//! checked with fio's own `fio_jsonplus_clat2csv --validate` when installed.

mod lab_support;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;

use elevator::block::stat::DiskStatFields;
use elevator::job::{BlockSizes, Ddir, EngineKind, IoEngine, JobSpec, RwPattern};
use elevator::report::{
    fio_json, fio_terse, fio_text, DiskUtil, ElevatorMeta, JobResult, JobStatus, RunReport,
};
use elevator::sim::time::{Ns, NS_PER_MS, NS_PER_SEC, NS_PER_US};
use elevator::stats::{IoStat, JobStats};

/// Deterministic generator (PCG-style LCG), no external state.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.next() as f64 / (1u64 << 31) as f64
    }
    /// Long-tailed latency around `base` ns: mostly near base, sometimes
    /// several times it.
    fn latency(&mut self, base: u64) -> u64 {
        let u = self.unit();
        let tail = if self.next().is_multiple_of(100) {
            8.0
        } else {
            1.0
        };
        (base as f64 * (0.7 + 0.6 * u) * tail) as u64 + self.next() % 97
    }
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compare with (or with UPDATE_GOLDEN=1, write) tests/golden/<name>.
fn check_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    if expected != actual {
        let first = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{} differs at line {}:\nexpected: {:?}\nactual:   {:?}",
            path.display(),
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

fn meta() -> ElevatorMeta {
    ElevatorMeta {
        version: "0.1.0".into(),
        mode: "simulation".into(),
        scheduler: "mq-deadline".into(),
        device: "nvme0n1".into(),
        knobs: vec![
            ("nr_requests".into(), "64".into()),
            ("iosched/fifo_batch".into(), "16".into()),
            ("iosched/read_expire".into(), "500".into()),
        ],
        seed: 42,
        switches: vec![],
        spec: None,
        warnings: Vec::new(),
        switch_log: vec![],
        disk_stats: None,
        kernel: None,
        page_cache: None,
        cpu_busy_ns: None,
        counters: None,
        fs: None,
        requests: Vec::new(),
    }
}

fn ran(spec: JobSpec, stats: JobStats, elapsed_ns: Ns) -> JobResult {
    JobResult {
        spec,
        stats,
        status: JobStatus::Ran,
        elapsed_ns,
    }
}

/// A sync-engine job: one I/O at a time until `runtime`.
fn sync_job(spec: &JobSpec, rng: &mut Lcg, base_lat: u64, runtime: Ns) -> (JobStats, Ns) {
    let mut st = JobStats::new(spec);
    st.begin(0);
    let mut now = 0;
    let mut n = 0u64;
    while now < runtime {
        let clat = rng.latency(base_lat);
        let lat = clat + 180 + rng.next() % 60;
        now += lat;
        st.record_submit(1, 1);
        let ddir = match spec.rw {
            RwPattern::RandWrite | RwPattern::Write => Ddir::Write,
            RwPattern::Trim | RwPattern::RandTrim => Ddir::Trim,
            _ => Ddir::Read,
        };
        st.record_io(ddir, 4096, None, clat, lat, now);
        st.record_complete(1);
        n += 1;
        if spec.fsync > 0 && ddir == Ddir::Write && n.is_multiple_of(spec.fsync as u64) {
            let s = rng.latency(base_lat * 3);
            now += s;
            st.record_sync(s);
        }
        now += 1500;
    }
    st.end(now);
    (st, now)
}

/// (completion time, slot, issue time, submit time, ddir index)
type InFlight = (Ns, u32, Ns, Ns, usize);

/// An async job with `iodepth` slots kept busy (closed loop), reads with
/// probability `rwmixread`%, starting at `start` (after ramp).
fn async_job(
    spec: &JobSpec,
    rng: &mut Lcg,
    base_lat: u64,
    start: Ns,
    runtime: Ns,
) -> (JobStats, Ns) {
    let mut st = JobStats::new(spec);
    st.begin(start);
    let depth = spec.iodepth;
    let mut heap: BinaryHeap<Reverse<InFlight>> = BinaryHeap::new();
    let mut t = start;
    let draw_ddir = |rng: &mut Lcg| {
        if (rng.next() % 100) < spec.rwmixread as u64 {
            0
        } else {
            1
        }
    };
    for slot in 0..depth {
        t += 900;
        let slat = 600 + rng.next() % 900;
        let d = draw_ddir(rng);
        heap.push(Reverse((
            t + slat + rng.latency(base_lat),
            slot,
            t,
            t + slat,
            d,
        )));
        st.record_submit(1, slot + 1);
    }
    let end = start + runtime;
    let mut last = t;
    while let Some(Reverse((done, slot, issued, submitted, d))) = heap.pop() {
        let ddir = if d == 0 { Ddir::Read } else { Ddir::Write };
        let bytes = match &spec.bs[ddir.index()] {
            BlockSizes::Fixed(b) => *b,
            _ => 4096,
        };
        st.record_complete(1);
        st.record_io(
            ddir,
            bytes,
            Some(submitted - issued),
            done - submitted,
            done - issued,
            done,
        );
        last = done;
        if done < end {
            let slat = 600 + rng.next() % 900;
            let nd = draw_ddir(rng);
            let inflight = heap.len() as u32 + 1;
            st.record_submit(1, inflight);
            heap.push(Reverse((
                done + slat + rng.latency(base_lat),
                slot,
                done,
                done + slat,
                nd,
            )));
        }
    }
    st.end(last);
    (st, last)
}

fn psync_report() -> RunReport {
    let mut spec = JobSpec::with_defaults("randread-4k");
    spec.rw = RwPattern::RandRead;
    spec.direct = true;
    spec.runtime = Some(10 * NS_PER_SEC);
    spec.time_based = true;
    spec.job_options = vec![
        ("rw".into(), "randread".into()),
        ("direct".into(), "1".into()),
        ("runtime".into(), "10".into()),
        ("time_based".into(), "".into()),
    ];
    let mut rng = Lcg(1);
    let (st, end) = sync_job(&spec, &mut rng, 85 * NS_PER_US, 10 * NS_PER_SEC);
    RunReport {
        global_options: vec![("filename".into(), "/dev/nvme0n1".into())],
        jobs: vec![ran(spec, st, end + 2 * NS_PER_MS)],
        disk_util: vec![DiskUtil {
            name: "nvme0n1".into(),
            read_ios: 112_060,
            write_ios: 0,
            read_sectors: 896_480,
            write_sectors: 0,
            read_merges: 0,
            write_merges: 0,
            read_ticks: 9_310,
            write_ticks: 0,
            in_queue: 9_310,
            util: 99.123_456,
        }],
        elevator: meta(),
        timestamp: 1_700_000_000,
    }
}

fn libaio_report() -> RunReport {
    let mut jobs = Vec::new();
    let mut rng = Lcg(7);
    for clone in 0..4u32 {
        let mut spec = JobSpec::with_defaults("mixed-qd32");
        spec.clone_index = clone;
        spec.job_index = clone;
        spec.numjobs = 4;
        spec.group_reporting = true;
        spec.rw = RwPattern::RandRw;
        spec.rwmixread = 70;
        spec.bs = [
            BlockSizes::Fixed(4096),
            BlockSizes::Fixed(8192),
            BlockSizes::Fixed(4096),
        ];
        spec.iodepth = 32;
        spec.direct = true;
        spec.ioengine = IoEngine {
            name: "libaio".into(),
            kind: EngineKind::Async,
        };
        spec.ramp_time = 500 * NS_PER_MS;
        spec.job_options = vec![
            ("rw".into(), "randrw".into()),
            ("rwmixread".into(), "70".into()),
            ("bs".into(), "4k,8k".into()),
            ("numjobs".into(), "4".into()),
        ];
        let (st, end) = async_job(
            &spec,
            &mut rng,
            400 * NS_PER_US,
            500 * NS_PER_MS,
            3 * NS_PER_SEC,
        );
        jobs.push(ran(spec, st, end));
    }
    RunReport {
        global_options: vec![
            ("ioengine".into(), "libaio".into()),
            ("iodepth".into(), "32".into()),
            ("direct".into(), "1".into()),
            ("group_reporting".into(), "".into()),
        ],
        jobs,
        disk_util: vec![DiskUtil {
            name: "sda".into(),
            read_ios: 401_122,
            write_ios: 171_907,
            read_sectors: 3_208_976,
            write_sectors: 2_750_512,
            read_merges: 12,
            write_merges: 3_004,
            read_ticks: 159_771,
            write_ticks: 69_011,
            in_queue: 228_790,
            util: 100.0,
        }],
        elevator: ElevatorMeta {
            scheduler: "bfq".into(),
            device: "sda".into(),
            switches: vec![(1_250_000_000, "kyber".into())],
            ..meta()
        },
        timestamp: 1_718_334_968,
    }
}

fn multi_group_report() -> RunReport {
    let mut rng = Lcg(99);
    // Group 0: HDD-like writes with fsync every 16, custom percentiles, lat
    // and slat percentiles too.
    let mut w = JobSpec::with_defaults("hdd-write");
    w.description = Some("sequential writer, fsync every 16".into());
    w.rw = RwPattern::Write;
    w.fsync = 16;
    w.lat_percentiles = true;
    w.percentile_list = Some(vec![99.999, 50.0, 99.0, 90.0, 99.9]);
    w.job_options = vec![
        ("rw".into(), "write".into()),
        ("fsync".into(), "16".into()),
        ("lat_percentiles".into(), "1".into()),
        ("percentile_list".into(), "99.999:50:99:90:99.9".into()),
    ];
    let (ws, wend) = sync_job(&w, &mut rng, 8 * NS_PER_MS, 4 * NS_PER_SEC);
    // Group 1: a trim job and a job whose engine is not modelled.
    let mut t = JobSpec::with_defaults("discard");
    t.rw = RwPattern::RandTrim;
    t.group_id = 1;
    t.job_index = 1;
    t.stonewall = true;
    t.clat_percentiles = false;
    t.job_options = vec![
        ("rw".into(), "randtrim".into()),
        ("stonewall".into(), "".into()),
    ];
    let (tst, tend) = sync_job(&t, &mut rng, 60 * NS_PER_US, NS_PER_SEC / 2);
    let mut net = JobSpec::with_defaults("netsend");
    net.group_id = 1;
    net.job_index = 2;
    net.ioengine = IoEngine {
        name: "net".into(),
        kind: EngineKind::NotModelled,
    };
    let net_stats = JobStats::new(&net);
    // Group 2: two sequential readers without group_reporting at qd 4.
    let mut jobs = vec![
        ran(w, ws, wend),
        ran(t, tst, tend),
        JobResult {
            spec: net,
            stats: net_stats,
            status: JobStatus::NotModelled("ioengine=net sends to a network peer".into()),
            elapsed_ns: 0,
        },
    ];
    for i in 0..2u32 {
        let mut r = JobSpec::with_defaults(&format!("seqread{}", i));
        r.rw = RwPattern::Read;
        r.group_id = 2;
        r.job_index = 3 + i;
        r.iodepth = 4;
        r.rwmixread = 100;
        r.bs = [
            BlockSizes::Fixed(131_072),
            BlockSizes::Fixed(131_072),
            BlockSizes::Fixed(131_072),
        ];
        r.ioengine = IoEngine {
            name: "io_uring".into(),
            kind: EngineKind::Async,
        };
        let (st, end) = async_job(
            &r,
            &mut rng,
            2 * NS_PER_MS,
            0,
            2 * NS_PER_SEC + i as u64 * 300 * NS_PER_MS,
        );
        jobs.push(ran(r, st, end));
    }
    RunReport {
        global_options: vec![],
        jobs,
        disk_util: vec![
            DiskUtil {
                name: "sdb".into(),
                read_ios: 6_019,
                write_ios: 498,
                read_merges: 0,
                write_merges: 31,
                read_ticks: 23_880,
                write_ticks: 3_990,
                in_queue: 27_870,
                util: 97.5,
                ..DiskUtil::default()
            },
            DiskUtil {
                name: "nvme1n1".into(),
                util: 0.004,
                ..DiskUtil::default()
            },
        ],
        elevator: ElevatorMeta {
            mode: "lab".into(),
            scheduler: "none".into(),
            device: "sdb".into(),
            knobs: vec![],
            ..meta()
        },
        timestamp: 0,
    }
}

fn check_all(name: &str, report: &RunReport) {
    check_golden(&format!("{name}.txt"), &fio_text::render_full(report));
    check_golden(&format!("{name}.json"), &fio_json::to_string(report));
    check_golden(
        &format!("{name}.plus.json"),
        &fio_json::to_string_plus(report),
    );
    check_golden(&format!("{name}.terse"), &fio_terse::render(report));
}

#[test]
fn golden_psync_randread() {
    check_all("psync_randread", &psync_report());
}

/// The `elevator` object with `/sys/block/DEV/stat` of a simulation: the
/// stat.rst names in the file's order, integers, after `switches`.
#[test]
fn golden_elevator_disk_stats() {
    let mut r = psync_report();
    r.elevator.disk_stats = Some(DiskStatFields {
        read_ios: 112_060,
        read_merges: 0,
        read_sectors: 896_480,
        read_ticks: 9_310,
        write_ios: 45,
        write_merges: 3,
        write_sectors: 360,
        write_ticks: 51,
        in_flight: 0,
        io_ticks: 9_912,
        time_in_queue: 9_404,
        discard_ios: 1,
        discard_merges: 0,
        discard_sectors: 2_048,
        discard_ticks: 2,
        flush_ios: 20,
        flush_ticks: 41,
    });
    let json = fio_json::to_string(&r);
    check_golden("psync_randread.disk_stats.json", &json);
    // Only the elevator object differs from the report without them.
    let plain = fio_json::to_string(&psync_report());
    let cut = |s: &str| s[..s.find("\"elevator\"").unwrap()].to_string();
    assert_eq!(cut(&json), cut(&plain));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let ds = v["elevator"]["disk_stats"].as_object().unwrap();
    let keys: Vec<&str> = ds.keys().map(|k| k.as_str()).collect();
    assert_eq!(keys.len(), 17);
    assert_eq!(ds["flush_ticks"], 41);
}

#[test]
fn golden_libaio_group_reporting() {
    check_all("libaio_group", &libaio_report());
}

#[test]
fn golden_multi_group() {
    check_all("multi_group", &multi_group_report());
}

#[test]
fn json_text_and_value_agree() {
    for r in [psync_report(), libaio_report(), multi_group_report()] {
        let text = fio_json::to_string(&r);
        let parsed: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        let value = fio_json::render(&r);
        // Same keys in the same order everywhere; numbers equal to %f precision.
        assert_same_shape(&parsed, &value, "$");
    }
}

fn assert_same_shape(a: &serde_json::Value, b: &serde_json::Value, path: &str) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: Vec<&String> = x.keys().collect();
            let ky: Vec<&String> = y.keys().collect();
            assert_eq!(kx, ky, "keys at {path}");
            for (k, v) in x {
                assert_same_shape(v, &y[k], &format!("{path}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "len at {path}");
            for (i, (v, w)) in x.iter().zip(y.iter()).enumerate() {
                assert_same_shape(v, w, &format!("{path}[{i}]"));
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!(
                (x - y).abs() <= 5e-7 * y.abs().max(1.0),
                "{path}: {x} vs {y}"
            );
        }
        _ => assert_eq!(a, b, "at {path}"),
    }
}

#[test]
fn fio_json_key_order() {
    let v = fio_json::render(&psync_report());
    let top: Vec<&str> = v.as_object().unwrap().keys().map(|s| s.as_str()).collect();
    assert_eq!(
        top,
        [
            "fio version",
            "timestamp",
            "timestamp_ms",
            "time",
            "global options",
            "jobs",
            "disk_util",
            "elevator"
        ]
    );
    let job = &v["jobs"][0];
    let keys: Vec<&str> = job
        .as_object()
        .unwrap()
        .keys()
        .map(|s| s.as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "jobname",
            "groupid",
            "error",
            "eta",
            "elapsed",
            "job options",
            "read",
            "write",
            "trim",
            "sync",
            "job_runtime",
            "usr_cpu",
            "sys_cpu",
            "ctx",
            "majf",
            "minf",
            "iodepth_level",
            "iodepth_submit",
            "iodepth_complete",
            "latency_ns",
            "latency_us",
            "latency_ms",
            "latency_depth",
            "latency_target",
            "latency_percentile",
            "latency_window"
        ]
    );
    let read: Vec<&str> = job["read"]
        .as_object()
        .unwrap()
        .keys()
        .map(|s| s.as_str())
        .collect();
    assert_eq!(
        read,
        [
            "io_bytes",
            "io_kbytes",
            "bw_bytes",
            "bw",
            "iops",
            "runtime",
            "total_ios",
            "short_ios",
            "drop_ios",
            "slat_ns",
            "clat_ns",
            "lat_ns",
            "bw_min",
            "bw_max",
            "bw_agg",
            "bw_mean",
            "bw_dev",
            "bw_samples",
            "iops_min",
            "iops_max",
            "iops_mean",
            "iops_stddev",
            "iops_samples"
        ]
    );
    // psync: no slat; percentile keys are %f strings.
    assert_eq!(job["read"]["slat_ns"]["N"], 0);
    assert!(job["read"]["clat_ns"]["percentile"]["99.950000"].is_u64());
    // fio drops empty-valued options ("time_based" has no value here).
    assert!(job["job options"].get("time_based").is_none());
}

/// Set an IoStat from what fio printed (mean and stddev in ns).
fn stat(min: u64, max: u64, mean: f64, dev: f64, n: u64) -> IoStat {
    IoStat {
        min,
        max,
        mean,
        s: dev * dev * (n as f64 - 1.0),
        samples: n,
    }
}

/// Rebuild the stats behind a real fio 3.33 run (libaio randwrite, qd 32,
/// 120 s, from the OVHcloud fio guide) from the numbers fio printed, and
/// check that every line but the percentile table comes out identical.
#[test]
fn reproduces_real_fio_3_33_block() {
    let mut spec = JobSpec::with_defaults("rand-write");
    spec.rw = RwPattern::RandWrite;
    spec.iodepth = 32;
    let mut st = JobStats::new(&spec);
    let n = 4_803_938u64;
    let w = &mut st.dirs[1];
    w.io_bytes = n * 4096;
    w.total_ios = n;
    w.runtime_ms = 120_001;
    w.runtime_ns = 120_001 * NS_PER_MS;
    w.slat = stat(2_345, 812_345, 4_650.0, 1_890.0, n);
    w.clat = stat(53_123, 12_487_345, 794_130.0, 75_550.0, n);
    w.lat = stat(58_345, 12_492_345, 798_780.0, 75_530.0, n);
    w.bw = stat(159_904, 191_976, 160_265.41, 2_060.10, 239);
    w.iops = stat(39_976, 47_994, 40_066.36, 515.02, 239);
    st.opts.clat_percentiles = false;
    // lat (usec): 100=0.01%, 250=0.07%, 500=0.30%, 750=0.94%, 1000=98.56%
    // lat (msec): 2=0.10%, 4=0.01%, 10=0.01%, 20=0.01%
    // (fio's buckets need not add up to total_ios: these sum to 99.98%.)
    st.lat_u = [0, 0, 0, 0, 0, 3, 3_363, 14_412, 45_157, 4_734_762];
    st.lat_m = [4_804, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0];
    st.total_run_time_ms = 120_000;
    st.usr_time_ms = 8_844;
    st.sys_time_ms = 24_576;
    st.ctx = 4_614_084;
    st.minf = 10;
    st.io_u_map = [1, 1, 2, 4, 8, 16, 0];
    st.io_u_map[5] += n - 32;
    st.total_submit = 4_803_906;
    st.io_u_submit = [0, 4_803_906, 0, 0, 0, 0, 0];
    st.total_complete = 4_700_000;
    st.io_u_complete = [0, 4_699_000, 0, 0, 1_000, 0, 0];
    let report = RunReport {
        global_options: vec![],
        jobs: vec![JobResult {
            spec,
            stats: st,
            status: JobStatus::Ran,
            elapsed_ns: 121 * NS_PER_SEC,
        }],
        disk_util: vec![DiskUtil {
            name: "sda".into(),
            write_ios: 4_799_786,
            write_merges: 29,
            write_ticks: 3_797_382,
            in_queue: 3_797_385,
            util: 74.39,
            ..DiskUtil::default()
        }],
        elevator: meta(),
        timestamp: 1_731_727_267,
    };
    let expected = "
rand-write: (groupid=0, jobs=1): err= 0: pid=1000: Sat Nov 16 03:21:07 2024
  write: IOPS=40.0k, BW=156MiB/s (164MB/s)(18.3GiB/120001msec); 0 zone resets
    slat (usec): min=2, max=812, avg= 4.65, stdev= 1.89
    clat (usec): min=53, max=12487, avg=794.13, stdev=75.55
     lat (usec): min=58, max=12492, avg=798.78, stdev=75.53
   bw (  KiB/s): min=159904, max=191976, per=100.00%, avg=160265.41, stdev=2060.10, samples=239
   iops        : min=39976, max=47994, avg=40066.36, stdev=515.02, samples=239
  lat (usec)   : 100=0.01%, 250=0.07%, 500=0.30%, 750=0.94%, 1000=98.56%
  lat (msec)   : 2=0.10%, 4=0.01%, 10=0.01%, 20=0.01%
  cpu          : usr=7.37%, sys=20.48%, ctx=4614084, majf=0, minf=10
  IO depths    : 1=0.1%, 2=0.1%, 4=0.1%, 8=0.1%, 16=0.1%, 32=100.0%, >=64=0.0%
     submit    : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%
     complete  : 0=0.0%, 4=100.0%, 8=0.0%, 16=0.0%, 32=0.1%, 64=0.0%, >=64=0.0%
     issued rwts: total=0,4803938,0,0 short=0,0,0,0 dropped=0,0,0,0
     latency   : target=0, window=0, percentile=100.00%, depth=32

Run status group 0 (all jobs):
  WRITE: bw=156MiB/s (164MB/s), 156MiB/s-156MiB/s (164MB/s-164MB/s), io=18.3GiB (19.7GB), run=120001-120001msec

Disk stats (read/write):
  sda: ios=0/4799786, merge=0/29, ticks=0/3797382, in_queue=3797385, util=74.39%
";
    let actual = fio_text::render(&report);
    assert_eq!(actual, expected);
}

/// The percentile table of the same run: a histogram whose percentiles are
/// the bucket values fio showed prints the same five lines.
#[test]
fn reproduces_real_fio_percentile_table() {
    let usec = [
        742u64, 775, 783, 783, 791, 791, 799, 799, 799, 807, 807, 816, 840, 857, 1037, 1434, 4883,
    ];
    let plist = [
        1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9,
        99.95, 99.99,
    ];
    let n = 4_803_938u64;
    let mut spec = JobSpec::with_defaults("p");
    spec.rw = RwPattern::RandWrite;
    let mut st = JobStats::new(&spec);
    // For each distinct bucket put enough samples to reach the highest
    // percentile that maps to it; the last bucket takes the rest.
    let mut cum = 0u64;
    let mut i = 0;
    while i < usec.len() {
        let mut j = i;
        while j + 1 < usec.len() && usec[j + 1] == usec[i] {
            j += 1;
        }
        // Largest bucket value whose usec rounding is usec[i].
        let v = (0..)
            .map(|k| usec[i] * 1000 - k)
            .find(|v| {
                let b = elevator::stats::hist::idx_to_val(elevator::stats::hist::val_to_idx(*v));
                b == *v && b.div_ceil(1000) == usec[i]
            })
            .unwrap();
        let target = if j == usec.len() - 1 {
            n
        } else {
            (plist[j] / 100.0 * n as f64).ceil() as u64
        };
        st.dirs[1].clat_hist.add_count(v, target - cum);
        cum = target;
        i = j + 1;
    }
    st.dirs[1].clat = stat(53_123, 12_487_345, 794_130.0, 75_550.0, n);
    let pct = st.percentiles(elevator::stats::LatKind::Clat, Ddir::Write);
    let got: Vec<u64> = pct.iter().map(|(_, v)| v.div_ceil(1000)).collect();
    assert_eq!(got, usec);
    st.dirs[1].io_bytes = n * 4096;
    st.dirs[1].total_ios = n;
    st.dirs[1].runtime_ms = 120_001;
    let report = RunReport {
        global_options: vec![],
        jobs: vec![ran(spec, st, NS_PER_SEC)],
        disk_util: vec![],
        elevator: meta(),
        timestamp: 0,
    };
    let text = fio_text::render(&report);
    let table = "    clat percentiles (usec):
     |  1.00th=[  742],  5.00th=[  775], 10.00th=[  783], 20.00th=[  783],
     | 30.00th=[  791], 40.00th=[  791], 50.00th=[  799], 60.00th=[  799],
     | 70.00th=[  799], 80.00th=[  807], 90.00th=[  807], 95.00th=[  816],
     | 99.00th=[  840], 99.50th=[  857], 99.90th=[ 1037], 99.95th=[ 1434],
     | 99.99th=[ 4883]
";
    assert!(text.contains(table), "{text}");
}

/// A real fio 3.33 JSON direction object (falloc engine, sync: slat N=0),
/// rebuilt from its numbers.
#[test]
fn reproduces_real_fio_3_33_json_direction() {
    let mut spec = JobSpec::with_defaults("task_0");
    spec.rw = RwPattern::Write;
    spec.iodepth = 32;
    spec.clat_percentiles = false;
    let mut st = JobStats::new(&spec);
    let n = 33_554_432u64;
    let w = &mut st.dirs[1];
    w.io_bytes = 137_438_953_472;
    w.total_ios = n;
    w.runtime_ms = 70_475;
    w.clat = IoStat {
        min: 1778,
        max: 71068,
        mean: 1894.879822,
        s: 149.956185f64.powi(2) * (n - 1) as f64,
        samples: n,
    };
    w.lat = IoStat {
        min: 1812,
        max: 71102,
        mean: 1929.203544,
        s: 150.831850f64.powi(2) * (n - 1) as f64,
        samples: n,
    };
    w.bw = stat(1_823_696, 1_925_208, 1_904_624.685714, 19_260.493657, 140);
    w.iops = stat(455_924, 481_302, 476_156.171429, 4_815.123414, 140);
    st.total_run_time_ms = 70_474;
    let report = RunReport {
        global_options: vec![],
        jobs: vec![ran(spec, st, 70_475 * NS_PER_MS)],
        disk_util: vec![],
        elevator: meta(),
        timestamp: 1_718_334_968,
    };
    let text = fio_json::to_string(&report);
    let expected = r#"      "write" : {
        "io_bytes" : 137438953472,
        "io_kbytes" : 134217728,
        "bw_bytes" : 1950180255,
        "bw" : 1904472,
        "iops" : 476118.226321,
        "runtime" : 70475,
        "total_ios" : 33554432,
        "short_ios" : 0,
        "drop_ios" : 0,
        "slat_ns" : {
          "min" : 0,
          "max" : 0,
          "mean" : 0.000000,
          "stddev" : 0.000000,
          "N" : 0
        },
        "clat_ns" : {
          "min" : 1778,
          "max" : 71068,
          "mean" : 1894.879822,
          "stddev" : 149.956185,
          "N" : 33554432
        },
        "lat_ns" : {
          "min" : 1812,
          "max" : 71102,
          "mean" : 1929.203544,
          "stddev" : 150.831850,
          "N" : 33554432
        },
        "bw_min" : 1823696,
        "bw_max" : 1925208,
        "bw_agg" : 100.000000,
        "bw_mean" : 1904624.685714,
        "bw_dev" : 19260.493657,
        "bw_samples" : 140,
        "iops_min" : 455924,
        "iops_max" : 481302,
        "iops_mean" : 476156.171429,
        "iops_stddev" : 4815.123414,
        "iops_samples" : 140
      },
"#;
    assert!(text.contains(expected), "{text}");
    assert!(text.contains("\"time\" : \"Fri Jun 14 03:16:08 2024\",\n"));
    assert!(text.contains("      \"job_runtime\" : 70474,\n      \"usr_cpu\" : 0.000000,\n"));
    assert!(text.contains(
        "      \"latency_depth\" : 32,\n      \"latency_target\" : 0,\n      \"latency_percentile\" : 100.000000,\n      \"latency_window\" : 0\n    }\n  ],\n"
    ));
}

/// Not a correctness test: ns per `record_io` on the hot path. Run with
/// `cargo test --release --test report_golden -- --ignored --nocapture`.
#[test]
#[ignore]
fn bench_record_io() {
    let mut spec = JobSpec::with_defaults("bench");
    spec.lat_percentiles = true;
    let mut st = JobStats::new(&spec);
    st.begin(0);
    let n = 20_000_000u64;
    let mut rng = Lcg(5);
    let lats: Vec<u64> = (0..4096).map(|_| rng.latency(100_000)).collect();
    let t0 = std::time::Instant::now();
    let mut now = 0;
    for i in 0..n {
        let l = lats[(i & 4095) as usize];
        now += 2_000;
        st.record_io(Ddir::Read, 4096, Some(700), l, l + 700, now);
    }
    let el = t0.elapsed();
    st.end(now);
    assert_eq!(st.total_ios(Ddir::Read), n);
    println!(
        "record_io: {:.1} ns/call ({} calls, {} bw samples)",
        el.as_nanos() as f64 / n as f64,
        n,
        st.dirs[0].bw.samples
    );
}

/// `kb_base=1000`: SI units first, as fio prints them.
#[test]
fn kb_base_1000_prefers_si_units() {
    let mut spec = JobSpec::with_defaults("si");
    spec.kb_base = 1000;
    let mut st = JobStats::new(&spec);
    st.begin(0);
    // 10,240,000 B/s for 2 s in 4 KiB reads.
    let n = 5000u64;
    for i in 1..=n {
        st.record_io(Ddir::Read, 4096, None, 50_000, 50_000, i * 400_000);
    }
    st.end(2 * NS_PER_SEC);
    let report = RunReport {
        global_options: vec![],
        jobs: vec![ran(spec, st, 2 * NS_PER_SEC)],
        disk_util: vec![],
        elevator: meta(),
        timestamp: 0,
    };
    let text = fio_text::render_full(&report);
    assert!(
        text.contains("  read: IOPS=2500, BW=10.2MB/s (9.77MiB/s)(20.5MB/2000msec)\n"),
        "{text}"
    );
    assert!(
        text.contains("   bw (   kB/s): min= 9992, max=10000, per=99.97%, avg=9997.33, stdev= 4.62, samples=3\n"),
        "{text}"
    );
    assert!(text.contains("   READ: bw=10.2MB/s (9.77MiB/s), 10.2MB/s-10.2MB/s (9.77MiB/s-9.77MiB/s), io=20.5MB (19.5MiB), run=2000-2000msec\n"), "{text}");
    assert!(
        text.starts_with("si: (g=0): rw=read, bs=(R) 4096B-4096B,"),
        "{text}"
    );
}

// ------------------------------------------------------------------ terse

/// Fields in fio 3.33's terse v3 line without disks or description:
/// counted in a line real fio 3.33 printed (Debian's fio 3.33,
/// `fio --ioengine=null --size=64m --rw=randread --name=rr
/// --output-format=terse`: 121 fields, no disk stats for the null engine).
/// A job on a file adds 9 per disk (the fixture below: 130, and 131 with a
/// description).
const FIO_3_33_TERSE_FIELDS: usize = 121;

fn terse_fields(line: &str) -> usize {
    line.trim_end_matches('\n').split(';').count()
}

#[test]
fn terse_field_count_is_fio_3_33s() {
    assert_eq!(fio_terse::FIELDS_V3, FIO_3_33_TERSE_FIELDS);
    // psync_randread: one disk.
    let t = fio_terse::render(&psync_report());
    assert_eq!(terse_fields(&t), FIO_3_33_TERSE_FIELDS + 9);
    // multi_group: two disks; the first entry has a description; the job
    // that was not modelled has no line.
    let t = fio_terse::render(&multi_group_report());
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(terse_fields(lines[0]), FIO_3_33_TERSE_FIELDS + 2 * 9 + 1);
    assert!(lines[0].ends_with(";sequential writer, fsync every 16"));
    for l in &lines[1..] {
        assert_eq!(terse_fields(l), FIO_3_33_TERSE_FIELDS + 2 * 9);
    }
    // The fixture fio itself printed.
    let real = std::fs::read_to_string(golden_dir().join("fio333_fixture.terse")).unwrap();
    let n: Vec<usize> = real.lines().map(terse_fields).collect();
    assert_eq!(
        n,
        [FIO_3_33_TERSE_FIELDS + 9 + 1, FIO_3_33_TERSE_FIELDS + 9]
    );
}

fn io_stat(v: &serde_json::Value, prefix: &str) -> IoStat {
    let g = |k: &str| v[format!("{prefix}{k}")].clone();
    let n = g("N").as_u64().or_else(|| g("samples").as_u64()).unwrap();
    if n == 0 {
        return IoStat::new();
    }
    let (min, max) = (g("min").as_u64().unwrap(), g("max").as_u64().unwrap());
    let mean = g("mean").as_f64().unwrap();
    let dev = g("stddev").as_f64().or_else(|| g("dev").as_f64()).unwrap();
    stat(min, max, mean, dev, n)
}

fn hist_from_bins(h: &mut elevator::stats::Histogram, lat: &serde_json::Value) {
    if let Some(bins) = lat["bins"].as_object() {
        for (k, n) in bins {
            h.add_count(k.parse().unwrap(), n.as_u64().unwrap());
        }
    }
}

/// Counts behind fio's percentages (fio derived each from an integer count,
/// and prints 6 decimals).
fn counts<const N: usize>(obj: &serde_json::Value, keys: &[&str], total: u64) -> [u64; N] {
    let mut out = [0u64; N];
    for (i, k) in keys.iter().enumerate() {
        out[i] = (obj[*k].as_f64().unwrap() * total as f64 / 100.0).round() as u64;
    }
    out
}

/// Rebuild the run behind a real fio 3.33 json+ document: every statistic
/// from its numbers, the latency histograms from its bins.
fn report_from_fio_json_plus(doc: &serde_json::Value) -> RunReport {
    let mut jobs = Vec::new();
    for (i, j) in doc["jobs"].as_array().unwrap().iter().enumerate() {
        let mut spec = JobSpec::with_defaults(j["jobname"].as_str().unwrap());
        spec.job_index = i as u32;
        spec.group_id = j["groupid"].as_u64().unwrap() as u32;
        spec.description = j["desc"].as_str().map(str::to_string);
        spec.lat_percentiles = j["job options"]["lat_percentiles"] == "1";
        spec.iodepth = j["latency_depth"].as_u64().unwrap() as u32;
        let mut st = JobStats::new(&spec);
        let mut total = 0;
        for (d, name) in ["read", "write", "trim"].iter().enumerate() {
            let x = &j[*name];
            let ds = &mut st.dirs[d];
            ds.io_bytes = x["io_bytes"].as_u64().unwrap();
            ds.total_ios = x["total_ios"].as_u64().unwrap();
            ds.runtime_ms = x["runtime"].as_u64().unwrap();
            ds.slat = io_stat(&x["slat_ns"], "");
            ds.clat = io_stat(&x["clat_ns"], "");
            ds.lat = io_stat(&x["lat_ns"], "");
            hist_from_bins(&mut ds.slat_hist, &x["slat_ns"]);
            hist_from_bins(&mut ds.clat_hist, &x["clat_ns"]);
            hist_from_bins(&mut ds.lat_hist, &x["lat_ns"]);
            ds.bw = io_stat(x, "bw_");
            ds.iops = io_stat(x, "iops_");
            total += ds.total_ios;
        }
        let runt = j["job_runtime"].as_u64().unwrap();
        st.total_run_time_ms = runt;
        let ms = |k: &str| (j[k].as_f64().unwrap() * runt as f64 / 100.0).round() as u64;
        st.usr_time_ms = ms("usr_cpu");
        st.sys_time_ms = ms("sys_cpu");
        st.ctx = j["ctx"].as_u64().unwrap();
        st.majf = j["majf"].as_u64().unwrap();
        st.minf = j["minf"].as_u64().unwrap();
        let lat_keys = [
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
        ];
        st.io_u_map = counts(
            &j["iodepth_level"],
            &["1", "2", "4", "8", "16", "32", ">=64"],
            total,
        );
        st.lat_n = counts(&j["latency_ns"], &lat_keys[..10], total);
        st.lat_u = counts(&j["latency_us"], &lat_keys[..10], total);
        st.lat_m = counts(&j["latency_ms"], &lat_keys, total);
        jobs.push(ran(spec, st, runt * NS_PER_MS));
    }
    let disk_util = doc["disk_util"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| DiskUtil {
            name: d["name"].as_str().unwrap().into(),
            read_ios: d["read_ios"].as_u64().unwrap(),
            write_ios: d["write_ios"].as_u64().unwrap(),
            read_merges: d["read_merges"].as_u64().unwrap(),
            write_merges: d["write_merges"].as_u64().unwrap(),
            read_ticks: d["read_ticks"].as_u64().unwrap(),
            write_ticks: d["write_ticks"].as_u64().unwrap(),
            in_queue: d["in_queue"].as_u64().unwrap(),
            util: d["util"].as_f64().unwrap(),
            ..DiskUtil::default()
        })
        .collect();
    RunReport {
        global_options: vec![],
        jobs,
        disk_util,
        // No elevator version: the version field prints "fio-3.33".
        elevator: ElevatorMeta::default(),
        timestamp: 0,
    }
}

/// One real fio 3.33 run printed as json+ and terse at once
/// (tests/golden/fio333_fixture.fio, `--output-format=json+,terse`): a
/// psync randrw job with lat_percentiles and a description, and a libaio
/// writer group of two jobs with group_reporting, on a file. Rebuilding the
/// stats from the json+ half must print fio's terse half byte for byte.
#[test]
fn terse_matches_real_fio_3_33() {
    let json = std::fs::read_to_string(golden_dir().join("fio333_fixture.plus.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    let report = report_from_fio_json_plus(&doc);
    let expected = std::fs::read_to_string(golden_dir().join("fio333_fixture.terse")).unwrap();
    let actual = fio_terse::render(&report);
    for (i, (e, a)) in expected.lines().zip(actual.lines()).enumerate() {
        let (ef, af): (Vec<&str>, Vec<&str>) = (e.split(';').collect(), a.split(';').collect());
        for (k, (x, y)) in ef.iter().zip(af.iter()).enumerate() {
            assert_eq!(x, y, "line {} field {}", i + 1, k + 1);
        }
        assert_eq!(ef.len(), af.len(), "line {} field count", i + 1);
    }
    assert_eq!(actual, expected);
    // The same rebuilt run as json+ has fio's bins, key for key.
    let ours: serde_json::Value = serde_json::from_str(&fio_json::to_string_plus(&report)).unwrap();
    for (a, b) in doc["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(ours["jobs"].as_array().unwrap())
    {
        for d in ["read", "write"] {
            for l in ["slat_ns", "clat_ns", "lat_ns"] {
                assert_eq!(a[d][l]["bins"], b[d][l]["bins"], "{d} {l}");
                assert_eq!(a[d][l]["percentile"], b[d][l]["percentile"], "{d} {l}");
            }
        }
    }
}

// ------------------------------------------------------------------ json+

/// fio's own json+ reader: `fio_jsonplus_clat2csv SRC STUB` writes one CSV
/// per job, `--validate` rebuilds the bins from the CSVs and compares them
/// with the json+ document. When fio's tools are not installed the test is
/// counted as skipped (`lab_support::skip`), and fails in CI, which installs
/// them (.ci/run sets ELEVATOR_REQUIRE_LAB=1).
#[test]
fn json_plus_passes_fio_jsonplus_clat2csv_validate() {
    let tool = "fio_jsonplus_clat2csv";
    // Present and able to start (it needs python3 and python3-six).
    let runs = std::process::Command::new(tool)
        .arg("--help")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !runs {
        // Counted as skipped (or a failure in CI, which installs the tool).
        lab_support::skip(
            "json_plus_passes_fio_jsonplus_clat2csv_validate",
            &format!("{tool} is not installed or cannot start (apt-get install fio python3-six)"),
        );
        return;
    }
    let tmp = elevator::lab::TempDir::new("elevator-jsonplus").unwrap();
    let dir = tmp.path();
    for (name, r) in [
        ("psync", psync_report()),
        ("libaio", libaio_report()),
        ("multi", multi_group_report()),
    ] {
        let src = dir.join(format!("{name}.json"));
        std::fs::write(&src, fio_json::to_string_plus(&r)).unwrap();
        let stub = dir.join(format!("{name}.csv"));
        for validate in [false, true] {
            let mut cmd = std::process::Command::new(tool);
            cmd.arg(&src).arg(&stub);
            if validate {
                cmd.arg("--validate");
            }
            let out = cmd.output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{name} (validate={validate}): {text}");
            if validate {
                let entries = fio_json::render_plus(&r)["jobs"].as_array().unwrap().len();
                assert_eq!(text.matches("validated").count(), entries, "{text}");
            }
        }
    }
}
