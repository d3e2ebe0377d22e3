//! What runs on the simulated CPUs: tasks. A task has an id, a kind (a fio
//! job today; the flusher, jbd2 and kworkers of buffered I/O and CPU-bound
//! devices build on the same frame), the CPU it runs on, the identity its
//! bios carry (pid, cgroup, I/O priority) and, while it waits, why.
//!
//! Tasks act only when the event loop steps them (a timer of theirs fired,
//! or the block layer woke them) and never ahead of the event clock, so
//! shared resources — the queue lock, tags, the device — are granted in time
//! order. A bio's owner is the submitting task's id with a tag of the task's
//! own ([`BioOwner`]); completions are routed back by it.

pub mod costs;
pub mod fio;
pub mod flusher;
pub mod jbd2;
pub mod kcryptd;
pub mod runqueue;

use crate::block::{BioDone, BioSubmit, BlockLayer, BlockWait, Env, Plug, SubmitResult};
use crate::cache::PageCache;
use crate::cgroup::IoPrio;
use crate::fs::Ext4;
use crate::sim::event::{Event, EventQueue};
use crate::sim::time::Ns;
use runqueue::{Grant, RunQueues};

/// A task's number (also its pid as the block layer sees it).
pub type TaskId = u32;

/// What a task is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// A fio job (one thread or process of `numjobs`).
    FioJob,
    /// The device's writeback worker (`kworker/uN:M` flush-MAJ:MIN).
    Flusher,
    /// The ext4 journal's commit thread (`jbd2/<dev>-8`).
    Jbd2,
    /// A CPU's dm-crypt worker (`kworker/N:M` running `kcryptd`).
    Kcryptd,
}

/// Why a task is not running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SleepReason {
    /// No tag or request could be allocated (`blk_mq_get_tag`, legacy
    /// `get_request`); woken when one frees.
    Tag,
    /// The queue is frozen for a scheduler switch (`blk_queue_enter`).
    Freeze,
    /// Held back by a queue's rq-qos policy (writeback throttling, ...).
    Throttle,
    /// Waiting for its own I/O (`io_getevents`, a synchronous read).
    Io,
    /// fio's `thinktime`.
    ThinkTime,
    /// fio's `rate` / `rate_iops`.
    Rate,
    /// Not started yet (`startdelay`, a stonewall before it).
    Start,
    /// Dirty-page throttling (`balance_dirty_pages`).
    DirtyThrottle,
    /// `fsync`/`fdatasync` waiting for writeback and the cache flush.
    Fsync,
    /// Runnable, but another task has its CPU (`runqueue`).
    Cpu,
}

/// Why the block layer sent a submitting task to sleep.
impl From<BlockWait> for SleepReason {
    fn from(why: BlockWait) -> SleepReason {
        match why {
            BlockWait::Tag => SleepReason::Tag,
            BlockWait::Frozen => SleepReason::Freeze,
            BlockWait::RqQos => SleepReason::Throttle,
        }
    }
}

impl SleepReason {
    /// Whether only the block layer wakes the task (no timer of its own).
    pub fn woken_by_block(self) -> bool {
        matches!(
            self,
            SleepReason::Tag | SleepReason::Freeze | SleepReason::Throttle
        )
    }
}

/// The owner of a bio: the submitting task and the task's own tag for it
/// (a fio job's I/O unit slot), packed into the block layer's opaque token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BioOwner {
    pub task: TaskId,
    pub tag: u32,
}

impl BioOwner {
    pub fn token(self) -> u64 {
        ((self.task as u64) << 32) | self.tag as u64
    }
    pub fn from_token(token: u64) -> BioOwner {
        BioOwner {
            task: (token >> 32) as TaskId,
            tag: (token & 0xffff_ffff) as u32,
        }
    }
}

/// The scheduling frame every task has.
#[derive(Clone, Debug)]
pub struct Task {
    pub id: TaskId,
    pub kind: TaskKind,
    /// The CPU it runs on.
    pub cpu: u16,
    /// The cgroup its bios are charged to (index into the run's cgroups).
    pub cgroup: u16,
    pub ioprio: IoPrio,
    /// Why it is not running, when it waits.
    pub sleep: Option<SleepReason>,
    /// Its wake-up timer is armed for this time.
    pub wake_pending: Option<Ns>,
    /// The CPU work of its current call ends here.
    pub busy_until: Ns,
    /// Back from a sleep of its own and not run since (on a shared CPU):
    /// its turn is a wake-up, which may preempt the current task.
    pub woken: bool,
}

