//! blk-mq `mq-deadline` as in v6.17 (block/mq-deadline.c).
//!
//! Three priority levels (RT, BE, IDLE) each with an at-head `dispatch` list,
//! per-direction sort trees and FIFOs and a per-direction sweep position
//! (`latest_pos`). Batching state (`last_dir`, `batching`, `starved`) is global.
//! Dispatch first runs an aging pass for BE/IDLE requests older than
//! `prio_aging_expire`, then serves levels in strict order: a lower level is
//! not served while a higher one has requests queued *or in flight*
//! (`queued = inserted - completed`). One instance serves every hardware queue.

use super::deadline::{
    bio_merge_ok, fifo_batch_attr, front_merges_attr, jiffy_to_ns, ns_to_jiffy, read_expire_attr,
    write_expire_attr, writes_starved_attr, DEFAULT_FIFO_BATCH, DEFAULT_READ_EXPIRE_MS,
    DEFAULT_WRITES_STARVED, DEFAULT_WRITE_EXPIRE_MS, READ, WRITE,
};
use super::sort_tree::{SortForest, SortTree};
use crate::block::elevator::{
    show_attrs, store_attr, Attr, AttrConv, AttrDefault, AttrParse, AttrRange, BioInfo, Elevator,
    MergeKind, QueueInfo, SchedCtx, Tunable,
};
use crate::block::request::{Op, RequestArena, RqId, RqList};
use crate::block::sysfs::msecs_to_jiffies;
use crate::cgroup::IoPrioClass;

/// prio_aging_expire default 10 * HZ = 10 s (mq-deadline.c).
pub const DEFAULT_PRIO_AGING_EXPIRE_MS: i32 = 10_000;

/// Priority levels (`enum dd_prio`).
pub const RT: usize = 0;
pub const BE: usize = 1;
pub const IDLE: usize = 2;
const LEVELS: usize = 3;

/// `ioprio_class_to_prio`: NONE→BE, RT→RT, BE→BE, IDLE→IDLE (class only).
pub fn class_to_level(class: IoPrioClass) -> usize {
    match class {
        IoPrioClass::Rt => RT,
        IoPrioClass::None | IoPrioClass::Be => BE,
        IoPrioClass::Idle => IDLE,
    }
}

/// Per-level counters (`struct io_stats_per_prio`; u32 that may wrap).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    pub inserted: u32,
    pub merged: u32,
    pub dispatched: u32,
    pub completed: u32,
}

#[derive(Clone, Copy, Debug)]
struct Level {
    /// At-head inserts (requeues, flush-sequence data), served first.
    dispatch: RqList,
    sort: [SortTree; 2],
    fifo: [RqList; 2],
    /// Start sector of the most recently dispatched request per direction.
    latest_pos: [u64; 2],
    stats: LevelStats,
}

// Per-request words:
// elv[0] = level + 1 once the request went through insert (`rq->elv.priv[0]`
//          in the kernel), 0 otherwise; finish_request counts completions
//          only for such requests.
// elv[1] = location | level << 8 | dir << 16.
const LOC_NONE: u64 = 0;
const LOC_DISPATCH: u64 = 1;
const LOC_SORTED: u64 = 2;

fn loc(rqs: &RequestArena, id: RqId) -> (u64, usize, usize) {
    let w = rqs[id].elv[1];
    (
        w & 0xff,
        (((w >> 8) & 0xff) as usize).min(LEVELS - 1),
        ((w >> 16) & 1) as usize,
    )
}

fn set_loc(rqs: &mut RequestArena, id: RqId, l: u64, level: usize, dir: usize) {
    rqs[id].elv[1] = l | (level as u64) << 8 | (dir as u64) << 16;
}

/// mq-deadline.
pub struct MqDeadline {
    levels: [Level; LEVELS],
    forest: SortForest,
    /// Direction of the latest batch; starts as WRITE (dd_init_sched).
    last_dir: usize,
    batching: u32,
    starved: u32,
    /// Expire times in jiffies.
    fifo_expire: [i32; 2],
    fifo_batch: i32,
    writes_starved: i32,
    front_merges: i32,
    async_depth: u32,
    /// In jiffies.
    prio_aging_expire: i32,
    /// `nr_requests` at the last init/depth update (async_depth's default).
    nr_requests: u32,
    /// What `dd_depth_updated` tells the tag bitmap (see `min_shallow_depth`);
    /// `u32::MAX` before 5.14, which had no `dd_limit_depth`.
    min_shallow: u32,
    /// Requests held in any list (has_work in O(1); equals `held()`).
    nr_held: u32,
}

impl Default for MqDeadline {
    fn default() -> Self {
        MqDeadline::new()
    }
}

