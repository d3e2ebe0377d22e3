//! The driver interface: what the block layer hands a device and what it
//! gets back (the kernel's `blk_mq_ops` and `struct queue_limits`). Device
//! models in `crate::device` implement [`Device`].

use super::cpu::{CpuState, WakeCost};
use super::request::{Op, RqId};
use crate::sim::time::Ns;
use serde::Deserialize;

/// Identity and queue limits every device has (what sysfs `queue/` shows).
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueLimits {
    /// Capacity in bytes.
    pub capacity: u64,
    /// Logical block size in bytes (`logical_block_size`).
    #[serde(default = "default_lbs")]
    pub logical_block_size: u32,
    /// Hardware queues the device offers (blk-mq uses min(this, CPUs)).
    pub nr_hw_queues: u32,
    /// Driver tags per hardware queue (`queue_depth`).
    pub queue_depth: u32,
    /// `rotational`.
    pub rotational: bool,
    /// `write_cache`: true = "write back" (volatile cache; flushes cost time).
    pub write_cache: bool,
    /// `fua`: the device honours FUA writes (BLK_FEAT_FUA, sysfs
    /// `queue/fua`). With a write cache, a FUA write then goes down with FUA;
    /// without FUA support the block layer follows it with a cache flush
    /// (block/blk-flush.c). Default false, as for a driver that does not
    /// advertise it.
    #[serde(default)]
    pub fua: bool,
    /// `max_hw_sectors_kb`.
    pub max_hw_sectors_kb: u32,
    /// `max_segments`.
    #[serde(default = "default_max_segments")]
    pub max_segments: u32,
    /// SCSI-style per-device budget: the scheduler is not asked for a request
    /// while the device has no free slot (`get_budget`), so requests stay
    /// mergeable in the scheduler.
    #[serde(default)]
    pub budget: bool,
    /// The device takes discards (TRIM): sysfs `discard_max_bytes` above 0.
    /// A discard to a queue without them fails (`blkdev_issue_discard`
    /// returns -EOPNOTSUPP, and fio's trim job stops with error 95). Default
    /// true, as for the SSD, NVMe and RAM models; SATA disks set false.
    #[serde(default = "default_discard", skip_serializing_if = "is_true")]
    pub discard: bool,
}

fn default_discard() -> bool {
    true
}
fn is_true(b: &bool) -> bool {
    *b
}

fn default_lbs() -> u32 {
    512
}
fn default_max_segments() -> u32 {
    // BLK_MAX_SEGMENTS (include/linux/blkdev.h)
    128
}

/// A command as the driver hands it to the device.
#[derive(Clone, Copy, Debug)]
pub struct DeviceCmd {
    pub id: RqId,
    pub op: Op,
    pub sector: u64,
    pub nr_sectors: u32,
    /// Hardware queue it was submitted on.
    pub hwq: u16,
    pub fua: bool,
}

impl DeviceCmd {
    pub fn bytes(&self) -> u64 {
        self.nr_sectors as u64 * 512
    }
}

/// What a device call produced: completions at given times and internal
/// wake-ups the device wants (`Device::wakeup(token)` at that time, or
/// `Device::cpu_work` for a token marked [`CPU_WORK`]).
#[derive(Default, Debug)]
pub struct DeviceOut {
    pub completions: Vec<(Ns, RqId)>,
    pub wakeups: Vec<(Ns, u64)>,
    /// Completions that run on a CPU other than the submitter's (the CPU
    /// that raised them): (request, CPU).
    pub complete_cpu: Vec<(RqId, u16)>,
    /// CPU time `submit` spent in the submitter's context (reference core).
    pub inline_cpu_ns: Ns,
    /// Softirq runs that complete several requests in one go
    /// ([`DeviceOut::softirq_run`]); their requests, in order, are in
    /// `softirq_ids`.
    pub softirq_runs: Vec<SoftirqRun>,
    pub softirq_ids: Vec<RqId>,
}

