//! The flusher: one kernel task per device doing its dirty-page writeback
//! (fs/fs-writeback.c `wb_workfn` → `wb_do_writeback`, v6.0; the
//! `kworker/uN:M` "flush-MAJ:MIN" work item). It is woken by the first
//! dirty inode (`wb_wakeup_delayed`, after `dirty_writeback_centisecs`), by
//! a throttled writer over the background threshold (immediately), and
//! re-arms itself every `dirty_writeback_centisecs` while dirty inodes
//! remain. Each run does, in order:
//! 1. background writeback while NR_FILE_DIRTY > background threshold
//!    (`wb_check_background_flush`): every dirty inode qualifies, oldest
//!    first, `writeback_chunk_size()` pages per inode per turn;
//! 2. periodic (kupdate) writeback once per interval
//!    (`wb_check_old_data_flush`): whole inodes first dirtied more than
//!    `dirty_expire_centisecs` ago, oldest first, in chunks.
//!
//! On ext4 the block device's inode is one of them: its dirty pages are
//! the committed metadata blocks waiting for their in-place write
//! (fs/jbd2.rs), written all at once when its turn comes.
//!
//! Per inode it takes contiguous runs of dirty pages from the inode's
//! cyclic index and submits them as bios of at most `max_sectors_kb`,
//! flagged REQ_BACKGROUND (`wbc_to_write_flags`), under one plug, from its
//! own CPU. It never waits for its I/O; the block layer's tags hold it back.
//!
//! Pitfalls:
//! - Background writeback stops as soon as *dirty* pages (not dirty +
//!   writeback) are at the background threshold (`wb_over_bg_thresh`).
//! - An inode still dirty after a whole chunk goes to the back of the
//!   round (`b_more_io`), so big files are written round-robin.
//! - When the jobs are done the flusher starts nothing new; the run only
//!   waits for the bios it already has out.

use super::{BioOwner, SleepReason, Task, TaskCx};
use crate::block::request::{flags, Op};
use crate::block::{BioSubmit, Plug, SubmitResult};
use crate::cache::{PageCache, PAGE};
use crate::sim::event::Event;
use crate::sim::time::Ns;
use std::collections::VecDeque;

/// `MIN_WRITEBACK_PAGES`: 4 MiB (fs/fs-writeback.c).
const MIN_WRITEBACK_PAGES: u64 = 1024;
/// `DIRTY_SCOPE` (fs/fs-writeback.c writeback_chunk_size).
const DIRTY_SCOPE: u64 = 8;
/// CPU time of the flusher's page walk per page it puts under writeback
/// (model assumption: `write_cache_pages` locking and tagging a page,
/// ~0.1 µs on the reference core).
const WALK_NS_PER_PAGE: Ns = 100;

/// `WbBio::file` of the block device inode's pages: committed ext4
/// metadata written in place (device pages, not a file's).
const METADATA: u32 = u32::MAX;

/// A writeback bio: pages `[start, end)` of `file`.
#[derive(Clone, Copy, Debug)]
struct WbBio {
    file: u32,
    start: u64,
    end: u64,
}

/// What the flusher is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pass {
    Idle,
    /// A kupdate pass over inodes dirtied at or before the cut-off.
    Kupdate(Ns),
}

pub struct Flusher {
    /// Bios submitted and not completed, by tag (slot).
    inflight: Vec<Option<WbBio>>,
    free: Vec<u32>,
    /// Built, not yet submitted (the block layer had no tag).
    pending: VecDeque<WbBio>,
    plug: Plug,
    last_old_flush: Ns,
    pass: Pass,
    /// The jobs are done: start no new writeback.
    pub stopping: bool,
    inodes: Vec<u32>,
    runs: Vec<(u64, u64)>,
    meta_pages: Vec<u64>,
    /// Device capacity in sectors (a file's last page may pass it).
    capacity_sectors: u64,
}

impl Flusher {
    pub fn new(capacity_bytes: u64) -> Flusher {
        Flusher {
            inflight: Vec::new(),
            free: Vec::new(),
            pending: VecDeque::new(),
            plug: Plug::default(),
            last_old_flush: 0,
            pass: Pass::Idle,
            stopping: false,
            inodes: Vec::new(),
            runs: Vec::new(),
            meta_pages: Vec::new(),
            capacity_sectors: capacity_bytes / 512,
        }
    }

    /// Bios out or waiting: the run may end only when this is 0.
    pub fn busy(&self) -> usize {
        self.pending.len() + self.inflight.len() - self.free.len()
    }

    /// `writeback_chunk_size` for WB_SYNC_NONE work: about half a second of
    /// device bandwidth, at most 1/8 of the dirty limit, in 4 MiB steps.
    fn chunk_pages(cache: &PageCache) -> u64 {
        let pages = (cache.bw.avg_bw / 2).min(cache.limits().limit() / DIRTY_SCOPE);
        (pages + MIN_WRITEBACK_PAGES) / MIN_WRITEBACK_PAGES * MIN_WRITEBACK_PAGES
    }

