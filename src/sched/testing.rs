//! Test harness for schedulers: a request arena, queue facts and a clock, and
//! helpers that play the block layer's side of the contract (allocate →
//! prepare → insert → dispatch → finish, request merges) at chosen times.

use super::{BioInfo, Elevator, QueueInfo, SchedCtx};
use crate::block::request::{flags, Op, RequestArena, RqId};
use crate::cgroup::{CgroupTree, IoPrio, IoPrioClass};
use crate::sim::time::{Ns, NS_PER_MS};

pub struct Harness<E: Elevator> {
    pub sched: E,
    pub rqs: RequestArena,
    pub q: QueueInfo,
    pub cgroups: CgroupTree,
    pub timers: Vec<(Ns, u64)>,
    pub now: Ns,
    /// Dispatched, not yet finished.
    pub inflight: Vec<RqId>,
    /// Inserted and neither dispatched nor merged away (harness view).
    pub inside: Vec<RqId>,
}

impl<E: Elevator> Harness<E> {
    pub fn new(sched: E) -> Harness<E> {
        let q = QueueInfo {
            nr_hw_queues: 1,
            queue_depth: 32,
            nr_requests: 64,
            rotational: true,
            nomerges: 0,
            max_sectors: 2560,
        };
        Harness::with_queue(sched, q)
    }

    pub fn with_queue(mut sched: E, q: QueueInfo) -> Harness<E> {
        sched.init(&q);
        Harness {
            sched,
            rqs: RequestArena::new(),
            q,
            cgroups: CgroupTree::default(),
            timers: Vec::new(),
            now: 0,
            inflight: Vec::new(),
            inside: Vec::new(),
        }
    }

    /// Run `f` with the scheduler and a context at the current time.
    pub fn with_ctx<R>(&mut self, f: impl FnOnce(&mut E, &mut SchedCtx) -> R) -> R {
        let mut ctx = SchedCtx {
            now: self.now,
            rqs: &mut self.rqs,
            q: &self.q,
            cgroups: &self.cgroups,
            timers: &mut self.timers,
            run_queue: false,
        };
        f(&mut self.sched, &mut ctx)
    }

    pub fn advance_ms(&mut self, ms: u64) {
        self.now += ms * NS_PER_MS;
    }

    /// Allocate and prepare a request (not inserted).
    pub fn alloc_prio(&mut self, op: Op, sector: u64, nr: u32, class: IoPrioClass) -> RqId {
        let id = self.rqs.alloc();
        {
            let r = &mut self.rqs[id];
            r.op = op;
            r.sector = sector;
            r.nr_sectors = nr;
            r.flags = flags::USE_SCHED | if op == Op::Read { flags::SYNC } else { 0 };
            r.ioprio = IoPrio { class, level: 4 };
            r.start_ns = self.now;
        }
        self.with_ctx(|s, c| s.prepare_request(c, id));
        id
    }

    pub fn alloc(&mut self, op: Op, sector: u64, nr: u32) -> RqId {
        self.alloc_prio(op, sector, nr, IoPrioClass::None)
    }

