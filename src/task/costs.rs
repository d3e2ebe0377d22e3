//! CPU time of the I/O engines' system calls, as the task experiences it.
//! Model assumptions (not kernel constants): typical figures for a ~2.4 GHz
//! x86 core (the reference core of every CPU cost here); they set fio's slat
//! and bound a single job's submission rate. A machine's `cpu_speed` scales
//! them.

use crate::block::cpu::CONTEXT_SWITCH_NS;
use crate::machine::Machine;
use crate::sim::time::Ns;

/// ext4's share of direct I/O on the reference core (`SyscallCosts`:
/// `dio_fs_read_ns`, `dio_fs_write_ns`, `dio_convert_ns`). Fitted
/// (2026-11-29) on 6.18, a 4 GiB tmpfs-backed loop device on 2 vCPUs,
/// fio 3.33, one job of 4 KiB random I/O at QD32 (libaio) on a 1 GiB file
/// of a fresh ext4, against the built-in `loop` profile, each to one ratio
/// of IOPS: reads 0.887 of the raw device's (178k / 201k); writes over
/// laid-out data (`overwrite=1`) 0.815 of the raw device's (145k / 178k);
/// writes into fio's fallocated file 0.503 of the overwrites' (73k /
/// 145k: the first pass converts every block; the model gives 0.505).
/// The conversion runs on the CPU the bio completed on, which for the loop
/// device is its worker's. Checked on other jobs in the README ("Direct
/// I/O on ext4"). `DIO_CONVERT_NS` was refitted on 2026-12-03 (7.8 to
/// 5.9 us) when the loop model's `nowait_percent` became a per-command
/// draw: the conversions, one at a time per file, collide more often when
/// the commands completing on fio's CPU come in random runs, and the old
/// value gave 0.319.
const DIO_FS_READ_NS: Ns = 315;
const DIO_FS_WRITE_NS: Ns = 560;
const DIO_CONVERT_NS: Ns = 5_900;

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
    /// A direct read of a file on ext4, on top of the block device's path:
    /// `ext4_dio_read_iter` takes the inode lock (shared), `iomap_begin`
    /// looks the range up (`ext4_map_blocks`, the extent status tree).
    pub dio_fs_read_ns: Ns,
    /// A direct write of a file on ext4, on top of the block device's
    /// path: as a read, plus `ext4_dio_write_checks` (`file_modified`, the
    /// overwrite check) and the iomap write's own completion.
    pub dio_fs_write_ns: Ns,
    /// A direct write that landed in unwritten (fallocated or newly
    /// allocated) blocks: its completion is deferred to the `dio/DEV`
    /// workqueue, where `ext4_dio_write_end_io` converts the extents
    /// (`ext4_convert_unwritten_extents`: a journal handle, the extent
    /// tree changed under `i_data_sem` held for writing) before the AIO
    /// completes.
    pub dio_convert_ns: Ns,
    /// A task that sleeps for its I/O with nothing else to run leaves its
    /// CPU to the idle task: `schedule()` dequeues it and switches, which
    /// is the task's own system time (its schedstat counts it). A context
    /// switch (`CONTEXT_SWITCH_NS`), not fitted. Per thread on the lab VM
    /// (2026-12-06e, none, tmpfs loop): fio spent 2.22 us per I/O at QD4,
    /// sleeping 0.17 times per I/O, 1.73 at QD16 (0.03) and 1.52 at QD64
    /// (0.01): about 3.5 us per sleep on its own account. Without it the
    /// model's fio cost the same per I/O at every depth. A switch to
    /// another task is charged by the run queues instead (`runqueue`).
    /// A profile may give the host's own (`[cpu] sleep_ns`).
    pub sleep_switch_ns: Ns,
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
        dio_fs_read_ns: DIO_FS_READ_NS,
        dio_fs_write_ns: DIO_FS_WRITE_NS,
        dio_convert_ns: DIO_CONVERT_NS,
        sleep_switch_ns: CONTEXT_SWITCH_NS,
    };

    /// On `machine`'s CPUs, with a sleep's cost on the reference core
    /// (`[cpu] sleep_ns`) if the profile gives one.
    pub fn on(machine: &Machine, sleep_ns: Option<Ns>) -> SyscallCosts {
        let r = SyscallCosts {
            sleep_switch_ns: sleep_ns.unwrap_or(SyscallCosts::REFERENCE.sleep_switch_ns),
            ..SyscallCosts::REFERENCE
        };
        SyscallCosts {
            sync_submit_ns: machine.scale_ns(r.sync_submit_ns),
            aio_submit_base_ns: machine.scale_ns(r.aio_submit_base_ns),
            aio_submit_per_io_ns: machine.scale_ns(r.aio_submit_per_io_ns),
            null_submit_ns: machine.scale_ns(r.null_submit_ns),
            reap_per_io_ns: machine.scale_ns(r.reap_per_io_ns),
            page_read_ns: machine.scale_ns(r.page_read_ns),
            page_write_ns: machine.scale_ns(r.page_write_ns),
            dio_fs_read_ns: machine.scale_ns(r.dio_fs_read_ns),
            dio_fs_write_ns: machine.scale_ns(r.dio_fs_write_ns),
            dio_convert_ns: machine.scale_ns(r.dio_convert_ns),
            sleep_switch_ns: machine.scale_ns(r.sleep_switch_ns),
        }
    }
}
