//! The flush state machine (block/blk-flush.c, v6.17) and the requeue list
//! it feeds (block/blk-mq.c `blk_mq_requeue_work`).
//!
//! A write with REQ_PREFLUSH and/or REQ_FUA is a sequence of up to three
//! steps, PREFLUSH → DATA → POSTFLUSH, chosen from its flags and the
//! device (`blk_flush_policy`):
//! - DATA when it carries data;
//! - with a volatile write cache: PREFLUSH for REQ_PREFLUSH; POSTFLUSH for
//!   REQ_FUA when the device does not do FUA (`queue/fua` = 0); FUA is then
//!   dropped from the write, otherwise passed down with the data.
//!
//! Without a write cache the flags mean nothing: `submit_bio` drops them and
//! ends a data-less flush at once (`submit_bio_noacct`). Then
//! `blk_insert_flush`:
//! - no step: the request ends at once;
//! - DATA only: the request goes the normal way;
//! - DATA + POSTFLUSH: the normal way too, marked as a sequence whose data
//!   completion queues the post-flush (and counts as flush data in flight);
//! - otherwise the machine owns it: each flush step waits on the flush
//!   queue's pending list; one flush command per flush queue (one per
//!   hardware queue) is in flight at a time (C1); a flush is not issued
//!   while sequence data writes are in flight (C2) unless the oldest
//!   pending request has waited `FLUSH_PENDING_TIMEOUT` (C3); every request
//!   pending when a flush is issued is served by it, so concurrent fsyncs
//!   share device flushes. When the flush completes each waiter moves on:
//!   its DATA step goes to the head of the requeue list and is re-inserted
//!   at the head of the scheduler (or software queue), its POSTFLUSH waits
//!   for the next flush, or the sequence ends.
//! - The flush command is a REQ_OP_FLUSH request taking the first waiter's
//!   context (hctx, CPU) and, without an elevator, its driver tag; with one
//!   it borrows the scheduler tag and takes a driver tag at dispatch. It
//!   goes to the head of `hctx->dispatch`.
//! - A sequence's request completes twice: the data step completes its
//!   bytes (and the scheduler's completion hooks) without ending its bio;
//!   the end of the sequence ends the bio and counts the I/O in the disk
//!   statistics with the whole sequence's duration.
//!
//! The machine runs on events (insert, data completion, flush completion);
//! there is no timer: C3 is checked at those events, as in the kernel.

use super::elevator::Hook;
use super::request::{flags, Op, Request, RqId};
use super::{BioDone, BioSubmit, BlockLayer, Env};
use crate::sim::time::{jiffies, HZ};
use std::collections::VecDeque;

/// REQ_FSEQ_* (blk-flush.c): steps of a flush sequence.
pub const FSEQ_PREFLUSH: u8 = 1 << 0;
pub const FSEQ_DATA: u8 = 1 << 1;
pub const FSEQ_POSTFLUSH: u8 = 1 << 2;
pub const FSEQ_DONE: u8 = 1 << 3;
pub const FSEQ_ACTIONS: u8 = FSEQ_PREFLUSH | FSEQ_DATA | FSEQ_POSTFLUSH;

/// FLUSH_PENDING_TIMEOUT = 5 * HZ (blk-flush.c), in jiffies.
pub const FLUSH_PENDING_TIMEOUT: u64 = 5 * HZ;

/// `blk_flush_policy`: the steps a request needs.
pub fn flush_policy(rq: &Request, write_cache: bool, fua: bool) -> u8 {
    let mut policy = 0;
    if rq.nr_sectors > 0 {
        policy |= FSEQ_DATA;
    }
    if write_cache {
        if rq.has(flags::PREFLUSH) {
            policy |= FSEQ_PREFLUSH;
        }
        if !fua && rq.has(flags::FUA) {
            policy |= FSEQ_POSTFLUSH;
        }
    }
    policy
}

/// `blk_flush_cur_seq`: the first step not done yet.
#[inline]
pub fn cur_seq(seq: u8) -> u8 {
    1 << seq.trailing_ones()
}