    /// Insert an allocated request as the core does.
    pub fn insert(&mut self, id: RqId, at_head: bool) {
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

    /// One dispatch call; the returned request is marked started and in flight.
    pub fn dispatch(&mut self) -> Option<RqId> {
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

    /// Complete and free a dispatched request.
    pub fn finish(&mut self, id: RqId) {
        if let Some(p) = self.inflight.iter().position(|&x| x == id) {
            self.inflight.swap_remove(p);
        }
        self.with_ctx(|s, c| {
            s.completed_request(c, id);
            s.finish_request(c, id);
        });
        self.rqs.free(id);
    }

    pub fn finish_all(&mut self) {
        while let Some(&id) = self.inflight.first() {
            self.finish(id);
        }
    }

    /// Core request↔request merge: `next` is absorbed by `rq` and freed.
    pub fn merge_requests(&mut self, rq: RqId, next: RqId) {
        self.with_ctx(|s, c| s.requests_merged(c, rq, next));
        if let Some(p) = self.inside.iter().position(|&x| x == next) {
            self.inside.swap_remove(p);
        }
        self.rqs[next].flags &= !flags::IN_ELV;
        self.with_ctx(|s, c| s.finish_request(c, next));
        self.rqs.free(next);
    }

    pub fn bio(&self, op: Op, sector: u64, nr: u32) -> BioInfo {
        BioInfo {
            op,
            sector,
            nr_sectors: nr,
            flags: 0,
            ioprio: IoPrio {
                class: IoPrioClass::None,
                level: 4,
            },
            cgroup: 0,
            pid: 0,
            cpu: 0,
            hctx: 0,
        }
    }

    /// Random call sequences within the contract; checks that every request
    /// handed back was inside, that neighbour/merge look-ups only name
    /// requests inside, and that draining returns everything.
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
        for _ in 0..steps {
            match rnd(100) {
                0..=39 => {
                    let op = match rnd(10) {
                        0..=4 => Op::Read,
                        5..=8 => Op::Write,
                        _ => Op::Discard,
                    };
                    let class = classes[rnd(4) as usize];
                    let id = self.alloc_prio(op, rnd(256) * 8, 8, class);
                    self.insert(id, rnd(10) == 0);
                }
                40..=64 => {
                    self.dispatch();
                }
                65..=79 => {
                    if !self.inflight.is_empty() {
                        let id = self.inflight[rnd(self.inflight.len() as u64) as usize];
                        self.finish(id);
                    }
                }
                80..=84 => {
                    if self.inside.len() >= 2 {
                        let a = self.inside[rnd(self.inside.len() as u64) as usize];
                        let b = self.inside[rnd(self.inside.len() as u64) as usize];
                        let (ra, rb) = (&self.rqs[a], &self.rqs[b]);
                        if a != b && ra.op == rb.op && ra.ioprio == rb.ioprio {
                            self.merge_requests(a, b);
                        }
                    } else if let Some(&a) = self.inside.first() {
                        // Insert merge: a new request absorbed before insertion.
                        let (op, s) = (self.rqs[a].op, self.rqs[a].end_sector());
                        let class = self.rqs[a].ioprio.class;
                        let loose = self.alloc_prio(op, s, 8, class);
                        self.merge_requests(a, loose);
                    }
                }
                85..=89 => {
                    if !self.inside.is_empty() {
                        let a = self.inside[rnd(self.inside.len() as u64) as usize];
                        let kind = if self.rqs[a].sector >= 8 && rnd(2) == 0 {
                            self.rqs[a].sector -= 8;
                            super::MergeKind::Front
                        } else {
                            super::MergeKind::Back
                        };
                        self.rqs[a].nr_sectors += 8;
                        self.with_ctx(|s, c| s.request_merged(c, a, kind));
                    }
                }
                90..=94 => {
                    if !self.inside.is_empty() {
                        let a = self.inside[rnd(self.inside.len() as u64) as usize];
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
                }
                95..=97 => self.advance_ms(rnd(400)),
                _ => {
                    let name = ["fifo_batch", "writes_starved", "front_merges"][rnd(3) as usize];
                    let v = rnd(6) as i64 - 1;
                    let _ = self.sched.set_tunable(name, &v.to_string());
                }
            }
            // has_work must say exactly whether anything is inside.
            assert_eq!(
                self.sched.has_work(0),
                !self.inside.is_empty(),
                "has_work disagrees"
            );
        }
        // Drain: whatever the scheduler holds must come out once in-flight
        // requests finish and time passes (aging, expiry).
        let mut idle_rounds = 0;
        while !self.inside.is_empty() && idle_rounds < 1000 {
            if self.dispatch().is_some() {
                idle_rounds = 0;
                continue;
            }
            idle_rounds += 1;
            self.finish_all();
            self.advance_ms(100);
        }
        assert!(self.inside.is_empty(), "requests stuck: {:?}", self.inside);
        assert!(!self.sched.has_work(0));
        self.finish_all();
        assert_eq!(self.rqs.live(), 0);
    }
}
