//! `loop`: the loop driver over a file whose I/O is CPU work — a backing
//! file on tmpfs (or one fully in the page cache), where "the device" is a
//! memcpy done by the machine's CPUs, competing with the fio jobs for them.
//!
//! What the kernel does (drivers/block/loop.c, v6.18, with `--direct-io=on`):
//! - `loop_queue_rq` starts the request and hands it to `loop_queue_work`:
//!   onto a worker's command list and `queue_work` on the device's
//!   WQ_UNBOUND workqueue. The try of the backing file's `read_iter` /
//!   `write_iter` with IOCB_NOWAIT in `queue_rq` itself ("loop: try to handle
//!   loop aio command via NOWAIT IO first", with "loop: add hint for handling
//!   aio via IOCB_NOWAIT") came with 6.19: the series was posted on
//!   2025-10-15, after 6.18-rc1, and merged with the hint patch, which adds
//!   the `loop/nr_blocking_writes` sysfs attribute. The lab's 6.18.44 has no
//!   such attribute (checked 2026-12-02), so every command there goes to the
//!   worker. What the model's `nowait_percent` completes on the submitting
//!   CPU stands for the worker itself running there (see that field).
//! - A worker (one per blkcg; this model has the root one) takes commands
//!   off its list one at a time (`loop_process_work`): a work item never runs
//!   on two CPUs at once, so one worker's commands are served in order on one
//!   CPU. A woken kworker runs where the CPU scheduler puts it: an idle CPU if
//!   there is one, else where it ran before.
//! - The backing file's call completes synchronously on tmpfs, and
//!   `lo_rw_aio_complete` → `blk_mq_complete_request`: with one hardware
//!   queue it raises BLOCK_SOFTIRQ on the CPU that finished the command
//!   (`blk_mq_complete_request_remote`, block/blk-mq.c), so the completion
//!   work, the scheduler's completion hooks and the queue restart run on the
//!   worker's CPU, not the submitter's.
//! - Raised from process context, the softirq wakes that CPU's ksoftirqd, a
//!   task of the fair scheduler: alone with the worker it preempts it and
//!   runs each completion after its command; behind tasks that wait for the
//!   CPU it waits its turn, and `blk_done_softirq` then runs every
//!   completion raised meanwhile in one go (see `cpu_work` for the counts).
//!
//! The parameters are CPU times of the reference core; `calibrate` fits them
//! on a real loop device, with the host's wake-up cost (`[cpu] wake_ns`),
//! which a worker woken on an idle CPU pays before its first command. Not
//! modelled: per-blkcg workers (one worker serves every cgroup), a backing
//! file on a real device (its own latency), the idle-worker reaping timer.
//! By default the worker takes a CPU at any gap between a task's calls and
//! keeps it ahead of waiting tasks for one slice at most (it once booked it
//! on and on, and a task alone on that CPU starved), where the kernel's kworker
//! waits for the running task's protected slice like any task and then
//! keeps its CPU for about ten commands on E2; `worker_waits_for_holder`
//! models that (off by default; `calibrate` chooses per host: see the
//! README, the lab, 2026-11-30).

use super::profile::{in_range, BadValue, MAX_BANDWIDTH, MAX_COMMAND_NS};
use super::Profile;
use crate::block::cpu::CONTEXT_SWITCH_NS;
#[cfg(test)]
use crate::block::driver::SoftirqRun;
use crate::block::driver::{
    Device, DeviceCmd, DeviceCpus, DeviceOut, QueueLimits, Submit, WORKER_TOKEN,
};
use crate::block::request::{Op, RqId};
use crate::sim::time::{Ns, NS_PER_SEC};
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use std::collections::VecDeque;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LoopParams {
    /// CPU time per command besides the copy (the backing file system's
    /// read/write path, the loop command setup), ns on the reference core.
    pub work_ns: u64,
    /// Copy rate of one CPU, bytes/s: reads out of the backing file.
    pub copy_bandwidth: u64,
    /// Copy rate of one CPU into the backing file, bytes/s (default: as
    /// reads). A write into a tmpfs page costs more than a read of it:
    /// `shmem_write_begin` finds and locks the folio, `shmem_write_end`
    /// marks it dirty and unlocks it, for every page (mm/shmem.c); on the
    /// lab VM 128 KiB sequential writes used 42% more CPU per I/O than
    /// reads (52.2 against 36.8 us).
    #[serde(default)]
    pub write_copy_bandwidth: Option<u64>,
    /// Share of reads and writes completed on the submitting CPU at once,
    /// without the worker's wake-up, percent (spread evenly). 6.19's loop
    /// does that for what its IOCB_NOWAIT try in `queue_rq` completes; the
    /// kernels this model runs (to 6.17) and the lab's 6.18 have no such
    /// try, and there the share stands for the kworker woken onto the
    /// submitter's CPU and running the command before the submitter goes on
    /// (no IPI to an idle vCPU). A fitted value, not a kernel constant:
    /// with fio pinned to CPU 0 of the lab VM at QD1, BLOCK_SOFTIRQ (raised
    /// where a command completes) ran on fio's CPU for 83% of reads on
    /// 2026-12-01 and 54% on 2026-12-02, 28% and 5% at QD4, under 3% from
    /// QD16 on both days; the fits chose 0-75%. Profiles calibrated before
    /// 2026-12-02 call it "the NOWAIT try", which 6.18 does not have.
    #[serde(default)]
    pub nowait_percent: u32,
    /// true: the worker is a task of the fair scheduler as the kernel's
    /// kworker is. It does not take a CPU whose task is within its
    /// protected slice (EEVDF's RUN_TO_PARITY): it waits for the first turn
    /// (the holder sleeps or its slice ends), then runs its list while the
    /// tasks that ask for that CPU wait. false (the default): it takes a
    /// CPU whenever the CPU is free, between a task's calls. `calibrate`
    /// fits both ways when its probes measured how evenly their jobs
    /// shared, and writes the better; see the README (the lab, 2026-11-30).
    #[serde(default)]
    pub worker_waits_for_holder: bool,
    /// true: a worker woken by a submission runs on the submitter's CPU
    /// when the submitter goes to sleep right after its call (no other
    /// work follows on that CPU), after a same-CPU switch instead of an idle
    /// CPU's wake-up; otherwise it goes to another CPU as `false` does.
    /// false (the default): upstream `select_idle_sibling`, which takes an
    /// idle CPU whenever there is one. This is what a vCPU-packing host
    /// scheduler does (the lab VM's `sched_vcpu_pack`; see the README, the
    /// lab, 2026-12-05b): the wake-up of an idle vCPU costs 22-44 us of wall
    /// time there, a same-CPU wake-up 1-4 us.
    #[serde(default)]
    pub worker_packs_on_sleeping_submitter: bool,
}

