//! Requests and the arena that holds them. Requests are named by index
//! (`RqId`) and recycled through a free list, so the hot path never allocates.

use crate::cgroup::IoPrio;
use crate::sim::time::Ns;

/// Index of a request in the arena.
pub type RqId = u32;
/// "No request" (a null link).
pub const NIL: RqId = u32::MAX;

/// Request operation (`REQ_OP_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Op {
    Read,
    Write,
    /// REQ_OP_FLUSH: empty cache flush.
    Flush,
    Discard,
}

impl Op {
    /// Data direction as the kernel's `rq_data_dir`: 0 = read, 1 = write.
    pub fn dir(self) -> usize {
        match self {
            Op::Read => 0,
            _ => 1,
        }
    }
    pub fn is_write(self) -> bool {
        self != Op::Read
    }
}

/// Request flags (subset of `REQ_*` and `RQF_*` that change behaviour).
///
/// The `REQ_*` flags travel on bios and are copied into the request they
/// start (`REQ_MASK`); the others are the core's own request state. Bit
/// positions are this model's, not the kernel's.
///
/// Who sets the `REQ_*` hints (include/linux/blk_types.h names):
/// - `SYNC`: reads are sync without it; O_DIRECT writes (block/fops.c
///   `dio_bio_write_op`: `REQ_SYNC | REQ_IDLE`), writeback for
///   `WB_SYNC_ALL` (`wbc_to_write_flags`), the jbd2 journal.
/// - `IDLE`: O_DIRECT writes (with `SYNC`), jbd2 journal writes.
/// - `FUA`: O_DIRECT writes on an O_SYNC/O_DSYNC file (`dio_bio_write_op`,
///   fio `sync=1`/`sync=dsync`), journal commit records.
/// - `PREFLUSH`: `blkdev_issue_flush` (fsync/fdatasync of a block device:
///   an empty write with `PREFLUSH`), journal commit records.
/// - `META`: filesystem metadata; jbd2 journal writes carry
///   `JBD2_JOURNAL_REQ_FLAGS` = `REQ_META | REQ_SYNC | REQ_IDLE`, ext4
///   metadata reads `REQ_META | REQ_PRIO`. Set by the journal model (fs/).
/// - `PRIO`: boosted metadata I/O (ext4 metadata reads); set by fs/.
/// - `BACKGROUND`: background and periodic (kupdate) writeback from the
///   flusher (`wbc_to_write_flags`); set by the flusher model (mm/). WBT
///   gives such writes its smallest depth.
pub mod flags {
    /// REQ_SYNC (reads are always sync).
    pub const SYNC: u32 = 1 << 0;
    /// REQ_FUA.
    pub const FUA: u32 = 1 << 1;
    /// REQ_PREFLUSH.
    pub const PREFLUSH: u32 = 1 << 2;
    /// Passthrough command (SCSI/NVMe): never enters the scheduler.
    pub const PASSTHROUGH: u32 = 1 << 3;
    /// REQ_NOMERGE: never merge into or with this request.
    pub const NOMERGE: u32 = 1 << 4;
    /// RQF_STARTED: dispatched by the scheduler; no longer mergeable.
    pub const STARTED: u32 = 1 << 5;
    /// RQF_USE_SCHED: goes through the elevator.
    pub const USE_SCHED: u32 = 1 << 6;
    /// Set by the core while the request sits inside the elevator (inserted, not dispatched).
    pub const IN_ELV: u32 = 1 << 7;
    /// Was inserted into the elevator at least once (finish_request is then due).
    pub const ELV_INSERTED: u32 = 1 << 8;
    /// Holds a driver tag.
    pub const DRIVER_TAG: u32 = 1 << 9;
    /// RQF_SOFTBARRIER (legacy core): a requeued or front-inserted request on
    /// the dispatch list; sorted inserts do not pass it.
    pub const SOFTBARRIER: u32 = 1 << 20;
    /// REQ_META: filesystem metadata.
    pub const META: u32 = 1 << 10;
    /// REQ_PRIO: boosted priority metadata I/O.
    pub const PRIO: u32 = 1 << 11;
    /// REQ_BACKGROUND: background writeback.
    pub const BACKGROUND: u32 = 1 << 12;
    /// REQ_IDLE: the submitter has no more I/O coming soon (O_DIRECT writes).
    pub const IDLE: u32 = 1 << 13;
    /// RQF_IO_STAT: the request is counted in the disk statistics
    /// (`blk_account_io_start` set it; passthrough is not counted).
    pub const IO_STAT: u32 = 1 << 14;
    /// RQF_FLUSH_SEQ: part of a PREFLUSH/FUA sequence of the flush state
    /// machine (blk-flush.c), or the flush command the machine issued.
    pub const FLUSH_SEQ: u32 = 1 << 15;
    /// The flush command borrowed its driver tag from the first waiter
    /// (no elevator, blk-flush.c `blk_kick_flush`): not ours to release.
    pub const TAG_BORROWED: u32 = 1 << 16;
    /// Bio state BIO_QOS_THROTTLED: went through `rq_qos_throttle`.
    pub const BIO_QOS_THROTTLED: u32 = 1 << 24;
    /// Bio state BIO_QOS_MERGED: merged into a request (`rq_qos_merge`).
    pub const BIO_QOS_MERGED: u32 = 1 << 25;

