//! kjournald2 (`jbd2/<dev>-8`): the kernel task that commits the ext4
//! journal (fs/jbd2/commit.c `jbd2_journal_commit_transaction`, v6.5;
//! reference §5.2). It sleeps until a commit is due (fsync asked for a tid,
//! the commit timer fired, the transaction grew to a quarter of the
//! journal), then writes, in order:
//! 1. the journal superblock, on the first commit after mount (JBD2_FLUSHED:
//!    `jbd2_journal_update_sb_log_tail`, REQ_SYNC | REQ_FUA with barriers);
//! 2. under one plug, one descriptor block per 255 tags and a copy of each
//!    metadata block, 4 KiB bios on consecutive log blocks, flagged
//!    `JBD2_JOURNAL_REQ_FLAGS` = REQ_META | REQ_SYNC | REQ_IDLE, so they
//!    merge in the plug; with `journal_async_commit` the commit block goes
//!    into the same plug, without PREFLUSH/FUA (its checksum covers the
//!    transaction);
//! 3. waits for the log writes and, data=ordered, for the writeback of the
//!    data allocated in the transaction (`journal_finish_inode_data_buffers`);
//! 4. without async commit, the commit block: REQ_PREFLUSH | REQ_FUA with
//!    barriers (the flush machinery turns it into flush, write, and a
//!    post-flush on a device without FUA), plain otherwise; waits for it;
//! 5. with async commit and barriers, a cache flush after waiting
//!    (`blkdev_issue_flush`).
//!
//! Then the tid is committed, fsyncs waiting for it are woken, and its
//! blocks wait for the flusher to write them in place (fs/jbd2.rs).

use super::{BioOwner, SleepReason, Task, TaskCx};
use crate::block::request::{flags, Op};
use crate::block::{BioSubmit, Plug, SubmitResult};
use crate::fs::ext4::DataMode;
use crate::fs::jbd2::{Transaction, BLOCK, TAGS_PER_DESCRIPTOR};
use crate::sim::event::Event;
use crate::sim::time::Ns;
use std::collections::VecDeque;

/// `JBD2_JOURNAL_REQ_FLAGS` (include/linux/jbd2.h, 6.x).
pub const JOURNAL_REQ_FLAGS: u32 = flags::META | flags::SYNC | flags::IDLE;
/// CPU time to build one log block (model assumption: copying a 4 KiB
/// buffer into its shadow and adding a tag, ~1 µs on the reference core).
const COPY_NS_PER_BLOCK: Ns = 1000;
/// Sectors per journal block.
const BLOCK_SECTORS: u32 = (BLOCK / 512) as u32;

/// Where a commit is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Idle,
    /// The journal superblock write is out.
    Superblock,
    /// Descriptor and metadata blocks (and an async commit block) are out.
    Log,
    /// The commit block is out.
    CommitBlock,
    /// The trailing flush of an async commit with barriers is out.
    Flush,
}

/// One journal bio.
#[derive(Clone, Copy, Debug)]
struct JBio {
    sector: u64,
    nr_sectors: u32,
    flags: u32,
}

pub struct Jbd2Task {
    stage: Stage,
    txn: Option<Transaction>,
    /// Bios submitted and not completed.
    out: u32,
    pending: VecDeque<JBio>,
    plug: Plug,
    /// The jobs are done: start no new commit.
    pub stopping: bool,
    runs: Vec<(u64, u64)>,
    /// data=ordered: the writeback mark taken when the commit began to
    /// wait for its ordered data (`PageCache::writeback_mark`).
    ordered_mark: Option<u64>,
}

impl Default for Jbd2Task {
    fn default() -> Self {
        Self::new()
    }
}

impl Jbd2Task {
    pub fn new() -> Jbd2Task {
        Jbd2Task {
            stage: Stage::Idle,
            txn: None,
            out: 0,
            pending: VecDeque::new(),
            plug: Plug::default(),
            stopping: false,
            runs: Vec::new(),
            ordered_mark: None,
        }
    }

