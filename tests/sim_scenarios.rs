//! Scenario tests of the simulation core: whole job files through the block
//! layer, schedulers and device models.

use elevator::job::Ddir;
use elevator::report::RunReport;
use elevator::run::{JobSource, RunSpec};
use elevator::sim::time::NS_PER_SEC;

fn cfg(sched: &str, device: &str) -> RunSpec {
    RunSpec::from_text("test.fio", "")
        .scheduler(sched)
        .device(device)
}

fn run(text: &str, c: RunSpec) -> RunReport {
    let mut spec = c;
    spec.job = JobSource::text("test.fio", text);
    elevator::run::run(&spec).expect("simulation runs")
}

fn total(rep: &RunReport, d: Ddir) -> (u64, f64, f64) {
    // (ios, iops, mean lat ns) summed over jobs; iops per job runtime.
    let mut ios = 0;
    let mut iops = 0.0;
    let mut lat_weighted = 0.0;
    for j in &rep.jobs {
        let n = j.stats.total_ios(d);
        ios += n;
        let rt = j.stats.runtime_ns() as f64 / 1e9;
        if rt > 0.0 {
            iops += n as f64 / rt;
        }
        lat_weighted += j.stats.lat_mean_ns(d) * n as f64;
    }
    (
        ios,
        iops,
        if ios > 0 {
            lat_weighted / ios as f64
        } else {
            0.0
        },
    )
}

const RANDREAD_QD32: &str = "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=32\nruntime=1\ntime_based\nfilename=/dev/nvme0n1\n[a]\n[b]\n";

#[test]
fn littles_law_holds_for_closed_loop_jobs() {
    for sched in ["none", "mq-deadline"] {
        let rep = run(RANDREAD_QD32, cfg(sched, "nvme"));
        let (ios, iops, lat) = total(&rep, Ddir::Read);
        assert!(ios > 10_000, "{sched}: only {ios} I/Os");
        let outstanding = iops * lat / 1e9;
        let expected = 64.0;
        let err = (outstanding - expected).abs() / expected;
        assert!(
            err < 0.05,
            "{sched}: iops {iops:.0} x lat {lat:.0} ns = {outstanding:.2}, expected {expected}"
        );
    }
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let a = elevator::report::fio_json::to_string(&run(RANDREAD_QD32, cfg("mq-deadline", "nvme")));
    let b = elevator::report::fio_json::to_string(&run(RANDREAD_QD32, cfg("mq-deadline", "nvme")));
    assert_eq!(a, b);
    let c2 = cfg("mq-deadline", "nvme").seed(42);
    let c = elevator::report::fio_json::to_string(&run(RANDREAD_QD32, c2));
    assert_ne!(a, c);
}

#[test]
fn requests_end_once_across_scheduler_switches() {
    // Writes with fsync (flushes bypass the scheduler on a write-back cache),
    // reads, and switches none -> mq-deadline -> deadline -> noop -> none.
    let text = "[global]\nioengine=libaio\ndirect=1\nbs=4k\niodepth=16\nruntime=2\ntime_based\nfilename=/dev/x\n\
                [w]\nrw=randwrite\nfsync=8\n[r]\nrw=randread\n[seq]\nrw=write\nbs=16k\n";
    let c = cfg("none", "nvme")
        .set("write_cache", "write back")
        .switch(NS_PER_SEC / 4, "mq-deadline")
        .switch(NS_PER_SEC / 2, "deadline")
        .switch(3 * NS_PER_SEC / 4, "noop")
        .switch(NS_PER_SEC, "none");
    let rep = run(text, c);
    // simulate() asserts bios/requests complete exactly once; check work was done.
    let (w, _, _) = total(&rep, Ddir::Write);
    let (r, _, _) = total(&rep, Ddir::Read);
    assert!(w > 1000 && r > 1000, "writes {w} reads {r}");
    assert_eq!(rep.elevator.switches.len(), 4);
}

#[test]
fn passthrough_requests_bypass_the_scheduler_and_complete() {
    let text = "[global]\ndirect=1\nbs=4k\niodepth=8\nruntime=1\ntime_based\nfilename=/dev/ng0n1\n\
                [pt]\nioengine=io_uring_cmd\nrw=randread\n[normal]\nioengine=libaio\nrw=randread\n";
    let rep = run(text, cfg("mq-deadline", "nvme"));
    for j in &rep.jobs {
        assert!(
            j.stats.total_ios(Ddir::Read) > 1000,
            "{} did little",
            j.spec.name
        );
    }
}

