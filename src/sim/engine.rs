//! The event loop and the job driver: each fio job is a task that prepares
//! I/O units, submits them (plugged when batched), sleeps on tags, reaps
//! completions and records fio's statistics.

use super::costs;
use super::event::{Event, EventQueue};
use super::time::Ns;
use crate::block::cpu::CpuCosts;
use crate::block::knobs::QueueKnobs;
use crate::block::request::{flags, IoPrio, Op};
use crate::block::{BioDone, BioSubmit, BlockLayer, Env, Plug, SubmitResult};
use crate::cgroup::{CgroupTable, IOPRIO_DEFAULT_LEVEL};
use crate::device::{self, Profile};
use crate::job::{Ddir, EngineKind, IoPrioClass, JobFile, JobSpec, SyncIo};
use crate::report::{ElevatorMeta, JobResult, JobStatus, RunReport};
use crate::stats::JobStats;
use crate::workload::{self, Generator, IoUnit, RateLimiter};
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// fio's default random seed (FIO_RANDSEED in fio.h).
pub const DEFAULT_SEED: u64 = 0xb189_9bed;

/// Everything a simulation run needs besides the job file.
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub scheduler: String,
    pub profile: Profile,
    pub knobs: QueueKnobs,
    /// `iosched/NAME=VALUE` settings.
    pub iosched: Vec<(String, String)>,
    pub seed: u64,
    pub cpus: usize,
    /// Caps every job's simulated time.
    pub max_runtime: Option<Ns>,
    /// Scheduler switches `(at, name)`, sorted by time.
    pub switches: Vec<(Ns, String)>,
    /// CPU costs of the I/O path (the profile's `[cpu]` table, `--set cpu/...`).
    pub cpu_costs: CpuCosts,
    /// Called now and then with (simulated now, horizon if known).
    pub progress: Option<fn(Ns, Option<Ns>)>,
}

