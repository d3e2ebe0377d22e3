//! Scenario tests of the `hdd` and `sata-ssd` device models: whole fio jobs
//! through the block layer and a scheduler, measured as fio reports them.

use elevator::device::{load_profile, Profile};
use elevator::job::Ddir;
use elevator::report::RunReport;
use elevator::run::{JobSource, RunSpec};

/// A run on a profile the test built (not a built-in or a file).
struct Cfg {
    spec: RunSpec,
    profile: Option<Profile>,
}

impl Cfg {
    fn set(mut self, name: &str, value: &str) -> Cfg {
        self.spec = self.spec.set(name, value);
        self
    }
}

fn cfg_with(sched: &str, profile: Profile) -> Cfg {
    Cfg {
        spec: RunSpec::from_text("test.fio", "").scheduler(sched),
        profile: Some(profile),
    }
}

fn cfg(sched: &str, device: &str) -> Cfg {
    Cfg {
        spec: RunSpec::from_text("test.fio", "")
            .scheduler(sched)
            .device(device),
        profile: None,
    }
}

fn run(text: &str, c: Cfg) -> RunReport {
    let mut spec = c.spec;
    spec.job = JobSource::text("test.fio", text);
    match &c.profile {
        Some(p) => elevator::run::run_on(&spec, p),
        None => elevator::run::run(&spec),
    }
    .expect("simulation runs")
}

/// (ios, iops, mean latency ns, bytes/s) summed over jobs for one direction.
fn total(rep: &RunReport, d: Ddir) -> (u64, f64, f64, f64) {
    let (mut ios, mut iops, mut lat_w, mut bw) = (0, 0.0, 0.0, 0.0);
    for j in &rep.jobs {
        let n = j.stats.total_ios(d);
        ios += n;
        let rt = j.stats.runtime_ns() as f64 / 1e9;
        if rt > 0.0 {
            iops += n as f64 / rt;
            bw += j.stats.io_bytes(d) as f64 / rt;
        }
        lat_w += j.stats.lat_mean_ns(d) * n as f64;
    }
    let lat = if ios > 0 { lat_w / ios as f64 } else { 0.0 };
    (ios, iops, lat, bw)
}

fn job(rw: &str, bs: &str, depth: u32, runtime: &str) -> String {
    format!(
        "[global]\nioengine=libaio\ndirect=1\nrw={rw}\nbs={bs}\niodepth={depth}\n\
         runtime={runtime}\ntime_based\nfilename=/dev/sda\n[j]\n"
    )
}

// ----- hdd -------------------------------------------------------------------

#[test]
fn hdd_random_read_qd1_is_about_80_iops() {
    let rep = run(&job("randread", "4k", 1, "20"), cfg("none", "hdd"));
    let (ios, iops, lat, _) = total(&rep, Ddir::Read);
    eprintln!("hdd randread 4k QD1: {iops:.1} IOPS, {:.2} ms", lat / 1e6);
    assert!(ios > 500, "{ios} I/Os");
    assert!((60.0..130.0).contains(&iops), "QD1 {iops} IOPS");
}

#[test]
fn hdd_ncq_gives_qd32_at_least_1_5x_qd1() {
    let (_, q1, _, _) = total(
        &run(&job("randread", "4k", 1, "20"), cfg("none", "hdd")),
        Ddir::Read,
    );
    let (_, q32, lat32, _) = total(
        &run(&job("randread", "4k", 32, "20"), cfg("none", "hdd")),
        Ddir::Read,
    );
    eprintln!(
        "hdd randread 4k: QD1 {q1:.1} IOPS, QD32 {q32:.1} IOPS ({:.2}x), {:.1} ms",
        q32 / q1,
        lat32 / 1e6
    );
    assert!(q32 >= 1.5 * q1, "QD32 {q32} vs QD1 {q1}");
}

#[test]
fn hdd_sequential_read_150_to_300_mb_s() {
    for (bs, depth) in [("128k", 4), ("1m", 1)] {
        let rep = run(&job("read", bs, depth, "5"), cfg("mq-deadline", "hdd"));
        let (_, _, _, bw) = total(&rep, Ddir::Read);
        eprintln!("hdd read {bs} QD{depth}: {:.1} MB/s", bw / 1e6);
        assert!((150e6..300e6).contains(&bw), "{bs}: {bw} B/s");
    }
}

#[test]
fn hdd_qd1_random_none_and_mq_deadline_agree() {
    // One job at depth 1: the scheduler never holds two requests, so there is
    // nothing to reorder.
    let text = job("randread", "4k", 1, "20");
    let (_, a, la, _) = total(&run(&text, cfg("none", "hdd")), Ddir::Read);
    let (_, b, lb, _) = total(&run(&text, cfg("mq-deadline", "hdd")), Ddir::Read);
    eprintln!("hdd QD1 none {a:.2} IOPS {la:.0} ns, mq-deadline {b:.2} IOPS {lb:.0} ns");
    assert!((a - b).abs() < 0.02 * a, "none {a} vs mq-deadline {b}");
    assert!((la - lb).abs() < 0.02 * la, "none {la} vs mq-deadline {lb}");
}

