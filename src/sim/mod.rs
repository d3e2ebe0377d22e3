pub mod costs;
pub mod engine;
pub mod event;
pub mod switches;
pub mod time;

pub use engine::{simulate, SimConfig, DEFAULT_SEED};
