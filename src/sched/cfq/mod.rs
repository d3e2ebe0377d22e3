//! Legacy single-queue `cfq`, Completely Fair Queueing, as in Linux v4.19
//! (block/cfq-iosched.c, Documentation/block/cfq-iosched.txt; removed in 5.0
//! with the legacy request path).
//!
//! Shape of the algorithm:
//! - every process has one **sync queue** per device (its io_context's
//!   `cfq_io_cq`, here keyed by pid); async requests go to **shared async
//!   queues**, one per (cgroup, class, level);
//! - each cgroup (`cfq_group`) has seven **service trees** of busy queues —
//!   {RT, BE} × {ASYNC, SYNC_NOIDLE, SYNC} and one for the IDLE class —
//!   keyed by `rb_key` (a time); all active groups sit on one flat group
//!   tree keyed by `vdisktime`, their share given by `vfraction` (weights
//!   compounded up the hierarchy, fixed point 2^12);
//! - one queue at a time is **active** and dispatches for a time slice
//!   (ioprio-scaled `slice_sync`/`slice_async`, shortened by `low_latency`
//!   so all busy queues fit into `target_latency`); the slice starts at its
//!   first completion; when the queue empties CFQ may **idle** for
//!   `slice_idle` (queue or tree idle) or `group_idle` waiting for the next
//!   request; a group is charged the time used (or, in IOPS mode — no
//!   `slice_idle` and an NCQ device — the requests dispatched);
//! - per queue: a sector-sorted tree with a one-way elevator and bounded
//!   back seeks (`next_rq`, `cfq_choose_req`), and a FIFO checked once per
//!   slice;
//! - dispatch moves **one request per call** onto the legacy dispatch list
//!   (`elv_dispatch_sort`); depth comes from the driver calling again, bounded
//!   by `quantum`.
//!
//! Pitfalls kept (reference §6): the slice starts at the first completion;
//! async queues never dispatch while sync requests are in flight and an
//! idling sync queue waits for async to drain; async depth ramps one per
//! `slice_sync` since the last delayed sync completion; hw_tag starts as
//! "NCQ" (-1) until 50 samples; `slice_idle` is 0 on non-rotational queues
//! (`cfq_registered_queue`); group weights are re-read only when a group is
//! activated; idle groups earn no credit; the new-group delay is added raw.
//!
//! Model notes: times are the simulation's ns (the kernel's `ktime_get_ns`
//! starts far from 0; `rb_key`, `slice_resid`, `workload_expires` and
//! `last_delayed_sync` are kept signed so keys computed "1 s before now" early
//! in a run order as they would). The prio-tree look-up for a close
//! cooperator checks both neighbours of the head position (the kernel checks
//! the rb-tree parent of the missing node, which is one of them, then its
//! neighbour towards the position). A process never exits during a run, so
//! its io_context stays "active".

mod attrs;
#[cfg(test)]
mod tests;

use super::deadline::bio_merge_ok;
use super::sort_tree::{SortForest, SortTree};
use crate::block::elevator::{
    show_attrs, store_attr, BioInfo, Elevator, MayQueue, MergeKind, QueueInfo, SchedCtx, Tunable,
};
use crate::block::request::{flags, RqId, RqList, NIL};
use crate::cgroup::{weight_file_for, CgroupTree, IoPrio, IoPrioClass, WeightPolicy};
use crate::sim::time::{NS_PER_JIFFY, NS_PER_SEC};
use attrs::*;

/// The first kernel whose CFQ sets slice_idle = 0 on non-rotational queues
/// at registration (`cfq_registered_queue`; version from memory).
pub const IOPS_MODE_ON_SSD_SINCE: crate::kernel::Version = crate::kernel::Version::new(4, 8, 0);
/// The first kernel whose sync-noidle queues preempt each other whatever the
/// size of their tree. From 2.6.33 ("cfq-iosched: fix no-idle preemption
/// logic") a sync-noidle queue preempted an empty active one of the same
/// tree only when the two were the whole tree (`service_tree->count == 2`;
/// present in the 2.6.3x and 3.x sources, gone from 4.14's); Jan Kara's
/// "cfq-iosched: Allow sync noidle workloads to preempt each other" dropped
/// the count (version from memory). The count matters with many seeky
/// processes: without it every arrival preempts and is queued a second
/// before the tree's first key, so keys run into the past and a queue left
/// in the sync tree waits until they stop.
pub const NOIDLE_PREEMPT_ANY_SINCE: crate::kernel::Version = crate::kernel::Version::new(4, 6, 0);
/// The first kernel where any queue may preempt an empty active queue that
/// would not idle ("An idle queue should not be idle now for some
/// reason"): in the sources that test REQ_PRIO (3.2 on), absent from those
/// that still test REQ_META (2.6.3x, E4's 2.6.39); version from memory.
pub const NOT_IDLING_PREEMPT_SINCE: crate::kernel::Version = crate::kernel::Version::new(3, 2, 0);
use std::collections::{BTreeMap, BTreeSet};

pub use attrs::CFQ_ATTRS;

/// Index of a `cfq_queue` in the queue slab.
pub type Qid = u32;
/// No queue.
pub const NOQ: Qid = u32::MAX;

// Constants of cfq-iosched.c v4.19.
/// CFQ_IDLE_DELAY = NSEC_PER_SEC / 5: rb_key offset of IDLE-class queues.
const CFQ_IDLE_DELAY: i64 = (NS_PER_SEC / 5) as i64;
/// CFQ_SLICE_MODE_GROUP_DELAY = NSEC_PER_SEC / 5.
const CFQ_SLICE_MODE_GROUP_DELAY: u64 = NS_PER_SEC / 5;
/// CFQ_IOPS_MODE_GROUP_DELAY = HZ / 5 (a raw count added to vdisktime).
const CFQ_IOPS_MODE_GROUP_DELAY: u64 = crate::sim::time::HZ / 5;
/// CFQ_MIN_TT = 2 jiffies, in ns.
const CFQ_MIN_TT: u64 = 2 * NS_PER_JIFFY;
/// CFQ_SLICE_SCALE.
const CFQ_SLICE_SCALE: i64 = 5;
/// CFQ_HW_QUEUE_MIN.
const CFQ_HW_QUEUE_MIN: u32 = 5;
/// CFQ_SERVICE_SHIFT.
const CFQ_SERVICE_SHIFT: u32 = 12;
/// CFQQ_SEEK_THR = 8 * 100 sectors.
const CFQQ_SEEK_THR: u64 = 8 * 100;
/// CFQQ_CLOSE_THR = 8 * 1024 sectors.
const CFQQ_CLOSE_THR: u64 = 8 * 1024;
/// CFQQ_SECT_THR_NONROT = 8 * 8 sectors.
const CFQQ_SECT_THR_NONROT: u32 = 8 * 8;
/// cfq_hist_divisor.
const CFQ_HIST_DIVISOR: u32 = 4;
/// IOPRIO_BE_NR.
const IOPRIO_BE_NR: u32 = 8;
/// Think-time samples needed (`sample_valid`: samples > 80).
const TTIME_VALID: u64 = 80;
/// PAGE_SIZE: a waited-for request larger than this starts the queue at once.
const PAGE_SIZE: u64 = 4096;

// enum wl_class_t and enum wl_type_t.
const BE_WL: usize = 0;
const RT_WL: usize = 1;
const IDLE_WL: usize = 2;
const ASYNC_WL: usize = 0;
const SYNC_NOIDLE_WL: usize = 1;
const SYNC_WL: usize = 2;
/// Trees per group: [BE, RT] × [ASYNC, SYNC_NOIDLE, SYNC], then IDLE.
const NR_TREES: usize = 7;

/// `st_for`: the service tree of a class and type.
fn st_index(class: usize, ty: usize) -> usize {
    if class == IDLE_WL {
        6
    } else {
        class * 3 + ty
    }
}

/// Where a request is (`Request::elv[1]`); `elv[0]` holds its queue + 1.
const LOC_NONE: u64 = 0;
const LOC_QUEUED: u64 = 1;

/// `struct cfq_ttime`: a decaying average of think time.
#[derive(Clone, Copy, Debug, Default)]
struct Ttime {
    last_end_request: u64,
    samples: u64,
    total: u64,
    mean: u64,
}

impl Ttime {
    /// `__cfq_update_io_thinktime`.
    fn update(&mut self, now: u64, slice_idle: u64) {
        let elapsed = now
            .saturating_sub(self.last_end_request)
            .min(2 * slice_idle);
        self.samples = (7 * self.samples + 256) / 8;
        self.total = (7 * self.total + 256 * elapsed) / 8;
        self.mean = (self.total + 128) / self.samples;
    }
    fn valid(&self) -> bool {
        self.samples > TTIME_VALID
    }
}

/// `struct cfq_rb_root`: busy queues by (rb_key, insertion order).
#[derive(Debug, Default)]
struct ServiceTree {
    rb: BTreeSet<(i64, u64, Qid)>,
    ttime: Ttime,
}

impl ServiceTree {
    fn count(&self) -> u32 {
        self.rb.len() as u32
    }
    fn first(&self) -> Option<(i64, Qid)> {
        self.rb.first().map(|&(k, _, q)| (k, q))
    }
    fn last(&self) -> Option<(i64, Qid)> {
        self.rb.last().map(|&(k, _, q)| (k, q))
    }
}

/// Per-queue flags (`enum cfqq_state_flags`).
#[derive(Clone, Copy, Debug, Default)]
struct QFlags {
    on_rr: bool,
    wait_request: bool,
    must_dispatch: bool,
    must_alloc_slice: bool,
    fifo_expire: bool,
    idle_window: bool,
    prio_changed: bool,
    slice_new: bool,
    sync: bool,
    coop: bool,
    split_coop: bool,
    deep: bool,
    wait_busy: bool,
}

