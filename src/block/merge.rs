//! Merging (§1.6): plug merges, software-queue merges, the core elevator merge
//! (`last_merge` hint, end-sector hash, scheduler front-merge lookup), request
//! to request merges after a bio merge, and the insert merge.

use super::elevator::{BioInfo, Hook, MergeKind};
use super::request::{flags, Request, RqId, NIL};
use super::{BioSubmit, BlockLayer, Env, Plug, CTX_MERGE_SCAN};
use crate::block::request::Op;

/// REQ_NOMERGE_FLAGS and RQF_NOMERGE_FLAGS (STARTED, FLUSH_SEQ).
const UNMERGEABLE_RQ: u32 = flags::NOMERGE
    | flags::STARTED
    | flags::PASSTHROUGH
    | flags::FUA
    | flags::PREFLUSH
    | flags::FLUSH_SEQ;
const UNMERGEABLE_BIO: u32 = flags::NOMERGE | flags::PASSTHROUGH | flags::FUA | flags::PREFLUSH;

/// ELV_HASH_BITS (elevator.c): the merge hash has 64 buckets.
pub(super) const ELV_HASH_BUCKETS: usize = 1 << 6;

/// `hash_long(end_sector, ELV_HASH_BITS)`: golden-ratio multiplicative hash.
fn hash_bucket(end: u64) -> usize {
    (end.wrapping_mul(0x61C8_8646_80B5_83EB) >> (64 - 6)) as usize
}

/// `rq_mergeable`.
pub(super) fn rq_mergeable(r: &Request) -> bool {
    r.flags & UNMERGEABLE_RQ == 0 && r.op != Op::Flush
}

fn bio_mergeable(b: &BioSubmit) -> bool {
    b.flags & UNMERGEABLE_BIO == 0 && b.op != Op::Flush
}

/// `blk_rq_merge_ok` minus the position: same op, cgroup and I/O priority.
fn compatible(r: &Request, b: &BioSubmit) -> bool {
    r.op == b.op && r.cgroup == b.cgroup && r.ioprio == b.ioprio
}

/// `blk_try_merge`: where the bio would go.
fn position(r: &Request, b: &BioSubmit) -> Option<MergeKind> {
    if r.end_sector() == b.sector {
        Some(MergeKind::Back)
    } else if r.sector == b.sector + b.nr_sectors as u64 {
        Some(MergeKind::Front)
    } else {
        None
    }
}

pub(super) fn bio_info(b: &BioSubmit, hctx: u16) -> BioInfo {
    BioInfo {
        op: b.op,
        sector: b.sector,
        nr_sectors: b.nr_sectors,
        flags: b.flags,
        ioprio: b.ioprio,
        cgroup: b.cgroup,
        pid: b.pid,
        cpu: b.cpu,
        hctx,
    }
}

/// Outcome of trying one candidate.
enum Try {
    Merged,
    /// Position matched but limits refused: the request is now NOMERGE; stop looking.
    Refused,
}

impl BlockLayer {
    pub(super) fn hash_add(&mut self, rq: RqId) {
        let end = self.rqs[rq].end_sector();
        self.hash[hash_bucket(end)].push(rq);
    }

    pub(super) fn hash_del(&mut self, rq: RqId) {
        let end = self.rqs[rq].end_sector();
        let b = &mut self.hash[hash_bucket(end)];
        if let Some(i) = b.iter().position(|&x| x == rq) {
            // Keep bucket order: the kernel's hlist finds the newest entry first.
            b.remove(i);
        }
    }

    fn hash_find(&self, end: u64) -> Option<RqId> {
        self.hash[hash_bucket(end)]
            .iter()
            .rev()
            .copied()
            .find(|&id| self.rqs[id].end_sector() == end)
    }

    fn fits(&self, r: &Request, extra_sectors: u32, extra_bios: u32) -> bool {
        r.nr_sectors + extra_sectors <= self.q.max_sectors
            && r.nr_bios + extra_bios <= self.device.limits().max_segments
    }

