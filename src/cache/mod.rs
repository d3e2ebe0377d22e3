//! The page cache of buffered I/O (Linux mm/filemap.c, mm/page-writeback.c,
//! fs/fs-writeback.c; v6.1 unless said otherwise): per file the state of
//! every page (absent / clean / dirty / writeback, as extents), the global
//! Dirty and Writeback counters, LRU eviction of clean pages when the cache
//! is full, the dirty limits and `balance_dirty_pages`, and what the
//! flusher needs (inode order, chunks of contiguous dirty pages).
//!
//! The cache does no I/O and keeps no time of its own: tasks (the fio job
//! driver, the flusher) call it at their current time and submit the bios
//! it tells them about.
//!
//! Files: the regions the workload lays out on the device (overlapping
//! regions, as jobs sharing a file or a raw device, are one inode). A page
//! is named by its device page number (byte offset / 4096): files sit at
//! fixed places on the device, so a file page and its disk block are the
//! same number (delayed allocation places them at writeback in ext4; the
//! model's layout already did).
//!
//! Model parameter (not a kernel constant): the memory the page cache may
//! use is the machine's memory less 1/16 for the kernel and anonymous
//! memory; that matches the dirtyable memory the reference lists for the
//! lab VM (24 GiB → ≈22 GiB) and the build server (47 GB → ≈44 GiB).

pub mod dirty;
pub mod extents;
pub mod readahead;
pub mod vm;

use crate::sim::time::{Ns, NS_PER_SEC};
use dirty::{Dirtier, DomainState, Limits, Throttle, WriteBandwidth};
use extents::{Changes, Extent, ExtentMap, PageState};
use std::collections::{BTreeMap, BTreeSet};
use vm::VmSettings;

/// Bytes per page (`PAGE_SIZE`).
pub const PAGE: u64 = 4096;

/// One cached file (the inode and its `address_space`).
#[derive(Clone, Debug)]
pub struct FileCache {
    /// Its pages `[first, end)` on the device.
    pub first: u64,
    pub end: u64,
    pages: ExtentMap,
    /// Its extents that are dirty or under writeback, start -> (end,
    /// state): the kernel's DIRTY and WRITEBACK tags of the page tree, so
    /// fsync and the flusher visit what they write or wait for, not every
    /// cached extent (a random writer's clean pages scattered over a large
    /// file made each fsync walk all of them: minutes for one second).
    busy: BTreeMap<u64, (u64, PageState)>,
    /// When it went from clean to dirty (`inode->dirtied_when`); re-dirtying
    /// a dirty inode keeps it.
    pub dirtied_when: Option<Ns>,
    /// Its dirty pages (Dirty + DirtyWriteback).
    pub dirty: u64,
    /// Where the flusher's cyclic walk goes on (`mapping->writeback_index`).
    pub writeback_index: u64,
    /// Round-robin order among inodes that used a whole chunk (`b_more_io`).
    pub requeued: u64,
    /// Job file regions that name it (several when jobs share a file).
    pub users: u32,
}

impl FileCache {
    /// The dirty or writeback extent holding `page`, else the first one
    /// after it (whole, `seq` 0).
    fn busy_from(&self, page: u64) -> Option<Extent> {
        let extent = |(&start, &(end, state)): (&u64, &(u64, PageState))| Extent {
            start,
            end,
            state,
            seq: 0,
        };
        if let Some(e) = self.busy.range(..=page).next_back().map(extent) {
            if e.end > page {
                return Some(e);
            }
        }
        self.busy.range(page..).next().map(extent)
    }

    /// The dirty or writeback extents overlapping `[start, end)`, clipped
    /// to it, in order, as (start, end, state).
    fn busy_in(&self, start: u64, end: u64) -> impl Iterator<Item = (u64, u64, PageState)> + '_ {
        let head = self
            .busy
            .range(..start)
            .next_back()
            .filter(|(_, &(e, _))| e > start && start < end)
            .map(move |(_, &(e, st))| (start, e.min(end), st));
        let rest = self
            .busy
            .range(start..end.max(start))
            .map(move |(&s, &(e, st))| (s, e.min(end), st));
        head.into_iter().chain(rest)
    }
}