#[test]
fn sequential_writes_merge_unless_nomerges_2() {
    // 8 writers of 4 KiB sequential I/O at depth 32 through mq-deadline on a
    // small-queue device: requests wait in the scheduler and merge.
    let text = "[global]\nioengine=libaio\ndirect=1\nrw=write\nbs=4k\niodepth=32\niodepth_batch_submit=8\nruntime=1\ntime_based\nsize=64m\n[w]\nnumjobs=4\n";
    let c = cfg("mq-deadline", "ram").set("nr_requests", "256");
    let merged = run(text, c);
    assert!(merged.disk_util[0].write_merges > 0, "expected merges");
    let c = cfg("mq-deadline", "ram").set("nomerges", "2");
    let unmerged = run(text, c);
    assert_eq!(unmerged.disk_util[0].write_merges, 0);
}

#[test]
fn nvme_throughput_saturates_and_latency_grows_with_depth() {
    let at = |qd: u32| {
        let text = format!(
            "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth={qd}\nruntime=1\ntime_based\nfilename=/dev/n\n[a]\n[b]\n"
        );
        let c = cfg("none", "nvme").max_runtime(NS_PER_SEC / 2);
        let rep = run(&text, c);
        let (_, iops, lat) = total(&rep, Ddir::Read);
        (iops, lat)
    };
    let (i1, l1) = at(1);
    let (i64, _) = at(64);
    let (i512, l512) = at(512);
    assert!(i64 > 8.0 * i1, "QD64 {i64} vs QD1 {i1}");
    assert!(i512 < 1.3 * at(256).0, "saturation: {i512}");
    assert!(
        l512 > 4.0 * l1,
        "latency grows past saturation: {l512} vs {l1}"
    );
}

#[test]
fn stonewall_runs_phases_in_order() {
    let text = "[global]\nioengine=libaio\ndirect=1\nbs=4k\niodepth=4\nruntime=0.2\ntime_based\nfilename=/dev/n\n\
                [first]\nrw=randread\n[second]\nstonewall\nrw=randwrite\n";
    let rep = run(text, cfg("none", "nvme"));
    assert_eq!(rep.jobs[0].spec.group_id + 1, rep.jobs[1].spec.group_id);
    assert!(rep.jobs[0].stats.total_ios(Ddir::Write) == 0);
    assert!(rep.jobs[1].stats.total_ios(Ddir::Write) > 0);
}

#[test]
fn size_bounded_job_does_exactly_its_bytes() {
    let text = "[j]\nioengine=psync\ndirect=1\nrw=randread\nbs=4k\nsize=4m\nfilename=/dev/n\n";
    let rep = run(text, cfg("none", "ram"));
    assert_eq!(rep.jobs[0].stats.io_bytes(Ddir::Read), 4 << 20);
    assert_eq!(rep.jobs[0].stats.total_ios(Ddir::Read), 1024);
}

#[test]
fn tag_waiters_are_not_starved_when_jobs_outnumber_tags() {
    // E2 on the 32-tag SATA SSD without a scheduler: 48 I/Os want 32 tags.
    // Every writer must get its share (the paper measured ~3200 IOPS each).
    let text = std::fs::read_to_string("examples/e2-sata-ssd.fio").unwrap();
    let c = cfg("none", "sata-ssd").max_runtime(3 * NS_PER_SEC);
    let rep = run(&text, c);
    let writers: Vec<f64> = rep
        .jobs
        .iter()
        .filter(|j| j.spec.name == "writers")
        .map(|j| j.stats.total_ios(Ddir::Write) as f64)
        .collect();
    let max = writers.iter().cloned().fold(0.0, f64::max);
    let min = writers.iter().cloned().fold(f64::MAX, f64::min);
    assert!(min > 0.8 * max, "writers unfair: min {min} max {max}");
}

