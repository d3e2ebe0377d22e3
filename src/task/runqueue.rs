//! CPU sharing between tasks: what the kernel's fair scheduler does when
//! more tasks want a CPU than there are CPUs — to first order.
//!
//! The model charges CPU work to a CPU clock (`block::cpu`): a call starts
//! when its CPU is free. Left alone, two tasks on one CPU race for it at
//! the instant it frees, and the one whose wake-up was queued first always
//! wins: with `numjobs=4` on two CPUs, two jobs ran to completion before
//! the other two started. The kernel instead time-slices them (CFS, and
//! EEVDF since 6.6, kernel/sched/fair.c):
//!
//! - each task accumulates virtual runtime (`vruntime`, its CPU time at
//!   nice 0, the weight of every fio job unless `nice=` is set);
//! - the task on the CPU keeps it for its slice — EEVDF's base slice,
//!   `sysctl_sched_base_slice` 0.75 ms × (1 + ilog2(min(CPUs, 8)))
//!   (`sched_update_scaling`, SCHED_TUNABLESCALING_LOG) — unless it sleeps,
//!   or a task wakes from a sleep while it is no longer eligible (RUN_TO_PARITY
//!   protects the current task only up to the 0-lag point: its vruntime at
//!   most the average of the CPU's runnable tasks; `pick_eevdf` drops a
//!   current task that is not eligible, and `check_preempt_wakeup_fair` then
//!   picks the woken one). Only a wake-up checks this: a task that waits its
//!   turn does not preempt (the kernel checks at wake-ups and at the tick,
//!   and the tick only ends a used slice);
//! - then the runnable task with the least vruntime runs (EEVDF picks the
//!   eligible task with the earliest virtual deadline; with equal weights
//!   and slices that is the one that has had the least service);
//! - a task waking from a sleep is placed no further back than half a
//!   slice behind the least vruntime on its CPU (`place_entity`), so a long
//!   sleeper does not monopolise the CPU when it returns;
//! - switching from one task to another costs CPU time;
//! - a runnable task does not wait while another CPU it may use is idle:
//!   a task woken on a busy CPU goes to an idle one (`select_idle_sibling`
//!   at wake-up), and a CPU about to go idle pulls a task that waits
//!   elsewhere (`sched_balance_newidle`). Its vruntime keeps its distance
//!   from the least one of its queue (the kernel keeps a migrating
//!   entity's lag).
//!
//! Pitfalls: only work a task does in its own calls counts towards its
//! vruntime (completion work in interrupt context is not the task's); the
//! decision is taken when a task asks for a CPU that is free, so the waiting
//! tasks must be woken whenever the CPU frees — [`RunQueues::next_waiter`]
//! says whom. While no CPU has been shared, tasks take the fast path and
//! nothing migrates. Once one has, every task's state is kept here until
//! one task is left, though no CPU is shared now: a task that waits for
//! its CPU (its own wake-up on it) must count as running there, or that
//! CPU looks idle and pulls another task (two tasks then swapped CPUs at
//! every wake-up and neither ran). Interrupt and softirq work
//! on a CPU does not make it busy here (the kernel's `idle_cpu` looks at
//! the tasks only). Not modelled: the periodic load balancer (with every
//! CPU busy, tasks stay where they are), nice levels, EEVDF's lag kept
//! over a sleep (a woken task is placed as CFS did, by `place_after_sleep`),
//! CFS's wake-up granularity on kernels before 6.6 (every era uses the
//! EEVDF rule above).
//!
//! Performance: a CPU's waiting tasks are an ordered set keyed by
//! (vruntime, id), as the kernel's rbtree of entities is, so picking,
//! joining and leaving cost O(log n) with thousands of jobs on a few CPUs
//! (a plain list made `numjobs=1024` on 2 CPUs quadratic). A waiting task's
//! vruntime is re-keyed whenever it changes.

use super::TaskId;
use crate::sim::time::Ns;
use std::collections::BTreeSet;

/// A context switch between two tasks (block::cpu, where the layers
/// below also charge it).
pub use crate::block::cpu::CONTEXT_SWITCH_NS;

