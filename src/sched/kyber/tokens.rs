//! A kyber domain's tokens: the kernel's `sbitmap_queue` as kyber uses it
//! (lib/sbitmap.c, v6.17), small enough to model bit for bit.
//!
//! - The bitmap is split into words of `1 << shift` bits, the shift chosen at
//!   init so that there are at least 4 words (`sbitmap_calculate_shift`).
//!   kyber's depths (256, 128, 64, 16) are powers of two, so every domain
//!   has exactly 4 words, and a resize never needs more.
//! - `get` starts at the word of the calling CPU's allocation hint and takes
//!   the first free bit below the current depth (`__sbitmap_get` without
//!   round robin: the hint picks the word only). Hints start at random
//!   positions (`init_alloc_hint`); a freed bit becomes the freeing CPU's
//!   hint (`sbitmap_update_cpu_hint`).
//! - `resize` changes the depth only: bits held above the new depth stay
//!   held until freed and do not block allocations below it (pitfall: a
//!   count of tokens in use is not the same thing).
//! - Waiters and wake-ups (`sbitmap_queue_wake_up`, v6.2+): while anyone
//!   waits, frees are counted; every `wake_batch` frees
//!   (`clamp(depth / 8, 1, 8)`) one wake-up walks the 8 wait queues. kyber's
//!   wait entries are added with `add_wait_queue` (not exclusive), so a
//!   wake-up wakes every one of them (pitfall: not one waiter per free).

use crate::block::sbitmap::{self, ShallowRule, WakeBatch};

/// SBQ_WAIT_QUEUES: the bitmap's wait queues (block/sbitmap.rs).
pub const WAIT_QUEUES: usize = sbitmap::SBQ_WAIT_QUEUES;
/// Words per bitmap: kyber's depths give exactly 4 (see the module notes).
const WORDS: usize = 4;

/// `sbq_calc_wake_batch` with no shallow user (`min_shallow_depth` is
/// UINT_MAX for kyber's token maps): `clamp(depth / 8, 1, 8)`.
fn wake_batch(depth: u32) -> u32 {
    WakeBatch::new(
        depth,
        sbitmap::word_shift(depth),
        ShallowRule::WholeMap,
        u32::MAX,
    )
    .batch()
}

/// One domain's `sbitmap_queue`.
#[derive(Clone, Debug)]
pub struct TokenPool {
    depth: u32,
    shift: u32,
    words: [u64; WORDS],
    held: u32,
    /// Per-CPU allocation hints (`sb->alloc_hint`).
    hints: Vec<u32>,
    /// `get_random_u32_below` for hints, from a fixed seed (deterministic).
    rng: u64,
    wake_batch: u32,
    completion_cnt: u32,
    wakeup_cnt: u32,
    wake_index: usize,
    /// The 8 wait queues: waiting hardware queues, FIFO.
    waitqs: [Vec<u16>; WAIT_QUEUES],
    ws_active: u32,
}

impl TokenPool {
    /// `sbitmap_queue_init_node(depth, shift = -1, round_robin = false)`.
    pub fn new(depth: u32, nr_cpus: usize, seed: u64) -> TokenPool {
        let depth = depth.clamp(1, (WORDS as u32) << 6);
        let shift = sbitmap::word_shift(depth);
        let mut p = TokenPool {
            depth,
            shift,
            words: [0; WORDS],
            held: 0,
            hints: Vec::with_capacity(nr_cpus.max(1)),
            rng: seed | 1,
            wake_batch: wake_batch(depth),
            completion_cnt: 0,
            wakeup_cnt: 0,
            wake_index: 0,
            waitqs: Default::default(),
            ws_active: 0,
        };
        for _ in 0..nr_cpus.max(1) {
            let h = p.random_below(depth);
            p.hints.push(h);
        }
        p
    }

    fn random_below(&mut self, n: u32) -> u32 {
        // xorshift64*: any fixed, seeded generator will do for hints.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        let x = self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (((x >> 32) * n as u64) >> 32) as u32
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }
    /// Tokens held (also those above a depth that shrank).
    pub fn held(&self) -> u32 {
        self.held
    }
    pub fn wake_batch(&self) -> u32 {
        self.wake_batch
    }
    /// Hardware queues on the wait queues (`ws_active`).
    pub fn waiters(&self) -> u32 {
        self.ws_active
    }