    /// Try to merge bio `b` into request `rq` (both checked for compatibility).
    fn merge_bio_into(&mut self, env: &mut Env, rq: RqId, b: &BioSubmit, kind: MergeKind) -> Try {
        if !self.fits(&self.rqs[rq], b.nr_sectors, 1) {
            // A merge refused on limits marks the request NOMERGE for good (blk-merge.c).
            self.rqs[rq].flags |= flags::NOMERGE;
            if self.last_merge == rq {
                self.last_merge = NIL;
            }
            return Try::Refused;
        }
        // rq_qos_merge, once the limits allow the merge.
        let qos = !self.qos.is_empty();
        if self.qos.wants(b.op, super::rq_qos::hook::MERGE) {
            self.qos_merge(env, rq, b);
        }
        let bio = self.new_bio(b, env.now);
        if qos {
            self.bios[bio as usize].qos_flags |= flags::BIO_QOS_MERGED;
        }
        let in_hash =
            self.rqs[rq].has(flags::IN_ELV) && self.elv.is_some() && self.elv_props.core_merging;
        if in_hash && kind == MergeKind::Back {
            self.hash_del(rq);
        }
        {
            let bios = &mut self.bios;
            let r = &mut self.rqs[rq];
            match kind {
                MergeKind::Back => {
                    bios[r.bio_tail as usize].next = bio;
                    r.bio_tail = bio;
                }
                MergeKind::Front => {
                    bios[bio as usize].next = r.bio_head;
                    r.bio_head = bio;
                    r.sector = b.sector;
                }
            }
            r.nr_sectors += b.nr_sectors;
            r.nr_bios += 1;
        }
        if in_hash && kind == MergeKind::Back {
            self.hash_add(rq);
        }
        self.stats.merge_bio(&self.rqs[rq]);
        Try::Merged
    }

    /// Try the whole merge path for a bio; true if it was absorbed.
    pub(super) fn try_merge_bio(
        &mut self,
        env: &mut Env,
        b: &BioSubmit,
        cpu: usize,
        hctx: usize,
        plug: Option<&mut Plug>,
    ) -> bool {
        if self.q.nomerges == 2 || !bio_mergeable(b) {
            return false;
        }
        // 1. The plug's tail request (no elevator involvement); the legacy
        //    block layer tried every plugged request, newest first
        //    (blk_attempt_plug_merge, 4.x).
        if let Some(p) = plug {
            let n = p.rqs.len();
            let tried = if self.elv_props.legacy { n } else { n.min(1) };
            for i in 0..tried {
                let cand = p.rqs[n - 1 - i];
                let r = &self.rqs[cand];
                if rq_mergeable(r) && compatible(r, b) {
                    if let Some(kind) = position(r, b) {
                        match self.merge_bio_into(env, cand, b, kind) {
                            Try::Merged => return true,
                            Try::Refused => {}
                        }
                    }
                }
            }
        }
        match self.elv.as_ref().map(|_| self.elv_props.core_merging) {
            // 2a. No elevator: the current CPU's software queue, newest 8.
            None => self.ctx_merge(env, b, cpu, hctx),
            // 2b. Elevators with the core merge path (mq-deadline, bfq, legacy).
            Some(true) => self.elv_merge(env, b, hctx),
            // 2c. Elevators with their own lists (kyber).
            Some(false) => {
                // kyber_bio_merge: under the current CPU's kcq lock.
                self.sched_hook(
                    self.sched_cost.merge_ns,
                    Hook::Merge,
                    cpu as u16,
                    hctx as u16,
                );
                let info = bio_info(b, hctx as u16);
                let cand = self.with_elv(env, |e, ctx| e.own_merge_candidate(ctx, &info));
                match cand {
                    Some((rq, kind))
                        if rq_mergeable(&self.rqs[rq]) && compatible(&self.rqs[rq], b) =>
                    {
                        matches!(self.merge_bio_into(env, rq, b, kind), Try::Merged)
                    }
                    _ => false,
                }
            }
        }
    }

    fn ctx_merge(&mut self, env: &mut Env, b: &BioSubmit, cpu: usize, hctx: usize) -> bool {
        let slot = self.q.cpu_ctx[cpu] as usize;
        let n = self.hctxs[hctx].ctx_lists[slot].len();
        for i in 0..n.min(CTX_MERGE_SCAN) {
            let rq = self.hctxs[hctx].ctx_lists[slot][n - 1 - i];
            let r = &self.rqs[rq];
            if !rq_mergeable(r) || !compatible(r, b) {
                continue;
            }
            if let Some(kind) = position(r, b) {
                // The first request whose position matches decides.
                return matches!(self.merge_bio_into(env, rq, b, kind), Try::Merged);
            }
        }
        false
    }