impl MqDeadline {
    pub fn new() -> MqDeadline {
        let level = |l: u8| Level {
            dispatch: RqList::new(),
            sort: [SortTree::new(2 * l), SortTree::new(2 * l + 1)],
            fifo: [RqList::new(), RqList::new()],
            latest_pos: [0; 2],
            stats: LevelStats::default(),
        };
        MqDeadline {
            levels: [level(0), level(1), level(2)],
            forest: SortForest::new(),
            last_dir: WRITE,
            batching: 0,
            starved: 0,
            fifo_expire: [
                msecs_to_jiffies(DEFAULT_READ_EXPIRE_MS as i64) as i32,
                msecs_to_jiffies(DEFAULT_WRITE_EXPIRE_MS as i64) as i32,
            ],
            fifo_batch: DEFAULT_FIFO_BATCH,
            writes_starved: DEFAULT_WRITES_STARVED,
            front_merges: 1,
            async_depth: 0,
            prio_aging_expire: msecs_to_jiffies(DEFAULT_PRIO_AGING_EXPIRE_MS as i64) as i32,
            nr_requests: 0,
            min_shallow: u32::MAX,
            nr_held: 0,
        }
    }

    /// Counters of one level.
    pub fn stats(&self, level: usize) -> LevelStats {
        self.levels[level.min(LEVELS - 1)].stats
    }

    /// `dd_queued`: inserted − completed, which includes requests in flight.
    pub fn queued(&self, level: usize) -> u32 {
        let s = &self.levels[level].stats;
        s.inserted.wrapping_sub(s.completed)
    }

    /// `dd_owned_by_driver` (debugfs): dispatched + merged − completed.
    pub fn owned_by_driver(&self, level: usize) -> u32 {
        let s = &self.levels[level].stats;
        s.dispatched
            .wrapping_add(s.merged)
            .wrapping_sub(s.completed)
    }

    pub fn async_depth(&self) -> u32 {
        self.async_depth
    }

    /// Requests held right now (all levels).
    pub fn held(&self) -> u32 {
        self.levels
            .iter()
            .map(|l| l.dispatch.len + l.fifo[READ].len + l.fifo[WRITE].len)
            .sum()
    }

    /// Remove `id` from whatever list/tree holds it.
    fn unlink(&mut self, rqs: &mut RequestArena, id: RqId) {
        let (l, level, dir) = loc(rqs, id);
        let lv = &mut self.levels[level];
        match l {
            LOC_SORTED => {
                lv.fifo[dir].remove(rqs, id);
                self.forest.remove(&mut lv.sort[dir], id);
                self.nr_held -= 1;
            }
            LOC_DISPATCH => {
                lv.dispatch.remove(rqs, id);
                self.nr_held -= 1;
            }
            _ => {}
        }
        set_loc(rqs, id, LOC_NONE, 0, 0);
    }

    /// `started_after`: insertion time (fifo_time − CURRENT expire of its
    /// direction) later than `latest_start`. Signed jiffies, like time_after.
    fn started_after(&self, rqs: &RequestArena, id: RqId, latest_start: i64) -> bool {
        let dir = loc(rqs, id).2;
        let start = ns_to_jiffy(rqs[id].fifo_time) - self.fifo_expire[dir] as i64;
        start > latest_start
    }

    /// `deadline_from_pos` at the level's sweep position.
    fn next_from_pos(&self, level: usize, dir: usize) -> Option<RqId> {
        let lv = &self.levels[level];
        self.forest.lower_bound(&lv.sort[dir], lv.latest_pos[dir])
    }

    /// `dd_start_request`: sweep position and dispatched counter.
    fn start_request(&mut self, rqs: &mut RequestArena, id: RqId, level: usize, dir: usize) {
        let lv = &mut self.levels[level];
        lv.latest_pos[dir] = rqs[id].sector;
        lv.stats.dispatched = lv.stats.dispatched.wrapping_add(1);
    }

