//! BFQ, Budget Fair Queueing, as in Linux 6.18 (block/bfq-iosched.c,
//! bfq-wf2q.c, bfq-cgroup.c; reference/kernel-cfq-bfq-cgroup-tpps.md §2).
//!
//! One queue per process for sync I/O and one per (group, class, level) for
//! async I/O; a queue in service owns the device until it has used its
//! budget (sectors), empties (possibly after idling for its next request)
//! or times out. B-WF2Q+ ([`wf2q`]) orders queues and groups by virtual
//! finish time with their weights; classes are strictly prioritised, the
//! idle class protected from starvation. Budgets adapt per queue at every
//! expiry, the device's peak rate is estimated to size the largest budget,
//! slow queues are charged time instead of service. Idling (plugging the
//! device for an empty sync queue) is done when it boosts throughput or is
//! needed for service guarantees; while plugged other queues' I/O may be
//! injected. With `low_latency`, interactive and soft real-time queues are
//! weight-raised. Queue-creation bursts, early and stable queue merging,
//! hw_tag detection and per-entity tag limits complete the kernel's
//! heuristics.
//!
//! The file split follows the kernel's: this file has the elevator hooks,
//! queue selection, dispatch, expiry, completion and the idle timer;
//! [`wf2q`] the scheduling engine; [`queue`] queues and io contexts;
//! [`cgroup`] groups and depth limits; [`budget`] budgets, timeouts, peak
//! rate and hw_tag; [`idle`] the idling decision; [`weight_raising`],
//! [`inject`], [`burst`] and [`merge`] the heuristics of their names.
//!
//! Not modelled: multiple actuators (one actuator: the underused-actuator
//! injection never applies), process exit (tasks live for the whole run, so
//! every queue keeps its process reference), tasks changing cgroup, the
//! oom queue. Writeback throttling, which BFQ turns off while selected
//! (`wbt_disable_default`), is not part of the simulated rq-qos chain.

mod budget;
mod burst;
mod cgroup;
mod idle;
mod inject;
mod merge;
mod queue;
pub mod rbtree;
mod weight_raising;
pub mod wf2q;

use crate::block::elevator::{
    show_attrs, store_attr, Attr, AttrConv, AttrDefault, AttrParse, AttrRange, BioInfo, Elevator,
    MergeKind, QueueInfo, SchedCtx, Tunable,
};
use crate::block::request::{flags, RequestArena, RqId, RqList};
use crate::block::sysfs::msecs_to_jiffies;
use crate::cgroup::CgroupTree;
use crate::sched::sort_tree::SortForest;
use crate::sim::time::{Ns, NS_PER_JIFFY, NS_PER_MS, NS_PER_SEC};
use cgroup::Group;
use queue::{Bic, Queue};
use rbtree::NIL;
use wf2q::{Wf2q, CLASS_IDLE};

/// CPU time per tree edge walked or hierarchy level charged, at the
/// reference 2.4 GHz core (a node visit that misses the L1: ~30 cycles).
/// The registry's hook costs (1.9 us per request in total, after
/// bfq-iosched.rst) are those of one busy queue in one group; this is what
/// more queues and groups add, as the kernel's rbtree walks add it.
pub const STEP_NS: Ns = 12;

/// The kernel's clocks do not start at zero: the scheduler is attached long
/// after boot, so zero-initialised timestamps are far in the past. Internal
/// times are the simulation's plus this.
const BOOT_NS: u64 = 3600 * NS_PER_SEC;

/// `bfq_default_max_budget`.
pub const DEFAULT_MAX_BUDGET: i64 = 16 * 1024;
/// `bfq_timeout`: HZ/8 jiffies.
pub const TIMEOUT_JIFFIES: i64 = crate::sim::time::HZ as i64 / 8;
/// `BFQ_MIN_TT`.
pub const MIN_TT_NS: u64 = 2 * NS_PER_MS;
/// `bfq_slice_idle` default, ns.
pub const DEFAULT_SLICE_IDLE_NS: u64 = NS_PER_SEC / 125;
/// `bfq_fifo_expire` defaults [async, sync], ns.
pub const DEFAULT_FIFO_EXPIRE_NS: [u64; 2] = [NS_PER_SEC / 4, NS_PER_SEC / 8];
/// `bfq_back_max` (KiB) and `bfq_back_penalty`.
pub const DEFAULT_BACK_MAX: u32 = 16 * 1024;
pub const DEFAULT_BACK_PENALTY: u32 = 2;
/// `bfq_async_charge_factor`.
pub const ASYNC_CHARGE_FACTOR: i64 = 3;

/// The moment a hook runs: ns and jiffies on the kernel's clocks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct T {
    pub ns: u64,
    pub j: i64,
}

impl T {
    /// The simulation's time (what request timestamps hold).
    pub fn sim(self) -> Ns {
        self.ns - BOOT_NS
    }

    fn at(now: Ns) -> T {
        let ns = now + BOOT_NS;
        T {
            ns,
            j: (ns / NS_PER_JIFFY) as i64,
        }
    }
}

/// `msecs_to_jiffies` as a jiffy count.
pub(crate) fn ms_j(ms: i64) -> i64 {
    msecs_to_jiffies(ms)
}

/// Why the in-service queue expires (`enum bfqq_expiration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
}

// Per-request words: elv[0] = queue + 1 (0: none); elv[1] = bic + 1 in the
// low 32 bits and where the request sits above.
const LOC_SHIFT: u32 = 32;
const LOC_QUEUED: u64 = 1 << LOC_SHIFT;
const LOC_DISPATCH: u64 = 2 << LOC_SHIFT;
const LOC_MASK: u64 = 3 << LOC_SHIFT;

#[inline]
pub(crate) fn rq_q(rqs: &RequestArena, rq: RqId) -> u32 {
    (rqs[rq].elv[0] as u32).wrapping_sub(1)
}
#[inline]
pub(crate) fn rq_bic(rqs: &RequestArena, rq: RqId) -> u32 {
    (rqs[rq].elv[1] as u32).wrapping_sub(1)
}
#[inline]
fn rq_loc(rqs: &RequestArena, rq: RqId) -> u64 {
    rqs[rq].elv[1] & LOC_MASK
}
#[inline]
fn set_rq_loc(rqs: &mut RequestArena, rq: RqId, loc: u64) {
    let w = &mut rqs[rq].elv[1];
    *w = (*w & !LOC_MASK) | loc;
}

