//! Legacy single-queue `tpps`, the Tiny (Taobao) Parallel Proportion
//! Scheduler of Alibaba's 2.6.32-based ali_kernel (block/tpps-iosched.c,
//! Robin Dong 2013, ideas from Zhu Yanhai; never merged upstream). Seed 004
//! describes it; the facts are those of the ali tree (reference §4).
//!
//! Shape: every process has one queue per device (sync and async I/O
//! together, FIFO, no sorting), linked into its cgroup's group; a dispatch
//! call computes the device's free capacity `quota = nr_requests −
//! rq_in_driver` and, when at least `MIN_DISPATCH_RQ` slots are free, gives
//! each group `quota × weight / total_weight − (its requests in the driver)`
//! requests, taken round robin from its queues one at a time, starting where
//! the group's cursor stopped last time. It shares device slots (requests in
//! flight) by weight, which approximates IOPS proportionality on a device
//! kept full. No idling, no slices, no sysfs tunables.
//!
//! Pitfalls kept (reference §6.23): integer division; a group's own
//! in-driver requests are subtracted; nothing is dispatched while fewer than
//! MIN_DISPATCH_RQ slots are free; quota a group leaves unused is not handed
//! to others; a queue stays online (and its group's weight in
//! `total_weight`) while its process lives, busy or not; one request per
//! queue per round-robin step; dispatch is retried when requests complete.
//! A forced dispatch (a switch drains the queue) moves one request per queue
//! per pass, as the ali code's `count = -1` loop does; the core repeats it
//! until nothing moves. The seed's drain-on-switch bug (the ali backport
//! waited only for the root cgroup's request pool) stays fixed: the core's
//! drain waits for every request of every pool.
//!
//! Deviations: with `nr_requests` below MIN_DISPATCH_RQ (it can be set
//! down to 4) the ali code would never dispatch and the I/O would hang; the
//! model waits for all `nr_requests` slots to be free instead. The ali code does not decrement `tppd->dispatched` for a
//! request merged away, so its "queue empty" test drifts; the model keeps
//! the count exact. A queue freed when its process changes cgroup takes its
//! group's weight out of `total_weight` when it was the group's last online
//! queue (the counterpart of adding it at the first).
//!
//! On blk-mq (`tpps-mq` in the registry; the original only ever ran on the
//! 2.6.32 single-queue core) the model makes these decisions, none of which
//! the ali code had to make:
//! - One instance per request queue, shared by its hardware queues (as
//!   mq-deadline and BFQ): groups, weights and the quota stay device-wide.
//! - blk-mq asks for one request per call. When a hardware queue asks and
//!   nothing is staged for it, one quota pass runs (the legacy dispatch
//!   call) and moves its requests to per-hardware-queue staging lists (each
//!   request to its own hctx's); the call returns the head of its own list,
//!   and the other hardware queues that got requests are run.
//! - `quota = nr_requests − in driver` with `nr_requests` the scheduler
//!   tags, and a request counts as "in the driver" from the pass that staged
//!   it (blk-mq has no activate hook; staged requests are committed) until
//!   it completes or is requeued; so MIN_DISPATCH_RQ gates passes as before.
//! - A requeued request gives its slot back and returns to the head of its
//!   process's queue (`at_head`); a staged request merged away leaves its
//!   staging list and gives its slot back.
//! - No per-cgroup request pools (blk-mq has one tag space): no `may_queue`.
//!   Instead a group holding its weight's share of the scheduler tags
//!   (`nr_requests × weight / total_weight`, the legacy quota's share)
//!   allocates with shallow depth 1 (`limit_depth`), as BFQ caps a cgroup
//!   since 5.17 (`bfq_request_over_limit`). Without it a freed tag goes to
//!   whichever task asks next, each group holds about as many tags as its
//!   jobs can take, and how IOPS follow weight turned on the order in which
//!   the CPUs ran the tag's sleepers.

use crate::block::elevator::{
    show_attrs, store_attr, Attr, BioInfo, Elevator, MergeKind, QueueInfo, SchedCtx, Tunable,
};
use crate::block::request::{RqId, RqList};
use crate::cgroup::{CgroupTree, WeightPolicy};
use std::collections::BTreeMap;

