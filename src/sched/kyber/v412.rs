//! kyber's latency feedback before 4.18 (v4.12 block/kyber-iosched.c with
//! block/blk-stat.c): what the E2/E3 measurements of seed 000 ran.
//!
//! Three domains: reads, synchronous writes, and everything else (async
//! writes, discards) in OTHER; depths 256 / 128 / 64, batches 16 / 8 / 8.
//! There are no histograms and no percentiles. A completion whose I/O
//! latency (dispatch to the driver → completion) exceeds its domain's
//! target, seen while no statistics window is open, opens a 10 ms window
//! (`blk_stat_activate_msecs(cb, 10)`); while it is open the block layer's
//! statistics callback sums every completion's I/O latency per domain. When
//! it closes, each domain's **mean** is graded against its target (GREAT at
//! or under half of it, GOOD at or under it, BAD over it, AWFUL at twice
//! it or more) and the read and sync-write depths are moved by the two
//! statuses together (`kyber_adjust_rw_depth`), OTHER by the better of them
//! (`kyber_adjust_other_depth`). While a domain is still bad, or OTHER is
//! still throttled, another 100 ms window follows.
//!
//! Pitfalls (each checked in tests.rs):
//! - A domain is only shrunk when the *other* one is bad: a good write
//!   domain loses 1/8 of its depth (1/4 when reads are awful) each window
//!   in which reads are bad, and nothing gives it back while both are good
//!   — only its own latency going bad (+1 or +2 per window) or a window
//!   without reads (+1). Depth lost to one burst of slow reads stays lost
//!   while the device keeps up, so the throttling ratchets.
//! - Both good or both bad: no change at all (the goal is fairness between
//!   the two, not a latency).
//! - The window's samples are only those completed while it was open; the
//!   completion that opened it counts (kyber's hook runs before
//!   `blk_stat_add` in `__blk_mq_complete_request`).
//! - The latency is the I/O latency (`issue_stat` is set in
//!   `blk_mq_start_request`), not the time spent waiting in kyber.

/// `enum { NONE = 0, GOOD = 1, GREAT = 2, BAD = -1, AWFUL = -2 }`.
pub const NONE: i8 = 0;
pub const GOOD: i8 = 1;
pub const GREAT: i8 = 2;
pub const BAD: i8 = -1;
pub const AWFUL: i8 = -2;

/// `blk_stat_activate_msecs(kqd->cb, 10)` from `kyber_completed_request`.
pub const FIRST_WINDOW_MS: u64 = 10;
/// `blk_stat_activate_msecs(kqd->cb, 100)` from `kyber_stat_timer_fn`.
pub const NEXT_WINDOW_MS: u64 = 100;

/// Domain indices of the v4.12 layout (`KYBER_READ`, `KYBER_SYNC_WRITE`,
/// `KYBER_OTHER`).
pub const READ: usize = 0;
pub const SYNC_WRITE: usize = 1;
pub const OTHER: usize = 2;
pub const DOMAINS: usize = 3;
/// v4.12 `kyber_depth`.
pub const MAX_DEPTH: [u32; DOMAINS] = [256, 128, 64];
/// v4.12 `kyber_batch_size`.
pub const BATCH_SIZE: [u32; DOMAINS] = [16, 8, 8];

fn is_good(s: i8) -> bool {
    s > 0
}
fn is_bad(s: i8) -> bool {
    s < 0
}

/// The statistics callback's window: I/O-latency samples per domain
/// (`cb->stat[bucket]`: sample count and sum, whose quotient is the mean).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    pub nr: [u64; DOMAINS],
    pub sum: [u64; DOMAINS],
}

impl Window {
    /// `blk_stat_add`: one completion's I/O latency.
    pub fn add(&mut self, domain: usize, latency: u64) {
        if domain < DOMAINS {
            self.nr[domain] += 1;
            self.sum[domain] = self.sum[domain].saturating_add(latency);
        }
    }

    /// `kyber_lat_status`: the domain's mean against `target`.
    pub fn status(&self, domain: usize, target: u64) -> i8 {
        if self.nr[domain] == 0 {
            return NONE;
        }
        let mean = self.sum[domain] / self.nr[domain];
        if mean >= target.saturating_mul(2) {
            AWFUL
        } else if mean > target {
            BAD
        } else if mean <= target / 2 {
            GREAT
        } else {
            GOOD
        }
    }
}

