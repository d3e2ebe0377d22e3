//! BFQ scenario tests: each runs a job file of tests/jobs/ through the whole
//! simulation (job parser, tasks, block layer, BFQ, device model) and checks
//! what BFQ is for: weight-proportional sharing between cgroups, strict
//! I/O-priority classes with the idle class protected from starvation, low
//! latency for a new interactive reader, strict guarantees, throughput for
//! sequential readers on a disk.

use elevator::job::Ddir;
use elevator::report::RunReport;
use elevator::run::{JobSource, RunSpec};

fn job(name: &str) -> JobSource {
    let path = format!("{}/tests/jobs/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    JobSource::text(name, &text)
}

fn run(name: &str, sched: &str, device: &str, sets: &[(&str, &str)]) -> RunReport {
    let mut spec = RunSpec::new(job(name)).scheduler(sched).device(device);
    for (k, v) in sets {
        spec = spec.set(k, v);
    }
    elevator::run::run(&spec).unwrap_or_else(|e| panic!("{name} on {device}: {e}"))
}

/// Per job name (numjobs clones summed): (I/Os, IOPS, mean latency in us).
fn by_job(rep: &RunReport, name: &str) -> (u64, f64, f64) {
    let mut ios = 0;
    let mut iops = 0.0;
    let mut lat = 0.0;
    for j in rep.jobs.iter().filter(|j| j.spec.name == name) {
        for d in [Ddir::Read, Ddir::Write] {
            let n = j.stats.total_ios(d);
            if n == 0 {
                continue;
            }
            ios += n;
            iops += n as f64 / (j.stats.runtime_ns() as f64 / 1e9);
            lat += j.stats.lat_mean_ns(d) * n as f64;
        }
    }
    assert!(
        rep.jobs.iter().any(|j| j.spec.name == name),
        "no job named {name}"
    );
    (
        ios,
        iops,
        if ios > 0 { lat / ios as f64 / 1e3 } else { 0.0 },
    )
}

fn weights<'a>(pairs: &'a [(&'a str, &'a str)]) -> Vec<(String, &'a str)> {
    pairs
        .iter()
        .map(|(g, w)| (format!("cgroup:{g}/blkio.bfq.weight"), *w))
        .collect()
}

fn run_weighted(name: &str, device: &str, pairs: &[(&str, &str)]) -> RunReport {
    let w = weights(pairs);
    let sets: Vec<(&str, &str)> = w.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    run(name, "bfq", device, &sets)
}

fn two_group_ratio(device: &str, extra: &[(&str, &str)]) -> (f64, f64, f64) {
    let w = weights(&[("g100", "100"), ("g200", "200")]);
    let mut sets: Vec<(&str, &str)> = w.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    sets.extend_from_slice(extra);
    let rep = run("bfq-two-groups.fio", "bfq", device, &sets);
    let (_, a, _) = by_job(&rep, "g100");
    let (_, b, _) = by_job(&rep, "g200");
    (b / a, a, b)
}

/// BFQ shares by weight while each group's requests fit its share of the
/// scheduler tags (`bfq_limit_depth`: nr_requests × weight / Σweights).
/// On `hdd` the default nr_requests is 64 (2 × its queue depth 32), which
/// gives g100 21 tags against fio's 32 requests; the test raises it to 128
/// as a user would, and the next test covers the default.
#[test]
fn two_groups_share_one_to_two_on_hdd_and_ssd() {
    for (device, extra) in [
        ("hdd", &[("nr_requests", "128")][..]),
        ("sata-ssd", &[][..]),
    ] {
        let (ratio, a, b) = two_group_ratio(device, extra);
        assert!(
            (ratio - 2.0).abs() <= 0.2,
            "{device}: g200/g100 = {ratio:.3} ({b:.0} / {a:.0} IOPS), want 2 within 10%"
        );
    }
}

/// A group over its tag cap allocates with a shallow depth of 1, which
/// since v6.17 is tag 0 of the whole queue, shared with every other
/// allocation: on `hdd` with its default 64 tags g100 (cap 21, 32
/// requests) waits for that one tag and gets less than its half of g200's
/// service; before v6.17 a depth of 1 was one tag per 16-bit word, 4 tags.
#[test]
fn a_group_over_its_tag_cap_gets_less_than_its_weight() {
    let (ratio, a, b) = two_group_ratio("hdd", &[]);
    assert!(
        ratio >= 2.15,
        "hdd, 64 tags: g200/g100 = {ratio:.3} ({b:.0} / {a:.0} IOPS), want g100 short of its share"
    );
}

