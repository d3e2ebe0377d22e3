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
mod fileservice;
mod layout;
mod offsets;
mod permute;
mod rate;
mod strided;
mod usedmap;
mod zoned;

#[cfg(test)]
mod tests;

pub use bs::BsChooser;
pub use dist::{Normal, Pareto, Zipf};
pub use layout::layout;
pub use permute::{LfsrWalker, Mixer, PermWalker};
pub use rate::RateLimiter;

use crate::job::{Ddir, EngineKind, JobSpec, RwPattern};
use fileservice::FileChoice;
use offsets::RandomBlocks;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strided::Strided;
use zoned::ZonedBlocks;

/// A byte range of the device one of a job's files covers for I/O: the whole
/// file (or device) minus the part before `offset`, or `size` of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// Absolute device offset of the region's first byte.
    pub start: u64,
    /// Bytes of I/O the region holds (fio's `io_size` of the file).
    pub len: u64,
    /// Bytes of the file (or device) past the region's end. fio tells a
    /// region that ends inside a longer file from one at the file's end
    /// where a stream reaches the region's end: inside, the file is done
    /// (`get_next_offset`: offset >= io_size); at the file's own end a
    /// random job takes a random block instead (`get_next_seq_offset`
    /// fails: last_pos >= real_file_size). Strided zones go on into it.
    pub after: u64,
    /// Bytes of the file (or device) before the region: fio's
    /// `file_offset`, which its hole wrap mixes with relative positions.
    pub before: u64,
    /// `before` from the second pass on. fio resolves a percentage offset
    /// against the file's size, which is 0 before it creates its own file
    /// and the real size when `clear_io_state` resolves it again for the
    /// next pass (fio 3.33: `rw=write bs=512 size=80k offset=36% loops=3`
    /// writes 160 blocks from 0, then 102 from 29696 twice).
    pub later_before: u64,
}

impl Region {
    /// A region that is all of its file (fio's own files, a whole device).
    pub fn whole(start: u64, len: u64) -> Region {
        Region::in_file(start, len, 0)
    }

    /// A region that ends at its file's end and starts `before` bytes into
    /// it (fio's own files with `offset=`).
    pub fn in_file(start: u64, len: u64, before: u64) -> Region {
        Region {
            start,
            len,
            after: 0,
            before,
            later_before: before,
        }
    }
}

/// The files one job does I/O to (usually one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobLayout {
    pub files: Vec<Region>,
    /// Bytes of I/O the job does per loop (io_size, else size).
    pub io_bytes: u64,
    /// fio's `size` once its files are set up (the regions' total, or
    /// `size=` when `filesize=` sizes the files): a pass ends once it has
    /// issued this much (`do_io`'s `total_bytes`).
    pub pass_bytes: u64,
}

impl JobLayout {
    /// A layout whose passes are its regions' total.
    pub fn new(files: Vec<Region>, io_bytes: u64) -> JobLayout {
        let pass_bytes = files.iter().map(|f| f.len).sum();
        JobLayout {
            files,
            io_bytes,
            pass_bytes,
        }
    }
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

/// Passes in a row without an I/O after which a job ends (fio would go on
/// forever; a random job's next pass draws again, so a few empty ones are
/// fio's too).
const EMPTY_PASSES_MAX: u32 = 1000;

#[derive(Clone, Copy, Debug)]
enum DdirMode {
    Single(Ddir),
    /// Reads with probability `rwmixread`%.
    Mix {
        read_pct: u64,
    },
    /// fio's `trimwrite`/`randtrimwrite`: a file's next I/O is a trim when
    /// its last trim and last write started at the same offset, else a
    /// write (set_rw_ddir, fio 3.33 io_u.c). Sequentially, trims and writes
    /// are two streams with their own block sizes, in step only while the
    /// sizes agree; at random, the write repeats the last trim's range.
    TrimWrite,
}

impl DdirMode {
    fn of(spec: &JobSpec) -> DdirMode {
        match spec.rw {
            RwPattern::ReadWrite | RwPattern::RandRw => DdirMode::Mix {
                read_pct: spec.rwmixread.min(100) as u64,
            },
            RwPattern::TrimWrite | RwPattern::RandTrimWrite => DdirMode::TrimWrite,
            p => DdirMode::Single(p.ddirs()[0]),
        }
    }
}

/// fio's `last_start` of a direction that has not started since the file's
/// last reset (-1ULL in fio).
const NO_START: u64 = u64::MAX;

#[derive(Clone, Debug)]
struct FileState {
    start: u64,
    len: u64,
    /// Next sequential offset per direction (relative), or RESTART.
    seq_next: [u64; 3],
    /// End of the last I/O per direction (relative), fio's `last_pos`.
    last_end: [u64; 3],
    /// Start of the last I/O per direction (relative), fio's `last_start`,
    /// or NO_START; trimwrite decides its next direction from it.
    last_start: [u64; 3],
    /// The file goes on past the region (`Region::after` > 0).
    more_after: bool,
    /// Bytes of the file (or device) past the region: a fixed-size block
    /// that starts inside the region may end there.
    after: u64,
    /// Bytes of the file before the region (`Region::before`).
    before: u64,
    /// How much further into the file the region starts from the next
    /// pass on (`Region::later_before`).
    shift_next_pass: u64,
    /// fio's `fio_file_done`: this pass has nothing more for the file.
    done: bool,
}

impl FileState {
    fn new(f: &Region) -> FileState {
        FileState {
            start: f.start,
            len: f.len,
            seq_next: [RESTART; 3],
            last_end: [0; 3],
            last_start: [NO_START; 3],
            more_after: f.after > 0,
            after: f.after,
            before: f.before,
            shift_next_pass: f.later_before.saturating_sub(f.before),
            done: false,
        }
    }

    /// fio's `real_file_size`: the whole file (or device), region included.
    #[inline]
    fn real_size(&self) -> u64 {
        self.before + self.len + self.after
    }
}

/// The next offset of a stream that continues from its last I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Continue {
    At(u64),
    /// The stream is at the file's own end: a random block instead.
    Random,
    /// The stream left the region: the file is done for this pass.
    FileDone,
}

