//! `rate`, `rate_iops`, `rate_process`: when the next I/O of a direction may
//! be issued.
//!
//! fio 3.33 turns either limit into bytes a second (init.c `__setup_rate`:
//! `rate`, else `rate_iops` times the direction's smallest block size; a
//! job may not give both, `fixup_options`), and schedules linearly from the
//! job's start (backend.c `usec_for_io`): the next I/O of a direction is due
//! once the bytes already issued in it, divided by the rate, have elapsed,
//! in whole microseconds. A job that fell behind therefore issues at once
//! until it is back on schedule, and never faster than that. So `rate_iops`
//! with mixed block sizes paces bytes, not I/Os: a 16 KiB I/O of a 4k-16k
//! job takes four 4 KiB I/Os' share.
//!
//! Poisson spaces I/Os by exponential gaps of a mean that counts I/Os, not
//! bytes: `1000000 / (rate / smallest block)` whole microseconds times
//! `-ln(u)`, truncated to a microsecond, whatever each I/O's size.

use super::dist::u01;
use crate::job::{Ddir, JobSpec, RateProcess};
use crate::sim::time::{Ns, NS_PER_US};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const US_PER_SEC: u64 = 1_000_000;

#[derive(Clone, Debug, Default)]
struct DirState {
    /// Bytes a second (`rate_bps`); 0: not limited.
    bps: u64,
    /// Poisson: mean gap in whole microseconds (`1000000 / iops`).
    poisson_mean_us: u64,
    bytes: u64,
    /// Poisson: due time of the next I/O, microseconds after start
    /// (fio's `last_usec`).
    next_due_us: u64,
}

/// Rate limiting (`rate`, `rate_iops`, `rate_process`).
pub struct RateLimiter {
    process: RateProcess,
    dirs: [DirState; 3],
    rng: ChaCha8Rng,
}

impl RateLimiter {
    /// None when the job has no rate limit. The parser refused a job
    /// giving both `rate` and `rate_iops`, and a Poisson rate below one
    /// smallest block a second (job/parse.rs `check_rates`).
    pub fn new(spec: &JobSpec, seed: u64) -> Option<RateLimiter> {
        let mut dirs: [DirState; 3] = Default::default();
        for d in Ddir::ALL {
            let i = d.index();
            let min_bs = spec.bs[i].min().max(1);
            let bps = match (spec.rate[i], spec.rate_iops[i]) {
                (Some(r), _) => r,
                (None, Some(iops)) => iops.saturating_mul(min_bs),
                (None, None) => 0,
            };
            dirs[i].bps = bps;
            dirs[i].poisson_mean_us = US_PER_SEC / (bps / min_bs).max(1);
        }
        if dirs.iter().all(|d| d.bps == 0) {
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
        if st.bps == 0 {
            return now;
        }
        let due_us = match self.process {
            RateProcess::Linear => {
                let (secs, rem) = (st.bytes / st.bps, st.bytes % st.bps);
                // u128: the remainder times 10^6 overflows u64 above 18 TB/s.
                let part = (rem as u128 * US_PER_SEC as u128 / st.bps as u128) as u64;
                secs.saturating_mul(US_PER_SEC).saturating_add(part)
            }
            RateProcess::Poisson => {
                let due = st.next_due_us;
                let u = 1.0 - u01(&mut self.rng); // (0, 1]
                let gap = (st.poisson_mean_us as f64 * -u.ln()) as u64;
                st.next_due_us = st.next_due_us.saturating_add(gap);
                due
            }
        };
        st.bytes = st.bytes.saturating_add(bytes);
        now.max(start.saturating_add(due_us.saturating_mul(NS_PER_US)))
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
            // Whole microseconds, as fio's usec_for_io.
            let (secs, rem) = (k * 4096 / (1 << 20), k * 4096 % (1 << 20));
            assert_eq!(
                t,
                start + (secs * 1_000_000 + rem * 1_000_000 / (1 << 20)) * 1_000
            );
            now = t;
        }
        // 1024 I/Os of 4 KiB = 4 MiB issued within 4 s (last at 1023/256 s,
        // 3996093.75 us, truncated).
        assert_eq!(now - start, 3_996_093_000);
        // Writes are not limited.
        assert_eq!(rl.issue_at(7, start, Ddir::Write, 4096), 7);
    }

    #[test]
    fn linear_behind_issues_now_then_back_on_schedule() {
        let mut s = spec([None; 3], [Some(1000), None, None], RateProcess::Linear);
        s.bs[0] = crate::job::BlockSizes::Fixed(512);
        let mut rl = RateLimiter::new(&s, 1).unwrap();
        assert_eq!(rl.issue_at(0, 0, Ddir::Read, 512), 0);
        // Late by 10 ms: the I/O due at 1 ms goes at once...
        assert_eq!(rl.issue_at(10_000_000, 0, Ddir::Read, 512), 10_000_000);
        // ...and later ones keep the original schedule.
        assert_eq!(rl.issue_at(0, 0, Ddir::Read, 512), 2_000_000);
    }

    #[test]
    fn rate_iops_paces_bytes_of_the_smallest_block() {
        // rate_iops=1000 with 4k-16k blocks is 4096000 B/s (fio's
        // __setup_rate): after a 16 KiB I/O the next is due in 4 ms, after
        // a 4 KiB one in 1 ms.
        let mut s = spec([None; 3], [Some(1000), None, None], RateProcess::Linear);
        s.bs[0] = crate::job::BlockSizes::Range {
            min: 4096,
            max: 16384,
        };
        let mut rl = RateLimiter::new(&s, 1).unwrap();
        assert_eq!(rl.issue_at(0, 0, Ddir::Read, 16384), 0);
        assert_eq!(rl.issue_at(0, 0, Ddir::Read, 4096), 4_000_000);
        assert_eq!(rl.issue_at(0, 0, Ddir::Read, 4096), 5_000_000);
    }

    #[test]
    fn linear_due_times_are_whole_microseconds() {
        // 3 bytes a second... of 1-byte I/Os: due at 0, 333333, 666666 us.
        let mut s = spec([Some(3), None, None], [None; 3], RateProcess::Linear);
        s.bs[0] = crate::job::BlockSizes::Fixed(1);
        let mut rl = RateLimiter::new(&s, 1).unwrap();
        let due: Vec<Ns> = (0..3).map(|_| rl.issue_at(0, 0, Ddir::Read, 1)).collect();
        assert_eq!(due, [0, 333_333_000, 666_666_000]);
    }

    #[test]
    fn poisson_gaps_count_ios_not_bytes() {
        // rate=4m with 4k-64k blocks: 1024 I/Os a second whatever their
        // sizes (fio: iops = rate / min_bs), so the mean gap is 976 us.
        let mut s = spec([Some(4 << 20), None, None], [None; 3], RateProcess::Poisson);
        s.bs[0] = crate::job::BlockSizes::Range {
            min: 4096,
            max: 65536,
        };
        let mut rl = RateLimiter::new(&s, 7).unwrap();
        let n = 20_000u64;
        let mut t = 0;
        for _ in 0..n {
            t = rl.issue_at(0, 0, Ddir::Read, 65536);
        }
        let mean_gap = t as f64 / (n - 1) as f64;
        assert!(
            (mean_gap / 976_000.0 - 1.0).abs() < 0.05,
            "mean gap {mean_gap}"
        );
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
