//! The blocks a random pass has done, for jobs whose I/O sizes vary
//! (`bsrange`, `bssplit`). fio keeps this bitmap (its axmap) for every random
//! job; with one size per job the keyed permutation of `permute.rs` already
//! gives each block once, but with varying sizes one I/O covers several
//! blocks, and fio then
//! - trims an I/O to the free run from its first block (`mark_random_map` in
//!   io_u.c: `axmap_set_nr` stops at the first block already done), and
//! - moves a pick that lands on a done block to the next free one
//!   (`axmap_next_free`, from the pick onwards, then from the start).
//!
//! Memory: the map is split in chunks of `CHUNK_BITS` blocks, each allocated
//! when a block in it is first set (an ordered map keyed by chunk number), so
//! a short run on a large device costs only what it touched, and a whole
//! pass at most about one bit per block, as fio's own map.

use std::collections::BTreeMap;

/// Blocks per chunk: 4096 bits, 512 bytes.
const CHUNK_WORDS: usize = 64;
const CHUNK_BITS: u64 = (CHUNK_WORDS * 64) as u64;

type Chunk = Box<[u64; CHUNK_WORDS]>;

#[derive(Clone, Debug)]
pub struct UsedMap {
    n: u64,
    used: u64,
    chunks: BTreeMap<u64, Chunk>,
}

impl UsedMap {
    pub fn new(n: u64) -> UsedMap {
        UsedMap {
            n,
            used: 0,
            chunks: BTreeMap::new(),
        }
    }

    pub fn is_full(&self) -> bool {
        self.used >= self.n
    }

    /// Forget every block (a new pass). Chunks stay allocated: the next pass
    /// touches them again.
    pub fn clear(&mut self) {
        for c in self.chunks.values_mut() {
            c.fill(0);
        }
        self.used = 0;
    }

    #[inline]
    fn is_set(&self, b: u64) -> bool {
        match self.chunks.get(&(b / CHUNK_BITS)) {
            None => false,
            Some(c) => {
                let i = b % CHUNK_BITS;
                c[(i / 64) as usize] >> (i % 64) & 1 == 1
            }
        }
    }

    /// The first free block at or after `b`, else the first from the start
    /// (None only when the map is full).
    pub fn free_from(&self, b: u64) -> Option<u64> {
        if self.is_full() {
            return None;
        }
        if !self.is_set(b) {
            return Some(b);
        }
        self.first_free_in(b + 1, self.n)
            .or_else(|| self.first_free_in(0, b))
    }

    /// The first free block in `[from, to)`.
    fn first_free_in(&self, from: u64, to: u64) -> Option<u64> {
        let mut b = from;
        while b < to {
            let Some(c) = self.chunks.get(&(b / CHUNK_BITS)) else {
                return Some(b);
            };
            let i = b % CHUNK_BITS;
            let (w, bit) = ((i / 64) as usize, i % 64);
            // Free bits of this word at or above `bit`.
            let free = !c[w] & (u64::MAX << bit);
            if free != 0 {
                let found = b - bit + u64::from(free.trailing_zeros());
                return (found < to).then_some(found);
            }
            b = b - bit + 64;
        }
        None
    }

    /// Set up to `want` blocks from `b` (which is free), stopping at the
    /// first block already set or the end; returns how many were set.
    pub fn set_run(&mut self, b: u64, want: u64) -> u64 {
        debug_assert!(!self.is_set(b));
        let end = b.saturating_add(want.max(1)).min(self.n);
        let mut k = b;
        'chunks: while k < end {
            let chunk = self
                .chunks
                .entry(k / CHUNK_BITS)
                .or_insert_with(|| Box::new([0; CHUNK_WORDS]));
            let chunk_end = (k / CHUNK_BITS + 1) * CHUNK_BITS;
            while k < end.min(chunk_end) {
                let i = k % CHUNK_BITS;
                let (w, bit) = ((i / 64) as usize, i % 64);
                if chunk[w] >> bit & 1 == 1 {
                    break 'chunks;
                }
                chunk[w] |= 1 << bit;
                k += 1;
            }
        }
        self.used += k - b;
        k - b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Against a plain vector of flags: random runs and picks over a map
    /// spanning several chunks, until it is full, twice (with a clear).
    #[test]
    fn agrees_with_a_plain_reference() {
        let n = 3 * CHUNK_BITS + 77;
        let mut map = UsedMap::new(n);
        let mut plain = vec![false; n as usize];
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for _pass in 0..2 {
            while !map.is_full() {
                let pick = rng.gen_range(0..n);
                let want_free = (pick..n).chain(0..pick).find(|&k| !plain[k as usize]);
                let b = map.free_from(pick);
                assert_eq!(b, want_free);
                let b = b.unwrap();
                let want = rng.gen_range(1..40);
                let mut run = 0;
                while run < want && b + run < n && !plain[(b + run) as usize] {
                    plain[(b + run) as usize] = true;
                    run += 1;
                }
                assert_eq!(map.set_run(b, want), run);
            }
            assert!(plain.iter().all(|&x| x));
            assert_eq!(map.free_from(0), None);
            map.clear();
            plain.fill(false);
        }
    }

    #[test]
    fn only_touched_chunks_take_memory() {
        let mut map = UsedMap::new(1 << 40);
        assert_eq!(map.free_from(12345), Some(12345));
        assert_eq!(map.set_run(CHUNK_BITS - 2, 5), 5);
        assert_eq!(map.chunks.len(), 2);
        assert_eq!(map.free_from(CHUNK_BITS - 2), Some(CHUNK_BITS + 3));
    }
}
