//! The legacy single-queue block layer (Linux ≤ 4.20) that the legacy
//! schedulers (noop, deadline, cfq, tpps) run on. It replaces blk-mq's tags,
//! software queues and hardware dispatch lists while a legacy scheduler is
//! attached; the merge code, the flush machinery and rq-qos are shared.
//!
//! Three pieces, each after the 4.x kernel (v4.11–v4.19 read):
//!
//! 1. **Request allocation** from per-cgroup request pools ([`RequestPools`];
//!    `blk-core.c`: `get_request`, `__get_request`, `freed_request`,
//!    `ioc_batching`, `ioc_set_batching`, `blk_queue_congestion_threshold`).
//!    The root cgroup uses the queue's root pool (`q->root_rl`), every other
//!    cgroup its own (`blkg->rl`, `blk_get_rl`). Each pool counts sync and
//!    async requests separately against `nr_requests`; a task that finds a
//!    pool about to fill becomes a *batcher* and may go past the limit for a
//!    while; the hard cap is 3/2 × `nr_requests`; tasks that cannot allocate
//!    sleep on the pool's wait queue of that direction and are woken one per
//!    freed request.
//! 2. **The dispatch path** (`__blk_run_queue` → the driver's `request_fn`
//!    with the shape of `scsi_request_fn`, `scsi_lib.c`): peek at the head of
//!    the core's dispatch list (`q->queue_head`), asking the elevator to
//!    move requests there when it is empty (`__elv_next_request`, `blk.h`);
//!    activate a request the first time the driver sees it
//!    (`blk_peek_request`); check the device has room (`scsi_dev_queue_ready`:
//!    `device_busy < queue_depth`); start it (`blk_start_request`) and issue
//!    it. A refused command is requeued at the head of the list as a soft
//!    barrier (`blk_requeue_request` → `elv_requeue_request`,
//!    `ELEVATOR_INSERT_REQUEUE`).
//! 3. **Insertion** (`__elv_add_request`, `elevator.c`): sorted requests go
//!    to the elevator (`ELEVATOR_INSERT_SORT`, and `_SORT_MERGE` from a plug
//!    flush), PREFLUSH/FUA requests to the flush machinery and from there to
//!    the dispatch list (`ELEVATOR_INSERT_FLUSH`, `blk-flush.c`), passthrough
//!    commands to its tail after draining the elevator
//!    (`ELEVATOR_INSERT_BACK`). A scheduler switch drains the elevator with
//!    forced dispatch (`elv_drain_elevator`, `__blk_drain_queue`).
//!
//! Request flags in legacy mode: `USE_SCHED` is the kernel's `RQF_ELVPRIV`
//! (the elevator's `set_req`/`put_req` run: every request but PREFLUSH/FUA
//! ones), `ELV_INSERTED` is `RQF_SORTED` (it went through `add_req`, so
//! `activate`, `deactivate` and `completed` apply), `IN_ELV` means it is
//! inside the elevator now (counted in `q->nr_sorted`).
//!
//! Not modelled: the bypass mode of a legacy switch (requests allocated
//! while it drains skip the elevator; here the queue is frozen instead, as
//! for blk-mq), the flush "hold" of `__elv_next_request` for devices whose
//! flush is not queueable, `prep_rq_fn` deferrals, per-host `can_queue`
//! limits, and merging across cgroups and I/O priorities (4.x merged bios of
//! different cgroups unless the scheduler vetoed it; the shared merge code
//! keeps v6.x's rule that they do not).

use super::elevator::MayQueue;
use super::request::{flags, op_is_sync, Op, RequestArena, RqId, RqList, NIL};
use super::{BioSubmit, BlockLayer, Env, Plug};
use crate::sim::time::{jiffies, Ns, HZ, NS_PER_MS};
use std::collections::VecDeque;

/// BLKDEV_MAX_RQ (include/linux/blkdev.h, ≤ 4.20): default `nr_requests`
/// of a legacy queue, per pool and per direction.
pub const BLKDEV_MAX_RQ: u32 = 128;
/// BLK_BATCH_REQ (blkdev.h): requests a batcher may allocate past the limit.
pub const BLK_BATCH_REQ: u32 = 32;
/// BLK_BATCH_TIME = HZ/50 (blkdev.h), in jiffies: how long a task stays a
/// batcher after becoming one (20 ms).
pub const BLK_BATCH_TIME: u64 = HZ / 50;
/// SCSI_QUEUE_DELAY (scsi_lib.c): 3 ms before a queue whose device refused
/// a command with nothing in flight is run again (`blk_delay_queue`).
pub const SCSI_QUEUE_DELAY: Ns = 3 * NS_PER_MS;
/// BLK_MAX_REQUEST_COUNT (blkdev.h, ≤ 5.15): a plug is flushed when it holds
/// this many requests of the queue (`blk_queue_bio`).
pub const BLK_MAX_REQUEST_COUNT: usize = 16;

/// `BLK_RW_ASYNC` / `BLK_RW_SYNC` (include/linux/backing-dev-defs.h): the
/// two counters of a pool.
pub const BLK_RW_ASYNC: usize = 0;
pub const BLK_RW_SYNC: usize = 1;

// ---------------------------------------------------------------------------
// The dispatch list
// ---------------------------------------------------------------------------

/// The core's dispatch list (`q->queue_head`): requests the scheduler has
/// released, in the order the driver will take them. The head position
/// (`q->end_sector`, `q->boundary_rq`) is where the last request added at the
/// tail, or the last soft barrier, ends; `blk_peek_request` moves it to the
/// end of the request the driver takes while no boundary request is set.
#[derive(Debug)]
pub struct DispatchList {
    list: RqList,
    /// `q->end_sector`.
    end_sector: u64,
    /// `q->boundary_rq`: NIL, or a request on this list.
    boundary: RqId,
    /// Requests moved here by the scheduler since the core last looked: the
    /// core takes them out of its merge hash and hint (the kernel does that
    /// inside `elv_dispatch_sort`/`elv_dispatch_add_tail`).
    moved: Vec<RqId>,
}

impl Default for DispatchList {
    fn default() -> Self {
        DispatchList::new()
    }
}

impl DispatchList {
    pub fn new() -> DispatchList {
        DispatchList {
            list: RqList::new(),
            end_sector: 0,
            boundary: NIL,
            moved: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
    pub fn len(&self) -> u32 {
        self.list.len
    }
    pub fn front(&self) -> Option<RqId> {
        self.list.front()
    }
    pub fn end_sector(&self) -> u64 {
        self.end_sector
    }
    pub fn boundary(&self) -> RqId {
        self.boundary
    }

    /// `elv_dispatch_add_tail`: append, and the head position moves to its end.
    pub fn add_tail(&mut self, rqs: &mut RequestArena, rq: RqId) {
        self.end_sector = rqs[rq].end_sector();
        self.boundary = rq;
        self.list.push_back(rqs, rq);
        self.moved.push(rq);
    }

    /// `elv_dispatch_sort`: walk back from the tail past requests of the same
    /// operation and direction that are not started or barriers, keeping one
    /// ascending sweep that starts at the head position (requests at or
    /// above `end_sector` first, then those below it, each ascending).
    pub fn sort_in(&mut self, rqs: &mut RequestArena, rq: RqId) {
        let boundary = self.end_sector;
        let (op, dir, pos) = (rqs[rq].op, rqs[rq].op.dir(), rqs[rq].sector);
        let mut entry = self.list.back();
        while let Some(e) = entry {
            let p = &rqs[e];
            if p.op != op || p.op.dir() != dir {
                break;
            }
            if p.has(flags::STARTED) || p.has(flags::SOFTBARRIER) {
                break;
            }
            if pos >= boundary {
                if p.sector < boundary {
                    entry = (p.prev != NIL).then_some(p.prev);
                    continue;
                }
            } else if p.sector >= boundary {
                break;
            }
            if pos >= p.sector {
                break;
            }
            entry = (p.prev != NIL).then_some(p.prev);
        }
        match entry {
            Some(after) => self.list.insert_after(rqs, after, rq),
            None => self.list.push_front(rqs, rq),
        }
        self.moved.push(rq);
    }

    /// The prologue of `__elv_add_request`: a request that is already a soft
    /// barrier (one requeued before) sets the head position, unless it is a
    /// passthrough command.
    fn barrier_prologue(&mut self, rqs: &RequestArena, rq: RqId) {
        let r = &rqs[rq];
        if r.has(flags::SOFTBARRIER) && !r.has(flags::PASSTHROUGH) {
            self.end_sector = r.end_sector();
            self.boundary = rq;
        }
    }

    /// `ELEVATOR_INSERT_REQUEUE` / `_FRONT` (`__elv_add_request`): at the
    /// head, as a soft barrier that later sorted inserts do not pass.
    pub fn add_front_barrier(&mut self, rqs: &mut RequestArena, rq: RqId) {
        self.barrier_prologue(rqs, rq);
        rqs[rq].flags |= flags::SOFTBARRIER;
        self.list.push_front(rqs, rq);
    }

    /// `ELEVATOR_INSERT_BACK` (`__elv_add_request`): at the tail, as a soft
    /// barrier. The caller drains the elevator first.
    pub fn add_back_barrier(&mut self, rqs: &mut RequestArena, rq: RqId) {
        self.barrier_prologue(rqs, rq);
        rqs[rq].flags |= flags::SOFTBARRIER;
        self.list.push_back(rqs, rq);
    }

    /// `list_add(&rq->queuelist, &q->queue_head)` as the flush machinery
    /// does it (`blk_flush_queue_rq`): at the head, position unchanged.
    pub fn push_front(&mut self, rqs: &mut RequestArena, rq: RqId) {
        self.list.push_front(rqs, rq);
    }

    /// `list_add_tail(&rq->queuelist, &q->queue_head)` (`blk_insert_flush`,
    /// `blk_flush_queue_rq`): at the tail, position unchanged.
    pub fn push_back(&mut self, rqs: &mut RequestArena, rq: RqId) {
        self.list.push_back(rqs, rq);
    }

    /// `blk_peek_request` saw `rq` at the head: with no boundary request, or
    /// at it, the head position becomes its end.
    pub fn peeked(&mut self, rqs: &RequestArena, rq: RqId) {
        if self.boundary == NIL || self.boundary == rq {
            self.end_sector = rqs[rq].end_sector();
            self.boundary = NIL;
        }
    }

    /// Take the head (`blk_start_request` → `blk_dequeue_request`).
    pub fn pop_front(&mut self, rqs: &mut RequestArena) -> Option<RqId> {
        self.list.pop_front(rqs)
    }

    /// Requests the scheduler moved here since the last call.
    pub fn take_moved(&mut self, out: &mut Vec<RqId>) {
        out.append(&mut self.moved);
    }

    /// Whether the scheduler moved anything since the core last looked.
    pub fn has_moved(&self) -> bool {
        !self.moved.is_empty()
    }

    /// Front to back.
    pub fn iter<'a>(&self, rqs: &'a RequestArena) -> impl Iterator<Item = RqId> + 'a {
        self.list.iter(rqs)
    }
}

