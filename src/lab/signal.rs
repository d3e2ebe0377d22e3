//! Ctrl-C handling without extra crates: `signal(2)`, `kill(2)`, `geteuid(2)`
//! and `sysconf(3)` from the C library that std already links.
//!
//! The handler only records the signal; the lab checks [`interrupted`]
//! between steps and while fio runs, stops fio (SIGINT, then SIGKILL), and
//! restores sysfs and cgroups through its normal cleanup path.

use std::sync::atomic::{AtomicI32, Ordering};

pub const SIGHUP: i32 = 1;
pub const SIGINT: i32 = 2;
pub const SIGKILL: i32 = 9;
pub const SIGTERM: i32 = 15;

/// `_SC_CLK_TCK` (bits/confname.h).
const SC_CLK_TCK: i32 = 2;

static CAUGHT: AtomicI32 = AtomicI32::new(0);

extern "C" {
    fn signal(signum: i32, handler: usize) -> usize;
    fn kill(pid: i32, sig: i32) -> i32;
    fn geteuid() -> u32;
    fn sysconf(name: i32) -> i64;
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
