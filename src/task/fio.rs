//! The fio job driver: fio's submit/reap loop as a task. Each step it reaps
//! what completed (`io_getevents`), decides (runtime, think time, rate limit,
//! fsync), prepares one submit call's worth of I/O units, splits them into
//! bios at `max_sectors_kb` and submits them (plugged when batched), sleeping
//! when the block layer has no tag. It records fio's statistics as fio does:
//! slat from preparation to the end of the submit call, clat to the reap.

use super::costs::SyscallCosts;
use super::{BioOwner, SleepReason, Task, TaskCx};
use crate::block::request::{flags, Op};
use crate::block::{BioDone, BioSubmit, Plug, SubmitResult};
use crate::cache::readahead::RaState;
use crate::cache::{PageCache, PAGE};
use crate::fs::ext4::SyncStep;
use crate::fs::jbd2::Tid;
use crate::job::{Ddir, EngineKind, FadviseHint, JobSpec, SyncIo};
use crate::sim::event::Event;
use crate::sim::time::Ns;
use crate::stats::JobStats;
use crate::workload::{Generator, IoUnit, RateLimiter, Region, Wrapped};
use std::collections::VecDeque;

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not started (waiting for a stonewall or its start delay).
    Waiting,
    Running,
    /// No more new I/O; waiting for in-flight I/O to complete.
    Draining,
    /// Its statistics are final; closing its files (a raw device's last
    /// close writes the device's dirty pages back).
    Closing,
    Done,
    /// Its engine cannot be modelled; it never runs.
    Skipped,
}

/// When fio opens or closes a job's files (`FioJob::device_open_close`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DeviceEvent {
    Open,
    Reopen,
    Close,
}

/// One fio I/O unit (`struct io_u`).
#[derive(Clone, Copy, Debug, Default)]
struct IoU {
    /// None for an fsync/fdatasync unit.
    ddir: Option<Ddir>,
    len: u64,
    /// Device byte offset (job logs with log_offset=1).
    offset: u64,
    start: Ns,
    issue: Ns,
    pieces_left: u32,
    done: Ns,
    /// A synchronous O_SYNC/O_DSYNC write: after its data, the call flushes
    /// the device cache (`generic_write_sync` → `blkdev_issue_flush`).
    post_flush: bool,
    /// A buffered write's sleep in `balance_dirty_pages` after the copy.
    pause: Ns,
    /// An fdatasync (or O_DSYNC write) rather than an fsync: on ext4 it
    /// waits only for the transaction that changed the block mapping.
    datasync: bool,
    /// A `syncfs(2)` (fio's `end_syncfs`): the whole file system, not the
    /// job's files.
    syncfs: bool,
    /// `sync_blockdev` of a raw device (its last close, BLKFLSBUF): every
    /// dirty page of the device written back and waited for; no flush.
    device: bool,
    /// Not an I/O fio counts (its end-of-pass sync, the kernel's syncs at
    /// close and open).
    quiet: bool,
    /// A direct write into unwritten blocks of this ext4 file: converted
    /// when its bios are done, before it completes.
    convert: Option<u32>,
}

/// One bio still to be submitted by a job.
#[derive(Clone, Copy, Debug)]
struct Piece {
    slot: u32,
    op: Op,
    sector: u64,
    nr_sectors: u32,
    flags: u32,
    /// Last piece of its I/O unit.
    last: bool,
}

/// I/O units a job keeps: synchronous engines run at depth 1 (as fio caps
/// them).
pub fn depth(spec: &JobSpec) -> u32 {
    match spec.ioengine.kind {
        EngineKind::Sync => 1,
        _ => spec.iodepth.max(1),
    }
}

/// Simulator memory per I/O unit (the unit and its free-list slot).
pub const UNIT_BYTES: u64 = (std::mem::size_of::<IoU>() + std::mem::size_of::<u32>()) as u64;

/// A fio job and its state.
pub struct FioJob {
    pub spec: JobSpec,
    gen: Option<Generator>,
    rate: Option<RateLimiter>,
    pub stats: JobStats,
    /// A completion has woken its current sleep for I/O (reset when the
    /// next one begins, `sleep_for_io`).
    io_woken: bool,
    /// Sleeps for its own I/O, and the wake-ups from idle that completions
    /// paid for them: at most one per sleep (an end-of-run check).
    pub io_sleeps: u64,
    pub io_wakeups_charged: u64,
    pub kind: EngineKind,
    /// What its system calls cost on this machine.
    costs: SyscallCosts,
    depth: u32,
    pub phase: Phase,
    /// Start time (before it starts: its start delay).
    pub start: Ns,
    ramp_end: Ns,
    /// Runtime limit (Ns::MAX when none).
    pub deadline: Ns,
    stats_begun: bool,
    ious: Vec<IoU>,
    free_slots: Vec<u32>,
    inflight: u32,
    /// Completed units not yet reaped, in completion order (the aio ring).
    completed: VecDeque<u32>,
    /// Reaping down to `iodepth_low` after the queue was full.
    refill_low: bool,
    pending: VecDeque<Piece>,
    /// An I/O already drawn from the generator, due at the given time (rate limit).
    staged: Option<(IoUnit, Ns)>,
    exhausted: bool,
    writes_since_sync: u32,
    ios_since_think: u32,
    think_until: Ns,
    /// The end-of-pass sync (`end_fsync`, `fsync_on_close`, `end_syncfs`)
    /// was sent; it is the only sync unit until the next pass starts, and
    /// fio does not count it.
    end_sync_sent: bool,
    /// The first open of the job's files is still to be done (on a raw
    /// device it may sync; see `device_open_close`).
    open_pending: bool,
    /// A `sync_blockdev` of the device (at open, reopen or close) was sent
    /// for the current event: the caller, called again once it is reaped,
    /// goes on.
    device_sync_sent: bool,
    /// `unlink` deleted the files at the job's end (done once).
    files_deleted: bool,
    wrote: bool,
    plug: Plug,
    /// When it finished.
    pub end: Ns,
    /// Scratch: the units of the submit call being prepared.
    batch: Vec<u32>,
    /// Scratch: units whose last bio the current call queued (their issue
    /// time is the call's end).
    issued: Vec<u32>,
    /// Through the page cache (`direct=0` on an engine that reaches a
    /// device): reads and writes copy to and from cached pages.
    pub buffered: bool,
    /// The job's files (device byte regions), for `invalidate`/`pre_read`.
    files: Vec<Region>,
    /// CPU time of the current call's page-cache work.
    call_extra_ns: Ns,
    /// Scratch: page runs a read misses.
    missing: Vec<(u64, u64)>,
    /// Time slept in `balance_dirty_pages`.
    pub throttled_ns: Ns,
    /// Over the dirty limit: call `balance_dirty_pages` again before the
    /// next write.
    rebalance: bool,
    /// Readahead state per open file (`file->f_ra`).
    ra: Vec<(u32, RaState)>,
    /// Page-cache bios in flight (readahead reads, fsync writes) by tag −
    /// RA_TAG_BASE.
    ra_bios: Vec<Option<CacheBio>>,
    ra_free: Vec<u32>,
    /// The unit waiting for its pages: `(slot, file, first, end)`.
    read_wait: Option<(u32, u32, u64, u64)>,
    /// The fsync (or O_SYNC write) unit waiting for its files' writeback.
    sync_wait: Option<u32>,
    /// Scratch: runs an fsync writes.
    sync_runs: Vec<(u32, u64, u64)>,
    /// A whole-device or file-system sync under way: the writeback mark
    /// it waits to pass (`PageCache::writeback_mark`).
    whole_sync_mark: Option<u64>,
    /// On ext4: the fsync unit waiting for the commit of a tid, and
    /// whether it flushes after (`ext4_sync_file`'s `needs_barrier`).
    commit_wait: Option<(u32, Tid, bool)>,
}

/// Bio tags from here up are page-cache bios (readahead, fsync writeback),
/// not I/O units.
const RA_TAG_BASE: u32 = 1 << 30;

/// A page-cache bio of a job: pages `[start, end)` of `file`.
#[derive(Clone, Copy, Debug)]
struct CacheBio {
    file: u32,
    start: u64,
    end: u64,
    write: bool,
}

