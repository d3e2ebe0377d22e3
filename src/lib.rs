//! elevator: a working model of the Linux block I/O stack and its I/O schedulers.
//!
//! Data flows one way through the modules, in this order:
//! `job` (fio job files) → `workload` (one I/O stream per job) → `block` (blk-mq:
//! plug, merge, tags, software/hardware queues) → `sched` (the elevators) →
//! `device` (models) → back up through `block` → `stats` → `report`.
//! `sim` owns the clock and the event loop that ties the stages together;
//! `cgroup` holds weights and I/O priority classes; `lab` drives real devices.

pub mod block;
pub mod cache;
pub mod cgroup;
pub mod cli;
pub mod device;
pub mod job;
pub mod lab;
pub mod machine;
pub mod report;
pub mod run;
pub mod sched;
pub mod sim;
pub mod stats;
pub mod task;
pub mod workload;
