//! BFQ's per-process queues (`struct bfq_queue`), the per-process I/O
//! context data (`struct bfq_io_cq`), their creation, lookup and release,
//! and the per-queue request bookkeeping: sort list, FIFO, `next_rq`
//! (`bfq_choose_req`, `bfq_find_next_rq`), think time and seek history
//! (bfq-iosched.c).

use super::rbtree::{RbArena, RbLinks, NIL};
use super::wf2q::{self, CLASS_BE, CLASS_IDLE, CLASS_RT};
use super::{Bfq, T};
use crate::block::request::{flags, RequestArena, RqId, RqList};
use crate::cgroup::{IoPrio, IoPrioClass};
use crate::sched::sort_tree::SortTree;

/// `BFQQ_SEEK_THR`: 800 sectors.
pub const SEEK_THR: u64 = 8 * 100;
/// `BFQQ_SECT_THR_NONROT`: 64 sectors.
pub const SECT_THR_NONROT: u32 = 2 * 32;
/// `BFQQ_CLOSE_THR`: 8192 sectors.
pub const CLOSE_THR: u64 = 8 * 1024;

/// Think-time statistics (`struct bfq_ttime`), ns.
#[derive(Clone, Copy, Debug, Default)]
pub struct TTime {
    pub last_end_request: u64,
    pub samples: u64,
    pub total: u64,
    pub mean: u64,
}

/// `struct bfq_queue`. The weight, class, level and weight-raising
/// coefficient live in its entity (`Bfq::wf.e[ent]`).
#[derive(Clone, Debug)]
pub struct Queue {
    pub in_use: bool,
    pub ent: u32,
    pub group: u32,
    pub sort: SortTree,
    pub fifo: RqList,
    pub next_rq: RqId,
    /// Queued requests [async, sync].
    pub queued: [u32; 2],
    pub meta_pending: u32,
    /// Dispatched, not completed.
    pub dispatched: u32,
    pub max_budget: i64,
    /// Jiffies; overloaded as "when the queue went empty".
    pub budget_timeout: i64,
    pub just_created: bool,
    pub busy: bool,
    pub wait_request: bool,
    pub non_blocking_wait_rq: bool,
    pub fifo_expire: bool,
    pub has_short_ttime: bool,
    pub sync: bool,
    pub io_bound: bool,
    pub in_large_burst: bool,
    pub coop: bool,
    pub split_coop: bool,
    pub softrt_update: bool,
    pub ttime: TTime,
    pub seek_history: u32,
    pub last_request_pos: u64,
    /// Owning process, -1 when shared.
    pub pid: i64,
    /// The io context that owns it alone (NIL when shared or gone).
    pub bic: u32,
    /// Merge target (`new_bfqq`).
    pub new_bfqq: u32,
    /// Position-tree node, keyed by the start of `next_rq`.
    pub pos_rb: RbLinks,
    pub pos_root: u32,
    pub pos_key: u64,
    pub last_wr_start_finish: i64,
    pub wr_cur_max_time: i64,
    pub soft_rt_next_start: i64,
    pub last_idle_bklogged: i64,
    pub service_from_backlogged: i64,
    pub service_from_wr: i64,
    pub wr_start_at_switch_to_srt: i64,
    pub split_time: i64,
    pub first_io_time: i64,
    pub creation_time: i64,
    pub io_start_time: u64,
    pub tot_idle_time: u64,
    pub inject_limit: u32,
    pub last_serv_time_ns: u64,
    pub decrease_time_jif: i64,
    pub waker: u32,
    pub tentative_waker: u32,
    pub num_waker_detections: u32,
    pub waker_detection_started: u64,
    /// Queues this one wakes (head of its `woken_list`).
    pub woken_head: u32,
    /// The waker whose woken list holds this queue, and the links there.
    pub woken_in: u32,
    pub woken_prev: u32,
    pub woken_next: u32,
    pub in_burst_list: bool,
    pub stable_ref: i32,
    pub new_ioprio: u8,
    pub new_ioprio_class: u8,
    /// The class the queue was counted under in `busy_queues` when it
    /// became busy. The kernel decrements the current class, which drifts
    /// if the class changed while the queue was busy.
    pub busy_class: u8,
}