// ---------------------------------------------------------------------------
// Request pools and batching
// ---------------------------------------------------------------------------

/// `blk_queue_congestion_threshold` (blk-core.c): a pool direction becomes
/// congested when it would hold this many requests (`nr - nr/8 + 1`, at most
/// `nr`: 113 of 128).
pub fn congestion_on_threshold(nr: u32) -> u32 {
    (nr - nr / 8 + 1).min(nr)
}

/// ... and stops being congested below this many (`nr - nr/8 - nr/16 - 1`,
/// at least 1: 103 of 128).
pub fn congestion_off_threshold(nr: u32) -> u32 {
    (nr as i64 - (nr / 8) as i64 - (nr / 16) as i64 - 1).max(1) as u32
}

/// One `struct request_list`: a cgroup's request pool on the queue.
#[derive(Clone, Debug, Default)]
pub struct RequestList {
    /// Allocated requests, by `BLK_RW_ASYNC` / `BLK_RW_SYNC`.
    pub count: [u32; 2],
    /// A task was refused (`ELV_MQUEUE_NO`) while the direction held no
    /// request: frees of the other direction wake its waiters too.
    pub starved: [bool; 2],
    /// `blk_rl_full`: the direction reached `nr_requests`; only batchers and
    /// `ELV_MQUEUE_MUST` allocate until a free brings it below.
    pub full: [bool; 2],
    /// `blk_set_congested`: writeback sees the pool as congested.
    pub congested: [bool; 2],
    /// Tasks sleeping for a request of each direction, in the order they
    /// went to sleep (exclusive waits: one woken per wake-up).
    wait: [VecDeque<u32>; 2],
}

impl RequestList {
    /// Tasks waiting for a request of direction `dir`.
    pub fn waiters(&self, dir: usize) -> usize {
        self.wait[dir].len()
    }
}

/// The part of a task's `io_context` the allocator uses.
#[derive(Clone, Copy, Debug)]
struct IoContext {
    pid: u32,
    /// `ioc->nr_batch_requests`.
    nr_batch_requests: u32,
    /// `ioc->last_waited`, jiffies.
    last_waited: u64,
    /// Woken from a pool's wait queue and not yet run: the task becomes a
    /// batcher when it runs (`get_request` after `io_schedule`).
    woken: bool,
}

/// Why an allocation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GetFail {
    /// The elevator said `ELV_MQUEUE_NO`.
    Refused,
    /// The direction is full and the task is not a batcher.
    Full,
    /// The direction holds 3/2 × `nr_requests` (the hard cap).
    Cap,
}

/// Every request pool of a legacy queue and the batching state of the
/// tasks that allocate from them.
///
/// Memory: one pool per cgroup that allocated (at most the cgroups of the
/// run), wait queues of at most the tasks of the run, and one batching
/// record per task that is a batcher or was just woken (records of tasks
/// that are neither are dropped: they mean the same as no record, a fresh
/// `io_context`).
#[derive(Clone, Debug, Default)]
pub struct RequestPools {
    /// By cgroup index; 0 is the root cgroup's `q->root_rl`.
    pools: Vec<RequestList>,
    iocs: Vec<IoContext>,
    /// Records with `woken` set (spares a search on every submission).
    nr_woken: u32,
    nr_requests: u32,
    congestion_on: u32,
    congestion_off: u32,
}

impl RequestPools {
    pub fn new(nr_requests: u32) -> RequestPools {
        let nr = nr_requests.max(1);
        RequestPools {
            pools: Vec::new(),
            iocs: Vec::new(),
            nr_woken: 0,
            nr_requests: nr,
            congestion_on: congestion_on_threshold(nr),
            congestion_off: congestion_off_threshold(nr),
        }
    }

    pub fn nr_requests(&self) -> u32 {
        self.nr_requests
    }

    /// The pool of cgroup `cg` (`blk_get_rl`), if it ever allocated.
    pub fn pool(&self, cg: u16) -> Option<&RequestList> {
        self.pools.get(cg as usize)
    }

    fn pool_mut(&mut self, cg: u16) -> &mut RequestList {
        let i = cg as usize;
        if i >= self.pools.len() {
            self.pools.resize_with(i + 1, RequestList::default);
        }
        &mut self.pools[i]
    }

    /// Requests allocated from `cg`'s pool in direction `dir`.
    pub fn count(&self, cg: u16, dir: usize) -> u32 {
        self.pool(cg).map_or(0, |p| p.count[dir])
    }

    /// Whether writeback would see `cg`'s pool congested in direction `dir`.
    pub fn congested(&self, cg: u16, dir: usize) -> bool {
        self.pool(cg).is_some_and(|p| p.congested[dir])
    }

    /// Tasks sleeping in any pool.
    pub fn sleepers(&self) -> usize {
        self.pools
            .iter()
            .map(|p| p.wait[0].len() + p.wait[1].len())
            .sum()
    }

    fn ioc(&self, pid: u32) -> Option<usize> {
        self.iocs.iter().position(|c| c.pid == pid)
    }

    /// `ioc_batching`: the task is a batcher — it has all its batch
    /// requests left, or some left and became one less than
    /// `BLK_BATCH_TIME` ago.
    pub fn is_batching(&self, pid: u32, now_j: u64) -> bool {
        self.ioc(pid).is_some_and(|i| {
            let c = &self.iocs[i];
            c.nr_batch_requests == BLK_BATCH_REQ
                || (c.nr_batch_requests > 0 && now_j < c.last_waited + BLK_BATCH_TIME)
        })
    }

    /// Batch requests the task has left (0 without a record).
    pub fn batch_left(&self, pid: u32) -> u32 {
        self.ioc(pid).map_or(0, |i| self.iocs[i].nr_batch_requests)
    }

    /// `ioc_set_batching`: make the task a batcher unless it is one.
    #[cold]
    fn set_batching(&mut self, pid: u32, now_j: u64) {
        if self.is_batching(pid, now_j) {
            return;
        }
        let c = match self.ioc(pid) {
            Some(i) => &mut self.iocs[i],
            None => {
                self.prune(now_j);
                self.iocs.push(IoContext {
                    pid,
                    nr_batch_requests: 0,
                    last_waited: 0,
                    woken: false,
                });
                self.iocs.last_mut().expect("just pushed")
            }
        };
        c.nr_batch_requests = BLK_BATCH_REQ;
        c.last_waited = now_j;
    }

    /// Drop records that mean the same as none (not a batcher, not woken).
    #[cold]
    fn prune(&mut self, now_j: u64) {
        if self.iocs.len() < 16 {
            return;
        }
        let keep: Vec<bool> = self
            .iocs
            .iter()
            .map(|c| c.woken || self.is_batching(c.pid, now_j))
            .collect();
        let mut k = keep.iter();
        self.iocs
            .retain(|_| *k.next().expect("one flag per record"));
    }