/// What a page-cache bio of a job does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum CacheIo {
    /// A read of missing pages (readahead or a miss).
    Read,
    /// WB_SYNC_ALL writeback (fsync, O_SYNC): REQ_SYNC.
    SyncWrite,
    /// WB_SYNC_NONE writeback started by the job itself (fadvise
    /// DONTNEED): no REQ_SYNC, nothing waits for it.
    Writeback,
}

impl FioJob {
    /// A job ready to start after `start_delay` once released. `gen` and
    /// `rate` are None for a job whose engine is not modelled.
    pub fn new(
        spec: &JobSpec,
        gen: Option<Generator>,
        rate: Option<RateLimiter>,
        stats: JobStats,
        start_delay: Ns,
        costs: SyscallCosts,
    ) -> FioJob {
        let kind = spec.ioengine.kind;
        let buffered = spec.is_buffered();
        // Buffered I/O is synchronous in the submit call (io_submit blocks on
        // a cache miss or a throttled write, reference §7.1): one unit at a time.
        let depth = if buffered { 1 } else { depth(spec) };
        FioJob {
            spec: spec.clone(),
            gen,
            rate,
            stats,
            kind,
            costs,
            depth,
            phase: if kind == EngineKind::NotModelled {
                Phase::Skipped
            } else {
                Phase::Waiting
            },
            start: start_delay,
            ramp_end: 0,
            deadline: Ns::MAX,
            stats_begun: false,
            io_woken: false,
            io_sleeps: 0,
            io_wakeups_charged: 0,
            ious: vec![IoU::default(); depth as usize + 1],
            free_slots: (0..depth + 1).rev().collect(),
            buffered,
            files: Vec::new(),
            call_extra_ns: 0,
            missing: Vec::new(),
            throttled_ns: 0,
            rebalance: false,
            ra: Vec::new(),
            ra_bios: Vec::new(),
            ra_free: Vec::new(),
            read_wait: None,
            sync_wait: None,
            sync_runs: Vec::new(),
            whole_sync_mark: None,
            commit_wait: None,
            inflight: 0,
            completed: VecDeque::new(),
            refill_low: false,
            pending: VecDeque::new(),
            staged: None,
            exhausted: false,
            writes_since_sync: 0,
            ios_since_think: 0,
            think_until: 0,
            end_sync_sent: false,
            open_pending: false,
            device_sync_sent: false,
            files_deleted: false,
            wrote: false,
            plug: Plug::default(),
            end: 0,
            batch: Vec::new(),
            issued: Vec::new(),
        }
    }

    /// Start at `at` (its start delay already added), with every job's
    /// simulated time capped at `cap`.
    pub fn start(&mut self, task: &mut Task, at: Ns, cap: Option<Ns>, cx: &mut TaskCx) {
        self.phase = Phase::Running;
        self.start = at;
        // Times from the job file add up: saturate (Ns::MAX is "never").
        self.ramp_end = at.saturating_add(self.spec.ramp_time);
        if self.ramp_end > at {
            // Counted from here until the ramp ends (then reset), and kept
            // if the job ends first.
            self.stats.begin(at);
        }
        let run_limit = match (self.spec.runtime, cap) {
            (Some(r), Some(c)) => Some(self.spec.ramp_time.saturating_add(r).min(c)),
            (Some(r), None) => Some(self.spec.ramp_time.saturating_add(r)),
            (None, c) => c,
        };
        self.deadline = run_limit.map_or(Ns::MAX, |l| at.saturating_add(l));
        self.open_files(cx);
        self.open_pending = true;
        task.sleep = None;
        cx.wake_at(task, at);
        if self.deadline != Ns::MAX {
            // The runtime limit wakes it too (not through wake_at: the start
            // wake-up stays armed).
            cx.events.push(self.deadline, Event::wake(task.id));
        }
    }

    /// The job's files (device regions), for the page cache's open-time work.
    pub fn set_files(&mut self, files: &[Region]) {
        self.files = files.to_vec();
    }

    /// fio opens its files: `pre_read` reads them into the cache (outside
    /// the measured phase), else `invalidate` drops their clean pages.
    fn open_files(&mut self, cx: &mut TaskCx) {
        if !self.buffered || cx.cache.is_none() {
            return;
        }
        for i in 0..self.files.len() {
            let Some((file, first, end)) = self.cache_file(cx, i) else {
                continue;
            };
            if self.spec.pre_read {
                let cache = cx.cache.as_deref_mut().expect("page cache");
                cache.preload(file, first, end, cx.now);
            } else if self.spec.invalidate && cx.fs.is_some() {
                // A raw device's BLKFLSBUF is `device_open_close`'s.
                self.fadvise_dontneed(cx, file, first, end);
            }
        }
    }

    /// The job's `i`th file as the page cache knows it: (file, first page,
    /// end page).
    fn cache_file(&self, cx: &TaskCx, i: usize) -> Option<(u32, u64, u64)> {
        let r = &self.files[i];
        let (first, end) = (r.start / PAGE, (r.start + r.len).div_ceil(PAGE));
        let file = cx.cache.as_deref()?.file_of(first)?;
        Some((file, first, end))
    }

    /// `posix_fadvise(POSIX_FADV_DONTNEED)` on pages `[first, end)` of a
    /// file (mm/fadvise.c `generic_fadvise`): WB_SYNC_NONE writeback of the
    /// range's dirty pages starts first (`__filemap_fdatawrite_range`, the
    /// bios submitted by the caller, who does not wait for them), then the
    /// clean pages are dropped; the pages just put under writeback stay.
    /// Pitfall: kernels before 5.x skipped the writeback while the device
    /// was write-congested; congestion is not modelled, so it always starts.
    fn fadvise_dontneed(&mut self, cx: &mut TaskCx, file: u32, first: u64, end: u64) {
        let max_sectors = cx.block.max_sectors().max(8) as u64;
        let mut runs = std::mem::take(&mut self.missing);
        let cache = cx.cache.as_deref_mut().expect("page cache");
        cache.take_dirty_range(file, first, end, &mut runs);
        cache.invalidate(file, first, end);
        for &(s, e) in &runs {
            self.write_back_run(cx, max_sectors, (file, s, e), CacheIo::Writeback);
        }
        self.missing = runs;
    }

    /// Pages `[s, e)` of `file`, just put under writeback, go to the device:
    /// the file system's part first (ext4 allocates delayed blocks), then
    /// the job's bios.
    fn write_back_run(
        &mut self,
        cx: &mut TaskCx,
        max: u64,
        (file, s, e): (u32, u64, u64),
        io: CacheIo,
    ) {
        if let Some(fs) = cx.fs.as_deref_mut() {
            fs.writeback(file, s, e, cx.now);
        }
        self.queue_cache_bios(max, file, s, e, io);
    }

    /// A file began a new pass: as at open, `invalidate` drops its clean
    /// pages (fio's loop_cache_invalidate, io_u.c: posix_fadvise DONTNEED
    /// when a time_based job wraps or its random map is used up; a new
    /// loop reopens the files), and starts writeback of their dirty ones.
    fn invalidate_wrapped(&mut self, cx: &mut TaskCx) {
        let Some(g) = self.gen.as_mut() else {
            return;
        };
        let which = g.take_wrapped();
        if which == Wrapped::None || !self.buffered || !self.spec.invalidate || self.spec.pre_read {
            return;
        }
        let Some(cache) = cx.cache.as_deref_mut() else {
            return;
        };
        if cx.fs.is_none() {
            // BLKFLSBUF on a raw device: a new loop's was done at the
            // reopen (`device_open_close`); a time_based wrap's drops the
            // device's clean pages here. Pitfall: its sync_blockdev, which
            // the kernel runs first, is not modelled at a wrap (the job
            // would have to stop mid-submission to wait for it), so pages
            // dirty at a wrap stay dirty.
            cache.invalidate_all();
            return;
        }
        for i in 0..self.files.len() {
            if which != Wrapped::All && which != Wrapped::File(i) {
                continue;
            }
            if let Some((file, first, end)) = self.cache_file(cx, i) {
                self.fadvise_dontneed(cx, file, first, end);
            }
        }
    }

