//! Workload generators: one I/O stream per job. Offsets (sequential, uniform
//! random with full coverage, zipf/pareto/normal, zoned), block sizes,
//! read/write mix, and the rate limiter. Memory is O(1) in device size and
//! I/O count.
//!
//! Files: `layout` places job files on the device, `bs` picks block sizes,
//! `offsets` picks random blocks (over `permute`'s bijections and `dist`'s
//! skewed samplers), `rate` paces issue times.

mod bs;
mod dist;
mod layout;
mod offsets;
mod permute;
mod rate;
mod usedmap;
mod zoned;

#[cfg(test)]
mod tests;

pub use bs::BsChooser;
pub use dist::{Normal, Pareto, Zipf};
pub use layout::layout;
pub use permute::{LfsrWalker, Mixer, PermWalker};
pub use rate::RateLimiter;

use crate::job::{Ddir, JobSpec, RwPattern};
use offsets::RandomBlocks;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use zoned::ZonedBlocks;

/// A byte range of the device one of a job's files covers for I/O: the whole
/// file (or device) minus the part before `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: u64,
    pub len: u64,
}

/// The files one job does I/O to (usually one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobLayout {
    pub files: Vec<Region>,
    /// Bytes of I/O the job does per loop (io_size, else size).
    pub io_bytes: u64,
}

/// One I/O to issue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoUnit {
    pub ddir: Ddir,
    /// Absolute byte offset on the device.
    pub offset: u64,
    pub len: u64,
}

/// An upper bound on the bytes `layout` and `Generator::new` allocate for
/// one job, from its spec alone (so a caller can refuse a run before
/// allocating anything): per file its region (twice while the layout is
/// built), its stream state, a random picker per block-size group (at most
/// three) and, with a zoned distribution, three zoned pickers.
pub fn state_bytes(spec: &JobSpec) -> u64 {
    use std::mem::size_of;
    let files = u64::from(spec.nrfiles.max(1)).max(spec.filenames.len() as u64);
    let mut per_file =
        2 * size_of::<Region>() + size_of::<FileState>() + 3 * size_of::<RandomBlocks>();
    if let Some(zones) = &spec.random_zones {
        let n: usize = zones.iter().map(Vec::len).sum::<usize>() + 3;
        per_file +=
            3 * (size_of::<ZonedBlocks>() + size_of::<[u16; 100]>()) + n * size_of::<(u64, u64)>();
    }
    files.saturating_mul(per_file as u64)
}

/// Marks a sequential stream that must (re)start at its first offset.
const RESTART: u64 = u64::MAX;

#[derive(Clone, Copy, Debug)]
enum DdirMode {
    Single(Ddir),
    /// Reads with probability `rwmixread`%.
    Mix {
        read_pct: u64,
    },
    /// Trim, then write the same block.
    TrimWrite,
}

#[derive(Clone, Debug)]
struct FileState {
    start: u64,
    len: u64,
    /// Next sequential offset per direction (relative), or RESTART.
    seq_next: [u64; 3],
    /// End of the last I/O per direction (relative), fio's `last_pos`.
    last_end: [u64; 3],
}