    /// A bio of the flusher completed at `at`.
    pub fn bio_done(&mut self, task: &mut Task, tag: u32, at: Ns, cx: &mut TaskCx) {
        let b = self.inflight[tag as usize]
            .take()
            .expect("writeback bio completed twice");
        self.free.push(tag);
        let cache = cx.cache.as_deref_mut().expect("page cache");
        if b.file != METADATA {
            cache.writeback_done(b.file, b.start, b.end, at.max(cx.now));
        }
        cache.wake_writeback_waiters(cx.ready);
        // Work that found every dirty page under writeback goes on now.
        let more = self.pass != Pass::Idle || cache.over_background();
        if more && !self.stopping && !task.blocked() {
            cx.step_again(task.id);
        }
    }

    /// The flusher acts at `cx.now`.
    pub fn step(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let now = cx.now;
        if let Some(c) = cx.cache.as_deref_mut() {
            c.flusher_running(now);
        }
        if !cx.kernel_task_may_run(task) {
            return;
        }
        if !self.pending.is_empty() {
            self.submit(task, cx);
            return;
        }
        if self.stopping {
            return;
        }
        if self.write_one_chunk(task, cx) {
            if !task.blocked() {
                let at = task.busy_until.max(now);
                cx.wake_at(task, at);
            }
            return;
        }
        self.rearm(task, cx);
    }

    /// Pick the next inode by the work order and put one chunk of it under
    /// writeback. False when there is nothing to do.
    fn write_one_chunk(&mut self, task: &mut Task, cx: &mut TaskCx) -> bool {
        let now = cx.now;
        let meta_when = cx.fs.as_deref().and_then(|fs| fs.checkpoint_dirtied());
        let cache = cx.cache.as_deref_mut().expect("page cache");
        let mut inodes = std::mem::take(&mut self.inodes);
        let background = cache.over_background();
        if background {
            cache.dirty_inodes(None, &mut inodes);
        } else {
            self.start_kupdate_pass(cache, now);
            match self.pass {
                Pass::Kupdate(cutoff) => cache.dirty_inodes(Some(cutoff), &mut inodes),
                Pass::Idle => inodes.clear(),
            }
        }
        // The block device's inode (committed metadata) qualifies and takes
        // its turn by `dirtied_when` like the files'.
        let meta_due = meta_when.is_some_and(|w| match self.pass {
            _ if background => true,
            Pass::Kupdate(cutoff) => w <= cutoff,
            Pass::Idle => false,
        });
        if !background && inodes.is_empty() && !meta_due {
            self.pass = Pass::Idle;
        }
        let meta_first = meta_due
            && inodes
                .first()
                .is_none_or(|&f| meta_when <= cache.files()[f as usize].dirtied_when);
        let wrote = (meta_first && self.write_metadata(task, cx))
            || self.write_file_chunk(&inodes, task, cx)
            || (meta_due && !meta_first && self.write_metadata(task, cx));
        self.inodes = inodes;
        wrote
    }

    /// Once per writeback interval, a kupdate pass over the inodes dirtied
    /// more than the expiry ago (`wb_check_old_data_flush`).
    fn start_kupdate_pass(&mut self, cache: &PageCache, now: Ns) {
        let interval = cache.vm.writeback_interval_ns();
        if self.pass == Pass::Idle
            && interval > 0
            && now >= self.last_old_flush.saturating_add(interval)
        {
            self.last_old_flush = now;
            // Nothing can have expired before `expire` has passed (the
            // kernel's jiffies start 5 minutes before 0 instead).
            if let Some(cutoff) = now.checked_sub(cache.vm.expire_ns()) {
                self.pass = Pass::Kupdate(cutoff);
            }
        }
    }

    /// One chunk of the first of `inodes` with pages not already under
    /// writeback. False when none has any.
    fn write_file_chunk(&mut self, inodes: &[u32], task: &mut Task, cx: &mut TaskCx) -> bool {
        let now = cx.now;
        let cache = cx.cache.as_deref_mut().expect("page cache");
        let chunk = Self::chunk_pages(cache);
        cache.writeback_start(now);
        let mut runs = std::mem::take(&mut self.runs);
        let mut taken = 0;
        let mut file = 0;
        for &f in inodes {
            taken = cache.take_dirty(f, chunk, &mut runs);
            if taken > 0 {
                file = f;
                break;
            }
        }
        if taken == 0 {
            self.runs = runs;
            return false;
        }
        if cache.files()[file as usize].dirty > 0 && taken >= chunk {
            cache.requeue(file);
        }
        if let Some(fs) = cx.fs.as_deref_mut() {
            // ext4_do_writepages maps (allocates, converts) each run first.
            for &(s, e) in &runs {
                fs.writeback(file, s, e, now);
            }
        }
        cx.kick_jbd2();
        self.queue_runs(file, &runs, cx);
        self.runs = runs;
        self.charge_walk(taken, task, cx);
        true
    }

