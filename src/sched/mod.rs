//! I/O schedulers ("elevators"). The `Elevator` trait mirrors the kernel's
//! `elevator_mq_ops` hooks; each scheduler lives in its own file.
//! "none" is the absence of an elevator and is handled by the block layer.

pub mod deadline;
pub mod mq_deadline;
pub mod noop;
pub mod sort_tree;
#[cfg(test)]
pub mod testing;

use crate::block::request::{Op, RequestArena, RqId};
use crate::cgroup::{CgroupTree, IoPrio};
use crate::sim::time::{self, Ns};

/// Queue facts a scheduler may read (sysfs `queue/` values in effect).
#[derive(Clone, Debug)]
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
}

/// A bio as merge look-ups see it.
#[derive(Clone, Copy, Debug)]
pub struct BioInfo {
    pub op: Op,
    pub sector: u64,
    pub nr_sectors: u32,
    pub flags: u32,
    pub ioprio: IoPrio,
    pub cgroup: u16,
    pub pid: u32,
    pub cpu: u16,
    pub hctx: u16,
}

impl BioInfo {
    pub fn end_sector(&self) -> u64 {
        self.sector + self.nr_sectors as u64
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

/// A tunable as `iosched/NAME` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Tunable {
    pub name: &'static str,
    /// Current value as sysfs prints it.
    pub value: String,
    pub default: String,
    pub unit: &'static str,
    pub help: &'static str,
}

/// What a scheduler hook may see and ask for.
pub struct SchedCtx<'a> {
    pub now: Ns,
    pub rqs: &'a mut RequestArena,
    pub q: &'a QueueInfo,
    pub cgroups: &'a CgroupTree,
    /// Timers the scheduler armed during this call: (fire time, token).
    pub timers: &'a mut Vec<(Ns, u64)>,
    /// Set when the scheduler wants the hardware queues run (e.g. idle timer fired).
    pub run_queue: bool,
}

impl SchedCtx<'_> {
    /// The kernel's `jiffies` at `now`.
    pub fn jiffies(&self) -> u64 {
        time::jiffies(self.now)
    }
    /// Arm a timer: `Elevator::timer(token)` runs at `at` (stale tokens are the
    /// scheduler's to ignore).
    pub fn arm_timer(&mut self, at: Ns, token: u64) {
        self.timers.push((at.max(self.now), token));
    }
    /// Ask the block layer to run the hardware queues after this hook.
    pub fn kick(&mut self) {
        self.run_queue = true;
    }
}

