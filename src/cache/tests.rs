use super::*;
use crate::sim::time::NS_PER_SEC;

fn cache(memory: u64, files: &[(u64, u64)]) -> PageCache {
    PageCache::new(&CacheSetup {
        memory,
        vm: VmSettings::default(),
        files: files.to_vec(),
        tasks: 4,
    })
}

/// Counters equal a recount of every file's extents, and the LRU holds
/// exactly the clean extents.
fn check(c: &PageCache) {
    let mut n = Counts::default();
    let mut clean = 0;
    let mut v = Vec::new();
    for f in c.files() {
        f.pages.overlapping(f.first, f.end, &mut v);
        let mut fdirty = 0;
        // The dirty/writeback index holds exactly the busy extents, whole
        // (the whole-file query does not clip them).
        let busy: Vec<(u64, u64, PageState)> = v
            .iter()
            .filter(|e| e.state.is_dirty() || e.state.is_writeback())
            .map(|e| (e.start, e.end, e.state))
            .collect();
        let indexed: Vec<(u64, u64, PageState)> =
            f.busy.iter().map(|(&s, &(e, st))| (s, e, st)).collect();
        assert_eq!(indexed, busy);
        for e in &v {
            n.cached += e.len();
            if e.state.is_dirty() {
                n.dirty += e.len();
                fdirty += e.len();
            }
            if e.state.is_writeback() {
                n.writeback += e.len();
            }
            if e.state == PageState::Reading {
                n.reading += e.len();
            }
            if e.state == PageState::Clean {
                clean += 1;
            }
        }
        assert_eq!(f.dirty, fdirty);
    }
    assert_eq!(c.counts(), n);
    assert_eq!(c.lru.len(), clean);
}

#[test]
fn overlapping_regions_are_one_file() {
    let c = cache(1 << 30, &[(0, 8192), (4096, 8192), (1 << 20, 4096)]);
    assert_eq!(c.files().len(), 2);
    assert_eq!(c.file_of(2), Some(0));
    assert_eq!(c.file_of(3), None);
    assert_eq!(c.file_of(256), Some(1));
}

#[test]
fn a_read_misses_then_hits() {
    let mut c = cache(1 << 30, &[(0, 1 << 20)]);
    let mut miss = Vec::new();
    c.fetch(0, 0, 4, &mut miss);
    assert_eq!(miss, [(0, 4)]);
    assert_eq!(c.counts().reading, 4);
    assert!(!c.uptodate(0, 0, 4));
    assert_eq!(c.first_absent(0, 0, 8), Some(4));
    c.read_done(0, 0, 4, 10);
    c.fetch(0, 2, 6, &mut miss);
    assert_eq!(miss, [(4, 6)], "only the absent pages are read");
    c.read_done(0, 4, 6, 20);
    c.fetch(0, 0, 6, &mut miss);
    assert!(miss.is_empty());
    assert!(c.uptodate(0, 0, 6));
    assert_eq!(c.cached_before(0, 6, 100), 6);
    check(&c);
}

#[test]
fn eviction_takes_the_least_recently_used_clean_pages() {
    // 64 MiB of memory: capacity 60 MiB = 15360 pages.
    let mut c = cache(64 << 20, &[(0, 1 << 30)]);
    let cap = c.capacity();
    assert_eq!(cap, 15360);
    let mut miss = Vec::new();
    // Read A = [0, 100), then a big B, touch A again, then fill the rest.
    c.fetch(0, 0, 100, &mut miss);
    c.read_done(0, 0, 100, 1);
    c.fetch(0, 1000, 1000 + cap - 200, &mut miss);
    c.read_done(0, 1000, 1000 + cap - 200, 2);
    c.fetch(0, 0, 100, &mut miss);
    assert!(miss.is_empty());
    c.touch(0, 0, 100);
    c.fetch(0, 50_000, 50_500, &mut miss);
    c.read_done(0, 50_000, 50_500, 3);
    assert!(c.counts().cached <= cap);
    // A was used after B: it stays; B lost its oldest pages.
    c.fetch(0, 0, 100, &mut miss);
    assert!(miss.is_empty(), "A evicted: {miss:?}");
    c.fetch(0, 1000, 1001, &mut miss);
    assert_eq!(miss, [(1000, 1001)]);
    assert!(c.view.evicted_pages >= 400);
    check(&c);
}

