//! Test harness for schedulers: a request arena, queue facts, cgroups and a
//! clock, and helpers that play the block layer's side of the contract
//! (limit_depth → allocate → prepare → insert → dispatch → complete →
//! finish, request merges, timers, queue-run requests) at chosen times.
//!
//! Two modes, as the kernel has two cores ([`Mode`]):
//! - blk-mq (`Harness::new`): `dispatch` calls the scheduler's `dispatch`
//!   and the request goes to the device;
//! - legacy (`Harness::legacy`): the harness plays the single-queue core of
//!   block/legacy.rs — allocation from per-cgroup request pools after
//!   `may_queue`, `dispatch` peeks at the head of the core's dispatch list
//!   (asking `dispatch_legacy(false)` to fill it when empty), activates a
//!   request the first time it is seen and starts it; `requeue` gives a
//!   started request back (deactivate, soft barrier at the head);
//!   `force_drain` calls `dispatch_legacy(true)` until it returns 0.
//!
//! Timers armed by the scheduler fire when the harness clock passes them (in
//! time order, then arming order); a kick (`SchedCtx::kick`/`kick_hctx`)
//! makes the harness run dispatch, as the block layer's queue run would.

use crate::block::elevator::{BioInfo, CoreSide, Elevator, MergeKind, QueueInfo, SchedCtx};
use crate::block::legacy::RequestPools;
use crate::block::request::{flags, op_is_sync, Op, RequestArena, RqId};
use crate::cgroup::{CgroupTree, IoPrio, IoPrioClass};
use crate::sim::time::{Ns, NS_PER_MS};

/// Who submits a request: task, cgroup, priority (the bio's identity).
#[derive(Clone, Copy, Debug)]
pub struct Submitter {
    pub pid: u32,
    pub cgroup: u16,
    pub ioprio: IoPrio,
}

impl Default for Submitter {
    fn default() -> Self {
        Submitter {
            pid: 0,
            cgroup: 0,
            ioprio: IoPrio {
                class: IoPrioClass::None,
                level: 4,
            },
        }
    }
}

/// Which core the harness plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// blk-mq: `elevator_mq_ops`.
    Mq,
    /// The legacy single-queue core: `elevator_ops`.
    Legacy,
}

pub struct Harness<E: Elevator> {
    pub sched: E,
    pub mode: Mode,
    pub rqs: RequestArena,
    pub q: QueueInfo,
    pub cgroups: CgroupTree,
    /// Armed, not yet fired: (time, arming sequence, token).
    timers: Vec<(Ns, u64, u64)>,
    timer_seq: u64,
    core: CoreSide,
    /// Queue runs the scheduler asked for so far (all or per hctx).
    pub kicks: u64,
    /// Timers that fired so far.
    pub fired: u64,
    pub now: Ns,
    /// Dispatched, not yet finished.
    pub inflight: Vec<RqId>,
    /// Inserted and neither dispatched nor merged away (harness view).
    pub inside: Vec<RqId>,
    /// Scheduler tags in use (allocated, not freed), as limit_depth sees them.
    pub tags_used: u32,
    /// Legacy: on the core's dispatch list, not started (moved there by
    /// the scheduler, or requeued).
    pub listed: Vec<RqId>,
    /// Legacy: the request pools allocations come from.
    pub pools: RequestPools,
    /// Legacy: which requests came from a pool (by request id).
    pooled: Vec<bool>,
    /// Legacy: `may_queue` answers seen (MAY, NO, MUST).
    pub may_queue_seen: [u64; 3],
}

impl<E: Elevator> Harness<E> {
    pub fn new(sched: E) -> Harness<E> {
        let mut q = QueueInfo::new(1, 1, 32, 64);
        q.rotational = true;
        Harness::with_queue(sched, q)
    }

    /// A harness playing the legacy single-queue core: one queue, 128
    /// requests per pool and direction, a rotational device of depth 32.
    pub fn legacy(sched: E) -> Harness<E> {
        let mut q = QueueInfo::new(1, 1, 32, crate::block::LEGACY_NR_REQUESTS);
        q.rotational = true;
        Harness::legacy_with_queue(sched, q)
    }

    pub fn legacy_with_queue(sched: E, q: QueueInfo) -> Harness<E> {
        let mut h = Harness::with_queue(sched, q);
        h.mode = Mode::Legacy;
        h.pools = RequestPools::new(h.q.nr_requests);
        h
    }

