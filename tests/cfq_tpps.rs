//! Scenario tests of CFQ (Linux 4.19) and tpps (ali_kernel) on the legacy
//! core: the job files under tests/jobs/ (cfq-*.fio, tpps-*.fio) through the
//! library API, against the documents' experiments (E4, E5) and CFQ's
//! documented behaviour (idling, ioprio slices).

use elevator::job::Ddir;
use elevator::report::{RunReport, SwitchOutcome};
use elevator::run::{JobSource, RunSpec};
use elevator::sim::time::NS_PER_SEC;

fn job(name: &str) -> String {
    let path = format!("{}/tests/jobs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn run_text(name: &str, text: &str, spec: RunSpec) -> RunReport {
    let mut spec = spec;
    spec.job = JobSource::text(name, text);
    elevator::run::run(&spec).expect("simulation runs")
}

fn run(name: &str, sched: &str, device: &str) -> RunReport {
    run_with(
        name,
        RunSpec::from_text(name, "").scheduler(sched).device(device),
    )
}

fn run_with(name: &str, spec: RunSpec) -> RunReport {
    run_text(name, &job(name), spec)
}

/// Per job name: (IOPS summed over its jobs, mean latency in ns weighted by
/// I/Os) of direction `d`.
fn by_name(rep: &RunReport, name: &str, d: Ddir) -> (f64, f64) {
    let (mut iops, mut ios, mut lat) = (0.0, 0u64, 0.0);
    for j in rep.jobs.iter().filter(|j| j.spec.name == name) {
        let n = j.stats.total_ios(d);
        let rt = j.stats.runtime_ns() as f64 / 1e9;
        if rt > 0.0 {
            iops += n as f64 / rt;
        }
        ios += n;
        lat += j.stats.lat_mean_ns(d) * n as f64;
    }
    assert!(ios > 0, "job {name} did no {d:?} I/O");
    (iops, lat / ios as f64)
}

fn total_iops(rep: &RunReport, d: Ddir) -> f64 {
    rep.jobs
        .iter()
        .map(|j| j.stats.total_ios(d) as f64 / (j.stats.runtime_ns() as f64 / 1e9))
        .sum()
}

const E5_GROUPS: [&str; 4] = ["test1", "test2", "test3", "test4"];
/// The device of E5 ("a fast block device" in seed 004).
const E5_DEVICE: &str = "nvme";

/// fio reaps only when its ring is full, and not while it sleeps inside
/// io_submit for a request, so every job keeps about iodepth (1024) units
/// outstanding and its latency is 1024 / IOPS, as the published RT x IOPS
/// (960-1180 in all eight cells) shows. Measured (nvme, 1 s, per job):
/// tpps 26337 / 21007 / 16528 / 11327 IOPS at 38.2 / 47.8 / 60.9 / 90.5 ms,
/// cfq 21255 / 16625 / 12429 / 8225 at 47.5 / 59.0 / 78.7 / 117.9 ms.
#[test]
fn e5_tpps_shares_a_saturated_device_by_weight_and_beats_cfq() {
    let tpps = run("tpps-e5-cgroups.fio", "tpps", E5_DEVICE);
    let cfq = run("tpps-e5-cgroups.fio", "cfq", E5_DEVICE);
    let t: Vec<(f64, f64)> = E5_GROUPS
        .iter()
        .map(|g| by_name(&tpps, g, Ddir::Write))
        .collect();
    let c: Vec<(f64, f64)> = E5_GROUPS
        .iter()
        .map(|g| by_name(&cfq, g, Ddir::Write))
        .collect();
    for (i, g) in E5_GROUPS.iter().enumerate() {
        eprintln!(
            "E5 {g}: tpps {:.0} IOPS {:.3} ms, cfq {:.0} IOPS {:.3} ms",
            t[i].0,
            t[i].1 / 1e6,
            c[i].0,
            c[i].1 / 1e6
        );
    }
    for w in t.windows(2) {
        assert!(w[0].0 > w[1].0, "tpps IOPS not ordered by weight: {t:?}");
    }
    let (tt, ct) = (
        total_iops(&tpps, Ddir::Write),
        total_iops(&cfq, Ddir::Write),
    );
    eprintln!("E5 total: tpps {tt:.0} IOPS, cfq {ct:.0} IOPS");
    assert!(tt >= ct, "tpps total {tt:.0} below cfq {ct:.0}");
    for i in 0..4 {
        assert!(
            t[i].1 < c[i].1,
            "{}: tpps mean latency {:.0} ns not below cfq {:.0} ns",
            E5_GROUPS[i],
            t[i].1,
            c[i].1
        );
    }
}

#[test]
fn e5_unsaturated_groups_get_what_they_ask_whatever_their_weight() {
    let rep = run("tpps-e5-unsaturated.fio", "tpps", E5_DEVICE);
    for g in E5_GROUPS {
        let (iops, _) = by_name(&rep, g, Ddir::Write);
        eprintln!("unsaturated tpps {g}: {iops:.0} IOPS");
        // Four jobs at rate_iops=500 each.
        assert!(
            (iops - 2000.0).abs() < 0.05 * 2000.0,
            "tpps {g}: {iops:.0} IOPS, asked for 2000"
        );
    }
    // CFQ on the same device for the record: group_idle (8 ms, kept on
    // non-rotational queues) holds the disk for a group whose last busy
    // queue emptied, so rate-limited groups can fall short of their rate.
    let rep = run("tpps-e5-unsaturated.fio", "cfq", E5_DEVICE);
    for g in E5_GROUPS {
        let (iops, _) = by_name(&rep, g, Ddir::Write);
        eprintln!("unsaturated cfq {g}: {iops:.0} IOPS");
    }
}

/// tpps offered on blk-mq (tpps-mq; its decisions are in sched/tpps.rs).
/// The quota passes share the device slots by weight, and on blk-mq every
/// group allocates from the same scheduler tags (the ali kernel gave each
/// cgroup its own request pool). So a group holding its weight's share of
/// the tags allocates with shallow depth 1, as BFQ caps a cgroup.
/// Measured (nvme, 1 s, per group): 120.7k / 90.1k / 54.1k / 35.7k IOPS
/// for weights 1000 / 800 / 600 / 400 (legacy tpps: 105.5k / 84.0k /
/// 66.4k / 45.0k). Without the cap each group held about as many tags as
/// its jobs could take, and the order turned on which CPU ran the tag's
/// sleepers first: 104.0k / 76.2k / 62.2k / 58.5k with each job fixed on
/// its CPU, 71.6k / 77.3k / 75.3k / 76.5k with jobs moving to an idle CPU.
#[test]
fn e5_tpps_on_blk_mq_shares_by_weight() {
    let rep = run("tpps-e5-cgroups.fio", "tpps-mq", E5_DEVICE);
    let t: Vec<(f64, f64)> = E5_GROUPS
        .iter()
        .map(|g| by_name(&rep, g, Ddir::Write))
        .collect();
    for w in t.windows(2) {
        assert!(w[0].0 > w[1].0, "tpps-mq IOPS not ordered by weight: {t:?}");
    }
    // Weights 1000 against 400: at least 1.8x (2.5x by weight). Since a
    // task about to sleep for a tag runs the queue first (blk_mq_get_tag)
    // and scheduler-bound submissions are dispatched from kblockd
    // (2026-12-02): 94.8k / 91.3k / 65.8k / 48.8k, 1.94x; 3.4x before.
    assert!(t[0].0 > 1.8 * t[3].0, "tpps-mq not proportional: {t:?}");
}

#[test]
fn e5_tpps_on_blk_mq_serves_unsaturated_groups() {
    let rep = run("tpps-e5-unsaturated.fio", "tpps-mq", E5_DEVICE);
    for g in E5_GROUPS {
        let (iops, _) = by_name(&rep, g, Ddir::Write);
        eprintln!("unsaturated tpps-mq {g}: {iops:.0} IOPS");
        assert!(
            (iops - 2000.0).abs() < 0.05 * 2000.0,
            "tpps-mq {g}: {iops:.0} IOPS, asked for 2000"
        );
    }
}

#[test]
fn hdd_two_sequential_readers_cfq_idling_beats_noop_unless_slice_idle_is_0() {
    let name = "cfq-hdd-two-seq-readers.fio";
    let noop = total_iops(&run(name, "noop", "hdd"), Ddir::Read);
    let cfq = total_iops(&run(name, "cfq", "hdd"), Ddir::Read);
    let spec = RunSpec::from_text(name, "")
        .scheduler("cfq")
        .device("hdd")
        .set("iosched/slice_idle", "0");
    let no_idle = total_iops(&run_with(name, spec), Ddir::Read);
    eprintln!(
        "two readers on hdd: noop {noop:.0}, cfq {cfq:.0}, cfq slice_idle=0 {no_idle:.0} IOPS"
    );
    assert!(cfq >= 1.5 * noop, "cfq {cfq:.0} vs noop {noop:.0}");
    assert!(
        no_idle < 1.1 * noop,
        "without idling cfq keeps an advantage: {no_idle:.0} vs noop {noop:.0}"
    );
}

#[test]
fn cfq_ioprio_level_0_gets_more_than_level_7() {
    let rep = run("cfq-ioprio.fio", "cfq", "hdd");
    let (be0, _) = by_name(&rep, "be0", Ddir::Read);
    let (be7, _) = by_name(&rep, "be7", Ddir::Read);
    eprintln!("ioprio on hdd: be0 {be0:.0} IOPS, be7 {be7:.0} IOPS");
    // Slices of 180 ms against 40 ms: level 0 gets most of the disk.
    assert!(be0 > 2.0 * be7, "be0 {be0:.0} vs be7 {be7:.0}");
    // noop does not look at priorities.
    let noop = run("cfq-ioprio.fio", "noop", "hdd");
    let (n0, _) = by_name(&noop, "be0", Ddir::Read);
    let (n7, _) = by_name(&noop, "be7", Ddir::Read);
    assert!((n0 - n7).abs() < 0.1 * n0, "noop: {n0:.0} vs {n7:.0}");
}

/// (IOPS, max clat in ns) of the single reported group of a run.
fn e4_numbers(rep: &RunReport) -> (f64, f64) {
    let json: serde_json::Value =
        serde_json::from_str(&elevator::report::fio_json::to_string(rep)).expect("JSON");
    let w = &json["jobs"][0]["write"];
    (
        w["iops"].as_f64().expect("iops"),
        w["clat_ns"]["max"].as_f64().expect("clat max"),
    )
}

/// E4's published ratio (noop 26183 IOPS against cfq 14482, kernel 2.6.39)
/// is not reproduced: with 50 queues of one request each, 4.19 CFQ on a
/// non-rotational NCQ queue never idles (slice_idle 0 there, and with 8 ms
/// every queue is seeky and alone-in-tree idling needs the last queue of the
/// tree), so it switches queues on every dispatch and keeps the SSD as full
/// as noop does. Measured 1.00 (noop 38081, cfq 38083 IOPS). Run with
/// `--ignored` to see it fail.
/// The same as published: kernel 2.6.39 (CFQ keeps slice_idle 8 ms on an
/// SSD there) on the E4 drive's profile. Still 1.00 (noop 26180, cfq 26179
/// IOPS): desktop-ssd's throughput is its flash program rate whatever the
/// queue depth (also 21.4k under both with NCQ off), so CFQ could only lose
/// IOPS by leaving the drive idle ~45 % of the time, and 2.6.39 CFQ does not
/// idle for 50 seeky (4 KiB < 32 sectors on a non-rotational queue) QD1
/// queues: `cfq_arm_slice_timer` returns at once on a non-rotational NCQ
/// queue and `cfq_should_idle` wants the last queue of its service tree.
/// Seed 001's disk sits under two device-mapper layers, likely LVM in LUKS:
/// through dm-crypt (tests/dm_crypt.rs) CFQ sees one deep queue per CPU's
/// kcryptd worker and gets E4's long tail, but keeps noop's IOPS unless the
/// host's CPU work per write is about twice the model's. That is not how the
/// real PC lost them: seed 001's disk stats under CFQ have 47 of the 50
/// writes at sda (in_queue / runtime), 3.24 ms each there against 1.76 under
/// noop, 86 µs in dm-crypt, the drive busy 99.93% of the time and fio's CPU
/// per write unchanged. So CFQ kept the drive busy at its dispatch depth
/// (the active queue's `quantum` = 8) and the drive finished 14.5k writes a
/// second there, against 26.2k at noop's 31: a depth-dependent drive the
/// documents do not describe.
#[test]
#[ignore = "E4's 1.3x is not reproduced with 2.6.39 CFQ either (ratio 1.00, noop 26180 vs \
            cfq 26179 IOPS on desktop-ssd); see the comment"]