    /// The committed metadata's in-place write: every dirty block of the
    /// block device's inode, its contiguous pages as one bio (the buffers'
    /// pages written in index order under the flusher's plug merge).
    fn write_metadata(&mut self, task: &mut Task, cx: &mut TaskCx) -> bool {
        let Some(fs) = cx.fs.as_deref_mut() else {
            return false;
        };
        let mut pages = std::mem::take(&mut self.meta_pages);
        fs.take_checkpoint(&mut pages);
        let mut runs = std::mem::take(&mut self.runs);
        runs.clear();
        for &p in &pages {
            match runs.last_mut() {
                Some((_, e)) if *e == p => *e += 1,
                _ => runs.push((p, p + 1)),
            }
        }
        self.queue_runs(METADATA, &runs, cx);
        self.runs = runs;
        let taken = pages.len() as u64;
        self.meta_pages = pages;
        self.charge_walk(taken, task, cx);
        taken > 0
    }

    /// Bios of at most `max_sectors_kb` for the page runs of `file`.
    fn queue_runs(&mut self, file: u32, runs: &[(u64, u64)], cx: &TaskCx) {
        let max_pages = (cx.block.max_sectors() as u64 / 8).max(1);
        for &(s, e) in runs {
            let mut p = s;
            while p < e {
                let n = (e - p).min(max_pages);
                self.pending.push_back(WbBio {
                    file,
                    start: p,
                    end: p + n,
                });
                p += n;
            }
        }
    }

    /// The page walk's CPU time for `pages` put under writeback.
    fn charge_walk(&mut self, pages: u64, task: &mut Task, cx: &mut TaskCx) {
        let end = cx.block.cpu_run(task.cpu, cx.now, WALK_NS_PER_PAGE * pages);
        task.busy_until = task.busy_until.max(end);
    }

    /// Nothing to do now: come back after the writeback interval while
    /// dirty inodes remain (`wb_workfn` → `wb_wakeup_delayed`).
    fn rearm(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let meta_dirty = cx
            .fs
            .as_deref()
            .is_some_and(|fs| fs.checkpoint_dirtied().is_some());
        let cache = cx.cache.as_deref_mut().expect("page cache");
        let interval = cache.vm.writeback_interval_ns();
        let dirty = cache.counts().dirty > 0 || meta_dirty;
        if dirty && interval > 0 {
            let at = cx.now.saturating_add(interval);
            if cache.want_flusher(at) {
                cx.events.push(at, Event::wake(task.id));
            }
        }
        if dirty && cache.over_background() {
            // Background work left but all of it under writeback already:
            // completions bring the flusher back.
            task.sleep = Some(SleepReason::Io);
        }
    }

    /// Submit the pending bios under one plug until done or out of tags.
    fn submit(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let now = cx.now;
        cx.block.cpu_begin(task.cpu, now);
        let mut plug = std::mem::take(&mut self.plug);
        while let Some(b) = self.pending.front().copied() {
            let slot = match self.free.pop() {
                Some(s) => s,
                None => {
                    self.inflight.push(None);
                    (self.inflight.len() - 1) as u32
                }
            };
            let sector = b.start * (PAGE / 512);
            let end = (b.end * (PAGE / 512)).min(self.capacity_sectors);
            let mut bio = BioSubmit {
                op: Op::Write,
                sector,
                nr_sectors: end.saturating_sub(sector) as u32,
                // Buffers ext4 read as metadata keep BH_Meta, which
                // `submit_bh_wbc` turns into REQ_META ("WM" in the trace).
                flags: if b.file == METADATA {
                    flags::BACKGROUND | flags::META
                } else {
                    flags::BACKGROUND
                },
                ioprio: task.ioprio,
                cgroup: task.cgroup,
                pid: task.id,
                cpu: task.cpu,
                owner: BioOwner {
                    task: task.id,
                    tag: slot,
                }
                .token(),
            };
            if bio.nr_sectors == 0 {
                // Past the device's end: nothing to write.
                self.free.push(slot);
                self.pending.pop_front();
                if b.file != METADATA {
                    let c = cx.cache.as_deref_mut().expect("page cache");
                    c.writeback_done(b.file, b.start, b.end, now);
                }
                continue;
            }
            match cx.submit_bio(&mut bio, Some(&mut plug)) {
                SubmitResult::Taken => {
                    self.inflight[slot as usize] = Some(b);
                    self.pending.pop_front();
                }
                SubmitResult::Sleep(why) => {
                    self.free.push(slot);
                    task.sleep = Some(why.into());
                    break;
                }
            }
        }
        cx.with_block(|blk, env| blk.finish_plug(env, &mut plug));
        self.plug = plug;
        let end = cx.block.cpu_end();
        task.busy_until = task.busy_until.max(end);
        if !task.blocked() {
            let at = task.busy_until;
            cx.wake_at(task, at);
        }
    }
}