    pub fn with_queue(mut sched: E, q: QueueInfo) -> Harness<E> {
        sched.init(&q);
        Harness {
            sched,
            mode: Mode::Mq,
            rqs: RequestArena::new(),
            q,
            cgroups: CgroupTree::default(),
            timers: Vec::new(),
            timer_seq: 0,
            core: CoreSide::default(),
            kicks: 0,
            fired: 0,
            now: 0,
            inflight: Vec::new(),
            inside: Vec::new(),
            tags_used: 0,
            listed: Vec::new(),
            pools: RequestPools::new(1),
            pooled: Vec::new(),
            may_queue_seen: [0; 3],
        }
    }

    fn legacy_mode(&self) -> bool {
        self.mode == Mode::Legacy
    }

    fn set_pooled(&mut self, id: RqId, pooled: bool) {
        let i = id as usize;
        if self.pooled.len() <= i {
            self.pooled.resize(i + 1, false);
        }
        self.pooled[i] = pooled;
    }

    /// Run `f` with the scheduler and a context at the current time; timers
    /// it arms are kept, queue-run requests counted.
    pub fn with_ctx<R>(&mut self, f: impl FnOnce(&mut E, &mut SchedCtx) -> R) -> R {
        let r = {
            let mut ctx = SchedCtx::new(
                self.now,
                &mut self.rqs,
                &self.q,
                &self.cgroups,
                &mut self.core,
            );
            f(&mut self.sched, &mut ctx)
        };
        if self.core.asked {
            for &(at, token) in &self.core.timers {
                self.timer_seq += 1;
                self.timers.push((at, self.timer_seq, token));
            }
            if self.core.runs.all || !self.core.runs.hctxs.is_empty() {
                self.kicks += 1;
            }
            self.core.clear_requests();
        }
        r
    }

    /// Timers armed and not yet fired.
    pub fn pending_timers(&self) -> usize {
        self.timers.len()
    }

    /// Move the clock to `to`, firing every timer due on the way (in time
    /// order, then arming order), each at its own time.
    pub fn advance_to(&mut self, to: Ns) {
        loop {
            let next = self
                .timers
                .iter()
                .enumerate()
                .filter(|(_, t)| t.0 <= to)
                .min_by_key(|(_, t)| (t.0, t.1))
                .map(|(i, _)| i);
            let Some(i) = next else { break };
            let (at, _, token) = self.timers.swap_remove(i);
            self.now = self.now.max(at);
            self.fired += 1;
            self.with_ctx(|s, c| s.timer(c, token));
        }
        self.now = self.now.max(to);
    }

    pub fn advance_ms(&mut self, ms: u64) {
        self.advance_to(self.now + ms * NS_PER_MS);
    }

    /// The bio a submission of `op` at `sector` by `who` would carry.
    pub fn bio_from(&self, who: Submitter, op: Op, sector: u64, nr: u32) -> BioInfo {
        BioInfo {
            op,
            sector,
            nr_sectors: nr,
            flags: if op == Op::Read { flags::SYNC } else { 0 },
            ioprio: who.ioprio,
            cgroup: who.cgroup,
            pid: who.pid,
            cpu: 0,
            hctx: 0,
        }
    }

    pub fn bio(&self, op: Op, sector: u64, nr: u32) -> BioInfo {
        self.bio_from(Submitter::default(), op, sector, nr)
    }

    /// The scheduler's shallow depth for such an allocation.
    pub fn limit_depth(&mut self, op: Op, sync: bool) -> Option<u32> {
        let mut bio = self.bio(op, 0, 8);
        if sync {
            bio.flags |= flags::SYNC;
        } else {
            bio.flags &= !flags::SYNC;
        }
        self.with_ctx(|s, c| s.limit_depth(c, &bio))
    }