impl Queue {
    fn blank() -> Queue {
        Queue {
            in_use: false,
            ent: NIL,
            group: 0,
            sort: SortTree::new(0),
            fifo: RqList::new(),
            next_rq: NIL,
            queued: [0; 2],
            meta_pending: 0,
            dispatched: 0,
            max_budget: 0,
            budget_timeout: 0,
            just_created: false,
            busy: false,
            wait_request: false,
            non_blocking_wait_rq: false,
            fifo_expire: false,
            has_short_ttime: false,
            sync: false,
            io_bound: false,
            in_large_burst: false,
            coop: false,
            split_coop: false,
            softrt_update: false,
            ttime: TTime::default(),
            seek_history: 0,
            last_request_pos: 0,
            pid: 0,
            bic: NIL,
            new_bfqq: NIL,
            pos_rb: RbLinks::EMPTY,
            pos_root: NIL,
            pos_key: 0,
            last_wr_start_finish: 0,
            wr_cur_max_time: 0,
            soft_rt_next_start: 0,
            last_idle_bklogged: 0,
            service_from_backlogged: 0,
            service_from_wr: 0,
            wr_start_at_switch_to_srt: 0,
            split_time: 0,
            first_io_time: 0,
            creation_time: 0,
            io_start_time: 0,
            tot_idle_time: 0,
            inject_limit: 0,
            last_serv_time_ns: 0,
            decrease_time_jif: 0,
            waker: NIL,
            tentative_waker: NIL,
            num_waker_detections: 0,
            waker_detection_started: 0,
            woken_head: NIL,
            woken_in: NIL,
            woken_prev: NIL,
            woken_next: NIL,
            in_burst_list: false,
            stable_ref: 0,
            new_ioprio: 0,
            new_ioprio_class: CLASS_BE,
            busy_class: CLASS_BE,
        }
    }

    /// `BFQQ_SEEKY`: more than 19 of the last 32 requests were seeky.
    pub fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 19
    }
    /// `BFQQ_TOTALLY_SEEKY`.
    pub fn totally_seeky(&self) -> bool {
        self.seek_history == u32::MAX
    }
}

impl RbArena for [Queue] {
    #[inline]
    fn links(&self, i: u32) -> &RbLinks {
        &self[i as usize].pos_rb
    }
    #[inline]
    fn links_mut(&mut self, i: u32) -> &mut RbLinks {
        &mut self[i as usize].pos_rb
    }
}

/// What a process's io context remembers of a queue it left by a merge
/// (`struct bfq_iocq_bfqq_data`'s saved fields).
#[derive(Clone, Copy, Debug, Default)]
pub struct Saved {
    pub last_serv_time_ns: u64,
    pub inject_limit: u32,
    pub decrease_time_jif: i64,
    pub weight: u32,
    pub ttime: TTime,
    pub has_short_ttime: bool,
    pub io_bound: bool,
    pub io_start_time: u64,
    pub tot_idle_time: u64,
    pub wr_coeff: u32,
    pub wr_start_at_switch_to_srt: i64,
    pub service_from_wr: i64,
    pub last_wr_start_finish: i64,
    pub wr_cur_max_time: i64,
}

/// `struct bfq_io_cq`: one per process (one actuator).
#[derive(Clone, Debug)]
pub struct Bic {
    pub pid: u32,
    /// [async, sync] queues.
    pub bfqq: [u32; 2],
    pub ioprio: IoPrio,
    /// Requests allocated and not freed.
    pub requests: u32,
    pub stable_merge_bfqq: u32,
    pub stably_merged: bool,
    pub saved: Saved,
    pub was_in_burst_list: bool,
    pub saved_in_large_burst: bool,
}

