//! Non-uniform block choice: fio's `random_distribution=zipf|pareto|normal`.
//! Zipf and pareto pick a popularity *rank*; the caller scatters ranks over the
//! region (fio hashes them) so the hot blocks are not all at the start.
//! Normal picks a block directly, around a centre.

use rand::RngCore;

/// Uniform in [0, 1) with 53 bits.
#[inline]
pub fn u01(rng: &mut impl RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Zipf over ranks 1..=n with P(k) ∝ k^-theta, drawn by Hörmann and
/// Derflinger's rejection-inversion: O(1) memory and expected O(1) time for
/// any n, where fio sums the zeta constant over up to 10M terms at start-up.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    /// `theta > 0`. Returns ranks in `0..n` (rank 0 is the hottest).
    pub fn new(n: u64, theta: f64) -> Zipf {
        let mut z = Zipf {
            n: n.max(1),
            theta,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n as f64 + 0.5);
        z.s = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// H(x) = ∫ x^-theta, written to stay accurate near theta = 1.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.theta) * log_x) * log_x
    }

    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let mut t = x * (1.0 - self.theta);
        if t < -1.0 {
            // Guards rounding at the far end of the range.
            t = -1.0;
        }
        (helper1(t) * x).exp()
    }

    #[inline]
    pub fn sample(&self, rng: &mut impl RngCore) -> u64 {
        loop {
            let u = self.h_integral_n + u01(rng) * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inv(u);
            let mut k = (x + 0.5) as u64;
            if k < 1 {
                k = 1;
            } else if k > self.n {
                k = self.n;
            }
            let kf = k as f64;
            if kf - x <= self.s || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                return k - 1;
            }
        }
    }
}

/// ln(1+x)/x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1)/x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// fio's pareto: rank = (n-1) · u^(ln h / ln(1-h)) (lib/zipf.c pareto_next).
/// With that exponent P(rank < h·n) = 1 - h: `pareto:0.2` sends 80% of the
/// I/O to the hottest 20% of blocks.
#[derive(Clone, Debug)]
pub struct Pareto {
    max_rank: f64,
    pow: f64,
}

impl Pareto {
    /// `0 < h < 1`.
    pub fn new(n: u64, h: f64) -> Pareto {
        Pareto {
            max_rank: n.saturating_sub(1) as f64,
            pow: h.ln() / (1.0 - h).ln(),
        }
    }

    #[inline]
    pub fn sample(&self, rng: &mut impl RngCore) -> u64 {
        (self.max_rank * u01(rng).powf(self.pow)) as u64
    }
}

/// Gaussian over blocks: mean `center·n`, standard deviation `sigma%` of n.
/// Values falling off an end wrap around, as fio's `(x + offset) % n` does
/// when the centre is moved; clamping would pile hits onto the edge blocks.
#[derive(Clone, Debug)]
pub struct Normal {
    n: u64,
    mean: f64,
    sigma: f64,
    /// Normal deviates come in pairs; the second one waits here.
    spare: Option<f64>,
}

impl Normal {
    /// `sigma_pct` > 0 in percent of the region; `center` in 0..=1 (default 0.5).
    pub fn new(n: u64, sigma_pct: f64, center: Option<f64>) -> Normal {
        let n = n.max(1);
        let nf = n as f64;
        // fio's generator without a deviation is an average of 12 uniforms,
        // whose standard deviation is n/12.
        let sigma = if sigma_pct > 0.0 {
            nf * sigma_pct / 100.0
        } else {
            nf / 12.0
        };
        Normal {
            n,
            mean: nf * center.unwrap_or(0.5).clamp(0.0, 1.0),
            sigma,
            spare: None,
        }
    }

