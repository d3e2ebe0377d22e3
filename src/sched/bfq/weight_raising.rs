//! Weight raising (`low_latency`, bfq-iosched.c): a sync queue of default
//! weight that becomes busy after a long idle period is deemed interactive
//! and has its weight multiplied by 30 for a duration that depends on the
//! device's peak rate (3..25 s); one that does little I/O in isochronous
//! batches is deemed soft real-time and raised 3000x for 300 ms, renewed at
//! each batch. Raising ends with its time, after 120000 sectors of
//! interactive service, in a large burst, or when `low_latency` goes off.

use super::queue::smallest_from_now;
use super::{ms_j, Bfq, T};
use crate::sim::time::{HZ, NS_PER_JIFFY};

/// `BFQ_SOFTRT_WEIGHT_FACTOR`.
const SOFTRT_WEIGHT_FACTOR: u32 = 100;
/// `max_service_from_wr`.
const MAX_SERVICE_FROM_WR: i64 = 120_000;

impl Bfq {
    /// `bfq_wr_duration`: interactive raising time from the peak rate.
    pub(crate) fn wr_duration(&self) -> i64 {
        let dur = self.rate_dur_prod / i64::from(self.peak_rate.max(1));
        dur.clamp(ms_j(3000), ms_j(25000))
    }

    /// `switch_back_to_interactive_wr`.
    pub(crate) fn switch_back_to_interactive_wr(&mut self, q: u32) {
        let dur = self.wr_duration();
        let ent = self.q[q as usize].ent;
        self.wf.e[ent as usize].wr_coeff = self.wr_coeff;
        let qq = &mut self.q[q as usize];
        qq.wr_cur_max_time = dur;
        qq.last_wr_start_finish = qq.wr_start_at_switch_to_srt;
    }

    /// `bfq_update_bfqq_wr_on_rq_arrival`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn update_wr_on_rq_arrival(
        &mut self,
        t: T,
        q: u32,
        old_wr_coeff: u32,
        wr_or_deserves_wr: bool,
        interactive: bool,
        in_burst: bool,
        soft_rt: bool,
    ) {
        let ent = self.q[q as usize].ent;
        let dur = self.wr_duration();
        let min_budget = self.min_budget();
        if old_wr_coeff == 1 && wr_or_deserves_wr {
            if interactive {
                self.q[q as usize].service_from_wr = 0;
                self.wf.e[ent as usize].wr_coeff = self.wr_coeff;
                self.q[q as usize].wr_cur_max_time = dur;
            } else {
                self.q[q as usize].wr_start_at_switch_to_srt = smallest_from_now(t.j);
                self.wf.e[ent as usize].wr_coeff = self.wr_coeff * SOFTRT_WEIGHT_FACTOR;
                self.q[q as usize].wr_cur_max_time = self.wr_rt_max_time;
            }
            let e = &mut self.wf.e[ent as usize];
            e.budget = e.budget.min(2 * min_budget);
        } else if old_wr_coeff > 1 {
            if interactive {
                self.wf.e[ent as usize].wr_coeff = self.wr_coeff;
                self.q[q as usize].wr_cur_max_time = dur;
            } else if in_burst {
                self.wf.e[ent as usize].wr_coeff = 1;
            } else if soft_rt {
                let qq = &mut self.q[q as usize];
                if qq.wr_cur_max_time != self.wr_rt_max_time {
                    qq.wr_start_at_switch_to_srt = qq.last_wr_start_finish;
                    qq.wr_cur_max_time = self.wr_rt_max_time;
                    self.wf.e[ent as usize].wr_coeff = self.wr_coeff * SOFTRT_WEIGHT_FACTOR;
                }
                self.q[q as usize].last_wr_start_finish = t.j;
            }
        }
    }

    /// `bfq_bfqq_end_wr`.
    pub(crate) fn end_wr(&mut self, q: u32, t: T) {
        let ent = self.q[q as usize].ent;
        let qq = &mut self.q[q as usize];
        if qq.wr_cur_max_time != self.wr_rt_max_time {
            qq.soft_rt_next_start = t.j;
        }
        if qq.busy {
            self.wf.wr_busy_queues -= 1;
        }
        qq.wr_cur_max_time = 0;
        qq.last_wr_start_finish = t.j;
        let e = &mut self.wf.e[ent as usize];
        e.wr_coeff = 1;
        e.prio_changed = true;
    }

    /// `bfq_update_wr_data`, after each dispatch from the in-service queue.
    pub(crate) fn update_wr_data(&mut self, t: T, q: u32) {
        let ent = self.q[q as usize].ent;
        if self.wf.e[ent as usize].wr_coeff > 1 {
            let qq = &self.q[q as usize];
            if qq.in_large_burst {
                self.end_wr(q, t);
            } else if qq.last_wr_start_finish + qq.wr_cur_max_time < t.j {
                if qq.wr_cur_max_time != self.wr_rt_max_time
                    || qq.wr_start_at_switch_to_srt + self.wr_duration() < t.j
                {
                    self.end_wr(q, t);
                } else {
                    self.switch_back_to_interactive_wr(q);
                    self.wf.e[ent as usize].prio_changed = true;
                }
            }
            let qq = &self.q[q as usize];
            if self.wf.e[ent as usize].wr_coeff > 1
                && qq.wr_cur_max_time != self.wr_rt_max_time
                && qq.service_from_wr > MAX_SERVICE_FROM_WR
            {
                self.end_wr(q, t);
            }
        }
        let e = &self.wf.e[ent as usize];
        if (e.weight > e.orig_weight) != (e.wr_coeff > 1) {
            self.wf.update_weight_prio(ent, false);
        }
    }

    /// `bfq_bfqq_softrt_next_start`.
    pub(crate) fn softrt_next_start(&self, t: T, q: u32) -> i64 {
        let qq = &self.q[q as usize];
        let by_rate = qq.last_idle_bklogged
            + HZ as i64 * qq.service_from_backlogged / self.wr_max_softrt_rate.max(1);
        let by_pause = t.j + (self.slice_idle / NS_PER_JIFFY) as i64 + 4;
        qq.soft_rt_next_start.max(by_rate).max(by_pause)
    }

    /// `bfq_bfqq_higher_class_or_weight`.
    pub(crate) fn higher_class_or_weight(&self, q: u32, in_serv: u32) -> bool {
        let a = &self.wf.e[self.q[q as usize].ent as usize];
        let b = &self.wf.e[self.q[in_serv as usize].ent as usize];
        if a.class < b.class {
            return true;
        }
        let weight_of = |e: &super::wf2q::Entity| -> u32 {
            if e.parent != super::rbtree::NIL {
                self.wf.e[e.parent as usize].weight
            } else {
                e.weight
            }
        };
        let (wa, wb) = if a.parent == b.parent {
            (a.weight, b.weight)
        } else {
            (weight_of(a), weight_of(b))
        };
        wa > wb
    }
}
