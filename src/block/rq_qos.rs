//! rq-qos: the chain of request-based QoS policies (block/blk-rq-qos.{c,h},
//! v6.17): writeback throttling (WBT), io.latency and io.cost are such
//! policies. Each implements some of the kernel's `rq_qos_ops` hooks; the
//! block layer calls the chain at the kernel's points:
//!
//! | hook | kernel caller | here |
//! | --- | --- | --- |
//! | `throttle` | `blk_mq_get_new_requests`, after the plug/elevator merge attempts, before tag allocation; may sleep | `BlockLayer::submit_bio` |
//! | `track` | `blk_mq_submit_bio` right after allocation | same |
//! | `merge` | `bio_attempt_{back,front,discard}_merge` once the limits allow the merge | `merge_bio_into` |
//! | `issue` | `blk_mq_start_request` (the driver's `queue_rq`) | `issue` when the device takes it |
//! | `requeue` | `__blk_mq_requeue_request`: a driver requeue, or a request bounced with BLK_STS_RESOURCE | `issue` (device busy), `requeue_request` |
//! | `done` | `blk_mq_free_request`, and `__blk_mq_end_request` before a request's `end_io` (flush sequences) | `free_request`, flush.rs |
//! | `done_bio` | `bio_endio` of a bio flagged BIO_QOS_THROTTLED or BIO_QOS_MERGED | `end_bios` |
//! | `cleanup` | allocation failed after `throttle` passed | a bio that passed `throttle` merged on its retry |
//! | `queue_depth_changed` | `nr_requests`/queue depth changed | elevator attach (`nr_requests` reset) |
//!
//! Order: `rq_qos_add` pushes a policy at the head of `q->rq_qos`, so the
//! last one added runs first (WBT is added at disk registration, io.latency
//! and io.cost later, when first configured). A queue with no policy pays one
//! branch per hook (the kernel tests QUEUE_FLAG_QOS_ENABLED).
//!
//! Sleeping: a policy whose `throttle` says [`Throttle::Wait`] keeps the
//! task id (`QosBio::pid`) in its own wait list and later wakes it with
//! [`QosCtx::wake`] (typically from `done`). The task then calls `submit_bio`
//! with the same bio; the chain resumes at the policy that made it wait,
//! without a new merge attempt (the kernel's task sleeps inside
//! `rq_qos_throttle`). That policy's `throttle` runs again and may answer Go
//! at once if the waker handed it a slot (`rq_qos_wait`'s `acquire_inflight_cb`
//! runs in the waker). Policies earlier in the chain are not asked twice.
//!
//! What later policies get: the bio's op, `REQ_*` flags (sync/background
//! classification, [`op_is_sync`](super::request::op_is_sync)), size,
//! cgroup, I/O priority and issue time; the request with its start,
//! dispatch (`io_start_time_ns`) times and private `qos` bits; the queue's
//! depths, rotational and write-cache state; the cgroup table; timers
//! ([`QosCtx::arm_timer`], delivered to `timer`); and the time of every hook.

use super::elevator::QueueInfo;
use super::request::{Op, Request};
use crate::cgroup::CgroupTree;
use crate::cgroup::IoPrio;
use crate::sim::time::{self, Ns};

/// Every op, in [`op_index`] order.
const OPS: [Op; 4] = [Op::Read, Op::Write, Op::Flush, Op::Discard];
fn op_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Flush => 2,
        Op::Discard => 3,
    }
}

/// `enum rq_qos_id` (block/blk-rq-qos.h): one policy of each kind per queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RqQosId {
    Wbt,
    Latency,
    Cost,
    /// Not a kernel policy (tests, experiments); the name tells them apart.
    Other(&'static str),
}

impl RqQosId {
    /// The debugfs name (`rq_qos_id_to_name`).
    pub fn name(self) -> &'static str {
        match self {
            RqQosId::Wbt => "wbt",
            RqQosId::Latency => "latency",
            RqQosId::Cost => "cost",
            RqQosId::Other(n) => n,
        }
    }
}

/// A bio as the policies see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QosBio {
    pub op: Op,
    /// `REQ_*` flags (request.rs `flags`).
    pub flags: u32,
    pub sector: u64,
    pub nr_sectors: u32,
    pub cgroup: u16,
    pub ioprio: IoPrio,
    /// Submitting task: the id to wake after a `Wait`.
    pub pid: u32,
    /// When the bio was submitted (`bio_issue_time`).
    pub issue_ns: Ns,
}

/// Answer of `throttle`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Throttle {
    /// Go on (to the next policy, then to allocation).
    Go,
    /// The task sleeps; the policy has recorded `bio.pid` and will wake it.
    Wait,
}

/// What a hook may see and ask for.
pub struct QosCtx<'a> {
    pub now: Ns,
    pub q: &'a QueueInfo,
    /// `write_cache` is "write back" (WBT's wake-up threshold depends on it).
    pub write_cache: bool,
    pub cgroups: &'a CgroupTree,
    woken: &'a mut Vec<u32>,
    timers: &'a mut Vec<(Ns, u64)>,
    /// Serial of the policy being called (routes its timers back to it).
    serial: u64,
}