    /// A commit is under way (the run waits for it to end).
    pub fn busy(&self) -> bool {
        self.stage != Stage::Idle
    }

    /// A journal bio completed.
    pub fn bio_done(&mut self, task: &mut Task, cx: &mut TaskCx) {
        self.out -= 1;
        if self.out == 0 && self.pending.is_empty() && !task.blocked() {
            cx.step_again(task.id);
        }
    }

    /// kjournald2 acts at `cx.now`.
    pub fn step(&mut self, task: &mut Task, cx: &mut TaskCx) {
        if !cx.kernel_task_may_run(task) {
            return;
        }
        if !self.pending.is_empty() {
            self.submit(task, cx);
            return;
        }
        if self.out > 0 {
            task.sleep = Some(SleepReason::Io);
            return;
        }
        match self.stage {
            Stage::Idle => self.start(task, cx),
            Stage::Superblock => self.write_log(task, cx),
            Stage::Log => self.after_log(task, cx),
            Stage::CommitBlock => self.after_commit_block(task, cx),
            Stage::Flush => self.finish(task, cx),
        }
    }

    /// Start a commit if one is due; else sleep until the commit timer.
    fn start(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let now = cx.now;
        let fs = cx.fs.as_deref_mut().expect("ext4");
        let j = &mut fs.journal;
        let why = if self.stopping {
            // Only commits someone waits for (an fsync) still happen.
            j.commit_due(now)
                .filter(|_| j.running.as_ref().is_some_and(|t| j.requested >= t.tid))
        } else {
            j.commit_due(now)
        };
        let Some(why) = why else {
            if let Some(at) = j.expires().filter(|_| !self.stopping) {
                cx.wake_at(task, at.max(now));
            }
            return;
        };
        self.txn = j.begin_commit(why);
        if j.flushed {
            j.stats.superblock_writes += 1;
            let fua = if j.barrier { flags::FUA } else { 0 };
            self.pending.push_back(JBio {
                sector: j.start_sector,
                nr_sectors: BLOCK_SECTORS,
                flags: JOURNAL_REQ_FLAGS | fua,
            });
            self.stage = Stage::Superblock;
            self.submit(task, cx);
            return;
        }
        self.write_log(task, cx);
    }

    /// Queue the descriptor and metadata blocks (and the async commit
    /// block) and submit them under one plug.
    fn write_log(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let fs = cx.fs.as_deref_mut().expect("ext4");
        let j = &mut fs.journal;
        let n = self.txn.as_ref().map_or(0, |t| t.blocks.len() as u64);
        let total = n + n.div_ceil(TAGS_PER_DESCRIPTOR).max(1);
        let mut runs = std::mem::take(&mut self.runs);
        runs.clear();
        j.take_log_blocks(total, &mut runs);
        j.stats.log_blocks += total;
        if j.async_commit {
            j.take_log_blocks(1, &mut runs);
            j.stats.commit_blocks += 1;
        }
        for &(sector, blocks) in &runs {
            for b in 0..blocks {
                self.pending.push_back(JBio {
                    sector: sector + b * (BLOCK / 512),
                    nr_sectors: BLOCK_SECTORS,
                    flags: JOURNAL_REQ_FLAGS,
                });
            }
        }
        self.runs = runs;
        let end = cx
            .block
            .cpu_run(task.cpu, cx.now, COPY_NS_PER_BLOCK * total);
        task.busy_until = task.busy_until.max(end);
        self.stage = Stage::Log;
        self.submit(task, cx);
    }