    /// The `REQ_*` flags a request takes over from its first bio.
    pub const REQ_MASK: u32 =
        SYNC | FUA | PREFLUSH | PASSTHROUGH | NOMERGE | META | PRIO | BACKGROUND | IDLE;
}

/// `op_is_sync` (include/linux/blk_types.h): reads are always sync; other
/// operations are sync with REQ_SYNC, REQ_FUA or REQ_PREFLUSH. The one place
/// the model decides sync-ness (tags, schedulers, direct issue, accounting).
#[inline]
pub fn op_is_sync(op: Op, flags: u32) -> bool {
    op == Op::Read || flags & (flags::SYNC | flags::FUA | flags::PREFLUSH) != 0
}

/// A block request (`struct request`), possibly made of several bios.
#[derive(Clone, Debug)]
pub struct Request {
    pub op: Op,
    /// First sector (512-byte units).
    pub sector: u64,
    pub nr_sectors: u32,
    pub flags: u32,
    pub ioprio: IoPrio,
    /// Owning cgroup (index into the cgroup table; 0 = root).
    pub cgroup: u16,
    /// Submitting task (the fio job index): per-process queues key on it.
    pub pid: u32,
    /// Submitting CPU (its software queue).
    pub cpu: u16,
    /// Hardware queue the request belongs to.
    pub hctx: u16,
    /// Its scheduler tag (`rq->internal_tag`), with an elevator attached.
    pub sched_tag: u16,
    /// Earliest submission time of its bios (`start_time_ns`).
    pub start_ns: Ns,
    /// When the request was inserted into the elevator / queue.
    pub insert_ns: Ns,
    /// When it was sent to the driver (`io_start_time_ns`).
    pub dispatch_ns: Ns,
    /// Scheduler's deadline (`fifo_time`), free for the elevator to use.
    pub fifo_time: Ns,
    /// Elevator-private words (`rq->elv.priv`).
    pub elv: [u64; 2],
    /// Intrusive list links, owned by whichever list holds the request.
    pub prev: RqId,
    pub next: RqId,
    /// First and last bio (linked through the bio arena).
    pub bio_head: u32,
    pub bio_tail: u32,
    pub nr_bios: u32,
    /// Steps of its flush sequence already done (`rq->flush.seq`, REQ_FSEQ_*
    /// bits of blk-flush.c); 0 outside the flush machinery.
    pub flush_seq: u8,
    /// Private bits of the rq-qos policies (the kernel's `rq->wbt_flags`):
    /// a policy marks what it accounted for the request in `track` and
    /// clears it in `done`, which may run twice for flush sequences.
    pub qos: u32,
    /// Slot generation, bumped on every free (catches use-after-free in tests).
    pub gen: u32,
    pub in_use: bool,
}