/// `kyber_adjust_rw_depth`: the new depth of the read or sync-write domain
/// whose depth is `depth` (at most `max`), from its status and the other's.
pub fn adjust_rw_depth(depth: u32, max: u32, this: i8, other: i8) -> u32 {
    if this == NONE || (is_good(this) && is_good(other)) || (is_bad(this) && is_bad(other)) {
        return depth;
    }
    let d = if other == NONE {
        depth + 1
    } else {
        match this {
            GOOD if other == AWFUL => depth - (depth / 4).max(1),
            GOOD => depth - (depth / 8).max(1),
            GREAT if other == AWFUL => depth / 2,
            GREAT => depth - (depth / 4).max(1),
            BAD => depth + 1,
            AWFUL if other == GREAT => depth + 2,
            _ => depth + 1,
        }
    };
    d.clamp(1, max)
}

/// `kyber_adjust_other_depth`: OTHER follows the better of the read and
/// sync-write statuses; with neither measured it grows by 2.
pub fn adjust_other_depth(depth: u32, max: u32, read: i8, write: i8, have_samples: bool) -> u32 {
    let d = if read == NONE && write == NONE {
        depth + 2
    } else if have_samples {
        let status = if read == NONE {
            write
        } else if write == NONE {
            read
        } else {
            read.max(write)
        };
        match status {
            GREAT => depth + 2,
            GOOD => depth + 1,
            BAD => depth - (depth / 4).max(1),
            AWFUL => depth / 2,
            _ => depth,
        }
    } else {
        depth
    };
    d.clamp(1, max)
}

/// Whether `kyber_stat_timer_fn` opens another (100 ms) window.
pub fn keep_monitoring(read: i8, write: i8, other_depth: u32) -> bool {
    is_bad(read) || is_bad(write) || other_depth < MAX_DEPTH[OTHER]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_grades_the_mean_against_the_target() {
        let mut w = Window::default();
        assert_eq!(w.status(READ, 2_000_000), NONE);
        w.add(READ, 1_000_000);
        assert_eq!(w.status(READ, 2_000_000), GREAT);
        w.add(READ, 2_000_000); // mean 1.5 ms
        assert_eq!(w.status(READ, 2_000_000), GOOD);
        w.add(READ, 3_500_000); // mean 2.166 ms
        assert_eq!(w.status(READ, 2_000_000), BAD);
        w.add(READ, 10_000_000); // mean 4.125 ms
        assert_eq!(w.status(READ, 2_000_000), AWFUL);
    }

    #[test]
    fn the_good_domain_shrinks_only_when_the_other_is_bad() {
        // Both good or both bad: unchanged.
        assert_eq!(adjust_rw_depth(128, 128, GREAT, GOOD), 128);
        assert_eq!(adjust_rw_depth(128, 128, BAD, AWFUL), 128);
        // Writes good, reads bad: writes lose 1/8; reads awful: 1/4.
        assert_eq!(adjust_rw_depth(128, 128, GOOD, BAD), 112);
        assert_eq!(adjust_rw_depth(128, 128, GOOD, AWFUL), 96);
        // Writes great: 1/4, or half when reads are awful.
        assert_eq!(adjust_rw_depth(128, 128, GREAT, BAD), 96);
        assert_eq!(adjust_rw_depth(128, 128, GREAT, AWFUL), 64);
        // The bad domain grows by one (two when awful against great), to its max.
        assert_eq!(adjust_rw_depth(255, 256, BAD, GOOD), 256);
        assert_eq!(adjust_rw_depth(10, 128, AWFUL, GREAT), 12);
        assert_eq!(adjust_rw_depth(10, 128, AWFUL, GOOD), 11);
        // No samples of the other: +1; none of this one: unchanged.
        assert_eq!(adjust_rw_depth(10, 128, GOOD, NONE), 11);
        assert_eq!(adjust_rw_depth(10, 128, NONE, BAD), 10);
        // Never below 1.
        assert_eq!(adjust_rw_depth(1, 128, GOOD, BAD), 1);
        assert_eq!(adjust_rw_depth(1, 128, GREAT, AWFUL), 1);
    }

    #[test]
    fn other_follows_the_better_status() {
        assert_eq!(adjust_other_depth(64, 64, NONE, NONE, false), 64);
        assert_eq!(adjust_other_depth(10, 64, NONE, NONE, false), 12);
        assert_eq!(adjust_other_depth(64, 64, BAD, AWFUL, true), 48);
        assert_eq!(adjust_other_depth(64, 64, AWFUL, AWFUL, true), 32);
        assert_eq!(adjust_other_depth(32, 64, AWFUL, GOOD, true), 33);
        // Without OTHER samples nothing moves unless both are unmeasured.
        assert_eq!(adjust_other_depth(32, 64, AWFUL, AWFUL, false), 32);
        assert!(keep_monitoring(BAD, GOOD, 64));
        assert!(keep_monitoring(GOOD, GOOD, 63));
        assert!(!keep_monitoring(GOOD, GREAT, 64));
    }
}