/// Timer tokens carry the policy's serial in their top byte.
const SERIAL_SHIFT: u32 = 56;
/// The largest token a policy may use.
pub const MAX_TIMER_TOKEN: u64 = (1 << SERIAL_SHIFT) - 1;

impl<'a> QosCtx<'a> {
    pub fn new(
        now: Ns,
        q: &'a QueueInfo,
        write_cache: bool,
        cgroups: &'a CgroupTree,
        woken: &'a mut Vec<u32>,
        timers: &'a mut Vec<(Ns, u64)>,
    ) -> QosCtx<'a> {
        QosCtx {
            now,
            q,
            write_cache,
            cgroups,
            woken,
            timers,
            serial: 0,
        }
    }
    /// Wake task `pid` sleeping in this policy's `throttle`: it submits its
    /// bio again.
    pub fn wake(&mut self, pid: u32) {
        self.woken.push(pid);
    }
    /// `timer(token)` of this policy runs at `at` (stale tokens are the
    /// policy's to ignore). `token` ≤ [`MAX_TIMER_TOKEN`].
    pub fn arm_timer(&mut self, at: Ns, token: u64) {
        debug_assert!(token <= MAX_TIMER_TOKEN, "rq-qos timer token too large");
        self.timers.push((
            at.max(self.now),
            self.serial << SERIAL_SHIFT | (token & MAX_TIMER_TOKEN),
        ));
    }
    /// The kernel's `jiffies` now.
    pub fn jiffies(&self) -> u64 {
        time::jiffies(self.now)
    }
}

/// The hooks of `struct rq_qos_ops` as bits: a policy names the ones it
/// implements for each operation (the kernel leaves the hooks it lacks
/// NULL, and WBT's own hooks return at once for the operations it does not
/// watch), so the block layer does not build a context for a call that
/// would do nothing.
pub mod hook {
    pub const THROTTLE: u16 = 1 << 0;
    pub const TRACK: u16 = 1 << 1;
    pub const MERGE: u16 = 1 << 2;
    pub const ISSUE: u16 = 1 << 3;
    pub const REQUEUE: u16 = 1 << 4;
    pub const DONE: u16 = 1 << 5;
    pub const DONE_BIO: u16 = 1 << 6;
    pub const CLEANUP: u16 = 1 << 7;
    pub const DEPTH_CHANGED: u16 = 1 << 8;
    pub const ALL: u16 = (1 << 9) - 1;
}

/// A policy (`struct rq_qos_ops`); every hook is optional.
pub trait RqQosPolicy {
    fn id(&self) -> RqQosId;
    /// The hooks this policy acts in for bios and requests of `op`
    /// ([`hook`] bits; `queue_depth_changed` counts if any op names it);
    /// the others are not called. Must not change while the policy is
    /// attached. Timers and attributes are always available.
    fn hooks(&self, _op: Op) -> u16 {
        hook::ALL
    }
    /// Before a request is allocated for `bio`; `Wait` puts the task to sleep.
    fn throttle(&mut self, _ctx: &mut QosCtx, _bio: &QosBio) -> Throttle {
        Throttle::Go
    }
    /// `rq` was allocated for `bio` (after every policy's `throttle` said Go).
    fn track(&mut self, _ctx: &mut QosCtx, _rq: &mut Request, _bio: &QosBio) {}
    /// `bio` is about to be merged into `rq`.
    fn merge(&mut self, _ctx: &mut QosCtx, _rq: &mut Request, _bio: &QosBio) {}
    /// `rq` went to the driver (`rq.dispatch_ns` is set).
    fn issue(&mut self, _ctx: &mut QosCtx, _rq: &mut Request) {}
    /// `rq` came back from the driver and will be issued again.
    fn requeue(&mut self, _ctx: &mut QosCtx, _rq: &mut Request) {}
    /// `rq` is done (freed, merged away, or a flush-sequence step ended):
    /// possibly more than once for one request, so clear `rq.qos`.
    fn done(&mut self, _ctx: &mut QosCtx, _rq: &mut Request) {}
    /// A bio that went through `throttle` or `merge` completed.
    fn done_bio(&mut self, _ctx: &mut QosCtx, _bio: &QosBio) {}
    /// A bio that passed `throttle` will not get a request: give back what
    /// `throttle` took for it.
    fn cleanup(&mut self, _ctx: &mut QosCtx, _bio: &QosBio) {}
    /// `nr_requests` or the queue depth changed.
    fn queue_depth_changed(&mut self, _ctx: &mut QosCtx) {}
    /// A timer armed with [`QosCtx::arm_timer`] fired.
    fn timer(&mut self, _ctx: &mut QosCtx, _token: u64) {}
    /// A queue attribute the policy shows (`queue/wbt_lat_usec`).
    fn attr(&self, _name: &str) -> Option<u64> {
        None
    }
    /// The elevator `name` was attached (BFQ turns WBT off); `legacy`: it
    /// runs on the legacy single-queue core.
    fn elevator_changed(&mut self, _name: &str, _legacy: bool) {}
}