    /// A task that slept in a pool's wait queue runs again: it becomes a
    /// batcher (`get_request`: `ioc_set_batching` after `io_schedule`).
    /// Called whenever a task submits; cheap when nobody was woken.
    #[inline]
    pub fn resume(&mut self, pid: u32, now_j: u64) {
        if self.nr_woken == 0 {
            return;
        }
        if let Some(i) = self.ioc(pid) {
            if self.iocs[i].woken {
                self.iocs[i].woken = false;
                self.nr_woken -= 1;
                self.set_batching(pid, now_j);
            }
        }
    }

    #[cold]
    fn mark_woken(&mut self, pid: u32) {
        let i = match self.ioc(pid) {
            Some(i) => i,
            None => {
                self.iocs.push(IoContext {
                    pid,
                    nr_batch_requests: 0,
                    last_waited: 0,
                    woken: false,
                });
                self.iocs.len() - 1
            }
        };
        if !self.iocs[i].woken {
            self.iocs[i].woken = true;
            self.nr_woken += 1;
        }
    }

    /// `__get_request`: take a request of direction `sync` from `cg`'s pool
    /// for task `pid`, given the elevator's `may_queue` answer, at jiffy
    /// `now_j`.
    #[inline]
    pub fn get(
        &mut self,
        cg: u16,
        sync: bool,
        may: MayQueue,
        pid: u32,
        now_j: u64,
    ) -> Result<(), GetFail> {
        // The common case: far from full, no batcher around.
        let d = sync as usize;
        if may == MayQueue::May && self.iocs.is_empty() {
            if let Some(rl) = self.pools.get_mut(cg as usize) {
                if rl.count[d] + 1 < self.congestion_on {
                    rl.count[d] += 1;
                    rl.starved[d] = false;
                    return Ok(());
                }
            }
        }
        self.get_slow(cg, sync, may, pid, now_j)
    }

    #[cold]
    #[inline(never)]
    fn get_slow(
        &mut self,
        cg: u16,
        sync: bool,
        may: MayQueue,
        pid: u32,
        now_j: u64,
    ) -> Result<(), GetFail> {
        let d = sync as usize;
        let (nr, on) = (self.nr_requests, self.congestion_on);
        let count = self.pool_mut(cg).count[d];
        if may == MayQueue::No {
            // rq_starved: nothing of this direction will be freed to wake
            // the task, so frees of the other direction must.
            if count == 0 {
                self.pool_mut(cg).starved[d] = true;
            }
            return Err(GetFail::Refused);
        }
        if count + 1 >= on {
            if count + 1 >= nr {
                if !self.pool_mut(cg).full[d] {
                    // The task that fills the pool may finish its batch.
                    self.set_batching(pid, now_j);
                    self.pool_mut(cg).full[d] = true;
                } else if may != MayQueue::Must && !self.is_batching(pid, now_j) {
                    return Err(GetFail::Full);
                }
            }
            self.pool_mut(cg).congested[d] = true;
        }
        // The hard cap holds even for batchers and ELV_MQUEUE_MUST.
        if count as u64 >= 3 * nr as u64 / 2 {
            return Err(GetFail::Cap);
        }
        let rl = self.pool_mut(cg);
        rl.count[d] += 1;
        rl.starved[d] = false;
        if self.is_batching(pid, now_j) {
            let i = self.ioc(pid).expect("a batcher has a record");
            self.iocs[i].nr_batch_requests -= 1;
        }
        Ok(())
    }

    /// The task sleeps for a request (`prepare_to_wait_exclusive` on
    /// `rl->wait[is_sync]`).
    pub fn wait(&mut self, cg: u16, sync: bool, pid: u32) {
        self.pool_mut(cg).wait[sync as usize].push_back(pid);
    }

    /// `freed_request`: a request of direction `sync` went back to `cg`'s
    /// pool; tasks to wake are added to `woken`.
    #[inline]
    pub fn freed(&mut self, cg: u16, sync: bool, woken: &mut Vec<u32>) {
        let d = sync as usize;
        let rl = self.pool_mut(cg);
        debug_assert!(rl.count[d] > 0, "pool {cg} dir {d} freed below zero");
        rl.count[d] = rl.count[d].saturating_sub(1);
        let starved_other = rl.starved[d ^ 1];
        self.freed_dir(cg, d, woken);
        if starved_other {
            self.freed_dir(cg, d ^ 1, woken);
        }
    }

    /// `__freed_request`: congestion off below its threshold; below the
    /// limit the direction is no longer full and one sleeper is woken.
    #[inline]
    fn freed_dir(&mut self, cg: u16, d: usize, woken: &mut Vec<u32>) {
        let (nr, off) = (self.nr_requests, self.congestion_off);
        let rl = self.pool_mut(cg);
        if rl.count[d] < off {
            rl.congested[d] = false;
        }
        // `count + 1 <= nr_requests` in the kernel.
        if rl.count[d] < nr {
            rl.full[d] = false;
            if let Some(pid) = rl.wait[d].pop_front() {
                woken.push(pid);
                self.mark_woken(pid);
            }
        }
    }

    /// `wake_up_all` on every pool's wait queues (the end of
    /// `__blk_drain_queue`).
    #[cold]
    pub fn wake_all(&mut self, woken: &mut Vec<u32>) {
        let mut all = Vec::new();
        for p in self.pools.iter_mut() {
            for d in 0..2 {
                all.extend(p.wait[d].drain(..));
            }
        }
        for pid in all {
            woken.push(pid);
            self.mark_woken(pid);
        }
    }
}

/// The legacy queue's own state next to the dispatch list (which lives in
/// the scheduler context's `CoreSide`).
#[derive(Debug, Default)]
pub struct LegacyQueue {
    pub pools: RequestPools,
    /// `sdev->device_busy`: commands started and not completed.
    pub in_driver: u32,
    /// `q->nr_sorted`: requests inside the elevator.
    pub nr_sorted: u32,
    /// Scratch for the requests a dispatch call moved.
    moved: Vec<RqId>,
}

impl LegacyQueue {
    pub fn new(nr_requests: u32) -> LegacyQueue {
        LegacyQueue {
            pools: RequestPools::new(nr_requests),
            in_driver: 0,
            nr_sorted: 0,
            moved: Vec::new(),
        }
    }
}

// ---------------------------------------------------------------------------
// The legacy core inside the block layer
// ---------------------------------------------------------------------------

impl BlockLayer {
    /// `get_request` up to the sleep: `elv_may_queue`, then `__get_request`
    /// on the bio's cgroup pool. True if a request was allocated.
    pub(super) fn legacy_get_request(&mut self, env: &mut Env, b: &BioSubmit) -> bool {
        let info = super::merge::bio_info(b, 0);
        let may = self.with_elv(env, |e, ctx| e.may_queue(ctx, &info));
        let sync = op_is_sync(b.op, b.flags);
        self.legacy
            .pools
            .get(b.cgroup, sync, may, b.pid, jiffies(env.now))
            .is_ok()
    }

    /// The allocation failed: the task sleeps on its pool's wait queue, and
    /// going to sleep flushes its plug (`io_schedule` → `blk_schedule_flush_plug`),
    /// which may already wake it.
    #[cold]
    #[inline(never)]
    pub(super) fn legacy_sleep(&mut self, env: &mut Env, b: &BioSubmit, plug: Option<&mut Plug>) {
        let sync = op_is_sync(b.op, b.flags);
        self.legacy.pools.wait(b.cgroup, sync, b.pid);
        if let Some(p) = plug {
            self.flush_plug(env, p, true);
        }
    }

    /// `freed_request` for a request going back to its pool.
    pub(super) fn legacy_freed(&mut self, env: &mut Env, rq: RqId) {
        let r = &self.rqs[rq];
        let (cg, sync) = (r.cgroup, r.is_sync());
        self.legacy.pools.freed(cg, sync, env.woken);
    }

    /// A new request that is not plugged (`blk_queue_bio` → `add_acct_request`
    /// → `__elv_add_request`, then `__blk_run_queue`).
    pub(super) fn legacy_queue_request(&mut self, env: &mut Env, rq: RqId) {
        self.legacy_add_request(env, rq, false);
        self.legacy_run_queue(env);
    }

    /// `blk_flush_plug_list`: sort the plug by sector, insert each request
    /// (`ELEVATOR_INSERT_SORT_MERGE`, or `_FLUSH`), then run the queue — from
    /// kblockd when the task flushes it because it goes to sleep.
    pub(super) fn legacy_flush_plug(
        &mut self,
        env: &mut Env,
        plug: &mut Plug,
        from_schedule: bool,
    ) {
        let rqs = &self.rqs;
        // plug_rq_cmp: by queue, then start sector (one queue here).
        plug.rqs.sort_by_key(|&id| rqs[id].sector);
        let list = std::mem::take(&mut plug.rqs);
        for &rq in &list {
            self.legacy_add_request(env, rq, true);
        }
        plug.rqs = list;
        plug.rqs.clear();
        if from_schedule {
            self.schedule_run(env, 0, env.now);
        } else {
            self.legacy_run_queue(env);
        }
    }

