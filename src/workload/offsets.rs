//! Random block choice within one file: fio's random map (every block once per
//! pass), `norandommap` (uniform with repeats) and the skewed distributions.

use super::bs::uniform_below;
use super::dist::{Normal, Pareto, Zipf};
use super::permute::{bits_for, LfsrWalker, Mixer, PermWalker};
use super::usedmap::UsedMap;
use crate::job::{JobSpec, RandomDistribution, RandomGenerator};
use rand::RngCore;

#[derive(Clone, Debug)]
enum Source {
    /// tausworthe(64) with the random map: keyed permutation walk.
    Perm(PermWalker),
    /// random_generator=lfsr: never repeats within a pass, map or not.
    Lfsr(LfsrWalker),
    /// norandommap: independent uniform draws.
    Uniform,
    Zipf(Zipf, Scatter),
    Pareto(Pareto, Scatter),
    Normal(Normal),
}

/// Spreads popularity ranks over the blocks, as fio's `__hash_u64(rank) +
/// rand_off` does. We use a keyed bijection so every rank keeps its own block
/// (fio's multiplicative hash modulo n can fold two ranks onto one block),
/// then rotate by fio's `rand_off` (random, or `center · n`).
#[derive(Clone, Debug)]
struct Scatter {
    mixer: Mixer,
    rot: u64,
}

impl Scatter {
    fn new(n: u64, center: Option<f64>, rng: &mut impl RngCore) -> Scatter {
        let mixer = Mixer::new(bits_for(n), rng);
        let rot = match center {
            Some(c) => ((n as f64 * c.clamp(0.0, 1.0)) as u64).min(n - 1),
            None => uniform_below(rng.next_u64(), n),
        };
        Scatter { mixer, rot }
    }

    #[inline]
    fn place(&self, rank: u64, n: u64) -> u64 {
        let b = self.mixer.apply_within(rank, n) + self.rot;
        if b >= n {
            b - n
        } else {
            b
        }
    }
}

/// Picks blocks `0..n` of one file for random I/O.
#[derive(Clone, Debug)]
pub struct RandomBlocks {
    n: u64,
    src: Source,
    /// fio's random map, kept only where it changes the I/O: the
    /// permutation walk with sizes that vary (see `usedmap.rs`).
    used: Option<UsedMap>,
    /// Blocks drawn this pass, which tells when a walk without `used` has
    /// given every block once.
    drawn: u64,
}

impl RandomBlocks {
    /// `varied`: the I/O sizes drawn with these blocks vary, so one I/O may
    /// cover several blocks.
    pub fn new(
        n: u64,
        spec: &JobSpec,
        varied: bool,
        rng: &mut impl RngCore,
    ) -> Result<RandomBlocks, String> {
        debug_assert!(n > 0);
        let src = match spec.random_distribution {
            RandomDistribution::Random => match spec.random_generator {
                RandomGenerator::Lfsr => Source::Lfsr(LfsrWalker::new(n, rng)),
                _ if spec.norandommap => Source::Uniform,
                _ => Source::Perm(PermWalker::new(n, rng)),
            },
            RandomDistribution::Zipf { theta, center } => {
                if !(theta > 0.0 && theta.is_finite()) {
                    return Err(format!("zipf theta must be > 0, got {theta}"));
                }
                Source::Zipf(Zipf::new(n, theta), Scatter::new(n, center, rng))
            }
            RandomDistribution::Pareto { h, center } => {
                if !(h > 0.0 && h < 1.0) {
                    return Err(format!("pareto h must be between 0 and 1, got {h}"));
                }
                Source::Pareto(Pareto::new(n, h), Scatter::new(n, center, rng))
            }
            RandomDistribution::Normal { sigma_pct, center } => {
                if !(sigma_pct >= 0.0 && sigma_pct.is_finite()) {
                    return Err(format!("normal deviation must be >= 0, got {sigma_pct}"));
                }
                Source::Normal(Normal::new(n, sigma_pct, center))
            }
        };
        let used = (varied && matches!(src, Source::Perm(_))).then(|| UsedMap::new(n));
        Ok(RandomBlocks {
            n,
            src,
            used,
            drawn: 0,
        })
    }

    /// Forget which blocks this pass has hit (a new loop, or a wrap). With
    /// `repeat` the pass draws the first pass's blocks again (a new loop
    /// with `randrepeat`; the caller restores the stream the draws come
    /// from); without it the walk gets new keys. An LFSR always starts
    /// where it first began (`LfsrWalker::repeat_pass`).
    pub fn start_pass(&mut self, repeat: bool) {
        match &mut self.src {
            Source::Perm(w) if repeat => w.repeat_pass(),
            Source::Perm(w) => w.new_pass(),
            Source::Lfsr(w) => w.repeat_pass(),
            _ => {}
        }
        if let Some(m) = &mut self.used {
            m.clear();
        }
        self.drawn = 0;
    }

