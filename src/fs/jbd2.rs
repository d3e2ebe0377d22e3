//! The jbd2 journal of an ext4 file system (fs/jbd2/transaction.c,
//! commit.c, journal.c; v6.5 unless said otherwise): one running
//! transaction collects the metadata blocks handles dirty; at most one
//! transaction commits at a time; the log is a contiguous area of the
//! device written as a circle.
//!
//! Commit triggers (reference §5.1): the commit interval (`commit=`,
//! `t_expires = t_start + j_commit_interval`), an fsync/O_SYNC asking for a
//! tid, and a transaction reaching a quarter of the journal
//! (`j_max_transaction_buffers`). What a commit writes and in what order is
//! the kjournald2 task's (task/jbd2.rs); this file keeps the state both it
//! and the file system's callers share.
//!
//! Checkpointing: once a transaction has committed, each of its metadata
//! blocks is an ordinary dirty buffer of the block device
//! (`__jbd2_journal_unfile_buffer` turns `jbddirty` into `mark_buffer_dirty`,
//! unless the running transaction holds the block again), so the flusher
//! writes it in place like a page of any dirty inode: by the expiry, or in
//! background writeback (task/flusher.rs). A handle that dirties such a
//! block again takes it back first (`do_get_write_access` clears the dirty
//! bit and sets `jbddirty`), so a block rewritten more often than it
//! expires is written in place only when the updates stop.
//!
//! Not modelled: the synchronous checkpoint when log space runs out
//! (`__jbd2_log_wait_for_space`: the log wraps freely), a handle waiting for
//! its block's in-place write to end, revoke records, fast commits,
//! `max_batch_time` batching of concurrent fsyncs.

use crate::sim::time::{Ns, NS_PER_SEC};
use std::collections::BTreeSet;

/// A transaction id (`tid_t`; never wraps in a simulated run).
pub type Tid = u64;

/// `JBD2_DEFAULT_MAX_COMMIT_AGE` (include/linux/jbd2.h): 5 s.
pub const DEFAULT_COMMIT_SECS: u64 = 5;
/// Bytes per journal block (4 KiB file system blocks).
pub const BLOCK: u64 = 4096;
/// Tags per descriptor block: (4096 − 12-byte header − 4-byte checksum
/// tail) / 16-byte `journal_block_tag3_t` (csum v3, 64bit: mke2fs's
/// defaults since e2fsprogs 1.43).
pub const TAGS_PER_DESCRIPTOR: u64 = (4096 - 12 - 4) / 16;

/// The default journal size for a file system of `bytes`
/// (e2fsprogs lib/ext2fs/mkjournal.c `ext2fs_default_journal_size`, 1.47;
/// reference §5.1), in 4 KiB blocks.
pub fn default_journal_blocks(bytes: u64) -> u64 {
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    let mib = match bytes {
        b if b < 128 * MIB => 4,
        b if b < GIB => 16,
        b if b < 2 * GIB => 32,
        b if b < 16 * GIB => 64,
        b if b < 32 * GIB => 128,
        b if b < 64 * GIB => 256,
        b if b < 128 * GIB => 512,
        _ => 1024,
    };
    mib * MIB / BLOCK
}

/// One transaction (`transaction_t`).
#[derive(Clone, Debug, Default)]
pub struct Transaction {
    pub tid: Tid,
    /// When its first handle started it (`t_start`).
    pub start: Ns,
    /// Metadata blocks its handles dirtied (ids from ext4.rs).
    pub blocks: BTreeSet<u64>,
    /// data=ordered: file page ranges `(file, start, end)` allocated in it;
    /// the commit waits for their writeback before its commit block.
    pub ordered: Vec<(u32, u64, u64)>,
}

/// What the journal did in a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JournalStats {
    pub commits: u64,
    /// Commits started by the commit interval, by an fsync, by size.
    pub timer_commits: u64,
    pub sync_commits: u64,
    pub size_commits: u64,
    /// Log blocks written: descriptors and metadata copies.
    pub log_blocks: u64,
    pub commit_blocks: u64,
    pub superblock_writes: u64,
    /// Cache flushes ext4/jbd2 sent on their own (`blkdev_issue_flush`).
    pub flushes: u64,
    /// Committed metadata blocks the flusher wrote in place.
    pub checkpoint_blocks: u64,
}

/// Why a commit starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommitWhy {
    Timer,
    Sync,
    Size,
}