/// Mix a seed with a stream number (splitmix64), so streams are independent.
pub fn stream_seed(seed: u64, stream: u64) -> u64 {
    crate::device::rng::splitmix64_mix(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not started (waiting for a stonewall or its start delay).
    Waiting,
    Running,
    /// No more new I/O; waiting for in-flight I/O to complete.
    Draining,
    Done,
    Skipped,
}

#[derive(Clone, Copy, Debug, Default)]
struct IoU {
    ddir: Option<Ddir>,
    len: u64,
    /// Device byte offset (job logs with log_offset=1).
    offset: u64,
    start: Ns,
    issue: Ns,
    pieces_left: u32,
    done: Ns,
    /// A synchronous O_SYNC/O_DSYNC write: after its data, the call flushes
    /// the device cache (`generic_write_sync` → `blkdev_issue_flush`).
    post_flush: bool,
}

/// One bio still to be submitted by a job.
#[derive(Clone, Copy, Debug)]
struct Piece {
    slot: u32,
    op: Op,
    sector: u64,
    nr_sectors: u32,
    flags: u32,
    /// Last piece of its I/O unit.
    last: bool,
}

struct Job {
    spec: JobSpec,
    gen: Option<Generator>,
    rate: Option<RateLimiter>,
    stats: JobStats,
    kind: EngineKind,
    cpu: u16,
    pid: u32,
    ioprio: IoPrio,
    cgroup: u16,
    depth: u32,
    phase: Phase,
    start: Ns,
    ramp_end: Ns,
    deadline: Ns,
    stats_begun: bool,
    ious: Vec<IoU>,
    free_slots: Vec<u32>,
    inflight: u32,
    completed: Vec<u32>,
    pending: VecDeque<Piece>,
    sleeping: bool,
    busy_until: Ns,
    wake_pending: Option<Ns>,
    /// An I/O already drawn from the generator, due at the given time (rate limit).
    staged: Option<(IoUnit, Ns)>,
    exhausted: bool,
    writes_since_sync: u32,
    ios_since_think: u32,
    think_until: Ns,
    end_fsync_sent: bool,
    wrote: bool,
    plug: Plug,
    end: Ns,
}

/// One simulation run.
pub struct Simulation {
    jobs: Vec<Job>,
    block: BlockLayer,
    events: EventQueue,
    done: Vec<BioDone>,
    woken: Vec<u32>,
    switches: Vec<(Ns, String)>,
    cfg: SimConfig,
    now: Ns,
    disk_name: String,
    global_options: Vec<(String, String)>,
    /// Ready to run a step after the current event.
    to_step: Vec<u32>,
    /// Scratch buffer reused across events (no allocation per event).
    scratch_steps: Vec<u32>,
    batch: Vec<u32>,
    /// Units queued by the current submit call (their issue time is its end).
    issued: Vec<u32>,
    /// Jobs not yet Done or Skipped.
    active: usize,
}

impl Simulation {
    pub fn new(jobfile: &JobFile, cfg: SimConfig) -> Result<Simulation, String> {
        if jobfile.jobs.is_empty() {
            return Err(format!("{}: no jobs defined", jobfile.source));
        }
        let dev = device::build(&cfg.profile, stream_seed(cfg.seed, 0xdead))?;
        let mut cgroups = CgroupTable::default();
        let cg_ids: Vec<u16> = jobfile
            .jobs
            .iter()
            .map(|j| match &j.cgroup {
                Some(name) => cgroups.get_or_create(name, j.cgroup_weight),
                None => 0,
            })
            .collect();
        let cpus = cfg.cpus.max(1);
        let block = BlockLayer::new(
            dev,
            &cfg.scheduler,
            cpus,
            cfg.knobs.clone(),
            cfg.iosched.clone(),
            cgroups,
            cfg.cpu_costs.clone(),
        )?;
        // Every iosched/ setting must belong to some scheduler of this run.
        check_iosched(&cfg)?;
        let layouts = workload::layout(&jobfile.jobs, block.capacity())?;
        let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, 0x5eed));
        let mut jobs = Vec::with_capacity(jobfile.jobs.len());
        for (i, spec) in jobfile.jobs.iter().enumerate() {
            let base = spec.randseed.unwrap_or(cfg.seed);
            let seed = stream_seed(base, i as u64 + 1);
            let kind = spec.ioengine.kind;
            let modelled = kind != EngineKind::NotModelled;
            let gen = if modelled {
                Some(
                    Generator::new(spec, &layouts[i], seed)
                        .map_err(|e| format!("job '{}': {e}", spec.name))?,
                )
            } else {
                None
            };
            let rate = if modelled {
                RateLimiter::new(spec, seed ^ 0x7261_7465)
            } else {
                None
            };
            if spec.time_based && spec.runtime.is_none() && cfg.max_runtime.is_none() {
                return Err(format!(
                    "job '{}': time_based without runtime= never ends; set runtime= or pass --max-runtime",
                    spec.name
                ));
            }
            let cpu = match &spec.cpus_allowed {
                Some(list) if !list.is_empty() => {
                    (list[spec.clone_index as usize % list.len()] as usize % cpus) as u16
                }
                _ => (i % cpus) as u16,
            };
            let ioprio = match (spec.prioclass, spec.prio) {
                (Some(c), p) => IoPrio {
                    class: c,
                    level: p.unwrap_or(IOPRIO_DEFAULT_LEVEL),
                },
                // fio's prio= alone sets a best-effort level.
                (None, Some(p)) => IoPrio {
                    class: IoPrioClass::Be,
                    level: p,
                },
                (None, None) => IoPrio {
                    class: IoPrioClass::None,
                    level: IOPRIO_DEFAULT_LEVEL,
                },
            };
            let depth = match kind {
                EngineKind::Sync => 1,
                _ => spec.iodepth.max(1),
            };
            let (lo, hi) = spec.startdelay;
            let delay = if hi > lo { rng.gen_range(lo..=hi) } else { lo };
            jobs.push(Job {
                stats: if modelled {
                    JobStats::with_logs(spec).map_err(|e| format!("job '{}': {e}", spec.name))?
                } else {
                    JobStats::new(spec)
                },
                spec: spec.clone(),
                gen,
                rate,
                kind,
                cpu,
                pid: i as u32,
                ioprio,
                cgroup: cg_ids[i],
                depth,
                phase: if modelled {
                    Phase::Waiting
                } else {
                    Phase::Skipped
                },
                start: delay,
                ramp_end: 0,
                deadline: Ns::MAX,
                stats_begun: false,
                ious: vec![IoU::default(); depth as usize + 1],
                free_slots: (0..depth + 1).rev().collect(),
                inflight: 0,
                completed: Vec::new(),
                pending: VecDeque::new(),
                sleeping: false,
                busy_until: 0,
                wake_pending: None,
                staged: None,
                exhausted: false,
                writes_since_sync: 0,
                ios_since_think: 0,
                think_until: 0,
                end_fsync_sent: false,
                wrote: false,
                plug: Plug::default(),
                end: 0,
            });
        }
        let disk_name = jobfile
            .jobs
            .iter()
            .find_map(|j| j.filenames.first())
            .map(|f| f.rsplit('/').next().unwrap_or(f).to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| cfg.profile.name.clone());
        let mut sim = Simulation {
            jobs,
            block,
            events: EventQueue::new(),
            done: Vec::new(),
            woken: Vec::new(),
            switches: cfg.switches.clone(),
            now: 0,
            disk_name,
            global_options: jobfile.global_options.clone(),
            to_step: Vec::new(),
            scratch_steps: Vec::new(),
            batch: Vec::new(),
            issued: Vec::new(),
            active: 0,
            cfg,
        };
        sim.active = sim
            .jobs
            .iter()
            .filter(|j| j.phase != Phase::Skipped)
            .count();
        for (i, (at, _)) in sim.switches.iter().enumerate() {
            sim.events.push(*at, Event::Switch(i as u32));
        }
        sim.release_stonewalled(0);
        Ok(sim)
    }

    /// Start every waiting job whose predecessors (for stonewalls) are done.
    fn release_stonewalled(&mut self, now: Ns) {
        let mut all_before_done = true;
        for j in 0..self.jobs.len() {
            let job = &self.jobs[j];
            if job.spec.stonewall && !all_before_done {
                break;
            }
            if job.phase == Phase::Waiting {
                let at = now + job.start;
                self.start_job(j, at);
            }
            if !matches!(self.jobs[j].phase, Phase::Done | Phase::Skipped) {
                all_before_done = false;
            }
        }
    }

    fn start_job(&mut self, j: usize, at: Ns) {
        let cap = self.cfg.max_runtime;
        let job = &mut self.jobs[j];
        job.phase = Phase::Running;
        job.start = at;
        job.ramp_end = at + job.spec.ramp_time;
        let run_limit = match (job.spec.runtime, cap) {
            (Some(r), Some(c)) => Some((job.spec.ramp_time + r).min(c)),
            (Some(r), None) => Some(job.spec.ramp_time + r),
            (None, c) => c,
        };
        job.deadline = run_limit.map_or(Ns::MAX, |l| at + l);
        self.wake(j, at);
        if job_deadline(&self.jobs[j]) != Ns::MAX {
            let d = self.jobs[j].deadline;
            self.events.push(d, Event::JobWake(j as u32));
        }
    }

    fn wake(&mut self, j: usize, at: Ns) {
        let job = &mut self.jobs[j];
        if job.wake_pending.is_some_and(|t| t <= at) {
            return;
        }
        job.wake_pending = Some(at);
        self.events.push(at, Event::JobWake(j as u32));
    }

    /// The end of the simulated run if every job has a deadline.
    fn horizon(&self) -> Option<Ns> {
        let mut h = 0;
        for j in &self.jobs {
            match j.phase {
                Phase::Skipped => {}
                _ if j.deadline == Ns::MAX => return None,
                _ => h = h.max(j.deadline),
            }
        }
        Some(h)
    }

    /// Run to the end and build the report.
    pub fn run(mut self) -> Result<RunReport, String> {
        let mut counter: u64 = 0;
        while let Some((t, ev)) = self.events.pop() {
            debug_assert!(t >= self.now, "time went backwards");
            self.now = t;
            match ev {
                Event::JobWake(j) => {
                    let job = &mut self.jobs[j as usize];
                    if job.wake_pending == Some(t) {
                        job.wake_pending = None;
                    }
                    // Completions and wake-ups were all delivered after the
                    // previous event, so the job can act at once.
                    debug_assert!(self.done.is_empty() && self.woken.is_empty());
                    self.step(j as usize);
                }
                Event::DeviceComplete(rq) => {
                    self.with_block(t, |b, env| b.device_complete(env, rq));
                }
                Event::DeviceWake(tok) => {
                    self.with_block(t, |b, env| b.device_wake(env, tok));
                }
                Event::QueueRun(h) => {
                    self.with_block(t, |b, env| b.delayed_run(env, h));
                }
                Event::ElvTimer(tok) => {
                    self.with_block(t, |b, env| b.elv_timer(env, tok));
                }
                Event::QosTimer(tok) => {
                    self.with_block(t, |b, env| b.rq_qos_timer(env, tok));
                }
                Event::Switch(i) => {
                    let name = self.switches[i as usize].1.clone();
                    self.with_block(t, |b, env| b.request_switch(env, &name))?;
                }
            }
            self.settle();
            if self.active == 0 {
                break;
            }
            counter += 1;
            if counter & 0xffff == 0 {
                if let Some(p) = self.cfg.progress {
                    p(self.now, self.horizon());
                }
            }
        }
        self.finish()
    }

    /// Call into the block layer with an environment at time `now`.
    fn with_block<R>(&mut self, now: Ns, f: impl FnOnce(&mut BlockLayer, &mut Env) -> R) -> R {
        let mut env = Env {
            now,
            events: &mut self.events,
            done: &mut self.done,
            woken: &mut self.woken,
        };
        f(&mut self.block, &mut env)
    }

    /// Deliver completions and wake-ups, then step the jobs that can act.
    fn settle(&mut self) {
        loop {
            // Wake-ups first: a task woken because a tag was freed gets to
            // retry before the task whose completion freed it (which is
            // delivered after the completion work anyway), as the kernel
            // wakes tag waiters from the freeing path.
            for i in 0..self.woken.len() {
                let pid = self.woken[i];
                let job = &mut self.jobs[pid as usize];
                if job.sleeping {
                    job.sleeping = false;
                    self.to_step.push(pid);
                }
            }
            self.woken.clear();
            // bio_done never adds completions, so an index walk is safe.
            for i in 0..self.done.len() {
                let d = self.done[i];
                self.bio_done(d);
            }
            self.done.clear();
            if self.to_step.is_empty() {
                break;
            }
            // Steps may queue more steps, completions and wake-ups.
            std::mem::swap(&mut self.to_step, &mut self.scratch_steps);
            for i in 0..self.scratch_steps.len() {
                let j = self.scratch_steps[i];
                self.step(j as usize);
            }
            self.scratch_steps.clear();
        }
    }

    fn bio_done(&mut self, d: BioDone) {
        let j = (d.owner >> 32) as usize;
        let slot = (d.owner & 0xffff_ffff) as usize;
        let job = &mut self.jobs[j];
        let iou = &mut job.ious[slot];
        assert!(
            iou.pieces_left > 0,
            "bio of job {j} slot {slot} completed twice"
        );
        iou.pieces_left -= 1;
        if iou.pieces_left == 0 && iou.post_flush {
            // The write is on the device; the same call now flushes its cache.
            iou.post_flush = false;
            iou.pieces_left = 1;
            job.pending.push_back(Piece {
                slot: slot as u32,
                op: Op::Write,
                sector: 0,
                nr_sectors: 0,
                flags: flags::PREFLUSH,
                last: false,
            });
            if d.at > self.now {
                self.wake(j, d.at);
            } else {
                self.to_step.push(j as u32);
            }
            return;
        }
        if iou.pieces_left == 0 {
            iou.done = d.at.max(iou.issue);
            job.completed.push(slot as u32);
            if iou.done > self.now {
                // Delivered when the submit call that issued it has returned.
                let at = iou.done;
                self.wake(j, at);
            } else {
                self.to_step.push(j as u32);
            }
        }
    }

    /// One job acts at `self.now`: reap, decide, submit at most one batch.
    ///
    /// A task never acts ahead of the event clock: the queue lock, the device
    /// and other shared resources are granted in time order.
    fn step(&mut self, j: usize) {
        let now = self.now;
        let job = &mut self.jobs[j];
        if !matches!(job.phase, Phase::Running | Phase::Draining) || job.sleeping {
            return;
        }
        let ready = job.busy_until.max(self.block.cpu_free_at(job.cpu));
        if now < ready {
            // The task's CPU is still busy (its own call, or completion work).
            self.wake(j, ready);
            return;
        }
        if !job.stats_begun && now >= job.ramp_end {
            job.stats.begin(job.ramp_end);
            job.stats_begun = true;
        }
        self.reap(j);
        let job = &mut self.jobs[j];
        if !job.pending.is_empty() {
            // Woken from a tag/freeze sleep: go on with the interrupted submission.
            let cpu = job.cpu;
            self.block.cpu_begin(cpu, now);
            self.block.cpu_charge(costs::AIO_SUBMIT_PER_IO_NS);
            self.submit_pending(j, false);
            self.end_call(j);
            if !self.jobs[j].sleeping {
                let at = self.jobs[j].busy_until;
                self.wake(j, at);
            }
            return;
        }
        if job.phase == Phase::Running
            && (now >= job.deadline || (job.exhausted && job.staged.is_none()))
        {
            job.phase = Phase::Draining;
        }
        if job.phase == Phase::Draining {
            if job.inflight == 0 {
                if job.spec.end_fsync && job.wrote && !job.end_fsync_sent {
                    job.end_fsync_sent = true;
                    let slot = self.new_sync_iou(j);
                    self.commit(j, &[slot]);
                    return;
                }
                self.finish_job(j);
            }
            return;
        }
        if job.spec.thinktime > 0 && job.ios_since_think >= job.spec.thinktime_blocks.max(1) {
            job.ios_since_think = 0;
            job.think_until = now + job.spec.thinktime;
        }
        if now < job.think_until {
            let at = job.think_until;
            self.wake(j, at);
            return;
        }
        // Prepare one submit call's worth of I/O units.
        let max_sectors = self.block.max_sectors().max(8) as u64;
        let job = &mut self.jobs[j];
        let batch_max = job.spec.iodepth_batch_submit.max(1) as usize;
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        while (job.inflight as usize + batch.len()) < job.depth as usize && batch.len() < batch_max
        {
            let fsync_every = if job.spec.fsync > 0 {
                job.spec.fsync
            } else {
                job.spec.fdatasync
            };
            if fsync_every > 0 && job.writes_since_sync >= fsync_every {
                job.writes_since_sync = 0;
                let slot = job.free_slots.pop().expect("slot");
                job.ious[slot as usize] = IoU {
                    ddir: None,
                    len: 0,
                    offset: 0,
                    start: now,
                    issue: now,
                    pieces_left: 1,
                    done: 0,
                    post_flush: false,
                };
                batch.push(slot);
                continue;
            }
            let (io, due) = match job.staged.take() {
                Some(s) => s,
                None => match job.gen.as_mut().and_then(|g| g.next_io()) {
                    None => {
                        job.exhausted = true;
                        break;
                    }
                    Some(io) => {
                        let due = match job.rate.as_mut() {
                            Some(r) => r.issue_at(now, job.start, io.ddir, io.len),
                            None => now,
                        };
                        (io, due)
                    }
                },
            };
            if due > now {
                job.staged = Some((io, due));
                break;
            }
            let slot = job.free_slots.pop().expect("slot");
            job.ious[slot as usize] = IoU {
                ddir: Some(io.ddir),
                len: io.len,
                offset: io.offset,
                start: now,
                issue: now,
                pieces_left: 0,
                done: 0,
                post_flush: false,
            };
            if io.ddir == Ddir::Write {
                job.writes_since_sync += 1;
                job.wrote = true;
            }
            job.ios_since_think += 1;
            split_into_pieces(job, max_sectors, slot, io);
            batch.push(slot);
            if job.spec.thinktime > 0 && job.ios_since_think >= job.spec.thinktime_blocks.max(1) {
                break;
            }
        }
        let job = &mut self.jobs[j];
        if batch.is_empty() {
            self.batch = batch;
            if let Some((_, due)) = job.staged {
                self.wake(j, due);
            } else if job.exhausted && job.inflight == 0 {
                self.to_step.push(j as u32);
            }
            return;
        }
        self.commit(j, &batch);
        self.batch = batch;
    }

    fn new_sync_iou(&mut self, j: usize) -> u32 {
        let now = self.now;
        let job = &mut self.jobs[j];
        let slot = job.free_slots.pop().expect("slot");
        job.ious[slot as usize] = IoU {
            ddir: None,
            len: 0,
            offset: 0,
            start: now,
            issue: now,
            pieces_left: 1,
            done: 0,
            post_flush: false,
        };
        slot
    }

    /// One submit call (`io_submit`, or `pread`/`pwrite` for sync engines).
    fn commit(&mut self, j: usize, batch: &[u32]) {
        let now = self.now;
        let job = &mut self.jobs[j];
        let cost = match job.kind {
            EngineKind::Sync => costs::SYNC_SUBMIT_NS,
            EngineKind::Null => costs::NULL_SUBMIT_NS,
            _ => costs::AIO_SUBMIT_BASE_NS + costs::AIO_SUBMIT_PER_IO_NS * batch.len() as u64,
        };
        let cpu = job.cpu;
        for &slot in batch {
            if job.ious[slot as usize].ddir.is_none() {
                // fsync/fdatasync of a block device: blkdev_issue_flush sends
                // an empty REQ_OP_WRITE | REQ_PREFLUSH bio (block/blk-flush.c).
                job.pending.push_back(Piece {
                    slot,
                    op: Op::Write,
                    sector: 0,
                    nr_sectors: 0,
                    flags: flags::PREFLUSH,
                    last: true,
                });
            }
        }
        job.inflight += batch.len() as u32;
        let depth_now = job.inflight;
        job.stats.record_submit(batch.len() as u32, depth_now);
        // The call runs on the task's CPU, after whatever that CPU is doing.
        let start = self.block.cpu_begin(cpu, now);
        self.block.cpu_charge(cost);
        let job = &mut self.jobs[j];
        if job.kind == EngineKind::Null {
            // fio's null engine completes everything at once, no device involved.
            let at = start + cost;
            for p in job.pending.drain(..) {
                job.ious[p.slot as usize].issue = at;
                self.done.push(BioDone {
                    owner: ((j as u64) << 32) | p.slot as u64,
                    at,
                });
            }
        } else {
            // io_submit plugs batches above AIO_PLUG_THRESHOLD (2, fs/aio.c); the
            // block-device direct I/O path plugs its bios too.
            let plugged = batch.len() > 2 || job.kind == EngineKind::Sync;
            self.submit_pending(j, plugged);
        }
        self.end_call(j);
        // A full job acts again on its next completion; otherwise when the call returns.
        let job = &self.jobs[j];
        if job.inflight < job.depth || job.sleeping || !job.pending.is_empty() {
            let at = job.busy_until;
            self.wake(j, at);
        }
    }

    /// The task's call returns when its CPU has done the block-layer work too:
    /// that is the issue time (fio's `issue_time`) of every unit it queued.
    fn end_call(&mut self, j: usize) {
        let end = self.block.cpu_end();
        let job = &mut self.jobs[j];
        job.busy_until = job.busy_until.max(end);
        for &slot in &self.issued {
            job.ious[slot as usize].issue = end;
        }
        self.issued.clear();
    }

    /// Submit the job's pending bios in order until done or the task sleeps
    /// (inside a call started with `cpu_begin`). Units whose last bio went in
    /// are collected in `self.issued`.
    fn submit_pending(&mut self, j: usize, plugged: bool) {
        let now = self.now;
        let job = &mut self.jobs[j];
        // The plug travels with the call only when the call plugs.
        let mut plug = if plugged {
            std::mem::take(&mut job.plug)
        } else {
            Plug::default()
        };
        loop {
            let job = &mut self.jobs[j];
            let Some(p) = job.pending.front().copied() else {
                break;
            };
            let b = BioSubmit {
                op: p.op,
                sector: p.sector,
                nr_sectors: p.nr_sectors,
                flags: p.flags,
                ioprio: job.ioprio,
                cgroup: job.cgroup,
                pid: job.pid,
                cpu: job.cpu,
                owner: ((j as u64) << 32) | p.slot as u64,
            };
            let r = self.with_block(now, |blk, env| {
                blk.submit_bio(env, &b, if plugged { Some(&mut plug) } else { None })
            });
            let job = &mut self.jobs[j];
            match r {
                SubmitResult::Taken => {
                    job.pending.pop_front();
                    if p.last {
                        self.issued.push(p.slot);
                    }
                }
                SubmitResult::Sleep(_) => {
                    job.sleeping = true;
                    break;
                }
            }
        }
        if plugged {
            self.with_block(now, |b, env| b.finish_plug(env, &mut plug));
            self.jobs[j].plug = plug;
        }
    }

    /// Collect completed I/O units (`io_getevents`) and record them.
    fn reap(&mut self, j: usize) {
        let now = self.now;
        let job = &mut self.jobs[j];
        if job.completed.is_empty() {
            return;
        }
        let mut n = 0;
        let mut i = 0;
        while i < job.completed.len() {
            let slot = job.completed[i];
            let iou = job.ious[slot as usize];
            if iou.done > now {
                i += 1;
                continue;
            }
            job.completed.swap_remove(i);
            n += 1;
            // fio stamps a completion when it reaps it (io_getevents returned),
            // so time spent waiting for the task counts in clat, as in fio.
            let reaped = now;
            if job.stats_begun && reaped >= job.ramp_end {
                let lat = reaped - iou.start;
                match iou.ddir {
                    Some(d) => {
                        let slat = iou.issue - iou.start;
                        let clat = reaped - iou.issue;
                        let (slat, clat) = if job.kind == EngineKind::Sync {
                            (None, lat)
                        } else {
                            (Some(slat), clat)
                        };
                        job.stats
                            .record_io_at(d, iou.offset, iou.len, slat, clat, lat, reaped);
                    }
                    None => job.stats.record_sync(lat),
                }
            }
            job.inflight -= 1;
            job.free_slots.push(slot);
        }
        if n > 0 {
            job.stats.record_complete(n);
            // Reaping costs the task CPU time before it can submit again.
            let cpu = job.cpu;
            self.block.cpu_begin(cpu, now);
            self.block.cpu_charge(costs::REAP_PER_IO_NS * n as u64);
            let end = self.block.cpu_end();
            let job = &mut self.jobs[j];
            job.busy_until = job.busy_until.max(end);
        }
    }

    fn finish_job(&mut self, j: usize) {
        let now = self.now;
        let job = &mut self.jobs[j];
        job.phase = Phase::Done;
        job.end = now;
        self.active -= 1;
        if !job.stats_begun {
            job.stats.begin(job.ramp_end.min(now));
            job.stats_begun = true;
        }
        job.stats.end(now);
        self.release_stonewalled(now);
    }

    fn finish(mut self) -> Result<RunReport, String> {
        let end = self.now;
        for (j, job) in self.jobs.iter().enumerate() {
            if matches!(job.phase, Phase::Running | Phase::Draining | Phase::Waiting) {
                return Err(format!(
                    "internal: job {j} ('{}') never finished",
                    job.spec.name
                ));
            }
        }
        let inv = &self.block.inv;
        assert_eq!(
            inv.bios_submitted, inv.bios_completed,
            "every bio completes exactly once"
        );
        assert_eq!(
            inv.requests_allocated,
            inv.requests_completed + inv.requests_merged_away,
            "every request ends exactly once"
        );
        assert_eq!(self.block.live_requests(), 0, "no request outlives the run");
        let first_start = self
            .jobs
            .iter()
            .filter(|j| j.phase == Phase::Done)
            .map(|j| j.start)
            .min()
            .unwrap_or(0);
        let span = end.saturating_sub(first_start).max(1);
        // fio's disk_util and /sys/block/DEV/stat at the end (block/stat.rs).
        let disk = self.block.stats.fio_disk_util(end, &self.disk_name, span);
        let disk_stats = self.block.stats.read(end);
        let mut knobs = vec![
            (
                "scheduler".to_string(),
                self.block.scheduler_name().to_string(),
            ),
            (
                "nr_requests".to_string(),
                self.block.queue_info().nr_requests.to_string(),
            ),
            (
                "nomerges".to_string(),
                self.block.queue_info().nomerges.to_string(),
            ),
            (
                "max_sectors_kb".to_string(),
                (self.block.max_sectors() / 2).to_string(),
            ),
            (
                "read_ahead_kb".to_string(),
                self.block.knobs().read_ahead_kb.to_string(),
            ),
            (
                "rotational".to_string(),
                (self.block.queue_info().rotational as u8).to_string(),
            ),
            (
                "write_cache".to_string(),
                if self.block.write_cache() {
                    "write back"
                } else {
                    "write through"
                }
                .to_string(),
            ),
        ];
        for t in self.block.tunables() {
            knobs.push((format!("iosched/{}", t.name), t.value));
        }
        // fio prints no disk stats when no job touched a device (null engine).
        let used_device = self
            .jobs
            .iter()
            .any(|j| j.phase != Phase::Skipped && j.kind != EngineKind::Null);
        let jobs = self
            .jobs
            .into_iter()
            .map(|j| JobResult {
                status: if j.phase == Phase::Skipped {
                    JobStatus::NotModelled(format!(
                        "ioengine={} cannot be modelled",
                        j.spec.ioengine.name
                    ))
                } else {
                    JobStatus::Ran
                },
                elapsed_ns: j.end.saturating_sub(j.start),
                stats: j.stats,
                spec: j.spec,
            })
            .collect();
        let timestamp = std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        Ok(RunReport {
            global_options: self.global_options,
            jobs,
            disk_util: if used_device { vec![disk] } else { Vec::new() },
            elevator: ElevatorMeta {
                version: env!("CARGO_PKG_VERSION").to_string(),
                mode: "simulation".into(),
                scheduler: self.cfg.scheduler.clone(),
                device: self.cfg.profile.name.clone(),
                knobs,
                seed: self.cfg.seed,
                switches: self.cfg.switches.clone(),
                disk_stats: Some(disk_stats),
            },
            timestamp,
        })
    }
}