/// The real kernel's four weighted random writers (README, "BFQ against
/// the real kernel"; tests/jobs/bfq-weights-randwrite.fio, QD32 each): with
/// BFQ's default 256 tags the lighter groups' caps (¾ × 256 × w / Σw, half
/// that while a queue is weight-raised) fall below 32 and the shares leave
/// the weights; with 1024 tags every group fits and they follow them. Both
/// measured on 6.18 (256: three of five rounds starve two groups; 1024:
/// proportional within 6 points).
#[test]
fn weighted_writers_follow_their_weights_only_with_enough_tags() {
    let groups = [
        ("w1000", "1000"),
        ("w800", "800"),
        ("w600", "600"),
        ("w400", "400"),
    ];
    let shares = |nr: &str| -> Vec<f64> {
        // The job file sets the weights (fio's cgroup_weight).
        let rep = run(
            "bfq-weights-randwrite.fio",
            "bfq",
            "nvme",
            &[("nr_requests", nr)],
        );
        let iops: Vec<f64> = groups.iter().map(|(g, _)| by_job(&rep, g).1).collect();
        let total: f64 = iops.iter().sum();
        iops.iter().map(|i| i / total).collect()
    };
    let ideal: Vec<f64> = groups
        .iter()
        .map(|(_, w)| w.parse::<f64>().unwrap() / 2800.0)
        .collect();
    let worst = |got: &[f64]| {
        got.iter()
            .zip(&ideal)
            .map(|(g, w)| (g - w).abs() / w)
            .fold(0.0, f64::max)
    };
    let few = shares("256");
    let many = shares("1024");
    // 256 tags leave the weights: at least 20% off for some group and twice
    // as far off as with 1024 (28% here; over 30% before 6.10's per-bio
    // plug changed how requests reach BFQ; the kernel starved two groups in
    // three rounds of five, which the model does not reach).
    assert!(
        worst(&few) > 0.2 && worst(&few) > 2.0 * worst(&many),
        "256 tags: shares {few:.3?} stay near {ideal:.3?} (1024: {many:.3?})"
    );
    assert!(
        worst(&many) <= 0.15,
        "1024 tags: shares {many:.3?} not within 15% of {ideal:.3?}"
    );
}

#[test]
fn four_groups_share_in_proportion_on_ssd() {
    let groups = [
        ("w1000", "1000"),
        ("w800", "800"),
        ("w600", "600"),
        ("w400", "400"),
    ];
    let rep = run_weighted("bfq-four-groups.fio", "sata-ssd", &groups);
    let iops: Vec<f64> = groups.iter().map(|(g, _)| by_job(&rep, g).1).collect();
    let total: f64 = iops.iter().sum();
    for ((g, w), got) in groups.iter().zip(&iops) {
        let want = w.parse::<f64>().unwrap() / 2800.0;
        let share = got / total;
        assert!(
            (share - want).abs() <= 0.15 * want,
            "{g}: share {:.1}% want {:.1}% (within 15%)",
            share * 100.0,
            want * 100.0
        );
    }
}

#[test]
fn rt_class_gets_the_device_against_be() {
    for device in ["hdd", "sata-ssd"] {
        let rep = run("bfq-rt-vs-be.fio", "bfq", device, &[]);
        let (rt, _, _) = by_job(&rep, "rt");
        let (be, _, _) = by_job(&rep, "be");
        let share = rt as f64 / (rt + be) as f64;
        assert!(
            share >= 0.9,
            "{device}: RT share {share:.3} ({rt} vs {be} I/Os)"
        );
    }
}

#[test]
fn idle_class_waits_for_idle_time_but_never_starves() {
    for device in ["hdd", "sata-ssd"] {
        // Against a saturating BE job: one idle-class request per 200 ms
        // (HZ/5), about 5 per second, never none.
        let rep = run("bfq-idle-class.fio", "bfq", device, &[]);
        let (be, _, _) = by_job(&rep, "be");
        let (idle, idle_iops, _) = by_job(&rep, "idle");
        assert!(
            idle >= 20,
            "{device}: idle class starved ({idle} I/Os in 10 s)"
        );
        assert!(
            idle_iops <= 6.0,
            "{device}: idle class got {idle_iops:.1} IOPS against a busy BE job"
        );
        assert!(be > 20 * idle, "{device}: BE {be} vs idle {idle}");
        // Against a BE job that leaves the device idle between its reads,
        // the idle class gets what is left.
        let rep = run("bfq-idle-class-gaps.fio", "bfq", device, &[]);
        let (be, _, _) = by_job(&rep, "be");
        let (idle, _, _) = by_job(&rep, "idle");
        assert!(idle > 5 * be, "{device}: idle {idle} vs thinking BE {be}");
    }
}

#[test]
fn low_latency_protects_a_new_reader_from_sequential_writers_on_hdd() {
    let lat = |ll: &str| {
        let rep = run(
            "bfq-low-latency.fio",
            "bfq",
            "hdd",
            &[("iosched/low_latency", ll)],
        );
        let (n, _, lat) = by_job(&rep, "reader");
        assert!(n > 20, "low_latency={ll}: the reader did {n} I/Os");
        lat
    };
    let (on, off) = (lat("1"), lat("0"));
    assert!(
        off >= 2.0 * on,
        "reader mean latency {on:.0} us with low_latency=1, {off:.0} us with 0"
    );
}