fn e4_as_published_noop_gets_1_3x_cfq_iops() {
    let name = "cfq-e4-sata-ssd.fio";
    let spec = |s: &str| {
        RunSpec::from_text(name, "")
            .scheduler(s)
            .device("desktop-ssd")
            .kernel("2.6.39")
    };
    let (noop, _) = e4_numbers(&run_with(name, spec("noop")));
    let (cfq, _) = e4_numbers(&run_with(name, spec("cfq")));
    assert!(noop >= 1.3 * cfq, "noop {noop:.0} vs cfq {cfq:.0} IOPS");
}

#[test]
#[ignore = "E4's 1.3x is not reproduced by the 4.19 algorithm (ratio 1.00); see the comment"]
fn e4_noop_gets_1_3x_cfq_iops_on_the_sata_ssd() {
    let name = "cfq-e4-sata-ssd.fio";
    let (noop, _) = e4_numbers(&run(name, "noop", "sata-ssd"));
    let (cfq, _) = e4_numbers(&run(name, "cfq", "sata-ssd"));
    assert!(noop >= 1.3 * cfq, "noop {noop:.0} vs cfq {cfq:.0} IOPS");
}

#[test]
fn e4_cfq_has_the_longer_tail_on_the_sata_ssd() {
    // What E4 does show in the model: CFQ's longest write waits far longer
    // than noop's (published: max clat 248 ms against 66 ms). Queues that
    // come back when few others are busy get a small rb_key offset
    // (cfq_slice_offset: (busy queues in the group - 1) x 80 ms at level 4)
    // and go ahead of queues keyed when many were busy.
    let name = "cfq-e4-sata-ssd.fio";
    let (noop, noop_max) = e4_numbers(&run(name, "noop", "sata-ssd"));
    let (cfq, cfq_max) = e4_numbers(&run(name, "cfq", "sata-ssd"));
    eprintln!(
        "E4: noop {noop:.0} IOPS max clat {:.1} ms; cfq {cfq:.0} IOPS max clat {:.1} ms; IOPS ratio {:.2}",
        noop_max / 1e6,
        cfq_max / 1e6,
        noop / cfq
    );
    assert!(
        cfq_max > 3.0 * noop_max,
        "cfq max {cfq_max:.0} vs noop {noop_max:.0} ns"
    );
}

