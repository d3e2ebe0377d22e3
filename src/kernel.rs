//! Kernel eras: `--kernel VERSION` selects how the block layer of that
//! kernel behaved where it differs from the newest one in ways that change
//! results. Everything that differs between versions is declared once, in
//! [`CHANGES`] (one row per behaviour: the version it changed in, the
//! behaviour before and after, the kernel source); [`Era::of`] resolves a
//! version against that table. The block layer, the scheduler registry
//! (which schedulers a kernel had, `crate::sched::KERNEL_SPANS`) and the
//! CLI (`elevator schedulers --kernel V`) all read it.
//!
//! Sources: the kernel files named per row (read at the versions named);
//! reference/kernel-blkmq-deadline-kyber.md §1.8; facts marked "(memory)"
//! are from kernel history and were not re-read in source.
//!
//! Pitfalls:
//! - No `--kernel` means the newest kernel's blk-mq, with the legacy
//!   schedulers (noop, deadline) still allowed on the ≤ 4.20 legacy core, as
//!   before eras existed; an explicit `--kernel` checks that every scheduler
//!   of the run existed in that kernel.
//! - Only the behaviours in `CHANGES` follow the era. Between 4.15 and the
//!   newest kernel the dispatch loop changed in smaller ways (batching,
//!   the 3 ms re-run on a NULL dispatch, ≈5.7–5.14) that the model keeps at
//!   v6.17 for every era from 4.15 on.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A kernel version, major.minor[.patch].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Version {
    pub major: u16,
    pub minor: u16,
    pub patch: u16,
}

impl Version {
    pub const fn new(major: u16, minor: u16, patch: u16) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// Parse "4.12", "2.6.39" or "6.17.0"; a version no mainline kernel
    /// had (9.9, 4.21, 2.6.41) is an error naming the ones that exist.
    pub fn parse(text: &str) -> Result<Version, String> {
        let t = text.trim();
        let bad = || {
            format!(
                "unknown kernel version '{t}': expected MAJOR.MINOR[.PATCH] of a mainline \
                 release from {OLDEST} to {NEWEST} (e.g. 2.6.39, 4.12, 6.17)"
            )
        };
        let parts: Vec<&str> = t.split('.').collect();
        if !(2..=3).contains(&parts.len()) {
            return Err(bad());
        }
        let mut n = [0u16; 3];
        for (i, p) in parts.iter().enumerate() {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 4 {
                return Err(bad());
            }
            n[i] = p.parse().map_err(|_| bad())?;
        }
        // 2.6 releases count in the third number: "2.6" alone names no kernel.
        if n[0] == 2 && parts.len() == 2 {
            return Err(bad());
        }
        let v = Version::new(n[0], n[1], n[2]);
        if !mainline(v) {
            return Err(bad());
        }
        Ok(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.major == 2 {
            write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
        } else if self.patch == 0 {
            write!(f, "{}.{}", self.major, self.minor)
        } else {
            write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
        }
    }
}

/// BLKDEV_MAX_RQ (include/linux/blkdev.h; BLKDEV_DEFAULT_RQ from 5.16): 128.
/// The same value as `block::knobs::BLKDEV_DEFAULT_RQ`; eras sit below the
/// block layer, so they keep their own copy.
const BLKDEV_DEFAULT_RQ: u32 = 128;

/// The oldest kernel the eras describe (the source documents' 2.6.32,
/// Alibaba's ali_kernel of seed 004).
pub const OLDEST: Version = Version::new(2, 6, 32);
/// The newest kernel, the model's default (reference §0: v6.17).
pub const NEWEST: Version = Version::new(6, 17, 0);

/// Whether `v` names a mainline release between OLDEST and NEWEST: 2.6.32–
/// 2.6.39, 3.0–3.19, 4.0–4.20, 5.0–5.19, 6.0–6.17 (the last minor of each
/// major: 2.6.39, 3.19, 4.20, 5.19).
fn mainline(v: Version) -> bool {
    let last_minor = match (v.major, v.minor) {
        (2, 6) => return (32..=39).contains(&v.patch),
        (3, _) => 19,
        (4, _) => 20,
        (5, _) => 19,
        (6, _) => NEWEST.minor,
        _ => return false,
    };
    v.minor <= last_minor && v <= NEWEST
}

/// How blk-mq's `blk_mq_sched_dispatch_requests` fed the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum DispatchLoop {
    /// 4.11–4.14: `hctx->dispatch` is spliced and sent first; only when that
    /// sent nothing (or it was empty) is the scheduler asked, one request at
    /// a time while each one is sent; a request that gets no driver tag is
    /// spliced to the HEAD of `hctx->dispatch`. With a full device every
    /// queue run pulls one more request out of the scheduler and stacks it
    /// in front of the older ones: the scheduler's order becomes
    /// newest-first and the oldest requests wait until the list empties.
    /// Completions re-run the queue from kblockd, not inline (SCSI's
    /// `scsi_end_request`: `blk_mq_run_hw_queues(q, true)`; SCHED_RESTART
    /// and the driver-tag waiter also run it async), and one pending run
    /// serves every completion before it: such a run finds several tags
    /// free, which is what empties the list.
    /// (v4.12 block/blk-mq-sched.c `blk_mq_sched_dispatch_requests`,
    /// block/blk-mq.c `blk_mq_dispatch_rq_list`, `blk_mq_dispatch_wake`,
    /// drivers/scsi/scsi_lib.c `scsi_end_request`.)
    PullWhenStuck,
    /// 4.15 on: the scheduler is asked only after `hctx->dispatch` was sent
    /// in full, and (with a budget) only while the device has room: the
    /// model's v6.17 loop (block/mod.rs `dispatch_sched`).
    Current,
}