/// BFQ (`struct bfq_data`).
pub struct Bfq {
    pub(crate) wf: Wf2q,
    pub(crate) q: Vec<Queue>,
    pub(crate) free_q: Vec<u32>,
    pub(crate) g: Vec<Group>,
    /// cgroup id → group.
    pub(crate) group_of: Vec<u32>,
    pub(crate) bics: Vec<Bic>,
    pub(crate) bic_of_pid: Vec<u32>,
    pub(crate) bic_of_pid_big: Vec<(u32, u32)>,
    /// Every queue's sort list.
    pub(crate) forest: SortForest,
    /// `bfqd->dispatch`: at-head inserts, served first.
    dispatch_list: RqList,
    pub(crate) queued: u32,
    pub(crate) tot_rq_in_driver: u32,
    pub(crate) max_rq_in_driver: u32,
    /// -1 until detected, then 0 or 1.
    pub(crate) hw_tag: i32,
    pub(crate) hw_tag_samples: u32,
    pub(crate) nonrot_with_queueing: bool,
    pub(crate) rotational: bool,
    pub(crate) nr_requests: u32,
    pub(crate) in_service: u32,
    pub(crate) in_serv_last_pos: u64,
    pub(crate) last_position: u64,
    /// When the idle slice timer is due (simulation ns), None when not
    /// armed. The block layer cannot take a timer event back, so a
    /// cancelled or re-armed timer leaves its event behind; at most one
    /// event is kept outstanding (`idle_timer_event`, its time), and an
    /// event that fires before the deadline re-arms for the rest.
    idle_timer_due: Option<Ns>,
    idle_timer_event: Option<Ns>,
    pub(crate) last_idling_start: u64,
    pub(crate) last_idling_start_jiffies: i64,
    pub(crate) last_budget_start: u64,
    pub(crate) budgets_assigned: u32,
    // Peak-rate estimation.
    pub(crate) peak_rate_samples: u32,
    pub(crate) sequential_samples: u32,
    pub(crate) tot_sectors_dispatched: u64,
    pub(crate) last_rq_max_size: u32,
    pub(crate) delta_from_first: u64,
    pub(crate) first_dispatch: u64,
    pub(crate) last_dispatch: u64,
    pub(crate) last_completion: u64,
    /// Sectors/us << 16.
    pub(crate) peak_rate: u32,
    pub(crate) rate_dur_prod: i64,
    /// `bfqd->bfq_max_budget`.
    pub(crate) bfq_max_budget: i64,
    // Injection.
    pub(crate) last_empty_occupied_ns: u64,
    pub(crate) wait_dispatch: bool,
    pub(crate) waited_rq: RqId,
    pub(crate) rqs_injected: bool,
    pub(crate) last_completed_rq_bfqq: u32,
    // Bursts.
    pub(crate) burst_list: Vec<u32>,
    pub(crate) burst_size: u32,
    pub(crate) large_burst: bool,
    pub(crate) last_ins_in_burst: i64,
    pub(crate) burst_parent_entity: u32,
    // Tunables (sysfs) and constants.
    pub(crate) fifo_expire: [u64; 2],
    pub(crate) back_max: u32,
    pub(crate) back_penalty: u32,
    pub(crate) slice_idle: u64,
    pub(crate) timeout: i64,
    pub(crate) user_max_budget: i64,
    pub(crate) strict_guarantees: bool,
    pub(crate) low_latency: bool,
    pub(crate) wr_coeff: u32,
    pub(crate) wr_rt_max_time: i64,
    pub(crate) wr_min_idle_time: i64,
    pub(crate) wr_min_inter_arr_async: i64,
    pub(crate) wr_max_softrt_rate: i64,
    pub(crate) large_burst_thresh: u32,
    pub(crate) burst_interval: i64,
    /// Tag caps per [weight-raised][sync], in tags of the whole queue.
    pub(crate) async_depths: [[u32; 2]; 2],
    /// The same as shallow depths, in the era's shallow unit.
    pub(crate) shallow_depths: [[u32; 2]; 2],
    /// Tree steps charged so far (statistics).
    pub(crate) total_steps: u64,
    /// When the last hook ran (sysfs stores see no clock).
    pub(crate) last_now: T,
    // What the hook asks of the block layer.
    out_timer: Option<(Ns, u64)>,
    out_kick: bool,
    /// The last dispatch found nothing to do and changed nothing (the
    /// in-service queue is plugged and nothing can be injected, or no queue
    /// is busy): set by `dispatch_request` on those paths only.
    quiet_none: bool,
    /// (time, rotational) of a quiet empty dispatch with no hook since:
    /// another dispatch with the same inputs finds the same state and
    /// returns nothing again without walking the decision. Before 5.12 a
    /// queue run after `bfq_schedule_dispatch` or an idle timer asks every
    /// hardware queue in turn (64 asks on a 64-CPU nvme), and each empty
    /// ask re-runs its queue 3 ms later.
    idle_memo: Option<(Ns, bool)>,
    /// Set at `init`.
    initialised: bool,
}

impl Default for Bfq {
    fn default() -> Self {
        Bfq::new()
    }
}

/// `ref_rate` (sectors/us << 16) and `ref_wr_duration` (ms), [rotational, non-rotational].
const REF_RATE: [i64; 2] = [14000, 33000];
const REF_WR_DURATION_MS: [i64; 2] = [7000, 2500];

impl Bfq {
    pub fn new() -> Bfq {
        let t = T::at(0);
        let mut b = Bfq {
            wf: Wf2q::new(),
            q: Vec::new(),
            free_q: Vec::new(),
            g: Vec::new(),
            group_of: Vec::new(),
            bics: Vec::new(),
            bic_of_pid: Vec::new(),
            bic_of_pid_big: Vec::new(),
            forest: SortForest::new(),
            dispatch_list: RqList::new(),
            queued: 0,
            tot_rq_in_driver: 0,
            max_rq_in_driver: 0,
            hw_tag: -1,
            hw_tag_samples: 0,
            nonrot_with_queueing: false,
            rotational: true,
            nr_requests: 0,
            in_service: NIL,
            in_serv_last_pos: 0,
            last_position: 0,
            idle_timer_due: None,
            idle_timer_event: None,
            last_idling_start: 0,
            last_idling_start_jiffies: 0,
            last_budget_start: 0,
            budgets_assigned: 0,
            peak_rate_samples: 0,
            sequential_samples: 0,
            tot_sectors_dispatched: 0,
            last_rq_max_size: 0,
            delta_from_first: 0,
            first_dispatch: 0,
            last_dispatch: 0,
            last_completion: 0,
            peak_rate: 0,
            rate_dur_prod: 0,
            bfq_max_budget: DEFAULT_MAX_BUDGET,
            last_empty_occupied_ns: 0,
            wait_dispatch: false,
            waited_rq: NIL,
            rqs_injected: false,
            last_completed_rq_bfqq: NIL,
            burst_list: Vec::new(),
            burst_size: 0,
            large_burst: false,
            last_ins_in_burst: 0,
            burst_parent_entity: NIL,
            fifo_expire: DEFAULT_FIFO_EXPIRE_NS,
            back_max: DEFAULT_BACK_MAX,
            back_penalty: DEFAULT_BACK_PENALTY,
            slice_idle: DEFAULT_SLICE_IDLE_NS,
            timeout: TIMEOUT_JIFFIES,
            user_max_budget: 0,
            strict_guarantees: false,
            low_latency: true,
            wr_coeff: 30,
            wr_rt_max_time: ms_j(300),
            wr_min_idle_time: ms_j(2000),
            wr_min_inter_arr_async: ms_j(500),
            wr_max_softrt_rate: 7000,
            large_burst_thresh: 8,
            burst_interval: ms_j(180),
            async_depths: [[1; 2]; 2],
            shallow_depths: [[1; 2]; 2],
            total_steps: 0,
            last_now: t,
            out_timer: None,
            out_kick: false,
            quiet_none: false,
            idle_memo: None,
            initialised: false,
        };
        b.set_device(true, t);
        b
    }

    /// Device-dependent state of `bfq_init_queue` (peak rate, reference
    /// durations, root group).
    fn set_device(&mut self, rotational: bool, t: T) {
        self.rotational = rotational;
        let nonrot = usize::from(!rotational);
        self.nonrot_with_queueing = !rotational;
        self.rate_dur_prod = REF_RATE[nonrot] * ms_j(REF_WR_DURATION_MS[nonrot]);
        self.peak_rate = (REF_RATE[nonrot] * 2 / 3) as u32;
        if self.g.is_empty() {
            self.init_root_group(t);
        }
    }

    /// The in-service queue, if any (tests and statistics).
    pub fn in_service_queue(&self) -> Option<u32> {
        (self.in_service != NIL).then_some(self.in_service)
    }

    /// Current automatic (or user) maximum budget, sectors.
    pub fn max_budget_now(&self) -> i64 {
        self.bfq_max_budget
    }

    /// Peak-rate estimate in sectors/us << 16.
    pub fn peak_rate(&self) -> u32 {
        self.peak_rate
    }

    /// The hw_tag estimate (-1 unknown, 0, 1).
    pub fn hw_tag(&self) -> i32 {
        self.hw_tag
    }