/// The `[loop]` table's ranges.
pub fn check(p: &LoopParams) -> Result<(), BadValue> {
    in_range("loop.work_ns", p.work_ns, 0, MAX_COMMAND_NS, "ns")?;
    in_range(
        "loop.copy_bandwidth",
        p.copy_bandwidth,
        1,
        MAX_BANDWIDTH,
        "bytes/s",
    )?;
    if let Some(w) = p.write_copy_bandwidth {
        in_range("loop.write_copy_bandwidth", w, 1, MAX_BANDWIDTH, "bytes/s")?;
    }
    in_range("loop.nowait_percent", p.nowait_percent, 0, 100, "%")
}

/// A switch between the worker and ksoftirqd, reference core: two kernel
/// threads, so no address-space switch — taken as half the task layer's
/// context switch (CONTEXT_SWITCH_NS, 1.5 us, which includes one). A model
/// assumption partly chosen on data: of 0, 0.75 and 1.5 us, refitted on one
/// lab measurement, 0 starved two of four jobs and 1.5 fitted the probes
/// worst (15.3% against 10.9%); see the README's loop section.
const KSOFTIRQD_SWITCH_NS: Ns = CONTEXT_SWITCH_NS / 2;

pub struct Loop {
    limits: QueueLimits,
    p: LoopParams,
    /// The worker's command list.
    list: VecDeque<(RqId, Ns)>,
    /// The worker is queued or running (a `queue_work` on it is a no-op).
    worker_active: bool,
    /// It was asleep: its next run starts with a wake-up.
    worker_waking: bool,
    /// The CPU the worker last ran on.
    worker_cpu: Option<u16>,
    /// A wake-up whose placement waits for the submitter's call to end
    /// (`worker_packs_on_sleeping_submitter`): the submitter's CPU and when
    /// the wake-up was asked for.
    wake_pending: Option<(u16, Ns)>,
    /// The worker's CPU time per CPU so far: where it goes when several
    /// CPUs would do (the kernel's load balancing moves the tasks so that
    /// every CPU carries the same load; the model's tasks stay put, so the
    /// worker spreads its own time instead).
    worker_ns: Vec<Ns>,
    /// Draws which commands complete at once (`nowait_percent`). A seeded
    /// draw per command, not an exact interleave: every fourth command (at
    /// 25%) fell on the same job whenever the jobs submitted in a fixed
    /// rotation, so that job's I/O always completed at once and another's
    /// never did (four QD4 writers on two CPUs: 86.5k, 45.0k, 1.9k and 45.0k
    /// IOPS where the kernel gives each about the same).
    rng: ChaCha8Rng,
    /// CPU time the worker has run on its CPU while tasks waited for it,
    /// since it last let them go.
    stretch_ns: Ns,
    /// Completions raised that their CPU's ksoftirqd has not run yet
    /// (the CPU, the request), in the order raised: it waits behind the
    /// tasks that wanted that CPU first, or behind the worker while the
    /// worker is eligible (`SoftirqShare`).
    softirq_pending: Vec<(u16, RqId)>,
    /// Per CPU: how EEVDF shares it between the worker and ksoftirqd.
    share: Vec<SoftirqShare>,
}

/// The worker and ksoftirqd on one CPU with no task waiting for it: two
/// entities of the fair scheduler (kernel/sched/fair.c, EEVDF, 6.6 on).
/// - A woken entity preempts the running one only when the running one is
///   no longer eligible (`check_preempt_wakeup_fair` → `pick_eevdf`): with
///   two entities of equal weight the worker is eligible while its
///   vruntime is at most ksoftirqd's, i.e. while `lead` ≤ 0.
/// - Otherwise ksoftirqd stays queued (later raises do not wake it again:
///   `blk_mq_raise_softirq` raises only when the CPU's done list was
///   empty, and waking a runnable task checks nothing) until the worker
///   sleeps or passes its deadline (`update_deadline` at the tick: a slice
///   of its own CPU time since its deadline was set), and then runs every
///   completion raised meanwhile in one go.
/// - Lag is kept over a sleep (`place_entity`, PLACE_LAG) when the other
///   entity is queued as it is placed: the worker's lead survives its
///   sleep when it slept ineligible, and is lost when it slept eligible
///   (see `softirq_runs_now`).
///
/// Facts read in v6.18's kernel/sched/fair.c (`check_preempt_wakeup_fair`,
/// `__pick_eevdf`, `set_protect_slice`, `place_entity`, `dequeue_entity`)
/// and block/blk-mq.c (`blk_mq_raise_softirq`).
/// Over a long list the two then get equal CPU time while both are
/// runnable: ksoftirqd runs after a share (c_worker − c_completion) /
/// (c_run + c_worker) of the commands, one completion each, and takes the
/// rest in batches — the runs per I/O falling with depth that the lab
/// measured (0.71-0.75 at QD16, 0.53-0.64 at QD64, 2026-12-06e), where the
/// model had ksoftirqd preempt the worker after every command.
/// Not modelled: the tick's granularity (the deadline is checked when a
/// command ends), the lag clamp's exact size; DELAY_DEQUEUE only through
/// what it does to the lead over the worker's sleep.
#[derive(Clone, Copy, Debug, Default)]
struct SoftirqShare {
    /// The worker's CPU time beyond ksoftirqd's while both were runnable
    /// (their vruntime difference), host ns.
    lead: i64,
    /// The worker's CPU time since its deadline was last set.
    slice_used: Ns,
    /// A ksoftirqd run that started here while the worker stayed runnable:
    /// the completion work the CPU clock holds beyond this instant is
    /// ksoftirqd's, counted against `lead` when the worker next starts.
    ran_from: Option<Ns>,
}