fn writes_and_syncs(rep: &RunReport) -> (u64, u64) {
    let w = rep
        .jobs
        .iter()
        .map(|j| j.stats.total_ios(Ddir::Write))
        .sum();
    let s = rep.jobs.iter().map(|j| j.stats.sync_total).sum();
    (w, s)
}

#[test]
fn fsync_writers_share_flushes_on_a_write_back_device() {
    // Four psync writers with fsync=1: every fsync is an empty PREFLUSH write
    // through the flush machinery; fsyncs that arrive while a flush runs wait
    // for the next one and share it.
    let text = "[global]\nioengine=psync\ndirect=1\nbs=4k\nrw=randwrite\nfsync=1\nruntime=1\ntime_based\nfilename=/dev/sda\n[w]\nnumjobs=4\n";
    for sched in ["none", "mq-deadline"] {
        let rep = run(text, cfg(sched, "sata-ssd"));
        let (writes, syncs) = writes_and_syncs(&rep);
        let ds = rep.elevator.disk_stats.clone().expect("disk stats");
        assert!(
            writes > 1000 && syncs + 4 >= writes,
            "{sched}: {writes} writes, {syncs} syncs"
        );
        assert!(
            ds.flush_ios > 0 && ds.flush_ios < syncs * 9 / 10,
            "{sched}: {} device flushes for {syncs} fsyncs",
            ds.flush_ios
        );
        // The kernel counts the empty flush writes as write I/Os.
        assert_eq!(ds.write_ios, writes + syncs, "{sched}");
        assert_eq!(ds.write_sectors, writes * 8, "{sched}");
        assert_eq!(ds.in_flight, 0);
        assert!(ds.flush_ticks > 0);
        let sum = ds.read_ticks + ds.write_ticks + ds.discard_ticks + ds.flush_ticks;
        assert!(ds.time_in_queue >= sum && ds.time_in_queue <= sum + 3);
        // fio's disk_util is the same counters.
        let du = &rep.disk_util[0];
        assert_eq!(
            (du.write_ios, du.write_ticks),
            (ds.write_ios, ds.write_ticks)
        );
        assert_eq!(du.in_queue, ds.time_in_queue);
    }
    // Without a volatile write cache an fsync has nothing to flush: it ends
    // at submission, no request, nothing counted.
    let rep = run(text, cfg("none", "nvme"));
    let (writes, _) = writes_and_syncs(&rep);
    let ds = rep.elevator.disk_stats.clone().unwrap();
    assert_eq!((ds.flush_ios, ds.write_ios), (0, writes));
}

#[test]
fn sync_direct_writes_carry_fua() {
    let text = |engine: &str| {
        format!(
            "[global]\ndirect=1\nbs=4k\nrw=randwrite\nsync=1\nruntime=1\ntime_based\nfilename=/dev/x\n[w]\nioengine={engine}\niodepth=4\n"
        )
    };
    // hdd: write back with FUA. AIO writes go down as FUA writes (no flush);
    // a psync write is followed by a cache flush (generic_write_sync).
    let aio = run(&text("libaio"), cfg("mq-deadline", "hdd"));
    let ds = aio.elevator.disk_stats.clone().unwrap();
    assert_eq!(ds.flush_ios, 0);
    assert!(ds.write_ios > 10);
    let ps = run(&text("psync"), cfg("mq-deadline", "hdd"));
    let (writes, _) = writes_and_syncs(&ps);
    let ds = ps.elevator.disk_stats.clone().unwrap();
    assert_eq!(
        ds.write_ios,
        2 * writes,
        "a FUA write and an empty flush write each"
    );
    assert_eq!(ds.flush_ios, writes);
    // nvme forced to write back has no FUA: each FUA write becomes write +
    // post-flush, and concurrent ones share flushes.
    let c = cfg("none", "nvme").set("write_cache", "write back");
    let aio = run(&text("libaio"), c);
    let (writes, _) = writes_and_syncs(&aio);
    let ds = aio.elevator.disk_stats.clone().unwrap();
    assert_eq!(ds.write_ios, writes);
    assert!(
        ds.flush_ios > 0 && ds.flush_ios < writes,
        "{} flushes for {writes} writes",
        ds.flush_ios
    );
}

// ----- the legacy single-queue block layer (noop, deadline) -----------------