/// The journal (`journal_t`).
#[derive(Clone, Debug)]
pub struct Journal {
    /// First device sector of the journal (its superblock) and its length
    /// in blocks, the superblock included.
    pub start_sector: u64,
    pub len_blocks: u64,
    /// Next log block (1..len_blocks; block 0 is the journal superblock).
    head: u64,
    pub running: Option<Transaction>,
    next_tid: Tid,
    /// `j_commit_sequence`: the last committed tid.
    pub committed: Tid,
    /// `j_commit_request`: the highest tid asked to commit.
    pub requested: Tid,
    /// The committing tid and whether it passed T_COMMIT_JFLUSH.
    pub committing: Option<(Tid, bool)>,
    /// `j_commit_interval`.
    pub interval: Ns,
    /// JBD2_BARRIER (`barrier`, the default; `nobarrier` clears it).
    pub barrier: bool,
    /// The ASYNC_COMMIT feature (`journal_async_commit`).
    pub async_commit: bool,
    /// JBD2_FLUSHED: the first commit after mount rewrites the superblock.
    pub flushed: bool,
    /// Tasks waiting for a tid to commit (`jbd2_log_wait_commit`).
    waiters: Vec<(u32, Tid)>,
    pub stats: JournalStats,
    /// kjournald2 should look at this time (its caller arms the wake-up).
    wake: Option<Ns>,
    /// Committed blocks not yet written in place: the block device inode's
    /// dirty buffers, by block id.
    checkpoint: BTreeSet<u64>,
    /// When that inode went from clean to dirty (`dirtied_when`).
    checkpoint_dirtied: Option<Ns>,
}

impl Journal {
    /// The journal of a file system on a device of `capacity` bytes: the
    /// default size, placed at the middle of the file system as mke2fs
    /// does (`get_midpoint_journal_block`, e2fsprogs ≥ 1.42.7, memory), so
    /// a rotating disk seeks between the data and the log.
    pub fn new(capacity: u64, commit_secs: u64, barrier: bool, async_commit: bool) -> Journal {
        let len_blocks = default_journal_blocks(capacity)
            .min(capacity / BLOCK / 2)
            .max(2);
        let mid_block = (capacity / BLOCK / 2).saturating_sub(len_blocks / 2);
        let secs = if commit_secs == 0 {
            DEFAULT_COMMIT_SECS
        } else {
            commit_secs
        };
        Journal {
            start_sector: mid_block * (BLOCK / 512),
            len_blocks,
            head: 1,
            running: None,
            next_tid: 1,
            committed: 0,
            requested: 0,
            committing: None,
            interval: secs.saturating_mul(NS_PER_SEC),
            barrier,
            async_commit,
            flushed: true,
            waiters: Vec::new(),
            stats: JournalStats::default(),
            wake: None,
            checkpoint: BTreeSet::new(),
            checkpoint_dirtied: None,
        }
    }

    /// `j_max_transaction_buffers`: a quarter of the journal.
    pub fn max_transaction_blocks(&self) -> u64 {
        (self.len_blocks / 4).max(1)
    }

    /// The running transaction, started by this handle if there is none
    /// (`start_this_handle`): the commit timer is armed at its start.
    fn handle(&mut self, now: Ns) -> &mut Transaction {
        if self.running.is_none() {
            let tid = self.next_tid;
            self.next_tid += 1;
            self.running = Some(Transaction {
                tid,
                start: now,
                ..Transaction::default()
            });
            self.want_wake(now.saturating_add(self.interval));
        }
        self.running.as_mut().expect("running transaction")
    }

    /// A handle dirtied metadata `block`: it joins the running transaction,
    /// whose tid is returned. A transaction over its size limit asks for
    /// its commit (`start_this_handle` → `__jbd2_log_start_commit`).
    pub fn dirty_metadata(&mut self, block: u64, now: Ns) -> Tid {
        // A block waiting for its in-place write goes back to the journal.
        if self.checkpoint.remove(&block) && self.checkpoint.is_empty() {
            self.checkpoint_dirtied = None;
        }
        let max = self.max_transaction_blocks();
        let t = self.handle(now);
        t.blocks.insert(block);
        let (tid, full) = (t.tid, t.blocks.len() as u64 + 1 >= max);
        if full {
            self.request_commit(tid, now);
        }
        tid
    }

    /// data=ordered: pages `[start, end)` of `file` were allocated in the
    /// running transaction (`ext4_jbd2_inode_add_wait`).
    pub fn add_ordered(&mut self, file: u32, start: u64, end: u64, now: Ns) {
        let t = self.handle(now);
        match t.ordered.last_mut() {
            Some(last) if last.0 == file && last.2 == start => last.2 = end,
            _ => t.ordered.push((file, start, end)),
        }
    }

    /// The committed transaction's `blocks` at `now` become dirty buffers
    /// to be written in place, except those the running transaction holds
    /// again (they stay the journal's). True when the block device's inode
    /// went from clean to dirty (the caller wakes the flusher after the
    /// writeback interval, as for the first dirty page of a file).
    pub fn checkpoint_add(&mut self, blocks: &BTreeSet<u64>, now: Ns) -> bool {
        let was_clean = self.checkpoint.is_empty();
        let running = self.running.as_ref().map(|t| &t.blocks);
        for &b in blocks {
            if !running.is_some_and(|r| r.contains(&b)) {
                self.checkpoint.insert(b);
            }
        }
        if was_clean && !self.checkpoint.is_empty() {
            self.checkpoint_dirtied = Some(now);
            return true;
        }
        false
    }

