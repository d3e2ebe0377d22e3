//! CPU time of the I/O engines' system calls, as the task experiences it.
//! Model assumptions (not kernel constants): typical figures for a modern
//! x86 core; they set fio's slat and bound a single job's submission rate.

use crate::sim::time::Ns;

/// `pread`/`pwrite` entry to bio submission for sync engines.
pub const SYNC_SUBMIT_NS: Ns = 1_000;
/// `io_submit`/`io_uring_enter` fixed cost per call.
pub const AIO_SUBMIT_BASE_NS: Ns = 600;
/// Additional cost per I/O in one submit call.
pub const AIO_SUBMIT_PER_IO_NS: Ns = 300;
/// fio's null engine per call.
pub const NULL_SUBMIT_NS: Ns = 200;
/// `io_getevents` (or the sync call's return) and fio's completion accounting per I/O.
pub const REAP_PER_IO_NS: Ns = 300;
