//! Bijections of `[0, n)` that let random I/O visit every block exactly once
//! per pass in O(1) memory. fio keeps a bitmap (axmap) of blocks already hit;
//! a bitmap of a multi-terabyte device is too big for a simulator that runs
//! many jobs, so we walk a keyed permutation (tausworthe) or a maximal-length
//! LFSR (lfsr) instead, both cycle-walked down from the next power of two.

use rand::RngCore;

/// Mixing rounds of [`Mixer`]; three is enough that consecutive counters map
/// to unrelated-looking outputs, and keeps a step at a few nanoseconds.
const ROUNDS: usize = 3;

/// A keyed bijection of `[0, 2^bits)`. Every round (xor a key, multiply by an
/// odd key, xorshift right by half the width) is invertible modulo `2^bits`,
/// so the composition is a permutation; the keys pick which one.
#[derive(Clone, Debug)]
pub struct Mixer {
    mask: u64,
    shift: u32,
    xor_keys: [u64; ROUNDS],
    mul_keys: [u64; ROUNDS],
}

impl Mixer {
    pub fn new(bits: u32, rng: &mut impl RngCore) -> Mixer {
        let mask = if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let mut xor_keys = [0; ROUNDS];
        let mut mul_keys = [0; ROUNDS];
        for r in 0..ROUNDS {
            xor_keys[r] = rng.next_u64() & mask;
            // Odd multipliers are units modulo 2^bits; forcing bit 1 too keeps
            // the multiplier away from 1 so low bits still move.
            mul_keys[r] = rng.next_u64() | 3;
        }
        Mixer {
            mask,
            shift: (bits / 2).max(1),
            xor_keys,
            mul_keys,
        }
    }

    #[inline]
    pub fn apply(&self, mut x: u64) -> u64 {
        for r in 0..ROUNDS {
            x ^= self.xor_keys[r];
            x = x.wrapping_mul(self.mul_keys[r]) & self.mask;
            x ^= x >> self.shift;
        }
        x
    }

    /// The permutation restricted to `[0, n)` by cycle walking: following the
    /// cycle of `x` until it re-enters `[0, n)` is a bijection of `[0, n)`.
    #[inline]
    pub fn apply_within(&self, x: u64, n: u64) -> u64 {
        let mut y = self.apply(x);
        while y >= n {
            y = self.apply(y);
        }
        y
    }
}

