//! Per-device I/O statistics: what `/sys/block/DEV/stat` and
//! `/proc/diskstats` show, accounted where and how the kernel accounts them,
//! and fio's `disk_util` derived from them as fio derives it.
//!
//! Field names and order: Documentation/block/stat.rst. Accounting (v6.17):
//! - `blk_account_io_start` (block/blk-mq.c, from `blk_mq_bio_to_request`
//!   when a bio becomes a request): marks the request RQF_IO_STAT, stamps
//!   its start time, `update_io_ticks(end = false)`, `in_flight[rw]++`.
//!   Passthrough requests are not counted (`iostats_passthrough` = 0).
//! - bio merged into a request (`blk_account_io_merge_bio`, blk-merge.c):
//!   `merges[group]++`.
//! - request merged into another (`blk_account_io_merge_request`): the
//!   absorbed request counts as a merge and leaves `in_flight` (v6.10+).
//! - completion of bytes (`blk_account_io_completion` in
//!   `blk_update_request`): `sectors[group] += bytes >> 9`.
//! - end of the request (`blk_account_io_done`), except for requests inside
//!   a flush sequence (RQF_FLUSH_SEQ, counted once when the sequence ends):
//!   `update_io_ticks(end = true)`, `ios[group]++`,
//!   `nsecs[group] += now - start_time_ns`, `in_flight[rw]--`.
//! - the flush command of the flush machinery (`blk_account_io_flush`,
//!   block/blk-flush.c): `ios[STAT_FLUSH]++`, `nsecs[STAT_FLUSH] += now -
//!   start`, and nothing else (no in_flight, no io_ticks).
//! - reading the file (`part_stat_show`, block/genhd.c): when something is
//!   in flight, `update_io_ticks(now, end = true)` first; ticks are printed
//!   in ms (`nsecs / NSEC_PER_MSEC`, as `unsigned int`), `io_ticks` with
//!   `jiffies_to_msecs`, `time_in_queue` is the sum of the four groups'
//!   nsecs in ms.

use super::request::{flags, Op, Request};
use crate::sim::time::{jiffies, Ns, NS_PER_JIFFY, NS_PER_MS};

/// `enum stat_group` (include/linux/blk_types.h).
pub const STAT_READ: usize = 0;
pub const STAT_WRITE: usize = 1;
pub const STAT_DISCARD: usize = 2;
pub const STAT_FLUSH: usize = 3;
pub const NR_STAT_GROUPS: usize = 4;

/// `op_stat_group`: discards have their own group, otherwise read or write
/// by `op_is_write` (an empty PREFLUSH write from fsync is a write).
#[inline]
pub fn op_stat_group(op: Op) -> usize {
    match op {
        Op::Read => STAT_READ,
        Op::Discard => STAT_DISCARD,
        Op::Write | Op::Flush => STAT_WRITE,
    }
}

/// The counters of one disk (`struct disk_stats` plus `bd_stamp`), all
/// since the start of the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStats {
    ios: [u64; NR_STAT_GROUPS],
    merges: [u64; NR_STAT_GROUPS],
    sectors: [u64; NR_STAT_GROUPS],
    nsecs: [u64; NR_STAT_GROUPS],
    /// Jiffies with I/O in flight, by the `update_io_ticks` rule.
    io_ticks: u64,
    /// `bd_stamp`: jiffies of the last `update_io_ticks`.
    stamp: u64,
    /// Requests between `blk_account_io_start` and done, by `op_is_write`.
    in_flight: [u64; 2],
}

/// `/sys/block/DEV/stat`, field by field (Documentation/block/stat.rst).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiskStatFields {
    pub read_ios: u64,
    pub read_merges: u64,
    pub read_sectors: u64,
    /// ms.
    pub read_ticks: u64,
    pub write_ios: u64,
    pub write_merges: u64,
    pub write_sectors: u64,
    /// ms.
    pub write_ticks: u64,
    /// Requests in flight when the file was read.
    pub in_flight: u64,
    /// ms with at least one request in flight (jiffy resolution).
    pub io_ticks: u64,
    /// ms: the ticks of all groups summed.
    pub time_in_queue: u64,
    pub discard_ios: u64,
    pub discard_merges: u64,
    pub discard_sectors: u64,
    /// ms.
    pub discard_ticks: u64,
    pub flush_ios: u64,
    /// ms.
    pub flush_ticks: u64,
}