/// The default `nr_requests` of a blk-mq queue with a scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum SchedDepth {
    /// 4.11–4.13: 256 whatever the device depth (v4.12 block/blk-mq-sched.c
    /// `blk_mq_init_sched`: `q->nr_requests = 2 * BLKDEV_MAX_RQ`).
    Fixed256,
    /// 4.14 on: 2 × min(queue depth, 128) (reference §1.2; the version of the
    /// change is from memory).
    TwiceQueueDepth,
}

/// The behaviours of one kernel version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Era {
    pub version: Version,
    /// blk-mq exists (3.13, block/blk-mq.c); before it only the legacy
    /// single-queue core and its schedulers.
    pub blk_mq: bool,
    /// The legacy single-queue core and its schedulers (noop, deadline,
    /// cfq) exist (removed in 5.0).
    pub legacy_core: bool,
    /// `nr_requests` of a blk-mq queue can be written (3.16); before, the
    /// sysfs store refused every blk-mq queue.
    pub mq_nr_requests_writable: bool,
    pub dispatch: DispatchLoop,
    /// SCSI devices hold a per-device budget before the scheduler is asked
    /// (`.get_budget`, 4.15).
    pub scsi_budget: bool,
    /// libata's command queue depth for an NCQ device: 31 while tag 31 was
    /// kept for internal commands, 32 from 4.18.
    pub ata_queue_depth: u32,
    pub sched_depth: SchedDepth,
    /// `blk_mq_run_hw_queues` with a single-queue scheduler (mq-deadline,
    /// BFQ) runs only the current CPU's hardware queue and those with
    /// requests on their dispatch list (5.12), not every one.
    pub sq_sched_one_hctx: bool,
    /// A scheduler's shallow tag depth (`limit_depth`) counts bits of the
    /// whole tag bitmap, split over its words (6.17), not bits per word.
    pub shallow_whole_map: bool,
    /// `io_submit` plugs only batches of more than two iocbs (5.0); before,
    /// every call plugged.
    pub aio_plug_threshold: bool,
    /// An unplugged request bound for a scheduler is inserted and the
    /// queue run from kblockd (`blk_mq_run_hw_queue(hctx, true)`), not by
    /// the submitting task: on a device with one hardware queue (4.12),
    /// on one with several (5.4).
    pub sched_run_async_single: bool,
    pub sched_run_async_multi: bool,
    /// `submit_bio` wraps a bio submitted without a plug in a plug of its
    /// own (`__submit_bio`), so such a request reaches the scheduler through
    /// the plug's flush, which runs the queue in the submitting task.
    pub submit_bio_plugs: bool,
    /// `sysctl_sched_base_slice` before the CPU-count scaling, ns.
    pub base_slice_ns: u64,
}

/// One behaviour that changed: from `since` on it is `after`, before it
/// `before`. Rows are in version order.
pub struct Change {
    pub since: Version,
    pub what: &'static str,
    pub before: &'static str,
    pub after: &'static str,
    /// Kernel file and function (or commit) the row follows.
    pub source: &'static str,
    apply: fn(&mut Era, bool),
}