    /// A bio of this job completed at `at` on `cpu` (`tag` is its I/O
    /// unit).
    pub fn bio_done(&mut self, task: &mut Task, tag: u32, at: Ns, cpu: u16, cx: &mut TaskCx) {
        if tag >= RA_TAG_BASE {
            self.ra_bio_done(task, tag - RA_TAG_BASE, at, cx);
            return;
        }
        let slot = tag as usize;
        let iou = &mut self.ious[slot];
        assert!(
            iou.pieces_left > 0,
            "bio of task {} slot {slot} completed twice",
            task.id
        );
        iou.pieces_left -= 1;
        if iou.pieces_left == 0 && iou.post_flush {
            // The write is on the device; the same call now flushes its cache.
            iou.post_flush = false;
            iou.pieces_left = 1;
            self.pending.push_back(Piece {
                slot: slot as u32,
                op: Op::Write,
                sector: 0,
                nr_sectors: 0,
                flags: flags::PREFLUSH,
                last: false,
            });
            if at > cx.now {
                cx.wake_at(task, at);
            } else {
                cx.step_again(task.id);
            }
            return;
        }
        if iou.pieces_left == 0 {
            let at = self.convert_after_dio(slot, at, cpu, cx);
            let iou = &mut self.ious[slot];
            iou.done = at.max(iou.issue);
            self.completed.push_back(slot as u32);
            let mut at = iou.done.max(cx.now);
            // Only the first completion of a sleep wakes the task (one
            // try_to_wake_up per sleep): later ones find it runnable and
            // cost no second wake-up.
            if task.sleep == Some(SleepReason::Io) && !self.io_woken {
                self.io_woken = true;
                // On an idle CPU the host's wake-up comes first.
                let woke = cx.block.wake_idle_cpu(task.cpu, at);
                self.io_wakeups_charged += u64::from(woke > at);
                at = woke;
            }
            if at > cx.now {
                // Delivered when the submit call that issued it has returned.
                cx.wake_at(task, at);
            } else {
                cx.step_again(task.id);
            }
        }
    }

    /// The task waits for its own I/O (io_getevents, a synchronous call):
    /// a new sleep, which the first completion to land wakes.
    ///
    /// Units already in the ring wake nobody: their completions' wake-ups
    /// were spent on steps that could not take them (the job could still
    /// submit then, and found only afterwards that it had nothing left), or
    /// folded into an earlier wake-up. io_getevents returns the landed ones
    /// at once, and the task sleeps until the next one lands.
    fn sleep_for_io(&mut self, task: &mut Task, cx: &mut TaskCx) {
        // One pass over the ring: a landed unit ends the sleep before it
        // begins; otherwise the earliest one still landing wakes the task.
        let mut next = Ns::MAX;
        for &s in &self.completed {
            let done = self.ious[s as usize].done;
            if done <= cx.now {
                self.take_landed(task, cx);
                return;
            }
            next = next.min(done);
        }
        task.sleep = Some(SleepReason::Io);
        self.io_woken = false;
        self.io_sleeps += 1;
        // Its CPU goes idle: the switch to the idle task is the sleeper's
        // (a task or worker that takes the CPU pays its own switch in).
        if self.costs.sleep_switch_ns > 0 && !cx.block.cpu_has_a_taker(task.cpu) {
            cx.block
                .cpu_run(task.cpu, cx.now, self.costs.sleep_switch_ns);
        }
        if next != Ns::MAX {
            cx.wake_at(task, next);
        }
    }

    /// `sleep_for_io` found landed units: io_getevents returns them, and
    /// the task acts again when that call's work is done.
    #[cold]
    #[inline(never)]
    fn take_landed(&mut self, task: &mut Task, cx: &mut TaskCx) {
        self.reap(task, cx, usize::MAX);
        let at = task.busy_until;
        if at > cx.now {
            cx.wake_at(task, at);
        } else {
            cx.step_again(task.id);
        }
    }

    /// The job acts at `cx.now`: reap, decide, submit at most one batch.
    /// Returns true when the job has just finished. What its CPU worked in
    /// the step — fio itself, its system calls and the block layer and
    /// driver below them — is the task's CPU time (fio's `usr`/`sys`).
    pub fn step(&mut self, task: &mut Task, cx: &mut TaskCx) -> bool {
        let before = cx.block.cpu_busy_ns(task.cpu);
        let finished = self.act(task, cx);
        self.stats.add_cpu(cx.block.cpu_busy_ns(task.cpu) - before);
        if finished {
            self.stats.settle_cpu(self.costs.null_submit_ns);
        }
        finished
    }

    fn act(&mut self, task: &mut Task, cx: &mut TaskCx) -> bool {
        let now = cx.now;
        if !matches!(
            self.phase,
            Phase::Running | Phase::Draining | Phase::Closing
        ) || task.blocked()
        {
            return false;
        }
        // The task's CPU may still be busy (its own call, completion work,
        // or another task's turn on a shared CPU).
        if !cx.take_cpu(task) {
            return false;
        }
        if task.sleep.take().is_some() {
            // It slept (its own wait, or another task had the CPU): a
            // context switch, as fio's `ctx` counts them.
            self.stats.ctx += 1;
        }
        if !self.stats_begun && now >= self.ramp_end {
            self.stats.begin(self.ramp_end);
            self.stats_begun = true;
        }
        let limit = self.reap_limit(now);
        if limit > 0 {
            self.reap(task, cx, limit);
        } else {
            self.arm_next_completion(task, cx);
        }
        if self.commit_wait.is_some() {
            self.after_commit(task, cx);
            return false;
        }
        if self.sync_wait.is_some() && self.pending.is_empty() {
            cx.block.cpu_begin(task.cpu, now);
            self.fsync_progress(task, cx);
            self.end_call(task, cx);
            if !task.blocked() {
                task.sleep = Some(SleepReason::Fsync);
            }
            return false;
        }
        if !self.pending.is_empty() {
            // Woken from a tag/freeze sleep: go on with the interrupted submission.
            cx.block.cpu_begin(task.cpu, now);
            cx.block.cpu_charge(self.costs.aio_submit_per_io_ns);
            self.submit_pending(task, cx, false);
            self.end_call(task, cx);
            if !task.blocked() {
                let at = task.busy_until;
                cx.wake_at(task, at);
            }
            return false;
        }
        if self.phase == Phase::Running && self.open_pending {
            if self.inflight > 0 {
                self.sleep_for_io(task, cx);
                return false;
            }
            if self.device_open_close(task, cx, DeviceEvent::Open) {
                return false;
            }
            self.open_pending = false;
        }
        if self.phase == Phase::Running
            && self.exhausted
            && self.staged.is_none()
            && now < self.deadline
            && self.gen.as_ref().is_some_and(|g| g.between_passes())
            && !self.next_pass(task, cx)
        {
            return false;
        }
        if self.phase == Phase::Running
            && (now >= self.deadline || (self.exhausted && self.staged.is_none()))
        {
            self.phase = Phase::Draining;
        }
        if self.phase == Phase::Draining {
            if self.inflight > 0 {
                self.sleep_for_io(task, cx);
                return false;
            }
            if self.end_of_pass_sync(task, cx) {
                return false;
            }
            self.finish(now);
            if self.device_open_close(task, cx, DeviceEvent::Close) {
                return false;
            }
            if self.spec.unlink && self.delete_files(task, cx, false) {
                return false;
            }
            self.phase = Phase::Done;
            return true;
        }
        if self.phase == Phase::Closing {
            if self.inflight > 0 {
                self.sleep_for_io(task, cx);
                return false;
            }
            if self.spec.unlink && self.delete_files(task, cx, false) {
                return false;
            }
            // Its last close's sync was reaped: the job ends.
            self.device_sync_sent = false;
            self.phase = Phase::Done;
            return true;
        }
        if self.spec.thinktime > 0 && self.ios_since_think >= self.spec.thinktime_blocks.max(1) {
            self.ios_since_think = 0;
            self.think_until = now.saturating_add(self.spec.thinktime);
        }
        if now < self.think_until {
            task.sleep = Some(SleepReason::ThinkTime);
            let at = self.think_until;
            cx.wake_at(task, at);
            return false;
        }
        self.prepare_and_submit(task, cx);
        false
    }

