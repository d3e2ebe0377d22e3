//! kyber's completion-latency histograms and the rules its timer applies
//! (block/kyber-iosched.c, v6.17: `add_latency_sample`,
//! `flush_latency_buckets`, `calculate_percentile`, `kyber_timer_fn`).
//!
//! Each measured domain (read, write, discard) has two histograms, total
//! latency (from the request's creation) and I/O latency (from its dispatch
//! to the driver), of 8 buckets a quarter of the domain's target wide:
//! buckets 0-3 are at or under the target, 4-7 over it, 7 is anything above
//! 1.75 x target. Completions count into per-CPU histograms; the timer adds
//! them into the global ones. A percentile is only computed from 500
//! samples or once a second has passed since the first try with samples,
//! and computing it clears that histogram (pitfalls: the p90 and the p99
//! rules each consume their own histogram; a domain without enough samples
//! keeps accumulating across timer runs; the one-second window is the
//! domain's, shared by both histograms, so below 500 samples a second the
//! I/O p90 closing the window makes the total p99 open a new one, and the
//! p99 is not computed while I/O samples keep coming).

use crate::sim::time::{Ns, HZ};

/// Domains that are measured: READ, WRITE, DISCARD (KYBER_OTHER is not).
pub const MEASURED: usize = 3;
/// KYBER_LATENCY_SHIFT: buckets are target >> 2 wide.
pub const LATENCY_SHIFT: u32 = 2;
/// KYBER_GOOD_BUCKETS.
pub const GOOD_BUCKETS: i32 = 1 << LATENCY_SHIFT;
/// KYBER_LATENCY_BUCKETS.
pub const BUCKETS: usize = 2 << LATENCY_SHIFT;
/// KYBER_TOTAL_LATENCY / KYBER_IO_LATENCY.
pub const TOTAL: usize = 0;
pub const IO: usize = 1;
/// `calculate_percentile`: enough samples.
pub const MIN_SAMPLES: u32 = 500;

/// `add_latency_sample`: the bucket of `latency` for `target`.
pub fn bucket_of(target: u64, latency: Ns) -> usize {
    if latency == 0 {
        return 0;
    }
    let width = (target >> LATENCY_SHIFT).max(1);
    ((latency - 1) / width).min(BUCKETS as u64 - 1) as usize
}

type Hist = [[[u32; BUCKETS]; 2]; MEASURED];

/// Per-CPU and global histograms, the percentile windows and the
/// remembered p99s.
#[derive(Clone, Debug)]
pub struct Latency {
    per_cpu: Vec<Hist>,
    global: Hist,
    /// `latency_timeout` in jiffies (0 = not started).
    timeout: [u64; MEASURED],
    /// `domain_p99`: -1 = unknown.
    p99: [i32; MEASURED],
}

/// What the timer decided for one domain: scale its depth by
/// `(p99 bucket + 1) / 4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rescale {
    pub domain: usize,
    pub p99_bucket: i32,
}

impl Latency {
    pub fn new(nr_cpus: usize) -> Latency {
        Latency {
            per_cpu: vec![[[[0; BUCKETS]; 2]; MEASURED]; nr_cpus.max(1)],
            global: [[[0; BUCKETS]; 2]; MEASURED],
            timeout: [0; MEASURED],
            p99: [-1; MEASURED],
        }
    }

    /// `kyber_completed_request`'s two samples on `cpu`.
    pub fn add(&mut self, cpu: u16, domain: usize, target: u64, total: Ns, io: Ns) {
        let c = cpu as usize % self.per_cpu.len();
        let h = &mut self.per_cpu[c][domain];
        h[TOTAL][bucket_of(target, total)] += 1;
        h[IO][bucket_of(target, io)] += 1;
    }

    /// `flush_latency_buckets` for every CPU, domain and type.
    fn flush(&mut self) {
        for cpu in self.per_cpu.iter_mut() {
            for (d, dom) in cpu.iter_mut().enumerate() {
                for (t, hist) in dom.iter_mut().enumerate() {
                    for (b, n) in hist.iter_mut().enumerate() {
                        self.global[d][t][b] = self.global[d][t][b].wrapping_add(*n);
                        *n = 0;
                    }
                }
            }
        }
    }

    /// `calculate_percentile` at jiffy `now_j`: a bucket, or -1.
    fn percentile(&mut self, domain: usize, ty: usize, percentile: u32, now_j: u64) -> i32 {
        let hist = &mut self.global[domain][ty];
        let samples: u32 = hist.iter().fold(0u32, |a, &n| a.wrapping_add(n));
        if samples == 0 {
            return -1;
        }
        if self.timeout[domain] == 0 {
            self.timeout[domain] = (now_j + HZ).max(1);
        }
        // time_is_after_jiffies(timeout): the window is still open.
        if samples < MIN_SAMPLES && self.timeout[domain] > now_j {
            return -1;
        }
        self.timeout[domain] = 0;
        // DIV_ROUND_UP(samples * percentile, 100) in unsigned int.
        let mut need = samples.wrapping_mul(percentile).div_ceil(100);
        let mut bucket = 0;
        while bucket < BUCKETS - 1 {
            if hist[bucket] >= need {
                break;
            }
            need -= hist[bucket];
            bucket += 1;
        }
        *hist = [0; BUCKETS];
        bucket as i32
    }

