//! Page states of one file as extents: runs of consecutive pages that share
//! a state, keyed by their first page. A file of any size costs one entry
//! per run, never one per page (the kernel keeps a struct folio per cached
//! page in the file's xarray; a model of a 1 TiB file cannot).
//!
//! Every change goes through [`ExtentMap::apply`], which reports the
//! extents it removed and inserted so the owner can keep counters and its
//! LRU index exact without scanning.
//!
//! Pitfall: an extent's `seq` (its last access, for LRU) belongs to the
//! whole run. Two neighbouring runs in the same state coalesce and keep the
//! newer `seq`, so touching one page of a long clean run makes the run
//! young. For the streams fio issues (sequential runs, or random pages that
//! stay separate extents) this is the order the kernel's LRU gives.

use std::collections::BTreeMap;

/// A cached page's state (a page that is not in the map is absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PageState {
    /// Up to date, same as on disk: reclaimable at once.
    Clean,
    /// Modified, not yet under writeback (NR_FILE_DIRTY).
    Dirty,
    /// Being written back (NR_WRITEBACK).
    Writeback,
    /// Re-dirtied while under writeback: counts in both (kernel §1.1 rule:
    /// PG_dirty and PG_writeback set together).
    DirtyWriteback,
    /// A read is in flight: the page is in the cache, locked, not up to
    /// date; a reader waits for it.
    Reading,
}

impl PageState {
    pub fn is_dirty(self) -> bool {
        matches!(self, PageState::Dirty | PageState::DirtyWriteback)
    }
    pub fn is_writeback(self) -> bool {
        matches!(self, PageState::Writeback | PageState::DirtyWriteback)
    }
    /// Holds data a read can copy without waiting.
    pub fn is_uptodate(self) -> bool {
        !matches!(self, PageState::Reading)
    }
}

/// One run of pages `[start, end)` in one state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub start: u64,
    pub end: u64,
    pub state: PageState,
    /// Last access (a page-cache-wide counter), for LRU order.
    pub seq: u64,
}

impl Extent {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

#[derive(Clone, Copy, Debug)]
struct Run {
    end: u64,
    state: PageState,
    seq: u64,
}

/// What an `apply` changed: extents taken out (`false`) and put in
/// (`true`), in the order it happened (a piece split off may be removed
/// again in the same call). Reused between calls.
#[derive(Debug, Default)]
pub struct Changes {
    pub log: Vec<(bool, Extent)>,
    /// Scratch for `apply`'s new pieces (kept to avoid an allocation per call).
    pieces: Vec<Extent>,
}

impl Changes {
    pub fn clear(&mut self) {
        self.log.clear();
    }
    fn removed(&mut self, e: Extent) {
        self.log.push((false, e));
    }
    fn inserted(&mut self, e: Extent) {
        self.log.push((true, e));
    }
}

/// The pages of one file.
#[derive(Clone, Debug, Default)]
pub struct ExtentMap {
    runs: BTreeMap<u64, Run>,
}

impl ExtentMap {
    pub fn new() -> ExtentMap {
        ExtentMap::default()
    }

    /// Number of extents (the map's memory is proportional to it).
    pub fn extents(&self) -> usize {
        self.runs.len()
    }

    /// The extents overlapping `[start, end)`, clipped to it, in order.
    pub fn overlapping(&self, start: u64, end: u64, out: &mut Vec<Extent>) {
        out.clear();
        if start >= end {
            return;
        }
        if let Some((&s, r)) = self.runs.range(..start).next_back() {
            if r.end > start {
                out.push(Extent {
                    start,
                    end: r.end.min(end),
                    state: r.state,
                    seq: r.seq,
                });
                debug_assert!(s < start);
            }
        }
        for (&s, r) in self.runs.range(start..end) {
            out.push(Extent {
                start: s,
                end: r.end.min(end),
                state: r.state,
                seq: r.seq,
            });
        }
    }

    /// The extent holding `page`, whole.
    pub fn at(&self, page: u64) -> Option<Extent> {
        let (&s, r) = self.runs.range(..=page).next_back()?;
        (r.end > page).then_some(Extent {
            start: s,
            end: r.end,
            state: r.state,
            seq: r.seq,
        })
    }