struct Slot {
    serial: u64,
    /// The policy's [`RqQosPolicy::hooks`] per op (fixed while attached),
    /// asked once at `add` instead of on every call.
    hooks: [u16; OPS.len()],
    policy: Box<dyn RqQosPolicy>,
}

impl Slot {
    /// The policy acts in hook `h` for `op`, or for any op when `op` is None.
    fn wants(&self, op: Option<Op>, h: u16) -> bool {
        let mask = match op {
            Some(op) => self.hooks[op_index(op)],
            None => self.hooks.iter().fold(0, |m, &x| m | x),
        };
        mask & h != 0
    }
}

/// Where a task is inside the chain's throttle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStage {
    /// Sleeping in the `throttle` of the policy at this chain index.
    Waiting(usize),
    /// Every policy said Go; the task then slept for a tag (or the queue
    /// froze) before its request existed.
    Passed,
}

/// The chain (`q->rq_qos`).
#[derive(Default)]
pub struct RqQos {
    policies: Vec<Slot>,
    /// The union of the policies' [`RqQosPolicy::hooks`], per op.
    hooks: [u16; OPS.len()],
    next_serial: u64,
    /// Tasks between `throttle` and allocation, by pid (with many tasks
    /// waiting for a tag, hundreds are inside at once).
    tasks: Vec<Option<TaskStage>>,
    /// How many entries of `tasks` are `Some`.
    inside: usize,
}

impl RqQos {
    pub fn new() -> RqQos {
        RqQos::default()
    }
    /// No policy: every hook is skipped.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.policies.is_empty()
    }
    /// Some policy acts in hook `h` (a [`hook`] bit) for `op`.
    #[inline]
    pub fn wants(&self, op: Op, h: u16) -> bool {
        self.hooks[op_index(op)] & h != 0
    }
    /// Some policy acts in hook `h` for some op.
    pub fn wants_any(&self, h: u16) -> bool {
        self.hooks.iter().any(|&m| m & h != 0)
    }
    fn update_hooks(&mut self) {
        for i in 0..OPS.len() {
            self.hooks[i] = self.policies.iter().fold(0, |m, s| m | s.hooks[i]);
        }
    }
    /// `rq_qos_add`: the new policy goes first; one policy per id (-EBUSY).
    pub fn add(&mut self, policy: Box<dyn RqQosPolicy>) -> Result<(), String> {
        let id = policy.id();
        if self.policies.iter().any(|s| s.policy.id() == id) {
            return Err(format!(
                "rq-qos policy '{}' is already attached (EBUSY)",
                id.name()
            ));
        }
        self.next_serial += 1;
        self.policies.insert(
            0,
            Slot {
                serial: self.next_serial,
                hooks: OPS.map(|op| policy.hooks(op)),
                policy,
            },
        );
        self.update_hooks();
        Ok(())
    }
    /// `rq_qos_del`.
    pub fn remove(&mut self, id: RqQosId) -> Option<Box<dyn RqQosPolicy>> {
        let i = self.policies.iter().position(|s| s.policy.id() == id)?;
        self.tasks.clear();
        self.inside = 0;
        let removed = self.policies.remove(i).policy;
        self.update_hooks();
        Some(removed)
    }
    /// Policy ids in calling order.
    pub fn ids(&self) -> Vec<RqQosId> {
        self.policies.iter().map(|s| s.policy.id()).collect()
    }

    /// Some task is between `throttle` and allocation.
    pub fn holds_tasks(&self) -> bool {
        self.inside > 0
    }
    /// Where task `pid` is inside the throttle, if anywhere.
    #[inline]
    pub fn stage(&self, pid: u32) -> Option<TaskStage> {
        self.tasks.get(pid as usize).copied().flatten()
    }
    fn set_stage(&mut self, pid: u32, stage: Option<TaskStage>) {
        let i = pid as usize;
        if i >= self.tasks.len() {
            if stage.is_none() {
                return;
            }
            self.tasks.resize(i + 1, None);
        }
        let old = std::mem::replace(&mut self.tasks[i], stage);
        match (old.is_some(), stage.is_some()) {
            (false, true) => self.inside += 1,
            (true, false) => self.inside -= 1,
            _ => {}
        }
    }

    /// `rq_qos_throttle` for `bio`, starting where the task left off.
    /// `Wait` leaves the task recorded at the policy that made it wait.
    pub fn throttle(&mut self, ctx: &mut QosCtx, bio: &QosBio) -> Throttle {
        let from = match self.stage(bio.pid) {
            Some(TaskStage::Passed) => return Throttle::Go,
            Some(TaskStage::Waiting(i)) => i,
            None => 0,
        };
        for i in from..self.policies.len() {
            let s = &mut self.policies[i];
            if !s.wants(Some(bio.op), hook::THROTTLE) {
                continue;
            }
            ctx.serial = s.serial;
            if s.policy.throttle(ctx, bio) == Throttle::Wait {
                self.set_stage(bio.pid, Some(TaskStage::Waiting(i)));
                return Throttle::Wait;
            }
        }
        self.set_stage(bio.pid, Some(TaskStage::Passed));
        Throttle::Go
    }
    /// The task got its request (or gave up): it is no longer inside.
    pub fn leave(&mut self, pid: u32) {
        self.set_stage(pid, None);
    }
    /// `rq_qos_cleanup` for a bio that passed every `throttle`.
    pub fn cleanup(&mut self, ctx: &mut QosCtx, bio: &QosBio) {
        self.leave(bio.pid);
        self.each(ctx, Some(bio.op), hook::CLEANUP, |p, c| p.cleanup(c, bio));
    }

    fn each(
        &mut self,
        ctx: &mut QosCtx,
        op: Option<Op>,
        h: u16,
        mut f: impl FnMut(&mut dyn RqQosPolicy, &mut QosCtx),
    ) {
        for s in self.policies.iter_mut() {
            if s.wants(op, h) {
                ctx.serial = s.serial;
                f(s.policy.as_mut(), ctx);
            }
        }
    }
    pub fn track(&mut self, ctx: &mut QosCtx, rq: &mut Request, bio: &QosBio) {
        self.each(ctx, Some(bio.op), hook::TRACK, |p, c| p.track(c, rq, bio));
    }
    pub fn merge(&mut self, ctx: &mut QosCtx, rq: &mut Request, bio: &QosBio) {
        self.each(ctx, Some(bio.op), hook::MERGE, |p, c| p.merge(c, rq, bio));
    }
    pub fn issue(&mut self, ctx: &mut QosCtx, rq: &mut Request) {
        self.each(ctx, Some(rq.op), hook::ISSUE, |p, c| p.issue(c, rq));
    }
    pub fn requeue(&mut self, ctx: &mut QosCtx, rq: &mut Request) {
        self.each(ctx, Some(rq.op), hook::REQUEUE, |p, c| p.requeue(c, rq));
    }
    pub fn done(&mut self, ctx: &mut QosCtx, rq: &mut Request) {
        self.each(ctx, Some(rq.op), hook::DONE, |p, c| p.done(c, rq));
    }
    pub fn done_bio(&mut self, ctx: &mut QosCtx, bio: &QosBio) {
        self.each(ctx, Some(bio.op), hook::DONE_BIO, |p, c| p.done_bio(c, bio));
    }
    pub fn queue_depth_changed(&mut self, ctx: &mut QosCtx) {
        self.each(ctx, None, hook::DEPTH_CHANGED, |p, c| {
            p.queue_depth_changed(c)
        });
    }
    /// The first policy's value of attribute `name`.
    pub fn attr(&self, name: &str) -> Option<u64> {
        self.policies.iter().find_map(|s| s.policy.attr(name))
    }
    pub fn elevator_changed(&mut self, name: &str, legacy: bool) {
        for s in self.policies.iter_mut() {
            s.policy.elevator_changed(name, legacy);
        }
    }
    /// Deliver a timer token armed through [`QosCtx::arm_timer`].
    pub fn timer(&mut self, ctx: &mut QosCtx, token: u64) {
        let serial = token >> SERIAL_SHIFT;
        if let Some(s) = self.policies.iter_mut().find(|s| s.serial == serial) {
            ctx.serial = serial;
            s.policy.timer(ctx, token & MAX_TIMER_TOKEN);
        }
    }
}