/// Offsets, sizes and directions for one job.
pub struct Generator {
    mode: DdirMode,
    random: bool,
    files: Vec<FileState>,
    next_file: usize,
    /// Random block pickers, `files × groups`; directions with the same block
    /// alignment and minimum size share one, so e.g. randrw reads and writes
    /// cover the region together once per pass, as with fio's single map.
    rand: Vec<RandomBlocks>,
    groups: usize,
    group_of: [usize; 3],
    /// `random_distribution=zoned:`/`zoned_abs:` pickers, `files × 3`
    /// directions; empty for every other distribution.
    zoned: Vec<ZonedBlocks>,
    /// Block alignment and minimum size per direction.
    align: [u64; 3],
    min_bs: [u64; 3],
    bs: [BsChooser; 3],
    /// Sequential: bytes added after each I/O (`rw=read:64k`, negative = backwards).
    seq_add: i64,
    /// Random with `:N`: I/Os per random jump, and how many sequential remain.
    rand_run: u64,
    rand_run_left: u64,
    /// `percentage_random` per direction: below 100, a random job's jump
    /// continues from the last I/O's end instead with the rest's odds.
    percentage_random: [u32; 3],
    /// Some percentage below 100, or some random map (`RandomBlocks::mark`):
    /// one flag keeps both off the common random path.
    random_extras: bool,
    /// The write half of a trimwrite pair is due (a flag rather than an
    /// Option keeps the hot path free of 24-byte moves).
    pending_write: bool,
    pending: IoUnit,
    counted: [bool; 3],
    /// The smallest block of a direction that counts towards the size.
    min_counted_bs: u64,
    /// `loops=` passes after the current one.
    passes_left: u64,
    /// Bytes per loop and where the current loop ends: each loop starts
    /// over from the region start with a fresh random map, as fio does.
    loop_bytes: u64,
    loop_end: u64,
    done_bytes: u64,
    max_ios: u64,
    ios: u64,
    time_based: bool,
    /// Which files began a new pass with the last I/O.
    wrapped: Wrapped,
    rng_ddir: ChaCha8Rng,
    rng_bs: ChaCha8Rng,
    rng_off: ChaCha8Rng,
    /// fio's `seq_rand_state`: draws for `percentage_random` only, so jobs
    /// without it draw exactly as before.
    rng_seq: ChaCha8Rng,
}