/// `struct blk_flush_queue`: one per hardware queue.
#[derive(Debug, Default)]
pub struct FlushQueue {
    /// `flush_queue[2]`: requests waiting for a flush; double buffered.
    queue: [VecDeque<RqId>; 2],
    pending_idx: usize,
    running_idx: usize,
    /// Jiffies when the pending list became non-empty.
    pending_since: u64,
    /// Sequence data writes in flight (`flush_data_in_flight`).
    data_in_flight: u32,
}

impl FlushQueue {
    /// A flush command is in flight (C1).
    pub fn flush_running(&self) -> bool {
        self.pending_idx != self.running_idx
    }
    /// Requests waiting for the next flush.
    pub fn pending(&self) -> usize {
        self.queue[self.pending_idx].len()
    }
    /// Requests waiting for the flush in flight.
    pub fn running(&self) -> usize {
        if self.flush_running() {
            self.queue[self.running_idx].len()
        } else {
            0
        }
    }
    pub fn data_in_flight(&self) -> u32 {
        self.data_in_flight
    }
    pub fn is_idle(&self) -> bool {
        self.queue[0].is_empty() && self.queue[1].is_empty() && self.data_in_flight == 0
    }
}

impl BlockLayer {
    /// `submit_bio_noacct`'s flush filter for a bio with PREFLUSH or FUA:
    /// without a volatile write cache both flags are dropped, and a bio with
    /// no data is done at once (no request, no accounting). A REQ_OP_FLUSH
    /// bio is taken as what `blkdev_issue_flush` sends: an empty write with
    /// PREFLUSH. None when the bio is done.
    #[inline(never)]
    pub(super) fn filter_flush_bio(&mut self, env: &mut Env, b: &BioSubmit) -> Option<BioSubmit> {
        let mut nb = *b;
        if nb.op == Op::Flush {
            nb.op = Op::Write;
            nb.nr_sectors = 0;
            nb.flags |= flags::PREFLUSH;
        }
        if !self.write_cache() {
            nb.flags &= !(flags::PREFLUSH | flags::FUA);
            if nb.nr_sectors == 0 {
                self.inv.bios_submitted += 1;
                self.inv.bios_completed += 1;
                env.done.push(BioDone {
                    owner: nb.owner,
                    at: env.now,
                    cpu: nb.cpu,
                });
                return None;
            }
        }
        Some(nb)
    }

    /// `blk_insert_flush`: after allocation and accounting, a request whose
    /// bio has PREFLUSH or FUA. True if the machine consumed it (or ended
    /// it); false if it goes on the normal way (plug, insert or issue).
    #[inline(never)]
    pub(super) fn insert_flush(&mut self, env: &mut Env, rq: RqId) -> bool {
        let write_cache = self.write_cache();
        let fua = self.device.limits().fua;
        let hctx = self.rqs[rq].hctx as usize;
        let r = &mut self.rqs[rq];
        let policy = flush_policy(r, write_cache, fua);
        // The driver sees no PREFLUSH, and FUA only if it does FUA; REQ_SYNC
        // keeps the request sync for accounting (blk_insert_flush).
        r.flags &= !flags::PREFLUSH;
        if !fua {
            r.flags &= !flags::FUA;
        }
        r.flags |= flags::SYNC;
        match policy {
            0 => {
                // An empty flush with nothing to flush ends at once.
                self.end_request(env, rq, true);
                true
            }
            FSEQ_DATA => false,
            p if p == FSEQ_DATA | FSEQ_POSTFLUSH => {
                // Pass the data on; its completion triggers the post-flush.
                r.flags |= flags::FLUSH_SEQ;
                r.flush_seq = FSEQ_PREFLUSH;
                self.fqs[hctx].data_in_flight += 1;
                false
            }
            p => {
                r.flags |= flags::FLUSH_SEQ;
                r.flush_seq = 0;
                self.flush_complete_seq(env, rq, FSEQ_ACTIONS & !p);
                true
            }
        }
    }