impl DiskStatFields {
    /// Read a `/sys/block/DEV/stat` line. Kernels before 4.18 print 11
    /// fields (no discard), before 5.5 15 (no flush); the missing ones are 0.
    pub fn parse(text: &str) -> Result<DiskStatFields, String> {
        let v: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse::<u64>())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("a stat field is not a number ({e}): '{}'", text.trim()))?;
        if !matches!(v.len(), 11 | 15 | 17) {
            return Err(format!(
                "{} fields where the kernel prints 11, 15 or 17: '{}'",
                v.len(),
                text.trim()
            ));
        }
        let f = |i: usize| v.get(i).copied().unwrap_or(0);
        Ok(DiskStatFields {
            read_ios: f(0),
            read_merges: f(1),
            read_sectors: f(2),
            read_ticks: f(3),
            write_ios: f(4),
            write_merges: f(5),
            write_sectors: f(6),
            write_ticks: f(7),
            in_flight: f(8),
            io_ticks: f(9),
            time_in_queue: f(10),
            discard_ios: f(11),
            discard_merges: f(12),
            discard_sectors: f(13),
            discard_ticks: f(14),
            flush_ios: f(15),
            flush_ticks: f(16),
        })
    }

    /// What happened between `before` and `self`: counters subtracted
    /// (wrapping, as the tick fields do at 2^32 ms), `in_flight` as now.
    pub fn since(&self, before: &DiskStatFields) -> DiskStatFields {
        let d =
            |a: u64, b: u64| a.wrapping_sub(b) & if a >= b { u64::MAX } else { u32::MAX as u64 };
        DiskStatFields {
            read_ios: d(self.read_ios, before.read_ios),
            read_merges: d(self.read_merges, before.read_merges),
            read_sectors: d(self.read_sectors, before.read_sectors),
            read_ticks: d(self.read_ticks, before.read_ticks),
            write_ios: d(self.write_ios, before.write_ios),
            write_merges: d(self.write_merges, before.write_merges),
            write_sectors: d(self.write_sectors, before.write_sectors),
            write_ticks: d(self.write_ticks, before.write_ticks),
            in_flight: self.in_flight,
            io_ticks: d(self.io_ticks, before.io_ticks),
            time_in_queue: d(self.time_in_queue, before.time_in_queue),
            discard_ios: d(self.discard_ios, before.discard_ios),
            discard_merges: d(self.discard_merges, before.discard_merges),
            discard_sectors: d(self.discard_sectors, before.discard_sectors),
            discard_ticks: d(self.discard_ticks, before.discard_ticks),
            flush_ios: d(self.flush_ios, before.flush_ios),
            flush_ticks: d(self.flush_ticks, before.flush_ticks),
        }
    }

    /// The fields with their stat.rst names, in the file's order.
    pub fn named(&self) -> [(&'static str, u64); 17] {
        [
            ("read_ios", self.read_ios),
            ("read_merges", self.read_merges),
            ("read_sectors", self.read_sectors),
            ("read_ticks", self.read_ticks),
            ("write_ios", self.write_ios),
            ("write_merges", self.write_merges),
            ("write_sectors", self.write_sectors),
            ("write_ticks", self.write_ticks),
            ("in_flight", self.in_flight),
            ("io_ticks", self.io_ticks),
            ("time_in_queue", self.time_in_queue),
            ("discard_ios", self.discard_ios),
            ("discard_merges", self.discard_merges),
            ("discard_sectors", self.discard_sectors),
            ("discard_ticks", self.discard_ticks),
            ("flush_ios", self.flush_ios),
            ("flush_ticks", self.flush_ticks),
        ]
    }
}

/// genhd.c prints the tick fields as `unsigned int`: they wrap at 2^32 ms.
#[inline]
fn ms_u32(ns: u64) -> u64 {
    (ns / NS_PER_MS) as u32 as u64
}