    fn bits_per_word(&self) -> u32 {
        1 << self.shift
    }

    /// Bits of word `index` usable at the current depth (`__map_depth`).
    fn word_depth(&self, index: usize) -> u32 {
        let bpw = self.bits_per_word();
        let start = index as u32 * bpw;
        self.depth.saturating_sub(start).min(bpw)
    }

    fn map_nr(&self) -> usize {
        self.depth.div_ceil(self.bits_per_word()) as usize
    }

    /// `__sbitmap_queue_get` on `cpu`: a token number, or None.
    pub fn get(&mut self, cpu: u16) -> Option<u32> {
        let cpu = cpu as usize % self.hints.len();
        // update_alloc_hint_before_get: a hint beyond the depth is redrawn.
        let mut hint = self.hints[cpu];
        if hint >= self.depth {
            hint = self.random_below(self.depth);
            self.hints[cpu] = hint;
        }
        let map_nr = self.map_nr();
        let mut index = (hint >> self.shift) as usize;
        let mut got = None;
        for _ in 0..map_nr {
            let d = self.word_depth(index);
            let free = !self.words[index] & low_bits(d);
            if free != 0 {
                let bit = free.trailing_zeros();
                self.words[index] |= 1 << bit;
                got = Some(((index as u32) << self.shift) + bit);
                break;
            }
            index += 1;
            if index >= map_nr {
                index = 0;
            }
        }
        self.hints[cpu] = sbitmap::hint_after_get(self.hints[cpu], hint, got, self.depth);
        if got.is_some() {
            self.held += 1;
        }
        got
    }

    /// `sbitmap_queue_clear(nr, cpu)`: free token `nr`; returns the hardware
    /// queues a wake-up released (each is to be run, `kyber_domain_wake`).
    pub fn clear(&mut self, nr: u32, cpu: u16, woken: &mut Vec<u16>) {
        let index = (nr >> self.shift) as usize;
        let bit = nr & (self.bits_per_word() - 1);
        if index >= WORDS || self.words[index] & (1 << bit) == 0 {
            debug_assert!(false, "token {nr} freed but not held");
            return;
        }
        self.words[index] &= !(1 << bit);
        self.held -= 1;
        self.wake_up(woken);
        if nr < self.depth {
            let c = cpu as usize % self.hints.len();
            self.hints[c] = nr;
        }
    }

    /// `sbitmap_queue_wake_up(sbq, 1)`.
    fn wake_up(&mut self, woken: &mut Vec<u16>) {
        if self.ws_active == 0 {
            return;
        }
        self.completion_cnt = self.completion_cnt.wrapping_add(1);
        if self.completion_cnt.wrapping_sub(self.wakeup_cnt) < self.wake_batch {
            return;
        }
        self.wakeup_cnt = self.wakeup_cnt.wrapping_add(self.wake_batch);
        // __sbitmap_queue_wake_up: every queue from wake_index on; none of
        // kyber's entries is exclusive, so all are woken and the index
        // comes back to where it started.
        for i in 0..WAIT_QUEUES {
            let ws = (self.wake_index + i) % WAIT_QUEUES;
            for h in self.waitqs[ws].drain(..) {
                self.ws_active -= 1;
                woken.push(h);
            }
        }
    }

    /// `sbitmap_add_wait_queue` on wait queue `ws`.
    pub fn add_waiter(&mut self, ws: usize, hctx: u16) {
        self.waitqs[ws % WAIT_QUEUES].push(hctx);
        self.ws_active += 1;
    }

    /// `sbitmap_del_wait_queue`: false if it was no longer waiting (a
    /// wake-up took it off first).
    pub fn del_waiter(&mut self, ws: usize, hctx: u16) -> bool {
        let q = &mut self.waitqs[ws % WAIT_QUEUES];
        match q.iter().position(|&h| h == hctx) {
            Some(i) => {
                q.remove(i);
                self.ws_active -= 1;
                true
            }
            None => false,
        }
    }

