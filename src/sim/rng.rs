//! Seeded randomness: independent streams from one run seed, and a cheap
//! generator for device models' service-time jitter.
//!
//! [`Xoshiro256pp`]: the xoshiro256++ generator of Blackman and Vigna (2019),
//! seeded through splitmix64. Small state, a handful of instructions per
//! `u64`; plenty for jitter (not for anything that needs to be unpredictable).
//!
//! [`ExpZiggurat`]: exact Exp(1) sampling with the ziggurat method of Marsaglia
//! and Tsang (2000), 256 layers. One `u64` per sample on the fast path (97.8%
//! of draws); the rest take the wedge test (one more `u64` and one `exp`) or
//! the tail (one more `u64` and one `ln`), and 1.1% of draws are rejected and
//! drawn again. The low 8 bits of a draw pick the layer and the high 56 bits
//! the position, so the two are independent.

/// splitmix64's output function: a bijection of `u64` that mixes every bit
/// (also used to derive independent seeds, [`stream_seed`]).
pub fn splitmix64_mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Mix a seed with a stream number, so each consumer of randomness (a job's
/// offsets, the device's jitter, start delays) gets an independent stream
/// from one run seed.
pub fn stream_seed(seed: u64, stream: u64) -> u64 {
    splitmix64_mix(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// splitmix64 step: expands one `u64` seed into well-mixed state words.
fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    splitmix64_mix(*x)
}

/// xoshiro256++ pseudo-random generator; same seed, same stream.
#[derive(Clone, Debug)]
pub struct Xoshiro256pp {
    s: [u64; 4],
}

impl Xoshiro256pp {
    /// State from four splitmix64 outputs of `seed` (never all zero).
    pub fn seed_from_u64(seed: u64) -> Xoshiro256pp {
        let mut x = seed;
        Xoshiro256pp {
            s: std::array::from_fn(|_| splitmix64(&mut x)),
        }
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let out = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }
}

const LAYERS: usize = 256;
/// Start of the tail: the base layer is [0, R) under f(R) plus the tail x ≥ R.
const R: f64 = 7.697_117_470_131_05;
/// Area of every layer (the base layer's includes the tail).
const V: f64 = 3.949_659_822_581_557e-3;
/// Scale of the 56-bit position drawn for a sample.
const POS: f64 = (1u64 << 56) as f64;

/// Tables of the exponential ziggurat. Layer `i` is [0, x_i) wide; it lies
/// wholly under the density for x < x_{i+1}, where x_0 = V/f(R) is the base
/// layer's equivalent width, x_1 = R, and x_256 = 0 at the top.
#[derive(Clone, Debug)]
pub struct ExpZiggurat {
    /// Per layer: positions below `k` are under the curve (fast accept), and
    /// `w = x_i / 2^56` turns a 56-bit position into x.
    fast: [(u64, f64); LAYERS],
    /// f(x_i) = exp(-x_i), i = 0..=256 (f(x_0) is unused).
    f: [f64; LAYERS + 1],
}

impl Default for ExpZiggurat {
    fn default() -> Self {
        Self::new()
    }
}

impl ExpZiggurat {
    /// Build the tables (deterministic: a fixed recurrence from R and V).
    pub fn new() -> ExpZiggurat {
        let mut x = [0.0f64; LAYERS + 1];
        x[0] = V / (-R).exp();
        x[1] = R;
        // Each layer above has area V: x_{i+1} = f⁻¹(f(x_i) + V / x_i).
        for i in 1..LAYERS - 1 {
            x[i + 1] = -((-x[i]).exp() + V / x[i]).ln();
        }
        x[LAYERS] = 0.0;
        let fast = std::array::from_fn(|i| {
            let k = (x[i + 1] / x[i] * POS) as u64;
            (k, x[i] / POS)
        });
        let f = std::array::from_fn(|i| (-x[i]).exp());
        ExpZiggurat { fast, f }
    }

    /// One Exp(1) sample (mean 1, variance 1).
    #[inline]
    pub fn sample(&self, rng: &mut Xoshiro256pp) -> f64 {
        loop {
            let r = rng.next_u64();
            let i = (r & 0xff) as usize;
            let pos = r >> 8;
            let (k, w) = self.fast[i];
            // pos < 2^56, so the signed conversion is exact and cheap.
            let x = (pos as i64) as f64 * w;
            if pos < k {
                return x;
            }
            // The slow path gets its extra draw from here, so that the
            // generator never escapes and can stay in registers.
            if let Some(x) = self.slow(i, x, rng.next_u64()) {
                return x;
            }
        }
    }

    /// Outside the part of layer `i` that lies under the curve; `r` is a
    /// fresh draw.
    #[cold]
    fn slow(&self, i: usize, x: f64, r: u64) -> Option<f64> {
        // Uniform in (0, 1] with 53 bits.
        let u = ((r >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
        if i == 0 {
            // The tail beyond R: the exponential is memoryless.
            return Some(R - u.ln());
        }
        // Wedge: accept x if a uniform height in the layer's band is under f(x).
        let (lo, hi) = (self.f[i], self.f[i + 1]);
        let y = lo + (1.0 - u) * (hi - lo);
        (y < (-x).exp()).then_some(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xoshiro_reference_outputs() {
        // Reference implementation from state {1, 2, 3, 4}.
        let mut g = Xoshiro256pp { s: [1, 2, 3, 4] };
        assert_eq!(g.next_u64(), 41_943_041);
        assert_eq!(g.next_u64(), 58_720_359);
        // splitmix64 from 0: first output of the reference implementation.
        assert_eq!(splitmix64(&mut 0), 0xE220_A839_7B1D_CDAF);
        // Same seed, same stream; different seed, different stream.
        let (mut a, mut b) = (
            Xoshiro256pp::seed_from_u64(9),
            Xoshiro256pp::seed_from_u64(9),
        );
        let mut c = Xoshiro256pp::seed_from_u64(10);
        for _ in 0..100 {
            let v = a.next_u64();
            assert_eq!(v, b.next_u64());
            assert_ne!(v, c.next_u64());
        }
    }

    #[test]
    fn ziggurat_tables_close_at_the_top() {
        let z = ExpZiggurat::new();
        // The recurrence lands on x_256 = 0: the top layer has area V.
        let x255 = z.fast[255].1 * POS;
        assert!((x255 * (1.0 - (-x255).exp()) - V).abs() < 1e-12, "{x255}");
        assert_eq!(z.fast[255].0, 0);
        for i in 0..LAYERS {
            assert!(z.fast[i].0 < 1u64 << 56);
            assert!(z.f[i] < z.f[i + 1]);
        }
    }

    #[test]
    fn ziggurat_samples_are_exponential() {
        let z = ExpZiggurat::new();
        let mut g = Xoshiro256pp::seed_from_u64(42);
        let n = 1_000_000;
        let mut v: Vec<f64> = (0..n).map(|_| z.sample(&mut g)).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64;
        // Standard errors: 0.001 for the mean, 0.0028 for the variance.
        assert!((mean - 1.0).abs() < 0.005, "mean {mean}");
        assert!((var - 1.0).abs() < 0.015, "variance {var}");
        assert!(v.iter().all(|&x| x >= 0.0 && x.is_finite()));
        // CDF at a few points, including the wedges and past the tail start R.
        for t in [0.05, 0.3, 1.0, 2.0, 4.0, 7.0] {
            let emp = v.iter().filter(|&&x| x < t).count() as f64 / n as f64;
            let cdf = 1.0 - (-t).exp();
            assert!((emp - cdf).abs() < 0.002, "F({t}) {emp} vs {cdf}");
        }
        for t in [R, 9.0, 10.0] {
            let emp = v.iter().filter(|&&x| x >= t).count() as f64 / n as f64;
            let sf = (-t).exp();
            assert!(
                (emp - sf).abs() < 5.0 * (sf / n as f64).sqrt() + 1e-6,
                "S({t}) {emp} vs {sf}"
            );
        }
        // Kolmogorov–Smirnov statistic over the whole sample (1% level: 1.63/√n).
        v.sort_by(f64::total_cmp);
        let d = v
            .iter()
            .enumerate()
            .map(|(j, &x)| {
                let c = 1.0 - (-x).exp();
                (c - j as f64 / n as f64).max((j + 1) as f64 / n as f64 - c)
            })
            .fold(0.0, f64::max);
        assert!(d < 1.63 / (n as f64).sqrt(), "KS D = {d}");
    }
}
