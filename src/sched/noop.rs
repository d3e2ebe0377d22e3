//! Legacy single-queue `noop` (block/noop-iosched.c; removed in 5.0).
//!
//! One FIFO. Insert appends (`noop_add_request`); dispatch takes the head and
//! places it on the core's dispatch list with `elv_dispatch_sort`
//! (`noop_dispatch`), which keeps one ascending sweep from the head position
//! among requests of the same direction not yet seen by the driver. The core
//! asks only when its list is empty, so in steady state noop is FIFO; the
//! sort shows when several requests move at once (a forced drain for a
//! scheduler switch, or a passthrough command draining the elevator).
//! Forced dispatch needs nothing of its own: each call moves one request,
//! and the core calls until it returns 0.
//!
//! Merging is left entirely to the core (`last_merge` hint and the
//! end-sector hash for back merges); noop has no front-merge lookup of its
//! own. Request-to-request merges use FIFO neighbours
//! (`noop_former_request`/`noop_latter_request`) and the absorbed request is
//! simply unlinked (`noop_merged_requests`).

use crate::block::elevator::{
    show_attrs, store_attr, Attr, Elevator, MergeKind, SchedCtx, Tunable,
};
use crate::block::request::{RequestArena, RqId, RqList, NIL};

/// Not inside the scheduler.
const LOC_NONE: u64 = 0;
/// On the FIFO.
const LOC_QUEUED: u64 = 2;

fn loc(rqs: &RequestArena, id: RqId) -> u64 {
    rqs[id].elv[1]
}

/// noop registers no elevator_attrs: iosched/ is empty.
const NOOP_ATTRS: &[Attr<Noop>] = &[];

/// Legacy noop.
#[derive(Default)]
pub struct Noop {
    queue: RqList,
}

impl Noop {
    pub fn new() -> Noop {
        Noop::default()
    }

    /// Requests queued.
    pub fn queued(&self) -> u32 {
        self.queue.len
    }

    fn unlink(&mut self, rqs: &mut RequestArena, id: RqId) {
        if loc(rqs, id) == LOC_QUEUED {
            self.queue.remove(rqs, id);
        }
        rqs[id].elv[1] = LOC_NONE;
    }
}

