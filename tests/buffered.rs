//! Scenario tests of buffered I/O: the job files under tests/jobs/
//! (buffered-*.fio) through the library API, checked against what the
//! kernel does (the reference's §9.2 experiments).

use elevator::job::Ddir;
use elevator::report::RunReport;
use elevator::run::{JobSource, RunSpec};
use elevator::sim::time::{NS_PER_MS, NS_PER_SEC};

fn job(name: &str) -> String {
    let path = format!("{}/tests/jobs/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn spec(name: &str, text: &str) -> RunSpec {
    let mut s = RunSpec::from_text(name, "")
        .scheduler("mq-deadline")
        .device("sata-ssd");
    s.job = JobSource::text(name, text);
    s
}

fn run(s: &RunSpec) -> RunReport {
    elevator::run::run(s).expect("simulation runs")
}

fn with_mem(mut s: RunSpec, bytes: u64) -> RunSpec {
    s.machine.memory = bytes;
    s
}

/// Bytes per second a job wrote over its runtime.
fn write_bw(r: &RunReport, job: usize) -> f64 {
    let j = &r.jobs[job].stats;
    j.io_bytes(Ddir::Write) as f64 / (j.runtime_ns() as f64 / 1e9)
}

fn page_cache(r: &RunReport) -> &elevator::report::PageCacheReport {
    r.elevator
        .page_cache
        .as_ref()
        .expect("a buffered run reports its page cache")
}

#[test]
fn a_small_write_is_absorbed_and_written_at_expiry() {
    let r = run(&spec("buffered-expire.fio", &job("buffered-expire.fio")));
    // Memory speed: 64 MiB in well under 100 ms.
    let runtime = r.jobs[0].stats.runtime_ns();
    assert!(runtime < 100 * NS_PER_MS, "writer took {runtime} ns");
    let pc = page_cache(&r);
    // No writeback before dirty_expire_centisecs (30 s); then within one
    // writeback interval (5 s).
    let first = pc
        .view
        .samples
        .iter()
        .find(|s| s.writeback_pages > 0)
        .expect("written back at some point");
    eprintln!(
        "README: 64 MiB written at memory speed reaches the disk at {:.1} s",
        first.at as f64 / 1e9
    );
    assert!(
        first.at >= 30 * NS_PER_SEC && first.at <= 35 * NS_PER_SEC,
        "writeback began at {} ns",
        first.at
    );
    let ds = r.elevator.disk_stats.as_ref().unwrap();
    assert_eq!(
        ds.write_sectors,
        64 << 11,
        "all 64 MiB reach the device once"
    );
    // Contiguous dirty pages leave as large requests (the reference
    // measured ≈1.14 MiB on average for this job).
    let mean_kib = ds.write_sectors as f64 / 2.0 / ds.write_ios as f64;
    assert!(mean_kib > 1000.0, "mean write request {mean_kib} KiB");
    assert_eq!(pc.throttled_ns[0].1, 0, "never throttled below freerun");
}

#[test]
fn a_long_write_settles_at_the_device_bandwidth() {
    let text = job("buffered-long-write.fio");
    let buffered = run(&with_mem(spec("long", &text), 2 << 30));
    let direct_text = text.replace("[w]", "[w]\ndirect=1");
    let direct = run(&with_mem(spec("long", &direct_text), 2 << 30));
    let (b, d) = (write_bw(&buffered, 0), write_bw(&direct, 0));
    eprintln!(
        "README: long write {:.0} MiB/s, throttled {:.1} of {:.1} s",
        b / 1048576.0,
        page_cache(&buffered).throttled_ns[0].1 as f64 / 1e9,
        buffered.jobs[0].stats.runtime_ns() as f64 / 1e9
    );
    assert!(
        (b / d - 1.0).abs() < 0.20,
        "buffered {:.0} MB/s vs device {:.0} MB/s",
        b / 1e6,
        d / 1e6
    );
    let pc = page_cache(&buffered);
    let throttled = pc.throttled_ns[0].1;
    let runtime = buffered.jobs[0].stats.runtime_ns();
    assert!(
        throttled > runtime / 2,
        "throttled {throttled} of {runtime} ns"
    );
    // Dirty + writeback hovers between the freerun ceiling and the limit
    // (the close at the end turns what is dirty into writeback).
    let thresh = pc.view.thresh;
    let peak = pc
        .view
        .samples
        .iter()
        .map(|s| s.dirty_pages + s.writeback_pages)
        .max()
        .unwrap();
    assert!(
        peak <= thresh + thresh / 10,
        "peak {peak} pages, limit {thresh}"
    );
    assert!(
        peak > (pc.view.bg_thresh + thresh) / 2,
        "peak {peak} pages never passed freerun"
    );
}

#[test]
fn higher_dirty_ratios_absorb_more_and_throttle_less() {
    let text = job("buffered-long-write.fio");
    let base = with_mem(spec("long", &text), 2 << 30);
    let tuned = base
        .clone()
        .set("vm.dirty_ratio", "80")
        .set("vm.dirty_background_ratio", "60");
    let (a, b) = (run(&base), run(&tuned));
    let (pa, pb) = (page_cache(&a), page_cache(&b));
    eprintln!(
        "README: peak Dirty {} MiB with 80/60, {} MiB with 20/10",
        pb.view.peak_dirty / 256,
        pa.view.peak_dirty / 256
    );
    assert!(
        pb.view.peak_dirty > 2 * pa.view.peak_dirty,
        "peak Dirty 80/60 {} vs 20/10 {} pages",
        pb.view.peak_dirty,
        pa.view.peak_dirty
    );
    assert!(
        pb.throttled_ns[0].1 < pa.throttled_ns[0].1,
        "throttled 80/60 {} vs 20/10 {} ns",
        pb.throttled_ns[0].1,
        pa.throttled_ns[0].1
    );
}

#[test]
fn pre_read_hits_and_invalidate_misses() {
    let text = job("buffered-read-cache.fio");
    let cold = run(&spec("cache", &text));
    let warm = run(&spec("cache", &text.replace("[r]", "[r]\npre_read=1")));
    let reads = |r: &RunReport| r.elevator.disk_stats.as_ref().unwrap().read_ios;
    assert_eq!(reads(&warm), 0, "a pre-read file is all hits");
    assert_eq!(reads(&cold), 4096, "every 4 KiB page of 16 MiB read once");
    let lat = |r: &RunReport| r.jobs[0].stats.lat_mean_ns(Ddir::Read);
    assert!(
        lat(&warm) * 20.0 < lat(&cold),
        "hit {} ns vs miss {} ns",
        lat(&warm),
        lat(&cold)
    );
    // A hit returns from the call without sleeping: no context switch
    // (fio's ctx on the lab VM's cache probes: 0.000 per I/O), where a
    // miss sleeps for its read.
    let ctx_per_io = |r: &RunReport| {
        let ios: u64 = r.jobs[0].stats.dirs.iter().map(|d| d.total_ios).sum();
        r.jobs[0].stats.ctx as f64 / ios as f64
    };
    assert!(
        ctx_per_io(&warm) < 0.01,
        "hits switch {} per I/O",
        ctx_per_io(&warm)
    );
    assert!(
        ctx_per_io(&cold) > 0.1,
        "misses switch {} per I/O",
        ctx_per_io(&cold)
    );
}

#[test]
fn bad_vm_settings_are_refused_by_name() {
    let text = job("buffered-expire.fio");
    for (k, v) in [
        ("vm.dirty_ratio", "101"),
        ("vm.dirty_bytes", "4096"),
        ("vm.dirty_expire_centisecs", "x"),
        ("vm.dirty_nonsense", "1"),
    ] {
        let e = elevator::run::run(&spec("bad", &text).set(k, v)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains(k), "{k}={v}: {msg}");
    }
}

/// (read requests, mean request KiB) of a run.
fn reads(r: &RunReport) -> (u64, f64) {
    let ds = r.elevator.disk_stats.as_ref().unwrap();
    (
        ds.read_ios,
        ds.read_sectors as f64 / 2.0 / ds.read_ios.max(1) as f64,
    )
}

#[test]
fn readahead_request_sizes_follow_read_ahead_kb() {
    let text = job("buffered-readahead.fio");
    // (read_ahead_kb, fadvise_hint, requests the reference measured on 6.18)
    let cases = [(128, 0, 133), (128, 1, 71), (512, 0, 38), (512, 1, 24)];
    let mut means = Vec::new();
    for (ra, hint, measured) in cases {
        let t = text.replace("bs=4k", &format!("bs=4k\nfadvise_hint={hint}"));
        let r = run(&spec("ra", &t).set("read_ahead_kb", &ra.to_string()));
        let (n, mean) = reads(&r);
        eprintln!("README: read_ahead_kb {ra} hint {hint}: {n} device reads (kernel {measured})");
        // Within 15 %: 6.x's large-folio alignment adds a few small early
        // requests the 4.x ramp modelled here does not have.
        let err = (n as f64 - measured as f64).abs() / measured as f64;
        assert!(
            err < 0.15,
            "ra {ra} hint {hint}: {n} requests, measured {measured}"
        );
        means.push(mean);
    }
    assert!(means[2] > 3.0 * means[0], "512 vs 128 KiB: {means:?}");
    assert!(
        means[1] > 1.8 * means[0],
        "FADV_SEQUENTIAL doubles: {means:?}"
    );
}

#[test]
fn random_reads_stay_4k() {
    let text = job("buffered-readahead.fio").replace("rw=read", "rw=randread");
    let (n, mean) = reads(&run(&spec("rr", &text)));
    assert_eq!(n, 4096);
    assert_eq!(
        mean, 4.0,
        "fio's FADV_RANDOM: every miss reads exactly 4 KiB"
    );
}

#[test]
fn fsync_writes_back_then_flushes() {
    let text = job("buffered-fsync.fio");
    let stats = |t: &str| {
        let r = run(&spec("fsync", t));
        let ds = r.elevator.disk_stats.clone().unwrap();
        let syncs = r.jobs[0].stats.sync_total;
        (ds, syncs, r)
    };
    // fsync=1: one data write and one flush per write; all data written.
    let (ds, syncs, _) = stats(&text);
    assert_eq!(syncs, 1024);
    assert_eq!(ds.flush_ios, 1024);
    assert_eq!(ds.write_sectors, 4 << 11);
    // O_SYNC: the same I/O, no fsync calls of fio's.
    let (ds, syncs, _) = stats(&text.replace("fsync=1", "sync=1"));
    assert_eq!((syncs, ds.flush_ios, ds.write_sectors), (0, 1024, 4 << 11));
    // end_fsync: one fsync writes everything back at the end. fio does not
    // count it in `sync` (it runs in TD_FSYNCING): total_ios 0, as fio 3.x
    // prints for end_fsync=1.
    let (ds, syncs, _) = stats(&text.replace("fsync=1", "end_fsync=1"));
    assert_eq!((syncs, ds.flush_ios, ds.write_sectors), (0, 1, 4 << 11));
    // fsync_on_close: fio's end-of-pass sync, then the close finds the
    // file just synced and skips its own (should_fsync: the last I/O
    // issued was a sync).
    let (ds, syncs, _) = stats(&text.replace("fsync=1", "fsync_on_close=1"));
    assert_eq!((syncs, ds.flush_ios, ds.write_sectors), (0, 1, 4 << 11));
    // No sync at all: nothing reaches the device while the job runs; its
    // close (the device's last) writes the pages back, without a flush.
    let (ds, _, r) = stats(&text.replace("fsync=1", ""));
    assert_eq!((ds.write_sectors, ds.flush_ios), (4 << 11, 0));
    assert!(r.jobs[0].stats.runtime_ns() < 50 * NS_PER_MS);
}

#[test]
fn a_time_based_reader_misses_again_on_every_pass_unless_invalidate_is_off() {
    let text = job("buffered-wrap-invalidate.fio");
    let reads = |r: &RunReport| r.elevator.disk_stats.as_ref().unwrap().read_ios;
    let again = run(&spec("wrap", &text));
    let kept = run(&spec("wrap", &text.replace("[r]", "[r]\ninvalidate=0")));
    // 256 pages per pass: the first pass reads each once, then all hits.
    assert_eq!(reads(&kept), 256, "invalidate=0 reads the file once");
    let passes = again.jobs[0].stats.total_ios(Ddir::Read) / 256;
    assert!(passes >= 4, "only {passes} passes in 200 ms");
    assert!(
        reads(&again) >= 256 * passes,
        "{} device reads for {passes} passes",
        reads(&again)
    );
}

#[test]
fn a_time_based_writer_writes_back_at_every_pass_unless_invalidate_is_off() {
    let text = job("buffered-wrap-write.fio");
    let go = |t: &str| run(&spec("wrapw", t).mount("ext4"));
    let written = |r: &RunReport| r.elevator.disk_stats.as_ref().unwrap().write_sectors * 512;
    let fadvised = go(&text);
    let kept = go(&text.replace("[w]", "[w]\ninvalidate=0"));
    let bytes = fadvised.jobs[0].stats.io_bytes(Ddir::Write);
    assert!(bytes >= 4 * (16 << 20), "only {bytes} bytes written in 1 s");
    // The last pass's writeback may still be in flight when the run ends;
    // journal blocks add a little.
    let share = written(&fadvised) as f64 / bytes as f64;
    assert!(
        share > 0.85,
        "{:.0}% of the written bytes reached the device",
        share * 100.0
    );
    assert_eq!(
        kept.elevator.disk_stats.as_ref().unwrap().write_ios,
        0,
        "invalidate=0: nothing written before expiry"
    );
    println!(
        "README: buffered-wrap-write, ext4, invalidate=1: {:.0}% of {} MiB on the device; invalidate=0: {} write ios",
        share * 100.0,
        bytes >> 20,
        kept.elevator.disk_stats.as_ref().unwrap().write_ios
    );
}

#[test]
fn the_end_of_pass_sync_runs_after_every_loop() {
    let text = job("buffered-passes.fio");
    let go = |t: &str, mount: Option<&str>| {
        let mut s = spec("passes", t);
        if let Some(m) = mount {
            s = s.mount(m);
        }
        let r = run(&s);
        let ds = r.elevator.disk_stats.clone().unwrap();
        (ds.write_sectors, ds.flush_ios, r.jobs[0].stats.sync_total)
    };
    const PASS: u64 = 16 << 11; // sectors of one pass
    const BYSTANDER: u64 = 8 << 11;
    // end_fsync: each pass writes its 16 MiB and flushes; not counted. On
    // the raw device the reopen's BLKFLSBUF (invalidate=1) or the last
    // close writes the other job's dirty pages too, without a flush.
    assert_eq!(go(&text, None), (3 * PASS + BYSTANDER, 3, 0));
    // syncfs on a device node syncs devtmpfs: no flush; the writes are the
    // reopens' and the last close's, as with no sync option at all.
    let syncfs = text.replace("end_fsync=1", "end_syncfs=1");
    assert_eq!(go(&syncfs, None), (3 * PASS + BYSTANDER, 0, 0));
    let none = text.replace("end_fsync=1", "");
    assert_eq!(go(&none, None), (3 * PASS + BYSTANDER, 0, 0));
    // On ext4, fsync writes this job's file only; syncfs the whole file
    // system, the other job's dirty file included (plus the journal).
    let (fsync_sectors, fsync_flushes, _) = go(&text, Some("ext4"));
    let (syncfs_sectors, syncfs_flushes, syncs) = go(&syncfs, Some("ext4"));
    assert!(
        (3 * PASS..3 * PASS + BYSTANDER).contains(&fsync_sectors),
        "fsync on ext4 wrote {fsync_sectors} sectors"
    );
    assert!(
        syncfs_sectors >= 3 * PASS + BYSTANDER,
        "syncfs on ext4 wrote {syncfs_sectors} sectors"
    );
    assert_eq!((fsync_flushes, syncfs_flushes, syncs), (3, 3, 0));
}

/// A raw block device's page cache at fio's opens and closes (`FioJob::
/// device_open_close`): the last close writes the device's dirty pages
/// back (`blkdev_put`), and BLKFLSBUF at each open (`invalidate=1`) does
/// too, whoever dirtied them. Measured on 6.18 (tmpfs loop, fio 3.33,
/// sectors written by the time fio exited) for the cases below: 98304
/// (three 16 MiB passes, alone, with or without invalidate), 32768 (the
/// same with invalidate=0 beside a reader holding the device open), 98304
/// (that pair with the writer's invalidate=1).
#[test]
fn a_raw_device_is_written_back_at_its_last_close_and_at_blkflsbuf() {
    const PASS: u64 = 16 << 11;
    let one = "[w]\nioengine=psync\nrw=write\nbs=4k\nsize=16m\nfilename=/dev/sda\n";
    let go = |t: &str| {
        let r = run(&spec("close", t));
        let ds = r.elevator.disk_stats.clone().unwrap();
        (ds.write_sectors, ds.flush_ios)
    };
    // The measured case: every pass written, no flush.
    assert_eq!(
        go(&one.replace("size=16m", "size=16m\nloops=3")),
        (3 * PASS, 0)
    );
    // Without invalidate only the close writes: still once per pass (fio
    // closes the files between passes and this job is the only opener).
    let no_inval = one.replace("size=16m", "size=16m\nloops=3\ninvalidate=0");
    assert_eq!(go(&no_inval), (3 * PASS, 0));
    // A second opener (a job reading elsewhere for longer) keeps the
    // writer's closes from being the last; with invalidate=0 nothing
    // writes between passes and the passes rewrite the same dirty pages:
    // one pass's worth reaches the device, at the reader's close.
    let shared = format!(
        "{no_inval}[r]\nioengine=psync\nrw=read\nbs=4k\noffset=1g\nsize=4m\n\
         filename=/dev/sda\nthinktime=5ms\ninvalidate=0\n"
    );
    assert_eq!(go(&shared), (PASS, 0));
    // The writer's invalidate=1 beside that reader: each reopen's
    // BLKFLSBUF writes the pass before it, the reader's close the last.
    let blkflsbuf = shared.replacen("invalidate=0", "invalidate=1", 1);
    assert_eq!(go(&blkflsbuf), (3 * PASS, 0));
    // The job's runtime ends before its close: the close's writeback is
    // not in fio's time (fio closes after the last do_io).
    let r = run(&spec("close", one));
    let j = &r.jobs[0];
    assert!(
        r.elevator.disk_stats.as_ref().unwrap().write_sectors == PASS && j.stats.sync_total == 0,
        "one pass: {:?}",
        r.elevator.disk_stats
    );
}

#[test]
fn a_read_whose_pages_another_job_dropped_reads_them_again() {
    // job0 wraps its 64 KiB file 16 times and drops its clean pages at every
    // wrap (invalidate=1); job2 reads the same pages. A job2 read whose
    // pages were dropped between its own read completing and its check
    // used to wait forever (found by the run fuzzer: "never finished,
    // asleep on Io, 0 requests live"); filemap_read reads them again.
    let text = "[global]\nfilename=/dev/fuzz\nioengine=pvsync2\nsize=64k\n\
                [job0]\nio_size=1m\n[job2]\nsize=16m\nbsrange=512-1m\n";
    for seed in 1..=8 {
        let mut s = spec("overlap", text);
        s.machine.cpus = 1;
        s.seed = seed;
        s.max_runtime_ns = Some(2 * NS_PER_MS);
        let r = run(&s);
        assert!(r.jobs[1].stats.total_ios(Ddir::Read) > 0, "seed {seed}");
    }
}

/// fio's `unlink_each_loop` and `unlink` on ext4 (`FioJob::delete_files`):
/// a deleted file's dirty pages never reach the device. Measured on 6.18
/// (tests/jobs/buffered-unlink.fio on a tmpfs loop): 0 sectors written
/// with `unlink_each_loop=1`, 393216 (three passes) without.
#[test]
fn a_deleted_file_is_never_written_back() {
    let text = job("buffered-unlink.fio");
    let go = |t: &str| run(&spec("unlink", t).mount("ext4"));
    let written = |r: &RunReport| r.elevator.disk_stats.as_ref().unwrap().write_sectors;
    const PASS: u64 = 64 << 11; // sectors of one pass
    let deleted = go(&text);
    let pc = page_cache(&deleted);
    // Three passes deleted unwritten; the last stays dirty (no expiry yet).
    assert_eq!(pc.view.cancelled_pages, 3 * PASS / 8);
    assert_eq!(pc.view.written_pages, 0);
    // Only the journal's blocks: the deletions' and creations' metadata.
    assert!(
        written(&deleted) < 256,
        "{} sectors written",
        written(&deleted)
    );
    let kept = go(&text.replace("unlink_each_loop=1", "unlink_each_loop=0"));
    assert_eq!(page_cache(&kept).view.cancelled_pages, 0);
    assert!(
        written(&kept) >= 3 * PASS - PASS / 8,
        "fio's per-pass invalidate writes the earlier passes: {} sectors",
        written(&kept)
    );
    // `unlink` at the end: the last pass's pages go too, after the job.
    let at_end = go(&text.replace("unlink_each_loop=1", "unlink_each_loop=1\nunlink=1"));
    assert_eq!(page_cache(&at_end).view.cancelled_pages, 4 * PASS / 8);
    assert_eq!(at_end.jobs[0].stats.io_bytes(Ddir::Write), 4 * (64 << 20));
    // Without a file system the job's files are the raw device's: fio
    // unlinks only regular files, so nothing is deleted.
    let raw = run(&spec("unlink", &text));
    assert_eq!(page_cache(&raw).view.cancelled_pages, 0);
}
