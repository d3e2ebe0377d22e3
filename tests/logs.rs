//! fio-format job logs (write_lat_log, write_bw_log, write_iops_log).
//!
//! Expected lines follow fio 3.33's: `time_ms, value, ddir, bs, prio`, with
//! the offset before prio under log_offset=1 and the priority value in hex
//! under log_prio=1 (captured from real fio 3.33 runs: `0, 56095, 0, 4096,
//! 0x2003` for prioclass=1 prio=3; `100, 41735, 1, 0, 0, 0` for a
//! log_avg_msec=100 window with log_offset=1).
//!
//! Debian ships fio's fiologparser.py (in /usr/share/doc/fio), but it
//! unpacks exactly four fields per line and fails on fio 3.33's own
//! five-field logs, so these tests parse the files themselves.

use std::path::{Path, PathBuf};

use elevator::cgroup::IoPrioClass;
use elevator::job::{Ddir, JobSpec};
use elevator::stats::JobStats;

const MS: u64 = 1_000_000;

/// A scratch directory removed when the test ends (passing or not).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmpdir(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("elevator-logs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn logging_spec(dir: &Path) -> JobSpec {
    let mut s = JobSpec::with_defaults("j");
    s.write_lat_log = Some("x".into());
    s.write_bw_log = Some("x".into());
    s.write_iops_log = Some("x".into());
    // What the parser does for a bw/iops log without bwavgtime/iopsavgtime.
    s.bwavgtime_ms = s.log_avg_msec;
    s.iopsavgtime_ms = s.log_avg_msec;
    s.log_dir = Some(dir.to_path_buf());
    s
}

/// Parse a log into rows of integers (hex priorities included).
fn rows(text: &str) -> Vec<Vec<u64>> {
    text.lines()
        .map(|l| {
            l.split(", ")
                .map(|f| match f.strip_prefix("0x") {
                    Some(h) => u64::from_str_radix(h, 16).unwrap(),
                    None => f.parse().unwrap(),
                })
                .collect()
        })
        .collect()
}

#[test]
fn per_io_lines() {
    let dir = tmpdir("per-io");
    let s = logging_spec(&dir);
    let mut st = JobStats::with_logs(&s).unwrap();
    st.begin(1000 * MS);
    // Read at 3.5 ms: slat 1.5 µs, clat 20 µs, issued 20 µs earlier.
    st.record_io_at(
        Ddir::Read,
        8192,
        4096,
        Some(1500),
        20_000,
        21_500,
        1003 * MS + MS / 2,
    );
    // Write at 7 ms, no slat (sync engine), clat 0: bw sample 0.
    st.record_io_at(Ddir::Write, 0, 65536, None, 0, 700, 1007 * MS);
    st.end(1010 * MS);
    let f = |k: &str| read(&dir.join(format!("x_{k}.1.log")));
    assert_eq!(f("slat"), "3, 1500, 0, 4096, 0\n");
    assert_eq!(f("clat"), "3, 20000, 0, 4096, 0\n7, 0, 1, 65536, 0\n");
    assert_eq!(f("lat"), "3, 21500, 0, 4096, 0\n7, 700, 1, 65536, 0\n");
    // fio's per-I/O bandwidth: bytes * 10^6 / clat ns.
    assert_eq!(f("bw"), "3, 204800, 0, 4096, 0\n7, 0, 1, 65536, 0\n");
    assert_eq!(f("iops"), "3, 1, 0, 4096, 0\n7, 1, 1, 65536, 0\n");
    // With per-I/O bw/iops logs fio's bw/iops statistics are per I/O too.
    assert_eq!(st.dirs[0].bw.samples, 1);
    assert_eq!(st.dirs[0].bw.max, 204_800);
    assert_eq!(st.dirs[1].iops.samples, 1);
    assert_eq!(st.dirs[1].iops.mean, 1.0);
}

