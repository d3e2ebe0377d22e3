//! Test harness for the block layer alone: a scripted device and an event
//! loop without the fio job driver, so unit tests can submit bios at chosen
//! times and watch requests, flushes and completions.

use super::cpu::{CpuCosts, NamedSchedCost, SchedCost};
use super::driver::{Device, DeviceCmd, DeviceOut, QueueLimits, Submit};
use super::knobs::QueueKnobs;
use super::request::{flags, Op, RqId};
use super::{BioDone, BioSubmit, BlockLayer, Env, SubmitResult};
use crate::cgroup::CgroupTree;
use crate::cgroup::IoPrio;
use crate::kernel::Era;
use crate::sim::event::{Event, EventQueue, TimerOwner};
use crate::sim::time::Ns;
use std::cell::RefCell;
use std::rc::Rc;

/// What the test device saw: (time, command).
pub type Log = Rc<RefCell<Vec<(Ns, DeviceCmd)>>>;

/// A device that completes every command after a fixed latency per kind,
/// with at most `limits.queue_depth` commands at once (more are Busy).
pub struct TestDevice {
    pub limits: QueueLimits,
    pub read_ns: Ns,
    pub write_ns: Ns,
    pub flush_ns: Ns,
    /// Commands it accepted and has not completed.
    pub inflight: u32,
    /// Refuse everything (BLK_STS_RESOURCE) while set.
    pub busy: Rc<RefCell<bool>>,
    /// Accept but never complete while set (for driver requeues).
    pub hold: Rc<RefCell<bool>>,
    pub log: Log,
}

impl TestDevice {
    pub fn new(write_cache: bool, fua: bool, queue_depth: u32) -> TestDevice {
        TestDevice {
            limits: QueueLimits {
                capacity: 1 << 30,
                logical_block_size: 512,
                nr_hw_queues: 1,
                queue_depth,
                rotational: false,
                write_cache,
                fua,
                max_hw_sectors_kb: 128,
                max_segments: 128,
                budget: false,
                discard: true,
            },
            read_ns: 100_000,
            write_ns: 100_000,
            flush_ns: 1_000_000,
            inflight: 0,
            busy: Rc::new(RefCell::new(false)),
            hold: Rc::new(RefCell::new(false)),
            log: Rc::new(RefCell::new(Vec::new())),
        }
    }
}

impl Device for TestDevice {
    fn limits(&self) -> &QueueLimits {
        &self.limits
    }
    fn submit(&mut self, now: Ns, cmd: &DeviceCmd, out: &mut DeviceOut) -> Submit {
        if *self.busy.borrow() || self.inflight >= self.limits.queue_depth {
            return Submit::Busy;
        }
        self.log.borrow_mut().push((now, *cmd));
        if *self.hold.borrow() {
            return Submit::Accepted;
        }
        self.inflight += 1;
        let t = match cmd.op {
            Op::Read => self.read_ns,
            Op::Flush => self.flush_ns,
            _ => self.write_ns,
        };
        out.completions.push((now + t, cmd.id));
        Submit::Accepted
    }
    fn completed(&mut self, _now: Ns, _id: RqId, _out: &mut DeviceOut) {
        self.inflight -= 1;
    }
    fn set_write_cache(&mut self, write_back: bool) {
        self.limits.write_cache = write_back;
    }
}

/// CPU costs of zero, so times are the device's alone.
pub fn free_cpu() -> CpuCosts {
    let zero = SchedCost {
        insert_ns: 0,
        dispatch_ns: 0,
        complete_ns: 0,
        merge_ns: 0,
        locked: false,
    };
    CpuCosts {
        submit_ns: 0,
        driver_ns: 0,
        complete_ns: 0,
        lock_handoff_ns: 0,
        wake_ns: 0,
        wake_deep_ns: 0,
        wake_deep_after_ns: 0,
        sleep_ns: None,
        cost_spread: None,
        sched: ["mq-deadline", "deadline", "noop"]
            .iter()
            .map(|n| NamedSchedCost {
                name: n.to_string(),
                cost: zero,
            })
            .collect(),
        host_speed: None,
        hook_speed: None,
        cache_speed: None,
    }
}

/// A block layer on a test device with its own event loop.
pub struct Harness {
    pub bl: BlockLayer,
    pub events: EventQueue,
    pub now: Ns,
    /// Completed bios (owner, time), in completion order.
    pub done: Vec<BioDone>,
    /// Tasks woken and not yet retried.
    pub woken: Vec<u32>,
    pub log: Log,
    pub busy: Rc<RefCell<bool>>,
    pub hold: Rc<RefCell<bool>>,
}

impl Harness {
    pub fn new(dev: TestDevice, scheduler: &str, cpus: usize) -> Harness {
        Harness::with_knobs(dev, scheduler, cpus, QueueKnobs::default())
    }