/// MIN_DISPATCH_RQ of the ali_kernel tree (64; the later 3.x port uses 8).
pub const MIN_DISPATCH_RQ: i64 = 64;

type Qid = u32;

/// tpps-mq: the shallow depth of an allocation by a group over its share
/// of the tags (the smallest, as BFQ's over-limit allocations get).
const MQ_OVER_SHARE_DEPTH: u32 = 1;

/// A group's share of `nr_requests` scheduler tags by weight, rounded to
/// the closest (as the legacy quota shares the device's slots, and BFQ's
/// cgroup cap its tags).
fn tag_share(nr_requests: u32, weight: u32, total_weight: u32) -> u32 {
    if total_weight == 0 {
        return nr_requests;
    }
    let (n, w, t) = (
        u64::from(nr_requests),
        u64::from(weight),
        u64::from(total_weight),
    );
    ((n * w + t / 2) / t) as u32
}

/// `Request::elv[1]`: on its queue's FIFO, or (blk-mq) staged for its
/// hardware queue.
const LOC_NONE: u64 = 0;
const LOC_QUEUED: u64 = 1;
const LOC_STAGED: u64 = 2;

/// tpps registers no elevator attributes.
const TPPS_ATTRS: &[Attr<Tpps>] = &[];

/// `struct tpps_queue`.
#[derive(Debug)]
struct Tppq {
    live: bool,
    group: u16,
    fifo: RqList,
    /// The process still points at it (`tic->tppq`).
    owned: bool,
    /// Requests allocated against it (set_request to put_request).
    allocated: u32,
    online: bool,
}

/// `struct tpps_group`.
#[derive(Debug, Default)]
struct Tppg {
    weight: u32,
    /// Online queues, list head first (`queue_list`, `list_add` at the head).
    queues: Vec<Qid>,
    /// `cur_dispatcher`, an index into `queues`.
    cursor: Option<usize>,
    rq_queued: u32,
    rq_in_driver: u32,
    /// Requests allocated against its queues (blk-mq: scheduler tags held).
    allocated: u32,
}

/// tpps.
#[derive(Default)]
pub struct Tpps {
    queues: Vec<Tppq>,
    free_queues: Vec<Qid>,
    groups: Vec<Option<Tppg>>,
    /// `tppd->group_list`, head first (new groups are added at the head).
    group_list: Vec<u16>,
    /// `tpps_io_context` per process: (its cgroup, its queue).
    tics: BTreeMap<u32, (u16, Qid)>,
    busy_queues: u32,
    /// Requests inserted and not yet dispatched (`tppd->dispatched`).
    dispatched: u32,
    rq_in_driver: u32,
    total_weight: u32,
    nr_requests: u32,
    /// Running on blk-mq (`tpps-mq`): passes stage requests per hardware
    /// queue instead of moving them to the legacy dispatch list.
    mq: bool,
    staged: Vec<RqList>,
    /// Hardware queues that got staged requests in the current pass.
    staged_for: Vec<u16>,
}

impl Tpps {
    pub fn new() -> Tpps {
        Tpps::default()
    }

    /// tpps on the blk-mq path (see the module notes).
    pub fn new_mq() -> Tpps {
        Tpps {
            mq: true,
            ..Tpps::default()
        }
    }

    /// Requests staged for hardware queues and not yet handed out (blk-mq).
    pub fn staged(&self) -> usize {
        self.staged.iter().map(|l| l.len as usize).sum()
    }

    /// Requests counted in the driver (device-wide).
    pub fn in_driver(&self) -> u32 {
        self.rq_in_driver
    }

    /// Requests inside the scheduler.
    pub fn queued(&self) -> u32 {
        self.dispatched
    }
    /// Sum of the weights of groups with online queues.
    pub fn total_weight(&self) -> u32 {
        self.total_weight
    }
    /// Live queues (memory check).
    pub fn live_queues(&self) -> usize {
        self.queues.len() - self.free_queues.len()
    }
    /// Requests of cgroup `cg` in the driver.
    pub fn group_in_driver(&self, cg: u16) -> u32 {
        self.grp(cg).map_or(0, |g| g.rq_in_driver)
    }

