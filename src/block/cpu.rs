//! CPU time of the I/O path and the queue lock.
//!
//! Every simulated CPU has a clock (`free`): work charged to it runs after
//! whatever it was doing. A task's submit call, the block layer's submission
//! work and the scheduler's hooks run on the submitting CPU; completion work
//! runs on the CPU that submitted the request (`rq_affinity=1`). Schedulers
//! that keep one queue-wide structure under one lock (mq-deadline, BFQ and
//! the legacy single-queue schedulers) also serialise on the lock: a hook
//! starts only when the lock is free, and taking a lock last held by another
//! CPU costs a cache-line hand-off. none works per CPU; kyber's hooks take
//! finer locks ([`HookLock`]: one per hardware queue, one per software
//! queue), which cost the same way but only where CPUs share them.

use crate::sim::rng::{ExpZiggurat, Xoshiro256pp};
use crate::sim::time::Ns;
use serde::Deserialize;

/// A context switch between two tasks: saving and restoring state, the
/// scheduler's own work and the cache and TLB misses after it — about
/// 1.5 us on a ~2.4 GHz x86 core (lmbench `lat_ctx`-class figures). A model
/// assumption, scaled by the machine's CPU speed.
pub const CONTEXT_SWITCH_NS: Ns = 1_500;

/// CPU cost of one scheduler's hooks, ns per call.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SchedCost {
    /// `insert_requests` per request.
    pub insert_ns: Ns,
    /// `dispatch_request` per request returned.
    pub dispatch_ns: Ns,
    /// `completed_request` + `finish_request` per request.
    pub complete_ns: Ns,
    /// A bio merge attempt in the scheduler (`bio_merge`).
    pub merge_ns: Ns,
    /// The hooks run under one queue-wide lock.
    pub locked: bool,
}

/// CPU costs of the path below the scheduler, ns.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CpuCosts {
    /// Block layer submission per bio (`submit_bio` → request, tag, plug).
    #[serde(default = "d_submit")]
    pub submit_ns: Ns,
    /// Driver `queue_rq` per request.
    #[serde(default = "d_driver")]
    pub driver_ns: Ns,
    /// Completion per request: interrupt, `blk_mq_end_request`, bio end_io.
    #[serde(default = "d_complete")]
    pub complete_ns: Ns,
    /// Moving a contended lock and the data it protects between CPUs.
    #[serde(default = "d_handoff")]
    pub lock_handoff_ns: Ns,
    /// Wake-up cost of this host: waking a task that sleeps on an idle CPU
    /// (fio in `io_getevents` or a synchronous call, a loop worker) keeps
    /// that CPU busy this long before the task runs — the IPI, the CPU's
    /// exit from idle (a halted vCPU resumed by its host), the switch. Not
    /// scaled by CPU speed; 0 (the default) leaves it out. `calibrate` fits
    /// it on a loop device, where it is most of a QD1 latency.
    #[serde(default)]
    pub wake_ns: Ns,
    /// The wake-up cost of a CPU that has been idle `wake_deep_after_ns` or
    /// longer: the longer a CPU idles the deeper it sleeps — a deeper
    /// C-state on bare metal, on a virtual machine the host's halt polling
    /// ending and the vCPU's thread descheduled. A CPU woken the instant it
    /// frees (by the work it just ran: a same-CPU wake-up) costs `wake_ns`;
    /// one that idled at all costs at least half of this, growing linearly
    /// to all of it at `wake_deep_after_ns`. 0 (the default): always
    /// `wake_ns`. Measured with perf on the lab VM (2026-12-03, 23,000
    /// wake-ups of fio and the loop worker): a median 22 us from wake-up to
    /// running on a vCPU idle for under 10 us, 31 us at 10-20 us, 38 us at
    /// 20-30 us, 42-44 us from 30 us on; same-CPU wake-ups 1-4 us.
    #[serde(default)]
    pub wake_deep_ns: Ns,
    /// How long a CPU idles before a wake-up costs `wake_deep_ns`.
    #[serde(default)]
    pub wake_deep_after_ns: Ns,
    /// What a task pays on its own account each time it sleeps for its
    /// I/O with nothing else to run on its CPU: `schedule()` switching to
    /// the idle task, and back when woken, as its schedstat counts it; ns
    /// on the reference core, scaled by the CPU speed like every CPU cost.
    /// None (the default): one context switch (`CONTEXT_SWITCH_NS`).
    /// On the lab VM fio paid 2.8-10.8 us per sleep (median 5.2) against
    /// 2.2-3.2 us per I/O at QD64, where it hardly sleeps (fio's CPU at QD1
    /// and QD64 in the probes of 2026-12-07's nine sessions, lab-records
    /// 2026-12-07j): a halted vCPU's round trip costs the sleeper more than
    /// a switch. `calibrate` fits it to fio's CPU on the QD1 reads of a
    /// loop device (see the README's loop section).
    #[serde(default)]
    pub sleep_ns: Option<Ns>,
    /// How much every CPU cost varies from one piece of work to the next
    /// (a call, a command, a completion: one draw for all of it):
    /// the coefficient of variation (0..=1) of a seeded draw that keeps
    /// each cost's mean. A piece costs `cost × ((1 − s) + s × E)`, E
    /// drawn from Exp(1): a floor of (1 − s) of the cost and a long tail
    /// above it, as cache misses, interrupts and a host's preemption of a
    /// vCPU give a kernel path. None or 0 (the default): every cost exact
    /// and no draws. Why it matters: two stages in a pipeline (fio's calls
    /// and a loop worker) that each cost a fixed time keep a shallow queue
    /// as busy as a deep one; with variation one stage now and then waits
    /// for the other, and more so the fewer requests are in flight.
    #[serde(default)]
    pub cost_spread: Option<f64>,
    /// Per-scheduler hook costs; missing schedulers use the built-in table.
    #[serde(default)]
    pub sched: Vec<NamedSchedCost>,
    /// Speed of the CPUs of the host this profile describes, relative to
    /// the reference core (`calibrate` fits it on a CPU-bound device): a run
    /// on the profile multiplies the machine's `--cpu-speed` by it, so every
    /// CPU cost — fio's calls, the block layer, scheduler hooks, a loop
    /// worker's copy — is that host's.
    #[serde(default)]
    pub host_speed: Option<f64>,
    /// Speed of the scheduler's hooks relative to the rest of this host's
    /// I/O path (`calibrate` fits it on a probe run under mq-deadline): on a
    /// virtual machine the system-call and interrupt path is slowed more
    /// than plain kernel code, so one host speed cannot give both. Every
    /// scheduler's hook costs, and the lock hand-off, are divided by it on
    /// top of the CPU speed.
    #[serde(default)]
    pub hook_speed: Option<f64>,
    /// Speed of this host's page-cache calls relative to the reference core
    /// (`calibrate` fits it on buffered probes whose calls need no I/O): the
    /// system calls of a buffered job — the call, the page lookup or
    /// allocation and the copy — run at it instead of `host_speed`. On a
    /// virtual machine a call that only copies memory exits to the
    /// hypervisor far less often than one that drives a device (interrupts,
    /// wake-ups of halted vCPUs), so it runs relatively faster.
    #[serde(default)]
    pub cache_speed: Option<f64>,
}