    #[inline]
    fn std_normal(&mut self, rng: &mut impl RngCore) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // Marsaglia's polar method: Box-Muller without the trigonometry.
        loop {
            let x = 2.0 * u01(rng) - 1.0;
            let y = 2.0 * u01(rng) - 1.0;
            let s = x * x + y * y;
            if s > 0.0 && s < 1.0 {
                let f = (-2.0 * s.ln() / s).sqrt();
                self.spare = Some(y * f);
                return x * f;
            }
        }
    }

    /// A block in `0..n`.
    #[inline]
    pub fn sample(&mut self, rng: &mut impl RngCore) -> u64 {
        let x = (self.mean + self.sigma * self.std_normal(rng)).floor();
        let nf = self.n as f64;
        let wrapped = x.rem_euclid(nf);
        // rem_euclid can round up to nf for tiny negative x.
        (wrapped as u64).min(self.n - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn share_of_top(counts: &mut [u64], frac: f64) -> f64 {
        let total: u64 = counts.iter().sum();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top = ((counts.len() as f64 * frac) as usize).max(1);
        counts[..top].iter().sum::<u64>() as f64 / total as f64
    }

    #[test]
    fn zipf_matches_exact_pmf() {
        let n = 50u64;
        for theta in [0.5, 1.0, 1.2, 2.0] {
            let z = Zipf::new(n, theta);
            let mut rng = ChaCha8Rng::seed_from_u64(3);
            let draws = 400_000;
            let mut counts = vec![0u64; n as usize];
            for _ in 0..draws {
                counts[z.sample(&mut rng) as usize] += 1;
            }
            let zeta: f64 = (1..=n).map(|k| (k as f64).powf(-theta)).sum();
            for k in [1u64, 2, 3, 10, 50] {
                let p = (k as f64).powf(-theta) / zeta;
                let got = counts[(k - 1) as usize] as f64 / draws as f64;
                let tol = 4.0 * (p * (1.0 - p) / draws as f64).sqrt() + 1e-4;
                assert!(
                    (got - p).abs() < tol,
                    "theta {theta} rank {k}: got {got}, want {p}"
                );
            }
        }
    }

    #[test]
    fn zipf_skew_grows_with_theta() {
        let n = 10_000u64;
        let mut last = 0.0;
        for theta in [0.6, 1.0, 1.4] {
            let z = Zipf::new(n, theta);
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            let mut counts = vec![0u64; n as usize];
            for _ in 0..200_000 {
                counts[z.sample(&mut rng) as usize] += 1;
            }
            let share = share_of_top(&mut counts, 0.1);
            assert!(share > 0.3, "theta {theta}: top 10% got {share}");
            assert!(share > last, "theta {theta}: {share} <= {last}");
            last = share;
        }
    }

    #[test]
    fn zipf_huge_n_stays_in_range() {
        let n = 1u64 << 40;
        let z = Zipf::new(n, 1.1);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..10_000 {
            assert!(z.sample(&mut rng) < n);
        }
    }

    #[test]
    fn pareto_skews() {
        let n = 10_000u64;
        let p = Pareto::new(n, 0.2);
        let mut rng = ChaCha8Rng::seed_from_u64(8);
        let mut counts = vec![0u64; n as usize];
        let draws = 200_000;
        let mut below_20pct = 0;
        for _ in 0..draws {
            let r = p.sample(&mut rng);
            assert!(r < n);
            counts[r as usize] += 1;
            if r < n / 5 {
                below_20pct += 1;
            }
        }
        // The 80/20 rule, by construction of fio's exponent.
        let frac = below_20pct as f64 / draws as f64;
        assert!((frac - 0.8).abs() < 0.01, "hottest 20% got {frac}");
        let share = share_of_top(&mut counts, 0.1);
        assert!(share > 0.6, "top 10% got {share}");
    }

    #[test]
    fn normal_concentrates_around_center() {
        let n = 10_000u64;
        for center in [0.5, 0.25] {
            let mut d = Normal::new(n, 5.0, Some(center));
            let mut rng = ChaCha8Rng::seed_from_u64(11);
            let draws = 100_000;
            let c = center * n as f64;
            let mut within1 = 0;
            let mut sum = 0.0;
            for _ in 0..draws {
                let b = d.sample(&mut rng);
                assert!(b < n);
                sum += b as f64;
                if (b as f64 - c).abs() <= 500.0 {
                    within1 += 1;
                }
            }
            let frac = within1 as f64 / draws as f64;
            assert!((frac - 0.6827).abs() < 0.01, "within 1 sigma: {frac}");
            let mean = sum / draws as f64;
            assert!((mean - c).abs() < 20.0, "mean {mean} vs {c}");
        }
    }
}