/// The class index and level BFQ serves an I/O priority at
/// (`bfq_set_next_ioprio_data`): NONE takes the task's nice level in BE,
/// IDLE is level 7.
pub fn class_and_level(p: IoPrio) -> (u8, u8) {
    match p.class {
        IoPrioClass::None | IoPrioClass::Be => (CLASS_BE, p.level.min(7)),
        IoPrioClass::Rt => (CLASS_RT, p.level.min(7)),
        IoPrioClass::Idle => (CLASS_IDLE, 7),
    }
}

/// `bfq_choose_req`: which of two requests to serve first from `last`.
pub fn choose_req(
    rqs: &RequestArena,
    rq1: RqId,
    rq2: RqId,
    last: u64,
    back_max_kib: u64,
    back_penalty: u64,
) -> RqId {
    if rq1 == NIL || rq1 == rq2 {
        return rq2;
    }
    if rq2 == NIL {
        return rq1;
    }
    let (a, b) = (&rqs[rq1], &rqs[rq2]);
    let (s1, s2) = (a.is_sync(), b.is_sync());
    if s1 && !s2 {
        return rq1;
    } else if s2 && !s1 {
        return rq2;
    }
    let (m1, m2) = (a.has(flags::META), b.has(flags::META));
    if m1 && !m2 {
        return rq1;
    } else if m2 && !m1 {
        return rq2;
    }
    let (p1, p2) = (a.sector, b.sector);
    let back_max = back_max_kib * 2;
    let dist = |s: u64| -> Option<u64> {
        if s >= last {
            Some(s - last)
        } else if s + back_max >= last {
            Some((last - s).saturating_mul(back_penalty))
        } else {
            None
        }
    };
    match (dist(p1), dist(p2)) {
        (Some(d1), Some(d2)) => {
            if d1 < d2 {
                rq1
            } else if d2 < d1 {
                rq2
            } else if p1 >= p2 {
                rq1
            } else {
                rq2
            }
        }
        (Some(_), None) => rq1,
        (None, Some(_)) => rq2,
        (None, None) => {
            if p1 <= p2 {
                rq1
            } else {
                rq2
            }
        }
    }
}

impl Bfq {
    // ----- io contexts --------------------------------------------------------

    /// The io context of `pid`, if it has one.
    pub(super) fn bic_lookup(&self, pid: u32) -> u32 {
        match self.bic_of_pid.get(pid as usize) {
            Some(&b) => b,
            None => self
                .bic_of_pid_big
                .iter()
                .find(|e| e.0 == pid)
                .map_or(NIL, |e| e.1),
        }
    }

    /// The io context of `pid`, created on first use (`ioc_find_get_icq`).
    pub(super) fn bic_get(&mut self, pid: u32, ioprio: IoPrio) -> u32 {
        let b = self.bic_lookup(pid);
        if b != NIL {
            return b;
        }
        let id = self.bics.len() as u32;
        self.bics.push(Bic {
            pid,
            bfqq: [NIL, NIL],
            ioprio,
            requests: 0,
            stable_merge_bfqq: NIL,
            stably_merged: false,
            saved: Saved::default(),
            was_in_burst_list: false,
            saved_in_large_burst: false,
        });
        if (pid as usize) < BIC_DIRECT_PIDS {
            if self.bic_of_pid.len() <= pid as usize {
                self.bic_of_pid.resize(pid as usize + 1, NIL);
            }
            self.bic_of_pid[pid as usize] = id;
        } else {
            self.bic_of_pid_big.push((pid, id));
        }
        id
    }

    /// `bic_set_bfqq`.
    pub(super) fn bic_set_bfqq(&mut self, bic: u32, q: u32, sync: bool) {
        let old = self.bics[bic as usize].bfqq[sync as usize];
        if old != NIL && self.q[old as usize].bic == bic {
            self.q[old as usize].bic = NIL;
        }
        self.bics[bic as usize].bfqq[sync as usize] = q;
        if q != NIL && self.bics[bic as usize].stable_merge_bfqq == q {
            self.put_stable_ref(q);
            self.bics[bic as usize].stable_merge_bfqq = NIL;
        }
    }

    // ----- queue lifecycle ----------------------------------------------------