/// A CPU that idled only briefly costs this fraction (1/2) of the deep
/// wake-up: on the lab VM a median 22 us under 10 us of idle against
/// 42-44 us from 30 us on (2026-12-03, see `CpuCosts::wake_deep_ns`).
const SHORT_IDLE_WAKE_DIVISOR: Ns = 2;

/// What waking a task on an idle CPU costs that CPU, by how long it has
/// idled (see `CpuCosts::wake_ns` and `wake_deep_ns`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeCost {
    pub shallow_ns: Ns,
    pub deep_ns: Ns,
    pub deep_after_ns: Ns,
}

impl WakeCost {
    /// The same cost whatever the idle time.
    pub fn flat(ns: Ns) -> WakeCost {
        WakeCost {
            shallow_ns: ns,
            deep_ns: ns,
            deep_after_ns: 0,
        }
    }
    /// The cost for a CPU idle since `idle_since`, woken at `at`; 0 when it
    /// is still busy after `at`.
    #[inline]
    pub fn on_cpu_free_at(&self, idle_since: Ns, at: Ns) -> Ns {
        if idle_since > at {
            return 0;
        }
        let idle_for = at - idle_since;
        if self.deep_ns == self.shallow_ns || idle_for >= self.deep_after_ns {
            return self.deep_ns;
        }
        if idle_for == 0 {
            return self.shallow_ns;
        }
        let floor = self.shallow_ns.max(self.deep_ns / SHORT_IDLE_WAKE_DIVISOR);
        floor + (self.deep_ns - floor) * idle_for / self.deep_after_ns
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NamedSchedCost {
    pub name: String,
    #[serde(flatten)]
    pub cost: SchedCost,
}

// Model assumptions for a ~2.4 GHz x86 core (the CPU of the BFQ documentation's
// figures): a 4 KiB libaio read costs about 2.5 us of CPU in total on such a
// core without a scheduler (≈ 400K IOPS per core), split between fio and the
// syscall (sim/costs.rs) and these three block-layer parts.
fn d_submit() -> Ns {
    400
}
fn d_driver() -> Ns {
    200
}
fn d_complete() -> Ns {
    600
}
/// A contended spinlock and the scheduler's hot lines (lock word, FIFO and
/// tree heads, counters) move between cores: a few cache misses of ~100 ns.
fn d_handoff() -> Ns {
    400
}

impl Default for CpuCosts {
    fn default() -> Self {
        CpuCosts {
            submit_ns: d_submit(),
            driver_ns: d_driver(),
            complete_ns: d_complete(),
            lock_handoff_ns: d_handoff(),
            wake_ns: 0,
            wake_deep_ns: 0,
            wake_deep_after_ns: 0,
            sleep_ns: None,
            cost_spread: None,
            sched: Vec::new(),
            host_speed: None,
            hook_speed: None,
            cache_speed: None,
        }
    }
}

impl SchedCost {
    /// The same costs with `f` applied to each (a machine's CPU speed).
    pub fn scaled(self, f: impl Fn(Ns) -> Ns) -> SchedCost {
        SchedCost {
            insert_ns: f(self.insert_ns),
            dispatch_ns: f(self.dispatch_ns),
            complete_ns: f(self.complete_ns),
            merge_ns: f(self.merge_ns),
            locked: self.locked,
        }
    }
}

/// The range of every CPU cost, ns per call, wherever it is set (a
/// profile's `[cpu]` table or `--set cpu/NAME`): 0 to 1 ms. The figures
/// above are 0.1 to 2 us for a 2.4 GHz core, and `calibrate` fits
/// `driver_ns` up to 100 us for a CPU-bound device (a tmpfs loop); a
/// millisecond per step is a CPU hundreds of times slower than those. The
/// bound also keeps one step's overrun of a job's runtime below 1 ms, and
/// simulated clocks far from wrapping.
pub const MAX_CPU_COST_NS: Ns = 1_000_000;

/// The range of `[cpu] host_speed`: a CPU 20 times slower to 20 times
/// faster than the reference core (with `--cpu-speed` the product must
/// still lie in the machine's 0.01..100).
pub const HOST_SPEED_MIN: f64 = 0.05;
pub const HOST_SPEED_MAX: f64 = 20.0;

/// The range of `[cpu] hook_speed`: hooks 4 times slower to 4 times faster
/// than the host's path around them (a wider gap is a fit gone wrong).
pub const HOOK_SPEED_MIN: f64 = 0.25;
pub const HOOK_SPEED_MAX: f64 = 4.0;

/// The one place `cost_spread` is range-checked (a profile's or `--set`'s).
fn check_spread(v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(format!("{v} is out of range: expected 0..=1 (the coefficient of variation of every CPU cost; 0 = exact)"))
    }
}

/// The one place a CPU cost is range-checked.
fn check_cost(v: Ns) -> Result<(), String> {
    if v > MAX_CPU_COST_NS {
        return Err(format!(
            "{v} is out of range: expected 0..={MAX_CPU_COST_NS} ns"
        ));
    }
    Ok(())
}

impl CpuCosts {
    /// The same costs with `f` applied to each (a machine's CPU speed).
    pub fn scaled(&self, f: impl Fn(Ns) -> Ns) -> CpuCosts {
        CpuCosts {
            submit_ns: f(self.submit_ns),
            driver_ns: f(self.driver_ns),
            complete_ns: f(self.complete_ns),
            // Cache lines moving between cores: scheduler-side work, at the
            // hooks' speed as well.
            lock_handoff_ns: self.hook_ns(f(self.lock_handoff_ns)),
            // A latency of the host, not CPU work: not scaled.
            wake_ns: self.wake_ns,
            wake_deep_ns: self.wake_deep_ns,
            wake_deep_after_ns: self.wake_deep_after_ns,
            sleep_ns: self.sleep_ns.map(&f),
            // A ratio: the same on every machine.
            cost_spread: self.cost_spread,
            sched: self
                .sched
                .iter()
                .map(|s| NamedSchedCost {
                    name: s.name.clone(),
                    cost: s.cost.scaled(&f),
                })
                .collect(),
            host_speed: self.host_speed,
            hook_speed: self.hook_speed,
            cache_speed: self.cache_speed,
        }
    }

