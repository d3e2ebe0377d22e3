//! Queue merging (bfq-iosched.c): early queue merging (EQM) of cooperating
//! processes whose I/O is close (within 4 MiB) on rotational or
//! non-queueing devices, found through each group's position tree; stable
//! merging of a sync queue created within 180 ms of the group's previous
//! one with the same priority (at once on queueing flash, otherwise after
//! 600 ms unless idling boosts the new queue's throughput); splitting a
//! merged queue that went seeky; and the state a process's io context
//! keeps across a merge and a split.

use super::queue::{smallest_from_now, CLOSE_THR};
use super::rbtree::{self, NIL};
use super::wf2q::CLASS_IDLE;
use super::{ms_j, Bfq, T};
use crate::block::request::RequestArena;

/// `bfq_activation_stable_merging`, `bfq_late_stable_merging` (ms).
const ACTIVATION_STABLE_MERGING_MS: i64 = 600;
const LATE_STABLE_MERGING_MS: i64 = 600;

/// `bfq_rq_close_to_sector`.
fn close(pos: u64, sector: u64) -> bool {
    pos.abs_diff(sector) <= CLOSE_THR
}

impl Bfq {
    // ----- the position tree ------------------------------------------------------

    /// `bfq_rq_pos_tree_lookup`: (queue whose next request starts at
    /// `sector` or NIL, the last node visited, whether to link left).
    fn pos_tree_lookup(&mut self, rqs: &RequestArena, g: u32, sector: u64) -> (u32, u32, bool) {
        let mut parent = NIL;
        let mut left = false;
        let mut p = self.g[g as usize].pos_tree.node;
        while p != NIL {
            parent = p;
            let key = rqs[self.q[p as usize].next_rq].sector;
            if sector > key {
                left = false;
                p = self.q[p as usize].pos_rb.right;
            } else if sector < key {
                left = true;
                p = self.q[p as usize].pos_rb.left;
            } else {
                return (p, parent, left);
            }
            self.wf.steps += 1;
        }
        (NIL, parent, left)
    }

    /// Take `q` out of its position tree.
    pub(crate) fn pos_tree_remove(&mut self, q: u32) {
        let g = self.q[q as usize].pos_root;
        if g == NIL {
            return;
        }
        let mut root = self.g[g as usize].pos_tree;
        rbtree::erase(&mut self.q[..], &mut root, q);
        self.g[g as usize].pos_tree = root;
        self.q[q as usize].pos_root = NIL;
    }

    /// `bfq_pos_tree_add_move`.
    pub(crate) fn pos_tree_add_move(&mut self, rqs: &RequestArena, t: T, q: u32) {
        self.pos_tree_remove(q);
        if self.too_late_for_merging(t, q) {
            return;
        }
        let qq = &self.q[q as usize];
        if self.wf.e[qq.ent as usize].class == CLASS_IDLE || qq.next_rq == NIL {
            return;
        }
        let g = qq.group;
        let sector = rqs[qq.next_rq].sector;
        let (found, parent, left) = self.pos_tree_lookup(rqs, g, sector);
        if found == NIL {
            let mut root = self.g[g as usize].pos_tree;
            rbtree::link_node(&mut self.q[..], &mut root, q, parent, left);
            rbtree::insert_color(&mut self.q[..], &mut root, q);
            self.g[g as usize].pos_tree = root;
            self.q[q as usize].pos_root = g;
        }
    }

    /// `bfqq_find_close`.
    fn find_close(&mut self, rqs: &RequestArena, q: u32, sector: u64) -> u32 {
        let g = self.q[q as usize].group;
        if self.g[g as usize].pos_tree.is_empty() {
            return NIL;
        }
        let (found, parent, _) = self.pos_tree_lookup(rqs, g, sector);
        if found != NIL {
            return found;
        }
        let cand = parent;
        let cpos = rqs[self.q[cand as usize].next_rq].sector;
        if close(cpos, sector) {
            return cand;
        }
        let node = if cpos < sector {
            rbtree::next(&self.q[..], cand)
        } else {
            rbtree::prev(&self.q[..], cand)
        };
        if node == NIL {
            return NIL;
        }
        if close(rqs[self.q[node as usize].next_rq].sector, sector) {
            return node;
        }
        NIL
    }

    // ----- merging --------------------------------------------------------------

