//! Legacy single-queue `noop` (block/noop-iosched.c; removed in 5.0).
//!
//! One FIFO. Insert appends, dispatch pops the head. Merging is left entirely
//! to the core (`last_merge` hint and the end-sector hash for back merges);
//! noop has no front-merge lookup of its own. Request-to-request merges use
//! FIFO neighbours (`noop_former_request`/`noop_latter_request`) and the
//! absorbed request is simply unlinked (`noop_merged_requests`).
//!
//! Not modelled here: the legacy core placed dispatched requests on its
//! dispatch list with `elv_dispatch_sort`, which could reorder requests
//! already waiting there. That list belongs to the block layer.

use crate::block::elevator::{
    show_attrs, store_attr, Attr, Elevator, MergeKind, SchedCtx, Tunable,
};
use crate::block::request::{RequestArena, RqId, RqList};

/// Not inside the scheduler.
const LOC_NONE: u64 = 0;
/// On the head list (legacy front/requeue inserts went to `q->queue_head`).
const LOC_HEAD: u64 = 1;
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
    head: RqList,
}

impl Noop {
    pub fn new() -> Noop {
        Noop::default()
    }

    /// Requests queued (FIFO + head list).
    pub fn queued(&self) -> u32 {
        self.queue.len + self.head.len
    }

    fn unlink(&mut self, rqs: &mut RequestArena, id: RqId) {
        match loc(rqs, id) {
            LOC_QUEUED => self.queue.remove(rqs, id),
            LOC_HEAD => self.head.remove(rqs, id),
            _ => {}
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
        self.unlink(ctx.rqs, rq);
        if at_head {
            self.head.push_front(ctx.rqs, rq);
            ctx.rqs[rq].elv[1] = LOC_HEAD;
        } else {
            // noop_add_request: list_add_tail.
            self.queue.push_back(ctx.rqs, rq);
            ctx.rqs[rq].elv[1] = LOC_QUEUED;
        }
    }

    fn dispatch(&mut self, ctx: &mut SchedCtx, _hctx: u16) -> Option<RqId> {
        let rq = self
            .head
            .pop_front(ctx.rqs)
            .or_else(|| self.queue.pop_front(ctx.rqs))?;
        ctx.rqs[rq].elv[1] = LOC_NONE;
        Some(rq)
    }

    fn has_work(&self, _hctx: u16) -> bool {
        !self.queue.is_empty() || !self.head.is_empty()
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
        (n != crate::block::request::NIL).then_some(n)
    }

    fn former_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        // noop_former_request: FIFO predecessor, None at the front.
        if loc(ctx.rqs, rq) != LOC_QUEUED {
            return None;
        }
        let p = ctx.rqs[rq].prev;
        (p != crate::block::request::NIL).then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::request::Op;
    use crate::sched::testing::Harness;

    #[test]
    fn fifo_order_regardless_of_sector_and_direction() {
        let mut h = Harness::new(Noop::new());
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
        let mut h = Harness::new(Noop::new());
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
    fn at_head_first_and_no_tunables() {
        let mut h = Harness::new(Noop::new());
        let a = h.read(1, 8);
        let b = h.insert_new(Op::Write, 2, 8, true);
        assert_eq!(h.with_ctx(|s, x| s.next_request(x, b)), None);
        assert_eq!(h.dispatch(), Some(b));
        assert_eq!(h.dispatch(), Some(a));
        assert_eq!(h.dispatch(), None);
        assert!(h.sched.tunables().is_empty());
        assert!(h.sched.set_tunable("fifo_batch", "1").is_err());
    }

    #[test]
    fn random_sequences_never_lose_requests() {
        let mut h = Harness::new(Noop::new());
        h.random_workout(3, 4000);
        assert_eq!(h.sched.queued(), 0);
    }
}
