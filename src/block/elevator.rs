//! The elevator interface: what the block layer calls in a scheduler and what
//! a scheduler may ask of the block layer (kernel: `block/elevator.h`).
//!
//! One trait covers both generations of the kernel's hooks:
//! - blk-mq's `elevator_mq_ops` (v4.11+: insert, dispatch per hardware queue,
//!   has_work, limit_depth, prepare/finish, completed, requeue, merges);
//! - the legacy single-queue `elevator_ops` (≤ 4.20: add_req, dispatch with a
//!   `force` flag into the core's dispatch list, may_queue, activate/deactivate,
//!   completed, set/put_req, merges).
//!
//! Which set the core calls is a property of the scheduler's type
//! ([`ElevatorType::imp`]); every hook has a default so a scheduler writes
//! only what its kernel counterpart has. A scheduler's `iosched/` attributes
//! are data ([`Attr`], like the kernel's `elv_fs_entry` arrays with their
//! SHOW/STORE macros); [`show_attrs`] and [`store_attr`] read and write them.
//!
//! The registry of schedulers (the table of [`ElevatorType`]s) lives in
//! `crate::sched`; the block layer only sees this interface.

use super::cpu::{HookLock, SchedCost};
use super::legacy::DispatchList;
use super::request::{Op, RequestArena, RqId};
use super::sysfs;
use crate::cgroup::{CgroupTree, IoPrio};
use crate::kernel::Version;
use crate::sim::time::{self, Ns};

/// Queue facts a scheduler may read (sysfs `queue/` values in effect and the
/// CPU → queue maps).
#[derive(Clone, Debug, PartialEq)]
pub struct QueueInfo {
    pub nr_hw_queues: u32,
    /// Driver tags per hardware queue.
    pub queue_depth: u32,
    /// Scheduler tags per hardware queue (`nr_requests`).
    pub nr_requests: u32,
    pub rotational: bool,
    /// 0, 1 or 2, as sysfs `nomerges`.
    pub nomerges: u8,
    /// `max_sectors_kb` in sectors.
    pub max_sectors: u32,
    /// CPU → hardware queue (`blk_mq_map_queue`).
    pub cpu_hctx: Vec<u16>,
    /// CPU → index of its software queue within its hardware queue
    /// (`ctx->index_hw[type]`).
    pub cpu_ctx: Vec<u16>,
    /// Software queues mapped to each hardware queue (`hctx->nr_ctx`).
    pub hctx_nr_ctx: Vec<u16>,
    /// Hardware queue → the first CPU mapped to it (where kblockd runs it).
    pub hctx_first_cpu: Vec<u16>,
    /// The kernel version the queue runs as (`--kernel`; crate::kernel):
    /// schedulers whose algorithm changed between versions read it.
    pub kernel: crate::kernel::Version,
    /// Bits per word of the scheduler-tag bitmap (`1 << sb.shift`).
    pub tag_bits_per_word: u32,
    /// Before v6.17 a shallow depth (`limit_depth`) counts bits per word of
    /// the tag bitmap; from v6.17 bits of the whole map (block/sbitmap.rs).
    pub shallow_per_word: bool,
}

impl QueueInfo {
    /// Queue facts for `nr_cpus` CPUs spread over `nr_hw_queues` hardware
    /// queues the way `blk_mq_map_queues` spreads them (evenly, in order).
    pub fn new(nr_cpus: usize, nr_hw_queues: usize, queue_depth: u32, nr_requests: u32) -> Self {
        let nr_cpus = nr_cpus.max(1);
        let nr_hw = nr_hw_queues.clamp(1, nr_cpus);
        let mut cpu_hctx = Vec::with_capacity(nr_cpus);
        let mut cpu_ctx = Vec::with_capacity(nr_cpus);
        let mut hctx_nr_ctx = vec![0u16; nr_hw];
        let mut hctx_first_cpu = vec![0u16; nr_hw];
        for cpu in 0..nr_cpus {
            let h = cpu * nr_hw / nr_cpus;
            if hctx_nr_ctx[h] == 0 {
                hctx_first_cpu[h] = cpu as u16;
            }
            cpu_hctx.push(h as u16);
            cpu_ctx.push(hctx_nr_ctx[h]);
            hctx_nr_ctx[h] += 1;
        }
        QueueInfo {
            nr_hw_queues: nr_hw as u32,
            queue_depth,
            nr_requests,
            rotational: false,
            nomerges: 0,
            max_sectors: 2560,
            cpu_hctx,
            cpu_ctx,
            hctx_nr_ctx,
            hctx_first_cpu,
            kernel: crate::kernel::NEWEST,
            tag_bits_per_word: 1 << crate::block::sbitmap::word_shift(nr_requests),
            shallow_per_word: false,
        }
    }

