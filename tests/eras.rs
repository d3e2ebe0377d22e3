//! Kernel eras (`--kernel`, crate::kernel) through the library API: the
//! 4.11-4.14 dispatch loop with kblockd's re-runs after completions; the
//! era's defaults (libata depth, nr_requests) and its
//! scheduler list. Job files: tests/jobs/eras-*.fio.

use elevator::job::Ddir;
use elevator::report::RunReport;
use elevator::run::{JobSource, RunSpec};
use elevator::sim::time::NS_PER_MS;

fn job(name: &str) -> JobSource {
    let path = format!("{}/tests/jobs/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("job file");
    JobSource::text(name, &text)
}

fn spec(name: &str, sched: &str, kernel: Option<&str>) -> RunSpec {
    let mut s = RunSpec::new(job(name)).scheduler(sched).device("sata-ssd");
    s.kernel = kernel.map(str::to_string);
    s
}

fn run(s: &RunSpec) -> RunReport {
    elevator::run::run(s).expect("simulation runs")
}

/// The largest completion latency of any job in direction `d`, ns.
fn max_clat(rep: &RunReport, d: Ddir) -> u64 {
    rep.jobs
        .iter()
        .map(|j| j.stats.dirs[d as usize].clat.max)
        .max()
        .unwrap_or(0)
}

fn knob<'a>(rep: &'a RunReport, name: &str) -> &'a str {
    rep.elevator
        .knobs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .expect("knob reported")
}

#[test]
fn on_4_12_kblockd_reruns_drain_the_dispatch_list() {
    // 4.11-4.14: requests pulled while the device is full are stacked
    // newest-first on hctx->dispatch. Completions re-run the queue from
    // kblockd (one work item: completions before it runs share it), so the
    // list empties now and then and nothing waits for the whole run. Before
    // the kblockd re-run was modelled, the oldest requests waited the whole
    // 2 s run.
    let old = run(&spec("eras-strand.fio", "mq-deadline", Some("4.12")));
    let new = run(&spec("eras-strand.fio", "mq-deadline", None));
    let none_old = run(&spec("eras-strand.fio", "none", Some("4.12")));
    let both = |r: &RunReport| max_clat(r, Ddir::Read).max(max_clat(r, Ddir::Write));
    let o = both(&old);
    assert!(o < 100 * NS_PER_MS, "4.12 mq-deadline max {o} ns");
    // Every job kept going: none got less than half the mean IOPS.
    let iops: Vec<f64> = old
        .jobs
        .iter()
        .map(|j| j.stats.dirs.iter().map(|d| d.total_ios as f64).sum::<f64>())
        .collect();
    let mean = iops.iter().sum::<f64>() / iops.len() as f64;
    assert!(iops.iter().all(|&n| n > 0.5 * mean), "{iops:?}");
    let n = both(&new);
    assert!(n < 100 * NS_PER_MS, "newest max {n} ns");
    let z = both(&none_old);
    assert!(z < 100 * NS_PER_MS, "4.12 none max {z} ns");
}

/// The reader_20 jobs' mean read latency (ns) on E2's set-up (its drive,
/// 12 CPUs) for 30 s as kernel `kernel`.
fn e2_read_latency(sched: &str, kernel: &str) -> f64 {
    let e = elevator::cli::published::EXPERIMENTS
        .iter()
        .find(|e| e.id == "E2")
        .unwrap();
    let mut s = e.spec(sched);
    s.kernel = Some(kernel.to_string());
    s.max_runtime_ns = Some(30_000 * NS_PER_MS);
    let rep = run(&s);
    elevator::report::table::group_rows(&rep)
        .into_iter()
        .find(|r| r.name == "reader_20" && r.dir == Ddir::Read)
        .expect("reader_20 reads")
        .lat_mean_us
        * 1e3
}

#[test]
fn on_4_12_mq_deadline_loses_its_read_preference_to_concurrent_runs() {
    // E2 (published, 4.12): mq-deadline's reads 1.423 ms, none's 1.376. With
    // 12 CPUs running the queue at once, a run that finds hctx->dispatch
    // spliced off by another pulls from the scheduler and takes the free
    // tag, so the list grows until it holds what waits above the device and
    // mq-deadline has little left to prefer reads among. From 4.15 on (a
    // budget, no pull while the device is full) the preference holds.
    let gap = |k: &str| 1.0 - e2_read_latency("mq-deadline", k) / e2_read_latency("none", k);
    let (old, new) = (gap("4.12"), gap("6.17"));
    eprintln!("mq-deadline's reads below none's: 4.12 {old:.3}, 6.17 {new:.3}");
    assert!(old < 0.10, "4.12: mq-deadline {old:.3} below none");
    assert!(new > old + 0.05, "6.17 {new:.3} vs 4.12 {old:.3}");
}