/// `struct cfq_queue`.
#[derive(Debug)]
struct Cfqq {
    live: bool,
    group: u16,
    pid: u32,
    /// Workload class (BE_WL, RT_WL, IDLE_WL) and level.
    class: usize,
    ioprio: u8,
    org_ioprio: u8,
    f: QFlags,
    /// io_contexts pointing at this queue (`cfqq_process_refs`).
    procs: u32,
    /// Queues whose `new_cfqq` names this one.
    links: u32,
    /// Held by its group (async queues).
    pinned: bool,
    allocated: [u32; 2],
    sort: SortTree,
    fifo: RqList,
    next_rq: RqId,
    queued: [u32; 2],
    /// On a service tree: (tree index, key, sequence).
    tree: Option<(usize, i64, u64)>,
    rb_key: i64,
    /// In a prio tree: (level, sector).
    prio_pos: Option<(u8, u64)>,
    slice_start: u64,
    slice_end: u64,
    allocated_slice: u64,
    slice_resid: i64,
    dispatch_start: u64,
    slice_dispatch: u32,
    dispatched: u32,
    prio_pending: u32,
    seek_history: u32,
    last_request_pos: u64,
    new_cfqq: Qid,
}

impl Cfqq {
    fn new(group: u16, pid: u32, sync: bool, prio: IoPrio) -> Cfqq {
        let mut q = Cfqq {
            live: true,
            group,
            pid,
            class: BE_WL,
            ioprio: 4,
            org_ioprio: 4,
            f: QFlags::default(),
            procs: 0,
            links: 0,
            pinned: false,
            allocated: [0; 2],
            sort: SortTree::new(0),
            fifo: RqList::new(),
            next_rq: NIL,
            queued: [0; 2],
            tree: None,
            rb_key: 0,
            prio_pos: None,
            slice_start: 0,
            slice_end: 0,
            allocated_slice: 0,
            slice_resid: 0,
            dispatch_start: 0,
            slice_dispatch: 0,
            dispatched: 0,
            prio_pending: 0,
            seek_history: 0,
            last_request_pos: 0,
            new_cfqq: NOQ,
        };
        // cfq_init_cfqq: prio_changed; sync queues start with an idle window
        // unless IDLE class (applied by init_prio_data below).
        q.f.prio_changed = true;
        q.f.sync = sync;
        if sync {
            q.f.idle_window = true;
        }
        q.init_prio_data(prio);
        if q.class == IDLE_WL {
            q.f.idle_window = false;
        }
        q
    }

    /// `cfq_init_prio_data` with the io_context's priority.
    fn init_prio_data(&mut self, prio: IoPrio) {
        if !self.f.prio_changed {
            return;
        }
        let p = prio.effective();
        match p.class {
            IoPrioClass::Rt => {
                self.class = RT_WL;
                self.ioprio = p.level;
            }
            IoPrioClass::Idle => {
                self.class = IDLE_WL;
                self.ioprio = 7;
                self.f.idle_window = false;
            }
            _ => {
                self.class = BE_WL;
                self.ioprio = p.level;
            }
        }
        self.org_ioprio = self.ioprio;
        self.f.prio_changed = false;
    }

    fn is_empty(&self) -> bool {
        self.sort.is_empty()
    }

    /// `cfqq_type`.
    fn wl_type(&self) -> usize {
        if !self.f.sync {
            ASYNC_WL
        } else if self.f.idle_window {
            SYNC_WL
        } else {
            SYNC_NOIDLE_WL
        }
    }

    /// `CFQQ_SEEKY`: more than 4 of the last 32 requests seeky.
    fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 32 / 8
    }

    fn idle_class(&self) -> bool {
        self.class == IDLE_WL
    }
}

/// `struct cfq_group` (one per cgroup that did I/O, and its ancestors).
#[derive(Debug)]
struct Cfqg {
    parent: Option<u16>,
    weight: u32,
    leaf_weight: u32,
    nr_active: u32,
    children_weight: u32,
    vfraction: u32,
    vdisktime: u64,
    /// On the group tree: its sequence number.
    on_tree: Option<u64>,
    nr_cfqq: u32,
    dispatched: u32,
    st: [ServiceTree; NR_TREES],
    busy_queues_avg: [u32; 3],
    saved_wl_slice: u64,
    saved_wl_type: usize,
    saved_wl_class: usize,
    ttime: Ttime,
    /// async_cfqq[RT/BE][level] (indexed by wl class) and async_idle_cfqq.
    async_q: [[Qid; 8]; 2],
    async_idle: Qid,
}

impl Cfqg {
    fn busy_async(&self) -> u32 {
        self.st[st_index(RT_WL, ASYNC_WL)].count() + self.st[st_index(BE_WL, ASYNC_WL)].count()
    }

    /// `cfq_group_busy_queues_wl`.
    fn busy_wl(&self, class: usize) -> u32 {
        if class == IDLE_WL {
            return self.st[6].count();
        }
        (0..3).map(|t| self.st[st_index(class, t)].count()).sum()
    }
}

/// `struct cfq_io_cq`: what CFQ keeps of a process's io_context.
#[derive(Debug)]
struct Cic {
    cgroup: u16,
    ioprio: IoPrio,
    sync_q: Qid,
    ttime: Ttime,
}

/// CFQ.
pub struct Cfq {
    // iosched/ tunables (times in ns).
    quantum: u32,
    fifo_expire: [u64; 2],
    back_max: u32,
    back_penalty: u32,
    slice: [u64; 2],
    slice_async_rq: u32,
    slice_idle: u64,
    group_idle: u64,
    low_latency: bool,
    target_latency: u64,

    forest: SortForest,
    queues: Vec<Cfqq>,
    free_queues: Vec<Qid>,
    groups: Vec<Option<Box<Cfqg>>>,
    grp_tree: BTreeSet<(u64, u64, u16)>,
    min_vdisktime: u64,
    seq: u64,
    prio_trees: [BTreeSet<(u64, Qid)>; 8],
    cics: BTreeMap<u32, Cic>,

    active: Qid,
    /// `active_cic`: the process of the active queue's last dispatch.
    active_pid: Option<u32>,
    serving_group: Option<u16>,
    serving_wl_class: usize,
    serving_wl_type: usize,
    workload_expires: i64,

    busy_queues: u32,
    busy_sync_queues: u32,
    rq_in_driver: u32,
    rq_in_flight: [u32; 2],
    rq_queued: u32,
    hw_tag: i32,
    hw_tag_est_depth: u32,
    hw_tag_samples: u32,
    last_position: u64,
    last_delayed_sync: i64,
    nonrot: bool,
    /// Sync-noidle queues preempt each other in trees of any size
    /// (`NOIDLE_PREEMPT_ANY_SINCE`), else only in a tree of two.
    noidle_preempt_any: bool,
    /// An empty active queue that would not idle may be preempted
    /// (`NOT_IDLING_PREEMPT_SINCE`).
    not_idling_preempt: bool,
    timer_at: Option<u64>,
    timer_token: u64,
}

impl Default for Cfq {
    fn default() -> Self {
        Cfq::new()
    }
}

fn qidx(q: Qid) -> usize {
    q as usize
}

impl Cfq {
    pub fn new() -> Cfq {
        Cfq {
            quantum: DEFAULT_QUANTUM,
            fifo_expire: [
                ms_ns(DEFAULT_FIFO_EXPIRE_ASYNC_MS),
                ms_ns(DEFAULT_FIFO_EXPIRE_SYNC_MS),
            ],
            back_max: DEFAULT_BACK_SEEK_MAX_KB,
            back_penalty: DEFAULT_BACK_SEEK_PENALTY,
            slice: [ms_ns(DEFAULT_SLICE_ASYNC_MS), ms_ns(DEFAULT_SLICE_SYNC_MS)],
            slice_async_rq: DEFAULT_SLICE_ASYNC_RQ,
            slice_idle: ms_ns(DEFAULT_SLICE_IDLE_MS),
            group_idle: ms_ns(DEFAULT_GROUP_IDLE_MS),
            low_latency: true,
            target_latency: ms_ns(DEFAULT_TARGET_LATENCY_MS),
            forest: SortForest::new(),
            queues: Vec::new(),
            free_queues: Vec::new(),
            groups: Vec::new(),
            grp_tree: BTreeSet::new(),
            min_vdisktime: 0,
            seq: 0,
            prio_trees: Default::default(),
            cics: BTreeMap::new(),
            active: NOQ,
            active_pid: None,
            serving_group: None,
            serving_wl_class: BE_WL,
            serving_wl_type: SYNC_NOIDLE_WL,
            workload_expires: 0,
            busy_queues: 0,
            busy_sync_queues: 0,
            rq_in_driver: 0,
            rq_in_flight: [0; 2],
            rq_queued: 0,
            hw_tag: -1,
            hw_tag_est_depth: 0,
            hw_tag_samples: 0,
            last_position: 0,
            // cfq_init_queue: "sync ops weren't delayed in the last second".
            last_delayed_sync: -(NS_PER_SEC as i64),
            nonrot: false,
            noidle_preempt_any: true,
            not_idling_preempt: true,
            timer_at: None,
            timer_token: 0,
        }
    }

    // ----- small accessors ----------------------------------------------------

    fn q(&self, q: Qid) -> &Cfqq {
        &self.queues[qidx(q)]
    }
    fn qm(&mut self, q: Qid) -> &mut Cfqq {
        &mut self.queues[qidx(q)]
    }
    fn g(&self, g: u16) -> &Cfqg {
        self.groups[g as usize].as_deref().expect("group exists")
    }
    fn gm(&mut self, g: u16) -> &mut Cfqg {
        self.groups[g as usize]
            .as_deref_mut()
            .expect("group exists")
    }
    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Requests queued inside the scheduler.
    pub fn queued(&self) -> u32 {
        self.rq_queued
    }
    /// Queues with requests or in service (`busy_queues`).
    pub fn busy_queues(&self) -> u32 {
        self.busy_queues
    }
    /// Live per-process and async queues (memory check).
    pub fn live_queues(&self) -> usize {
        self.queues.len() - self.free_queues.len()
    }
    /// `hw_tag` (-1 unknown, 0 no NCQ, 1 NCQ).
    pub fn hw_tag(&self) -> i32 {
        self.hw_tag
    }
    /// The active queue's pid, class and level.
    pub fn active_queue(&self) -> Option<(u32, usize, u8)> {
        (self.active != NOQ).then(|| {
            let q = self.q(self.active);
            (q.pid, q.class, q.ioprio)
        })
    }
    /// Current slice length of the active queue (after its first completion).
    pub fn active_allocated_slice(&self) -> Option<u64> {
        (self.active != NOQ).then(|| self.q(self.active).allocated_slice)
    }
    /// A group's vdisktime and vfraction.
    pub fn group_state(&self, cg: u16) -> Option<(u64, u32)> {
        let g = self.groups.get(cg as usize)?.as_deref()?;
        Some((g.vdisktime, g.vfraction))
    }