/// `verify=`: after a pass, the pass's writes are read back (fio's
/// `do_verify` after `do_io` in backend.c), in the order they were written:
/// stepping a copy of the generator as the pass began gives that order again
/// without keeping a list of the writes.
#[derive(Clone, Debug)]
struct Verify {
    /// The generator as the current pass began (its own `verify` empty).
    replay: Box<Generator>,
    /// Writes done this pass.
    writes: u64,
    phase: ReadBack,
}

impl Verify {
    /// A pass starting from `snapshot`, its read-back still to come.
    fn new(mut snapshot: Generator) -> Verify {
        snapshot.verify = None;
        Verify {
            replay: Box::new(snapshot),
            writes: 0,
            phase: ReadBack::Pending,
        }
    }
}

/// Where a pass's read-back stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadBack {
    /// After the pass's writes.
    Pending,
    /// Under way: writes of the replay left to read.
    Reading(u64),
    Done,
}

/// Offsets, sizes and directions for one job.
#[derive(Clone, Debug)]
pub struct Generator {
    mode: DdirMode,
    random: bool,
    files: Vec<FileState>,
    /// `zonemode=strided` (a job with one file; fio turns it off for more).
    strided: Option<Strided>,
    /// Files of this pass not done yet.
    files_left: usize,
    file_choice: FileChoice,
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
    /// Per direction: the shortest file a block fits in (its smallest size
    /// or alignment, whichever is larger). Shorter files are done when the
    /// direction comes up: fio's `io_u_fits` fails and `set_io_u_file`
    /// marks the file done.
    needs: [u64; 3],
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
    counted: [bool; 3],
    /// `loops=` passes after the current one.
    passes_left: u64,
    /// `io_size` given: fio's `keep_running` starts another pass although
    /// every file is done; without it only while some file is not.
    io_size_given: bool,
    /// The largest block of any direction (fio's `td_max_bs`).
    max_bs: u64,
    /// Bytes per loop (io_size, else size): what fio's `keep_running`
    /// compares the job's bytes with once `loops` are used up.
    loop_bytes: u64,
    /// The job's budget of counted bytes over all its passes (loop_bytes x
    /// loops): fio's `do_io` runs while fewer were issued
    /// (`io_issue_bytes_exceeded`, cumulative), so a last pass may be short.
    budget_end: u64,
    /// A pass ends once it queued this many bytes (`do_io`'s
    /// `bytes_issued >= total_bytes`: size; never for a trimwrite).
    pass_limit: u64,
    /// Directions whose bytes count towards `pass_limit`
    /// (`pass_counted_dirs`).
    pass_counted: [bool; 3],
    /// Bytes of the pass that count towards `pass_limit`.
    pass_queued: u64,
    /// Bytes of any direction issued in the pass.
    pass_issued: u64,
    done_bytes: u64,
    /// Bytes of every direction over all passes, the read-backs' reads
    /// included: fio's `ddir_rw_sum(td->io_bytes)`, which `keep_running`
    /// holds against io_size (or size) once `loops` are used up.
    all_bytes: u64,
    /// Passes in a row that issued nothing (`EMPTY_PASSES_MAX`).
    empty_passes: u32,
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
    /// `randrepeat` (fio's default): the random streams as the first pass
    /// began, restored at every later pass.
    first_pass_rngs: Option<Box<PassRngs>>,
    verify: Option<Verify>,
}

/// Why a job's I/O cannot be generated: the fio option at fault (the
/// error names it, as every bad input's does) and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenError {
    pub option: &'static str,
    pub message: String,
}

impl GenError {
    fn at(option: &'static str) -> impl Fn(String) -> GenError {
        move |message| GenError { option, message }
    }
}

impl std::fmt::Display for GenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl Generator {
    /// Errors say what is wrong but not which job: the caller names it.
    pub fn new(spec: &JobSpec, layout: &JobLayout, seed: u64) -> Result<Generator, GenError> {
        if layout.files.is_empty() {
            return Err(GenError::at("size")("no files to do I/O to".to_string()));
        }
        let stream = |s: u64| {
            let mut r = ChaCha8Rng::seed_from_u64(seed);
            r.set_stream(s);
            r
        };
        let (rng_ddir, rng_bs, mut rng_off) = (stream(1), stream(2), stream(3));
        let rng_seq = stream(4);

        // Directions whose offsets and sizes are drawn; a randtrimwrite's
        // write repeats its trim's range.
        let placed: &[Ddir] = match spec.rw {
            RwPattern::RandTrimWrite => &[Ddir::Trim],
            p => p.ddirs(),
        };
        let Sizes {
            bs,
            min_bs,
            align,
            needs,
        } = sizes(spec, placed, layout)?;
        let random = spec.rw.is_random();
        let groups = Groups::new(placed, &bs, &min_bs, &align);
        let strided = strided_zones(spec, layout, placed, &min_bs, &align)
            .map_err(GenError::at("zonerange"))?;
        let rand = if random {
            random_pickers(spec, layout, &groups, strided.as_ref(), &mut rng_off)
                .map_err(GenError::at("random_distribution"))?
        } else {
            Vec::new()
        };
        let zoned = match (random, &spec.random_zones) {
            (true, Some(zones)) => zoned_pickers(zones, layout, placed, &min_bs, &align)
                .map_err(GenError::at("random_distribution"))?,
            _ => Vec::new(),
        };

        let mode = DdirMode::of(spec);

        let loops = spec.loops.max(1) as u64;
        // A time_based job that verifies ends each pass at its size, reads
        // it back and starts another, until the runtime ends it (fio's do_io
        // breaks on bytes when verify is set, backend.c): passes without end.
        let verify = spec.verify && spec.rw.ddirs().contains(&Ddir::Write);
        let verify_passes = verify && spec.time_based;
        let max_bs = spec
            .rw
            .ddirs()
            .iter()
            .map(|d| bs[d.index()].max())
            .max()
            .unwrap_or(1);
        let files: Vec<FileState> = layout.files.iter().map(FileState::new).collect();
        let rand_run = if random {
            spec.rw_modifier.filter(|&n| n > 1).unwrap_or(1) as u64
        } else {
            1
        };
        let mut g = Generator {
            mode,
            random,
            strided,
            files_left: files.len(),
            file_choice: FileChoice::new(spec.file_service, files.len(), stream(5)),
            files,
            rand,
            groups: groups.keys.len(),
            group_of: groups.of,
            zoned,
            align,
            min_bs,
            needs,
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
                || groups.varied.iter().any(|&v| v),
            counted: counted_dirs(spec, mode),
            passes_left: if verify_passes {
                u64::MAX
            } else {
                loops.saturating_sub(1)
            },
            io_size_given: spec.io_size.is_some(),
            max_bs,
            loop_bytes: layout.io_bytes,
            budget_end: if verify_passes {
                u64::MAX
            } else {
                layout.io_bytes.saturating_mul(loops)
            },
            pass_limit: pass_limit(spec, layout, mode, verify_passes),
            pass_counted: pass_counted_dirs(spec),
            pass_queued: 0,
            pass_issued: 0,
            done_bytes: 0,
            all_bytes: 0,
            empty_passes: 0,
            max_ios: max_ios(spec, mode, loops),
            ios: 0,
            time_based: spec.time_based && !verify_passes,
            wrapped: Wrapped::None,
            rng_ddir,
            rng_bs,
            rng_off,
            rng_seq,
            first_pass_rngs: None,
            verify: None,
        };
        if spec.randrepeat {
            g.first_pass_rngs = Some(Box::new(PassRngs::of(&g)));
        }
        if verify {
            g.verify = Some(Verify::new(g.clone()));
        }
        Ok(g)
    }