/// One CPU's share of the scheduler.
#[derive(Clone, Debug, Default)]
struct RunQueue {
    /// Live tasks placed on this CPU.
    tasks: u32,
    /// Its tasks that are runnable (running or waiting for it): the
    /// kernel's `nr_running`. None: the CPU is idle.
    nr_running: u32,
    /// The task that ran last, and how much CPU time it has had since it
    /// got the CPU.
    curr: Option<TaskId>,
    slice_used: Ns,
    /// Whether `curr` goes on wanting the CPU (it did not go to sleep).
    curr_runnable: bool,
    /// The task switched in on this CPU, alone there or not: None once it
    /// slept, ended or a kernel thread took the CPU. A task that finds
    /// itself still switched in when it runs again only waited for
    /// interrupt work (no context switch, as fio's `ctx` counts them).
    switched_in: Option<TaskId>,
    /// Runnable tasks waiting for this CPU, by (vruntime, id).
    waiting: BTreeSet<(Ns, TaskId)>,
    /// The sum of the waiting tasks' vruntimes (for the average vruntime
    /// a current task is eligible against).
    waiting_vruntime: u128,
    /// Never decreases: the least vruntime among the CPU's runnable tasks.
    min_vruntime: Ns,
}

/// The answer to a task that asks for its CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Run now; `switch_ns` of context-switch work comes first (0 when the
    /// task already had the CPU).
    Run { switch_ns: Ns },
    /// Another waiting task's turn: step it; the asking task waits.
    Yield(TaskId),
    /// The current task keeps the CPU; the asking task waits.
    Wait,
}

/// Every CPU's run queue and every task's virtual runtime.
#[derive(Clone, Debug)]
pub struct RunQueues {
    /// Some CPU had more than one task while more than one task lives
    /// (else nothing here is needed). It stays set while two tasks live,
    /// though none shares a CPU now: a migration may put them together
    /// again, and that needs every task's state kept on the way.
    sharing: bool,
    /// Tasks placed and not yet ended.
    live: u32,
    cpus: Vec<RunQueue>,
    vruntime: Vec<Ns>,
    /// Per task: the CPUs it may run on (`cpus_allowed`); empty: any.
    allowed: Vec<Vec<u16>>,
    /// Per task: whether it is runnable (as it last said).
    runnable: Vec<bool>,
    /// Tasks waiting on any CPU (none: no CPU has one to pull).
    nr_waiting: u32,
    /// Per task: the CPU it waits for, if it does (its key there is its
    /// vruntime).
    waits_on: Vec<Option<u16>>,
    slice_ns: Ns,
    switch_ns: Ns,
}

impl RunQueues {
    /// For `nr_cpus` CPUs and `nr_tasks` tasks; `switch_ns` is the context
    /// switch cost on this machine, `slice_ns` the kernel's slice for that
    /// many CPUs (`Era::slice_ns`).
    pub fn new(nr_cpus: usize, nr_tasks: usize, switch_ns: Ns, slice_ns: Ns) -> RunQueues {
        RunQueues {
            sharing: false,
            live: 0,
            cpus: vec![RunQueue::default(); nr_cpus.max(1)],
            vruntime: vec![0; nr_tasks],
            allowed: vec![Vec::new(); nr_tasks],
            runnable: vec![false; nr_tasks],
            nr_waiting: 0,
            waits_on: vec![None; nr_tasks],
            slice_ns,
            switch_ns,
        }
    }

    /// The slice a task keeps its CPU for.
    pub fn slice_ns(&self) -> Ns {
        self.slice_ns
    }

    /// A task now lives on `cpu`.
    pub fn place(&mut self, cpu: u16) {
        self.live += 1;
        self.add_one(cpu);
    }

    /// One task more lives on `cpu`.
    fn add_one(&mut self, cpu: u16) {
        let rq = &mut self.cpus[cpu as usize];
        rq.tasks += 1;
        if rq.tasks == 2 {
            self.sharing = true;
        }
    }

    /// A task of `cpu` has ended.
    pub fn leave(&mut self, id: TaskId, cpu: u16) {
        self.unqueue(id);
        self.set_runnable(id, cpu, false);
        let rq = &mut self.cpus[cpu as usize];
        if rq.curr == Some(id) {
            rq.curr = None;
        }
        if rq.switched_in == Some(id) {
            rq.switched_in = None;
        }
        self.remove_one(cpu);
        self.live = self.live.saturating_sub(1);
        if self.live <= 1 {
            self.sharing = false;
        }
    }

    /// One task fewer lives on `cpu`.
    fn remove_one(&mut self, cpu: u16) {
        let rq = &mut self.cpus[cpu as usize];
        rq.tasks = rq.tasks.saturating_sub(1);
    }