impl Generator {
    /// Errors say what is wrong but not which job: the caller names it.
    pub fn new(spec: &JobSpec, layout: &JobLayout, seed: u64) -> Result<Generator, String> {
        if layout.files.is_empty() {
            return Err("no files to do I/O to".to_string());
        }
        let stream = |s: u64| {
            let mut r = ChaCha8Rng::seed_from_u64(seed);
            r.set_stream(s);
            r
        };
        let (rng_ddir, rng_bs, mut rng_off) = (stream(1), stream(2), stream(3));
        let rng_seq = stream(4);

        // Directions whose offsets and sizes are drawn; a trimwrite's trim
        // reuses its write's range.
        let placed: &[Ddir] = match spec.rw {
            RwPattern::TrimWrite | RwPattern::RandTrimWrite => &[Ddir::Write],
            p => p.ddirs(),
        };
        let mut choosers: [Option<BsChooser>; 3] = [None, None, None];
        for d in Ddir::ALL {
            let i = d.index();
            let c = BsChooser::new(&spec.bs[i], spec.bs_unaligned);
            // Unused directions never pick a size; do not fail on them.
            choosers[i] = Some(match c {
                Ok(c) => c,
                Err(e) if placed.contains(&d) => return Err(e),
                Err(_) => BsChooser::Fixed(4096),
            });
        }
        let bs = choosers.map(|c| c.unwrap_or(BsChooser::Fixed(4096)));
        let min_bs = [bs[0].min(), bs[1].min(), bs[2].min()];
        let align = [0, 1, 2].map(|i| spec.blockalign[i].filter(|&a| a > 0).unwrap_or(min_bs[i]));

        let min_len = layout.files.iter().map(|f| f.len).min().unwrap_or(0);
        for &d in placed {
            let i = d.index();
            if min_len < min_bs[i].max(align[i]) {
                return Err(format!(
                    "its region ({min_len} bytes) is smaller than the {} block size ({} bytes)",
                    ddir_name(d),
                    min_bs[i].max(align[i])
                ));
            }
        }

        let random = spec.rw.is_random();
        let mut group_of = [0usize; 3];
        let mut keys: Vec<(u64, u64)> = Vec::new();
        for &d in placed {
            let i = d.index();
            let key = (align[i], min_bs[i]);
            group_of[i] = match keys.iter().position(|&k| k == key) {
                Some(g) => g,
                None => {
                    keys.push(key);
                    keys.len() - 1
                }
            };
        }
        // Per group: can one I/O cover more than one of its blocks? Then the
        // group keeps fio's random map (sizes measured in blocks of min bs).
        let varied: Vec<bool> = keys
            .iter()
            .enumerate()
            .map(|(g, &(ba, min))| {
                ba == min
                    && placed
                        .iter()
                        .any(|d| group_of[d.index()] == g && bs[d.index()].max() > min)
            })
            .collect();
        let mut rand = Vec::new();
        if random {
            for f in &layout.files {
                for (g, &(ba, min)) in keys.iter().enumerate() {
                    // fio's last_block(): the last start that leaves room for min bs.
                    let usable = f.len - min.saturating_sub(ba);
                    let n = (usable / ba).min((1 << 62) - 1);
                    rand.push(RandomBlocks::new(n, spec, varied[g], &mut rng_off)?);
                }
            }
        }

        let mut zoned = Vec::new();
        if let (true, Some(zones)) = (random, &spec.random_zones) {
            for f in &layout.files {
                for d in Ddir::ALL {
                    let i = d.index();
                    let usable = f.len.saturating_sub(min_bs[i].saturating_sub(align[i]));
                    let n = usable / align[i].max(1);
                    zoned.push(match ZonedBlocks::new(&zones[i], n, align[i]) {
                        Ok(z) => z,
                        Err(e) if placed.contains(&d) => return Err(e),
                        Err(_) => ZonedBlocks::new(&[], n, align[i])?,
                    });
                }
            }
        }

        let mode = match spec.rw {
            RwPattern::ReadWrite | RwPattern::RandRw => DdirMode::Mix {
                read_pct: spec.rwmixread.min(100) as u64,
            },
            RwPattern::TrimWrite | RwPattern::RandTrimWrite => DdirMode::TrimWrite,
            p => DdirMode::Single(p.ddirs()[0]),
        };
        // fio counts only the write half of trimwrite against size.
        let mut counted = [false; 3];
        for &d in spec.rw.ddirs() {
            counted[d.index()] = true;
        }
        if matches!(mode, DdirMode::TrimWrite) {
            counted[Ddir::Trim.index()] = false;
        }

        let loops = spec.loops.max(1) as u64;
        let files = layout
            .files
            .iter()
            .map(|f| FileState {
                start: f.start,
                len: f.len,
                seq_next: [RESTART; 3],
                last_end: [0; 3],
            })
            .collect();
        let rand_run = if random {
            spec.rw_modifier.filter(|&n| n > 1).unwrap_or(1) as u64
        } else {
            1
        };
        Ok(Generator {
            mode,
            random,
            files,
            next_file: 0,
            rand,
            groups: keys.len(),
            group_of,
            zoned,
            align,
            min_bs,
            bs,
            seq_add: if random {
                0
            } else {
                spec.rw_modifier.unwrap_or(0)
            },
            rand_run,
            rand_run_left: 0,
            percentage_random: spec.percentage_random,
            random_extras: spec.percentage_random.iter().any(|&p| p < 100)
                || varied.iter().any(|&v| v),
            pending_write: false,
            pending: IoUnit {
                ddir: Ddir::Write,
                offset: 0,
                len: 0,
            },
            counted,
            min_counted_bs: (0..3)
                .filter(|&i| counted[i])
                .map(|i| min_bs[i])
                .min()
                .unwrap_or(1)
                .max(1),
            passes_left: loops.saturating_sub(1),
            loop_bytes: layout.io_bytes,
            loop_end: layout.io_bytes,
            done_bytes: 0,
            max_ios: spec
                .number_ios
                .filter(|&n| n > 0)
                .map_or(u64::MAX, |n| n.saturating_mul(loops)),
            ios: 0,
            time_based: spec.time_based,
            wrapped: Wrapped::None,
            rng_ddir,
            rng_bs,
            rng_off,
            rng_seq,
        })
    }