/// The scheduler interface (kernel: `struct elevator_mq_ops`).
///
/// The core owns the merge hash and the `last_merge` hint for schedulers with
/// `core_merging()`; it adds a request to them after `insert` and removes it
/// when the request leaves the scheduler through `dispatch` or a merge.
pub trait Elevator {
    /// Name as written to `queue/scheduler`.
    fn name(&self) -> &'static str;
    /// Called once when attached (after `nr_requests` is set).
    fn init(&mut self, _q: &QueueInfo) {}
    /// Legacy single-queue scheduler (≤ 4.20: noop, deadline, cfq). The core then
    /// uses the legacy request pool (`nr_requests` per sync/async class) and a
    /// single hardware queue.
    fn legacy(&self) -> bool {
        false
    }
    /// One queue-wide instance shared by all hardware queues (`QUEUE_FLAG_SQ_SCHED`).
    fn single_queue(&self) -> bool {
        true
    }
    /// Whether the core elevator merge path (`elv_merge`: hint, hash back merge,
    /// `request_merge`) applies to this scheduler.
    fn core_merging(&self) -> bool {
        true
    }
    /// Whether inserted requests are first offered to `blk_mq_sched_try_insert_merge`.
    fn insert_merging(&self) -> bool {
        false
    }
    /// Tunables in `iosched/`, in the kernel's order.
    fn tunables(&self) -> Vec<Tunable>;
    /// Write a tunable as `echo VALUE > iosched/NAME` would.
    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String>;
    /// `nr_requests` changed (kernel: `depth_updated`).
    fn depth_updated(&mut self, _q: &QueueInfo) {}
    /// Shallow scheduler-tag depth for an allocation of this kind (`limit_depth`), or None.
    fn limit_depth(&self, _op: Op, _sync: bool) -> Option<u32> {
        None
    }
    /// A request that will use the scheduler was just allocated (`prepare_request`).
    fn prepare_request(&mut self, _ctx: &mut SchedCtx, _rq: RqId) {}
    /// Queue one request (`insert_requests` with a list of one); `at_head` for
    /// requeues and flush-sequence data.
    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool);
    /// Next request to send to the driver for hardware queue `hctx`, or None.
    fn dispatch(&mut self, ctx: &mut SchedCtx, hctx: u16) -> Option<RqId>;
    /// Cheap check whether `dispatch` may return something.
    fn has_work(&self, hctx: u16) -> bool;
    /// Device completed `rq` (`completed_request`), before `finish_request`.
    fn completed_request(&mut self, _ctx: &mut SchedCtx, _rq: RqId) {}
    /// Whether `completed_request` does anything: the kernel skips a NULL
    /// `ops.completed_request`; schedulers without the hook say false here
    /// and the core saves the call on every completion.
    fn has_completed_request(&self) -> bool {
        true
    }
    /// The request is being freed (`finish_request`); also for requests merged
    /// away, and only for requests that went through `prepare_request`.
    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId);
    /// The driver gave `rq` back (`requeue_request`); it will be re-inserted at head.
    fn requeue_request(&mut self, _ctx: &mut SchedCtx, _rq: RqId) {}
    /// Veto a bio merge into a scheduler request (`allow_merge`).
    fn allow_merge(&self, _ctx: &SchedCtx, _rq: RqId, _bio: &BioInfo) -> bool {
        true
    }
    /// Scheduler-specific merge candidate after the hint and hash fail
    /// (`request_merge`; mq-deadline: front merge via the sort tree).
    fn request_merge(&self, _ctx: &SchedCtx, _bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        None
    }
    /// For schedulers without core merging (kyber): their own bio-merge candidate.
    fn own_merge_candidate(&self, _ctx: &SchedCtx, _bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        None
    }
    /// A bio was merged into `rq` (`request_merged`): re-key on front merges.
    fn request_merged(&mut self, _ctx: &mut SchedCtx, _rq: RqId, _kind: MergeKind) {}
    /// Request `next` was merged into `rq` and will be freed (`requests_merged`).
    /// `next` may never have been inserted (insert merge): check `IN_ELV`.
    fn requests_merged(&mut self, _ctx: &mut SchedCtx, _rq: RqId, _next: RqId) {}
    /// Neighbour after `rq` in sort order (`next_request`).
    fn next_request(&self, _ctx: &SchedCtx, _rq: RqId) -> Option<RqId> {
        None
    }
    /// Neighbour before `rq` in sort order (`former_request`).
    fn former_request(&self, _ctx: &SchedCtx, _rq: RqId) -> Option<RqId> {
        None
    }
    /// A timer armed with `arm_timer` fired.
    fn timer(&mut self, _ctx: &mut SchedCtx, _token: u64) {}
}

/// A scheduler the CLI knows.
#[derive(Clone, Copy, Debug)]
pub struct SchedInfo {
    pub name: &'static str,
    pub summary: &'static str,
    /// Present in current mainline kernels (so the lab can run it).
    pub in_mainline: bool,
}

/// Every scheduler elevator models, in the order `elevator schedulers` lists them.
pub const SCHEDULERS: &[SchedInfo] = &[
    SchedInfo {
        name: "none",
        summary: "blk-mq without an elevator: per-CPU software queues, FIFO, merging in the plug and software queue",
        in_mainline: true,
    },
    SchedInfo {
        name: "noop",
        summary: "legacy single-queue FIFO with core merging (removed in 5.0)",
        in_mainline: false,
    },
    SchedInfo {
        name: "deadline",
        summary: "legacy single-queue deadline: sector-sorted batches, per-direction FIFO deadlines (removed in 5.0)",
        in_mainline: false,
    },
    SchedInfo {
        name: "mq-deadline",
        summary: "blk-mq deadline with RT/BE/IDLE priority levels, aging and async_depth",
        in_mainline: true,
    },
];

/// Create a scheduler by name. `Ok(None)` is "none" (no elevator).
pub fn create(name: &str) -> Result<Option<Box<dyn Elevator>>, String> {
    match name.trim() {
        "none" => Ok(None),
        "noop" => Ok(Some(Box::new(noop::Noop::new()))),
        "deadline" => Ok(Some(Box::new(deadline::Deadline::new()))),
        "mq-deadline" => Ok(Some(Box::new(mq_deadline::MqDeadline::new()))),
        other => Err(format!(
            "unknown scheduler '{other}' (known: {})",
            SCHEDULERS
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