    /// `blk_flush_complete_seq`: `rq` finished the steps in `seq`; start
    /// its next one, then consider issuing a flush.
    fn flush_complete_seq(&mut self, env: &mut Env, rq: RqId, seq: u8) {
        let hctx = self.rqs[rq].hctx as usize;
        let r = &mut self.rqs[rq];
        debug_assert_eq!(r.flush_seq & seq, 0, "flush step completed twice");
        r.flush_seq |= seq;
        match cur_seq(r.flush_seq) {
            FSEQ_PREFLUSH | FSEQ_POSTFLUSH => {
                let fq = &mut self.fqs[hctx];
                let pending = &mut fq.queue[fq.pending_idx];
                if pending.is_empty() {
                    fq.pending_since = jiffies(env.now);
                }
                pending.push_back(rq);
            }
            FSEQ_DATA => {
                // To the head of the requeue list; re-inserted at head.
                self.fqs[hctx].data_in_flight += 1;
                self.requeue_list.push_front(rq);
            }
            _ => {
                // FSEQ_DONE: a normal request again; end it (bytes were
                // counted when its data step completed).
                r.flags &= !flags::FLUSH_SEQ;
                self.end_request(env, rq, false);
            }
        }
        self.kick_flush(env, hctx);
    }

    /// `blk_kick_flush`: issue a flush for the pending list if C1–C3 allow.
    fn kick_flush(&mut self, env: &mut Env, hctx: usize) {
        let fq = &mut self.fqs[hctx];
        if fq.flush_running() {
            return;
        }
        let Some(&first) = fq.queue[fq.pending_idx].front() else {
            return;
        };
        if fq.data_in_flight > 0 && jiffies(env.now) < fq.pending_since + FLUSH_PENDING_TIMEOUT {
            return;
        }
        fq.pending_idx ^= 1;
        let f = &self.rqs[first];
        let mut rflags = flags::FLUSH_SEQ | flags::PREFLUSH;
        if self.elv.is_none() {
            // The first waiter's driver tag: they are not in flight together.
            rflags |= flags::DRIVER_TAG | flags::TAG_BORROWED;
        }
        let flush = Request {
            op: Op::Flush,
            flags: rflags,
            pid: f.pid,
            cpu: f.cpu,
            hctx: f.hctx,
            // blk_rq_init stamps the flush command's start (flush_ticks).
            start_ns: env.now,
            ..Request::empty()
        };
        let id = self.rqs.alloc_init(flush);
        self.inv.flushes_issued += 1;
        self.flush_list.push_back(id);
    }

    /// `flush_end_io`: the device completed the flush command `frq`.
    #[inline(never)]
    pub(super) fn flush_end_io(&mut self, env: &mut Env, frq: RqId) {
        let (hctx, start) = (self.rqs[frq].hctx as usize, self.rqs[frq].start_ns);
        self.stats.flush_done(env.now, start);
        if self.qos.wants(self.rqs[frq].op, super::rq_qos::hook::DONE) {
            self.qos_done(env, frq);
        }
        if self.rqs[frq].has(flags::TAG_BORROWED) {
            self.rqs[frq].flags &= !(flags::DRIVER_TAG | flags::TAG_BORROWED);
        } else {
            self.put_driver_tag(frq);
        }
        self.rqs.free(frq);
        self.inv.flushes_completed += 1;
        let fq = &mut self.fqs[hctx];
        debug_assert!(fq.flush_running(), "flush completed with none in flight");
        let running = fq.running_idx;
        fq.running_idx ^= 1;
        // Move every waiter of this flush on. The list is taken first, so a
        // waiter queued for the next flush is never served by this one.
        std::mem::swap(&mut self.flush_scratch, &mut self.fqs[hctx].queue[running]);
        while let Some(rq) = self.flush_scratch.pop_front() {
            let seq = cur_seq(self.rqs[rq].flush_seq);
            debug_assert!(seq == FSEQ_PREFLUSH || seq == FSEQ_POSTFLUSH);
            self.flush_complete_seq(env, rq, seq);
        }
    }

