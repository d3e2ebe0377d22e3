//! Legacy single-queue `deadline` (block/deadline-iosched.c, 4.x; removed in 5.0).
//!
//! Per direction: a sector-sorted tree and a FIFO whose entries carry a
//! deadline (`fifo_time = jiffies + expire[dir]`). Requests are dispatched in
//! batches of up to `fifo_batch` that sweep upwards in sector order; expiry is
//! checked only when a batch starts, and only the FIFO head of the chosen
//! direction. Reads are preferred, but at most `writes_starved` read batches
//! in a row may be chosen while writes wait.
//!
//! It runs on the legacy core (block/legacy.rs): `deadline_dispatch_requests`
//! moves one request per call to the tail of the core's dispatch list
//! (`deadline_move_to_dispatch` → `elv_dispatch_add_tail`) whenever it holds
//! any, so a forced dispatch (`force`, a drain) needs nothing of its own:
//! the core calls it until it returns 0. Requeued requests go back to the
//! core's list, never to deadline.
//!
//! This file also holds the `iosched/` attributes shared with mq-deadline.

use super::sort_tree::{SortForest, SortTree};
use crate::block::elevator::{
    show_attrs, store_attr, Attr, AttrConv, AttrDefault, AttrParse, AttrRange, BioInfo, Elevator,
    MergeKind, SchedCtx, Tunable,
};
use crate::block::request::{flags, Op, RequestArena, RqId, RqList, NIL};
use crate::block::sysfs;
use crate::sim::time::{Ns, NS_PER_JIFFY};

pub(crate) const READ: usize = 0;
pub(crate) const WRITE: usize = 1;

// Defaults (deadline-iosched.c / mq-deadline.c): read_expire = HZ/2 (500 ms),
// write_expire = 5*HZ (5000 ms), writes_starved = 2, fifo_batch = 16,
// front_merges = 1.
pub(crate) const DEFAULT_READ_EXPIRE_MS: i32 = 500;
pub(crate) const DEFAULT_WRITE_EXPIRE_MS: i32 = 5000;
pub(crate) const DEFAULT_WRITES_STARVED: i32 = 2;
pub(crate) const DEFAULT_FIFO_BATCH: i32 = 16;

/// Fire time of a jiffy deadline, stored in `Request::fifo_time` as the
/// nanosecond start of that jiffy (the scheduler compares whole jiffies).
pub(crate) fn jiffy_to_ns(j: i64) -> Ns {
    (j.max(0) as u64) * NS_PER_JIFFY
}

/// Jiffy count held in `Request::fifo_time`.
pub(crate) fn ns_to_jiffy(ns: Ns) -> i64 {
    (ns / NS_PER_JIFFY) as i64
}

// ---------------------------------------------------------------------------
// iosched/ attributes shared by both deadline flavours. Each flavour builds
// its table from these with its own parser (legacy simple_strtol, v6.x
// kstrtoint) and its own fields; the names, units, ranges and help are here.
// ---------------------------------------------------------------------------

const INT_MIN: i128 = i32::MIN as i128;
const INT_MAX: i128 = i32::MAX as i128;

type Get<S> = fn(&S) -> i128;
type Set<S> = fn(&mut S, i128) -> Result<(), String>;

/// `read_expire`: STORE_FUNCTION(..., 0, INT_MAX, 1) — clamp, ms → jiffies.
pub(crate) const fn read_expire_attr<S>(parse: AttrParse, get: Get<S>, set: Set<S>) -> Attr<S> {
    Attr {
        name: "read_expire",
        unit: "ms",
        help: "deadline added to a read's insertion time; expiry is checked when a batch starts",
        default: AttrDefault::Value(DEFAULT_READ_EXPIRE_MS as i128),
        parse,
        range: AttrRange::Clamp(0, INT_MAX),
        conv: AttrConv::MsecsAsJiffies,
        get,
        set,
    }
}

/// `write_expire`: as read_expire.
pub(crate) const fn write_expire_attr<S>(parse: AttrParse, get: Get<S>, set: Set<S>) -> Attr<S> {
    Attr {
        name: "write_expire",
        unit: "ms",
        help: "deadline added to a write's insertion time",
        default: AttrDefault::Value(DEFAULT_WRITE_EXPIRE_MS as i128),
        parse,
        range: AttrRange::Clamp(0, INT_MAX),
        conv: AttrConv::MsecsAsJiffies,
        get,
        set,
    }
}