    /// Between two `loops=` passes, as fio's `thread_main` runs `do_io`
    /// once per pass: the pass ends when its in-flight I/O is reaped and its
    /// end-of-pass sync done; then the next pass starts. Returns whether it
    /// started (false: still waiting).
    fn next_pass(&mut self, task: &mut Task, cx: &mut TaskCx) -> bool {
        if self.inflight > 0 {
            self.sleep_for_io(task, cx);
            return false;
        }
        if self.end_of_pass_sync(task, cx) {
            return false;
        }
        if self.device_open_close(task, cx, DeviceEvent::Reopen) {
            return false;
        }
        // The read-back of `verify` reads the pass's files: they stay.
        let verify_next = self.gen.as_ref().is_some_and(|g| g.verify_due());
        if self.spec.unlink_each_loop && !verify_next && self.delete_files(task, cx, true) {
            return false;
        }
        self.end_sync_sent = false;
        self.exhausted = false;
        if let Some(g) = self.gen.as_mut() {
            g.begin_next_pass();
        }
        true
    }

    /// The end of `do_io` with nothing in flight: `end_fsync`,
    /// `fsync_on_close` or `end_syncfs` sync once per pass (backend.c), if
    /// the job wrote (fio.h `should_fsync`). Returns whether it sent one.
    fn end_of_pass_sync(&mut self, task: &mut Task, cx: &mut TaskCx) -> bool {
        let wanted = self.spec.end_fsync || self.spec.fsync_on_close || self.spec.end_syncfs;
        if !wanted || !self.wrote || self.end_sync_sent {
            return false;
        }
        self.end_sync_sent = true;
        let slot = self.new_sync_iou(cx.now);
        self.ious[slot as usize].syncfs = self.spec.end_syncfs;
        self.ious[slot as usize].quiet = true;
        self.commit(task, cx, &[slot]);
        true
    }

    /// What the kernel does to a raw block device's page cache when fio
    /// opens the job's files, reopens them for a new `loops=` pass
    /// (`clear_io_state` closes them, `td_io_open_file` opens them again)
    /// or closes them at the end. The last close (`blkdev_put` →
    /// `blkdev_flush_mapping`, v6.18 block/bdev.c) writes every dirty page
    /// of the device back and waits (`sync_blockdev`: no flush), then drops
    /// its pages (`kill_bdev`). fio's `invalidate` at open is the BLKFLSBUF
    /// ioctl (filesetup.c `blockdev_invalidate_cache`; block/ioctl.c
    /// `blkdev_flushbuf`): the same sync, then `invalidate_bdev`, the
    /// device's clean pages, every job's. Measured on 6.18 (tmpfs loop):
    /// three passes of a 16 MiB buffered write with no sync option write
    /// 3 × 16 MiB. Files on a file system do neither. Returns whether the
    /// job waits for the sync (the unit drops the pages when it completes,
    /// `sync_step`); called again once it is reaped, it goes on.
    fn device_open_close(&mut self, task: &mut Task, cx: &mut TaskCx, ev: DeviceEvent) -> bool {
        if std::mem::take(&mut self.device_sync_sent) {
            return false;
        }
        // fio's null engine opens nothing (FIO_DISKLESSIO).
        if cx.fs.is_some() || self.kind == EngineKind::Null {
            return false;
        }
        let Some(cache) = cx.cache.as_deref_mut() else {
            return false;
        };
        // pre_read clears invalidate (fio's option docs).
        let invalidate = self.spec.invalidate && !self.spec.pre_read;
        let sync = match ev {
            DeviceEvent::Open => {
                cache.device_openers += 1;
                invalidate
            }
            // Closed and opened again: its close is the last if no other job has it.
            DeviceEvent::Reopen => cache.device_openers == 1 || invalidate,
            DeviceEvent::Close => {
                cache.device_openers -= 1;
                cache.device_openers == 0
            }
        };
        if !sync {
            return false;
        }
        if !cache.any_unwritten() {
            cache.invalidate_all();
            return false;
        }
        let slot = self.new_sync_iou(cx.now);
        self.ious[slot as usize].device = true;
        self.ious[slot as usize].quiet = true;
        self.device_sync_sent = true;
        self.commit(task, cx, &[slot]);
        true
    }

    /// fio deletes the job's files (`unlink_each_loop` before a new pass,
    /// `recreate`: the pass's open makes them again, empty; `unlink` once
    /// the job has closed them). Only files on a file system: fio unlinks
    /// regular files, and without `--mount` the files are regions of the
    /// raw device. A file other jobs also name is left alone: their open
    /// descriptors keep its inode alive, which one page-cache file per name
    /// cannot hold apart from the new one (the CLI says so). Returns whether
    /// the job waits: truncation waits for the pages under writeback.
    fn delete_files(&mut self, task: &mut Task, cx: &mut TaskCx, recreate: bool) -> bool {
        if self.files_deleted || cx.fs.is_none() {
            return false;
        }
        let mut waiting = false;
        for i in 0..self.files.len() {
            let Some((file, _, _)) = self.cache_file(cx, i) else {
                continue;
            };
            let cache = cx.cache.as_deref_mut().expect("page cache");
            if cache.files()[file as usize].users == 1 {
                waiting |= cache.delete_file(file, cx.now);
            }
        }
        if waiting {
            let cache = cx.cache.as_deref_mut().expect("page cache");
            cache.wait_writeback(task.id);
            self.sleep_for_io(task, cx);
            return true;
        }
        for i in 0..self.files.len() {
            let Some((file, _, _)) = self.cache_file(cx, i) else {
                continue;
            };
            if cx.cache.as_deref().expect("page cache").files()[file as usize].users == 1 {
                let fs = cx.fs.as_deref_mut().expect("ext4");
                fs.delete(file, recreate, cx.now);
            }
        }
        cx.kick_jbd2();
        // `unlink` at the end deletes once; each pass's deletion is new.
        self.files_deleted = !recreate;
        false
    }

    /// Prepare one submit call's worth of I/O units and submit them.
    fn prepare_and_submit(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let now = cx.now;
        let max_sectors = cx.block.max_sectors().max(8) as u64;
        let batch_max = self.spec.iodepth_batch_submit.max(1) as usize;
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        while (self.inflight as usize + batch.len()) < self.depth as usize
            && batch.len() < batch_max
        {
            let fsync_every = if self.spec.fsync > 0 {
                self.spec.fsync
            } else {
                self.spec.fdatasync
            };
            if fsync_every > 0 && self.writes_since_sync >= fsync_every {
                self.writes_since_sync = 0;
                let slot = self.new_sync_iou(now);
                self.ious[slot as usize].datasync = self.spec.fsync == 0;
                batch.push(slot);
                continue;
            }
            let (io, due) = match self.staged.take() {
                Some(s) => s,
                None => match self.gen.as_mut().and_then(|g| g.next_io()) {
                    None => {
                        self.exhausted = true;
                        break;
                    }
                    Some(io) => {
                        self.invalidate_wrapped(cx);
                        let due = match self.rate.as_mut() {
                            Some(r) => r.issue_at(now, self.start, io.ddir, io.len),
                            None => now,
                        };
                        (io, due)
                    }
                },
            };
            if due > now {
                self.staged = Some((io, due));
                break;
            }
            let slot = self.free_slots.pop().expect("slot");
            self.ious[slot as usize] = IoU {
                ddir: Some(io.ddir),
                len: io.len,
                offset: io.offset,
                start: now,
                issue: now,
                pieces_left: 0,
                done: 0,
                post_flush: false,
                pause: 0,
                datasync: self.spec.sync_io == SyncIo::Dsync,
                syncfs: false,
                device: false,
                quiet: false,
                convert: None,
            };
            if io.ddir == Ddir::Write {
                self.writes_since_sync += 1;
                self.wrote = true;
            }
            self.ios_since_think += 1;
            if !(self.buffered && self.through_cache(task, cx, max_sectors, slot, io)) {
                // The null engine touches no file (FIO_DISKLESSIO): no
                // ext4 direct-I/O path under it.
                if !self.buffered && cx.fs.is_some() && self.kind != EngineKind::Null {
                    self.direct_on_fs(cx, slot, io);
                }
                self.split_into_pieces(max_sectors, slot, io);
            }
            batch.push(slot);
            if self.spec.thinktime > 0 && self.ios_since_think >= self.spec.thinktime_blocks.max(1)
            {
                break;
            }
        }
        if batch.is_empty() {
            self.batch = batch;
            if let Some((_, due)) = self.staged {
                task.sleep = Some(SleepReason::Rate);
                cx.wake_at(task, due);
            } else if self.exhausted && self.inflight == 0 {
                cx.step_again(task.id);
            } else {
                self.sleep_for_io(task, cx);
            }
            return;
        }
        self.commit(task, cx, &batch);
        self.batch = batch;
    }

