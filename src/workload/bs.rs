//! Block size choice for one direction: `bs`, `bsrange`, `bssplit`.

use crate::job::BlockSizes;
use rand::RngCore;

/// Granularity of unaligned sizes: the block layer works in 512-byte sectors,
/// so `bs_unaligned` lengths are whole sectors rather than arbitrary bytes.
const SECTOR: u64 = 512;

#[derive(Clone, Debug)]
pub enum BsChooser {
    Fixed(u64),
    /// fio's `bsrange` draw (get_next_buflen, fio 3.33 io_u.c):
    /// `min + max · u` for u uniform in [0, 1), aligned down to a multiple
    /// of `min` (of a sector with `bs_unaligned`), then capped at `max`. So
    /// with `max` a multiple of `min` every multiple is equally likely; with
    /// `bsrange=4k-10k` 4k and 8k come 40% of the time each and 10k 20%.
    Range {
        min: u64,
        max: u64,
        unaligned: bool,
    },
    /// Weighted, entries in fio's order (by percentage, ascending: options.c
    /// sorts them with `bs_cmp`): `thresholds[i]` is the cumulative weight
    /// scaled to 2^32.
    Split {
        sizes: Vec<u64>,
        thresholds: Vec<u64>,
        /// Distinct sizes, largest first, for fitting into a short tail.
        desc: Vec<u64>,
    },
}

impl BsChooser {
    pub fn new(bs: &BlockSizes, unaligned: bool) -> Result<BsChooser, String> {
        match bs {
            BlockSizes::Fixed(b) => {
                if *b == 0 {
                    return Err("block size 0".into());
                }
                Ok(BsChooser::Fixed(*b))
            }
            BlockSizes::Range { min, max } => {
                let (min, max) = (*min.min(max), *min.max(max));
                if min == 0 {
                    return Err("bsrange minimum 0".into());
                }
                if min == max {
                    return Ok(BsChooser::Fixed(min));
                }
                Ok(BsChooser::Range {
                    min,
                    max,
                    unaligned,
                })
            }
            BlockSizes::Split(entries) => {
                let mut entries: Vec<(u64, u32)> =
                    entries.iter().copied().filter(|&(_, w)| w > 0).collect();
                entries.sort_by_key(|&(_, w)| w);
                if entries.is_empty() {
                    return Err("bssplit has no entry with a weight".into());
                }
                let min = entries.iter().map(|e| e.0).min().unwrap_or(0);
                if min == 0 {
                    return Err("bssplit block size 0".into());
                }
                // fio aligns split sizes down to the smallest one unless
                // bs_unaligned (io_u.c get_next_buflen).
                let sizes: Vec<u64> = entries
                    .iter()
                    .map(|&(b, _)| if unaligned { b } else { b - b % min })
                    .collect();
                if sizes.len() == 1 {
                    return Ok(BsChooser::Fixed(sizes[0]));
                }
                let total: u64 = entries.iter().map(|e| e.1 as u64).sum();
                let mut acc = 0u64;
                let mut thresholds = Vec::with_capacity(sizes.len());
                for &(_, w) in &entries {
                    acc += w as u64;
                    thresholds.push((acc << 32) / total);
                }
                let mut desc = sizes.clone();
                desc.sort_unstable_by(|a, b| b.cmp(a));
                desc.dedup();
                Ok(BsChooser::Split {
                    sizes,
                    thresholds,
                    desc,
                })
            }
        }
    }

    pub fn min(&self) -> u64 {
        match self {
            BsChooser::Fixed(b) => *b,
            BsChooser::Range { min, .. } => *min,
            BsChooser::Split { desc, .. } => *desc.last().unwrap_or(&0),
        }
    }

    pub fn max(&self) -> u64 {
        match self {
            BsChooser::Fixed(b) => *b,
            BsChooser::Range { max, .. } => *max,
            BsChooser::Split { desc, .. } => desc[0],
        }
    }

    /// A length of at most `room` bytes (`room >= self.min()`). fio draws
    /// again while the length would cross the end of the region
    /// (`io_u_fits`); this draws once from what those redraws end in.
    #[inline(always)]
    pub fn pick(&self, rng: &mut impl RngCore, room: u64) -> u64 {
        // The common fixed size stays inline on the hot path.
        match self {
            BsChooser::Fixed(b) => *b,
            _ => self.pick_varied(rng, room),
        }
    }

    fn pick_varied(&self, rng: &mut impl RngCore, room: u64) -> u64 {
        match self {
            BsChooser::Fixed(b) => *b,
            BsChooser::Range {
                min,
                max,
                unaligned,
            } => range_pick(*min, *max, *unaligned, rng.next_u64(), room),
            BsChooser::Split {
                sizes,
                thresholds,
                desc,
            } => {
                // fio: the entry the draw falls in, or the first one after
                // it that fits; none fits: draw again.
                for _ in 0..SPLIT_REDRAWS {
                    let r = rng.next_u64() >> 32;
                    let first = thresholds
                        .iter()
                        .position(|&t| r < t)
                        .unwrap_or(sizes.len() - 1);
                    if let Some(&len) = sizes[first..].iter().find(|&&s| s <= room) {
                        return len;
                    }
                }
                desc.iter()
                    .copied()
                    .find(|&s| s <= room)
                    .unwrap_or(desc[desc.len() - 1])
            }
        }
    }
}

/// Draws of a `bssplit` size before the largest size that fits is taken
/// (only a short tail whose fitting sizes are rare gets near it).
const SPLIT_REDRAWS: u32 = 1000;