    /// Allocate and prepare a request for `who` (not inserted), or None when
    /// the scheduler's depth limit (or `nr_requests`) leaves no tag.
    pub fn try_alloc_from(&mut self, who: Submitter, op: Op, sector: u64, nr: u32) -> Option<RqId> {
        let bio = self.bio_from(who, op, sector, nr);
        if self.legacy_mode() {
            // get_request: may_queue, then the cgroup's pool.
            let may = self.with_ctx(|s, c| s.may_queue(c, &bio));
            self.may_queue_seen[may as usize] += 1;
            let sync = op_is_sync(op, bio.flags);
            let j = crate::sim::time::jiffies(self.now);
            if self.pools.get(who.cgroup, sync, may, who.pid, j).is_err() {
                return None;
            }
        } else {
            let limit = self.with_ctx(|s, c| s.limit_depth(c, &bio));
            let depth = limit.map_or(self.q.nr_requests, |l| l.clamp(1, self.q.nr_requests));
            if self.tags_used >= depth {
                return None;
            }
        }
        self.tags_used += 1;
        let id = self.rqs.alloc();
        {
            let r = &mut self.rqs[id];
            r.op = op;
            r.sector = sector;
            r.nr_sectors = nr;
            r.flags = flags::USE_SCHED | bio.flags;
            r.ioprio = who.ioprio;
            r.cgroup = who.cgroup;
            r.pid = who.pid;
            r.start_ns = self.now;
        }
        let legacy = self.legacy_mode();
        self.set_pooled(id, legacy);
        self.with_ctx(|s, c| s.prepare_request(c, id));
        Some(id)
    }

    /// Allocate and prepare a request (not inserted), ignoring depth limits.
    pub fn alloc_prio(&mut self, op: Op, sector: u64, nr: u32, class: IoPrioClass) -> RqId {
        let who = Submitter {
            ioprio: IoPrio { class, level: 4 },
            ..Submitter::default()
        };
        self.tags_used += 1;
        let id = self.rqs.alloc();
        {
            let r = &mut self.rqs[id];
            r.op = op;
            r.sector = sector;
            r.nr_sectors = nr;
            r.flags = flags::USE_SCHED | if op == Op::Read { flags::SYNC } else { 0 };
            r.ioprio = who.ioprio;
            r.start_ns = self.now;
        }
        self.set_pooled(id, false);
        self.with_ctx(|s, c| s.prepare_request(c, id));
        id
    }

    pub fn alloc(&mut self, op: Op, sector: u64, nr: u32) -> RqId {
        self.alloc_prio(op, sector, nr, IoPrioClass::None)
    }

    /// Insert an allocated request as the core does.
    pub fn insert(&mut self, id: RqId, at_head: bool) {
        assert!(
            !(at_head && self.legacy_mode()),
            "the legacy core never inserts at head (see `requeue`)"
        );
        self.rqs[id].insert_ns = self.now;
        self.with_ctx(|s, c| s.insert(c, id, at_head));
        self.rqs[id].flags |= flags::IN_ELV | flags::ELV_INSERTED;
        if !self.inside.contains(&id) {
            self.inside.push(id);
        }
    }

    pub fn insert_new(&mut self, op: Op, sector: u64, nr: u32, at_head: bool) -> RqId {
        let id = self.alloc(op, sector, nr);
        self.insert(id, at_head);
        id
    }

    pub fn insert_prio(&mut self, op: Op, sector: u64, class: IoPrioClass) -> RqId {
        let id = self.alloc_prio(op, sector, 8, class);
        self.insert(id, false);
        id
    }

    pub fn read(&mut self, sector: u64, nr: u32) -> RqId {
        self.insert_new(Op::Read, sector, nr, false)
    }

    pub fn write(&mut self, sector: u64, nr: u32) -> RqId {
        self.insert_new(Op::Write, sector, nr, false)
    }

    /// One dispatch call; the returned request is marked started and in
    /// flight. Legacy: peek (filling the core's list from the scheduler when
    /// it is empty), then start the head.
    pub fn dispatch(&mut self) -> Option<RqId> {
        if self.legacy_mode() {
            let id = self.peek()?;
            let head = self.core.dispatch.pop_front(&mut self.rqs);
            assert_eq!(head, Some(id));
            self.take_listed(id);
            self.rqs[id].dispatch_ns = self.now;
            self.inflight.push(id);
            return Some(id);
        }
        let id = self.with_ctx(|s, c| s.dispatch(c, 0))?;
        let pos = self.inside.iter().position(|&x| x == id);
        assert!(
            pos.is_some(),
            "dispatched request {id} was not inside the scheduler"
        );
        self.inside.swap_remove(pos.unwrap_or(0));
        let r = &mut self.rqs[id];
        r.flags &= !flags::IN_ELV;
        r.flags |= flags::STARTED;
        r.dispatch_ns = self.now;
        self.inflight.push(id);
        Some(id)
    }