#[test]
fn strict_guarantees_keeps_one_request_in_the_device() {
    // At most one request in the device: the device serves at its
    // depth-1 rate (Little's law), whatever the jobs' depth.
    let total = |rep: &RunReport| by_job(rep, "a").1 + by_job(rep, "b").1;
    let strict = total(&run(
        "bfq-strict.fio",
        "bfq",
        "nvme",
        &[("iosched/strict_guarantees", "1")],
    ));
    let default = total(&run("bfq-strict.fio", "bfq", "nvme", &[]));
    // The same device at depth 1 without a scheduler.
    let text = std::fs::read_to_string(format!(
        "{}/tests/jobs/bfq-strict.fio",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replace("iodepth=32", "iodepth=1")
    .replace("[b]\nnew_group\n", "");
    let mut spec = RunSpec::new(JobSource::text("qd1.fio", &text))
        .scheduler("none")
        .device("nvme");
    spec.machine.cpus = 2;
    let qd1 = by_job(&elevator::run::run(&spec).unwrap(), "a").1;
    assert!(
        strict <= qd1 * 1.1,
        "strict {strict:.0} IOPS, the device at depth 1 {qd1:.0}"
    );
    assert!(
        strict >= qd1 * 0.7,
        "strict {strict:.0} vs depth 1 {qd1:.0}"
    );
    assert!(
        default > 3.0 * strict,
        "default {default:.0} vs strict {strict:.0}"
    );
}

#[test]
fn sequential_readers_far_apart_get_more_throughput_than_with_none() {
    let bw = |sched: &str| {
        let rep = run("bfq-seq-readers.fio", sched, "hdd", &[]);
        let (a, _, _) = by_job(&rep, "r1");
        let (b, _, _) = by_job(&rep, "r2");
        a + b
    };
    let (bfq, none) = (bw("bfq"), bw("none"));
    assert!(
        bfq as f64 > 2.0 * none as f64,
        "BFQ {bfq} I/Os, none {none} I/Os"
    );
}

#[test]
fn a_weight_raised_queue_holds_the_disk_for_its_raised_budget_timeout() {
    // Not a bug to fix: bfq_set_budget_timeout multiplies bfq_timeout
    // (125 ms) by weight / orig_weight, 30 for an interactive-raised queue,
    // and bfq_updated_next_req gives a waiting queue its full max_budget
    // back (2/3 of 16384 sectors at start) after the raising capped it to
    // 2 x min_budget. So the light group's queue, raised and waiting while
    // the heavy one is served first, is then served for ~3.7 s of 4 KiB
    // random reads before its budget times out; being raised, it is
    // charged its sectors and not the time (bfq_bfqq_expire charges time
    // only when wr_coeff == 1). The heavy group's reads wait that long;
    // without raising every slot ends at 125 ms.
    let w = weights(&[("heavy", "800"), ("light", "200")]);
    // (heavy's max clat ms, light's max clat ms, heavy's share of IOPS)
    // with low_latency = `ll`.
    let run_with = |ll: &str| -> (f64, f64, f64) {
        let mut sets: Vec<(&str, &str)> = w.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        sets.push(("iosched/low_latency", ll));
        let rep = run("bfq-wr-groups.fio", "bfq", "hdd", &sets);
        let max = |name: &str| {
            rep.jobs
                .iter()
                .find(|j| j.spec.name == name)
                .map(|j| j.stats.dirs[Ddir::Read as usize].clat.max as f64 / 1e6)
                .unwrap()
        };
        let (_, heavy, _) = by_job(&rep, "heavy");
        let (_, light, _) = by_job(&rep, "light");
        (max("heavy"), max("light"), heavy / (heavy + light))
    };
    let (heavy_on, light_on, share_on) = run_with("1");
    let (heavy_off, light_off, share_off) = run_with("0");
    eprintln!(
        "max clat ms heavy/light: low_latency=1 {heavy_on:.0}/{light_on:.0} (heavy's share \
         {share_on:.2}), 0 {heavy_off:.0}/{light_off:.0} ({share_off:.2})"
    );
    assert!(
        (3000.0..4500.0).contains(&heavy_on),
        "heavy max {heavy_on:.0} ms"
    );
    // Without raising no slot is stretched: the heavy group's worst read
    // waits a few of the light group's 125 ms slots and seeks (320 ms when
    // the submitting task ran the queue, 513 ms since kblockd runs it).
    assert!(heavy_off < 1000.0, "heavy max {heavy_off:.0} ms");
    assert!(share_off > 0.7, "heavy's share {share_off:.2}");
    assert!(share_on < share_off, "{share_on:.2} vs {share_off:.2}");
}