    /// The scheduler's `allow_merge` (it may change its state).
    fn allowed(&mut self, env: &mut Env, rq: RqId, info: &BioInfo) -> bool {
        self.with_elv(env, |e, ctx| e.allow_merge(ctx, rq, info))
    }

    /// `elv_merge` + `blk_mq_sched_try_merge`. Each candidate must pass
    /// `elv_bio_merge_ok` (compatible, and the scheduler's `allow_merge`)
    /// before its position is looked at; a refused one lets the next
    /// look-up try.
    fn elv_merge(&mut self, env: &mut Env, b: &BioSubmit, hctx: usize) -> bool {
        // blk_mq_sched_bio_merge takes the scheduler lock.
        self.sched_work(self.sched_cost.merge_ns);
        let info = bio_info(b, hctx as u16);
        let mut cand: Option<(RqId, MergeKind)> = None;
        // One-hit cache.
        let lm = self.last_merge;
        if lm != NIL && self.rqs[lm].in_use && self.rqs[lm].has(flags::IN_ELV) {
            let r = &self.rqs[lm];
            if rq_mergeable(r) && compatible(r, b) && self.allowed(env, lm, &info) {
                if let Some(kind) = position(&self.rqs[lm], b) {
                    cand = Some((lm, kind));
                }
            }
        }
        if cand.is_none() {
            if self.q.nomerges == 1 {
                return false;
            }
            if let Some(rq) = self.hash_find(b.sector) {
                let r = &self.rqs[rq];
                if rq_mergeable(r) && compatible(r, b) && self.allowed(env, rq, &info) {
                    cand = Some((rq, MergeKind::Back));
                }
            }
        }
        if cand.is_none() {
            let c = self.with_elv(env, |e, ctx| e.request_merge(ctx, &info));
            if let Some((rq, kind)) = c {
                let r = &self.rqs[rq];
                if rq_mergeable(r)
                    && compatible(r, b)
                    && position(r, b) == Some(kind)
                    && self.allowed(env, rq, &info)
                {
                    cand = Some((rq, kind));
                }
            }
        }
        let Some((rq, kind)) = cand else { return false };
        match self.merge_bio_into(env, rq, b, kind) {
            Try::Merged => {}
            Try::Refused => return false,
        }
        // Try to merge the grown request with its neighbour (attempt_back/front_merge).
        let merged_with_neighbour = match kind {
            MergeKind::Back => {
                let next = self.with_elv(env, |e, ctx| e.next_request(ctx, rq));
                next.is_some_and(|n| self.attempt_merge(env, rq, n))
            }
            MergeKind::Front => {
                let prev = self.with_elv(env, |e, ctx| e.former_request(ctx, rq));
                prev.is_some_and(|p| self.attempt_merge(env, p, rq))
            }
        };
        if !merged_with_neighbour {
            self.with_elv(env, |e, ctx| e.request_merged(ctx, rq, kind));
            self.last_merge = rq;
        }
        true
    }