/// Every behaviour of the block layer that differs between the eras, with
/// the version it changed in. `Era::of` starts from the oldest behaviour
/// and applies each row whose version has been reached.
pub static CHANGES: &[Change] = &[
    Change {
        since: Version::new(3, 13, 0),
        what: "blk-mq",
        before: "legacy single-queue core only",
        after: "blk-mq available (scheduler 'none')",
        source: "block/blk-mq.c, merged in 3.13",
        apply: |e, on| e.blk_mq = on,
    },
    Change {
        since: Version::new(3, 16, 0),
        what: "writing nr_requests of a blk-mq queue",
        before: "refused (-EINVAL): the store handles only request_fn queues",
        after: "accepted: the tags are resized (without a scheduler, never above the driver's depth)",
        source: "v3.13 block/blk-sysfs.c queue_requests_store (`if (!q->request_fn) return -EINVAL`); blk_mq_update_nr_requests, 'blk-mq: allow changing of queue depth through sysfs' (3.16, memory)",
        apply: |e, on| e.mq_nr_requests_writable = on,
    },
    Change {
        since: Version::new(4, 11, 0),
        what: "blk-mq dispatch loop",
        before: "no blk-mq schedulers",
        after: "4.11-4.14: hctx->dispatch first; scheduler asked only when it sent nothing; a request without a driver tag goes to the head of hctx->dispatch",
        source: "v4.12 block/blk-mq-sched.c blk_mq_sched_dispatch_requests, block/blk-mq.c blk_mq_dispatch_rq_list",
        apply: |e, on| {
            if on {
                e.dispatch = DispatchLoop::PullWhenStuck
            }
        },
    },
    Change {
        since: Version::new(4, 12, 0),
        what: "an unplugged request with a scheduler, one hardware queue",
        before: "4.11: a sync request runs the queue in the submitting task",
        after: "inserted into the scheduler; the queue runs from kblockd (on the submitting CPU: a single-queue hctx's work is WORK_CPU_UNBOUND)",
        source: "v4.12 block/blk-mq.c blk_mq_make_request (`blk_mq_sched_insert_request(rq, false, true, true, true)`; 4.11's blk_sq_make_request ran it async only for !is_sync), blk_mq_hctx_next_cpu",
        apply: |e, on| e.sched_run_async_single = on,
    },
    Change {
        since: Version::new(4, 14, 0),
        what: "default nr_requests with a blk-mq scheduler",
        before: "256 (2 x BLKDEV_MAX_RQ)",
        after: "2 x min(queue depth, 128)",
        source: "v4.12 block/blk-mq-sched.c blk_mq_init_sched; v6.17 blk_mq_init_sched (version of the change: memory)",
        apply: |e, on| {
            e.sched_depth = if on {
                SchedDepth::TwiceQueueDepth
            } else {
                SchedDepth::Fixed256
            }
        },
    },
    Change {
        since: Version::new(4, 15, 0),
        what: "SCSI budget and the dispatch loop",
        before: "no budget; the 4.11-4.14 loop",
        after: "get_budget before the scheduler is asked; the scheduler is asked only after hctx->dispatch was sent in full",
        source: "4.15 block/blk-mq-sched.c blk_mq_do_dispatch_sched, blk_mq_ops.get_budget (drivers/scsi/scsi_lib.c scsi_mq_get_budget)",
        apply: |e, on| {
            e.scsi_budget = on;
            if on {
                e.dispatch = DispatchLoop::Current;
            }
        },
    },
    Change {
        since: Version::new(4, 18, 0),
        what: "libata NCQ queue depth",
        before: "31 (tag 31 kept for internal commands, ATA_MAX_QUEUE - 1)",
        after: "32 (internal command on its own tag)",
        source: "drivers/ata/libata-scsi.c ata_scsi_change_queue_depth, include/linux/libata.h ATA_MAX_QUEUE (4.18, memory)",
        apply: |e, on| e.ata_queue_depth = if on { 32 } else { 31 },
    },
    Change {
        since: Version::new(5, 0, 0),
        what: "plugging in io_submit",
        before: "every io_submit plugs its iocbs",
        after: "only batches of more than AIO_PLUG_THRESHOLD (2) iocbs are plugged",
        source: "fs/aio.c io_submit (v6.18 read; commit 'aio: only use blk plugs for > 2 depth submissions', merged for 5.0: memory)",
        apply: |e, on| e.aio_plug_threshold = on,
    },
    Change {
        since: Version::new(5, 0, 0),
        what: "legacy single-queue core",
        before: "available (noop, deadline, cfq)",
        after: "removed; blk-mq only",
        source: "5.0: block/blk-core.c legacy request_fn path, noop-iosched.c, deadline-iosched.c, cfq-iosched.c deleted",
        apply: |e, on| e.legacy_core = !on,
    },
    Change {
        since: Version::new(5, 4, 0),
        what: "an unplugged request with a scheduler, several hardware queues",
        before: "a sync request takes blk_mq_try_issue_directly, which inserts it and runs the queue in the submitting task",
        after: "inserted into the scheduler; the queue runs from kblockd (v6.18: `blk_mq_insert_request; blk_mq_run_hw_queue(hctx, true)` for every RQF_USE_SCHED request)",
        source: "v6.18 block/blk-mq.c blk_mq_submit_bio; commit 'blk-mq: respect io scheduler' (Ming Lei, 2019, merged for 5.4: memory)",
        apply: |e, on| e.sched_run_async_multi = on,
    },
    Change {
        since: Version::new(5, 12, 0),
        what: "queue runs with a single-queue scheduler on several hardware queues",
        before: "blk_mq_run_hw_queues runs every hardware queue",
        after: "only the current CPU's hardware queue, and those with requests on their dispatch list",
        source: "block/blk-mq.c blk_mq_run_hw_queues, blk_mq_get_sq_hctx (commit b6e68ee82585, merged for 5.12)",
        apply: |e, on| e.sq_sched_one_hctx = on,
    },
    Change {
        since: Version::new(6, 10, 0),
        what: "a bio submitted without a plug (libaio's single io_submit, a sync read)",
        before: "no plug: with a scheduler it is inserted and its queue run from kblockd (the 4.12 / 5.4 rows)",
        after: "__submit_bio plugs it on its own and flushes the plug before returning: inserted into the scheduler and the queue run by the submitting task (lab, 6.18: io_submit nr=1, then block_plug, block_unplug 1, block_rq_insert and block_rq_issue all in fio's context)",
        source: "block/blk-core.c __submit_bio, commit 060406c61c7c 'block: add plug while submitting IO' (Yu Kuai, merged for 6.10; v6.9 has no plug there); blk_finish_plug -> blk_mq_flush_plug_list(plug, false) -> blk_mq_dispatch_plug_list (blk_mq_dispatch_list in 6.19): insert_requests, blk_mq_run_hw_queue(hctx, false)",
        apply: |e, on| e.submit_bio_plugs = on,
    },
    Change {
        since: Version::new(6, 15, 0),
        what: "the fair scheduler's base slice (before the 1 + ilog2(ncpus) scaling)",
        before: "0.75 ms",
        after: "0.70 ms, so a slice ends before the tick that follows it (1.4 ms on 2 CPUs: /proc/<pid>/sched se.slice on the lab's 6.18)",
        source: "kernel/sched/fair.c sysctl_sched_base_slice, commit 2ae891b82695 'sched: Reduce the default slice to avoid tasks getting an extra tick' (merged for 6.15, backported to 6.14.y)",
        apply: |e, on| e.base_slice_ns = if on { 700_000 } else { 750_000 },
    },
    Change {
        since: Version::new(6, 17, 0),
        what: "shallow depth of a scheduler-tag allocation (limit_depth)",
        before: "bits per bitmap word: a depth of 1 allows one tag in each word",
        after: "bits of the whole bitmap, split over the words: a depth of 1 is tag 0",
        source: "lib/sbitmap.c __map_depth_with_shallow (commit 'lib/sbitmap: convert shallow_depth from one word to the whole sbitmap', Yu Kuai, merged for 6.17)",
        apply: |e, on| e.shallow_whole_map = on,
    },
];

