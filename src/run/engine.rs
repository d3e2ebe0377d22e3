//! The event loop: pops events in time order and routes each to its owner —
//! a task's timer to the task, device completions and queue runs to the
//! block layer, an elevator timer to the scheduler attached when it was
//! armed — then delivers completions and wake-ups to their tasks and steps
//! the tasks that can act, until every job is done.

use super::settings::{self, Settings};
use super::{scheduler, scheduler_in, Error, InputError, Progress, RunSpec};
use crate::block::driver::{CPU_WORK, WORKER_TOKEN};
use crate::block::elevator::ElevatorType;
use crate::block::{BioDone, BlockLayer, Env, QueueSetup, StrandedTagSleeper};
use crate::cache::{CacheSetup, PageCache};
use crate::cgroup::{CgroupError, CgroupTree, CgroupVersion, IoPrio, IoPrioClass, SET_PREFIX};
use crate::device::{self, Profile};
use crate::fs::{Ext4, MountOptions};
use crate::job::{BlockSizes, EngineKind, JobFile, JobSpec};
use crate::kernel::Era;
use crate::machine::Machine;
use crate::report::{
    DiskUtil, ElevatorMeta, FsReport, JobResult, JobStatus, PageCacheReport, RunReport, SimCounters,
};
use crate::sim::event::{Event, EventQueue, TimerOwner};
use crate::sim::rng::stream_seed;
use crate::sim::time::{Ns, NS_PER_MS};
use crate::stats::JobStats;
use crate::task::costs::SyscallCosts;
use crate::task::fio::{FioJob, Phase};
use crate::task::flusher::Flusher;
use crate::task::jbd2::Jbd2Task;
use crate::task::kcryptd::{CryptCosts, CryptQueues, Kcryptd};
use crate::task::runqueue::{self, RunQueues};
use crate::task::{BioOwner, Task, TaskCx, TaskKind};
use crate::workload::{self, Generator, RateLimiter};
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// A run spec resolved: names looked up, texts parsed, settings sorted.
#[derive(Clone, Debug)]
pub struct Config {
    pub scheduler: &'static ElevatorType,
    pub profile: Profile,
    pub settings: Settings,
    pub seed: u64,
    pub machine: Machine,
    /// The machine as a buffered job's system calls see it: at the
    /// profile's `cpu.cache_speed` when it has one, else `machine`.
    pub cache_machine: Machine,
    /// Caps every job's simulated time.
    pub max_runtime: Option<Ns>,
    /// Scheduler switches, in time order.
    pub switches: Vec<(Ns, &'static ElevatorType)>,
    pub cgroup_version: CgroupVersion,
    /// The kernel whose block layer runs (`--kernel`; the newest by default).
    pub era: Era,
    /// The `--kernel` value as given, when one was.
    pub kernel: Option<String>,
    /// `--mount`: the file system the jobs' files are on, and its text.
    pub mount: Option<(MountOptions, String)>,
    /// Requests to trace (`RunSpec::trace_requests`).
    pub trace_requests: u32,
    /// `--dm crypt`: the jobs' bios go through dm-crypt (its workers' costs).
    pub dm_crypt: Option<CryptCosts>,
}

impl Config {
    /// Resolve `spec` (whose job is `jobfile`) on the device `profile`.
    pub fn resolve_on(
        spec: &RunSpec,
        jobfile: &JobFile,
        mut profile: Profile,
    ) -> Result<Config, Error> {
        let era = match &spec.kernel {
            Some(k) => Era::parse(k).map_err(|e| InputError::new("kernel", e))?,
            None => Era::newest(),
        };
        let pick = |option: &str, name: &str| match &spec.kernel {
            Some(_) => scheduler_in(option, name, era.version),
            None => scheduler(option, name),
        };
        let first = pick("scheduler", &spec.scheduler)?;
        let mut switches = Vec::with_capacity(spec.switches.len());
        for sw in &spec.switches {
            switches.push((sw.at_ns, pick("switch", &sw.scheduler)?));
        }
        if device::is_ata(&profile) {
            // libata's NCQ depth of the era (crate::kernel, 31 before 4.18).
            profile.queue.queue_depth = era.ata_depth(profile.queue.queue_depth);
        }
        switches.sort_by_key(|(t, _)| *t);
        let mut all = vec![first];
        all.extend(switches.iter().map(|(_, t)| *t));
        let settings = settings::interpret(
            &spec.settings,
            profile.cpu.clone().unwrap_or_default(),
            &all,
            era.version,
        )?;
        let cgroup_version = CgroupVersion::from_number(spec.cgroup_version).ok_or_else(|| {
            InputError::new(
                "cgroup_version",
                format!("expected 1 or 2, got {}", spec.cgroup_version),
            )
        })?;
        for j in &jobfile.jobs {
            check_against_device(j, &profile).map_err(|e| e.in_file(&jobfile.source))?;
            if j.time_based && j.runtime.is_none() && spec.max_runtime_ns.is_none() {
                return Err(InputError::new(
                    "time_based",
                    format!(
                        "job '{}': time_based without runtime= never ends; set runtime= or pass --max-runtime",
                        j.name
                    ),
                )
                .into());
            }
        }
        // The profile's host CPUs; --cpu-speed is relative to them. A
        // buffered job's calls run at the profile's cache speed instead.
        let speeds = profile.cpu.as_ref();
        let machine = at_profile_speed(&spec.machine, speeds.and_then(|c| c.host_speed), "host")?;
        let cache_machine = match speeds.and_then(|c| c.cache_speed) {
            Some(c) => at_profile_speed(&spec.machine, Some(c), "cache")?,
            None => machine.clone(),
        };
        let mount = match &spec.mount {
            Some(m) => Some((
                MountOptions::parse_mount(m).map_err(|e| InputError::new("mount", e))?,
                m.clone(),
            )),
            None => None,
        };
        let dm_crypt = match &spec.dm {
            Some(d) => Some(CryptCosts::parse(d).map_err(|e| InputError::new("dm", e))?),
            None => None,
        };
        Ok(Config {
            mount,
            dm_crypt,
            trace_requests: spec.trace_requests,
            scheduler: first,
            profile,
            settings,
            seed: spec.seed,
            cache_machine,
            machine,
            max_runtime: spec.max_runtime_ns,
            switches,
            cgroup_version,
            era,
            kernel: spec.kernel.clone(),
        })
    }
}

/// The run's cgroups: the jobs' `cgroup=`/`cgroup_weight=`, then the
/// user's `--set cgroup:` writes (which win over a job's weight). Returns
/// the tree and each job's group.
fn build_cgroups(jobfile: &JobFile, cfg: &Config) -> Result<(CgroupTree, Vec<u16>), Error> {
    let mut tree = CgroupTree::new(cfg.cgroup_version);
    let mut ids = Vec::with_capacity(jobfile.jobs.len());
    for j in &jobfile.jobs {
        let id = tree
            .join_fio(j.cgroup.as_deref(), j.cgroup_weight)
            .map_err(|e| {
                let option = match e {
                    CgroupError::FioWeightOnV2 => "cgroup_weight",
                    _ => "cgroup",
                };
                InputError::new(option, format!("job '{}': {e}", j.name)).in_file(&jobfile.source)
            })?;
        ids.push(id);
    }
    for (key, value) in &cfg.settings.cgroup {
        tree.set_key(&format!("{SET_PREFIX}{key}"), value)
            .map_err(|e| InputError::new(&format!("--set {SET_PREFIX}{key}"), e.to_string()))?;
    }
    Ok((tree, ids))
}

/// The most memory the jobs' own state (files, stream state, I/O units) may
/// take: the simulator's limit, not fio's (fio would need iodepth x bs of
/// I/O buffers and a file structure per file on top). The per-job limits
/// of fio and the kernel (iodepth, nrfiles) are checked by the job parser;
/// this bounds their product with numjobs, before anything is allocated.
pub const MAX_JOB_STATE_BYTES: u64 = 1 << 30;

fn check_state_bytes(jobs: &[crate::job::JobSpec]) -> Result<(), Error> {
    let (mut files, mut units) = (0u64, 0u64);
    let (mut file_bytes, mut unit_bytes) = (0u64, 0u64);
    for spec in jobs {
        let depth = u64::from(crate::task::fio::depth(spec)) + 1;
        files += u64::from(spec.nrfiles.max(1));
        units += depth;
        file_bytes = file_bytes.saturating_add(workload::state_bytes(spec));
        unit_bytes = unit_bytes.saturating_add(depth * crate::task::fio::UNIT_BYTES);
    }
    let bytes = file_bytes.saturating_add(unit_bytes);
    if bytes > MAX_JOB_STATE_BYTES {
        let option = if unit_bytes >= file_bytes {
            "iodepth"
        } else {
            "nrfiles"
        };
        return Err(InputError::new(
            option,
            format!(
                "{} jobs with {units} I/O units and {files} files in all would need {} MiB of \
                 simulator state, more than its limit of {} MiB; lower numjobs or {option}",
                jobs.len(),
                bytes >> 20,
                MAX_JOB_STATE_BYTES >> 20
            ),
        )
        .into());
    }
    Ok(())
}

/// What fio's own I/O to the device would fail with: trims to a device
/// without discard (EOPNOTSUPP), O_DIRECT sizes or offsets off the
/// logical block size (EINVAL).
fn check_against_device(j: &crate::job::JobSpec, profile: &Profile) -> Result<(), InputError> {
    if j.rw.ddirs().contains(&crate::job::Ddir::Trim) && !profile.queue.discard {
        return Err(InputError::new(
            "rw",
            format!(
                "job '{}': the device '{}' has no discard (TRIM) support, so fio's trims \
                 would fail with EOPNOTSUPP (error 95)",
                j.name, profile.name
            ),
        ));
    }
    let lbs = profile.queue.logical_block_size;
    if let Some(bad) = j.direct_misalignment(u64::from(lbs)) {
        return Err(InputError::new(
            "direct",
            format!(
                "job '{}': direct=1 needs sizes and offsets in multiples of the device's \
                 logical block size ({lbs} bytes), not {bad} (fio's O_DIRECT I/O would fail \
                 with EINVAL, error 22)",
                j.name
            ),
        ));
    }
    Ok(())
}

fn input(message: String) -> Error {
    Error::Input(InputError::message(message))
}

/// More events than this at one simulated instant means the run is stuck:
/// a run at millions of IOPS has a few events per request and instant.
const MAX_EVENTS_AT_ONE_INSTANT: u64 = 10_000_000;

/// Events between two looks at the run's progress.
const PROGRESS_CHECK_EVENTS: u64 = 1 << 16;

/// Looks in a row that find no job and no request gone further mean the
/// run is stuck (tasks that hand each other a CPU, or wait for something
/// that never comes, while events keep the clock moving): some 16 million
/// events with no I/O submitted or completed, where a run has a few per
/// I/O and timers fire at most every few milliseconds.
const MAX_LOOKS_WITHOUT_PROGRESS: u32 = 256;

/// A task and its body, side by side (one index per step).
struct TaskSlot {
    task: Task,
    job: FioJob,
}

/// One simulation run.
pub struct Simulation {
    /// The tasks by id: each one's scheduling frame and what it runs
    /// (every task is a fio job today).
    tasks: Vec<TaskSlot>,
    block: BlockLayer,
    events: EventQueue,
    done: Vec<BioDone>,
    woken: Vec<u32>,
    switches: Vec<(Ns, &'static ElevatorType)>,
    cfg: Config,
    now: Ns,
    disk_name: String,
    global_options: Vec<(String, String)>,
    /// Ready to run a step after the current event.
    to_step: Vec<u32>,
    /// Who runs on a CPU that several tasks want.
    runqueues: RunQueues,
    /// The block layer holds non-zero counts of waiting tasks.
    tasks_waiting_published: bool,
    /// Scratch buffer reused across events (no allocation per event).
    scratch_steps: Vec<u32>,
    /// Jobs not yet Done or Skipped.
    active: usize,
    /// The page cache and the device's flusher (task id `tasks.len()`),
    /// when some job does buffered I/O or the files are on `--mount`; None
    /// keeps direct-I/O runs on the raw device exactly as they were.
    cache: Option<PageCache>,
    flusher: Option<(Task, Flusher)>,
    /// The ext4 file system (`--mount`) and its kjournald2 (task id
    /// `KernelIds::jbd2`).
    fs: Option<Ext4>,
    jbd2: Option<(Task, Jbd2Task)>,
    /// dm-crypt (`--dm crypt`): the workers' queues and, per CPU, its
    /// worker (task ids from `KernelIds::first_worker`).
    crypt: Option<CryptQueues>,
    kcryptd: Vec<(Task, Kcryptd)>,
}

/// A task's context over the simulation's fields (a macro so that the
/// caller can still borrow the task's own frame, a disjoint field).
/// Kernel tasks' ids follow the jobs' (0..jobs): the flusher, then
/// kjournald2, then one dm-crypt worker per CPU.
#[derive(Clone, Copy)]
struct KernelIds {
    jobs: u32,
}

impl KernelIds {
    fn flusher(self) -> u32 {
        self.jobs
    }
    fn jbd2(self) -> u32 {
        self.jobs + 1
    }
    fn first_worker(self) -> u32 {
        self.jobs + 2
    }
}

macro_rules! task_cx {
    ($sim:ident) => {
        TaskCx {
            now: $sim.now,
            block: &mut $sim.block,
            events: &mut $sim.events,
            done: &mut $sim.done,
            woken: &mut $sim.woken,
            ready: &mut $sim.to_step,
            cache: $sim.cache.as_mut(),
            cpus: &mut $sim.runqueues,
            fs: $sim.fs.as_mut(),
            crypt: $sim.crypt.as_mut(),
        }
    };
}

impl Simulation {
    pub fn new(jobfile: &JobFile, cfg: Config) -> Result<Simulation, Error> {
        check_state_bytes(&jobfile.jobs)?;
        let dev = device::build(&cfg.profile, stream_seed(cfg.seed, 0xdead)).map_err(input)?;
        let (cgroups, cg_ids) = build_cgroups(jobfile, &cfg)?;
        let cpus = cfg.machine.cpus as usize;
        let mut block = BlockLayer::new_in(
            dev,
            cfg.scheduler,
            QueueSetup {
                knobs: cfg.settings.knobs.clone(),
                iosched: cfg.settings.iosched.clone(),
                cgroups,
                costs: cfg.settings.cpu_costs.clone(),
                machine: cfg.machine.clone(),
            },
            cfg.era,
        )
        .map_err(input)?;
        if let Some(cv) = cfg.settings.cpu_costs.cost_spread {
            block.vary_cpu_costs(cv, stream_seed(cfg.seed, 0xc057));
        }
        block.enable_wbt_default().map_err(input)?;
        // The jobs' sizes and offsets against the device: the job file's.
        let layouts = workload::layout(&jobfile.jobs, block.capacity())
            .map_err(|m| Error::Input(InputError::message(m).in_file(&jobfile.source)))?;
        let mut tasks = fio_tasks(jobfile, &cfg, &layouts, &cg_ids)?;
        let ids = KernelIds {
            jobs: tasks.len() as u32,
        };
        let disk_name = disk_name(jobfile, &cfg);
        let buffered = tasks.iter().any(|t| t.job.buffered);
        // Files on a mounted ext4 need the page cache's file index even when
        // every job is direct (the file system names files by it).
        let (cache, flusher) = if buffered || cfg.mount.is_some() {
            // A region inside a longer device also holds the part of it a
            // last fixed-size block may pass its end by (workload's
            // `seq_fits`).
            let files: Vec<(u64, u64)> = layouts
                .iter()
                .zip(&jobfile.jobs)
                .flat_map(|(l, j)| {
                    let max_bs = j.bs.iter().map(BlockSizes::max).max().unwrap_or(0);
                    l.files
                        .iter()
                        .map(move |r| (r.start, r.len + r.after.min(max_bs)))
                })
                .collect();
            let mut cache = PageCache::new(&CacheSetup {
                memory: cfg.machine.memory,
                vm: cfg.settings.vm.clone(),
                files,
                tasks: tasks.len(),
            });
            let id = ids.flusher();
            cache.flusher_task = id;
            // The flusher is an unbound kworker: the last CPU, root cgroup.
            let cpu = (cpus - 1) as u16;
            let task = Task::new(id, TaskKind::Flusher, cpu, 0, IoPrio::default());
            (Some(cache), Some((task, Flusher::new(block.capacity()))))
        } else {
            (None, None)
        };
        for (t, l) in tasks.iter_mut().zip(&layouts) {
            t.job.set_files(&l.files);
        }
        let (fs, jbd2) = match (&cfg.mount, &cache) {
            (Some((opts, _)), Some(c)) => {
                let fs = mount(opts, c, jobfile, &layouts, block.capacity(), ids.jbd2());
                // kjournald2: a kthread; its I/O at journal_ioprio, best
                // effort level 3 (ext4 `journal_ioprio`
                // default, fs/ext4/super.c DEFAULT_JOURNAL_IOPRIO).
                let prio = IoPrio::new(IoPrioClass::Be, 3).unwrap_or_default();
                let id = fs.jbd2_task;
                let task = Task::new(id, TaskKind::Jbd2, (cpus - 1) as u16, 0, prio);
                (Some(fs), Some((task, Jbd2Task::new())))
            }
            _ => (None, None),
        };
        let (crypt, kcryptd) = dm_crypt_workers(&cfg, ids.first_worker());
        // The flusher and kjournald2 charge their CPU work directly and
        // take no part in the run queues yet; nor do dm-crypt's workers.
        let mut runqueues = RunQueues::new(
            cpus,
            ids.first_worker() as usize,
            cfg.machine.scale_ns(runqueue::CONTEXT_SWITCH_NS),
            cfg.era.slice_ns(cpus),
        );
        for t in tasks.iter().filter(|t| t.job.phase != Phase::Skipped) {
            runqueues.place(t.task.cpu);
            runqueues.set_allowed(t.task.id, allowed_cpus(&t.job.spec, t.task.cpu, cpus));
        }
        let mut sim = Simulation {
            runqueues,
            tasks_waiting_published: false,
            tasks,
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
            active: 0,
            cache,
            flusher,
            fs,
            jbd2,
            crypt,
            kcryptd,
            cfg,
        };
        if sim.cfg.trace_requests > 0 {
            sim.block.trace = Some(crate::block::trace::Trace::new(
                sim.cfg.trace_requests as usize,
            ));
        }
        sim.active = sim
            .tasks
            .iter()
            .filter(|t| t.job.phase != Phase::Skipped)
            .count();
        for (i, (at, _)) in sim.switches.iter().enumerate() {
            sim.events.push(*at, Event::Switch(i as u32));
        }
        sim.release_stonewalled(0);
        Ok(sim)
    }