    /// Weight-raising coefficient of the sync queue of `pid` (1 if none).
    pub fn wr_coeff_of(&self, pid: u32) -> u32 {
        let b = self.bic_lookup(pid);
        if b == NIL {
            return 1;
        }
        let q = self.bics[b as usize].bfqq[1];
        if q == NIL {
            return 1;
        }
        self.wf.e[self.q[q as usize].ent as usize].wr_coeff
    }

    /// Requests in the device (dispatched, not completed).
    pub fn in_driver(&self) -> u32 {
        self.tot_rq_in_driver
    }

    // ----- output to the block layer -----------------------------------------

    /// Arm the idle timer `sl` ns from now (`hrtimer_start`).
    pub(crate) fn start_idle_timer(&mut self, t: T, sl: u64) {
        let due = t.sim() + sl;
        self.idle_timer_due = Some(due);
        self.push_idle_timer_event(due);
    }

    /// `hrtimer_try_to_cancel` on the idle timer.
    pub(crate) fn cancel_idle_timer(&mut self) {
        self.idle_timer_due = None;
    }

    /// Ask for a timer event at `at` unless one is outstanding no later.
    fn push_idle_timer_event(&mut self, at: Ns) {
        if self.idle_timer_event.is_none_or(|e| e > at) {
            self.idle_timer_event = Some(at);
            self.out_timer = Some((at, at));
        }
    }

    /// `bfq_schedule_dispatch`.
    pub(crate) fn schedule_dispatch(&mut self) {
        if self.queued != 0 {
            self.out_kick = true;
        }
    }

    /// End of a hook: free queues whose last reference went away, hand
    /// timers, queue runs and CPU cost over to the block layer.
    fn flush(&mut self, ctx: &mut SchedCtx) {
        // Any hook may change what a dispatch would find.
        self.idle_memo = None;
        self.reap();
        if let Some((at, tok)) = self.out_timer.take() {
            ctx.arm_timer(at, tok);
        }
        if std::mem::take(&mut self.out_kick) {
            ctx.kick();
        }
        let steps = std::mem::take(&mut self.wf.steps);
        self.total_steps += steps;
        if steps > 0 {
            ctx.charge_cpu(steps * STEP_NS);
        }
    }

    /// The hook's time, remembered.
    fn now(&mut self, now: Ns) -> T {
        let t = T::at(now);
        self.last_now = t;
        t
    }

    fn ensure_init(&mut self, q: &QueueInfo) {
        if !self.initialised {
            self.initialised = true;
            self.set_device(q.rotational, T::at(0));
            self.nr_requests = q.nr_requests;
            self.update_depths(q);
        }
        self.rotational = q.rotational;
    }

    // ----- queue state changes (bfq-wf2q.c) ------------------------------------

    /// `bfq_activate_bfqq`.
    fn activate_bfqq(&mut self, t: T, q: u32) {
        let ent = self.q[q as usize].ent;
        let nbw = self.q[q as usize].non_blocking_wait_rq;
        self.wf.activate_requeue_entity(ent, nbw, false, false, t.j);
        self.q[q as usize].non_blocking_wait_rq = false;
    }

    /// `bfq_requeue_bfqq`.
    pub(crate) fn requeue_bfqq(&mut self, t: T, q: u32, expiration: bool) {
        let ent = self.q[q as usize].ent;
        let in_service = self.in_service == q;
        self.wf
            .activate_requeue_entity(ent, false, in_service, expiration, t.j);
    }

    /// `bfq_add_bfqq_busy`.
    fn add_bfqq_busy(&mut self, t: T, q: u32) {
        self.activate_bfqq(t, q);
        let ent = self.q[q as usize].ent;
        self.q[q as usize].busy = true;
        let class = self.wf.e[ent as usize].class;
        self.q[q as usize].busy_class = class;
        self.wf.busy_queues[class as usize] += 1;
        let wr = self.wf.e[ent as usize].wr_coeff;
        if self.q[q as usize].dispatched == 0 {
            self.wf.add_in_groups_with_pending_reqs(ent);
            if wr == 1 {
                self.wf.weights_tree_add(ent);
            }
        }
        if wr > 1 {
            self.wf.wr_busy_queues += 1;
        }
        // Move to the head of its waker's woken list.
        let w = self.q[q as usize].woken_in;
        if w != NIL && self.q[w as usize].woken_head != q {
            self.woken_list_add(q, w);
        }
    }

    /// `bfq_del_bfqq_busy`.
    pub(crate) fn del_bfqq_busy(&mut self, t: T, q: u32, expiration: bool) {
        let ent = self.q[q as usize].ent;
        self.q[q as usize].busy = false;
        let class = self.q[q as usize].busy_class as usize;
        self.wf.busy_queues[class] -= 1;
        if self.wf.e[ent as usize].wr_coeff > 1 {
            self.wf.wr_busy_queues -= 1;
        }
        self.wf.deactivate_entity(ent, true, expiration, t.j);
        if self.q[q as usize].dispatched == 0 {
            self.wf.del_in_groups_with_pending_reqs(ent);
            self.wf.weights_tree_remove(ent);
        }
        self.reap();
    }

    /// `bfq_bfqq_served`.
    pub(crate) fn bfqq_served(&mut self, t: T, q: u32, served: i64) {
        let ent = self.q[q as usize].ent;
        let qq = &mut self.q[q as usize];
        if qq.service_from_backlogged == 0 {
            qq.first_io_time = t.j;
        }
        if self.wf.e[ent as usize].wr_coeff > 1 {
            qq.service_from_wr += served;
        }
        qq.service_from_backlogged += served;
        self.wf.served(ent, served);
    }

    /// `bfqq_request_allocated` / `bfqq_request_freed`.
    fn request_allocated(&mut self, q: u32, up: bool) {
        let mut id = self.q[q as usize].ent;
        while id != NIL {
            let e = &mut self.wf.e[id as usize];
            if up {
                e.allocated += 1;
            } else {
                e.allocated -= 1;
            }
            id = e.parent;
        }
    }

    // ----- requests in, requests out ---------------------------------------------

    /// `bfq_init_rq`: the queue of a request being inserted.
    fn init_rq(&mut self, rqs: &mut RequestArena, cgroups: &CgroupTree, t: T, rq: RqId) -> u32 {
        let q = rq_q(rqs, rq);
        if q != NIL {
            return q;
        }
        let (pid, ioprio, cg, sync) = {
            let r = &rqs[rq];
            (r.pid, r.ioprio, r.cgroup, r.is_sync())
        };
        let bic = self.bic_get(pid, ioprio);
        self.check_ioprio_change(cgroups, t, bic, ioprio, cg);
        let q = self.get_bfqq_handle_split(cgroups, t, bic, cg, sync);
        self.request_allocated(q, true);
        let ent = self.q[q as usize].ent;
        self.wf.e[ent as usize].qref += 1;
        self.bics[bic as usize].requests += 1;
        rqs[rq].elv = [u64::from(q) + 1, u64::from(bic) + 1];
        if self.q[q as usize].new_bfqq == NIL && self.process_refs(q) == 1 {
            self.q[q as usize].bic = bic;
        }
        if self.q[q as usize].just_created
            && (self.burst_size > 0 || self.wf.tot_busy_queues() == 0)
        {
            self.handle_burst(t, q);
        }
        q
    }

    /// `bfq_check_ioprio_change`.
    fn check_ioprio_change(
        &mut self,
        cgroups: &CgroupTree,
        t: T,
        bic: u32,
        ioprio: crate::cgroup::IoPrio,
        cg: u16,
    ) {
        if self.bics[bic as usize].ioprio == ioprio {
            return;
        }
        self.bics[bic as usize].ioprio = ioprio;
        let old = self.bics[bic as usize].bfqq[0];
        if old != NIL {
            let pid = self.bics[bic as usize].pid;
            let new = self.get_queue(cgroups, t, bic, pid, cg, false, true);
            self.bic_set_bfqq(bic, new, false);
            self.release_process_ref(t, old);
        }
        let sq = self.bics[bic as usize].bfqq[1];
        if sq != NIL {
            self.set_next_ioprio_data(sq, bic);
        }
    }