impl DiskStats {
    /// `update_io_ticks` (block/blk-core.c, v6.10+): when the jiffy moved on,
    /// the time since the last stamp counts if this is a completion or
    /// something is already in flight; the stamp moves either way.
    #[inline]
    fn update_io_ticks(&mut self, now: Ns, end: bool) {
        let j = jiffies(now);
        if j > self.stamp {
            if end || self.in_flight[0] + self.in_flight[1] > 0 {
                self.io_ticks += j - self.stamp;
            }
            self.stamp = j;
        }
    }

    /// `blk_account_io_start`: a new request from a bio.
    #[inline]
    pub fn io_start(&mut self, now: Ns, rq: &mut Request) {
        if rq.has(flags::PASSTHROUGH) {
            return;
        }
        rq.flags |= flags::IO_STAT;
        self.update_io_ticks(now, false);
        self.in_flight[rq.op.dir()] += 1;
    }

    /// `blk_account_io_merge_bio`: a bio merged into `rq`.
    #[inline]
    pub fn merge_bio(&mut self, rq: &Request) {
        if rq.has(flags::IO_STAT) {
            self.merges[op_stat_group(rq.op)] += 1;
        }
    }

    /// `blk_account_io_merge_request`: `next` was merged into another
    /// request and will be freed without completing.
    #[inline]
    pub fn merge_request(&mut self, next: &Request) {
        if next.has(flags::IO_STAT) {
            self.merges[op_stat_group(next.op)] += 1;
            self.in_flight[next.op.dir()] -= 1;
        }
    }

    /// `blk_account_io_completion`: the request's data completed.
    #[inline]
    pub fn io_completion(&mut self, rq: &Request) {
        if rq.has(flags::IO_STAT) {
            self.sectors[op_stat_group(rq.op)] += rq.nr_sectors as u64;
        }
    }

    /// `blk_account_io_done`: the request ends (not a flush-sequence step).
    #[inline]
    pub fn io_done(&mut self, now: Ns, rq: &Request) {
        if rq.flags & (flags::IO_STAT | flags::FLUSH_SEQ) == flags::IO_STAT {
            let g = op_stat_group(rq.op);
            self.update_io_ticks(now, true);
            self.ios[g] += 1;
            self.nsecs[g] += now.saturating_sub(rq.start_ns);
            self.in_flight[rq.op.dir()] -= 1;
        }
    }

    /// `blk_account_io_flush`: the flush machinery's flush command ended.
    #[inline]
    pub fn flush_done(&mut self, now: Ns, start: Ns) {
        self.ios[STAT_FLUSH] += 1;
        self.nsecs[STAT_FLUSH] += now.saturating_sub(start);
    }

    /// Requests counted in flight (`bdev_count_inflight`).
    pub fn in_flight(&self) -> u64 {
        self.in_flight[0] + self.in_flight[1]
    }

    /// Read `/sys/block/DEV/stat` at `now` (`part_stat_show`).
    pub fn read(&mut self, now: Ns) -> DiskStatFields {
        let inflight = self.in_flight();
        if inflight > 0 {
            self.update_io_ticks(now, true);
        }
        let ms = NS_PER_JIFFY / NS_PER_MS;
        DiskStatFields {
            read_ios: self.ios[STAT_READ],
            read_merges: self.merges[STAT_READ],
            read_sectors: self.sectors[STAT_READ],
            read_ticks: ms_u32(self.nsecs[STAT_READ]),
            write_ios: self.ios[STAT_WRITE],
            write_merges: self.merges[STAT_WRITE],
            write_sectors: self.sectors[STAT_WRITE],
            write_ticks: ms_u32(self.nsecs[STAT_WRITE]),
            in_flight: inflight as u32 as u64,
            io_ticks: (self.io_ticks * ms) as u32 as u64,
            time_in_queue: ms_u32(self.nsecs.iter().sum()),
            discard_ios: self.ios[STAT_DISCARD],
            discard_merges: self.merges[STAT_DISCARD],
            discard_sectors: self.sectors[STAT_DISCARD],
            discard_ticks: ms_u32(self.nsecs[STAT_DISCARD]),
            flush_ios: self.ios[STAT_FLUSH],
            flush_ticks: ms_u32(self.nsecs[STAT_FLUSH]),
        }
    }