    /// `bfq_setup_merge`: schedule the redirection of `q`'s process to `new`.
    fn setup_merge(&mut self, q: u32, new: u32) -> u32 {
        if self.process_refs(new) == 0 {
            return NIL;
        }
        let mut new = new;
        loop {
            let n = self.q[new as usize].new_bfqq;
            if n == NIL {
                break;
            }
            if n == q {
                return NIL;
            }
            new = n;
        }
        let process_refs = self.process_refs(q);
        let new_process_refs = self.process_refs(new);
        if process_refs == 0 || new_process_refs == 0 {
            return NIL;
        }
        let (qe, ne) = (self.q[q as usize].ent, self.q[new as usize].ent);
        if self.wf.e[ne as usize].parent != self.wf.e[qe as usize].parent {
            return NIL;
        }
        self.q[q as usize].new_bfqq = new;
        self.wf.e[ne as usize].qref += process_refs;
        new
    }

    /// `bfq_may_be_close_cooperator`.
    fn may_be_close_cooperator(&self, t: T, q: u32, new: u32) -> bool {
        if self.too_late_for_merging(t, new) {
            return false;
        }
        let (a, b) = (&self.q[q as usize], &self.q[new as usize]);
        let (ca, cb) = (
            self.wf.e[a.ent as usize].class,
            self.wf.e[b.ent as usize].class,
        );
        if ca == CLASS_IDLE || cb == CLASS_IDLE || ca != cb {
            return false;
        }
        !a.seeky() && !b.seeky() && a.sync && b.sync
    }

    /// `bfq_setup_stable_merge`.
    fn setup_stable_merge(&mut self, q: u32, stable: u32, bic: u32) -> u32 {
        let proc_ref = self.process_refs(q).min(self.process_refs(stable));
        self.bics[bic as usize].stable_merge_bfqq = NIL;
        let mut new = NIL;
        if !self.idling_boosts_thr_without_issues(q) && proc_ref != 0 {
            new = self.setup_merge(q, stable);
            if new != NIL {
                self.bics[bic as usize].stably_merged = true;
                let nb = self.q[new as usize].bic;
                if nb != NIL {
                    self.bics[nb as usize].stably_merged = true;
                }
            }
        }
        self.put_stable_ref(stable);
        new
    }

    /// `bfq_setup_cooperator`: the queue `q`'s I/O at `pos` should go to
    /// instead (a merge is scheduled), or NIL.
    pub(crate) fn setup_cooperator(
        &mut self,
        rqs: &RequestArena,
        t: T,
        q: u32,
        pos: u64,
        bic: u32,
    ) -> u32 {
        let mut new = self.q[q as usize].new_bfqq;
        if new != NIL {
            while self.q[new as usize].new_bfqq != NIL {
                new = self.q[new as usize].new_bfqq;
            }
            return new;
        }
        if !self.nonrot_with_queueing {
            let stable = self.bics[bic as usize].stable_merge_bfqq;
            let qq = &self.q[q as usize];
            if qq.sync
                && stable != NIL
                && !qq.just_created
                && qq.split_time + ms_j(LATE_STABLE_MERGING_MS) < t.j
                && qq.creation_time + ms_j(LATE_STABLE_MERGING_MS) < t.j
            {
                return self.setup_stable_merge(q, stable, bic);
            }
        }
        if self.nonrot_with_queueing {
            return NIL;
        }
        if self.too_late_for_merging(t, q) {
            return NIL;
        }
        if self.wf.tot_busy_queues() == 1 {
            return NIL;
        }
        let isq = self.in_service;
        if isq != NIL
            && isq != q
            && close(pos, self.in_serv_last_pos)
            && self.wf.e[self.q[q as usize].ent as usize].parent
                == self.wf.e[self.q[isq as usize].ent as usize].parent
            && self.may_be_close_cooperator(t, q, isq)
        {
            let new = self.setup_merge(q, isq);
            if new != NIL {
                return new;
            }
        }
        let cand = self.find_close(rqs, q, pos);
        if cand != NIL && cand != q && self.may_be_close_cooperator(t, q, cand) {
            return self.setup_merge(q, cand);
        }
        NIL
    }

