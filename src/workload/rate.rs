//! `rate`, `rate_iops`, `rate_process`: when the next I/O of a direction may
//! be issued.
//!
//! fio (backend.c `usec_for_io`) schedules linearly from the job's start: the
//! next I/O of a direction is due once the bytes already issued in it, divided
//! by the rate, have elapsed. A job that fell behind therefore issues at once
//! until it is back on schedule, and never faster than that. Poisson spaces
//! I/Os by exponential gaps with the same mean.

use super::dist::u01;
use crate::job::{Ddir, JobSpec, RateProcess};
use crate::sim::time::{Ns, NS_PER_SEC};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

#[derive(Clone, Debug, Default)]
struct DirState {
    bps: Option<u64>,
    iops: Option<u64>,
    bytes: u128,
    ios: u128,
    /// Poisson: due time of the next I/O, ns after start.
    next_due: f64,
}

impl DirState {
    fn limited(&self) -> bool {
        self.bps.is_some() || self.iops.is_some()
    }
}

/// Rate limiting (`rate`, `rate_iops`, `rate_process`).
pub struct RateLimiter {
    process: RateProcess,
    dirs: [DirState; 3],
    rng: ChaCha8Rng,
}

impl RateLimiter {
    /// None when the job has no rate limit.
    pub fn new(spec: &JobSpec, seed: u64) -> Option<RateLimiter> {
        let mut dirs: [DirState; 3] = Default::default();
        for d in Ddir::ALL {
            let i = d.index();
            dirs[i].bps = spec.rate[i].filter(|&r| r > 0);
            dirs[i].iops = spec.rate_iops[i].filter(|&r| r > 0);
        }
        if !dirs.iter().any(DirState::limited) {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // A stream of its own, so rate draws never shift the offset stream.
        rng.set_stream(0x7261_7465);
        Some(RateLimiter {
            process: spec.rate_process,
            dirs,
            rng,
        })
    }

    /// Earliest time at or after `now` at which an I/O of `ddir`/`bytes` may be
    /// issued, given the job started at `start`; records the I/O as issued.
    pub fn issue_at(&mut self, now: Ns, start: Ns, ddir: Ddir, bytes: u64) -> Ns {
        let st = &mut self.dirs[ddir.index()];
        if !st.limited() {
            return now;
        }
        let due_after_start: Ns = match self.process {
            RateProcess::Linear => {
                // Both limits apply; the later due time is the stricter one.
                let by_bytes = st
                    .bps
                    .map_or(0, |r| st.bytes * NS_PER_SEC as u128 / r as u128);
                let by_ios = st
                    .iops
                    .map_or(0, |r| st.ios * NS_PER_SEC as u128 / r as u128);
                by_bytes.max(by_ios).min(u64::MAX as u128) as Ns
            }
            RateProcess::Poisson => {
                let due = st.next_due;
                // Mean gap of this I/O under each limit; take the longer.
                let mean_bytes = st
                    .bps
                    .map_or(0.0, |r| bytes as f64 * NS_PER_SEC as f64 / r as f64);
                let mean_ios = st.iops.map_or(0.0, |r| NS_PER_SEC as f64 / r as f64);
                let mean = mean_bytes.max(mean_ios);
                let u = 1.0 - u01(&mut self.rng); // (0, 1]
                st.next_due += mean * -u.ln();
                due.min(u64::MAX as f64) as Ns
            }
        };
        st.bytes += bytes as u128;
        st.ios += 1;
        now.max(start.saturating_add(due_after_start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(rate: [Option<u64>; 3], iops: [Option<u64>; 3], p: RateProcess) -> JobSpec {
        let mut s = JobSpec::with_defaults("r");
        s.rate = rate;
        s.rate_iops = iops;
        s.rate_process = p;
        s
    }

    #[test]
    fn no_limit_is_none() {
        assert!(RateLimiter::new(&JobSpec::with_defaults("x"), 1).is_none());
        let s = spec([Some(0), None, None], [None; 3], RateProcess::Linear);
        assert!(RateLimiter::new(&s, 1).is_none());
    }

    #[test]
    fn linear_rate_is_exact() {
        // 1 MiB/s of 4 KiB reads: one every 1/256 s.
        let s = spec([Some(1 << 20), None, None], [None; 3], RateProcess::Linear);
        let mut rl = RateLimiter::new(&s, 1).unwrap();
        let start = 5_000;
        let mut now = start;
        for k in 0..1024u64 {
            let t = rl.issue_at(now, start, Ddir::Read, 4096);
            assert_eq!(t, start + k * 4096 * NS_PER_SEC / (1 << 20));
            now = t;
        }
        // 1024 I/Os of 4 KiB = 4 MiB issued within 4 s (last at 1023/256 s).
        assert_eq!(now - start, 1023 * NS_PER_SEC / 256);
        // Writes are not limited.
        assert_eq!(rl.issue_at(7, start, Ddir::Write, 4096), 7);
    }

    #[test]
    fn linear_behind_issues_now_then_back_on_schedule() {
        let s = spec([None; 3], [Some(1000), None, None], RateProcess::Linear);
        let mut rl = RateLimiter::new(&s, 1).unwrap();
        assert_eq!(rl.issue_at(0, 0, Ddir::Read, 512), 0);
        // Late by 10 ms: the I/O due at 1 ms goes at once...
        assert_eq!(rl.issue_at(10_000_000, 0, Ddir::Read, 512), 10_000_000);
        // ...and later ones keep the original schedule.
        assert_eq!(rl.issue_at(0, 0, Ddir::Read, 512), 2_000_000);
    }

    #[test]
    fn stricter_of_rate_and_iops() {
        // 1000 IOPS but 1 MB/s with 4k I/Os (244 IOPS): bytes limit wins.
        let s = spec(
            [Some(1_000_000), None, None],
            [Some(1000), None, None],
            RateProcess::Linear,
        );
        let mut rl = RateLimiter::new(&s, 1).unwrap();
        rl.issue_at(0, 0, Ddir::Read, 4096);
        assert_eq!(rl.issue_at(0, 0, Ddir::Read, 4096), 4_096_000);
        // With 512-byte I/Os the IOPS limit is the stricter one.
        let mut rl = RateLimiter::new(&s, 1).unwrap();
        rl.issue_at(0, 0, Ddir::Read, 512);
        assert_eq!(rl.issue_at(0, 0, Ddir::Read, 512), 1_000_000);
    }

    #[test]
    fn poisson_averages_to_rate() {
        let s = spec([None; 3], [None, Some(2000), None], RateProcess::Poisson);
        let mut rl = RateLimiter::new(&s, 42).unwrap();
        let n = 20_000u64;
        let mut t = 0;
        let mut gaps_sq = 0.0;
        let mut prev = 0;
        for _ in 0..n {
            t = rl.issue_at(t, 0, Ddir::Write, 4096);
            let g = (t - prev) as f64;
            gaps_sq += g * g;
            prev = t;
        }
        let mean_gap = t as f64 / (n - 1) as f64;
        assert!(
            (mean_gap / 500_000.0 - 1.0).abs() < 0.05,
            "mean gap {mean_gap}"
        );
        // Exponential gaps: E[g^2] = 2 mean^2 (a linear process would give 1).
        let ratio = gaps_sq / n as f64 / (mean_gap * mean_gap);
        assert!((ratio - 2.0).abs() < 0.2, "second moment ratio {ratio}");
    }

    #[test]
    fn poisson_deterministic_per_seed() {
        let s = spec([Some(1 << 20), None, None], [None; 3], RateProcess::Poisson);
        let run = |seed| {
            let mut rl = RateLimiter::new(&s, seed).unwrap();
            (0..100)
                .map(|_| rl.issue_at(0, 0, Ddir::Read, 4096))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
