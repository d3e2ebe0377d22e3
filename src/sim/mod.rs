//! The discrete-event core every stage builds on: the clock (integer
//! nanoseconds, jiffies), the event queue, and seeded random streams. It
//! knows nothing of jobs, requests or devices; the event loop that ties them
//! together is `crate::run::engine`.

pub mod event;
pub mod rng;
pub mod time;