#[test]
fn dirty_pages_are_not_evicted_and_invalidate_keeps_them() {
    let mut c = cache(64 << 20, &[(0, 1 << 30)]);
    let cap = c.capacity();
    c.write(0, 0, 1000, 0, 0);
    let mut miss = Vec::new();
    c.fetch(0, 2000, 2000 + cap, &mut miss);
    c.read_done(0, 2000, 2000 + cap, 1);
    assert_eq!(c.counts().dirty, 1000);
    assert_eq!(c.counts().cached, cap);
    c.invalidate(0, 0, 1 << 18);
    assert_eq!(c.counts().cached, 1000, "clean pages dropped, dirty kept");
    check(&c);
}

#[test]
fn writeback_walks_dirty_runs_cyclically_in_chunks() {
    let mut c = cache(1 << 30, &[(0, 1 << 30)]);
    assert!(c.write(0, 10, 20, 0, 5));
    assert!(!c.write(0, 30, 50, 0, 6), "already dirty inode");
    assert_eq!(c.files()[0].dirtied_when, Some(5));
    let mut runs = Vec::new();
    assert_eq!(c.take_dirty(0, 15, &mut runs), 15);
    assert_eq!(runs, [(10, 20), (30, 35)]);
    assert_eq!(c.counts().writeback, 15);
    // Re-dirty a page under writeback: it is both.
    c.write(0, 12, 13, 0, 7);
    assert_eq!(c.counts().dirty, 16);
    // The walk goes on from page 35, then wraps (the re-dirtied page 12 is
    // under writeback, so WB_SYNC_NONE skips it).
    assert_eq!(c.take_dirty(0, 100, &mut runs), 15);
    assert_eq!(runs, [(35, 50)]);
    c.writeback_done(0, 10, 20, NS_PER_SEC);
    assert_eq!(c.counts().dirty, 1, "page 12 stays dirty");
    assert_eq!(c.take_dirty(0, 100, &mut runs), 1);
    assert_eq!(runs, [(12, 13)]);
    c.writeback_done(0, 30, 50, NS_PER_SEC);
    c.writeback_done(0, 12, 13, NS_PER_SEC);
    assert_eq!(c.counts().dirty + c.counts().writeback, 0);
    assert_eq!(c.files()[0].dirtied_when, None, "clean inode");
    check(&c);
}

#[test]
fn a_writeback_mark_is_passed_when_the_writeback_then_in_flight_ends() {
    // A file rewritten all the time always has pages under writeback; a
    // waiter for what was in flight when it looked must still get through.
    let mut c = cache(1 << 30, &[(0, 1 << 30)]);
    let mut runs = Vec::new();
    c.write(0, 0, 10, 0, 1);
    c.take_dirty(0, 100, &mut runs);
    let mark = c.writeback_mark();
    assert!(!c.written_since(mark));
    // More of the file goes under writeback after the mark.
    c.write(0, 10, 20, 0, 2);
    c.take_dirty(0, 100, &mut runs);
    c.writeback_done(0, 0, 10, NS_PER_SEC);
    assert!(
        c.writeback_in(0, 0, 20),
        "pages 10..20 still under writeback"
    );
    assert!(
        c.written_since(mark),
        "what was in flight at the mark is done"
    );
    assert!(!c.written_since(c.writeback_mark()));
    check(&c);
}

#[test]
fn inode_order_is_oldest_first_requeued_last_and_kupdate_filters() {
    let mut c = cache(
        1 << 30,
        &[(0, 1 << 20), (1 << 20, 1 << 20), (2 << 20, 1 << 20)],
    );
    c.write(1, 256, 260, 0, 10);
    c.write(0, 0, 4, 0, 20);
    c.write(2, 512, 516, 0, 30);
    let mut v = Vec::new();
    c.dirty_inodes(None, &mut v);
    assert_eq!(v, [1, 0, 2]);
    c.requeue(1);
    c.dirty_inodes(None, &mut v);
    assert_eq!(v, [0, 2, 1]);
    c.dirty_inodes(Some(20), &mut v);
    assert_eq!(v, [0, 1]);
}

#[test]
fn throttling_starts_above_freerun() {
    // 1 GiB: capacity 960 MiB; thresh 20 %, bg 10 %.
    let mut c = cache(1 << 30, &[(0, 1 << 31)]);
    let l = c.limits();
    let free = l.freerun();
    c.write(0, 0, free - 10, 0, 0);
    let t = c.balance(0, 1);
    assert_eq!(t.pause, 0);
    assert!(t.kick_background, "above bg: background writeback");
    c.write(0, free, free + 5000, 0, 2);
    let t = c.balance(0, 3);
    assert!(t.pause > 0, "{t:?}");
}