    /// `bfqq_process_refs`.
    pub(super) fn process_refs(&self, q: u32) -> i32 {
        let qq = &self.q[q as usize];
        let e = &self.wf.e[qq.ent as usize];
        e.qref
            - e.allocated as i32
            - i32::from(e.on_st_or_in_serv)
            - i32::from(e.weight_counter != 0)
            - qq.stable_ref
    }

    /// Allocate a queue slot and its entity in group `g`
    /// (`bfq_init_bfqq` + `bfq_init_entity`), with the priority of `ioprio`.
    pub(super) fn alloc_queue(&mut self, t: T, g: u32, bic: u32, pid: u32, sync: bool) -> u32 {
        let q = match self.free_q.pop() {
            Some(q) => q,
            None => {
                self.q.push(Queue::blank());
                (self.q.len() - 1) as u32
            }
        };
        let gr = &self.g[g as usize];
        let ent = self.wf.new_entity(gr.sd, gr.ent, 0);
        let mut qq = Queue::blank();
        qq.in_use = true;
        qq.ent = ent;
        qq.group = g;
        let max_budget = self.max_budget();
        {
            self.wf.e[ent as usize].q = q;
            self.q[q as usize] = qq;
        }
        if bic != NIL {
            self.set_next_ioprio_data(q, bic);
        }
        let qq = &mut self.q[q as usize];
        if sync {
            // bfq_class_idle() reads the class, still zero here: every new
            // sync queue is tentatively marked short think time.
            qq.has_short_ttime = true;
            qq.sync = true;
            qq.just_created = true;
        }
        qq.ttime.last_end_request = t.ns + 1;
        qq.creation_time = t.j;
        qq.io_start_time = t.ns;
        qq.io_bound = true;
        qq.pid = i64::from(pid);
        qq.max_budget = 2 * max_budget / 3;
        qq.budget_timeout = smallest_from_now(t.j);
        qq.last_wr_start_finish = t.j;
        qq.wr_start_at_switch_to_srt = smallest_from_now(t.j);
        qq.split_time = smallest_from_now(t.j);
        qq.soft_rt_next_start = t.j;
        qq.seek_history = 1;
        qq.decrease_time_jif = t.j;
        // bfq_init_entity.
        let (nw, nl, nc) = (
            wf2q::ioprio_to_weight(qq.new_ioprio),
            qq.new_ioprio,
            qq.new_ioprio_class,
        );
        let e = &mut self.wf.e[ent as usize];
        e.new_weight = nw;
        e.weight = nw;
        e.orig_weight = nw;
        e.ioprio = nl;
        e.class = nc;
        e.new_class = nc;
        e.wr_coeff = 1;
        q
    }

    /// `bfq_set_next_ioprio_data`.
    pub(super) fn set_next_ioprio_data(&mut self, q: u32, bic: u32) {
        let (c, l) = class_and_level(self.bics[bic as usize].ioprio);
        let qq = &mut self.q[q as usize];
        qq.new_ioprio = l;
        qq.new_ioprio_class = c;
        let e = &mut self.wf.e[qq.ent as usize];
        e.new_weight = wf2q::ioprio_to_weight(l);
        e.new_class = c;
        e.prio_changed = true;
    }

    /// `bfq_put_queue` (the caller's reference).
    pub(super) fn put_queue(&mut self, q: u32) {
        let ent = self.q[q as usize].ent;
        self.wf.put_queue(ent);
        self.reap();
    }

    /// Free every queue whose last reference went away.
    pub(super) fn reap(&mut self) {
        while let Some(q) = self.wf.dead.pop() {
            self.free_queue(q);
        }
    }