/// fio's `bsrange` length from 64 random bits `r`, at most `room` bytes.
/// Under `max` only lengths up to `room` are possible, and fio's redraws
/// leave them equally likely: a uniform draw among them.
#[inline]
fn range_pick(min: u64, max: u64, unaligned: bool, r: u64, room: u64) -> u64 {
    let gran = if unaligned { SECTOR.min(min) } else { min };
    let len = if room >= max {
        let x = min + uniform_below(r, max);
        if unaligned {
            min + (x - min) / gran * gran
        } else {
            x - x % min
        }
    } else if unaligned {
        min + uniform_below(r, (room - min) / gran + 1) * gran
    } else {
        min * (1 + uniform_below(r, room / min))
    };
    len.min(max)
}

/// Uniform integer in 0..n from 64 random bits (multiply-high; the bias is
/// below 2^-40 for any n a block count can reach).
#[inline]
pub fn uniform_below(r: u64, n: u64) -> u64 {
    ((r as u128 * n as u128) >> 64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn range_is_uniform_over_multiples() {
        let c = BsChooser::new(
            &BlockSizes::Range {
                min: 4096,
                max: 16384,
            },
            false,
        )
        .unwrap();
        assert_eq!((c.min(), c.max()), (4096, 16384));
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut counts = [0u32; 5];
        let n = 100_000;
        for _ in 0..n {
            let l = c.pick(&mut rng, u64::MAX);
            assert_eq!(l % 4096, 0);
            counts[(l / 4096) as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        for &k in &counts[1..] {
            let f = k as f64 / n as f64;
            assert!((f - 0.25).abs() < 0.01, "{counts:?}");
        }
        // Near the end only what fits.
        for _ in 0..100 {
            assert!(c.pick(&mut rng, 9000) <= 8192);
        }
    }

    #[test]
    fn range_with_a_max_off_the_grid_gets_the_max_as_fio_does() {
        // fio 3.33: min + max * u aligned down, then capped: bsrange=4k-10k
        // gives 4k and 8k 40% of the time each and 10k 20%.
        let c = BsChooser::new(
            &BlockSizes::Range {
                min: 4096,
                max: 10240,
            },
            false,
        )
        .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let n = 100_000;
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..n {
            *counts.entry(c.pick(&mut rng, u64::MAX)).or_insert(0u32) += 1;
        }
        let share = |len| counts.get(&len).copied().unwrap_or(0) as f64 / n as f64;
        assert_eq!(counts.len(), 3, "{counts:?}");
        assert!((share(4096) - 0.4).abs() < 0.01, "{counts:?}");
        assert!((share(8192) - 0.4).abs() < 0.01, "{counts:?}");
        assert!((share(10240) - 0.2).abs() < 0.01, "{counts:?}");
        // A 9k tail: fio's redraws leave 4k and 8k, equally likely.
        let tail: Vec<u64> = (0..1000).map(|_| c.pick(&mut rng, 9216)).collect();
        let fours = tail.iter().filter(|&&l| l == 4096).count();
        assert!(tail.iter().all(|&l| l == 4096 || l == 8192));
        assert!((400..600).contains(&fours), "{fours} of 1000");
    }

    #[test]
    fn split_tail_takes_the_next_entry_in_percentage_order() {
        // Sorted by percentage: 1m/20, 64k/30, 4k/50. In a 100k tail a draw
        // of 1m moves on to 64k, so 64k comes 50% of the time, 4k 50%.
        let c = BsChooser::new(
            &BlockSizes::Split(vec![(4096, 50), (65536, 30), (1 << 20, 20)]),
            false,
        )
        .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let big = (0..10_000)
            .filter(|_| c.pick(&mut rng, 100 * 1024) == 65536)
            .count();
        assert!((4800..5200).contains(&big), "{big} of 10000");
    }

    #[test]
    fn unaligned_range_uses_sectors() {
        let c = BsChooser::new(
            &BlockSizes::Range {
                min: 1024,
                max: 4096,
            },
            true,
        )
        .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..10_000 {
            let l = c.pick(&mut rng, u64::MAX);
            assert!((1024..=4096).contains(&l) && l.is_multiple_of(512));
            seen.insert(l);
        }
        assert_eq!(seen.len(), 7); // 1k, 1.5k, ..., 4k
    }

    #[test]
    fn split_proportions() {
        let c = BsChooser::new(
            &BlockSizes::Split(vec![(4096, 50), (8192, 30), (65536, 20)]),
            false,
        )
        .unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 200_000;
        let (mut a, mut b, mut d) = (0, 0, 0);
        for _ in 0..n {
            match c.pick(&mut rng, u64::MAX) {
                4096 => a += 1,
                8192 => b += 1,
                65536 => d += 1,
                other => panic!("size {other}"),
            }
        }
        let f = |x: i32| x as f64 / n as f64;
        assert!((f(a) - 0.5).abs() < 0.01);
        assert!((f(b) - 0.3).abs() < 0.01);
        assert!((f(d) - 0.2).abs() < 0.01);
        // A 12k tail fits 8k at most.
        for _ in 0..100 {
            assert!(c.pick(&mut rng, 12288) <= 8192);
        }
    }

    #[test]
    fn split_aligns_to_smallest_unless_unaligned() {
        let s = BlockSizes::Split(vec![(4096, 50), (6144, 50)]);
        let c = BsChooser::new(&s, false).unwrap();
        assert_eq!(c.max(), 4096);
        let c = BsChooser::new(&s, true).unwrap();
        assert_eq!(c.max(), 6144);
    }
}