    /// `bfq_get_queue`.
    #[allow(clippy::too_many_arguments)]
    fn get_queue(
        &mut self,
        cgroups: &CgroupTree,
        t: T,
        bic: u32,
        pid: u32,
        cg: u16,
        sync: bool,
        respawn: bool,
    ) -> u32 {
        let g = self.group_of(cgroups, t, cg);
        let mut q = NIL;
        let mut slot = None;
        if !sync {
            let p = self.bics[bic as usize].ioprio;
            let s = match p.class {
                crate::cgroup::IoPrioClass::Rt => (0usize, p.level.min(7) as usize),
                crate::cgroup::IoPrioClass::None => {
                    (1, crate::cgroup::ioprio::IOPRIO_NORM as usize)
                }
                crate::cgroup::IoPrioClass::Be => (1, p.level.min(7) as usize),
                crate::cgroup::IoPrioClass::Idle => (2, 0),
            };
            q = if s.0 == 2 {
                self.g[g as usize].async_idle
            } else {
                self.g[g as usize].async_bfqq[s.0][s.1]
            };
            slot = Some(s);
        }
        if q == NIL {
            q = self.alloc_queue(t, g, bic, pid, sync);
            if let Some(s) = slot {
                // The group's reference.
                let ent = self.q[q as usize].ent;
                self.wf.e[ent as usize].qref += 1;
                if s.0 == 2 {
                    self.g[g as usize].async_idle = q;
                } else {
                    self.g[g as usize].async_bfqq[s.0][s.1] = q;
                }
            }
        }
        // The process reference.
        let ent = self.q[q as usize].ent;
        self.wf.e[ent as usize].qref += 1;
        if sync && !respawn {
            q = self.do_or_sched_stable_merge(t, q, bic);
        }
        q
    }

    /// `__bfq_get_bfqq_handle_split`: the process's queue, created if it
    /// has none; `new_queue` when it did.
    fn get_bfqq_handle_split_inner(
        &mut self,
        cgroups: &CgroupTree,
        t: T,
        bic: u32,
        cg: u16,
        split: bool,
        sync: bool,
    ) -> (u32, bool) {
        let q = self.bics[bic as usize].bfqq[usize::from(sync)];
        if q != NIL {
            return (q, false);
        }
        let pid = self.bics[bic as usize].pid;
        let q = self.get_queue(cgroups, t, bic, pid, cg, sync, split);
        self.bic_set_bfqq(bic, q, sync);
        if split && sync {
            let (was, saved_large) = {
                let b = &self.bics[bic as usize];
                (b.was_in_burst_list, b.saved_in_large_burst)
            };
            if (was && self.large_burst) || saved_large {
                self.q[q as usize].in_large_burst = true;
            } else {
                self.q[q as usize].in_large_burst = false;
                if was {
                    self.burst_list_add(q);
                }
            }
            self.q[q as usize].split_time = t.j;
        }
        (q, true)
    }

    /// `bfq_get_bfqq_handle_split`: also splits a shared queue gone seeky.
    fn get_bfqq_handle_split(
        &mut self,
        cgroups: &CgroupTree,
        t: T,
        bic: u32,
        cg: u16,
        sync: bool,
    ) -> u32 {
        let (q, new_queue) = self.get_bfqq_handle_split_inner(cgroups, t, bic, cg, false, sync);
        if new_queue {
            return q;
        }
        let qq = &self.q[q as usize];
        if !qq.coop || !qq.split_coop || self.bics[bic as usize].stably_merged {
            return q;
        }
        let waker = self.waker_bfqq(q);
        if self.q[q as usize].in_large_burst {
            self.bics[bic as usize].saved_in_large_burst = true;
        }
        let kept = self.split_bfqq(t, bic, q);
        if kept != NIL {
            self.resume_state(t, kept, bic, true);
            return kept;
        }
        let (q, _) = self.get_bfqq_handle_split_inner(cgroups, t, bic, cg, true, sync);
        self.resume_state(t, q, bic, false);
        self.q[q as usize].waker = waker;
        self.q[q as usize].tentative_waker = NIL;
        if waker != NIL {
            self.woken_list_add(q, waker);
        }
        q
    }

    /// `__bfq_insert_request`.
    fn insert_request(&mut self, rqs: &mut RequestArena, t: T, rq: RqId) {
        let mut q = rq_q(rqs, rq);
        let bic = rq_bic(rqs, rq);
        let pos = rqs[rq].sector;
        let new = self.setup_cooperator(rqs, t, q, pos, bic);
        if new != NIL {
            let old = q;
            self.request_allocated(new, true);
            self.request_allocated(old, false);
            let nent = self.q[new as usize].ent;
            self.wf.e[nent as usize].qref += 1;
            if self.bics[bic as usize].bfqq[1] == q {
                while q != new {
                    q = self.merge_bfqqs(t, bic, q);
                }
            } else {
                // The kernel goes on with the old queue here (its bic was
                // redirected earlier); the request goes to the new one.
                q = new;
            }
            self.q[old as usize].just_created = false;
            self.put_queue(old);
            rqs[rq].elv[0] = u64::from(new) + 1;
        }
        self.update_io_thinktime(t, q);
        self.update_has_short_ttime(t, q);
        self.update_io_seektime(rqs, t, q, rq);
        self.add_request(rqs, t, rq);
        let sync = rqs[rq].is_sync();
        rqs[rq].fifo_time = t.sim() + self.fifo_expire[usize::from(sync)];
        let q = rq_q(rqs, rq);
        self.q[q as usize].fifo.push_back(rqs, rq);
        set_rq_loc(rqs, rq, LOC_QUEUED);
        self.rq_enqueued(rqs, t, q, rq);
    }

    /// `bfq_add_request`.
    fn add_request(&mut self, rqs: &mut RequestArena, t: T, rq: RqId) {
        let q = rq_q(rqs, rq);
        let ent = self.q[q as usize].ent;
        let old_wr_coeff = self.wf.e[ent as usize].wr_coeff;
        let mut interactive = false;
        let sync = rqs[rq].is_sync();
        self.q[q as usize].queued[usize::from(sync)] += 1;
        self.queued += 1;
        let bic = rq_bic(rqs, rq);
        if self.q[q as usize].sync && self.bics[bic as usize].requests <= 1 {
            self.check_waker(t, q);
            if self.q[q as usize].decrease_time_jif + ms_j(1000) <= t.j {
                self.reset_inject_limit(t, q);
            }
            let qq = &self.q[q as usize];
            if self.in_service == q
                && (self.tot_rq_in_driver == 0
                    || (qq.last_serv_time_ns > 0 && self.rqs_injected && self.tot_rq_in_driver > 0))
                && qq.decrease_time_jif + ms_j(10) <= t.j
            {
                self.last_empty_occupied_ns = t.ns;
                self.wait_dispatch = true;
                if self.tot_rq_in_driver == 0 {
                    self.rqs_injected = false;
                }
            }
        }
        if self.q[q as usize].sync {
            self.update_io_intensity(t, q);
        }
        let sector = rqs[rq].sector;
        let mut sort = self.q[q as usize].sort;
        self.forest.insert(&mut sort, rq, sector);
        self.q[q as usize].sort = sort;
        let prev = self.q[q as usize].next_rq;
        let next = queue::choose_req(
            rqs,
            prev,
            rq,
            self.last_position,
            u64::from(self.back_max),
            u64::from(self.back_penalty),
        );
        self.q[q as usize].next_rq = next;
        if !self.nonrot_with_queueing && prev != next {
            self.pos_tree_add_move(rqs, t, q);
        }
        if !self.q[q as usize].busy {
            interactive = self.handle_idle_busy_switch(rqs, t, q, old_wr_coeff, rq);
        } else {
            if self.low_latency
                && old_wr_coeff == 1
                && !sync
                && self.q[q as usize].last_wr_start_finish + self.wr_min_inter_arr_async < t.j
            {
                self.wf.e[ent as usize].wr_coeff = self.wr_coeff;
                self.q[q as usize].wr_cur_max_time = self.wr_duration();
                self.wf.wr_busy_queues += 1;
                self.wf.e[ent as usize].prio_changed = true;
            }
            if prev != next {
                self.updated_next_req(rqs, t, q);
            }
        }
        let wr = self.wf.e[ent as usize].wr_coeff;
        if self.low_latency && (old_wr_coeff == 1 || wr == 1 || interactive) {
            self.q[q as usize].last_wr_start_finish = t.j;
        }
    }