impl SoftirqShare {
    /// EEVDF keeps a dequeued entity's lag within ±max(2 × slice, tick)
    /// (`entity_lag`); with two entities the difference is twice a lag.
    fn clamp(&mut self, slice: Ns) {
        let limit = 4 * slice as i64;
        self.lead = self.lead.clamp(-limit, limit);
    }
}

impl Loop {
    pub fn new(profile: &Profile, seed: u64) -> Result<Loop, String> {
        let p = profile
            .loop_dev
            .clone()
            .ok_or("loop model needs a [loop] table")?;
        Ok(Loop {
            limits: profile.queue.clone(),
            p,
            list: VecDeque::new(),
            worker_active: false,
            worker_waking: false,
            worker_cpu: None,
            wake_pending: None,
            worker_ns: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x6c6f_6f70),
            stretch_ns: 0,
            softirq_pending: Vec::new(),
            share: Vec::new(),
        })
    }

    /// CPU time for one command of `bytes`, reference core.
    fn cost(&self, op: Op, bytes: u64) -> Ns {
        let copy = match op {
            Op::Read => bytes * NS_PER_SEC / self.p.copy_bandwidth,
            Op::Write => {
                let rate = self.p.write_copy_bandwidth.unwrap_or(self.p.copy_bandwidth);
                bytes * NS_PER_SEC / rate
            }
            _ => 0,
        };
        self.p.work_ns + copy
    }

    /// Whether this read or write completes on the submitting CPU at once
    /// (each with probability `nowait_percent`).
    fn inline(&mut self, op: Op) -> bool {
        if !matches!(op, Op::Read | Op::Write) || self.p.nowait_percent == 0 {
            return false;
        }
        self.rng.gen_range(0..100u32) < self.p.nowait_percent
    }

    /// After a command on `cpu` ending at `end`: the ksoftirqds whose turn
    /// has come run what was raised on their CPU — this CPU's unless it
    /// was deferred, another CPU's (the worker ran there before) once no
    /// task waits for it, every one when the worker goes to sleep.
    fn run_softirqs(
        &mut self,
        cpu: u16,
        end: Ns,
        defer: bool,
        cpus: &DeviceCpus,
        out: &mut DeviceOut,
    ) {
        let sleeping = self.list.is_empty();
        let mut i = 0;
        while let Some(&(c, _)) = self.softirq_pending.get(i) {
            let due = if c == cpu {
                !defer
            } else {
                sleeping || cpus.tasks_waiting(c) == 0
            };
            if !due {
                i += 1;
                continue;
            }
            let at = if c == cpu {
                end
            } else {
                cpus.free_at(c).max(end)
            };
            let raised_on_c = self.softirq_pending.iter().filter(|p| p.0 == c);
            out.softirq_run(at, c, raised_on_c.map(|p| p.1));
            self.softirq_pending.retain(|p| p.0 != c);
        }
    }
}

impl Device for Loop {
    fn limits(&self) -> &QueueLimits {
        &self.limits
    }
    fn set_write_cache(&mut self, write_back: bool) {
        // Flushes then reach the model (a loop worker's vfs_fsync, a
        // RAM disk's no-op) instead of being completed by the block layer.
        self.limits.write_cache = write_back;
    }

    fn submit(&mut self, now: Ns, cmd: &DeviceCmd, out: &mut DeviceOut) -> Submit {
        let cost = self.cost(cmd.op, cmd.bytes());
        if self.inline(cmd.op) {
            // Done by the submitting CPU at once (6.19's NOWAIT try in
            // queue_rq; before it, the worker run there): the block layer
            // charges it to that CPU, and the completion, the request's own
            // CPU's, starts when that CPU is done.
            out.inline_cpu_ns += cost;
            out.completions.push((now, cmd.id));
            return Submit::Accepted;
        }
        self.list.push_back((cmd.id, cost));
        if !self.worker_active {
            self.worker_active = true;
            self.worker_waking = true;
            out.cpu_wakeup(now, WORKER_TOKEN);
        }
        Submit::Accepted
    }