    /// `iops_mode`: no idling on an NCQ device; groups are charged requests.
    fn iops_mode(&self) -> bool {
        self.slice_idle == 0 && self.hw_tag != 0
    }

    fn schedule_dispatch(&self, ctx: &mut SchedCtx) {
        if self.busy_queues > 0 {
            ctx.kick();
        }
    }

    // ----- slices -------------------------------------------------------------

    /// `cfq_prio_slice`: base + base/5 × (4 − level).
    fn prio_slice(&self, sync: bool, prio: u8) -> u64 {
        let base = self.slice[sync as usize] as i64;
        (base + base / CFQ_SLICE_SCALE * (4 - prio as i64)).max(0) as u64
    }

    fn prio_to_slice(&self, q: Qid) -> u64 {
        let q = self.q(q);
        self.prio_slice(q.f.sync, q.ioprio)
    }

    /// `cfq_prio_to_maxrq`: async requests per slice (int arithmetic that
    /// wraps for absurd slice_async_rq values, as the kernel's does).
    fn prio_to_maxrq(&self, q: Qid) -> u32 {
        let levels = IOPRIO_BE_NR - self.q(q).ioprio as u32;
        2u32.wrapping_mul(self.slice_async_rq).wrapping_mul(levels)
    }

    /// `cfq_group_slice`: the group's share of target_latency.
    fn group_slice(&self, g: u16) -> u64 {
        ((self.target_latency as u128 * self.g(g).vfraction as u128) >> CFQ_SERVICE_SHIFT) as u64
    }

    /// `cfq_group_get_avg_queues`: smoothed busy queues of a class.
    fn group_avg_queues(&mut self, g: u16, class: usize) -> u32 {
        let grp = self.gm(g);
        let busy = grp.busy_wl(class);
        let avg = grp.busy_queues_avg[class];
        let (min_q, max_q) = (avg.min(busy), avg.max(busy));
        grp.busy_queues_avg[class] =
            ((CFQ_HIST_DIVISOR - 1) * max_q + min_q + CFQ_HIST_DIVISOR / 2) / CFQ_HIST_DIVISOR;
        grp.busy_queues_avg[class]
    }

    /// `cfq_scaled_cfqq_slice`: the ioprio slice, shrunk under low_latency
    /// so the class's busy queues fit into the group's share of
    /// target_latency, but not below 2 × slice_idle scaled.
    fn scaled_slice(&mut self, q: Qid) -> u64 {
        let mut slice = self.prio_to_slice(q);
        if self.low_latency {
            let (g, class) = (self.q(q).group, self.q(q).class);
            let class = if class == RT_WL { RT_WL } else { BE_WL };
            let iq = self.group_avg_queues(g, class) as u64;
            let sync_slice = self.slice[1].max(1);
            let expect_latency = sync_slice * iq;
            let group_slice = self.group_slice(g);
            if expect_latency > group_slice {
                let base_low_slice = 2 * self.slice_idle;
                let low_slice = (base_low_slice as u128 * slice as u128 / sync_slice as u128)
                    .min(slice as u128) as u64;
                slice = (slice as u128 * group_slice as u128 / expect_latency as u128) as u64;
                slice = slice.max(low_slice);
            }
        }
        slice
    }

    /// `cfq_set_prio_slice`: the slice starts now.
    fn set_prio_slice(&mut self, q: Qid, now: u64) {
        let slice = self.scaled_slice(q);
        let cq = self.qm(q);
        cq.slice_start = now;
        cq.slice_end = now + slice;
        cq.allocated_slice = slice;
    }

    /// `cfq_slice_used`.
    fn slice_used(&self, q: Qid, now: u64) -> bool {
        let q = self.q(q);
        !q.f.slice_new && now >= q.slice_end
    }

    /// `cfq_slice_used_soon`.
    fn slice_used_soon(&self, q: Qid, now: u64) -> bool {
        let cq = self.q(q);
        cq.f.slice_new || now + self.slice_idle * cq.dispatched as u64 > cq.slice_end
    }

    // ----- think time, seeks, idling ---------------------------------------------

    /// `cfq_io_thinktime_big`.
    fn thinktime_big(&self, t: &Ttime, group_idle: bool) -> bool {
        if !t.valid() {
            return false;
        }
        let slice = if group_idle {
            self.group_idle
        } else {
            self.slice_idle
        };
        t.mean > slice
    }

    /// `cfq_should_idle`.
    fn should_idle(&self, q: Qid) -> bool {
        let cq = self.q(q);
        let Some((st, _, _)) = cq.tree else {
            return false;
        };
        if self.slice_idle == 0 || cq.idle_class() {
            return false;
        }
        if cq.f.idle_window && !(self.nonrot && self.hw_tag != 0) {
            return true;
        }
        let tree = &self.g(cq.group).st[st];
        tree.count() == 1 && cq.f.sync && !self.thinktime_big(&tree.ttime, false)
    }

    fn cic_ttime(&self, pid: Option<u32>) -> Option<Ttime> {
        pid.and_then(|p| self.cics.get(&p)).map(|c| c.ttime)
    }

    // ----- sorted requests --------------------------------------------------------

    fn rq_queue(ctx: &SchedCtx, rq: RqId) -> Option<Qid> {
        match ctx.rqs[rq].elv[0] {
            0 => None,
            v => Some((v - 1) as Qid),
        }
    }

