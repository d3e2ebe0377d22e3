//! Budgets and what sizes them (bfq-iosched.c): the charge of a request,
//! the per-queue budget feedback at expiry, budget timeouts, the "slow
//! queue" test and time charging, the peak-rate estimator that auto-tunes
//! the maximum budget, and hw_tag (device queueing) detection.

use super::rbtree::NIL;
use super::ASYNC_CHARGE_FACTOR;
use super::{
    rq_q, Bfq, Reason, DEFAULT_MAX_BUDGET, DEFAULT_SLICE_IDLE_NS, MIN_TT_NS, T, TIMEOUT_JIFFIES,
};
use crate::block::request::{RequestArena, RqId};
use crate::block::sysfs::jiffies_to_msecs_shown;
use crate::sim::time::{NS_PER_MS, NS_PER_SEC};

/// `bfq_stats_min_budgets`.
const STATS_MIN_BUDGETS: u32 = 194;
/// `BFQ_HW_QUEUE_THRESHOLD`, `BFQ_HW_QUEUE_SAMPLES`.
const HW_QUEUE_THRESHOLD: u32 = 3;
const HW_QUEUE_SAMPLES: u32 = 32;
/// Peak-rate sampling: minimum samples, minimum and reference intervals.
const RATE_MIN_SAMPLES: u32 = 32;
const RATE_MIN_INTERVAL: u64 = 300 * NS_PER_MS;
const RATE_REF_INTERVAL: u64 = NS_PER_SEC;
/// `bfq_merge_time_limit`: HZ/10 jiffies.
const MERGE_TIME_LIMIT: i64 = crate::sim::time::HZ as i64 / 10;
/// `BFQ_RATE_SHIFT`.
const RATE_SHIFT: u32 = 16;

impl Bfq {
    /// `bfq_max_budget`: the default until enough budgets were assigned.
    pub(crate) fn max_budget(&self) -> i64 {
        if self.budgets_assigned < STATS_MIN_BUDGETS {
            DEFAULT_MAX_BUDGET
        } else {
            self.bfq_max_budget
        }
    }

    /// `bfq_min_budget`.
    pub(crate) fn min_budget(&self) -> i64 {
        self.max_budget() / 32
    }

    /// `bfq_bfqq_budget_left`.
    pub(crate) fn budget_left(&self, q: u32) -> i64 {
        let e = &self.wf.e[self.q[q as usize].ent as usize];
        e.budget - e.service
    }

    /// `bfq_serv_to_charge`: sectors, async x3 unless raised or asymmetric.
    pub(crate) fn serv_to_charge(&self, rqs: &RequestArena, rq: RqId, q: u32) -> i64 {
        let sectors = i64::from(rqs[rq].nr_sectors);
        let ent = self.q[q as usize].ent;
        if self.q[q as usize].sync
            || self.wf.e[ent as usize].wr_coeff > 1
            || self.asymmetric_scenario(q)
        {
            sectors
        } else {
            sectors * ASYNC_CHARGE_FACTOR
        }
    }

    /// `bfq_bfqq_update_budg_for_activation`: true if the queue should get
    /// the chance to preempt (it recovers a service hole).
    pub(crate) fn update_budg_for_activation(
        &mut self,
        rqs: &RequestArena,
        q: u32,
        arrived_in_time: bool,
    ) -> bool {
        let ent = self.q[q as usize].ent;
        if self.q[q as usize].non_blocking_wait_rq && arrived_in_time && self.budget_left(q) > 0 {
            let left = self.budget_left(q);
            let e = &mut self.wf.e[ent as usize];
            e.budget = left.min(self.q[q as usize].max_budget);
            e.service = 0;
            return true;
        }
        let next = self.q[q as usize].next_rq;
        let charge = self.serv_to_charge(rqs, next, q);
        let e = &mut self.wf.e[ent as usize];
        e.service = 0;
        e.budget = self.q[q as usize].max_budget.max(charge);
        self.q[q as usize].non_blocking_wait_rq = false;
        false
    }