    /// The host's wake-up costs (`wake_ns`, `wake_deep_ns`, `wake_deep_after_ns`).
    pub fn wake(&self) -> WakeCost {
        WakeCost {
            shallow_ns: self.wake_ns,
            deep_ns: self.wake_deep_ns.max(self.wake_ns),
            deep_after_ns: self.wake_deep_after_ns,
        }
    }

    /// A scheduler's hook costs on this host: `cost` (already at the
    /// machine's CPU speed) divided by `hook_speed` when it is set.
    pub fn at_hook_speed(&self, cost: SchedCost) -> SchedCost {
        cost.scaled(|ns| self.hook_ns(ns))
    }

    /// Scheduler work of `ns` (at the machine's CPU speed) on this host:
    /// divided by `hook_speed` when it is set.
    pub fn hook_ns(&self, ns: Ns) -> Ns {
        match self.hook_speed {
            Some(h) if h != 1.0 => (ns as f64 / h).round() as Ns,
            _ => ns,
        }
    }

    /// Every cost within `MAX_CPU_COST_NS`; the error is (key as a
    /// profile's `[cpu]` table writes it, message).
    pub fn check(&self) -> Result<(), (String, String)> {
        for (k, v) in [
            ("submit_ns", self.submit_ns),
            ("driver_ns", self.driver_ns),
            ("complete_ns", self.complete_ns),
            ("lock_handoff_ns", self.lock_handoff_ns),
            ("wake_ns", self.wake_ns),
            ("wake_deep_ns", self.wake_deep_ns),
            ("wake_deep_after_ns", self.wake_deep_after_ns),
            ("sleep_ns", self.sleep_ns.unwrap_or(0)),
        ] {
            check_cost(v).map_err(|e| (format!("cpu.{k}"), e))?;
        }
        if let Some(h) = self.host_speed {
            if !(h.is_finite() && (HOST_SPEED_MIN..=HOST_SPEED_MAX).contains(&h)) {
                return Err((
                    "cpu.host_speed".into(),
                    format!("{h} is out of range: expected {HOST_SPEED_MIN}..={HOST_SPEED_MAX} (1 = the reference ~2.4 GHz core)"),
                ));
            }
        }
        if let Some(v) = self.cost_spread {
            check_spread(v).map_err(|e| ("cpu.cost_spread".to_string(), e))?;
        }
        if let Some(c) = self.cache_speed {
            if !(c.is_finite() && (HOST_SPEED_MIN..=HOST_SPEED_MAX).contains(&c)) {
                return Err((
                    "cpu.cache_speed".into(),
                    format!("{c} is out of range: expected {HOST_SPEED_MIN}..={HOST_SPEED_MAX} (1 = the reference ~2.4 GHz core)"),
                ));
            }
        }
        if let Some(h) = self.hook_speed {
            if !(h.is_finite() && (HOOK_SPEED_MIN..=HOOK_SPEED_MAX).contains(&h)) {
                return Err((
                    "cpu.hook_speed".into(),
                    format!("{h} is out of range: expected {HOOK_SPEED_MIN}..={HOOK_SPEED_MAX} (1 = hooks as fast as the rest of the host's path)"),
                ));
            }
        }
        for s in &self.sched {
            let c = &s.cost;
            for (k, v) in [
                ("insert_ns", c.insert_ns),
                ("dispatch_ns", c.dispatch_ns),
                ("complete_ns", c.complete_ns),
                ("merge_ns", c.merge_ns),
            ] {
                check_cost(v).map_err(|e| (format!("cpu.sched[{}].{k}", s.name), e))?;
            }
        }
        Ok(())
    }

    /// Hook costs for scheduler `name`: the profile's or `--set` entry, else
    /// `builtin` (the registry's figure).
    pub fn sched_cost(&self, name: &str, builtin: SchedCost) -> SchedCost {
        self.sched
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.cost)
            .unwrap_or(builtin)
    }

    /// `--set cpu/NAME=VALUE` for a cost of the path below the scheduler:
    /// `submit_ns`, `driver_ns`, `complete_ns`, `lock_handoff_ns`.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        if name == "cost_spread" {
            let v: f64 = value.trim().parse().map_err(|_| {
                format!("cpu/cost_spread: '{value}' is not a number (the coefficient of variation, 0..=1)")
            })?;
            check_spread(v).map_err(|e| format!("cpu/cost_spread: {e}"))?;
            self.cost_spread = Some(v);
            return Ok(());
        }
        let v = parse_ns(name, value)?;
        match name {
            "submit_ns" => self.submit_ns = v,
            "driver_ns" => self.driver_ns = v,
            "complete_ns" => self.complete_ns = v,
            "lock_handoff_ns" => self.lock_handoff_ns = v,
            "wake_ns" => self.wake_ns = v,
            "wake_deep_ns" => self.wake_deep_ns = v,
            "wake_deep_after_ns" => self.wake_deep_after_ns = v,
            "sleep_ns" => self.sleep_ns = Some(v),
            other => {
                return Err(format!(
                    "cpu/{other}: unknown cost (submit_ns, driver_ns, complete_ns, lock_handoff_ns, wake_ns, wake_deep_ns, wake_deep_after_ns, sleep_ns, cost_spread, or SCHEDULER.insert_ns|dispatch_ns|complete_ns|merge_ns)"
                ))
            }
        }
        Ok(())
    }

    /// `--set cpu/SCHED.FIELD=VALUE`: one hook cost of scheduler `sched`,
    /// starting from `builtin` when the scheduler has no entry yet.
    pub fn set_sched(
        &mut self,
        sched: &str,
        field: &str,
        value: &str,
        builtin: SchedCost,
    ) -> Result<(), String> {
        let v = parse_ns(&format!("{sched}.{field}"), value)?;
        let mut cost = self.sched_cost(sched, builtin);
        match field {
            "insert_ns" => cost.insert_ns = v,
            "dispatch_ns" => cost.dispatch_ns = v,
            "complete_ns" => cost.complete_ns = v,
            "merge_ns" => cost.merge_ns = v,
            _ => {
                return Err(format!(
                    "cpu/{sched}.{field}: unknown hook '{field}' (insert_ns, dispatch_ns, complete_ns, merge_ns)"
                ))
            }
        }
        self.sched.retain(|s| s.name != sched);
        self.sched.push(NamedSchedCost {
            name: sched.to_string(),
            cost,
        });
        Ok(())
    }
}

fn parse_ns(name: &str, value: &str) -> Result<Ns, String> {
    let v: Ns = value
        .trim()
        .parse()
        .map_err(|_| format!("cpu/{name}: expected nanoseconds (an integer), got '{value}'"))?;
    check_cost(v).map_err(|e| format!("cpu/{name}: {e}"))?;
    Ok(v)
}

/// CPUs that used the lock within this window count as contending (model assumption).
const CONTENTION_WINDOW: Ns = 5_000;