    /// The unit of a shallow depth in this kernel: the bits of one tag
    /// word before v6.17, the whole `nr_requests` from v6.17. Schedulers
    /// scale their depth limits from it as the kernel's did.
    pub fn shallow_base(&self) -> u32 {
        if self.shallow_per_word {
            self.tag_bits_per_word
        } else {
            self.nr_requests
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.cpu_hctx.len()
    }
}

/// A bio as allocation and merge look-ups see it.
#[derive(Clone, Copy, Debug)]
pub struct BioInfo {
    pub op: Op,
    pub sector: u64,
    pub nr_sectors: u32,
    pub flags: u32,
    pub ioprio: IoPrio,
    pub cgroup: u16,
    /// Submitting task.
    pub pid: u32,
    /// Submitting CPU (its software queue).
    pub cpu: u16,
    pub hctx: u16,
}

impl BioInfo {
    pub fn end_sector(&self) -> u64 {
        self.sector + self.nr_sectors as u64
    }
    /// `op_is_sync`: reads, and writes flagged SYNC, FUA or PREFLUSH.
    pub fn is_sync(&self) -> bool {
        super::request::op_is_sync(self.op, self.flags)
    }
}

/// Kind of merge, as the kernel's `enum elv_merge`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeKind {
    /// The bio/request was appended to the end of the request.
    Back,
    /// The bio/request was prepended (request start moves down).
    Front,
}

/// The legacy `may_queue` answer (`ELV_MQUEUE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MayQueue {
    /// Allocate if the pool allows (`ELV_MQUEUE_MAY`).
    May,
    /// Do not allocate; the task waits (`ELV_MQUEUE_NO`).
    No,
    /// Allocate even past the pool's limit (`ELV_MQUEUE_MUST`).
    Must,
}

/// Hardware queues a scheduler asked to have run after a hook.
#[derive(Debug, Default)]
pub struct RunRequests {
    /// `blk_mq_run_hw_queues`: every hardware queue.
    pub all: bool,
    /// `blk_mq_run_hw_queue(hctx)`: these (possibly repeated).
    pub hctxs: Vec<u16>,
}

/// The block layer's side of a scheduler hook, one object the context
/// points at: what the scheduler asked for during the hook (timers, queue
/// runs) and the legacy core's dispatch list. Kept behind one pointer, with
/// one flag to check after the hook, because every request passes through
/// several hooks.
#[derive(Debug, Default)]
pub struct CoreSide {
    /// Timers armed during the hook: (fire time, token).
    pub timers: Vec<(Ns, u64)>,
    pub runs: RunRequests,
    /// Locks taken during the hook besides the hook's own (kyber's dispatch
    /// splicing software queues under their locks); the core charges a
    /// hand-off for each that another CPU held last.
    pub lock_hops: Vec<HookLock>,
    /// Scheduler CPU time beyond the per-call hook cost, ns at the
    /// reference core (work that grows with the scheduler's state).
    pub cpu_ns: Ns,
    /// Something was asked for (a timer, a queue run, a lock hop or CPU time).
    pub asked: bool,
    /// The legacy core's dispatch list (`q->queue_head`).
    pub dispatch: DispatchList,
}

impl CoreSide {
    /// Forget what the last hook asked for (after the core handled it).
    pub fn clear_requests(&mut self) {
        self.timers.clear();
        self.runs.all = false;
        self.runs.hctxs.clear();
        self.lock_hops.clear();
        self.cpu_ns = 0;
        self.asked = false;
    }
}

/// What a scheduler hook may see and ask for.
pub struct SchedCtx<'a> {
    pub now: Ns,
    pub rqs: &'a mut RequestArena,
    pub q: &'a QueueInfo,
    pub cgroups: &'a CgroupTree,
    core: &'a mut CoreSide,
}