    fn new_sync_iou(&mut self, now: Ns) -> u32 {
        let slot = self.free_slots.pop().expect("slot");
        self.ious[slot as usize] = IoU {
            ddir: None,
            len: 0,
            offset: 0,
            start: now,
            issue: now,
            pieces_left: 1,
            done: 0,
            post_flush: false,
            pause: 0,
            datasync: false,
            syncfs: false,
            device: false,
            quiet: false,
            convert: None,
        };
        slot
    }

    /// One submit call (`io_submit`, or `pread`/`pwrite` for sync engines).
    fn commit(&mut self, task: &mut Task, cx: &mut TaskCx, batch: &[u32]) {
        let now = cx.now;
        let cost = match self.kind {
            EngineKind::Sync => self.costs.sync_submit_ns,
            EngineKind::Null => self.costs.null_submit_ns,
            _ => {
                self.costs.aio_submit_base_ns + self.costs.aio_submit_per_io_ns * batch.len() as u64
            }
        } + std::mem::take(&mut self.call_extra_ns);
        for &slot in batch {
            let iou = &self.ious[slot as usize];
            let (is_sync, syncfs, device) = (iou.ddir.is_none(), iou.syncfs, iou.device);
            if syncfs && cx.fs.is_none() {
                // syncfs on a device node syncs devtmpfs, not the device:
                // nothing is written or flushed (measured on 6.18).
                self.complete_now(task, cx, slot);
                continue;
            }
            // fsync of cached data, or of a file on ext4 (its journal). The
            // null engine opens no file (FIO_DISKLESSIO) and completes a
            // sync unit like any other (engines/null.c): nothing to write.
            if is_sync
                && self.kind != EngineKind::Null
                && (self.buffered || device || cx.fs.is_some())
                && cx.cache.is_some()
            {
                // fsync of cached data: write back first, flush after.
                self.sync_wait = Some(slot);
                continue;
            }
            if is_sync {
                // fsync/fdatasync of a block device: blkdev_issue_flush sends
                // an empty REQ_OP_WRITE | REQ_PREFLUSH bio (block/blk-flush.c).
                self.pending.push_back(Piece {
                    slot,
                    op: Op::Write,
                    sector: 0,
                    nr_sectors: 0,
                    flags: flags::PREFLUSH,
                    last: true,
                });
            }
        }
        self.inflight += batch.len() as u32;
        let depth_now = self.inflight;
        if self.phase != Phase::Closing {
            self.stats.record_submit(batch.len() as u32, depth_now);
        }
        // The call runs on the task's CPU, after whatever that CPU is doing.
        let start = cx.block.cpu_begin(task.cpu, now);
        cx.block.cpu_charge(cost);
        if self.kind == EngineKind::Null {
            // fio's null engine completes everything at once, no device involved.
            let at = start + cost;
            for p in self.pending.drain(..) {
                self.ious[p.slot as usize].issue = at;
                cx.done.push(BioDone {
                    owner: BioOwner {
                        task: task.id,
                        tag: p.slot,
                    }
                    .token(),
                    at,
                    cpu: task.cpu,
                });
            }
        } else {
            // io_submit plugs batches above AIO_PLUG_THRESHOLD (2, fs/aio.c;
            // every batch before 5.0, `Era::aio_plug_threshold`); the
            // block-device direct I/O path plugs its bios too.
            // Readahead and writeback bios of a buffered call go out under
            // a plug (read_pages, wb_writeback).
            let plugged = batch.len() > 2
                || !cx.block.era().aio_plug_threshold
                || self.kind == EngineKind::Sync
                || self.buffered;
            self.submit_pending(task, cx, plugged);
            if self.sync_wait.is_some() && self.pending.is_empty() {
                self.fsync_progress(task, cx);
            }
        }
        self.end_call(task, cx);
        // A buffered call that the page cache finished (a hit, a copy into
        // cached pages) completes as it returns, before the job decides
        // whether to sleep: it is in the ring then, so a synchronous job
        // goes on without a sleep or a context switch (fio's `ctx` stays
        // near 0 for cache hits: 0.000 per I/O on the lab VM, 2026-12-08).
        if self.buffered {
            self.complete_in_call(task, cx, batch);
        }
        // A full job acts again on its next completion; otherwise when the call returns.
        if self.inflight < self.depth || task.blocked() || !self.pending.is_empty() {
            let at = task.busy_until;
            cx.wake_at(task, at);
        } else if let Some(&first) = self.completed.front() {
            // Full, with completions already in the ring: the next
            // io_getevents returns at once (when the call has returned).
            let at = task.busy_until.max(self.ious[first as usize].done);
            cx.wake_at(task, at);
        } else {
            self.sleep_for_io(task, cx);
        }
    }

    /// The task's call returns when its CPU has done the block-layer work too:
    /// that is the issue time (fio's `issue_time`) of every unit it queued.
    fn end_call(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let end = cx.block.cpu_end();
        task.busy_until = task.busy_until.max(end);
        for &slot in &self.issued {
            self.ious[slot as usize].issue = end;
        }
        self.issued.clear();
    }

    /// Submit the job's pending bios in order until done or the task sleeps
    /// (inside a call started with `cpu_begin`). Units whose last bio went in
    /// are collected in `self.issued`.
    fn submit_pending(&mut self, task: &mut Task, cx: &mut TaskCx, plugged: bool) {
        // The plug travels with the call only when the call plugs.
        let mut plug = if plugged {
            std::mem::take(&mut self.plug)
        } else {
            Plug::default()
        };
        while let Some(p) = self.pending.front().copied() {
            let mut b = BioSubmit {
                op: p.op,
                sector: p.sector,
                nr_sectors: p.nr_sectors,
                flags: p.flags,
                ioprio: task.ioprio,
                cgroup: task.cgroup,
                pid: task.id,
                cpu: task.cpu,
                owner: BioOwner {
                    task: task.id,
                    tag: p.slot,
                }
                .token(),
            };
            let r = cx.submit_bio(&mut b, if plugged { Some(&mut plug) } else { None });
            match r {
                SubmitResult::Taken => {
                    self.pending.pop_front();
                    if p.last {
                        self.issued.push(p.slot);
                    }
                }
                SubmitResult::Sleep(why) => {
                    task.sleep = Some(why.into());
                    break;
                }
            }
        }
        if plugged {
            cx.with_block(|b, env| b.finish_plug(env, &mut plug));
            self.plug = plug;
        }
    }

    /// How many completions fio collects when the job acts at `now` (fio's
    /// do_io loop, backend.c): while it can still submit, none — completed
    /// units stay in the ring and keep counting in the queue depth; once
    /// the queue is full, one `io_getevents` call of at least
    /// `iodepth_batch_complete_min` (at least 1) and at most
    /// `iodepth_batch_complete_max` events (which defaults to the minimum,
    /// so fio reaps one at a time), repeated until the depth is down to
    /// `iodepth_low`. When it cannot submit (draining, a rate or think-time
    /// wait, an fsync, a file exhausted) it takes everything there is; while
    /// it is inside a system call, nothing.
    /// On a device faster than the submitting CPU this is what keeps
    /// `iodepth` units outstanding and makes clat iodepth / IOPS.
    fn reap_limit(&mut self, now: Ns) -> usize {
        if !self.pending.is_empty() || self.commit_wait.is_some() {
            // fio is inside a system call (an io_submit that slept for a
            // request or tag and goes on where it stopped, or an fsync
            // waiting for its commit): it reaps nothing until it returns.
            return 0;
        }
        let can_submit = self.phase == Phase::Running
            && !self.exhausted
            && self.staged.is_none()
            && self.sync_wait.is_none()
            && now >= self.think_until
            && now < self.deadline
            && self.kind != EngineKind::Sync;
        if !can_submit {
            self.refill_low = false;
            return usize::MAX;
        }
        if self.inflight >= self.depth {
            self.refill_low = self.spec.iodepth_low < self.depth;
        }
        if !(self.inflight >= self.depth || self.refill_low) {
            return 0;
        }
        let min = self
            .spec
            .iodepth_batch_complete_min
            .clamp(1, self.inflight.max(1));
        let max = self.spec.iodepth_batch_complete_max.max(min);
        let ready = self
            .completed
            .iter()
            .filter(|&&s| self.ious[s as usize].done <= now)
            .take(min as usize)
            .count();
        if ready < min as usize {
            // io_getevents blocks for `min`: nothing is returned before.
            return 0;
        }
        let want = if self.refill_low {
            (self.inflight - self.spec.iodepth_low.min(self.inflight)).max(1)
        } else {
            max
        };
        want as usize
    }

