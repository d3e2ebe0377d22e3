//! Scheduler tags as the kernel hands them out: a scalable bitmap
//! (lib/sbitmap.c, v6.17; `struct sbitmap_queue` of `hctx->sched_tags`).
//!
//! Which tag a request gets matters only where a scheduler limits the depth
//! of an allocation (`limit_depth`): the limit is not a count of busy tags
//! but a number of bits the allocation may look at, so two allocations
//! with the same limit compete for the same few tags. BFQ's per-cgroup cap
//! gives a group over its share a depth of 1, which since v6.17 is tag 0 of
//! the whole queue: every capped group queues for that one tag (README,
//! "BFQ against the real kernel").
//!
//! What the model keeps, and why:
//! - Words of `1 << shift` bits, `shift` from `sbitmap_calculate_shift`
//!   (at least four words when the depth allows).
//! - Per-CPU allocation hints: a search starts at its CPU's hint, a free
//!   sets the freeing request's CPU's hint to the freed tag
//!   (`sbitmap_update_cpu_hint`), a search that took exactly its hint moves
//!   the hint one on (`update_alloc_hint_after_get`).
//! - Deferred clearing: a freed bit goes to the word's `cleared` mask and
//!   only returns to the word when a search of that word finds nothing
//!   (`sbitmap_deferred_clear`). So a just-freed tag is not taken again
//!   while its word has other free bits.
//! - Shallow depth by era: before v6.17 it bounds the bits searched in
//!   every word (`min(shallow, word depth)`); from v6.17 it is a share of
//!   the whole map split over the words, the remainder to the first words
//!   (`__map_depth_with_shallow`, commit "lib/sbitmap: convert
//!   shallow_depth from one word to the whole sbitmap").
//! - Wake batching (`sbq_calc_wake_batch`, `sbitmap_queue_wake_up`):
//!   sleepers are woken `wake_batch` at a time, once that many tags were
//!   freed while someone slept.
//!
//! Pitfall: the kernel's initial hints are random per CPU
//! (`init_alloc_hint`); the model uses a fixed pseudo-random spread of the
//! CPU number so that runs need no seed here.

/// BITS_PER_LONG on the 64-bit machines modelled.
const BITS_PER_WORD_LOG2: u32 = 6;
/// SBQ_WAIT_QUEUES and SBQ_WAKE_BATCH (include/linux/sbitmap.h).
pub const SBQ_WAIT_QUEUES: usize = 8;
const SBQ_WAKE_BATCH: u32 = 8;

/// How a shallow depth limits a search (see the module header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShallowRule {
    /// Before v6.17: at most `shallow` bits of every word.
    PerWord,
    /// v6.17 on: `shallow` bits of the whole map.
    WholeMap,
}

/// `update_alloc_hint_after_get`: the CPU's next hint after a get that
/// started at `hint` found `found` (`current` is the hint now). A failed
/// search resets it to 0; a get that took the hint itself moves it on by
/// one (back to 0 at the end of the map); any other bit leaves it.
#[inline]
pub fn hint_after_get(current: u32, hint: u32, found: Option<u32>, depth: u32) -> u32 {
    match found {
        None => 0,
        Some(tag) if tag == hint => {
            let next = tag + 1;
            if next >= depth.saturating_sub(1) {
                0
            } else {
                next
            }
        }
        Some(_) => current,
    }
}

/// `sbitmap_calculate_shift`: 64-bit words, narrowed until the map has at
/// least four words (maps under 4 bits keep one word).
pub fn word_shift(depth: u32) -> u32 {
    let mut shift = BITS_PER_WORD_LOG2;
    if depth >= 4 {
        while (4u32 << shift) > depth {
            shift -= 1;
        }
    }
    shift
}

/// One hardware queue's scheduler tags.
#[derive(Clone, Debug)]
pub struct TagMap {
    depth: u32,
    shift: u32,
    /// Bits taken (a freed bit stays set until folded back from `cleared`).
    words: Vec<u64>,
    /// Bits freed but not yet folded back (`sbitmap_word.cleared`).
    cleared: Vec<u64>,
    /// Per-CPU allocation hints (`sb->alloc_hint`).
    hints: Vec<u32>,
    rule: ShallowRule,
    busy: u32,
}

/// Who wakes when tags are freed (`sbitmap_queue_wake_up`): frees count
/// only while someone sleeps (`ws_active`), and every `batch` of them wakes
/// that many sleepers.
#[derive(Clone, Copy, Debug)]
pub struct WakeBatch {
    batch: u32,
    /// Frees counted since the last batch woke (`completion_cnt -
    /// wakeup_cnt`).
    frees: u32,
}