    /// The log blocks are written: wait for ordered data, then the commit
    /// block (or, async, the flush).
    fn after_log(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let fs = cx.fs.as_deref_mut().expect("ext4");
        if fs.opts.data == DataMode::Ordered {
            let cache = cx.cache.as_deref_mut().expect("page cache");
            let txn = self.txn.as_ref().expect("committing transaction");
            // `jbd2_journal_finish_inode_data_buffers` waits for the pages
            // of the ordered ranges that are under writeback when its scan
            // reaches them (filemap_fdatawait_range), not for writeback
            // started later: a file rewritten all the time would otherwise
            // hold the commit forever. Waiting for what was in flight when
            // the commit first looked keeps that bound.
            let mark = *self.ordered_mark.get_or_insert(cache.writeback_mark());
            let waiting = !cache.written_since(mark)
                && txn
                    .ordered
                    .iter()
                    .any(|&(f, s, e)| cache.writeback_in(f, s, e));
            if waiting {
                cache.wait_writeback(task.id);
                task.sleep = Some(SleepReason::Io);
                return;
            }
            self.ordered_mark = None;
        }
        let j = &mut fs.journal;
        j.passed_flush_point();
        if j.async_commit {
            if j.barrier {
                self.pending.push_back(JBio {
                    sector: 0,
                    nr_sectors: 0,
                    flags: flags::PREFLUSH,
                });
                self.stage = Stage::Flush;
                j.stats.flushes += 1;
                self.submit(task, cx);
            } else {
                self.finish(task, cx);
            }
            return;
        }
        let mut runs = std::mem::take(&mut self.runs);
        runs.clear();
        j.take_log_blocks(1, &mut runs);
        j.stats.commit_blocks += 1;
        let barrier = if j.barrier {
            flags::PREFLUSH | flags::FUA
        } else {
            0
        };
        self.pending.push_back(JBio {
            sector: runs[0].0,
            nr_sectors: BLOCK_SECTORS,
            flags: JOURNAL_REQ_FLAGS | barrier,
        });
        self.runs = runs;
        self.stage = Stage::CommitBlock;
        self.submit(task, cx);
    }

    fn after_commit_block(&mut self, task: &mut Task, cx: &mut TaskCx) {
        self.finish(task, cx);
    }

    /// The transaction is committed: wake its waiters, look for more.
    /// Its blocks wait for their in-place write by the flusher, which looks
    /// after the writeback interval when they are the block device inode's
    /// first dirty pages.
    fn finish(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let now = cx.now;
        let fs = cx.fs.as_deref_mut().expect("ext4");
        fs.journal.end_commit(cx.ready);
        let txn = self.txn.take().expect("committing transaction");
        if fs.journal.checkpoint_add(&txn.blocks, now) {
            let cache = cx.cache.as_deref_mut().expect("page cache");
            let interval = cache.vm.writeback_interval_ns();
            let at = now.saturating_add(interval);
            if interval > 0 && cache.want_flusher(at) {
                cx.events.push(at, Event::wake(cache.flusher_task));
            }
        }
        self.stage = Stage::Idle;
        cx.step_again(task.id);
    }

    /// Submit the pending bios under one plug until done or blocked.
    fn submit(&mut self, task: &mut Task, cx: &mut TaskCx) {
        let now = cx.now.max(task.busy_until);
        if now > cx.now {
            cx.wake_at(task, now);
            return;
        }
        cx.block.cpu_begin(task.cpu, now);
        let mut plug = std::mem::take(&mut self.plug);
        while let Some(b) = self.pending.front().copied() {
            let mut bio = BioSubmit {
                op: Op::Write,
                sector: b.sector,
                nr_sectors: b.nr_sectors,
                flags: b.flags,
                ioprio: task.ioprio,
                cgroup: task.cgroup,
                pid: task.id,
                cpu: task.cpu,
                owner: BioOwner {
                    task: task.id,
                    tag: 0,
                }
                .token(),
            };
            match cx.submit_bio(&mut bio, Some(&mut plug)) {
                SubmitResult::Taken => {
                    self.out += 1;
                    self.pending.pop_front();
                }
                SubmitResult::Sleep(why) => {
                    task.sleep = Some(why.into());
                    break;
                }
            }
        }
        cx.with_block(|blk, env| blk.finish_plug(env, &mut plug));
        self.plug = plug;
        let end = cx.block.cpu_end();
        task.busy_until = task.busy_until.max(end);
        if !task.blocked() && self.out == 0 && self.pending.is_empty() {
            cx.wake_at(task, end);
        }
    }
}