impl Era {
    /// The behaviours of kernel `v`.
    pub fn of(v: Version) -> Era {
        let mut e = Era {
            version: v,
            blk_mq: false,
            legacy_core: true,
            mq_nr_requests_writable: false,
            dispatch: DispatchLoop::Current,
            scsi_budget: false,
            ata_queue_depth: 31,
            sched_depth: SchedDepth::Fixed256,
            sq_sched_one_hctx: false,
            shallow_whole_map: false,
            aio_plug_threshold: false,
            sched_run_async_single: false,
            sched_run_async_multi: false,
            submit_bio_plugs: false,
            base_slice_ns: 750_000,
        };
        for c in CHANGES {
            (c.apply)(&mut e, v >= c.since);
        }
        e
    }

    /// The newest kernel (the default).
    pub fn newest() -> Era {
        Era::of(NEWEST)
    }

    /// Parse a `--kernel` value.
    pub fn parse(text: &str) -> Result<Era, String> {
        Version::parse(text).map(Era::of)
    }

    /// Default `nr_requests` of a blk-mq queue with a scheduler on a device
    /// of `queue_depth` (128 = BLKDEV_MAX_RQ / BLKDEV_DEFAULT_RQ).
    pub fn sched_nr_requests(&self, queue_depth: u32) -> u32 {
        match self.sched_depth {
            SchedDepth::Fixed256 => 256,
            SchedDepth::TwiceQueueDepth => 2 * queue_depth.min(BLKDEV_DEFAULT_RQ),
        }
    }