    /// `__bfq_bfqq_recalc_budget`: the budget feedback at expiry.
    pub(crate) fn recalc_budget(&mut self, rqs: &RequestArena, q: u32, reason: Reason) {
        let min_budget = self.min_budget();
        let ent = self.q[q as usize].ent;
        let wr = self.wf.e[ent as usize].wr_coeff;
        let mut budget = if wr == 1 {
            self.q[q as usize].max_budget
        } else {
            2 * min_budget
        };
        let bmax = self.bfq_max_budget;
        if self.q[q as usize].sync && wr == 1 {
            match reason {
                Reason::TooIdle => {
                    if self.q[q as usize].dispatched > 0 {
                        budget = (budget * 2).min(bmax);
                    } else if budget > 5 * min_budget {
                        budget -= 4 * min_budget;
                    } else {
                        budget = min_budget;
                    }
                }
                Reason::BudgetTimeout => budget = (budget * 2).min(bmax),
                Reason::BudgetExhausted => budget = (budget * 4).min(bmax),
                Reason::NoMoreRequests => {
                    budget = self.wf.e[ent as usize].service.max(min_budget);
                }
                Reason::Preempted => return,
            }
        } else if !self.q[q as usize].sync {
            budget = bmax;
        }
        let mut max_budget = budget;
        if self.budgets_assigned >= STATS_MIN_BUDGETS && self.user_max_budget == 0 {
            max_budget = max_budget.min(bmax);
        }
        self.q[q as usize].max_budget = max_budget;
        let next = self.q[q as usize].next_rq;
        if next != NIL {
            let charge = self.serv_to_charge(rqs, next, q);
            self.wf.e[ent as usize].budget = max_budget.max(charge);
        }
    }

    /// `bfq_set_budget_timeout`.
    pub(crate) fn set_budget_timeout(&mut self, t: T, q: u32) {
        let ent = self.q[q as usize].ent;
        let e = &self.wf.e[ent as usize];
        let coeff = if self.q[q as usize].wr_cur_max_time == self.wr_rt_max_time {
            1
        } else {
            i64::from(e.weight / e.orig_weight.max(1))
        };
        self.last_budget_start = t.ns;
        self.q[q as usize].budget_timeout = t.j + self.timeout * coeff;
    }

    /// `bfq_bfqq_budget_timeout`.
    pub(crate) fn budget_timeout_expired(&self, t: T, q: u32) -> bool {
        self.q[q as usize].budget_timeout <= t.j
    }

    /// `bfq_may_expire_for_budg_timeout`.
    pub(crate) fn may_expire_for_budg_timeout(&self, t: T, q: u32) -> bool {
        let ent = self.q[q as usize].ent;
        (!self.q[q as usize].wait_request
            || self.budget_left(q) >= self.wf.e[ent as usize].budget / 3)
            && self.budget_timeout_expired(t, q)
    }

    /// `bfq_bfqq_is_slow`: (slow, time in service in ms to charge).
    pub(crate) fn is_slow(&self, t: T, q: u32, compensate: bool) -> (bool, u64) {
        let qq = &self.q[q as usize];
        let mut slow = qq.seeky();
        if !qq.sync {
            return (false, 0);
        }
        let end = if compensate {
            self.last_idling_start
        } else {
            t.ns
        };
        let delta_us = end.saturating_sub(self.last_budget_start) / 1000;
        if delta_us < 1000 {
            // Non-rotational: the same worst case as idling for a seeky
            // queue; rotational: at least one seek (the default slice_idle,
            // not the tunable).
            let ms = if !self.rotational {
                MIN_TT_NS / NS_PER_MS
            } else {
                DEFAULT_SLICE_IDLE_NS / NS_PER_MS
            };
            return (slow, ms);
        }
        if delta_us > 20_000 {
            let service = self.wf.e[qq.ent as usize].service;
            slow = service < self.bfq_max_budget / 2;
        }
        (slow, delta_us / 1000)
    }

    /// `bfq_bfqq_charge_time`: charge the service the queue would have had
    /// at peak rate for the time it held the device.
    pub(crate) fn charge_time(&mut self, t: T, q: u32, time_ms: u64) {
        // The constant bfq_timeout, not the tunable.
        let timeout_ms = jiffies_to_msecs_shown(TIMEOUT_JIFFIES) as u64;
        let bounded = time_ms.min(timeout_ms);
        let for_time = self.bfq_max_budget * bounded as i64 / timeout_ms as i64;
        let ent = self.q[q as usize].ent;
        let service = self.wf.e[ent as usize].service;
        let tot = for_time.max(service);
        if tot > self.wf.e[ent as usize].budget {
            self.wf.e[ent as usize].budget = tot;
        }
        self.bfqq_served(t, q, (tot - service).max(0));
    }

    // ----- peak rate ------------------------------------------------------------

    /// `bfq_calc_max_budget`.
    pub(crate) fn calc_max_budget(&self) -> i64 {
        // jiffies_to_msecs is an unsigned int; the product wraps in u64 and
        // lands in bfqd->bfq_max_budget, an int.
        let ms = jiffies_to_msecs_shown(self.timeout) as u32 as u64;
        (u64::from(self.peak_rate)
            .wrapping_mul(1000)
            .wrapping_mul(ms)
            >> RATE_SHIFT) as i32 as i64
    }

    /// `update_thr_responsiveness_params`.
    fn update_thr_responsiveness_params(&mut self) {
        if self.user_max_budget == 0 {
            self.bfq_max_budget = self.calc_max_budget();
        }
    }

