//! I/O injection (bfq-iosched.c, after 4.19): while the in-service queue
//! is plugged, requests of other queues may be dispatched without expiring
//! it: the same process's async I/O, its waker queue's I/O (a queue whose
//! completions wake it, detected three times in a row), the I/O of a queue
//! it wakes, or any queue's within an adaptive limit of requests in the
//! drive, measured against the plugged queue's own service time.

use super::queue::SECT_THR_NONROT;
use super::rbtree::NIL;
use super::wf2q::OnList;
use super::{ms_j, rq_bic, Bfq, T};
use crate::block::request::RequestArena;
use crate::sim::time::NS_PER_MS;

impl Bfq {
    /// `bfq_check_waker`: is `q`'s new I/O right after another queue's
    /// completion (three times in a row)?
    pub(crate) fn check_waker(&mut self, t: T, q: u32) {
        let lc = self.last_completed_rq_bfqq;
        if lc == NIL
            || lc == q
            || self.q[q as usize].has_short_ttime
            || t.ns.saturating_sub(self.last_completion) >= 4 * NS_PER_MS
        {
            return;
        }
        let slice_idle = self.slice_idle;
        let qq = &mut self.q[q as usize];
        if lc != qq.tentative_waker || t.ns > qq.waker_detection_started + 128 * slice_idle {
            qq.tentative_waker = lc;
            qq.num_waker_detections = 1;
            qq.waker_detection_started = t.ns;
        } else {
            qq.num_waker_detections += 1;
        }
        if qq.num_waker_detections == 3 {
            qq.waker = lc;
            qq.tentative_waker = NIL;
            self.woken_list_add(q, lc);
        }
    }

    /// `bfq_reset_inject_limit`.
    pub(crate) fn reset_inject_limit(&mut self, t: T, q: u32) {
        let qq = &mut self.q[q as usize];
        qq.last_serv_time_ns = 0;
        self.waited_rq = NIL;
        qq.inject_limit = u32::from(!qq.has_short_ttime);
        qq.decrease_time_jif = t.j;
    }

    /// `bfq_update_inject_limit`, at the completion of the measured request.
    pub(crate) fn update_inject_limit(&mut self, t: T, q: u32) {
        let tot_time_ns = t.ns.saturating_sub(self.last_empty_occupied_ns);
        let max_in_driver = self.max_rq_in_driver;
        let injected = self.rqs_injected;
        let in_driver = self.tot_rq_in_driver;
        let qq = &mut self.q[q as usize];
        let old_limit = qq.inject_limit;
        if qq.last_serv_time_ns > 0 && injected {
            let threshold = (qq.last_serv_time_ns * 3) >> 1;
            if tot_time_ns >= threshold && old_limit > 0 {
                qq.inject_limit -= 1;
                qq.decrease_time_jif = t.j;
            } else if tot_time_ns < threshold && old_limit <= max_in_driver {
                qq.inject_limit += 1;
            }
        }
        // in_driver still counts the request completing now.
        if (qq.last_serv_time_ns == 0 && in_driver == 1) || tot_time_ns < qq.last_serv_time_ns {
            if qq.last_serv_time_ns == 0 {
                qq.inject_limit = old_limit.max(1);
            }
            qq.last_serv_time_ns = tot_time_ns;
        } else if !injected && in_driver == 1 {
            qq.last_serv_time_ns = tot_time_ns;
        }
        self.waited_rq = NIL;
        self.rqs_injected = false;
    }

    /// `bfq_update_has_short_ttime`.
    pub(crate) fn update_has_short_ttime(&mut self, t: T, q: u32) {
        let ent = self.q[q as usize].ent;
        if !self.q[q as usize].sync
            || self.wf.e[ent as usize].class == super::wf2q::CLASS_IDLE
            || self.slice_idle == 0
        {
            return;
        }
        if self.q[q as usize].split_time + self.wr_min_idle_time >= t.j {
            return;
        }
        let qq = &self.q[q as usize];
        // Processes never exit here: the think time decides.
        let has_short = !(qq.ttime.samples > 80 && qq.ttime.mean > self.slice_idle >> 1);
        let changed = has_short != qq.has_short_ttime;
        self.q[q as usize].has_short_ttime = has_short;
        let qq = &self.q[q as usize];
        if changed
            && qq.last_serv_time_ns == 0
            && (qq.decrease_time_jif + ms_j(100) <= t.j || !has_short)
        {
            self.reset_inject_limit(t, q);
        }
    }

    /// The injection part of `bfq_select_queue` for the plugged in-service
    /// queue `q`: the queue to dispatch from instead, or NIL (keep plugging).
    pub(crate) fn injection_source(&mut self, rqs: &RequestArena, q: u32) -> u32 {
        let fits = |s: &Bfq, c: u32| -> bool {
            let cq = &s.q[c as usize];
            cq.busy && cq.next_rq != NIL && s.serv_to_charge(rqs, cq.next_rq, c) <= s.budget_left(c)
        };
        let qq = &self.q[q as usize];
        if qq.bic != NIL {
            let a = self.bics[qq.bic as usize].bfqq[0];
            if a != NIL && fits(self, a) && rq_bic(rqs, self.q[a as usize].next_rq) == qq.bic {
                return a;
            }
        }
        let w = qq.waker;
        if w != NIL && fits(self, w) {
            return w;
        }
        let blocked = qq.woken_head;
        if blocked != NIL && fits(self, blocked) {
            return blocked;
        }
        let wr = self.wf.e[qq.ent as usize].wr_coeff;
        if !self.idling_boosts_thr_without_issues(q)
            && (wr == 1 || self.wf.wr_busy_queues > 1 || !self.q[q as usize].has_short_ttime)
        {
            return self.choose_bfqq_for_injection(rqs);
        }
        NIL
    }

    /// `bfq_choose_bfqq_for_injection`.
    fn choose_bfqq_for_injection(&mut self, rqs: &RequestArena) -> u32 {
        let isq = self.in_service;
        let is = &self.q[isq as usize];
        let mut limit = is.inject_limit;
        let always_inject = self.wf.e[is.ent as usize].wr_coeff == 1 || !is.has_short_ttime;
        // The kernel adds slice_idle, in ns, to a jiffies stamp here, so
        // this raise of the limit practically never happens; kept inert.
        if limit == 0
            && is.last_serv_time_ns == 0
            && is.wait_request
            && self.last_idling_start_jiffies + self.slice_idle as i64 <= self.last_now.j
        {
            limit = 1;
        }
        if self.tot_rq_in_driver >= limit {
            return NIL;
        }
        let mut id = self.wf.active_list;
        let mut steps = 0;
        while id != NIL {
            steps += 1;
            let e = &self.wf.e[id as usize];
            debug_assert_eq!(e.list, OnList::Active);
            let c = e.q;
            let cq = &self.q[c as usize];
            if !cq.sort.is_empty()
                && (always_inject || e.wr_coeff > 1)
                && self.serv_to_charge(rqs, cq.next_rq, c) <= self.budget_left(c)
            {
                if !self.rotational
                    && rqs[cq.next_rq].nr_sectors >= SECT_THR_NONROT
                    && self.tot_rq_in_driver >= 1
                {
                    id = e.list_next;
                    continue;
                }
                self.wf.steps += steps;
                self.rqs_injected = true;
                return c;
            }
            id = e.list_next;
        }
        self.wf.steps += steps;
        NIL
    }
}
