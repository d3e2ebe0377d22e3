//! Which of a job's files the next I/O goes to: fio's `file_service_type`
//! (`get_next_file` in fio 3.33 io_u.c).
//!
//! - `roundrobin` (the default) and `sequential` walk the files in order,
//!   skipping done ones; `sequential` stays on a file until it is done,
//!   the others move on after `per_turn` I/Os (`:N`, default 1).
//! - `random` draws a file uniformly; `zipf`, `pareto` and `normal`/`gauss`
//!   draw it by popularity. fio scatters a popularity rank over the files
//!   with a hash; here rank r is file r (the hottest is the first file), so
//!   the files' shares are fio's and only which file gets which share
//!   differs.
//! - A draw that lands on a done file is drawn again, as fio does; after
//!   `MAX_REDRAWS` misses (a non-uniform type whose only open files are
//!   unpopular) the next open file in order is taken instead, where fio
//!   would keep drawing.

use super::bs::uniform_below;
use super::dist::{Normal, Pareto, Zipf};
use super::FileState;
use crate::job::{FileService, FileServiceKind};
use rand::RngCore;
use rand_chacha::ChaCha8Rng;

/// Draws before a random file service falls back to the next open file.
const MAX_REDRAWS: u32 = 64;

#[derive(Clone, Debug)]
enum Popularity {
    Uniform,
    Zipf(Zipf),
    Pareto(Pareto),
    Normal(Normal),
}

/// The file service state of one job.
#[derive(Clone, Debug)]
pub(super) struct FileChoice {
    kind: FileServiceKind,
    per_turn: u32,
    /// fio's `file_service_file`: the file of the current turn.
    current: Option<usize>,
    /// fio's `file_service_left`: I/Os of the turn after the current one.
    turn_left: u32,
    /// fio's `next_file`: where the round robin looks next.
    next_rr: usize,
    popularity: Popularity,
    rng: ChaCha8Rng,
}

impl FileChoice {
    pub(super) fn new(service: FileService, nr_files: usize, rng: ChaCha8Rng) -> FileChoice {
        let n = nr_files.max(1) as u64;
        let popularity = match service.kind {
            FileServiceKind::Zipf(theta) => Popularity::Zipf(Zipf::new(n, theta)),
            FileServiceKind::Pareto(h) => Popularity::Pareto(Pareto::new(n, h)),
            FileServiceKind::Normal(dev) => Popularity::Normal(Normal::new(n, dev, None)),
            _ => Popularity::Uniform,
        };
        FileChoice {
            kind: service.kind,
            per_turn: service.per_turn.max(1),
            current: None,
            turn_left: 0,
            next_rr: 0,
            popularity,
            rng,
        }
    }

    /// A file whose random map is full starts over instead of being done
    /// (`__FIO_FSERVICE_NONUNIFORM` in get_next_rand_offset).
    pub(super) fn resets_full_files(&self) -> bool {
        self.kind.non_uniform()
    }

    /// A new pass: the first turn starts from scratch (fio's
    /// `clear_io_state` closes the files and resets `next_file`).
    pub(super) fn restart(&mut self) {
        self.current = None;
        self.turn_left = 0;
        self.next_rr = 0;
    }

    /// The random stream as it was before the first pick (`randrepeat`
    /// reseeds it at every pass).
    pub(super) fn rng(&self) -> &ChaCha8Rng {
        &self.rng
    }

    pub(super) fn reseed(&mut self, rng: ChaCha8Rng) {
        self.rng = rng;
    }

    /// The file of the next I/O; some file must not be done.
    #[inline]
    pub(super) fn pick(&mut self, files: &[FileState]) -> usize {
        if files.len() == 1 {
            return 0;
        }
        if let Some(f) = self.current.filter(|&f| !files[f].done) {
            if self.kind == FileServiceKind::Sequential {
                return f;
            }
            if self.turn_left > 0 {
                self.turn_left -= 1;
                return f;
            }
        }
        let f = match self.kind {
            FileServiceKind::RoundRobin | FileServiceKind::Sequential => self.round_robin(files),
            _ => self.draw(files),
        };
        self.current = Some(f);
        self.turn_left = self.per_turn - 1;
        f
    }

    /// fio's `get_next_file_rr`: the next file in order that is not done.
    fn round_robin(&mut self, files: &[FileState]) -> usize {
        let n = files.len();
        for _ in 0..n {
            let f = self.next_rr;
            self.next_rr = if f + 1 == n { 0 } else { f + 1 };
            if !files[f].done {
                return f;
            }
        }
        debug_assert!(false, "every file is done");
        0
    }

    /// fio's `get_next_file_rand`: draw until the file is not done.
    fn draw(&mut self, files: &[FileState]) -> usize {
        let n = files.len() as u64;
        for _ in 0..MAX_REDRAWS {
            let f = match &mut self.popularity {
                // fio: nr_files * (r / (FRAND32_MAX + 1.0)).
                Popularity::Uniform => uniform_below(self.rng.next_u64(), n),
                Popularity::Zipf(z) => z.sample(&mut self.rng),
                Popularity::Pareto(p) => p.sample(&mut self.rng),
                Popularity::Normal(d) => d.sample(&mut self.rng),
            };
            let f = f.min(n - 1) as usize;
            if !files[f].done {
                return f;
            }
        }
        self.round_robin(files)
    }
}