    /// The running totals at `now`, unwrapped (fio's `disk_util` takes
    /// deltas of 250 ms samples of the stat file, so it never sees the
    /// 32-bit wrap of the tick fields).
    pub fn totals(&mut self, now: Ns) -> StatTotals {
        if self.in_flight() > 0 {
            self.update_io_ticks(now, true);
        }
        StatTotals {
            ios: [self.ios[STAT_READ], self.ios[STAT_WRITE]],
            sectors: [self.sectors[STAT_READ], self.sectors[STAT_WRITE]],
            merges: [self.merges[STAT_READ], self.merges[STAT_WRITE]],
            nsecs: [self.nsecs[STAT_READ], self.nsecs[STAT_WRITE]],
            all_nsecs: self.nsecs.iter().sum(),
            io_ticks_ns: self.io_ticks * NS_PER_JIFFY,
        }
    }
}

/// Unwrapped running totals of the read and write groups (index 0 = read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatTotals {
    pub ios: [u64; 2],
    pub sectors: [u64; 2],
    pub merges: [u64; 2],
    /// Summed request lifetimes, ns.
    pub nsecs: [u64; 2],
    /// Summed lifetimes of every group (read, write, discard, flush), ns.
    pub all_nsecs: u64,
    /// Time with at least one request in flight, ns (jiffy resolution).
    pub io_ticks_ns: u64,
}

#[cfg(test)]
mod tests {
    #[test]
    fn stat_lines_parse_in_every_kernel_layout_and_subtract() {
        let line = "  10 1 80 5 20 2 160 7 0 9 12 0 0 0 0 3 1\n";
        let a = DiskStatFields::parse(line).unwrap();
        assert_eq!((a.read_ios, a.write_sectors, a.flush_ios), (10, 160, 3));
        let old = DiskStatFields::parse("10 1 80 5 20 2 160 7 0 9 12").unwrap();
        assert_eq!(old.flush_ios, 0);
        assert!(DiskStatFields::parse("1 2 3")
            .unwrap_err()
            .contains("3 fields"));
        assert!(DiskStatFields::parse("1 x 3").is_err());
        let b = DiskStatFields::parse("15 1 120 6 25 2 200 8 1 10 13 0 0 0 0 5 1").unwrap();
        let d = b.since(&a);
        assert_eq!(
            (d.read_ios, d.read_sectors, d.write_ios, d.flush_ios),
            (5, 40, 5, 2)
        );
        assert_eq!(d.in_flight, 1);
        // A tick field that wrapped at 2^32 ms.
        let w = DiskStatFields {
            read_ticks: 5,
            ..Default::default()
        }
        .since(&DiskStatFields {
            read_ticks: u32::MAX as u64 - 4,
            ..Default::default()
        });
        assert_eq!(w.read_ticks, 10);
    }

    use super::*;

    fn rq(op: Op, sectors: u32, start: Ns) -> Request {
        Request {
            op,
            nr_sectors: sectors,
            start_ns: start,
            ..Request::empty()
        }
    }

    const J: Ns = NS_PER_JIFFY;

    #[test]
    fn ios_sectors_ticks_at_completion() {
        let mut s = DiskStats::default();
        let mut r = rq(Op::Read, 8, 0);
        let mut w = rq(Op::Write, 16, J);
        s.io_start(0, &mut r);
        s.io_start(J, &mut w);
        assert_eq!(s.read(J).in_flight, 2);
        s.io_completion(&r);
        s.io_done(3 * J, &r);
        s.io_completion(&w);
        s.io_done(5 * J, &w);
        let f = s.read(5 * J);
        assert_eq!((f.read_ios, f.read_sectors), (1, 8));
        assert_eq!((f.write_ios, f.write_sectors), (1, 16));
        assert_eq!(f.read_ticks, 3 * J / NS_PER_MS);
        assert_eq!(f.write_ticks, 4 * J / NS_PER_MS);
        assert_eq!(f.time_in_queue, f.read_ticks + f.write_ticks);
        assert_eq!(f.in_flight, 0);
        // Busy from jiffy 0 to 5.
        assert_eq!(f.io_ticks, 5 * J / NS_PER_MS);
    }