// ----- the calls from the block layer ------------------------------------------

use super::request::RqId;
use super::{BioSubmit, BlockLayer, Env};
use crate::sim::event::{Event, TimerOwner};

fn qos_bio(b: &BioSubmit, issue_ns: Ns) -> QosBio {
    QosBio {
        op: b.op,
        flags: b.flags,
        sector: b.sector,
        nr_sectors: b.nr_sectors,
        cgroup: b.cgroup,
        ioprio: b.ioprio,
        pid: b.pid,
        issue_ns,
    }
}

/// Build a context from the block layer's fields and `env` (a macro, so the
/// borrows stay on disjoint fields), run `$body`, then deliver armed timers.
macro_rules! with_qos_ctx {
    ($bl:expr, $env:expr, |$chain:ident, $ctx:ident, $rqs:ident| $body:expr) => {{
        let write_cache = $bl.device.limits().write_cache;
        let mut $ctx = QosCtx::new(
            $env.now,
            &$bl.q,
            write_cache,
            &$bl.cgroups,
            $env.woken,
            &mut $bl.qos_timers,
        );
        let $chain = &mut $bl.qos;
        #[allow(unused_variables)]
        let $rqs = &mut $bl.rqs;
        let r = $body;
        if !$bl.qos_timers.is_empty() {
            for (at, tok) in $bl.qos_timers.drain(..) {
                $env.events.push(at, Event::Timer(TimerOwner::RqQos, tok));
            }
        }
        r
    }};
}