    /// `mq_flush_data_end_io` after `__blk_mq_end_request`: the data step
    /// of a sequence completed at the device.
    #[inline(never)]
    pub(super) fn flush_data_end_io(&mut self, env: &mut Env, rq: RqId) {
        let hctx = self.rqs[rq].hctx as usize;
        let use_sched = self.rqs[rq].has(flags::USE_SCHED);
        // blk_update_request: the bytes are done, the bio is not ended.
        self.stats.io_completion(&self.rqs[rq]);
        if use_sched {
            let (cpu, hctx) = (self.rqs[rq].cpu, self.rqs[rq].hctx);
            self.sched_hook(self.sched_cost.complete_ns, Hook::Complete, cpu, hctx);
            if self.elv_props.completed_hook {
                self.with_elv(env, |e, ctx| e.completed_request(ctx, rq));
            }
            // blk_mq_finish_request: the scheduler is done with it.
            self.with_elv(env, |e, ctx| e.finish_request(ctx, rq));
            self.rqs[rq].flags &= !flags::USE_SCHED;
        }
        if self.qos.wants(self.rqs[rq].op, super::rq_qos::hook::DONE) {
            self.qos_done(env, rq);
        }
        if self.elv.is_some() {
            self.put_driver_tag(rq);
        }
        self.fqs[hctx].data_in_flight -= 1;
        self.flush_complete_seq(env, rq, FSEQ_DATA);
    }

    // ----- requeue list ------------------------------------------------------

    /// Work queued by the flush machinery or a requeue is pending.
    #[inline]
    pub(super) fn requeue_pending(&self) -> bool {
        !self.requeue_list.is_empty() || !self.flush_list.is_empty()
    }

    /// `blk_mq_requeue_work` (kblockd): re-insert requeued requests at the
    /// head of the scheduler or software queue, then the flush commands at
    /// the head of `hctx->dispatch`, then run the queues (on kblockd: an
    /// asynchronous run at `now`).
    #[inline(never)]
    pub(super) fn run_requeue_work(&mut self, env: &mut Env) {
        if self.elv_props.legacy {
            // The legacy queue has no requeue list (legacy.rs).
            self.legacy_flush_work(env);
            return;
        }
        while let Some(rq) = self.requeue_list.pop_front() {
            if self.elv.is_some() && self.rqs[rq].has(flags::USE_SCHED) {
                self.elv_insert(env, rq, true);
            } else {
                let (hctx, cpu) = (self.rqs[rq].hctx as usize, self.rqs[rq].cpu as usize);
                let slot = self.q.cpu_ctx[cpu] as usize;
                let h = &mut self.hctxs[hctx];
                h.ctx_lists[slot].push_front(rq);
                h.ctx_pending += 1;
            }
        }
        while let Some(frq) = self.flush_list.pop_front() {
            self.inv.requests_bypassed += 1;
            let h = self.rqs[frq].hctx as usize;
            self.hctxs[h].dispatch.push_front(frq);
        }
        for h in 0..self.hctxs.len() {
            self.schedule_run(env, h as u16, env.now);
        }
    }