impl Task {
    pub fn new(id: TaskId, kind: TaskKind, cpu: u16, cgroup: u16, ioprio: IoPrio) -> Task {
        Task {
            id,
            kind,
            cpu,
            cgroup,
            ioprio,
            sleep: None,
            wake_pending: None,
            busy_until: 0,
            woken: false,
        }
    }

    /// Blocked in the block layer (tag, freeze, throttle): only a wake-up
    /// from there lets it go on.
    pub fn blocked(&self) -> bool {
        self.sleep.is_some_and(SleepReason::woken_by_block)
    }

    /// Whether it goes on wanting its CPU (not asleep, or waiting only for
    /// the CPU).
    pub fn runnable(&self) -> bool {
        matches!(self.sleep, None | Some(SleepReason::Cpu))
    }
}

/// What a task may use while it acts: the clock, the block layer and the
/// event queue (through the block layer's environment), and the loop's list
/// of tasks to step again at once.
pub struct TaskCx<'a> {
    pub now: Ns,
    pub block: &'a mut BlockLayer,
    pub events: &'a mut EventQueue,
    pub done: &'a mut Vec<BioDone>,
    pub woken: &'a mut Vec<u32>,
    /// Tasks to step again after this one, at the same time.
    pub ready: &'a mut Vec<TaskId>,
    /// The page cache, when some job does buffered I/O.
    pub cache: Option<&'a mut PageCache>,
    /// Who gets a CPU that several tasks want.
    pub cpus: &'a mut RunQueues,
    /// The ext4 file system the jobs' files are on (`--mount`), if any.
    pub fs: Option<&'a mut Ext4>,
    /// dm-crypt's worker queues (`--dm crypt`), if the jobs write through it.
    pub crypt: Option<&'a mut kcryptd::CryptQueues>,
}