    /// `cfq_choose_req`: the better next request after `last`.
    fn choose_req(&self, ctx: &SchedCtx, rq1: RqId, rq2: RqId, last: u64) -> RqId {
        if rq1 == NIL || rq1 == rq2 {
            return rq2;
        }
        if rq2 == NIL {
            return rq1;
        }
        let (r1, r2) = (&ctx.rqs[rq1], &ctx.rqs[rq2]);
        if r1.is_sync() != r2.is_sync() {
            return if r1.is_sync() { rq1 } else { rq2 };
        }
        if r1.has(flags::PRIO) != r2.has(flags::PRIO) {
            return if r1.has(flags::PRIO) { rq1 } else { rq2 };
        }
        let (s1, s2) = (r1.sector, r2.sector);
        // back_seek_max is in KiB: 2 sectors each.
        let back_max = self.back_max as u64 * 2;
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + back_max >= last {
                Some((last - s) * self.back_penalty as u64)
            } else {
                None // wrapped
            }
        };
        match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 || (d1 == d2 && s1 >= s2) {
                    rq1
                } else {
                    rq2
                }
            }
            (Some(_), None) => rq1,
            (None, Some(_)) => rq2,
            (None, None) => {
                if s1 <= s2 {
                    rq1
                } else {
                    rq2
                }
            }
        }
    }

    /// `cfq_find_next_rq`: the neighbour of `last` to serve after it.
    fn find_next_rq(&self, ctx: &SchedCtx, q: Qid, last: RqId) -> RqId {
        let prev = self.forest.prev(last).unwrap_or(NIL);
        let next = match self.forest.next(last) {
            Some(n) => n,
            None => match self.forest.first(&self.q(q).sort) {
                Some(f) if f != last => f,
                _ => NIL,
            },
        };
        self.choose_req(ctx, next, prev, ctx.rqs[last].sector)
    }

    /// `cfq_prio_tree_add`: index a busy queue by its next request's sector.
    fn prio_tree_add(&mut self, ctx: &SchedCtx, q: Qid) {
        self.prio_tree_remove(q);
        let cq = self.q(q);
        if cq.idle_class() || cq.next_rq == NIL {
            return;
        }
        let (level, sector) = (cq.org_ioprio, ctx.rqs[cq.next_rq].sector);
        let tree = &mut self.prio_trees[level as usize & 7];
        // A queue already indexed at this sector keeps the slot.
        if tree.range((sector, 0)..=(sector, NOQ)).next().is_some() {
            return;
        }
        tree.insert((sector, q));
        self.qm(q).prio_pos = Some((level, sector));
    }

    fn prio_tree_remove(&mut self, q: Qid) {
        if let Some((level, sector)) = self.qm(q).prio_pos.take() {
            self.prio_trees[level as usize & 7].remove(&(sector, q));
        }
    }

    /// `cfq_add_rq_rb`.
    fn add_rq_rb(&mut self, ctx: &mut SchedCtx, q: Qid, rq: RqId) {
        let sync = ctx.rqs[rq].is_sync() as usize;
        let sector = ctx.rqs[rq].sector;
        let cq = &mut self.queues[qidx(q)];
        cq.queued[sync] += 1;
        self.forest.insert(&mut cq.sort, rq, sector);
        if !self.q(q).f.on_rr {
            self.add_cfqq_rr(ctx, q);
        }
        let prev = self.q(q).next_rq;
        let next = self.choose_req(ctx, prev, rq, self.last_position);
        self.qm(q).next_rq = next;
        if prev != next {
            self.prio_tree_add(ctx, q);
        }
    }

    /// `cfq_del_rq_rb`.
    fn del_rq_rb(&mut self, ctx: &SchedCtx, q: Qid, rq: RqId) {
        let sync = ctx.rqs[rq].is_sync() as usize;
        let cq = &mut self.queues[qidx(q)];
        cq.queued[sync] = cq.queued[sync].saturating_sub(1);
        self.forest.remove(&mut cq.sort, rq);
        if self.q(q).f.on_rr && self.q(q).is_empty() {
            self.prio_tree_remove(q);
        }
    }

    /// `cfq_remove_request`: off the FIFO and the sort tree.
    fn remove_request(&mut self, ctx: &mut SchedCtx, q: Qid, rq: RqId) {
        if self.q(q).next_rq == rq {
            let n = self.find_next_rq(ctx, q, rq);
            self.qm(q).next_rq = n;
        }
        let cq = &mut self.queues[qidx(q)];
        cq.fifo.remove(ctx.rqs, rq);
        self.del_rq_rb(ctx, q, rq);
        self.rq_queued -= 1;
        if ctx.rqs[rq].has(flags::PRIO) {
            let cq = self.qm(q);
            cq.prio_pending = cq.prio_pending.saturating_sub(1);
        }
        ctx.rqs[rq].elv[1] = LOC_NONE;
    }

    // ----- service trees --------------------------------------------------------

    /// `cfq_slice_offset`: higher priority, smaller offset (signed, as the
    /// kernel's int × u64 wraps for a group's first queue).
    fn slice_offset(&self, q: Qid) -> i64 {
        let cq = self.q(q);
        let nr = self.g(cq.group).nr_cfqq as i64;
        let d = self.prio_slice(true, 0) as i64 - self.prio_slice(cq.f.sync, cq.ioprio) as i64;
        (nr - 1) * d
    }

    /// `cfq_service_tree_add`.
    fn service_tree_add(&mut self, ctx: &SchedCtx, q: Qid, add_front: bool) {
        let now = ctx.now as i64;
        let (g, class, ty) = {
            let cq = self.q(q);
            (cq.group, cq.class, cq.wl_type())
        };
        let st = st_index(class, ty);
        let key = if class == IDLE_WL {
            match self.g(g).st[st].last() {
                Some((k, last)) if last != q => CFQ_IDLE_DELAY + k,
                _ => CFQ_IDLE_DELAY + now,
            }
        } else if !add_front {
            let k = self.slice_offset(q) + now - self.q(q).slice_resid;
            self.qm(q).slice_resid = 0;
            k
        } else {
            -(NS_PER_SEC as i64) + self.g(g).st[st].first().map_or(now, |(k, _)| k)
        };
        let is_new = self.q(q).tree.is_none();
        if let Some((old_st, old_key, old_seq)) = self.q(q).tree {
            if key == old_key && old_st == st {
                return;
            }
            self.gm(g).st[old_st].rb.remove(&(old_key, old_seq, q));
        }
        let seq = self.next_seq();
        self.gm(g).st[st].rb.insert((key, seq, q));
        let cq = self.qm(q);
        cq.tree = Some((st, key, seq));
        cq.rb_key = key;
        if add_front || !is_new {
            return;
        }
        self.group_notify_queue_add(ctx.cgroups, g);
    }

    fn resort_rr_list(&mut self, ctx: &SchedCtx, q: Qid) {
        if self.q(q).f.on_rr {
            self.service_tree_add(ctx, q, false);
        }
    }

    /// `cfq_add_cfqq_rr`: the queue becomes busy.
    fn add_cfqq_rr(&mut self, ctx: &SchedCtx, q: Qid) {
        self.qm(q).f.on_rr = true;
        self.busy_queues += 1;
        if self.q(q).f.sync {
            self.busy_sync_queues += 1;
        }
        self.resort_rr_list(ctx, q);
    }

    /// `cfq_del_cfqq_rr`: the queue is no longer busy.
    fn del_cfqq_rr(&mut self, q: Qid) {
        self.qm(q).f.on_rr = false;
        let g = self.q(q).group;
        if let Some((st, key, seq)) = self.qm(q).tree.take() {
            self.gm(g).st[st].rb.remove(&(key, seq, q));
        }
        self.prio_tree_remove(q);
        self.group_notify_queue_del(g);
        self.busy_queues -= 1;
        if self.q(q).f.sync {
            self.busy_sync_queues -= 1;
        }
    }

    // ----- groups ---------------------------------------------------------------

    /// The group of cgroup `cg`, created with its ancestors.
    fn group(&mut self, cgroups: &CgroupTree, cg: u16) -> u16 {
        if self.groups.get(cg as usize).is_some_and(|g| g.is_some()) {
            return cg;
        }
        let parent = cgroups.parent(cg).map(|p| self.group(cgroups, p));
        if self.groups.len() <= cg as usize {
            self.groups.resize_with(cg as usize + 1, || None);
        }
        let weight = cgroups.weight(cg, WeightPolicy::Blkcg);
        // cfq_cpd_init: weight = leaf_weight = the default (twice it on the
        // root); writing the root's weight sets its leaf_weight too.
        let leaf_weight = if cg == 0 {
            weight
        } else {
            weight_file_for(cgroups.version(), WeightPolicy::Blkcg).default
        };
        self.groups[cg as usize] = Some(Box::new(Cfqg {
            parent,
            weight,
            leaf_weight,
            nr_active: 0,
            children_weight: 0,
            vfraction: 0,
            vdisktime: 0,
            on_tree: None,
            nr_cfqq: 0,
            dispatched: 0,
            st: Default::default(),
            busy_queues_avg: [0; 3],
            saved_wl_slice: 0,
            saved_wl_type: SYNC_NOIDLE_WL,
            saved_wl_class: BE_WL,
            ttime: Ttime::default(),
            async_q: [[NOQ; 8]; 2],
            async_idle: NOQ,
        }));
        cg
    }

    /// `cfq_group_service_tree_add`: insert by vdisktime, activate up the
    /// hierarchy (weights re-read on activation) and compute vfraction.
    fn group_tree_add(&mut self, cgroups: &CgroupTree, g: u16) {
        let seq = self.next_seq();
        let vd = self.g(g).vdisktime;
        self.grp_tree.insert((vd, seq, g));
        let grp = self.gm(g);
        grp.on_tree = Some(seq);
        let mut propagate = grp.nr_active == 0;
        grp.nr_active += 1;
        grp.children_weight += grp.leaf_weight;
        let mut vfr: u64 = (1u64 << CFQ_SERVICE_SHIFT) * grp.leaf_weight as u64
            / grp.children_weight.max(1) as u64;
        let mut pos = g;
        while let Some(parent) = self.g(pos).parent {
            if propagate {
                // cfq_update_group_weight: a pending weight applies now.
                let w = cgroups.weight(pos, WeightPolicy::Blkcg);
                self.gm(pos).weight = w;
                let p = self.gm(parent);
                propagate = p.nr_active == 0;
                p.nr_active += 1;
                p.children_weight += w;
            }
            vfr = vfr * self.g(pos).weight as u64 / self.g(parent).children_weight.max(1) as u64;
            pos = parent;
        }
        self.gm(g).vfraction = vfr.max(1) as u32;
    }

    /// `cfq_group_service_tree_del`.
    fn group_tree_del(&mut self, g: u16) {
        let grp = self.gm(g);
        grp.nr_active = grp.nr_active.saturating_sub(1);
        let mut propagate = grp.nr_active == 0;
        grp.children_weight = grp.children_weight.saturating_sub(grp.leaf_weight);
        let mut pos = g;
        while propagate {
            self.gm(pos).vfraction = 0;
            let Some(parent) = self.g(pos).parent else {
                break;
            };
            let w = self.g(pos).weight;
            let p = self.gm(parent);
            p.nr_active = p.nr_active.saturating_sub(1);
            propagate = p.nr_active == 0;
            p.children_weight = p.children_weight.saturating_sub(w);
            pos = parent;
        }
        if let Some(seq) = self.gm(g).on_tree.take() {
            let vd = self.g(g).vdisktime;
            self.grp_tree.remove(&(vd, seq, g));
        }
    }

    /// `cfq_group_notify_queue_add`: a group's first busy queue puts it at
    /// the end of the group tree (no credit for having been idle).
    fn group_notify_queue_add(&mut self, cgroups: &CgroupTree, g: u16) {
        self.gm(g).nr_cfqq += 1;
        if self.g(g).on_tree.is_some() {
            return;
        }
        let vd = match self.grp_tree.last() {
            Some(&(last_vd, _, _)) => {
                let delay = if self.iops_mode() {
                    CFQ_IOPS_MODE_GROUP_DELAY
                } else {
                    CFQ_SLICE_MODE_GROUP_DELAY
                };
                last_vd.wrapping_add(delay)
            }
            None => self.min_vdisktime,
        };
        self.gm(g).vdisktime = vd;
        self.group_tree_add(cgroups, g);
    }

    /// `cfq_group_notify_queue_del`.
    fn group_notify_queue_del(&mut self, g: u16) {
        let grp = self.gm(g);
        grp.nr_cfqq = grp.nr_cfqq.saturating_sub(1);
        if grp.nr_cfqq > 0 {
            return;
        }
        self.group_tree_del(g);
        self.gm(g).saved_wl_slice = 0;
    }

    /// `cfq_cfqq_slice_usage`.
    fn slice_usage(&self, q: Qid, now: u64) -> u64 {
        let cq = self.q(q);
        if cq.slice_start == 0 || cq.slice_start == now {
            // Expired before its first completion: charge the time since
            // it was selected, at least a jiffy (seek time on seeky media).
            now.saturating_sub(cq.dispatch_start).max(NS_PER_JIFFY)
        } else {
            (now - cq.slice_start).min(cq.allocated_slice)
        }
    }

    /// `cfq_group_served`: charge the group for the queue's slice.
    fn group_served(&mut self, ctx: &SchedCtx, g: u16, q: Qid) {
        let now = ctx.now;
        let grp = self.g(g);
        let nr_sync = grp.nr_cfqq as i64 - grp.busy_async() as i64 - grp.st[6].count() as i64;
        let used = self.slice_usage(q, now);
        let charge = if self.iops_mode() {
            self.q(q).slice_dispatch as u64
        } else if !self.q(q).f.sync && nr_sync <= 0 {
            self.q(q).allocated_slice
        } else {
            used
        };
        let vfr = self.g(g).vfraction.max(1) as u128;
        let scaled = ((charge as u128) << (2 * CFQ_SERVICE_SHIFT)) / vfr;
        if self.g(g).on_tree.is_some() {
            self.group_tree_del(g);
            let grp = self.gm(g);
            grp.vdisktime = grp.vdisktime.wrapping_add(scaled as u64);
            self.group_tree_add(ctx.cgroups, g);
        } else {
            let grp = self.gm(g);
            grp.vdisktime = grp.vdisktime.wrapping_add(scaled as u64);
        }
        let (exp, ty, class) = (
            self.workload_expires,
            self.serving_wl_type,
            self.serving_wl_class,
        );
        let grp = self.gm(g);
        if exp > now as i64 {
            grp.saved_wl_slice = (exp - now as i64) as u64;
            grp.saved_wl_type = ty;
            grp.saved_wl_class = class;
        } else {
            grp.saved_wl_slice = 0;
        }
    }

    /// `cfq_get_next_cfqg`: the leftmost group; min_vdisktime follows it.
    fn next_cfqg(&mut self) -> Option<u16> {
        let &(vd, _, g) = self.grp_tree.first()?;
        // update_min_vdisktime (signed comparison, max_vdisktime).
        if (vd.wrapping_sub(self.min_vdisktime) as i64) > 0 {
            self.min_vdisktime = vd;
        }
        Some(g)
    }

    /// `cfq_choose_wl_type`: the type whose first queue waited longest.
    fn choose_wl_type(&self, g: u16, class: usize) -> usize {
        let grp = self.g(g);
        let mut best = SYNC_NOIDLE_WL;
        let mut lowest: Option<i64> = None;
        for ty in [ASYNC_WL, SYNC_NOIDLE_WL, SYNC_WL] {
            if let Some((k, _)) = grp.st[st_index(class, ty)].first() {
                if lowest.is_none_or(|l| k < l) {
                    lowest = Some(k);
                    best = ty;
                }
            }
        }
        best
    }

    /// `choose_wl_class_and_type`: RT before BE before IDLE; keep the
    /// workload until its slice expires, then the oldest type, with a slice
    /// proportional to its queues.
    fn choose_wl_class_and_type(&mut self, g: u16, now: u64) {
        let original = self.serving_wl_class;
        let grp = self.g(g);
        self.serving_wl_class = if grp.busy_wl(RT_WL) > 0 {
            RT_WL
        } else if grp.busy_wl(BE_WL) > 0 {
            BE_WL
        } else {
            self.workload_expires = (now + NS_PER_JIFFY) as i64;
            self.serving_wl_class = IDLE_WL;
            return;
        };
        let class = self.serving_wl_class;
        if original == class {
            let count = self.g(g).st[st_index(class, self.serving_wl_type)].count();
            if count > 0 && (now as i64) <= self.workload_expires {
                return;
            }
        }
        self.serving_wl_type = self.choose_wl_type(g, class);
        let ty = self.serving_wl_type;
        let count = self.g(g).st[st_index(class, ty)].count() as u64;
        let group_slice = self.group_slice(g);
        let grp = self.g(g);
        let denom = grp.busy_queues_avg[class].max(grp.busy_wl(class)).max(1) as u64;
        let mut slice = group_slice * count / denom;
        if ty == ASYNC_WL {
            let tmp = self.target_latency * self.g(g).busy_async() as u64
                / self.busy_queues.max(1) as u64;
            slice = slice.min(tmp);
            slice = (slice as u128 * self.slice[0] as u128 / self.slice[1].max(1) as u128) as u64;
        } else {
            slice = slice.max(2 * self.slice_idle);
        }
        slice = slice.max(CFQ_MIN_TT);
        self.workload_expires = (now + slice) as i64;
    }

    /// `cfq_choose_cfqg`: serve the leftmost group, restoring its workload.
    fn choose_cfqg(&mut self, now: u64) {
        let Some(g) = self.next_cfqg() else {
            self.serving_group = None;
            return;
        };
        self.serving_group = Some(g);
        let grp = self.g(g);
        let (saved, ty, class) = (grp.saved_wl_slice, grp.saved_wl_type, grp.saved_wl_class);
        if saved > 0 {
            self.workload_expires = (now + saved) as i64;
            self.serving_wl_type = ty;
            self.serving_wl_class = class;
        } else {
            self.workload_expires = now as i64 - 1;
        }
        self.choose_wl_class_and_type(g, now);
    }

    // ----- the active queue -------------------------------------------------------

    fn del_timer(&mut self) {
        if self.timer_at.take().is_some() {
            self.timer_token += 1;
        }
    }

    /// `__cfq_set_active_queue`.
    fn set_active(&mut self, q: Qid, now: u64) {
        if q != NOQ {
            let cq = self.qm(q);
            cq.slice_start = 0;
            cq.dispatch_start = now;
            cq.allocated_slice = 0;
            cq.slice_end = 0;
            cq.slice_dispatch = 0;
            cq.f.wait_request = false;
            cq.f.must_dispatch = false;
            cq.f.must_alloc_slice = false;
            cq.f.fifo_expire = false;
            cq.f.slice_new = true;
            self.del_timer();
        }
        self.active = q;
    }

    /// `cfq_get_next_queue`: first queue of the serving workload's tree.
    fn next_queue(&self) -> Qid {
        let Some(g) = self.serving_group else {
            return NOQ;
        };
        if self.rq_queued == 0 {
            return NOQ;
        }
        let st = st_index(self.serving_wl_class, self.serving_wl_type);
        self.g(g).st[st].first().map_or(NOQ, |(_, q)| q)
    }

    /// `__cfq_slice_expired`.
    fn expire_queue(&mut self, ctx: &SchedCtx, q: Qid, timed_out: bool) {
        if self.q(q).f.wait_request {
            self.del_timer();
        }
        let seeky = self.q(q).seeky();
        let cq = self.qm(q);
        cq.f.wait_request = false;
        cq.f.wait_busy = false;
        if cq.f.coop && seeky {
            cq.f.split_coop = true;
        }
        if timed_out {
            let resid = if self.q(q).f.slice_new {
                self.scaled_slice(q) as i64
            } else {
                self.q(q).slice_end as i64 - ctx.now as i64
            };
            self.qm(q).slice_resid = resid;
        }
        let g = self.q(q).group;
        self.group_served(ctx, g, q);
        if self.q(q).f.on_rr && self.q(q).is_empty() {
            self.del_cfqq_rr(q);
        }
        self.resort_rr_list(ctx, q);
        if self.active == q {
            self.active = NOQ;
            self.active_pid = None;
        }
        self.maybe_free(q);
    }

    /// `cfq_slice_expired`.
    fn slice_expired(&mut self, ctx: &SchedCtx, timed_out: bool) {
        if self.active != NOQ {
            self.expire_queue(ctx, self.active, timed_out);
        }
    }

    /// `cfqq_close`: a busy queue of the same level whose next request is
    /// near the head position.
    fn queue_close_to_head(&self, ctx: &SchedCtx, cur: Qid) -> Qid {
        let tree = &self.prio_trees[self.q(cur).org_ioprio as usize & 7];
        let pos = self.last_position;
        if let Some(&(_, q)) = tree.range((pos, 0)..=(pos, NOQ)).next() {
            return q;
        }
        let after = tree.range((pos, 0)..).next().map(|&(s, q)| (s - pos, q));
        let before = tree
            .range(..(pos, 0))
            .next_back()
            .map(|&(s, q)| (pos - s, q));
        let mut cands = [after, before];
        cands.sort_by_key(|c| c.map_or(u64::MAX, |(d, _)| d));
        for (d, q) in cands.into_iter().flatten() {
            let next = self.q(q).next_rq;
            if next != NIL
                && d <= CFQQ_CLOSE_THR
                && ctx.rqs[next].sector.abs_diff(pos) <= CFQQ_CLOSE_THR
            {
                return q;
            }
        }
        NOQ
    }

    /// `cfq_close_cooperator`.
    fn close_cooperator(&self, ctx: &SchedCtx, cur: Qid) -> Qid {
        let c = self.q(cur);
        if c.idle_class() || !c.f.sync || c.seeky() || self.g(c.group).nr_cfqq == 1 {
            return NOQ;
        }
        let q = self.queue_close_to_head(ctx, cur);
        if q == NOQ || q == cur {
            return NOQ;
        }
        let n = self.q(q);
        if n.group != c.group || !n.f.sync || n.seeky() || (n.class == RT_WL) != (c.class == RT_WL)
        {
            return NOQ;
        }
        q
    }

    /// `cfq_setup_merge`: schedule merging `q` into `new` (or the reverse,
    /// towards the queue with more processes).
    fn setup_merge(&mut self, q: Qid, mut new: Qid) {
        if self.q(new).procs == 0 {
            return;
        }
        loop {
            let n = self.q(new).new_cfqq;
            if n == NOQ {
                break;
            }
            if n == q {
                return;
            }
            new = n;
        }
        let (p, np) = (self.q(q).procs, self.q(new).procs);
        if p == 0 || np == 0 || q == new {
            return;
        }
        let (from, to) = if np >= p { (q, new) } else { (new, q) };
        if self.q(from).new_cfqq != NOQ {
            return;
        }
        self.qm(from).new_cfqq = to;
        self.qm(to).links += 1;
    }

    /// `cfq_select_queue`: keep the active queue, wait for it, or switch.
    fn select_queue(&mut self, ctx: &mut SchedCtx) -> Qid {
        let now = ctx.now;
        let q = self.active;
        let mut new_q = NOQ;
        'expire: {
            if q == NOQ {
                break 'expire;
            }
            if self.rq_queued == 0 {
                return NOQ;
            }
            let cq = self.q(q);
            // Waiting for the group to get backlogged: got a request.
            if cq.f.wait_busy && !cq.is_empty() {
                self.slice_expired(ctx, false);
                break 'expire;
            }
            let mut check_group_idle = false;
            if self.slice_used(q, now) && !self.q(q).f.must_dispatch {
                let cq = self.q(q);
                if self.g(cq.group).nr_cfqq == 1
                    && cq.is_empty()
                    && cq.dispatched > 0
                    && self.should_idle(q)
                {
                    return NOQ;
                }
                check_group_idle = true;
            }
            if !check_group_idle {
                if !self.q(q).is_empty() {
                    return q;
                }
                let coop = self.close_cooperator(ctx, q);
                if coop != NOQ {
                    if self.q(q).new_cfqq == NOQ {
                        self.setup_merge(q, coop);
                    }
                    new_q = coop;
                    self.slice_expired(ctx, false);
                    break 'expire;
                }
                if self.timer_at.is_some() {
                    return NOQ;
                }
                let cq = self.q(q);
                let remaining = cq.slice_end.wrapping_sub(now);
                let elapsed = now.wrapping_sub(cq.slice_start);
                if cq.seeky() && cq.f.idle_window && (cq.f.slice_new || remaining > elapsed) {
                    let cq = self.qm(q);
                    cq.f.deep = false;
                    cq.f.idle_window = false;
                }
                if self.q(q).dispatched > 0 && self.should_idle(q) {
                    return NOQ;
                }
            }
            let cq = self.q(q);
            let grp = self.g(cq.group);
            if self.group_idle > 0
                && grp.nr_cfqq == 1
                && grp.dispatched > 0
                && !self.thinktime_big(&grp.ttime, true)
            {
                return NOQ;
            }
            self.slice_expired(ctx, false);
        }
        if new_q == NOQ {
            self.choose_cfqg(now);
            new_q = self.next_queue();
        }
        self.set_active(new_q, now);
        new_q
    }

    /// `cfq_check_fifo`: the oldest request if it expired, once per slice.
    fn check_fifo(&mut self, ctx: &SchedCtx, q: Qid) -> RqId {
        let cq = self.qm(q);
        if cq.f.fifo_expire {
            return NIL;
        }
        cq.f.fifo_expire = true;
        match cq.fifo.front() {
            Some(rq) if ctx.now >= ctx.rqs[rq].fifo_time => rq,
            _ => NIL,
        }
    }

    /// `cfq_may_dispatch`.
    fn may_dispatch(&self, q: Qid, now: u64) -> bool {
        let cq = self.q(q);
        if cq.f.must_dispatch {
            return true;
        }
        // Drain async requests before starting sync I/O that would idle.
        if self.rq_in_flight[0] > 0 && self.should_idle(q) {
            return false;
        }
        // Async waits while sync I/O is in flight.
        if self.rq_in_flight[1] > 0 && !cq.f.sync {
            return false;
        }
        let mut max = (self.quantum / 2).max(1);
        if cq.idle_class() {
            max = 1;
        }
        if cq.dispatched >= max {
            if cq.idle_class() {
                return false;
            }
            let promote_sync = cq.f.sync && self.busy_sync_queues == 1;
            if self.busy_queues > 1 && self.slice_used_soon(q, now) && !promote_sync {
                return false;
            }
            max = if self.busy_queues == 1 || promote_sync {
                u32::MAX
            } else {
                self.quantum
            };
        }
        if !cq.f.sync && self.low_latency {
            let last_sync = now as i64 - self.last_delayed_sync;
            let mut depth =
                (last_sync.max(0) as u64 / self.slice[1].max(1)).min(u32::MAX as u64) as u32;
            if depth == 0 && cq.dispatched == 0 {
                depth = 1;
            }
            max = max.min(depth);
        }
        cq.dispatched < max
    }

    /// `cfq_dispatch_insert`: move a request to the dispatch list.
    fn dispatch_insert(&mut self, ctx: &mut SchedCtx, q: Qid, rq: RqId) {
        let n = self.find_next_rq(ctx, q, rq);
        self.qm(q).next_rq = n;
        self.remove_request(ctx, q, rq);
        let cq = self.qm(q);
        cq.dispatched += 1;
        let (g, sync) = (cq.group, cq.f.sync);
        self.gm(g).dispatched += 1;
        ctx.dispatch_sort(rq);
        self.rq_in_flight[sync as usize] += 1;
    }

    /// `cfq_dispatch_request`.
    fn dispatch_request(&mut self, ctx: &mut SchedCtx, q: Qid) -> bool {
        if self.q(q).is_empty() {
            return false;
        }
        let mut rq = self.check_fifo(ctx, q);
        if rq != NIL {
            self.qm(q).f.must_dispatch = true;
        }
        if !self.may_dispatch(q, ctx.now) {
            return false;
        }
        if rq == NIL {
            rq = self.q(q).next_rq;
        }
        let pid = ctx.rqs[rq].pid;
        self.dispatch_insert(ctx, q, rq);
        if self.active_pid.is_none() {
            self.active_pid = Some(pid);
        }
        true
    }

    /// `cfq_forced_dispatch`: everything to the dispatch list.
    fn forced_dispatch(&mut self, ctx: &mut SchedCtx) -> u32 {
        self.slice_expired(ctx, false);
        let mut n = 0;
        while let Some(q) = self.next_queue_forced() {
            self.set_active(q, ctx.now);
            while self.q(q).next_rq != NIL {
                let rq = self.q(q).next_rq;
                self.dispatch_insert(ctx, q, rq);
                n += 1;
            }
            self.expire_queue(ctx, q, false);
        }
        n
    }

    /// `cfq_get_next_queue_forced`.
    fn next_queue_forced(&mut self) -> Option<Qid> {
        let g = self.next_cfqg()?;
        self.g(g)
            .st
            .iter()
            .find_map(|st| st.first().map(|(_, q)| q))
    }

    // ----- arrival -------------------------------------------------------------

    /// `cfq_update_io_seektime`.
    fn update_seektime(&mut self, ctx: &SchedCtx, q: Qid, rq: RqId) {
        let r = &ctx.rqs[rq];
        let nonrot = self.nonrot;
        let cq = self.qm(q);
        let sdist = if cq.last_request_pos != 0 {
            cq.last_request_pos.abs_diff(r.sector)
        } else {
            0
        };
        cq.seek_history <<= 1;
        let seeky = if nonrot {
            r.nr_sectors < CFQQ_SECT_THR_NONROT
        } else {
            sdist > CFQQ_SEEK_THR
        };
        cq.seek_history |= seeky as u32;
    }

    /// `cfq_update_idle_window`.
    fn update_idle_window(&mut self, ctx: &SchedCtx, q: Qid, pid: u32) {
        let cq = self.q(q);
        if !cq.f.sync || cq.idle_class() {
            return;
        }
        let mut enable = cq.f.idle_window;
        if cq.queued[0] + cq.queued[1] >= 4 {
            self.qm(q).f.deep = true;
        }
        let cq = self.q(q);
        let noidle = cq.next_rq != NIL && {
            // req_noidle: a write that is SYNC without IDLE.
            let r = &ctx.rqs[cq.next_rq];
            r.op.is_write() && r.flags & (flags::SYNC | flags::IDLE) == flags::SYNC
        };
        let ttime = self.cics.get(&pid).map(|c| c.ttime);
        if noidle || self.slice_idle == 0 || (!cq.f.deep && cq.seeky()) {
            enable = false;
        } else if let Some(t) = ttime.filter(|t| t.valid()) {
            enable = t.mean <= self.slice_idle;
        }
        self.qm(q).f.idle_window = enable;
    }

    /// `cfq_should_preempt`: may the new request's queue take the disk now?
    fn should_preempt(&self, ctx: &SchedCtx, new: Qid, rq: RqId) -> bool {
        let a = self.active;
        if a == NOQ {
            return false;
        }
        let (cq, nq) = (self.q(a), self.q(new));
        let r = &ctx.rqs[rq];
        if nq.idle_class() {
            return false;
        }
        if cq.idle_class() {
            return true;
        }
        if cq.class == RT_WL && nq.class != RT_WL {
            return false;
        }
        if r.is_sync() && !cq.f.sync && !cq.f.must_dispatch {
            return true;
        }
        // Only the active group or an ancestor of it may preempt.
        if !self.is_descendant(cq.group, nq.group) {
            return false;
        }
        if self.slice_used(a, ctx.now) {
            return true;
        }
        if nq.class == RT_WL && cq.class != RT_WL {
            return true;
        }
        if self.serving_wl_type == SYNC_NOIDLE_WL
            && nq.wl_type() == SYNC_NOIDLE_WL
            && cq.is_empty()
            && (self.noidle_preempt_any || self.tree_count(new) == 2)
        {
            return true;
        }
        if r.has(flags::PRIO) && cq.prio_pending == 0 {
            return true;
        }
        if self.not_idling_preempt && cq.is_empty() && !self.should_idle(a) {
            return true;
        }
        if self.active_pid.is_none() || !cq.f.wait_request {
            return false;
        }
        r.sector.abs_diff(self.last_position) <= CFQQ_CLOSE_THR
    }

    /// `cfqq->service_tree->count`: busy queues on `q`'s service tree (0
    /// when it is on none).
    fn tree_count(&self, q: Qid) -> u32 {
        let cq = self.q(q);
        cq.tree
            .map_or(0, |(st, _, _)| self.g(cq.group).st[st].count())
    }

    /// `cfqg_is_descendant(g, ancestor)`.
    fn is_descendant(&self, mut g: u16, ancestor: u16) -> bool {
        loop {
            if g == ancestor {
                return true;
            }
            match self.g(g).parent {
                Some(p) => g = p,
                None => return false,
            }
        }
    }

    /// `cfq_preempt_queue`.
    fn preempt_queue(&mut self, ctx: &SchedCtx, q: Qid) {
        let old_type = self.q(self.active).wl_type();
        self.slice_expired(ctx, true);
        let g = self.q(q).group;
        if old_type != self.q(q).wl_type() {
            self.gm(g).saved_wl_slice = 0;
        }
        if self.q(q).f.on_rr {
            self.service_tree_add(ctx, q, true);
        }
        let cq = self.qm(q);
        cq.slice_end = 0;
        cq.f.slice_new = true;
    }

    /// `cfq_rq_enqueued`.
    fn rq_enqueued(&mut self, ctx: &mut SchedCtx, q: Qid, rq: RqId) {
        let now = ctx.now;
        self.rq_queued += 1;
        if ctx.rqs[rq].has(flags::PRIO) {
            self.qm(q).prio_pending += 1;
        }
        let pid = ctx.rqs[rq].pid;
        // cfq_update_io_thinktime: process and tree for sync queues, group always.
        let (slice_idle, group_idle) = (self.slice_idle, self.group_idle);
        let (g, sync, tree) = (self.q(q).group, self.q(q).f.sync, self.q(q).tree);
        if sync {
            if let Some(c) = self.cics.get_mut(&pid) {
                c.ttime.update(now, slice_idle);
            }
            if let Some((st, _, _)) = tree {
                self.gm(g).st[st].ttime.update(now, slice_idle);
            }
        }
        self.gm(g).ttime.update(now, group_idle);
        self.update_seektime(ctx, q, rq);
        self.update_idle_window(ctx, q, pid);
        self.qm(q).last_request_pos = ctx.rqs[rq].end_sector();
        if q == self.active {
            if self.q(q).f.wait_request {
                let bytes = ctx.rqs[rq].nr_sectors as u64 * 512;
                if bytes > PAGE_SIZE || self.busy_queues > 1 {
                    self.del_timer();
                    self.qm(q).f.wait_request = false;
                    ctx.kick();
                } else {
                    self.qm(q).f.must_dispatch = true;
                }
            }
        } else if self.should_preempt(ctx, q, rq) {
            self.preempt_queue(ctx, q);
            ctx.kick();
        }
    }

    // ----- completion -------------------------------------------------------------

    /// `cfq_update_hw_tag`: does the device queue commands (NCQ)?
    fn update_hw_tag(&mut self) {
        self.hw_tag_est_depth = self.hw_tag_est_depth.max(self.rq_in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.rq_queued <= CFQ_HW_QUEUE_MIN && self.rq_in_driver <= CFQ_HW_QUEUE_MIN {
            return;
        }
        if self.active != NOQ {
            let cq = self.q(self.active);
            if cq.f.idle_window
                && cq.dispatched + cq.queued[0] + cq.queued[1] < CFQ_HW_QUEUE_MIN
                && self.rq_in_driver < CFQ_HW_QUEUE_MIN
            {
                return;
            }
        }
        let samples = self.hw_tag_samples;
        self.hw_tag_samples += 1;
        if samples < 50 {
            return;
        }
        self.hw_tag = (self.hw_tag_est_depth >= CFQ_HW_QUEUE_MIN) as i32;
    }

    /// `cfq_should_wait_busy`: keep an emptied group's last queue a little
    /// longer so the group keeps its place.
    fn should_wait_busy(&self, q: Qid, now: u64) -> bool {
        let cq = self.q(q);
        let grp = self.g(cq.group);
        if grp.nr_cfqq > 1 || self.thinktime_big(&grp.ttime, true) || !cq.is_empty() {
            return false;
        }
        if self.slice_used(q, now) {
            return true;
        }
        let left = cq.slice_end.wrapping_sub(now);
        if let Some(t) = self.cic_ttime(self.active_pid) {
            if t.valid() && left < t.mean {
                return true;
            }
        }
        left <= NS_PER_JIFFY
    }

    /// `cfq_arm_slice_timer`: idle on the emptied active queue (or group).
    fn arm_slice_timer(&mut self, ctx: &mut SchedCtx) {
        let q = self.active;
        if self.nonrot && self.hw_tag != 0 && self.group_idle == 0 {
            return;
        }
        let mut group_idle = 0;
        if !self.should_idle(q) {
            if self.group_idle > 0 {
                group_idle = self.group_idle;
            } else {
                return;
            }
        }
        let cq = self.q(q);
        if cq.dispatched > 0 {
            return;
        }
        let Some(t) = self.cic_ttime(self.active_pid) else {
            return;
        };
        if t.valid() && cq.slice_end.wrapping_sub(ctx.now) < t.mean {
            return;
        }
        if group_idle > 0 {
            let st_big = cq
                .tree
                .is_some_and(|(st, _, _)| self.thinktime_big(&self.g(cq.group).st[st].ttime, true));
            if self.g(cq.group).nr_cfqq > 1 || st_big {
                return;
            }
        }
        self.qm(q).f.wait_request = true;
        let sl = if group_idle > 0 {
            group_idle
        } else {
            self.slice_idle
        };
        self.timer_token += 1;
        let at = ctx.now + sl;
        self.timer_at = Some(at);
        ctx.arm_timer(at, self.timer_token);
    }

    // ----- queues and processes ---------------------------------------------------

    fn alloc_queue(&mut self, group: u16, pid: u32, sync: bool, prio: IoPrio) -> Qid {
        let q = Cfqq::new(group, pid, sync, prio);
        match self.free_queues.pop() {
            Some(id) => {
                self.queues[qidx(id)] = q;
                id
            }
            None => {
                self.queues.push(q);
                (self.queues.len() - 1) as Qid
            }
        }
    }

    /// Free a queue nothing refers to (`cfq_put_queue` reaching 0).
    fn maybe_free(&mut self, q: Qid) {
        let cq = self.q(q);
        let referenced = cq.procs > 0
            || cq.links > 0
            || cq.pinned
            || cq.allocated != [0, 0]
            || cq.f.on_rr
            || !cq.is_empty()
            || self.active == q;
        if !cq.live || referenced {
            return;
        }
        self.prio_tree_remove(q);
        let next = self.q(q).new_cfqq;
        self.qm(q).live = false;
        self.free_queues.push(q);
        if next != NOQ {
            self.qm(next).links -= 1;
            self.maybe_free(next);
        }
    }

    /// `cfq_async_queue_prio` in `cfq_get_queue` (created and pinned).
    fn async_queue(&mut self, cgroups: &CgroupTree, cg: u16, prio: IoPrio, pid: u32) -> Qid {
        let g = self.group(cgroups, cg);
        let p = prio.effective();
        let existing = *async_slot(self.gm(g), p);
        if existing != NOQ {
            return existing;
        }
        let q = self.alloc_queue(g, pid, false, prio);
        self.qm(q).pinned = true;
        *async_slot(self.gm(g), p) = q;
        q
    }

    /// The async queue a request of this cgroup and priority would use, if
    /// it exists.
    fn find_async_queue(&self, cg: u16, prio: IoPrio) -> Qid {
        let Some(Some(grp)) = self.groups.get(cg as usize) else {
            return NOQ;
        };
        let p = prio.effective();
        match p.class {
            IoPrioClass::Rt => grp.async_q[RT_WL][p.level as usize & 7],
            IoPrioClass::Idle => grp.async_idle,
            _ => grp.async_q[BE_WL][p.level as usize & 7],
        }
    }

    /// The queue a bio of this process would go to (no side effects).
    fn queue_for_bio(&self, bio: &BioInfo) -> Qid {
        if bio.is_sync() {
            self.cics.get(&bio.pid).map_or(NOQ, |c| {
                if c.cgroup == bio.cgroup {
                    c.sync_q
                } else {
                    NOQ
                }
            })
        } else {
            self.find_async_queue(bio.cgroup, bio.ioprio)
        }
    }

    /// `cfq_set_request`: attach the request to its process's queue,
    /// creating it, following a scheduled merge or splitting a seeky one.
    fn set_request(&mut self, ctx: &mut SchedCtx, rq: RqId) -> Qid {
        let r = &ctx.rqs[rq];
        let (pid, cg, prio, sync) = (r.pid, r.cgroup, r.ioprio, r.is_sync());
        let now = ctx.now;
        let cic = self.cics.entry(pid).or_insert_with(|| Cic {
            cgroup: cg,
            ioprio: prio,
            sync_q: NOQ,
            ttime: Ttime {
                last_end_request: now,
                ..Ttime::default()
            },
        });
        // check_ioprio_changed / check_blkcg_changed.
        let prio_changed = cic.ioprio != prio;
        cic.ioprio = prio;
        let blkcg_changed = cic.cgroup != cg;
        cic.cgroup = cg;
        let mut sq = cic.sync_q;
        if blkcg_changed && sq != NOQ {
            self.cics.get_mut(&pid).expect("cic").sync_q = NOQ;
            self.qm(sq).procs -= 1;
            self.maybe_free(sq);
            sq = NOQ;
        }
        if prio_changed && sq != NOQ {
            self.qm(sq).f.prio_changed = true;
        }
        let q = if !sync {
            self.async_queue(ctx.cgroups, cg, prio, pid)
        } else {
            self.sync_queue_of(ctx, pid, cg, prio)
        };
        let dir = ctx.rqs[rq].op.dir();
        self.qm(q).allocated[dir] += 1;
        ctx.rqs[rq].elv = [q as u64 + 1, LOC_NONE];
        q
    }

    /// The process's sync queue for a new request (`cfq_set_request`'s
    /// sync path).
    fn sync_queue_of(&mut self, ctx: &mut SchedCtx, pid: u32, cg: u16, prio: IoPrio) -> Qid {
        loop {
            let q = self.cics[&pid].sync_q;
            if q == NOQ {
                let g = self.group(ctx.cgroups, cg);
                let q = self.alloc_queue(g, pid, true, prio);
                self.qm(q).procs = 1;
                self.cics.get_mut(&pid).expect("cic").sync_q = q;
                return q;
            }
            let cq = self.q(q);
            if cq.f.coop && cq.f.split_coop {
                // split_cfqq: the last process keeps the queue.
                if cq.procs == 1 {
                    let cq = self.qm(q);
                    cq.pid = pid;
                    cq.f.coop = false;
                    cq.f.split_coop = false;
                    return q;
                }
                self.cics.get_mut(&pid).expect("cic").sync_q = NOQ;
                self.qm(q).procs -= 1;
                self.maybe_free(q);
                continue;
            }
            let new = cq.new_cfqq;
            if new != NOQ && self.q(new).live {
                // cfq_merge_cfqqs: the process moves to the cooperator.
                self.cics.get_mut(&pid).expect("cic").sync_q = new;
                self.qm(new).f.coop = true;
                self.qm(new).procs += 1;
                self.qm(q).procs -= 1;
                self.maybe_free(q);
                return new;
            }
            return q;
        }
    }
}