    fn cpu_work(&mut self, now: Ns, _token: u64, cpus: &mut DeviceCpus, out: &mut DeviceOut) {
        if self.list.is_empty() {
            self.worker_active = false;
            self.leave_cpu(cpus);
            return;
        }
        if self.worker_ns.len() < cpus.nr() {
            self.worker_ns.resize(cpus.nr(), 0);
            self.share.resize(cpus.nr(), SoftirqShare::default());
        }
        let granted = cpus.worker().granted.take();
        let Some((cpu, packed, woken_at)) = self.place_worker(now, granted, cpus, out) else {
            return;
        };
        let seated = self.p.worker_waits_for_holder;
        let (id, cost) = self.list.pop_front().expect("the list is not empty");
        if seated && cpus.worker().on != Some(cpu) {
            self.leave_cpu(cpus);
            cpus.worker().on = Some(cpu);
        }
        self.worker_cpu = Some(cpu);
        // Woken from a sleep: a fresh deadline (`place_entity`).
        let fresh = packed || self.worker_waking;
        // A woken worker on an idle CPU first pays the host's wake-up (the
        // IPI, the exit from idle, the switch; `[cpu] wake_ns`).
        let wake = if packed {
            self.worker_waking = false;
            CONTEXT_SWITCH_NS
        } else if std::mem::take(&mut self.worker_waking) {
            // Asked for at `woken_at`: what of the wake-up is left now.
            let cost = cpus.wake_cost(cpu, woken_at);
            let left = cost.saturating_sub(now - woken_at);
            if cost > 0 {
                cpus.count_idle_wake(left);
            }
            left
        } else if granted.is_some() {
            CONTEXT_SWITCH_NS
        } else {
            0
        };
        // Each command's completion is raised as BLOCK_SOFTIRQ from process
        // context (blk_mq_raise_softirq: one hardware queue, the submitter's
        // CPU shares the cache), which wakes ksoftirqd on this CPU, a task
        // of the fair scheduler like the worker.
        // - Nobody else wants the CPU: the two share it as EEVDF shares
        //   two entities (`SoftirqShare`): ksoftirqd preempts the worker
        //   for the completion when the worker is no longer eligible, else
        //   waits for the worker's deadline or sleep and runs what was
        //   raised meanwhile together (counted here with one fio job,
        //   QD4-QD64: 0.6-0.75 BLOCK softirqs per I/O, all in ksoftirqd on
        //   the worker's CPU, the worker preempted about as often). Each
        //   run costs a switch pair. So does the last command: the worker
        //   goes to sleep, ksoftirqd runs the completions and leaves the
        //   CPU to idle, two switches as well (charged since 2026-12-06h;
        //   lab-records/README.md).
        // - Tasks wait for the CPU: ksoftirqd is placed among them and gets
        //   its turn after them, while the worker goes on; the completions
        //   raised meanwhile wait and run together, in one softirq run
        //   (counted on E2, twelve jobs on two CPUs: 0.05-0.11 softirqs per
        //   I/O, 9-20 completions each, the worker switched out about as
        //   rarely). Their turn has come when a command ends with no task
        //   waiting, or the list is empty (the worker sleeps).
        let defer = !self.list.is_empty() && cpus.tasks_waiting(cpu) > 0;
        self.settle_softirq_run(cpu, cpus);
        let start = cpus.free_at(cpu).max(now);
        let command_end = cpus.run_with(cpu, now, wake, cost);
        let queued = self.softirq_pending.iter().any(|p| p.0 == cpu);
        let runs = !defer && self.softirq_runs_now(cpu, command_end - start, fresh, queued, cpus);
        let end = if runs {
            let end = cpus.run(cpu, command_end, 2 * KSOFTIRQD_SWITCH_NS);
            if !self.list.is_empty() {
                // ksoftirqd ran while the worker stayed runnable.
                let share = &mut self.share[cpu as usize];
                share.lead -= (end - command_end) as i64;
                share.ran_from = Some(end);
            }
            end
        } else {
            command_end
        };
        self.worker_ns[cpu as usize] += end - start;
        if !seated && cpus.tasks_waiting(cpu) > 0 && !cpus.worker().took.contains(&cpu) {
            // Taking a gap between a task's calls while others wait is a
            // preemption (EEVDF lets the woken worker preempt only a task
            // that is no longer eligible): when the worker is done, the
            // task that had the CPU gets it back only if its turn comes by
            // virtual runtime (`pick_eevdf` among every runnable task).
            cpus.worker().took.push(cpu);
        }
        if cpus.tasks_waiting(cpu) > 0 {
            self.stretch_ns += end - start;
        } else {
            self.stretch_ns = 0;
        }
        self.softirq_pending.push((cpu, id));
        self.run_softirqs(cpu, end, !runs, cpus, out);
        if self.list.is_empty() {
            self.worker_active = false;
            self.leave_cpu(cpus);
        } else {
            // The next command after the completion (1 ns later keeps the
            // worker behind it and behind a task woken for this CPU).
            out.cpu_wakeup(end + 1, WORKER_TOKEN);
        }
    }
}