/// `writes_starved`: STORE_FUNCTION(..., INT_MIN, INT_MAX, 0).
pub(crate) const fn writes_starved_attr<S>(parse: AttrParse, get: Get<S>, set: Set<S>) -> Attr<S> {
    Attr {
        name: "writes_starved",
        unit: "batches",
        help: "read batches that may be chosen in a row while writes wait",
        default: AttrDefault::Value(DEFAULT_WRITES_STARVED as i128),
        parse,
        range: AttrRange::Clamp(INT_MIN, INT_MAX),
        conv: AttrConv::Plain,
        get,
        set,
    }
}

/// `front_merges`: STORE_FUNCTION(..., 0, 1, 0).
pub(crate) const fn front_merges_attr<S>(parse: AttrParse, get: Get<S>, set: Set<S>) -> Attr<S> {
    Attr {
        name: "front_merges",
        unit: "bool",
        help: "look up front merges in the sort tree (0 = only hint/back merges)",
        default: AttrDefault::Value(1),
        parse,
        range: AttrRange::Clamp(0, 1),
        conv: AttrConv::Plain,
        get,
        set,
    }
}

/// `fifo_batch`: STORE_FUNCTION(..., 0, INT_MAX, 0).
pub(crate) const fn fifo_batch_attr<S>(parse: AttrParse, get: Get<S>, set: Set<S>) -> Attr<S> {
    Attr {
        name: "fifo_batch",
        unit: "requests",
        help: "requests per sector-ordered batch; 1 = FCFS by deadline",
        default: AttrDefault::Value(DEFAULT_FIFO_BATCH as i128),
        parse,
        range: AttrRange::Clamp(0, INT_MAX),
        conv: AttrConv::Plain,
        get,
        set,
    }
}

// ---------------------------------------------------------------------------
// Per-request bookkeeping in `Request::elv[1]`.
// ---------------------------------------------------------------------------

/// Not inside the scheduler.
const LOC_NONE: u64 = 0;
/// In the sort tree and FIFO of its direction.
const LOC_SORTED: u64 = 2;

fn loc(rqs: &RequestArena, id: RqId) -> (u64, usize) {
    let w = rqs[id].elv[1];
    (w & 0xff, ((w >> 8) & 1) as usize)
}

fn set_loc(rqs: &mut RequestArena, id: RqId, l: u64, dir: usize) {
    rqs[id].elv[1] = l | ((dir as u64) << 8);
}

/// Legacy deadline.
pub struct Deadline {
    forest: SortForest,
    sort: [SortTree; 2],
    fifo: [RqList; 2],
    /// Next request in sector order after the last dispatched one; at most
    /// one direction is set.
    next_rq: [RqId; 2],
    batching: u32,
    starved: u32,
    /// End sector of the last dispatched request (informational).
    pub last_sector: u64,
    /// Expire times in jiffies.
    fifo_expire: [i32; 2],
    fifo_batch: i32,
    writes_starved: i32,
    front_merges: i32,
}

impl Default for Deadline {
    fn default() -> Self {
        Deadline::new()
    }
}

impl Deadline {
    pub fn new() -> Deadline {
        Deadline {
            forest: SortForest::new(),
            sort: [SortTree::new(0), SortTree::new(1)],
            fifo: [RqList::new(), RqList::new()],
            next_rq: [NIL; 2],
            batching: 0,
            starved: 0,
            last_sector: 0,
            fifo_expire: [
                sysfs::msecs_to_jiffies(DEFAULT_READ_EXPIRE_MS as i64) as i32,
                sysfs::msecs_to_jiffies(DEFAULT_WRITE_EXPIRE_MS as i64) as i32,
            ],
            fifo_batch: DEFAULT_FIFO_BATCH,
            writes_starved: DEFAULT_WRITES_STARVED,
            front_merges: 1,
        }
    }

    /// Number of requests queued.
    pub fn queued(&self) -> u32 {
        self.fifo[READ].len + self.fifo[WRITE].len
    }

    /// Sort-order successor (`deadline_latter_request`).
    fn latter(&self, id: RqId) -> RqId {
        self.forest.next(id).unwrap_or(NIL)
    }