#[test]
fn hdd_write_cache_absorbs_a_burst() {
    // 32 random writes, fewer than the cache holds, at depth 8.
    let text = "[global]\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=4k\niodepth=8\n\
                number_ios=32\nfilename=/dev/sda\n[j]\n";
    let wb = cfg("none", "hdd").set("write_cache", "write back");
    let wt = cfg("none", "hdd").set("write_cache", "write through");
    let (n_b, _, lat_b, _) = total(&run(text, wb), Ddir::Write);
    let (n_t, _, lat_t, _) = total(&run(text, wt), Ddir::Write);
    eprintln!(
        "hdd 32 random writes QD8: write back {:.3} ms, write through {:.2} ms",
        lat_b / 1e6,
        lat_t / 1e6
    );
    assert_eq!((n_b, n_t), (32, 32));
    assert!(
        lat_b * 20.0 < lat_t,
        "write back {lat_b} vs write through {lat_t}"
    );
}

#[test]
fn hdd_fsync_waits_for_the_destage() {
    // fsync after every 16 random writes: with write back the flush waits for
    // the cached writes to reach the platters.
    let text = "[global]\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=4k\niodepth=1\n\
                fsync=16\nnumber_ios=64\nfilename=/dev/sda\n[j]\n";
    let sync_mean = |wc: &str| {
        let c = cfg("none", "hdd").set("write_cache", wc);
        let rep = run(text, c);
        let s = &rep.jobs[0].stats.sync;
        assert!(s.samples >= 3, "{} syncs", s.samples);
        s.mean
    };
    let wb = sync_mean("write back");
    let wt = sync_mean("write through");
    eprintln!(
        "hdd fsync after 16 writes: write back {:.1} ms, write through {:.3} ms",
        wb / 1e6,
        wt / 1e6
    );
    // Destaging 16 random writes takes many positioning times.
    assert!(wb > 30e6, "write-back fsync {wb} ns");
    assert!(wt < 1e6, "write-through fsync {wt} ns");
}

// ----- sata-ssd ----------------------------------------------------------------

#[test]
fn sata_ssd_random_read_qd32_and_qd1_latency() {
    let (_, iops, _, _) = total(
        &run(&job("randread", "4k", 32, "1"), cfg("none", "sata-ssd")),
        Ddir::Read,
    );
    let (_, _, lat1, _) = total(
        &run(&job("randread", "4k", 1, "1"), cfg("none", "sata-ssd")),
        Ddir::Read,
    );
    eprintln!(
        "sata-ssd randread 4k: QD32 {iops:.0} IOPS, QD1 {:.1} us",
        lat1 / 1e3
    );
    assert!((40_000.0..100_000.0).contains(&iops), "QD32 {iops}");
    assert!(lat1 < 250_000.0, "QD1 latency {lat1} ns");
}

#[test]
fn sata_ssd_random_write_qd32() {
    let (_, iops, lat, _) = total(
        &run(&job("randwrite", "4k", 32, "2"), cfg("none", "sata-ssd")),
        Ddir::Write,
    );
    eprintln!(
        "sata-ssd randwrite 4k QD32 (default: 85% full, steady state): {iops:.0} IOPS, {:.2} ms",
        lat / 1e6
    );
    assert!((10_000.0..45_000.0).contains(&iops), "QD32 {iops}");
}

#[test]
fn sata_ssd_gc_costs_write_throughput_on_a_full_drive() {
    let mut empty = load_profile("sata-ssd").unwrap();
    {
        let s = empty.sata_ssd.as_mut().unwrap();
        s.initial_fill = 0.0;
        s.preconditioned = false;
    }
    let mut full = load_profile("sata-ssd").unwrap();
    full.sata_ssd.as_mut().unwrap().initial_fill = 1.0;
    let text = job("randwrite", "4k", 32, "2");
    let e = run(&text, cfg_with("none", empty));
    let f = run(&text, cfg_with("none", full));
    let (_, e_iops, e_lat, _) = total(&e, Ddir::Write);
    let (_, f_iops, f_lat, _) = total(&f, Ddir::Write);
    let e_max = e.jobs[0].stats.dirs[Ddir::Write.index()].lat.max;
    let f_max = f.jobs[0].stats.dirs[Ddir::Write.index()].lat.max;
    eprintln!(
        "sata-ssd randwrite QD32: empty {e_iops:.0} IOPS ({:.2} ms avg, {:.2} ms max), \
         full {f_iops:.0} IOPS ({:.2} ms avg, {:.2} ms max)",
        e_lat / 1e6,
        e_max as f64 / 1e6,
        f_lat / 1e6,
        f_max as f64 / 1e6
    );
    assert!(f_iops * 2.0 < e_iops, "full {f_iops} vs empty {e_iops}");
    // Intel's full-span steady-state figure: 17K (ARK).
    assert!((10_000.0..25_000.0).contains(&f_iops), "full {f_iops}");
    // GC stalls show as latency spikes.
    assert!(
        f_max > 5 * e_max,
        "max latency full {f_max} vs empty {e_max}"
    );
}