#[test]
fn offset_and_priority_columns() {
    let dir = tmpdir("cols");
    let mut s = logging_spec(&dir);
    s.write_bw_log = None;
    s.write_iops_log = None;
    s.log_offset = true;
    s.prioclass = Some(IoPrioClass::Rt);
    s.prio = Some(3);
    let run = |s: &JobSpec| {
        let mut st = JobStats::with_logs(s).unwrap();
        st.begin(0);
        st.record_io_at(Ddir::Write, 1 << 20, 4096, None, 5000, 5000, 2 * MS);
        st.end(3 * MS);
        read(&dir.join("x_clat.1.log"))
    };
    // Without log_prio the column is 1 for the real-time class.
    assert_eq!(run(&s), "2, 5000, 1, 4096, 1048576, 1\n");
    s.log_prio = true;
    assert_eq!(run(&s), "2, 5000, 1, 4096, 1048576, 0x2003\n");
    // A level without a class is best-effort (fio: 0x4005).
    s.prioclass = None;
    s.prio = Some(5);
    s.log_offset = false;
    assert_eq!(run(&s), "2, 5000, 1, 4096, 0x4005\n");
}

/// fio's add_log_sample for latency logs: a window closes at the first
/// sample at least log_avg_msec after its start, stamped with that sample's
/// time, holding the mean rounded half up (or the maximum); the next window
/// starts at that time rounded down to the period; the rest is flushed when
/// the job ends. Averaged lines have bs, offset and prio 0.
#[test]
fn windowed_latency_logs() {
    let dir = tmpdir("win");
    let mut s = logging_spec(&dir);
    s.write_bw_log = None;
    s.write_iops_log = None;
    s.log_avg_msec = 100;
    s.log_offset = true;
    let run = |s: &JobSpec| {
        let mut st = JobStats::with_logs(s).unwrap();
        st.begin(0);
        for (t, v) in [
            (10, 1000),
            (50, 2001),
            (99, 3000),
            (130, 10),
            (250, 7),
            (260, 8),
        ] {
            st.record_io_at(Ddir::Read, 4096, 4096, None, v, v, t * MS);
        }
        st.record_io_at(Ddir::Write, 0, 4096, None, 50, 50, 120 * MS);
        st.end(275 * MS);
        read(&dir.join("x_clat.1.log"))
    };
    // Reads: 10, 50, 99 wait; 130 closes [1000, 2001, 3000, 10] (mean
    // 1502.75 -> 1503) at 130 and the next window starts at 100; 250 closes
    // [7] at 250, next from 200; 260 is left for the end. Each direction
    // has its own window: the write at 120 ms closes one at once.
    assert_eq!(
        run(&s),
        "130, 1503, 0, 0, 0, 0\n250, 7, 0, 0, 0, 0\n120, 50, 1, 0, 0, 0\n275, 8, 0, 0, 0, 0\n"
    );
    s.log_max_value = true;
    assert_eq!(
        run(&s),
        "130, 3000, 0, 0, 0, 0\n250, 7, 0, 0, 0, 0\n120, 50, 1, 0, 0, 0\n275, 8, 0, 0, 0, 0\n"
    );
}

/// Averaged bw/iops logs get one line per sampling window (the same samples
/// as the report's bw/iops statistics), stamped at the window's end.
#[test]
fn windowed_bw_and_iops_logs() {
    let dir = tmpdir("bwwin");
    let mut s = logging_spec(&dir);
    s.write_lat_log = None;
    s.log_avg_msec = 200;
    s.bwavgtime_ms = 200;
    s.iopsavgtime_ms = 200;
    let mut st = JobStats::with_logs(&s).unwrap();
    st.begin(0);
    // 1 MiB every 10 ms for 1 s: 100 MiB/s, 100 IOPS.
    for i in 1..=100 {
        st.record_io_at(Ddir::Write, 0, 1 << 20, None, 1000, 1000, i * 10 * MS);
    }
    st.end(1000 * MS);
    let bw = read(&dir.join("x_bw.1.log"));
    let iops = read(&dir.join("x_iops.1.log"));
    // Windows end at 200, 400, 600, 800 (1000 is the end of the run, which
    // fio's sampler misses); the I/O at a boundary counts in the next one.
    assert_eq!(
        bw,
        "200, 97280, 1, 0, 0\n400, 102400, 1, 0, 0\n600, 102400, 1, 0, 0\n800, 102400, 1, 0, 0\n"
    );
    assert_eq!(
        iops,
        "200, 95, 1, 0, 0\n400, 100, 1, 0, 0\n600, 100, 1, 0, 0\n800, 100, 1, 0, 0\n"
    );
    assert_eq!(st.dirs[1].bw.samples, 4);
}