    /// `bfq_bfqq_handle_idle_busy_switch`; returns `interactive`.
    fn handle_idle_busy_switch(
        &mut self,
        rqs: &RequestArena,
        t: T,
        q: u32,
        old_wr_coeff: u32,
        rq: RqId,
    ) -> bool {
        let idle_for_long_time = self.idle_for_long_time(t, q);
        let qq = &self.q[q as usize];
        let ent = qq.ent;
        let arrived_in_time = t.ns <= qq.ttime.last_end_request + self.slice_idle * 3;
        let bic = rq_bic(rqs, rq);
        let non_merged_or_stably_merged = qq.bic != NIL || self.bics[bic as usize].stably_merged;
        let in_burst = qq.in_large_burst;
        let new_weight = self.wf.e[ent as usize].new_weight;
        let soft_rt = self.wr_max_softrt_rate > 0
            && !qq.totally_seeky()
            && !in_burst
            && qq.soft_rt_next_start < t.j
            && qq.dispatched == 0
            && new_weight == 40;
        let interactive = !in_burst && idle_for_long_time && new_weight == 40;
        let wr_or_deserves_wr = self.low_latency
            && (self.wf.e[ent as usize].wr_coeff > 1
                || (qq.sync && non_merged_or_stably_merged && (interactive || soft_rt)));
        let wants_to_preempt = self.update_budg_for_activation(rqs, q, arrived_in_time);
        let qq = &mut self.q[q as usize];
        if !qq.just_created && idle_for_long_time && qq.budget_timeout + ms_j(10000) < t.j {
            self.burst_list_del(q);
            self.q[q as usize].in_large_burst = false;
        }
        self.q[q as usize].just_created = false;
        if self.low_latency {
            let qq = &mut self.q[q as usize];
            if qq.split_time > t.j {
                qq.split_time = t.j - self.wr_min_idle_time - 1;
            }
            if qq.split_time + self.wr_min_idle_time < t.j {
                self.update_wr_on_rq_arrival(
                    t,
                    q,
                    old_wr_coeff,
                    wr_or_deserves_wr,
                    interactive,
                    in_burst,
                    soft_rt,
                );
                if old_wr_coeff != self.wf.e[ent as usize].wr_coeff {
                    self.wf.e[ent as usize].prio_changed = true;
                }
            }
        }
        let qq = &mut self.q[q as usize];
        qq.last_idle_bklogged = t.j;
        qq.service_from_backlogged = 0;
        qq.softrt_update = false;
        self.add_bfqq_busy(t, q);
        let isq = self.in_service;
        if isq != NIL {
            let ise = self.q[isq as usize].ent;
            let preempt = (wants_to_preempt
                && self.wf.e[ent as usize].wr_coeff >= self.wf.e[ise as usize].wr_coeff)
                || self.higher_class_or_weight(q, isq)
                || !self.better_to_idle(isq);
            if preempt && self.wf.next_queue_may_preempt(0) {
                self.expire(rqs, t, isq, false, Reason::Preempted);
            }
        }
        interactive
    }

    /// `bfq_updated_next_req`.
    pub(crate) fn updated_next_req(&mut self, rqs: &RequestArena, t: T, q: u32) {
        let next = self.q[q as usize].next_rq;
        if next == NIL || self.in_service == q {
            return;
        }
        let ent = self.q[q as usize].ent;
        let charge = self.serv_to_charge(rqs, next, q);
        let e = &self.wf.e[ent as usize];
        let new_budget = self.q[q as usize].max_budget.max(charge).max(e.service);
        if e.budget != new_budget {
            self.wf.e[ent as usize].budget = new_budget;
            self.requeue_bfqq(t, q, false);
        }
    }

    /// `bfq_rq_enqueued`.
    fn rq_enqueued(&mut self, rqs: &RequestArena, t: T, q: u32, rq: RqId) {
        let r = &rqs[rq];
        let qq = &mut self.q[q as usize];
        if r.has(flags::META) {
            qq.meta_pending += 1;
        }
        qq.last_request_pos = r.end_sector();
        if self.in_service == q && qq.wait_request {
            let small_req = qq.queued[usize::from(r.is_sync())] == 1 && r.nr_sectors < 32;
            let budget_timeout = self.budget_timeout_expired(t, q);
            if small_req && self.idling_boosts_thr_without_issues(q) && !budget_timeout {
                return;
            }
            self.q[q as usize].wait_request = false;
            self.cancel_idle_timer();
            if budget_timeout {
                self.expire(rqs, t, q, false, Reason::BudgetTimeout);
            }
        }
    }

    /// `bfq_remove_request`: take a request out of its queue.
    fn remove_request(&mut self, rqs: &mut RequestArena, t: T, rq: RqId) {
        let q = rq_q(rqs, rq);
        let sync = rqs[rq].is_sync();
        if self.q[q as usize].next_rq == rq {
            let n = self.find_next_rq(rqs, t, q, rq);
            self.q[q as usize].next_rq = n;
            self.updated_next_req(rqs, t, q);
        }
        if rq_loc(rqs, rq) == LOC_QUEUED {
            self.q[q as usize].fifo.remove(rqs, rq);
        }
        set_rq_loc(rqs, rq, 0);
        self.q[q as usize].queued[usize::from(sync)] -= 1;
        self.queued -= 1;
        let mut sort = self.q[q as usize].sort;
        self.forest.remove(&mut sort, rq);
        self.q[q as usize].sort = sort;
        if sort.is_empty() {
            self.q[q as usize].next_rq = NIL;
            if self.q[q as usize].busy && self.in_service != q {
                self.del_bfqq_busy(t, q, false);
                let ent = self.q[q as usize].ent;
                self.wf.e[ent as usize].budget = 0;
                self.wf.e[ent as usize].service = 0;
            }
            self.pos_tree_remove(q);
        } else if !self.nonrot_with_queueing {
            self.pos_tree_add_move(rqs, t, q);
        }
        if rqs[rq].has(flags::META) {
            self.q[q as usize].meta_pending -= 1;
        }
    }

    // ----- selection and dispatch --------------------------------------------------

    /// `__bfq_set_in_service_queue`.
    fn set_in_service(&mut self, t: T, q: u32) {
        if q != NIL {
            self.q[q as usize].fifo_expire = false;
            self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
            let ent = self.q[q as usize].ent;
            let wr = self.wf.e[ent as usize].wr_coeff;
            let rt = self.wr_rt_max_time;
            let qq = &mut self.q[q as usize];
            if qq.last_wr_start_finish < t.j
                && wr > 1
                && qq.wr_cur_max_time == rt
                && qq.budget_timeout < t.j
            {
                if qq.budget_timeout > qq.last_wr_start_finish {
                    qq.last_wr_start_finish += t.j - qq.budget_timeout;
                } else {
                    qq.last_wr_start_finish = t.j;
                }
            }
            self.set_budget_timeout(t, q);
        }
        self.in_service = q;
        self.in_serv_last_pos = 0;
    }

