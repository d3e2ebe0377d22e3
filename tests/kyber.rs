//! kyber scenario tests: job files under tests/jobs/kyber-*.fio through the
//! library API, each compared with none on the same device and seed.

use elevator::job::Ddir;
use elevator::report::RunReport;
use elevator::run::{JobSource, RunSpec};
use elevator::stats::LatKind;

fn job(name: &str) -> String {
    let path = format!("{}/tests/jobs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn run(name: &str, sched: &str, device: &str, sets: &[(&str, &str)]) -> RunReport {
    run_in(None, name, sched, device, sets)
}

/// `run` as kernel `kernel` (`--kernel`), or the newest.
fn run_in(
    kernel: Option<&str>,
    name: &str,
    sched: &str,
    device: &str,
    sets: &[(&str, &str)],
) -> RunReport {
    let mut spec = RunSpec::new(JobSource::text(name, &job(name)))
        .scheduler(sched)
        .device(device);
    if let Some(k) = kernel {
        spec = spec.kernel(k);
    }
    for (k, v) in sets {
        spec = spec.set(k, v);
    }
    elevator::run::run(&spec).expect("simulation runs")
}

/// Jobs whose name is `job`: (I/Os, IOPS summed over jobs, mean latency ns).
fn group(rep: &RunReport, job: &str, d: Ddir) -> (u64, f64, f64) {
    let (mut ios, mut iops, mut lat) = (0u64, 0.0, 0.0);
    for j in rep.jobs.iter().filter(|j| j.spec.name == job) {
        let n = j.stats.total_ios(d);
        ios += n;
        iops += n as f64 / (j.stats.runtime_ns() as f64 / 1e9);
        lat += j.stats.lat_mean_ns(d) * n as f64;
    }
    (ios, iops, if ios > 0 { lat / ios as f64 } else { 0.0 })
}

/// p99 completion latency (ns) of the first job named `job`.
fn p99(rep: &RunReport, job: &str, d: Ddir) -> u64 {
    percentile(rep, job, d, 99.0)
}

/// Percentile `pct` of the completion latency (ns) of the first job named
/// `job`.
fn percentile(rep: &RunReport, job: &str, d: Ddir, pct: f64) -> u64 {
    let j = rep
        .jobs
        .iter()
        .find(|j| j.spec.name == job)
        .expect("job present");
    j.stats
        .percentiles(LatKind::Clat, d)
        .into_iter()
        .find(|&(p, _)| (p - pct).abs() < 1e-9)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("p{pct} listed"))
}

const E2: &str = "kyber-e2-sata-ssd.fio";
/// E2 as published: kernel 4.12 on the E2 drive's profile, 300 s.
const E2_PUBLISHED: &str = "kyber-e2-published.fio";
const E2_DEVICE: &str = "intel-s3520";
const NVME: &str = "kyber-nvme-seqwrite-qd1-reader.fio";
const HDD: &str = "kyber-hdd-writers-reader.fio";

/// (none, kyber) reader_20 mean read latency and writers' summed IOPS on E2.
fn e2_pair(kyber_sets: &[(&str, &str)]) -> ((f64, f64), (f64, f64)) {
    e2_pair_in(None, E2, "sata-ssd", kyber_sets)
}

/// `e2_pair` for job `name` on `device` as kernel `kernel`.
fn e2_pair_in(
    kernel: Option<&str>,
    name: &str,
    device: &str,
    kyber_sets: &[(&str, &str)],
) -> ((f64, f64), (f64, f64)) {
    let none = run_in(kernel, name, "none", device, &[]);
    let kyber = run_in(kernel, name, "kyber", device, kyber_sets);
    let (n, _, read_none) = group(&none, "reader_20", Ddir::Read);
    let (m, _, read_kyber) = group(&kyber, "reader_20", Ddir::Read);
    assert!(n > 1000 && m > 1000, "reads: none {n}, kyber {m}");
    let (_, w_none, _) = group(&none, "writers", Ddir::Write);
    let (_, w_kyber, _) = group(&kyber, "writers", Ddir::Write);
    eprintln!(
        "E2 {kernel:?} {device} {kyber_sets:?}: reader_20 mean read latency none {:.0} us, kyber {:.0} us \
         ({:.2}x lower); writers IOPS none {w_none:.0}, kyber {w_kyber:.0}",
        read_none / 1e3,
        read_kyber / 1e3,
        read_none / read_kyber
    );
    ((read_none, read_kyber), (w_none, w_kyber))
}

