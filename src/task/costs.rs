//! CPU time of the I/O engines' system calls, as the task experiences it.
//! Model assumptions (not kernel constants): typical figures for a ~2.4 GHz
//! x86 core (the reference core of every CPU cost here); they set fio's slat
//! and bound a single job's submission rate. A machine's `cpu_speed` scales
//! them.

use crate::machine::Machine;
use crate::sim::time::Ns;

/// The system-call costs a fio job pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyscallCosts {
    /// `pread`/`pwrite` entry to bio submission for sync engines.
    pub sync_submit_ns: Ns,
    /// `io_submit`/`io_uring_enter` fixed cost per call.
    pub aio_submit_base_ns: Ns,
    /// Additional cost per I/O in one submit call.
    pub aio_submit_per_io_ns: Ns,
    /// fio's null engine per call.
    pub null_submit_ns: Ns,
    /// `io_getevents` (or the sync call's return) and fio's completion
    /// accounting per I/O.
    pub reap_per_io_ns: Ns,
    /// Page-cache lookup and copy to the user per 4 KiB page of a buffered
    /// read (reference §7.1 puts a 4 KiB `pread` hit at 0.3–1 µs in all).
    pub page_read_ns: Ns,
    /// Copy from the user, page lookup or allocation and dirty accounting
    /// per 4 KiB page of a buffered write.
    pub page_write_ns: Ns,
}

impl SyscallCosts {
    /// On the reference core.
    pub const REFERENCE: SyscallCosts = SyscallCosts {
        sync_submit_ns: 1_000,
        aio_submit_base_ns: 600,
        aio_submit_per_io_ns: 300,
        null_submit_ns: 200,
        reap_per_io_ns: 300,
        page_read_ns: 400,
        page_write_ns: 700,
    };

    /// On `machine`'s CPUs.
    pub fn on(machine: &Machine) -> SyscallCosts {
        let r = SyscallCosts::REFERENCE;
        SyscallCosts {
            sync_submit_ns: machine.scale_ns(r.sync_submit_ns),
            aio_submit_base_ns: machine.scale_ns(r.aio_submit_base_ns),
            aio_submit_per_io_ns: machine.scale_ns(r.aio_submit_per_io_ns),
            null_submit_ns: machine.scale_ns(r.null_submit_ns),
            reap_per_io_ns: machine.scale_ns(r.reap_per_io_ns),
            page_read_ns: machine.scale_ns(r.page_read_ns),
            page_write_ns: machine.scale_ns(r.page_write_ns),
        }
    }
}