#[test]
fn a_terabyte_file_stays_small() {
    let mut c = cache(16 << 30, &[(0, 1 << 40)]);
    let pages = (1u64 << 40) / PAGE;
    let mut miss = Vec::new();
    // Stream through a quarter of it: the cache keeps one extent.
    let mut p = 0;
    while p < pages / 4 {
        c.fetch(0, p, p + 4096, &mut miss);
        c.read_done(0, p, p + 4096, p);
        p += 4096;
    }
    assert!(c.counts().cached <= c.capacity());
    assert!(c.extents() <= 2, "{}", c.extents());
    check(&c);
}

#[test]
fn a_deleted_file_drops_its_dirty_pages_once_writeback_ends() {
    let mut c = cache(
        1 << 30,
        &[(0, 1 << 20), (1 << 20, 1 << 20), (2 << 20, 4096)],
    );
    assert_eq!(c.files()[0].users, 1);
    assert_eq!(c.files()[2].users, 1);
    let shared = cache(1 << 30, &[(0, 8192), (0, 8192)]);
    assert_eq!(shared.files()[0].users, 2);
    c.write(0, 0, 100, 0, 0);
    c.write(1, 256, 300, 0, 0);
    let mut runs = Vec::new();
    c.take_dirty_range(0, 0, 10, &mut runs);
    // Re-dirtied under writeback: loses its dirty bit, waits for the end.
    c.write(0, 5, 6, 0, 1);
    check(&c);
    assert!(c.delete_file(0, 2), "pages 0..10 are under writeback");
    check(&c);
    assert_eq!(c.files()[0].dirty, 0);
    assert_eq!(c.counts().writeback, 10);
    assert_eq!(c.view.cancelled_pages, 91);
    assert!(c.files()[0].dirtied_when.is_none());
    // The other file is untouched.
    assert_eq!(c.files()[1].dirty, 44);
    c.writeback_done(0, 0, 10, 3);
    assert!(!c.delete_file(0, 4));
    check(&c);
    assert_eq!(c.counts().cached, 44);
    assert_eq!(c.view.cancelled_pages, 91);
    let mut inodes = Vec::new();
    c.dirty_inodes(None, &mut inodes);
    assert_eq!(inodes, [1]);
}

#[test]
fn the_busy_index_answers_range_queries_clipped() {
    // Dirty [10, 20) and [30, 40), under writeback [50, 60), clean around.
    let mut c = cache(1 << 30, &[(0, 4096 * 100)]);
    let mut miss = Vec::new();
    c.fetch(0, 0, 100, &mut miss);
    c.read_done(0, 0, 100, 0);
    for (s, e) in [(10u64, 20u64), (30, 40), (50, 60)] {
        c.apply(0, s, e, false, |_| Some(PageState::Dirty));
    }
    c.start_writeback(0, &[(50, 60)]);
    check(&c);
    let f = &c.files()[0];
    let got: Vec<_> = f.busy_in(15, 55).collect();
    assert_eq!(
        got,
        [
            (15, 20, PageState::Dirty),
            (30, 40, PageState::Dirty),
            (50, 55, PageState::Writeback)
        ]
    );
    assert_eq!(f.busy_in(20, 30).count(), 0);
    assert_eq!(f.busy_in(25, 25).count(), 0);
    assert_eq!(f.busy_from(0).map(|e| (e.start, e.end)), Some((10, 20)));
    assert_eq!(f.busy_from(12).map(|e| (e.start, e.end)), Some((10, 20)));
    assert_eq!(f.busy_from(20).map(|e| (e.start, e.end)), Some((30, 40)));
    assert!(f.busy_from(60).is_none());
    assert!(c.clean_range(0, 20, 30) && c.clean_range(0, 60, 100));
    assert!(!c.clean_range(0, 0, 11) && !c.clean_range(0, 59, 61));
    assert!(c.writeback_in(0, 55, 70) && !c.writeback_in(0, 0, 50));
    let mut runs = Vec::new();
    c.take_dirty_range(0, 0, 35, &mut runs);
    assert_eq!(runs, [(10, 20), (30, 35)]);
    check(&c);
}