    /// The random map has no free block left this pass: fio's
    /// `get_next_rand_offset` would fail. Never without a map.
    pub fn used_up(&self) -> bool {
        match (&self.src, &self.used) {
            (_, Some(m)) => m.is_full(),
            (Source::Perm(_) | Source::Lfsr(_), None) => self.drawn >= self.n,
            _ => false,
        }
    }

    pub fn blocks(&self) -> u64 {
        self.n
    }

    /// Passes begun after the first; always 0 without a random map (fio
    /// never runs out of offsets then, so it never starts a pass).
    pub fn passes(&self) -> u64 {
        match &self.src {
            Source::Perm(w) => w.passes(),
            Source::Lfsr(w) => w.passes(),
            _ => 0,
        }
    }

    #[inline(always)]
    pub fn next(&mut self, rng: &mut impl RngCore) -> u64 {
        if self.used.is_some() {
            return self.next_free(rng);
        }
        self.draw(rng)
    }

    /// With the random map: a full map starts a new pass (fio's
    /// `get_next_rand_block` resets the file; a byte-bounded pass has ended
    /// before that), and a pick on a done block moves to the next free one.
    #[cold]
    #[inline(never)]
    fn next_free(&mut self, rng: &mut impl RngCore) -> u64 {
        if self.used.as_ref().is_some_and(UsedMap::is_full) {
            self.start_pass(false);
        }
        // fio draws uniformly, with repeats, and a busy block moves the
        // pick to the next free one (get_next_rand_offset: random_map_free,
        // axmap_next_free); a walk that never repeats a draw lands on busy
        // blocks less often and gave 3% more, shorter I/Os than fio.
        self.drawn += 1;
        let b = uniform_below(rng.next_u64(), self.n);
        self.used.as_ref().and_then(|m| m.free_from(b)).unwrap_or(b)
    }

    /// fio's `mark_random_map`: an I/O of `blocks` blocks from `b` keeps
    /// only the free run it starts (returned); without the map, all of it.
    pub fn mark(&mut self, b: u64, blocks: u64) -> u64 {
        match &mut self.used {
            Some(m) => m.set_run(b, blocks),
            None => blocks,
        }
    }

    #[inline(always)]
    fn draw(&mut self, rng: &mut impl RngCore) -> u64 {
        self.drawn += 1;
        match &mut self.src {
            Source::Perm(w) => w.next(rng),
            Source::Lfsr(w) => w.next_value(),
            Source::Uniform => uniform_below(rng.next_u64(), self.n),
            Source::Zipf(z, s) => s.place(z.sample(rng), self.n),
            Source::Pareto(p, s) => s.place(p.sample(rng), self.n),
            Source::Normal(d) => d.sample(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn scatter_is_a_bijection() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let n = 777;
        let s = Scatter::new(n, None, &mut rng);
        let mut seen = vec![false; n as usize];
        for r in 0..n {
            let b = s.place(r, n) as usize;
            assert!(!seen[b]);
            seen[b] = true;
        }
    }

    #[test]
    fn hot_blocks_are_spread_out() {
        let mut spec = JobSpec::with_defaults("z");
        spec.random_distribution = RandomDistribution::Zipf {
            theta: 1.2,
            center: None,
        };
        let n = 100_000;
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut rb = RandomBlocks::new(n, &spec, false, &mut rng).unwrap();
        // The 100 hottest blocks should not sit in one corner.
        let mut counts = vec![0u32; n as usize];
        for _ in 0..200_000 {
            counts[rb.next(&mut rng) as usize] += 1;
        }
        let mut idx: Vec<usize> = (0..n as usize).collect();
        idx.sort_unstable_by_key(|&i| std::cmp::Reverse(counts[i]));
        let in_first_tenth = idx[..100].iter().filter(|&&i| i < n as usize / 10).count();
        assert!(
            in_first_tenth < 30,
            "{in_first_tenth} of the hottest 100 in the first 10%"
        );
    }

    #[test]
    fn bad_parameters_are_errors() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut spec = JobSpec::with_defaults("z");
        spec.random_distribution = RandomDistribution::Pareto {
            h: 1.5,
            center: None,
        };
        assert!(RandomBlocks::new(10, &spec, false, &mut rng).is_err());
        spec.random_distribution = RandomDistribution::Zipf {
            theta: 0.0,
            center: None,
        };
        assert!(RandomBlocks::new(10, &spec, false, &mut rng).is_err());
    }
}