    /// `bfq_bfqq_save_state`.
    fn save_state(&mut self, t: T, q: u32) {
        let bic = self.q[q as usize].bic;
        if bic == NIL {
            return;
        }
        let dur = self.wr_duration();
        let wr_param = self.wr_coeff;
        let low_latency = self.low_latency;
        let qq = &self.q[q as usize];
        let e = &self.wf.e[qq.ent as usize];
        let b = &mut self.bics[bic as usize];
        let s = &mut b.saved;
        s.last_serv_time_ns = qq.last_serv_time_ns;
        s.inject_limit = qq.inject_limit;
        s.decrease_time_jif = qq.decrease_time_jif;
        s.weight = e.orig_weight;
        s.ttime = qq.ttime;
        s.has_short_ttime = qq.has_short_ttime;
        s.io_bound = qq.io_bound;
        s.io_start_time = qq.io_start_time;
        s.tot_idle_time = qq.tot_idle_time;
        b.saved_in_large_burst = qq.in_large_burst;
        b.was_in_burst_list = qq.in_burst_list;
        let s = &mut b.saved;
        if qq.just_created && !qq.in_large_burst && low_latency {
            // Merged right after creation: store the interactive raising it
            // would have had.
            s.wr_coeff = wr_param;
            s.wr_start_at_switch_to_srt = smallest_from_now(t.j);
            s.wr_cur_max_time = dur;
            s.last_wr_start_finish = t.j;
        } else {
            s.wr_coeff = e.wr_coeff;
            s.wr_start_at_switch_to_srt = qq.wr_start_at_switch_to_srt;
            s.service_from_wr = qq.service_from_wr;
            s.last_wr_start_finish = qq.last_wr_start_finish;
            s.wr_cur_max_time = qq.wr_cur_max_time;
        }
    }

    /// `bfq_bfqq_resume_state`.
    pub(crate) fn resume_state(&mut self, t: T, q: u32, bic: u32, already_existing: bool) {
        let busy = already_existing && self.q[q as usize].busy;
        let s = self.bics[bic as usize].saved;
        let ent = self.q[q as usize].ent;
        let mut old_wr_coeff = 1;
        {
            let qq = &mut self.q[q as usize];
            qq.has_short_ttime = s.has_short_ttime;
            qq.io_bound = s.io_bound;
            qq.last_serv_time_ns = s.last_serv_time_ns;
            qq.inject_limit = s.inject_limit;
            qq.decrease_time_jif = s.decrease_time_jif;
            qq.ttime = s.ttime;
            qq.io_start_time = s.io_start_time;
            qq.tot_idle_time = s.tot_idle_time;
        }
        self.wf.e[ent as usize].new_weight = s.weight;
        if self.low_latency {
            old_wr_coeff = self.wf.e[ent as usize].wr_coeff;
            self.wf.e[ent as usize].wr_coeff = s.wr_coeff.max(1);
        }
        {
            let qq = &mut self.q[q as usize];
            qq.service_from_wr = s.service_from_wr;
            qq.wr_start_at_switch_to_srt = s.wr_start_at_switch_to_srt;
            qq.last_wr_start_finish = s.last_wr_start_finish;
            qq.wr_cur_max_time = s.wr_cur_max_time;
        }
        let qq = &self.q[q as usize];
        if self.wf.e[ent as usize].wr_coeff > 1
            && (qq.in_large_burst || qq.last_wr_start_finish + qq.wr_cur_max_time < t.j)
        {
            if qq.wr_cur_max_time == self.wr_rt_max_time
                && !qq.in_large_burst
                && qq.wr_start_at_switch_to_srt + self.wr_duration() >= t.j
            {
                self.switch_back_to_interactive_wr(q);
            } else {
                self.wf.e[ent as usize].wr_coeff = 1;
            }
        }
        self.wf.e[ent as usize].prio_changed = true;
        if !busy {
            return;
        }
        let wr = self.wf.e[ent as usize].wr_coeff;
        if old_wr_coeff == 1 && wr > 1 {
            self.wf.wr_busy_queues += 1;
        } else if old_wr_coeff > 1 && wr == 1 {
            self.wf.wr_busy_queues -= 1;
        }
    }