impl<'a> SchedCtx<'a> {
    pub fn new(
        now: Ns,
        rqs: &'a mut RequestArena,
        q: &'a QueueInfo,
        cgroups: &'a CgroupTree,
        core: &'a mut CoreSide,
    ) -> SchedCtx<'a> {
        SchedCtx {
            now,
            rqs,
            q,
            cgroups,
            core,
        }
    }

    /// The kernel's `jiffies` at `now`.
    pub fn jiffies(&self) -> u64 {
        time::jiffies(self.now)
    }

    /// Arm a timer: `Elevator::timer(token)` runs at `at`. A timer armed by
    /// a scheduler that has since been switched away is dropped by the core;
    /// stale tokens of the same scheduler are the scheduler's to ignore.
    pub fn arm_timer(&mut self, at: Ns, token: u64) {
        self.core.timers.push((at.max(self.now), token));
        self.core.asked = true;
    }

    /// Ask for every hardware queue to be run after this hook
    /// (`blk_mq_run_hw_queues(q, true)`: asynchronously, from kblockd).
    pub fn kick(&mut self) {
        self.core.runs.all = true;
        self.core.asked = true;
    }

    /// Ask for one hardware queue to be run after this hook
    /// (`blk_mq_run_hw_queue(hctx, true)`).
    pub fn kick_hctx(&mut self, hctx: u16) {
        self.core.runs.hctxs.push(hctx);
        self.core.asked = true;
    }

    /// The hook takes `lock` briefly besides its own (for the CPU cost
    /// model: a hand-off when another CPU held it last).
    pub fn lock_hop(&mut self, lock: HookLock) {
        self.core.lock_hops.push(lock);
        self.core.asked = true;
    }

    /// Charge `ns` (at the reference core) of scheduler work to this hook,
    /// on top of the hook's fixed cost, under the scheduler's lock if it
    /// has one: work that grows with the scheduler's state (tree walks).
    pub fn charge_cpu(&mut self, ns: Ns) {
        self.core.cpu_ns += ns;
        self.core.asked = true;
    }

    /// Legacy `elv_dispatch_add_tail`: append `rq` to the core's dispatch list.
    pub fn dispatch_add_tail(&mut self, rq: RqId) {
        self.core.dispatch.add_tail(self.rqs, rq);
    }

    /// Legacy `elv_dispatch_sort`: insert `rq` into the core's dispatch list
    /// in sector order relative to the head position.
    pub fn dispatch_sort(&mut self, rq: RqId) {
        self.core.dispatch.sort_in(self.rqs, rq);
    }
}

/// The blk-mq hooks the CPU cost model charges (`SchedCost`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    Insert,
    Dispatch,
    Complete,
    Merge,
}

/// A tunable as `iosched/NAME` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Tunable {
    pub name: &'static str,
    /// Current value as sysfs prints it.
    pub value: String,
    /// Default as the attribute declares it (a number, or what it follows).
    pub default: String,
    pub unit: &'static str,
    pub help: &'static str,
}

/// The scheduler interface. See the module documentation for which hooks
/// belong to which kernel generation.
///
/// The core owns the merge hash and the `last_merge` hint for schedulers
/// with `Features::core_merging`; it adds a request to them after `insert`
/// and removes it when the request leaves the scheduler.
pub trait Elevator {
    /// Name as written to `queue/scheduler`.
    fn name(&self) -> &'static str;

    // ----- lifecycle (both) --------------------------------------------------

    /// Called once when attached, after `nr_requests` is set (`init_sched`
    /// followed by `init_hctx` for every hardware queue).
    fn init(&mut self, _q: &QueueInfo) {}
    /// `nr_requests` changed (`depth_updated`).
    fn depth_updated(&mut self, _q: &QueueInfo) {}
    /// The smallest shallow depth `limit_depth` may return, as its
    /// `depth_updated` tells the tag bitmap
    /// (`sbitmap_queue_min_shallow_depth`): it sets how many sleepers a
    /// batch of freed tags wakes. Asked after `depth_updated`.
    fn min_shallow_depth(&self) -> u32 {
        u32::MAX
    }

    // ----- sysfs (both) ------------------------------------------------------

