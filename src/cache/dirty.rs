//! Dirty limits and IO-less dirty throttling (`balance_dirty_pages`), the
//! minimal version of the reference's §2.7 on the formulas of
//! mm/page-writeback.c (v6.1): `domain_dirty_limits`, `dirty_freerun_ceiling`,
//! `pos_ratio_polynom`, `dirty_poll_interval`, `wb_update_write_bandwidth`,
//! `wb_max_pause`. Times are kept in ns; the kernel's jiffies are HZ=1000
//! here (the lab kernel's), so "1 jiffy" = 1 ms where a formula counts them.
//!
//! Pitfalls:
//! - "dirty" for throttling is NR_FILE_DIRTY + NR_WRITEBACK; background
//!   writeback (`wb_over_bg_thresh`) looks at NR_FILE_DIRTY alone.
//! - The single-device model: one wb per device whose share of the limits
//!   is the whole (§1.4: num/den → 1 with one disk), so the wb control line
//!   is left out and `dirty_ratelimit` is the fixed point of §2.5,
//!   `avg_write_bandwidth / active dirtiers`.

use super::vm::VmSettings;
use crate::sim::time::{Ns, NS_PER_MS, NS_PER_SEC};

/// `RATELIMIT_CALC_SHIFT` (mm/page-writeback.c): fixed point 1.0 = 1024.
const CALC_SHIFT: u32 = 10;
/// `BANDWIDTH_INTERVAL` = max(HZ/5, 1): 200 ms.
pub const BANDWIDTH_INTERVAL: Ns = 200 * NS_PER_MS;
/// `MAX_PAUSE` = max(HZ/5, 1): 200 ms.
pub const MAX_PAUSE: Ns = 200 * NS_PER_MS;
/// The estimate's averaging period, `roundup_pow_of_two(3 * HZ)` jiffies at
/// HZ=1000 (wb_update_write_bandwidth).
const BW_PERIOD_MS: u64 = 4096;
/// `INIT_BW` (mm/backing-dev.c wb_init): 100 MiB/s in pages per second.
pub const INIT_BW: u64 = (100 << 20) / 4096;
/// `DIRTY_POLL_THRESH`: 128 KiB in pages (wb_min_pause).
const DIRTY_POLL_THRESH: u64 = 32;

/// The domain's thresholds in pages (`domain_dirty_limits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub bg: u64,
    pub thresh: u64,
}

impl Limits {
    /// From the sysctls and the dirtyable memory `avail` (pages).
    pub fn of(vm: &VmSettings, avail: u64) -> Limits {
        let page = 4096;
        // bytes → DIV_ROUND_UP(bytes, PAGE_SIZE); ratio → ratio% of avail.
        let thresh = match vm.dirty_bytes() {
            0 => avail * vm.dirty_ratio() / 100,
            b => b.div_ceil(page),
        };
        let mut bg = match vm.dirty_background_bytes() {
            0 => avail * vm.dirty_background_ratio() / 100,
            b => b.div_ceil(page),
        };
        if bg >= thresh {
            bg = thresh / 2;
        }
        Limits { bg, thresh }
    }

    /// `dirty_freerun_ceiling`: below this a writer never sleeps.
    pub fn freerun(&self) -> u64 {
        (self.thresh + self.bg) / 2
    }

    /// `hard_dirty_limit`; the model's limit follows `thresh` at once (the
    /// kernel's 200 ms `update_dirty_limit` smoothing only matters when
    /// memory shrinks under the writers, which this model does not do).
    pub fn limit(&self) -> u64 {
        self.thresh
    }

    pub fn setpoint(&self) -> u64 {
        (self.freerun() + self.limit()) / 2
    }

    /// The global control line, 1.0 = 1024: 2 at freerun, 1 at setpoint, 0
    /// at the limit (`pos_ratio_polynom`).
    pub fn pos_ratio(&self, dirty: u64) -> u64 {
        let (setpoint, limit) = (self.setpoint() as i128, self.limit() as i128);
        if dirty as i128 >= limit {
            return 0;
        }
        let span = (limit - setpoint).max(1);
        let x = ((setpoint - dirty as i128) << CALC_SHIFT) / span;
        let mut pos = x;
        pos = (pos * x) >> CALC_SHIFT;
        pos = (pos * x) >> CALC_SHIFT;
        pos += 1 << CALC_SHIFT;
        pos.clamp(0, 2 << CALC_SHIFT) as u64
    }
}

/// `dirty_poll_interval`: pages a writer may dirty before it calls in again
/// below the freerun ceiling, about √(thresh − dirty) as a power of two.
pub fn dirty_poll_interval(dirty: u64, thresh: u64) -> u64 {
    if thresh > dirty {
        1 << ((thresh - dirty).ilog2() / 2)
    } else {
        1
    }
}