impl TaskCx<'_> {
    /// Arm `task`'s wake-up at `at` (an earlier pending one stands).
    pub fn wake_at(&mut self, task: &mut Task, at: Ns) {
        if task.wake_pending.is_some_and(|t| t <= at) {
            return;
        }
        task.wake_pending = Some(at);
        self.events.push(at, Event::wake(task.id));
    }

    /// Whether kernel task `task` (flusher, kjournald2, a dm-crypt worker)
    /// may act now: not blocked in the block layer, and its CPU free (else
    /// it is woken when it frees).
    pub fn kernel_task_may_run(&mut self, task: &mut Task) -> bool {
        if task.blocked() {
            return false;
        }
        let ready = task.busy_until.max(self.block.cpu_free_at(task.cpu));
        if self.now < ready {
            self.wake_at(task, ready);
            return false;
        }
        task.sleep = None;
        true
    }

    /// Step `task` again right after the current event.
    pub fn step_again(&mut self, task: TaskId) {
        self.ready.push(task);
    }

    /// Whether `task` may use its CPU now. When its CPU is still busy it is
    /// woken when the CPU frees. On a CPU shared with other tasks the fair
    /// scheduler decides (see `runqueue`): the task may have to wait for
    /// another one's turn, and a switch between tasks costs CPU time first.
    #[inline]
    pub fn take_cpu(&mut self, task: &mut Task) -> bool {
        let ready = task.busy_until.max(self.block.cpu_free_at(task.cpu));
        if !self.cpus.any_shared() {
            if self.now < ready {
                self.wake_at(task, ready);
                return false;
            }
            return true;
        }
        self.take_shared_cpu(task, ready)
    }

    /// `take_cpu` when some CPU is shared by several tasks.
    #[inline(never)]
    fn take_shared_cpu(&mut self, task: &mut Task, ready: Ns) -> bool {
        let shared = self.cpus.shared(task.cpu);
        // Back from a sleep of its own (not a wait for the CPU): a wake-up,
        // until it runs (waiting for the CPU meanwhile does not end it).
        if task.sleep.is_some_and(|r| r != SleepReason::Cpu) {
            task.woken = true;
        }
        if self.now < ready {
            if ready > task.busy_until {
                // Other work holds the CPU (another task's, the device's
                // worker's): the task waits for it, alone there or not.
                self.cpus.wait(task.id, task.cpu);
                task.sleep = Some(SleepReason::Cpu);
                // Only the task whose turn is next is woken when the CPU
                // frees; the others are woken in turn as each task that had
                // the CPU lets it go (the engine's `share_cpu`). Waking all
                // of them at every free instant made runs with hundreds of
                // jobs per CPU quadratic, each turn re-arming every waiter.
                if self.cpus.waits_behind_another(task.id, task.cpu) {
                    return false;
                }
            }
            self.wake_at(task, ready);
            return false;
        }
        // Waiting only for interrupt work (completions) on the CPU it kept
        // is no context switch: the task was never switched out.
        if task.sleep == Some(SleepReason::Cpu) && self.cpus.still_switched_in(task.id, task.cpu) {
            task.sleep = None;
        }
        if !shared {
            self.cpus.stop_waiting(task.id, task.cpu);
            task.woken = false;
            return true;
        }
        if self.block.worker_seat().on == Some(task.cpu) {
            // The device's worker runs its list here: the task waits its
            // turn (woken when the worker leaves).
            self.cpus.wait_for_kernel_thread(task.id, task.cpu);
            task.sleep = Some(SleepReason::Cpu);
            return false;
        }
        let grant = if task.woken {
            self.cpus.ask_woken(task.id, task.cpu)
        } else {
            self.cpus.ask(task.id, task.cpu)
        };
        match grant {
            Grant::Run { switch_ns } => {
                if switch_ns > 0 {
                    self.block.cpu_run(task.cpu, self.now, switch_ns);
                }
                task.woken = false;
                true
            }
            Grant::Yield(other) => {
                task.sleep = Some(SleepReason::Cpu);
                self.step_again(other);
                false
            }
            Grant::Wait => {
                task.sleep = Some(SleepReason::Cpu);
                false
            }
        }
    }

    /// Wake kjournald2 when the journal asked for it (a transaction
    /// started and armed its commit timer, or a commit was requested).
    pub fn kick_jbd2(&mut self) {
        if let Some(fs) = self.fs.as_deref_mut() {
            if let Some(at) = fs.journal.take_wake() {
                let id = fs.jbd2_task;
                self.events.push(at.max(self.now), Event::wake(id));
            }
        }
    }

    /// `submit_bio` of the device the jobs see: through dm-crypt's
    /// `crypt_map` when there is one (a write goes to its CPU's worker and
    /// is taken; a read gets the workers' owner token for its decryption),
    /// else straight to the block layer.
    #[inline(always)]
    pub fn submit_bio(&mut self, b: &mut BioSubmit, plug: Option<&mut Plug>) -> SubmitResult {
        if self.crypt.is_some() {
            return self.submit_bio_crypt(b, plug);
        }
        let b = &*b;
        self.with_block(|blk, env| blk.submit_bio(env, b, plug))
    }

    /// `submit_bio` through dm-crypt.
    #[inline(never)]
    fn submit_bio_crypt(&mut self, b: &mut BioSubmit, plug: Option<&mut Plug>) -> SubmitResult {
        let q = self.crypt.as_deref_mut().expect("dm-crypt");
        if q.map(b, self.ready) {
            return SubmitResult::Taken;
        }
        let bio = *b;
        let r = self.with_block(|blk, env| blk.submit_bio(env, &bio, plug));
        if let (SubmitResult::Sleep(_), Some(q)) = (r, self.crypt.as_deref_mut()) {
            q.unmap(b);
        }
        r
    }

    /// Call into the block layer at the current time.
    pub fn with_block<R>(&mut self, f: impl FnOnce(&mut BlockLayer, &mut Env) -> R) -> R {
        let mut env = Env {
            now: self.now,
            events: self.events,
            done: self.done,
            woken: self.woken,
        };
        f(self.block, &mut env)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bio_owner_round_trips() {
        for (task, tag) in [(0, 0), (7, 123), (u32::MAX, u32::MAX)] {
            let o = BioOwner { task, tag };
            assert_eq!(BioOwner::from_token(o.token()), o);
        }
    }

    #[test]
    fn block_waits_are_the_blocking_reasons() {
        let mut t = Task::new(1, TaskKind::FioJob, 0, 0, IoPrio::default());
        assert!(!t.blocked());
        t.sleep = Some(SleepReason::ThinkTime);
        assert!(!t.blocked());
        for r in [SleepReason::Tag, SleepReason::Freeze, SleepReason::Throttle] {
            t.sleep = Some(r);
            assert!(t.blocked());
        }
    }
}