/// One run of a CPU's BLOCK_SOFTIRQ: `count` completions (the next ones
/// of `DeviceOut::softirq_ids`) at `at` on `cpu`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftirqRun {
    pub at: Ns,
    pub cpu: u16,
    pub count: u32,
}

/// Marks a wake-up token as CPU work (`Device::cpu_work`).
pub const CPU_WORK: u64 = 1 << 63;
/// The token of a device's kernel worker (one per device): its `cpu_work`
/// runs the worker's next command.
pub const WORKER_TOKEN: u64 = 0;
/// Marks a `Device` timer token as a softirq run the block layer queued
/// (the rest of the token is its slot); never passed to the device.
pub const SOFTIRQ_RUN: u64 = 1 << 62;

impl DeviceOut {
    /// Ask for `Device::cpu_work(token)` at `at`.
    pub fn cpu_wakeup(&mut self, at: Ns, token: u64) {
        self.wakeups.push((at, token | CPU_WORK));
    }
    /// Complete `id` at `at`, its completion work on `cpu`.
    pub fn complete_on(&mut self, at: Ns, id: RqId, cpu: u16) {
        self.completions.push((at, id));
        self.complete_cpu.push((id, cpu));
    }
    /// `cpu`'s softirq runs at `at` and completes `ids` one after another,
    /// all of them before a task they wake can act (blk_done_softirq walks
    /// its whole list). Plain `complete_on`s at one instant are separate
    /// events instead, and a woken task may act between two of them.
    pub fn softirq_run(&mut self, at: Ns, cpu: u16, ids: impl IntoIterator<Item = RqId>) {
        let before = self.softirq_ids.len();
        self.softirq_ids.extend(ids);
        let count = (self.softirq_ids.len() - before) as u32;
        if count > 0 {
            self.softirq_runs.push(SoftirqRun { at, cpu, count });
        }
    }
}

/// The machine's CPUs as a device model may use them: for driver work done
/// by kernel threads (a loop device's worker) that competes with the tasks
/// for the same CPUs.
pub struct DeviceCpus<'a> {
    state: &'a mut CpuState,
    /// CPU speed relative to the reference core.
    speed: f64,
    /// The host's wake-up cost on an idle CPU (`[cpu] wake_ns`, `wake_deep_ns`).
    wake: WakeCost,
    /// The CPU that last queued a command (it is running the submitter).
    submitter: u16,
}