/// Split an I/O unit into bios of at most `max_sectors` (bio splitting;
/// all but the last piece are REQ_NOMERGE, as the kernel marks split fronts).
fn split_into_pieces(job: &mut Job, max: u64, slot: u32, io: IoUnit) {
    let op = match io.ddir {
        Ddir::Read => Op::Read,
        Ddir::Write => Op::Write,
        Ddir::Trim => Op::Discard,
    };
    let mut base_flags = 0;
    if job.kind == EngineKind::Passthrough {
        base_flags |= flags::PASSTHROUGH;
    }
    let mut post_flush = false;
    if op == Op::Write && job.spec.direct {
        // O_DIRECT writes are REQ_SYNC | REQ_IDLE, plus REQ_FUA on an
        // O_SYNC/O_DSYNC file (block/fops.c dio_bio_write_op).
        base_flags |= flags::SYNC | flags::IDLE;
        if job.spec.sync_io != SyncIo::None {
            base_flags |= flags::FUA;
            // A write(2)-style call then syncs (blkdev_write_iter →
            // generic_write_sync → blkdev_fsync); an AIO write returns
            // -EIOCBQUEUED and does not.
            post_flush = job.kind == EngineKind::Sync;
        }
    }
    let mut sector = io.offset / 512;
    let mut left = io.len.div_ceil(512);
    let mut n = 0;
    while left > 0 {
        let take = left.min(max);
        left -= take;
        let last = left == 0;
        job.pending.push_back(Piece {
            slot,
            op,
            sector,
            nr_sectors: take as u32,
            flags: if last {
                base_flags
            } else {
                base_flags | flags::NOMERGE
            },
            last,
        });
        sector += take;
        n += 1;
    }
    job.ious[slot as usize].pieces_left = n;
    job.ious[slot as usize].post_flush = post_flush;
}

fn job_deadline(j: &Job) -> Ns {
    j.deadline
}

fn check_iosched(cfg: &SimConfig) -> Result<(), String> {
    if cfg.iosched.is_empty() {
        return Ok(());
    }
    let mut names: Vec<String> = vec![cfg.scheduler.clone()];
    names.extend(cfg.switches.iter().map(|(_, n)| n.clone()));
    let mut known: Vec<&'static str> = Vec::new();
    for n in &names {
        if let Some(e) = crate::sched::create(n)? {
            known.extend(e.tunables().iter().map(|t| t.name));
        }
    }
    for (k, _) in &cfg.iosched {
        if !known.contains(&k.as_str()) {
            return Err(format!(
                "iosched/{k}: no scheduler of this run ({}) has this tunable{}",
                names.join(", "),
                if known.is_empty() {
                    String::new()
                } else {
                    format!(" (known: {})", known.join(", "))
                }
            ));
        }
    }
    Ok(())
}

/// Simulate a job file.
pub fn simulate(jobfile: &JobFile, cfg: SimConfig) -> Result<RunReport, String> {
    Simulation::new(jobfile, cfg)?.run()
}
