//! elevator: a working model of the Linux block I/O stack and its I/O schedulers.
//!
//! Data flows one way through the modules, in this order:
//! `job` (fio job files) → `workload` (one I/O stream per job) → `task` (what
//! runs on the simulated CPUs: the fio job driver's submit/reap loop) →
//! `block` (blk-mq: rq-qos, plug, merge, tags, software/hardware queues, the
//! flush sequencer; `block::legacy` for the single-queue core) → `sched` (the
//! elevators, and the registry of them all) → `device` (models) → back up
//! through `block` → `stats` → `report`. `run` is the library entry that ties
//! the stages together in its event loop (`sim` owns the clock, events and
//! seeded random streams); `machine` is the simulated machine (CPUs, memory,
//! CPU speed); `cgroup` the cgroup hierarchy, weight files and I/O priority
//! classes; `lab` drives real devices through fio; `cli` is the command line.
//! `tests/layering.rs` checks that no module uses a higher layer.
//!
//! The library call is [`run()`]:
//!
//! ```no_run
//! let spec = elevator::RunSpec::from_text("job.fio", "[a]\nrw=randread\nsize=16m\n")
//!     .scheduler("mq-deadline")
//!     .device("sata-ssd");
//! let report = elevator::run(&spec)?;
//! println!("{}", elevator::report::fio_json::to_string(&report));
//! # Ok::<(), elevator::Error>(())
//! ```

pub mod block;
pub mod cache;
pub mod cgroup;
pub mod cli;
pub mod device;
pub mod fs;
pub mod job;
pub mod kernel;
pub mod lab;
pub mod machine;
pub mod report;
pub mod run;
pub mod sched;
pub mod sim;
pub mod stats;
pub mod task;
pub mod workload;

pub use report::RunReport;
pub use run::{run, run_many, run_with_progress, Error, InputError, RunSpec};