    /// The end of `bfq_put_queue` for a queue with no reference left.
    fn free_queue(&mut self, q: u32) {
        if self.q[q as usize].in_burst_list {
            self.burst_list_del(q);
            if self.q[q as usize].bic != NIL && self.burst_size > 0 {
                self.burst_size -= 1;
            }
        }
        self.woken_list_del(q);
        // Queues it woke have no waker any more.
        let mut w = self.q[q as usize].woken_head;
        while w != NIL {
            let next = self.q[w as usize].woken_next;
            let ww = &mut self.q[w as usize];
            ww.waker = NIL;
            ww.woken_in = NIL;
            ww.woken_prev = NIL;
            ww.woken_next = NIL;
            w = next;
        }
        if self.last_completed_rq_bfqq == q {
            self.last_completed_rq_bfqq = NIL;
        }
        // Process references are counted: no io context points here.
        debug_assert!(self.bics.iter().all(|b| b.bfqq[0] != q && b.bfqq[1] != q));
        debug_assert!(self.q[q as usize].fifo.is_empty());
        debug_assert_eq!(self.q[q as usize].dispatched, 0);
        let ent = self.q[q as usize].ent;
        self.wf.free_entity(ent);
        self.q[q as usize] = Queue::blank();
        self.free_q.push(q);
    }

    /// `bfq_put_stable_ref`.
    pub(super) fn put_stable_ref(&mut self, q: u32) {
        self.q[q as usize].stable_ref -= 1;
        self.put_queue(q);
    }

    /// `bfq_release_process_ref`.
    pub(super) fn release_process_ref(&mut self, t: T, q: u32) {
        let qq = &self.q[q as usize];
        if qq.busy && qq.sort.is_empty() && self.in_service != q {
            self.del_bfqq_busy(t, q, false);
        }
        self.reassign_last_bfqq(q, NIL);
        self.put_queue(q);
    }

    /// `bfq_reassign_last_bfqq`.
    pub(super) fn reassign_last_bfqq(&mut self, cur: u32, new: u32) {
        let g = self.q[cur as usize].group as usize;
        if self.g[g].last_bfqq_created == cur {
            self.g[g].last_bfqq_created = new;
        }
    }

    // ----- woken lists and the burst list ----------------------------------------

    /// Put `q` at the head of `waker`'s woken list.
    pub(super) fn woken_list_add(&mut self, q: u32, waker: u32) {
        self.woken_list_del(q);
        let head = self.q[waker as usize].woken_head;
        let qq = &mut self.q[q as usize];
        qq.woken_in = waker;
        qq.woken_prev = NIL;
        qq.woken_next = head;
        if head != NIL {
            self.q[head as usize].woken_prev = q;
        }
        self.q[waker as usize].woken_head = q;
    }

    /// Take `q` off the woken list it is on.
    pub(super) fn woken_list_del(&mut self, q: u32) {
        let (w, p, n) = {
            let qq = &self.q[q as usize];
            (qq.woken_in, qq.woken_prev, qq.woken_next)
        };
        if w == NIL {
            return;
        }
        if p != NIL {
            self.q[p as usize].woken_next = n;
        } else {
            self.q[w as usize].woken_head = n;
        }
        if n != NIL {
            self.q[n as usize].woken_prev = p;
        }
        let qq = &mut self.q[q as usize];
        qq.woken_in = NIL;
        qq.woken_prev = NIL;
        qq.woken_next = NIL;
    }

    pub(super) fn burst_list_add(&mut self, q: u32) {
        if !self.q[q as usize].in_burst_list {
            self.q[q as usize].in_burst_list = true;
            self.burst_list.insert(0, q);
        }
    }

    pub(super) fn burst_list_del(&mut self, q: u32) {
        if self.q[q as usize].in_burst_list {
            self.q[q as usize].in_burst_list = false;
            if let Some(i) = self.burst_list.iter().position(|&x| x == q) {
                self.burst_list.remove(i);
            }
        }
    }

    // ----- requests inside a queue ----------------------------------------------

    /// `bfq_check_fifo`: the FIFO head if it expired, at most once per slot.
    fn check_fifo(&mut self, rqs: &RequestArena, t: T, q: u32, last: RqId) -> RqId {
        let qq = &mut self.q[q as usize];
        if qq.fifo_expire {
            return NIL;
        }
        qq.fifo_expire = true;
        let Some(rq) = qq.fifo.front() else {
            return NIL;
        };
        if rq == last || t.sim() < rqs[rq].fifo_time {
            return NIL;
        }
        rq
    }