    /// `blk_mq_requeue_request(rq, kick)`: the driver gives back a request
    /// it had accepted (it will be re-inserted at the head and dispatched
    /// again). The device must have forgotten it.
    pub fn requeue_request(&mut self, env: &mut Env, rq: RqId) {
        if self.elv_props.legacy {
            // blk_requeue_request on the legacy queue (legacy.rs).
            self.legacy_driver_requeue(env, rq);
            return;
        }
        // __blk_mq_requeue_request: the driver tag goes back (with an
        // elevator; without one it is the request's own tag).
        if self.elv.is_some() {
            self.put_driver_tag(rq);
        }
        if !self.qos.is_empty() {
            self.qos_requeue(env, rq);
        }
        if self.rqs[rq].has(flags::USE_SCHED) {
            self.with_elv(env, |e, ctx| e.requeue_request(ctx, rq));
        }
        self.rqs[rq].flags &= !flags::STARTED;
        self.requeue_list.push_back(rq);
        self.run_requeue_work(env);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_from_flags_and_device() {
        let mut r = Request::empty();
        r.op = Op::Write;
        // fsync: an empty PREFLUSH.
        r.flags = flags::PREFLUSH;
        assert_eq!(flush_policy(&r, true, true), FSEQ_PREFLUSH);
        assert_eq!(flush_policy(&r, false, true), 0);
        // O_DSYNC direct write: FUA with data.
        r.nr_sectors = 8;
        r.flags = flags::FUA;
        assert_eq!(flush_policy(&r, true, true), FSEQ_DATA);
        assert_eq!(flush_policy(&r, true, false), FSEQ_DATA | FSEQ_POSTFLUSH);
        assert_eq!(flush_policy(&r, false, false), FSEQ_DATA);
        r.flags = flags::FUA | flags::PREFLUSH;
        assert_eq!(flush_policy(&r, true, false), FSEQ_ACTIONS);
    }

    #[test]
    fn current_step_is_the_first_not_done() {
        assert_eq!(cur_seq(0), FSEQ_PREFLUSH);
        assert_eq!(cur_seq(FSEQ_PREFLUSH), FSEQ_DATA);
        assert_eq!(cur_seq(FSEQ_PREFLUSH | FSEQ_DATA), FSEQ_POSTFLUSH);
        assert_eq!(cur_seq(FSEQ_ACTIONS), FSEQ_DONE);
        // An empty PREFLUSH: DATA and POSTFLUSH are marked done up front.
        assert_eq!(cur_seq(FSEQ_DATA | FSEQ_POSTFLUSH), FSEQ_PREFLUSH);
    }
}

#[cfg(test)]
mod machine_tests {
    use super::*;
    use crate::block::testkit::{bio, fsync_bio, Harness, TestDevice};
    use crate::block::SubmitResult;
    use crate::sim::time::{Ns, NS_PER_MS, NS_PER_SEC, NS_PER_US};

    fn check_clean(h: &Harness) {
        let inv = &h.bl.inv;
        assert_eq!(inv.bios_submitted, inv.bios_completed);
        assert_eq!(
            inv.requests_allocated,
            inv.requests_completed + inv.requests_merged_away
        );
        assert_eq!(inv.flushes_issued, inv.flushes_completed);
        assert_eq!(h.bl.live_requests(), 0);
        assert!(h.bl.fqs.iter().all(|fq| fq.is_idle()));
        assert!(h
            .bl
            .hctxs
            .iter()
            .all(|x| x.driver_tags == 0 && x.sched_map.as_ref().is_none_or(|m| m.busy() == 0)));
    }

    #[test]
    fn concurrent_fsyncs_share_device_flushes() {
        for sched in ["none", "mq-deadline"] {
            let mut h = Harness::new(TestDevice::new(true, true, 32), sched, 1);
            // Task 1 fsyncs: a flush is issued at once.
            assert_eq!(h.submit(fsync_bio(1, 1)), SubmitResult::Taken);
            h.run_until(100 * NS_PER_US);
            // Tasks 2, 3, 4 fsync while it runs: they wait for the next one.
            for p in 2..=4 {
                h.submit(fsync_bio(p, p as u64));
            }
            assert!(h.bl.fqs[0].flush_running());
            assert_eq!(h.bl.fqs[0].pending(), 3);
            h.run();
            assert_eq!(h.flushes(), vec![0, NS_PER_MS], "{sched}");
            assert_eq!(h.done_at(1), Some(NS_PER_MS));
            for p in 2..=4 {
                assert_eq!(h.done_at(p), Some(2 * NS_PER_MS), "{sched}");
            }
            // Four empty writes ended, two device flushes (blk_account_io_flush).
            let f = h.bl.stats.read(h.now);
            assert_eq!((f.write_ios, f.write_sectors), (4, 0));
            assert_eq!((f.flush_ios, f.flush_ticks), (2, 2));
            // write_ticks: 1 + 3 × 1.9 ms.
            assert_eq!(f.write_ticks, 6);
            assert_eq!(f.time_in_queue, f.write_ticks + f.flush_ticks);
            check_clean(&h);
        }
    }