    /// Whether `hctx` is on wait queue `ws`.
    pub fn is_waiting(&self, ws: usize, hctx: u16) -> bool {
        self.waitqs[ws % WAIT_QUEUES].contains(&hctx)
    }

    /// `sbitmap_queue_resize`: new wake batch, new depth; held bits stay.
    pub fn resize(&mut self, depth: u32) {
        let depth = depth.clamp(1, (WORDS as u32) << self.shift);
        self.wake_batch = wake_batch(depth);
        self.depth = depth;
    }
}

fn low_bits(n: u32) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shifts_give_four_words_for_kyber_depths() {
        for (d, s) in [(256, 6), (128, 5), (64, 4), (16, 2), (2, 6)] {
            assert_eq!(sbitmap::word_shift(d), s, "depth {d}");
        }
        assert_eq!(wake_batch(256), 8);
        assert_eq!(wake_batch(16), 2);
        assert_eq!(wake_batch(4), 1);
    }

    #[test]
    fn depth_bounds_allocation_and_held_bits_survive_a_shrink() {
        let mut p = TokenPool::new(16, 1, 7);
        let got: Vec<u32> = std::iter::from_fn(|| p.get(0)).collect();
        assert_eq!(got.len(), 16);
        let mut sorted = got.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 16, "distinct tokens");
        // Shrink to 4 (one word of 4 bits): every bit below 4 is held, so
        // nothing can be had until one of them is freed.
        p.resize(4);
        assert_eq!(p.get(0), None);
        let mut woken = Vec::new();
        p.clear(12, 0, &mut woken);
        assert_eq!(p.get(0), None, "a bit above the depth does not help");
        p.clear(2, 0, &mut woken);
        assert_eq!(p.get(0), Some(2));
        assert_eq!(p.held(), 15);
    }

    #[test]
    fn bits_above_a_shrunk_depth_do_not_block() {
        let mut p = TokenPool::new(16, 1, 3);
        let mut held = Vec::new();
        while let Some(t) = p.get(0) {
            held.push(t);
        }
        let mut woken = Vec::new();
        for &t in &held {
            if t < 8 {
                p.clear(t, 0, &mut woken);
            }
        }
        p.resize(4);
        // Eight tokens (8..16) are still held, more than the depth, yet the
        // four bits below it are free.
        assert_eq!(p.held(), 8);
        for _ in 0..4 {
            assert!(p.get(0).is_some_and(|t| t < 4));
        }
        assert_eq!(p.get(0), None);
    }

    #[test]
    fn waiters_wake_together_every_wake_batch_frees() {
        let mut p = TokenPool::new(64, 2, 1); // wake batch 8
        let held: Vec<u32> = std::iter::from_fn(|| p.get(1)).collect();
        assert_eq!(held.len(), 64);
        p.add_waiter(0, 3);
        p.add_waiter(5, 4);
        let mut woken = Vec::new();
        for (i, &t) in held.iter().take(8).enumerate() {
            p.clear(t, 0, &mut woken);
            if i < 7 {
                assert!(woken.is_empty(), "woken after {} frees", i + 1);
            }
        }
        assert_eq!(woken, vec![3, 4], "all non-exclusive waiters at once");
        assert_eq!(p.waiters(), 0);
        // Frees with nobody waiting are not counted.
        woken.clear();
        for &t in held.iter().skip(8).take(20) {
            p.clear(t, 0, &mut woken);
        }
        p.add_waiter(1, 9);
        p.clear(held[30], 0, &mut woken);
        assert!(woken.is_empty());
    }

    #[test]
    fn freed_bit_becomes_the_cpu_hint() {
        let mut p = TokenPool::new(256, 1, 5);
        let a = p.get(0).unwrap();
        let b = p.get(0).unwrap();
        let mut w = Vec::new();
        p.clear(a, 0, &mut w);
        p.clear(b, 0, &mut w);
        // The hint now points at b's word; the first free bit there is taken.
        let c = p.get(0).unwrap();
        assert_eq!(c >> 6, b >> 6);
    }
}