/// The device's write bandwidth estimate (`wb_update_write_bandwidth`), in
/// pages per second, updated at most every 200 ms.
#[derive(Clone, Debug)]
pub struct WriteBandwidth {
    pub write_bw: u64,
    pub avg_bw: u64,
    stamp: Ns,
    written_stamp: u64,
}

impl Default for WriteBandwidth {
    fn default() -> Self {
        WriteBandwidth {
            write_bw: INIT_BW,
            avg_bw: INIT_BW,
            stamp: 0,
            written_stamp: 0,
        }
    }
}

impl WriteBandwidth {
    /// Writeback starts on an idle device: after more than 1 s idle, the
    /// stamps restart so idle time does not dilute the estimate (5.14+,
    /// `wb_bandwidth_estimate_start`).
    pub fn start(&mut self, now: Ns, written: u64) {
        if now.saturating_sub(self.stamp) > NS_PER_SEC {
            self.stamp = now;
            self.written_stamp = written;
        }
    }

    /// Fold in the pages `written` so far (a running total) at `now`.
    pub fn update(&mut self, now: Ns, written: u64) {
        let elapsed = now.saturating_sub(self.stamp);
        if elapsed < BANDWIDTH_INTERVAL {
            return;
        }
        let elapsed_ms = (elapsed / NS_PER_MS).max(1);
        // pages * HZ, as the kernel's bw sample (HZ = 1000 per ms-jiffy).
        let sample = (written - self.written_stamp) * 1000;
        let old = self.write_bw;
        if elapsed_ms > BW_PERIOD_MS {
            self.write_bw = sample / elapsed_ms;
            self.avg_bw = self.write_bw;
        } else {
            self.write_bw = (sample + old * (BW_PERIOD_MS - elapsed_ms)) / BW_PERIOD_MS;
            let new = self.write_bw;
            // Second stage: move the average 1/8 toward the old estimate
            // only while the trend agrees.
            if self.avg_bw > old && old >= new {
                self.avg_bw -= (self.avg_bw - old) / 8;
            }
            if self.avg_bw < old && old <= new {
                self.avg_bw += (old - self.avg_bw) / 8;
            }
        }
        self.avg_bw = self.avg_bw.max(1);
        self.stamp = now;
        self.written_stamp = written;
    }
}

/// A dirtier's throttling state (`current->nr_dirtied`, `nr_dirtied_pause`,
/// `dirty_paused_when`).
#[derive(Clone, Copy, Debug)]
pub struct Dirtier {
    pub nr_dirtied: u64,
    /// Calls in after this many pages; 32 pages for a new task
    /// (`init_task`/`copy_process`: nr_dirtied_pause = 128 >> (PAGE_SHIFT - 10)).
    pub nr_dirtied_pause: u64,
    pub paused_when: Ns,
}

impl Default for Dirtier {
    fn default() -> Self {
        Dirtier {
            nr_dirtied: 0,
            nr_dirtied_pause: 32,
            paused_when: 0,
        }
    }
}

/// What `balance_dirty_pages` decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    /// Sleep this long (0 = go on).
    pub pause: Ns,
    /// At or over the hard limit: call in again after the sleep before
    /// dirtying more (the kernel's loop).
    pub over_limit: bool,
    /// Background writeback should start now.
    pub kick_background: bool,
}

/// The inputs of one `balance_dirty_pages` call.
#[derive(Clone, Copy, Debug)]
pub struct DomainState {
    pub limits: Limits,
    /// NR_FILE_DIRTY.
    pub reclaimable: u64,
    /// NR_FILE_DIRTY + NR_WRITEBACK.
    pub dirty: u64,
    /// `avg_write_bandwidth`, pages/s.
    pub write_bw: u64,
    /// Tasks dirtying pages now (at least 1).
    pub dirtiers: u64,
}

/// `wb_max_pause`: about the time to write 1/8 of the dirty pages, at most
/// 200 ms. `roundup_pow_of_two(1 + HZ/8)` = 128 at HZ=1000.
fn max_pause(dirty: u64, write_bw: u64) -> Ns {
    let jiffies = dirty / (1 + write_bw / 128) + 1;
    (jiffies * NS_PER_MS).min(MAX_PAUSE)
}