    /// Tunables in `iosched/`, in the kernel's order (`show_attrs` of the
    /// scheduler's attribute table).
    fn tunables(&self) -> Vec<Tunable>;
    /// Write a tunable as `echo VALUE > iosched/NAME` would (`store_attr`).
    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String>;

    // ----- request allocation ------------------------------------------------

    /// blk-mq `limit_depth`: a shallow scheduler-tag depth for this
    /// allocation, or None. Sees the submitting task, its cgroup and
    /// priority, the operation and the software/hardware queue.
    fn limit_depth(&mut self, _ctx: &mut SchedCtx, _bio: &BioInfo) -> Option<u32> {
        None
    }
    /// Legacy `may_queue`: whether the task may allocate from its pool.
    fn may_queue(&mut self, _ctx: &mut SchedCtx, _bio: &BioInfo) -> MayQueue {
        MayQueue::May
    }
    /// A request that will use the scheduler was just allocated
    /// (`prepare_request`; legacy `set_req_fn`).
    fn prepare_request(&mut self, _ctx: &mut SchedCtx, _rq: RqId) {}
    /// The request is being freed (`finish_request`; legacy `put_req_fn`);
    /// also for requests merged away, and only for requests that went
    /// through `prepare_request`.
    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId);

    // ----- insertion and dispatch --------------------------------------------

    /// Queue one request (blk-mq `insert_requests` with a list of one;
    /// legacy `add_req_fn`). `at_head` for blk-mq requeues and flush-sequence
    /// data; the legacy core never passes it (it puts such requests straight
    /// on its dispatch list).
    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool);
    /// blk-mq `dispatch_request`: the next request for hardware queue `hctx`.
    fn dispatch(&mut self, _ctx: &mut SchedCtx, _hctx: u16) -> Option<RqId> {
        None
    }
    /// blk-mq `has_work`: cheap check whether `dispatch` may return something.
    fn has_work(&self, hctx: u16) -> bool;
    /// Legacy `dispatch_fn(q, force)`: move requests to the core's dispatch
    /// list with `ctx.dispatch_add_tail` / `ctx.dispatch_sort`; returns how
    /// many moved (exactly). The core calls it whenever its list is empty
    /// during a queue run and the scheduler holds requests; with `force` (a
    /// switch drains the queue, a passthrough command is inserted) it calls
    /// it, also when empty, until it returns 0, and the scheduler must then
    /// hold nothing.
    fn dispatch_legacy(&mut self, _ctx: &mut SchedCtx, _force: bool) -> u32 {
        0
    }
    /// Legacy `activate_req_fn`: the driver saw the request for the first
    /// time (peeked from the dispatch list), possibly while the device is
    /// full (it then waits at the head, activated). Only requests that went
    /// through `insert`.
    fn activate_request(&mut self, _ctx: &mut SchedCtx, _rq: RqId) {}
    /// Legacy `deactivate_req_fn`: the driver gave an activated request back
    /// (requeue); it is activated again when next peeked.
    fn deactivate_request(&mut self, _ctx: &mut SchedCtx, _rq: RqId) {}

    // ----- completion --------------------------------------------------------

    /// Device completed `rq` (`completed_request`), before `finish_request`.
    fn completed_request(&mut self, _ctx: &mut SchedCtx, _rq: RqId) {}
    /// blk-mq: the driver gave `rq` back (`requeue_request`); it will be
    /// re-inserted at head.
    fn requeue_request(&mut self, _ctx: &mut SchedCtx, _rq: RqId) {}

    // ----- merging (both) ----------------------------------------------------

    /// Veto a bio merge into a scheduler request (`allow_merge`; legacy
    /// `allow_bio_merge_fn`). May change state (BFQ sets up queue merges here).
    fn allow_merge(&mut self, _ctx: &mut SchedCtx, _rq: RqId, _bio: &BioInfo) -> bool {
        true
    }
    /// Legacy `allow_rq_merge_fn`: veto merging request `next` into `rq`
    /// when the core tries an insert merge (`blk_attempt_req_merge`; CFQ
    /// refuses requests of different queues).
    fn allow_rq_merge(&mut self, _ctx: &mut SchedCtx, _rq: RqId, _next: RqId) -> bool {
        true
    }
    /// Scheduler-specific merge candidate after the hint and hash fail
    /// (`request_merge`; legacy `merge_fn`).
    fn request_merge(&self, _ctx: &SchedCtx, _bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        None
    }
    /// For schedulers without core merging (kyber): their own bio-merge
    /// candidate (`bio_merge`).
    fn own_merge_candidate(&self, _ctx: &SchedCtx, _bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        None
    }
    /// A bio was merged into `rq` (`request_merged`): re-key on front merges.
    fn request_merged(&mut self, _ctx: &mut SchedCtx, _rq: RqId, _kind: MergeKind) {}
    /// Request `next` was merged into `rq` and will be freed
    /// (`requests_merged`). `next` may never have been inserted (insert merge).
    fn requests_merged(&mut self, _ctx: &mut SchedCtx, _rq: RqId, _next: RqId) {}
    /// Neighbour after `rq` in sort order (`next_request`; legacy `latter_req_fn`).
    fn next_request(&self, _ctx: &SchedCtx, _rq: RqId) -> Option<RqId> {
        None
    }
    /// Neighbour before `rq` in sort order (`former_request`).
    fn former_request(&self, _ctx: &SchedCtx, _rq: RqId) -> Option<RqId> {
        None
    }

    // ----- timers ------------------------------------------------------------

    /// A timer armed with `SchedCtx::arm_timer` fired.
    fn timer(&mut self, _ctx: &mut SchedCtx, _token: u64) {}

    // ----- CPU cost model ----------------------------------------------------

    /// For schedulers without one queue-wide lock (`SchedCost::locked`
    /// false): the lock `hook` runs under when CPU `cpu` runs it for
    /// hardware queue `hctx` (the request's software queue is `cpu`'s for
    /// inserts), or None when it takes no lock (per-CPU data, atomics).
    fn hook_lock(&self, _hook: Hook, _cpu: u16, _hctx: u16) -> Option<HookLock> {
        None
    }
}