/// A lock a scheduler hook runs under, for schedulers without one
/// queue-wide lock (see `Elevator::hook_lock`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookLock {
    /// The queue-wide scheduler lock (what `SchedCost::locked` means).
    Queue,
    /// A lock of hardware queue N (kyber's `khd->lock`).
    Hctx(u16),
    /// A lock of the software queue of CPU N (kyber's `kcq->lock`).
    Ctx(u16),
}

impl HookLock {
    /// Index into the CPU state's locks (the queue lock is 0).
    fn index(self) -> usize {
        match self {
            HookLock::Queue => 0,
            HookLock::Hctx(h) => 1 + 2 * h as usize,
            HookLock::Ctx(c) => 2 + 2 * c as usize,
        }
    }
}

/// One lock: when it is free, who held it last, when each CPU last
/// released it (who is contending), and its last few holds.
///
/// Why the holds: work is charged in event order, but a CPU's clock may run
/// ahead of the event clock (it was busy), so two CPUs can ask for the lock
/// out of time order. A spinlock is granted in time order: a CPU that asks at
/// 100 µs gets a lock that another CPU, processed first, takes only at
/// 130 µs, if its hold ends before then. Granting in processing order made
/// the earlier CPU spin until 130 µs — on a loop device, where the worker's
/// CPU runs completions ahead of the submitter's, BFQ's locked completion
/// hook cost 17% of the IOPS even with every hook cost set to zero. So an
/// earlier request fits into a gap between the holds when it can (`holds`:
/// the last [`HOLDS_KEPT`], disjoint and in time order).
///
/// The CPUs that released it within the contention window are kept in a
/// list ordered by release time (`recent`, linked through `prev`/`next`),
/// so the number of contenders is known without a scan over every CPU:
/// release times only grow (each release is at or after `free`, which
/// never goes back), and so does the time a hand-off is asked at, so a CPU
/// that fell out of the window stays out until it takes the lock again.
#[derive(Clone, Debug)]
struct LockState {
    free: Ns,
    owner: u16,
    last: Vec<Ns>,
    prev: Vec<u16>,
    next: Vec<u16>,
    in_recent: Vec<bool>,
    head: u16,
    tail: u16,
    recent: u16,
    /// Holds that may still be ahead of a CPU's clock.
    holds: Holds,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Hold {
    start: Ns,
    end: Ns,
    cpu: u16,
}

/// At most this many holds are remembered, the oldest forgotten first
/// (nothing is then placed before its end). A CPU rarely has more than a
/// hold or two ahead of the event clock.
const HOLDS_KEPT: usize = 8;

/// One lock's recent holds, disjoint and in time order, in a fixed ring
/// (this runs for every locked hook: appending is a store and two adds).
#[derive(Clone, Debug, Default)]
struct Holds {
    h: [Hold; HOLDS_KEPT],
    /// Index of the oldest remembered hold, and how many there are.
    head: usize,
    len: usize,
    /// The latest hold forgotten: nothing goes before its end, and its CPU
    /// is the holder before the first remembered hold (for the hand-off).
    forgotten_end: Ns,
    forgotten_cpu: u16,
    /// Where the run of back-to-back holds that ends at the lock's `free`
    /// began: a request that cannot end by then finds no gap (the quick
    /// answer under contention, where waiters take the lock as it frees).
    busy_from: Ns,
}

impl Holds {
    fn new() -> Holds {
        Holds {
            forgotten_cpu: NO_CPU,
            ..Holds::default()
        }
    }

    /// The `i`-th oldest remembered hold.
    #[inline]
    fn get(&self, i: usize) -> Hold {
        self.h[(self.head + i) % HOLDS_KEPT]
    }

    /// Append `hold`, the latest so far (the lock was free from
    /// `prev_free`), forgetting the oldest when full.
    #[inline]
    fn push(&mut self, hold: Hold, prev_free: Ns) {
        if hold.start > prev_free {
            self.busy_from = hold.start;
        }
        if hold.end <= hold.start {
            return;
        }
        let slot = (self.head + self.len) % HOLDS_KEPT;
        if self.len == HOLDS_KEPT {
            // Full: the new hold takes the oldest's slot. Holds are disjoint
            // and in time order, so the oldest ends after every forgotten one.
            let old = self.h[slot];
            self.forgotten_end = old.end;
            self.forgotten_cpu = old.cpu;
            self.head = (self.head + 1) % HOLDS_KEPT;
        } else {
            self.len += 1;
        }
        self.h[slot] = hold;
    }

    /// Place `hold` before the `at`-th oldest (a gap found by [`Holds::gap`]).
    #[cold]
    fn insert(&mut self, at: usize, hold: Hold) {
        if hold.end <= hold.start {
            return;
        }
        let mut all = [Hold::default(); HOLDS_KEPT + 1];
        for (i, slot) in all.iter_mut().enumerate().take(self.len) {
            *slot = self.get(i);
        }
        all.copy_within(at..self.len, at + 1);
        all[at] = hold;
        let mut n = self.len + 1;
        let mut first = 0;
        if n > HOLDS_KEPT {
            // The oldest goes (the new hold itself when it is the oldest).
            self.forgotten_end = self.forgotten_end.max(all[0].end);
            self.forgotten_cpu = all[0].cpu;
            first = 1;
            n -= 1;
        }
        self.h[..n].copy_from_slice(&all[first..first + n]);
        self.head = 0;
        self.len = n;
    }

    /// The earliest gap at or after `t`, ending by `free`, where CPU `cur`
    /// can hold the lock for `ns`, a hand-off first when the hold before the
    /// gap was another CPU's: (its index, start, hand-off). None when no gap
    /// is long enough (the request waits until `free`).
    #[cold]
    fn gap(&self, cur: u16, t: Ns, ns: Ns, handoff: Ns, free: Ns) -> Option<(usize, Ns, Ns)> {
        let mut start = t.max(self.forgotten_end);
        let mut before = self.forgotten_cpu;
        // Holds that end by `start` leave no gap after it; the first one that
        // does not is where the search begins (holds are in time order).
        let mut i = 0;
        while i < self.len {
            let h = self.get(i);
            if h.end > start {
                break;
            }
            before = h.cpu;
            i += 1;
        }
        let extra_after = |before: u16| {
            if before != cur && before != NO_CPU {
                handoff
            } else {
                0
            }
        };
        while i < self.len {
            let h = self.get(i);
            let extra = extra_after(before);
            if start.saturating_add(extra).saturating_add(ns) <= h.start {
                return Some((i, start, extra));
            }
            start = start.max(h.end);
            before = h.cpu;
            i += 1;
        }
        // After the last remembered hold only holds of no length (free
        // ends one): nothing to wait for if it ends by then.
        let extra = extra_after(before);
        (start.saturating_add(extra).saturating_add(ns) <= free).then_some((self.len, start, extra))
    }
}

const NO_CPU: u16 = u16::MAX;

impl LockState {
    fn new(nr_cpus: usize) -> LockState {
        LockState {
            free: 0,
            owner: u16::MAX,
            last: vec![Ns::MAX; nr_cpus],
            prev: vec![NO_CPU; nr_cpus],
            next: vec![NO_CPU; nr_cpus],
            in_recent: vec![false; nr_cpus],
            head: NO_CPU,
            tail: NO_CPU,
            recent: 0,
            holds: Holds::new(),
        }
    }