    fn grp(&self, cg: u16) -> Option<&Tppg> {
        self.groups.get(cg as usize)?.as_ref()
    }
    fn gm(&mut self, cg: u16) -> &mut Tppg {
        self.groups[cg as usize].as_mut().expect("group exists")
    }

    fn rq_queue(ctx: &SchedCtx, rq: RqId) -> Option<Qid> {
        match ctx.rqs[rq].elv[0] {
            0 => None,
            v => Some((v - 1) as Qid),
        }
    }

    /// `tpps_get_tppg`: the group of a cgroup, created at the head of the
    /// device's group list with the cgroup's weight at creation.
    fn group(&mut self, cgroups: &CgroupTree, cg: u16) -> u16 {
        if self.grp(cg).is_some() {
            return cg;
        }
        if self.groups.len() <= cg as usize {
            self.groups.resize_with(cg as usize + 1, || None);
        }
        self.groups[cg as usize] = Some(Tppg {
            weight: cgroups.weight(cg, WeightPolicy::Blkcg),
            ..Tppg::default()
        });
        self.group_list.insert(0, cg);
        cg
    }

    fn alloc_queue(&mut self, group: u16) -> Qid {
        let q = Tppq {
            live: true,
            group,
            fifo: RqList::new(),
            owned: true,
            allocated: 0,
            online: false,
        };
        match self.free_queues.pop() {
            Some(id) => {
                self.queues[id as usize] = q;
                id
            }
            None => {
                self.queues.push(q);
                (self.queues.len() - 1) as Qid
            }
        }
    }

    /// `tpps_add_queue`: the queue goes online at its first request.
    fn add_queue(&mut self, q: Qid) {
        if self.queues[q as usize].online {
            return;
        }
        self.queues[q as usize].online = true;
        let cg = self.queues[q as usize].group;
        self.busy_queues += 1;
        let g = self.gm(cg);
        g.queues.insert(0, q);
        if let Some(c) = g.cursor.as_mut() {
            *c += 1;
        }
        if g.queues.len() == 1 {
            let w = g.weight;
            self.total_weight += w;
        }
    }

    /// `tpps_put_queue` reaching zero: off its group's list.
    fn maybe_free(&mut self, q: Qid) {
        let cq = &self.queues[q as usize];
        if !cq.live || cq.owned || cq.allocated > 0 || !cq.fifo.is_empty() {
            return;
        }
        if cq.online {
            let cg = cq.group;
            self.busy_queues -= 1;
            let g = self.gm(cg);
            if let Some(i) = g.queues.iter().position(|&x| x == q) {
                g.queues.remove(i);
                g.cursor = match g.cursor {
                    _ if g.queues.is_empty() => None,
                    Some(c) if c > i => Some(c - 1),
                    Some(c) => Some(c % g.queues.len()),
                    None => None,
                };
            }
            if g.queues.is_empty() {
                let w = g.weight;
                self.total_weight -= w;
            }
        }
        self.queues[q as usize].live = false;
        self.free_queues.push(q);
    }

    /// Take one request off a queue's FIFO head onto the dispatch list
    /// (`tpps_dispatch_requests_nr(.., 1)` → `tpps_dispatch_insert`).
    fn dispatch_one(&mut self, ctx: &mut SchedCtx, q: Qid) -> u32 {
        let Some(rq) = self.queues[q as usize].fifo.pop_front(ctx.rqs) else {
            return 0;
        };
        ctx.rqs[rq].elv[1] = LOC_NONE;
        let cg = self.queues[q as usize].group;
        self.gm(cg).rq_queued -= 1;
        self.dispatched -= 1;
        if self.mq {
            self.stage(ctx, rq, cg);
        } else {
            ctx.dispatch_sort(rq);
        }
        1
    }