    /// The slice a task keeps its CPU for on a machine of `nr_cpus` CPUs:
    /// the base slice times `1 + ilog2(min(ncpus, 8))`, the kernel's default
    /// (logarithmic) scaling of its latency tunables
    /// (`get_update_sysctl_factor`).
    pub fn slice_ns(&self, nr_cpus: usize) -> u64 {
        let n = nr_cpus.clamp(1, 8);
        self.base_slice_ns * (1 + (usize::BITS - 1 - n.leading_zeros()) as u64)
    }

    /// The queue depth libata gives an NCQ device that offers `device_depth`.
    pub fn ata_depth(&self, device_depth: u32) -> u32 {
        device_depth.min(self.ata_queue_depth)
    }

    /// The rows of `CHANGES` as this era has them: (what, value, source).
    pub fn describe(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        CHANGES
            .iter()
            .map(|c| {
                let v = if self.version >= c.since {
                    c.after
                } else {
                    c.before
                };
                (c.what, v, c.source)
            })
            .collect()
    }
}

impl Default for Era {
    fn default() -> Era {
        Era::newest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_bad_ones_are_refused() {
        assert_eq!(Version::parse("4.12").unwrap(), Version::new(4, 12, 0));
        assert_eq!(Version::parse(" 2.6.39 ").unwrap(), Version::new(2, 6, 39));
        assert_eq!(Version::parse("6.17.0").unwrap(), NEWEST);
        for bad in [
            "9.9", "4.21", "2.6", "2.6.40", "2.6.31", "6.18", "4", "4.x", "", "4.12.1.1",
        ] {
            let e = Version::parse(bad).unwrap_err();
            assert!(e.contains("unknown kernel version"), "{bad}: {e}");
        }
        assert_eq!(Version::new(2, 6, 39).to_string(), "2.6.39");
        assert_eq!(Version::new(4, 12, 0).to_string(), "4.12");
    }

    #[test]
    fn the_slice_scales_with_the_log_of_the_cpus_and_shrank_in_6_15() {
        let e = Era::newest();
        let slices: Vec<u64> = [1, 2, 3, 4, 8, 64].iter().map(|&n| e.slice_ns(n)).collect();
        assert_eq!(
            slices,
            [700_000, 1_400_000, 1_400_000, 2_100_000, 2_800_000, 2_800_000]
        );
        let e = Era::of(Version::new(6, 14, 0));
        assert_eq!(
            (e.slice_ns(1), e.slice_ns(2), e.slice_ns(8)),
            (750_000, 1_500_000, 3_000_000)
        );
    }

    #[test]
    fn eras_follow_the_change_table() {
        let e = Era::of(Version::new(2, 6, 39));
        assert!(!e.blk_mq && e.legacy_core && e.ata_queue_depth == 31);
        let e = Era::of(Version::new(3, 13, 0));
        assert!(e.blk_mq && e.dispatch == DispatchLoop::Current);
        assert!(!e.mq_nr_requests_writable);
        assert!(Era::of(Version::new(3, 16, 0)).mq_nr_requests_writable);
        let e = Era::of(Version::new(4, 12, 0));
        assert_eq!(e.dispatch, DispatchLoop::PullWhenStuck);
        assert!(!e.scsi_budget && e.legacy_core);
        assert_eq!(e.sched_nr_requests(31), 256);
        assert_eq!(e.ata_depth(32), 31);
        let e = Era::of(Version::new(4, 14, 0));
        assert_eq!(e.dispatch, DispatchLoop::PullWhenStuck);
        assert_eq!(e.sched_nr_requests(31), 62);
        let e = Era::of(Version::new(4, 19, 0));
        assert_eq!(e.dispatch, DispatchLoop::Current);
        assert!(e.scsi_budget && e.legacy_core && e.ata_queue_depth == 32);
        let e = Era::newest();
        assert!(!e.legacy_core && e.scsi_budget);
        assert_eq!(e.sched_nr_requests(32), 64);
        assert_eq!(e.sched_nr_requests(1023), 256);
    }

    #[test]
    fn changes_are_in_version_order() {
        for w in CHANGES.windows(2) {
            assert!(
                w[0].since <= w[1].since,
                "{} after {}",
                w[0].what,
                w[1].what
            );
        }
    }
}