impl Request {
    pub fn empty() -> Request {
        Request {
            op: Op::Read,
            sector: 0,
            nr_sectors: 0,
            flags: 0,
            ioprio: IoPrio::default(),
            cgroup: 0,
            pid: 0,
            cpu: 0,
            hctx: 0,
            start_ns: 0,
            insert_ns: 0,
            dispatch_ns: 0,
            fifo_time: 0,
            elv: [0; 2],
            prev: NIL,
            next: NIL,
            bio_head: u32::MAX,
            bio_tail: u32::MAX,
            nr_bios: 0,
            sched_tag: 0,
            flush_seq: 0,
            qos: 0,
            gen: 0,
            in_use: false,
        }
    }
    /// End sector (exclusive).
    pub fn end_sector(&self) -> u64 {
        self.sector + self.nr_sectors as u64
    }
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
    /// `op_is_sync(rq->cmd_flags)`.
    pub fn is_sync(&self) -> bool {
        op_is_sync(self.op, self.flags)
    }
}

/// Arena of requests with a free list. Slots are reused; memory is bounded by
/// the peak number of live requests (tags), not by run length.
#[derive(Default)]
pub struct RequestArena {
    slots: Vec<Request>,
    free: Vec<RqId>,
    live: u32,
}

impl RequestArena {
    pub fn new() -> RequestArena {
        RequestArena::default()
    }
    pub fn alloc(&mut self) -> RqId {
        self.alloc_init(Request::empty())
    }
    /// Allocate a slot holding `rq` (one write of the whole request).
    #[inline]
    pub fn alloc_init(&mut self, mut rq: Request) -> RqId {
        self.live += 1;
        rq.in_use = true;
        if let Some(id) = self.free.pop() {
            let slot = &mut self.slots[id as usize];
            rq.gen = slot.gen;
            *slot = rq;
            id
        } else {
            self.slots.push(rq);
            (self.slots.len() - 1) as RqId
        }
    }
    pub fn free(&mut self, id: RqId) {
        let slot = &mut self.slots[id as usize];
        assert!(slot.in_use, "request {id} freed twice");
        slot.in_use = false;
        slot.gen = slot.gen.wrapping_add(1);
        self.live -= 1;
        self.free.push(id);
    }
    pub fn live(&self) -> u32 {
        self.live
    }
    /// The live requests, in slot order (for diagnostics).
    pub fn live_ids(&self) -> impl Iterator<Item = RqId> + '_ {
        (0..self.slots.len() as RqId).filter(|&id| self.slots[id as usize].in_use)
    }
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

impl std::ops::Index<RqId> for RequestArena {
    type Output = Request;
    fn index(&self, id: RqId) -> &Request {
        &self.slots[id as usize]
    }
}

impl std::ops::IndexMut<RqId> for RequestArena {
    fn index_mut(&mut self, id: RqId) -> &mut Request {
        &mut self.slots[id as usize]
    }
}

/// An intrusive doubly-linked FIFO of requests, threaded through
/// `Request::prev/next`. O(1) push, pop and removal from the middle.
/// A request may be on at most one `RqList` at a time.
#[derive(Clone, Copy, Debug)]
pub struct RqList {
    pub head: RqId,
    pub tail: RqId,
    pub len: u32,
}

impl Default for RqList {
    fn default() -> Self {
        RqList::new()
    }
}

