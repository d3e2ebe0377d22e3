//! Pieces of the legacy single-queue block layer (≤ 4.20) that its
//! schedulers (noop, deadline, cfq, tpps) work against.
//!
//! Facts: legacy `block/elevator.c` (v4.11–4.19): `elv_dispatch_sort`,
//! `elv_dispatch_add_tail`, `__elv_add_request`; reference
//! kernel-blkmq-deadline-kyber.md §2 (legacy `elevator_ops`).

use super::request::{flags, RequestArena, RqId, RqList, NIL};

/// The core's dispatch list (`q->queue_head`): requests the scheduler has
/// released, in the order the driver will take them. The head position
/// (`q->end_sector`, `q->boundary_rq`) is where the last request added at the
/// tail, or the last soft barrier, ends.
#[derive(Debug)]
pub struct DispatchList {
    list: RqList,
    /// `q->end_sector`.
    end_sector: u64,
    /// `q->boundary_rq` (informational: a request at the boundary).
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

    /// `ELEVATOR_INSERT_REQUEUE` / `_FRONT`: at the head, as a soft barrier
    /// that later sorted inserts do not pass.
    pub fn add_front_barrier(&mut self, rqs: &mut RequestArena, rq: RqId) {
        rqs[rq].flags |= flags::SOFTBARRIER;
        if !rqs[rq].has(flags::PASSTHROUGH) {
            self.end_sector = rqs[rq].end_sector();
            self.boundary = rq;
        }
        self.list.push_front(rqs, rq);
    }

    /// Take the head (`blk_start_request` → dequeue).
    pub fn pop_front(&mut self, rqs: &mut RequestArena) -> Option<RqId> {
        self.list.pop_front(rqs)
    }

    /// Requests the scheduler moved here since the last call.
    pub fn take_moved(&mut self, out: &mut Vec<RqId>) {
        out.append(&mut self.moved);
    }

    /// Front to back.
    pub fn iter<'a>(&self, rqs: &'a RequestArena) -> impl Iterator<Item = RqId> + 'a {
        self.list.iter(rqs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::request::Op;

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
        let started = d.front().unwrap();
        assert_eq!(a[started].sector, 7000);
        let r2 = rq(&mut a, Op::Read, 5);
        d.sort_in(&mut a, r2);
        assert_eq!(order(&d, &a), vec![7000, 5000, 5, 10]);
    }

    #[test]
    fn moved_requests_are_reported_once() {
        let mut a = RequestArena::new();
        let mut d = DispatchList::new();
        let x = rq(&mut a, Op::Read, 1);
        let y = rq(&mut a, Op::Read, 2);
        d.add_tail(&mut a, x);
        d.sort_in(&mut a, y);
        let mut v = Vec::new();
        d.take_moved(&mut v);
        assert_eq!(v, vec![x, y]);
        d.take_moved(&mut v);
        assert_eq!(v.len(), 2);
    }
}