    /// When the committed blocks waiting for their in-place write were
    /// first dirtied; None when there are none.
    pub fn checkpoint_dirtied(&self) -> Option<Ns> {
        self.checkpoint_dirtied
    }

    /// The flusher takes every block waiting for its in-place write (ids
    /// into `out`, in id order): the inode is clean again.
    pub fn take_checkpoint(&mut self, out: &mut Vec<u64>) {
        out.clear();
        out.extend(std::mem::take(&mut self.checkpoint));
        self.checkpoint_dirtied = None;
        self.stats.checkpoint_blocks += out.len() as u64;
    }

    /// Whether `tid` has committed.
    pub fn is_committed(&self, tid: Tid) -> bool {
        tid <= self.committed
    }

    /// `jbd2_trans_will_send_data_barrier`: the commit of `tid` is still to
    /// send its flush (not committed, and not past T_COMMIT_JFLUSH).
    pub fn will_send_data_barrier(&self, tid: Tid) -> bool {
        if !self.barrier || self.is_committed(tid) {
            return false;
        }
        !matches!(self.committing, Some((t, true)) if t == tid)
    }

    /// `jbd2_log_start_commit(tid)`: kjournald2 is woken to commit it.
    pub fn request_commit(&mut self, tid: Tid, now: Ns) {
        if tid > self.requested && !self.is_committed(tid) {
            self.requested = tid;
            self.want_wake(now);
        }
    }

    /// `task` waits until `tid` has committed.
    pub fn wait_commit(&mut self, task: u32, tid: Tid) {
        if !self.waiters.contains(&(task, tid)) {
            self.waiters.push((task, tid));
        }
    }

    fn want_wake(&mut self, at: Ns) {
        self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
    }

    /// A wake-up of kjournald2 someone asked for (taken once).
    pub fn take_wake(&mut self) -> Option<Ns> {
        self.wake.take()
    }

    /// Why the running transaction should commit at `now`, if it should
    /// (kjournald2's loop: `j_commit_sequence != j_commit_request`, or the
    /// timer at `t_expires`).
    pub fn commit_due(&self, now: Ns) -> Option<CommitWhy> {
        let t = self.running.as_ref()?;
        if self.committing.is_some() {
            return None;
        }
        if t.blocks.len() as u64 + 1 >= self.max_transaction_blocks() {
            Some(CommitWhy::Size)
        } else if self.requested >= t.tid {
            Some(CommitWhy::Sync)
        } else if now >= t.start.saturating_add(self.interval) {
            Some(CommitWhy::Timer)
        } else {
            None
        }
    }

    /// When the running transaction's timer fires, if one runs.
    pub fn expires(&self) -> Option<Ns> {
        self.running
            .as_ref()
            .map(|t| t.start.saturating_add(self.interval))
    }

    /// T_LOCKED: the running transaction becomes the committing one; the
    /// next handle starts a new one.
    pub fn begin_commit(&mut self, why: CommitWhy) -> Option<Transaction> {
        let t = self.running.take()?;
        self.committing = Some((t.tid, false));
        self.stats.commits += 1;
        match why {
            CommitWhy::Timer => self.stats.timer_commits += 1,
            CommitWhy::Sync => self.stats.sync_commits += 1,
            CommitWhy::Size => self.stats.size_commits += 1,
        }
        Some(t)
    }

    /// The commit passed T_COMMIT_JFLUSH (its log blocks are written).
    pub fn passed_flush_point(&mut self) {
        if let Some((_, f)) = self.committing.as_mut() {
            *f = true;
        }
    }

    /// `n` consecutive log blocks from the head (`jbd2_journal_next_log_block`),
    /// as device runs `(sector, blocks)`: two when the circle wraps.
    pub fn take_log_blocks(&mut self, n: u64, out: &mut Vec<(u64, u64)>) {
        let mut left = n;
        while left > 0 {
            let room = self.len_blocks - self.head;
            let k = left.min(room);
            out.push((self.start_sector + self.head * (BLOCK / 512), k));
            self.head += k;
            if self.head >= self.len_blocks {
                self.head = 1;
            }
            left -= k;
        }
    }