    /// A task's context for acting at `self.now`, with its frame and job.
    fn task_cx(&mut self, id: u32) -> (&mut Task, &mut FioJob, TaskCx<'_>) {
        let cx = task_cx!(self);
        let slot = &mut self.tasks[id as usize];
        (&mut slot.task, &mut slot.job, cx)
    }

    /// Whether task `id` is the flusher.
    fn is_flusher(&self, id: u32) -> bool {
        id == self.kernel_ids().flusher() && self.flusher.is_some()
    }

    /// The flusher's frame, body and context.
    fn flusher_cx(&mut self) -> (&mut Task, &mut Flusher, TaskCx<'_>) {
        let cx = task_cx!(self);
        let (task, body) = self.flusher.as_mut().expect("flusher");
        (task, body, cx)
    }

    /// Whether task `id` is kjournald2.
    fn is_jbd2(&self, id: u32) -> bool {
        id == self.kernel_ids().jbd2() && self.jbd2.is_some()
    }

    /// kjournald2's frame, body and context.
    fn jbd2_cx(&mut self) -> (&mut Task, &mut Jbd2Task, TaskCx<'_>) {
        let cx = task_cx!(self);
        let (task, body) = self.jbd2.as_mut().expect("jbd2");
        (task, body, cx)
    }