#[test]
fn e2_writers_lose_iops_and_readers_gain_under_kyber() {
    let ((read_none, read_kyber), (w_none, w_kyber)) = e2_pair(&[]);
    assert!(
        w_kyber < w_none,
        "writers: kyber {w_kyber:.0} vs none {w_none:.0}"
    );
    // Reads wait in their own domain list and are served within a write
    // batch (8) instead of behind every queued write.
    assert!(
        read_kyber < read_none,
        "reads: kyber {read_kyber:.0} vs none {read_none:.0}"
    );
}

#[test]
fn e2_as_published_reader_latency_3x_lower_and_writers_lose() {
    // Kernel 4.12's kyber (the documents' kernel): reads queued behind the
    // drive's write backlog make a 10 ms window's mean read latency bad
    // while writes are good, and every such window takes 1/8 to 1/2 of the
    // sync-write domain's depth, which nothing gives back while both are
    // good; the depth falls over minutes, so the job runs 300 s. Measured:
    // none 1129 us, kyber 328 us (3.45x); writers 38641 vs 35339 IOPS. (The
    // 6.17 algorithm on sata-ssd: 1.60x, see below.)
    let ((read_none, read_kyber), (w_none, w_kyber)) =
        e2_pair_in(Some("4.12"), E2_PUBLISHED, E2_DEVICE, &[]);
    assert!(
        read_none >= 3.0 * read_kyber,
        "{read_none:.0} vs {read_kyber:.0}"
    );
    assert!(w_kyber < w_none, "writers {w_kyber:.0} vs {w_none:.0}");
}

#[test]
fn e2_v617_on_sata_ssd_gains_less_than_v412() {
    // The 6.17 heuristics never see a domain's I/O p90 over target on the
    // sata-ssd model (reads are fast at the drive): what reads gain is the
    // batching of dispatch by domain, 1.60x (none 1105 us, kyber 691 us).
    let ((read_none, read_kyber), _) = e2_pair(&[]);
    assert!(read_kyber < read_none && read_none < 3.0 * read_kyber);
}

/// With both targets at 1 s, 4.12's kyber never opens a statistics window,
/// so its depths stay at 256/128 and what is left is domain batching under
/// the 4.11-4.14 dispatch loop with kblockd's coalesced re-runs: reads
/// 1.013 ms against none's 1.129 ms (-10 %).
#[test]
fn e2_with_one_second_targets_behaves_like_none() {
    let sets = [
        ("iosched/read_lat_nsec", "1000000000"),
        ("iosched/write_lat_nsec", "1000000000"),
    ];
    let ((read_none, read_kyber), _) = e2_pair_in(Some("4.12"), E2_PUBLISHED, E2_DEVICE, &sets);
    let diff = (read_kyber - read_none).abs() / read_none;
    assert!(
        diff <= 0.30,
        "kyber with 1 s targets {diff:.2} away from none"
    );
}

#[test]
fn e2_targets_change_nothing_when_kyber_never_throttles() {
    // No domain is congested on E2 in the model, so the targets (default,
    // or 1 s) give the same dispatch decisions: every job's I/Os and mean
    // latencies are the same.
    let a = run(E2, "kyber", "sata-ssd", &[]);
    let b = run(
        E2,
        "kyber",
        "sata-ssd",
        &[
            ("iosched/read_lat_nsec", "1000000000"),
            ("iosched/write_lat_nsec", "1000000000"),
        ],
    );
    let sig = |r: &RunReport| -> Vec<(u64, u64, u64, u64)> {
        r.jobs
            .iter()
            .map(|j| {
                (
                    j.stats.total_ios(Ddir::Read),
                    j.stats.total_ios(Ddir::Write),
                    j.stats.lat_mean_ns(Ddir::Read) as u64,
                    j.stats.lat_mean_ns(Ddir::Write) as u64,
                )
            })
            .collect()
    };
    assert_eq!(sig(&a), sig(&b));
}