/// Page counts (`/proc/meminfo` names in comments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Every page in the cache (Cached).
    pub cached: u64,
    /// Dirty: dirty pages, including those re-dirtied under writeback.
    pub dirty: u64,
    /// Writeback.
    pub writeback: u64,
    /// Locked for a read in flight.
    pub reading: u64,
}

/// One sample of the page-cache view over time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub at: Ns,
    pub dirty_pages: u64,
    pub writeback_pages: u64,
    pub cached_pages: u64,
}

/// Most samples kept; when full, every other one goes and the interval
/// doubles (memory stays flat however long the run).
const MAX_SAMPLES: usize = 512;

/// The page-cache view a report prints.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CacheView {
    pub samples: Vec<Sample>,
    pub sample_every: Ns,
    pub peak_dirty: u64,
    pub peak_writeback: u64,
    /// Pages written back (completed), read in, evicted.
    pub written_pages: u64,
    pub read_pages: u64,
    pub evicted_pages: u64,
    /// Dirty pages dropped unwritten when their file was deleted
    /// (`/proc/PID/io` `cancelled_write_bytes`).
    pub cancelled_pages: u64,
    /// The thresholds in pages: background, dirty limit.
    pub bg_thresh: u64,
    pub thresh: u64,
    /// The page cache's capacity in pages.
    pub capacity: u64,
}

/// What the page cache starts from.
#[derive(Clone, Debug)]
pub struct CacheSetup {
    pub memory: u64,
    pub vm: VmSettings,
    /// Byte regions `(start, len)` of the files on the device.
    pub files: Vec<(u64, u64)>,
    /// Tasks that may dirty pages (ids 0..tasks).
    pub tasks: usize,
}

/// The page cache of one machine (one backing device).
pub struct PageCache {
    pub vm: VmSettings,
    files: Vec<FileCache>,
    capacity: u64,
    counts: Counts,
    /// Clean extents by last access: `(seq, file, first page)`.
    lru: BTreeSet<(u64, u32, u64)>,
    seq: u64,
    changes: Changes,
    scratch: Vec<Extent>,
    pub bw: WriteBandwidth,
    dirtiers: Vec<Dirtier>,
    last_dirtied: Vec<Option<Ns>>,
    /// The flusher's earliest wake-up asked for and not yet delivered.
    flusher_wake: Option<Ns>,
    /// The flusher task (the engine sets it).
    pub flusher_task: u32,
    /// Tasks waiting for writeback to end (fsync, `folio_wait_writeback`).
    writeback_waiters: Vec<u32>,
    /// Pages ever put under writeback (Dirty → Writeback): with
    /// `view.written_pages`, what lets a waiter wait for the writeback that
    /// was in flight when it looked, not for writeback started after.
    submitted_pages: u64,
    next_turn: u64,
    pub view: CacheView,
    next_sample: Ns,
    /// Jobs holding the raw block device open (`bd_openers`): its last
    /// close writes the device's dirty pages back (`blkdev_put`).
    pub device_openers: u32,
}

/// Memory the page cache may use, in pages (see the module note).
pub fn capacity_pages(memory: u64) -> u64 {
    (memory - memory / 16) / PAGE
}

impl PageCache {
    pub fn new(setup: &CacheSetup) -> PageCache {
        let mut regions: Vec<(u64, u64)> = setup
            .files
            .iter()
            .filter(|(_, len)| *len > 0)
            .map(|&(s, len)| (s / PAGE, (s + len).div_ceil(PAGE)))
            .collect();
        regions.sort_unstable();
        let mut files: Vec<FileCache> = Vec::new();
        for (first, end) in regions {
            match files.last_mut() {
                Some(f) if first < f.end => {
                    f.end = f.end.max(end);
                    f.users += 1;
                }
                _ => files.push(FileCache {
                    first,
                    end,
                    pages: ExtentMap::new(),
                    busy: BTreeMap::new(),
                    dirtied_when: None,
                    dirty: 0,
                    writeback_index: first,
                    requeued: 0,
                    users: 1,
                }),
            }
        }
        let capacity = capacity_pages(setup.memory);
        let limits = Limits::of(&setup.vm, capacity);
        PageCache {
            vm: setup.vm.clone(),
            files,
            capacity,
            counts: Counts::default(),
            lru: BTreeSet::new(),
            seq: 0,
            changes: Changes::default(),
            scratch: Vec::new(),
            bw: WriteBandwidth::default(),
            dirtiers: vec![Dirtier::default(); setup.tasks],
            last_dirtied: vec![None; setup.tasks],
            flusher_wake: None,
            flusher_task: u32::MAX,
            writeback_waiters: Vec::new(),
            submitted_pages: 0,
            next_turn: 1,
            view: CacheView {
                sample_every: NS_PER_SEC / 10,
                bg_thresh: limits.bg,
                thresh: limits.thresh,
                capacity,
                ..CacheView::default()
            },
            next_sample: 0,
            device_openers: 0,
        }
    }