    /// Worker `id`'s frame, body and context.
    fn kcryptd_cx(&mut self, id: u32) -> (&mut Task, &mut Kcryptd, TaskCx<'_>) {
        let i = self
            .crypt
            .as_ref()
            .and_then(|q| q.worker_index(id))
            .expect("a dm-crypt worker's id");
        let cx = task_cx!(self);
        let (task, body) = &mut self.kcryptd[i];
        (task, body, cx)
    }

    /// Start every waiting job whose predecessors (for stonewalls) are done.
    fn release_stonewalled(&mut self, now: Ns) {
        let mut all_before_done = true;
        for j in 0..self.tasks.len() {
            let job = &self.tasks[j].job;
            if job.spec.stonewall && !all_before_done {
                break;
            }
            if job.phase == Phase::Waiting {
                let at = now.saturating_add(job.start);
                let cap = self.cfg.max_runtime;
                let (task, job, mut cx) = self.task_cx(j as u32);
                job.start(task, at, cap, &mut cx);
            }
            if !matches!(self.tasks[j].job.phase, Phase::Done | Phase::Skipped) {
                all_before_done = false;
            }
        }
    }

    /// The end of the simulated run if every job has a deadline.
    fn horizon(&self) -> Option<Ns> {
        let mut h = 0;
        for TaskSlot { job: j, .. } in &self.tasks {
            match j.phase {
                Phase::Skipped => {}
                _ if j.deadline == Ns::MAX => return None,
                _ => h = h.max(j.deadline),
            }
        }
        Some(h)
    }

