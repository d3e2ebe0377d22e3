//! Block size choice for one direction: `bs`, `bsrange`, `bssplit`.

use crate::job::BlockSizes;
use rand::RngCore;

/// Granularity of unaligned sizes: the block layer works in 512-byte sectors,
/// so `bs_unaligned` lengths are whole sectors rather than arbitrary bytes.
const SECTOR: u64 = 512;

#[derive(Clone, Debug)]
pub enum BsChooser {
    Fixed(u64),
    /// `min · k` for k uniform in 1..=max_mult (`gran` = min), or, unaligned,
    /// `min + gran · k` for k uniform in 0..=max_mult.
    Range {
        min: u64,
        gran: u64,
        max_mult: u64,
        unaligned: bool,
    },
    /// Weighted: `thresholds[i]` is the cumulative weight scaled to 2^32.
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
                Ok(if unaligned {
                    let gran = SECTOR.min(min);
                    BsChooser::Range {
                        min,
                        gran,
                        max_mult: (max - min) / gran,
                        unaligned: true,
                    }
                } else {
                    BsChooser::Range {
                        min,
                        gran: min,
                        max_mult: max / min,
                        unaligned: false,
                    }
                })
            }
            BlockSizes::Split(entries) => {
                let entries: Vec<(u64, u32)> =
                    entries.iter().copied().filter(|&(_, w)| w > 0).collect();
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
            BsChooser::Range {
                min,
                gran,
                max_mult,
                unaligned,
            } => {
                if *unaligned {
                    min + gran * max_mult
                } else {
                    gran * max_mult
                }
            }
            BsChooser::Split { desc, .. } => desc[0],
        }
    }

    /// A length of at most `room` bytes (`room >= self.min()`): a fresh draw,
    /// or the largest allowed size that fits when the draw would cross the
    /// end of the region.
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
                gran,
                max_mult,
                unaligned,
            } => {
                let r = rng.next_u64();
                if *unaligned {
                    let k = uniform_below(r, max_mult + 1);
                    let len = min + gran * k;
                    if len <= room {
                        len
                    } else {
                        min + (room - min) / gran * gran
                    }
                } else {
                    let k = 1 + uniform_below(r, *max_mult);
                    (gran * k).min(room / gran * gran)
                }
            }
            BsChooser::Split {
                sizes,
                thresholds,
                desc,
            } => {
                let r = rng.next_u64() >> 32;
                let mut len = sizes[sizes.len() - 1];
                for (i, &t) in thresholds.iter().enumerate() {
                    if r < t {
                        len = sizes[i];
                        break;
                    }
                }
                if len <= room {
                    len
                } else {
                    desc.iter()
                        .copied()
                        .find(|&s| s <= room)
                        .unwrap_or(desc[desc.len() - 1])
                }
            }
        }
    }
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