    /// `bfq_set_in_service_queue`.
    fn set_next_in_service(&mut self, t: T) -> u32 {
        let ent = self.wf.get_next_queue(0, t.j);
        let q = if ent == NIL {
            NIL
        } else {
            self.wf.e[ent as usize].q
        };
        self.set_in_service(t, q);
        q
    }

    /// `bfq_select_queue`.
    fn select_queue(&mut self, rqs: &RequestArena, t: T) -> u32 {
        let mut q = self.in_service;
        if q != NIL && self.may_expire_for_budg_timeout(t, q) && !self.must_idle(q) {
            self.expire(rqs, t, q, false, Reason::BudgetTimeout);
            q = NIL;
        }
        // Nothing changed yet: the in-service queue stays as it was.
        let mut untouched = q != NIL;
        loop {
            if q == NIL {
                untouched = false;
                q = self.set_next_in_service(t);
                if q == NIL {
                    return NIL;
                }
            }
            // check_queue (one actuator: no underused-actuator injection).
            let next = self.q[q as usize].next_rq;
            if next != NIL {
                if self.serv_to_charge(rqs, next, q) > self.budget_left(q) {
                    self.expire(rqs, t, q, false, Reason::BudgetExhausted);
                    q = NIL;
                    continue;
                }
                if self.q[q as usize].wait_request {
                    self.q[q as usize].wait_request = false;
                    self.cancel_idle_timer();
                }
                return q;
            }
            if self.q[q as usize].wait_request
                || (self.q[q as usize].dispatched != 0 && self.better_to_idle(q))
            {
                let steps = self.wf.steps;
                let src = self.injection_source(rqs, q);
                // Plugged with nothing to inject, found without a walk.
                self.quiet_none = untouched && src == NIL && self.wf.steps == steps;
                return src;
            }
            self.expire(rqs, t, q, false, Reason::NoMoreRequests);
            q = NIL;
        }
    }

    /// `bfq_dispatch_rq_from_bfqq`.
    fn dispatch_rq_from_bfqq(&mut self, rqs: &mut RequestArena, t: T, q: u32) -> RqId {
        let rq = self.q[q as usize].next_rq;
        let charge = self.serv_to_charge(rqs, rq, q);
        self.bfqq_served(t, q, charge);
        if q == self.in_service && self.wait_dispatch {
            self.wait_dispatch = false;
            self.waited_rq = rq;
        }
        // bfq_dispatch_remove.
        self.q[q as usize].dispatched += 1;
        self.update_peak_rate(rqs, t, rq);
        self.remove_request(rqs, t, rq);
        if q != self.in_service {
            return rq;
        }
        self.update_wr_data(t, q);
        let ent = self.q[q as usize].ent;
        if self.wf.tot_busy_queues() > 1 && self.wf.e[ent as usize].class == CLASS_IDLE {
            self.expire(rqs, t, q, false, Reason::BudgetExhausted);
        }
        rq
    }

    /// `__bfq_dispatch_request`.
    fn dispatch_request(&mut self, rqs: &mut RequestArena, t: T) -> Option<RqId> {
        if let Some(rq) = self.dispatch_list.pop_front(rqs) {
            set_rq_loc(rqs, rq, 0);
            let q = rq_q(rqs, rq);
            if q != NIL {
                self.q[q as usize].dispatched += 1;
                self.tot_rq_in_driver += 1;
            }
            return Some(rq);
        }
        if self.wf.tot_busy_queues() == 0 {
            self.quiet_none = true;
            return None;
        }
        if self.strict_guarantees && self.tot_rq_in_driver > 0 {
            self.quiet_none = true;
            return None;
        }
        let q = self.select_queue(rqs, t);
        if q == NIL {
            return None;
        }
        let rq = self.dispatch_rq_from_bfqq(rqs, t, q);
        self.tot_rq_in_driver += 1;
        Some(rq)
    }

    // ----- expiry ---------------------------------------------------------------

    /// `bfq_bfqq_expire`.
    pub(crate) fn expire(
        &mut self,
        rqs: &RequestArena,
        t: T,
        q: u32,
        compensate: bool,
        reason: Reason,
    ) {
        let ent = self.q[q as usize].ent;
        let (slow, delta_ms) = self.is_slow(t, q, compensate);
        let wr = self.wf.e[ent as usize].wr_coeff;
        if wr == 1
            && (slow
                || (reason == Reason::BudgetTimeout
                    && self.budget_left(q) >= self.wf.e[ent as usize].budget / 3))
        {
            self.charge_time(t, q, delta_ms);
        }
        if self.low_latency && wr == 1 {
            self.q[q as usize].last_wr_start_finish = t.j;
        }
        if self.low_latency && self.wr_max_softrt_rate > 0 && self.q[q as usize].sort.is_empty() {
            if self.q[q as usize].dispatched == 0 {
                self.q[q as usize].soft_rt_next_start = self.softrt_next_start(t, q);
            } else {
                self.q[q as usize].softrt_update = true;
            }
        }
        self.rqs_injected = false;
        self.wait_dispatch = false;
        self.waited_rq = NIL;
        self.recalc_budget(rqs, q, reason);
        if self.expire_inner(rqs, t, q, reason) {
            return;
        }
        let qq = &self.q[q as usize];
        if !qq.busy && reason != Reason::BudgetTimeout && reason != Reason::BudgetExhausted {
            self.q[q as usize].non_blocking_wait_rq = true;
        } else {
            self.wf.e[ent as usize].service = 0;
        }
        let mut id = self.wf.e[ent as usize].parent;
        while id != NIL {
            self.wf.e[id as usize].service = 0;
            id = self.wf.e[id as usize].parent;
        }
    }

    /// `__bfq_bfqq_expire`; true if the queue was freed.
    fn expire_inner(&mut self, rqs: &RequestArena, t: T, q: u32, reason: Reason) -> bool {
        if self.q[q as usize].coop && self.q[q as usize].seeky() {
            self.q[q as usize].split_coop = true;
        }
        if self.q[q as usize].sort.is_empty()
            && !(reason == Reason::Preempted && self.idling_needed_for_service_guarantees(q))
        {
            if self.q[q as usize].dispatched == 0 {
                self.q[q as usize].budget_timeout = t.j;
            }
            self.del_bfqq_busy(t, q, true);
        } else {
            self.requeue_bfqq(t, q, true);
            if !self.nonrot_with_queueing && !self.q[q as usize].sort.is_empty() {
                self.pos_tree_add_move(rqs, t, q);
            }
        }
        self.reset_in_service(q)
    }

    /// `__bfq_bfqd_reset_in_service`; true if the queue was freed.
    fn reset_in_service(&mut self, q: u32) -> bool {
        self.q[q as usize].wait_request = false;
        self.cancel_idle_timer();
        self.in_service = NIL;
        let ent = self.q[q as usize].ent;
        let freed = self.wf.reset_in_service(ent);
        self.reap();
        freed
    }

    // ----- completion and the idle timer ----------------------------------------------

    /// `bfq_completed_request`.
    fn completed_request(&mut self, rqs: &RequestArena, t: T, q: u32) {
        self.update_hw_tag();
        self.tot_rq_in_driver -= 1;
        self.q[q as usize].dispatched -= 1;
        let ent = self.q[q as usize].ent;
        if self.q[q as usize].dispatched == 0 && !self.q[q as usize].busy {
            self.q[q as usize].budget_timeout = t.j;
            self.wf.del_in_groups_with_pending_reqs(ent);
            self.wf.weights_tree_remove(ent);
        }
        self.q[q as usize].ttime.last_end_request = t.ns;
        let delta_us = t.ns.saturating_sub(self.last_completion) / 1000;
        if delta_us > MIN_TT_NS / 1000
            && (u64::from(self.last_rq_max_size) << 16) / delta_us.max(1) < 1 << (16 - 10)
        {
            self.update_rate_reset(rqs, t, NIL);
        }
        self.last_completion = t.ns;
        self.last_completed_rq_bfqq = if self.q[q as usize].coop { NIL } else { q };
        let qq = &self.q[q as usize];
        if qq.softrt_update
            && qq.dispatched == 0
            && qq.sort.is_empty()
            && self.wf.e[ent as usize].wr_coeff != self.wr_coeff
        {
            self.q[q as usize].soft_rt_next_start = self.softrt_next_start(t, q);
        }
        if self.in_service == q {
            if self.must_idle(q) {
                if self.q[q as usize].dispatched == 0 {
                    self.arm_slice_timer(t);
                }
                return;
            } else if self.may_expire_for_budg_timeout(t, q) {
                self.expire(rqs, t, q, false, Reason::BudgetTimeout);
            } else if self.q[q as usize].sort.is_empty()
                && (self.q[q as usize].dispatched == 0 || !self.better_to_idle(q))
            {
                self.expire(rqs, t, q, false, Reason::NoMoreRequests);
            }
        }
        if self.tot_rq_in_driver == 0 {
            self.schedule_dispatch();
        }
    }