#[test]
#[ignore = "measured 16.8 ms max for mq-deadline on E2 4.12 (12 CPUs) over 300 s, need > 1 s \
            (published ~2.7 s). hctx->dispatch's length spreads over 0-17 but comes back to 0 \
            often: a woken fio task's resubmission run is taken before kblockd's run for the \
            completion that woke it, so it sends the list's head and the list stays FIFO-like. \
            Running kblockd first makes it the kernel's stack (max 1.6 s) but then strands BFQ's \
            requests for the whole run, and the strand length turns on sub-microsecond costs \
            (src/block/mod.rs kblockd_restart). Ordering kblockd by CPU time strands them for \
            11-90 s instead and doubles the reader's mean read latency"]
fn e2_mq_deadline_maximum_latency_is_seconds_on_4_12() {
    let e = elevator::cli::published::EXPERIMENTS
        .iter()
        .find(|e| e.id == "E2")
        .unwrap();
    let mut s = e.spec("mq-deadline");
    s.max_runtime_ns = Some(300_000 * NS_PER_MS);
    let rep = run(&s);
    let m = max_clat(&rep, Ddir::Read).max(max_clat(&rep, Ddir::Write));
    assert!(m > 1_000 * NS_PER_MS, "max {m} ns");
    let mut s = e.spec("none");
    s.max_runtime_ns = Some(300_000 * NS_PER_MS);
    let rep = run(&s);
    let m = max_clat(&rep, Ddir::Read).max(max_clat(&rep, Ddir::Write));
    assert!(m < 100 * NS_PER_MS, "none max {m} ns");
}

#[test]
fn era_defaults_follow_the_kernel() {
    let old = run(&spec("eras-strand.fio", "mq-deadline", Some("4.12")));
    let mid = run(&spec("eras-strand.fio", "mq-deadline", Some("4.19")));
    let new = run(&spec("eras-strand.fio", "mq-deadline", None));
    // 4.11-4.13: 256; later 2 x min(depth, 128) with libata's 31 (4.14-4.17)
    // or 32 (4.18 on).
    assert_eq!(knob(&old, "nr_requests"), "256");
    assert_eq!(knob(&mid, "nr_requests"), "64");
    assert_eq!(knob(&new, "nr_requests"), "64");
    let d14 = run(&spec("eras-strand.fio", "mq-deadline", Some("4.14")));
    assert_eq!(knob(&d14, "nr_requests"), "62");
    // The era is recorded: in the report and in its spec.
    assert_eq!(old.elevator.kernel.as_deref(), Some("4.12"));
    assert_eq!(new.elevator.kernel, None);
    let spec_json = old.elevator.spec.as_ref().unwrap();
    assert_eq!(spec_json["kernel"], "4.12");
}

#[test]
fn a_scheduler_the_kernel_did_not_have_is_an_input_error() {
    for (sched, kernel) in [
        ("mq-deadline", "2.6.39"),
        ("none", "2.6.39"),
        ("mq-deadline", "4.10"),
        ("deadline", "5.0"),
        ("noop", "6.17"),
        ("tpps", "4.12"),
    ] {
        let e = elevator::run::run(&spec("eras-strand.fio", sched, Some(kernel))).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("did not exist in kernel"),
            "{sched} on {kernel}: {msg}"
        );
    }
    let e = elevator::run::run(&spec("eras-strand.fio", "none", Some("9.9"))).unwrap_err();
    assert!(e.to_string().contains("unknown kernel version"), "{e}");
    // Without --kernel the legacy schedulers still run (on the legacy core).
    let mut s = spec("eras-strand.fio", "deadline", None);
    s.max_runtime_ns = Some(200 * NS_PER_MS);
    run(&s);
    // On a kernel that had both, legacy and blk-mq schedulers run.
    for sched in ["noop", "deadline", "none", "mq-deadline"] {
        let mut s = spec("eras-strand.fio", sched, Some("4.12"));
        s.max_runtime_ns = Some(200 * NS_PER_MS);
        run(&s);
    }
}

#[test]
fn nr_requests_of_a_blk_mq_queue_is_read_only_before_3_16() {
    // 3.13's sysfs store refused every blk-mq queue (seed 003's
    // `nr_requests=1024` on its virtio disk did nothing); 3.16 on resizes
    // the tags, never above the driver's depth without a scheduler.
    let set = |kernel: &str, sched: &str, nr: &str| {
        let mut s = spec("eras-strand.fio", sched, Some(kernel)).set("nr_requests", nr);
        s.max_runtime_ns = Some(100 * NS_PER_MS);
        elevator::run::run(&s)
    };
    let e = set("3.13", "none", "16").unwrap_err().to_string();
    assert!(e.contains("nr_requests") && e.contains("3.16"), "{e}");
    assert_eq!(
        knob(&set("3.16", "none", "16").unwrap(), "nr_requests"),
        "16"
    );
    // The legacy core's store took any value in 3.13.
    assert_eq!(
        knob(&set("3.13", "deadline", "1024").unwrap(), "nr_requests"),
        "1024"
    );
}