    /// The next I/O, or None when the job's I/O budget (size/io_size × loops,
    /// number_ios) is used up. Never None for `time_based` jobs.
    #[inline]
    pub fn next_io(&mut self) -> Option<IoUnit> {
        if self.pending_write {
            self.pending_write = false;
            let io = self.pending;
            self.account(io);
            return Some(io);
        }
        if !self.time_based && self.pass_done() {
            // The budget is used up, or a pass is: fio ends `do_io` here,
            // and for a pass the task drains and syncs before it starts the
            // next one (`begin_next_pass`).
            return None;
        }
        if self.ios >= self.max_ios && !self.time_based {
            return None;
        }
        let ddir = match self.mode {
            DdirMode::Single(d) => d,
            DdirMode::Mix { read_pct } => {
                // Uniform 0..100 from 32 bits; fio's rand_between(1, 100) <= rwmixread.
                if (self.rng_ddir.next_u32() as u64 * 100) >> 32 < read_pct {
                    Ddir::Read
                } else {
                    Ddir::Write
                }
            }
            // Placed and sized as the write, which is what counts towards size.
            DdirMode::TrimWrite => Ddir::Write,
        };
        // file_service_type=roundrobin, one I/O per file turn (fio's default).
        let f = self.next_file;
        self.next_file = if f + 1 == self.files.len() { 0 } else { f + 1 };

        let (rel, len) = if self.random {
            self.random_offset(f, ddir)
        } else {
            self.seq_offset(f, ddir)
        };
        let file = &mut self.files[f];
        file.last_end[ddir.index()] = rel + len;
        let mut io = IoUnit {
            ddir,
            offset: file.start + rel,
            len,
        };
        if let DdirMode::TrimWrite = self.mode {
            self.pending = io;
            self.pending_write = true;
            io.ddir = Ddir::Trim;
        }
        self.account(io);
        Some(io)
    }

    /// Files that began a new pass since the last call: fio then drops
    /// their cached pages when `invalidate=1` (a time_based wrap calls
    /// `loop_cache_invalidate` in io_u.c; a new loop reopens the files,
    /// and opening invalidates).
    pub fn take_wrapped(&mut self) -> Wrapped {
        std::mem::replace(&mut self.wrapped, Wrapped::None)
    }

    #[cold]
    fn note_wrap(&mut self, f: usize) {
        self.wrapped = match self.wrapped {
            Wrapped::None => Wrapped::File(f),
            Wrapped::File(g) if g == f => Wrapped::File(f),
            _ => Wrapped::All,
        };
    }

    /// A `loops=` pass is done and another is due: fio's `do_io` returns,
    /// waits for the job's in-flight I/O, runs the end-of-pass sync, and
    /// `thread_main` calls it again (backend.c). Never for `time_based` jobs,
    /// which wrap inside one pass.
    #[inline]
    pub fn between_passes(&self) -> bool {
        !self.time_based && self.pass_done() && self.passes_left > 0
    }

    /// The pass's bytes are done, or what is left of them is less than a
    /// block: fio ends the pass when the next block would not fit
    /// (`io_u_fits` in io_u.c), so `size=16m bs=3000` does 5592 I/Os.
    #[inline]
    fn pass_done(&self) -> bool {
        self.done_bytes.saturating_add(self.min_counted_bs) > self.loop_end
    }

    /// Start the next `loops=` pass (after `between_passes`).
    #[cold]
    pub fn begin_next_pass(&mut self) {
        debug_assert!(self.between_passes());
        self.next_loop();
    }

    #[cold]
    fn next_loop(&mut self) {
        self.wrapped = Wrapped::All;
        self.passes_left -= 1;
        self.loop_end = self.done_bytes.saturating_add(self.loop_bytes);
        for f in &mut self.files {
            f.seq_next = [RESTART; 3];
            f.last_end = [0; 3];
        }
        for r in &mut self.rand {
            r.new_pass();
        }
        self.rand_run_left = 0;
        self.next_file = 0;
    }

    #[inline]
    fn account(&mut self, io: IoUnit) {
        self.ios += 1;
        if self.counted[io.ddir.index()] {
            self.done_bytes += io.len;
        }
    }

    /// Sequential: from the file start (or its end, going backwards), adding
    /// `seq_add` after each I/O, wrapping around at either end.
    #[inline]
    fn seq_offset(&mut self, f: usize, ddir: Ddir) -> (u64, u64) {
        let i = ddir.index();
        let min = self.min_bs[i];
        let file = &mut self.files[f];
        let mut pos = file.seq_next[i];
        if pos != RESTART && pos > file.len - min {
            self.note_wrap(f);
        }
        let file = &mut self.files[f];
        if pos == RESTART || pos > file.len - min {
            pos = if self.seq_add < 0 {
                // Backwards: the last whole block.
                (file.len - min) / min * min
            } else {
                0
            };
        }
        let len = self.bs[i].pick(&mut self.rng_bs, file.len - pos);
        file.seq_next[i] = (pos + len)
            .checked_add_signed(self.seq_add)
            .unwrap_or(RESTART);
        (pos, len)
    }