    /// Run to the end and build the report.
    pub fn run(mut self, progress: &mut dyn FnMut(Progress)) -> Result<RunReport, Error> {
        let mut counter: u64 = 0;
        // Events at one instant since time last moved: a model that keeps
        // scheduling work for "now" without progress is a bug, reported
        // instead of a run that never ends.
        let mut same_instant: u64 = 0;
        let (mut last_done, mut looks_without_progress) = (0, 0);
        while let Some((t, ev)) = self.events.pop() {
            debug_assert!(t >= self.now, "time went backwards");
            if t == self.now {
                same_instant += 1;
                if same_instant > MAX_EVENTS_AT_ONE_INSTANT {
                    return Err(Error::Internal(format!(
                        "no progress: more than {MAX_EVENTS_AT_ONE_INSTANT} events at {t} ns ({ev:?})"
                    )));
                }
            } else {
                same_instant = 0;
            }
            self.now = t;
            match ev {
                Event::Timer(TimerOwner::Task(j), _) if self.is_kernel_task(j) => {
                    let task = self.kernel_task(j);
                    if task.wake_pending == Some(t) {
                        task.wake_pending = None;
                    }
                    self.step_kernel_task(j);
                }
                Event::Timer(TimerOwner::Task(j), _) => {
                    let task = &mut self.tasks[j as usize].task;
                    if task.wake_pending == Some(t) {
                        task.wake_pending = None;
                    }
                    // Completions and wake-ups were all delivered after the
                    // previous event, so the task can act at once.
                    debug_assert!(self.done.is_empty() && self.woken.is_empty());
                    self.step(j);
                }
                Event::DeviceComplete(rq) => {
                    self.with_block(t, |b, env| b.device_complete(env, rq));
                }
                Event::Timer(TimerOwner::Device, tok) => {
                    if tok & CPU_WORK != 0 {
                        self.publish_tasks_waiting();
                    }
                    self.with_block(t, |b, env| b.device_wake(env, tok));
                    if tok & CPU_WORK != 0 {
                        self.worker_left_cpus();
                    }
                }
                Event::QueueRun(h) => {
                    self.with_block(t, |b, env| b.delayed_run(env, h));
                }
                Event::Timer(TimerOwner::Elevator { generation }, tok) => {
                    self.with_block(t, |b, env| b.elv_timer(env, generation, tok));
                }
                Event::Timer(TimerOwner::RqQos, tok) => {
                    self.with_block(t, |b, env| b.rq_qos_timer(env, tok));
                }
                Event::Switch(i) => {
                    let target = self.switches[i as usize].1;
                    self.with_block(t, |b, env| b.request_switch(env, target));
                }
            }
            self.settle();
            if let Some(c) = self.cache.as_mut() {
                c.tick(t);
            }
            if self.active == 0 && !self.writeback_out() {
                break;
            }
            counter += 1;
            if counter.is_multiple_of(PROGRESS_CHECK_EVENTS) {
                let done = self.work_done();
                if done == last_done {
                    looks_without_progress += 1;
                    if looks_without_progress > MAX_LOOKS_WITHOUT_PROGRESS {
                        if let Some(stranded) = self.block.stranded_tag_sleeper() {
                            return Err(Error::Hung(self.describe_stranded(stranded)));
                        }
                        let (now, state) = (self.now, self.describe_tasks());
                        return Err(Error::Internal(format!(
                            "no progress: {} events up to {now} ns with no I/O submitted or completed; {state}",
                            PROGRESS_CHECK_EVENTS * u64::from(MAX_LOOKS_WITHOUT_PROGRESS)
                        )));
                    }
                } else {
                    (last_done, looks_without_progress) = (done, 0);
                }
                progress(Progress {
                    now: self.now,
                    horizon: self.horizon(),
                });
            }
        }
        self.finish()
    }

    /// The jobs are done but the flusher (or a job's async readahead) still
    /// has bios out: the run goes on until they complete (the flusher
    /// starts no new writeback).
    fn writeback_out(&mut self) -> bool {
        let journal = match self.jbd2.as_mut() {
            Some((_, j)) => {
                j.stopping = true;
                j.busy()
            }
            None => false,
        };
        match self.flusher.as_mut() {
            Some((_, f)) => {
                f.stopping = true;
                journal || f.busy() > 0 || self.tasks.iter().any(|t| t.job.bios_out() > 0)
            }
            None => false,
        }
    }