impl RqList {
    pub const fn new() -> RqList {
        RqList {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn front(&self) -> Option<RqId> {
        (self.head != NIL).then_some(self.head)
    }
    pub fn back(&self) -> Option<RqId> {
        (self.tail != NIL).then_some(self.tail)
    }
    pub fn push_back(&mut self, rqs: &mut RequestArena, id: RqId) {
        rqs[id].prev = self.tail;
        rqs[id].next = NIL;
        if self.tail != NIL {
            rqs[self.tail].next = id;
        } else {
            self.head = id;
        }
        self.tail = id;
        self.len += 1;
    }
    pub fn push_front(&mut self, rqs: &mut RequestArena, id: RqId) {
        rqs[id].next = self.head;
        rqs[id].prev = NIL;
        if self.head != NIL {
            rqs[self.head].prev = id;
        } else {
            self.tail = id;
        }
        self.head = id;
        self.len += 1;
    }
    /// Insert `id` directly after `after` (which must be on this list).
    pub fn insert_after(&mut self, rqs: &mut RequestArena, after: RqId, id: RqId) {
        let nxt = rqs[after].next;
        rqs[id].prev = after;
        rqs[id].next = nxt;
        rqs[after].next = id;
        if nxt != NIL {
            rqs[nxt].prev = id;
        } else {
            self.tail = id;
        }
        self.len += 1;
    }
    pub fn remove(&mut self, rqs: &mut RequestArena, id: RqId) {
        let (p, n) = (rqs[id].prev, rqs[id].next);
        if p != NIL {
            rqs[p].next = n;
        } else {
            debug_assert_eq!(self.head, id);
            self.head = n;
        }
        if n != NIL {
            rqs[n].prev = p;
        } else {
            debug_assert_eq!(self.tail, id);
            self.tail = p;
        }
        rqs[id].prev = NIL;
        rqs[id].next = NIL;
        self.len -= 1;
    }
    pub fn pop_front(&mut self, rqs: &mut RequestArena) -> Option<RqId> {
        let h = self.front()?;
        self.remove(rqs, h);
        Some(h)
    }
    /// Move every request of `other` to the end of this list, in order,
    /// leaving `other` empty (`list_splice_tail_init`, O(1)).
    pub fn append(&mut self, rqs: &mut RequestArena, other: &mut RqList) {
        if other.is_empty() {
            return;
        }
        if self.tail != NIL {
            rqs[self.tail].next = other.head;
            rqs[other.head].prev = self.tail;
        } else {
            self.head = other.head;
        }
        self.tail = other.tail;
        self.len += other.len;
        *other = RqList::new();
    }

    /// Iterate front to back (the list must not change meanwhile).
    pub fn iter<'a>(&self, rqs: &'a RequestArena) -> RqListIter<'a> {
        RqListIter {
            rqs,
            cur: self.head,
        }
    }
}

pub struct RqListIter<'a> {
    rqs: &'a RequestArena,
    cur: RqId,
}

impl Iterator for RqListIter<'_> {
    type Item = RqId;
    fn next(&mut self) -> Option<RqId> {
        if self.cur == NIL {
            return None;
        }
        let id = self.cur;
        self.cur = self.rqs[id].next;
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_push_remove_order() {
        let mut a = RequestArena::new();
        let ids: Vec<RqId> = (0..5).map(|_| a.alloc()).collect();
        let mut l = RqList::new();
        for &i in &ids {
            l.push_back(&mut a, i);
        }
        l.remove(&mut a, ids[2]);
        l.push_front(&mut a, ids[2]);
        let order: Vec<RqId> = l.iter(&a).collect();
        assert_eq!(order, vec![ids[2], ids[0], ids[1], ids[3], ids[4]]);
        assert_eq!(l.len, 5);
        assert_eq!(l.pop_front(&mut a), Some(ids[2]));
        l.insert_after(&mut a, ids[4], ids[2]);
        assert_eq!(l.back(), Some(ids[2]));
    }

    #[test]
    fn append_splices_in_order() {
        let mut a = RequestArena::new();
        let ids: Vec<RqId> = (0..5).map(|_| a.alloc()).collect();
        let (mut l, mut m) = (RqList::new(), RqList::new());
        l.append(&mut a, &mut m);
        assert!(l.is_empty());
        for &i in &ids[..2] {
            l.push_back(&mut a, i);
        }
        for &i in &ids[2..] {
            m.push_back(&mut a, i);
        }
        l.append(&mut a, &mut m);
        assert!(m.is_empty() && m.front().is_none());
        assert_eq!(l.iter(&a).collect::<Vec<_>>(), ids);
        assert_eq!(l.len, 5);
        l.remove(&mut a, ids[2]);
        assert_eq!(l.pop_front(&mut a), Some(ids[0]));
        let mut empty = RqList::new();
        empty.append(&mut a, &mut l);
        assert_eq!(
            empty.iter(&a).collect::<Vec<_>>(),
            vec![ids[1], ids[3], ids[4]]
        );
        assert_eq!(empty.back(), Some(ids[4]));
    }

    #[test]
    fn arena_reuses_slots() {
        let mut a = RequestArena::new();
        let x = a.alloc();
        a.free(x);
        let y = a.alloc();
        assert_eq!(x, y);
        assert_eq!(a.capacity(), 1);
        assert_eq!(a[y].gen, 1);
    }

    #[test]
    #[should_panic(expected = "freed twice")]
    fn double_free_panics() {
        let mut a = RequestArena::new();
        let x = a.alloc();
        a.free(x);
        a.free(x);
    }
}