    /// `bfq_finish_requeue_request`.
    fn finish_requeue(&mut self, rqs: &mut RequestArena, t: T, rq: RqId) {
        let q = rq_q(rqs, rq);
        if q == NIL {
            return;
        }
        debug_assert_eq!(rq_loc(rqs, rq), 0, "a request freed inside BFQ");
        if rqs[rq].has(flags::STARTED) {
            if rq == self.waited_rq {
                self.update_inject_limit(t, q);
            }
            self.completed_request(rqs, t, q);
        }
        self.request_allocated(q, false);
        let bic = rq_bic(rqs, rq);
        self.bics[bic as usize].requests -= 1;
        rqs[rq].elv = [0, 0];
        self.put_queue(q);
    }

    /// `bfq_idle_slice_timer_body`.
    fn idle_timer_fired(&mut self, rqs: &RequestArena, t: T) {
        let q = self.in_service;
        if q == NIL {
            return;
        }
        self.q[q as usize].wait_request = false;
        let reason = if self.budget_timeout_expired(t, q) {
            Reason::BudgetTimeout
        } else if self.q[q as usize].queued == [0, 0] {
            Reason::TooIdle
        } else {
            self.schedule_dispatch();
            return;
        };
        self.expire(rqs, t, q, true, reason);
        self.schedule_dispatch();
    }

    /// `bfq_end_wr` for every queue (low_latency turned off).
    fn end_wr_all(&mut self, t: T) {
        for q in 0..self.q.len() as u32 {
            if self.q[q as usize].in_use && self.wf.e[self.q[q as usize].ent as usize].wr_coeff > 1
            {
                self.end_wr(q, t);
            }
        }
    }
}

// ----- iosched/ attributes -------------------------------------------------------------

/// The kernel's `bfq_attrs`, in order. Stores parse with `kstrtoul(page, 10)`
/// (modelled by kstrtoull) and clamp.
const BFQ_ATTRS: &[Attr<Bfq>] = &[
    Attr {
        name: "fifo_expire_sync",
        unit: "ms",
        help: "deadline of a sync request; the FIFO is checked once per service slot",
        default: AttrDefault::Value(125),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(1, i32::MAX as i128),
        conv: AttrConv::MsecsAsNs,
        get: |s| s.fifo_expire[1] as i128,
        set: |s, v| {
            s.fifo_expire[1] = v as u64;
            Ok(())
        },
    },
    Attr {
        name: "fifo_expire_async",
        unit: "ms",
        help: "deadline of an async request",
        default: AttrDefault::Value(250),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(1, i32::MAX as i128),
        conv: AttrConv::MsecsAsNs,
        get: |s| s.fifo_expire[0] as i128,
        set: |s, v| {
            s.fifo_expire[0] = v as u64;
            Ok(())
        },
    },
    Attr {
        name: "back_seek_max",
        unit: "KiB",
        help: "largest backward seek still served in order (at back_seek_penalty times its distance)",
        default: AttrDefault::Value(DEFAULT_BACK_MAX as i128),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(0, i32::MAX as i128),
        conv: AttrConv::Plain,
        get: |s| s.back_max as i128,
        set: |s, v| {
            s.back_max = v as u32;
            Ok(())
        },
    },
    Attr {
        name: "back_seek_penalty",
        unit: "factor",
        help: "cost multiplier of a backward seek against a forward one",
        default: AttrDefault::Value(DEFAULT_BACK_PENALTY as i128),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(1, i32::MAX as i128),
        conv: AttrConv::Plain,
        get: |s| s.back_penalty as i128,
        set: |s, v| {
            s.back_penalty = v as u32;
            Ok(())
        },
    },
    Attr {
        name: "slice_idle",
        unit: "ms",
        help: "how long the device is plugged waiting for the next request of an emptied sync queue; 0 disables idling",
        default: AttrDefault::Value(8),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(0, i32::MAX as i128),
        conv: AttrConv::MsecsAsNs,
        get: |s| s.slice_idle as i128,
        set: |s, v| {
            s.slice_idle = v as u64;
            Ok(())
        },
    },
    Attr {
        name: "slice_idle_us",
        unit: "us",
        help: "slice_idle in microseconds",
        default: AttrDefault::Value(8000),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(0, u32::MAX as i128),
        conv: AttrConv::UsecsAsNs,
        get: |s| s.slice_idle as i128,
        set: |s, v| {
            s.slice_idle = v as u64;
            Ok(())
        },
    },
    Attr {
        name: "max_budget",
        unit: "sectors",
        help: "largest budget of a service slot; 0 = auto (peak rate x timeout_sync)",
        default: AttrDefault::Value(0),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(0, u64::MAX as i128),
        conv: AttrConv::Plain,
        get: |s| s.user_max_budget as i128,
        set: |s, v| {
            if v == 0 {
                s.bfq_max_budget = s.calc_max_budget();
            } else {
                s.bfq_max_budget = v.min(i32::MAX as i128) as i64;
            }
            // bfq_user_max_budget keeps the written value (an unsigned long).
            s.user_max_budget = v.min(i64::MAX as i128) as i64;
            Ok(())
        },
    },
    Attr {
        name: "timeout_sync",
        unit: "ms",
        help: "budget timeout of a service slot (sync and async queues); recomputes the auto max_budget",
        default: AttrDefault::Value(124),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(1, i32::MAX as i128),
        conv: AttrConv::MsecsAsJiffies,
        get: |s| s.timeout as i128,
        set: |s, v| {
            s.timeout = v as i64;
            if s.user_max_budget == 0 {
                s.bfq_max_budget = s.calc_max_budget();
            }
            Ok(())
        },
    },
    Attr {
        name: "strict_guarantees",
        unit: "bool",
        help: "always idle for an emptied sync queue and keep at most one request in the device (raises slice_idle to 8 ms)",
        default: AttrDefault::Value(0),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(0, 1),
        conv: AttrConv::Plain,
        get: |s| i128::from(s.strict_guarantees),
        set: |s, v| {
            if !s.strict_guarantees && v == 1 && s.slice_idle < 8 * NS_PER_MS {
                s.slice_idle = 8 * NS_PER_MS;
            }
            s.strict_guarantees = v == 1;
            Ok(())
        },
    },
    Attr {
        name: "low_latency",
        unit: "bool",
        help: "weight-raise interactive and soft real-time queues; turning it off ends all raising",
        default: AttrDefault::Value(1),
        parse: AttrParse::Kstrtoull,
        range: AttrRange::Clamp(0, 1),
        conv: AttrConv::Plain,
        get: |s| i128::from(s.low_latency),
        set: |s, v| {
            if v == 0 && s.low_latency {
                s.end_wr_all(s.last_now);
            }
            s.low_latency = v == 1;
            Ok(())
        },
    },
];

