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

impl Cfq {
    pub(super) fn debug_state(&self) -> String {
        let mut s = format!(
            "active {} busy {} queued {} serving {:?} class {} type {} expires {} timer {:?} in_driver {} in_flight {:?}\n",
            self.active, self.busy_queues, self.rq_queued, self.serving_group, self.serving_wl_class,
            self.serving_wl_type, self.workload_expires, self.timer_at, self.rq_in_driver, self.rq_in_flight
        );
        for (i, q) in self.queues.iter().enumerate() {
            if q.live {
                s += &format!(
                    "  q{i} g{} pid {} sync {} class {} prio {} rr {} tree {:?} len {} disp {} next {} f {:?}\n",
                    q.group, q.pid, q.f.sync, q.class, q.ioprio, q.f.on_rr, q.tree, q.sort.len(), q.dispatched, q.next_rq, q.f
                );
            }
        }
        for (i, g) in self.groups.iter().enumerate() {
            if let Some(g) = g {
                s += &format!(
                    "  g{i} nr_cfqq {} on_tree {:?} vd {} vfr {} counts {:?}\n",
                    g.nr_cfqq,
                    g.on_tree,
                    g.vdisktime,
                    g.vfraction,
                    g.st.iter().map(|t| t.count()).collect::<Vec<_>>()
                );
            }
        }
        s += &format!("  grp_tree {:?}\n", self.grp_tree);
        s
    }
}

#[test]
#[ignore]
fn debug_stuck() {
    let mut h = Harness::legacy(Bounded(Cfq::new()));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        h.random_workout(1, 3000);
    }));
    if r.is_err() {
        eprintln!("{}", h.sched.0.debug_state());
        eprintln!(
            "tunables {:?}",
            h.sched
                .tunables()
                .iter()
                .map(|t| (t.name, t.value.clone()))
                .collect::<Vec<_>>()
        );
    }
}