impl Loop {
    /// Where the worker runs its next command: (CPU, packed onto a
    /// sleeping submitter, when its wake-up was asked for), or None when it
    /// does not run now (it waits for a CPU that tasks hold or wait for, or
    /// the packing decision is due later).
    fn place_worker(
        &mut self,
        now: Ns,
        granted: Option<u16>,
        cpus: &mut DeviceCpus,
        out: &mut DeviceOut,
    ) -> Option<(u16, bool, Ns)> {
        // Woken: where the CPU scheduler puts an unbound kworker (an idle
        // CPU other than the submitter's). Running: it stays on its CPU
        // while that is free, else load balancing moves it. A CPU whose
        // task is within its protected slice (EEVDF's RUN_TO_PARITY) is
        // not taken: the worker waits for the first CPU whose turn comes
        // (the task layer grants it) unless another is not held.
        let (packed, woken_at) = if granted.is_none() {
            self.packing(now, cpus, out)?
        } else {
            (false, now)
        };
        let mut cpu = match (granted, self.worker_cpu) {
            (Some(c), _) => c,
            (_, Some(c)) if packed => c,
            _ if self.worker_waking => cpus.wake_placement_from(woken_at),
            (_, Some(c)) if cpus.free_at(c) <= now => c,
            (_, prev) => cpus.earliest_free(prev),
        };
        let seated = self.p.worker_waits_for_holder;
        if granted.is_none()
            && cpus.worker().on != Some(cpu)
            && self.must_let_tasks_go(cpu, now, cpus)
        {
            // Tasks wait for that CPU: the worker does not book it ahead of
            // them (its backlog there grew without bound and starved a task
            // alone on that CPU). It tries again just after the CPU frees,
            // behind the task woken for that instant; runnable meanwhile, it
            // needs no wake-up from idle then.
            self.worker_waking = false;
            self.stretch_ns = 0;
            out.cpu_wakeup(cpus.free_at(cpu) + 1, WORKER_TOKEN);
            return None;
        }
        if seated && granted.is_none() && cpus.worker().on != Some(cpu) && cpus.held(cpu) {
            let load = &self.worker_ns;
            match (0..cpus.nr() as u16)
                .filter(|&c| !cpus.held(c))
                .min_by_key(|&c| (load[c as usize], c))
            {
                Some(c) => cpu = c,
                None => {
                    // Runnable, queued behind the holders: no wake-up from
                    // idle when its turn comes, a switch.
                    self.worker_waking = false;
                    let lightest = (0..cpus.nr() as u16).min_by_key(|&c| (load[c as usize], c));
                    self.leave_cpu(cpus);
                    let seat = cpus.worker();
                    seat.parked = true;
                    seat.park_on = lightest;
                    return None;
                }
            }
        }
        Some((cpu, packed, woken_at))
    }

    /// With `worker_packs_on_sleeping_submitter`, where a woken worker goes:
    /// (packed onto its submitter's CPU, when the wake-up was asked for).
    /// Whether the submitter sleeps is known only when its call ends, so the
    /// first call schedules the decision for then (1 ns after, behind its
    /// next step) and returns None.
    fn packing(&mut self, now: Ns, cpus: &DeviceCpus, out: &mut DeviceOut) -> Option<(bool, Ns)> {
        if !(self.worker_waking && self.p.worker_packs_on_sleeping_submitter) {
            return Some((false, now));
        }
        match self.wake_pending.take() {
            None if cpus.nr() > 1 => {
                let submitter = cpus.submitter();
                self.wake_pending = Some((submitter, now));
                out.cpu_wakeup(cpus.free_at(submitter).max(now) + 1, WORKER_TOKEN);
                None
            }
            None => Some((false, now)),
            Some((submitter, at)) => {
                let packed = cpus.free_at(submitter) <= now && cpus.tasks_waiting(submitter) == 0;
                if packed {
                    self.worker_cpu = Some(submitter);
                }
                Some((packed, at))
            }
        }
    }

    /// Whether the worker, wanting `cpu` while it is busy, must let the
    /// tasks that wait for it run first: once it has run a slice ahead of
    /// waiting tasks (a kworker is a task of the fair scheduler: it keeps
    /// its CPU for its slice, the era's `slice_ns`, then the waiting tasks get
    /// their turn). The count restarts when no task waits, or when it lets
    /// them go.
    fn must_let_tasks_go(&self, cpu: u16, now: Ns, cpus: &DeviceCpus) -> bool {
        if cpus.free_at(cpu) <= now || cpus.tasks_waiting(cpu) == 0 {
            return false;
        }
        self.stretch_ns >= cpus.slice_ns()
    }

    /// Whether ksoftirqd runs on `cpu` after the worker's command that
    /// took `ran` ns there (`SoftirqShare`), with no task waiting for it:
    /// `fresh` the worker had slept before it, `queued` ksoftirqd was
    /// already woken by an earlier command's completion.
    fn softirq_runs_now(
        &mut self,
        cpu: u16,
        ran: Ns,
        fresh: bool,
        queued: bool,
        cpus: &DeviceCpus,
    ) -> bool {
        let slice = cpus.slice_ns();
        let share = &mut self.share[cpu as usize];
        if fresh {
            // A fresh deadline (`place_entity`).
            share.slice_used = 0;
        }
        share.slice_used += ran;
        if queued {
            share.lead += ran as i64;
        }
        share.clamp(slice);
        let deadline_passed = share.slice_used >= slice;
        if deadline_passed {
            share.slice_used = 0;
        }
        if self.list.is_empty() {
            // The worker sleeps and ksoftirqd runs. An eligible worker is
            // dequeued with its lag and ksoftirqd, alone, is the average:
            // it sleeps with no lag, and the worker, woken onto an empty
            // queue, is placed without its own (`place_entity` applies lag
            // only with others queued): even again. An ineligible worker
            // stays queued (DELAY_DEQUEUE) while ksoftirqd runs, so
            // ksoftirqd sleeps owed (positive lag, kept: DELAY_ZERO clips
            // only the delayed entity's) and gets it back when next woken
            // beside the worker: the lead survives the sleep.
            share.lead = share.lead.max(0);
            return true;
        }
        // Woken by this command's completion, ksoftirqd preempts a worker
        // that is no longer eligible (`pick_eevdf` drops it); queued, it
        // waits for the worker's deadline (`update_curr` reschedules once
        // the protected slice is used).
        deadline_passed || (!queued && share.lead > 0)
    }

    /// The completion work of ksoftirqd's last run on `cpu` (what the CPU
    /// clock holds beyond the run's start) is ksoftirqd's CPU time.
    /// A run on a CPU the worker has left is not counted: other work may
    /// follow it there before the worker comes back.
    fn settle_softirq_run(&mut self, cpu: u16, cpus: &DeviceCpus) {
        for (c, share) in self.share.iter_mut().enumerate() {
            let from = share.ran_from.take();
            if let Some(from) = from.filter(|_| c == cpu as usize) {
                share.lead -= cpus.free_at(cpu).saturating_sub(from) as i64;
            }
        }
    }

