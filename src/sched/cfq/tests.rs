use super::*;
use crate::block::elevator::{
    BioInfo, Elevator, MayQueue, MergeKind, QueueInfo, SchedCtx, Tunable,
};
use crate::block::request::{Op, RqId};
use crate::sched::testing::{Harness, Submitter};

#[test]
fn attribute_table_is_consistent() {
    crate::block::elevator::check_attr_table(&mut Cfq::new(), CFQ_ATTRS);
}

/// CFQ whose time tunables refuse values above 10 s. The kernel takes any
/// unsigned int of ms (simple_strtoul truncated to 32 bits), so the
/// workout's "99999999999" becomes a 14-day slice_idle and slice: CFQ then
/// legitimately idles for days, longer than the harness's drain waits.
struct Bounded(Cfq);

impl Elevator for Bounded {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn init(&mut self, q: &QueueInfo) {
        self.0.init(q)
    }
    fn tunables(&self) -> Vec<Tunable> {
        self.0.tunables()
    }
    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        let before = self.0.tunables();
        self.0.set_tunable(name, value)?;
        let too_long = self.0.tunables().iter().any(|t| match t.unit {
            "ms" => t.value.parse::<u64>().unwrap_or(0) > 10_000,
            "us" => t.value.parse::<u64>().unwrap_or(0) > 10_000_000,
            _ => false,
        });
        if too_long {
            let old = before.iter().find(|t| t.name == name).expect("listed");
            self.0.set_tunable(name, &old.value)?;
            return Err("longer than the workout's drain".into());
        }
        Ok(())
    }
    fn may_queue(&mut self, ctx: &mut SchedCtx, bio: &BioInfo) -> MayQueue {
        self.0.may_queue(ctx, bio)
    }
    fn prepare_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.0.prepare_request(ctx, rq)
    }
    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.0.finish_request(ctx, rq)
    }
    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool) {
        self.0.insert(ctx, rq, at_head)
    }
    fn has_work(&self, hctx: u16) -> bool {
        self.0.has_work(hctx)
    }
    fn dispatch_legacy(&mut self, ctx: &mut SchedCtx, force: bool) -> u32 {
        self.0.dispatch_legacy(ctx, force)
    }
    fn activate_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.0.activate_request(ctx, rq)
    }
    fn deactivate_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.0.deactivate_request(ctx, rq)
    }
    fn completed_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.0.completed_request(ctx, rq)
    }
    fn allow_merge(&mut self, ctx: &mut SchedCtx, rq: RqId, bio: &BioInfo) -> bool {
        self.0.allow_merge(ctx, rq, bio)
    }
    fn allow_rq_merge(&mut self, ctx: &mut SchedCtx, rq: RqId, next: RqId) -> bool {
        self.0.allow_rq_merge(ctx, rq, next)
    }
    fn request_merge(&self, ctx: &SchedCtx, bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        self.0.request_merge(ctx, bio)
    }
    fn request_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, kind: MergeKind) {
        self.0.request_merged(ctx, rq, kind)
    }
    fn requests_merged(&mut self, ctx: &mut SchedCtx, rq: RqId, next: RqId) {
        self.0.requests_merged(ctx, rq, next)
    }
    fn next_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        self.0.next_request(ctx, rq)
    }
    fn former_request(&self, ctx: &SchedCtx, rq: RqId) -> Option<RqId> {
        self.0.former_request(ctx, rq)
    }
    fn timer(&mut self, ctx: &mut SchedCtx, token: u64) {
        self.0.timer(ctx, token)
    }
}

#[test]
fn random_workouts_keep_the_contract() {
    for seed in 1..40 {
        let mut h = Harness::legacy(Bounded(Cfq::new()));
        h.random_workout(seed, 3000);
        assert_eq!(h.sched.0.queued(), 0);
        // An emptied active queue stays busy until it expires; a forced
        // dispatch expires it (cfq_forced_dispatch: BUG_ON(busy_queues)).
        assert!(h.sched.0.busy_queues() <= 1, "seed {seed}");
        h.force_drain();
        assert_eq!(h.sched.0.busy_queues(), 0, "seed {seed}");
        assert!(h.sched.0.live_queues() <= 6 * 4 * 17, "queues are freed");
    }
}

#[test]
fn random_workouts_on_a_non_rotational_queue() {
    for seed in 1..20 {
        let mut q = QueueInfo::new(1, 1, 32, crate::block::LEGACY_NR_REQUESTS);
        q.rotational = false;
        let mut h = Harness::legacy_with_queue(Bounded(Cfq::new()), q);
        h.random_workout(seed, 3000);
        h.force_drain();
        assert_eq!(h.sched.0.busy_queues(), 0, "seed {seed}");
    }
}