    /// The first extent starting at or after `page`, or holding it.
    pub fn next_from(&self, page: u64) -> Option<Extent> {
        if let Some(e) = self.at(page) {
            return Some(e);
        }
        let (&s, r) = self.runs.range(page..).next()?;
        Some(Extent {
            start: s,
            end: r.end,
            state: r.state,
            seq: r.seq,
        })
    }

    /// Give every page of `[start, end)` the state `f(old)` (None = absent
    /// before / drop after); pages whose state `f` leaves alone keep their
    /// `seq`, changed or kept-by-`touch` pages get `seq`. `changes` receives
    /// the removed and inserted extents.
    pub fn apply(
        &mut self,
        start: u64,
        end: u64,
        seq: u64,
        touch: bool,
        f: impl Fn(Option<PageState>) -> Option<PageState>,
        changes: &mut Changes,
    ) {
        if start >= end {
            return;
        }
        // Cut the runs at both ends so [start, end) is made of whole runs.
        self.split_at(start, changes);
        self.split_at(end, changes);
        let mut pos = start;
        let mut pieces = std::mem::take(&mut changes.pieces);
        pieces.clear();
        while let Some((&s, _)) = self.runs.range(pos..end).next() {
            if s > pos {
                if let Some(st) = f(None) {
                    pieces.push(Extent {
                        start: pos,
                        end: s,
                        state: st,
                        seq,
                    });
                }
            }
            let r = self.runs.remove(&s).expect("run");
            changes.removed(Extent {
                start: s,
                end: r.end,
                state: r.state,
                seq: r.seq,
            });
            if let Some(st) = f(Some(r.state)) {
                let keep_seq = st == r.state && !touch;
                pieces.push(Extent {
                    start: s,
                    end: r.end,
                    state: st,
                    seq: if keep_seq { r.seq } else { seq },
                });
            }
            pos = r.end;
        }
        if pos < end {
            if let Some(st) = f(None) {
                pieces.push(Extent {
                    start: pos,
                    end,
                    state: st,
                    seq,
                });
            }
        }
        for &p in &pieces {
            self.insert_coalescing(p, changes);
        }
        changes.pieces = pieces;
    }

    /// Split the run holding `at` (if it starts before `at`) in two.
    fn split_at(&mut self, at: u64, changes: &mut Changes) {
        let Some((&s, &r)) = self.runs.range(..at).next_back() else {
            return;
        };
        if r.end <= at {
            return;
        }
        changes.removed(Extent {
            start: s,
            end: r.end,
            state: r.state,
            seq: r.seq,
        });
        self.runs.insert(
            s,
            Run {
                end: at,
                state: r.state,
                seq: r.seq,
            },
        );
        self.runs.insert(at, r);
        changes.inserted(Extent {
            start: s,
            end: at,
            state: r.state,
            seq: r.seq,
        });
        changes.inserted(Extent {
            start: at,
            end: r.end,
            state: r.state,
            seq: r.seq,
        });
    }

