//! Writeback throttling (WBT, block/blk-wbt.c and blk-rq-qos.c
//! `rq_depth_*`, v6.17; reference kernel-blkmq §6.2 and
//! kernel-pagecache §8) as an rq-qos policy. Buffered writes wait before
//! they get a request when too many are in flight; how many may be
//! depends on the write (background writeback gets the fewest, WB_SYNC_ALL
//! and metadata the most) and on a depth the policy scales by the read
//! latencies it sees in each window: the minimum read latency above
//! `wbt_lat_usec` scales it down, reads below it scale it back up.
//!
//! Not modelled: kswapd's separate class (no memory reclaim in the model)
//! and `wb_recent_wait` (a task slept in balance_dirty_pages within the
//! last second): the page cache does not tell the block layer yet, so such
//! writes get the limit their flags give.

use super::request::{flags, Op, Request};
use super::rq_qos::{QosBio, QosCtx, RqQosId, RqQosPolicy, Throttle};
use crate::sim::time::{Ns, NS_PER_MS, NS_PER_US};
use std::collections::VecDeque;

/// `RWB_DEF_DEPTH`: the base depth.
const DEF_DEPTH: u32 = 16;
/// `RWB_WINDOW_NSEC`: the monitoring window, 100 ms.
const WINDOW_NS: Ns = 100 * NS_PER_MS;
/// `RWB_MIN_WRITE_SAMPLES`: writes a window needs to judge reads.
const MIN_WRITE_SAMPLES: u64 = 3;
/// `RWB_UNKNOWN_BUMP`: windows without data before drifting to step 0.
const UNKNOWN_BUMP: u32 = 5;
/// Default targets: 2 ms non-rotational, 75 ms rotational
/// (`wbt_default_latency_nsec`).
pub const DEFAULT_LAT_NONROT_NS: Ns = 2 * NS_PER_MS;
pub const DEFAULT_LAT_ROT_NS: Ns = 75 * NS_PER_MS;
/// `close_io` horizon: HZ / 10.
const CLOSE_IO_NS: Ns = 100 * NS_PER_MS;

/// `rq.qos` bits: WBT_TRACKED (counted in `inflight`), WBT_DISCARD, and
/// the outstanding read whose issue time is `sync_issue`.
const TRACKED: u32 = 1 << 0;
const DISCARD: u32 = 1 << 1;
const COOKIE: u32 = 1 << 2;

/// A window's verdict (`latency_exceeded`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lat {
    Ok,
    Unknown,
    UnknownWrites,
    Exceeded,
}

/// WBT's state (`struct rq_wb` with its `rq_depth`).
pub struct Wbt {
    /// `min_lat_nsec`: the read latency target; 0 = off.
    min_lat_ns: Ns,
    /// The user wrote `wbt_lat_usec` (WBT_STATE_ON_MANUAL): BFQ leaves it.
    manual: bool,
    /// Disabled by the elevator (WBT_STATE_OFF_DEFAULT under BFQ).
    off_default: bool,
    default_lat_ns: Ns,
    scale_step: i32,
    scaled_max: bool,
    max_depth: u32,
    queue_depth: u32,
    wb_normal: u32,
    wb_background: u32,
    unknown_cnt: u32,
    /// In flight: writes, discards (`rq_wait` per class).
    inflight: [u32; 2],
    /// Sleepers `(pid, class, limit flags)`, FIFO.
    waiters: VecDeque<(u32, usize, u32)>,
    /// Woken with a slot taken for them.
    granted: Vec<u32>,
    last_issue: Option<Ns>,
    last_comp: Option<Ns>,
    /// Issue time of the oldest outstanding read (`sync_issue`).
    sync_issue: Option<Ns>,
    /// The stats window is open (its timer armed) until this time.
    window_end: Option<Ns>,
    cur_win: Ns,
    timer_gen: u64,
    read_samples: u64,
    read_min: Ns,
    write_samples: u64,
    /// Windows seen, scale steps taken (for tests and reports).
    pub windows: u64,
}