#[test]
#[ignore = "issue 10's threshold, not met: the nvme model serves reads beside queued \
            writes (none's reader p99 is 169 us), so there is no tail for kyber to cut \
            (169 us under both); micron-9100, whose reads wait for flash programs, gives \
            3.16 ms under both; real NVMe drives show at most 26% (README, kyber). With a \
            controller that holds reads behind writes waiting for buffer space kyber brings \
            the median to its target (3.56 -> 1.74 ms) and the p99 stays the warm-up's 3.5 ms \
            (kyber_throttles_writes_to_its_read_target_when_the_drive_holds_reads_behind_them)"]
fn nvme_qd1_reader_tail_under_sequential_write_interference() {
    let none = run(NVME, "none", "nvme", &[]);
    let kyber = run(NVME, "kyber", "nvme", &[]);
    let (p_none, p_kyber) = (
        p99(&none, "reader", Ddir::Read),
        p99(&kyber, "reader", Ddir::Read),
    );
    eprintln!(
        "NVMe QD1 reader p99: none {} us, kyber {} us",
        p_none / 1000,
        p_kyber / 1000
    );
    assert!(
        p_kyber * 10 <= p_none,
        "p99 none {p_none} vs kyber {p_kyber}"
    );
}

/// `run` on the `nvme` profile with its controller holding later commands
/// behind writes that wait for buffer space.
fn run_held_front_end(sched: &str, sets: &[(&str, &str)]) -> RunReport {
    let path = format!("{}/profiles/nvme.toml", env!("CARGO_MANIFEST_DIR"));
    let builtin = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let off = "front_end_waits_for_buffer = false";
    assert!(builtin.contains(off), "{path} names the switch");
    let text = builtin.replace(off, "front_end_waits_for_buffer = true");
    let name = "kyber-nvme-held-front-end.fio";
    let mut spec = RunSpec::new(JobSource::text(name, &job(name))).scheduler(sched);
    spec.device = elevator::run::DeviceSource {
        name: "nvme-held-front-end".into(),
        profile: Some(text),
    };
    for (k, v) in sets {
        spec = spec.set(k, v);
    }
    elevator::run::run(&spec).expect("simulation runs")
}

#[test]
fn kyber_throttles_writes_to_its_read_target_when_the_drive_holds_reads_behind_them() {
    // Under none every read waits behind the 64 writes queued at the drive
    // (64 x 64 KiB at the 1.2 GB/s drain: 3.5 ms). kyber sees reads' I/O
    // latency over read_lat_nsec (2 ms) and halves the write domain's depth
    // at each such timer run until reads are back under the target, then
    // leaves it: reads settle near, not far below, the target (measured:
    // median 3.56 -> 1.75 ms, 32 writes ahead). With a 250 us target it
    // throttles writes to one token, and the sequential writes waiting for
    // it merge up to max_sectors_kb (512 KiB): reads then wait for one
    // merged write, 0.44 ms. Neither reaches the 10x of issue 10 on the
    // p99 (which the first seconds, before the timer has acted, decide).
    let none = run_held_front_end("none", &[]);
    let kyber = run_held_front_end("kyber", &[]);
    let tight = run_held_front_end("kyber", &[("iosched/read_lat_nsec", "250000")]);
    let (m_none, m_kyber, m_tight) = (
        percentile(&none, "reader", Ddir::Read, 50.0),
        percentile(&kyber, "reader", Ddir::Read, 50.0),
        percentile(&tight, "reader", Ddir::Read, 50.0),
    );
    eprintln!(
        "held front end, reader median: none {} us, kyber {} us, kyber 250 us target {} us",
        m_none / 1000,
        m_kyber / 1000,
        m_tight / 1000
    );
    const MS: u64 = 1_000_000;
    assert!(m_none > 3 * MS, "none {m_none}");
    assert!(m_kyber <= 2 * MS && m_kyber > MS, "kyber {m_kyber}");
    assert!(m_tight < MS / 2, "kyber at 250 us {m_tight}");
    // The writer's throughput is the drive's drain rate under all three.
    let w = |r: &RunReport| group(r, "writer", Ddir::Write).1;
    for r in [&kyber, &tight] {
        assert!(
            (w(r) / w(&none) - 1.0).abs() < 0.02,
            "{} vs {}",
            w(r),
            w(&none)
        );
    }
}

#[test]
fn schedulers_lists_every_kyber_tunable_with_its_default() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_elevator"))
        .arg("schedulers")
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let kyber: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("kyber "))
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(kyber[0].contains("simulated"), "{kyber:?}");
    let t = elevator::sched::find("kyber").unwrap().tunables();
    assert_eq!(t.len(), 2);
    for (name, default) in [("read_lat_nsec", "2000000"), ("write_lat_nsec", "10000000")] {
        let line = kyber
            .iter()
            .find(|l| l.contains(&format!("iosched/{name} ")))
            .unwrap_or_else(|| panic!("{name} missing: {kyber:?}"));
        assert!(line.contains(&format!("default {default} ")), "{line}");
        assert!(line.contains("unit ns"), "{line}");
    }
}