    /// blk-mq: the pass committed `rq` (of group `cg`) to the device; it
    /// waits on its hardware queue's staging list and holds a slot.
    fn stage(&mut self, ctx: &mut SchedCtx, rq: RqId, cg: u16) {
        let h = ctx.rqs[rq].hctx as usize;
        if self.staged.len() <= h {
            self.staged.resize(h + 1, RqList::new());
        }
        self.staged[h].push_back(ctx.rqs, rq);
        ctx.rqs[rq].elv[1] = LOC_STAGED;
        self.rq_in_driver += 1;
        self.gm(cg).rq_in_driver += 1;
        if !self.staged_for.contains(&(h as u16)) {
            self.staged_for.push(h as u16);
        }
    }

    /// A slot of `rq`'s group comes back (completion, requeue, or a staged
    /// request merged away).
    fn release_slot(&mut self, ctx: &SchedCtx, rq: RqId) {
        if let Some(q) = Self::rq_queue(ctx, rq) {
            self.rq_in_driver = self.rq_in_driver.saturating_sub(1);
            let cg = self.queues[q as usize].group;
            let g = self.gm(cg);
            g.rq_in_driver = g.rq_in_driver.saturating_sub(1);
        }
    }

    /// blk-mq: a staged request leaves its list (handed out or merged).
    fn unstage(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let h = ctx.rqs[rq].hctx as usize;
        if let Some(l) = self.staged.get_mut(h) {
            l.remove(ctx.rqs, rq);
        }
        ctx.rqs[rq].elv[1] = LOC_NONE;
    }

    /// One round-robin pass over a group's queues from its cursor, one
    /// request per queue, stopping once `limit` requests moved (the cursor
    /// then stays at the next queue).
    fn group_pass(&mut self, ctx: &mut SchedCtx, cg: u16, limit: Option<i64>) -> u32 {
        let len = self.gm(cg).queues.len();
        if len == 0 {
            return 0;
        }
        let start = self.gm(cg).cursor.unwrap_or(0).min(len - 1);
        self.gm(cg).cursor = Some(start);
        let (mut idx, mut count) = (start, 0u32);
        loop {
            let q = self.gm(cg).queues[idx];
            count += self.dispatch_one(ctx, q);
            idx = (idx + 1) % len;
            if limit.is_some_and(|l| count as i64 >= l) {
                self.gm(cg).cursor = Some(idx);
                break;
            }
            if idx == start {
                break;
            }
        }
        count
    }

    /// The free slots a dispatch waits for: MIN_DISPATCH_RQ, or all of
    /// `nr_requests` when there are fewer (a deviation: with
    /// `nr_requests` below 64 the ali code never dispatches and the queue
    /// hangs; the model dispatches when the driver is empty instead).
    fn min_dispatch(&self) -> i64 {
        MIN_DISPATCH_RQ.min(self.nr_requests as i64)
    }

    /// `tpps_dispatch_requests` without force.
    fn dispatch_quota(&mut self, ctx: &mut SchedCtx) -> u32 {
        if self.total_weight == 0 {
            return 0;
        }
        let quota = self.nr_requests as i64 - self.rq_in_driver as i64;
        if quota < self.min_dispatch() {
            return 0;
        }
        let mut total = 0;
        for i in 0..self.group_list.len() {
            let cg = self.group_list[i];
            let total_weight = self.total_weight as i64;
            let g = self.gm(cg);
            if g.queues.is_empty() {
                continue;
            }
            let grp_quota = quota * g.weight as i64 / total_weight - g.rq_in_driver as i64;
            if grp_quota <= 0 {
                continue;
            }
            total += self.group_pass(ctx, cg, Some(grp_quota));
        }
        if total == 0 && self.rq_in_driver == 0 {
            // Deviation (as min_dispatch's): with a small quota every
            // group's integer share rounds to 0 and the ali code would
            // never dispatch again; with the driver empty the first group
            // in the list that has work gets one request.
            for i in 0..self.group_list.len() {
                let cg = self.group_list[i];
                if !self.gm(cg).queues.is_empty() {
                    total += self.group_pass(ctx, cg, Some(1));
                    if total > 0 {
                        break;
                    }
                }
            }
        }
        total
    }

