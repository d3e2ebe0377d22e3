//! Scenario tests of dm-crypt between the jobs and the device (`--dm crypt`,
//! src/task/kcryptd.rs): writes are submitted by each CPU's kcryptd worker,
//! so the scheduler sees a few deep queues of the root cgroup instead of
//! the jobs; reads keep their submitter and are decrypted after they
//! complete.

use elevator::report::RunReport;
use elevator::run::{JobSource, RunSpec};

fn job(name: &str) -> String {
    let path = format!("{}/tests/jobs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn run(name: &str, spec: RunSpec) -> RunReport {
    let mut spec = spec;
    spec.job = JobSource::text(name, &job(name));
    elevator::run::run(&spec).expect("simulation runs")
}

fn json(rep: &RunReport) -> serde_json::Value {
    serde_json::from_str(&elevator::report::fio_json::to_string(rep)).expect("JSON")
}

/// (IOPS, maximum clat ns, writes that waited over 100 ms) of the first
/// reported group's writes.
fn writes(rep: &RunReport) -> (f64, f64, u64) {
    let full =
        serde_json::from_str::<serde_json::Value>(&elevator::report::fio_json::to_string_plus(rep))
            .expect("JSON");
    let w = &full["jobs"][0]["write"];
    let bins = w["clat_ns"]["bins"].as_object().expect("bins");
    let slow = bins
        .iter()
        .filter(|(ns, _)| ns.parse::<u64>().expect("bin") > 100_000_000)
        .map(|(_, n)| n.as_u64().expect("count"))
        .sum();
    (
        w["iops"].as_f64().expect("iops"),
        w["clat_ns"]["max"].as_f64().expect("max"),
        slow,
    )
}

/// E4's job (seed 001: 50 QD1 random writers) on its drive and kernel, on
/// ext4 behind dm-crypt as in the documents' set-up, for `seconds`.
fn e4(sched: &str, cpu_speed: f64, seconds: u32) -> (f64, f64, u64) {
    let name = "cfq-e4-sata-ssd.fio";
    let mut spec = RunSpec::from_text(name, "")
        .scheduler(sched)
        .device("desktop-ssd")
        .kernel("2.6.39")
        .mount("ext4")
        .dm("crypt");
    spec.machine.cpu_speed = cpu_speed;
    let text = job(name).replace("runtime=2", &format!("runtime={seconds}"));
    spec.job = JobSource::text(name, &text);
    writes(&elevator::run::run(&spec).expect("simulation runs"))
}

#[test]
fn cfq_serves_the_cpus_crypt_workers_one_slice_at_a_time() {
    // CFQ sees two deep queues (one kworker per CPU), each holding the
    // writes its CPU's jobs submitted, and serves one per slice: a write
    // on the other CPU's worker waits a slice. noop serves them as they
    // come. Jobs woken on a busy CPU move to the idle one, so most writes
    // are submitted where CFQ's slice is and few wait: over 2 s the wait
    // shows or not depending on the seed and on sub-microsecond CPU costs
    // (ext4's conversion cost 7.8 us gave a 181 ms maximum, 5.9 us 12 ms),
    // so the test runs 20 s. Measured (20 s, seeds 1-3): max cfq 180-187
    // ms with 49-294 writes over 100 ms, noop 37-68 ms and none over
    // 100 ms (published: 248 ms against 66 ms); IOPS 26.3k both (the
    // drive's program rate bounds both at this CPU speed).
    let (noop_iops, noop_max, noop_slow) = e4("noop", 1.0, 20);
    let (cfq_iops, cfq_max, cfq_slow) = e4("cfq", 1.0, 20);
    assert_eq!(noop_slow, 0, "noop writes over 100 ms");
    assert!(cfq_slow > 0, "no cfq write waited a slice");
    assert!(
        cfq_max > 2.0 * noop_max,
        "max cfq {cfq_max:.0} vs noop {noop_max:.0} ns"
    );
    assert!(
        (cfq_iops / noop_iops - 1.0).abs() < 0.05,
        "IOPS cfq {cfq_iops:.0} vs noop {noop_iops:.0}"
    );
}

#[test]
fn on_a_slower_host_cfq_behind_dm_crypt_loses_iops() {
    // With CPU work per write doubled (--cpu-speed 0.5), one CPU's jobs and
    // its worker cannot keep the drive busy during their slice, while under
    // noop both CPUs do. Measured (2 s): noop 26.9k, cfq 13.6k IOPS (1.99x;
    // 19.8k, 1.36x, before jobs moved to an idle CPU at wake-up).
    // E4's published ratio is 1.81; its machine's speed is not known (see
    // the README), so this is the mechanism, not a fit.
    let (noop, _, _) = e4("noop", 0.5, 2);
    let (cfq, _, _) = e4("cfq", 0.5, 2);
    assert!(noop > 1.25 * cfq, "noop {noop:.0} vs cfq {cfq:.0} IOPS");
}

/// IOPS per cgroup (summed over its jobs) of a run of the cgroups job.
fn by_cgroup(dm: Option<&str>) -> (f64, f64) {
    let name = "dm-crypt-cgroups.fio";
    let mut spec = RunSpec::from_text(name, "")
        .scheduler("cfq")
        .device("sata-ssd")
        .kernel("4.19");
    if let Some(d) = dm {
        spec = spec.dm(d);
    }
    let v = json(&run(name, spec));
    let sum = |group: &str| -> f64 {
        v["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .filter(|j| j["jobname"] == group)
            .map(|j| j["write"]["iops"].as_f64().expect("iops"))
            .sum()
    };
    (sum("heavy"), sum("light"))
}

#[test]
fn cgroup_weights_do_not_reach_writes_through_dm_crypt() {
    // The workers submit from the root cgroup, so blkio.weight 1000 against
    // 250 shares nothing: measured 31.0k / 7.7k IOPS directly, 19.4k /
    // 19.3k through dm-crypt.
    let (heavy, light) = by_cgroup(None);
    assert!(heavy > 3.0 * light, "direct: {heavy:.0} vs {light:.0}");
    let (heavy, light) = by_cgroup(Some("crypt"));
    assert!(
        (heavy / light - 1.0).abs() < 0.1,
        "dm-crypt: {heavy:.0} vs {light:.0}"
    );
}

/// Mean read clat (ns) of a QD1 random reader on nvme.
fn read_clat(dm: Option<&str>) -> f64 {
    let text = "[r]\nrw=randread\nbs=4k\nsize=64m\ndirect=1\nioengine=libaio\nruntime=1\n";
    let mut spec = RunSpec::from_text("r.fio", text);
    if let Some(d) = dm {
        spec = spec.dm(d);
    }
    let rep = elevator::run::run(&spec).expect("runs");
    json(&rep)["jobs"][0]["read"]["clat_ns"]["mean"]
        .as_f64()
        .expect("clat mean")
}

#[test]
fn reads_through_dm_crypt_wait_for_their_decryption() {
    // A 4 KiB read completes after its CPU's worker decrypted 8 sectors:
    // bio_ns + 8 x sector_ns = 2 + 8 x 1 us by default, 1 + 8 x 4 us here.
    let plain = read_clat(None);
    let default = read_clat(Some("crypt")) - plain;
    assert!(
        (9_000.0..12_000.0).contains(&default),
        "default costs add {default:.0} ns"
    );
    let slow = read_clat(Some("crypt:sector_ns=4000,bio_ns=1000")) - plain;
    assert!(
        (32_000.0..36_000.0).contains(&slow),
        "33 us of costs add {slow:.0} ns"
    );
}