/// How the core drives a scheduler, and what it is made of.
#[derive(Clone, Copy)]
pub enum Imp {
    /// "none": no elevator at all.
    NoElevator,
    /// A blk-mq scheduler (`elevator_mq_ops`).
    Mq(fn() -> Box<dyn Elevator>),
    /// A legacy single-queue scheduler (`elevator_ops`, ≤ 4.20): one
    /// hardware queue, the core's dispatch list, per-cgroup request pools.
    Legacy(fn() -> Box<dyn Elevator>),
    /// Known (the lab can run it, compare lists it) but not simulated yet.
    NotBuilt,
}

/// Static facts about a scheduler that the core reads once at attach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// One queue-wide instance shared by all hardware queues
    /// (`QUEUE_FLAG_SQ_SCHED`).
    pub single_queue: bool,
    /// The core elevator merge path (`elv_merge`: hint, hash back merge,
    /// `request_merge`) applies.
    pub core_merging: bool,
    /// Inserted requests are first offered to `blk_mq_sched_try_insert_merge`.
    pub insert_merging: bool,
    /// The scheduler has a `completed_request` hook (the core skips the call
    /// when the kernel's op is NULL).
    pub completed_hook: bool,
    /// Its completion hooks (`completed_request`, `finish_request`) take
    /// no queue-wide lock, though the others do.
    pub lockless_finish: bool,
}

/// One scheduler, as the kernel's `struct elevator_type` describes one.
#[derive(Clone, Copy)]
pub struct ElevatorType {
    /// Name written to `queue/scheduler`.
    pub name: &'static str,
    /// Another name that selects it (`elevator_alias`).
    pub alias: Option<&'static str>,
    pub summary: &'static str,
    /// Present in current mainline kernels.
    pub mainline: bool,
    /// The lab can run it (a real kernel that offers it).
    pub lab: bool,
    pub imp: Imp,
    pub features: Features,
    /// CPU cost of its hooks (the built-in model; a profile may override)
    /// in kernels before the first of `cost_since`.
    pub cost: SchedCost,
    /// (first kernel, cost): the hooks' cost from that kernel on, where the
    /// scheduler's per-request work changed, in version order.
    pub cost_since: &'static [(Version, SchedCost)],
}