    /// Nothing reaped now: make sure the task wakes when the first unit still
    /// in flight to the ring lands (its wake-up may have been folded into an
    /// earlier one that found it not yet there).
    fn arm_next_completion(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let next = self
            .completed
            .iter()
            .map(|&s| self.ious[s as usize].done)
            .filter(|&d| d > cx.now)
            .min();
        if let Some(at) = next {
            cx.wake_at(task, at);
        }
    }

    /// Collect up to `limit` completed I/O units (`io_getevents`), oldest
    /// first, and record them. Inlined into `step`, its hot caller (the
    /// other, `take_landed`, is cold).
    #[inline(always)]
    fn reap(&mut self, task: &mut Task, cx: &mut TaskCx, limit: usize) {
        let now = cx.now;
        if self.completed.is_empty() {
            return;
        }
        let mut n = 0;
        let mut i = 0;
        let mut next = Ns::MAX;
        while i < self.completed.len() {
            let slot = self.completed[i];
            let iou = self.ious[slot as usize];
            if iou.done > now {
                next = next.min(iou.done);
                i += 1;
                continue;
            }
            if n == limit {
                // Left in the ring for a later call.
                break;
            }
            self.completed.remove(i);
            n += 1;
            // fio stamps a completion when it reaps it (io_getevents returned),
            // so time spent waiting for the task counts in clat, as in fio.
            let reaped = now;
            if self.stats_begun && reaped >= self.ramp_end {
                let lat = reaped - iou.start;
                match iou.ddir {
                    Some(d) => {
                        let slat = iou.issue - iou.start;
                        let clat = reaped - iou.issue;
                        let (slat, clat) = if self.kind == EngineKind::Sync {
                            (None, lat)
                        } else {
                            (Some(slat), clat)
                        };
                        self.stats
                            .record_io_at(d, iou.offset, iou.len, slat, clat, lat, reaped);
                    }
                    // The end-of-job sync runs with fio in TD_FSYNCING and
                    // is not counted (ioengines.c td_io_queue; fio 3.x
                    // reports `sync` total_ios 0 for end_fsync=1).
                    None if iou.quiet => {}
                    None => self.stats.record_sync(lat),
                }
            } else if let (false, Some(d)) = (self.stats_begun, iou.ddir) {
                // In the ramp fio counts bytes and I/Os but no latencies
                // (io_completed accounts them only once ramp_time_over).
                self.stats.record_ramp_io(d, iou.len);
            }
            self.inflight -= 1;
            self.free_slots.push(slot);
        }
        if next != Ns::MAX {
            // Completions whose CPU work ends later: their wake-up may have
            // been folded into an earlier one (this step), so arm it again.
            cx.wake_at(task, next);
        }
        if n > 0 {
            if self.phase != Phase::Closing {
                self.stats.record_complete(n as u32);
            }
            // Reaping costs the task CPU time before it can submit again.
            let end = cx
                .block
                .cpu_run(task.cpu, now, self.costs.reap_per_io_ns * n as u64);
            task.busy_until = task.busy_until.max(end);
        }
    }

    /// Its statistics end (the files' close comes after: `Phase::Closing`).
    fn finish(&mut self, now: Ns) {
        self.phase = Phase::Closing;
        self.end = now;
        if !self.stats_begun {
            // A job that ends inside its ramp keeps what it counted since its
            // start: fio's reset at the ramp's end never came (fio 3.33:
            // 16384 reads, runtime 1.2 s, no latencies with ramp_time=5).
            if now >= self.ramp_end {
                self.stats.begin(self.ramp_end);
            }
            self.stats_begun = true;
        }
        self.stats.end(now);
    }

    /// A buffered read or write through the page cache. Returns false when
    /// the I/O does not go through it (a trim, or no cached file there).
    fn through_cache(
        &mut self,
        task: &mut Task,
        cx: &mut TaskCx,
        max_sectors: u64,
        slot: u32,
        io: IoUnit,
    ) -> bool {
        let Some(cache) = cx.cache.as_deref_mut() else {
            return false;
        };
        let (first, end) = (io.offset / PAGE, (io.offset + io.len).div_ceil(PAGE));
        let Some(file) = cache.file_of(first) else {
            return false;
        };
        let pages = end - first;
        match io.ddir {
            Ddir::Trim => false,
            Ddir::Read => {
                self.call_extra_ns += self.costs.page_read_ns * pages;
                self.buffered_read(cx, max_sectors, slot, file, first, end);
                true
            }
            Ddir::Write => {
                self.call_extra_ns += self.costs.page_write_ns * pages;
                self.buffered_write(task, cx, slot, file, first, end);
                if self.spec.sync_io != SyncIo::None {
                    // O_SYNC/O_DSYNC: generic_write_sync syncs after the copy.
                    self.sync_wait = Some(slot);
                    self.ious[slot as usize].pieces_left = 1;
                }
                true
            }
        }
    }

    /// A direct read or write of a file on ext4 (`ext4_dio_read_iter`,
    /// `ext4_dio_write_iter`): the file system's share of the call, the
    /// timestamp it updates, and whether the write ends in a conversion of
    /// unwritten blocks (`IoU::convert`).
    fn direct_on_fs(&mut self, cx: &mut TaskCx, slot: u32, io: IoUnit) {
        let (first, end) = (io.offset / PAGE, (io.offset + io.len).div_ceil(PAGE));
        let Some(file) = cx.cache.as_deref().and_then(|c| c.file_of(first)) else {
            return;
        };
        let fs = cx.fs.as_deref_mut().expect("ext4");
        match io.ddir {
            Ddir::Read => {
                fs.read(file, cx.now);
                self.call_extra_ns += self.costs.dio_fs_read_ns;
            }
            Ddir::Write => {
                fs.write(file, cx.now);
                if fs.needs_conversion(file, first, end) {
                    self.ious[slot as usize].convert = Some(file);
                }
                self.call_extra_ns += self.costs.dio_fs_write_ns;
            }
            Ddir::Trim => {}
        }
        cx.kick_jbd2();
    }

    /// The bios of a direct write into unwritten blocks are done at `at`
    /// on `cpu`: the `dio/DEV` kworker there (a per-CPU workqueue; the work
    /// is queued where the bio completed) converts the extents, one
    /// conversion of a file at a time (`i_data_sem` for writing), and only
    /// then does the write complete. Returns when it does.
    fn convert_after_dio(&mut self, slot: usize, at: Ns, cpu: u16, cx: &mut TaskCx) -> Ns {
        let Some(file) = self.ious[slot].convert.take() else {
            return at;
        };
        let iou = self.ious[slot];
        let (first, end) = (iou.offset / PAGE, (iou.offset + iou.len).div_ceil(PAGE));
        let fs = cx.fs.as_deref_mut().expect("ext4");
        let ready = at.max(fs.conversion_free(file));
        let done = cx.block.cpu_run(cpu, ready, self.costs.dio_convert_ns);
        let fs = cx.fs.as_deref_mut().expect("ext4");
        fs.dio_written(file, first, end, done);
        cx.kick_jbd2();
        done
    }

    /// The readahead state of this job's open `file` (`f_ra`, set at open
    /// from `read_ahead_kb` and fio's fadvise hint).
    fn ra_state(&mut self, file: u32, read_ahead_kb: u32) -> usize {
        if let Some(i) = self.ra.iter().position(|(f, _)| *f == file) {
            return i;
        }
        let random = self.spec.rw.is_random();
        let (seq_hint, rand_hint) = match self.spec.fadvise_hint {
            FadviseHint::None => (false, false),
            FadviseHint::Auto => (!random, random),
            FadviseHint::Sequential => (true, false),
            FadviseHint::Random => (false, true),
        };
        self.ra
            .push((file, RaState::open(read_ahead_kb, seq_hint, rand_hint)));
        self.ra.len() - 1
    }

