//! What runs on the simulated CPUs: the fio job driver and, later, kernel
//! threads.

pub mod costs;