impl WakeBatch {
    /// `sbq_calc_wake_batch` for a map of `depth` tags in words of
    /// `1 << shift` bits whose shallowest allocation may use `min_shallow`:
    /// an eighth of what that allocation may use, between 1 and 8. Before
    /// v6.17 that is counted per word (`min(bits per word, min_shallow)` in
    /// each full word plus the partial one); from v6.17 it is
    /// `min(depth, min_shallow)`.
    pub fn new(depth: u32, shift: u32, rule: ShallowRule, min_shallow: u32) -> WakeBatch {
        let usable = match rule {
            ShallowRule::WholeMap => depth.min(min_shallow),
            ShallowRule::PerWord => {
                let per_word = (1u32 << shift).min(min_shallow);
                (depth >> shift) * per_word + (depth & ((1 << shift) - 1)).min(per_word)
            }
        };
        WakeBatch {
            batch: (usable / SBQ_WAIT_QUEUES as u32).clamp(1, SBQ_WAKE_BATCH),
            frees: 0,
        }
    }

    pub fn batch(&self) -> u32 {
        self.batch
    }

    /// Frees counted towards the next batch.
    pub fn frees_counted(&self) -> u32 {
        self.frees
    }

    /// A tag was freed while `sleepers` tasks sleep for one: how many of
    /// them to wake now.
    pub fn on_free(&mut self, sleepers: usize) -> usize {
        if sleepers == 0 {
            return 0;
        }
        self.frees += 1;
        if self.frees < self.batch {
            return 0;
        }
        self.frees -= self.batch;
        (self.batch as usize).min(sleepers)
    }
}

impl TagMap {
    /// A map of `depth` tags whose words are sized for `alloc_depth` (the
    /// depth the kernel allocated the map with: a later smaller
    /// `nr_requests` resizes it and keeps the word size), for `nr_cpus`
    /// CPUs.
    pub fn new(depth: u32, alloc_depth: u32, nr_cpus: usize, rule: ShallowRule) -> TagMap {
        let depth = depth.max(1);
        let shift = word_shift(alloc_depth.max(depth));
        let nr_words = depth.div_ceil(1 << shift) as usize;
        let hints = (0..nr_cpus.max(1))
            .map(|cpu| (spread(cpu as u64) % u64::from(depth)) as u32)
            .collect();
        TagMap {
            depth,
            shift,
            words: vec![0; nr_words],
            cleared: vec![0; nr_words],
            hints,
            rule,
            busy: 0,
        }
    }

    /// Tags allocated and not yet freed.
    pub fn busy(&self) -> u32 {
        self.busy
    }
    pub fn bits_per_word(&self) -> u32 {
        1 << self.shift
    }
    /// The wake batch of this map for a scheduler whose shallowest
    /// allocation may use `min_shallow` tags.
    pub fn wake_batch(&self, min_shallow: u32) -> WakeBatch {
        WakeBatch::new(self.depth, self.shift, self.rule, min_shallow)
    }

    /// `__map_depth`: the last word may be partial.
    fn map_depth(&self, index: usize) -> u32 {
        if index + 1 == self.words.len() {
            self.depth - ((index as u32) << self.shift)
        } else {
            1 << self.shift
        }
    }

    /// The bits of word `index` a search with `shallow` may use.
    fn usable_bits(&self, index: usize, shallow: u32) -> u32 {
        let word_depth = self.map_depth(index);
        if shallow >= self.depth {
            return word_depth;
        }
        match self.rule {
            ShallowRule::PerWord => word_depth.min(shallow),
            ShallowRule::WholeMap => {
                // __map_depth_with_shallow: the word's share of `shallow`,
                // plus one while the remainder covers the words before it.
                let share = u64::from(word_depth) * u64::from(shallow);
                let depth = u64::from(self.depth);
                let extra = share % depth >= (index as u64 + 1) * u64::from(word_depth);
                (share / depth) as u32 + u32::from(extra)
            }
        }
    }

    /// `sbitmap_queue_get` / `sbitmap_queue_get_shallow` on `cpu` (below
    /// the map's CPU count): a free tag within `shallow` (None: the full
    /// depth), or None if every usable bit is taken.
    #[inline]
    pub fn get(&mut self, cpu: usize, shallow: Option<u32>) -> Option<u32> {
        // A full-depth get uses the hint to pick the word only and searches
        // it from bit 0 (`__sbitmap_get` without round robin); a shallow one
        // starts at the hint's bit and wraps (`__sbitmap_get_shallow`).
        let from_hint_bit = shallow.is_some();
        let shallow = shallow.unwrap_or(self.depth);
        // update_alloc_hint_before_get (a hint past a shrunk depth).
        let mut hint = self.hints[cpu];
        if hint >= self.depth {
            hint = (spread(u64::from(hint) ^ cpu as u64) % u64::from(self.depth)) as u32;
            self.hints[cpu] = hint;
        }
        let found = self.find_bit(shallow, hint, from_hint_bit);
        self.hints[cpu] = hint_after_get(self.hints[cpu], hint, found, self.depth);
        if found.is_some() {
            self.busy += 1;
        }
        found
    }