/// The minimal `balance_dirty_pages` (§2.7 on the §2.2 loop): no sleep
/// below the freerun ceiling; above it the task's rate is
/// `write_bw / dirtiers × pos_ratio`, its think time is credited, sleeps
/// under 10 ms are carried as debt, and none is longer than `max_pause`.
pub fn balance(d: &mut Dirtier, s: &DomainState, now: Ns) -> Throttle {
    let lim = s.limits;
    let kick_background = s.reclaimable > lim.bg;
    let pages = d.nr_dirtied;
    d.nr_dirtied = 0;
    if s.dirty <= lim.freerun() {
        d.paused_when = now;
        d.nr_dirtied_pause = dirty_poll_interval(s.dirty, lim.thresh);
        return Throttle {
            pause: 0,
            over_limit: false,
            kick_background,
        };
    }
    let dirty_ratelimit = (s.write_bw / s.dirtiers.max(1)).max(1);
    let pos = lim.pos_ratio(s.dirty);
    let task_ratelimit = (dirty_ratelimit * pos) >> CALC_SHIFT;
    let max_p = max_pause(s.dirty, s.write_bw);
    // wb_min_pause: about 10 ms worth of pages between calls, at least
    // DIRTY_POLL_THRESH (then the pause target is max_pause).
    let mut min_p = 10 * NS_PER_MS;
    let mut poll = dirty_ratelimit * 10 / 1024;
    if poll < DIRTY_POLL_THRESH {
        min_p = max_p;
        poll = (dirty_ratelimit * (max_p / NS_PER_MS) / 1024).clamp(1, DIRTY_POLL_THRESH);
    }
    d.nr_dirtied_pause = poll;
    if task_ratelimit == 0 {
        d.paused_when = now.saturating_add(max_p);
        return Throttle {
            pause: max_p,
            over_limit: true,
            kick_background: true,
        };
    }
    let period = (u128::from(pages) * u128::from(NS_PER_SEC) / u128::from(task_ratelimit))
        .min(u128::from(Ns::MAX)) as Ns;
    let since = now.saturating_sub(d.paused_when);
    if period < since.saturating_add(min_p) {
        // Too short to sleep: forget a long think time, else carry the debt.
        if since > period.saturating_add(NS_PER_SEC) {
            d.paused_when = now;
        } else {
            d.paused_when = d.paused_when.saturating_add(period);
        }
        return Throttle {
            pause: 0,
            over_limit: false,
            kick_background: true,
        };
    }
    let pause = (period - since).min(max_p);
    d.paused_when = now.saturating_add(pause);
    Throttle {
        pause,
        over_limit: false,
        kick_background: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measured_lab_thresholds() {
        // §1.3: dirty_bytes=400M, dirty_background_bytes=200M on 6.18 gave
        // thresh 102400, bg 51200, freerun 76800, setpoint 89600 pages.
        let mut vm = VmSettings::default();
        vm.set("dirty_bytes", "419430400").unwrap();
        vm.set("dirty_background_bytes", "209715200").unwrap();
        let l = Limits::of(&vm, 5_000_000);
        assert_eq!((l.thresh, l.bg), (102400, 51200));
        assert_eq!((l.freerun(), l.setpoint()), (76800, 89600));
        // §2.2: dirty_poll_interval(76888, 102400) = 128 (measured).
        assert_eq!(dirty_poll_interval(76888, 102400), 128);
        // §2.3: pos_ratio ≈ 1.98 just above freerun, 1 at setpoint, 0 at limit.
        let p = l.pos_ratio(76888) as f64 / 1024.0;
        assert!((p - 1.98).abs() < 0.02, "{p}");
        assert_eq!(l.pos_ratio(89600), 1024);
        assert_eq!(l.pos_ratio(102400), 0);
    }

    #[test]
    fn background_is_halved_when_not_below_thresh() {
        let mut vm = VmSettings::default();
        vm.set("dirty_background_ratio", "50").unwrap();
        vm.set("dirty_ratio", "40").unwrap();
        let l = Limits::of(&vm, 1000);
        assert_eq!((l.thresh, l.bg), (400, 200));
    }

    #[test]
    fn bandwidth_estimate_converges_to_the_written_rate() {
        let mut bw = WriteBandwidth::default();
        let rate = 5000; // pages/s
        let mut t = 0;
        for _ in 0..200 {
            t += BANDWIDTH_INTERVAL;
            bw.update(t, rate * t / NS_PER_SEC);
        }
        let err = (bw.avg_bw as f64 - rate as f64).abs() / rate as f64;
        assert!(err < 0.05, "avg {} vs {rate}", bw.avg_bw);
    }

    #[test]
    fn writers_run_free_below_freerun_and_sleep_above() {
        let l = Limits {
            bg: 100_000,
            thresh: 200_000,
        };
        let mut d = Dirtier {
            nr_dirtied: 32,
            ..Dirtier::default()
        };
        let s = |dirty| DomainState {
            limits: l,
            reclaimable: dirty,
            dirty,
            write_bw: 25600,
            dirtiers: 1,
        };
        let t = balance(&mut d, &s(140_000), 0);
        assert_eq!(t.pause, 0);
        assert!(t.kick_background);
        // At setpoint the task's rate is the bandwidth: 2560 pages take 100 ms.
        d.nr_dirtied = 2560;
        let t = balance(&mut d, &s(l.setpoint()), 0);
        assert_eq!(t.pause, 100 * NS_PER_MS);
        // At the limit: the longest pause, and call in again.
        d.nr_dirtied = 8;
        let t = balance(&mut d, &s(200_000), NS_PER_SEC);
        assert!(t.over_limit && t.pause > 0 && t.pause <= MAX_PAUSE);
    }
}