impl Wbt {
    /// WBT for a queue: `lat_ns` the user's `wbt_lat_usec` (None: the
    /// default for `rotational`).
    pub fn new(rotational: bool, lat_ns: Option<Ns>, queue_depth: u32) -> Wbt {
        let default_lat_ns = if rotational {
            DEFAULT_LAT_ROT_NS
        } else {
            DEFAULT_LAT_NONROT_NS
        };
        let mut w = Wbt {
            min_lat_ns: lat_ns.unwrap_or(default_lat_ns),
            manual: lat_ns.is_some(),
            off_default: false,
            default_lat_ns,
            scale_step: 0,
            scaled_max: false,
            max_depth: DEF_DEPTH,
            queue_depth: queue_depth.max(1),
            wb_normal: 0,
            wb_background: 0,
            unknown_cnt: 0,
            inflight: [0; 2],
            waiters: VecDeque::new(),
            granted: Vec::new(),
            last_issue: None,
            last_comp: None,
            sync_issue: None,
            window_end: None,
            cur_win: WINDOW_NS,
            timer_gen: 0,
            read_samples: 0,
            read_min: Ns::MAX,
            write_samples: 0,
            windows: 0,
        };
        w.calc_max_depth();
        w.calc_limits();
        w
    }

    /// What `queue/wbt_lat_usec` reads: 0 when off.
    pub fn lat_usec(&self) -> u64 {
        if self.enabled() {
            self.min_lat_ns / NS_PER_US
        } else {
            0
        }
    }

    /// The current limits `(max, normal, background)`.
    pub fn limits(&self) -> (u32, u32, u32) {
        (self.max_depth, self.wb_normal, self.wb_background)
    }

    /// `rwb_enabled`.
    fn enabled(&self) -> bool {
        !self.off_default && self.wb_normal != 0
    }

    /// The elevator `name` was attached: BFQ (and 4.x CFQ) turn WBT off unless the user
    /// set it (`bfq_init_queue` → `wbt_disable_default`); any other
    /// scheduler turns a default-off WBT back on (`wbt_enable_default`).
    pub fn elevator_attached(&mut self, name: &str) {
        if self.manual {
            return;
        }
        // CFQ did the same in 4.x (cfq_init_queue).
        self.off_default = name == "bfq" || name == "cfq";
        self.calc_limits();
    }