    /// `deadline_remove_request`: off the FIFO and the tree; a `next_rq`
    /// pointing at it advances to its successor first.
    fn remove_sorted(&mut self, rqs: &mut RequestArena, id: RqId, dir: usize) {
        self.fifo[dir].remove(rqs, id);
        if self.next_rq[dir] == id {
            self.next_rq[dir] = self.latter(id);
        }
        self.forest.remove(&mut self.sort[dir], id);
        set_loc(rqs, id, LOC_NONE, 0);
    }

    /// Take `id` out of whatever structure holds it.
    fn unlink(&mut self, rqs: &mut RequestArena, id: RqId) {
        if let (LOC_SORTED, dir) = loc(rqs, id) {
            self.remove_sorted(rqs, id, dir);
        }
    }

    /// `deadline_check_fifo`: FIFO head of `dir` expired (`time_after_eq(jiffies, fifo_time)`).
    fn fifo_expired(&self, rqs: &RequestArena, dir: usize, now_j: i64) -> bool {
        match self.fifo[dir].front() {
            Some(h) => now_j >= ns_to_jiffy(rqs[h].fifo_time),
            None => false,
        }
    }

    /// `deadline_move_request`: remember the successor as the next batch
    /// candidate, then take the request off the tree and FIFO.
    fn move_request(&mut self, rqs: &mut RequestArena, id: RqId) {
        let dir = loc(rqs, id).1;
        self.next_rq = [NIL; 2];
        self.next_rq[dir] = self.latter(id);
        self.last_sector = rqs[id].end_sector();
        self.remove_sorted(rqs, id, dir);
    }
}

/// deadline_attrs order: read_expire, write_expire, writes_starved,
/// front_merges, fifo_batch (deadline-iosched.c, 4.x). The 4.x store path
/// parses with simple_strtol.
const DEADLINE_ATTRS: &[Attr<Deadline>] = &[
    read_expire_attr(
        AttrParse::SimpleStrtolInt,
        |s| s.fifo_expire[READ] as i128,
        |s, v| {
            s.fifo_expire[READ] = v as i32;
            Ok(())
        },
    ),
    write_expire_attr(
        AttrParse::SimpleStrtolInt,
        |s| s.fifo_expire[WRITE] as i128,
        |s, v| {
            s.fifo_expire[WRITE] = v as i32;
            Ok(())
        },
    ),
    writes_starved_attr(
        AttrParse::SimpleStrtolInt,
        |s| s.writes_starved as i128,
        |s, v| {
            s.writes_starved = v as i32;
            Ok(())
        },
    ),
    front_merges_attr(
        AttrParse::SimpleStrtolInt,
        |s| s.front_merges as i128,
        |s, v| {
            s.front_merges = v as i32;
            Ok(())
        },
    ),
    fifo_batch_attr(
        AttrParse::SimpleStrtolInt,
        |s| s.fifo_batch as i128,
        |s, v| {
            s.fifo_batch = v as i32;
            Ok(())
        },
    ),
];

impl Deadline {
    /// `deadline_dispatch_requests` up to the move: continue the batch, or
    /// choose a direction and where to start; the chosen request leaves the
    /// tree and FIFO (`deadline_move_request`).
    fn select(&mut self, ctx: &mut SchedCtx) -> Option<RqId> {
        let now_j = ctx.jiffies() as i64;
        let reads = !self.fifo[READ].is_empty();
        let writes = !self.fifo[WRITE].is_empty();

        // Batches are reads XOR writes: continue the current one.
        let cont = if self.next_rq[WRITE] != NIL {
            self.next_rq[WRITE]
        } else {
            self.next_rq[READ]
        };
        // batching is unsigned, fifo_batch a non-negative int.
        let rq = if cont != NIL && self.batching < self.fifo_batch as u32 {
            cont
        } else {
            // Choose a direction. `starved++ >= writes_starved` compares an
            // unsigned counter with the int tunable converted to unsigned.
            let dir = if reads {
                let s = self.starved;
                let starve_writes = writes && {
                    self.starved = self.starved.wrapping_add(1);
                    s >= self.writes_starved as u32
                };
                if starve_writes {
                    WRITE
                } else {
                    READ
                }
            } else if writes {
                WRITE
            } else {
                return None;
            };
            if dir == WRITE {
                self.starved = 0;
            }
            // Restart from the oldest request when its deadline passed or
            // nothing lies above the sweep position in this direction.
            let pick = if self.fifo_expired(ctx.rqs, dir, now_j) || self.next_rq[dir] == NIL {
                self.fifo[dir].front()?
            } else {
                self.next_rq[dir]
            };
            self.batching = 0;
            pick
        };
        self.batching += 1;
        self.move_request(ctx.rqs, rq);
        Some(rq)
    }
}