impl ElevatorType {
    /// Whether the simulator can run it.
    pub fn simulated(&self) -> bool {
        !matches!(self.imp, Imp::NotBuilt)
    }
    pub fn is_legacy(&self) -> bool {
        matches!(self.imp, Imp::Legacy(_))
    }
    /// The built-in cost of its hooks in `kernel`.
    pub fn cost_at(&self, kernel: Version) -> SchedCost {
        self.cost_since
            .iter()
            .rev()
            .find(|(since, _)| kernel >= *since)
            .map_or(self.cost, |(_, c)| *c)
    }
    /// A fresh instance; None for "none" and for schedulers not built yet.
    pub fn instantiate(&self) -> Option<Box<dyn Elevator>> {
        match self.imp {
            Imp::Mq(new) | Imp::Legacy(new) => Some(new()),
            Imp::NoElevator | Imp::NotBuilt => None,
        }
    }
    /// The scheduler's tunables with their defaults (a fresh instance's).
    pub fn tunables(&self) -> Vec<Tunable> {
        self.instantiate().map(|e| e.tunables()).unwrap_or_default()
    }
}

/// "none": blk-mq without an elevator. The block layer's own configuration
/// (a failed switch falls back to it), listed first in the registry.
pub const NO_ELEVATOR: ElevatorType = ElevatorType {
    name: "none",
    alias: None,
    summary: "blk-mq without an elevator: per-CPU software queues, FIFO, merging in the plug and software queue",
    mainline: true,
    lab: true,
    imp: Imp::NoElevator,
    features: Features {
        single_queue: false,
        core_merging: false,
        insert_merging: false,
        completed_hook: false,
        lockless_finish: false,
    },
    cost: SchedCost {
        insert_ns: 0,
        dispatch_ns: 0,
        complete_ns: 0,
        merge_ns: 0,
        locked: false,
    },
    cost_since: &[],
};

impl std::fmt::Debug for ElevatorType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElevatorType")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

// ---------------------------------------------------------------------------
// iosched/ attributes as data
// ---------------------------------------------------------------------------

/// How a store reads the text (each kernel era used its own helper).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrParse {
    /// `kstrtoint(page, 0)`: sign, 0x/0 prefixes, one newline; -EINVAL/-ERANGE.
    Kstrtoint,
    /// `kstrtoull(page, 0)`: unsigned 64-bit.
    Kstrtoull,
    /// `kstrtoull(page, 10)`: unsigned 64-bit, decimal only (kyber).
    Kstrtoull10,
    /// Legacy (≤ 4.x) `simple_strtol(page, &p, 10)` into an int: stops at the
    /// first non-digit.
    SimpleStrtolInt,
}

/// What happens to a parsed value outside the attribute's range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrRange {
    /// The STORE macros' clamp (`if (v < MIN) v = MIN; ...`).
    Clamp(i128, i128),
    /// Refused with -EINVAL.
    Reject(i128, i128),
}

/// Conversion between the value written/shown and the value stored (the
/// `__CONV` argument of the kernel's SHOW/STORE macros).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrConv {
    /// Stored as written.
    Plain,
    /// Written and shown in ms, stored in jiffies (`msecs_to_jiffies`, shown
    /// with `jiffies_to_msecs` printed as "%d").
    MsecsAsJiffies,
    /// Written and shown in ms, stored in ns.
    MsecsAsNs,
    /// Written and shown in us, stored in ns.
    UsecsAsNs,
}

/// An attribute's default, as `elevator schedulers` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrDefault {
    /// A number in the shown unit.
    Value(i128),
    /// Follows the queue's `nr_requests` at attach and on depth updates.
    NrRequests,
    /// Something else the scheduler derives (described).
    Derived(&'static str),
}

/// One `iosched/` file of scheduler `S` (the kernel's `elv_fs_entry` with its
/// show and store functions).
pub struct Attr<S> {
    pub name: &'static str,
    pub unit: &'static str,
    pub help: &'static str,
    pub default: AttrDefault,
    pub parse: AttrParse,
    /// Applied to the written value (before conversion), as the store does.
    pub range: AttrRange,
    pub conv: AttrConv,
    /// The stored value.
    pub get: fn(&S) -> i128,
    /// Store a converted, range-checked value (side effects as the kernel's
    /// store function has them); an Err is the store's -EINVAL.
    pub set: fn(&mut S, i128) -> Result<(), String>,
}