/// p99.9 of the completion latency (ns) of the single reported group.
fn e4_p999(rep: &RunReport) -> f64 {
    let json: serde_json::Value =
        serde_json::from_str(&elevator::report::fio_json::to_string(rep)).expect("JSON");
    json["jobs"][0]["write"]["clat_ns"]["percentile"]["99.900000"]
        .as_f64()
        .expect("p99.9")
}

#[test]
fn e4_sync_noidle_queues_preempt_each_other_only_from_4_6() {
    // Before 4.6 a sync-noidle queue preempted an empty active queue of its
    // tree only when the two were the whole tree, and (before 3.2) an
    // empty active queue that would not idle was not preempted at all; so
    // 2.6.39 CFQ serves E4's 50 seeky QD1 writers in rb_key order, and its
    // tail is the drive's, as noop's. From 4.6 every arrival preempts and is
    // keyed a second before the tree's first queue: queues keyed normally
    // wait behind them (measured p99.9: 2.6.39 7.5 ms, 4.19 20.6 ms, noop
    // 7.6 ms under both, with the refitted desktop-ssd).
    let name = "cfq-e4-sata-ssd.fio";
    let p999 = |sched: &str, kernel: &str| {
        let spec = RunSpec::from_text(name, "")
            .scheduler(sched)
            .device("desktop-ssd")
            .kernel(kernel);
        e4_p999(&run_with(name, spec))
    };
    let (old_noop, old_cfq) = (p999("noop", "2.6.39"), p999("cfq", "2.6.39"));
    let (new_noop, new_cfq) = (p999("noop", "4.19"), p999("cfq", "4.19"));
    assert!(
        old_cfq < 1.1 * old_noop,
        "2.6.39: cfq p99.9 {old_cfq:.0} vs noop {old_noop:.0} ns"
    );
    assert!(
        new_cfq > 2.0 * new_noop,
        "4.19: cfq p99.9 {new_cfq:.0} vs noop {new_noop:.0} ns"
    );
}