    /// `id` may run only on these CPUs (fio's `cpus_allowed` with the
    /// shared policy); without a call, on any.
    pub fn set_allowed(&mut self, id: TaskId, cpus: Vec<u16>) {
        self.allowed[id as usize] = cpus;
    }

    /// Whether `id` may run on `cpu`.
    fn may_run_on(&self, id: TaskId, cpu: u16) -> bool {
        let a = &self.allowed[id as usize];
        a.is_empty() || a.contains(&cpu)
    }

    /// Whether CPUs are shared: when none was (the usual case), tasks take
    /// their CPUs without asking. Once one was, this holds until only one
    /// task is left (see `sharing`).
    #[inline(always)]
    pub fn any_shared(&self) -> bool {
        self.sharing
    }

    /// Whether `cpu` is shared.
    #[inline]
    pub fn shared(&self, cpu: u16) -> bool {
        self.any_shared() && self.cpus[cpu as usize].tasks > 1
    }

    /// Whether no task runs on `cpu` or waits for it, as the scheduler
    /// sees it (work in interrupt context aside): a task may move there.
    pub fn idle(&self, cpu: u16) -> bool {
        self.cpus[cpu as usize].nr_running == 0
    }

    /// Whether `id`, which wants to run on `cpu`, finds another runnable
    /// task there.
    pub fn contended(&self, id: TaskId, cpu: u16) -> bool {
        let own = u32::from(self.runnable[id as usize]);
        self.cpus[cpu as usize].nr_running > own
    }