    /// `rq_depth_calc_max_depth`; true when scaling up hit the cap.
    fn calc_max_depth(&mut self) -> bool {
        let mut capped = false;
        if self.queue_depth == 1 {
            if self.scale_step > 0 {
                self.max_depth = 1;
            } else {
                self.max_depth = 2;
                capped = true;
            }
            return capped;
        }
        let mut depth = DEF_DEPTH.min(self.queue_depth);
        if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> self.scale_step.min(31));
        } else if self.scale_step < 0 {
            let maxd = 3 * self.queue_depth / 4;
            let shift = (-self.scale_step).min(31) as u32;
            depth = 1u64
                .saturating_add(((depth - 1) as u64) << shift)
                .min(u32::MAX as u64) as u32;
            if depth > maxd {
                depth = maxd;
                capped = true;
            }
        }
        self.max_depth = depth;
        capped
    }

    /// `calc_wb_limits`.
    fn calc_limits(&mut self) {
        if self.min_lat_ns == 0 {
            self.wb_normal = 0;
            self.wb_background = 0;
        } else if self.max_depth <= 2 {
            self.wb_normal = self.max_depth;
            self.wb_background = 1;
        } else {
            self.wb_normal = self.max_depth.div_ceil(2);
            self.wb_background = self.max_depth.div_ceil(4);
        }
    }

    fn scale_up(&mut self, ctx: &mut QosCtx) {
        if self.scaled_max {
            return;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        self.calc_limits();
        self.unknown_cnt = 0;
        self.wake_waiters(ctx, true);
    }

    fn scale_down(&mut self, hard: bool) {
        if self.max_depth == 1 {
            return;
        }
        if self.scale_step < 0 && hard {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        self.calc_limits();
        self.unknown_cnt = 0;
    }

    /// `wbt_should_throttle` and the class (0 writes, 1 discards).
    fn class(bio_op: Op, f: u32) -> Option<usize> {
        match bio_op {
            Op::Write if f & (flags::SYNC | flags::IDLE) == flags::SYNC | flags::IDLE => None,
            Op::Write => Some(0),
            Op::Discard => Some(1),
            _ => None,
        }
    }

    /// `get_limit` for a bio with `f` at `now`.
    fn limit(&self, class: usize, f: u32, now: Ns) -> u32 {
        if !self.enabled() {
            return u32::MAX;
        }
        if class == 1 {
            return self.wb_background;
        }
        if f & (flags::SYNC | flags::META | flags::PRIO) != 0 {
            self.max_depth
        } else if f & flags::BACKGROUND != 0 || self.close_io(now) {
            self.wb_background
        } else {
            self.wb_normal
        }
    }

    /// A read was issued or completed in the last 100 ms.
    fn close_io(&self, now: Ns) -> bool {
        let near = |t: Option<Ns>| t.is_some_and(|t| now < t.saturating_add(CLOSE_IO_NS));
        near(self.last_issue) || near(self.last_comp)
    }

    /// Wake sleepers in order while each can take a slot under its own
    /// limit (`rq_qos_wake_function` stops at the first that cannot).
    fn wake_waiters(&mut self, ctx: &mut QosCtx, all: bool) {
        while let Some(&(pid, class, f)) = self.waiters.front() {
            let limit = if all {
                u32::MAX
            } else {
                self.limit(class, f, ctx.now)
            };
            if self.inflight[class] >= limit {
                break;
            }
            self.inflight[class] += 1;
            self.waiters.pop_front();
            self.granted.push(pid);
            ctx.wake(pid);
        }
    }

    /// Open a stats window (`rwb_arm_timer`): at a positive step it is
    /// shorter, `100 ms × 16 / isqrt(256 × (step + 1))`.
    fn arm(&mut self, ctx: &mut QosCtx) {
        self.cur_win = if self.scale_step > 0 {
            (WINDOW_NS << 4) / isqrt(((self.scale_step + 1) as u64) << 8)
        } else {
            WINDOW_NS
        };
        let end = ctx.now + self.cur_win;
        self.window_end = Some(end);
        self.timer_gen += 1;
        ctx.arm_timer(end, self.timer_gen);
    }

    /// `latency_exceeded` for the window that just ended.
    fn verdict(&self, now: Ns) -> Lat {
        if let Some(t) = self.sync_issue {
            let lat = now.saturating_sub(t);
            if lat > self.cur_win || (lat > self.min_lat_ns && self.read_samples == 0) {
                return Lat::Exceeded;
            }
        }
        if self.read_samples == 0 || self.write_samples < MIN_WRITE_SAMPLES {
            if self.write_samples > 0 || self.inflight[0] + self.inflight[1] > 0 {
                return Lat::UnknownWrites;
            }
            return Lat::Unknown;
        }
        if self.read_min > self.min_lat_ns {
            return Lat::Exceeded;
        }
        Lat::Ok
    }
}

/// `int_sqrt`.
fn isqrt(x: u64) -> u64 {
    (x as f64).sqrt() as u64
}

impl RqQosPolicy for Wbt {
    fn id(&self) -> RqQosId {
        RqQosId::Wbt
    }
    /// `wbt_rqos_ops` (v6.17 blk-wbt.c) has no `merge` and no `done_bio`.
    /// Reads are never throttled or tracked, only time-stamped (issue,
    /// completion, the sync cookie); flushes are none of its business.
    fn hooks(&self, op: Op) -> u16 {
        use super::rq_qos::hook::*;
        match op {
            Op::Read => THROTTLE | ISSUE | REQUEUE | DONE | DEPTH_CHANGED,
            Op::Flush => DEPTH_CHANGED,
            Op::Write | Op::Discard => {
                THROTTLE | TRACK | ISSUE | REQUEUE | DONE | CLEANUP | DEPTH_CHANGED
            }
        }
    }

    fn throttle(&mut self, ctx: &mut QosCtx, bio: &QosBio) -> Throttle {
        if !self.enabled() {
            return Throttle::Go;
        }
        let Some(class) = Self::class(bio.op, bio.flags) else {
            if bio.op == Op::Read {
                self.last_issue = Some(ctx.now);
            }
            return Throttle::Go;
        };
        if let Some(i) = self.granted.iter().position(|&p| p == bio.pid) {
            self.granted.swap_remove(i);
        } else {
            let limit = self.limit(class, bio.flags, ctx.now);
            if !self.waiters.is_empty() || self.inflight[class] >= limit {
                if !self.waiters.iter().any(|w| w.0 == bio.pid) {
                    self.waiters.push_back((bio.pid, class, bio.flags));
                }
                return Throttle::Wait;
            }
            self.inflight[class] += 1;
        }
        if self.window_end.is_none() {
            self.arm(ctx);
        }
        Throttle::Go
    }

    fn track(&mut self, _ctx: &mut QosCtx, rq: &mut Request, bio: &QosBio) {
        if self.enabled() {
            if let Some(class) = Self::class(bio.op, bio.flags) {
                rq.qos |= TRACKED | if class == 1 { DISCARD } else { 0 };
            }
        }
    }

    fn cleanup(&mut self, ctx: &mut QosCtx, bio: &QosBio) {
        if let Some(class) = Self::class(bio.op, bio.flags).filter(|_| self.enabled()) {
            self.inflight[class] = self.inflight[class].saturating_sub(1);
            self.wake_waiters(ctx, false);
        }
    }

    fn issue(&mut self, _ctx: &mut QosCtx, rq: &mut Request) {
        if self.enabled() && rq.op == Op::Read && self.sync_issue.is_none() {
            self.sync_issue = Some(rq.dispatch_ns);
            rq.qos |= COOKIE;
        }
    }

    fn requeue(&mut self, _ctx: &mut QosCtx, rq: &mut Request) {
        if rq.qos & COOKIE != 0 {
            rq.qos &= !COOKIE;
            self.sync_issue = None;
        }
    }

    fn done(&mut self, ctx: &mut QosCtx, rq: &mut Request) {
        // The window's latency samples (blk-stat: completion − io_start).
        if self.window_end.is_some() && rq.dispatch_ns > 0 {
            let lat = ctx.now.saturating_sub(rq.dispatch_ns);
            match rq.op {
                Op::Read => {
                    self.read_samples += 1;
                    self.read_min = self.read_min.min(lat);
                }
                Op::Write if rq.nr_sectors > 0 => self.write_samples += 1,
                _ => {}
            }
        }
        if rq.qos & COOKIE != 0 {
            self.sync_issue = None;
        }
        if rq.op == Op::Read {
            self.last_comp = Some(ctx.now);
        }
        if rq.qos & TRACKED == 0 {
            rq.qos &= !COOKIE;
            return;
        }
        let class = if rq.qos & DISCARD != 0 { 1 } else { 0 };
        rq.qos &= !(TRACKED | DISCARD | COOKIE);
        self.inflight[class] = self.inflight[class].saturating_sub(1);
        if !self.enabled() {
            self.wake_waiters(ctx, true);
            return;
        }
        // wbt_rqw_done: with a volatile cache and nobody throttled in
        // balance_dirty_pages, wake only when the class drained.
        let limit = if class == 1 {
            self.wb_background
        } else if ctx.write_cache {
            0
        } else {
            self.wb_normal
        };
        let inflight = self.inflight[class];
        if inflight > 0 && inflight >= limit {
            return;
        }
        if inflight == 0 || limit.saturating_sub(inflight) >= self.wb_background / 2 {
            self.wake_waiters(ctx, false);
        }
    }

    fn queue_depth_changed(&mut self, ctx: &mut QosCtx) {
        // blk_queue_depth: the device's queue depth when known, else nr_requests.
        self.queue_depth = ctx.q.queue_depth.max(1);
        self.calc_max_depth();
        self.calc_limits();
    }

    fn timer(&mut self, ctx: &mut QosCtx, token: u64) {
        if token != self.timer_gen || self.window_end.is_none() {
            return;
        }
        self.windows += 1;
        match self.verdict(ctx.now) {
            Lat::Exceeded => self.scale_down(true),
            Lat::Ok | Lat::UnknownWrites => self.scale_up(ctx),
            Lat::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt >= UNKNOWN_BUMP {
                    if self.scale_step > 0 {
                        self.scale_up(ctx);
                    } else if self.scale_step < 0 {
                        self.scale_down(false);
                    }
                }
            }
        }
        self.read_samples = 0;
        self.read_min = Ns::MAX;
        self.write_samples = 0;
        self.window_end = None;
        if self.scale_step != 0 || self.inflight[0] + self.inflight[1] > 0 {
            self.arm(ctx);
        }
    }

    fn attr(&self, name: &str) -> Option<u64> {
        (name == "wbt_lat_usec").then(|| self.lat_usec())
    }

    fn elevator_changed(&mut self, name: &str, legacy: bool) {
        // Deviation: the model's legacy core runs without WBT (4.10–4.20
        // had it on legacy queues too, and CFQ turned it off).
        self.elevator_attached(if legacy { "cfq" } else { name });
    }
}