    /// `__dd_dispatch_request` for one level, refusing requests inserted
    /// after `latest_start` (jiffies).
    fn pick(
        &mut self,
        rqs: &mut RequestArena,
        level: usize,
        now_j: i64,
        latest_start: i64,
    ) -> Option<RqId> {
        let lv = &self.levels[level];
        if lv.dispatch.is_empty() && lv.fifo[READ].is_empty() && lv.fifo[WRITE].is_empty() {
            // Nothing queued at this level: the full walk below would find
            // nothing either and change no state.
            return None;
        }
        if let Some(rq) = self.levels[level].dispatch.front() {
            if self.started_after(rqs, rq, latest_start) {
                return None;
            }
            let dir = loc(rqs, rq).2;
            self.levels[level].dispatch.remove(rqs, rq);
            self.nr_held -= 1;
            set_loc(rqs, rq, LOC_NONE, 0, 0);
            self.start_request(rqs, rq, level, dir);
            return Some(rq);
        }

        // Batches are reads XOR writes: continue the current one in sector
        // order from the sweep position, without looking at deadlines.
        let cont = self.next_from_pos(level, self.last_dir);
        let (rq, dir) = match cont {
            Some(rq) if self.batching < self.fifo_batch as u32 => (rq, self.last_dir),
            _ => {
                let lv = &self.levels[level];
                let reads = !lv.fifo[READ].is_empty();
                let writes = !lv.fifo[WRITE].is_empty();
                let dir = if reads {
                    // `starved++ >= writes_starved`: unsigned counter against
                    // the int tunable converted to unsigned; only evaluated
                    // when writes are waiting.
                    let starve = writes && {
                        let s = self.starved;
                        self.starved = self.starved.wrapping_add(1);
                        s >= self.writes_starved as u32
                    };
                    if starve {
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
                let next = self.next_from_pos(level, dir);
                let head = self.levels[level].fifo[dir].front()?;
                // deadline_check_fifo: time_is_before_eq_jiffies(fifo_time).
                let expired = now_j >= ns_to_jiffy(rqs[head].fifo_time);
                let rq = match next {
                    Some(n) if !expired => n,
                    _ => head,
                };
                // These updates survive a refusal below (pitfall: side
                // effects of a refused pick).
                self.last_dir = dir;
                self.batching = 0;
                (rq, dir)
            }
        };
        if self.started_after(rqs, rq, latest_start) {
            return None;
        }
        self.batching += 1;
        let lv = &mut self.levels[level];
        lv.fifo[dir].remove(rqs, rq);
        self.forest.remove(&mut lv.sort[dir], rq);
        self.nr_held -= 1;
        set_loc(rqs, rq, LOC_NONE, 0, 0);
        self.start_request(rqs, rq, level, dir);
        Some(rq)
    }
}

/// deadline_attrs order in v6.17 mq-deadline.c. The store functions parse
/// with kstrtoint(page, 0) and clamp (STORE_INT / STORE_JIFFIES).
const MQ_DEADLINE_ATTRS: &[Attr<MqDeadline>] = &[
    read_expire_attr(
        AttrParse::Kstrtoint,
        |s| s.fifo_expire[READ] as i128,
        |s, v| {
            s.fifo_expire[READ] = v as i32;
            Ok(())
        },
    ),
    write_expire_attr(
        AttrParse::Kstrtoint,
        |s| s.fifo_expire[WRITE] as i128,
        |s, v| {
            s.fifo_expire[WRITE] = v as i32;
            Ok(())
        },
    ),
    writes_starved_attr(
        AttrParse::Kstrtoint,
        |s| s.writes_starved as i128,
        |s, v| {
            s.writes_starved = v as i32;
            Ok(())
        },
    ),
    front_merges_attr(
        AttrParse::Kstrtoint,
        |s| s.front_merges as i128,
        |s, v| {
            s.front_merges = v as i32;
            Ok(())
        },
    ),
    Attr {
        name: "async_depth",
        unit: "requests",
        help: "scheduler tags usable by anything but reads (shallow depth); reset to nr_requests when nr_requests changes",
        // dd_depth_updated (v6.10+): async_depth = nr_requests.
        default: AttrDefault::NrRequests,
        parse: AttrParse::Kstrtoint,
        // STORE_INT(deadline_async_depth_store, &dd->async_depth, 1, INT_MAX).
        range: AttrRange::Clamp(1, i32::MAX as i128),
        conv: AttrConv::Plain,
        // A u32 printed with "%d".
        get: |s| s.async_depth as i32 as i128,
        set: |s, v| {
            s.async_depth = v as u32;
            Ok(())
        },
    },
    fifo_batch_attr(
        AttrParse::Kstrtoint,
        |s| s.fifo_batch as i128,
        |s, v| {
            s.fifo_batch = v as i32;
            Ok(())
        },
    ),
    Attr {
        name: "prio_aging_expire",
        unit: "ms",
        help: "BE/IDLE requests older than this are served despite higher-priority backlog",
        default: AttrDefault::Value(DEFAULT_PRIO_AGING_EXPIRE_MS as i128),
        parse: AttrParse::Kstrtoint,
        range: AttrRange::Clamp(0, i32::MAX as i128),
        conv: AttrConv::MsecsAsJiffies,
        get: |s| s.prio_aging_expire as i128,
        set: |s, v| {
            s.prio_aging_expire = v as i32;
            Ok(())
        },
    },
];

impl Elevator for MqDeadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }

    fn init(&mut self, q: &QueueInfo) {
        // dd_init_sched ends with dd_depth_updated.
        self.depth_updated(q);
    }

    fn tunables(&self) -> Vec<Tunable> {
        show_attrs(self, MQ_DEADLINE_ATTRS)
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        store_attr(self, "mq-deadline", MQ_DEADLINE_ATTRS, name, value)
    }