    /// `bfq_find_next_rq`: the request to serve after `last` leaves.
    pub(super) fn find_next_rq(&mut self, rqs: &RequestArena, t: T, q: u32, last: RqId) -> RqId {
        let next = self.check_fifo(rqs, t, q, last);
        if next != NIL {
            return next;
        }
        let prev = self.forest.prev(last).unwrap_or(NIL);
        let next = match self.forest.next(last) {
            Some(n) => n,
            None => match self.forest.first(&self.q[q as usize].sort) {
                Some(f) if f != last => f,
                _ => NIL,
            },
        };
        choose_req(
            rqs,
            next,
            prev,
            rqs[last].sector,
            u64::from(self.back_max),
            u64::from(self.back_penalty),
        )
    }

    /// `bfq_update_io_thinktime`.
    pub(super) fn update_io_thinktime(&mut self, t: T, q: u32) {
        let slice_idle = self.slice_idle;
        let qq = &mut self.q[q as usize];
        if qq.dispatched != 0 || qq.busy {
            return;
        }
        let elapsed =
            t.ns.saturating_sub(qq.ttime.last_end_request)
                .min(2 * slice_idle);
        let tt = &mut qq.ttime;
        tt.samples = (7 * tt.samples + 256) / 8;
        tt.total = (7 * tt.total + 256 * elapsed) / 8;
        tt.mean = (tt.total + 128) / tt.samples.max(1);
    }

    /// `BFQ_RQ_SEEKY` against `last_pos`.
    pub(super) fn rq_seeky(&self, rqs: &RequestArena, last_pos: u64, rq: RqId) -> bool {
        let r = &rqs[rq];
        let sdist = if last_pos != 0 {
            r.sector.abs_diff(last_pos)
        } else {
            0
        };
        sdist > SEEK_THR && (self.rotational || r.nr_sectors < SECT_THR_NONROT)
    }

    /// `bfq_update_io_seektime`.
    pub(super) fn update_io_seektime(&mut self, rqs: &RequestArena, t: T, q: u32, rq: RqId) {
        let last = self.q[q as usize].last_request_pos;
        let seeky = self.rq_seeky(rqs, last, rq);
        let qq = &mut self.q[q as usize];
        qq.seek_history = (qq.seek_history << 1) | u32::from(seeky);
        let ent = qq.ent;
        if self.wf.e[ent as usize].wr_coeff > 1
            && self.q[q as usize].wr_cur_max_time == self.wr_rt_max_time
            && self.q[q as usize].totally_seeky()
        {
            if self.q[q as usize].wr_start_at_switch_to_srt + self.wr_duration() < t.j {
                self.end_wr(q, t);
            } else {
                self.switch_back_to_interactive_wr(q);
                self.wf.e[ent as usize].prio_changed = true;
            }
        }
    }

    /// `bfq_update_io_intensity`.
    pub(super) fn update_io_intensity(&mut self, t: T, q: u32) {
        let qq = &mut self.q[q as usize];
        let tot_io_time = t.ns.saturating_sub(qq.io_start_time);
        if qq.sort.is_empty() && qq.dispatched == 0 {
            qq.tot_idle_time += t.ns.saturating_sub(qq.ttime.last_end_request);
        }
        if qq.just_created {
            return;
        }
        qq.io_bound = qq.tot_idle_time * 5 <= tot_io_time;
        if tot_io_time > 200 * crate::sim::time::NS_PER_MS {
            qq.io_start_time = t.ns - (tot_io_time >> 1);
            qq.tot_idle_time >>= 1;
        }
    }
}

/// Requests whose bic index is below this find it in a direct table.
pub(super) const BIC_DIRECT_PIDS: usize = 1 << 20;

/// `bfq_smallest_from_now`: the farthest past jiffy.
pub fn smallest_from_now(j: i64) -> i64 {
    j - (1i64 << 60)
}