    /// Dispatch until the scheduler returns None.
    pub fn dispatch_all(&mut self) -> Vec<RqId> {
        std::iter::from_fn(|| self.dispatch()).collect()
    }

    fn take_listed(&mut self, id: RqId) {
        let p = self.listed.iter().position(|&x| x == id);
        assert!(p.is_some(), "request {id} was not on the dispatch list");
        self.listed.remove(p.unwrap_or(0));
    }

    /// Legacy: one `dispatch_legacy(force)` call; the requests it moved
    /// leave the scheduler (as the core takes them off its hash and hint).
    pub fn pull(&mut self, force: bool) -> u32 {
        assert!(self.legacy_mode());
        let n = self.with_ctx(|s, c| s.dispatch_legacy(c, force));
        let mut moved = Vec::new();
        self.core.dispatch.take_moved(&mut moved);
        assert_eq!(n as usize, moved.len(), "dispatch_legacy count");
        for id in moved {
            let pos = self.inside.iter().position(|&x| x == id);
            assert!(
                pos.is_some(),
                "moved request {id} was not inside the scheduler"
            );
            self.inside.swap_remove(pos.unwrap_or(0));
            self.rqs[id].flags &= !flags::IN_ELV;
            self.listed.push(id);
        }
        n
    }

    /// Legacy `blk_peek_request`: the head of the core's dispatch list,
    /// asking the scheduler for more while it is empty; activated and marked
    /// started the first time it is seen. None if the scheduler moved
    /// nothing.
    pub fn peek(&mut self) -> Option<RqId> {
        assert!(self.legacy_mode());
        loop {
            if let Some(id) = self.core.dispatch.front() {
                if !self.rqs[id].has(flags::STARTED) {
                    if self.rqs[id].has(flags::ELV_INSERTED) {
                        self.with_ctx(|s, c| s.activate_request(c, id));
                    }
                    self.rqs[id].flags |= flags::STARTED;
                }
                self.core.dispatch.peeked(&self.rqs, id);
                return Some(id);
            }
            if self.inside.is_empty() || self.pull(false) == 0 {
                return None;
            }
        }
    }

    /// Legacy `blk_requeue_request`: the driver gives a started request
    /// back; it is deactivated and goes to the head of the core's list as a
    /// soft barrier.
    pub fn requeue(&mut self, id: RqId) {
        assert!(self.legacy_mode());
        let p = self.inflight.iter().position(|&x| x == id);
        assert!(p.is_some(), "requeue of {id}, not in flight");
        self.inflight.swap_remove(p.unwrap_or(0));
        if self.rqs[id].has(flags::ELV_INSERTED) {
            self.with_ctx(|s, c| s.deactivate_request(c, id));
        }
        self.rqs[id].flags &= !flags::STARTED;
        self.core.dispatch.add_front_barrier(&mut self.rqs, id);
        self.listed.insert(0, id);
    }

    /// Legacy `elv_drain_elevator`: `dispatch_legacy(true)` until it moves
    /// nothing; the scheduler must then hold nothing. Returns how many moved.
    pub fn force_drain(&mut self) -> u32 {
        let mut total = 0;
        loop {
            let n = self.pull(true);
            if n == 0 {
                break;
            }
            total += n;
        }
        assert!(
            self.inside.is_empty(),
            "forced dispatching is broken: {:?} left",
            self.inside
        );
        assert!(!self.sched.has_work(0), "has_work after a forced drain");
        total
    }

    /// Legacy: the core's dispatch list, front to back.
    pub fn listed_order(&self) -> Vec<RqId> {
        self.core.dispatch.iter(&self.rqs).collect()
    }

    fn free(&mut self, id: RqId) {
        let pooled = self.pooled.get(id as usize).copied().unwrap_or(false);
        if pooled {
            let (cg, sync) = (self.rqs[id].cgroup, self.rqs[id].is_sync());
            let mut woken = Vec::new();
            self.pools.freed(cg, sync, &mut woken);
            self.set_pooled(id, false);
        }
        self.rqs.free(id);
        self.tags_used -= 1;
    }