#[test]
fn sata_ssd_preconditioning_by_writing_brings_gc() {
    // A small drive (8 GiB) starts empty; writing it twice over at random
    // brings it to GC, and the write rate falls.
    let mut p = load_profile("sata-ssd").unwrap();
    p.queue.capacity = 8 << 30;
    {
        let s = p.sata_ssd.as_mut().unwrap();
        s.initial_fill = 0.0;
        s.preconditioned = false;
        s.gc_threshold_blocks = 8;
        s.gc_idle_blocks = 16;
    }
    let text = "[global]\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=64k\niodepth=32\n\
                filename=/dev/sda\n[fill]\nsize=8g\nloops=2\n\
                [after]\nstonewall\nbs=4k\nruntime=1\ntime_based\n";
    let rep = run(text, cfg_with("none", p.clone()));
    let a = rep.jobs.iter().find(|j| j.spec.name == "after").unwrap();
    let after = a.stats.total_ios(Ddir::Write) as f64 / (a.stats.runtime_ns() as f64 / 1e9);
    p.queue.capacity = 8 << 30;
    let fresh = run(
        "[global]\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=4k\niodepth=32\n\
         filename=/dev/sda\nruntime=1\ntime_based\n[after]\n",
        cfg_with("none", p),
    );
    let (_, fresh_iops, _, _) = total(&fresh, Ddir::Write);
    eprintln!("sata-ssd 8 GiB: fresh {fresh_iops:.0} IOPS, after two random fills {after:.0} IOPS");
    assert!(
        after * 1.5 < fresh_iops,
        "after fill {after} vs fresh {fresh_iops}"
    );
}

// ----- the source experiments the defaults were calibrated on -----------------

/// Per-job (iops, mean latency ns) for `d`, in job order.
fn per_job(rep: &RunReport, d: Ddir) -> Vec<(f64, f64)> {
    rep.jobs
        .iter()
        .map(|j| {
            let rt = j.stats.runtime_ns() as f64 / 1e9;
            (j.stats.total_ios(d) as f64 / rt, j.stats.lat_mean_ns(d))
        })
        .collect()
}

#[test]
fn e1_hdd_mix_stays_near_the_measured_drive() {
    // E1 (seed 000): 2 random writers and a 40% random reader at QD1, write
    // back. Measured (none): writers 81 IOPS at 12.3 ms, reader 34 reads/s at
    // 18.3 ms and 51 writes/s at 7.1 ms. Runtime shortened from 7200 s.
    let text = "[global]\nioengine=libaio\nblocksize=4k\ndirect=1\nbuffered=0\niodepth=1\n\
                runtime=60\nrandom_generator=lfsr\nfilename=/dev/sda1\n\
                [writers]\nnumjobs=2\nrw=randwrite\n[reader_40]\nrw=randrw\nrwmixread=40\n";
    let rep = run(text, cfg("none", "hdd"));
    let w = per_job(&rep, Ddir::Write);
    let r = per_job(&rep, Ddir::Read);
    eprintln!(
        "E1 on hdd (none): writers {:.0}/{:.0} IOPS at {:.1} ms, reader {:.0} reads/s at {:.1} ms, {:.0} writes/s at {:.1} ms",
        w[0].0, w[1].0, w[0].1 / 1e6, r[2].0, r[2].1 / 1e6, w[2].0, w[2].1 / 1e6
    );
    for (iops, _) in &w[..2] {
        assert!((60.0..110.0).contains(iops), "writer {iops}");
    }
    assert!((25.0..45.0).contains(&r[2].0), "reader reads {}", r[2].0);
    assert!(
        (10e6..30e6).contains(&r[2].1),
        "reader read latency {}",
        r[2].1
    );
}

#[test]
fn e2_sata_ssd_mix_stays_near_the_measured_drive() {
    // E2 (seed 000): 10 random writers and 2 readers (20% reads) at QD4.
    // Measured (mq-deadline): writers 3162 IOPS at 1.26 ms, readers 604
    // reads/s and 2416 writes/s. Runtime shortened from 7200 s.
    let text = "[global]\nioengine=libaio\nblocksize=4k\ndirect=1\nbuffered=0\niodepth=4\n\
                runtime=5\nrandom_generator=lfsr\nfilename=/dev/sda1\n\
                [writers]\nnumjobs=10\nrw=randwrite\n[reader_20]\nnumjobs=2\nrw=randrw\nrwmixread=20\n";
    let rep = run(text, cfg("mq-deadline", "sata-ssd"));
    let w = per_job(&rep, Ddir::Write);
    let r = per_job(&rep, Ddir::Read);
    let writers: f64 = w[..10].iter().map(|x| x.0).sum::<f64>() / 10.0;
    eprintln!(
        "E2 on sata-ssd (mq-deadline): writers {writers:.0} IOPS, readers {:.0} reads/s {:.0} writes/s",
        r[10].0, w[10].0
    );
    assert!((2500.0..4000.0).contains(&writers), "writers {writers}");
    assert!(
        (400.0..900.0).contains(&r[10].0),
        "reader reads {}",
        r[10].0
    );
}