    fn depth_updated(&mut self, q: &QueueInfo) {
        // dd_depth_updated (v6.10+): async_depth = nr_requests, overwriting a
        // user-set value; minimum shallow depth 1.
        self.nr_requests = q.nr_requests;
        self.async_depth = q.nr_requests.max(1);
        // The smallest shallow depth it may ask for: 1 from v6.10 (the
        // sysfs async_depth may be that low); 5.14-6.9 the default async
        // depth, ¾ of nr_requests (commit "mq-deadline: Reserve 25% of
        // scheduler tags for synchronous requests"); before 5.14 it did
        // not limit depths at all.
        use crate::kernel::Version;
        self.min_shallow = if q.kernel >= Version::new(6, 10, 0) {
            1
        } else if q.kernel >= Version::new(5, 14, 0) {
            (3 * q.nr_requests / 4).max(1)
        } else {
            u32::MAX
        };
    }

    fn min_shallow_depth(&self) -> u32 {
        self.min_shallow
    }

    fn limit_depth(&mut self, _ctx: &mut SchedCtx, bio: &BioInfo) -> Option<u32> {
        // dd_limit_depth: synchronous reads are never throttled; every other
        // scheduler request (including sync writes) gets async_depth. Reads
        // are always sync; flushes never reach the scheduler's allocation
        // hook, so every non-read op is limited here.
        // Before 5.14 there was no limit_depth hook: a sysfs async_depth
        // (which that kernel did not have) must not limit anything, or an
        // allocation limited to one tag sleeps on a wake batch sized for
        // the whole map and is never woken (found by the run fuzzer with
        // `--kernel 4.12` and `iosched/async_depth=0`, seed 6 case 725).
        let limits_depth = self.min_shallow != u32::MAX;
        if bio.op == Op::Read || !limits_depth {
            None
        } else {
            Some(self.async_depth)
        }
    }