    pub fn counts(&self) -> Counts {
        self.counts
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The dirty limits now: dirtyable memory is free plus file pages, i.e.
    /// all the page cache may use (no anonymous memory in the model).
    pub fn limits(&self) -> Limits {
        Limits::of(&self.vm, self.capacity)
    }

    pub fn files(&self) -> &[FileCache] {
        &self.files
    }

    /// The file holding device page `page`.
    pub fn file_of(&self, page: u64) -> Option<u32> {
        let i = self.files.partition_point(|f| f.first <= page);
        (i > 0 && page < self.files[i - 1].end).then(|| (i - 1) as u32)
    }

    /// Extents of all files (the cache's memory is proportional to it).
    pub fn extents(&self) -> usize {
        self.files.iter().map(|f| f.pages.extents()).sum()
    }

    /// Give `[start, end)` of `file` the states `f` maps to, keeping the
    /// counters, the per-file dirty count and the LRU index exact.
    fn apply(
        &mut self,
        file: u32,
        start: u64,
        end: u64,
        touch: bool,
        f: impl Fn(Option<PageState>) -> Option<PageState>,
    ) {
        self.seq += 1;
        let seq = self.seq;
        let mut changes = std::mem::take(&mut self.changes);
        changes.clear();
        let fc = &mut self.files[file as usize];
        fc.pages.apply(start, end, seq, touch, f, &mut changes);
        for &(inserted, e) in &changes.log {
            self.account(file, inserted, e);
        }
        self.changes = changes;
    }

    fn account(&mut self, file: u32, inserted: bool, e: Extent) {
        let n = e.len();
        let c = &mut self.counts;
        let fc = &mut self.files[file as usize];
        let add = |x: &mut u64| {
            if inserted {
                *x += n
            } else {
                *x -= n
            }
        };
        add(&mut c.cached);
        if e.state.is_dirty() {
            add(&mut c.dirty);
            add(&mut fc.dirty);
        }
        if e.state.is_dirty() || e.state.is_writeback() {
            if inserted {
                fc.busy.insert(e.start, (e.end, e.state));
            } else {
                let had = fc.busy.remove(&e.start);
                debug_assert_eq!(had, Some((e.end, e.state)), "busy extent at {}", e.start);
            }
        }
        if e.state.is_writeback() {
            add(&mut c.writeback);
        }
        if e.state == PageState::Reading {
            add(&mut c.reading);
        }
        if e.state == PageState::Clean {
            let key = (e.seq, file, e.start);
            if inserted {
                self.lru.insert(key);
            } else {
                let had = self.lru.remove(&key);
                debug_assert!(had, "clean extent {key:?} missing from the LRU");
            }
        }
    }

    /// Free clean pages, least recently used first, until the cache fits.
    fn evict(&mut self) {
        while self.counts.cached > self.capacity {
            let Some(&(_, file, start)) = self.lru.first() else {
                // Only dirty, writeback or locked pages left: they wait for
                // writeback (reclaim would wake the flusher; the dirty
                // limits keep this from happening long before).
                return;
            };
            let ext = self.files[file as usize]
                .pages
                .at(start)
                .expect("lru extent");
            let n = ext.len().min(self.counts.cached - self.capacity);
            self.apply(file, start, start + n, false, |_| None);
            self.view.evicted_pages += n;
        }
    }

    fn sample(&mut self, now: Ns) {
        let c = self.counts;
        self.view.peak_dirty = self.view.peak_dirty.max(c.dirty);
        self.view.peak_writeback = self.view.peak_writeback.max(c.writeback);
        if now < self.next_sample {
            return;
        }
        if self.view.samples.len() == MAX_SAMPLES {
            let mut i = 0;
            self.view.samples.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.view.sample_every = self.view.sample_every.saturating_mul(2);
        }
        self.view.samples.push(Sample {
            at: now,
            dirty_pages: c.dirty,
            writeback_pages: c.writeback,
            cached_pages: c.cached,
        });
        self.next_sample =
            (now - now % self.view.sample_every).saturating_add(self.view.sample_every);
    }

    /// Take the sample due at `now`, if any (tasks call it as they act).
    pub fn tick(&mut self, now: Ns) {
        self.sample(now);
    }

    // ---- reads ----

    /// The runs of `[start, end)` not in the cache, in order; they become
    /// `Reading` (locked, I/O to be submitted by the caller).
    pub fn fetch(&mut self, file: u32, start: u64, end: u64, missing: &mut Vec<(u64, u64)>) {
        missing.clear();
        let mut found = std::mem::take(&mut self.scratch);
        self.files[file as usize]
            .pages
            .overlapping(start, end, &mut found);
        let mut pos = start;
        for e in &found {
            push_run(missing, pos, e.start);
            pos = e.end;
        }
        push_run(missing, pos, end);
        self.scratch = found;
        for &(s, e) in missing.iter() {
            self.apply(file, s, e, true, |st| st.or(Some(PageState::Reading)));
        }
        self.evict();
    }

    /// Runs of `[start, end)` locked for a read in flight.
    pub fn reading_runs(&self, file: u32, start: u64, end: u64, out: &mut Vec<(u64, u64)>) {
        out.clear();
        let mut found = Vec::new();
        self.files[file as usize]
            .pages
            .overlapping(start, end, &mut found);
        for e in found.iter().filter(|e| e.state == PageState::Reading) {
            push_run(out, e.start, e.end);
        }
    }

    /// The first page of `[start, end)` not in the cache.
    pub fn first_absent(&self, file: u32, start: u64, end: u64) -> Option<u64> {
        let pages = &self.files[file as usize].pages;
        let mut pos = start;
        while pos < end {
            match pages.at(pos) {
                Some(e) => pos = e.end,
                None => return Some(pos),
            }
        }
        None
    }

    /// Whether every page of `[start, end)` is cached and up to date.
    pub fn uptodate(&self, file: u32, start: u64, end: u64) -> bool {
        let pages = &self.files[file as usize].pages;
        let mut pos = start;
        while pos < end {
            match pages.at(pos) {
                Some(e) if e.state.is_uptodate() => pos = e.end,
                _ => return false,
            }
        }
        true
    }

    /// Whether `page` is in the cache (up to date or being read).
    pub fn present(&self, file: u32, page: u64) -> bool {
        self.files[file as usize].pages.at(page).is_some()
    }

    /// Cached pages just before `page`, at most `max` (context readahead's
    /// `count_history_pages`).
    pub fn cached_before(&self, file: u32, page: u64, max: u64) -> u64 {
        let f = &self.files[file as usize];
        let mut n = 0;
        let mut pos = page;
        while n < max && pos > f.first {
            match f.pages.at(pos - 1) {
                Some(e) => {
                    n += pos - e.start;
                    pos = e.start;
                }
                None => break,
            }
        }
        n.min(max)
    }

    /// A read copied `[start, end)`: mark the pages accessed
    /// (`folio_mark_accessed`).
    pub fn touch(&mut self, file: u32, start: u64, end: u64) {
        self.apply(file, start, end, true, |s| s);
    }

    /// A read of `[start, end)` completed: its locked pages are up to date.
    pub fn read_done(&mut self, file: u32, start: u64, end: u64, now: Ns) {
        self.apply(file, start, end, true, |s| match s {
            Some(PageState::Reading) => Some(PageState::Clean),
            s => s,
        });
        self.view.read_pages += end - start;
        self.evict();
        self.sample(now);
    }

    /// fio's `pre_read`: the file's range is read into the cache before the
    /// job starts (fio reads it outside the measured phase).
    pub fn preload(&mut self, file: u32, start: u64, end: u64, now: Ns) {
        self.apply(file, start, end, true, |s| s.or(Some(PageState::Clean)));
        self.evict();
        self.sample(now);
    }

    /// fio's `invalidate` at open: `posix_fadvise(POSIX_FADV_DONTNEED)` on
    /// the range drops its clean pages; dirty and writeback pages stay.
    pub fn invalidate(&mut self, file: u32, start: u64, end: u64) {
        self.apply(file, start, end, false, |s| {
            s.filter(|&x| x != PageState::Clean)
        });
    }

    /// `invalidate_bdev` (BLKFLSBUF, a raw device's last close): every
    /// clean page of the device goes, whoever read it.
    pub fn invalidate_all(&mut self) {
        for file in 0..self.files.len() as u32 {
            let (first, end) = (
                self.files[file as usize].first,
                self.files[file as usize].end,
            );
            self.invalidate(file, first, end);
        }
    }

    /// The file is being deleted (its last link and opener gone:
    /// `truncate_inode_pages_final`): its clean and dirty pages go, dirty
    /// ones without being written (`folio_cancel_dirty`: Dirty falls and
    /// nothing reaches the device), a page re-dirtied under writeback loses
    /// its dirty bit. Pages under writeback stay until it ends (truncation
    /// waits for them): the caller waits and calls again. Pages a read has
    /// locked stay too; the read completing makes them clean cache of the
    /// name. Returns whether pages under writeback remain.
    pub fn delete_file(&mut self, file: u32, now: Ns) -> bool {
        let (first, end, dirty) = {
            let f = &self.files[file as usize];
            (f.first, f.end, f.dirty)
        };
        self.apply(file, first, end, false, |s| match s {
            Some(PageState::Writeback | PageState::DirtyWriteback) => Some(PageState::Writeback),
            Some(PageState::Reading) => Some(PageState::Reading),
            _ => None,
        });
        let f = &mut self.files[file as usize];
        debug_assert_eq!(f.dirty, 0);
        f.dirtied_when = None;
        f.requeued = 0;
        f.writeback_index = first;
        self.view.cancelled_pages += dirty;
        self.sample(now);
        self.writeback_in(file, first, end)
    }

    /// Pages dirty or under writeback anywhere.
    pub fn any_unwritten(&self) -> bool {
        self.counts.dirty > 0 || self.counts.writeback > 0
    }

    // ---- writes and dirty throttling ----

    /// A buffered write dirtied `[start, end)` at `now` by `task`: returns
    /// whether this made the inode dirty (the flusher's first-dirty
    /// wake-up). Only pages that were not dirty count for throttling
    /// (`folio_account_dirtied` runs on the clean → dirty transition).
    pub fn write(&mut self, file: u32, start: u64, end: u64, task: u32, now: Ns) -> bool {
        let before = self.files[file as usize].dirty;
        self.apply(file, start, end, true, |s| match s {
            Some(PageState::Writeback) | Some(PageState::DirtyWriteback) => {
                Some(PageState::DirtyWriteback)
            }
            _ => Some(PageState::Dirty),
        });
        let fc = &mut self.files[file as usize];
        let newly = fc.dirty - before;
        let first = fc.dirtied_when.is_none() && fc.dirty > 0;
        if first {
            fc.dirtied_when = Some(now);
        }
        if let Some(d) = self.dirtiers.get_mut(task as usize) {
            d.nr_dirtied += newly;
        }
        if let Some(t) = self.last_dirtied.get_mut(task as usize) {
            *t = Some(now);
        }
        self.evict();
        self.sample(now);
        first
    }

    /// Whether `task` has dirtied enough pages to call
    /// `balance_dirty_pages` (`balance_dirty_pages_ratelimited`).
    pub fn should_balance(&self, task: u32) -> bool {
        self.dirtiers
            .get(task as usize)
            .is_some_and(|d| d.nr_dirtied >= d.nr_dirtied_pause)
    }

    /// `balance_dirty_pages` for `task` at `now`.
    pub fn balance(&mut self, task: u32, now: Ns) -> Throttle {
        let c = self.counts;
        let window = NS_PER_SEC;
        let dirtiers = self
            .last_dirtied
            .iter()
            .filter(|t| t.is_some_and(|t| t + window >= now))
            .count() as u64;
        let state = DomainState {
            limits: self.limits(),
            reclaimable: c.dirty,
            // NR_FILE_DIRTY + NR_WRITEBACK: a page re-dirtied under
            // writeback counts in both, as in the kernel.
            dirty: c.dirty + c.writeback,
            write_bw: self.bw.avg_bw,
            dirtiers: dirtiers.max(1),
        };
        let d = &mut self.dirtiers[task as usize];
        dirty::balance(d, &state, now)
    }

    /// Whether background writeback should run (`wb_over_bg_thresh`:
    /// dirty pages alone, not those under writeback).
    pub fn over_background(&self) -> bool {
        self.counts.dirty > self.limits().bg
    }

    /// Ask for the flusher at `at`; true when that is earlier than any
    /// wake-up already asked for (the caller then arms it).
    pub fn want_flusher(&mut self, at: Ns) -> bool {
        if self.flusher_wake.is_some_and(|w| w <= at) {
            return false;
        }
        self.flusher_wake = Some(at);
        true
    }

    /// The flusher runs at `now`: wake-ups asked for up to now are served.
    pub fn flusher_running(&mut self, now: Ns) {
        if self.flusher_wake.is_some_and(|w| w <= now) {
            self.flusher_wake = None;
        }
    }

    // ---- writeback ----

    /// Dirty inodes in the order the flusher takes them: requeued ones
    /// (`b_more_io`) by their turn after the rest, then oldest dirtied
    /// first (`b_dirty` is kept in `dirtied_when` order). With `expired_by`
    /// only inodes dirtied at or before it (kupdate).
    pub fn dirty_inodes(&self, expired_by: Option<Ns>, out: &mut Vec<u32>) {
        out.clear();
        for (i, f) in self.files.iter().enumerate() {
            let Some(when) = f.dirtied_when else { continue };
            if f.dirty == 0 || expired_by.is_some_and(|t| when > t) {
                continue;
            }
            out.push(i as u32);
        }
        out.sort_by_key(|&i| {
            let f = &self.files[i as usize];
            (f.requeued, f.dirtied_when, i)
        });
    }

    /// Take up to `max_pages` dirty pages of `file` for writeback, from its
    /// cyclic index in file order (`write_cache_pages` with `range_cyclic`):
    /// the runs of contiguous dirty pages go to `runs` and become Writeback.
    /// WB_SYNC_NONE skips pages already under writeback. Returns the pages
    /// taken.
    pub fn take_dirty(&mut self, file: u32, max_pages: u64, runs: &mut Vec<(u64, u64)>) -> u64 {
        runs.clear();
        let (first, end, index) = {
            let f = &self.files[file as usize];
            (f.first, f.end, f.writeback_index)
        };
        let mut taken = 0;
        let mut pos = index;
        let mut wrapped = false;
        while taken < max_pages {
            // Only dirty pages are taken: the walk visits the dirty and
            // writeback extents (the kernel's tagged lookup).
            let next = self.files[file as usize].busy_from(pos);
            let e = match next {
                Some(e) if e.start < end => e,
                _ if !wrapped && index > first => {
                    wrapped = true;
                    pos = first;
                    continue;
                }
                _ => break,
            };
            if wrapped && e.start.max(pos) >= index {
                break;
            }
            let s = e.start.max(pos);
            let stop = if wrapped { e.end.min(index) } else { e.end };
            if e.state == PageState::Dirty {
                let n = (stop - s).min(max_pages - taken);
                push_run(runs, s, s + n);
                taken += n;
                pos = s + n;
            } else {
                pos = stop;
            }
        }
        self.start_writeback(file, runs);
        let f = &mut self.files[file as usize];
        f.writeback_index = if pos >= end { first } else { pos };
        if f.dirty == 0 {
            f.dirtied_when = None;
        }
        taken
    }

    /// WB_SYNC_ALL: every dirty page of `[start, end)` goes under writeback
    /// (pages re-dirtied under writeback wait for it first); the runs go
    /// to `runs`.
    pub fn take_dirty_range(
        &mut self,
        file: u32,
        start: u64,
        end: u64,
        runs: &mut Vec<(u64, u64)>,
    ) {
        runs.clear();
        for (s, e, _) in self.files[file as usize]
            .busy_in(start, end)
            .filter(|&(_, _, st)| st == PageState::Dirty)
        {
            push_run(runs, s, e);
        }
        self.start_writeback(file, runs);
        let f = &mut self.files[file as usize];
        if f.dirty == 0 {
            f.dirtied_when = None;
        }
    }

    /// Whether no page of `[start, end)` is dirty or under writeback.
    pub fn clean_range(&self, file: u32, start: u64, end: u64) -> bool {
        self.files[file as usize]
            .busy_in(start, end)
            .next()
            .is_none()
    }

    /// The dirty pages of `runs` (all dirty) go under writeback.
    fn start_writeback(&mut self, file: u32, runs: &[(u64, u64)]) {
        for &(s, e) in runs {
            self.apply(file, s, e, false, |st| match st {
                Some(PageState::Dirty) => Some(PageState::Writeback),
                s => s,
            });
            self.submitted_pages += e - s;
        }
    }

    /// A mark of the writeback in flight now, for [`Self::written_since`].
    pub fn writeback_mark(&self) -> u64 {
        self.submitted_pages
    }

    /// Whether as many pages have completed writeback as had been put
    /// under it at `mark`: the writeback then in flight is done, to first
    /// order (completions can come out of order; the count cannot tell
    /// which pages they were).
    pub fn written_since(&self, mark: u64) -> bool {
        self.view.written_pages >= mark
    }

    /// Whether some page of `[start, end)` is under writeback.
    pub fn writeback_in(&self, file: u32, start: u64, end: u64) -> bool {
        self.files[file as usize]
            .busy_in(start, end)
            .any(|(_, _, st)| st.is_writeback())
    }

    /// `task` sleeps until some writeback completes.
    pub fn wait_writeback(&mut self, task: u32) {
        if !self.writeback_waiters.contains(&task) {
            self.writeback_waiters.push(task);
        }
    }

    /// Writeback completed: the waiting tasks go to `ready` to look again.
    pub fn wake_writeback_waiters(&mut self, ready: &mut Vec<u32>) {
        ready.append(&mut self.writeback_waiters);
    }

    /// The flusher used a whole chunk on `file` and it is still dirty: it
    /// goes to the back of the round (`requeue_inode` → `b_more_io`).
    pub fn requeue(&mut self, file: u32) {
        self.files[file as usize].requeued = self.next_turn;
        self.next_turn += 1;
    }

    /// Writeback of `[start, end)` of `file` completed at `now`.
    pub fn writeback_done(&mut self, file: u32, start: u64, end: u64, now: Ns) {
        self.apply(file, start, end, false, |s| match s {
            Some(PageState::Writeback) => Some(PageState::Clean),
            Some(PageState::DirtyWriteback) => Some(PageState::Dirty),
            s => s,
        });
        self.view.written_pages += end - start;
        self.bw.update(now, self.view.written_pages);
        let f = &mut self.files[file as usize];
        if f.dirty == 0 {
            f.dirtied_when = None;
            f.requeued = 0;
        }
        self.evict();
        self.sample(now);
    }

    /// Writeback starts on the device at `now` (bandwidth estimate restart
    /// after idle).
    pub fn writeback_start(&mut self, now: Ns) {
        if self.counts.writeback == 0 {
            self.bw.start(now, self.view.written_pages);
        }
    }
}

/// Append `[s, e)` to `runs`, joining it to the last run when contiguous.
fn push_run(runs: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    if s >= e {
        return;
    }
    match runs.last_mut() {
        Some(last) if last.1 == s => last.1 = e,
        _ => runs.push((s, e)),
    }
}

#[cfg(test)]
mod tests;