    /// A buffered read of pages `[first, end)` (`filemap_read`): a miss
    /// starts synchronous readahead at the first absent page, touching the
    /// marker starts the next window asynchronously; the unit completes
    /// in the call when every page is up to date, else when the reads it
    /// waits for complete.
    fn buffered_read(
        &mut self,
        cx: &mut TaskCx,
        max_sectors: u64,
        slot: u32,
        file: u32,
        first: u64,
        end: u64,
    ) {
        let ra_kb = cx.block.knobs().read_ahead_kb;
        let io_pages = max_sectors / (PAGE / 512);
        if let Some(fs) = cx.fs.as_deref_mut() {
            fs.read(file, cx.now);
            cx.kick_jbd2();
        }
        let i = self.ra_state(file, ra_kb);
        let cache = cx.cache.as_deref_mut().expect("page cache");
        let base = cache.files()[file as usize].first;
        let mut ra = self.ra[i].1;
        if let Some(p) = cache.first_absent(file, first, end) {
            let w = ra.ondemand(p - base, end - p, false, io_pages, |max| {
                cache.cached_before(file, p, max)
            });
            self.read_window(
                cache,
                max_sectors,
                file,
                base + w.start,
                base + w.start + w.size,
            );
        }
        if let Some(m) = ra.marker().map(|m| base + m) {
            if (first..end).contains(&m) && cache.present(file, m) {
                let w = ra.ondemand(m - base, end - m, true, io_pages, |_| 0);
                self.read_window(
                    cache,
                    max_sectors,
                    file,
                    base + w.start,
                    base + w.start + w.size,
                );
            }
        }
        ra.prev = Some(end - 1 - base);
        self.ra[i].1 = ra;
        // Pages the windows did not cover, or locked by another job's read
        // (pitfall: the kernel would wait on that folio; the model reads it
        // again rather than track other jobs' reads).
        self.read_window(cache, max_sectors, file, first, end);
        let mut locked = std::mem::take(&mut self.missing);
        cache.reading_runs(file, first, end, &mut locked);
        for &(s, e) in &locked {
            if !self.ra_covers(file, s, e) {
                self.submit_read_run(max_sectors, file, s, e);
            }
        }
        self.missing = locked;
        if cache.uptodate(file, first, end) {
            cache.touch(file, first, end);
            return;
        }
        self.read_wait = Some((slot, file, first, end));
        // Not done in the call: it waits for the pages' reads.
        self.ious[slot as usize].pieces_left = 1;
        self.issued.push(slot);
    }

    /// Read the absent pages of `[s, e)` (they become locked).
    fn read_window(&mut self, cache: &mut PageCache, max_sectors: u64, file: u32, s: u64, e: u64) {
        let end = e.min(cache.files()[file as usize].end);
        let mut missing = std::mem::take(&mut self.missing);
        cache.fetch(file, s, end, &mut missing);
        for &(a, b) in &missing {
            self.submit_read_run(max_sectors, file, a, b);
        }
        self.missing = missing;
    }

    /// Whether this job's readahead bios in flight cover `[s, e)` of `file`.
    fn ra_covers(&self, file: u32, s: u64, e: u64) -> bool {
        let mut pos = s;
        while pos < e {
            let next = self.ra_bios.iter().flatten().find_map(|b| {
                (!b.write && b.file == file && b.start <= pos && pos < b.end).then_some(b.end)
            });
            match next {
                Some(b) => pos = b,
                None => return false,
            }
        }
        true
    }

    /// Queue read bios for pages `[s, e)`, at most `max` sectors each,
    /// each with a readahead tag of its own.
    fn submit_read_run(&mut self, max: u64, file: u32, s: u64, e: u64) {
        self.queue_cache_bios(max, file, s, e, CacheIo::Read);
    }

    /// Queue page-cache bios for pages `[s, e)` of `file`, at most `max`
    /// sectors each: reads, or writeback whose flags follow its sync mode
    /// (`wbc_to_write_flags`: REQ_SYNC for WB_SYNC_ALL only).
    fn queue_cache_bios(&mut self, max: u64, file: u32, s: u64, e: u64, io: CacheIo) {
        let write = io != CacheIo::Read;
        let per_bio = (max / (PAGE / 512)).max(1);
        let mut p = s;
        while p < e {
            let n = (e - p).min(per_bio);
            let idx = match self.ra_free.pop() {
                Some(i) => i,
                None => {
                    self.ra_bios.push(None);
                    (self.ra_bios.len() - 1) as u32
                }
            };
            self.ra_bios[idx as usize] = Some(CacheBio {
                file,
                start: p,
                end: p + n,
                write,
            });
            self.pending.push_back(Piece {
                slot: RA_TAG_BASE + idx,
                op: if write { Op::Write } else { Op::Read },
                sector: p * (PAGE / 512),
                nr_sectors: (n * (PAGE / 512)) as u32,
                flags: if io == CacheIo::SyncWrite {
                    flags::SYNC
                } else {
                    0
                },
                last: false,
            });
            p += n;
        }
    }

    /// A readahead bio completed: its pages are up to date; a unit waiting
    /// for them completes.
    fn ra_bio_done(&mut self, task: &mut Task, idx: u32, at: Ns, cx: &mut TaskCx) {
        let b = self.ra_bios[idx as usize]
            .take()
            .expect("page-cache bio completed twice");
        self.ra_free.push(idx);
        let cache = cx.cache.as_deref_mut().expect("page cache");
        if b.write {
            cache.writeback_done(b.file, b.start, b.end, at.max(cx.now));
            cache.wake_writeback_waiters(cx.ready);
            return;
        }
        cache.read_done(b.file, b.start, b.end, cx.now);
        let Some((slot, wf, first, end)) = self.read_wait else {
            return;
        };
        if !cache.uptodate(wf, first, end) {
            if !self.ra_covers(wf, first, end) {
                // None of its own reads is left for the pages it waits for:
                // another job dropped them before this one saw them (fio's
                // invalidate at a wrap), or another job's read holds them,
                // which the model does not track. filemap_read reads until
                // the pages are uptodate: read them again.
                let max_sectors = cx.block.max_sectors().max(8) as u64;
                let mut runs = std::mem::take(&mut self.missing);
                cache.fetch(wf, first, end, &mut runs);
                cache.reading_runs(wf, first, end, &mut runs);
                for &(s, e) in &runs {
                    if !self.ra_covers(wf, s, e) {
                        self.submit_read_run(max_sectors, wf, s, e);
                    }
                }
                self.missing = runs;
                if !self.pending.is_empty() {
                    cx.step_again(task.id);
                }
            }
            return;
        }
        cache.touch(wf, first, end);
        self.read_wait = None;
        let iou = &mut self.ious[slot as usize];
        iou.pieces_left = 0;
        iou.done = at.max(iou.issue);
        self.completed.push_back(slot);
        if iou.done > cx.now {
            let at = iou.done;
            cx.wake_at(task, at);
        } else {
            cx.step_again(task.id);
        }
    }

    /// Readahead bios still out (the run waits for them at its end).
    pub fn bios_out(&self) -> usize {
        self.ra_bios.len() - self.ra_free.len()
    }

    /// WB_SYNC_ALL writeback of the job's files for an fsync, fdatasync or
    /// O_SYNC write (`file_write_and_wait_range`), then what the file
    /// system does: on a raw block device the cache flush (`blkdev_fsync`
    /// → `blkdev_issue_flush`); on ext4 `ext4_sync_file` (the journal
    /// commit of the file's last transaction, and/or a flush). Each call
    /// writes the dirty pages, waits while any page of the files is dirty
    /// or under writeback (its own bios or the flusher's, which wake it),
    /// and goes on once none is. Runs inside a call started with `cpu_begin`.
    fn fsync_progress(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let Some(slot) = self.sync_wait else { return };
        let max_sectors = cx.block.max_sectors().max(8) as u64;
        let mut runs = std::mem::take(&mut self.missing);
        let mut writes = std::mem::take(&mut self.sync_runs);
        writes.clear();
        let mut busy = false;
        let cache = cx.cache.as_deref_mut().expect("page cache");
        let iou = &self.ious[slot as usize];
        // fsync: the job's files; syncfs or sync_blockdev: every file.
        let syncfs = iou.syncfs || iou.device;
        let count = if syncfs {
            cache.files().len()
        } else {
            self.files.len()
        };
        // A whole-device or file-system sync writes what is dirty when it
        // starts and waits for that and the writeback already in flight,
        // once: pages other jobs dirty meanwhile are not its to wait for
        // (WB_SYNC_ALL's tagging, `tag_pages_for_writeback`), else a
        // writer that never stops would hold it forever.
        let take = !syncfs || self.whole_sync_mark.is_none();
        for i in 0..count {
            let (first, end) = if syncfs {
                let f = &cache.files()[i];
                (f.first, f.end)
            } else {
                let r = &self.files[i];
                (r.start / PAGE, (r.start + r.len).div_ceil(PAGE))
            };
            let Some(file) = cache.file_of(first) else {
                continue;
            };
            if take {
                cache.take_dirty_range(file, first, end, &mut runs);
                writes.extend(runs.iter().map(|&(s, e)| (file, s, e)));
            }
            if !syncfs {
                busy |= !cache.clean_range(file, first, end);
            }
        }
        if syncfs {
            let mark = *self.whole_sync_mark.get_or_insert(cache.writeback_mark());
            busy = !cache.written_since(mark);
        }
        if busy {
            cache.wait_writeback(task.id);
        }
        self.missing = runs;
        for &run in &writes {
            self.write_back_run(cx, max_sectors, run, CacheIo::SyncWrite);
        }
        self.sync_runs = writes;
        if !busy {
            self.whole_sync_mark = None;
            self.sync_wait = None;
            self.sync_step(task, cx, slot);
        }
        cx.kick_jbd2();
        self.submit_pending(task, cx, true);
    }