impl Elevator for Bfq {
    fn name(&self) -> &'static str {
        "bfq"
    }

    fn init(&mut self, q: &QueueInfo) {
        self.idle_memo = None;
        self.ensure_init(q);
    }

    fn depth_updated(&mut self, q: &QueueInfo) {
        self.idle_memo = None;
        self.ensure_init(q);
        self.nr_requests = q.nr_requests;
        self.update_depths(q);
    }

    /// `bfq_depth_updated`: a group over its cap gets a depth of 1.
    fn min_shallow_depth(&self) -> u32 {
        1
    }

    fn tunables(&self) -> Vec<Tunable> {
        show_attrs(self, BFQ_ATTRS)
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        self.idle_memo = None;
        store_attr(self, "bfq", BFQ_ATTRS, name, value)
    }

    fn limit_depth(&mut self, ctx: &mut SchedCtx, bio: &BioInfo) -> Option<u32> {
        self.ensure_init(ctx.q);
        let r = self.limit_depth_of(bio, ctx.q);
        self.flush(ctx);
        r
    }

    fn prepare_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.idle_memo = None;
        ctx.rqs[rq].elv = [0, 0];
    }

    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let t = self.now(ctx.now);
        self.finish_requeue(ctx.rqs, t, rq);
        self.flush(ctx);
    }

    fn requeue_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let t = self.now(ctx.now);
        self.finish_requeue(ctx.rqs, t, rq);
        self.flush(ctx);
    }

    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool) {
        self.ensure_init(ctx.q);
        let t = self.now(ctx.now);
        self.init_rq(ctx.rqs, ctx.cgroups, t, rq);
        if at_head {
            self.dispatch_list.push_front(ctx.rqs, rq);
            set_rq_loc(ctx.rqs, rq, LOC_DISPATCH);
        } else {
            self.insert_request(ctx.rqs, t, rq);
        }
        self.flush(ctx);
    }

    fn dispatch(&mut self, ctx: &mut SchedCtx, _hctx: u16) -> Option<RqId> {
        let key = (ctx.now, ctx.q.rotational);
        if self.idle_memo == Some(key) {
            return None;
        }
        self.rotational = ctx.q.rotational;
        let t = self.now(ctx.now);
        self.quiet_none = false;
        let rq = self.dispatch_request(ctx.rqs, t);
        let quiet = rq.is_none()
            && self.quiet_none
            && self.wf.steps == 0
            && self.wf.dead.is_empty()
            && self.out_timer.is_none()
            && !self.out_kick;
        self.flush(ctx);
        if quiet {
            self.idle_memo = Some(key);
        }
        rq
    }

    fn has_work(&self, _hctx: u16) -> bool {
        !self.dispatch_list.is_empty() || self.queued > 0
    }

    fn allow_merge(&mut self, ctx: &mut SchedCtx, rq: RqId, bio: &BioInfo) -> bool {
        let t = self.now(ctx.now);
        let r = self.allow_bio_merge(ctx.rqs, t, rq, bio);
        self.flush(ctx);
        r
    }

    fn request_merge(&self, ctx: &SchedCtx, bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        // bfq_find_rq_fmerge: a request of the bio's queue starting where
        // the bio ends.
        let bic = self.bic_lookup(bio.pid);
        if bic == NIL {
            return None;
        }
        let q = self.bics[bic as usize].bfqq[usize::from(bio.is_sync())];
        if q == NIL {
            return None;
        }
        let rq = self
            .forest
            .find(&self.q[q as usize].sort, bio.end_sector())?;
        crate::sched::deadline::bio_merge_ok(ctx.rqs, rq, bio, true)
            .then_some((rq, MergeKind::Front))
    }

    fn request_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, kind: MergeKind) {
        let t = self.now(ctx.now);
        self.request_merged_inner(ctx.rqs, t, rq, kind);
        self.flush(ctx);
    }

    fn requests_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, next: RqId) {
        let t = self.now(ctx.now);
        self.requests_merged_inner(ctx.rqs, t, rq, next);
        self.flush(ctx);
    }

    fn next_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        (rq_loc(ctx.rqs, rq) == LOC_QUEUED)
            .then(|| self.forest.next(rq))
            .flatten()
    }

    fn former_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        (rq_loc(ctx.rqs, rq) == LOC_QUEUED)
            .then(|| self.forest.prev(rq))
            .flatten()
    }

    fn timer(&mut self, ctx: &mut SchedCtx, token: u64) {
        self.idle_memo = None;
        if self.idle_timer_event == Some(token) {
            self.idle_timer_event = None;
        }
        let Some(due) = self.idle_timer_due else {
            return;
        };
        if due > ctx.now {
            // Re-armed since this event was asked for.
            self.push_idle_timer_event(due);
            self.flush(ctx);
            return;
        }
        self.idle_timer_due = None;
        let t = self.now(ctx.now);
        self.idle_timer_fired(ctx.rqs, t);
        self.flush(ctx);
    }
}

impl Bfq {
    /// `bfq_allow_bio_merge` (with `bfq_bio_merge`'s choice of the bio's queue).
    fn allow_bio_merge(&mut self, rqs: &RequestArena, t: T, rq: RqId, bio: &BioInfo) -> bool {
        let sync = bio.is_sync();
        if sync && !rqs[rq].is_sync() {
            return false;
        }
        let bic = self.bic_lookup(bio.pid);
        if bic == NIL {
            return false;
        }
        let mut q = self.bics[bic as usize].bfqq[usize::from(sync)];
        if q == NIL {
            return false;
        }
        let new = self.setup_cooperator(rqs, t, q, bio.sector, bic);
        if new != NIL {
            while q != new {
                q = self.merge_bfqqs(t, bic, q);
            }
        }
        q == rq_q(rqs, rq)
    }

    /// `bfq_request_merged`.
    fn request_merged_inner(&mut self, rqs: &mut RequestArena, t: T, rq: RqId, kind: MergeKind) {
        if kind != MergeKind::Front || rq_loc(rqs, rq) != LOC_QUEUED {
            return;
        }
        let Some(prev) = self.forest.prev(rq) else {
            return;
        };
        if rqs[rq].sector >= rqs[prev].sector {
            return;
        }
        let q = rq_q(rqs, rq);
        if q == NIL {
            return;
        }
        let mut sort = self.q[q as usize].sort;
        self.forest.rekey(&mut sort, rq, rqs[rq].sector);
        self.q[q as usize].sort = sort;
        let prev_next = self.q[q as usize].next_rq;
        let next = queue::choose_req(
            rqs,
            prev_next,
            rq,
            self.last_position,
            u64::from(self.back_max),
            u64::from(self.back_penalty),
        );
        self.q[q as usize].next_rq = next;
        if prev_next != next {
            self.updated_next_req(rqs, t, q);
            if !self.nonrot_with_queueing {
                self.pos_tree_add_move(rqs, t, q);
            }
        }
    }

    /// `bfq_requests_merged`.
    fn requests_merged_inner(&mut self, rqs: &mut RequestArena, t: T, rq: RqId, next: RqId) {
        let q = rq_q(rqs, rq);
        let nq = rq_q(rqs, next);
        if q != NIL {
            if q == nq
                && rq_loc(rqs, rq) == LOC_QUEUED
                && rq_loc(rqs, next) == LOC_QUEUED
                && rqs[next].fifo_time < rqs[rq].fifo_time
            {
                let fifo = &mut self.q[q as usize].fifo;
                fifo.remove(rqs, rq);
                fifo.insert_after(rqs, next, rq);
                rqs[rq].fifo_time = rqs[next].fifo_time;
            }
            if self.q[q as usize].next_rq == next {
                self.q[q as usize].next_rq = rq;
            }
        }
        if rq_loc(rqs, next) == LOC_QUEUED {
            self.remove_request(rqs, t, next);
        } else if rq_loc(rqs, next) == LOC_DISPATCH {
            self.dispatch_list.remove(rqs, next);
            set_rq_loc(rqs, next, 0);
        }
    }
}

#[cfg(test)]
mod tests;