    fn unlink(&mut self, c: u16) {
        let (p, n) = (self.prev[c as usize], self.next[c as usize]);
        if p == NO_CPU {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NO_CPU {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.in_recent[c as usize] = false;
        self.recent -= 1;
    }

    /// CPU `c` released the lock at `t` (the latest release so far).
    fn released(&mut self, c: u16, t: Ns) {
        let Some(slot) = self.last.get_mut(c as usize) else {
            return;
        };
        *slot = t;
        if self.tail == c && t != Ns::MAX {
            // Already the latest user (a CPU taking the lock again).
            return;
        }
        if self.in_recent[c as usize] {
            self.unlink(c);
        }
        if t == Ns::MAX {
            // Reads as "never released" (the scan this list replaces).
            return;
        }
        self.prev[c as usize] = self.tail;
        self.next[c as usize] = NO_CPU;
        if self.tail == NO_CPU {
            self.head = c;
        } else {
            self.next[self.tail as usize] = c;
        }
        self.tail = c;
        self.in_recent[c as usize] = true;
        self.recent += 1;
    }

    /// CPUs other than `cur` that released the lock at or after
    /// `start - CONTENTION_WINDOW`; `start` never decreases between calls.
    fn contenders(&mut self, cur: u16, start: Ns) -> Ns {
        while self.head != NO_CPU && self.last[self.head as usize] + CONTENTION_WINDOW < start {
            self.unlink(self.head);
        }
        let me = self.in_recent.get(cur as usize).copied().unwrap_or(false);
        Ns::from(self.recent) - Ns::from(me)
    }
}

/// The CPUs' clocks and the locks.
#[derive(Clone, Debug)]
pub struct CpuState {
    free: Vec<Ns>,
    /// The queue lock first, then the finer locks as they are first used
    /// (bounded by the number of CPUs and hardware queues).
    locks: Vec<LockState>,
    /// The CPU that is doing the current piece of work, and how far it got.
    cur: u16,
    cur_t: Ns,
    /// When the current piece of work started (for the busy total).
    cur_begin: Ns,
    /// Total CPU time charged per CPU (for utilisation).
    pub busy_ns: Vec<Ns>,
    /// Of that, the host's wake-ups of idle CPUs (`[cpu] wake_ns`): time a
    /// woken task waits for its CPU to come out of idle, which the kernel
    /// counts as the idle task's (/proc/stat idle), not as busy.
    pub idle_wake_ns: Ns,
    /// How many of those wake-ups there were: the CPUs' exits from idle.
    pub idle_wakes: u64,
    /// Runnable tasks waiting for each CPU, as the task layer's run queues
    /// last said (`set_tasks_waiting`): what a kernel thread woken on that
    /// CPU queues behind.
    tasks_waiting: Vec<u32>,
    /// Per CPU: a task holds it within its protected slice, as the task
    /// layer's run queues last said (`set_held`); a kernel thread woken
    /// there waits for its turn.
    held: Vec<bool>,
    /// The device's kernel worker: where it runs its list (tasks asking for
    /// that CPU wait), whether it waits for a held CPU, the CPU whose turn
    /// the task layer gave it, and the CPU it left (whose waiting tasks the
    /// task layer wakes).
    pub worker: WorkerSeat,
    /// The slice a task keeps its CPU for (`Era::slice_ns`).
    slice_ns: Ns,
    /// `[cpu] cost_spread`: each piece of work drawn around its cost (None: exact).
    spread: Option<Box<CostSpread>>,
}

/// The seeded draw behind `[cpu] cost_spread` (see `CpuCosts::cost_spread`):
/// one factor per piece of work (`CpuState::begin`), applied to every
/// charge in it, so a call is slow or fast as a whole — a cold cache or a
/// vCPU the host held back slows all of it — and a piece's cost varies by
/// `cv` however many charges make it up. Boxed in `CpuState` so that exact
/// runs carry one pointer, not the tables.
#[derive(Clone, Debug)]
struct CostSpread {
    cv: f64,
    rng: Xoshiro256pp,
    exp: ExpZiggurat,
    /// The current piece's factor: (1 − cv) + cv × E, E ~ Exp(1) — mean 1,
    /// standard deviation cv, never below 1 − cv.
    factor: f64,
}

impl CostSpread {
    fn next_piece(&mut self) {
        self.factor = (1.0 - self.cv) + self.cv * self.exp.sample(&mut self.rng);
    }
    fn apply(&self, ns: Ns) -> Ns {
        (ns as f64 * self.factor).round() as Ns
    }
}

/// Where the device's kernel worker sits among the tasks (see `CpuState`).
#[derive(Clone, Debug, Default)]
pub struct WorkerSeat {
    pub on: Option<u16>,
    pub parked: bool,
    /// The CPU the parked worker waits for (None: any).
    pub park_on: Option<u16>,
    pub granted: Option<u16>,
    pub left: Vec<u16>,
    /// CPUs where the worker ran a command while tasks waited for them:
    /// the task that had the CPU was switched out for it, and the next turn
    /// there goes by virtual runtime (the task layer's `kernel_thread_took`).
    pub took: Vec<u16>,
}

impl CpuState {
    /// `nr_cpus` CPUs whose tasks keep a CPU for `slice_ns` (`Era::slice_ns`).
    pub fn new(nr_cpus: usize, slice_ns: Ns) -> CpuState {
        CpuState {
            slice_ns,
            free: vec![0; nr_cpus],
            locks: vec![LockState::new(nr_cpus)],
            cur: 0,
            cur_t: 0,
            cur_begin: 0,
            busy_ns: vec![0; nr_cpus],
            idle_wake_ns: 0,
            idle_wakes: 0,
            tasks_waiting: vec![0; nr_cpus],
            held: vec![false; nr_cpus],
            worker: WorkerSeat::default(),
            spread: None,
        }
    }
    /// Vary every cost charged from now on by the coefficient of variation
    /// `cv` (`[cpu] cost_spread`), drawn from a generator seeded with
    /// `seed`; 0 keeps them exact.
    pub fn vary_costs(&mut self, cv: f64, seed: u64) {
        self.spread = (cv > 0.0).then(|| {
            Box::new(CostSpread {
                cv,
                rng: Xoshiro256pp::seed_from_u64(seed),
                exp: ExpZiggurat::new(),
                factor: 1.0,
            })
        });
    }
    /// `ns` as this piece of work costs it: drawn when costs vary.
    #[inline]
    fn varied(&self, ns: Ns) -> Ns {
        match &self.spread {
            None => ns,
            Some(s) => s.apply(ns),
        }
    }
    /// Whether a task holds `cpu` within its protected slice.
    pub fn held(&self, cpu: u16) -> bool {
        self.held.get(cpu as usize).copied().unwrap_or(false)
    }
    /// The task layer says whether a task holds `cpu`.
    pub fn set_held(&mut self, cpu: u16, held: bool) {
        if let Some(h) = self.held.get_mut(cpu as usize) {
            *h = held;
        }
    }
    /// A wake-up of an idle CPU that keeps it busy `ns`: counted apart
    /// within the busy time, since the kernel counts that time as idle.
    pub fn count_idle_wake(&mut self, ns: Ns) {
        self.idle_wake_ns += ns;
        self.idle_wakes += 1;
    }

    pub fn nr_cpus(&self) -> usize {
        self.free.len()
    }
    /// The slice a task (or kernel thread) keeps its CPU for.
    pub fn slice_ns(&self) -> Ns {
        self.slice_ns
    }
    /// How many runnable tasks wait for `cpu`.
    pub fn tasks_waiting(&self, cpu: u16) -> u32 {
        self.tasks_waiting.get(cpu as usize).copied().unwrap_or(0)
    }
    /// The task layer says `n` runnable tasks wait for `cpu`.
    pub fn set_tasks_waiting(&mut self, cpu: u16, n: u32) {
        if let Some(w) = self.tasks_waiting.get_mut(cpu as usize) {
            *w = n;
        }
    }
    /// When `cpu` can start new work.
    pub fn free_at(&self, cpu: u16) -> Ns {
        self.free[cpu as usize]
    }
    /// Start work on `cpu` at event time `now` (it waits for the CPU).
    pub fn begin(&mut self, cpu: u16, now: Ns) -> Ns {
        self.cur = cpu;
        if let Some(s) = &mut self.spread {
            s.next_piece();
        }
        self.cur_t = now.max(self.free[cpu as usize]);
        self.cur_begin = self.cur_t;
        self.cur_t
    }
    /// Charge `ns` of plain CPU work (varied when costs vary).
    #[inline]
    pub fn charge(&mut self, ns: Ns) {
        let ns = self.varied(ns);
        self.charge_exact(ns);
    }
    /// Charge exactly `ns`: host time already drawn or never varied.
    #[inline]
    pub fn charge_exact(&mut self, ns: Ns) {
        // Saturating: a cost added to a time never wraps around to the past.
        self.cur_t = self.cur_t.saturating_add(ns);
    }
    /// Charge `ns` of work under the queue lock (spinning while another CPU holds it).
    ///
    /// Taking the lock from another CPU costs `handoff` (the lock word and the
    /// scheduler's hot data move between caches); the more other CPUs used the
    /// lock recently, the more the lines bounce: +1/4 hand-off per extra one.
    #[inline]
    pub fn locked(&mut self, ns: Ns, handoff: Ns) {
        self.locked_at(0, ns, handoff);
    }

    /// Charge `ns` of work under `lock`, as [`CpuState::locked`] does for
    /// the queue lock.
    #[inline]
    pub fn locked_on(&mut self, lock: HookLock, ns: Ns, handoff: Ns) {
        let i = lock.index();
        if i >= self.locks.len() {
            self.add_locks(i);
        }
        self.locked_at(i, ns, handoff);
    }

    #[cold]
    fn add_locks(&mut self, upto: usize) {
        let n = self.free.len();
        self.locks.resize_with(upto + 1, || LockState::new(n));
    }

    #[inline(always)]
    fn locked_at(&mut self, i: usize, ns: Ns, handoff: Ns) {
        let ns = self.varied(ns);
        let cur = self.cur;
        let l = &self.locks[i];
        if self.cur_t < l.free
            && self.cur_t.saturating_add(ns) <= l.holds.busy_from
            && self.took_gap(i, ns, handoff)
        {
            return;
        }
        let l = &mut self.locks[i];
        let prev_free = l.free;
        let start = self.cur_t.max(prev_free);
        let extra = if l.owner == cur || l.owner == u16::MAX {
            0
        } else if l.last.len() <= 2 {
            // At most one other CPU: a plain hand-off.
            handoff
        } else {
            self.contended_handoff(i, start, handoff)
        };
        let end = start.saturating_add(extra).saturating_add(ns);
        self.cur_t = end;
        let l = &mut self.locks[i];
        l.free = end;
        l.owner = cur;
        l.released(cur, end);
        l.holds.push(
            Hold {
                start,
                end,
                cpu: cur,
            },
            prev_free,
        );
    }

    /// Take lock `i` in a gap before a later CPU's hold, when the current
    /// CPU's clock is behind it and the work fits (kept out of line: the
    /// common path is the append above).
    #[cold]
    #[inline(never)]
    fn took_gap(&mut self, i: usize, ns: Ns, handoff: Ns) -> bool {
        let cur = self.cur;
        let l = &mut self.locks[i];
        let Some((at, start, extra)) = l.holds.gap(cur, self.cur_t, ns, handoff, l.free) else {
            return false;
        };
        // Taken and released before a later hold: `free`, the owner and the
        // contenders (all about the latest release) stay.
        let end = start + extra + ns;
        l.holds.insert(
            at,
            Hold {
                start,
                end,
                cpu: cur,
            },
        );
        self.cur_t = end;
        true
    }

    #[cold]
    fn contended_handoff(&mut self, i: usize, start: Ns, handoff: Ns) -> Ns {
        let others = self.locks[i].contenders(self.cur, start);
        handoff + handoff * others.saturating_sub(1) / 4
    }
    /// The CPU doing the current piece of work.
    pub fn current(&self) -> u16 {
        self.cur
    }
    /// The current CPU's time so far.
    pub fn now(&self) -> Ns {
        self.cur_t
    }
    /// Finish the current piece of work; returns when it ended.
    pub fn end(&mut self) -> Ns {
        let c = self.cur as usize;
        self.free[c] = self.free[c].max(self.cur_t);
        self.busy_ns[c] += self.cur_t - self.cur_begin;
        self.cur_begin = self.cur_t;
        self.cur_t
    }
}

#[cfg(test)]
mod tests {
    /// Any slice: these tests never reach it.
    const SLICE: Ns = 1_400_000;
    use super::*;

    #[test]
    fn wake_cost_deepens_with_the_idle_time() {
        let w = WakeCost {
            shallow_ns: 20_000,
            deep_ns: 40_000,
            deep_after_ns: 30_000,
        };
        // Busy after the wake-up: nothing; idle since that instant: shallow.
        assert_eq!(w.on_cpu_free_at(1_001, 1_000), 0);
        assert_eq!(w.on_cpu_free_at(1_000, 1_000), 20_000);
        assert_eq!(w.on_cpu_free_at(1_000, 16_000), 30_000, "half-way");
        // Idle at all: half the deep cost at least.
        let w = WakeCost {
            shallow_ns: 5_000,
            ..w
        };
        assert_eq!(w.on_cpu_free_at(1_000, 1_000), 5_000, "same CPU");
        assert_eq!(w.on_cpu_free_at(1_000, 1_001), 20_000);
        assert_eq!(w.on_cpu_free_at(1_000, 16_000), 30_000, "half-way");
        assert_eq!(w.on_cpu_free_at(1_000, 31_000), 40_000);
        assert_eq!(w.on_cpu_free_at(0, 1_000_000), 40_000);
        let c = CpuCosts {
            wake_ns: 5_000,
            ..CpuCosts::default()
        };
        assert_eq!(c.wake(), WakeCost::flat(5_000), "no deep cost: flat");
        assert_eq!(c.wake().on_cpu_free_at(0, 1_000_000), 5_000);
    }

    #[test]
    fn lock_serialises_across_cpus_with_handoff() {
        let mut s = CpuState::new(2, SLICE);
        s.begin(0, 0);
        s.locked(100, 50);
        assert_eq!(s.end(), 100);
        // CPU 1 wants the lock at 10: waits until 100, pays the hand-off.
        s.begin(1, 10);
        s.locked(100, 50);
        assert_eq!(s.end(), 250);
        // CPU 1 again: no hand-off.
        s.begin(1, 250);
        s.locked(100, 50);
        assert_eq!(s.end(), 350);
    }

    #[test]
    fn finer_locks_serialise_only_their_users() {
        let mut s = CpuState::new(2, SLICE);
        s.begin(0, 0);
        s.locked_on(HookLock::Ctx(0), 100, 50);
        assert_eq!(s.end(), 100);
        // CPU 1 on its own software queue's lock: no wait, no hand-off.
        s.begin(1, 10);
        s.locked_on(HookLock::Ctx(1), 100, 50);
        assert_eq!(s.end(), 110);
        // CPU 1 on CPU 0's lock (a dispatch flushing it): waits, hands off.
        s.begin(1, 110);
        s.locked_on(HookLock::Ctx(0), 0, 50);
        assert_eq!(s.end(), 160);
        // The queue lock is separate from both.
        s.begin(0, 160);
        s.locked_on(HookLock::Queue, 10, 50);
        assert_eq!(s.end(), 170);
        s.begin(0, 170);
        s.locked_on(HookLock::Ctx(0), 0, 50);
        assert_eq!(s.end(), 220, "CPU 1 held it last");
    }

    /// The next value of a 64-bit linear congruential sequence (Knuth's
    /// MMIX constants): a cheap, fixed pseudo-random mix for these tests.
    fn lcg(x: &mut u64) -> u64 {
        *x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *x
    }

    /// The contender list gives the count a scan over every CPU's last
    /// release gives, over a pseudo-random mix of CPUs, gaps and costs.
    #[test]
    fn contenders_match_a_scan() {
        let n = 8;
        let mut s = CpuState::new(n, SLICE);
        let mut last = vec![Ns::MAX; n];
        let mut seed: u64 = 12345;
        let mut now: Ns = 0;
        let (mut checked, mut gaps) = (0, 0);
        for _ in 0..20_000 {
            let x = lcg(&mut seed);
            let cpu = ((x >> 33) % n as u64) as u16;
            now += (x >> 40) % 4_000;
            let ns = (x >> 20) % 3_000;
            s.begin(cpu, now);
            let free = s.locks[0].free;
            let start = s.now().max(free);
            let contended = s.locks[0].owner != cpu && s.locks[0].owner != u16::MAX;
            let scan = last
                .iter()
                .enumerate()
                .filter(|&(c, &t)| {
                    c != cpu as usize && t != Ns::MAX && t + CONTENTION_WINDOW >= start
                })
                .count() as Ns;
            let want = if contended {
                checked += 1;
                40 + 40 * scan.saturating_sub(1) / 4
            } else {
                0
            };
            s.locked(ns, 40);
            let end = s.end();
            if end < free {
                // Fitted into a gap before a later hold: the latest
                // release, and so the contenders, did not change.
                gaps += 1;
                continue;
            }
            assert_eq!(end, start + want + ns);
            last[cpu as usize] = end;
        }
        assert!(checked > 10_000, "{checked}");
        // Back-to-back holds leave few gaps in this mix.
        assert!(gaps < 1_000, "{gaps}");
    }

    /// A CPU whose clock is behind a hold granted first (its work was
    /// processed later) takes the lock in the gap before that hold, as a
    /// spinlock is granted in time order; without a gap it waits.
    #[test]
    fn an_earlier_request_fits_before_a_later_hold() {
        let mut s = CpuState::new(3, SLICE);
        // CPU 0 is busy until 1000, then holds the lock 1000..1100.
        s.begin(0, 0);
        s.charge(1_000);
        s.locked(100, 50);
        assert_eq!(s.end(), 1_100);
        // CPU 1, processed next but at 200: the lock is free then.
        s.begin(1, 200);
        s.locked(100, 50);
        assert_eq!(s.end(), 300, "no spinning until 1100");
        // CPU 2 at 250: CPU 1 holds it until 300, a hand-off, then 100 —
        // 450, still before CPU 0's hold.
        s.begin(2, 250);
        s.locked(100, 50);
        assert_eq!(s.end(), 450);
        // CPU 1 at 900: 900 + 50 + 100 does not fit before 1000, so it
        // waits for the latest release (CPU 0's) and hands off.
        s.begin(1, 900);
        s.locked(100, 50);
        assert_eq!(s.end(), 1_250);
        // Full: the oldest goes, and nothing is placed before a forgotten
        // hold's end.
        for k in 0..HOLDS_KEPT as Ns {
            s.begin(0, 2_000 + 100 * k);
            s.charge(1_000);
            s.locked(10, 50);
            s.end();
        }
        let holds = &s.locks[0].holds;
        assert_eq!(holds.len, HOLDS_KEPT);
        assert!(holds.forgotten_end >= 1_250, "{}", holds.forgotten_end);
        let kept: Vec<Hold> = (0..holds.len).map(|i| holds.get(i)).collect();
        assert!(kept.windows(2).all(|w| w[0].end <= w[1].start));
    }

    /// Mutual exclusion, whatever the order CPUs ask in: over a
    /// pseudo-random mix of CPUs whose clocks run ahead of the event clock,
    /// no two holds of the lock overlap, and gaps are used.
    #[test]
    fn holds_never_overlap() {
        let n = 4;
        let mut s = CpuState::new(n, SLICE);
        let mut seed: u64 = 99;
        let mut now: Ns = 0;
        let mut held: Vec<(Ns, Ns)> = Vec::new();
        let mut early = 0;
        for _ in 0..20_000 {
            let x = lcg(&mut seed);
            let cpu = ((x >> 33) % n as u64) as u16;
            now += (x >> 40) % 3_000;
            s.begin(cpu, now);
            s.charge((x >> 10) % 4_000);
            let ns = 1 + (x >> 20) % 500;
            let free = s.locks[0].free;
            s.locked(ns, 0);
            let end = s.end();
            early += usize::from(end < free);
            held.push((end - ns, end));
        }
        held.sort_unstable();
        assert!(held.windows(2).all(|w| w[0].1 <= w[1].0), "overlap");
        assert!(early > 1_000, "{early}");
    }

    #[test]
    fn cpu_clock_queues_work() {
        let mut s = CpuState::new(1, SLICE);
        s.begin(0, 0);
        s.charge(500);
        s.end();
        assert_eq!(s.begin(0, 100), 500);
    }

    /// `[cpu] cost_spread`: one draw per piece of work, mean kept, standard
    /// deviation cv × the cost, never below (1 − cv) of it; the same seed
    /// gives the same pieces; wake-ups (`charge_exact`) stay exact.
    #[test]
    fn cost_spread_varies_pieces_around_their_cost() {
        let pieces = |cv: f64, seed: u64| -> Vec<Ns> {
            let mut s = CpuState::new(1, SLICE);
            s.vary_costs(cv, seed);
            let mut t = 0;
            (0..20_000)
                .map(|_| {
                    s.begin(0, t);
                    s.charge(600);
                    s.charge(400);
                    s.charge_exact(0);
                    let end = s.end();
                    let took = end - t;
                    t = end;
                    took
                })
                .collect()
        };
        let stats = |v: &[Ns]| {
            let n = v.len() as f64;
            let mean = v.iter().sum::<Ns>() as f64 / n;
            let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
            (mean, var.sqrt())
        };
        let v = pieces(0.5, 7);
        let (mean, sd) = stats(&v);
        assert!((mean / 1000.0 - 1.0).abs() < 0.02, "mean {mean}");
        assert!((sd / 1000.0 - 0.5).abs() < 0.03, "sd {sd}");
        assert!(
            v.iter().all(|&x| x >= 500),
            "a piece under (1 - cv) of its cost"
        );
        assert_eq!(v, pieces(0.5, 7), "seeded");
        assert_ne!(v, pieces(0.5, 8));
        // One factor for the whole piece: its two charges move together,
        // so a piece varies by cv, not by cv over the root of its charges.
        assert!(sd > 0.45 * 1000.0);
        // 0 is exact, and so is host time charged exactly.
        assert!(pieces(0.0, 7).iter().all(|&x| x == 1000));
        let mut s = CpuState::new(1, SLICE);
        s.vary_costs(1.0, 3);
        s.begin(0, 0);
        s.charge_exact(12_345);
        assert_eq!(s.end(), 12_345);
    }

    #[test]
    fn set_costs_by_name() {
        let builtin = SchedCost {
            insert_ns: 250,
            dispatch_ns: 300,
            complete_ns: 150,
            merge_ns: 100,
            locked: true,
        };
        let mut c = CpuCosts::default();
        c.set_sched("mq-deadline", "insert_ns", "1000", builtin)
            .unwrap();
        assert_eq!(c.sched_cost("mq-deadline", builtin).insert_ns, 1000);
        assert_eq!(c.sched_cost("mq-deadline", builtin).dispatch_ns, 300);
        assert_eq!(c.sched_cost("kyber", builtin), builtin);
        c.set("submit_ns", "7").unwrap();
        assert_eq!(c.submit_ns, 7);
        assert_eq!(c.sleep_ns, None);
        c.set("sleep_ns", "4500").unwrap();
        assert_eq!(c.sleep_ns, Some(4500));
        // A CPU cost like the others: scaled with the machine's speed.
        assert_eq!(c.scaled(|ns| ns * 2).sleep_ns, Some(9000));
        assert!(c.set("sleep_ns", "1000001").is_err());
        // The spread is a ratio: not scaled, checked against 0..=1.
        c.set("cost_spread", "0.5").unwrap();
        assert_eq!(c.scaled(|ns| ns * 2).cost_spread, Some(0.5));
        let e = c.set("cost_spread", "1.5").unwrap_err();
        assert!(e.contains("cpu/cost_spread") && e.contains("0..=1"), "{e}");
        assert!(c.set("cost_spread", "half").is_err());
        assert_eq!(c.cost_spread, Some(0.5));
        c.cost_spread = Some(f64::NAN);
        assert_eq!(c.check().unwrap_err().0, "cpu.cost_spread");
        c.cost_spread = None;
        let e = c.set("bogus", "1").unwrap_err();
        assert!(e.contains("sleep_ns") && e.contains("cost_spread"), "{e}");
        assert!(c.set_sched("mq-deadline", "bogus", "1", builtin).is_err());
        assert!(c.set("submit_ns", "x").is_err());
        // One range for every cost, from the command line or a profile.
        assert!(c.set("submit_ns", "1000000").is_ok());
        let e = c.set("submit_ns", "1000001").unwrap_err();
        assert!(
            e.contains("cpu/submit_ns") && e.contains("0..=1000000 ns"),
            "{e}"
        );
        let e = c
            .set_sched(
                "mq-deadline",
                "dispatch_ns",
                "18446744073709550000",
                builtin,
            )
            .unwrap_err();
        assert!(e.contains("out of range"), "{e}");
        assert!(c.check().is_ok());
        c.sched[0].cost.merge_ns = MAX_CPU_COST_NS + 1;
        assert_eq!(c.check().unwrap_err().0, "cpu.sched[mq-deadline].merge_ns");
    }

    #[test]
    fn hook_speed_divides_every_hook_cost_and_is_range_checked() {
        let cost = SchedCost {
            insert_ns: 700,
            dispatch_ns: 300,
            complete_ns: 150,
            merge_ns: 101,
            locked: true,
        };
        let mut c = CpuCosts::default();
        assert_eq!(c.at_hook_speed(cost), cost, "unset: unchanged");
        c.hook_speed = Some(2.0);
        let fast = c.at_hook_speed(cost);
        assert_eq!(
            (
                fast.insert_ns,
                fast.dispatch_ns,
                fast.complete_ns,
                fast.merge_ns
            ),
            (350, 150, 75, 51)
        );
        assert!(fast.locked);
        assert_eq!(c.hook_ns(1001), 501, "a hook's extra work too");
        assert!(c.check().is_ok());
        for bad in [0.2, 4.5, f64::NAN] {
            c.hook_speed = Some(bad);
            assert_eq!(c.check().unwrap_err().0, "cpu.hook_speed", "{bad}");
        }
    }
}