    /// `bfq_reset_rate_computation` (`rq` NIL: no new dispatch).
    fn reset_rate_computation(&mut self, rqs: &RequestArena, t: T, rq: RqId) {
        if rq != NIL {
            self.last_dispatch = t.ns;
            self.first_dispatch = t.ns;
            self.peak_rate_samples = 1;
            self.sequential_samples = 0;
            self.tot_sectors_dispatched = u64::from(rqs[rq].nr_sectors);
            self.last_rq_max_size = rqs[rq].nr_sectors;
        } else {
            self.peak_rate_samples = 0;
        }
    }

    /// `bfq_update_rate_reset`.
    pub(crate) fn update_rate_reset(&mut self, rqs: &RequestArena, t: T, rq: RqId) {
        if self.peak_rate_samples >= RATE_MIN_SAMPLES && self.delta_from_first >= RATE_MIN_INTERVAL
        {
            self.delta_from_first = self
                .delta_from_first
                .max(self.last_completion.saturating_sub(self.first_dispatch));
            let usecs = (self.delta_from_first / 1000).max(1);
            let rate = ((self.tot_sectors_dispatched << RATE_SHIFT) / usecs) as u32;
            let low = self.sequential_samples < (3 * self.peak_rate_samples) >> 2
                && rate <= self.peak_rate;
            if !(low || rate > 20 << RATE_SHIFT) {
                let mut weight = 9 * self.sequential_samples / self.peak_rate_samples;
                weight =
                    ((u64::from(weight) * self.delta_from_first / RATE_REF_INTERVAL) as u32).min(8);
                let divisor = 10 - weight;
                self.peak_rate = self.peak_rate * (divisor - 1) / divisor + rate / divisor;
                self.peak_rate = self.peak_rate.max(1);
                self.update_thr_responsiveness_params();
            }
        }
        self.reset_rate_computation(rqs, t, rq);
    }

    /// `bfq_update_peak_rate`, on every dispatch.
    pub(crate) fn update_peak_rate(&mut self, rqs: &RequestArena, t: T, rq: RqId) {
        'sample: {
            if self.peak_rate_samples == 0 {
                self.reset_rate_computation(rqs, t, rq);
                break 'sample;
            }
            if t.ns - self.last_dispatch > 100 * NS_PER_MS && self.tot_rq_in_driver == 0 {
                self.update_rate_reset(rqs, t, rq);
                break 'sample;
            }
            self.peak_rate_samples += 1;
            if (self.tot_rq_in_driver > 0 || t.ns - self.last_completion < MIN_TT_NS)
                && !self.rq_seeky(rqs, self.last_position, rq)
            {
                self.sequential_samples += 1;
            }
            let sectors = rqs[rq].nr_sectors;
            self.tot_sectors_dispatched += u64::from(sectors);
            if !self.peak_rate_samples.is_multiple_of(32) {
                self.last_rq_max_size = sectors.max(self.last_rq_max_size);
            } else {
                self.last_rq_max_size = sectors;
            }
            self.delta_from_first = t.ns - self.first_dispatch;
            if self.delta_from_first < RATE_REF_INTERVAL {
                break 'sample;
            }
            self.update_rate_reset(rqs, t, rq);
        }
        self.last_position = rqs[rq].end_sector();
        if rq_q(rqs, rq) == self.in_service {
            self.in_serv_last_pos = self.last_position;
        }
        self.last_dispatch = t.ns;
    }

    /// `bfq_update_hw_tag`, on every completion.
    pub(crate) fn update_hw_tag(&mut self) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.tot_rq_in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.tot_rq_in_driver + self.queued <= HW_QUEUE_THRESHOLD {
            return;
        }
        let q = self.in_service;
        if q != NIL {
            let qq = &self.q[q as usize];
            if qq.has_short_ttime
                && qq.dispatched + qq.queued[0] + qq.queued[1] < HW_QUEUE_THRESHOLD
                && self.tot_rq_in_driver < HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        let s = self.hw_tag_samples;
        self.hw_tag_samples += 1;
        if s < HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = i32::from(self.max_rq_in_driver > HW_QUEUE_THRESHOLD);
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
        self.nonrot_with_queueing = !self.rotational && self.hw_tag == 1;
    }

    /// `bfq_bfqq_idle_for_long_time`.
    pub(crate) fn idle_for_long_time(&self, t: T, q: u32) -> bool {
        let qq = &self.q[q as usize];
        qq.dispatched == 0 && qq.budget_timeout + self.wr_min_idle_time < t.j
    }

    /// `bfq_too_late_for_merging`: more than HZ/10 since the queue's first
    /// I/O of its backlogged period.
    pub(crate) fn too_late_for_merging(&self, t: T, q: u32) -> bool {
        let qq = &self.q[q as usize];
        qq.service_from_backlogged > 0 && qq.first_io_time + MERGE_TIME_LIMIT < t.j
    }
}
