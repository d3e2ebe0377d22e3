//! Simulated time: integer nanoseconds since the start of the run.

/// Nanoseconds.
pub type Ns = u64;

pub const NS_PER_US: Ns = 1_000;
pub const NS_PER_MS: Ns = 1_000_000;
pub const NS_PER_SEC: Ns = 1_000_000_000;

/// The kernel measures scheduler deadlines in jiffies. We model HZ=250, the
/// default of most distribution kernels (CONFIG_HZ_250), and round up to
/// whole jiffies where the kernel does (`msecs_to_jiffies`).
pub const HZ: u64 = 250;
pub const NS_PER_JIFFY: Ns = NS_PER_SEC / HZ;

/// `msecs_to_jiffies(ms)` rounds up; returned as nanoseconds.
pub fn ms_to_jiffies_ns(ms: u64) -> Ns {
    let jiffies = (ms * HZ).div_ceil(1000);
    jiffies * NS_PER_JIFFY
}

/// Current jiffy count at time `now` (the kernel's `jiffies`, starting at 0).
pub fn jiffies(now: Ns) -> u64 {
    now / NS_PER_JIFFY
}