    #[test]
    fn without_a_write_cache_flags_mean_nothing() {
        let mut h = Harness::new(TestDevice::new(false, false, 32), "none", 1);
        h.submit(fsync_bio(1, 1));
        assert_eq!(h.done_at(1), Some(0), "done at once, no request");
        h.submit(bio(Op::Write, 0, 8, flags::FUA | flags::PREFLUSH, 1, 2));
        h.run();
        let cmds = h.cmds();
        assert_eq!(cmds.len(), 1);
        assert!(!cmds[0].1.fua && cmds[0].1.op == Op::Write);
        assert_eq!(h.bl.stats.read(h.now).write_ios, 1);
        assert_eq!(h.bl.inv.flushes_issued, 0);
        check_clean(&h);
    }

    #[test]
    fn fua_goes_down_when_the_device_does_fua() {
        let mut h = Harness::new(TestDevice::new(true, true, 32), "none", 1);
        h.submit(bio(Op::Write, 0, 8, flags::FUA | flags::SYNC, 1, 1));
        h.run();
        let cmds = h.cmds();
        assert_eq!(cmds.len(), 1);
        assert!(cmds[0].1.fua);
        assert_eq!(h.done_at(1), Some(100 * NS_PER_US));
        check_clean(&h);
    }

    #[test]
    fn fua_without_device_fua_is_write_then_post_flush() {
        let mut h = Harness::new(TestDevice::new(true, false, 32), "none", 1);
        h.submit(bio(Op::Write, 0, 8, flags::FUA, 1, 1));
        // DATA + POSTFLUSH goes the normal way, counted as flush data.
        assert_eq!(h.bl.fqs[0].data_in_flight(), 1);
        h.run();
        let cmds = h.cmds();
        assert_eq!(cmds.len(), 2);
        assert!(cmds[0].1.op == Op::Write && !cmds[0].1.fua);
        assert_eq!((cmds[1].0, cmds[1].1.op), (100 * NS_PER_US, Op::Flush));
        // The bio ends after the post-flush, counted once with that duration.
        assert_eq!(h.done_at(1), Some(1100 * NS_PER_US));
        let f = h.bl.stats.read(h.now);
        assert_eq!((f.write_ios, f.write_sectors, f.write_ticks), (1, 8, 1));
        assert_eq!(f.flush_ios, 1);
        check_clean(&h);
    }

    #[test]
    fn preflush_data_fua_runs_three_steps() {
        for sched in ["none", "mq-deadline"] {
            let mut h = Harness::new(TestDevice::new(true, false, 32), sched, 1);
            h.submit(bio(Op::Write, 64, 8, flags::FUA | flags::PREFLUSH, 1, 1));
            h.run();
            let ops: Vec<(Ns, Op)> = h.cmds().iter().map(|(t, c)| (*t, c.op)).collect();
            assert_eq!(
                ops,
                vec![
                    (0, Op::Flush),
                    (NS_PER_MS, Op::Write),
                    (1100 * NS_PER_US, Op::Flush)
                ],
                "{sched}"
            );
            assert_eq!(h.done_at(1), Some(2100 * NS_PER_US));
            check_clean(&h);
        }
    }

