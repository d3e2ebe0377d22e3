//! Queue-creation bursts (bfq-iosched.c `bfq_handle_burst`): when 8 or
//! more queues of one parent group are created within 180 ms of each other
//! (a service starting many workers, `git grep`), they and any further
//! queue of the burst are marked `in_large_burst`: no weight raising, and
//! idling only where it boosts throughput.

use super::{ms_j, Bfq, T};

impl Bfq {
    /// `bfq_handle_burst`, for a just-created queue.
    pub(crate) fn handle_burst(&mut self, t: T, q: u32) {
        let qq = &self.q[q as usize];
        if qq.in_burst_list || qq.in_large_burst || qq.split_time + ms_j(10) >= t.j {
            return;
        }
        let parent = self.wf.e[qq.ent as usize].parent;
        if self.last_ins_in_burst + self.burst_interval < t.j || parent != self.burst_parent_entity
        {
            self.large_burst = false;
            self.reset_burst_list(q);
        } else if self.large_burst {
            self.q[q as usize].in_large_burst = true;
        } else {
            self.add_to_burst(q);
        }
        self.last_ins_in_burst = t.j;
    }

    /// `bfq_reset_burst_list`.
    fn reset_burst_list(&mut self, q: u32) {
        for i in std::mem::take(&mut self.burst_list) {
            self.q[i as usize].in_burst_list = false;
        }
        if self.wf.tot_busy_queues() == 0 {
            self.burst_list_add(q);
            self.burst_size = 1;
        } else {
            self.burst_size = 0;
        }
        self.burst_parent_entity = self.wf.e[self.q[q as usize].ent as usize].parent;
    }

    /// `bfq_add_to_burst`.
    fn add_to_burst(&mut self, q: u32) {
        self.burst_size += 1;
        if self.burst_size == self.large_burst_thresh {
            self.large_burst = true;
            for i in std::mem::take(&mut self.burst_list) {
                let qi = &mut self.q[i as usize];
                qi.in_large_burst = true;
                qi.in_burst_list = false;
            }
            self.q[q as usize].in_large_burst = true;
        } else {
            self.burst_list_add(q);
        }
    }
}