    /// The next I/O, or None when the job's I/O budget (size/io_size × loops,
    /// number_ios) is used up. For a `time_based` job only when a pass
    /// ended having moved nothing.
    #[inline]
    pub fn next_io(&mut self) -> Option<IoUnit> {
        if self
            .verify
            .as_ref()
            .is_some_and(|v| matches!(v.phase, ReadBack::Reading(_)))
        {
            return self.next_verify_read();
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
        let (ddir, f, rel, len) = loop {
            let drawn = self.draw_ddir();
            // fio's set_io_u_file: a file with nothing left is done, and the
            // next file is asked, until every file is done.
            if self.strided.is_some() {
                let ddir = self.ddir_for_file(0, drawn);
                if let Some((rel, len)) = self.strided_offset(ddir) {
                    break (ddir, 0, rel, len);
                }
                self.files[0].done = true;
                self.files_left = 0;
                if !self.time_based || self.pass_issued == 0 {
                    return None;
                }
                self.next_loop();
                continue;
            }
            match self.place_in_files(drawn) {
                Some(placed) => break placed,
                // Only a direction whose block fits no file leaves a
                // time_based job's files done (its maps and streams wrap):
                // fio's pass ends, and the next starts while time is left,
                // unless this one moved nothing (thread_main then ends the
                // job: with randrepeat the next would be the same).
                None if self.time_based && self.pass_issued > 0 => self.next_loop(),
                None => return None,
            }
        };
        let file = &mut self.files[f];
        file.last_end[ddir.index()] = rel + len;
        file.last_start[ddir.index()] = rel;
        let io = IoUnit {
            ddir,
            offset: file.start + rel,
            len,
        };
        self.account(io);
        Some(io)
    }

    /// The next I/O's direction: fixed, or drawn from `rwmixread`.
    #[inline]
    fn draw_ddir(&mut self) -> Ddir {
        match self.mode {
            DdirMode::Single(d) => d,
            DdirMode::Mix { read_pct } => {
                // Uniform 0..100 from 32 bits; fio's rand_between(1, 100) <= rwmixread.
                if (self.rng_ddir.next_u32() as u64 * 100) >> 32 < read_pct {
                    Ddir::Read
                } else {
                    Ddir::Write
                }
            }
            // Decided per file (`ddir_for_file`).
            DdirMode::TrimWrite => Ddir::Trim,
        }
    }

    /// The direction of file `f`'s next I/O: `drawn`, but for a trimwrite
    /// a trim when the file's last trim and write started together.
    #[inline]
    fn ddir_for_file(&self, f: usize, drawn: Ddir) -> Ddir {
        if !matches!(self.mode, DdirMode::TrimWrite) {
            return drawn;
        }
        let s = &self.files[f].last_start;
        if s[Ddir::Write.index()] == s[Ddir::Trim.index()] {
            Ddir::Trim
        } else {
            Ddir::Write
        }
    }

    /// Where a randtrimwrite's write goes: the range of the file's last
    /// trim. fio 3.33 takes that trim's start in the file as the offset
    /// into the region (get_next_block), so past `offset=` it lands that
    /// much further on, and the file is done where that is past the region
    /// (`randtrimwrite offset=1m size=1m`: one trim, no write); a zone reset
    /// between trim and write leaves no trim, which fio reports as a bug in
    /// offset generation and ends the file on.
    #[cold]
    fn repeat_last_trim(&self, f: usize) -> Option<(u64, u64)> {
        let file = &self.files[f];
        let t = Ddir::Trim.index();
        let start = file.last_start[t];
        if start == NO_START {
            return None;
        }
        let len = file.last_end[t] - start;
        let rel = file.before + start;
        let real_size = file.real_size();
        if rel >= file.len || file.before + rel + len > real_size {
            return None;
        }
        Some((rel, len))
    }

    /// A randtrimwrite's write: it repeats the last trim's range.
    #[inline]
    fn repeats_last_trim(&self, ddir: Ddir) -> bool {
        ddir == Ddir::Write && self.random && matches!(self.mode, DdirMode::TrimWrite)
    }

    /// After a randtrimwrite's trim lands where the last one did, fio
    /// moves the last write's start off it (get_next_offset), so that a
    /// write still follows.
    #[inline]
    fn note_trim_start(&mut self, f: usize, ddir: Ddir, rel: u64) {
        let s = &mut self.files[f].last_start;
        if matches!(self.mode, DdirMode::TrimWrite)
            && self.random
            && ddir == Ddir::Trim
            && s[Ddir::Trim.index()] == rel
        {
            s[Ddir::Write.index()] = s[Ddir::Write.index()].wrapping_sub(1);
        }
    }

    /// The file, offset (in the file's region) and length of the next I/O:
    /// fio's `set_io_u_file`, where a file with nothing left is done and the
    /// next one is asked. None: every file is done.
    #[inline]
    fn place_in_files(&mut self, drawn: Ddir) -> Option<(Ddir, usize, u64, u64)> {
        loop {
            let f = self.file_choice.pick(&self.files);
            let ddir = self.ddir_for_file(f, drawn);
            let placed = if self.repeats_last_trim(ddir) {
                self.repeat_last_trim(f)
            } else if self.files[f].len < self.needs[ddir.index()] {
                None
            } else if self.random {
                self.random_offset(f, ddir)
            } else {
                self.seq_offset(f, ddir)
            };
            if let Some((rel, len)) = placed {
                self.note_trim_start(f, ddir, rel);
                return Some((ddir, f, rel, len));
            }
            self.files[f].done = true;
            self.files_left -= 1;
            if self.files_left == 0 {
                return None;
            }
        }
    }

    /// A strided job's next I/O (strided.rs): a random block of the current
    /// zone's range, or where the direction's stream left off in it (after
    /// its hole, with `rw=write:N`). The zones go on past the region into
    /// the rest of the file. None: the file is done, as fio 3.33's
    /// get_next_offset and fill_io_u end it: an offset into the zone at or
    /// past the region's size (`io_size`), a block past the file's end (no
    /// wrap: `zonesize=6m zoneskip=4m` reads 616 MiB of a 1 GiB device), or
    /// a zone's random map used up before its range was done (three 1536k
    /// blocks in a 5m range: three reads). `rw=randread:N` runs and
    /// `percentage_random` do not apply inside zones.
    #[cold]
    #[inline(never)]
    fn strided_offset(&mut self, ddir: Ddir) -> Option<(u64, u64)> {
        let i = ddir.index();
        let Some(z) = self.strided.as_mut() else {
            unreachable!("strided_offset without zones")
        };
        let step = z.before_io(self.files[0].last_end[i]);
        let (zone, room) = (z.start(), z.file_room());
        if step.reset_map {
            // fio_file_reset: every stream and the random map start over.
            self.files[0].last_end = [zone; 3];
            self.files[0].last_start = [NO_START; 3];
            for r in &mut self.rand {
                r.start_pass(false);
            }
        } else if step.restart_streams {
            self.files[0].last_end[i] = zone;
        }
        if self.repeats_last_trim(ddir) {
            let (rel, len) = self.repeat_last_trim(0)?;
            if let Some(z) = self.strided.as_mut() {
                z.after_io(len);
            }
            return Some((rel, len));
        }
        let pos = if self.random {
            let picker = &mut self.rand[self.group_of[i]];
            if picker.used_up() {
                // get_next_rand_block: only a time_based job resets the map.
                if !self.time_based {
                    return None;
                }
                picker.start_pass(false);
            }
            zone + picker.next(&mut self.rng_off) * self.align[i]
        } else {
            let last = self.files[0].last_end[i];
            if last > zone && self.seq_add > 0 {
                last.saturating_add(self.seq_add as u64)
            } else {
                last
            }
        };
        // (A time_based stream wraps inside its zone instead, in fio's
        // get_next_seq_offset; the model lets it go on.)
        let past_size = pos - zone >= self.files[0].len && !self.time_based;
        if past_size || pos.saturating_add(self.min_bs[i]) > room {
            return None;
        }
        let len = self.bs[i].pick(&mut self.rng_bs, room - pos);
        if pos + len > room {
            return None;
        }
        if let Some(z) = self.strided.as_mut() {
            z.after_io(len);
        }
        self.note_trim_start(0, ddir, pos);
        Some((pos, len))
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

    /// A pass is done and another is due: fio's `do_io` returns, waits for
    /// the job's in-flight I/O, runs the end-of-pass sync, and `thread_main`
    /// calls it again (backend.c) while `keep_running` says so: for `loops=`,
    /// then while the job's bytes are short of io_size (or size) by a
    /// largest block. A job that has moved no bytes at all ends
    /// (thread_main's `fio_mark_td_terminate`: the counts it looks at are
    /// the job's, not the pass's), so a later pass may come up empty and
    /// the next draw again: `randread bs=12k size=1600k io_size=5568k
    /// zonerange=2m`, whose draws past 1600k end a pass, reads all 5568k in
    /// fio 3.33. fio would spin on passes that can never move a byte; the
    /// model stops after `EMPTY_PASSES_MAX` in a row. Never for
    /// `time_based` jobs, which wrap inside one pass.
    #[inline]
    pub fn between_passes(&self) -> bool {
        !self.time_based
            && self.pass_done()
            && (self.verify_due()
                || (self.all_bytes > 0
                    && self.empty_passes < EMPTY_PASSES_MAX
                    && (self.passes_left > 0 || self.keep_running_after_loops())))
    }

    /// The pass's writes are done and are to be read back next: the pass
    /// that `begin_next_pass` starts is the read-back.
    pub fn verify_due(&self) -> bool {
        self.verify
            .as_ref()
            .is_some_and(|v| v.phase == ReadBack::Pending && v.writes > 0)
    }

    /// The read-back's next read: the replay's next write, as a read.
    /// None when every write of the pass was read.
    #[cold]
    fn next_verify_read(&mut self) -> Option<IoUnit> {
        let v = self.verify.as_mut()?;
        while let ReadBack::Reading(left @ 1..) = v.phase {
            let Some(io) = v.replay.next_io() else {
                break;
            };
            if io.ddir == Ddir::Write {
                v.phase = ReadBack::Reading(left - 1);
                // fio's number_ios counts the read-back's reads too
                // (`exceeds_number_ios` sums io_blocks of every direction),
                // and so does keep_running's byte count.
                self.ios += 1;
                self.all_bytes += io.len;
                return Some(IoUnit {
                    ddir: Ddir::Read,
                    ..io
                });
            }
        }
        v.phase = ReadBack::Done;
        None
    }

    /// fio's `keep_running` once `loops` are used up: while fewer than
    /// number_ios were done and the job's bytes of every direction (the
    /// read-backs' too) are short of io_size, or size, by at least a
    /// largest block; without io_size only while some file is not done,
    /// and a read-back's `clear_io_state` marks every file not done again.
    /// So `rw=write:64k bs=12k size=36m verify=crc32c` on a 36 MiB file
    /// makes four passes of 485 writes and reads (fio 3.33: 1940 of each),
    /// and with io_size the read-backs' bytes halve the writes.
    fn keep_running_after_loops(&self) -> bool {
        let files_not_done = self.verify.is_some() || self.files_left > 0;
        self.ios < self.max_ios
            && (self.io_size_given || files_not_done)
            && self.loop_bytes.saturating_sub(self.all_bytes) >= self.max_bs
    }

    /// Every file is done, the job's budget is issued, or the pass's size
    /// is: fio's `do_io` goes on while fewer bytes were issued, so the last
    /// block may overshoot (fio 3.33: `bs=64k io_size=100k` does 2 writes,
    /// `bs=1m size=4m io_size=4k` one, `bs=3000 size=16m filesize=32m`
    /// 5593; `bs=12k size=352k loops=4` on a device 30+30+30+28, the
    /// budget being 4 x 352k). A block must fit in its file, which is what
    /// stops `size=16m bs=3000` at 5592 on a file of 16 MiB.
    #[inline]
    fn pass_done(&self) -> bool {
        self.files_left == 0
            || self.done_bytes >= self.budget_end
            || self.pass_queued >= self.pass_limit
    }

    /// Start the next pass (after `between_passes`).
    #[cold]
    pub fn begin_next_pass(&mut self) {
        debug_assert!(self.between_passes());
        if self.verify_due() {
            // fio's clear_io_state, then do_verify.
            if let Some(v) = self.verify.as_mut() {
                v.phase = ReadBack::Reading(v.writes);
            }
            self.wrapped = Wrapped::All;
            return;
        }
        self.passes_left = self.passes_left.saturating_sub(1);
        if self.pass_issued == 0 {
            self.empty_passes += 1;
        } else {
            self.empty_passes = 0;
        }
        for f in &mut self.files {
            let shift = std::mem::take(&mut f.shift_next_pass);
            f.start += shift;
            f.before += shift;
            f.len = f.len.saturating_sub(shift);
        }
        self.next_loop();
    }

    /// Every file starts over: fio's `clear_io_state` before a pass.
    #[cold]
    fn next_loop(&mut self) {
        self.wrapped = Wrapped::All;
        self.pass_issued = 0;
        self.pass_queued = 0;
        for f in &mut self.files {
            f.seq_next = [RESTART; 3];
            f.last_end = [0; 3];
            f.last_start = [NO_START; 3];
            f.done = false;
        }
        self.files_left = self.files.len();
        // fio's clear_io_state reseeds every random stream when
        // `randrepeat` is set (td_fill_rand_seeds), so each pass draws the
        // first pass's directions, sizes and offsets again; without it the
        // streams go on (libfio.c, fio 3.33).
        let repeat = self.first_pass_rngs.is_some();
        if let Some(first) = self.first_pass_rngs.as_deref().cloned() {
            first.restore(self);
        }
        for r in &mut self.rand {
            r.start_pass(repeat);
        }
        self.rand_run_left = 0;
        self.file_choice.restart();
        if let Some(z) = self.strided.as_mut() {
            z.restart();
        }
        // The last pass's replay goes first, so the snapshot does not copy it.
        if self.verify.take().is_some() {
            self.verify = Some(Verify::new(self.clone()));
        }
    }

    #[inline]
    fn account(&mut self, io: IoUnit) {
        if io.ddir == Ddir::Write {
            if let Some(v) = self.verify.as_mut() {
                v.writes += 1;
            }
        }
        self.ios += 1;
        self.pass_issued += io.len;
        if self.pass_counted[io.ddir.index()] {
            self.pass_queued += io.len;
        }
        self.all_bytes += io.len;
        if self.counted[io.ddir.index()] {
            self.done_bytes += io.len;
        }
    }

    /// Sequential: from the file start, adding `seq_add` after each I/O
    /// (a negative one steps back: `seq_backward`). A `time_based` job
    /// wraps around at the region's end; otherwise the file is done (None)
    /// where fio's `get_next_seq_offset` and `get_next_offset` end it.
    #[inline]
    fn seq_offset(&mut self, f: usize, ddir: Ddir) -> Option<(u64, u64)> {
        let i = ddir.index();
        if self.seq_add < 0 {
            let pos = self.seq_backward(f, i)?;
            let file = &self.files[f];
            let len = self.bs[i].pick(&mut self.rng_bs, file.len - pos);
            return Some((pos, len));
        }
        if !self.time_based && self.files[f].seq_next[i] != RESTART {
            let file = &self.files[f];
            let pos = self.seq_forward(file, i)?;
            let len = self.bs[i].pick(&mut self.rng_bs, file.len - pos);
            self.files[f].seq_next[i] = pos + len;
            return Some((pos, len));
        }
        let file = &self.files[f];
        let mut pos = file.seq_next[i];
        // A block may no longer start here (fio's time_based reset at
        // io_size, or a block past the file): the stream starts over at 0.
        let wraps = pos != RESTART && !self.seq_fits(file, i, pos);
        if wraps {
            self.note_wrap(f);
        }
        if pos == RESTART || wraps {
            pos = 0;
        }
        let file = &mut self.files[f];
        let len = self.bs[i].pick(&mut self.rng_bs, file.len - pos);
        // seq_add >= 0 here (a negative one went to seq_backward).
        file.seq_next[i] = (pos + len).saturating_add(self.seq_add as u64);
        Some((pos, len))
    }

    /// A stream with a negative hole (`rw=read:-8k`), as fio 3.33's
    /// get_next_seq_offset computes it, in fio's mixed coordinates: the
    /// first I/O is at the region's start, each later one `seq_add` from
    /// the end of the last, and a step below the file's start wraps to
    /// `seq_add` before the region's size (io_size, as an offset into the
    /// file). A region that does not start at the file's start begins
    /// from there instead. So the stream walks down only when the hole is
    /// longer than the block: with 4k blocks in a 16k file, `-8k` reads
    /// blocks 0, 2, 1, 0, 2, 1, ...; `-4k` reads block 0 over and over;
    /// `-1` reads on forward at 0, 4095, 8190, ... (checked with fio 3.33's
    /// write_iolog, also with offset=4k). A time_based job with one file
    /// starts over where a stream passes the region's end.
    #[cold]
    fn seq_backward(&mut self, f: usize, i: usize) -> Option<u64> {
        let single_file = self.files.len() == 1;
        let file = &mut self.files[f];
        let real_size = file.real_size();
        if self.time_based && single_file && file.last_end[i] >= file.len {
            file.last_end[i] = 0;
            self.note_wrap(f);
        }
        let file = &self.files[f];
        // fio's last_pos, absolute in the file.
        let mut last = file.before + file.last_end[i];
        if last >= real_size {
            return None;
        }
        // "Only rewind if we already hit the end": fio sets last_pos to the
        // smaller of io_size and real_file_size (the region's size, as the
        // file holds it), which it then takes as absolute.
        if last == file.before && file.before != 0 {
            last = file.len;
        }
        let mut pos = last.wrapping_sub(file.before);
        if pos != 0 {
            pos = pos.wrapping_add_signed(self.seq_add);
            if pos >= real_size {
                pos = file.len.wrapping_add_signed(self.seq_add);
            }
        }
        // get_next_offset and fill_io_u: inside the region and the file.
        self.seq_fits(file, i, pos).then_some(pos)
    }

    /// A forward stream's next offset after its first I/O, or None when the
    /// file is done (fio 3.33 io_u.c): at the file's own end it is done;
    /// a hole that would cross the file's end wraps to its start (holes
    /// inside a longer device region do not: they end it); an offset
    /// where the smallest block no longer fits the region ends it.
    #[inline]
    fn seq_forward(&self, file: &FileState, i: usize) -> Option<u64> {
        let last = file.last_end[i];
        // fio's get_next_seq_offset holds the absolute last_pos against
        // real_file_size, but the relative position after a hole against
        // it too, and wraps that to file_offset, as a relative position:
        // so a hole wraps a stream in a file that starts at 0 (fio 3.33:
        // rw=write:4k bs=4k size=4m nrfiles=3 writes 1024 blocks, wrapping
        // in each 1398101-byte file) but not one that starts further in
        // (offset=151m: 171 per file, then each file is done).
        let real_size = file.real_size();
        if file.before + last >= real_size {
            return None;
        }
        let mut pos = last + self.seq_add as u64;
        if pos >= real_size && self.seq_add > 0 {
            pos = file.before;
        }
        self.seq_fits(file, i, pos).then_some(pos)
    }

    /// Whether a sequential block may start at `pos` (fio 3.33 io_u.c):
    /// inside the region (`get_next_offset`: offset < io_size); a fixed
    /// size then only has to end inside the file or device
    /// (`fill_io_u` against `real_file_size`), so on a device the last block
    /// may pass the region's end (`size=1108k bs=128k`: 9 reads); a range
    /// of sizes needs its smallest to fit the region (`io_u_fits`).
    #[inline]
    fn seq_fits(&self, file: &FileState, i: usize, pos: u64) -> bool {
        match self.bs[i] {
            BsChooser::Fixed(b) => {
                pos < file.len && pos.saturating_add(b) <= file.len.saturating_add(file.after)
            }
            _ => pos.saturating_add(self.min_bs[i]) <= file.len,
        }
    }

    /// Random: a block from the file's picker; with `rw=randread:N`, the
    /// N-1 I/Os after each jump continue sequentially. None: the file is
    /// done (its random map is used up, or a continuation left the region).
    #[inline]
    fn random_offset(&mut self, f: usize, ddir: Ddir) -> Option<(u64, u64)> {
        let i = ddir.index();
        let file_len = self.files[f].len;
        // fio continues from the last I/O's end between jumps of
        // `rw=randread:N` (wrapping to the start), and for the sequential
        // share of `percentage_random` (a random block at the end instead).
        let mut continued = Continue::Random;
        if self.rand_run > 1 {
            if self.rand_run_left > 0 {
                self.rand_run_left -= 1;
                continued = self.continue_in_file(f, i);
            } else {
                self.rand_run_left = self.rand_run - 1;
            }
        }
        if continued == Continue::Random
            && self.random_extras
            && self.percentage_random[i] < 100
            && !self.should_do_random(i)
        {
            continued = self.continue_in_file(f, i);
        }
        match continued {
            Continue::At(pos) => {
                let len = self.bs[i].pick(&mut self.rng_bs, file_len - pos);
                return Some((pos, len));
            }
            Continue::FileDone => return None,
            Continue::Random => {}
        }
        let picker = f * self.groups + self.group_of[i];
        let block = if self.zoned.is_empty() {
            let picker = &mut self.rand[picker];
            // A full map: fio's get_next_rand_offset fails, and only a
            // time_based job or a non-uniform file service resets the
            // file and goes on.
            if picker.used_up() && !self.time_based && !self.file_choice.resets_full_files() {
                return None;
            }
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
        if pos >= file_len {
            // The region moved in after the map was made (a percentage
            // offset resolved again): fio's get_next_offset finds the block
            // past the file's end, and the file is done.
            return None;
        }
        let mut len = self.bs[i].pick(&mut self.rng_bs, file_len - pos);
        if self.random_extras && self.zoned.is_empty() {
            let blocks = len.div_ceil(align);
            let kept = self.rand[picker].mark(block, blocks);
            if kept < blocks {
                len = kept * align;
            }
        }
        Some((pos, len))
    }

    /// fio's `should_do_random`: `rand_between(1, 100) <= perc_rand`.
    #[cold]
    fn should_do_random(&mut self, i: usize) -> bool {
        let draw = (self.rng_seq.next_u32() as u64 * 100) >> 32;
        draw < u64::from(self.percentage_random[i])
    }

    /// Where the last I/O of this direction ended, while a block still fits
    /// there (`get_next_seq_offset`, io_u.c). At the region's end a
    /// time_based job wraps to its start; otherwise, at the file's own end
    /// a random block follows, and short of it (the region ends inside a
    /// longer device, or less than a block is left) the file is done.
    #[inline]
    fn continue_in_file(&self, f: usize, i: usize) -> Continue {
        let file = &self.files[f];
        let pos = file.last_end[i];
        if self.seq_fits(file, i, pos) {
            Continue::At(pos)
        } else if self.time_based {
            Continue::At(0)
        } else if pos >= file.len && !file.more_after {
            Continue::Random
        } else {
            Continue::FileDone
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

/// A generator's random streams at one moment (`first_pass_rngs`).
#[derive(Clone, Debug)]
struct PassRngs {
    ddir: ChaCha8Rng,
    bs: ChaCha8Rng,
    off: ChaCha8Rng,
    seq: ChaCha8Rng,
    file: ChaCha8Rng,
}

impl PassRngs {
    fn of(g: &Generator) -> PassRngs {
        PassRngs {
            ddir: g.rng_ddir.clone(),
            bs: g.rng_bs.clone(),
            off: g.rng_off.clone(),
            seq: g.rng_seq.clone(),
            file: g.file_choice.rng().clone(),
        }
    }

    fn restore(self, g: &mut Generator) {
        g.rng_ddir = self.ddir;
        g.rng_bs = self.bs;
        g.rng_off = self.off;
        g.rng_seq = self.seq;
        g.file_choice.reseed(self.file);
    }
}

/// The directions whose bytes count against size: fio counts only the
/// write half of a trimwrite.
fn counted_dirs(spec: &JobSpec, mode: DdirMode) -> [bool; 3] {
    let mut counted = [false; 3];
    for &d in spec.rw.ddirs() {
        counted[d.index()] = true;
    }
    if matches!(mode, DdirMode::TrimWrite) {
        counted[Ddir::Trim.index()] = false;
    }
    counted
}

/// Bytes after which a pass ends (and is reseeded).
fn pass_limit(spec: &JobSpec, layout: &JobLayout, mode: DdirMode, verify_passes: bool) -> u64 {
    let random = spec.rw.is_random();
    // A trimwrite's limit is size plus the whole budget, but do_io counts
    // only what an async engine queued, and every engine trims
    // synchronously (libaio's and io_uring's BLKDISCARD): the writes alone
    // never reach it before the budget ends the job (fio 3.33: `trimwrite
    // bs=8k size=140k` on libaio does 18 trims and 18 writes).
    if (spec.time_based && !verify_passes) || matches!(mode, DdirMode::TrimWrite) {
        u64::MAX
    } else if random && spec.norandommap && spec.rw.ddirs().contains(&Ddir::Write) {
        // do_io lets a random writer without a map reach io_size in one
        // pass (`total_bytes = max(size, io_size)`), so such a pass is not
        // cut and reseeded at size (fio 3.33: `randwrite norandommap
        // size=64k io_size=128k` is one pass of 32 writes; the same as
        // randread, two passes of 16).
        layout.pass_bytes.max(layout.io_bytes)
    } else {
        layout.pass_bytes
    }
}

/// number_ios over all loops; a trimwrite's trims count too, and fio
/// doubles number_ios for it (backend.c do_io).
fn max_ios(spec: &JobSpec, mode: DdirMode, loops: u64) -> u64 {
    spec.number_ios.filter(|&n| n > 0).map_or(u64::MAX, |n| {
        let pairs = if matches!(mode, DdirMode::TrimWrite) {
            2
        } else {
            1
        };
        n.saturating_mul(loops).saturating_mul(pairs)
    })
}

/// The directions whose bytes end a pass at `size`: fio's `do_io` adds to
/// `bytes_issued` only what the engine queued (`FIO_Q_QUEUED`), not what
/// completed inside the call (`FIO_Q_COMPLETED`; backend.c
/// `io_queue_event`, fio 3.33). A synchronous engine (and `null` at
/// iodepth 1, which marks itself `FIO_SYNCIO`) completes every call there,
/// and every engine trims synchronously, so neither ends a pass: such a
/// pass runs until its files are done or the job's whole budget
/// (`io_size` x `loops`) is issued. fio 3.33: `rw=randwrite norandommap
/// loops=2 size=64k` does one pass of 32 writes under psync (one open, the
/// offsets never repeat) and two of 16 under libaio (reopened, reseeded).
fn pass_counted_dirs(spec: &JobSpec) -> [bool; 3] {
    let queues = match spec.ioengine.kind {
        EngineKind::Sync | EngineKind::NotModelled => false,
        EngineKind::Null => spec.iodepth != 1,
        EngineKind::Async | EngineKind::Passthrough => true,
    };
    [queues, queues, false]
}

/// Per direction: the block size chooser, its smallest size and the block
/// alignment (`blockalign`, else the smallest size).
struct Sizes {
    bs: [BsChooser; 3],
    min_bs: [u64; 3],
    align: [u64; 3],
    needs: [u64; 3],
}

/// The job's block sizes, and every region large enough for them.
fn sizes(spec: &JobSpec, placed: &[Ddir], layout: &JobLayout) -> Result<Sizes, GenError> {
    let mut bs: [BsChooser; 3] = std::array::from_fn(|_| BsChooser::Fixed(4096));
    for d in Ddir::ALL {
        match BsChooser::new(&spec.bs[d.index()], spec.bs_unaligned) {
            Ok(c) => bs[d.index()] = c,
            // Unused directions never pick a size; do not fail on them.
            Err(e) if placed.contains(&d) => return Err(GenError::at("bs")(e)),
            Err(_) => {}
        }
    }
    let min_bs = [bs[0].min(), bs[1].min(), bs[2].min()];
    let align = [0, 1, 2].map(|i| spec.blockalign[i].filter(|&a| a > 0).unwrap_or(min_bs[i]));
    let needs = [0, 1, 2].map(|i| min_bs[i].max(align[i]));
    // A direction whose block fits no file only ends passes (fio 3.33:
    // `rw=randrw bs=4k,1m size=256k` reads until it draws a write). When no
    // direction the job draws fits anywhere, fio does no I/O at all and
    // says nothing; that is refused here.
    let max_len = layout.files.iter().map(|f| f.len).max().unwrap_or(0);
    let drawn = placed.iter().filter(|&&d| match spec.rw {
        RwPattern::ReadWrite | RwPattern::RandRw => match d {
            Ddir::Read => spec.rwmixread > 0,
            _ => spec.rwmixread < 100,
        },
        _ => true,
    });
    if drawn.clone().all(|d| max_len < needs[d.index()]) {
        let blocks: Vec<String> = drawn
            .map(|&d| format!("{} {} bytes", ddir_name(d), needs[d.index()]))
            .collect();
        return Err(GenError::at("size")(format!(
            "its region ({max_len} bytes) is smaller than its block size ({}); \
             fio would run it and do no I/O",
            blocks.join(", ")
        )));
    }
    Ok(Sizes {
        bs,
        min_bs,
        align,
        needs,
    })
}

/// Directions share a random picker when their alignment and smallest size
/// agree (`keys[g]` = (alignment, smallest size) of group g).
struct Groups {
    of: [usize; 3],
    keys: Vec<(u64, u64)>,
    /// Per group: can one I/O cover more than one of its blocks? Then the
    /// group keeps fio's random map (sizes measured in blocks of min bs).
    varied: Vec<bool>,
}

impl Groups {
    fn new(placed: &[Ddir], bs: &[BsChooser; 3], min_bs: &[u64; 3], align: &[u64; 3]) -> Groups {
        let mut of = [0usize; 3];
        let mut keys: Vec<(u64, u64)> = Vec::new();
        for &d in placed {
            let i = d.index();
            let key = (align[i], min_bs[i]);
            of[i] = match keys.iter().position(|&k| k == key) {
                Some(g) => g,
                None => {
                    keys.push(key);
                    keys.len() - 1
                }
            };
        }
        let varied = keys
            .iter()
            .enumerate()
            .map(|(g, &(ba, min))| {
                ba == min
                    && placed
                        .iter()
                        .any(|d| of[d.index()] == g && bs[d.index()].max() > min)
            })
            .collect();
        Groups { of, keys, varied }
    }
}

/// `zonemode=strided` for a job with one file (fio turns it off for more).
fn strided_zones(
    spec: &JobSpec,
    layout: &JobLayout,
    placed: &[Ddir],
    min_bs: &[u64; 3],
    align: &[u64; 3],
) -> Result<Option<Strided>, String> {
    let (Some(z), [f]) = (spec.strided_zones, layout.files.as_slice()) else {
        return Ok(None);
    };
    let largest = placed
        .iter()
        .map(|d| min_bs[d.index()].max(align[d.index()]));
    if z.range < largest.max().unwrap_or(1) {
        return Err(format!(
            "zonerange ({} bytes) is smaller than the block size",
            z.range
        ));
    }
    Ok(Some(Strided::new(z, f.len + f.after)))
}

/// A random picker per file and group, `files × groups`.
fn random_pickers(
    spec: &JobSpec,
    layout: &JobLayout,
    groups: &Groups,
    strided: Option<&Strided>,
    rng: &mut ChaCha8Rng,
) -> Result<Vec<RandomBlocks>, String> {
    let mut rand = Vec::with_capacity(layout.files.len() * groups.keys.len());
    for f in &layout.files {
        // A strided job's random blocks are those of one zone range (fio's
        // last_block with zone_range).
        let span = strided.map_or(f.len, |z| z.range().min(f.len + f.after));
        for (g, &(ba, min)) in groups.keys.iter().enumerate() {
            // fio's last_block(): the last start that leaves room for min bs.
            let usable = span.saturating_sub(min.saturating_sub(ba));
            // An empty range (no block fits this file) is never drawn from.
            let n = (usable / ba).clamp(1, (1 << 62) - 1);
            rand.push(RandomBlocks::new(n, spec, groups.varied[g], rng)?);
        }
    }
    Ok(rand)
}

/// `random_distribution=zoned:`/`zoned_abs:` pickers, `files × 3`.
fn zoned_pickers(
    zones: &[Vec<crate::job::RandomZone>; 3],
    layout: &JobLayout,
    placed: &[Ddir],
    min_bs: &[u64; 3],
    align: &[u64; 3],
) -> Result<Vec<ZonedBlocks>, String> {
    let mut zoned = Vec::with_capacity(layout.files.len() * 3);
    for f in &layout.files {
        for d in Ddir::ALL {
            let i = d.index();
            let usable = f.len.saturating_sub(min_bs[i].saturating_sub(align[i]));
            let n = (usable / align[i].max(1)).max(1);
            zoned.push(match ZonedBlocks::new(&zones[i], n, align[i]) {
                Ok(z) => z,
                Err(e) if placed.contains(&d) => return Err(e),
                Err(_) => ZonedBlocks::new(&[], n, align[i])?,
            });
        }
    }
    Ok(zoned)
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