impl<'a> DeviceCpus<'a> {
    pub fn new(
        state: &'a mut CpuState,
        speed: f64,
        wake: WakeCost,
        submitter: u16,
    ) -> DeviceCpus<'a> {
        DeviceCpus {
            state,
            speed,
            wake,
            submitter,
        }
    }
    /// Where a kernel thread woken by a submission runs: the CPU free first
    /// other than the submitter's, which is busy running the task that woke
    /// it (select_idle_sibling looks for an idle CPU); the submitter's only
    /// when there is no other.
    /// For a wake-up asked for at `at`, CPUs free by then tie (each is
    /// idle), and the lowest wins.
    pub fn wake_placement_from(&self, at: Ns) -> u16 {
        (0..self.nr() as u16)
            .filter(|&c| c != self.submitter || self.nr() == 1)
            .min_by_key(|&c| (self.free_at(c).max(at), c))
            .unwrap_or(0)
    }
    /// The CPU that last queued a command.
    pub fn submitter(&self) -> u16 {
        self.submitter
    }
    /// What waking a kernel thread on `cpu` at `now` costs that CPU: the
    /// host's wake-up when it is idle (deeper the longer it idled), nothing
    /// when it is running anyway.
    pub fn wake_cost(&self, cpu: u16, now: Ns) -> Ns {
        self.wake.on_cpu_free_at(self.free_at(cpu), now)
    }
    /// A wake-up of an idle CPU: `left_ns` of it, which `run_with` charges
    /// as fixed time (`CpuState::count_idle_wake`).
    pub fn count_idle_wake(&mut self, left_ns: Ns) {
        self.state.count_idle_wake(left_ns);
    }
    pub fn nr(&self) -> usize {
        self.state.nr_cpus()
    }
    /// The slice a task or kernel thread keeps its CPU for.
    pub fn slice_ns(&self) -> Ns {
        self.state.slice_ns()
    }
    /// Runnable tasks waiting for `cpu`: a kernel thread woken there (the
    /// fair scheduler places it among them) gets the CPU after them.
    pub fn tasks_waiting(&self, cpu: u16) -> u32 {
        self.state.tasks_waiting(cpu)
    }
    /// Whether a task holds `cpu` within its protected slice.
    pub fn held(&self, cpu: u16) -> bool {
        self.state.held(cpu)
    }
    /// The worker's seat among the tasks.
    pub fn worker(&mut self) -> &mut crate::block::cpu::WorkerSeat {
        &mut self.state.worker
    }
    /// When `cpu` can start new work.
    pub fn free_at(&self, cpu: u16) -> Ns {
        self.state.free_at(cpu)
    }
    /// The CPU that is free first; `prefer` wins a tie, then the lowest.
    pub fn earliest_free(&self, prefer: Option<u16>) -> u16 {
        let mut best = prefer.filter(|&c| (c as usize) < self.nr()).unwrap_or(0);
        for c in 0..self.nr() as u16 {
            if self.free_at(c) < self.free_at(best) {
                best = c;
            }
        }
        best
    }
    /// Run `ns` of work (reference core) on `cpu`, no earlier than `now`,
    /// after whatever the CPU is doing; returns when it ends.
    pub fn run(&mut self, cpu: u16, now: Ns, ns: Ns) -> Ns {
        self.run_with(cpu, now, 0, ns)
    }
    /// `run`, after `fixed` ns of host time that CPU speed does not scale
    /// (a wake-up).
    pub fn run_with(&mut self, cpu: u16, now: Ns, fixed: Ns, ns: Ns) -> Ns {
        let ns = if self.speed == 1.0 {
            ns
        } else {
            (ns as f64 / self.speed).round() as Ns
        };
        self.state.begin(cpu, now);
        // The wake-up is the host's latency, not CPU work: never varied.
        self.state.charge_exact(fixed);
        self.state.charge(ns);
        self.state.end()
    }
}

/// Outcome of `queue_rq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    Accepted,
    /// BLK_STS_RESOURCE: the device cannot take it now; the block layer puts it
    /// back on the dispatch list and retries later.
    Busy,
}

/// A storage device model.
pub trait Device {
    /// Queue limits and identity (capacity, hardware queues, depth, rotational...).
    fn limits(&self) -> &QueueLimits;
    /// Accept a command (`queue_rq`). Completions are reported through `out`,
    /// at once (calendar models) or later from `wakeup`/`completed`.
    fn submit(&mut self, now: Ns, cmd: &DeviceCmd, out: &mut DeviceOut) -> Submit;
    /// An internal wake-up the device asked for.
    fn wakeup(&mut self, _now: Ns, _token: u64, _out: &mut DeviceOut) {}
    /// The completion of `id` was delivered (a device that serves one command
    /// at a time starts its next one here).
    fn completed(&mut self, _now: Ns, _id: RqId, _out: &mut DeviceOut) {}
    /// CPU work the device asked for with `DeviceOut::cpu_wakeup` (token
    /// without the [`CPU_WORK`] mark): run it on `cpus`.
    fn cpu_work(&mut self, _now: Ns, _token: u64, _cpus: &mut DeviceCpus, _out: &mut DeviceOut) {}
    /// Volatile write cache setting (`write_cache` sysfs): true = "write back".
    /// Every model takes it (no default): the kernel lets any queue's flag be
    /// written, and a model that ignored it would be a silent default.
    fn set_write_cache(&mut self, write_back: bool);
}