/// One job's mean submission latency (fio's slat, from the JSON output) and
/// mean total latency of reads, in ns, and its read IOPS.
fn reads_of(rep: &RunReport, name: &str) -> (f64, f64, f64) {
    let json: serde_json::Value =
        serde_json::from_str(&elevator::report::fio_json::to_string(rep)).expect("JSON");
    let slat = json["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["jobname"] == name)
        .and_then(|j| j["read"]["slat_ns"]["mean"].as_f64())
        .expect("slat");
    let j = rep
        .jobs
        .iter()
        .find(|j| j.spec.name == name)
        .expect("the job");
    let n = j.stats.total_ios(Ddir::Read) as f64;
    let rt = j.stats.runtime_ns() as f64 / 1e9;
    (slat, j.stats.lat_mean_ns(Ddir::Read), n / rt)
}

#[test]
fn a_heavy_cgroup_exhausts_only_its_own_request_pool() {
    // A writer at iodepth 512 on a disk fills a legacy request pool (128 per
    // direction, a batch of 32 more, 3/2 × 128 at most). A reader in the
    // same (root) pool sleeps for requests behind it; in a cgroup of its own
    // it has its own pool and only waits for the disk (blk-core.c
    // blk_get_rl: one request_list per blkg).
    let text = |cg: bool| {
        let (w, r) = if cg {
            ("cgroup=heavy\n", "cgroup=light\n")
        } else {
            ("", "")
        };
        format!(
            "[global]\ndirect=1\nioengine=libaio\nruntime=5\ntime_based\nbs=4k\nfilename=/dev/sdX\n\
             [heavy]\nrw=randwrite\niodepth=512\n{w}[light]\nrw=randread\niodepth=1\n{r}"
        )
    };
    let shared = run(&text(false), cfg("deadline", "hdd"));
    let own = run(&text(true), cfg("deadline", "hdd"));
    let (slat_shared, lat_shared, iops_shared) = reads_of(&shared, "light");
    let (slat_own, lat_own, iops_own) = reads_of(&own, "light");
    assert!(
        slat_shared > 20e6,
        "sharing the pool, the reader sleeps for requests: slat {slat_shared:.0} ns"
    );
    assert!(
        slat_own < 1e5,
        "with its own pool it never sleeps: slat {slat_own:.0} ns"
    );
    assert!(
        lat_own < 0.5 * lat_shared && iops_own > 2.0 * iops_shared,
        "own pool: {lat_own:.0} ns {iops_own:.1} IOPS; shared: {lat_shared:.0} ns {iops_shared:.1} IOPS"
    );
}

#[test]
fn legacy_schedulers_drain_for_switches_across_hardware_queues() {
    // Four CPUs on NVMe: blk-mq has four hardware queues, the legacy
    // schedulers one. fsync writers (flush machinery), passthrough commands
    // (they drain a legacy elevator when inserted), cgroups, reads; switches
    // mq-deadline -> deadline -> noop -> none while all of it is queued.
    let text = "[global]\ndirect=1\nbs=4k\niodepth=16\nruntime=1\ntime_based\n\
                [w]\nioengine=libaio\nrw=randwrite\nfsync=8\nfilename=/dev/x\n\
                [r]\nioengine=libaio\nrw=randread\ncgroup=r\nfilename=/dev/x\n\
                [seq]\nioengine=libaio\nrw=write\nbs=16k\ncgroup=s\nfilename=/dev/x\n\
                [pt]\nioengine=io_uring_cmd\nrw=randread\nfilename=/dev/ng0n1\n";
    let c = cfg("mq-deadline", "nvme")
        .cpus(4)
        .set("write_cache", "write back")
        .switch(NS_PER_SEC / 4, "deadline")
        .switch(NS_PER_SEC / 2, "noop")
        .switch(3 * NS_PER_SEC / 4, "none");
    let rep = run(text, c);
    // run() asserts every bio and request ended exactly once.
    assert_eq!(rep.elevator.switch_log.len(), 3);
    for s in &rep.elevator.switch_log {
        assert!(
            matches!(s, elevator::report::SwitchOutcome::Switched { .. }),
            "{s:?}"
        );
    }
    for j in &rep.jobs {
        let n = j.stats.total_ios(Ddir::Read) + j.stats.total_ios(Ddir::Write);
        assert!(n > 1000, "{} did {n} I/Os", j.spec.name);
    }
}

#[test]
fn a_switch_away_from_a_full_legacy_elevator_drains_it_by_force() {
    // deadline holds ~150 queued writes on a disk when the switch comes: the
    // drain moves them all to the dispatch list at once (elv_drain_elevator)
    // and waits for the disk to finish them; then noop takes over.
    let text =
        "[global]\ndirect=1\nioengine=libaio\nbs=4k\nruntime=3\ntime_based\nfilename=/dev/sdX\n\
                [w]\nrw=randwrite\niodepth=256\n";
    let c = cfg("deadline", "hdd").switch(NS_PER_SEC, "noop");
    let rep = run(text, c);
    let Some(elevator::report::SwitchOutcome::Switched { drain_start, done }) =
        rep.elevator.switch_log.first().copied()
    else {
        panic!("switch did not happen: {:?}", rep.elevator.switch_log);
    };
    let drain = done - drain_start;
    // ~160 requests at a few hundred IOPS: well under two seconds, more
    // than the time of one request.
    assert!(
        drain > 10_000_000 && drain < 2 * NS_PER_SEC,
        "drained in {drain} ns"
    );
    let (w, _, _) = total(&rep, Ddir::Write);
    assert!(w > 500, "writes {w}");
}

#[test]
fn size_bounded_jobs_reap_what_landed_before_they_ran_out() {
    // A job that can still submit leaves landed completions in the ring
    // (fio reaps when the queue is full); if it then finds it has nothing
    // left to issue, it must take them instead of sleeping for a wake-up
    // they already spent. Found by a fuzz run: the job slept forever (or,
    // under --max-runtime, until the cap, with a clat of the cap).
    // (job options, scheduler, device, I/Os per job)
    let cases: [(&str, &str, &str, u64); 4] = [
        ("numjobs=2\niodepth=2\nsize=64k\n", "none", "nvme", 16),
        ("numjobs=2\niodepth=2\nsize=256k\n", "none", "loop", 64),
        (
            "iodepth=64\niodepth_batch_submit=16\niodepth_batch_complete_min=8\nsize=8m\n",
            "none",
            "ram",
            2048,
        ),
        (
            "numjobs=16\niodepth=32\nsize=1m\n",
            "mq-deadline",
            "nvme",
            256,
        ),
    ];
    for (opts, sched, device, ios) in cases {
        let text = format!("[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\n{opts}[x]\n");
        let mut spec = cfg(sched, device);
        spec.max_runtime_ns = Some(NS_PER_SEC);
        let rep = run(&text, spec);
        for j in &rep.jobs {
            assert_eq!(j.stats.total_ios(Ddir::Read), ios, "{opts} on {device}");
            let max_clat = j.stats.dirs[Ddir::Read as usize].clat.max;
            assert!(
                max_clat < NS_PER_SEC / 10,
                "{opts} on {device}: a completion waited {max_clat} ns"
            );
        }
    }
}

#[test]
fn a_job_larger_than_the_device_is_an_error_naming_its_file() {
    let mut spec = cfg("none", "nvme");
    spec.job = JobSource::text("big.fio", "[a]\nrw=read\nsize=100t\n");
    let e = elevator::run::run(&spec).expect_err("100 TB on a 2.4 TB device");
    let text = e.to_string();
    assert!(text.starts_with("big.fio: "), "{text}");
    assert!(text.contains("but the device has"), "{text}");
}

/// fio refuses `cgroup_weight=` under cgroup v2; the error names that
/// option (not `cgroup=`) and the job file.
#[test]
fn cgroup_weight_under_v2_is_an_error_naming_the_option_and_file() {
    let mut spec = cfg("bfq", "nvme");
    spec.cgroup_version = 2;
    spec.job = JobSource::text(
        "w.fio",
        "[a]\nrw=randread\nsize=1m\ncgroup=g1\ncgroup_weight=500\n",
    );
    let e = elevator::run::run(&spec).expect_err("cgroup_weight on v2");
    let text = e.to_string();
    assert!(
        text.starts_with("w.fio: option 'cgroup_weight': "),
        "{text}"
    );
    assert!(text.contains("cgroup v2"), "{text}");
}
