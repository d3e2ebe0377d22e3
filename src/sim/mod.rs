pub mod costs;
pub mod engine;
pub mod event;
pub mod time;

pub use engine::{simulate, SimConfig, DEFAULT_SEED};