    fn prepare_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        // dd_prepare_request clears the remembered level.
        ctx.rqs[rq].elv = [0, 0];
    }

    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool) {
        // Defensive: a request is never linked twice.
        if loc(ctx.rqs, rq).0 != LOC_NONE {
            self.unlink(ctx.rqs, rq);
        }
        let level = class_to_level(ctx.rqs[rq].ioprio.class);
        let dir = ctx.rqs[rq].op.dir();
        // Count `inserted` only on the first insertion (requeues re-insert).
        if ctx.rqs[rq].elv[0] == 0 {
            let s = &mut self.levels[level].stats;
            s.inserted = s.inserted.wrapping_add(1);
        }
        ctx.rqs[rq].elv[0] = level as u64 + 1;
        let now_j = ctx.jiffies() as i64;
        self.nr_held += 1;
        let lv = &mut self.levels[level];
        if at_head {
            // list_add at the head of the level's dispatch list; fifo_time =
            // jiffies, so its insertion time appears to be now − expire.
            lv.dispatch.push_front(ctx.rqs, rq);
            ctx.rqs[rq].fifo_time = jiffy_to_ns(now_j);
            set_loc(ctx.rqs, rq, LOC_DISPATCH, level, dir);
        } else {
            let sector = ctx.rqs[rq].sector;
            self.forest.insert(&mut lv.sort[dir], rq, sector);
            ctx.rqs[rq].fifo_time = jiffy_to_ns(now_j + self.fifo_expire[dir] as i64);
            lv.fifo[dir].push_back(ctx.rqs, rq);
            set_loc(ctx.rqs, rq, LOC_SORTED, level, dir);
        }
    }

    fn dispatch(&mut self, ctx: &mut SchedCtx, _hctx: u16) -> Option<RqId> {
        let now_j = ctx.jiffies() as i64;
        // 1. Aging: with at least two levels holding requests (queued or in
        //    flight), serve BE then IDLE requests inserted before
        //    now − prio_aging_expire.
        let busy_levels = (0..LEVELS).filter(|&l| self.queued(l) != 0).count();
        if busy_levels >= 2 {
            let latest = now_j - self.prio_aging_expire as i64;
            for level in [BE, IDLE] {
                if let Some(rq) = self.pick(ctx.rqs, level, now_j, latest) {
                    return Some(rq);
                }
            }
        }
        // 2. Strict priority: stop at the first level with anything queued
        //    or in flight, even if it has nothing dispatchable.
        for level in [RT, BE, IDLE] {
            let rq = self.pick(ctx.rqs, level, now_j, now_j);
            if rq.is_some() || self.queued(level) != 0 {
                return rq;
            }
        }
        None
    }

    fn has_work(&self, _hctx: u16) -> bool {
        debug_assert_eq!(self.nr_held, self.held());
        self.nr_held > 0
    }

    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        // Never leave a freed request linked (the core should not free a
        // request still inside, but be safe).
        if loc(ctx.rqs, rq).0 != LOC_NONE {
            self.unlink(ctx.rqs, rq);
        }
        // dd_finish_request: count only requests that went through insert.
        let marker = ctx.rqs[rq].elv[0];
        if marker != 0 {
            let level = ((marker - 1) as usize).min(LEVELS - 1);
            let s = &mut self.levels[level].stats;
            s.completed = s.completed.wrapping_add(1);
            ctx.rqs[rq].elv[0] = 0;
        }
    }

    fn request_merge(&self, ctx: &SchedCtx, bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        // dd_request_merge: with front_merges, look in the bio's priority
        // level and direction for a request starting at the bio's end.
        if self.front_merges == 0 {
            return None;
        }
        let lv = &self.levels[class_to_level(bio.ioprio.class)];
        let rq = self.forest.find(&lv.sort[bio.op.dir()], bio.end_sector())?;
        bio_merge_ok(ctx.rqs, rq, bio, true).then_some((rq, MergeKind::Front))
    }

    fn request_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, kind: MergeKind) {
        // dd_request_merged: a front merge moved the start: re-key.
        if kind != MergeKind::Front {
            return;
        }
        if let (LOC_SORTED, level, dir) = loc(ctx.rqs, rq) {
            let sector = ctx.rqs[rq].sector;
            self.forest
                .rekey(&mut self.levels[level].sort[dir], rq, sector);
        }
    }

    fn requests_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, next: RqId) {
        // dd_merged_requests: merged++ for next's level (also for insert
        // merges, where next never entered the scheduler).
        let s = &mut self.levels[class_to_level(ctx.rqs[next].ioprio.class)].stats;
        s.merged = s.merged.wrapping_add(1);
        // If both sit on FIFOs and next expires earlier, rq moves to next's
        // FIFO position and takes its fifo_time.
        let (lr, lvr, dr) = loc(ctx.rqs, rq);
        let (ln, lvn, dn) = loc(ctx.rqs, next);
        if lr == LOC_SORTED && ln == LOC_SORTED && (lvr, dr) == (lvn, dn) {
            let tn = ctx.rqs[next].fifo_time;
            if ns_to_jiffy(tn) < ns_to_jiffy(ctx.rqs[rq].fifo_time) {
                let fifo = &mut self.levels[lvr].fifo[dr];
                fifo.remove(ctx.rqs, rq);
                fifo.insert_after(ctx.rqs, next, rq);
                ctx.rqs[rq].fifo_time = tn;
            }
        }
        self.unlink(ctx.rqs, next);
    }

    fn next_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        // elv_rb_latter_request.
        match loc(ctx.rqs, rq) {
            (LOC_SORTED, ..) => self.forest.next(rq),
            _ => None,
        }
    }

    fn former_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        // elv_rb_former_request.
        match loc(ctx.rqs, rq) {
            (LOC_SORTED, ..) => self.forest.prev(rq),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testing::Harness;
    use IoPrioClass::{Be, Idle, None as NoClass, Rt};

    fn h() -> Harness<MqDeadline> {
        Harness::new(MqDeadline::new())
    }

    #[test]
    fn class_mapping() {
        assert_eq!(class_to_level(NoClass), BE);
        assert_eq!(class_to_level(Rt), RT);
        assert_eq!(class_to_level(Be), BE);
        assert_eq!(class_to_level(Idle), IDLE);
    }

    #[test]
    fn rt_before_be_before_idle() {
        let mut h = h();
        let i = h.insert_prio(Op::Read, 10, Idle);
        let b = h.insert_prio(Op::Read, 20, Be);
        let n = h.insert_prio(Op::Read, 30, NoClass);
        let r = h.insert_prio(Op::Read, 40, Rt);
        // RT first; then BE is blocked while RT is in flight.
        assert_eq!(h.dispatch(), Some(r));
        assert_eq!(h.dispatch(), None, "RT request still in flight");
        assert!(h.sched.has_work(0));
        h.finish(r);
        assert_eq!(h.dispatch(), Some(b));
        assert_eq!(h.dispatch(), Some(n), "class NONE is BE");
        assert_eq!(h.dispatch(), None, "BE in flight blocks IDLE");
        h.finish(b);
        assert_eq!(h.dispatch(), None, "one BE request still in flight");
        h.finish(n);
        assert_eq!(h.dispatch(), Some(i));
        h.finish(i);
        for l in [RT, BE, IDLE] {
            assert_eq!(h.sched.queued(l), 0);
        }
        assert_eq!(h.sched.stats(BE).inserted, 2);
        assert_eq!(h.sched.stats(BE).dispatched, 2);
        assert_eq!(h.sched.stats(BE).completed, 2);
    }

    #[test]
    fn same_level_is_not_blocked_by_its_own_inflight() {
        let mut h = h();
        let a = h.insert_prio(Op::Read, 10, Be);
        let b = h.insert_prio(Op::Read, 20, Be);
        assert_eq!(h.dispatch_all(), vec![a, b]);
    }

    #[test]
    fn aging_serves_old_be_despite_rt_backlog() {
        let mut h = h();
        let be = h.insert_prio(Op::Write, 5000, Be);
        h.advance_ms(5000);
        let rts: Vec<RqId> = (0..3)
            .map(|i| h.insert_prio(Op::Read, 100 + i * 8, Rt))
            .collect();
        // At 5 s the BE request is not old enough: RT goes first and BE waits.
        assert_eq!(h.dispatch(), Some(rts[0]));
        assert_eq!(h.dispatch(), Some(rts[1]));
        // Cross 10 s after the BE insertion: aging picks it.
        h.advance_ms(5000);
        assert_eq!(h.dispatch(), Some(be));
        assert_eq!(h.dispatch(), Some(rts[2]));
    }

    #[test]
    fn aging_uses_current_expire_values() {
        let mut h = h();
        let be = h.insert_prio(Op::Read, 5000, Be); // fifo_time = 0.5 s
        let rt = h.insert_prio(Op::Read, 100, Rt);
        assert_eq!(h.dispatch(), Some(rt));
        // RT in flight blocks BE; at 2 s BE looks inserted at 0.5 − 0.5 = 0 s,
        // only 2 s ago: not aged.
        h.advance_ms(2000);
        assert_eq!(h.dispatch(), None);
        // inserted_at = fifo_time − CURRENT read_expire: with 9 s the BE
        // request appears inserted at −8.5 s, 10.5 s ago ≥ prio_aging_expire.
        h.sched.set_tunable("read_expire", "9000").unwrap();
        assert_eq!(h.dispatch(), Some(be));
    }

    #[test]
    fn lower_level_waits_for_inflight_higher_level() {
        let mut h = h();
        let rt = h.insert_prio(Op::Read, 10, Rt);
        assert_eq!(h.dispatch(), Some(rt));
        let be = h.insert_prio(Op::Read, 20, Be);
        // RT queued() counts the in-flight request.
        assert_eq!(h.sched.queued(RT), 1);
        assert_eq!(h.dispatch(), None);
        assert!(h.sched.has_work(0));
        h.advance_ms(3);
        assert_eq!(h.dispatch(), None, "still blocked on the retry");
        h.finish(rt);
        assert_eq!(h.dispatch(), Some(be));
    }

    #[test]
    fn at_head_requests_first_within_level() {
        let mut h = h();
        let a = h.insert_prio(Op::Read, 10, Be);
        let b = h.insert_new(Op::Write, 900, 8, true);
        let c = h.insert_new(Op::Read, 500, 8, true);
        // Most recent at-head insert first (list_add at head), then the FIFO.
        assert_eq!(h.dispatch_all(), vec![c, b, a]);
        // Sweep position of the write direction followed the at-head write.
        assert_eq!(h.sched.levels[BE].latest_pos[WRITE], 900);
    }

    #[test]
    fn requeue_is_not_double_counted() {
        let mut h = h();
        let a = h.insert_prio(Op::Read, 10, Be);
        assert_eq!(h.dispatch(), Some(a));
        // Driver requeue: the core re-inserts at head.
        h.inflight.clear();
        h.rqs[a].flags &= !crate::block::request::flags::STARTED;
        h.insert(a, true);
        assert_eq!(h.sched.stats(BE).inserted, 1);
        assert_eq!(h.dispatch(), Some(a));
        h.finish(a);
        assert_eq!(h.sched.queued(BE), 0);
        assert_eq!(h.sched.stats(BE).dispatched, 2);
    }

    #[test]
    fn finish_without_insert_is_not_counted() {
        let mut h = h();
        let a = h.alloc_prio(Op::Write, 10, 8, Be);
        h.finish(a);
        assert_eq!(h.sched.stats(BE), LevelStats::default());
        // Insert merge: new request absorbed before insertion.
        let host = h.insert_prio(Op::Write, 100, Be);
        let loose = h.alloc_prio(Op::Write, 108, 8, Be);
        h.merge_requests(host, loose);
        assert_eq!(h.sched.stats(BE).merged, 1);
        assert_eq!(h.sched.queued(BE), 1);
        assert_eq!(h.dispatch(), Some(host));
        h.finish(host);
        assert_eq!(h.sched.queued(BE), 0);
    }

    #[test]
    fn the_smallest_shallow_depth_follows_the_kernel() {
        use crate::kernel::Version;
        let mut s = MqDeadline::new();
        let mut q = QueueInfo::new(1, 1, 32, 256);
        for (v, want) in [((6, 10), 1), ((6, 9), 192), ((5, 13), u32::MAX)] {
            q.kernel = Version::new(v.0, v.1, 0);
            s.depth_updated(&q);
            assert_eq!(s.min_shallow_depth(), want, "{v:?}");
        }
    }

    #[test]
    fn limit_depth_and_async_depth() {
        let mut h = h();
        assert_eq!(h.sched.async_depth(), 64);
        assert_eq!(h.limit_depth(Op::Read, true), None);
        assert_eq!(h.limit_depth(Op::Write, true), Some(64));
        assert_eq!(h.limit_depth(Op::Write, false), Some(64));
        assert_eq!(h.limit_depth(Op::Discard, false), Some(64));
        h.sched.set_tunable("async_depth", "0").unwrap();
        assert_eq!(h.limit_depth(Op::Write, false), Some(1), "clamped to 1");
        h.sched.set_tunable("async_depth", "12").unwrap();
        assert_eq!(h.limit_depth(Op::Write, true), Some(12));
        // nr_requests change overwrites the user value.
        let mut q = h.q.clone();
        q.nr_requests = 256;
        h.sched.depth_updated(&q);
        assert_eq!(h.limit_depth(Op::Write, false), Some(256));
        let t = h.sched.tunables();
        let ad = t.iter().find(|t| t.name == "async_depth").unwrap();
        assert_eq!(
            (ad.value.as_str(), ad.default.as_str()),
            ("256", "nr_requests")
        );
    }

    #[test]
    fn no_depth_limit_before_5_14() {
        use crate::kernel::Version;
        let mut h = h();
        let mut q = h.q.clone();
        q.kernel = Version::new(5, 13, 0);
        h.sched.depth_updated(&q);
        h.sched.set_tunable("async_depth", "1").unwrap();
        assert_eq!(h.limit_depth(Op::Write, false), None);
        q.kernel = Version::new(5, 14, 0);
        h.sched.depth_updated(&q);
        h.sched.set_tunable("async_depth", "1").unwrap();
        assert_eq!(h.limit_depth(Op::Write, false), Some(1));
    }

    #[test]
    fn tunables_order_parsing_and_round_trip() {
        let mut s = MqDeadline::new();
        s.init(&QueueInfo::new(1, 1, 32, 64));
        let names: Vec<_> = s.tunables().iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "read_expire",
                "write_expire",
                "writes_starved",
                "front_merges",
                "async_depth",
                "fifo_batch",
                "prio_aging_expire"
            ]
        );
        let vals: Vec<_> = s.tunables().into_iter().map(|t| t.value).collect();
        assert_eq!(vals, ["500", "5000", "2", "1", "64", "16", "10000"]);
        s.set_tunable("read_expire", "10").unwrap();
        assert_eq!(s.tunables()[0].value, "12", "3 jiffies at HZ=250");
        s.set_tunable("write_expire", "0x10\n").unwrap();
        assert_eq!(s.tunables()[1].value, "16");
        s.set_tunable("prio_aging_expire", "-5").unwrap();
        assert_eq!(s.tunables()[6].value, "0");
        s.set_tunable("front_merges", "7").unwrap();
        assert_eq!(s.tunables()[3].value, "1");
        s.set_tunable("writes_starved", "-2147483648").unwrap();
        assert_eq!(s.tunables()[2].value, "-2147483648");
        s.set_tunable("fifo_batch", "+3").unwrap();
        assert_eq!(s.tunables()[5].value, "3");
        s.set_tunable("read_expire", "2147483647").unwrap();
        assert_eq!(
            s.tunables()[0].value,
            "-2147483648",
            "jiffies_to_msecs wraps in %d"
        );
        assert!(s
            .set_tunable("fifo_batch", "12abc")
            .unwrap_err()
            .contains("invalid value"));
        assert!(s.set_tunable("fifo_batch", "2147483648").is_err());
        assert_eq!(s.tunables()[5].value, "3", "failed write leaves the value");
        let e = s.set_tunable("slice_idle", "0").unwrap_err();
        assert!(e.contains("prio_aging_expire") && e.contains("async_depth"));
    }

    #[test]
    fn batch_continues_from_latest_pos_and_sees_new_requests() {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "4").unwrap();
        let a = h.read(100, 8);
        let b = h.read(300, 8);
        assert_eq!(h.dispatch(), Some(a));
        // Unlike legacy next_rq, the sweep position picks up a request
        // inserted after the previous dispatch, between a and b.
        let c = h.read(200, 8);
        // Equal start sector to the last dispatched one also qualifies.
        let d = h.read(100, 8);
        assert_eq!(h.dispatch_all(), vec![d, c, b]);
    }

    /// Both directions backlogged in BE: dir of each dispatched request.
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
    fn writes_starved_patterns() {
        // last_dir starts as WRITE with batching 0, so the very first call
        // continues a (virtual) write batch from sector 0. After that, with
        // writes_starved=2: read batch, read batch, write batch, ...
        assert_eq!(batch_pattern("2"), "WWRRRRWWRRRRWWWW");
        // 1: alternate. 0: writes win every batch choice while they wait.
        assert_eq!(batch_pattern("1"), "WWRRWWRRWWRRWWRR");
        assert_eq!(batch_pattern("0"), "WWWWWWWWRRRRRRRR");
        // Negative: compared as unsigned, writes effectively never forced.
        assert_eq!(batch_pattern("-1"), "WWRRRRRRRRWWWWWW");
    }

    #[test]
    fn steady_state_read_read_write_batches() {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "2").unwrap();
        // Start with reads only so the initial last_dir=WRITE has no effect.
        let first = h.read(1, 8);
        assert_eq!(h.dispatch(), Some(first));
        for i in 0..8 {
            h.read(1000 + i * 8, 8);
            h.write(9000 + i * 8, 8);
        }
        let order = h.dispatch_all();
        let pat: String = order
            .iter()
            .map(|&id| if h.rqs[id].op == Op::Read { 'R' } else { 'W' })
            .collect();
        // first, then its batch continues with one more read (fifo_batch 2);
        // then the starvation count runs: RR, RR, WW, RR, R (reads exhausted
        // mid-batch), then the remaining writes.
        assert_eq!(pat, "RRRRRWWRRRWWWWWW");
    }

    /// fifo_batch=1: p@1000 dispatched at t=0 moves the sweep to 1000; then
    /// y@10 (FIFO head) and s@2000 arrive. Dispatch order after `wait_ms`.
    fn expiry_scenario(wait_ms: u64) -> (Vec<RqId>, RqId, RqId) {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "1").unwrap();
        let p = h.read(1000, 8);
        assert_eq!(h.dispatch(), Some(p));
        let y = h.read(10, 8);
        let s = h.read(2000, 8);
        h.advance_ms(wait_ms);
        (h.dispatch_all(), y, s)
    }

    #[test]
    fn expired_fifo_head_starts_the_batch() {
        // Not expired: the new batch continues from the sweep position.
        let (order, y, s) = expiry_scenario(400);
        assert_eq!(order, vec![s, y]);
        // read_expire 500 ms = 125 jiffies: at 500 ms y has expired and the
        // batch restarts from the FIFO head.
        let (order, y, s) = expiry_scenario(500);
        assert_eq!(order, vec![y, s]);
    }

    #[test]
    fn refused_pick_keeps_batch_side_effects() {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "1").unwrap();
        // RT read in flight keeps RT queued; BE has a young write and read.
        let rt = h.insert_prio(Op::Read, 1, Rt);
        assert_eq!(h.dispatch(), Some(rt));
        assert_eq!(h.sched.last_dir, READ);
        let _w = h.insert_prio(Op::Write, 10, Be);
        // Aging pass on BE: a new batch is chosen (write: no reads in BE),
        // then refused as too young. last_dir/batching/starved were updated.
        h.sched.batching = 5;
        assert_eq!(h.dispatch(), None);
        assert_eq!(h.sched.last_dir, WRITE);
        assert_eq!(h.sched.batching, 0);
    }

    #[test]
    fn front_merge_lookup_per_level_and_flag() {
        let mut h = h();
        let r = h.insert_prio(Op::Write, 100, Be);
        let mut bio = h.bio(Op::Write, 92, 8);
        // Same level but a different ioprio value (NONE vs BE): not mergeable.
        assert_eq!(h.with_ctx(|s, c| s.request_merge(c, &bio)), None);
        bio.ioprio.class = Be;
        assert_eq!(
            h.with_ctx(|s, c| s.request_merge(c, &bio)),
            Some((r, MergeKind::Front))
        );
        bio.ioprio.class = Rt;
        assert_eq!(
            h.with_ctx(|s, c| s.request_merge(c, &bio)),
            None,
            "other level"
        );
        bio.ioprio.class = Be;
        h.sched.set_tunable("front_merges", "0").unwrap();
        assert_eq!(h.with_ctx(|s, c| s.request_merge(c, &bio)), None);
    }

    #[test]
    fn requests_merged_inherits_earlier_deadline() {
        let mut h = h();
        h.sched.set_tunable("fifo_batch", "1").unwrap();
        let next = h.read(108, 8);
        h.advance_ms(100);
        let other = h.read(500, 8);
        h.advance_ms(100);
        let rq = h.read(100, 8);
        h.rqs[rq].nr_sectors = 16;
        h.merge_requests(rq, next);
        assert_eq!(h.rqs[rq].fifo_time, jiffy_to_ns(125));
        assert_eq!(h.sched.stats(BE).merged, 1);
        h.advance_ms(400);
        assert_eq!(h.dispatch_all(), vec![rq, other]);
    }

    #[test]
    fn front_merge_rekeys() {
        let mut h = h();
        let a = h.read(50, 8);
        let b = h.read(100, 8);
        h.rqs[b].sector = 20;
        h.with_ctx(|s, c| s.request_merged(c, b, MergeKind::Front));
        assert_eq!(h.with_ctx(|s, c| s.former_request(c, a)), Some(b));
        assert_eq!(h.with_ctx(|s, c| s.next_request(c, b)), Some(a));
        assert_eq!(h.with_ctx(|s, c| s.next_request(c, a)), None);
    }

    #[test]
    fn random_sequences_never_lose_requests() {
        for seed in 1..4 {
            let mut h = h();
            h.random_workout(seed, 4000);
            assert_eq!(h.sched.held(), 0);
            for l in [RT, BE, IDLE] {
                assert_eq!(h.sched.queued(l), 0, "level {l}");
            }
        }
    }
}