    /// Complete and free a dispatched request.
    pub fn finish(&mut self, id: RqId) {
        if let Some(p) = self.inflight.iter().position(|&x| x == id) {
            self.inflight.swap_remove(p);
        }
        // Legacy elv_completed_request: only requests that went through
        // add_req.
        let completed = !self.legacy_mode() || self.rqs[id].has(flags::ELV_INSERTED);
        self.with_ctx(|s, c| {
            if completed {
                s.completed_request(c, id);
            }
            s.finish_request(c, id);
        });
        self.free(id);
    }

    pub fn finish_all(&mut self) {
        while let Some(&id) = self.inflight.first() {
            self.finish(id);
        }
    }

    /// Core request↔request merge: `next` is absorbed by `rq` and freed.
    pub fn merge_requests(&mut self, rq: RqId, next: RqId) {
        // Legacy elv_merge_requests: merge_req_fn only for a `next` that
        // went through add_req.
        if !self.legacy_mode() || self.rqs[next].has(flags::ELV_INSERTED) {
            self.with_ctx(|s, c| s.requests_merged(c, rq, next));
        }
        if let Some(p) = self.inside.iter().position(|&x| x == next) {
            self.inside.swap_remove(p);
        }
        self.rqs[next].flags &= !flags::IN_ELV;
        self.with_ctx(|s, c| s.finish_request(c, next));
        self.free(next);
    }