#[test]
fn file_names_and_shared_logs() {
    let dir = tmpdir("names");
    let mut s = JobSpec::with_defaults("seqw");
    s.job_index = 4;
    s.write_lat_log = Some(String::new());
    s.log_dir = Some(dir.to_path_buf());
    assert_eq!(
        elevator::stats::log_path(&s, "", "clat"),
        dir.join("seqw_clat.5.log")
    );
    s.per_job_logs = false;
    assert_eq!(
        elevator::stats::log_path(&s, "pre", "bw"),
        dir.join("pre_bw.log")
    );
    // per_job_logs=0: jobs append to one file, which fio never truncates.
    std::fs::write(dir.join("seqw_lat.log"), "old\n").unwrap();
    for k in 0..2 {
        let mut j = s.clone();
        j.job_index = k;
        let mut st = JobStats::with_logs(&j).unwrap();
        st.begin(0);
        st.record_io(Ddir::Read, 512, None, 100 + k as u64, 100, MS);
        st.end(2 * MS);
    }
    assert_eq!(
        read(&dir.join("seqw_clat.log")),
        "1, 100, 0, 512, 0\n1, 101, 0, 512, 0\n"
    );
    assert!(read(&dir.join("seqw_lat.log")).starts_with("old\n"));
    // Per-job logs start empty.
    let mut j = s.clone();
    j.per_job_logs = true;
    std::fs::write(dir.join("seqw_clat.5.log"), "stale\n").unwrap();
    j.job_index = 4;
    drop(JobStats::with_logs(&j).unwrap());
    assert_eq!(read(&dir.join("seqw_clat.5.log")), "");
    // A log directory that cannot be created is an error naming it.
    let mut bad = s.clone();
    bad.log_dir = Some(dir.join("seqw_lat.log").join("sub"));
    let e = JobStats::with_logs(&bad).err().unwrap();
    assert!(e.contains("seqw_lat.log"), "{e}");
}

/// Lines reach the file while the job runs (bounded buffers, constant
/// memory), not only at the end.
#[test]
fn logs_stream_while_running() {
    let dir = tmpdir("stream");
    let mut s = logging_spec(&dir);
    s.write_bw_log = None;
    s.write_iops_log = None;
    let mut st = JobStats::with_logs(&s).unwrap();
    st.begin(0);
    for i in 0..20_000u64 {
        st.record_io(Ddir::Read, 4096, None, 90_000, 90_000, i * 100_000);
    }
    let before = std::fs::metadata(dir.join("x_clat.1.log")).unwrap().len();
    assert!(before > 100_000, "{before} bytes written before the end");
    st.end(2_000 * MS);
    let text = read(&dir.join("x_clat.1.log"));
    assert_eq!(text.lines().count(), 20_000);
    assert!(text.lines().all(|l| l.ends_with(", 90000, 0, 4096, 0")));
}

/// A log that can no longer be written (here its directory is gone) stops
/// taking lines and says why in `log_errors` — which the run turns into a
/// warning — instead of printing from the library.
#[test]
fn a_log_that_fails_to_write_is_reported_not_printed() {
    let dir = tmpdir("fails");
    let mut s = logging_spec(&dir);
    s.write_bw_log = None;
    s.write_iops_log = None;
    let mut st = JobStats::with_logs(&s).unwrap();
    st.begin(0);
    std::fs::remove_dir_all(&*dir).unwrap();
    for i in 0..20_000u64 {
        st.record_io(Ddir::Read, 4096, None, 90_000, 90_000, i * 100_000);
    }
    st.end(2_000 * MS);
    // clat and lat had lines to write; slat had none (no submission
    // latency was recorded), so it never failed.
    let names: Vec<&str> = ["x_clat.1.log", "x_lat.1.log"].to_vec();
    assert_eq!(st.log_errors.len(), names.len(), "{:?}", st.log_errors);
    for (e, name) in st.log_errors.iter().zip(names) {
        assert!(
            e.starts_with("cannot write log file ") && e.contains(name),
            "{e}"
        );
    }
}