    /// The decisions of `kyber_timer_fn` at jiffy `now_j`: which domains to
    /// rescale, by their total-latency p99 bucket. Congestion (some
    /// domain's I/O-latency p90 over its target) rescales every domain with
    /// a p99 (down when it is good); otherwise only domains over their
    /// target are rescaled (up).
    pub fn timer(&mut self, now_j: u64, out: &mut Vec<Rescale>) {
        self.flush();
        let mut bad = false;
        for d in 0..MEASURED {
            if self.percentile(d, IO, 90, now_j) >= GOOD_BUCKETS {
                bad = true;
            }
        }
        for d in 0..MEASURED {
            let mut p99 = self.percentile(d, TOTAL, 99, now_j);
            // A domain may lack samples when congestion is seen: use the
            // p99 remembered from before, once.
            if bad {
                if p99 < 0 {
                    p99 = self.p99[d];
                }
                self.p99[d] = -1;
            } else if p99 >= 0 {
                self.p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            if bad || p99 >= GOOD_BUCKETS {
                out.push(Rescale {
                    domain: d,
                    p99_bucket: p99,
                });
            }
        }
    }

    /// Samples not yet consumed by a percentile (per-CPU and global), for
    /// tests and debugging.
    pub fn pending(&self, domain: usize, ty: usize) -> u32 {
        let g: u32 = self.global[domain][ty].iter().sum();
        let c: u32 = self
            .per_cpu
            .iter()
            .map(|h| h[domain][ty].iter().sum::<u32>())
            .sum();
        g + c
    }
}

/// The new depth for a rescale: `(depth * (p99 + 1)) >> KYBER_LATENCY_SHIFT`.
pub fn scaled_depth(depth: u32, p99_bucket: i32) -> u32 {
    ((depth as u64 * (p99_bucket as u64 + 1)) >> LATENCY_SHIFT) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::time::NS_PER_MS;

    const T: u64 = 2 * NS_PER_MS;

    #[test]
    fn buckets_are_quarters_of_the_target() {
        assert_eq!(bucket_of(T, 0), 0);
        assert_eq!(bucket_of(T, 1), 0);
        assert_eq!(bucket_of(T, T / 4), 0);
        assert_eq!(bucket_of(T, T / 4 + 1), 1);
        assert_eq!(bucket_of(T, T), 3);
        assert_eq!(bucket_of(T, T + 1), 4);
        assert_eq!(bucket_of(T, 100 * T), 7);
        // A target of 0 makes 1 ns buckets (max(T >> 2, 1)).
        assert_eq!(bucket_of(0, 3), 2);
    }

    #[test]
    fn percentile_needs_500_samples_or_a_second_and_clears() {
        let mut l = Latency::new(2);
        for i in 0..499u64 {
            l.add((i % 2) as u16, 0, T, T / 8, T / 8);
        }
        let mut out = Vec::new();
        l.timer(10, &mut out);
        assert!(out.is_empty());
        assert_eq!(l.pending(0, TOTAL), 499, "kept for the next run");
        l.add(0, 0, T, 3 * T, 3 * T); // 500th, bucket 7
        l.timer(11, &mut out);
        // p90 of I/O is bucket 0 (no congestion); p99 = bucket 0 too, which
        // is good, so nothing is rescaled, but the histograms are consumed.
        assert!(out.is_empty());
        assert_eq!(l.pending(0, TOTAL), 0);
        assert_eq!(l.pending(0, IO), 0);
        // A few samples wait for one second (HZ jiffies) from the first try.
        // The window is the domain's, shared by both histograms: the I/O
        // p90 closes it, and the total p99 right after opens a new one, so
        // a domain under 500 samples a window never gets a p99 (the
        // kernel's behaviour; pitfall).
        l.add(0, 0, T, 3 * T, T / 8);
        l.timer(20, &mut out);
        assert!(out.is_empty());
        l.timer(20 + HZ - 1, &mut out);
        assert!(out.is_empty());
        assert_eq!(l.pending(0, IO), 1);
        l.timer(20 + HZ, &mut out);
        assert!(out.is_empty(), "the p90 took the window");
        assert_eq!((l.pending(0, IO), l.pending(0, TOTAL)), (0, 1));
        // With no I/O samples left, the total p99 gets its own second.
        l.timer(20 + 2 * HZ, &mut out);
        assert_eq!(
            out,
            vec![Rescale {
                domain: 0,
                p99_bucket: 7
            }],
            "over target: scaled up without congestion"
        );
    }

    #[test]
    fn congestion_rescales_good_domains_down_with_remembered_p99() {
        let mut l = Latency::new(1);
        let mut out = Vec::new();
        // Writes: 600 samples well under their 10 ms target: p99 bucket 0,
        // remembered.
        for _ in 0..600 {
            l.add(0, 1, 10 * NS_PER_MS, NS_PER_MS, NS_PER_MS);
        }
        l.timer(1, &mut out);
        assert!(out.is_empty());
        // Reads congested at the device: I/O p90 over target.
        for _ in 0..600 {
            l.add(0, 0, T, 3 * T, 3 * T);
        }
        l.timer(2, &mut out);
        assert_eq!(
            out,
            vec![
                Rescale {
                    domain: 0,
                    p99_bucket: 7
                },
                Rescale {
                    domain: 1,
                    p99_bucket: 0
                }
            ]
        );
        assert_eq!(scaled_depth(128, 0), 32);
        assert_eq!(scaled_depth(256, 7), 512);
        assert_eq!(scaled_depth(1, 0), 0, "clamped to 1 by the caller");
    }
}