    /// `__elv_add_request` with the insertion point the kernel's callers
    /// choose: passthrough at the back (`blk_execute_rq_nowait`), PREFLUSH/FUA
    /// requests the flush machinery passed on straight to the dispatch list
    /// (`blk_insert_flush`), everything else sorted into the elevator
    /// (with an insert merge first when it comes from a plug).
    fn legacy_add_request(&mut self, env: &mut Env, rq: RqId, from_plug: bool) {
        let r = &self.rqs[rq];
        if r.has(flags::PASSTHROUGH) || r.op == Op::Flush || !r.has(flags::USE_SCHED) {
            self.legacy_add_bypass(env, rq);
            return;
        }
        // ELEVATOR_INSERT_SORT_MERGE: elv_attempt_insert_merge first.
        if from_plug && self.legacy_insert_merge(env, rq) {
            return;
        }
        // ELEVATOR_INSERT_SORT: RQF_SORTED, q->nr_sorted++, hash, add_req.
        self.elv_insert(env, rq, false);
        self.legacy.nr_sorted += 1;
    }

    /// Requests that do not enter the elevator.
    #[cold]
    #[inline(never)]
    fn legacy_add_bypass(&mut self, env: &mut Env, rq: RqId) {
        let r = &self.rqs[rq];
        if r.has(flags::PASSTHROUGH) || r.op == Op::Flush {
            // ELEVATOR_INSERT_BACK: drain the elevator, then append.
            self.inv.requests_bypassed += 1;
            self.legacy_drain_elevator(env);
            self.core.dispatch.add_back_barrier(&mut self.rqs, rq);
            return;
        }
        // ELEVATOR_INSERT_FLUSH: a soft barrier. What the machinery passes
        // on is data with nothing to flush before it: alone it goes to the
        // tail (blk_insert_flush); as a sequence's data step to the head
        // (blk_flush_complete_seq → blk_flush_queue_rq).
        self.rqs[rq].flags |= flags::SOFTBARRIER;
        if self.rqs[rq].has(flags::FLUSH_SEQ) {
            self.core.dispatch.push_front(&mut self.rqs, rq);
        } else {
            self.core.dispatch.push_back(&mut self.rqs, rq);
        }
    }

    /// The elevator's `dispatch_fn(q, force)`; the requests it moved leave
    /// the merge hash, the hint and `q->nr_sorted`. Returns how many moved.
    /// A forced dispatch is made even when the elevator holds nothing (CFQ
    /// expires its active slice there); the hook's CPU cost is charged only
    /// when it had requests to consider.
    fn legacy_dispatch(&mut self, env: &mut Env, force: bool) -> u32 {
        if self.legacy.nr_sorted > 0 {
            self.sched_work(self.sched_cost.dispatch_ns);
        }
        let n = self.with_elv(env, |e, ctx| e.dispatch_legacy(ctx, force));
        let mut moved = std::mem::take(&mut self.legacy.moved);
        self.core.dispatch.take_moved(&mut moved);
        debug_assert_eq!(
            n as usize,
            moved.len(),
            "{}: dispatch returned {n} but moved {}",
            self.elv_type.name,
            moved.len()
        );
        for &rq in &moved {
            if self.last_merge == rq {
                self.last_merge = NIL;
            }
            if self.rqs[rq].has(flags::IN_ELV) {
                self.hash_del(rq);
                self.rqs[rq].flags &= !flags::IN_ELV;
                self.legacy.nr_sorted -= 1;
            }
        }
        let n = moved.len() as u32;
        moved.clear();
        self.legacy.moved = moved;
        n
    }

    /// `elv_drain_elevator`: forced dispatch until the elevator moves
    /// nothing more; it must then be empty.
    #[cold]
    #[inline(never)]
    pub(super) fn legacy_drain_elevator(&mut self, env: &mut Env) {
        while self.legacy_dispatch(env, true) > 0 {}
        debug_assert_eq!(
            self.legacy.nr_sorted, 0,
            "{}: forced dispatching is broken",
            self.elv_type.name
        );
    }

    /// `blk_peek_request` → `__elv_next_request`: the head of the dispatch
    /// list, asking the elevator for more while it is empty (not while a
    /// switch drains the queue); the first time the driver sees a request
    /// it is activated and marked started.
    fn legacy_peek(&mut self, env: &mut Env, draining: bool) -> Option<RqId> {
        loop {
            if let Some(rq) = self.core.dispatch.front() {
                if !self.rqs[rq].has(flags::STARTED) {
                    if self.rqs[rq].has(flags::ELV_INSERTED) {
                        self.with_elv(env, |e, ctx| e.activate_request(ctx, rq));
                    }
                    self.rqs[rq].flags |= flags::STARTED;
                }
                self.core.dispatch.peeked(&self.rqs, rq);
                return Some(rq);
            }
            // blk_queue_bypass: a draining queue does not ask the elevator.
            // With nothing inside, dispatch_fn moves nothing and (for noop,
            // deadline, cfq with no busy queue, tpps) changes nothing, so it
            // is not called.
            if draining || self.legacy.nr_sorted == 0 || self.legacy_dispatch(env, false) == 0 {
                return None;
            }
        }
    }

    /// `__blk_run_queue` → the driver's `request_fn` (`scsi_request_fn`):
    /// peek, check the device has room, start and issue, until the list is
    /// empty or the device is full. While a switch drains the queue the
    /// elevator is force-drained first (`__blk_drain_queue`).
    pub(super) fn legacy_run_queue(&mut self, env: &mut Env) {
        let draining = self.frozen && self.pending_switch.is_some();
        if draining {
            self.legacy_drain_elevator(env);
        }
        while let Some(rq) = self.legacy_peek(env, draining) {
            // scsi_dev_queue_ready: device_busy < queue_depth. Not ready:
            // the request stays at the head, started (and activated).
            if self.legacy.in_driver >= self.q.queue_depth {
                break;
            }
            // blk_start_request: off the list.
            let head = self.core.dispatch.pop_front(&mut self.rqs);
            debug_assert_eq!(head, Some(rq));
            self.legacy.in_driver += 1;
            if !self.issue(env, rq) {
                // scsi_queue_insert → blk_requeue_request; a delayed run
                // only when nothing is in flight to restart the queue.
                self.legacy.in_driver -= 1;
                self.legacy_requeue(env, rq);
                if self.legacy.in_driver == 0 {
                    self.schedule_run(env, 0, env.now + SCSI_QUEUE_DELAY);
                }
                break;
            }
        }
    }

    /// `blk_requeue_request` → `elv_requeue_request`: a started request that
    /// went through the elevator is deactivated; it loses its started mark
    /// and goes back to the head of the dispatch list as a soft barrier.
    #[cold]
    #[inline(never)]
    pub(super) fn legacy_requeue(&mut self, env: &mut Env, rq: RqId) {
        let r = &self.rqs[rq];
        // blk_account_rq: started and not passthrough.
        if r.has(flags::STARTED) && !r.has(flags::PASSTHROUGH) && r.has(flags::ELV_INSERTED) {
            self.with_elv(env, |e, ctx| e.deactivate_request(ctx, rq));
        }
        self.rqs[rq].flags &= !flags::STARTED;
        self.core.dispatch.add_front_barrier(&mut self.rqs, rq);
    }

    /// The driver gave back a request the device had accepted (the legacy
    /// `requeue_request` path): off the device, requeued, queue run from
    /// kblockd.
    #[cold]
    #[inline(never)]
    pub(super) fn legacy_driver_requeue(&mut self, env: &mut Env, rq: RqId) {
        self.legacy.in_driver -= 1;
        if !self.qos.is_empty() {
            self.qos_requeue(env, rq);
        }
        self.legacy_requeue(env, rq);
        self.schedule_run(env, 0, env.now);
    }