#[test]
fn a_switch_away_from_tpps_waits_for_every_cgroups_requests() {
    // The seed's backport bug: the drain before a switch waited only for the
    // root cgroup's request pool, so requests of other cgroups completed
    // under the next scheduler. Here every job is in a cgroup (the root pool
    // is empty) and the disk is slow: the drain must last until their
    // requests are done.
    let text = "[global]\ndirect=1\nioengine=libaio\nbs=4k\nrw=randwrite\niodepth=64\nruntime=2\ntime_based\nfilename=/dev/sdX\n\
                [a]\ncgroup=a\ncgroup_weight=1000\n[b]\ncgroup=b\ncgroup_weight=200\n";
    let spec = RunSpec::from_text("switch.fio", "")
        .scheduler("tpps")
        .device("hdd")
        .switch(NS_PER_SEC, "noop");
    let rep = run_text("switch.fio", text, spec);
    let Some(SwitchOutcome::Switched { drain_start, done }) =
        rep.elevator.switch_log.first().copied()
    else {
        panic!("no switch: {:?}", rep.elevator.switch_log);
    };
    // Two pools of ~64 requests each at ~100-300 IOPS.
    let drain = done - drain_start;
    eprintln!("tpps -> noop drained in {:.1} ms", drain as f64 / 1e6);
    assert!(
        drain > 100_000_000,
        "drained in {drain} ns: cgroup requests not waited for"
    );
    for j in &rep.jobs {
        assert!(
            j.stats.total_ios(Ddir::Write) > 50,
            "{} starved",
            j.spec.name
        );
    }
}