// The hooks run only with a policy attached: kept out of line, so the hot
// path of a queue without policies is one branch per hook.
impl BlockLayer {
    /// `rq_qos_add`: attach a policy; the kernel freezes the queue for it, so
    /// no request may exist.
    pub fn add_rq_qos(&mut self, policy: Box<dyn RqQosPolicy>) -> Result<(), String> {
        if self.rqs.live() != 0 {
            return Err("rq-qos policies are added to an idle queue".into());
        }
        self.qos.add(policy)
    }
    /// `rq_qos_del` (the queue must be idle, no task inside a throttle).
    pub fn remove_rq_qos(&mut self, id: RqQosId) -> Option<Box<dyn RqQosPolicy>> {
        self.qos.remove(id)
    }
    /// Ids of the attached policies in calling order.
    pub fn rq_qos_ids(&self) -> Vec<RqQosId> {
        self.qos.ids()
    }
    /// An rq-qos timer fired (`Event::Timer` owned by `TimerOwner::RqQos`).
    pub fn rq_qos_timer(&mut self, env: &mut Env, token: u64) {
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain.timer(&mut ctx, token));
    }

    #[cold]
    #[inline(never)]
    pub(super) fn qos_throttle(&mut self, env: &mut Env, b: &BioSubmit) -> Throttle {
        let bio = qos_bio(b, env.now);
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain.throttle(&mut ctx, &bio))
    }
    #[cold]
    #[inline(never)]
    pub(super) fn qos_cleanup(&mut self, env: &mut Env, b: &BioSubmit) {
        let bio = qos_bio(b, env.now);
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain.cleanup(&mut ctx, &bio));
    }
    #[cold]
    #[inline(never)]
    pub(super) fn qos_track(&mut self, env: &mut Env, rq: RqId, b: &BioSubmit) {
        let bio = qos_bio(b, env.now);
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain.track(
            &mut ctx,
            &mut rqs[rq],
            &bio
        ));
    }
    #[cold]
    #[inline(never)]
    pub(super) fn qos_merge(&mut self, env: &mut Env, rq: RqId, b: &BioSubmit) {
        let bio = qos_bio(b, env.now);
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain.merge(
            &mut ctx,
            &mut rqs[rq],
            &bio
        ));
    }
    #[cold]
    #[inline(never)]
    pub(super) fn qos_issue(&mut self, env: &mut Env, rq: RqId) {
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain
            .issue(&mut ctx, &mut rqs[rq]));
    }
    #[cold]
    #[inline(never)]
    pub(super) fn qos_requeue(&mut self, env: &mut Env, rq: RqId) {
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain
            .requeue(&mut ctx, &mut rqs[rq]));
    }
    #[cold]
    #[inline(never)]
    pub(super) fn qos_done(&mut self, env: &mut Env, rq: RqId) {
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain
            .done(&mut ctx, &mut rqs[rq]));
    }
    /// Keep what `done_bio` will need of bio `idx`.
    #[cold]
    #[inline(never)]
    pub(super) fn qos_keep_bio(&mut self, idx: u32, b: &BioSubmit, now: Ns) {
        let i = idx as usize;
        if self.bio_qos.len() <= i {
            self.bio_qos.resize(i + 1, qos_bio(b, now));
        }
        self.bio_qos[i] = qos_bio(b, now);
    }
    #[cold]
    #[inline(never)]
    pub(super) fn qos_done_bio(&mut self, env: &mut Env, idx: u32) {
        let bio = self.bio_qos[idx as usize];
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain.done_bio(&mut ctx, &bio));
    }
    #[cold]
    #[inline(never)]
    pub(super) fn qos_depth_changed(&mut self, env: &mut Env) {
        with_qos_ctx!(self, env, |chain, ctx, rqs| chain
            .queue_depth_changed(&mut ctx));
    }
}

/// A small real policy that proves the seam in tests: at most `limit` tracked
/// requests of the chosen kind in flight (from allocation to free), waiters
/// served FIFO with the slot handed over at wake-up, as `rq_qos_wait` does.
/// It marks what it counted in `Request::qos` bit 0, so a second `done` for
/// the same request (flush sequences) is harmless.
#[cfg(test)]
pub(crate) mod inflight_limit {
    use super::*;
    use std::collections::VecDeque;

    const TRACKED: u32 = 1;

    #[derive(Debug, Default, Clone, PartialEq, Eq)]
    pub struct Counters {
        pub throttled: u64,
        pub woken: u64,
        pub done_bios: u64,
        pub issued: u64,
        pub requeued: u64,
        pub merged: u64,
        pub cleaned: u64,
        pub max_inflight: u32,
        pub timers: Vec<u64>,
    }

    pub struct InflightLimit {
        pub limit: u32,
        /// Only writes are limited (reads pass), like WBT's classes.
        pub writes_only: bool,
        inflight: u32,
        waiters: VecDeque<u32>,
        /// Tasks woken with a slot reserved for them.
        granted: Vec<u32>,
        /// Arm a timer this long after each tracked request (tests the
        /// timer path); None = no timers.
        pub timer_after: Option<Ns>,
        pub counters: std::rc::Rc<std::cell::RefCell<Counters>>,
    }

    impl InflightLimit {
        pub fn new(limit: u32, writes_only: bool) -> InflightLimit {
            InflightLimit {
                limit,
                writes_only,
                inflight: 0,
                waiters: VecDeque::new(),
                granted: Vec::new(),
                timer_after: None,
                counters: Default::default(),
            }
        }
        fn limited(&self, op: Op) -> bool {
            !self.writes_only || op.is_write()
        }
    }