    /// The flush machinery's queued work on the legacy queue
    /// (`blk_flush_queue_rq`): sequence data steps at the head of the
    /// dispatch list in the order the machinery queued them, flush commands
    /// at its tail; then a run from kblockd.
    #[cold]
    #[inline(never)]
    pub(super) fn legacy_flush_work(&mut self, env: &mut Env) {
        // The machinery pushes data steps to the front of requeue_list; the
        // kernel list_add()s each at once, so the last one ends up first.
        // They came in through ELEVATOR_INSERT_FLUSH: soft barriers.
        while let Some(rq) = self.requeue_list.pop_back() {
            self.rqs[rq].flags |= flags::SOFTBARRIER;
            self.core.dispatch.push_front(&mut self.rqs, rq);
        }
        while let Some(frq) = self.flush_list.pop_front() {
            self.inv.requests_bypassed += 1;
            self.core.dispatch.push_back(&mut self.rqs, frq);
        }
        self.schedule_run(env, 0, env.now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rq(a: &mut RequestArena, op: Op, sector: u64) -> RqId {
        let id = a.alloc();
        a[id].op = op;
        a[id].sector = sector;
        a[id].nr_sectors = 8;
        id
    }

    fn order(d: &DispatchList, a: &RequestArena) -> Vec<u64> {
        d.iter(a).map(|id| a[id].sector).collect()
    }

    #[test]
    fn sort_keeps_one_sweep_from_the_head_position() {
        let mut a = RequestArena::new();
        let mut d = DispatchList::new();
        let first = rq(&mut a, Op::Read, 1000);
        d.add_tail(&mut a, first); // head position: 1008
        for s in [2000, 500, 1500, 100, 3000] {
            let id = rq(&mut a, Op::Read, s);
            d.sort_in(&mut a, id);
        }
        // At or above the head position (1008) ascending, then the wrapped
        // part ascending; the request that set the position starts below it,
        // so unstarted, it sorts into the wrapped part as in the kernel.
        assert_eq!(order(&d, &a), vec![1500, 2000, 3000, 100, 500, 1000]);
    }

    #[test]
    fn sort_does_not_pass_barriers_other_ops_or_started_requests() {
        let mut a = RequestArena::new();
        let mut d = DispatchList::new();
        let w = rq(&mut a, Op::Write, 5000);
        d.add_tail(&mut a, w);
        let r = rq(&mut a, Op::Read, 10);
        d.sort_in(&mut a, r);
        assert_eq!(
            order(&d, &a),
            vec![5000, 10],
            "a read does not pass a write"
        );
        let b = rq(&mut a, Op::Read, 7000);
        d.add_front_barrier(&mut a, b);
        assert_eq!(a[d.front().unwrap()].sector, 7000);
        let r2 = rq(&mut a, Op::Read, 5);
        d.sort_in(&mut a, r2);
        assert_eq!(order(&d, &a), vec![7000, 5000, 5, 10]);
        // A started request at the tail stops the walk too.
        let mut d = DispatchList::new();
        let s = rq(&mut a, Op::Read, 900);
        d.add_tail(&mut a, s);
        a[s].flags |= flags::STARTED;
        let low = rq(&mut a, Op::Read, 100);
        d.sort_in(&mut a, low);
        assert_eq!(order(&d, &a), vec![900, 100]);
    }

    #[test]
    fn head_position_follows_add_tail_barriers_and_peeks() {
        let mut a = RequestArena::new();
        let mut d = DispatchList::new();
        let x = rq(&mut a, Op::Read, 100);
        d.add_tail(&mut a, x);
        assert_eq!((d.end_sector(), d.boundary()), (108, x));
        // A first requeue is not yet a barrier: the position stays.
        let y = rq(&mut a, Op::Read, 5000);
        d.add_front_barrier(&mut a, y);
        assert_eq!(d.end_sector(), 108);
        assert!(a[y].has(flags::SOFTBARRIER));
        // Peeking y: the boundary is x, so nothing changes; peeking x clears it.
        d.peeked(&a, y);
        assert_eq!((d.end_sector(), d.boundary()), (108, x));
        d.pop_front(&mut a);
        d.peeked(&a, x);
        assert_eq!((d.end_sector(), d.boundary()), (108, NIL));
        d.pop_front(&mut a);
        // With no boundary, a peek moves the position to the peeked request.
        d.push_back(&mut a, y);
        d.peeked(&a, y);
        assert_eq!(d.end_sector(), 5008);
        d.pop_front(&mut a);
        // Requeued again (already a barrier): it sets the position.
        d.add_front_barrier(&mut a, y);
        assert_eq!((d.end_sector(), d.boundary()), (5008, y));
        // Passthrough barriers never set it.
        let p = rq(&mut a, Op::Read, 64);
        a[p].flags |= flags::PASSTHROUGH | flags::SOFTBARRIER;
        d.add_back_barrier(&mut a, p);
        assert_eq!(d.end_sector(), 5008);
    }

    #[test]
    fn moved_requests_are_reported_once() {
        let mut a = RequestArena::new();
        let mut d = DispatchList::new();
        let x = rq(&mut a, Op::Read, 1);
        let y = rq(&mut a, Op::Read, 2);
        d.add_tail(&mut a, x);
        d.sort_in(&mut a, y);
        let z = rq(&mut a, Op::Read, 3);
        d.add_front_barrier(&mut a, z);
        let mut v = Vec::new();
        d.take_moved(&mut v);
        assert_eq!(v, vec![x, y], "core inserts are not moves");
        d.take_moved(&mut v);
        assert_eq!(v.len(), 2);
    }

    // ----- pools ------------------------------------------------------------

    const S: bool = true;
    const A: bool = false;

    #[test]
    fn congestion_thresholds_of_the_default_and_small_pools() {
        assert_eq!(congestion_on_threshold(128), 113);
        assert_eq!(congestion_off_threshold(128), 103);
        assert_eq!(congestion_on_threshold(4), 4);
        assert_eq!(congestion_off_threshold(4), 3);
        assert_eq!(congestion_off_threshold(16), 12);
        assert_eq!(congestion_on_threshold(1), 1);
        assert_eq!(congestion_off_threshold(1), 1);
    }

    /// Allocate `n` for `pid` at jiffy `j`; how many succeeded.
    fn take(p: &mut RequestPools, cg: u16, sync: bool, pid: u32, j: u64, n: u32) -> u32 {
        (0..n)
            .take_while(|_| p.get(cg, sync, MayQueue::May, pid, j).is_ok())
            .count() as u32
    }

    #[test]
    fn the_task_that_fills_a_pool_becomes_a_batcher_for_32_more() {
        let mut p = RequestPools::new(128);
        // Task 1 takes 126; the 127th (count+1 = 127 < 128) is normal, the
        // 128th (count+1 = 128) fills the pool and makes it a batcher.
        assert_eq!(take(&mut p, 0, S, 1, 0, 127), 127);
        assert!(!p.pool(0).unwrap().full[BLK_RW_SYNC]);
        assert!(p.get(0, S, MayQueue::May, 1, 0).is_ok());
        assert!(p.pool(0).unwrap().full[BLK_RW_SYNC]);
        assert!(p.is_batching(1, 0));
        // Its first batch request was that 128th one: 31 left.
        assert_eq!(p.batch_left(1), 31);
        // Another task is refused; the batcher goes on.
        assert_eq!(p.get(0, S, MayQueue::May, 2, 0), Err(GetFail::Full));
        assert_eq!(take(&mut p, 0, S, 1, 0, 100), 31);
        assert_eq!(p.count(0, BLK_RW_SYNC), 159);
        assert_eq!(p.get(0, S, MayQueue::May, 1, 0), Err(GetFail::Full));
        // Async requests are counted apart.
        assert_eq!(take(&mut p, 0, A, 2, 0, 10), 10);
    }

    #[test]
    fn batching_ends_after_20_ms() {
        let mut p = RequestPools::new(16);
        assert_eq!(take(&mut p, 0, S, 1, 100, 16), 16);
        assert!(p.is_batching(1, 100));
        assert_eq!(take(&mut p, 0, S, 1, 100, 2), 2);
        // BLK_BATCH_TIME = 5 jiffies at HZ=250.
        assert!(p.is_batching(1, 104));
        assert!(!p.is_batching(1, 105));
        assert_eq!(p.get(0, S, MayQueue::May, 1, 105), Err(GetFail::Full));
    }

    #[test]
    fn the_hard_cap_is_three_halves_even_for_must() {
        let mut p = RequestPools::new(16);
        assert_eq!(
            take(&mut p, 0, S, 1, 0, 100),
            24,
            "16 + batch up to 3/2 × 16"
        );
        assert_eq!(p.get(0, S, MayQueue::May, 1, 0), Err(GetFail::Cap));
        assert_eq!(p.get(0, S, MayQueue::Must, 2, 0), Err(GetFail::Cap));
        // Below the cap, MUST goes past a full pool without batching.
        let mut p = RequestPools::new(16);
        assert_eq!(take(&mut p, 0, S, 1, 0, 16), 16);
        assert_eq!(p.get(0, S, MayQueue::May, 2, 0), Err(GetFail::Full));
        assert!(p.get(0, S, MayQueue::Must, 2, 0).is_ok());
        assert!(!p.is_batching(2, 0));
    }

    #[test]
    fn congestion_turns_on_and_off_at_the_thresholds() {
        let mut p = RequestPools::new(128);
        let mut woken = Vec::new();
        assert_eq!(take(&mut p, 0, A, 1, 0, 111), 111);
        assert!(!p.congested(0, BLK_RW_ASYNC));
        // count+1 >= 113 when the 113th is taken.
        assert_eq!(take(&mut p, 0, A, 1, 0, 2), 2);
        assert!(p.congested(0, BLK_RW_ASYNC));
        assert!(!p.congested(0, BLK_RW_SYNC));
        for _ in 0..9 {
            p.freed(0, A, &mut woken);
        }
        assert_eq!(p.count(0, BLK_RW_ASYNC), 104);
        assert!(p.congested(0, BLK_RW_ASYNC), "still at 104");
        p.freed(0, A, &mut woken);
        p.freed(0, A, &mut woken);
        assert_eq!(p.count(0, BLK_RW_ASYNC), 102);
        assert!(!p.congested(0, BLK_RW_ASYNC));
    }

    #[test]
    fn each_cgroup_has_its_own_pool() {
        let mut p = RequestPools::new(8);
        assert_eq!(take(&mut p, 3, S, 1, 0, 100), 12);
        // Another cgroup, and the root, are untouched.
        assert_eq!(take(&mut p, 5, S, 2, 0, 8), 8);
        assert_eq!(take(&mut p, 0, S, 3, 0, 8), 8);
        assert_eq!(p.count(3, BLK_RW_SYNC), 12);
        assert!(p.pool(3).unwrap().full[BLK_RW_SYNC]);
        assert!(p.pool(5).unwrap().full[BLK_RW_SYNC]);
    }

    #[test]
    fn frees_wake_one_sleeper_each_below_the_limit() {
        let mut p = RequestPools::new(8);
        let mut woken = Vec::new();
        // Task 1 fills the pool and uses its batch up to the cap (12).
        assert_eq!(take(&mut p, 0, S, 1, 0, 100), 12);
        for pid in [2, 3, 4] {
            assert!(p.get(0, S, MayQueue::May, pid, 0).is_err());
            p.wait(0, S, pid);
        }
        // Frees above the limit wake nobody (count+1 > nr).
        for _ in 0..4 {
            p.freed(0, S, &mut woken);
        }
        assert!(woken.is_empty());
        assert!(p.pool(0).unwrap().full[BLK_RW_SYNC]);
        // 8 → 7: below the limit, one sleeper, in order.
        p.freed(0, S, &mut woken);
        assert_eq!(woken, vec![2]);
        assert!(!p.pool(0).unwrap().full[BLK_RW_SYNC]);
        p.freed(0, S, &mut woken);
        assert_eq!(woken, vec![2, 3]);
        // A free of the other direction wakes nobody here.
        assert!(p.get(0, A, MayQueue::May, 9, 0).is_ok());
        p.freed(0, A, &mut woken);
        assert_eq!(woken, vec![2, 3]);
        assert_eq!(p.pool(0).unwrap().waiters(BLK_RW_SYNC), 1);
    }

    #[test]
    fn a_woken_task_becomes_a_batcher_when_it_runs() {
        let mut p = RequestPools::new(8);
        let mut woken = Vec::new();
        assert_eq!(take(&mut p, 0, S, 1, 0, 100), 12);
        assert!(p.get(0, S, MayQueue::May, 2, 0).is_err());
        p.wait(0, S, 2);
        for _ in 0..5 {
            p.freed(0, S, &mut woken);
        }
        assert_eq!(woken, vec![2]);
        assert_eq!(p.count(0, BLK_RW_SYNC), 7);
        // It runs 10 jiffies later: a batcher from then on.
        p.resume(2, 10);
        assert!(p.is_batching(2, 10));
        assert_eq!(take(&mut p, 0, S, 2, 10, 100), 5, "up to the cap");
        assert_eq!(p.batch_left(2), 27);
        // Task 1's batch time ran out; it waits like anyone.
        assert!(!p.is_batching(1, 10));
        assert_eq!(p.get(0, S, MayQueue::May, 1, 10), Err(GetFail::Full));
    }

    #[test]
    fn refused_tasks_on_an_empty_direction_are_woken_by_the_other() {
        let mut p = RequestPools::new(8);
        let mut woken = Vec::new();
        assert!(p.get(0, A, MayQueue::May, 1, 0).is_ok());
        // The elevator refuses a sync allocation while no sync request exists.
        assert_eq!(p.get(0, S, MayQueue::No, 2, 0), Err(GetFail::Refused));
        assert!(p.pool(0).unwrap().starved[BLK_RW_SYNC]);
        p.wait(0, S, 2);
        // Only an async free can wake it.
        p.freed(0, A, &mut woken);
        assert_eq!(woken, vec![2]);
        // A successful sync allocation clears the mark.
        assert!(p.get(0, S, MayQueue::May, 2, 0).is_ok());
        assert!(!p.pool(0).unwrap().starved[BLK_RW_SYNC]);
        // Refused with requests of its direction around: not starved.
        assert_eq!(p.get(0, S, MayQueue::No, 3, 0), Err(GetFail::Refused));
        assert!(!p.pool(0).unwrap().starved[BLK_RW_SYNC]);
    }

    #[test]
    fn wake_all_empties_every_wait_queue() {
        let mut p = RequestPools::new(4);
        let mut woken = Vec::new();
        p.wait(0, S, 1);
        p.wait(2, A, 2);
        p.wait(2, S, 3);
        assert_eq!(p.sleepers(), 3);
        p.wake_all(&mut woken);
        woken.sort();
        assert_eq!(woken, vec![1, 2, 3]);
        assert_eq!(p.sleepers(), 0);
    }

    #[test]
    fn batching_records_stay_bounded() {
        let mut p = RequestPools::new(4);
        // Many tasks each become a batcher once and let it lapse.
        for pid in 0..10_000u32 {
            let j = pid as u64 * 10;
            let mut woken = Vec::new();
            assert_eq!(take(&mut p, 0, A, pid, j, 4), 4);
            for _ in 0..4 {
                p.freed(0, A, &mut woken);
            }
        }
        assert!(p.iocs.len() <= 17, "{} records", p.iocs.len());
    }
}

#[cfg(test)]
mod core_tests {
    use super::*;
    use crate::block::knobs::QueueKnobs;
    use crate::block::testkit::{bio, fsync_bio, Harness, TestDevice};
    use crate::block::{BlockWait, SubmitResult};
    use crate::sim::time::NS_PER_US;

    fn legacy(sched: &str, depth: u32, nr_requests: Option<u32>) -> Harness {
        let knobs = QueueKnobs {
            nr_requests,
            ..Default::default()
        };
        Harness::with_knobs(TestDevice::new(false, false, depth), sched, 1, knobs)
    }

    /// A block-layer call at the harness's time, on CPU 0.
    fn call<R>(h: &mut Harness, f: impl FnOnce(&mut BlockLayer, &mut Env) -> R) -> R {
        let mut e = Env {
            now: h.now,
            events: &mut h.events,
            done: &mut h.done,
            woken: &mut h.woken,
        };
        h.bl.cpu_begin(0, h.now);
        let r = f(&mut h.bl, &mut e);
        h.bl.cpu_end();
        r
    }

    fn check_clean(h: &Harness) {
        let inv = &h.bl.inv;
        assert_eq!(inv.bios_submitted, inv.bios_completed);
        assert_eq!(
            inv.requests_allocated,
            inv.requests_completed + inv.requests_merged_away
        );
        assert_eq!(inv.flushes_issued, inv.flushes_completed);
        assert_eq!(h.bl.live_requests(), 0);
        assert_eq!(h.bl.legacy.in_driver, 0);
        assert_eq!(h.bl.legacy.nr_sorted, 0);
        assert!(h.bl.core.dispatch.is_empty());
        for cg in 0..4 {
            assert_eq!(h.bl.legacy.pools.count(cg, 0), 0);
            assert_eq!(h.bl.legacy.pools.count(cg, 1), 0);
        }
    }

    fn write(sector: u64, pid: u32, owner: u64) -> BioSubmit {
        bio(Op::Write, sector, 8, flags::SYNC, pid, owner)
    }

    fn sectors(h: &Harness) -> Vec<(Op, u64)> {
        h.cmds().iter().map(|(_, c)| (c.op, c.sector)).collect()
    }

    #[test]
    fn a_full_device_leaves_one_started_request_at_the_head() {
        let mut h = legacy("deadline", 1, None);
        h.submit(write(0, 1, 1));
        h.submit(write(1000, 1, 2));
        h.submit(write(2000, 1, 3));
        // W0 at the device; W1000 peeked (started, off deadline, no longer
        // mergeable); W2000 still inside deadline.
        let head = h.bl.core.dispatch.front().expect("a request waits");
        assert_eq!(h.bl.rqs[head].sector, 1000);
        assert!(h.bl.rqs[head].has(flags::STARTED));
        assert!(!h.bl.rqs[head].has(flags::IN_ELV));
        assert_eq!((h.bl.legacy.in_driver, h.bl.legacy.nr_sorted), (1, 1));
        // A bio after W2000 merges into it; one after W1000 cannot.
        h.submit(write(2008, 1, 4));
        h.submit(write(1008, 1, 5));
        assert_eq!(h.bl.inv.requests_allocated, 4);
        h.run();
        // deadline's batch goes on from W1000 to the successor it saw then.
        assert_eq!(
            sectors(&h),
            vec![
                (Op::Write, 0),
                (Op::Write, 1000),
                (Op::Write, 2000),
                (Op::Write, 1008)
            ]
        );
        assert_eq!(h.cmds()[2].1.nr_sectors, 16);
        check_clean(&h);
    }

    #[test]
    fn a_refused_command_is_requeued_at_the_head_as_a_soft_barrier() {
        let mut h = legacy("noop", 4, None);
        *h.busy.borrow_mut() = true;
        h.submit(write(500, 1, 1));
        let rq = h.bl.core.dispatch.front().expect("requeued");
        assert!(h.bl.rqs[rq].has(flags::SOFTBARRIER));
        assert!(!h.bl.rqs[rq].has(flags::STARTED));
        assert_eq!(h.bl.legacy.in_driver, 0);
        // Nothing in flight: the queue is run again after SCSI_QUEUE_DELAY.
        h.submit(write(100, 1, 2));
        *h.busy.borrow_mut() = false;
        h.run();
        let cmds = h.cmds();
        assert_eq!(cmds[0].0, SCSI_QUEUE_DELAY);
        assert_eq!(sectors(&h), vec![(Op::Write, 500), (Op::Write, 100)]);
        check_clean(&h);
    }

    #[test]
    fn tasks_sleep_in_their_own_pool_and_wake_one_per_free() {
        let mut h = legacy("noop", 32, Some(4));
        // Task 1 fills the root pool: 4, then its batch to the cap of 6.
        for i in 0..6 {
            assert_eq!(h.submit(write(i * 100, 1, i)), SubmitResult::Taken);
        }
        assert_eq!(
            h.submit(write(5000, 1, 99)),
            SubmitResult::Sleep(BlockWait::Tag)
        );
        assert_eq!(
            h.submit(write(6000, 2, 98)),
            SubmitResult::Sleep(BlockWait::Tag)
        );
        // A task of another cgroup has its own pool.
        let mut other = write(7000, 3, 97);
        other.cgroup = 2;
        assert_eq!(h.submit(other), SubmitResult::Taken);
        assert_eq!(h.bl.legacy.pools.count(2, BLK_RW_SYNC), 1);
        // Completions: 6 → 5 → 4 wake nobody, 4 → 3 wakes task 1, then 2.
        h.run_until(100 * NS_PER_US);
        assert_eq!(h.woken, vec![1, 2]);
        h.run_until(NS_PER_MS);
        h.woken.clear();
        // Task 1 runs again: a batcher, it may go past the limit.
        for i in 0..6 {
            assert_eq!(
                h.submit(write(10_000 + i * 100, 1, 200 + i)),
                SubmitResult::Taken
            );
        }
        assert_eq!(h.bl.legacy.pools.count(0, BLK_RW_SYNC), 6);
        h.run();
        check_clean(&h);
    }

    #[test]
    fn a_passthrough_command_drains_the_elevator_first() {
        let mut h = legacy("deadline", 1, None);
        h.submit(write(0, 1, 1));
        for (i, s) in [3000u64, 1000, 2000].iter().enumerate() {
            h.submit(write(*s, 1, 10 + i as u64));
        }
        let mut pt = bio(Op::Read, 64, 8, flags::PASSTHROUGH, 2, 50);
        pt.cgroup = 0;
        h.submit(pt);
        assert_eq!(h.bl.legacy.nr_sorted, 0, "ELEVATOR_INSERT_BACK drained it");
        let tail = h.bl.core.dispatch.iter(&h.bl.rqs).last().unwrap();
        assert!(h.bl.rqs[tail].has(flags::PASSTHROUGH | flags::SOFTBARRIER));
        h.run();
        // W3000 was peeked before; the rest left deadline in its order.
        assert_eq!(
            sectors(&h),
            vec![
                (Op::Write, 0),
                (Op::Write, 3000),
                (Op::Write, 1000),
                (Op::Write, 2000),
                (Op::Read, 64)
            ]
        );
        check_clean(&h);
    }

    #[test]
    fn flush_requests_bypass_the_elevator() {
        // Write-back cache with FUA: a FUA write is data only (the tail of the
        // dispatch list); an fsync is an empty PREFLUSH (a flush command).
        let mut h = Harness::new(TestDevice::new(true, true, 1), "deadline", 1);
        h.submit(write(0, 1, 1));
        h.submit(write(900, 1, 2));
        h.submit(bio(Op::Write, 64, 8, flags::FUA | flags::SYNC, 2, 3));
        h.submit(fsync_bio(3, 4));
        h.submit(write(100, 1, 5));
        assert_eq!(h.bl.legacy.nr_sorted, 1, "only W100 is inside deadline");
        h.run();
        let seq: Vec<(Op, u64, bool)> = h
            .cmds()
            .iter()
            .map(|(_, c)| (c.op, c.sector, c.fua))
            .collect();
        assert_eq!(
            seq,
            vec![
                (Op::Write, 0, false),
                (Op::Write, 900, false),
                (Op::Write, 64, true),
                (Op::Flush, 0, false),
                (Op::Write, 100, false)
            ]
        );
        check_clean(&h);
    }

    #[test]
    fn a_flush_sequence_data_step_goes_to_the_head() {
        // No FUA: PREFLUSH + FUA is flush, data at the head, post-flush.
        let mut h = Harness::new(TestDevice::new(true, false, 1), "noop", 1);
        h.submit(write(0, 1, 1));
        h.submit(write(500, 1, 2));
        h.submit(write(600, 1, 3));
        h.submit(bio(Op::Write, 64, 8, flags::FUA | flags::PREFLUSH, 2, 9));
        h.run();
        assert_eq!(
            sectors(&h),
            vec![
                (Op::Write, 0),
                (Op::Write, 500),
                (Op::Flush, 0),
                (Op::Write, 64),
                (Op::Write, 600),
                (Op::Flush, 0)
            ]
        );
        check_clean(&h);
    }

    #[test]
    fn a_plug_flush_sorts_and_insert_merges() {
        let mut h = legacy("noop", 1, None);
        h.submit(write(5000, 9, 1)); // at the device
        h.submit(write(6000, 9, 2)); // peeked: the list is not empty
        let mut plug = Plug::default();
        for (i, s) in [308u64, 100, 200].iter().enumerate() {
            let b = write(*s, 1, 10 + i as u64);
            let r = call(&mut h, |bl, e| bl.submit_bio(e, &b, Some(&mut plug)));
            assert_eq!(r, SubmitResult::Taken);
        }
        assert_eq!(plug.len(), 3);
        // Another task queues W300 directly: W308 will insert-merge into it.
        h.submit(write(300, 2, 20));
        call(&mut h, |bl, e| bl.finish_plug(e, &mut plug));
        assert!(plug.is_empty());
        assert_eq!(h.bl.inv.requests_merged_away, 1);
        h.run();
        let cmds = h.cmds();
        let got: Vec<(u64, u32)> = cmds.iter().map(|(_, c)| (c.sector, c.nr_sectors)).collect();
        // noop FIFO: W300 (grown), then the plug's W100, W200 in sector order.
        assert_eq!(
            got,
            vec![(5000, 8), (6000, 8), (300, 16), (100, 8), (200, 8)]
        );
        check_clean(&h);
    }

    #[test]
    fn a_plug_holds_sixteen_requests() {
        let mut h = legacy("noop", 32, None);
        let mut plug = Plug::default();
        for i in 0..17u64 {
            let b = write(i * 100, 1, i);
            call(&mut h, |bl, e| bl.submit_bio(e, &b, Some(&mut plug)));
        }
        assert_eq!(plug.len(), 1, "flushed at 16");
        call(&mut h, |bl, e| bl.finish_plug(e, &mut plug));
        h.run();
        check_clean(&h);
    }

    #[test]
    fn a_switch_away_force_drains_and_wakes_pool_sleepers() {
        let mut h = legacy("deadline", 1, Some(4));
        for i in 0..6 {
            h.submit(write(i * 1000, 1, i));
        }
        assert_eq!(
            h.submit(write(9000, 2, 50)),
            SubmitResult::Sleep(BlockWait::Tag)
        );
        assert!(h.bl.legacy.nr_sorted > 0);
        let none = crate::sched::find("none").unwrap();
        call(&mut h, |bl, e| bl.request_switch(e, none));
        assert!(h.bl.is_frozen());
        assert_eq!(h.bl.legacy.nr_sorted, 0, "forced dispatch emptied deadline");
        h.run();
        assert!(!h.bl.is_frozen());
        assert_eq!(h.bl.scheduler_name(), "none");
        assert!(h.woken.contains(&2), "pool sleepers are woken");
        let inv = &h.bl.inv;
        assert_eq!(inv.requests_allocated, inv.requests_completed);
        assert_eq!(h.bl.live_requests(), 0);
    }
}

/// The legacy hooks as the core calls them, seen through a probe scheduler
/// (noop inside, every hook logged).
#[cfg(test)]
mod hook_tests {
    use super::*;
    use crate::block::cpu::SchedCost;
    use crate::block::elevator::{
        BioInfo, Elevator, ElevatorType, Features, Imp, MergeKind, SchedCtx, Tunable,
    };
    use crate::block::knobs::QueueKnobs;
    use crate::block::testkit::{bio, free_cpu, Harness, TestDevice};
    use crate::block::{BlockWait, QueueSetup, SubmitResult};
    use crate::cgroup::CgroupTree;
    use crate::sched::noop::Noop;
    use crate::sim::event::EventQueue;
    use crate::sim::time::NS_PER_US;
    use std::cell::RefCell;

    thread_local! {
        /// (hook, request or pid) in call order.
        static LOG: RefCell<Vec<(char, u32)>> = const { RefCell::new(Vec::new()) };
    }

    fn log(c: char, x: u32) {
        LOG.with(|l| l.borrow_mut().push((c, x)));
    }

    fn take_log() -> Vec<(char, u32)> {
        LOG.with(|l| std::mem::take(&mut *l.borrow_mut()))
    }

    /// noop, logging every hook; `may_queue` says MUST to pid 7 and NO to
    /// pid 8.
    struct Probe(Noop);

    impl Elevator for Probe {
        fn name(&self) -> &'static str {
            "probe"
        }
        fn tunables(&self) -> Vec<Tunable> {
            Vec::new()
        }
        fn set_tunable(&mut self, _: &str, _: &str) -> Result<(), String> {
            Err("none".into())
        }
        fn may_queue(&mut self, _ctx: &mut SchedCtx, bio: &BioInfo) -> MayQueue {
            log('m', bio.pid);
            match bio.pid {
                7 => MayQueue::Must,
                8 => MayQueue::No,
                _ => MayQueue::May,
            }
        }
        fn prepare_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
            log('p', rq);
            self.0.prepare_request(ctx, rq);
        }
        fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
            log('f', rq);
            self.0.finish_request(ctx, rq);
        }
        fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool) {
            log('i', rq);
            self.0.insert(ctx, rq, at_head);
        }
        fn has_work(&self, hctx: u16) -> bool {
            self.0.has_work(hctx)
        }
        fn dispatch_legacy(&mut self, ctx: &mut SchedCtx, force: bool) -> u32 {
            self.0.dispatch_legacy(ctx, force)
        }
        fn activate_request(&mut self, _ctx: &mut SchedCtx, rq: RqId) {
            log('a', rq);
        }
        fn deactivate_request(&mut self, _ctx: &mut SchedCtx, rq: RqId) {
            log('d', rq);
        }
        fn completed_request(&mut self, _ctx: &mut SchedCtx, rq: RqId) {
            log('c', rq);
        }
        fn requests_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, next: RqId) {
            self.0.requests_merged(ctx, rq, next);
        }
        fn next_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
            self.0.next_request(ctx, rq)
        }
        fn former_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
            self.0.former_request(ctx, rq)
        }
        fn request_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, kind: MergeKind) {
            self.0.request_merged(ctx, rq, kind);
        }
    }

    fn new_probe() -> Box<dyn Elevator> {
        Box::new(Probe(Noop::new()))
    }

    static PROBE: ElevatorType = ElevatorType {
        name: "probe",
        alias: None,
        summary: "test probe",
        mainline: false,
        lab: false,
        imp: Imp::Legacy(new_probe),
        features: Features {
            single_queue: true,
            core_merging: true,
            insert_merging: false,
            completed_hook: true,
            lockless_finish: false,
        },
        cost: SchedCost {
            insert_ns: 0,
            dispatch_ns: 0,
            complete_ns: 0,
            merge_ns: 0,
            locked: false,
        },
        cost_since: &[],
    };

    fn probe(dev: TestDevice, nr_requests: Option<u32>) -> Harness {
        take_log();
        let (log, busy, hold) = (dev.log.clone(), dev.busy.clone(), dev.hold.clone());
        let knobs = QueueKnobs {
            nr_requests,
            ..Default::default()
        };
        let bl = BlockLayer::new(
            Box::new(dev),
            &PROBE,
            QueueSetup {
                knobs,
                iosched: Vec::new(),
                cgroups: CgroupTree::default(),
                costs: free_cpu(),
                machine: crate::machine::Machine {
                    cpus: 1,
                    ..crate::machine::Machine::default()
                },
            },
        )
        .expect("block layer");
        Harness {
            bl,
            events: EventQueue::new(),
            now: 0,
            done: Vec::new(),
            woken: Vec::new(),
            log,
            busy,
            hold,
        }
    }

    fn of(log: &[(char, u32)], c: char) -> Vec<u32> {
        log.iter().filter(|e| e.0 == c).map(|e| e.1).collect()
    }

    #[test]
    fn hooks_follow_the_legacy_request_life() {
        // Write-back cache with FUA, one device slot.
        let mut h = probe(TestDevice::new(true, true, 1), None);
        h.submit(bio(Op::Write, 0, 8, flags::SYNC, 1, 1));
        h.submit(bio(Op::Write, 100, 8, flags::SYNC, 1, 2));
        let (w0, w1) = (0, 1);
        // W0 went to the device, W100 waits at the head: both activated
        // when the driver first saw them, W100 while the device was full.
        let l = take_log();
        assert_eq!(
            l,
            vec![
                ('m', 1),
                ('p', w0),
                ('i', w0),
                ('a', w0),
                ('m', 1),
                ('p', w1),
                ('i', w1),
                ('a', w1)
            ]
        );
        // A FUA write has no elevator data; a passthrough command has
        // (set_req/put_req) but never enters the elevator.
        h.submit(bio(Op::Write, 64, 8, flags::FUA | flags::SYNC, 2, 3));
        h.submit(bio(Op::Read, 64, 8, flags::PASSTHROUGH, 3, 4));
        assert_eq!(take_log(), vec![('m', 2), ('m', 3), ('p', 3)]);
        h.run();
        let l = take_log();
        // Activated when peeked, completed and freed.
        assert_eq!(of(&l, 'a'), Vec::<u32>::new(), "nothing else was sorted");
        assert_eq!(of(&l, 'c'), vec![w0, w1]);
        assert_eq!(of(&l, 'f'), vec![w0, w1, 3]);
        assert_eq!(h.bl.live_requests(), 0);
    }

    #[test]
    fn a_requeued_request_is_deactivated_then_activated_again() {
        let mut h = probe(TestDevice::new(false, false, 4), None);
        *h.busy.borrow_mut() = true;
        h.submit(bio(Op::Read, 0, 8, flags::SYNC, 1, 1));
        *h.busy.borrow_mut() = false;
        h.run();
        let l: Vec<char> = take_log().iter().map(|e| e.0).collect();
        assert_eq!(l, vec!['m', 'p', 'i', 'a', 'd', 'a', 'c', 'f']);
    }

    #[test]
    fn may_queue_must_passes_a_full_pool_and_no_starves_a_direction() {
        let mut h = probe(TestDevice::new(false, false, 32), Some(4));
        let w = |pid, owner, fl| bio(Op::Write, owner * 100, 8, fl, pid, owner);
        // Task 1 takes the 4 sync requests of the root pool (the last one
        // makes it a batcher, but it stops there).
        for i in 0..4 {
            assert_eq!(h.submit(w(1, i, flags::SYNC)), SubmitResult::Taken);
        }
        assert!(h.bl.legacy.pools.pool(0).unwrap().full[BLK_RW_SYNC]);
        // Task 2 may not; task 7 must.
        let sleep = SubmitResult::Sleep(BlockWait::Tag);
        assert_eq!(h.submit(w(2, 10, flags::SYNC)), sleep);
        assert_eq!(h.submit(w(7, 11, flags::SYNC)), SubmitResult::Taken);
        assert_eq!(h.bl.legacy.pools.count(0, BLK_RW_SYNC), 5);
        // Task 8 is refused an async request while none exists: starved.
        assert_eq!(h.submit(w(8, 12, 0)), sleep);
        assert!(h.bl.legacy.pools.pool(0).unwrap().starved[BLK_RW_ASYNC]);
        // The first sync free wakes the async sleeper (starved), the next
        // one, below the limit, the sync sleeper.
        h.run_until(100 * NS_PER_US);
        assert_eq!(h.woken, vec![8, 2]);
        h.run();
        assert_eq!(h.bl.live_requests(), 0);
    }
}