    /// The commit of the committing transaction ended: its waiters go to `ready`.
    pub fn end_commit(&mut self, ready: &mut Vec<u32>) {
        let Some((tid, _)) = self.committing.take() else {
            return;
        };
        self.committed = tid;
        self.flushed = false;
        let committed = self.committed;
        self.waiters.retain(|&(task, t)| {
            if t <= committed {
                ready.push(task);
                false
            } else {
                true
            }
        });
        if self.running.is_some() && self.requested > committed {
            self.want_wake(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j() -> Journal {
        Journal::new(8 << 30, 0, true, false)
    }

    #[test]
    fn default_size_and_place() {
        assert_eq!(default_journal_blocks(100 << 20), 1024);
        assert_eq!(default_journal_blocks(3 << 30), 16384);
        assert_eq!(default_journal_blocks(1 << 40), 262_144);
        let j = j();
        assert_eq!(j.len_blocks, 16384);
        // The middle of an 8 GiB device, less half the journal.
        assert_eq!(j.start_sector, ((1 << 20) - 8192) * 8);
        assert_eq!(j.interval, 5 * NS_PER_SEC);
        assert_eq!(TAGS_PER_DESCRIPTOR, 255);
    }

    #[test]
    fn handles_join_one_transaction_until_it_commits() {
        let mut j = j();
        let a = j.dirty_metadata(7, 10);
        let b = j.dirty_metadata(8, 20);
        assert_eq!(a, b);
        assert_eq!(j.take_wake(), Some(10 + 5 * NS_PER_SEC));
        assert_eq!(j.commit_due(5 * NS_PER_SEC), None);
        assert_eq!(j.commit_due(5 * NS_PER_SEC + 10), Some(CommitWhy::Timer));
        j.request_commit(a, 30);
        assert_eq!(j.commit_due(30), Some(CommitWhy::Sync));
        assert!(j.will_send_data_barrier(a));
        let t = j.begin_commit(CommitWhy::Sync).unwrap();
        assert_eq!(t.blocks.len(), 2);
        // A new handle opens the next transaction.
        let c = j.dirty_metadata(7, 40);
        assert_eq!(c, a + 1);
        j.passed_flush_point();
        assert!(!j.will_send_data_barrier(a));
        j.wait_commit(3, a);
        j.wait_commit(4, c);
        let mut ready = Vec::new();
        j.end_commit(&mut ready);
        assert_eq!(ready, vec![3]);
        assert!(j.is_committed(a) && !j.is_committed(c));
        assert!(!j.will_send_data_barrier(a));
    }

    #[test]
    fn nobarrier_never_sends_a_barrier_and_log_wraps() {
        let mut j = Journal::new(100 << 20, 1, false, true);
        assert_eq!(j.interval, NS_PER_SEC);
        let t = j.dirty_metadata(1, 0);
        assert!(!j.will_send_data_barrier(t));
        let mut out = Vec::new();
        j.take_log_blocks(j.len_blocks - 2, &mut out);
        assert_eq!(out.len(), 1);
        out.clear();
        j.take_log_blocks(3, &mut out);
        assert_eq!(
            out,
            vec![
                (j.start_sector + (j.len_blocks - 1) * 8, 1),
                (j.start_sector + 8, 2)
            ]
        );
    }

    #[test]
    fn committed_blocks_wait_for_their_in_place_write_unless_dirtied_again() {
        let mut j = j();
        let a = j.dirty_metadata(7, 10);
        j.dirty_metadata(8, 10);
        j.dirty_metadata(9, 10);
        let t = j.begin_commit(CommitWhy::Timer).unwrap();
        // Block 9 is dirtied again while its transaction commits: the
        // running transaction holds it, so it stays the journal's.
        j.dirty_metadata(9, 20);
        j.end_commit(&mut Vec::new());
        assert!(j.is_committed(a));
        assert!(j.checkpoint_add(&t.blocks, 30), "the inode turned dirty");
        assert_eq!(j.checkpoint_dirtied(), Some(30));
        // Dirtied again before the flusher came: back to the journal.
        j.dirty_metadata(8, 40);
        let mut out = Vec::new();
        j.take_checkpoint(&mut out);
        assert_eq!(out, vec![7]);
        assert_eq!(j.checkpoint_dirtied(), None);
        assert_eq!(j.stats.checkpoint_blocks, 1);
        // The last dirty block taken back cleans the inode too.
        let t = j.begin_commit(CommitWhy::Timer).unwrap();
        j.end_commit(&mut Vec::new());
        assert!(j.checkpoint_add(&t.blocks, 50));
        j.dirty_metadata(8, 60);
        j.dirty_metadata(9, 60);
        assert_eq!(j.checkpoint_dirtied(), None);
        assert!(!j.checkpoint_add(&BTreeSet::new(), 70));
    }

    #[test]
    fn a_transaction_at_a_quarter_of_the_journal_asks_to_commit() {
        let mut j = Journal::new(100 << 20, 0, true, false);
        let max = j.max_transaction_blocks();
        for b in 0..max {
            j.dirty_metadata(b, 0);
        }
        assert_eq!(j.commit_due(0), Some(CommitWhy::Size));
    }
}