    /// Insert `e` into a gap, merging with neighbours in the same state.
    fn insert_coalescing(&mut self, mut e: Extent, changes: &mut Changes) {
        if let Some((&s, &r)) = self.runs.range(..e.start).next_back() {
            if r.end == e.start && r.state == e.state {
                self.runs.remove(&s);
                changes.removed(Extent {
                    start: s,
                    end: r.end,
                    state: r.state,
                    seq: r.seq,
                });
                e.start = s;
                e.seq = e.seq.max(r.seq);
            }
        }
        if let Some(&r) = self.runs.get(&e.end) {
            if r.state == e.state {
                self.runs.remove(&e.end);
                changes.removed(Extent {
                    start: e.end,
                    end: r.end,
                    state: r.state,
                    seq: r.seq,
                });
                e.end = r.end;
                e.seq = e.seq.max(r.seq);
            }
        }
        self.runs.insert(
            e.start,
            Run {
                end: e.end,
                state: e.state,
                seq: e.seq,
            },
        );
        changes.inserted(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PageState::*;

    fn all(m: &ExtentMap) -> Vec<(u64, u64, PageState)> {
        let mut v = Vec::new();
        m.overlapping(0, u64::MAX, &mut v);
        v.into_iter().map(|e| (e.start, e.end, e.state)).collect()
    }

    /// Pages in each state from the change log must equal a recount.
    fn net(c: &Changes, st: PageState) -> i64 {
        c.log
            .iter()
            .filter(|(_, e)| e.state == st)
            .map(|(ins, e)| {
                if *ins {
                    e.len() as i64
                } else {
                    -(e.len() as i64)
                }
            })
            .sum()
    }

    #[test]
    fn runs_split_and_coalesce() {
        let mut m = ExtentMap::new();
        let mut c = Changes::default();
        m.apply(0, 100, 1, true, |_| Some(Clean), &mut c);
        assert_eq!(all(&m), [(0, 100, Clean)]);
        m.apply(10, 20, 2, true, |_| Some(Dirty), &mut c);
        assert_eq!(all(&m), [(0, 10, Clean), (10, 20, Dirty), (20, 100, Clean)]);
        m.apply(10, 20, 3, true, |_| Some(Clean), &mut c);
        assert_eq!(all(&m), [(0, 100, Clean)]);
        assert_eq!(m.extents(), 1);
        assert_eq!(
            m.at(50).unwrap().seq,
            3,
            "coalesced run keeps the newer seq"
        );
    }

    #[test]
    fn change_log_counts_pages_exactly() {
        let mut m = ExtentMap::new();
        let mut c = Changes::default();
        m.apply(0, 64, 1, true, |_| Some(Dirty), &mut c);
        m.apply(32, 96, 2, true, |_| Some(Clean), &mut c);
        assert_eq!(net(&c, Dirty), 32);
        assert_eq!(net(&c, Clean), 64);
        c.clear();
        // Writeback of the dirty run, then a re-dirty of part of it.
        m.apply(0, 32, 3, false, |s| s.map(|_| Writeback), &mut c);
        m.apply(
            8,
            16,
            4,
            true,
            |s| match s {
                Some(Writeback) => Some(DirtyWriteback),
                _ => Some(Dirty),
            },
            &mut c,
        );
        assert_eq!(net(&c, Dirty), -32);
        assert_eq!(net(&c, Writeback), 24);
        assert_eq!(net(&c, DirtyWriteback), 8);
        assert_eq!(net(&c, Clean), 0);
    }

    #[test]
    fn gaps_are_filled_only_when_asked() {
        let mut m = ExtentMap::new();
        let mut c = Changes::default();
        m.apply(10, 20, 1, true, |_| Some(Dirty), &mut c);
        // Fill only absent pages with Clean.
        m.apply(0, 30, 2, false, |s| s.or(Some(Clean)), &mut c);
        assert_eq!(all(&m), [(0, 10, Clean), (10, 20, Dirty), (20, 30, Clean)]);
        // Drop clean pages only.
        m.apply(0, 30, 3, false, |s| s.filter(|&x| x != Clean), &mut c);
        assert_eq!(all(&m), [(10, 20, Dirty)]);
    }

    #[test]
    fn a_huge_file_costs_extents_not_pages() {
        let mut m = ExtentMap::new();
        let mut c = Changes::default();
        let pages = (1u64 << 40) / 4096;
        m.apply(0, pages, 1, true, |_| Some(Clean), &mut c);
        for i in 0..1000u64 {
            let p = i * (pages / 1000);
            m.apply(p, p + 1, 2 + i, true, |_| Some(Dirty), &mut c);
        }
        assert!(m.extents() <= 2001, "{}", m.extents());
        let mut v = Vec::new();
        let p = 500 * (pages / 1000);
        m.overlapping(p - 5, p + 5, &mut v);
        let states: Vec<PageState> = v.iter().map(|e| e.state).collect();
        assert_eq!(states, [Clean, Dirty, Clean], "{v:?}");
    }
}
