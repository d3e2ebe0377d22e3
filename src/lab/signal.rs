//! Signals and processes without extra crates: `signal(2)`, `kill(2)`,
//! `geteuid(2)`, `setpgid(2)`, `prctl(2)`, `getppid(2)` and `sysconf(3)`
//! from the C library that std already links.
//!
//! The handler only records the signal; the lab checks [`interrupted`]
//! between steps, during `--settle` and while fio runs, kills fio's process
//! group, and restores sysfs and cgroups through its normal cleanup path.
//! fio itself runs under a guard that dies with the lab, see
//! [`die_with_parent`] and `lab::fio`.

use std::sync::atomic::{AtomicI32, Ordering};

pub const SIGHUP: i32 = 1;
pub const SIGINT: i32 = 2;
pub const SIGKILL: i32 = 9;
pub const SIGTERM: i32 = 15;

/// `PR_SET_PDEATHSIG` (linux/prctl.h).
const PR_SET_PDEATHSIG: i32 = 1;
/// `ESRCH`.
const ESRCH: i32 = 3;

/// `_SC_CLK_TCK` (bits/confname.h).
const SC_CLK_TCK: i32 = 2;

static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
    fn kill(pid: i32, sig: i32) -> i32;
    fn geteuid() -> u32;
    fn sysconf(name: i32) -> i64;
    fn setpgid(pid: i32, pgid: i32) -> i32;
    fn getppid() -> i32;
    fn prctl(option: i32, ...) -> i32;
}

extern "C" fn on_signal(sig: i32) {
    // Async-signal-safe: one atomic store.
    CAUGHT.store(sig, Ordering::SeqCst);
}

/// Catch SIGINT, SIGTERM and SIGHUP from now on (idempotent).
pub fn install() {
    let handler = on_signal as extern "C" fn(i32) as usize;
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        // SAFETY: the handler only performs an atomic store.
        unsafe {
            signal(sig, handler);
        }
    }
}

/// The signal caught since [`install`], if any.
pub fn interrupted() -> Option<i32> {
    match CAUGHT.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// Exit code for a run stopped by `sig` (shell convention 128 + n).
pub fn exit_code(sig: i32) -> i32 {
    128 + sig
}

/// Send `sig` to process `pid`.
pub fn send(pid: u32, sig: i32) -> bool {
    // SAFETY: plain system call with integer arguments.
    unsafe { kill(pid as i32, sig) == 0 }
}

/// Send `sig` to every process of the process group `pgid`.
pub fn send_group(pgid: u32, sig: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: plain system call with integer arguments; a negative pid
    // names a process group.
    unsafe { kill(-(pgid as i32), sig) == 0 }
}

/// For `CommandExt::pre_exec`: make the child the leader of a new process
/// group (so one signal reaches everything it starts) and have the kernel
/// send it `sig` when its parent, `parent_pid`, dies, however it dies. Fails
/// if the parent is already gone.
///
/// Only async-signal-safe system calls: this runs between fork and exec.
pub fn die_with_parent(parent_pid: u32, sig: i32) -> std::io::Result<()> {
    // SAFETY: system calls with integer arguments, no allocation.
    unsafe {
        if setpgid(0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if prctl(PR_SET_PDEATHSIG, sig as std::ffi::c_ulong) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The parent may have died before prctl: then no signal would come.
        if getppid() != parent_pid as i32 {
            return Err(std::io::Error::from_raw_os_error(ESRCH));
        }
    }
    Ok(())
}

pub fn euid() -> u32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { geteuid() }
}

/// Clock ticks per second of /proc/stat (USER_HZ).
pub fn clock_ticks() -> u64 {
    // SAFETY: plain libc query.
    let v = unsafe { sysconf(SC_CLK_TCK) };
    if v > 0 {
        v as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_codes() {
        assert!(clock_ticks() >= 100);
        assert_eq!(exit_code(SIGINT), 130);
        // Signal 0 probes that a process exists.
        assert!(send(std::process::id(), 0));
    }
}