    pub fn with_knobs(dev: TestDevice, scheduler: &str, cpus: usize, knobs: QueueKnobs) -> Harness {
        Harness::with_knobs_in(dev, scheduler, cpus, knobs, Era::newest())
    }

    /// A harness on the block layer of kernel `era`.
    pub fn in_era(dev: TestDevice, scheduler: &str, cpus: usize, era: Era) -> Harness {
        Harness::with_knobs_in(dev, scheduler, cpus, QueueKnobs::default(), era)
    }

    fn with_knobs_in(
        dev: TestDevice,
        scheduler: &str,
        cpus: usize,
        knobs: QueueKnobs,
        era: Era,
    ) -> Harness {
        let log = dev.log.clone();
        let busy = dev.busy.clone();
        let hold = dev.hold.clone();
        // Tests drive concrete schedulers from the registry (test code may
        // use the layers above; see tests/layering.rs).
        let t = crate::sched::find(scheduler).expect("a known scheduler");
        let bl = BlockLayer::new_in(
            Box::new(dev),
            t,
            super::QueueSetup {
                knobs,
                iosched: Vec::new(),
                cgroups: CgroupTree::default(),
                costs: free_cpu(),
                machine: crate::machine::Machine {
                    cpus: cpus as u32,
                    ..crate::machine::Machine::default()
                },
            },
            era,
        )
        .expect("block layer");
        Harness {
            bl,
            events: EventQueue::new(),
            now: 0,
            done: Vec::new(),
            woken: Vec::new(),
            log,
            busy,
            hold,
        }
    }

    fn env_call<R>(&mut self, f: impl FnOnce(&mut BlockLayer, &mut Env) -> R) -> R {
        let mut env = Env {
            now: self.now,
            events: &mut self.events,
            done: &mut self.done,
            woken: &mut self.woken,
        };
        f(&mut self.bl, &mut env)
    }

    /// Submit one bio from task `pid` on CPU 0 at the current time.
    pub fn submit(&mut self, b: BioSubmit) -> SubmitResult {
        let now = self.now;
        self.bl.cpu_begin(b.cpu, now);
        let r = self.env_call(|bl, env| bl.submit_bio(env, &b, None));
        self.bl.cpu_end();
        r
    }

    /// Run events up to and including time `until`.
    pub fn run_until(&mut self, until: Ns) {
        while let Some(t) = self.events.peek_time() {
            if t > until {
                break;
            }
            let (t, ev) = self.events.pop().expect("event");
            self.now = t;
            self.env_call(|bl, env| match ev {
                Event::DeviceComplete(rq) => bl.device_complete(env, rq),
                Event::Timer(TimerOwner::Device, tok) => bl.device_wake(env, tok),
                Event::QueueRun(h) => bl.delayed_run(env, h),
                Event::Timer(TimerOwner::Elevator { generation }, tok) => {
                    bl.elv_timer(env, generation, tok)
                }
                Event::Timer(TimerOwner::RqQos, tok) => bl.rq_qos_timer(env, tok),
                Event::Timer(TimerOwner::Task(_), _) | Event::Switch(_) => {}
            });
        }
        self.now = self.now.max(until);
    }

    /// Run until no event is left.
    pub fn run(&mut self) {
        self.run_until(Ns::MAX / 2);
    }

    /// Owners of completed bios, in order.
    pub fn done_owners(&self) -> Vec<u64> {
        self.done.iter().map(|d| d.owner).collect()
    }
    /// Completion time of `owner`'s bio.
    pub fn done_at(&self, owner: u64) -> Option<Ns> {
        self.done.iter().find(|d| d.owner == owner).map(|d| d.at)
    }
    /// Commands the device saw.
    pub fn cmds(&self) -> Vec<(Ns, DeviceCmd)> {
        self.log.borrow().clone()
    }
    /// Flush commands the device saw.
    pub fn flushes(&self) -> Vec<Ns> {
        self.log
            .borrow()
            .iter()
            .filter(|(_, c)| c.op == Op::Flush)
            .map(|(t, _)| *t)
            .collect()
    }
}

/// A bio for tests.
pub fn bio(op: Op, sector: u64, nr_sectors: u32, fl: u32, pid: u32, owner: u64) -> BioSubmit {
    BioSubmit {
        op,
        sector,
        nr_sectors,
        flags: fl,
        ioprio: IoPrio::default(),
        cgroup: 0,
        pid,
        cpu: 0,
        owner,
    }
}

/// What fsync sends: an empty write with PREFLUSH.
pub fn fsync_bio(pid: u32, owner: u64) -> BioSubmit {
    bio(Op::Write, 0, 0, flags::PREFLUSH, pid, owner)
}