    /// `bfq_merge_bfqqs`: redirect `bic`'s process from `q` to `q.new_bfqq`.
    pub(crate) fn merge_bfqqs(&mut self, t: T, bic: u32, q: u32) -> u32 {
        let new = self.q[q as usize].new_bfqq;
        self.save_state(t, q);
        self.save_state(t, new);
        if self.q[q as usize].io_bound {
            self.q[new as usize].io_bound = true;
        }
        self.q[q as usize].io_bound = false;
        let w = self.q[q as usize].waker;
        if w != NIL && self.q[new as usize].waker == NIL && w != new {
            self.q[new as usize].waker = w;
            self.q[new as usize].tentative_waker = NIL;
            self.woken_list_add(new, w);
        }
        let (qe, ne) = (self.q[q as usize].ent, self.q[new as usize].ent);
        if self.wf.e[ne as usize].wr_coeff == 1 && self.wf.e[qe as usize].wr_coeff > 1 {
            self.wf.e[ne as usize].wr_coeff = self.wf.e[qe as usize].wr_coeff;
            let (a, b, c) = {
                let qq = &self.q[q as usize];
                (
                    qq.wr_cur_max_time,
                    qq.last_wr_start_finish,
                    qq.wr_start_at_switch_to_srt,
                )
            };
            let nq = &mut self.q[new as usize];
            nq.wr_cur_max_time = a;
            nq.last_wr_start_finish = b;
            nq.wr_start_at_switch_to_srt = c;
            if nq.busy {
                self.wf.wr_busy_queues += 1;
            }
            self.wf.e[ne as usize].prio_changed = true;
        }
        if self.wf.e[qe as usize].wr_coeff > 1 {
            self.wf.e[qe as usize].wr_coeff = 1;
            self.wf.e[qe as usize].prio_changed = true;
            if self.q[q as usize].busy {
                self.wf.wr_busy_queues -= 1;
            }
        }
        self.bic_set_bfqq(bic, new, true);
        self.q[new as usize].coop = true;
        self.q[new as usize].bic = NIL;
        self.q[new as usize].pid = -1;
        self.q[q as usize].bic = NIL;
        self.reassign_last_bfqq(q, new);
        self.release_process_ref(t, q);
        new
    }

    /// `bfq_put_cooperator`.
    fn put_cooperator(&mut self, q: u32) {
        let mut n = self.q[q as usize].new_bfqq;
        while n != NIL {
            let next = self.q[n as usize].new_bfqq;
            self.put_queue(n);
            n = next;
        }
    }

    /// `bfq_split_bfqq`: the process leaves a shared queue; returns the
    /// queue if it was the last user (kept), NIL if a new one is needed.
    pub(crate) fn split_bfqq(&mut self, t: T, bic: u32, q: u32) -> u32 {
        if self.process_refs(q) == 1 && self.q[q as usize].new_bfqq == NIL {
            let pid = self.bics[bic as usize].pid;
            let qq = &mut self.q[q as usize];
            qq.pid = i64::from(pid);
            qq.coop = false;
            qq.split_coop = false;
            return q;
        }
        self.bic_set_bfqq(bic, NIL, true);
        self.put_cooperator(q);
        self.release_process_ref(t, q);
        NIL
    }

    /// `bfq_waker_bfqq`: the waker a split queue keeps.
    pub(crate) fn waker_bfqq(&self, q: u32) -> u32 {
        let waker = self.q[q as usize].waker;
        if waker == NIL {
            return NIL;
        }
        let mut n = self.q[q as usize].new_bfqq;
        while n != NIL {
            if n == waker {
                return if self.process_refs(waker) == 1 {
                    NIL
                } else {
                    waker
                };
            }
            n = self.q[n as usize].new_bfqq;
        }
        if self.process_refs(waker) == 0 {
            return NIL;
        }
        waker
    }

    /// `bfq_do_early_stable_merge`.
    fn do_early_stable_merge(&mut self, t: T, q: u32, bic: u32, last: u32) -> u32 {
        let new = self.setup_merge(q, last);
        if new == NIL {
            return q;
        }
        let nb = self.q[new as usize].bic;
        if nb != NIL {
            self.bics[nb as usize].stably_merged = true;
        }
        self.bics[bic as usize].stably_merged = true;
        self.q[q as usize].bic = bic;
        self.merge_bfqqs(t, bic, q)
    }

    /// `bfq_do_or_sched_stable_merge`, for a new sync queue.
    pub(crate) fn do_or_sched_stable_merge(&mut self, t: T, q: u32, bic: u32) -> u32 {
        let g = self.q[q as usize].group as usize;
        let last = self.g[g].last_bfqq_created;
        let qe = &self.wf.e[self.q[q as usize].ent as usize];
        let differs = last == NIL || {
            let l = &self.q[last as usize];
            let le = &self.wf.e[l.ent as usize];
            l.creation_time + ms_j(ACTIVATION_STABLE_MERGING_MS) < self.q[q as usize].creation_time
                || qe.parent != le.parent
                || qe.ioprio != le.ioprio
                || qe.class != le.class
        };
        if differs {
            self.g[g].last_bfqq_created = q;
        } else if self.q[last as usize].creation_time + self.burst_interval
            >= self.q[q as usize].creation_time
        {
            if self.nonrot_with_queueing {
                return self.do_early_stable_merge(t, q, bic, last);
            }
            let le = self.q[last as usize].ent;
            self.wf.e[le as usize].qref += 1;
            self.q[last as usize].stable_ref += 1;
            self.bics[bic as usize].stable_merge_bfqq = last;
        }
        q
    }
}