    /// Random call sequences within the contract, from several tasks in
    /// several cgroups with every priority class, with timers and time
    /// passing, and writes of random values to every tunable the scheduler
    /// lists. Checks that every request handed back was inside, that
    /// neighbour/merge look-ups only name requests inside, that `has_work`
    /// tells the truth, and that draining returns everything.
    pub fn random_workout(&mut self, seed: u64, steps: usize) {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut rnd = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n.max(1)
        };
        let classes = [
            IoPrioClass::None,
            IoPrioClass::Rt,
            IoPrioClass::Be,
            IoPrioClass::Idle,
        ];
        let groups: Vec<u16> = ["a", "b", "a/c"]
            .iter()
            .map(|g| self.cgroups.get_or_create(g).expect("a valid path"))
            .collect();
        let tunables: Vec<&'static str> = self.sched.tunables().iter().map(|t| t.name).collect();
        for _ in 0..steps {
            match rnd(100) {
                0..=39 => {
                    let op = match rnd(10) {
                        0..=4 => Op::Read,
                        5..=8 => Op::Write,
                        _ => Op::Discard,
                    };
                    let who = Submitter {
                        pid: rnd(6) as u32,
                        cgroup: if rnd(3) == 0 {
                            0
                        } else {
                            groups[rnd(groups.len() as u64) as usize]
                        },
                        ioprio: IoPrio {
                            class: classes[rnd(4) as usize],
                            level: rnd(8) as u8,
                        },
                    };
                    if let Some(id) = self.try_alloc_from(who, op, rnd(256) * 8, 8) {
                        let at_head = rnd(10) == 0 && !self.legacy_mode();
                        self.insert(id, at_head);
                    }
                }
                40..=64 => {
                    if self.legacy_mode() && rnd(4) == 0 {
                        // The driver peeks but the device is full.
                        self.peek();
                    } else {
                        self.dispatch();
                    }
                }
                65..=79 => {
                    if !self.inflight.is_empty() {
                        let id = self.inflight[rnd(self.inflight.len() as u64) as usize];
                        if self.legacy_mode() && rnd(5) == 0 {
                            // The device refused it: back to the core's list.
                            self.requeue(id);
                        } else {
                            self.finish(id);
                        }
                    }
                }
                80..=84 => self.random_request_merge(&mut rnd),
                85..=89 => {
                    if !self.inside.is_empty() {
                        let a = self.inside[rnd(self.inside.len() as u64) as usize];
                        let kind = if self.rqs[a].sector >= 8 && rnd(2) == 0 {
                            self.rqs[a].sector -= 8;
                            MergeKind::Front
                        } else {
                            MergeKind::Back
                        };
                        self.rqs[a].nr_sectors += 8;
                        self.with_ctx(|s, c| s.request_merged(c, a, kind));
                    }
                }
                90..=93 => self.check_lookups(),
                94 => {
                    if self.legacy_mode() {
                        // A switch or a passthrough command drains it.
                        self.force_drain();
                    } else {
                        self.check_lookups();
                    }
                }
                95..=97 => {
                    let kicks = self.kicks;
                    self.advance_ms(rnd(400));
                    if self.kicks > kicks {
                        // A timer asked for a queue run: run it.
                        self.dispatch();
                    }
                }
                _ => {
                    if !tunables.is_empty() {
                        let name = tunables[rnd(tunables.len() as u64) as usize];
                        let values = [
                            "0",
                            "1",
                            "2",
                            "-1",
                            "7",
                            "100",
                            "0x10",
                            "junk",
                            "99999999999",
                            "",
                        ];
                        let v = values[rnd(values.len() as u64) as usize];
                        // Refusals are fine; a panic or a broken scheduler is not.
                        let _ = self.sched.set_tunable(name, v);
                    }
                }
            }
            // has_work must say exactly whether anything is inside.
            assert_eq!(
                self.sched.has_work(0),
                !self.inside.is_empty(),
                "has_work disagrees"
            );
        }
        self.drain();
    }

    fn random_request_merge(&mut self, rnd: &mut impl FnMut(u64) -> u64) {
        if self.inside.len() >= 2 {
            let a = self.inside[rnd(self.inside.len() as u64) as usize];
            let b = self.inside[rnd(self.inside.len() as u64) as usize];
            let (ra, rb) = (&self.rqs[a], &self.rqs[b]);
            if a != b && ra.op == rb.op && ra.ioprio == rb.ioprio && ra.cgroup == rb.cgroup {
                self.merge_requests(a, b);
            }
        } else if let Some(&a) = self.inside.first() {
            // Insert merge: a new request absorbed before insertion.
            let (op, s) = (self.rqs[a].op, self.rqs[a].end_sector());
            let class = self.rqs[a].ioprio.class;
            let loose = self.alloc_prio(op, s, 8, class);
            self.rqs[loose].cgroup = self.rqs[a].cgroup;
            // Legacy blk_attempt_req_merge asks the scheduler first; a
            // refused request is inserted instead.
            if self.legacy_mode() && !self.with_ctx(|s, c| s.allow_rq_merge(c, a, loose)) {
                self.insert(loose, false);
            } else {
                self.merge_requests(a, loose);
            }
        }
    }

    fn check_lookups(&mut self) {
        if self.inside.is_empty() {
            return;
        }
        let a = self.inside[(self.now as usize) % self.inside.len()];
        let n = self.with_ctx(|s, c| s.next_request(c, a));
        let p = self.with_ctx(|s, c| s.former_request(c, a));
        for r in [n, p].into_iter().flatten() {
            assert!(self.inside.contains(&r), "neighbour {r} not inside");
        }
        let bio = self.bio(self.rqs[a].op, self.rqs[a].sector.saturating_sub(8), 8);
        if let Some((r, _)) = self.with_ctx(|s, c| s.request_merge(c, &bio)) {
            assert!(self.inside.contains(&r), "merge candidate {r} not inside");
        }
    }

    /// Whatever the scheduler holds must come out once in-flight requests
    /// finish and time passes (aging, expiry, idle timers).
    pub fn drain(&mut self) {
        let mut idle_rounds = 0;
        while (!self.inside.is_empty() || !self.listed.is_empty()) && idle_rounds < 1000 {
            if self.dispatch().is_some() {
                idle_rounds = 0;
                continue;
            }
            idle_rounds += 1;
            self.finish_all();
            self.advance_ms(100);
        }
        assert!(self.inside.is_empty(), "requests stuck: {:?}", self.inside);
        assert!(self.listed.is_empty(), "requests stuck: {:?}", self.listed);
        assert!(!self.sched.has_work(0));
        self.finish_all();
        assert_eq!(self.rqs.live(), 0);
        assert_eq!(self.tags_used, 0);
        if self.legacy_mode() {
            for cg in 0..4 {
                for dir in 0..2 {
                    assert_eq!(self.pools.count(cg, dir), 0, "pool {cg} dir {dir}");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::elevator::{
        show_attrs, store_attr, Attr, AttrConv, AttrDefault, AttrParse, AttrRange, Tunable,
    };
    use crate::block::request::RqList;

    /// A timer-driven test elevator: it holds requests until an idle timer
    /// (armed at the first insert, `idle_ms` later) fires and kicks the
    /// queue — the shape of BFQ's and CFQ's idling.
    #[derive(Default)]
    struct Idler {
        fifo: RqList,
        open: bool,
        armed: bool,
        idle_ms: i32,
        tokens: u64,
    }

    const IDLER_ATTRS: &[Attr<Idler>] = &[Attr {
        name: "idle_ms",
        unit: "ms",
        help: "how long inserted requests wait for the idle timer",
        default: AttrDefault::Value(2),
        parse: AttrParse::Kstrtoint,
        range: AttrRange::Clamp(0, 1000),
        conv: AttrConv::Plain,
        get: |s| s.idle_ms as i128,
        set: |s, v| {
            s.idle_ms = v as i32;
            Ok(())
        },
    }];

    impl Elevator for Idler {
        fn name(&self) -> &'static str {
            "idler"
        }
        fn tunables(&self) -> Vec<Tunable> {
            show_attrs(self, IDLER_ATTRS)
        }
        fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
            store_attr(self, "idler", IDLER_ATTRS, name, value)
        }
        fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, _at_head: bool) {
            self.fifo.push_back(ctx.rqs, rq);
            ctx.rqs[rq].elv[1] = 1;
            if !self.armed && !self.open {
                self.armed = true;
                self.tokens += 1;
                let at = ctx.now + self.idle_ms as u64 * NS_PER_MS;
                ctx.arm_timer(at, self.tokens);
            }
        }
        fn dispatch(&mut self, ctx: &mut SchedCtx, _hctx: u16) -> Option<RqId> {
            if !self.open {
                return None;
            }
            let rq = self.fifo.pop_front(ctx.rqs)?;
            ctx.rqs[rq].elv[1] = 0;
            if self.fifo.is_empty() {
                self.open = false;
            }
            Some(rq)
        }
        fn has_work(&self, _hctx: u16) -> bool {
            !self.fifo.is_empty()
        }
        fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
            if ctx.rqs[rq].elv[1] == 1 {
                self.fifo.remove(ctx.rqs, rq);
                ctx.rqs[rq].elv[1] = 0;
            }
        }
        fn requests_merged(&mut self, ctx: &mut SchedCtx, _rq: RqId, next: RqId) {
            if ctx.rqs[next].elv[1] == 1 {
                self.fifo.remove(ctx.rqs, next);
                ctx.rqs[next].elv[1] = 0;
            }
        }
        fn timer(&mut self, ctx: &mut SchedCtx, token: u64) {
            // Only the latest timer counts (stale tokens are ignored).
            if token == self.tokens && self.armed {
                self.armed = false;
                self.open = true;
                ctx.kick();
            }
        }
    }

    fn idler() -> Idler {
        Idler {
            idle_ms: 2,
            ..Idler::default()
        }
    }

    #[test]
    fn timers_fire_in_time_order_and_kicks_are_counted() {
        let mut h = Harness::new(idler());
        let a = h.read(100, 8);
        let b = h.write(200, 8);
        assert_eq!(h.pending_timers(), 1);
        assert_eq!(h.dispatch(), None, "held until the idle timer fires");
        h.advance_ms(1);
        assert_eq!((h.fired, h.kicks), (0, 0));
        h.advance_ms(1);
        assert_eq!(
            (h.fired, h.kicks),
            (1, 1),
            "the timer fired at 2 ms and kicked"
        );
        assert_eq!(h.dispatch_all(), vec![a, b]);
        h.finish_all();
    }

    #[test]
    fn submitters_respect_limit_depth_and_tags() {
        let mut h = Harness::new(idler());
        let who = Submitter {
            pid: 3,
            cgroup: h.cgroups.get_or_create("g").unwrap(),
            ..Submitter::default()
        };
        let mut got = 0;
        while h.try_alloc_from(who, Op::Write, got * 8, 8).is_some() {
            got += 1;
        }
        assert_eq!(got, h.q.nr_requests as u64, "no tag beyond nr_requests");
    }

    #[test]
    fn the_workout_drives_a_timer_driven_scheduler_and_its_tunables() {
        for seed in 1..4 {
            let mut h = Harness::new(idler());
            h.random_workout(seed, 3000);
            assert!(h.fired > 0 && h.kicks > 0, "seed {seed}: timers used");
        }
    }
}