fn be(pid: u32, level: u8) -> Submitter {
    Submitter {
        pid,
        cgroup: 0,
        ioprio: crate::cgroup::IoPrio {
            class: crate::cgroup::IoPrioClass::Be,
            level,
        },
    }
}

/// The slice a lone sync queue of this level gets (it starts at the first
/// completion).
fn lone_slice(level: u8) -> u64 {
    let mut h = Harness::legacy(Cfq::new());
    let id = h
        .try_alloc_from(be(1, level), Op::Read, 0, 8)
        .expect("a request");
    h.insert(id, false);
    let got = h.dispatch().expect("dispatched");
    assert_eq!(
        h.sched.active_allocated_slice(),
        Some(0),
        "no slice before a completion"
    );
    h.finish(got);
    h.sched.active_allocated_slice().expect("active")
}

#[test]
fn sync_slices_scale_with_ioprio_and_start_at_the_first_completion() {
    // slice_sync 100 ms: base + base/5 * (4 - level).
    let ms = crate::sim::time::NS_PER_MS;
    assert_eq!(lone_slice(0), 180 * ms);
    assert_eq!(lone_slice(4), 100 * ms);
    assert_eq!(lone_slice(7), 40 * ms);
}

#[test]
fn an_emptied_sync_queue_idles_on_a_disk_but_not_with_slice_idle_0() {
    for (idle, expect_wait) in [("8", true), ("0", false)] {
        let mut h = Harness::legacy(Cfq::new());
        h.sched.set_tunable("slice_idle", idle).unwrap();
        let a = h.try_alloc_from(be(1, 4), Op::Read, 0, 8).unwrap();
        h.insert(a, false);
        let b = h.try_alloc_from(be(2, 4), Op::Read, 1 << 30, 8).unwrap();
        h.insert(b, false);
        let first = h.dispatch().expect("one request");
        h.finish(first);
        // The active queue is empty: CFQ waits for its process instead of
        // serving the other one (a timer is armed), unless idling is off.
        let next = h.dispatch();
        assert_eq!(next.is_none(), expect_wait, "slice_idle={idle}");
        assert_eq!(h.pending_timers() > 0, expect_wait, "slice_idle={idle}");
        h.advance_ms(10);
        h.drain();
    }
}

#[test]
fn ncq_is_detected_after_50_deep_samples() {
    let mut q = QueueInfo::new(1, 1, 32, crate::block::LEGACY_NR_REQUESTS);
    q.rotational = false;
    let mut h = Harness::legacy_with_queue(Cfq::new(), q);
    assert_eq!(h.sched.hw_tag(), -1, "unknown: treated as queueing");
    let mut sector = 0;
    for round in 0..80 {
        while h.inflight.len() < 8 {
            let pid = (sector / 8 % 8) as u32;
            let id = h
                .try_alloc_from(be(pid, 4), Op::Read, sector * 64, 8)
                .unwrap();
            h.insert(id, false);
            sector += 1;
            while h.dispatch().is_some() {}
            if round > 0 && h.inflight.len() >= 8 {
                break;
            }
        }
        let done = h.inflight[0];
        h.finish(done);
    }
    assert_eq!(h.sched.hw_tag(), 1);
    h.drain();
}

#[test]
fn ssds_idle_by_default_before_4_8_only() {
    // cfq_registered_queue (4.8 on) zeroes slice_idle on non-rotational
    // queues; 2.6.39 kept 8 ms (2 jiffies at HZ=250), a disk keeps it always.
    let slice_idle = |kernel: crate::kernel::Version, rotational: bool| {
        let mut q = QueueInfo::new(1, 1, 32, crate::block::LEGACY_NR_REQUESTS);
        q.rotational = rotational;
        q.kernel = kernel;
        let mut c = Cfq::new();
        c.init(&q);
        c.tunables()
            .into_iter()
            .find(|t| t.name == "slice_idle")
            .map(|t| t.value)
            .expect("slice_idle listed")
    };
    let old = crate::kernel::Version::new(2, 6, 39);
    assert_eq!(slice_idle(old, false), "8");
    assert_eq!(slice_idle(IOPS_MODE_ON_SSD_SINCE, false), "0");
    assert_eq!(slice_idle(crate::kernel::NEWEST, false), "0");
    assert_eq!(slice_idle(crate::kernel::NEWEST, true), "8");
}