/// A whole run through `elevator run`: file names, one line per I/O, and
/// numbers that agree with the JSON report.
#[test]
fn run_writes_fio_logs() {
    let dir = tmpdir("run");
    let job = dir.join("logs.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=libaio\niodepth=4\nsize=16m\nbs=4k\ndirect=1\nruntime=300ms\n\
         time_based\nrate_iops=5000\n\
         [mixed]\nrw=randrw\nnumjobs=2\nwrite_lat_log=m\nwrite_bw_log=m\nwrite_iops_log=m\nlog_offset=1\n\
         [avg]\nrw=randread\nwrite_lat_log\nwrite_bw_log\nlog_avg_msec=50\n",
    )
    .unwrap();
    let logs = dir.join("logs");
    let out = dir.join("out.json");
    let args: Vec<String> = [
        "run",
        "--log-dir",
        logs.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
        "--output-format=json",
        "--no-progress",
        job.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(elevator::cli::main_with_args(args), 0);
    let mut names: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "avg_bw.3.log",
            "avg_clat.3.log",
            "avg_lat.3.log",
            "avg_slat.3.log",
            "m_bw.1.log",
            "m_bw.2.log",
            "m_clat.1.log",
            "m_clat.2.log",
            "m_iops.1.log",
            "m_iops.2.log",
            "m_lat.1.log",
            "m_lat.2.log",
            "m_slat.1.log",
            "m_slat.2.log",
        ]
    );
    let doc: serde_json::Value = serde_json::from_str(&read(&out)).unwrap();
    for (k, job) in doc["jobs"].as_array().unwrap().iter().enumerate().take(2) {
        let clat = rows(&read(&logs.join(format!("m_clat.{}.log", k + 1))));
        let ios = |d: &str| job[d]["total_ios"].as_u64().unwrap();
        assert_eq!(clat.len() as u64, ios("read") + ios("write"));
        let mut t = 0;
        for r in &clat {
            assert_eq!(r.len(), 6, "{r:?}");
            assert!(r[0] >= t, "completion times in order");
            t = r[0];
            assert!(r[0] <= 310 && r[2] <= 1 && r[3] == 4096);
            assert_eq!(r[4] % 4096, 0);
            assert_eq!(r[5], 0);
        }
        // The per-I/O latencies are the ones the report summarises.
        let reads: Vec<u64> = clat.iter().filter(|r| r[2] == 0).map(|r| r[1]).collect();
        let mean = reads.iter().sum::<u64>() as f64 / reads.len() as f64;
        let want = job["read"]["clat_ns"]["mean"].as_f64().unwrap();
        assert!(
            (mean - want).abs() < 1e-6 * want.max(1.0),
            "{mean} vs {want}"
        );
        assert_eq!(
            reads.iter().max().copied(),
            job["read"]["clat_ns"]["max"].as_u64()
        );
        // Per-I/O bw log: one bw sample per I/O in the report too.
        let bw = rows(&read(&logs.join(format!("m_bw.{}.log", k + 1))));
        assert_eq!(bw.len() as u64, ios("read") + ios("write"));
        assert_eq!(job["read"]["bw_samples"].as_u64(), Some(ios("read")));
    }
    // log_avg_msec=50 over 300 ms: averaged lines, 50 ms apart, bs 0; the
    // bw log has the report's bw samples.
    let avg = &doc["jobs"][2];
    let clat = rows(&read(&logs.join("avg_clat.3.log")));
    assert!((5..=7).contains(&clat.len()), "{clat:?}");
    assert!(clat.iter().all(|r| r.len() == 5 && r[2] == 0 && r[3] == 0));
    let bw = rows(&read(&logs.join("avg_bw.3.log")));
    assert_eq!(bw.len() as u64, avg["read"]["bw_samples"].as_u64().unwrap());
    let times: Vec<u64> = bw.iter().map(|r| r[0]).collect();
    assert_eq!(
        times,
        (1..=times.len() as u64).map(|i| i * 50).collect::<Vec<_>>()
    );
    let max = bw.iter().map(|r| r[1]).max();
    assert_eq!(max, avg["read"]["bw_max"].as_u64());
}