/// `cfq_async_queue_prio`: the group's async queue slot of a priority
/// (RT and BE per level, one for IDLE).
fn async_slot(grp: &mut Cfqg, p: IoPrio) -> &mut Qid {
    let level = p.level as usize & 7;
    match p.class {
        IoPrioClass::Rt => &mut grp.async_q[RT_WL][level],
        IoPrioClass::Idle => &mut grp.async_idle,
        _ => &mut grp.async_q[BE_WL][level],
    }
}

impl Elevator for Cfq {
    fn name(&self) -> &'static str {
        "cfq"
    }

    fn init(&mut self, q: &QueueInfo) {
        // cfq_registered_queue: no idling by default on non-rotational
        // queues. It arrived in 4.8 (from memory: "block: Make CFQ default
        // to IOPS mode on SSDs"); older kernels (E4's 2.6.39) keep
        // slice_idle at 8 ms on SSDs, where only the NCQ check
        // (nonrot && hw_tag) and seekiness turn idling off.
        self.nonrot = !q.rotational;
        self.noidle_preempt_any = q.kernel >= NOIDLE_PREEMPT_ANY_SINCE;
        self.not_idling_preempt = q.kernel >= NOT_IDLING_PREEMPT_SINCE;
        if self.nonrot && q.kernel >= IOPS_MODE_ON_SSD_SINCE {
            self.slice_idle = 0;
        }
    }

    fn tunables(&self) -> Vec<Tunable> {
        show_attrs(self, CFQ_ATTRS)
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        store_attr(self, "cfq", CFQ_ATTRS, name, value)
    }

    fn may_queue(&mut self, _ctx: &mut SchedCtx, bio: &BioInfo) -> MayQueue {
        let q = self.queue_for_bio(bio);
        if q == NOQ || !self.q(q).live {
            return MayQueue::May;
        }
        let prio = self.cics.get(&bio.pid).map_or(bio.ioprio, |c| c.ioprio);
        let cq = self.qm(q);
        cq.init_prio_data(prio);
        if cq.f.wait_request && !cq.f.must_alloc_slice {
            cq.f.must_alloc_slice = true;
            return MayQueue::Must;
        }
        MayQueue::May
    }

    fn prepare_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.set_request(ctx, rq);
    }

    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, _at_head: bool) {
        let q = match Self::rq_queue(ctx, rq) {
            Some(q) if self.q(q).live => q,
            _ => self.set_request(ctx, rq),
        };
        if ctx.rqs[rq].elv[1] == LOC_QUEUED {
            return;
        }
        let pid = ctx.rqs[rq].pid;
        let prio = self.cics.get(&pid).map_or(ctx.rqs[rq].ioprio, |c| c.ioprio);
        self.qm(q).init_prio_data(prio);
        let sync = ctx.rqs[rq].is_sync() as usize;
        ctx.rqs[rq].fifo_time = ctx.now + self.fifo_expire[sync];
        self.qm(q).fifo.push_back(ctx.rqs, rq);
        ctx.rqs[rq].elv[1] = LOC_QUEUED;
        self.add_rq_rb(ctx, q, rq);
        self.rq_enqueued(ctx, q, rq);
    }

    fn dispatch_legacy(&mut self, ctx: &mut SchedCtx, force: bool) -> u32 {
        if self.busy_queues == 0 {
            return 0;
        }
        if force {
            return self.forced_dispatch(ctx);
        }
        let q = self.select_queue(ctx);
        if q == NOQ || !self.dispatch_request(ctx, q) {
            return 0;
        }
        let cq = self.qm(q);
        cq.slice_dispatch += 1;
        cq.f.must_dispatch = false;
        let maxrq = self.prio_to_maxrq(q);
        let cq = self.q(q);
        let async_done = !cq.f.sync && cq.slice_dispatch >= maxrq;
        if self.busy_queues > 1 && (async_done || cq.idle_class()) {
            self.qm(q).slice_end = ctx.now + 1;
            self.slice_expired(ctx, false);
        }
        1
    }

    fn has_work(&self, _hctx: u16) -> bool {
        self.rq_queued > 0
    }

    fn activate_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.rq_in_driver += 1;
        self.last_position = ctx.rqs[rq].end_sector();
    }

    fn deactivate_request(&mut self, _ctx: &mut SchedCtx, _rq: RqId) {
        self.rq_in_driver = self.rq_in_driver.saturating_sub(1);
    }

    fn completed_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let Some(q) = Self::rq_queue(ctx, rq) else {
            return;
        };
        let now = ctx.now;
        self.update_hw_tag();
        self.rq_in_driver = self.rq_in_driver.saturating_sub(1);
        let (g, qsync) = (self.q(q).group, self.q(q).f.sync);
        let cq = self.qm(q);
        cq.dispatched = cq.dispatched.saturating_sub(1);
        let grp = self.gm(g);
        grp.dispatched = grp.dispatched.saturating_sub(1);
        self.rq_in_flight[qsync as usize] = self.rq_in_flight[qsync as usize].saturating_sub(1);
        let r = &ctx.rqs[rq];
        if r.is_sync() {
            let (pid, start) = (r.pid, r.start_ns);
            if let Some(c) = self.cics.get_mut(&pid) {
                c.ttime.last_end_request = now;
            }
            let cq = self.q(q);
            let st = match cq.tree {
                Some((st, _, _)) if cq.f.on_rr => st,
                _ => st_index(cq.class, cq.wl_type()),
            };
            self.gm(g).st[st].ttime.last_end_request = now;
            if start + self.fifo_expire[1] <= now {
                self.last_delayed_sync = now as i64;
            }
        }
        self.gm(g).ttime.last_end_request = now;
        if self.active == q {
            self.completed_active(ctx, q, r_is_sync(ctx, rq));
        }
        if self.rq_in_driver == 0 {
            self.schedule_dispatch(ctx);
        }
    }

    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let Some(q) = Self::rq_queue(ctx, rq) else {
            return;
        };
        if ctx.rqs[rq].elv[1] == LOC_QUEUED {
            self.remove_request(ctx, q, rq);
        }
        let dir = ctx.rqs[rq].op.dir();
        let cq = self.qm(q);
        cq.allocated[dir] = cq.allocated[dir].saturating_sub(1);
        ctx.rqs[rq].elv = [0, LOC_NONE];
        self.maybe_free(q);
    }

    fn allow_merge(&mut self, ctx: &mut SchedCtx, rq: RqId, bio: &BioInfo) -> bool {
        if bio.is_sync() && !ctx.rqs[rq].is_sync() {
            return false;
        }
        let q = self.queue_for_bio(bio);
        q != NOQ && Self::rq_queue(ctx, rq) == Some(q)
    }

    fn allow_rq_merge(&mut self, ctx: &mut SchedCtx, rq: RqId, next: RqId) -> bool {
        Self::rq_queue(ctx, rq) == Self::rq_queue(ctx, next)
    }

    fn request_merge(&self, ctx: &SchedCtx, bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        let q = self.queue_for_bio(bio);
        if q == NOQ || !self.q(q).live {
            return None;
        }
        let rq = self.forest.find(&self.q(q).sort, bio.end_sector())?;
        bio_merge_ok(ctx.rqs, rq, bio, false).then_some((rq, MergeKind::Front))
    }

    fn request_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, kind: MergeKind) {
        if kind != MergeKind::Front || ctx.rqs[rq].elv[1] != LOC_QUEUED {
            return;
        }
        let Some(q) = Self::rq_queue(ctx, rq) else {
            return;
        };
        // cfq_reposition_rq_rb.
        let sync = ctx.rqs[rq].is_sync() as usize;
        let cq = &mut self.queues[qidx(q)];
        self.forest.remove(&mut cq.sort, rq);
        cq.queued[sync] = cq.queued[sync].saturating_sub(1);
        self.add_rq_rb(ctx, q, rq);
    }

    fn requests_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, next: RqId) {
        if ctx.rqs[next].elv[1] != LOC_QUEUED {
            return;
        }
        let (Some(q), Some(qn)) = (Self::rq_queue(ctx, rq), Self::rq_queue(ctx, next)) else {
            return;
        };
        // Reposition in the FIFO if next is older.
        if ctx.rqs[rq].elv[1] == LOC_QUEUED
            && q == qn
            && ctx.rqs[next].fifo_time < ctx.rqs[rq].fifo_time
        {
            let t = ctx.rqs[next].fifo_time;
            let cq = &mut self.queues[qidx(q)];
            cq.fifo.remove(ctx.rqs, rq);
            cq.fifo.insert_after(ctx.rqs, next, rq);
            ctx.rqs[rq].fifo_time = t;
        }
        if self.q(q).next_rq == next {
            self.qm(q).next_rq = rq;
        }
        self.remove_request(ctx, qn, next);
        let cn = self.q(qn);
        if cn.f.on_rr && cn.is_empty() && qn != self.active {
            self.del_cfqq_rr(qn);
        }
    }

    fn next_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        (ctx.rqs[rq].elv[1] == LOC_QUEUED)
            .then(|| self.forest.next(rq))
            .flatten()
    }

    fn former_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        (ctx.rqs[rq].elv[1] == LOC_QUEUED)
            .then(|| self.forest.prev(rq))
            .flatten()
    }

    fn timer(&mut self, ctx: &mut SchedCtx, token: u64) {
        if token != self.timer_token || self.timer_at.is_none() {
            return;
        }
        self.timer_at = None;
        self.idle_slice_timer(ctx);
    }
}