    /// The data of an fsync unit is on the device: flush, commit, or done.
    fn sync_step(&mut self, task: &mut Task, cx: &mut TaskCx, slot: u32) {
        if self.ious[slot as usize].device {
            // sync_blockdev waits for the writeback and flushes nothing;
            // then BLKFLSBUF's invalidate_bdev or the last close's
            // kill_bdev drops the device's (now clean) pages.
            if let Some(cache) = cx.cache.as_deref_mut() {
                cache.invalidate_all();
            }
            self.complete_now(task, cx, slot);
            return;
        }
        let step = match cx.fs.as_deref_mut() {
            None => SyncStep::Flush,
            Some(fs) => {
                let cache = cx.cache.as_deref().expect("page cache");
                let mut ids: Vec<u32> = if self.ious[slot as usize].syncfs {
                    // ext4_sync_fs commits the running transaction (or
                    // flushes), whichever inodes it holds: all of them.
                    (0..cache.files().len() as u32).collect()
                } else {
                    self.files
                        .iter()
                        .filter_map(|r| cache.file_of(r.start / PAGE))
                        .collect()
                };
                ids.dedup();
                fs.sync_step(&ids, self.ious[slot as usize].datasync, cx.now)
            }
        };
        match step {
            SyncStep::Flush => self.queue_flush(slot),
            SyncStep::Done => self.complete_now(task, cx, slot),
            SyncStep::Commit { tid, flush_after } => {
                let fs = cx.fs.as_deref_mut().expect("ext4");
                fs.journal.wait_commit(task.id, tid);
                self.commit_wait = Some((slot, tid, flush_after));
            }
        }
    }

    /// The unit's cache flush (an empty REQ_PREFLUSH write) goes next.
    fn queue_flush(&mut self, slot: u32) {
        self.ious[slot as usize].pieces_left = 1;
        self.pending.push_back(Piece {
            slot,
            op: Op::Write,
            sector: 0,
            nr_sectors: 0,
            flags: flags::PREFLUSH,
            last: true,
        });
    }

    /// A unit that needs no (more) I/O completes at once.
    fn complete_now(&mut self, task: &mut Task, cx: &mut TaskCx, slot: u32) {
        let iou = &mut self.ious[slot as usize];
        iou.pieces_left = 0;
        iou.done = cx.now.max(iou.issue);
        self.completed.push_back(slot);
        cx.step_again(task.id);
    }

    /// Woken while an fsync waits for its journal commit: once the tid
    /// has committed, flush if `ext4_sync_file` needs one, else complete.
    fn after_commit(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let Some((slot, tid, flush)) = self.commit_wait else {
            return;
        };
        let committed = cx
            .fs
            .as_deref()
            .is_none_or(|fs| fs.journal.is_committed(tid));
        if !committed {
            task.sleep = Some(SleepReason::Fsync);
            return;
        }
        self.commit_wait = None;
        if !flush {
            self.complete_now(task, cx, slot);
            return;
        }
        cx.block.cpu_begin(task.cpu, cx.now);
        self.queue_flush(slot);
        self.submit_pending(task, cx, true);
        self.end_call(task, cx);
        if !task.blocked() {
            task.sleep = Some(SleepReason::Fsync);
        }
    }

    /// Copy into the cache: dirty the pages, wake the flusher for a newly
    /// dirty inode, and throttle (`balance_dirty_pages_ratelimited`).
    fn buffered_write(
        &mut self,
        task: &mut Task,
        cx: &mut TaskCx,
        slot: u32,
        file: u32,
        first: u64,
        end: u64,
    ) {
        let now = cx.now;
        let cache = cx.cache.as_deref_mut().expect("page cache");
        let flusher = cache.flusher_task;
        let mut wake = None;
        if let Some(fs) = cx.fs.as_deref_mut() {
            fs.write(file, now);
        }
        if cache.write(file, first, end, task.id, now) {
            // The first dirty inode: the flusher looks after the interval.
            let interval = cache.vm.writeback_interval_ns();
            if interval > 0 {
                wake = Some(now.saturating_add(interval));
            }
        }
        let mut pause = 0;
        if self.rebalance || cache.should_balance(task.id) {
            let t = cache.balance(task.id, now);
            if t.kick_background && cache.over_background() {
                wake = Some(now);
            }
            self.rebalance = t.over_limit;
            pause = t.pause;
        }
        if let Some(at) = wake {
            if cache.want_flusher(at) {
                cx.events.push(at, Event::wake(flusher));
            }
        }
        self.ious[slot as usize].pause = pause;
        cx.kick_jbd2();
    }

    /// Units the call finished in the page cache (hits, writes) complete
    /// when it returns, after a write's throttling pause.
    fn complete_in_call(&mut self, task: &mut Task, cx: &mut TaskCx, batch: &[u32]) {
        let end = task.busy_until;
        for &slot in batch {
            let iou = &mut self.ious[slot as usize];
            if iou.ddir.is_none() || iou.pieces_left > 0 || iou.done != 0 {
                continue;
            }
            iou.issue = end;
            iou.done = end.saturating_add(iou.pause);
            if iou.pause > 0 {
                self.throttled_ns += iou.pause;
                task.sleep = Some(SleepReason::DirtyThrottle);
            }
            let at = iou.done;
            self.completed.push_back(slot);
            cx.wake_at(task, at);
        }
    }

    /// Split an I/O unit into bios of at most `max` sectors (bio splitting;
    /// all but the last piece are REQ_NOMERGE, as the kernel marks split fronts).
    fn split_into_pieces(&mut self, max: u64, slot: u32, io: IoUnit) {
        let op = match io.ddir {
            Ddir::Read => Op::Read,
            Ddir::Write => Op::Write,
            Ddir::Trim => Op::Discard,
        };
        let mut base_flags = 0;
        if self.kind == EngineKind::Passthrough {
            base_flags |= flags::PASSTHROUGH;
        }
        let mut post_flush = false;
        if op == Op::Write && self.spec.direct {
            // O_DIRECT writes are REQ_SYNC | REQ_IDLE, plus REQ_FUA on an
            // O_SYNC/O_DSYNC file (block/fops.c dio_bio_write_op).
            base_flags |= flags::SYNC | flags::IDLE;
            if self.spec.sync_io != SyncIo::None {
                base_flags |= flags::FUA;
                // A write(2)-style call then syncs (blkdev_write_iter →
                // generic_write_sync → blkdev_fsync); an AIO write returns
                // -EIOCBQUEUED and does not.
                post_flush = self.kind == EngineKind::Sync;
            }
        }
        let mut sector = io.offset / 512;
        let mut left = io.len.div_ceil(512);
        let mut n = 0;
        while left > 0 {
            let take = left.min(max);
            left -= take;
            let last = left == 0;
            self.pending.push_back(Piece {
                slot,
                op,
                sector,
                nr_sectors: take as u32,
                flags: if last {
                    base_flags
                } else {
                    base_flags | flags::NOMERGE
                },
                last,
            });
            sector += take;
            n += 1;
        }
        self.ious[slot as usize].pieces_left = n;
        self.ious[slot as usize].post_flush = post_flush;
    }
}