    /// Before a device's kernel thread runs: tell the block layer how many
    /// tasks wait for each CPU (a thread woken there queues behind them).
    /// Nothing waits while no CPU is shared; the counts were zeroed when
    /// the last shared CPU stopped being shared.
    fn publish_tasks_waiting(&mut self) {
        let shared = self.runqueues.any_shared();
        if !shared && !self.tasks_waiting_published {
            return;
        }
        for cpu in 0..self.cfg.machine.cpus.max(1) as u16 {
            let (n, held) = if shared {
                (self.runqueues.waiting_len(cpu), self.runqueues.holds(cpu))
            } else {
                (0, false)
            };
            self.block.set_tasks_waiting(cpu, n);
            self.block.set_cpu_held(cpu, held);
        }
        self.tasks_waiting_published = shared;
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

    /// Deliver completions and wake-ups, then step the tasks that can act.
    fn settle(&mut self) {
        loop {
            // Wake-ups first: a task woken because a tag was freed gets to
            // retry before the task whose completion freed it (which is
            // delivered after the completion work anyway), as the kernel
            // wakes tag waiters from the freeing path.
            for i in 0..self.woken.len() {
                let pid = self.woken[i];
                let task = if self.is_kernel_task(pid) {
                    self.kernel_task(pid)
                } else {
                    &mut self.tasks[pid as usize].task
                };
                if task.blocked() {
                    task.sleep = None;
                    self.to_step.push(pid);
                }
            }
            self.woken.clear();
            // bio_done never adds completions, so an index walk is safe.
            for i in 0..self.done.len() {
                let d = self.done[i];
                let owner = BioOwner::from_token(d.owner);
                if self.is_kernel_task(owner.task) {
                    self.kernel_bio_done(owner, d);
                    continue;
                }
                let (task, job, mut cx) = self.task_cx(owner.task);
                job.bio_done(task, owner.tag, d.at, d.cpu, &mut cx);
            }
            self.done.clear();
            if self.to_step.is_empty() {
                break;
            }
            // Steps may queue more steps, completions and wake-ups.
            std::mem::swap(&mut self.to_step, &mut self.scratch_steps);
            for i in 0..self.scratch_steps.len() {
                let j = self.scratch_steps[i];
                self.step(j);
            }
            self.scratch_steps.clear();
        }
    }

    fn kernel_ids(&self) -> KernelIds {
        KernelIds {
            jobs: self.tasks.len() as u32,
        }
    }

    /// Whether task `id` is a kernel task (the flusher, kjournald2, a
    /// dm-crypt worker): their ids follow the jobs'.
    #[inline(always)]
    fn is_kernel_task(&self, id: u32) -> bool {
        id as usize >= self.tasks.len()
    }

    /// Kernel task `id`'s frame.
    #[cold]
    fn kernel_task(&mut self, id: u32) -> &mut Task {
        if self.is_flusher(id) {
            &mut self.flusher.as_mut().expect("flusher").0
        } else if self.is_jbd2(id) {
            &mut self.jbd2.as_mut().expect("jbd2").0
        } else {
            self.kcryptd_cx(id).0
        }
    }

    /// Kernel task `id` acts at `self.now`.
    #[cold]
    fn step_kernel_task(&mut self, id: u32) {
        let cpu = self.kernel_task(id).cpu;
        let busy_before = self.block.cpu_busy_ns(cpu);
        if self.is_flusher(id) {
            let (task, f, mut cx) = self.flusher_cx();
            f.step(task, &mut cx);
        } else if self.is_jbd2(id) {
            let (task, j, mut cx) = self.jbd2_cx();
            j.step(task, &mut cx);
        } else {
            let (task, k, mut cx) = self.kcryptd_cx(id);
            k.step(task, &mut cx);
        }
        // These threads charge their CPU directly (outside the run queues),
        // but running them is still a switch for the task that had the CPU.
        if self.block.cpu_busy_ns(cpu) > busy_before {
            self.runqueues.kernel_thread_ran(cpu);
        }
    }

    /// A bio of kernel task `owner.task` completed (a dm-crypt read's
    /// clone comes back to the workers for its decryption).
    #[cold]
    fn kernel_bio_done(&mut self, owner: BioOwner, d: BioDone) {
        if self.is_flusher(owner.task) {
            let (task, f, mut cx) = self.flusher_cx();
            f.bio_done(task, owner.tag, d.at, &mut cx);
        } else if self.is_jbd2(owner.task) {
            let (task, j, mut cx) = self.jbd2_cx();
            j.bio_done(task, &mut cx);
        } else {
            let q = self.crypt.as_mut().expect("dm-crypt");
            q.read_done(owner.tag, d, &mut self.to_step);
        }
    }

    /// Task `id` acts at `self.now`.
    fn step(&mut self, id: u32) {
        if self.is_kernel_task(id) {
            return self.step_kernel_task(id);
        }
        if self.runqueues.any_shared() {
            return self.step_shared(id);
        }
        let (task, job, mut cx) = self.task_cx(id);
        if job.step(task, &mut cx) {
            let cpu = task.cpu;
            self.runqueues.leave(id, cpu);
            self.job_finished();
        }
    }

    /// `step` when some CPU is shared by several tasks.
    #[inline(never)]
    fn step_shared(&mut self, id: u32) {
        self.move_to_idle_cpu(id);
        let cpu = self.tasks[id as usize].task.cpu;
        let shared = self.runqueues.shared(cpu);
        let busy_before = if shared {
            self.block.cpu_busy_ns(cpu)
        } else {
            0
        };
        let (task, job, mut cx) = self.task_cx(id);
        let finished = job.step(task, &mut cx);
        if finished {
            // Off the run queue first: its CPU may go to a waiting task.
            self.runqueues.leave(id, cpu);
        }
        if shared {
            self.share_cpu(id, cpu, busy_before);
        } else if !finished {
            let runnable = self.tasks[id as usize].task.runnable();
            self.runqueues.set_runnable(id, cpu, runnable);
        }
        self.pull_if_idle(cpu);
        if finished {
            self.job_finished();
        }
    }

    /// `select_idle_sibling` at a wake-up: task `id`, about to run where
    /// another task (or the device's worker) has the CPU or waits for it,
    /// goes to an idle CPU it may use if one is free now. The IPI that
    /// wakes that CPU costs it the host's wake-up.
    fn move_to_idle_cpu(&mut self, id: u32) {
        let TaskSlot { task, job } = &self.tasks[id as usize];
        let from = task.cpu;
        let wants_cpu = matches!(job.phase, Phase::Running | Phase::Draining | Phase::Closing)
            && !task.blocked()
            && task.busy_until <= self.now;
        let worker_on = self.block.worker_on();
        if !wants_cpu || (worker_on != Some(from) && !self.runqueues.contended(id, from)) {
            return;
        }
        let (now, block, rq) = (self.now, &self.block, &self.runqueues);
        let Some(to) = rq
            .candidates(id, from)
            .find(|&c| worker_on != Some(c) && rq.idle(c) && block.cpu_free_at(c) <= now)
        else {
            return;
        };
        self.migrate(id, from, to);
        self.block.wake_idle_cpu(to, now);
    }

    /// `sched_balance_newidle`: `cpu` has no task to run (the one that had
    /// it went to sleep or ended, or the device's worker left it), so it
    /// pulls one that waits for a busier CPU and runs it when it frees.
    fn pull_if_idle(&mut self, cpu: u16) {
        if self.block.worker_on() == Some(cpu) || !self.runqueues.idle(cpu) {
            return;
        }
        let Some((id, from)) = self.runqueues.task_to_pull(cpu) else {
            return;
        };
        self.migrate(id, from, cpu);
        self.wake_when_cpu_frees(id, cpu);
    }

    /// Task `id` moves from CPU `from` to `to`. If it was next in line on
    /// `from`, or had that CPU, the task whose turn it is there now is
    /// woken for when `from` frees.
    fn migrate(&mut self, id: u32, from: u16, to: u16) {
        let was_next = self.runqueues.next_waiter(from) == Some(id);
        self.runqueues.migrate(id, from, to);
        self.tasks[id as usize].task.cpu = to;
        // A worker waiting for `from`'s holder to let go would otherwise
        // wait for a task that no longer runs there.
        if self.grant_parked_worker(from) {
            return;
        }
        if was_next || self.runqueues.turn_over(from) {
            self.wake_next_waiter(from);
        }
    }

    fn job_finished(&mut self) {
        self.active -= 1;
        let now = self.now;
        self.release_stonewalled(now);
    }

    /// After task `id` acted on a shared CPU: charge what it ran to its
    /// virtual runtime, and wake the task whose turn comes next for when
    /// the CPU frees (it may be this one's turn still; then it waits again).
    fn share_cpu(&mut self, id: u32, cpu: u16, busy_before: Ns) {
        let ran = self.block.cpu_busy_ns(cpu) - busy_before;
        self.runqueues.account(id, cpu, ran);
        let runnable = self.tasks[id as usize].task.runnable();
        self.runqueues.set_runnable(id, cpu, runnable);
        if self.grant_parked_worker(cpu) {
            return;
        }
        if self.block.worker_seat().on == Some(cpu) || !self.runqueues.turn_over(cpu) {
            // The device's worker runs here: its leaving wakes the waiters.
            return;
        }
        self.wake_next_waiter(cpu);
    }

    /// If the device's worker waits for a CPU and `cpu` is no longer held,
    /// its turn goes to the worker (a kernel thread that sleeps often has
    /// the least virtual runtime); the tasks waiting there follow when it
    /// leaves. Whether it did.
    fn grant_parked_worker(&mut self, cpu: u16) -> bool {
        let seat = self.block.worker_seat();
        if !seat.parked || seat.park_on.is_some_and(|c| c != cpu) || self.runqueues.holds(cpu) {
            return false;
        }
        seat.parked = false;
        seat.granted = Some(cpu);
        self.runqueues.kernel_thread_took(cpu);
        let at = self.block.cpu_free_at(cpu).max(self.now);
        self.events.push(
            at,
            Event::Timer(TimerOwner::Device, CPU_WORK | WORKER_TOKEN),
        );
        true
    }

    /// The task whose turn is next on `cpu` is woken for when it frees.
    fn wake_next_waiter(&mut self, cpu: u16) {
        if let Some(next) = self.runqueues.next_waiter(cpu) {
            self.wake_when_cpu_frees(next, cpu);
        }
    }

    /// Task `id` acts when `cpu` frees (unless it is woken earlier).
    fn wake_when_cpu_frees(&mut self, id: u32, cpu: u16) {
        let at = self.block.cpu_free_at(cpu).max(self.now);
        let t = &mut self.tasks[id as usize].task;
        if t.wake_pending.is_none_or(|p| p > at) {
            t.wake_pending = Some(at);
            self.events.push(at, Event::wake(id));
        }
    }

    /// After the device's worker ran: the CPUs it left go to the tasks that
    /// waited for them.
    fn worker_left_cpus(&mut self) {
        for i in 0..self.block.worker_seat().took.len() {
            let cpu = self.block.worker_seat().took[i];
            self.runqueues.kernel_thread_took(cpu);
        }
        self.block.worker_seat().took.clear();
        // By index: the list keeps its buffer for the next time.
        for i in 0..self.block.worker_seat().left.len() {
            let cpu = self.block.worker_seat().left[i];
            self.wake_next_waiter(cpu);
            if self.runqueues.any_shared() {
                self.pull_if_idle(cpu);
            }
        }
        self.block.worker_seat().left.clear();
    }

    /// A count that grows whenever the run gets anywhere: the jobs' submit
    /// and reap calls, their syncs, requests completed, jobs finished.
    fn work_done(&self) -> u64 {
        let jobs: u64 = self
            .tasks
            .iter()
            .map(|t| {
                let s = &t.job.stats;
                s.total_submit + s.total_complete + s.sync_total
            })
            .sum();
        jobs + self.block.inv.requests_completed
            + self.block.inv.bios_completed
            + self.tasks.len().saturating_sub(self.active) as u64
    }

    /// Why a task asleep for a tag will never wake, for the user: the
    /// kernel's own missed wake-up, not a fault of the model.
    fn describe_stranded(&self, s: StrandedTagSleeper) -> String {
        let who = self
            .tasks
            .iter()
            .find(|slot| slot.task.id == s.pid)
            .map_or_else(
                || format!("task {}", s.pid),
                |slot| format!("job '{}'", slot.job.spec.name),
            );
        let q = self.block.queue_info();
        let mut out = format!(
            "from {:.6} s {who} sleeps for a scheduler tag of hardware queue {}, woken only after {} \
             more tag frees (wake batch {}), and only {} tags are in use",
            s.since as f64 / 1e9,
            s.hctx,
            s.wake_batch - s.frees_counted,
            s.wake_batch,
            s.busy,
        );
        if let Some(depth) = s.shallow_depth.filter(|&d| d < s.min_shallow_depth) {
            out += &format!(
                ". Its allocation was limited to a shallow depth of {depth} (tags per bitmap word \
                 before 6.17), below the {} that {} on {} sized the wake batch for (sbitmap_queue_min_shallow_depth): \
                 a depth tunable set through sysfs below that breaks the rule, and the kernel \
                 misses this wake-up as the model does (fio would stay in D state). Raise the \
                 tunable, or model a kernel that sizes the batch from it",
                s.min_shallow_depth,
                self.block.scheduler_name(),
                q.kernel,
            );
        }
        out
    }

    /// Where each job's task stands and who waits for which CPU, for an
    /// internal error about a run that does not end.
    fn describe_tasks(&mut self) -> String {
        const SHOWN: usize = 16;
        let mut out: Vec<String> = self
            .tasks
            .iter()
            .take(SHOWN)
            .map(|TaskSlot { task, job }| {
                format!(
                    "task {} ('{}') {:?} on cpu {}, asleep on {:?}, wake at {:?}, busy until {}",
                    task.id,
                    job.spec.name,
                    job.phase,
                    task.cpu,
                    task.sleep,
                    task.wake_pending,
                    task.busy_until
                )
            })
            .collect();
        if self.tasks.len() > SHOWN {
            out.push(format!("{} more tasks", self.tasks.len() - SHOWN));
        }
        out.push(format!("device worker {:?}", self.block.worker_seat()));
        out.push(format!("{} requests live", self.block.live_requests()));
        out.join("; ")
    }

    /// The end-of-run checks: every job finished, every bio and request
    /// ended exactly once, dm-crypt's workers idle, no wake-up charged
    /// twice. A job left unfinished is an internal error with the block
    /// layer's state; the rest are bugs and panic.
    fn check_end_invariants(&self) -> Result<(), Error> {
        for (j, TaskSlot { task, job }) in self.tasks.iter().enumerate() {
            if matches!(
                job.phase,
                Phase::Running | Phase::Draining | Phase::Closing | Phase::Waiting
            ) {
                return Err(Error::Internal(format!(
                    "job {j} ('{}') never finished (phase {:?}, asleep on {:?}; \
                     {} requests live, queue {}) [{}]",
                    job.spec.name,
                    job.phase,
                    task.sleep,
                    self.block.live_requests(),
                    if self.block.is_frozen() {
                        "frozen"
                    } else {
                        "not frozen"
                    },
                    self.block.describe_live_requests()
                )));
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
        if let Some(q) = self.crypt.as_ref().filter(|q| !q.idle()) {
            panic!("dm-crypt's workers end with work left: {}", q.describe());
        }
        for t in &self.tasks {
            assert!(
                t.job.io_wakeups_charged <= t.job.io_sleeps,
                "task {}: {} wake-ups charged for {} sleeps in io_getevents",
                t.task.id,
                t.job.io_wakeups_charged,
                t.job.io_sleeps
            );
        }
        Ok(())
    }

    /// fio's disk_util of the run: the block statistics from the first
    /// job's start to `end`.
    fn disk_util(&mut self, end: Ns) -> DiskUtil {
        let first_start = self
            .tasks
            .iter()
            .map(|t| &t.job)
            .filter(|j| j.phase == Phase::Done)
            .map(|j| j.start)
            .min()
            .unwrap_or(0);
        let span = end.saturating_sub(first_start).max(1);
        // fio's disk_util and /sys/block/DEV/stat at the end (block/stat.rs).
        let t = self.block.stats.totals(end);
        // fio's disk_util (diskutil.c): deltas of ios, merges, ticks and
        // time_in_queue over the run; util is io_ticks over the elapsed time.
        DiskUtil {
            name: self.disk_name.clone(),
            read_ios: t.ios[0],
            write_ios: t.ios[1],
            read_sectors: t.sectors[0],
            write_sectors: t.sectors[1],
            read_merges: t.merges[0],
            write_merges: t.merges[1],
            read_ticks: t.nsecs[0] / NS_PER_MS,
            write_ticks: t.nsecs[1] / NS_PER_MS,
            in_queue: t.all_nsecs / NS_PER_MS,
            util: (t.io_ticks_ns as f64 * 100.0 / span as f64).min(100.0),
        }
    }

    /// The queue's knobs and the scheduler's tunables as the run ended, by
    /// their sysfs names.
    fn knob_report(&self) -> Vec<(String, String)> {
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
                "wbt_lat_usec".to_string(),
                self.block.wbt_lat_usec().to_string(),
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
        knobs
    }

    fn finish(mut self) -> Result<RunReport, Error> {
        let end = self.now;
        self.check_end_invariants()?;
        let disk = self.disk_util(end);
        let disk_stats = self.block.stats.read(end);
        let knobs = self.knob_report();
        // fio prints no disk stats when no job touched a device (null engine).
        let used_device = self
            .tasks
            .iter()
            .any(|t| t.job.phase != Phase::Skipped && t.job.kind != EngineKind::Null);
        let page_cache = self.cache.as_ref().map(|c| PageCacheReport {
            view: c.view.clone(),
            vm: c.vm.all().map(|(n, v)| (n.to_string(), v)).collect(),
            throttled_ns: self
                .tasks
                .iter()
                .map(|t| (t.job.spec.name.clone(), t.job.throttled_ns))
                .collect(),
        });
        let counters = SimCounters {
            io_sleeps: self.tasks.iter().map(|t| t.job.io_sleeps).sum(),
            io_wakeups_charged: self.tasks.iter().map(|t| t.job.io_wakeups_charged).sum(),
            softirq_runs: self.block.softirq_runs,
            softirq_completions: self.block.softirq_completions,
            inline_device_ns: self.block.inline_device_ns,
            idle_wake_ns: self.block.cpu_idle_wake_total(),
            idle_wakes: self.block.cpu_idle_wakes(),
        };
        // Log files that failed to write: the run's warnings say which.
        let mut warnings = std::mem::take(&mut self.block.warnings);
        for t in &self.tasks {
            for e in &t.job.stats.log_errors {
                warnings.push(format!("job '{}': {e}", t.job.spec.name));
            }
        }
        let jobs = self
            .tasks
            .into_iter()
            .map(|t| t.job)
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
        Ok(RunReport {
            global_options: self.global_options,
            jobs,
            disk_util: if used_device { vec![disk] } else { Vec::new() },
            elevator: ElevatorMeta {
                version: env!("CARGO_PKG_VERSION").to_string(),
                mode: "simulation".into(),
                scheduler: self.cfg.scheduler.name.to_string(),
                device: self.cfg.profile.name.clone(),
                knobs,
                seed: self.cfg.seed,
                switches: self
                    .cfg
                    .switches
                    .iter()
                    .map(|(at, t)| (*at, t.name.to_string()))
                    .collect(),
                disk_stats: Some(disk_stats),
                kernel: self
                    .cfg
                    .kernel
                    .as_ref()
                    .map(|_| self.cfg.era.version.to_string()),
                page_cache,
                cpu_busy_ns: Some(self.block.cpu_busy_total()),
                counters: Some(counters),
                fs: self.fs.as_ref().map(|f| FsReport {
                    mount: self
                        .cfg
                        .mount
                        .as_ref()
                        .map_or(String::new(), |m| m.1.clone()),
                    journal: f.journal.stats,
                    journal_start_sector: f.journal.start_sector,
                    journal_blocks: f.journal.len_blocks,
                }),
                requests: self.block.trace.take().map_or(Vec::new(), |t| t.records),
                spec: None,
                warnings,
                switch_log: super::switches::outcomes(
                    self.cfg.switches.len(),
                    self.block.switch_log(),
                    end,
                ),
            },
            timestamp: 0,
        })
    }
}

/// One task per job of the file: its generator, rate limiter, CPU, start
/// delay, statistics, cgroup and I/O priority.
fn fio_tasks(
    jobfile: &JobFile,
    cfg: &Config,
    layouts: &[workload::JobLayout],
    cg_ids: &[u16],
) -> Result<Vec<TaskSlot>, Error> {
    let cpus = cfg.machine.cpus as usize;
    let sleep_ns = cfg.settings.cpu_costs.sleep_ns;
    let syscalls = SyscallCosts::on(&cfg.machine, sleep_ns);
    let cache_syscalls = SyscallCosts::on(&cfg.cache_machine, sleep_ns);
    let mut rng = ChaCha8Rng::seed_from_u64(stream_seed(cfg.seed, 0x5eed));
    let mut tasks = Vec::with_capacity(jobfile.jobs.len());
    for (i, spec) in jobfile.jobs.iter().enumerate() {
        let base = spec.randseed.unwrap_or(cfg.seed);
        let seed = stream_seed(base, i as u64 + 1);
        let modelled = spec.ioengine.kind != EngineKind::NotModelled;
        let gen = if modelled {
            Some(Generator::new(spec, &layouts[i], seed).map_err(|e| {
                Error::Input(
                    InputError::new(e.option, format!("job '{}': {}", spec.name, e.message))
                        .in_file(&jobfile.source),
                )
            })?)
        } else {
            None
        };
        let rate = if modelled {
            RateLimiter::new(spec, seed ^ 0x7261_7465)
        } else {
            None
        };
        // Where it starts; with the shared policy it may move within its
        // `cpus_allowed` later (`allowed_cpus`).
        let cpu = match &spec.cpus_allowed {
            Some(list) if !list.is_empty() => {
                (list[spec.clone_index as usize % list.len()] as usize % cpus) as u16
            }
            _ => (i % cpus) as u16,
        };
        let (lo, hi) = spec.startdelay;
        let delay = if hi > lo { rng.gen_range(lo..=hi) } else { lo };
        let stats = if modelled {
            JobStats::with_logs(spec).map_err(|e| input(format!("job '{}': {e}", spec.name)))?
        } else {
            JobStats::new(spec)
        };
        let ioprio = IoPrio::from_fio(spec.prioclass, spec.prio);
        tasks.push(TaskSlot {
            task: Task::new(i as u32, TaskKind::FioJob, cpu, cg_ids[i], ioprio),
            job: FioJob::new(
                spec,
                gen,
                rate,
                stats,
                delay,
                if spec.is_buffered() {
                    cache_syscalls
                } else {
                    syscalls
                },
            ),
        });
    }
    Ok(tasks)
}

/// The disk's name in fio's report: the first job's file name, or the
/// profile's.
fn disk_name(jobfile: &JobFile, cfg: &Config) -> String {
    jobfile
        .jobs
        .iter()
        .find_map(|j| j.filenames.first())
        .map(|f| f.rsplit('/').next().unwrap_or(f).to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| cfg.profile.name.clone())
}

/// The CPUs a job's task may run on: every CPU without `cpus_allowed`;
/// the listed ones (folded onto the machine's CPUs) under fio's default
/// `cpus_allowed_policy=shared`; only the one it was given under `split`.
fn allowed_cpus(spec: &JobSpec, start: u16, cpus: usize) -> Vec<u16> {
    match &spec.cpus_allowed {
        Some(list) if !list.is_empty() && !spec.cpus_allowed_split => {
            let mut v: Vec<u16> = list.iter().map(|&c| (c as usize % cpus) as u16).collect();
            v.sort_unstable();
            v.dedup();
            if v.len() == cpus {
                Vec::new()
            } else {
                v
            }
        }
        Some(list) if !list.is_empty() => vec![start],
        _ => Vec::new(),
    }
}

/// dm-crypt's workers: one per CPU from id `first`, a kworker of the root
/// cgroup at the default I/O priority.
fn dm_crypt_workers(cfg: &Config, first: u32) -> (Option<CryptQueues>, Vec<(Task, Kcryptd)>) {
    let cpus = cfg.machine.cpus as usize;
    let crypt = cfg.dm_crypt.map(|c| {
        let scaled = CryptCosts {
            sector_ns: cfg.machine.scale_ns(c.sector_ns),
            bio_ns: cfg.machine.scale_ns(c.bio_ns),
        };
        CryptQueues::new(scaled, cpus, first)
    });
    let kcryptd = match crypt {
        Some(_) => (0..cpus)
            .map(|c| {
                let id = first + c as u32;
                let t = Task::new(id, TaskKind::Kcryptd, c as u16, 0, IoPrio::default());
                (t, Kcryptd::default())
            })
            .collect(),
        None => Vec::new(),
    };
    (crypt, kcryptd)
}

/// `machine` with its CPU speed multiplied by a profile's `[cpu]
/// {what}_speed`, when it has one; the product must stay in range.
fn at_profile_speed(machine: &Machine, speed: Option<f64>, what: &str) -> Result<Machine, Error> {
    let mut m = machine.clone();
    if let Some(f) = speed {
        m.cpu_speed *= f;
        m.validate().map_err(|e| {
            InputError::new(
                "cpu-speed",
                format!("{e} (with the profile's cpu.{what}_speed {f})"),
            )
        })?;
    }
    Ok(m)
}

/// Mount ext4 over the page cache's files: a file is laid out with data
/// when some job reads it (fio writes it first), else fallocated.
fn mount(
    opts: &MountOptions,
    cache: &PageCache,
    jobfile: &JobFile,
    layouts: &[workload::JobLayout],
    capacity: u64,
    jbd2_task: u32,
) -> Ext4 {
    use crate::cache::PAGE;
    use crate::job::Ddir;
    let mut files: Vec<(u64, u64, bool)> = cache
        .files()
        .iter()
        .map(|f| (f.first, f.end, false))
        .collect();
    for (spec, l) in jobfile.jobs.iter().zip(layouts) {
        // fio lays a file out with data when a job reads it or asks for
        // `overwrite` (filesetup.c), else it only allocates it.
        if !spec.rw.ddirs().contains(&Ddir::Read) && !spec.overwrite {
            continue;
        }
        for r in &l.files {
            if let Some(i) = cache.file_of(r.start / PAGE) {
                files[i as usize].2 = true;
            }
        }
    }
    let mut fs = Ext4::new(opts.clone(), capacity, &files);
    fs.jbd2_task = jbd2_task;
    fs
}