impl Wbt {
    /// The default target of this queue (what `wbt_lat_usec = -1` restores).
    pub fn default_lat_ns(&self) -> Ns {
        self.default_lat_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_follow_the_scale_step() {
        let mut w = Wbt::new(false, None, 64);
        assert_eq!(w.limits(), (16, 8, 4));
        assert_eq!(w.lat_usec(), 2000);
        for (step, want) in [(1, (8, 4, 2)), (2, (4, 2, 1)), (3, (2, 2, 1))] {
            w.scale_down(false);
            assert_eq!(w.scale_step, step);
            assert_eq!(w.limits(), want, "step {step}");
        }
        // Scaling up past 0 is capped at 3/4 of the queue depth.
        w.scale_step = -1;
        assert!(!w.calc_max_depth());
        assert_eq!(w.max_depth, 31);
        w.scale_step = -2;
        assert!(w.calc_max_depth());
        assert_eq!(w.max_depth, 48);
        let r = Wbt::new(true, None, 32);
        assert_eq!(r.lat_usec(), 75_000);
        let off = Wbt::new(false, Some(0), 32);
        assert_eq!(off.lat_usec(), 0);
        assert!(!off.enabled());
    }

    #[test]
    fn bfq_turns_default_wbt_off_but_not_a_users() {
        let mut w = Wbt::new(false, None, 32);
        w.elevator_attached("bfq");
        assert_eq!(w.lat_usec(), 0);
        w.elevator_attached("mq-deadline");
        assert_eq!(w.lat_usec(), 2000);
        let mut m = Wbt::new(false, Some(5 * NS_PER_MS), 32);
        m.elevator_attached("bfq");
        assert_eq!(m.lat_usec(), 5000);
    }

    #[test]
    fn limits_by_kind_of_write() {
        let w = Wbt::new(false, None, 64);
        let bg = flags::BACKGROUND;
        assert_eq!(w.limit(0, bg, 0), 4);
        assert_eq!(w.limit(0, 0, 0), 8);
        assert_eq!(w.limit(0, flags::SYNC, 0), 16);
        assert_eq!(w.limit(1, 0, 0), 4);
        assert_eq!(Wbt::class(Op::Write, flags::SYNC | flags::IDLE), None);
        assert_eq!(Wbt::class(Op::Read, 0), None);
        let mut w = w;
        w.last_issue = Some(50 * NS_PER_MS);
        // A read 50 ms ago: plain writes get the background limit.
        assert_eq!(w.limit(0, 0, 100 * NS_PER_MS), 4);
        assert_eq!(w.limit(0, 0, 151 * NS_PER_MS), 8);
    }
}
