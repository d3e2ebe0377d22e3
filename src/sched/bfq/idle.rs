//! The idling decision (bfq-iosched.c): whether an emptied in-service sync
//! queue keeps the device plugged for its next request, because idling
//! boosts throughput (rotational or non-queueing devices, sequential
//! I/O-bound queues) or because service guarantees need it (weights,
//! classes or groups differ, weight raising, or the queue is alone); and the
//! idle timer's length.

use super::rbtree::NIL;
use super::wf2q::CLASS_IDLE;
use super::{Bfq, MIN_TT_NS, T};
use crate::sim::time::NS_PER_MS;

impl Bfq {
    /// `bfq_asymmetric_scenario`: weights of active queues differ (unless
    /// `q` has the smallest), several classes are busy, or more than one
    /// group has requests pending or in flight.
    pub(crate) fn asymmetric_scenario(&self, q: u32) -> bool {
        let smallest_weight = q != NIL && {
            let w = self.wf.e[self.q[q as usize].ent as usize].weight_counter;
            w != 0 && self.wf.weights.smallest() == Some(w)
        };
        let varied_queue_weights = !smallest_weight && self.wf.weights.distinct() >= 2;
        let multiple_classes_busy = self.wf.busy_queues.iter().filter(|&&n| n > 0).count() > 1;
        varied_queue_weights || multiple_classes_busy || self.wf.num_groups_with_pending_reqs > 1
    }

    /// `idling_boosts_thr_without_issues`.
    pub(crate) fn idling_boosts_thr_without_issues(&self, q: u32) -> bool {
        if self.process_refs(q) == 0 {
            return false;
        }
        // hw_tag is -1 until detected, which counts as queueing.
        let rot_without_queueing = self.rotational && self.hw_tag == 0;
        let qq = &self.q[q as usize];
        let seq_io_bound = !qq.seeky() && qq.io_bound && qq.has_short_ttime;
        let boosts =
            rot_without_queueing || ((self.rotational || self.hw_tag == 0) && seq_io_bound);
        boosts && self.wf.wr_busy_queues == 0
    }

    /// `idling_needed_for_service_guarantees`.
    pub(crate) fn idling_needed_for_service_guarantees(&self, q: u32) -> bool {
        if self.process_refs(q) == 0 {
            return false;
        }
        let tot_busy = self.wf.tot_busy_queues();
        let ent = &self.wf.e[self.q[q as usize].ent as usize];
        (ent.wr_coeff > 1
            && (self.wf.wr_busy_queues < tot_busy
                || self.tot_rq_in_driver >= self.q[q as usize].dispatched + 4))
            || self.asymmetric_scenario(q)
            || tot_busy == 1
    }

    /// `bfq_better_to_idle`.
    pub(crate) fn better_to_idle(&self, q: u32) -> bool {
        if self.process_refs(q) == 0 {
            return false;
        }
        if self.strict_guarantees {
            return true;
        }
        let qq = &self.q[q as usize];
        if self.slice_idle == 0 || !qq.sync || self.wf.e[qq.ent as usize].class == CLASS_IDLE {
            return false;
        }
        self.idling_boosts_thr_without_issues(q) || self.idling_needed_for_service_guarantees(q)
    }

    /// `bfq_bfqq_must_idle`.
    pub(crate) fn must_idle(&self, q: u32) -> bool {
        self.q[q as usize].sort.is_empty() && self.better_to_idle(q)
    }

    /// `bfq_arm_slice_timer`: plug the device for the in-service queue.
    pub(crate) fn arm_slice_timer(&mut self, t: T) {
        let q = self.in_service;
        self.q[q as usize].wait_request = true;
        let mut sl = self.slice_idle;
        let wr = self.wf.e[self.q[q as usize].ent as usize].wr_coeff;
        if self.q[q as usize].seeky() && wr == 1 && !self.asymmetric_scenario(q) {
            sl = sl.min(MIN_TT_NS);
        } else if wr > 1 {
            sl = sl.max(20 * NS_PER_MS);
        }
        self.last_idling_start = t.ns;
        self.last_idling_start_jiffies = t.j;
        self.start_idle_timer(t, sl);
    }
}