    /// `attempt_merge(rq, next)`: append `next` to `rq` if contiguous and
    /// compatible; `next` is freed. Both are inside the elevator, except that
    /// `next` may be a request not yet inserted (insert merge).
    pub(super) fn attempt_merge(&mut self, env: &mut Env, rq: RqId, next: RqId) -> bool {
        let (a, b) = (&self.rqs[rq], &self.rqs[next]);
        if !rq_mergeable(a) || !rq_mergeable(b) {
            return false;
        }
        if a.op != b.op
            || a.cgroup != b.cgroup
            || a.ioprio != b.ioprio
            || a.end_sector() != b.sector
        {
            return false;
        }
        if !self.fits(a, b.nr_sectors, b.nr_bios) {
            return false;
        }
        let core = self.elv.is_some() && self.elv_props.core_merging;
        let rq_in_hash = core && self.rqs[rq].has(flags::IN_ELV);
        if rq_in_hash {
            self.hash_del(rq);
        }
        if core && self.rqs[next].has(flags::IN_ELV) {
            self.hash_del(next);
        }
        {
            let (nh, nt, ns, nb, nstart) = {
                let n = &self.rqs[next];
                (n.bio_head, n.bio_tail, n.nr_sectors, n.nr_bios, n.start_ns)
            };
            let tail = self.rqs[rq].bio_tail;
            self.bios[tail as usize].next = nh;
            let r = &mut self.rqs[rq];
            r.bio_tail = nt;
            r.nr_sectors += ns;
            r.nr_bios += nb;
            // The survivor keeps the earlier start time.
            r.start_ns = r.start_ns.min(nstart);
            let n = &mut self.rqs[next];
            n.bio_head = u32::MAX;
            n.bio_tail = u32::MAX;
            n.nr_bios = 0;
        }
        if rq_in_hash {
            self.hash_add(rq);
        }
        let legacy = self.elv_props.legacy;
        // Legacy elv_merge_requests: merge_req_fn only for a `next` that went
        // through add_req (RQF_SORTED), and the hint always becomes `rq`.
        if !legacy || self.rqs[next].has(flags::ELV_INSERTED) {
            self.with_elv(env, |e, ctx| e.requests_merged(ctx, rq, next));
        }
        if legacy {
            self.last_merge = rq;
            if self.rqs[next].has(flags::IN_ELV) {
                self.legacy.nr_sorted -= 1;
            }
        } else if self.last_merge == next {
            self.last_merge = rq;
        }
        self.rqs[next].flags &= !flags::IN_ELV;
        // blk_account_io_merge_request: a merge, and no longer in flight.
        self.stats.merge_request(&self.rqs[next]);
        self.inv.requests_merged_away += 1;
        let use_sched = self.rqs[next].has(flags::USE_SCHED);
        self.free_request(env, next, use_sched);
        true
    }

    /// `elv_attempt_insert_merge` as the legacy core calls it for
    /// `ELEVATOR_INSERT_SORT_MERGE` (elevator.c, 4.x): into the hint if it
    /// ends where `rq` starts (and stop there), else into the request the
    /// end-sector hash finds, cascading backwards while merges succeed. Each
    /// try is `blk_attempt_req_merge`: the scheduler's `allow_rq_merge`,
    /// then `attempt_merge`.
    pub(super) fn legacy_insert_merge(&mut self, env: &mut Env, rq: RqId) -> bool {
        if self.q.nomerges == 2 {
            return false;
        }
        let lm = self.last_merge;
        if lm != NIL
            && lm != rq
            && self.rqs[lm].in_use
            && self.rqs[lm].has(flags::IN_ELV)
            && self.legacy_req_merge(env, lm, rq)
        {
            return true;
        }
        if self.q.nomerges == 1 {
            return false;
        }
        let mut cur = rq;
        let mut merged = false;
        loop {
            let start = self.rqs[cur].sector;
            match self.hash_find(start).filter(|&c| c != cur) {
                Some(c) if self.legacy_req_merge(env, c, cur) => {
                    merged = true;
                    cur = c;
                }
                _ => break,
            }
        }
        merged
    }

    /// `blk_attempt_req_merge` (blk-merge.c, 4.x).
    fn legacy_req_merge(&mut self, env: &mut Env, rq: RqId, next: RqId) -> bool {
        self.with_elv(env, |e, ctx| e.allow_rq_merge(ctx, rq, next))
            && self.attempt_merge(env, rq, next)
    }

    /// `blk_mq_sched_try_insert_merge`: merge a new request into one already
    /// queued that ends where it starts, then cascade.
    pub(super) fn try_insert_merge(&mut self, env: &mut Env, rq: RqId) -> bool {
        if self.q.nomerges == 2 || !rq_mergeable(&self.rqs[rq]) {
            return false;
        }
        let mut cur = rq;
        let mut merged_once = false;
        loop {
            let start = self.rqs[cur].sector;
            let lm = self.last_merge;
            let cand = if lm != NIL
                && lm != cur
                && self.rqs[lm].in_use
                && self.rqs[lm].has(flags::IN_ELV)
                && self.rqs[lm].end_sector() == start
            {
                Some(lm)
            } else if self.q.nomerges == 1 {
                None
            } else {
                self.hash_find(start).filter(|&c| c != cur)
            };
            match cand {
                Some(c) if self.attempt_merge(env, c, cur) => {
                    merged_once = true;
                    cur = c;
                }
                _ => break,
            }
        }
        merged_once
    }
}