fn r_is_sync(ctx: &SchedCtx, rq: RqId) -> bool {
    ctx.rqs[rq].is_sync()
}

impl Cfq {
    /// The active queue's part of `cfq_completed_request`: start the slice,
    /// wait busy, expire, or arm the idle timer.
    fn completed_active(&mut self, ctx: &mut SchedCtx, q: Qid, sync: bool) {
        let now = ctx.now;
        if self.q(q).f.slice_new {
            self.set_prio_slice(q, now);
            self.qm(q).f.slice_new = false;
        }
        if self.should_wait_busy(q, now) {
            let extend = if self.slice_idle > 0 {
                self.slice_idle
            } else {
                self.group_idle
            };
            let cq = self.qm(q);
            cq.slice_end = now + extend;
            cq.f.wait_busy = true;
        }
        if self.slice_used(q, now) || self.q(q).idle_class() {
            self.slice_expired(ctx, true);
        } else if sync && self.q(q).is_empty() && self.close_cooperator(ctx, q) == NOQ {
            self.arm_slice_timer(ctx);
        }
    }

    /// `cfq_idle_slice_timer`.
    fn idle_slice_timer(&mut self, ctx: &mut SchedCtx) {
        let q = self.active;
        if q != NOQ {
            let cq = self.q(q);
            if cq.f.must_dispatch {
                self.schedule_dispatch(ctx);
                return;
            }
            if !self.slice_used(q, ctx.now) {
                if self.busy_queues == 0 {
                    return;
                }
                if !self.q(q).is_empty() {
                    self.schedule_dispatch(ctx);
                    return;
                }
                // The idle did not pay off.
                self.qm(q).f.deep = false;
            }
        }
        self.slice_expired(ctx, false);
        self.schedule_dispatch(ctx);
    }
}