    /// Random: a block from the file's picker; with `rw=randread:N`, the
    /// N-1 I/Os after each jump continue sequentially.
    #[inline]
    fn random_offset(&mut self, f: usize, ddir: Ddir) -> (u64, u64) {
        let i = ddir.index();
        let file_len = self.files[f].len;
        // fio continues from the last I/O's end between jumps of
        // `rw=randread:N` (wrapping to the start), and for the sequential
        // share of `percentage_random` (a random block at the end instead).
        let mut continued = None;
        if self.rand_run > 1 {
            if self.rand_run_left > 0 {
                self.rand_run_left -= 1;
                continued = Some(self.continue_in_file(f, i).unwrap_or(0));
            } else {
                self.rand_run_left = self.rand_run - 1;
            }
        }
        if continued.is_none()
            && self.random_extras
            && self.percentage_random[i] < 100
            && !self.should_do_random(i)
        {
            continued = self.continue_in_file(f, i);
        }
        if let Some(pos) = continued {
            let len = self.bs[i].pick(&mut self.rng_bs, file_len - pos);
            return (pos, len);
        }
        let picker = f * self.groups + self.group_of[i];
        let block = if self.zoned.is_empty() {
            let picker = &mut self.rand[picker];
            let passes = picker.passes();
            let b = picker.next(&mut self.rng_off);
            if picker.passes() != passes {
                self.note_wrap(f);
            }
            b
        } else {
            self.zoned[f * 3 + i].next(&mut self.rng_off)
        };
        let align = self.align[i];
        let pos = block * align;
        let mut len = self.bs[i].pick(&mut self.rng_bs, file_len - pos);
        if self.random_extras && self.zoned.is_empty() {
            let blocks = len.div_ceil(align);
            let kept = self.rand[picker].mark(block, blocks);
            if kept < blocks {
                len = kept * align;
            }
        }
        (pos, len)
    }

    /// fio's `should_do_random`: `rand_between(1, 100) <= perc_rand`.
    #[cold]
    fn should_do_random(&mut self, i: usize) -> bool {
        let draw = (self.rng_seq.next_u32() as u64 * 100) >> 32;
        draw < u64::from(self.percentage_random[i])
    }

    /// Where the last I/O of this direction ended, while a block still fits
    /// there (`get_next_seq_offset`); at the file's end a time_based job
    /// wraps to its start, otherwise None.
    #[inline]
    fn continue_in_file(&self, f: usize, i: usize) -> Option<u64> {
        let file = &self.files[f];
        let pos = file.last_end[i];
        if pos <= file.len - self.min_bs[i] {
            Some(pos)
        } else if self.time_based {
            Some(0)
        } else {
            None
        }
    }

    /// Bytes counted against the budget so far.
    pub fn bytes_done(&self) -> u64 {
        self.done_bytes
    }

    /// I/Os handed out so far.
    pub fn ios_done(&self) -> u64 {
        self.ios
    }

    /// Blocks the random picker of `file` chooses from for `ddir` (None for
    /// sequential jobs).
    pub fn random_blocks(&self, file: usize, ddir: Ddir) -> Option<u64> {
        self.rand
            .get(file * self.groups + self.group_of[ddir.index()])
            .map(RandomBlocks::blocks)
    }
}

/// Files that began a new pass ([`Generator::take_wrapped`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrapped {
    None,
    /// This file (index in the job's layout).
    File(usize),
    /// Every file (a new loop, or several files at once).
    All,
}

fn ddir_name(d: Ddir) -> &'static str {
    match d {
        Ddir::Read => "read",
        Ddir::Write => "write",
        Ddir::Trim => "trim",
    }
}