/// Bits needed to hold values `0..n` (at least 1).
pub fn bits_for(n: u64) -> u32 {
    if n <= 2 {
        1
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// Visits `0..n` in keyed-random order, every value once per pass, with fresh
/// keys each new pass (fio's random numbers go on), or the first pass's keys
/// again (`repeat_pass`: fio reseeded).
#[derive(Clone, Debug)]
pub struct PermWalker {
    mixer: Mixer,
    /// The first pass's key, which `repeat_pass` walks again.
    first_mixer: Mixer,
    bits: u32,
    n: u64,
    /// 2^bits: the counter walks this domain, outputs >= n are skipped.
    domain: u64,
    counter: u64,
    /// Passes begun after the first.
    passes: u64,
}

impl PermWalker {
    pub fn new(n: u64, rng: &mut impl RngCore) -> PermWalker {
        assert!(n > 0 && n < 1 << 63, "PermWalker domain 1..2^63");
        let bits = bits_for(n);
        let mixer = Mixer::new(bits, rng);
        PermWalker {
            first_mixer: mixer.clone(),
            mixer,
            bits,
            n,
            domain: 1u64 << bits,
            counter: 0,
            passes: 0,
        }
    }

    /// Start a new pass now (fio resets its map at each loop).
    pub fn new_pass(&mut self) {
        self.counter = self.domain;
    }

    /// Start a new pass that visits the values in the first pass's order
    /// (fio reseeds at each loop with `randrepeat`).
    pub fn repeat_pass(&mut self) {
        self.mixer = self.first_mixer.clone();
        self.counter = 0;
        self.passes += 1;
    }

    /// Passes begun after the first (the map was used up, or `new_pass`).
    pub fn passes(&self) -> u64 {
        self.passes
    }

    #[inline]
    pub fn next(&mut self, rng: &mut impl RngCore) -> u64 {
        loop {
            if self.counter >= self.domain {
                self.mixer = Mixer::new(self.bits, rng);
                self.counter = 0;
                self.passes += 1;
            }
            let v = self.mixer.apply(self.counter);
            self.counter += 1;
            if v < self.n {
                return v;
            }
        }
    }
}

/// Maximal-length feedback taps by register width (Xilinx XAPP052 table 3,
/// the table fio's lib/lfsr.c uses). Entry `w` lists the exponents of the
/// primitive polynomial x^w + ... + 1. fio's copies for 44 and 50 bits are
/// not primitive (44: 38,37; 50: 36,35); these are XAPP052's, checked by
/// `lfsr_taps_are_primitive_up_to_64_bits`.
const TAPS: [&[u32]; 65] = [
    &[],
    &[],
    &[2, 1],
    &[3, 2],
    &[4, 3],
    &[5, 3],
    &[6, 5],
    &[7, 6],
    &[8, 6, 5, 4],
    &[9, 5],
    &[10, 7],
    &[11, 9],
    &[12, 6, 4, 1],
    &[13, 4, 3, 1],
    &[14, 5, 3, 1],
    &[15, 14],
    &[16, 15, 13, 4],
    &[17, 14],
    &[18, 11],
    &[19, 6, 2, 1],
    &[20, 17],
    &[21, 19],
    &[22, 21],
    &[23, 18],
    &[24, 23, 22, 17],
    &[25, 22],
    &[26, 6, 2, 1],
    &[27, 5, 2, 1],
    &[28, 25],
    &[29, 27],
    &[30, 6, 4, 1],
    &[31, 28],
    &[32, 22, 2, 1],
    &[33, 20],
    &[34, 27, 2, 1],
    &[35, 33],
    &[36, 25],
    &[37, 5, 4, 3, 2, 1],
    &[38, 6, 5, 1],
    &[39, 35],
    &[40, 38, 21, 19],
    &[41, 38],
    &[42, 41, 20, 19],
    &[43, 42, 38, 37],
    &[44, 43, 18, 17],
    &[45, 44, 42, 41],
    &[46, 45, 26, 25],
    &[47, 42],
    &[48, 47, 21, 20],
    &[49, 40],
    &[50, 49, 24, 23],
    &[51, 50, 36, 35],
    &[52, 49],
    &[53, 52, 38, 37],
    &[54, 53, 18, 17],
    &[55, 31],
    &[56, 55, 35, 34],
    &[57, 50],
    &[58, 39],
    &[59, 58, 38, 37],
    &[60, 59],
    &[61, 60, 46, 45],
    &[62, 61, 6, 5],
    &[63, 62],
    &[64, 63, 61, 60],
];

/// Galois feedback mask for width `w`: bit `t-1` for every tap `t`. A
/// right-shifting Galois register with this mask multiplies the state by
/// x^-1 modulo the tap polynomial, so its period is that polynomial's order.
pub fn lfsr_mask(width: u32) -> u64 {
    TAPS[width as usize]
        .iter()
        .fold(0u64, |m, &t| m | (1u64 << (t - 1)))
}

#[inline]
pub fn lfsr_step(state: u64, mask: u64) -> u64 {
    (state >> 1) ^ (mask & (state & 1).wrapping_neg())
}

/// fio's `random_generator=lfsr`: a maximal-length Galois LFSR of the
/// smallest width whose 2^w - 1 nonzero states cover `n` values (state - 1 is
/// the value), skipping states beyond `n`. The first pass starts at a random
/// state, which rotates the (fixed) cycle, and every later pass starts there
/// too.
#[derive(Clone, Debug)]
pub struct LfsrWalker {
    state: u64,
    mask: u64,
    width: u32,
    n: u64,
    period: u64,
    steps: u64,
    /// Passes begun after the first.
    passes: u64,
    /// The first pass's starting state, where `repeat_pass` starts again.
    first_state: u64,
}

impl LfsrWalker {
    pub fn new(n: u64, rng: &mut impl RngCore) -> LfsrWalker {
        assert!(n > 0 && n < 1 << 63, "LfsrWalker domain 1..2^63");
        // Smallest w >= 2 with 2^w - 1 >= n.
        let width = (64 - n.leading_zeros()).max(2);
        let period = if width == 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        let mut w = LfsrWalker {
            state: 1,
            mask: lfsr_mask(width),
            width,
            n,
            period,
            steps: 0,
            passes: 0,
            first_state: 1,
        };
        // Any nonzero state lies on the single maximal cycle.
        w.first_state = 1 + rng.next_u64() % period;
        w.state = w.first_state;
        w
    }

    /// Start a new pass (a new loop, or the cycle used up) where the first
    /// began: fio resets the LFSR to the job's block-offset seed whenever
    /// it resets the file (`fio_file_reset` → `lfsr_reset`, at every open
    /// and every wrap; filesetup.c, io_u.c, fio 3.33), whatever
    /// `randrepeat` says.
    pub fn repeat_pass(&mut self) {
        self.state = self.first_state;
        self.steps = 0;
        self.passes += 1;
    }

    /// Passes begun after the first (the cycle was used up, or `repeat_pass`).
    pub fn passes(&self) -> u64 {
        self.passes
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    #[inline]
    pub fn next_value(&mut self) -> u64 {
        loop {
            if self.steps >= self.period {
                self.repeat_pass();
            }
            self.state = lfsr_step(self.state, self.mask);
            self.steps += 1;
            let v = self.state - 1;
            if v < self.n {
                return v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn rng(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    #[test]
    fn mixer_is_bijective_on_small_widths() {
        let mut r = rng(1);
        for bits in 1..=14 {
            let m = Mixer::new(bits, &mut r);
            let size = 1usize << bits;
            let mut seen = vec![false; size];
            for x in 0..size as u64 {
                let y = m.apply(x) as usize;
                assert!(y < size);
                assert!(!seen[y], "bits {bits}: collision at {y}");
                seen[y] = true;
            }
        }
    }

    #[test]
    fn apply_within_is_bijective() {
        let mut r = rng(2);
        for n in [1u64, 2, 3, 5, 17, 1000, 1025, 4095] {
            let m = Mixer::new(bits_for(n), &mut r);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = m.apply_within(x, n);
                assert!(y < n);
                assert!(!seen[y as usize]);
                seen[y as usize] = true;
            }
        }
    }

    fn check_passes(mut next: impl FnMut() -> u64, n: u64, passes: usize) -> Vec<Vec<u64>> {
        let mut orders = Vec::new();
        for _ in 0..passes {
            let mut seen = vec![false; n as usize];
            let mut order = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let v = next();
                assert!(v < n, "value {v} out of 0..{n}");
                assert!(!seen[v as usize], "value {v} repeated within a pass");
                seen[v as usize] = true;
                order.push(v);
            }
            orders.push(order);
        }
        orders
    }

    #[test]
    fn perm_walker_covers_every_value_once_per_pass() {
        for n in [1u64, 2, 3, 7, 1000, 1024, 1025] {
            let mut r = rng(n);
            let mut w = PermWalker::new(n, &mut r);
            let orders = check_passes(|| w.next(&mut r), n, 3);
            if n > 10 {
                assert_ne!(orders[0], orders[1], "passes should be reshuffled");
            }
        }
    }

    #[test]
    fn lfsr_walker_covers_every_value_once_per_pass() {
        for n in [1u64, 2, 3, 4, 7, 1000, 1023, 1024, 5000] {
            let mut r = rng(n + 7);
            let mut w = LfsrWalker::new(n, &mut r);
            let orders = check_passes(|| w.next_value(), n, 3);
            // fio resets the LFSR to the same seed at every wrap.
            assert_eq!(orders[0], orders[2], "n {n}");
        }
    }

    #[test]
    fn perm_walker_repeats_its_first_pass_on_request() {
        let n = 1000;
        let mut r = rng(3);
        let mut w = PermWalker::new(n, &mut r);
        let first: Vec<u64> = (0..n).map(|_| w.next(&mut r)).collect();
        w.new_pass();
        let fresh: Vec<u64> = (0..n).map(|_| w.next(&mut r)).collect();
        w.repeat_pass();
        let again: Vec<u64> = (0..n).map(|_| w.next(&mut r)).collect();
        assert_ne!(first, fresh);
        assert_eq!(first, again);
    }

    #[test]
    fn perm_walk_is_not_sequential() {
        // A good shuffle of 0..n rarely puts v+1 right after v.
        let n = 100_000;
        let mut r = rng(9);
        let mut w = PermWalker::new(n, &mut r);
        let mut prev = w.next(&mut r);
        let mut adjacent = 0;
        let mut ascending = 0;
        for _ in 1..n {
            let v = w.next(&mut r);
            if v == prev + 1 {
                adjacent += 1;
            }
            if v > prev {
                ascending += 1;
            }
            prev = v;
        }
        assert!(adjacent < 50, "adjacent {adjacent}");
        let frac = ascending as f64 / n as f64;
        assert!((frac - 0.5).abs() < 0.02, "ascending fraction {frac}");
    }

    #[test]
    fn lfsr_brute_force_period_small_widths() {
        for width in 2..=22u32 {
            let mask = lfsr_mask(width);
            let period = (1u64 << width) - 1;
            let mut s = 1u64;
            let mut steps = 0u64;
            loop {
                s = lfsr_step(s, mask);
                steps += 1;
                assert!(s != 0 && s <= period);
                if s == 1 {
                    break;
                }
                assert!(steps < period, "width {width}: no return to start");
            }
            assert_eq!(steps, period, "width {width} not maximal");
        }
    }

    // --- Primitivity of every tap polynomial up to 64 bits. -------------------
    // The register's period is the multiplicative order of x modulo the tap
    // polynomial P; it is maximal (2^w - 1) iff x^(2^w-1) = 1 and
    // x^((2^w-1)/q) != 1 for every prime q dividing 2^w - 1.

    fn poly(width: u32) -> u128 {
        // x^w + sum x^t (t < w) + 1
        let mut p = 1u128;
        for &t in TAPS[width as usize] {
            p |= 1u128 << t;
        }
        p
    }

    fn polymulmod(a: u64, b: u64, p: u128, w: u32) -> u64 {
        let mut prod = 0u128;
        for i in 0..64 {
            if (b >> i) & 1 == 1 {
                prod ^= (a as u128) << i;
            }
        }
        for i in (w..128).rev() {
            if (prod >> i) & 1 == 1 {
                prod ^= p << (i - w);
            }
        }
        prod as u64
    }

    fn polypow_x(e: u128, p: u128, w: u32) -> u64 {
        let mut result = 1u64;
        let mut base = 2u64; // x (w >= 2)
        let mut e = e;
        while e > 0 {
            if e & 1 == 1 {
                result = polymulmod(result, base, p, w);
            }
            base = polymulmod(base, base, p, w);
            e >>= 1;
        }
        result
    }

    fn mulmod(a: u64, b: u64, m: u64) -> u64 {
        ((a as u128 * b as u128) % m as u128) as u64
    }

    fn powmod(mut b: u64, mut e: u64, m: u64) -> u64 {
        let mut r = 1 % m;
        b %= m;
        while e > 0 {
            if e & 1 == 1 {
                r = mulmod(r, b, m);
            }
            b = mulmod(b, b, m);
            e >>= 1;
        }
        r
    }

    fn is_prime(n: u64) -> bool {
        if n < 2 {
            return false;
        }
        for p in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
            if n.is_multiple_of(p) {
                return n == p;
            }
        }
        let mut d = n - 1;
        let mut s = 0;
        while d.is_multiple_of(2) {
            d /= 2;
            s += 1;
        }
        'outer: for a in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
            let mut x = powmod(a, d, n);
            if x == 1 || x == n - 1 {
                continue;
            }
            for _ in 1..s {
                x = mulmod(x, x, n);
                if x == n - 1 {
                    continue 'outer;
                }
            }
            return false;
        }
        true
    }

    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }

    fn rho(n: u64) -> u64 {
        if n.is_multiple_of(2) {
            return 2;
        }
        for c in 1u64.. {
            let f = |x: u64| (mulmod(x, x, n) + c) % n;
            let (mut x, mut y, mut d) = (2u64, 2u64, 1u64);
            while d == 1 {
                x = f(x);
                y = f(f(y));
                d = gcd(x.abs_diff(y), n);
            }
            if d != n {
                return d;
            }
        }
        unreachable!()
    }

    fn factor(n: u64, out: &mut Vec<u64>) {
        if n == 1 {
            return;
        }
        if is_prime(n) {
            if !out.contains(&n) {
                out.push(n);
            }
            return;
        }
        let d = rho(n);
        factor(d, out);
        factor(n / d, out);
    }

    #[test]
    fn lfsr_taps_are_primitive_up_to_64_bits() {
        for width in 2..=64u32 {
            let p = poly(width);
            let order: u64 = if width == 64 {
                u64::MAX
            } else {
                (1u64 << width) - 1
            };
            assert_eq!(polypow_x(order as u128, p, width), 1, "width {width}");
            let mut primes = Vec::new();
            factor(order, &mut primes);
            for q in primes {
                assert_ne!(
                    polypow_x((order / q) as u128, p, width),
                    1,
                    "width {width}: order divides (2^w-1)/{q}"
                );
            }
        }
    }
}
