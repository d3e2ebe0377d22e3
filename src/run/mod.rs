//! Running a simulation: the event loop that ties tasks, the block layer,
//! the scheduler and the device together.

pub mod engine;

pub use engine::{simulate, SimConfig, DEFAULT_SEED};