fn shown(conv: AttrConv, stored: i128) -> i128 {
    match conv {
        AttrConv::Plain => stored,
        AttrConv::MsecsAsJiffies => sysfs::jiffies_to_msecs_shown(stored as i64) as i128,
        AttrConv::MsecsAsNs => stored / 1_000_000,
        AttrConv::UsecsAsNs => stored / 1_000,
    }
}

fn stored(conv: AttrConv, written: i128) -> i128 {
    match conv {
        AttrConv::Plain => written,
        AttrConv::MsecsAsJiffies => {
            sysfs::msecs_to_jiffies(written.clamp(0, i64::MAX as i128) as i64) as i128
        }
        AttrConv::MsecsAsNs => written.saturating_mul(1_000_000),
        AttrConv::UsecsAsNs => written.saturating_mul(1_000),
    }
}

/// Every attribute of `s` as sysfs shows it, in table order.
pub fn show_attrs<S>(s: &S, attrs: &[Attr<S>]) -> Vec<Tunable> {
    attrs
        .iter()
        .map(|a| Tunable {
            name: a.name,
            value: shown(a.conv, (a.get)(s)).to_string(),
            default: match a.default {
                AttrDefault::Value(v) => v.to_string(),
                AttrDefault::NrRequests => "nr_requests".to_string(),
                AttrDefault::Derived(what) => what.to_string(),
            },
            unit: a.unit,
            help: a.help,
        })
        .collect()
}

/// `echo VALUE > iosched/NAME` for scheduler `s` named `sched`.
pub fn store_attr<S>(
    s: &mut S,
    sched: &str,
    attrs: &[Attr<S>],
    name: &str,
    value: &str,
) -> Result<(), String> {
    let Some(a) = attrs.iter().find(|a| a.name == name) else {
        let valid: Vec<&str> = attrs.iter().map(|a| a.name).collect();
        return Err(if valid.is_empty() {
            format!("{sched} has no tunable '{name}' (it has none)")
        } else {
            format!(
                "{sched} has no tunable '{name}' (valid: {})",
                valid.join(", ")
            )
        });
    };
    let v: i128 = match a.parse {
        AttrParse::Kstrtoint => sysfs::kstrtoint(value)? as i128,
        AttrParse::Kstrtoull => sysfs::kstrtoull(value)? as i128,
        AttrParse::Kstrtoull10 => sysfs::kstrtoull_base10(value)? as i128,
        AttrParse::SimpleStrtolInt => sysfs::simple_strtol_int(value)? as i128,
    };
    let v = match a.range {
        AttrRange::Clamp(lo, hi) => v.clamp(lo, hi),
        AttrRange::Reject(lo, hi) if v < lo || v > hi => {
            return Err(format!(
                "invalid value '{}': expected {lo}..{hi}",
                value.trim_end()
            ))
        }
        AttrRange::Reject(..) => v,
    };
    (a.set)(s, stored(a.conv, v))
}

/// Checks an attribute table for the mistakes a table can hold: duplicate
/// names, defaults outside the range, a default that does not round-trip.
#[cfg(test)]
pub fn check_attr_table<S>(fresh: &mut S, attrs: &[Attr<S>]) {
    for (i, a) in attrs.iter().enumerate() {
        assert!(
            attrs[..i].iter().all(|b| b.name != a.name),
            "duplicate attribute {}",
            a.name
        );
        assert!(
            !a.help.is_empty() && !a.unit.is_empty(),
            "{}: help and unit",
            a.name
        );
        if let AttrDefault::Value(d) = a.default {
            let (lo, hi) = match a.range {
                AttrRange::Clamp(lo, hi) | AttrRange::Reject(lo, hi) => (lo, hi),
            };
            assert!(
                (lo..=hi).contains(&d),
                "{}: default {d} outside {lo}..{hi}",
                a.name
            );
            assert_eq!(
                shown(a.conv, (a.get)(fresh)),
                d,
                "{}: a fresh instance does not hold the declared default",
                a.name
            );
            (a.set)(fresh, stored(a.conv, d)).expect("default stores");
            assert_eq!(
                shown(a.conv, (a.get)(fresh)),
                d,
                "{}: default round trip",
                a.name
            );
        }
    }
}