impl Elevator for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }

    fn tunables(&self) -> Vec<Tunable> {
        show_attrs(self, NOOP_ATTRS)
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        store_attr(self, "noop", NOOP_ATTRS, name, value)
    }

    fn prepare_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        ctx.rqs[rq].elv[1] = LOC_NONE;
    }

    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool) {
        // The legacy core puts front and requeued requests on its own list.
        debug_assert!(!at_head, "the legacy core never inserts at head");
        self.unlink(ctx.rqs, rq);
        // noop_add_request: list_add_tail.
        self.queue.push_back(ctx.rqs, rq);
        ctx.rqs[rq].elv[1] = LOC_QUEUED;
    }

    fn dispatch_legacy(&mut self, ctx: &mut SchedCtx, _force: bool) -> u32 {
        // noop_dispatch: the FIFO head, sorted into the dispatch list.
        match self.queue.pop_front(ctx.rqs) {
            Some(rq) => {
                ctx.rqs[rq].elv[1] = LOC_NONE;
                ctx.dispatch_sort(rq);
                1
            }
            None => 0,
        }
    }

    fn has_work(&self, _hctx: u16) -> bool {
        !self.queue.is_empty()
    }

    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.unlink(ctx.rqs, rq);
    }

    fn request_merged(&mut self, _ctx: &mut SchedCtx, _rq: RqId, _kind: MergeKind) {
        // FIFO position does not depend on the sector.
    }

    fn requests_merged(&mut self, ctx: &mut SchedCtx, _rq: RqId, next: RqId) {
        // noop_merged_requests: list_del_init(&next->queuelist).
        self.unlink(ctx.rqs, next);
    }

    fn next_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        // noop_latter_request: FIFO successor, None at the end.
        if loc(ctx.rqs, rq) != LOC_QUEUED {
            return None;
        }
        let n = ctx.rqs[rq].next;
        (n != NIL).then_some(n)
    }

    fn former_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        // noop_former_request: FIFO predecessor, None at the front.
        if loc(ctx.rqs, rq) != LOC_QUEUED {
            return None;
        }
        let p = ctx.rqs[rq].prev;
        (p != NIL).then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::request::Op;
    use crate::sched::testing::Harness;

    #[test]
    fn fifo_order_regardless_of_sector_and_direction() {
        let mut h = Harness::legacy(Noop::new());
        let a = h.write(900, 8);
        let b = h.read(10, 8);
        let c = h.write(500, 8);
        let d = h.read(5, 8);
        let order: Vec<RqId> = std::iter::from_fn(|| h.dispatch()).collect();
        assert_eq!(order, vec![a, b, c, d]);
        assert!(!h.sched.has_work(0));
    }

    #[test]
    fn neighbours_are_fifo_neighbours_and_merge_unlinks() {
        let mut h = Harness::legacy(Noop::new());
        let a = h.write(100, 8);
        let b = h.write(900, 8);
        let c = h.write(108, 8);
        assert_eq!(h.with_ctx(|s, x| s.next_request(x, a)), Some(b));
        assert_eq!(h.with_ctx(|s, x| s.former_request(x, a)), None);
        assert_eq!(h.with_ctx(|s, x| s.former_request(x, c)), Some(b));
        assert_eq!(h.with_ctx(|s, x| s.next_request(x, c)), None);
        // No front-merge lookup in noop.
        let bio = h.bio(Op::Write, 92, 8);
        assert_eq!(h.with_ctx(|s, x| s.request_merge(x, &bio)), None);
        h.merge_requests(a, c);
        assert_eq!(h.sched.queued(), 2);
        let order: Vec<RqId> = std::iter::from_fn(|| h.dispatch()).collect();
        assert_eq!(order, vec![a, b]);
    }

    #[test]
    fn no_tunables() {
        let h = Harness::legacy(Noop::new());
        assert!(h.sched.tunables().is_empty());
        let mut s = Noop::new();
        assert!(s.set_tunable("fifo_batch", "1").is_err());
    }

    #[test]
    fn one_request_moves_per_call_and_only_when_the_list_is_empty() {
        let mut h = Harness::legacy(Noop::new());
        let a = h.read(900, 8);
        let b = h.read(10, 8);
        // The driver peeks a but the device is full: b stays in noop.
        assert_eq!(h.peek(), Some(a));
        assert_eq!(h.peek(), Some(a));
        assert_eq!(h.sched.queued(), 1);
        assert_eq!(h.dispatch(), Some(a));
        assert_eq!(h.dispatch(), Some(b));
        assert_eq!(h.pull(false), 0);
    }

    #[test]
    fn a_forced_drain_sorts_into_one_sweep_from_the_head_position() {
        let mut h = Harness::legacy(Noop::new());
        let first = h.read(500, 8);
        assert_eq!(h.dispatch(), Some(first)); // head position: 508
        let ids: Vec<RqId> = [100u64, 600, 300, 800, 508]
            .iter()
            .map(|&s| h.read(s, 8))
            .collect();
        assert_eq!(h.force_drain(), 5);
        assert_eq!(h.sched.queued(), 0);
        let sectors: Vec<u64> = h.listed_order().iter().map(|&i| h.rqs[i].sector).collect();
        assert_eq!(sectors, vec![508, 600, 800, 100, 300]);
        // Writes are not sorted past reads: each op keeps its own run.
        let w = h.write(50, 8);
        assert_eq!(h.force_drain(), 1);
        assert_eq!(h.listed_order().last(), Some(&w));
        let order = h.dispatch_all();
        assert_eq!(order.len(), 6);
        assert!(ids.iter().all(|i| order.contains(i)));
    }

    #[test]
    fn a_requeued_request_goes_first_and_sorted_ones_do_not_pass_it() {
        let mut h = Harness::legacy(Noop::new());
        let a = h.read(100, 8);
        let b = h.read(200, 8);
        assert_eq!(h.dispatch(), Some(a));
        h.requeue(a);
        assert!(h.rqs[a].has(crate::block::request::flags::SOFTBARRIER));
        // b is pulled only once the list is empty again.
        assert_eq!(h.listed_order(), vec![a]);
        assert_eq!(h.dispatch(), Some(a));
        // Head position: a's end (108). c lies below it, so the sweep from
        // there takes b first and wraps to c.
        let c = h.read(50, 8);
        assert_eq!(h.force_drain(), 2);
        assert_eq!(h.dispatch_all(), vec![b, c]);
    }

    #[test]
    fn random_sequences_never_lose_requests() {
        let mut h = Harness::legacy(Noop::new());
        h.random_workout(3, 4000);
        assert_eq!(h.sched.queued(), 0);
    }
}