impl Elevator for Deadline {
    fn name(&self) -> &'static str {
        "deadline"
    }

    fn tunables(&self) -> Vec<Tunable> {
        show_attrs(self, DEADLINE_ATTRS)
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        store_attr(self, "deadline", DEADLINE_ATTRS, name, value)
    }

    fn prepare_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        ctx.rqs[rq].elv[1] = LOC_NONE;
    }

    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool) {
        // The legacy core puts front and requeued requests on its own list.
        debug_assert!(!at_head, "the legacy core never inserts at head");
        // Defensive: a request is never in two places.
        self.unlink(ctx.rqs, rq);
        let dir = ctx.rqs[rq].op.dir();
        // deadline_add_request: tree, then fifo_time = jiffies + expire, FIFO tail.
        let sector = ctx.rqs[rq].sector;
        self.forest.insert(&mut self.sort[dir], rq, sector);
        let deadline = ctx.jiffies() as i64 + self.fifo_expire[dir] as i64;
        ctx.rqs[rq].fifo_time = jiffy_to_ns(deadline);
        self.fifo[dir].push_back(ctx.rqs, rq);
        set_loc(ctx.rqs, rq, LOC_SORTED, dir);
    }

    fn dispatch_legacy(&mut self, ctx: &mut SchedCtx, _force: bool) -> u32 {
        // deadline_dispatch_requests ignores `force`: it moves a request
        // whenever it holds one.
        match self.select(ctx) {
            Some(rq) => {
                // deadline_move_to_dispatch: off tree and FIFO, to the tail.
                ctx.dispatch_add_tail(rq);
                1
            }
            None => 0,
        }
    }

    fn has_work(&self, _hctx: u16) -> bool {
        !self.fifo[READ].is_empty() || !self.fifo[WRITE].is_empty()
    }

    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        // Nothing to account; never leave a freed request linked.
        self.unlink(ctx.rqs, rq);
    }

    fn request_merge(&self, ctx: &SchedCtx, bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        // deadline_merge: front-merge lookup by the bio's end sector in the
        // tree of its direction, only with front_merges set.
        if self.front_merges == 0 {
            return None;
        }
        let dir = bio.op.dir();
        let rq = self.forest.find(&self.sort[dir], bio.end_sector())?;
        bio_merge_ok(ctx.rqs, rq, bio, false).then_some((rq, MergeKind::Front))
    }

    fn request_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, kind: MergeKind) {
        // Front merge changed the start sector: reposition in the tree.
        if kind == MergeKind::Front {
            if let (LOC_SORTED, dir) = loc(ctx.rqs, rq) {
                let sector = ctx.rqs[rq].sector;
                self.forest.rekey(&mut self.sort[dir], rq, sector);
            }
        }
    }

    fn requests_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, next: RqId) {
        // If next expires earlier, rq takes its FIFO position and fifo_time
        // (deadline_merged_requests); then next is forgotten.
        let (lr, dr) = loc(ctx.rqs, rq);
        let (ln, dn) = loc(ctx.rqs, next);
        if lr == LOC_SORTED && ln == LOC_SORTED && dr == dn {
            let (tn, tr) = (ctx.rqs[next].fifo_time, ctx.rqs[rq].fifo_time);
            if ns_to_jiffy(tn) < ns_to_jiffy(tr) {
                self.fifo[dr].remove(ctx.rqs, rq);
                self.fifo[dr].insert_after(ctx.rqs, next, rq);
                ctx.rqs[rq].fifo_time = tn;
            }
        }
        self.unlink(ctx.rqs, next);
    }

    fn next_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        match loc(ctx.rqs, rq) {
            (LOC_SORTED, _) => self.forest.next(rq),
            _ => None,
        }
    }

    fn former_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        match loc(ctx.rqs, rq) {
            (LOC_SORTED, _) => self.forest.prev(rq),
            _ => None,
        }
    }
}