    /// The worker gives up the CPU it ran its list on: the task layer
    /// wakes the tasks that waited for it.
    fn leave_cpu(&mut self, cpus: &mut DeviceCpus) {
        let seat = cpus.worker();
        if let Some(c) = seat.on.take() {
            seat.left.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::cpu::{CpuState, WakeCost};
    use crate::device::load_profile;

    fn cmd(id: RqId) -> DeviceCmd {
        DeviceCmd {
            id,
            op: Op::Read,
            sector: 0,
            nr_sectors: 8,
            hwq: 0,
            fua: false,
        }
    }

    fn params(nowait_percent: u32) -> Profile {
        let mut p = load_profile("loop").unwrap();
        p.loop_dev.as_mut().unwrap().nowait_percent = nowait_percent;
        p
    }

    #[test]
    fn writes_copy_at_their_own_rate_when_the_profile_gives_one() {
        let mut p = params(0);
        let w = |d: &Loop, op| d.cost(op, 131_072);
        let same = Loop::new(&p, 1).unwrap();
        assert_eq!(w(&same, Op::Write), w(&same, Op::Read));
        let l = p.loop_dev.as_mut().unwrap();
        l.write_copy_bandwidth = Some(l.copy_bandwidth / 2);
        let d = Loop::new(&p, 1).unwrap();
        let copy = w(&d, Op::Read) - d.p.work_ns;
        assert_eq!(w(&d, Op::Write) - d.p.work_ns, 2 * copy);
    }

    #[test]
    fn the_worker_serves_commands_one_after_another_on_an_idle_cpu() {
        let p = params(0);
        let mut d = Loop::new(&p, 1).unwrap();
        let mut out = DeviceOut::default();
        d.submit(0, &cmd(0), &mut out);
        d.submit(0, &cmd(1), &mut out);
        assert!(out.completions.is_empty() && out.softirq_runs.is_empty());
        let (at, tok) = out.wakeups[0];
        assert_eq!(at, 0);
        assert_eq!(out.wakeups.len(), 1, "one queue_work while active");
        let mut state = CpuState::new(2, crate::kernel::Era::newest().slice_ns(2));
        // CPU 0 is busy (the submitter): the worker goes to CPU 1.
        state.begin(0, 0);
        state.charge(1_000_000);
        state.end();
        out.wakeups.clear();
        let wake = 3_000;
        let mut cpus = DeviceCpus::new(&mut state, 1.0, WakeCost::flat(wake), 0);
        d.cpu_work(
            at,
            tok & !crate::block::driver::CPU_WORK,
            &mut cpus,
            &mut out,
        );
        let each = d.cost(Op::Read, 4096);
        let preempt = 2 * KSOFTIRQD_SWITCH_NS;
        // CPU 1 was idle: the wake-up first. ksoftirqd, woken by the first
        // completion, finds the worker eligible (neither has run ahead of
        // the other) and waits.
        let first = at + wake + each;
        assert!(out.softirq_runs.is_empty(), "the worker keeps its CPU");
        assert_eq!(out.wakeups.len(), 1, "the second command next");
        let (at2, _) = out.wakeups[0];
        assert_eq!(at2, first + 1);
        out.wakeups.clear();
        d.cpu_work(at2, 0, &mut cpus, &mut out);
        // The last command: the worker sleeps after it, through ksoftirqd
        // (which runs both completions) to idle, a switch pair.
        let end = at2 + each + preempt;
        assert_eq!(out.softirq_runs, vec![run(end, 1, 2)]);
        assert_eq!(out.softirq_ids, vec![0, 1]);
        assert!(out.wakeups.is_empty());
        assert!(!d.worker_active);
    }

    /// With `worker_packs_on_sleeping_submitter` the placement waits for
    /// the submitter's call to end: a submitter that then sleeps has the
    /// worker on its CPU after a switch; one that goes on working sends it
    /// to the idle CPU, whose wake-up counts from when it was asked for.
    #[test]
    fn a_packing_host_puts_the_worker_on_a_submitter_that_sleeps() {
        let mut p = params(0);
        p.loop_dev
            .as_mut()
            .unwrap()
            .worker_packs_on_sleeping_submitter = true;
        let wake = WakeCost {
            shallow_ns: 3_000,
            deep_ns: 40_000,
            deep_after_ns: 30_000,
        };
        let slice = crate::kernel::Era::newest().slice_ns(2);
        let each = Loop::new(&p, 1).unwrap().cost(Op::Read, 4096);
        let call_end = 2_000;
        for submitter_sleeps in [true, false] {
            let mut d = Loop::new(&p, 1).unwrap();
            let mut out = DeviceOut::default();
            let mut state = CpuState::new(2, slice);
            // The submitter's call on CPU 0 runs to `call_end`.
            state.begin(0, 0);
            state.charge(call_end);
            state.end();
            d.submit(500, &cmd(0), &mut out);
            let mut cpus = DeviceCpus::new(&mut state, 1.0, wake, 0);
            let (at, _) = out.wakeups.pop().unwrap();
            d.cpu_work(at, 0, &mut cpus, &mut out);
            assert!(
                out.softirq_runs.is_empty(),
                "nothing runs before the call ends"
            );
            let (decide_at, _) = out.wakeups.pop().unwrap();
            assert_eq!(decide_at, call_end + 1);
            if !submitter_sleeps {
                // Its next call is already booked on CPU 0.
                cpus.run(0, call_end, 5_000);
            }
            d.cpu_work(decide_at, 0, &mut cpus, &mut out);
            let got = out.softirq_runs[0];
            // The list is empty after it: the worker's way to sleep.
            let sleep = 2 * KSOFTIRQD_SWITCH_NS;
            if submitter_sleeps {
                assert_eq!(got, run(decide_at + CONTEXT_SWITCH_NS + each + sleep, 0, 1));
            } else {
                // CPU 1 idled since 0: asked for at 500, the deep end of the
                // curve is not reached (500 ns of idle), so half of it and a
                // little more, less what passed while deciding.
                let cost = wake.on_cpu_free_at(0, 500);
                assert!(cost > 20_000 && cost < 21_000, "{cost}");
                let left = cost - (decide_at - 500);
                assert_eq!(got, run(decide_at + left + each + sleep, 1, 1));
            }
        }
    }

    fn run(at: Ns, cpu: u16, count: u32) -> SoftirqRun {
        SoftirqRun { at, cpu, count }
    }

    /// A loop device (`nowait_percent` 0) with three commands on its list.
    fn three_queued() -> (Loop, DeviceOut) {
        let mut d = Loop::new(&params(0), 1).unwrap();
        let mut out = DeviceOut::default();
        for id in 0..3 {
            d.submit(0, &cmd(id), &mut out);
        }
        (d, out)
    }

    #[test]
    fn with_tasks_waiting_for_its_cpu_ksoftirqd_runs_the_completions_together() {
        let (mut d, mut out) = three_queued();
        let mut state = CpuState::new(2, crate::kernel::Era::newest().slice_ns(2));
        // CPU 0 runs the submitter; two tasks wait for CPU 1, where the
        // worker is woken.
        state.begin(0, 0);
        state.charge(1_000_000);
        state.end();
        state.set_tasks_waiting(1, 2);
        let mut cpus = DeviceCpus::new(&mut state, 1.0, WakeCost::flat(0), 0);
        let each = d.cost(Op::Read, 4096);
        let mut at = 0;
        for _ in 0..2 {
            out.wakeups.clear();
            d.cpu_work(at, 0, &mut cpus, &mut out);
            assert!(out.softirq_runs.is_empty(), "ksoftirqd waits its turn");
            at = out.wakeups[0].0;
        }
        // The last command: the worker sleeps after it and ksoftirqd runs
        // all three in one go, with no switch pair charged in between (the
        // one after the last command is the worker's way to sleep).
        out.wakeups.clear();
        d.cpu_work(at, 0, &mut cpus, &mut out);
        let end = 3 * each + 2 + 2 * KSOFTIRQD_SWITCH_NS;
        assert_eq!(out.softirq_runs, vec![run(end, 1, 3)]);
        assert_eq!(out.softirq_ids, vec![0, 1, 2]);
        assert!(out.wakeups.is_empty());
        // Nobody waits any more: ksoftirqd and the worker share the CPU by
        // EEVDF's rules (`SoftirqShare`). The worker slept ahead (it ran
        // its last command with ksoftirqd queued), so ksoftirqd, owed,
        // preempts it after its first command, then runs the second as the
        // worker sleeps.
        out.softirq_runs.clear();
        out.softirq_ids.clear();
        state.set_tasks_waiting(1, 0);
        let mut cpus = DeviceCpus::new(&mut state, 1.0, WakeCost::flat(0), 0);
        d.submit(end, &cmd(3), &mut out);
        d.submit(end, &cmd(4), &mut out);
        let (at, _) = out.wakeups[0];
        out.wakeups.clear();
        d.cpu_work(at, 0, &mut cpus, &mut out);
        assert_eq!(out.softirq_ids, vec![3], "ksoftirqd is owed");
        let (at, _) = out.wakeups.pop().unwrap();
        d.cpu_work(at, 0, &mut cpus, &mut out);
        assert_eq!(out.softirq_ids, vec![3, 4], "then as the worker sleeps");
        // Even again after that sleep: the worker, eligible, keeps the CPU.
        out.softirq_ids.clear();
        let at = out.softirq_runs.last().unwrap().at;
        for id in 5..7 {
            d.submit(at, &cmd(id), &mut out);
        }
        let (at, _) = out.wakeups.pop().unwrap();
        d.cpu_work(at, 0, &mut cpus, &mut out);
        assert!(out.softirq_ids.is_empty(), "the worker is eligible");
    }

    /// Runs a list of `n` 4 KiB reads on CPU 1 with nobody else wanting
    /// it: (the softirq runs, the completions each took).
    fn long_list(n: u32) -> (Loop, Vec<SoftirqRun>) {
        let mut d = Loop::new(&params(0), 1).unwrap();
        let mut out = DeviceOut::default();
        for id in 0..n {
            d.submit(0, &cmd(id as RqId), &mut out);
        }
        let mut state = CpuState::new(2, crate::kernel::Era::newest().slice_ns(2));
        state.begin(0, 0);
        state.charge(Ns::MAX / 4);
        state.end();
        let mut cpus = DeviceCpus::new(&mut state, 1.0, WakeCost::flat(0), 0);
        while let Some((at, _)) = out.wakeups.pop() {
            d.cpu_work(at, 0, &mut cpus, &mut out);
        }
        assert_eq!(out.softirq_ids.len(), n as usize, "every completion ran");
        (d, out.softirq_runs)
    }

    #[test]
    fn ksoftirqd_waits_for_the_worker_s_deadline_then_preempts_it_while_owed() {
        let (d, runs) = long_list(40_000);
        let each = d.cost(Op::Read, 4096);
        let pair = 2 * KSOFTIRQD_SWITCH_NS;
        let slice = crate::kernel::Era::newest().slice_ns(2);
        // Even at first: the worker keeps its CPU for its slice, and
        // ksoftirqd then takes everything raised meanwhile in one run.
        assert_eq!(runs[0].count as u64, slice.div_ceil(each));
        // Owed that slice, ksoftirqd preempts the worker after each of the
        // next commands, until it has had as much CPU as the worker had.
        let singles = runs[1..].iter().take_while(|r| r.count == 1).count() as u64;
        let owed = runs[0].count as u64 * each;
        assert!(singles.abs_diff(owed / pair) <= 2, "{singles} single runs");
        // Over the list: equal shares while both are runnable, so
        // ksoftirqd runs after each / (each + pair) of the commands.
        let share = runs.len() as f64 / 40_000.0;
        let expected = each as f64 / (each + pair) as f64;
        assert!(
            (share / expected - 1.0).abs() < 0.1,
            "{share} vs {expected}"
        );
    }

    #[test]
    fn a_free_worker_that_runs_while_tasks_wait_ends_their_holder_s_turn() {
        let (mut d, mut out) = three_queued();
        let mut state = CpuState::new(2, crate::kernel::Era::newest().slice_ns(2));
        state.set_tasks_waiting(1, 1);
        let mut cpus = DeviceCpus::new(&mut state, 1.0, WakeCost::flat(0), 0);
        d.cpu_work(0, 0, &mut cpus, &mut out);
        assert_eq!(cpus.worker().took, vec![1], "the task layer is told");
        // Once per CPU until the task layer has seen it.
        let at = out.wakeups.pop().unwrap().0;
        d.cpu_work(at, 0, &mut cpus, &mut out);
        assert_eq!(cpus.worker().took, vec![1]);
        // Seated, the worker takes its turns from the task layer instead.
        let mut p = params(0);
        p.loop_dev.as_mut().unwrap().worker_waits_for_holder = true;
        let mut d = Loop::new(&p, 1).unwrap();
        d.submit(0, &cmd(0), &mut out);
        let mut state = CpuState::new(2, crate::kernel::Era::newest().slice_ns(2));
        state.set_tasks_waiting(1, 1);
        let mut cpus = DeviceCpus::new(&mut state, 1.0, WakeCost::flat(0), 0);
        d.cpu_work(0, 0, &mut cpus, &mut out);
        assert!(cpus.worker().took.is_empty());
    }

    #[test]
    fn completions_held_on_a_cpu_the_worker_left_wait_for_its_tasks() {
        let (mut d, mut out) = three_queued();
        let mut state = CpuState::new(2, crate::kernel::Era::newest().slice_ns(2));
        state.set_tasks_waiting(1, 1);
        let mut cpus = DeviceCpus::new(&mut state, 1.0, WakeCost::flat(0), 0);
        // Woken onto CPU 1 (not the submitter's), where a task waits: held.
        d.cpu_work(0, 0, &mut cpus, &mut out);
        assert!(out.softirq_runs.is_empty());
        let second = out.wakeups.pop().unwrap().0;
        // CPU 1 is taken by other work: the worker moves to CPU 0, and CPU
        // 1's task still waits, so its ksoftirqd still holds command 0.
        state.begin(1, second);
        state.charge(50_000);
        let cpu1_free = state.end();
        let mut cpus = DeviceCpus::new(&mut state, 1.0, WakeCost::flat(0), 0);
        d.cpu_work(second, 0, &mut cpus, &mut out);
        // Nobody waits for CPU 0, where the worker is eligible: its
        // ksoftirqd waits for it too.
        assert!(out.softirq_runs.is_empty());
        // The list empties: the worker sleeps, every ksoftirqd runs.
        let at = out.wakeups.pop().unwrap().0;
        d.cpu_work(at, 0, &mut cpus, &mut out);
        assert_eq!(out.softirq_ids, vec![0, 1, 2]);
        assert_eq!(
            out.softirq_runs[0],
            run(cpu1_free, 1, 1),
            "once CPU 1 frees"
        );
        assert_eq!(out.softirq_runs[1].cpu, 0);
        assert_eq!(out.softirq_runs[1].count, 2);
    }

    #[test]
    fn nowait_share_is_drawn_per_command() {
        let mut d = Loop::new(&params(25), 1).unwrap();
        let inline: Vec<bool> = (0..4000).map(|_| d.inline(Op::Read)).collect();
        let n = inline.iter().filter(|&&b| b).count();
        assert!((900..1100).contains(&n), "{n} of 4000");
        // No period: four submitters in a fixed rotation each get their
        // share (an exact every-fourth interleave gave one of them all).
        for k in 0..4 {
            let mine = inline.iter().skip(k).step_by(4).filter(|&&b| b).count();
            assert!((200..300).contains(&mine), "submitter {k}: {mine} of 1000");
        }
        assert!(!d.inline(Op::Flush));
        let mut out = DeviceOut::default();
        let mut d = Loop::new(&params(100), 1).unwrap();
        d.submit(10, &cmd(3), &mut out);
        assert_eq!(out.inline_cpu_ns, d.cost(Op::Read, 4096));
        assert_eq!(out.completions, vec![(10, 3)]);
        assert!(out.wakeups.is_empty());
    }

    #[test]
    fn ranges_are_checked() {
        let mut p = load_profile("loop").unwrap().loop_dev.unwrap();
        assert!(check(&p).is_ok());
        p.nowait_percent = 101;
        assert_eq!(check(&p).unwrap_err().key, "loop.nowait_percent");
        p.nowait_percent = 0;
        p.copy_bandwidth = 0;
        assert_eq!(check(&p).unwrap_err().key, "loop.copy_bandwidth");
    }
}
