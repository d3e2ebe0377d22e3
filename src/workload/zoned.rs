//! fio's `random_distribution=zoned:` and `zoned_abs:` for one file and one
//! data direction (io_u.c `__get_next_rand_offset_zoned[_abs]`).
//!
//! A draw picks v uniformly in 1..=100; the zones own consecutive runs of
//! v values as long as their access percentages, so `access_pct` percent of
//! the I/Os go to a zone. Inside the zone the block is uniform, with
//! repeats: fio turns the random map off for every non-uniform
//! distribution. Zones follow each other from the start of the file:
//! - `zoned`: a zone spanning size percentages `[p0, p1)` starts at block
//!   `p0 * n / 100` and holds `n * (p1 - p0) / 100` blocks, where `n` is the
//!   number of possible block starts (fio's `last_block`);
//! - `zoned_abs`: a zone spanning bytes `[b0, b1)` covers blocks
//!   `b0 / ba .. b1 / ba`; fio fails the job when such a zone ends past the
//!   file, which is an error here too.
//!
//! A direction without zones (`zoned:60/10:40/90,` leaves writes and trims
//! without) draws uniformly over the whole file, as fio does.

use super::bs::uniform_below;
use crate::job::{RandomZone, SizeSpec};
use rand::RngCore;

#[derive(Clone, Debug)]
pub struct ZonedBlocks {
    /// `(first block, blocks)` per zone.
    zones: Vec<(u64, u64)>,
    /// Zone of each v = 1..=100 (fio's `zone_state_index`).
    pick: Box<[u16; 100]>,
}

impl ZonedBlocks {
    /// Zones over `n` possible block starts of `ba` bytes each.
    pub fn new(zones: &[RandomZone], n: u64, ba: u64) -> Result<ZonedBlocks, String> {
        if zones.is_empty() {
            return Ok(ZonedBlocks {
                zones: vec![(0, n)],
                pick: Box::new([0; 100]),
            });
        }
        let mut out = Vec::with_capacity(zones.len());
        let mut pick = Box::new([0u16; 100]);
        let mut v = 0usize;
        let (mut pct_prev, mut bytes_prev) = (0u64, 0u64);
        for (i, z) in zones.iter().enumerate() {
            let range = match z.region {
                SizeSpec::Percent(p) => {
                    let p = p.round() as u64;
                    let end = (pct_prev + p).min(100);
                    let start = pct_prev * n / 100;
                    let len = n * (end - pct_prev) / 100;
                    pct_prev = end;
                    (start, len)
                }
                SizeSpec::Bytes(b) => {
                    let end = bytes_prev.saturating_add(b);
                    let (first, last) = (bytes_prev / ba, end / ba);
                    if last > n && z.access_pct > 0 {
                        return Err(format!(
                            "zoned_abs zones end at byte {end}, past the end of the file \
                             ({} bytes of block starts)",
                            n * ba
                        ));
                    }
                    bytes_prev = end;
                    (first, last.saturating_sub(first))
                }
            };
            out.push(range);
            let a = z.access_pct as usize;
            if v + a > 100 {
                return Err("zone access percentages add up to more than 100".into());
            }
            for slot in &mut pick[v..v + a] {
                *slot = i as u16;
            }
            v += a;
        }
        if v != 100 {
            return Err(format!(
                "zone access percentages add up to {v}, expected 100"
            ));
        }
        Ok(ZonedBlocks { zones: out, pick })
    }

    /// A block start index.
    #[inline]
    pub fn next(&self, rng: &mut impl RngCore) -> u64 {
        let v = uniform_below(rng.next_u64(), 100) as usize;
        let (first, len) = self.zones[self.pick[v] as usize];
        // fio draws from an empty zone as from [0, 1): its first block.
        first + uniform_below(rng.next_u64(), len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn pct(a: u32, p: f64) -> RandomZone {
        RandomZone {
            access_pct: a,
            region: SizeSpec::Percent(p),
        }
    }

    #[test]
    fn percent_zones_follow_fios_arithmetic() {
        let z =
            ZonedBlocks::new(&[pct(60, 10.0), pct(30, 20.0), pct(10, 70.0)], 1001, 4096).unwrap();
        // 10% of 1001 blocks starts at 0 and holds 100; the next starts at
        // 10 * 1001 / 100 = 100 and holds 1001 * 20 / 100 = 200.
        assert_eq!(z.zones, vec![(0, 100), (100, 200), (300, 700)]);
        assert_eq!(z.pick[59], 0);
        assert_eq!(z.pick[60], 1);
        assert_eq!(z.pick[89], 1);
        assert_eq!(z.pick[90], 2);
    }

    #[test]
    fn abs_zones_and_errors() {
        let abs = |a, b| RandomZone {
            access_pct: a,
            region: SizeSpec::Bytes(b),
        };
        let z = ZonedBlocks::new(&[abs(70, 1 << 20), abs(30, 2 << 20)], 2048, 4096).unwrap();
        assert_eq!(z.zones, vec![(0, 256), (256, 512)]);
        assert!(ZonedBlocks::new(&[abs(70, 1 << 20), abs(30, 8 << 20)], 2048, 4096).is_err());
        // A zone past the end that is never chosen is harmless.
        assert!(ZonedBlocks::new(&[abs(100, 1 << 20), abs(0, 80 << 20)], 2048, 4096).is_ok());
    }

    #[test]
    fn empty_zone_list_is_uniform_and_draws_stay_in_range() {
        let z = ZonedBlocks::new(&[], 10, 4096).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            seen[z.next(&mut rng) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
        // Zero-length zones give their first block.
        let z = ZonedBlocks::new(&[pct(50, 0.0), pct(50, 100.0)], 50, 4096).unwrap();
        for _ in 0..1000 {
            assert!(z.next(&mut rng) < 50);
        }
    }
}