    /// `sbitmap_find_bit`: from the hint's word (and bit, if
    /// `from_hint_bit`), then every other word from its first bit, in order.
    fn find_bit(&mut self, shallow: u32, hint: u32, from_hint_bit: bool) -> Option<u32> {
        let nr_words = self.words.len();
        let mut index = (hint >> self.shift) as usize;
        let mut bit = if from_hint_bit {
            hint & ((1 << self.shift) - 1)
        } else {
            0
        };
        for _ in 0..nr_words {
            let usable = self.usable_bits(index, shallow);
            if usable != 0 {
                if let Some(nr) = self.find_in_word(index, usable, bit) {
                    return Some(((index as u32) << self.shift) + nr);
                }
            }
            bit = 0;
            index += 1;
            if index == nr_words {
                index = 0;
            }
        }
        None
    }

    /// `sbitmap_find_bit_in_word` with wrapping: search the word; when it
    /// is full, fold its deferred frees back and search again.
    fn find_in_word(&mut self, index: usize, usable: u32, hint: u32) -> Option<u32> {
        loop {
            if let Some(nr) = take_zero_bit(&mut self.words[index], usable, hint) {
                return Some(nr);
            }
            // sbitmap_deferred_clear: with nothing deferred and the usable
            // bits all taken there is nothing more to find.
            if self.cleared[index] == 0 {
                return None;
            }
            self.words[index] &= !self.cleared[index];
            self.cleared[index] = 0;
        }
    }

    /// `sbitmap_queue_clear`: the tag's bit is deferred, and it becomes the
    /// hint of the CPU that submitted the request (the caller wakes
    /// sleepers through its [`WakeBatch`]).
    #[inline]
    pub fn put(&mut self, tag: u32, cpu: usize) {
        let index = (tag >> self.shift) as usize;
        let bit = 1u64 << (tag & ((1 << self.shift) - 1));
        debug_assert!(
            self.words[index] & bit != 0 && self.cleared[index] & bit == 0,
            "tag {tag} freed twice"
        );
        self.cleared[index] |= bit;
        self.busy -= 1;
        self.hints[cpu] = tag;
    }
}

/// `__sbitmap_get_word` on one word: the first clear bit at or after
/// `hint` below `usable`, else (wrapping) from bit 0; sets it.
fn take_zero_bit(word: &mut u64, usable: u32, hint: u32) -> Option<u32> {
    let mask = if usable >= 64 {
        u64::MAX
    } else {
        (1u64 << usable) - 1
    };
    let free = !*word & mask;
    if free == 0 {
        return None;
    }
    let above = if hint >= 64 {
        0
    } else {
        free & (u64::MAX << hint)
    };
    let nr = if above != 0 {
        above.trailing_zeros()
    } else {
        free.trailing_zeros()
    };
    *word |= 1 << nr;
    Some(nr)
}