    #[test]
    fn io_ticks_follow_the_kernel_rule() {
        let mut s = DiskStats::default();
        // A request inside one jiffy (start and end at jiffy 2): the start
        // moves the stamp with nothing in flight, the end sees no new jiffy.
        let mut a = rq(Op::Read, 8, 2 * J + 10);
        s.io_start(2 * J + 10, &mut a);
        s.io_done(2 * J + 500, &a);
        assert_eq!(s.read(2 * J + 600).io_ticks, 0);
        // Idle until jiffy 10, then busy to jiffy 13: the start adds nothing
        // (nothing in flight), the end adds 3.
        let mut b = rq(Op::Write, 8, 10 * J);
        s.io_start(10 * J, &mut b);
        let mut c = rq(Op::Write, 8, 11 * J);
        // A second start while b is in flight counts the jiffy since the stamp.
        s.io_start(11 * J, &mut c);
        assert_eq!(s.io_ticks, 1);
        s.io_done(13 * J, &b);
        assert_eq!(s.io_ticks, 3);
        // Reading while c is in flight brings io_ticks up to now.
        let f = s.read(15 * J);
        assert_eq!(f.io_ticks, 5 * J / NS_PER_MS);
        assert_eq!(f.in_flight, 1);
        s.io_done(16 * J, &c);
        assert_eq!(s.read(20 * J).io_ticks, 6 * J / NS_PER_MS);
    }

    #[test]
    fn merges_flushes_discards_and_passthrough() {
        let mut s = DiskStats::default();
        let mut a = rq(Op::Write, 8, 0);
        let mut b = rq(Op::Write, 8, 0);
        s.io_start(0, &mut a);
        s.io_start(0, &mut b);
        s.merge_bio(&a);
        // b is absorbed by a: a merge, and no longer in flight.
        s.merge_request(&b);
        assert_eq!(s.in_flight(), 1);
        a.nr_sectors = 24;
        s.io_completion(&a);
        s.io_done(J, &a);
        let mut d = rq(Op::Discard, 2048, J);
        s.io_start(J, &mut d);
        s.io_completion(&d);
        s.io_done(2 * J, &d);
        s.flush_done(3 * J, J);
        let mut p = rq(Op::Read, 8, 0);
        p.flags |= flags::PASSTHROUGH;
        s.io_start(0, &mut p);
        assert!(!p.has(flags::IO_STAT));
        s.io_completion(&p);
        s.io_done(J, &p);
        let f = s.read(4 * J);
        assert_eq!((f.write_ios, f.write_merges, f.write_sectors), (1, 2, 24));
        assert_eq!((f.discard_ios, f.discard_sectors), (1, 2048));
        assert_eq!((f.flush_ios, f.flush_ticks), (1, 2 * J / NS_PER_MS));
        assert_eq!((f.read_ios, f.read_sectors), (0, 0));
        assert_eq!(
            f.time_in_queue,
            f.write_ticks + f.discard_ticks + f.flush_ticks
        );
        assert_eq!(f.named()[16], ("flush_ticks", f.flush_ticks));
    }

    #[test]
    fn flush_sequence_steps_are_counted_once() {
        let mut s = DiskStats::default();
        let mut r = rq(Op::Write, 8, 0);
        s.io_start(0, &mut r);
        r.flags |= flags::FLUSH_SEQ;
        // The data step completes: bytes count, the request does not end.
        s.io_completion(&r);
        s.io_done(J, &r);
        assert_eq!(s.read(J).write_ios, 0);
        // The sequence ends: counted with its whole duration.
        r.flags &= !flags::FLUSH_SEQ;
        s.io_done(3 * J, &r);
        let f = s.read(3 * J);
        assert_eq!((f.write_ios, f.write_sectors), (1, 8));
        assert_eq!(f.write_ticks, 3 * J / NS_PER_MS);
    }

    #[test]
    fn tick_fields_wrap_like_unsigned_int() {
        let mut s = DiskStats::default();
        let mut r = rq(Op::Read, 8, 0);
        s.io_start(0, &mut r);
        let end = (u32::MAX as u64 + 5) * NS_PER_MS;
        s.io_done(end, &r);
        assert_eq!(s.read(end).read_ticks, 4);
        // The totals (fio's disk_util) keep the full value.
        assert_eq!(s.totals(end).nsecs[0] / NS_PER_MS, u32::MAX as u64 + 5);
    }
}