/// The part of `elv_bio_merge_ok` a scheduler can judge: the request is still
/// mergeable and has the bio's op (`blk_rq_merge_ok`); with `same_prio` also
/// the same I/O priority value (a v6.17 `blk_rq_merge_ok` rule; 4.x had no
/// priority check). The core applies size/segment/cgroup limits afterwards.
pub(crate) fn bio_merge_ok(rqs: &RequestArena, rq: RqId, bio: &BioInfo, same_prio: bool) -> bool {
    let r = &rqs[rq];
    let unmergeable =
        flags::NOMERGE | flags::FUA | flags::PREFLUSH | flags::STARTED | flags::PASSTHROUGH;
    r.flags & unmergeable == 0
        && bio.flags & (flags::NOMERGE | flags::FUA | flags::PREFLUSH) == 0
        && r.op == bio.op
        && r.op != Op::Flush
        && (!same_prio || r.ioprio == bio.ioprio)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::Harness;

    fn h() -> Harness<Deadline> {
        Harness::legacy(Deadline::new())
    }

    #[test]
    fn attribute_table_is_consistent() {
        crate::block::elevator::check_attr_table(&mut Deadline::new(), DEADLINE_ATTRS);
    }

    #[test]
    fn tunables_order_defaults_and_round_trip() {
        let mut s = Deadline::new();
        let t = s.tunables();
        let names: Vec<_> = t.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "read_expire",
                "write_expire",
                "writes_starved",
                "front_merges",
                "fifo_batch"
            ]
        );
        let vals: Vec<_> = t.iter().map(|t| t.value.as_str()).collect();
        assert_eq!(vals, ["500", "5000", "2", "1", "16"]);
        assert!(t.iter().all(|t| t.value == t.default));
        s.set_tunable("read_expire", "10\n").unwrap();
        // 10 ms = 2.5 jiffies, rounded up to 3 jiffies = 12 ms at HZ=250.
        assert_eq!(s.tunables()[0].value, "12");
        s.set_tunable("write_expire", "-7").unwrap();
        assert_eq!(s.tunables()[1].value, "0");
        s.set_tunable("front_merges", "5").unwrap();
        assert_eq!(s.tunables()[3].value, "1");
        s.set_tunable("writes_starved", "-3").unwrap();
        assert_eq!(s.tunables()[2].value, "-3");
        s.set_tunable("fifo_batch", "-1").unwrap();
        assert_eq!(s.tunables()[4].value, "0");
        assert!(s
            .set_tunable("fifo_batch", "lots")
            .unwrap_err()
            .contains("invalid value"));
        let e = s.set_tunable("quantum", "1").unwrap_err();
        assert!(e.contains("read_expire") && e.contains("fifo_batch"));
    }

    /// fifo_batch=2: a (t=0, sector 100); at 400 ms e@50, b@500, c@600, d@700.
    /// Returns the dispatch order when `wait_ms` passes after the first batch.
    fn expiry_scenario(wait_ms: u64) -> (Vec<RqId>, [RqId; 5]) {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "2").unwrap();
        let a = h.read(100, 8);
        h.advance_ms(400);
        let e = h.read(50, 8);
        let b = h.read(500, 8);
        let c = h.read(600, 8);
        let d = h.read(700, 8);
        let mut order = vec![h.dispatch().unwrap(), h.dispatch().unwrap()];
        h.advance_ms(wait_ms);
        order.extend(h.dispatch_all());
        (order, [a, b, c, d, e])
    }

    #[test]
    fn expired_request_is_served_first() {
        // No expiry: first batch a, b (sweep); next batch starts at next_rq c
        // and sweeps on; e (below) is picked up when the sweep ends.
        let (order, [a, b, c, d, e]) = expiry_scenario(0);
        assert_eq!(order, vec![a, b, c, d, e]);
        // e inserted at 400 ms expires at 900 ms (125 jiffies later). At
        // 1000 ms the new batch starts from the expired FIFO head e instead
        // of next_rq c, then sweeps upward from e.
        let (order, [a, b, c, d, e]) = expiry_scenario(600);
        assert_eq!(order, vec![a, b, e, c, d]);
    }

    #[test]
    fn next_rq_is_a_snapshot_of_the_successor() {
        let mut h = h();
        let a = h.read(1000, 8);
        let b = h.read(10, 8);
        assert_eq!(h.dispatch(), Some(a));
        // Nothing was above a when it left, so next_rq is empty and a request
        // inserted above it later does not continue the batch (legacy
        // next_rq, unlike mq-deadline's latest_pos): the FIFO head b wins.
        let c = h.read(2000, 8);
        assert_eq!(h.dispatch_all(), vec![b, c]);
    }

    #[test]
    fn batch_sweeps_in_sector_order_without_expiry_checks() {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "3").unwrap();
        // FIFO order 40, 10, 20, 30, 50; the first is the FIFO head.
        let r40 = h.read(40, 8);
        let r10 = h.read(10, 8);
        let r20 = h.read(20, 8);
        let r30 = h.read(30, 8);
        let r50 = h.read(50, 8);
        let r60 = h.read(60, 8);
        assert_eq!(h.dispatch(), Some(r40));
        // Everything has expired now, but the batch continues by sector.
        h.advance_ms(1000);
        assert_eq!(h.dispatch(), Some(r50));
        assert_eq!(h.dispatch(), Some(r60));
        // Batch of 3 done: new batch, FIFO head r10 expired → r10, then sweep.
        assert_eq!(h.dispatch(), Some(r10));
        assert_eq!(h.dispatch(), Some(r20));
        assert_eq!(h.dispatch(), Some(r30));
    }

    #[test]
    fn fifo_batch_one_is_fcfs_by_deadline() {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "1").unwrap();
        let ids: Vec<RqId> = [70u64, 10, 50, 30, 90]
            .iter()
            .map(|&s| {
                let id = h.read(s, 8);
                h.advance_ms(600); // each older one expires before the next
                id
            })
            .collect();
        let order: Vec<RqId> = std::iter::from_fn(|| h.dispatch()).collect();
        assert_eq!(order, ids);
    }

    /// Fill both directions, dispatch everything, report each request's dir.
    fn batch_pattern(writes_starved: &str) -> String {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "2").unwrap();
        h.sched
            .set_tunable("writes_starved", writes_starved)
            .unwrap();
        for i in 0..8 {
            h.read(1000 + i * 8, 8);
            h.write(9000 + i * 8, 8);
        }
        let order = h.dispatch_all();
        order
            .iter()
            .map(|&id| if h.rqs[id].op == Op::Read { 'R' } else { 'W' })
            .collect()
    }

    #[test]
    fn writes_starved_two_gives_read_read_write_batches() {
        assert_eq!(batch_pattern("2"), "RRRRWWRRRRWWWWWW");
    }

    #[test]
    fn writes_starved_one_alternates_zero_prefers_writes() {
        // `starved++ >= writes_starved` with starved reset to 0 on every
        // write batch: 1 alternates, 0 picks writes whenever they wait.
        assert_eq!(batch_pattern("1"), "RRWWRRWWRRWWRRWW");
        assert_eq!(batch_pattern("0"), "WWWWWWWWRRRRRRRR");
        // Negative values compare as huge unsigned: writes only when no reads.
        assert_eq!(batch_pattern("-1"), "RRRRRRRRWWWWWWWW");
    }

    #[test]
    fn front_merge_lookup_honours_front_merges() {
        let mut h = h();
        let r = h.write(100, 8);
        let bio = h.bio(Op::Write, 92, 8);
        let found = h.with_ctx(|s, c| s.request_merge(c, &bio));
        assert_eq!(found, Some((r, MergeKind::Front)));
        // Wrong direction or non-adjacent: nothing.
        let rbio = h.bio(Op::Read, 92, 8);
        assert_eq!(h.with_ctx(|s, c| s.request_merge(c, &rbio)), None);
        let far = h.bio(Op::Write, 90, 8);
        assert_eq!(h.with_ctx(|s, c| s.request_merge(c, &far)), None);
        h.sched.set_tunable("front_merges", "0").unwrap();
        assert_eq!(h.with_ctx(|s, c| s.request_merge(c, &bio)), None);
    }

    #[test]
    fn front_merge_rekeys_sort_tree() {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "4").unwrap();
        let a = h.read(50, 8);
        let b = h.read(100, 8);
        let c = h.read(60, 8);
        // Bio [40,50) front-merges into a... move b down to 20 instead.
        h.rqs[b].sector = 20;
        h.rqs[b].nr_sectors = 88;
        h.with_ctx(|s, c| s.request_merged(c, b, MergeKind::Front));
        assert_eq!(h.with_ctx(|s, cx| s.former_request(cx, a)), Some(b));
        assert_eq!(h.with_ctx(|s, cx| s.next_request(cx, a)), Some(c));
        // FIFO head a, then sweep upward from a: c; b is below.
        assert_eq!(h.dispatch(), Some(a));
        assert_eq!(h.dispatch(), Some(c));
        assert_eq!(h.dispatch(), Some(b));
    }

    #[test]
    fn requests_merged_inherits_earlier_deadline() {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "1").unwrap();
        let next = h.read(108, 8); // older: earlier deadline
        h.advance_ms(100);
        let other = h.read(500, 8);
        h.advance_ms(100);
        let rq = h.read(100, 8); // newest
                                 // Core merges next into rq (rq grows to cover [100,116)).
        h.rqs[rq].nr_sectors = 16;
        h.merge_requests(rq, next);
        assert_eq!(h.rqs[rq].fifo_time, jiffy_to_ns(125));
        // rq now sits at next's FIFO position, ahead of `other`.
        h.advance_ms(400);
        assert_eq!(h.dispatch(), Some(rq));
        assert_eq!(h.dispatch(), Some(other));
        assert_eq!(h.dispatch(), None);
    }

    #[test]
    fn merge_of_never_inserted_request_is_harmless() {
        let mut h = h();
        let rq = h.write(100, 8);
        let loose = h.alloc(Op::Write, 108, 8);
        h.merge_requests(rq, loose);
        assert_eq!(h.dispatch(), Some(rq));
        assert_eq!(h.dispatch(), None);
    }

    #[test]
    fn next_rq_advances_when_merged_away() {
        let mut h = h();
        let a = h.read(10, 8);
        let b = h.read(18, 8);
        let c = h.read(40, 8);
        assert_eq!(h.dispatch(), Some(a)); // next_rq = b
                                           // b is merged into something else and disappears.
        let host = h.read(2, 8);
        h.merge_requests(host, b);
        assert_eq!(h.dispatch(), Some(c), "sweep continues after b");
        assert_eq!(h.dispatch(), Some(host));
    }

    #[test]
    fn requeued_requests_go_to_the_core_list_not_to_deadline() {
        let mut h = h();
        let a = h.read(10, 8);
        let b = h.read(18, 8);
        let c = h.read(900, 8);
        assert_eq!(h.dispatch(), Some(a));
        assert_eq!(h.dispatch(), Some(b));
        // The device refuses b: it goes back to the head of the core's
        // list, deadline's batch state is untouched (next_rq is still c).
        h.requeue(b);
        assert_eq!(h.sched.queued(), 1);
        assert_eq!(h.dispatch(), Some(b));
        assert_eq!(h.dispatch(), Some(c));
        assert!(!h.sched.has_work(0));
    }

    #[test]
    fn one_request_moves_per_call_to_the_tail() {
        let mut h = h();
        let a = h.read(10, 8);
        let b = h.read(5000, 8);
        // The device is full: a waits at the head, started; b stays in
        // deadline and stays mergeable.
        assert_eq!(h.peek(), Some(a));
        assert_eq!(h.peek(), Some(a));
        assert_eq!(h.sched.queued(), 1);
        assert_eq!(h.listed_order(), vec![a]);
        assert_eq!(h.dispatch(), Some(a));
        assert_eq!(h.dispatch(), Some(b));
    }

    #[test]
    fn a_forced_drain_moves_everything_in_dispatch_order() {
        // Without force, the same state dispatches in the same order: force
        // only makes the core keep calling.
        let fill = |h: &mut Harness<Deadline>| -> Vec<RqId> {
            h.sched.set_tunable("fifo_batch", "2").unwrap();
            let mut v = Vec::new();
            for i in 0..4 {
                v.push(h.read(1000 + i * 8, 8));
                v.push(h.write(9000 + i * 8, 8));
            }
            v
        };
        let mut h1 = h();
        fill(&mut h1);
        let one_by_one: Vec<u64> = h1
            .dispatch_all()
            .iter()
            .map(|&i| h1.rqs[i].sector)
            .collect();
        let mut h2 = h();
        fill(&mut h2);
        assert_eq!(h2.force_drain(), 8);
        assert_eq!(h2.sched.queued(), 0);
        let drained: Vec<u64> = h2
            .listed_order()
            .iter()
            .map(|&i| h2.rqs[i].sector)
            .collect();
        assert_eq!(drained, one_by_one);
        // They leave in list order; nothing is left behind.
        assert_eq!(h2.dispatch_all().len(), 8);
        assert_eq!(h2.pull(true), 0);
    }

    #[test]
    fn random_sequences_never_lose_requests() {
        let mut h = h();
        h.random_workout(7, 4000);
        assert_eq!(h.sched.queued(), 0);
    }
}