/// splitmix64: a fixed stand-in for the kernel's random initial hints.
fn spread(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_sizes_are_the_kernels() {
        assert_eq!(word_shift(256), 6);
        assert_eq!(word_shift(1024), 6);
        assert_eq!(word_shift(64), 4);
        assert_eq!(word_shift(62), 3, "four words of 8 bits for 62 tags");
        assert_eq!(word_shift(3), 6, "under 4 bits the map keeps one word");
    }

    #[test]
    fn the_hint_moves_on_only_when_its_own_bit_was_taken() {
        assert_eq!(hint_after_get(7, 7, Some(7), 256), 8);
        assert_eq!(hint_after_get(7, 7, Some(9), 256), 7, "another bit");
        assert_eq!(hint_after_get(7, 7, None, 256), 0, "failed search");
        assert_eq!(hint_after_get(254, 254, Some(254), 256), 0, "map's end");
    }

    /// The split of a shallow depth over the words of a 32+32+32+16 map, as
    /// the commit that introduced it tabulates it (a few rows).
    #[test]
    fn whole_map_shallow_depth_splits_as_the_kernel_tabulates() {
        let m = TagMap::new(112, 128, 1, ShallowRule::WholeMap);
        assert_eq!(m.bits_per_word(), 32);
        let split = |s: u32| -> Vec<u32> { (0..4).map(|i| m.usable_bits(i, s)).collect() };
        assert_eq!(split(1), [1, 0, 0, 0]);
        assert_eq!(split(2), [1, 1, 0, 0]);
        assert_eq!(split(5), [2, 1, 1, 1]);
        assert_eq!(split(11), [3, 3, 3, 2]);
        assert_eq!(split(61), [18, 17, 17, 9]);
        assert_eq!(split(111), [32, 32, 31, 16]);
        for s in 1..112 {
            assert_eq!(split(s).iter().sum::<u32>(), s, "shallow {s}");
        }
    }

    #[test]
    fn a_depth_of_one_is_tag_zero_from_6_17_and_one_per_word_before() {
        let mut m = TagMap::new(256, 256, 2, ShallowRule::WholeMap);
        assert_eq!(m.get(1, Some(1)), Some(0));
        assert_eq!(m.get(0, Some(1)), None, "tag 0 is the only one");
        assert!(m.get(0, None).is_some(), "a full-depth search finds others");
        let mut old = TagMap::new(256, 256, 2, ShallowRule::PerWord);
        let mut tags: Vec<_> = (0..5).filter_map(|_| old.get(0, Some(1))).collect();
        tags.sort();
        assert_eq!(tags, [0, 64, 128, 192], "the first bit of each word");
    }

    #[test]
    fn a_freed_tag_waits_until_its_word_is_full() {
        let mut m = TagMap::new(256, 256, 1, ShallowRule::WholeMap);
        m.hints[0] = 0;
        assert_eq!(m.get(0, None), Some(0));
        assert_eq!(m.hints[0], 1, "taking the hint moves it on");
        assert_eq!(m.get(0, None), Some(1));
        m.put(0, 0);
        assert_eq!(m.hints[0], 0, "the free sets the hint");
        assert_eq!(m.get(0, None), Some(2), "tag 0 is deferred, not free");
        // A depth-1 search finds word 0 full, folds the deferred bit back.
        assert_eq!(m.get(0, Some(1)), Some(0));
        assert_eq!(m.busy(), 3);
    }

    #[test]
    fn a_full_depth_get_searches_its_hints_word_from_bit_0() {
        let mut m = TagMap::new(256, 256, 1, ShallowRule::WholeMap);
        m.hints[0] = 70;
        assert_eq!(m.get(0, None), Some(64), "word 1, from its first bit");
        m.hints[0] = 70;
        assert_eq!(
            m.get(0, Some(200)),
            Some(70),
            "a shallow get from the hint's bit"
        );
    }

    #[test]
    fn a_full_map_fails_and_resets_the_hint() {
        let mut m = TagMap::new(8, 8, 1, ShallowRule::WholeMap);
        let tags: Vec<_> = (0..8).map(|_| m.get(0, None).unwrap()).collect();
        let mut sorted = tags.clone();
        sorted.sort();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
        assert_eq!(m.get(0, None), None);
        assert_eq!(m.hints[0], 0);
        m.put(5, 0);
        assert_eq!(m.get(0, None), Some(5));
    }

    #[test]
    fn sleepers_wake_in_batches() {
        let whole =
            |depth, min| TagMap::new(depth, depth, 1, ShallowRule::WholeMap).wake_batch(min);
        assert_eq!(whole(256, 1).batch(), 1, "BFQ: one sleeper per free");
        assert_eq!(whole(256, 192).batch(), 8);
        assert_eq!(whole(32, u32::MAX).batch(), 4);
        // Before 6.17 kyber's 48-per-word limit on 4 words: 192 / 8 → 8.
        let old = TagMap::new(256, 256, 1, ShallowRule::PerWord);
        assert_eq!(old.wake_batch(48).batch(), 8);
        let mut w = whole(64, 64);
        let woken: Vec<usize> = (0..16).map(|_| w.on_free(3)).collect();
        assert_eq!(woken.iter().filter(|&&n| n > 0).count(), 2);
        assert_eq!(woken[7], 3, "the eighth free wakes the batch, all three");
        assert_eq!(w.on_free(0), 0, "frees count only while someone sleeps");
    }

    /// Against a plain reference: whatever the order of gets and puts, the
    /// map never hands out a taken tag, and a full-depth get fails only
    /// when every tag is taken.
    #[test]
    fn random_gets_and_puts_keep_tags_unique() {
        let mut rng = 12345u64;
        for rule in [ShallowRule::WholeMap, ShallowRule::PerWord] {
            let mut m = TagMap::new(100, 100, 3, rule);
            let mut held: Vec<u32> = Vec::new();
            for _ in 0..20_000 {
                rng = spread(rng);
                let cpu = (rng % 3) as usize;
                if rng % 7 < 4 {
                    let shallow = (rng >> 8).is_multiple_of(3);
                    match m.get(cpu, shallow.then_some(1 + (rng >> 16) as u32 % 100)) {
                        Some(t) => {
                            assert!(t < 100 && !held.contains(&t));
                            held.push(t);
                        }
                        None => assert!(shallow || held.len() == 100),
                    }
                } else if !held.is_empty() {
                    let t = held.swap_remove((rng >> 20) as usize % held.len());
                    m.put(t, cpu);
                }
                assert_eq!(m.busy() as usize, held.len());
            }
        }
    }
}