#[test]
fn elevator_schedulers_lists_every_cfq_tunable_with_its_default() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_elevator"))
        .arg("schedulers")
        .output()
        .expect("elevator schedulers runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let cfq = text
        .split("\n\n")
        .find(|b| b.starts_with("cfq "))
        .expect("a cfq entry");
    assert!(cfq.contains("; simulated)"), "{cfq}");
    // Linux 4.19 cfq_attrs with their defaults (ms, or us for *_us).
    let expected = [
        ("quantum", "8"),
        ("fifo_expire_sync", "125"),
        ("fifo_expire_async", "250"),
        ("back_seek_max", "16384"),
        ("back_seek_penalty", "2"),
        ("slice_sync", "100"),
        ("slice_sync_us", "100000"),
        ("slice_async", "40"),
        ("slice_async_us", "40000"),
        ("slice_async_rq", "2"),
        ("slice_idle", "8"),
        ("slice_idle_us", "8000"),
        ("group_idle", "8"),
        ("group_idle_us", "8000"),
        ("low_latency", "1"),
        ("target_latency", "300"),
        ("target_latency_us", "300000"),
    ];
    let lines: Vec<&str> = cfq.lines().filter(|l| l.contains("iosched/")).collect();
    assert_eq!(lines.len(), expected.len(), "{cfq}");
    for (line, (name, default)) in lines.iter().zip(expected) {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[0], format!("iosched/{name}"), "{line}");
        assert_eq!(words[1], "default", "{line}");
        assert_eq!(words[2], default, "{line}");
    }
    let tpps = text
        .split("\n\n")
        .find(|b| b.starts_with("tpps "))
        .expect("a tpps entry");
    assert!(
        tpps.contains("; simulated)") && tpps.contains("tunables: none"),
        "{tpps}"
    );
}

#[test]
fn tpps_with_fewer_requests_than_its_dispatch_threshold_still_finishes() {
    // nr_requests may be set down to 4; below MIN_DISPATCH_RQ (64) the ali
    // code never dispatches. The model dispatches once the driver is empty
    // (found by the run fuzzer: the run never ended).
    let text =
        "[global]\nfilename=/dev/sdb\nsize=4m\niodepth=32\nioengine=libaio\ndirect=1\n[a]\n[b]\n";
    for nr in ["4", "32"] {
        let spec = RunSpec::from_text("t.fio", "")
            .scheduler("tpps")
            .device("sata-ssd")
            .set("nr_requests", nr);
        let rep = run_text("t.fio", text, spec);
        let reads: u64 = rep.jobs.iter().map(|j| j.stats.total_ios(Ddir::Read)).sum();
        assert_eq!(reads, 2 * 1024, "nr_requests={nr}");
    }
}