    /// The CPUs `id` may move to from `cpu`, in the order the kernel's
    /// idle search tries them (`select_idle_cpu` wraps from the next CPU).
    pub fn candidates(&self, id: TaskId, cpu: u16) -> impl Iterator<Item = u16> + '_ {
        let n = self.cpus.len() as u16;
        (1..n)
            .map(move |k| (cpu + k) % n)
            .filter(move |&c| self.may_run_on(id, c))
    }

    /// A task that waits for another CPU than `cpu` and may run on it,
    /// for `cpu` going idle to pull (`sched_balance_newidle`): from the CPU
    /// with the most waiting tasks, the one that would wait longest there.
    pub fn task_to_pull(&self, cpu: u16) -> Option<(TaskId, u16)> {
        if self.nr_waiting == 0 {
            return None;
        }
        let busiest = (0..self.cpus.len() as u16)
            .filter(|&c| c != cpu && !self.cpus[c as usize].waiting.is_empty())
            .max_by_key(|&c| (self.cpus[c as usize].waiting.len(), std::cmp::Reverse(c)))?;
        let waiting = &self.cpus[busiest as usize].waiting;
        let id = waiting
            .iter()
            .rev()
            .map(|&(_, w)| w)
            .find(|&w| self.may_run_on(w, cpu))?;
        Some((id, busiest))
    }

    /// `id` moves from `from` to `to`: it stops waiting on `from`, and its
    /// vruntime keeps its distance from the least one of its queue.
    pub fn migrate(&mut self, id: TaskId, from: u16, to: u16) {
        self.unqueue(id);
        let old = &mut self.cpus[from as usize];
        if old.curr == Some(id) {
            old.curr = None;
            old.curr_runnable = false;
            old.slice_used = 0;
        }
        if old.switched_in == Some(id) {
            old.switched_in = None;
        }
        let lag = self.vruntime[id as usize] as i128 - old.min_vruntime as i128;
        let runnable = self.runnable[id as usize];
        old.nr_running -= u32::from(runnable);
        self.cpus[to as usize].nr_running += u32::from(runnable);
        self.remove_one(from);
        self.add_one(to);
        let base = self.cpus[to as usize].min_vruntime as i128;
        self.set_vruntime(id, (base + lag).max(0) as Ns);
    }

    /// `id` is runnable but its CPU is busy: it waits for it.
    pub fn wait(&mut self, id: TaskId, cpu: u16) {
        let rq = &self.cpus[cpu as usize];
        if self.is_queued(id) {
            return;
        }
        if rq.curr != Some(id) {
            self.place_after_sleep(id, cpu);
            self.enqueue(id, cpu);
        } else if rq.tasks == 1 {
            // Alone, it waits for work outside the run queues (the
            // device's worker): counted, so that work lets it go first.
            self.enqueue(id, cpu);
        }
    }

    /// `id`, alone on its CPU, runs: it no longer waits there.
    #[inline]
    pub fn stop_waiting(&mut self, id: TaskId, cpu: u16) {
        self.unqueue(id);
        self.cpus[cpu as usize].switched_in = Some(id);
    }

    /// Whether `id` is still the task switched in on `cpu` (it neither
    /// slept nor lost the CPU to another task or a kernel thread since it
    /// last ran).
    pub fn still_switched_in(&self, id: TaskId, cpu: u16) -> bool {
        self.cpus[cpu as usize].switched_in == Some(id)
    }

    /// `id` is runnable but a kernel thread runs on `cpu` (the device's
    /// worker, outside these queues): it waits, even if it had the CPU.
    pub fn wait_for_kernel_thread(&mut self, id: TaskId, cpu: u16) {
        if !self.is_queued(id) {
            if self.cpus[cpu as usize].curr != Some(id) {
                self.place_after_sleep(id, cpu);
            }
            self.enqueue(id, cpu);
        }
        self.kernel_thread_took(cpu);
    }

    /// A kernel thread outside these queues ran work on `cpu` without
    /// taking a turn (the flusher, kjournald2, dm-crypt's workers): the task
    /// that had the CPU was switched out for it.
    pub fn kernel_thread_ran(&mut self, cpu: u16) {
        if let Some(rq) = self.cpus.get_mut(cpu as usize) {
            rq.switched_in = None;
        }
    }

    /// A kernel thread outside these queues (the device's worker) got
    /// `cpu`: the task that had it no longer holds it, and the next turn
    /// goes by virtual runtime.
    pub fn kernel_thread_took(&mut self, cpu: u16) {
        let rq = &mut self.cpus[cpu as usize];
        rq.curr = None;
        rq.curr_runnable = false;
        rq.slice_used = 0;
        rq.switched_in = None;
    }

    #[inline]
    fn is_queued(&self, id: TaskId) -> bool {
        self.waits_on[id as usize].is_some()
    }

    /// `id` stops waiting (if it did).
    fn unqueue(&mut self, id: TaskId) {
        if let Some(cpu) = self.waits_on[id as usize].take() {
            let key = (self.vruntime[id as usize], id);
            let rq = &mut self.cpus[cpu as usize];
            rq.waiting.remove(&key);
            rq.waiting_vruntime -= key.0 as u128;
            self.nr_waiting -= 1;
        }
    }

    /// The least (vruntime, id) among `cpu`'s waiting tasks other than
    /// `except`.
    fn least_waiting(&self, cpu: u16, except: TaskId) -> Option<TaskId> {
        self.cpus[cpu as usize]
            .waiting
            .iter()
            .map(|&(_, w)| w)
            .find(|&w| w != except)
    }

    /// `id` asks for `cpu`, which is free now.
    pub fn ask(&mut self, id: TaskId, cpu: u16) -> Grant {
        self.ask_as(id, cpu, false)
    }

    /// `id`, just woken from a sleep, asks for `cpu`, which is free now.
    /// A wake-up is when EEVDF checks whether to preempt the current task
    /// (`check_preempt_wakeup_fair`), and RUN_TO_PARITY protects the current
    /// task only while it is eligible (its vruntime not past the average of
    /// the CPU's runnable tasks, the woken one included) and within its slice
    /// (`pick_eevdf`: a current task that is not eligible is not kept;
    /// kernel/sched/fair.c, v6.6-v6.18). A task that only waited its turn
    /// asks with `ask` and is not a wake-up.
    pub fn ask_woken(&mut self, id: TaskId, cpu: u16) -> Grant {
        self.ask_as(id, cpu, true)
    }

    /// Whether the current task `holder` of `cpu` is eligible when `id`
    /// (placed as after a sleep) joins its runnable tasks: its vruntime is
    /// at most their average.
    fn eligible_with(&self, holder: TaskId, id: TaskId, cpu: u16) -> bool {
        let rq = &self.cpus[cpu as usize];
        let joining = if self.is_queued(id) {
            0
        } else {
            self.placed_vruntime(id, cpu) as u128
        };
        let n = rq.waiting.len() as u128 + 1 + u128::from(!self.is_queued(id));
        let sum = rq.waiting_vruntime + self.vruntime[holder as usize] as u128 + joining;
        self.vruntime[holder as usize] as u128 * n <= sum
    }

    fn ask_as(&mut self, id: TaskId, cpu: u16, woken: bool) -> Grant {
        let slice = self.slice_ns;
        let rq = &mut self.cpus[cpu as usize];
        if rq.tasks <= 1 {
            // Alone on the CPU (the others ended): a turn it waited for
            // before is over, or the CPU would never look idle again.
            rq.switched_in = Some(id);
            self.unqueue(id);
            return Grant::Run { switch_ns: 0 };
        }
        let curr_in_slice = rq.slice_used < slice;
        if rq.curr == Some(id) && curr_in_slice {
            rq.switched_in = Some(id);
            self.unqueue(id);
            return Grant::Run { switch_ns: 0 };
        }
        // The task that has the CPU and will go on using it (it did not go to
        // sleep) keeps it for the rest of its slice (EEVDF's RUN_TO_PARITY),
        // against a task woken from a sleep only while it is eligible.
        // A holder that is not eligible is no candidate for the woken task
        // to wait for (EEVDF picks among eligible tasks only).
        let curr = rq.curr;
        let mut holder = curr.filter(|&c| c != id && rq.curr_runnable);
        if woken && holder.is_some_and(|h| !self.eligible_with(h, id, cpu)) {
            holder = None;
        }
        if holder.is_some() && curr_in_slice {
            self.enqueue(id, cpu);
            return Grant::Wait;
        }
        if curr != Some(id) && !self.is_queued(id) {
            self.place_after_sleep(id, cpu);
        }
        let vr = &self.vruntime;
        let best = self
            .least_waiting(cpu, id)
            .into_iter()
            .chain(holder)
            .min_by_key(|&w| (vr[w as usize], w))
            .filter(|&b| vr[b as usize] < vr[id as usize]);
        match best {
            Some(b) if Some(b) == holder => {
                self.enqueue(id, cpu);
                Grant::Wait
            }
            Some(b) => {
                self.enqueue(id, cpu);
                Grant::Yield(b)
            }
            None => Grant::Run {
                switch_ns: self.switch_to(id, cpu),
            },
        }
    }

    /// `id` joins `cpu`'s waiting tasks (once).
    fn enqueue(&mut self, id: TaskId, cpu: u16) {
        if !self.is_queued(id) {
            self.waits_on[id as usize] = Some(cpu);
            let key = (self.vruntime[id as usize], id);
            let rq = &mut self.cpus[cpu as usize];
            rq.waiting.insert(key);
            rq.waiting_vruntime += key.0 as u128;
            self.nr_waiting += 1;
        }
    }

    /// Change a task's vruntime, re-keying it where it waits.
    fn set_vruntime(&mut self, id: TaskId, v: Ns) {
        let old = self.vruntime[id as usize];
        if old == v {
            return;
        }
        if let Some(cpu) = self.waits_on[id as usize] {
            let rq = &mut self.cpus[cpu as usize];
            rq.waiting.remove(&(old, id));
            rq.waiting.insert((v, id));
            rq.waiting_vruntime = rq.waiting_vruntime - old as u128 + v as u128;
        }
        self.vruntime[id as usize] = v;
    }

    /// `place_entity`: a task back from a sleep starts no more than half a
    /// slice behind the least vruntime on its CPU.
    fn place_after_sleep(&mut self, id: TaskId, cpu: u16) {
        let v = self.placed_vruntime(id, cpu);
        self.set_vruntime(id, v);
    }

    /// The vruntime `id` gets on `cpu` back from a sleep (`place_after_sleep`).
    fn placed_vruntime(&self, id: TaskId, cpu: u16) -> Ns {
        let floor = self.cpus[cpu as usize]
            .min_vruntime
            .saturating_sub(self.slice_ns / 2);
        self.vruntime[id as usize].max(floor)
    }

    /// `id` gets `cpu`: a new slice, and a context switch when another task
    /// had it.
    fn switch_to(&mut self, id: TaskId, cpu: u16) -> Ns {
        self.unqueue(id);
        let rq = &mut self.cpus[cpu as usize];
        let switch_ns = if rq.curr.is_some_and(|c| c != id) {
            self.switch_ns
        } else {
            0
        };
        rq.curr = Some(id);
        rq.curr_runnable = true;
        rq.switched_in = Some(id);
        rq.slice_used = 0;
        let own = self.vruntime[id as usize];
        let least = rq.waiting.first().map_or(own, |&(v, _)| v.min(own));
        rq.min_vruntime = rq.min_vruntime.max(least);
        switch_ns
    }

    /// After `id` acted: whether it goes on wanting its CPU (false when it
    /// went to sleep: waiting for I/O, thinking, throttled).
    pub fn set_runnable(&mut self, id: TaskId, cpu: u16, runnable: bool) {
        let was = std::mem::replace(&mut self.runnable[id as usize], runnable);
        let rq = &mut self.cpus[cpu as usize];
        if was != runnable {
            if runnable {
                rq.nr_running += 1;
            } else {
                rq.nr_running -= 1;
            }
        }
        if rq.curr == Some(id) {
            rq.curr_runnable = runnable;
        }
        if !runnable && rq.switched_in == Some(id) {
            rq.switched_in = None;
        }
    }

    /// Whether a task holds `cpu` within its slice and goes on wanting it
    /// (a kernel thread woken there waits for its turn).
    pub fn holds(&self, cpu: u16) -> bool {
        // A task alone on its CPU takes it without asking (its slice is not
        // kept): the worker does not wait for it.
        let rq = &self.cpus[cpu as usize];
        rq.tasks > 1 && rq.curr.is_some() && rq.curr_runnable && rq.slice_used < self.slice_ns
    }

    /// Whether the waiting tasks should be woken when `cpu` frees: the
    /// current task went to sleep, had its slice or ended.
    pub fn turn_over(&self, cpu: u16) -> bool {
        let rq = &self.cpus[cpu as usize];
        !rq.waiting.is_empty()
            && (rq.curr.is_none() || !rq.curr_runnable || rq.slice_used >= self.slice_ns)
    }

    /// `id` ran for `ns` of CPU time on `cpu`.
    pub fn account(&mut self, id: TaskId, cpu: u16, ns: Ns) {
        self.set_vruntime(id, self.vruntime[id as usize] + ns);
        let rq = &mut self.cpus[cpu as usize];
        if rq.curr == Some(id) {
            rq.slice_used += ns;
        }
    }

    /// The waiting task to wake when `cpu` frees (the least vruntime).
    pub fn next_waiter(&self, cpu: u16) -> Option<TaskId> {
        self.cpus[cpu as usize].waiting.first().map(|&(_, w)| w)
    }

    /// Whether `id` waits for `cpu` behind another waiting task (so it is
    /// woken in turn, not when the CPU next frees).
    pub fn waits_behind_another(&self, id: TaskId, cpu: u16) -> bool {
        self.waits_on[id as usize] == Some(cpu) && self.next_waiter(cpu) != Some(id)
    }

    /// How many runnable tasks wait for `cpu`.
    pub fn waiting_len(&self, cpu: u16) -> u32 {
        self.cpus[cpu as usize].waiting.len() as u32
    }

    /// Whether `id` waits for `cpu`.
    #[cfg(test)]
    pub fn is_waiting(&self, id: TaskId, cpu: u16) -> bool {
        self.waits_on[id as usize] == Some(cpu)
    }

    /// A task's virtual runtime (its CPU time so far, adjusted on wake-up).
    pub fn vruntime(&self, id: TaskId) -> Ns {
        self.vruntime[id as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run queues on the newest kernel's slice.
    fn rqs(nr_cpus: usize, nr_tasks: usize, switch_ns: Ns) -> RunQueues {
        let slice = crate::kernel::Era::newest().slice_ns(nr_cpus);
        RunQueues::new(nr_cpus, nr_tasks, switch_ns, slice)
    }

    fn two_on_one() -> RunQueues {
        let mut rq = rqs(1, 2, 100);
        rq.place(0);
        rq.place(0);
        rq
    }

    #[test]
    fn a_lone_task_always_runs_for_free() {
        let mut rq = rqs(2, 2, 100);
        rq.place(0);
        rq.place(1);
        for _ in 0..3 {
            assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
            rq.account(0, 0, 10_000_000);
        }
        assert!(!rq.shared(0));
    }

    #[test]
    fn a_task_stays_switched_in_until_it_sleeps_or_another_runs() {
        let mut rq = two_on_one();
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.set_runnable(0, 0, true);
        // Interrupt work in between changes nothing here.
        assert!(rq.still_switched_in(0, 0));
        assert!(!rq.still_switched_in(1, 0));
        // A sleep switches it out (the CPU goes idle or to another task).
        rq.set_runnable(0, 0, false);
        assert!(!rq.still_switched_in(0, 0));
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        assert!(rq.still_switched_in(0, 0));
        // A kernel thread outside the queues that ran there does too.
        rq.kernel_thread_ran(0);
        assert!(!rq.still_switched_in(0, 0));
        // Another task's turn.
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.set_runnable(0, 0, false);
        assert_eq!(rq.ask(1, 0), Grant::Run { switch_ns: 100 });
        assert!(rq.still_switched_in(1, 0) && !rq.still_switched_in(0, 0));
        // Alone on its CPU, a task is switched in when it runs.
        let mut lone = rqs(2, 2, 100);
        lone.place(0);
        lone.place(1);
        lone.stop_waiting(1, 1);
        assert!(lone.still_switched_in(1, 1));
    }

    #[test]
    fn a_woken_task_preempts_a_current_task_past_parity_within_its_slice() {
        // Three tasks on one CPU: 0 runs, 1 waits its turn, 2 sleeps.
        let mut rq = rqs(1, 3, 100);
        for _ in 0..3 {
            rq.place(0);
        }
        let slice = rq.slice_ns();
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.set_runnable(0, 0, true);
        rq.wait(1, 0);
        // Task 0 ran a tenth of its slice: past the average of the CPU's
        // runnable tasks (its vruntime above theirs), so not eligible.
        rq.account(0, 0, slice / 10);
        // A task that only waited its turn does not preempt within the slice,
        assert_eq!(rq.ask(1, 0), Grant::Wait);
        // a woken one does, being owed more than the current task.
        assert_eq!(rq.ask_woken(2, 0), Grant::Run { switch_ns: 100 });
        // While the current task is still at or below the average (it has
        // just started and the others are ahead of it), a wake-up waits.
        let mut rq = rqs(1, 3, 100);
        for _ in 0..3 {
            rq.place(0);
        }
        rq.account(1, 0, slice / 10);
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.set_runnable(0, 0, true);
        rq.wait(1, 0);
        rq.account(2, 0, slice / 10);
        assert_eq!(rq.ask_woken(2, 0), Grant::Wait);
    }

    #[test]
    fn the_current_task_keeps_the_cpu_for_its_slice_then_yields() {
        let mut rq = two_on_one();
        let slice = rq.slice_ns();
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.wait(1, 0);
        // Within its slice, task 0 keeps the CPU although 1 has had less,
        // and 1 asking meanwhile waits.
        rq.account(0, 0, slice / 2);
        rq.set_runnable(0, 0, true);
        assert!(!rq.turn_over(0));
        assert_eq!(rq.ask(1, 0), Grant::Wait);
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.account(0, 0, slice / 2);
        assert!(rq.turn_over(0));
        // Slice used up: the waiter with less vruntime gets its turn.
        assert_eq!(rq.ask(0, 0), Grant::Yield(1));
        assert_eq!(rq.next_waiter(0), Some(1));
        assert_eq!(rq.ask(1, 0), Grant::Run { switch_ns: 100 });
        assert_eq!(rq.next_waiter(0), Some(0));
    }

    #[test]
    fn a_kernel_thread_waits_for_a_holder_and_takes_its_turn_from_it() {
        let mut rq = two_on_one();
        let slice = rq.slice_ns();
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.account(0, 0, slice / 4);
        rq.set_runnable(0, 0, true);
        // Within its slice task 0 holds the CPU: a kernel thread waits.
        assert!(rq.holds(0));
        // Asleep, it holds nothing.
        rq.set_runnable(0, 0, false);
        assert!(!rq.holds(0));
        rq.set_runnable(0, 0, true);
        // The thread took the CPU: task 0, asking again, waits like task
        // 1, and the next turn goes by virtual runtime (1 has had less).
        rq.wait_for_kernel_thread(0, 0);
        rq.wait_for_kernel_thread(1, 0);
        assert!(!rq.holds(0));
        assert_eq!(rq.next_waiter(0), Some(1));
        assert_eq!(rq.ask(1, 0), Grant::Run { switch_ns: 0 });
        assert_eq!(rq.next_waiter(0), Some(0));
    }

    #[test]
    fn a_current_task_that_sleeps_hands_the_cpu_over_at_once() {
        let mut rq = two_on_one();
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.account(0, 0, 1_000);
        rq.wait(1, 0);
        // Task 0 waits for its I/O: task 1 runs although 0's slice is young.
        rq.set_runnable(0, 0, false);
        assert!(rq.turn_over(0));
        assert_eq!(rq.ask(1, 0), Grant::Run { switch_ns: 100 });
        // Back from its I/O, task 0 waits for task 1's slice.
        rq.set_runnable(1, 0, true);
        assert_eq!(rq.ask(0, 0), Grant::Wait);
    }

    #[test]
    fn shares_converge_to_equal_cpu_time() {
        // Two always-runnable tasks asking in turn for 10 us calls.
        let mut rq = two_on_one();
        let mut ran = [0u64; 2];
        let mut asker = 0u32;
        for _ in 0..100_000 {
            match rq.ask(asker, 0) {
                Grant::Run { .. } => {
                    rq.account(asker, 0, 10_000);
                    ran[asker as usize] += 10_000;
                    rq.set_runnable(asker, 0, true);
                }
                Grant::Yield(other) => asker = other,
                Grant::Wait => panic!("the holder asks, not a waiter"),
            }
            rq.wait(1 - asker, 0);
        }
        let (a, b) = (ran[0] as f64, ran[1] as f64);
        assert!((a - b).abs() / (a + b) < 0.02, "{ran:?}");
    }

    #[test]
    fn a_long_sleeper_gets_at_most_half_a_slice_of_credit() {
        let mut rq = two_on_one();
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.account(0, 0, 1_000_000_000);
        // Task 0 runs alone for a second (its slice renews while nobody waits).
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.set_runnable(0, 0, true);
        rq.wait(1, 0);
        let floor = rq.vruntime(0) - rq.slice_ns() / 2;
        assert!(rq.vruntime(1) >= floor, "{} < {floor}", rq.vruntime(1));
    }

    #[test]
    fn a_current_task_that_ends_hands_the_cpu_over() {
        let mut rq = two_on_one();
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.set_runnable(0, 0, true);
        rq.wait(1, 0);
        assert!(!rq.turn_over(0));
        rq.leave(0, 0);
        assert!(rq.turn_over(0));
        assert_eq!(rq.next_waiter(0), Some(1));
    }

    #[test]
    fn a_task_that_leaves_is_never_picked() {
        let mut rq = two_on_one();
        rq.ask(0, 0);
        rq.wait(1, 0);
        rq.leave(1, 0);
        assert_eq!(rq.next_waiter(0), None);
        assert!(!rq.shared(0));
    }

    #[test]
    fn a_task_left_alone_on_its_cpu_stops_waiting() {
        let mut rq = two_on_one();
        rq.ask(0, 0);
        rq.set_runnable(0, 0, true);
        rq.wait(1, 0);
        rq.leave(0, 0);
        // Task 1 is alone now: it runs and no longer counts as waiting.
        assert_eq!(rq.ask(1, 0), Grant::Run { switch_ns: 0 });
        assert!(!rq.is_waiting(1, 0));
        assert!(!rq.turn_over(0));
    }

    #[test]
    fn a_lone_task_waiting_for_work_outside_the_queues_is_counted() {
        let mut rq = rqs(2, 3, 100);
        rq.place(0);
        rq.place(0);
        rq.place(1);
        // Task 2 had CPU 1 to itself and finds it busy (the device's
        // worker): it counts as waiting there, then runs and stops waiting.
        assert_eq!(rq.ask(2, 1), Grant::Run { switch_ns: 0 });
        rq.wait(2, 1);
        assert_eq!(rq.waiting_len(1), 1);
        rq.wait(2, 1);
        assert_eq!(rq.waiting_len(1), 1, "counted once");
        rq.stop_waiting(2, 1);
        assert_eq!(rq.waiting_len(1), 0);
    }

    /// Waiters are ordered by (vruntime, id) and re-keyed when their
    /// vruntime moves; only the first is woken when the CPU frees.
    #[test]
    fn waiters_queue_by_vruntime_and_only_the_first_is_next() {
        let mut rq = rqs(1, 4, 100);
        for _ in 0..4 {
            rq.place(0);
        }
        assert_eq!(rq.ask(0, 0), Grant::Run { switch_ns: 0 });
        rq.set_runnable(0, 0, true);
        rq.account(3, 0, 50);
        for id in [3, 2, 1] {
            rq.wait(id, 0);
        }
        assert_eq!(rq.waiting_len(0), 3);
        assert_eq!(rq.next_waiter(0), Some(1));
        assert!(!rq.waits_behind_another(1, 0));
        assert!(rq.waits_behind_another(2, 0) && rq.waits_behind_another(3, 0));
        // Task 1 gets more runtime while it waits: 2 is next, 3 (50) stays
        // behind 1 (80).
        rq.account(1, 0, 80);
        assert_eq!(rq.next_waiter(0), Some(2));
        rq.leave(2, 0);
        assert_eq!(rq.next_waiter(0), Some(3));
        assert!(
            !rq.waits_behind_another(0, 0),
            "the running task waits for nothing"
        );
    }
}
