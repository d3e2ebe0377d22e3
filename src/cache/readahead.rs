//! On-demand readahead per open file (`struct file_ra_state`), the 4.x /
//! 3.13 form of mm/readahead.c `ondemand_readahead()` (v4.19): the same
//! decision order and window formulas as 6.x's `page_cache_sync_ra` /
//! `page_cache_async_ra`, without 6.x's large-folio alignment (which only
//! makes the early ramp lumpier: reference §6.5).
//!
//! Pages are file-relative here (index 0 = the file's first page): "start
//! of file" is a rule of its own.
//!
//! Pitfalls:
//! - The PG_readahead marker sits on page `start + size - async_size` of
//!   the last window; touching it (hit or not) starts the next window
//!   asynchronously, so a sequential reader stays one window ahead.
//! - A random read (not next to the previous one, no cached run before it
//!   longer than the request) is read exactly and leaves the state alone.
//! - `ra_pages` is copied at open: fio's `fadvise_hint` doubles it for
//!   sequential jobs (POSIX_FADV_SEQUENTIAL) and turns readahead off for
//!   random ones (POSIX_FADV_RANDOM: every miss reads exactly the request).

/// Per-fd readahead state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RaState {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    /// Last page the previous read touched (None before the first read).
    pub prev: Option<u64>,
    /// Window cap in pages (`ra_pages`, set at open).
    pub ra_pages: u64,
    /// FMODE_RANDOM: no readahead, exact reads.
    pub random: bool,
}

/// A window to read: pages `[start, start + size)`, the marker page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: u64,
    pub size: u64,
    /// The page that gets PG_readahead (None for exact reads).
    pub marker: Option<u64>,
}

/// `get_init_ra_size`: the first window for a request of `req` pages.
fn init_size(req: u64, max: u64) -> u64 {
    let n = req.max(1).next_power_of_two();
    if n <= max / 32 {
        n * 4
    } else if n <= max / 4 {
        n * 2
    } else {
        max
    }
}

/// `get_next_ra_size` (4.x): ×4 while small, then ×2 up to the cap.
fn next_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else {
        (2 * cur).min(max)
    }
}

impl RaState {
    /// At open, from the device's `read_ahead_kb` and fio's fadvise hint.
    pub fn open(read_ahead_kb: u32, sequential_hint: bool, random_hint: bool) -> RaState {
        let pages = u64::from(read_ahead_kb) / 4;
        RaState {
            start: 0,
            size: 0,
            async_size: 0,
            prev: None,
            ra_pages: if sequential_hint { 2 * pages } else { pages },
            random: random_hint,
        }
    }

    /// The marker page of the current window.
    pub fn marker(&self) -> Option<u64> {
        (self.size > 0).then(|| self.start + self.size - self.async_size)
    }

    /// `ondemand_readahead` for a read of `req` pages at `index`: a
    /// synchronous miss (`hit_marker` false) or a touch of the marker.
    /// `io_pages` is `max_sectors_kb` in pages; `cached_before` counts the
    /// cached pages just before `index` (context readahead).
    pub fn ondemand(
        &mut self,
        index: u64,
        req: u64,
        hit_marker: bool,
        io_pages: u64,
        cached_before: impl Fn(u64) -> u64,
    ) -> Window {
        let exact = Window {
            start: index,
            size: req,
            marker: None,
        };
        if self.random || self.ra_pages == 0 {
            return exact;
        }
        // 4.10+: a large read may go past ra_pages up to io_pages.
        let mut max = self.ra_pages;
        if req > max && io_pages > max {
            max = req.min(io_pages);
        }
        let expected = self.size > 0
            && (index == self.start + self.size - self.async_size
                || index == self.start + self.size);
        if index != 0 && expected {
            // The sequential ramp.
            self.start += self.size;
            self.size = next_size(self.size, max);
            self.async_size = self.size;
            return self.readit(index, max);
        }
        let sequential_miss = self.prev.is_some_and(|p| index.wrapping_sub(p) <= 1);
        if index == 0 || hit_marker || req > max || sequential_miss {
            self.start = index;
            self.size = init_size(req, max);
            self.async_size = if self.size > req {
                self.size - req
            } else {
                self.size
            };
            return self.readit(index, max);
        }
        // Context readahead: a cached run before it longer than the request.
        let contig = cached_before(max);
        if contig > req {
            let contig = if contig >= index { contig * 2 } else { contig };
            self.start = index;
            self.size = (contig + req).min(max);
            self.async_size = 1;
            return self.readit(index, max);
        }
        exact
    }

    /// `readit`: a window starting at the request whose whole size is
    /// async gets the next window merged in at once.
    fn readit(&mut self, index: u64, max: u64) -> Window {
        if index == self.start && self.size == self.async_size {
            let add = next_size(self.size, max);
            if self.size + add <= max {
                self.async_size = add;
                self.size += add;
            } else {
                self.size = max;
                self.async_size = max / 2;
            }
        }
        Window {
            start: self.start,
            size: self.size,
            marker: self.marker(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Window sizes in KiB for 4 KiB sequential reads from page 0: each
    /// read is one page; misses and marker touches start windows.
    fn ramp(read_ahead_kb: u32, seq_hint: bool, pages: u64) -> Vec<u64> {
        let mut ra = RaState::open(read_ahead_kb, seq_hint, false);
        let mut read_until = 0; // pages [0, read_until) requested from the device
        let mut marker = None;
        let mut out = Vec::new();
        for index in 0..pages {
            let w = if index >= read_until {
                Some(ra.ondemand(index, 1, false, 320, |_| 0))
            } else if marker == Some(index) {
                Some(ra.ondemand(index, 1, true, 320, |_| 0))
            } else {
                None
            };
            if let Some(w) = w {
                let new_from = w.start.max(read_until);
                let end = w.start + w.size;
                if end > new_from {
                    out.push((end - new_from) * 4);
                    read_until = end;
                }
                marker = w.marker;
            }
            ra.prev = Some(index);
        }
        out
    }

    #[test]
    fn the_3_13_ramp_for_4k_sequential_reads() {
        // Reference §6.5: R = ra_pages; 16, 32, 64, ... up to R.
        let r = ramp(128, false, 4096);
        assert_eq!(&r[..5], [16, 32, 64, 128, 128]);
        let r = ramp(512, true, 4096);
        assert_eq!(&r[..6], [16, 64, 128, 256, 512, 1024]);
        assert!(r[6..].iter().all(|&k| k == 1024));
    }

    #[test]
    fn random_reads_are_exact_and_keep_no_state() {
        let mut ra = RaState::open(128, false, false);
        ra.prev = Some(1000);
        let w = ra.ondemand(5000, 1, false, 320, |_| 0);
        assert_eq!((w.start, w.size, w.marker), (5000, 1, None));
        assert_eq!(ra.size, 0);
        let mut fadv = RaState::open(128, false, true);
        let w = fadv.ondemand(0, 1, false, 320, |_| 0);
        assert_eq!(w.size, 1, "FADV_RANDOM reads exactly");
    }

    #[test]
    fn a_large_read_goes_up_to_io_pages() {
        let mut ra = RaState::open(128, false, false);
        let w = ra.ondemand(0, 256, false, 320, |_| 0);
        assert_eq!(w.size, 256, "1 MiB read with 128 KiB readahead");
    }
}