    impl RqQosPolicy for InflightLimit {
        fn id(&self) -> RqQosId {
            RqQosId::Other("inflight-limit")
        }
        fn throttle(&mut self, _ctx: &mut QosCtx, bio: &QosBio) -> Throttle {
            if !self.limited(bio.op) {
                return Throttle::Go;
            }
            if let Some(i) = self.granted.iter().position(|&p| p == bio.pid) {
                // Woken with a slot handed over: it is ours already.
                self.granted.swap_remove(i);
                return Throttle::Go;
            }
            // Latecomers queue behind sleepers (no barging), as rq_qos_wait.
            if self.waiters.is_empty() && self.inflight < self.limit {
                self.inflight += 1;
                let mut c = self.counters.borrow_mut();
                c.max_inflight = c.max_inflight.max(self.inflight);
                return Throttle::Go;
            }
            if !self.waiters.contains(&bio.pid) {
                self.waiters.push_back(bio.pid);
            }
            self.counters.borrow_mut().throttled += 1;
            Throttle::Wait
        }
        fn track(&mut self, ctx: &mut QosCtx, rq: &mut Request, bio: &QosBio) {
            if self.limited(bio.op) {
                rq.qos |= TRACKED;
                if let Some(after) = self.timer_after {
                    ctx.arm_timer(ctx.now + after, rq.sector);
                }
            }
        }
        fn merge(&mut self, _ctx: &mut QosCtx, _rq: &mut Request, _bio: &QosBio) {
            self.counters.borrow_mut().merged += 1;
        }
        fn issue(&mut self, _ctx: &mut QosCtx, _rq: &mut Request) {
            self.counters.borrow_mut().issued += 1;
        }
        fn requeue(&mut self, _ctx: &mut QosCtx, _rq: &mut Request) {
            self.counters.borrow_mut().requeued += 1;
        }
        fn done(&mut self, ctx: &mut QosCtx, rq: &mut Request) {
            if rq.qos & TRACKED == 0 {
                return;
            }
            rq.qos &= !TRACKED;
            // Hand the slot to the first sleeper, else release it.
            if let Some(pid) = self.waiters.pop_front() {
                self.granted.push(pid);
                self.counters.borrow_mut().woken += 1;
                ctx.wake(pid);
            } else {
                self.inflight -= 1;
            }
        }
        fn done_bio(&mut self, _ctx: &mut QosCtx, _bio: &QosBio) {
            self.counters.borrow_mut().done_bios += 1;
        }
        fn cleanup(&mut self, ctx: &mut QosCtx, bio: &QosBio) {
            if !self.limited(bio.op) {
                return;
            }
            self.counters.borrow_mut().cleaned += 1;
            if let Some(pid) = self.waiters.pop_front() {
                self.granted.push(pid);
                ctx.wake(pid);
            } else {
                self.inflight -= 1;
            }
        }
        fn timer(&mut self, _ctx: &mut QosCtx, token: u64) {
            self.counters.borrow_mut().timers.push(token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::inflight_limit::InflightLimit;
    use super::*;

    struct Named(RqQosId, std::rc::Rc<std::cell::RefCell<Vec<&'static str>>>);
    impl RqQosPolicy for Named {
        fn id(&self) -> RqQosId {
            self.0
        }
        fn throttle(&mut self, _ctx: &mut QosCtx, _bio: &QosBio) -> Throttle {
            self.1.borrow_mut().push(self.0.name());
            Throttle::Go
        }
        fn timer(&mut self, _ctx: &mut QosCtx, token: u64) {
            assert_eq!(token, 7);
            self.1.borrow_mut().push(self.0.name());
        }
    }

    fn q() -> QueueInfo {
        QueueInfo::new(1, 1, 32, 64)
    }

    fn bio(pid: u32, op: Op) -> QosBio {
        QosBio {
            op,
            flags: 0,
            sector: 0,
            nr_sectors: 8,
            cgroup: 0,
            ioprio: IoPrio::default(),
            pid,
            issue_ns: 0,
        }
    }

    #[test]
    fn last_added_runs_first_and_ids_are_unique() {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let mut chain = RqQos::new();
        assert!(chain.is_empty());
        chain
            .add(Box::new(Named(RqQosId::Wbt, log.clone())))
            .unwrap();
        chain
            .add(Box::new(Named(RqQosId::Cost, log.clone())))
            .unwrap();
        assert!(chain
            .add(Box::new(Named(RqQosId::Wbt, log.clone())))
            .unwrap_err()
            .contains("EBUSY"));
        assert_eq!(chain.ids(), vec![RqQosId::Cost, RqQosId::Wbt]);
        let (qi, cg) = (q(), CgroupTree::default());
        let (mut woken, mut timers) = (Vec::new(), Vec::new());
        let mut ctx = QosCtx::new(0, &qi, false, &cg, &mut woken, &mut timers);
        assert_eq!(chain.throttle(&mut ctx, &bio(1, Op::Write)), Throttle::Go);
        assert_eq!(*log.borrow(), vec!["cost", "wbt"]);
        // Timers come back to the policy that armed them.
        ctx.serial = 1; // wbt was added first
        ctx.arm_timer(5, 7);
        let (_, tok) = timers[0];
        let mut ctx = QosCtx::new(5, &qi, false, &cg, &mut woken, &mut timers);
        chain.timer(&mut ctx, tok);
        assert_eq!(log.borrow().last(), Some(&"wbt"));
        assert!(chain.remove(RqQosId::Cost).is_some());
        assert_eq!(chain.ids(), vec![RqQosId::Wbt]);
    }

    #[test]
    fn waiting_task_resumes_at_its_policy_with_the_slot_handed_over() {
        let mut chain = RqQos::new();
        let lim = InflightLimit::new(1, true);
        let counters = lim.counters.clone();
        chain.add(Box::new(lim)).unwrap();
        let (qi, cg) = (q(), CgroupTree::default());
        let (mut woken, mut timers) = (Vec::new(), Vec::new());
        let mut ctx = QosCtx::new(0, &qi, false, &cg, &mut woken, &mut timers);
        assert_eq!(chain.throttle(&mut ctx, &bio(1, Op::Write)), Throttle::Go);
        let mut r1 = Request::empty();
        chain.track(&mut ctx, &mut r1, &bio(1, Op::Write));
        chain.leave(1);
        // Reads are not limited.
        assert_eq!(chain.throttle(&mut ctx, &bio(3, Op::Read)), Throttle::Go);
        chain.leave(3);
        assert_eq!(chain.throttle(&mut ctx, &bio(2, Op::Write)), Throttle::Wait);
        assert_eq!(chain.stage(2), Some(TaskStage::Waiting(0)));
        // r1 completes: task 2 is woken with the slot.
        chain.done(&mut ctx, &mut r1);
        chain.done(&mut ctx, &mut r1); // a second done is harmless
        assert_eq!(woken, vec![2]);
        let mut ctx = QosCtx::new(0, &qi, false, &cg, &mut woken, &mut timers);
        assert_eq!(chain.throttle(&mut ctx, &bio(2, Op::Write)), Throttle::Go);
        assert_eq!(chain.stage(2), Some(TaskStage::Passed));
        // Passed tasks are not throttled again (they slept for a tag).
        assert_eq!(chain.throttle(&mut ctx, &bio(2, Op::Write)), Throttle::Go);
        chain.cleanup(&mut ctx, &bio(2, Op::Write));
        assert_eq!(chain.stage(2), None);
        let c = counters.borrow();
        assert_eq!(
            (c.throttled, c.woken, c.cleaned, c.max_inflight),
            (1, 1, 1, 1)
        );
    }
}

#[cfg(test)]
mod block_tests {
    use super::inflight_limit::{Counters, InflightLimit};
    use super::*;
    use crate::block::knobs::QueueKnobs;
    use crate::block::request::flags;
    use crate::block::testkit::{bio, fsync_bio, Harness, TestDevice};
    use crate::block::{BlockWait, SubmitResult, KBLOCKD_WAKE_NS};
    use crate::sim::time::{NS_PER_MS, NS_PER_US};
    use std::cell::RefCell;
    use std::rc::Rc;

    fn with_limit(h: &mut Harness, limit: u32) -> Rc<RefCell<Counters>> {
        let lim = InflightLimit::new(limit, true);
        let c = lim.counters.clone();
        h.bl.add_rq_qos(Box::new(lim)).unwrap();
        c
    }

    fn clean(h: &Harness) {
        let inv = &h.bl.inv;
        assert_eq!(inv.bios_submitted, inv.bios_completed);
        assert_eq!(h.bl.live_requests(), 0);
        assert!(!h.bl.qos.holds_tasks(), "no task left inside the throttle");
    }

    #[test]
    fn throttled_task_sleeps_and_is_woken_by_done() {
        for sched in ["none", "mq-deadline"] {
            let mut h = Harness::new(TestDevice::new(false, false, 32), sched, 1);
            let c = with_limit(&mut h, 1);
            assert_eq!(h.bl.rq_qos_ids(), vec![RqQosId::Other("inflight-limit")]);
            let w1 = bio(Op::Write, 0, 8, 0, 1, 1);
            let w2 = bio(Op::Write, 800, 8, 0, 2, 2);
            let r = bio(Op::Read, 1600, 8, 0, 3, 3);
            assert_eq!(h.submit(w1), SubmitResult::Taken);
            assert_eq!(h.submit(w2), SubmitResult::Sleep(BlockWait::RqQos));
            // Reads are not limited by this policy.
            assert_eq!(h.submit(r), SubmitResult::Taken);
            // No kblockd switch under mq-deadline either: on the newest
            // kernel the bio's own plug runs the queue in the task.
            h.run_until(100 * NS_PER_US);
            // w1 completed; its done woke task 2 with the slot.
            assert_eq!(h.woken, vec![2]);
            h.woken.clear();
            let resubmitted = h.now;
            assert_eq!(h.submit(w2), SubmitResult::Taken);
            h.run();
            assert_eq!(h.done_at(2), Some(resubmitted + 100 * NS_PER_US), "{sched}");
            let c = c.borrow();
            assert_eq!((c.throttled, c.woken, c.max_inflight), (1, 1, 1));
            assert_eq!(c.issued, 3);
            // done_bio for every bio that went through throttle.
            assert_eq!(c.done_bios, 3);
            clean(&h);
        }
    }

    #[test]
    fn empty_chain_changes_nothing() {
        let run = |with: bool| {
            let mut h = Harness::new(TestDevice::new(true, false, 4), "mq-deadline", 1);
            if with {
                with_limit(&mut h, 1000);
            }
            for i in 0..20u64 {
                h.submit(bio(Op::Write, i * 64, 8, flags::SYNC, 1, i));
            }
            h.submit(fsync_bio(2, 99));
            h.run();
            (
                h.cmds()
                    .iter()
                    .map(|(t, c)| (*t, c.sector))
                    .collect::<Vec<_>>(),
                h.done.clone(),
            )
        };
        assert_eq!(
            run(false),
            run(true),
            "a policy that never throttles is invisible"
        );
    }

    #[test]
    fn merge_requeue_and_timer_hooks() {
        let mut h = Harness::new(TestDevice::new(false, false, 32), "none", 1);
        let lim = {
            let mut l = InflightLimit::new(100, true);
            l.timer_after = Some(NS_PER_MS);
            l
        };
        let c = lim.counters.clone();
        h.bl.add_rq_qos(Box::new(lim)).unwrap();
        // The device refuses: W1 bounces (BLK_STS_RESOURCE → requeue hook)
        // and waits on hctx->dispatch; W2 goes to the software queue where
        // W3 merges into it.
        *h.busy.borrow_mut() = true;
        h.submit(bio(Op::Write, 0, 8, 0, 1, 1));
        h.submit(bio(Op::Write, 800, 8, 0, 1, 2));
        h.submit(bio(Op::Write, 808, 8, 0, 1, 3));
        // Every bounce is a requeue (W1 is retried when W2 runs the queue).
        assert!(c.borrow().requeued >= 1);
        assert_eq!(c.borrow().merged, 1);
        *h.busy.borrow_mut() = false;
        h.run();
        let c = c.borrow();
        assert_eq!(c.issued, 2, "two requests, one of them with two bios");
        assert_eq!(c.done_bios, 3, "throttled or merged bios");
        // One timer per tracked request, each 1 ms after its allocation.
        assert_eq!(c.timers, vec![0, 800]);
        clean(&h);
    }

    #[test]
    fn a_bio_that_merges_after_passing_the_throttle_is_cleaned_up() {
        let knobs = QueueKnobs {
            nr_requests: Some(4),
            ..Default::default()
        };
        let mut h = Harness::with_knobs(TestDevice::new(false, false, 1), "mq-deadline", 1, knobs);
        let c = with_limit(&mut h, 100);
        // Four scheduler tags: W1 at the device, three waiting.
        for (i, s) in [0u64, 1000, 2000, 4000].iter().enumerate() {
            assert_eq!(
                h.submit(bio(Op::Write, *s, 8, 0, 1, i as u64)),
                SubmitResult::Taken
            );
        }
        // Task 2 passes the throttle and sleeps for a tag.
        let w = bio(Op::Write, 3008, 8, 0, 2, 10);
        assert_eq!(h.submit(w), SubmitResult::Sleep(BlockWait::Tag));
        assert_eq!(h.bl.qos.stage(2), Some(TaskStage::Passed));
        h.run_until(100 * NS_PER_US + KBLOCKD_WAKE_NS);
        assert_eq!(h.woken, vec![2]);
        // Task 3 takes the freed tag first with the request w now merges into.
        assert_eq!(
            h.submit(bio(Op::Write, 3000, 8, 0, 3, 11)),
            SubmitResult::Taken
        );
        assert_eq!(h.submit(w), SubmitResult::Taken);
        assert_eq!(c.borrow().cleaned, 1);
        assert_eq!(c.borrow().merged, 1);
        h.run();
        clean(&h);
    }

    #[test]
    fn driver_requeue_goes_back_to_the_head() {
        let mut h = Harness::new(TestDevice::new(false, false, 32), "mq-deadline", 1);
        let c = with_limit(&mut h, 100);
        *h.hold.borrow_mut() = true;
        h.submit(bio(Op::Write, 0, 8, 0, 1, 1));
        h.run_until(0);
        let id = h.cmds()[0].1.id;
        *h.hold.borrow_mut() = false;
        let now = h.now;
        let (bl, events, done, woken) = (&mut h.bl, &mut h.events, &mut h.done, &mut h.woken);
        let mut env = crate::block::Env {
            now,
            events,
            done,
            woken,
        };
        bl.requeue_request(&mut env, id);
        h.run();
        assert_eq!(h.cmds().len(), 2, "issued again");
        assert_eq!(h.done_owners(), vec![1]);
        assert_eq!(c.borrow().requeued, 1);
        clean(&h);
    }
}
