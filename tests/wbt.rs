//! Writeback throttling (WBT) in the rq-qos chain: tests/jobs/wbt-*.fio
//! through the library API.

use elevator::job::Ddir;
use elevator::report::RunReport;
use elevator::run::{JobSource, RunSpec};

fn job(name: &str) -> String {
    let path = format!("{}/tests/jobs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn run(scheduler: &str, sets: &[(&str, &str)]) -> RunReport {
    let name = "wbt-writeback-reader.fio";
    let mut s = RunSpec::from_text(name, "")
        .scheduler(scheduler)
        .device("sata-ssd");
    for (k, v) in sets {
        s = s.set(k, v);
    }
    s.job = JobSource::text(name, &job(name));
    elevator::run::run(&s).expect("simulation runs")
}

fn knob(r: &RunReport, name: &str) -> String {
    r.elevator
        .knobs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// The reader's mean latency in µs, and the writer's MiB/s.
fn figures(r: &RunReport) -> (f64, f64) {
    let reader = &r.jobs[1].stats;
    let lat = reader.lat_mean_ns(Ddir::Read) / 1000.0;
    let w = &r.jobs[0].stats;
    let bw = w.io_bytes(Ddir::Write) as f64 / (w.runtime_ns() as f64 / 1e9) / 1048576.0;
    (lat, bw)
}

#[test]
fn wbt_lowers_the_readers_latency_under_writeback() {
    let on = run("mq-deadline", &[]);
    let off = run("mq-deadline", &[("wbt_lat_usec", "0")]);
    assert_eq!(knob(&on, "wbt_lat_usec"), "2000");
    assert_eq!(knob(&off, "wbt_lat_usec"), "0");
    let (lat_on, bw_on) = figures(&on);
    let (lat_off, bw_off) = figures(&off);
    eprintln!("reader clat {lat_on:.0} us with WBT, {lat_off:.0} us without; writer {bw_on:.0} / {bw_off:.0} MiB/s");
    assert!(lat_on * 1.5 < lat_off, "{lat_on} vs {lat_off}");
}

#[test]
fn bfq_turns_wbt_off_and_a_switch_away_back_on() {
    let r = run("bfq", &[]);
    assert_eq!(knob(&r, "wbt_lat_usec"), "0");
    // The user's value stays under BFQ.
    let r = run("bfq", &[("wbt_lat_usec", "5000")]);
    assert_eq!(knob(&r, "wbt_lat_usec"), "5000");
    let name = "wbt-writeback-reader.fio";
    let mut s = RunSpec::from_text(name, "")
        .scheduler("bfq")
        .device("sata-ssd")
        .switch(1_000_000_000, "mq-deadline");
    s.job = JobSource::text(name, &job(name));
    let r = elevator::run::run(&s).unwrap();
    assert_eq!(knob(&r, "wbt_lat_usec"), "2000");
}