    #[test]
    fn data_step_is_reinserted_at_the_head() {
        // One device slot: W1 runs, W2 and W3 wait in mq-deadline, then a
        // PREFLUSH write arrives. The flush jumps the queue (head of
        // hctx->dispatch), then its data step goes ahead of W2 and W3.
        let mut dev = TestDevice::new(true, true, 1);
        // SCSI-style budget: the scheduler keeps W2, W3 while the device is full.
        dev.limits.budget = true;
        let knobs = crate::block::knobs::QueueKnobs {
            nr_requests: Some(8),
            ..Default::default()
        };
        let mut h = Harness::with_knobs(dev, "mq-deadline", 1, knobs);
        for (i, s) in [0u64, 1000, 2000].iter().enumerate() {
            let r = h.submit(bio(Op::Write, *s, 8, flags::SYNC, 1, i as u64 + 1));
            assert_eq!(r, SubmitResult::Taken);
        }
        // kblockd's run (an unplugged request bound for a scheduler is
        // dispatched from kblockd) sends W1.
        h.run_until(0);
        let r = h.submit(bio(Op::Write, 5000, 8, flags::PREFLUSH, 2, 9));
        assert_eq!(r, SubmitResult::Taken);
        h.run();
        let seq: Vec<(Op, u64)> = h.cmds().iter().map(|(_, c)| (c.op, c.sector)).collect();
        assert_eq!(
            seq,
            vec![
                (Op::Write, 0),
                (Op::Flush, 0),
                (Op::Write, 5000),
                (Op::Write, 1000),
                (Op::Write, 2000)
            ]
        );
        check_clean(&h);
    }

    #[test]
    fn flush_is_deferred_while_sequence_data_is_in_flight() {
        // C2: a FUA write (DATA + POSTFLUSH) is at the device when an fsync
        // arrives; the fsync's flush waits, then one flush serves both.
        let mut h = Harness::new(TestDevice::new(true, false, 32), "none", 1);
        h.submit(bio(Op::Write, 0, 8, flags::FUA, 1, 1));
        h.submit(fsync_bio(2, 2));
        assert!(!h.bl.fqs[0].flush_running());
        assert_eq!(h.bl.fqs[0].pending(), 1);
        h.run();
        assert_eq!(h.flushes(), vec![100 * NS_PER_US]);
        assert_eq!(h.done_at(1), h.done_at(2));
        check_clean(&h);
    }

    #[test]
    fn pending_timeout_overrides_the_deferral() {
        // C3: data writes keep flush data in flight; after FLUSH_PENDING_TIMEOUT
        // (5 s) the next kick issues the flush anyway.
        let mut dev = TestDevice::new(true, false, 32);
        dev.write_ns = 8 * NS_PER_SEC;
        let mut h = Harness::new(dev, "none", 1);
        h.submit(bio(Op::Write, 0, 8, flags::FUA, 1, 1));
        h.submit(fsync_bio(2, 2));
        h.run_until(4 * NS_PER_SEC);
        h.submit(fsync_bio(3, 3));
        assert!(h.flushes().is_empty(), "still deferred before 5 s");
        h.run_until(6 * NS_PER_SEC);
        h.submit(fsync_bio(4, 4));
        h.run_until(6 * NS_PER_SEC);
        assert_eq!(h.flushes(), vec![6 * NS_PER_SEC]);
        h.run();
        check_clean(&h);
    }

    #[test]
    fn flush_borrows_the_first_waiters_driver_tag_without_an_elevator() {
        // Every driver tag is held by a waiting fsync; the flush command
        // still goes out on the first waiter's tag.
        let mut h = Harness::new(TestDevice::new(true, true, 2), "none", 1);
        h.submit(fsync_bio(1, 1));
        h.submit(fsync_bio(2, 2));
        assert_eq!(h.bl.hctxs[0].driver_tags, 2);
        h.run();
        assert_eq!(h.flushes().len(), 2);
        assert_eq!(h.done_owners().len(), 2);
        check_clean(&h);
    }

    #[test]
    fn fsync_sequences_across_several_hardware_queues() {
        let mut dev = TestDevice::new(true, true, 8);
        dev.limits.nr_hw_queues = 2;
        let mut h = Harness::new(dev, "none", 2);
        let mut b1 = fsync_bio(1, 1);
        b1.cpu = 0;
        let mut b2 = fsync_bio(2, 2);
        b2.cpu = 1;
        h.submit(b1);
        h.submit(b2);
        // One flush queue per hardware queue: both flush at once.
        h.run();
        assert_eq!(h.flushes(), vec![0, 0]);
        check_clean(&h);
    }
}