    /// `tpps_forced_dispatch`: one request per queue of every group.
    fn dispatch_forced(&mut self, ctx: &mut SchedCtx) -> u32 {
        let mut total = 0;
        for i in 0..self.group_list.len() {
            let cg = self.group_list[i];
            total += self.group_pass(ctx, cg, None);
        }
        total
    }

    /// `tpps_remove_request`.
    fn remove_request(&mut self, ctx: &mut SchedCtx, q: Qid, rq: RqId) {
        self.queues[q as usize].fifo.remove(ctx.rqs, rq);
        ctx.rqs[rq].elv[1] = LOC_NONE;
        let cg = self.queues[q as usize].group;
        self.gm(cg).rq_queued -= 1;
        self.dispatched -= 1;
    }

    fn kick_if_busy(&self, ctx: &mut SchedCtx) {
        if self.busy_queues > 0 {
            ctx.kick();
        }
    }
}

impl Elevator for Tpps {
    fn name(&self) -> &'static str {
        if self.mq {
            "tpps-mq"
        } else {
            "tpps"
        }
    }

    fn init(&mut self, q: &QueueInfo) {
        self.nr_requests = q.nr_requests;
    }

    fn depth_updated(&mut self, q: &QueueInfo) {
        self.nr_requests = q.nr_requests;
    }

    fn tunables(&self) -> Vec<Tunable> {
        show_attrs(self, TPPS_ATTRS)
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        store_attr(self, "tpps", TPPS_ATTRS, name, value)
    }

    /// blk-mq only (a decision of the model, see the header): a group that
    /// holds its weight's share of the scheduler tags allocates with the
    /// smallest shallow depth, as BFQ caps a cgroup since 5.17
    /// (`bfq_request_over_limit`), standing in for the ali kernel's
    /// per-cgroup request pools.
    fn limit_depth(&mut self, _ctx: &mut SchedCtx, bio: &BioInfo) -> Option<u32> {
        if !self.mq {
            return None;
        }
        let g = self.grp(bio.cgroup)?;
        let total = if g.queues.is_empty() {
            self.total_weight + g.weight
        } else {
            self.total_weight
        };
        let share = tag_share(self.nr_requests, g.weight, total);
        (g.allocated >= share).then_some(MQ_OVER_SHARE_DEPTH)
    }

    fn min_shallow_depth(&self) -> u32 {
        if self.mq {
            MQ_OVER_SHARE_DEPTH
        } else {
            u32::MAX
        }
    }

    /// `tpps_set_request`: the process's queue (a new one when it changed
    /// cgroup: `changed_cgroup` drops the old one).
    fn prepare_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let (pid, cg) = (ctx.rqs[rq].pid, ctx.rqs[rq].cgroup);
        let q = match self.tics.get(&pid) {
            Some(&(c, q)) if c == cg => q,
            old => {
                if let Some(&(_, oq)) = old {
                    self.queues[oq as usize].owned = false;
                    self.maybe_free(oq);
                }
                let g = self.group(ctx.cgroups, cg);
                let q = self.alloc_queue(g);
                self.tics.insert(pid, (cg, q));
                q
            }
        };
        self.queues[q as usize].allocated += 1;
        let cg = self.queues[q as usize].group;
        self.gm(cg).allocated += 1;
        ctx.rqs[rq].elv = [q as u64 + 1, LOC_NONE];
    }

    /// `tpps_put_request`.
    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let Some(q) = Self::rq_queue(ctx, rq) else {
            return;
        };
        match ctx.rqs[rq].elv[1] {
            LOC_QUEUED => self.remove_request(ctx, q, rq),
            LOC_STAGED => {
                self.unstage(ctx, rq);
                self.release_slot(ctx, rq);
            }
            _ => {}
        }
        let cq = &mut self.queues[q as usize];
        if cq.allocated > 0 {
            cq.allocated -= 1;
            let cg = cq.group;
            let g = self.gm(cg);
            g.allocated = g.allocated.saturating_sub(1);
        }
        ctx.rqs[rq].elv = [0, LOC_NONE];
        self.maybe_free(q);
    }

    /// `tpps_insert_request`: FIFO tail of the process's queue.
    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool) {
        let q = match Self::rq_queue(ctx, rq) {
            Some(q) if self.queues[q as usize].live => q,
            _ => {
                self.prepare_request(ctx, rq);
                Self::rq_queue(ctx, rq).expect("just attached")
            }
        };
        if ctx.rqs[rq].elv[1] == LOC_QUEUED {
            return;
        }
        // Legacy inserts are always at the tail (requeues go to the core's
        // dispatch list); blk-mq re-inserts a requeued request at the head.
        if at_head && self.mq {
            self.queues[q as usize].fifo.push_front(ctx.rqs, rq);
        } else {
            self.queues[q as usize].fifo.push_back(ctx.rqs, rq);
        }
        ctx.rqs[rq].elv[1] = LOC_QUEUED;
        let cg = self.queues[q as usize].group;
        self.gm(cg).rq_queued += 1;
        self.dispatched += 1;
        self.add_queue(q);
    }

    fn dispatch_legacy(&mut self, ctx: &mut SchedCtx, force: bool) -> u32 {
        if force {
            self.dispatch_forced(ctx)
        } else {
            self.dispatch_quota(ctx)
        }
    }

    /// blk-mq: the head of this hardware queue's staging list, after a
    /// quota pass when it is empty (the other hardware queues that got
    /// requests in the pass are run).
    fn dispatch(&mut self, ctx: &mut SchedCtx, hctx: u16) -> Option<RqId> {
        let h = hctx as usize;
        if self.staged.get(h).is_none_or(|l| l.is_empty()) {
            self.staged_for.clear();
            self.dispatch_quota(ctx);
            for i in 0..self.staged_for.len() {
                if self.staged_for[i] != hctx {
                    ctx.kick_hctx(self.staged_for[i]);
                }
            }
        }
        let rq = self.staged.get_mut(h)?.pop_front(ctx.rqs)?;
        ctx.rqs[rq].elv[1] = LOC_NONE;
        Some(rq)
    }

    /// `tpps_queue_empty` negated (blk-mq: or requests staged for `hctx`).
    fn has_work(&self, hctx: u16) -> bool {
        self.dispatched > 0
            || self
                .staged
                .get(hctx as usize)
                .is_some_and(|l| !l.is_empty())
    }

    /// blk-mq: the requeued request's slot comes back; the core re-inserts it.
    fn requeue_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        if self.mq {
            self.release_slot(ctx, rq);
        }
    }

    fn activate_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        if let Some(q) = Self::rq_queue(ctx, rq) {
            self.rq_in_driver += 1;
            let cg = self.queues[q as usize].group;
            self.gm(cg).rq_in_driver += 1;
        }
    }

    fn deactivate_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.release_slot(ctx, rq);
    }

    /// `tpps_completed_request`: with nothing left in the driver, run the
    /// queue (the core also runs it after every completion).
    fn completed_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.deactivate_request(ctx, rq);
        if self.rq_in_driver == 0 {
            self.kick_if_busy(ctx);
        }
    }

    /// `tpps_merged_request`: a front merge moves the request to its
    /// queue's tail.
    fn request_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, kind: MergeKind) {
        if kind != MergeKind::Front || ctx.rqs[rq].elv[1] != LOC_QUEUED {
            return;
        }
        if let Some(q) = Self::rq_queue(ctx, rq) {
            let fifo = &mut self.queues[q as usize].fifo;
            fifo.remove(ctx.rqs, rq);
            fifo.push_back(ctx.rqs, rq);
        }
    }

    /// `tpps_merged_requests`: `next` leaves its queue.
    fn requests_merged(&mut self, ctx: &mut SchedCtx, _rq: RqId, next: RqId) {
        if ctx.rqs[next].elv[1] == LOC_STAGED {
            self.unstage(ctx, next);
            self.release_slot(ctx, next);
            return;
        }
        if ctx.rqs[next].elv[1] != LOC_QUEUED {
            return;
        }
        if let Some(q) = Self::rq_queue(ctx, next) {
            self.remove_request(ctx, q, next);
        }
    }
}

#[cfg(test)]
mod tests;