#[test]
fn hdd_reader_gains_from_domain_batches_not_from_throttling() {
    // On the HDD every domain is over its target (reads at the disk take
    // milliseconds, writes wait hundreds of them in the queue), so every
    // rescale is upward and the depths stay at their maxima: what the
    // reader gains over none comes from kyber serving reads in batches of
    // 16 against writes' 8. Targets no latency reaches give the same run.
    let none = run(HDD, "none", "hdd", &[]);
    let kyber = run(HDD, "kyber", "hdd", &[]);
    let (_, w_none, _) = group(&none, "writers", Ddir::Write);
    let (_, w_kyber, _) = group(&kyber, "writers", Ddir::Write);
    let (_, r_none, _) = group(&none, "reader", Ddir::Read);
    let (_, r_kyber, _) = group(&kyber, "reader", Ddir::Read);
    eprintln!(
        "HDD: writers IOPS none {w_none:.1}, kyber {w_kyber:.1}; reader IOPS none {r_none:.1}, kyber {r_kyber:.1}"
    );
    assert!(w_kyber < w_none, "writers {w_kyber:.1} vs {w_none:.1}");
    assert!(r_kyber > r_none, "reader {r_kyber:.1} vs {r_none:.1}");
    let loose = run(
        HDD,
        "kyber",
        "hdd",
        &[
            ("iosched/read_lat_nsec", "10000000000"),
            ("iosched/write_lat_nsec", "10000000000"),
        ],
    );
    let (_, w_loose, _) = group(&loose, "writers", Ddir::Write);
    let (_, r_loose, _) = group(&loose, "reader", Ddir::Read);
    assert_eq!((w_loose, r_loose), (w_kyber, r_kyber));
}

#[test]
fn e2_tight_read_target_shrinks_the_write_domain() {
    // A 100 us read target (reads' I/O p90 on the SSD is over it: congestion
    // every window) and a 100 ms write target (writes' p99, ~20 ms with
    // garbage collection, is then "good"): each congested window scales
    // the write depth by (p99 bucket + 1) / 4, down from 128. Writers lose
    // IOPS, reads get faster than under kyber's defaults.
    let ((_, read_default), (_, w_default)) = e2_pair(&[]);
    let tight = [
        ("iosched/read_lat_nsec", "100000"),
        ("iosched/write_lat_nsec", "100000000"),
    ];
    let ((read_none, read_tight), (w_none, w_tight)) = e2_pair(&tight);
    assert!(
        w_tight < w_default && w_tight < w_none,
        "writers {w_tight:.0}"
    );
    assert!(
        read_tight < read_default,
        "reads {read_tight:.0} vs {read_default:.0}"
    );
    assert!(read_tight < read_none);
}
