//! Generator-level tests: coverage, mixes, budgets, determinism, and property
//! tests that no I/O ever leaves its region.

use super::*;
use crate::job::{
    BlockSizes, FileService, RandomDistribution, RandomGenerator, SizeSpec, StridedZones,
};
use proptest::prelude::*;

const KIB: u64 = 1024;

fn spec(rw: RwPattern) -> JobSpec {
    let mut s = JobSpec::with_defaults("t");
    s.rw = rw;
    s.filenames = vec!["/dev/x".into()];
    s
}

fn one_file(start: u64, len: u64) -> JobLayout {
    JobLayout::new(vec![Region::whole(start, len)], len)
}

/// Every I/O of the job, passes included (the fio task starts each pass).
fn drain(g: &mut Generator, max: usize) -> Vec<IoUnit> {
    let mut v = Vec::new();
    while let Some(io) = next_of_job(g) {
        v.push(io);
        if v.len() >= max {
            break;
        }
    }
    v
}

/// As the fio task asks: the next I/O, and when there is none, the next
/// pass if one is due.
fn next_of_job(g: &mut Generator) -> Option<IoUnit> {
    next_of_job_noting(g, &mut false)
}

/// `next_of_job`, setting `files_done` when a pass ended with every file
/// done before its bytes were.
fn next_of_job_noting(g: &mut Generator, files_done: &mut bool) -> Option<IoUnit> {
    if let Some(io) = g.next_io() {
        return Some(io);
    }
    *files_done |= g.files_left == 0;
    if !g.between_passes() {
        return None;
    }
    g.begin_next_pass();
    g.next_io()
}

#[test]
fn sequential_covers_region_in_order() {
    let s = spec(RwPattern::Read);
    let base = 1 << 20;
    let mut g = Generator::new(&s, &one_file(base, 400 * KIB), 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 100);
    for (k, io) in ios.iter().enumerate() {
        assert_eq!(io.ddir, Ddir::Read);
        assert_eq!(io.offset, base + k as u64 * 4096);
        assert_eq!(io.len, 4096);
    }
}

#[test]
fn sequential_wraps_with_loops_and_io_size() {
    let mut s = spec(RwPattern::Write);
    s.loops = 3;
    let mut l = one_file(0, 40 * KIB);
    let mut g = Generator::new(&s, &l, 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 30);
    assert_eq!(ios[10].offset, 0);
    assert_eq!(ios[29].offset, 36 * KIB);
    // io_size short of the region: the budget is io_size x loops over the
    // whole job, so the first pass does it all (fio 3.33, size=40k
    // io_size=8k loops=3: reads at 0-20k, then two empty passes).
    l.io_bytes = 8 * KIB;
    let mut g = Generator::new(&s, &l, 1).unwrap();
    let offs: Vec<u64> = drain(&mut g, 100).iter().map(|io| io.offset).collect();
    assert_eq!(offs, (0..6).map(|k| k * 4096).collect::<Vec<u64>>());
    // io_size beyond the region: a pass per region, until io_size is done.
    s.loops = 1;
    s.io_size = Some(SizeSpec::Bytes(100 * KIB));
    l.io_bytes = 100 * KIB;
    let mut g = Generator::new(&s, &l, 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 25);
    assert_eq!(ios[24].offset, 4 * 4096);
}

#[test]
fn sequential_holes_wrap_to_the_start() {
    let mut s = spec(RwPattern::Read);
    s.rw_modifier = Some(4096);
    let mut g = Generator::new(&s, &one_file(0, 64 * KIB), 1).unwrap();
    let offs: Vec<u64> = drain(&mut g, 10)
        .iter()
        .map(|io| io.offset / 4096)
        .collect();
    assert_eq!(offs, vec![0, 2, 4, 6, 8, 10, 12, 14, 0, 2]);
}

/// Offsets (in 4 KiB blocks, or bytes) of a `rw=read:<hole>` job with 4k
/// blocks: all of them, or the first `max`.
fn holed_offsets(hole: i64, layout: &JobLayout, time_based: bool, max: usize) -> Vec<u64> {
    let mut s = spec(RwPattern::Read);
    s.rw_modifier = Some(hole);
    s.time_based = time_based;
    if layout.io_bytes > layout.files.iter().map(|f| f.len).sum() {
        s.io_size = Some(SizeSpec::Bytes(layout.io_bytes));
    }
    let mut g = Generator::new(&s, layout, 1).unwrap();
    drain(&mut g, max).iter().map(|io| io.offset).collect()
}

#[test]
fn negative_holes_step_back_as_fio_does() {
    // fio 3.33's write_iolog, bs=4k on a 16 KiB file: a hole longer than
    // the block walks down and wraps to the top less the hole.
    let file = one_file(0, 16 * KIB);
    let blocks = |v: Vec<u64>| v.iter().map(|o| o / 4096).collect::<Vec<_>>();
    assert_eq!(blocks(holed_offsets(-8192, &file, false, 99)), [0, 2, 1, 0]);
    assert_eq!(
        blocks(holed_offsets(-8192, &file, true, 7)),
        [0, 2, 1, 0, 2, 1, 0]
    );
    // -6k with io_size=40k: 0 10240 8192 6144 4096 2048 0 10240 8192 6144.
    let longer = JobLayout::new(vec![Region::whole(0, 16 * KIB)], 40 * KIB);
    assert_eq!(
        holed_offsets(-6144, &longer, false, 99),
        [0, 10240, 8192, 6144, 4096, 2048, 0, 10240, 8192, 6144]
    );
    // A hole as long as the block reads block 0 again and again.
    assert_eq!(blocks(holed_offsets(-4096, &file, false, 99)), [0; 4]);
    // A hole shorter than the block still goes forward; with io_size=64k
    // the pass ends where a block no longer fits, and starts over.
    let sixty_four = JobLayout::new(vec![Region::whole(0, 16 * KIB)], 64 * KIB);
    assert_eq!(
        holed_offsets(-1, &sixty_four, false, 8),
        [0, 4095, 8190, 12285, 0, 4095, 8190, 12285]
    );
    // offset=4k size=12k of the 16 KiB file: the stream starts from the
    // region's size taken as an offset into the file (4096 8192 4096), and
    // with -1 every pass is the one block at 12287.
    let inner = |io: u64| {
        JobLayout::new(
            vec![Region {
                start: 4096,
                len: 12 * KIB,
                after: 0,
                before: 4096,
                later_before: 4096,
            }],
            io,
        )
    };
    assert_eq!(
        holed_offsets(-8192, &inner(12 * KIB), false, 99),
        [4096, 8192, 4096]
    );
    assert_eq!(holed_offsets(-1, &inner(64 * KIB), false, 4), [12287; 4]);
}

fn check_full_coverage(gen: RandomGenerator) {
    let mut s = spec(RwPattern::RandRead);
    s.random_generator = gen;
    s.time_based = true;
    let blocks = 1000u64;
    let base = 8 * 4096;
    let mut g = Generator::new(&s, &one_file(base, blocks * 4096), 7).unwrap();
    for pass in 0..3 {
        let mut seen = vec![false; blocks as usize];
        for _ in 0..blocks {
            let io = next_of_job(&mut g).unwrap();
            assert_eq!(io.len, 4096);
            assert_eq!((io.offset - base) % 4096, 0);
            let b = ((io.offset - base) / 4096) as usize;
            assert!(!seen[b], "{gen:?} pass {pass}: block {b} twice");
            seen[b] = true;
        }
    }
}

#[test]
fn random_full_coverage_tausworthe() {
    check_full_coverage(RandomGenerator::Tausworthe);
    check_full_coverage(RandomGenerator::Tausworthe64);
}

#[test]
fn random_full_coverage_lfsr() {
    check_full_coverage(RandomGenerator::Lfsr);
}

#[test]
fn random_budget_is_one_pass() {
    let s = spec(RwPattern::RandWrite);
    let mut g = Generator::new(&s, &one_file(0, 1000 * 4096), 3).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 1000);
    let mut offs: Vec<u64> = ios.iter().map(|io| io.offset).collect();
    offs.sort_unstable();
    offs.dedup();
    assert_eq!(offs.len(), 1000);
}

#[test]
fn random_loops_repeat_their_first_pass_with_randrepeat() {
    let mut s = spec(RwPattern::RandRead);
    s.loops = 2;
    let l = one_file(0, 500 * 4096);
    let mut g = Generator::new(&s, &l, 3).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 1000);
    // Each loop is a new pass with a fresh map: every block once per loop,
    // in another order.
    let distinct = |v: &[IoUnit]| {
        let mut o: Vec<u64> = v.iter().map(|io| io.offset).collect();
        o.sort_unstable();
        o.dedup();
        o.len()
    };
    assert_eq!(distinct(&ios[..500]), 500);
    assert_eq!(distinct(&ios[500..]), 500);
    assert_eq!(distinct(&ios), 500);
    // randrepeat (the default) reseeds every pass: the same order again
    // (fio 3.33, rw=randread loops=2 size=64k: 0 11 13 7 ... twice); with
    // randrepeat=0 the streams go on and the order is new.
    assert_eq!(ios[..500], ios[500..]);
    let mut fresh = s.clone();
    fresh.randrepeat = false;
    let mut g = Generator::new(&fresh, &l, 3).unwrap();
    let other = drain(&mut g, usize::MAX);
    assert_eq!(distinct(&other[500..]), 500);
    assert_ne!(other[..500], other[500..]);
    // io_size short of the region: the budget spans the loops, so the first
    // pass does it all without repeats (fio 3.33, size=4000k io_size=2000k
    // loops=2 bs=4k: 1000 distinct reads).
    let mut l = one_file(0, 1000 * 4096);
    l.io_bytes = 500 * 4096;
    let mut g = Generator::new(&s, &l, 3).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 1000);
    assert_eq!(distinct(&ios), 1000);
}

#[test]
fn norandommap_repeats() {
    let mut s = spec(RwPattern::RandRead);
    s.norandommap = true;
    let mut g = Generator::new(&s, &one_file(0, 1000 * 4096), 3).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 1000);
    let mut offs: Vec<u64> = ios.iter().map(|io| io.offset).collect();
    offs.sort_unstable();
    offs.dedup();
    // 1000 draws from 1000 blocks hit about 1 - 1/e of them.
    assert!(offs.len() > 560 && offs.len() < 700, "{}", offs.len());
}

/// Every offset of the job, passes included, and how many passes issued
/// some I/O.
fn passes_and_offsets(g: &mut Generator) -> (u32, Vec<u64>) {
    let (mut passes, mut offs, mut in_pass) = (0, Vec::new(), false);
    loop {
        match g.next_io() {
            Some(io) => {
                passes += u32::from(!in_pass);
                in_pass = true;
                offs.push(io.offset);
            }
            None if g.between_passes() => {
                g.begin_next_pass();
                in_pass = false;
            }
            None => return (passes, offs),
        }
    }
}

/// fio 3.33, `rw=randwrite norandommap loops=2 size=64k bs=4k` (offsets
/// from write_iolog): libaio's second pass repeats the first's 16 offsets
/// (a new pass reseeds), psync's 32 writes are one pass and do not (its
/// writes complete in the call, so `do_io` never counts them towards size).
#[test]
fn only_queued_bytes_end_a_pass() {
    let offsets = |engine: &str, kind: EngineKind, iodepth: u32| {
        let mut s = spec(RwPattern::RandWrite);
        s.norandommap = true;
        s.loops = 2;
        s.ioengine = crate::job::IoEngine {
            name: engine.to_string(),
            kind,
        };
        s.iodepth = iodepth;
        let mut g = Generator::new(&s, &one_file(0, 64 * KIB), 7).unwrap();
        passes_and_offsets(&mut g)
    };
    let (passes, offs) = offsets("libaio", EngineKind::Async, 1);
    assert_eq!((passes, offs.len()), (2, 32));
    assert_eq!(offs[..16], offs[16..]);
    for (engine, kind) in [("psync", EngineKind::Sync), ("null", EngineKind::Null)] {
        let (passes, offs) = offsets(engine, kind, 1);
        assert_eq!((passes, offs.len()), (1, 32), "{engine}");
        assert_ne!(offs[..16], offs[16..], "{engine}");
    }
    // null queues at a depth above 1.
    assert_eq!(offsets("null", EngineKind::Null, 4).0, 2);
}

/// fio 3.33 (write_iolog, libaio): `norandommap size=64k io_size=128k`
/// is one pass of 32 writes for randwrite (`do_io` lets a random writer
/// without a map run to io_size) but two passes of 16 reads, the second
/// repeating the first, for randread.
#[test]
fn a_random_writer_without_a_map_runs_to_io_size_in_one_pass() {
    let passes = |rw: RwPattern| {
        let mut s = spec(rw);
        s.norandommap = true;
        s.ioengine = crate::job::IoEngine {
            name: "libaio".to_string(),
            kind: EngineKind::Async,
        };
        let mut l = one_file(0, 64 * KIB);
        l.io_bytes = 128 * KIB;
        let mut g = Generator::new(&s, &l, 5).unwrap();
        passes_and_offsets(&mut g)
    };
    let (n, w) = passes(RwPattern::RandWrite);
    assert_eq!((n, w.len()), (1, 32));
    assert_ne!(w[..16], w[16..]);
    let (n, r) = passes(RwPattern::RandRead);
    assert_eq!((n, r.len()), (2, 32));
    assert_eq!(r[..16], r[16..]);
}

fn top10_share(s: &JobSpec, blocks: u64, draws: usize) -> f64 {
    let mut s = s.clone();
    s.time_based = true;
    let mut g = Generator::new(&s, &one_file(0, blocks * 4096), 5).unwrap();
    let mut counts = vec![0u64; blocks as usize];
    for _ in 0..draws {
        counts[(next_of_job(&mut g).unwrap().offset / 4096) as usize] += 1;
    }
    counts.sort_unstable_by(|a, b| b.cmp(a));
    counts[..blocks as usize / 10].iter().sum::<u64>() as f64 / draws as f64
}

#[test]
fn zipf_and_pareto_skew() {
    let mut s = spec(RwPattern::RandRead);
    let mut last = 0.0;
    for theta in [0.8, 1.2, 1.6] {
        s.random_distribution = RandomDistribution::Zipf {
            theta,
            center: None,
        };
        let share = top10_share(&s, 10_000, 200_000);
        assert!(share > 0.4, "zipf {theta}: {share}");
        assert!(share > last, "zipf {theta}: {share} <= {last}");
        last = share;
    }
    s.random_distribution = RandomDistribution::Pareto {
        h: 0.2,
        center: None,
    };
    let share = top10_share(&s, 10_000, 200_000);
    assert!(share > 0.6, "pareto: {share}");
    s.random_distribution = RandomDistribution::Random;
    let share = top10_share(&s, 10_000, 200_000);
    assert!((share - 0.1).abs() < 0.01, "uniform: {share}");
}

#[test]
fn normal_concentrates_around_center() {
    let mut s = spec(RwPattern::RandRead);
    s.time_based = true;
    s.random_distribution = RandomDistribution::Normal {
        sigma_pct: 5.0,
        center: Some(0.3),
    };
    let blocks = 10_000u64;
    let mut g = Generator::new(&s, &one_file(0, blocks * 4096), 5).unwrap();
    let n = 100_000;
    let mut near = 0;
    for _ in 0..n {
        let b = next_of_job(&mut g).unwrap().offset / 4096;
        if b.abs_diff(3000) <= 1000 {
            near += 1;
        }
    }
    // Within two sigma: 95.4%.
    let frac = near as f64 / n as f64;
    assert!((frac - 0.954).abs() < 0.01, "{frac}");
}

#[test]
fn rwmixread_within_one_percent() {
    for (rw, pct) in [
        (RwPattern::RandRw, 70u32),
        (RwPattern::ReadWrite, 30),
        (RwPattern::RandRw, 0),
    ] {
        let mut s = spec(rw);
        s.rwmixread = pct;
        s.time_based = true;
        let mut g = Generator::new(&s, &one_file(0, 1 << 30), 9).unwrap();
        let n = 100_000;
        let reads = (0..n)
            .filter(|_| next_of_job(&mut g).unwrap().ddir == Ddir::Read)
            .count();
        let got = reads as f64 / n as f64 * 100.0;
        assert!(
            (got - pct as f64).abs() < 1.0,
            "{rw:?}: {got}% reads, want {pct}"
        );
    }
}

#[test]
fn mixed_sequential_keeps_a_position_per_direction() {
    let mut s = spec(RwPattern::ReadWrite);
    s.bs = [
        BlockSizes::Fixed(4096),
        BlockSizes::Fixed(8192),
        BlockSizes::Fixed(4096),
    ];
    let mut g = Generator::new(&s, &one_file(0, 1 << 20), 2).unwrap();
    let (mut r, mut w) = (0, 0);
    for io in drain(&mut g, 1000) {
        match io.ddir {
            Ddir::Read => {
                assert_eq!(io.offset, r);
                r += 4096;
            }
            Ddir::Write => {
                assert_eq!(io.offset, w);
                w += 8192;
            }
            Ddir::Trim => unreachable!(),
        }
    }
}

#[test]
fn randrw_shares_one_map() {
    let mut s = spec(RwPattern::RandRw);
    s.rwmixread = 50;
    let mut g = Generator::new(&s, &one_file(0, 1000 * 4096), 2).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 1000);
    let mut offs: Vec<u64> = ios.iter().map(|io| io.offset).collect();
    offs.sort_unstable();
    offs.dedup();
    assert_eq!(
        offs.len(),
        1000,
        "reads and writes split the blocks of a pass"
    );
}

#[test]
fn trimwrite_pairs() {
    for rw in [RwPattern::TrimWrite, RwPattern::RandTrimWrite] {
        let s = spec(rw);
        let mut g = Generator::new(&s, &one_file(0, 100 * 4096), 2).unwrap();
        let ios = drain(&mut g, usize::MAX);
        // size counts the writes: every block trimmed and written once.
        assert_eq!(ios.len(), 200);
        for pair in ios.chunks(2) {
            assert_eq!(pair[0].ddir, Ddir::Trim);
            assert_eq!(pair[1].ddir, Ddir::Write);
            assert_eq!((pair[0].offset, pair[0].len), (pair[1].offset, pair[1].len));
        }
        if rw == RwPattern::TrimWrite {
            assert_eq!(ios[2].offset, 4096);
        }
    }
}

/// Trims and writes of a job's I/O, in that order.
fn trims_and_writes(ios: &[IoUnit]) -> (usize, usize) {
    let trims = ios.iter().filter(|io| io.ddir == Ddir::Trim).count();
    (trims, ios.len() - trims)
}

#[test]
fn trimwrite_streams_part_when_their_block_sizes_differ() {
    // fio 3.33, rw=trimwrite bs=4k,8k,2k size=1m on a device: trim 2k at 0,
    // write 8k at 0, trim 2k at 2k, then only writes (their last start
    // never meets the trim's again): 128 writes, 2 trims.
    let mut s = spec(RwPattern::TrimWrite);
    s.bs = [
        BlockSizes::Fixed(4 * KIB),
        BlockSizes::Fixed(8 * KIB),
        BlockSizes::Fixed(2 * KIB),
    ];
    let mut g = Generator::new(&s, &one_file(0, MIB), 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(trims_and_writes(&ios), (2, 128));
    assert_eq!(
        (ios[2].ddir, ios[2].offset, ios[3].offset),
        (Ddir::Trim, 2 * KIB, 8 * KIB)
    );
    // randtrimwrite: each write repeats its trim's 2k (512 of each).
    s.rw = RwPattern::RandTrimWrite;
    let mut g = Generator::new(&s, &one_file(0, MIB), 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(trims_and_writes(&ios), (512, 512));
    for pair in ios.chunks(2) {
        assert_eq!((pair[0].ddir, pair[1].ddir), (Ddir::Trim, Ddir::Write));
        assert_eq!((pair[0].offset, pair[0].len), (pair[1].offset, pair[1].len));
    }
}

#[test]
fn randtrimwrite_past_an_offset_writes_where_fio_does() {
    // fio 3.33 takes the trim's start in the device as the write's offset
    // into the region: with offset=1m size=1m that is past the region, and
    // the job ends after one trim.
    let mut s = spec(RwPattern::RandTrimWrite);
    s.bs = [
        BlockSizes::Fixed(4 * KIB),
        BlockSizes::Fixed(4 * KIB),
        BlockSizes::Fixed(4 * KIB),
    ];
    let l = JobLayout::new(
        vec![Region {
            start: MIB,
            len: MIB,
            after: 1 << 29,
            before: MIB,
            later_before: MIB,
        }],
        MIB,
    );
    let mut g = Generator::new(&s, &l, 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(trims_and_writes(&ios), (1, 0));
}

#[test]
fn strided_trimwrite_counts_trims_as_zone_bytes() {
    let z = |size, range, skip| StridedZones { size, range, skip };
    // fio 3.33, rw=trimwrite bs=512 zonesize=3m zoneskip=5m offset=231m on
    // a 1 GiB device: 1.5 MiB written per zone (its trims are the other
    // half of zonesize), 99 zones and 1 MiB of the last, up to the end of
    // the device: 306176 writes and as many trims.
    let (n, _) = strided_run(
        RwPattern::TrimWrite,
        512,
        z(3 * MIB, 3 * MIB, 5 * MIB),
        231 * MIB,
        793 * MIB,
    );
    assert_eq!(n, 2 * 306_176);
    // bs=1m: the zone fills after trim, write, trim; the write that moves
    // to the next zone resets the file's starts, and as no trim starts
    // there again, only writes follow: 64 writes and 2 trims in 64m.
    let mut s = spec(RwPattern::TrimWrite);
    s.bs = [
        BlockSizes::Fixed(MIB),
        BlockSizes::Fixed(MIB),
        BlockSizes::Fixed(MIB),
    ];
    s.strided_zones = Some(z(3 * MIB, 3 * MIB, 5 * MIB));
    let l = JobLayout::new(
        vec![Region {
            start: 0,
            len: 64 * MIB,
            after: (1 << 30) - 64 * MIB,
            before: 0,
            later_before: 0,
        }],
        64 * MIB,
    );
    let mut g = Generator::new(&s, &l, 1).unwrap();
    assert_eq!(trims_and_writes(&drain(&mut g, usize::MAX)), (2, 64));
    // randtrimwrite there: the reset between a trim and its write leaves no
    // trim to repeat (fio: "bug in offset generation"), and the job ends
    // after trim, write, trim.
    s.rw = RwPattern::RandTrimWrite;
    let mut g = Generator::new(&s, &l, 1).unwrap();
    assert_eq!(trims_and_writes(&drain(&mut g, usize::MAX)), (2, 1));
}

#[test]
fn bssplit_proportions_by_count() {
    let mut s = spec(RwPattern::RandRead);
    s.bs[0] = BlockSizes::Split(vec![(4096, 60), (16384, 30), (65536, 10)]);
    s.time_based = true;
    // The draw itself; with the random map, lengths are also trimmed to
    // free runs (`varied_sizes_are_trimmed_to_free_runs_as_fio_does`).
    s.norandommap = true;
    let mut g = Generator::new(&s, &one_file(0, 1 << 30), 2).unwrap();
    let n = 100_000;
    let mut c = [0usize; 3];
    for _ in 0..n {
        let io = next_of_job(&mut g).unwrap();
        assert_eq!(io.offset % 4096, 0);
        c[match io.len {
            4096 => 0,
            16384 => 1,
            65536 => 2,
            l => panic!("len {l}"),
        }] += 1;
    }
    for (k, want) in [(0, 0.6), (1, 0.3), (2, 0.1)] {
        let got = c[k] as f64 / n as f64;
        assert!((got - want).abs() < 0.01, "{c:?}");
    }
}

/// fio 3.33 (`ioengine=null size=64m rw=randread`, I/Os per pass):
/// bsrange=4k-64k 2743, bssplit=4k/50:64k/50 3262, bsrange=4k-16k 8010;
/// with norandommap 1963 (no trimming). Every pass covers the region once
/// and no I/O overlaps another.
#[test]
fn varied_sizes_are_trimmed_to_free_runs_as_fio_does() {
    let count = |bs: BlockSizes, norandommap: bool| {
        let mut s = spec(RwPattern::RandRead);
        s.bs[0] = bs;
        s.norandommap = norandommap;
        let mut g = Generator::new(&s, &one_file(0, 64 << 20), 5).unwrap();
        let ios = drain(&mut g, usize::MAX);
        if !norandommap {
            let mut covered = vec![false; (64 << 20) / 4096];
            for io in &ios {
                assert_eq!(io.len % 4096, 0);
                for b in io.offset / 4096..(io.offset + io.len) / 4096 {
                    assert!(!covered[b as usize], "block {b} twice");
                    covered[b as usize] = true;
                }
            }
            assert!(covered.iter().all(|&c| c));
        }
        ios.len() as f64
    };
    let range = |min, max| BlockSizes::Range { min, max };
    for (bs, fio) in [
        (range(4096, 65536), 2743.0),
        (BlockSizes::Split(vec![(4096, 50), (65536, 50)]), 3262.0),
        (range(4096, 16384), 8010.0),
    ] {
        let got = count(bs.clone(), false);
        assert!(
            (got / fio - 1.0).abs() < 0.05,
            "{bs:?}: {got} I/Os, fio {fio}"
        );
    }
    let got = count(range(4096, 65536), true);
    assert!((got / 1963.0 - 1.0).abs() < 0.05, "norandommap: {got}");
}

#[test]
fn blockalign_is_respected() {
    let mut s = spec(RwPattern::RandRead);
    s.bs[0] = BlockSizes::Fixed(4096);
    s.blockalign[0] = Some(64 * KIB);
    s.time_based = true;
    let mut g = Generator::new(&s, &one_file(1 << 20, 10 << 20), 2).unwrap();
    assert_eq!(g.random_blocks(0, Ddir::Read), Some(160));
    for _ in 0..1000 {
        let io = next_of_job(&mut g).unwrap();
        assert_eq!((io.offset - (1 << 20)) % (64 * KIB), 0);
    }
    // blockalign below bs: starts on the finer grid, still inside.
    s.bs[0] = BlockSizes::Fixed(8192);
    s.blockalign[0] = Some(512);
    let len = 64 * KIB;
    let mut g = Generator::new(&s, &one_file(0, len), 2).unwrap();
    assert_eq!(
        g.random_blocks(0, Ddir::Read),
        Some((len - 8192 + 512) / 512)
    );
    let mut odd = false;
    for _ in 0..1000 {
        let io = next_of_job(&mut g).unwrap();
        assert_eq!(io.offset % 512, 0);
        assert!(io.offset + io.len <= len);
        odd |= !io.offset.is_multiple_of(8192);
    }
    assert!(odd);
}

#[test]
fn random_run_modifier() {
    let mut s = spec(RwPattern::RandRead);
    s.rw_modifier = Some(4);
    s.time_based = true;
    let mut g = Generator::new(&s, &one_file(0, 1 << 30), 2).unwrap();
    let ios = drain(&mut g, 400);
    let mut jumps = 0;
    for (k, w) in ios.windows(2).enumerate() {
        if (k + 1) % 4 != 0 {
            assert_eq!(
                w[1].offset,
                w[0].offset + w[0].len,
                "I/O {} not sequential",
                k + 1
            );
        } else if w[1].offset != w[0].offset + w[0].len {
            jumps += 1;
        }
    }
    assert!(jumps > 90);
}

/// `percentage_random=N`: about N% of the offsets are random jumps, the
/// rest continue where the last I/O ended; 100 (the default) draws exactly
/// as a job without the option, and 0 is sequential from a random start.
#[test]
fn percentage_random_mixes_jumps_and_runs() {
    let continued = |perc: u32| {
        let mut s = spec(RwPattern::RandRead);
        s.percentage_random = [perc; 3];
        let mut g = Generator::new(&s, &one_file(0, 1 << 30), 7).unwrap();
        let ios = drain(&mut g, 10_000);
        let runs = ios
            .windows(2)
            .filter(|w| w[1].offset == w[0].offset + w[0].len)
            .count();
        (runs as f64 / (ios.len() - 1) as f64, ios)
    };
    let (share, _) = continued(30);
    assert!((share - 0.70).abs() < 0.02, "{share}");
    let (share, _) = continued(0);
    assert_eq!(share, 1.0);
    let (share, plain) = continued(100);
    assert!(share < 0.01, "{share}");
    let mut g = Generator::new(&spec(RwPattern::RandRead), &one_file(0, 1 << 30), 7).unwrap();
    assert_eq!(plain, drain(&mut g, 10_000));
}

/// At the region's end the sequential choice gives way to a random block
/// (fio's `get_next_seq_offset` fails there unless the job is time_based).
#[test]
fn percentage_random_at_the_end_of_the_file_jumps() {
    let mut s = spec(RwPattern::RandWrite);
    s.percentage_random = [0; 3];
    let mut g = Generator::new(&s, &one_file(0, 64 * KIB), 3).unwrap();
    let ios = drain(&mut g, 1000);
    assert_eq!(ios.len(), 16);
    assert!(ios.iter().all(|io| io.offset + io.len <= 64 * KIB));
}

#[test]
fn number_ios_caps() {
    let mut s = spec(RwPattern::RandRead);
    s.number_ios = Some(10);
    let mut g = Generator::new(&s, &one_file(0, 1 << 30), 2).unwrap();
    assert_eq!(drain(&mut g, usize::MAX).len(), 10);
    s.number_ios = Some(1 << 40);
    let mut g = Generator::new(&s, &one_file(0, 64 * KIB), 2).unwrap();
    assert_eq!(drain(&mut g, usize::MAX).len(), 16);
}

#[test]
fn time_based_never_ends() {
    let mut s = spec(RwPattern::Read);
    s.time_based = true;
    let mut g = Generator::new(&s, &one_file(0, 64 * KIB), 2).unwrap();
    assert_eq!(drain(&mut g, 10_000).len(), 10_000);
}

#[test]
fn multiple_files_round_robin() {
    let s = spec(RwPattern::Read);
    let l = JobLayout::new(
        vec![Region::whole(0, 8192), Region::whole(1 << 20, 8192)],
        16384,
    );
    let mut g = Generator::new(&s, &l, 1).unwrap();
    let offs: Vec<u64> = drain(&mut g, 100).iter().map(|io| io.offset).collect();
    assert_eq!(offs, vec![0, 1 << 20, 4096, (1 << 20) + 4096]);
}

#[test]
fn region_smaller_than_every_block_is_an_error() {
    let mut s = spec(RwPattern::Read);
    s.bs[0] = BlockSizes::Fixed(1 << 20);
    let e = Generator::new(&s, &one_file(0, 4096), 1).err().unwrap();
    assert!(
        e.message
            .contains("smaller than its block size (read 1048576 bytes)"),
        "{e}"
    );
    assert_eq!(e.option, "size");
    // Writes fit, but rwmixread=100 never draws one.
    let mut s = spec(RwPattern::RandRw);
    s.bs = [
        BlockSizes::Fixed(1 << 20),
        BlockSizes::Fixed(4096),
        BlockSizes::Fixed(4096),
    ];
    s.rwmixread = 100;
    assert!(Generator::new(&s, &one_file(0, 256 * KIB), 1).is_err());
}

#[test]
fn a_direction_whose_block_does_not_fit_ends_the_pass_when_drawn() {
    // fio 3.33, rw=randrw bs=4k,1m size=256k: reads until the first write is
    // drawn, then the file is done (3 reads with fio's default seed, none
    // with --randseed=7).
    let mut s = spec(RwPattern::RandRw);
    s.bs = [
        BlockSizes::Fixed(4096),
        BlockSizes::Fixed(1 << 20),
        BlockSizes::Fixed(1 << 20),
    ];
    let mut lens = Vec::new();
    for seed in 0..20 {
        let mut g = Generator::new(&s, &one_file(0, 256 * KIB), seed).unwrap();
        let ios = drain(&mut g, 1000);
        assert!(ios.iter().all(|io| io.ddir == Ddir::Read && io.len == 4096));
        assert_eq!(g.files_left, 0, "seed {seed}: the pass ended on a write");
        lens.push(ios.len());
    }
    // Half the draws are writes: runs of reads are short, and some are 0.
    assert!(lens.contains(&0), "{lens:?}");
    assert!(lens.iter().all(|&n| n < 20), "{lens:?}");
    // time_based: each such end starts a new pass, and reads go on; with
    // randrepeat every pass is the first again, and a pass that moved
    // nothing ends the job (fio's thread_main: no bytes, terminate).
    s.time_based = true;
    let seed = (0..20)
        .find(|&k| lens[k as usize] > 0)
        .expect("a seed with reads");
    let mut g = Generator::new(&s, &one_file(0, 256 * KIB), seed).unwrap();
    let ios = drain(&mut g, 500);
    assert_eq!(ios.len(), 500);
    assert!(ios.iter().all(|io| io.ddir == Ddir::Read));
    let first = lens[seed as usize];
    assert_eq!(ios[..first], ios[first..2 * first]);
    let none = (0..20).find(|&k| lens[k as usize] == 0).unwrap();
    let mut g = Generator::new(&s, &one_file(0, 256 * KIB), none).unwrap();
    assert!(drain(&mut g, 500).is_empty());
    // A file the write fits in takes the write.
    let l = JobLayout::new(vec![Region::whole(0, 2 << 20)], 256 * KIB);
    s.time_based = false;
    let mut g = Generator::new(&s, &l, 1).unwrap();
    let ios = drain(&mut g, 1000);
    assert!(ios
        .iter()
        .any(|io| io.ddir == Ddir::Write && io.len == 1 << 20));
}

#[test]
fn layout_then_generate() {
    let mut a = JobSpec::with_defaults("a");
    a.size = Some(SizeSpec::Bytes(1 << 20));
    a.rw = RwPattern::RandWrite;
    let l = layout(&[a.clone()], 1 << 30).unwrap();
    let mut g = Generator::new(&a, &l[0], 1).unwrap();
    assert_eq!(drain(&mut g, usize::MAX).len(), 256);
}

fn all_patterns() -> impl Strategy<Value = RwPattern> {
    prop_oneof![
        Just(RwPattern::Read),
        Just(RwPattern::Write),
        Just(RwPattern::Trim),
        Just(RwPattern::RandRead),
        Just(RwPattern::RandWrite),
        Just(RwPattern::RandTrim),
        Just(RwPattern::ReadWrite),
        Just(RwPattern::RandRw),
        Just(RwPattern::TrimWrite),
        Just(RwPattern::RandTrimWrite),
    ]
}

fn block_sizes() -> impl Strategy<Value = BlockSizes> {
    prop_oneof![
        (0u32..6).prop_map(|k| BlockSizes::Fixed(512 << k)),
        (0u32..4, 0u32..4).prop_map(|(a, b)| BlockSizes::Range {
            min: 512 << a,
            max: (512 << a) << b,
        }),
        proptest::collection::vec((0u32..6, 1u32..50), 1..4)
            .prop_map(|v| BlockSizes::Split(v.into_iter().map(|(k, w)| (512 << k, w)).collect())),
    ]
}

fn distributions() -> impl Strategy<Value = RandomDistribution> {
    prop_oneof![
        Just(RandomDistribution::Random),
        (0.1f64..2.0).prop_map(|theta| RandomDistribution::Zipf {
            theta,
            center: None
        }),
        (0.05f64..0.95, proptest::option::of(0.0f64..1.0))
            .prop_map(|(h, center)| RandomDistribution::Pareto { h, center }),
        (0.0f64..50.0, proptest::option::of(0.0f64..1.0))
            .prop_map(|(sigma_pct, center)| RandomDistribution::Normal { sigma_pct, center }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn never_outside_region(
        rw in all_patterns(),
        bs in block_sizes(),
        bs_w in block_sizes(),
        unaligned in any::<bool>(),
        align in proptest::option::of(0u32..5),
        dist in distributions(),
        gen in prop_oneof![Just(RandomGenerator::Tausworthe), Just(RandomGenerator::Lfsr)],
        norandommap in any::<bool>(),
        modifier in proptest::option::of(-20_000i64..20_000),
        start in 0u64..1 << 40,
        len_blocks in 64u64..5000,
        extra in 0u64..4096,
        nfiles in 1usize..3,
        loops in 1u32..3,
        io_quarters in 1u64..9,
        seed in any::<u64>(),
    ) {
        let mut s = spec(rw);
        s.bs = [bs.clone(), bs_w, bs];
        s.bs_unaligned = unaligned;
        s.blockalign = [align.map(|k| 512u64 << k); 3];
        s.random_distribution = dist;
        s.random_generator = gen;
        s.norandommap = norandommap;
        s.rw_modifier = modifier;
        s.loops = loops;
        let start = start / 512 * 512;
        let len = len_blocks * 4096 + extra;
        let files: Vec<Region> = (0..nfiles as u64)
            .map(|k| Region::whole(start + k * len, len))
            .collect();
        let layout = JobLayout::new(files.clone(), len * nfiles as u64 * io_quarters / 4);
        if io_quarters > 4 {
            // Bytes beyond the regions are io_size's (layout() gives them
            // only then).
            s.io_size = Some(SizeSpec::Bytes(layout.io_bytes));
        }
        let mut g = match Generator::new(&s, &layout, seed) {
            Ok(g) => g,
            // Only a region smaller than the largest alignment may be refused.
            Err(e) => { prop_assert!(e.message.contains("smaller"), "{}", e); return Ok(()); }
        };
        let ddirs = rw.ddirs();
        // Every I/O is at least 512 bytes; trimwrite issues two per block,
        // and the last block may run past a budget that is no multiple of
        // 512 (then a trim may follow it).
        let limit = 2 * layout.io_bytes.div_ceil(512) * loops as u64 + 2 * loops as u64;
        let mut n = 0;
        let mut files_done = false;
        while let Some(io) = next_of_job_noting(&mut g, &mut files_done) {
            n += 1;
            prop_assert!(n <= limit, "budget never ran out");
            prop_assert!(ddirs.contains(&io.ddir));
            prop_assert!(io.len > 0);
            prop_assert!(
                files.iter().any(|f| io.offset >= f.start && io.offset + io.len <= f.start + f.len),
                "{:?} outside {:?}", io, files
            );
            // A randtrimwrite's write repeats its trim's range; every other
            // I/O has its own direction's sizes.
            let i = if rw == RwPattern::RandTrimWrite {
                Ddir::Trim.index()
            } else {
                io.ddir.index()
            };
            let min = BsChooser::new(&s.bs[i], unaligned).unwrap().min();
            let max = BsChooser::new(&s.bs[i], unaligned).unwrap().max();
            prop_assert!(io.len >= min && io.len <= max, "{:?} not in {}..={}", io, min, max);
            if rw.is_random() && modifier.is_none_or(|m| m <= 1) {
                let f = files.iter().find(|f| io.offset >= f.start && io.offset < f.start + f.len).unwrap();
                let ba = s.blockalign[i].unwrap_or(min);
                prop_assert_eq!((io.offset - f.start) % ba, 0, "{:?} not aligned to {}", io, ba);
            }
        }
        // fio's amounts: a budget of io_size x loops over the whole job; a
        // pass per loop of at most size; with io_size beyond size, more
        // passes while a largest block is left. Each pass stops when its
        // next block would not fit, falling short by less than a block,
        // unless every file was done first (fio's set_io_u_file).
        let counted: &[Ddir] = if matches!(rw, RwPattern::TrimWrite | RwPattern::RandTrimWrite) {
            &[Ddir::Write]
        } else {
            ddirs
        };
        let max_counted = counted
            .iter()
            .map(|d| BsChooser::new(&s.bs[d.index()], unaligned).unwrap().max())
            .max()
            .unwrap();
        let loops = loops as u64;
        let budget = layout.io_bytes * loops;
        let mut expected = if s.io_size.is_some() {
            budget.min((layout.pass_bytes * loops).max(layout.io_bytes))
        } else {
            budget
        };
        if counted.len() < ddirs.len() {
            // trimwrite: keep_running counts the trims too, so the first
            // pass alone is all that is sure.
            expected = expected.min(layout.pass_bytes);
        }
        prop_assert!(
            files_done || g.bytes_done() + max_counted * (loops + 1) > expected,
            "{} bytes of {expected}", g.bytes_done()
        );
    }

    #[test]
    fn same_seed_same_sequence(
        rw in all_patterns(),
        bs in block_sizes(),
        dist in distributions(),
        seed in any::<u64>(),
    ) {
        let mut s = spec(rw);
        s.bs = [bs.clone(), bs.clone(), bs];
        s.random_distribution = dist;
        s.time_based = true;
        let l = one_file(4096, 1 << 24);
        let run = |seed| {
            let mut g = Generator::new(&s, &l, seed).unwrap();
            (0..300).map(|_| next_of_job(&mut g).unwrap()).collect::<Vec<_>>()
        };
        let a = run(seed);
        prop_assert_eq!(&a, &run(seed));
        if rw.is_random() {
            prop_assert_ne!(&a, &run(seed ^ 1));
        }
    }
}

/// CPU time of this thread in ns (Linux /proc; 10 ms ticks), so the numbers
/// hold on a shared machine where wall time overstates them.
fn thread_cpu_ns() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // Fields 14 and 15 (utime, stime) are 11 and 12 after the state field.
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000_000)
}

/// `cargo test --release --lib workload::tests::bench -- --ignored --nocapture`
#[test]
#[ignore]
fn bench_next_io() {
    use rand::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::time::Instant;
    type Setup = Box<dyn Fn(&mut JobSpec)>;
    let cases: Vec<(&str, Setup)> = vec![
        ("read (seq)", Box::new(|s| s.rw = RwPattern::Read)),
        (
            "randread (perm map)",
            Box::new(|s| s.rw = RwPattern::RandRead),
        ),
        (
            "randread lfsr",
            Box::new(|s| {
                s.rw = RwPattern::RandRead;
                s.random_generator = RandomGenerator::Lfsr;
            }),
        ),
        (
            "randread norandommap",
            Box::new(|s| {
                s.rw = RwPattern::RandRead;
                s.norandommap = true;
            }),
        ),
        (
            "randrw 70% bssplit",
            Box::new(|s| {
                s.rw = RwPattern::RandRw;
                s.rwmixread = 70;
                s.bs = [
                    BlockSizes::Split(vec![(4096, 60), (16384, 30), (65536, 10)]),
                    BlockSizes::Fixed(4096),
                    BlockSizes::Fixed(4096),
                ];
            }),
        ),
        (
            "randread zipf:1.2",
            Box::new(|s| {
                s.rw = RwPattern::RandRead;
                s.random_distribution = RandomDistribution::Zipf {
                    theta: 1.2,
                    center: None,
                };
            }),
        ),
        (
            "randread pareto:0.2",
            Box::new(|s| {
                s.rw = RwPattern::RandRead;
                s.random_distribution = RandomDistribution::Pareto {
                    h: 0.2,
                    center: None,
                };
            }),
        ),
        (
            "randread normal:5",
            Box::new(|s| {
                s.rw = RwPattern::RandRead;
                s.random_distribution = RandomDistribution::Normal {
                    sigma_pct: 5.0,
                    center: None,
                };
            }),
        ),
    ];
    let n: u64 = std::env::var("WL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000_000);
    let only = std::env::var("WL_BENCH_ONLY").ok();
    if only.is_none() {
        // Calibration: the cost of one ChaCha8 draw on this machine.
        let mut r = ChaCha8Rng::seed_from_u64(1);
        let mut acc = 0u64;
        let (t, c) = (Instant::now(), thread_cpu_ns());
        for _ in 0..n {
            acc = acc.wrapping_add(r.next_u64());
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        let cpu = thread_cpu_ns()
            .zip(c)
            .map_or(f64::NAN, |(b, a)| (b - a) as f64 / n as f64);
        println!(
            "{:24} {ns:6.1} ns wall {cpu:6.1} ns cpu per draw (checksum {acc:x})",
            "ChaCha8 next_u64"
        );
    }
    for (name, f) in cases {
        if only.as_deref().is_some_and(|o| !name.contains(o)) {
            continue;
        }
        let mut s = spec(RwPattern::Read);
        s.time_based = true;
        f(&mut s);
        // A 1 TiB device region: 2^28 blocks of 4 KiB.
        let mut g = Generator::new(&s, &one_file(0, 1 << 40), 1).unwrap();
        let mut acc = 0u64;
        let (t, c) = (Instant::now(), thread_cpu_ns());
        for _ in 0..n {
            let io = next_of_job(&mut g).unwrap();
            acc = acc.wrapping_add(io.offset ^ io.len);
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        let cpu = thread_cpu_ns()
            .zip(c)
            .map_or(f64::NAN, |(b, a)| (b - a) as f64 / n as f64);
        println!("{name:24} {ns:6.1} ns wall {cpu:6.1} ns cpu per next_io (checksum {acc:x})");
    }
}

// ------------------------------------------------------------ zoned

/// A job from fio syntax, time based so the generator never runs dry.
fn zoned_spec(rw: &str, dist: &str) -> JobSpec {
    let text = format!(
        "[z]\nrw={rw}\nrandom_distribution={dist}\nfilename=/dev/x\ntime_based\nruntime=1\n"
    );
    let f = crate::job::parse_str(
        &text,
        "t",
        std::path::Path::new(""),
        &crate::job::Inputs::plain(),
    )
    .unwrap();
    f.jobs[0].clone()
}

/// Share of `ios` (of direction `d`) whose offset lies in each
/// `[a, b)` byte range.
fn shares(ios: &[IoUnit], d: Ddir, ranges: &[(u64, u64)]) -> Vec<f64> {
    let of_d: Vec<&IoUnit> = ios.iter().filter(|io| io.ddir == d).collect();
    ranges
        .iter()
        .map(|&(a, b)| {
            of_d.iter()
                .filter(|io| io.offset >= a && io.offset < b)
                .count() as f64
                / of_d.len() as f64
        })
        .collect()
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < tol, "got {got:?}, want {want:?}");
    }
}

/// fio 3.33 (null engine, 4 MiB file, 4k randread, 102,400 I/Os logged
/// with write_iolog) put 59.92%, 29.93%, 8.20% and 1.96% of the I/Os into
/// the four zones of zoned:60/10:30/20:8/30:2/40, 30.46% into the first
/// half of the first zone, and touched 1019 of the 1024 blocks.
#[test]
fn zoned_hits_like_fio() {
    let s = zoned_spec("randread", "zoned:60/10:30/20:8/30:2/40");
    let len = 4 << 20;
    let mut g = Generator::new(&s, &one_file(0, len), 7).unwrap();
    let ios = drain(&mut g, 200_000);
    let pct = |p: u64| len * p / 100;
    let z = shares(
        &ios,
        Ddir::Read,
        &[
            (0, pct(10)),
            (pct(10), pct(30)),
            (pct(30), pct(60)),
            (pct(60), len),
        ],
    );
    close(&z, &[0.60, 0.30, 0.08, 0.02], 0.006);
    // Uniform inside a zone.
    close(
        &shares(&ios, Ddir::Read, &[(0, pct(5)), (pct(5), pct(10))]),
        &[0.30, 0.30],
        0.006,
    );
    // Uniform with repeats (fio turns the random map off): one pass worth
    // of I/Os does not touch every block.
    let mut first: Vec<u64> = ios[..1024].iter().map(|io| io.offset).collect();
    first.sort_unstable();
    first.dedup();
    assert!(first.len() < 1024);
    assert!(ios
        .iter()
        .all(|io| io.offset + io.len <= len && io.offset % 4096 == 0));
}

#[test]
fn zoned_lists_per_direction() {
    let len = 8 << 20;
    // Reads in the first 10%, writes (and trims) in the first half.
    let s = zoned_spec("randrw", "zoned:100/10,100/50:0/50");
    let mut g = Generator::new(&s, &one_file(0, len), 3).unwrap();
    let ios = drain(&mut g, 50_000);
    assert_eq!(shares(&ios, Ddir::Read, &[(0, len / 10)]), [1.0]);
    assert_eq!(shares(&ios, Ddir::Write, &[(0, len / 2)]), [1.0]);
    close(&shares(&ios, Ddir::Write, &[(0, len / 4)]), &[0.5], 0.015);
    // An empty list leaves that direction uniform over the whole file.
    let s = zoned_spec("randrw", "zoned:100/10,");
    let mut g = Generator::new(&s, &one_file(0, len), 3).unwrap();
    let ios = drain(&mut g, 50_000);
    assert_eq!(shares(&ios, Ddir::Read, &[(0, len / 10)]), [1.0]);
    close(
        &shares(&ios, Ddir::Write, &[(0, len / 10), (len / 2, len)]),
        &[0.10, 0.50],
        0.015,
    );
}

#[test]
fn zoned_abs_in_bytes() {
    let len = 8 << 20;
    let s = zoned_spec("randread", "zoned_abs:70/1m:30/2m");
    let mut g = Generator::new(&s, &one_file(1 << 30, len), 5).unwrap();
    let ios = drain(&mut g, 100_000);
    let base = 1 << 30;
    let z = shares(
        &ios,
        Ddir::Read,
        &[
            (base, base + (1 << 20)),
            (base + (1 << 20), base + (3 << 20)),
            (base + (3 << 20), base + len),
        ],
    );
    close(&z, &[0.70, 0.30, 0.0], 0.006);
    assert_eq!(z[2], 0.0);
    // Zones past the end of the file are an error (fio fails the job).
    let s = zoned_spec("randread", "zoned_abs:50/1m:50/16m");
    let e = Generator::new(&s, &one_file(0, len), 5).err().unwrap();
    assert!(e.message.contains("past the end"), "{e}");
    assert_eq!(e.option, "random_distribution");
}

#[test]
fn wraps_are_reported_once_per_new_pass() {
    // Sequential, time_based: the 5th I/O of a 4-block file starts pass 2.
    let mut s = spec(RwPattern::Read);
    s.time_based = true;
    let mut g = Generator::new(&s, &one_file(0, 16 * KIB), 1).unwrap();
    let mut seen = Vec::new();
    for k in 0..12 {
        next_of_job(&mut g).unwrap();
        if g.take_wrapped() != Wrapped::None {
            seen.push(k);
        }
    }
    assert_eq!(seen, [4, 8]);
    // Random with a map: every 4 draws use it up; without one, never.
    let mut r = spec(RwPattern::RandRead);
    r.time_based = true;
    let mut g = Generator::new(&r, &one_file(0, 16 * KIB), 1).unwrap();
    let wraps = (0..12)
        .filter(|_| {
            next_of_job(&mut g).unwrap();
            g.take_wrapped() == Wrapped::File(0)
        })
        .count();
    assert_eq!(wraps, 2);
    r.norandommap = true;
    let mut g = Generator::new(&r, &one_file(0, 16 * KIB), 1).unwrap();
    assert!((0..12).all(|_| {
        next_of_job(&mut g).unwrap();
        g.take_wrapped() == Wrapped::None
    }));
    // loops: a new loop reopens every file.
    let mut l = spec(RwPattern::Read);
    l.loops = 2;
    let mut g = Generator::new(&l, &one_file(0, 8 * KIB), 1).unwrap();
    let marks: Vec<Wrapped> = (0..4)
        .map(|_| {
            next_of_job(&mut g).unwrap();
            g.take_wrapped()
        })
        .collect();
    assert_eq!(
        marks,
        [Wrapped::None, Wrapped::None, Wrapped::All, Wrapped::None]
    );
}

#[test]
fn a_pass_ends_when_the_next_block_would_not_fit() {
    // fio's io_u_fits: size=16m bs=3000 is 5592 I/Os (16,776,000 bytes),
    // not a 5593rd past the region; each loops= pass does as many.
    for rw in [RwPattern::Read, RwPattern::RandRead] {
        let mut s = spec(rw);
        s.bs[Ddir::Read.index()] = BlockSizes::Fixed(3000);
        let mut g = Generator::new(&s, &one_file(0, 16 << 20), 1).unwrap();
        let ios = drain(&mut g, usize::MAX);
        assert_eq!(ios.len(), 5592, "{rw:?}");
        assert!(ios.iter().all(|io| io.offset + io.len <= 16 << 20));
    }
    let mut s = spec(RwPattern::Write);
    s.bs[Ddir::Write.index()] = BlockSizes::Fixed(4000);
    s.loops = 3;
    let mut g = Generator::new(&s, &one_file(0, 1 << 20), 1).unwrap();
    assert_eq!(drain(&mut g, usize::MAX).len(), 3 * 262);
}

fn device_part(start: u64, len: u64) -> JobLayout {
    JobLayout::new(
        vec![Region {
            start,
            len,
            after: 1 << 30,
            before: start,
            later_before: start,
        }],
        len,
    )
}

#[test]
fn holes_end_a_device_region_and_wrap_in_a_file() {
    // fio 3.33 on a 1 GiB loop device: rw=write:64k bs=64k size=64m did
    // 512 writes (32 MiB); the offset left the region, which ended the job.
    let mut s = spec(RwPattern::Write);
    s.rw_modifier = Some(64 * KIB as i64);
    s.bs[Ddir::Write.index()] = BlockSizes::Fixed(64 * KIB);
    let mut g = Generator::new(&s, &device_part(0, 64 << 20), 1).unwrap();
    assert_eq!(drain(&mut g, usize::MAX).len(), 512);
    // In a file of its own the hole crossing the file's end wraps to its
    // start (get_next_seq_offset), and the bytes end the job.
    let mut g = Generator::new(&s, &one_file(0, 64 << 20), 1).unwrap();
    assert_eq!(drain(&mut g, usize::MAX).len(), 1024);
}

#[test]
fn a_continuation_leaving_the_region_ends_the_file() {
    // rw=randread:2 on 4 blocks inside a longer device: a jump to the last
    // block is followed by an offset past the region, so the file is done
    // before its bytes; in a file of its own a random block follows.
    let mut s = spec(RwPattern::RandRead);
    s.rw_modifier = Some(2);
    let mut short = 0;
    for seed in 0..40 {
        let mut g = Generator::new(&s, &device_part(0, 16 * KIB), seed).unwrap();
        let ios = drain(&mut g, 100);
        assert!(ios.len() <= 4);
        short += usize::from(ios.len() < 4);
        let mut g = Generator::new(&s, &one_file(0, 16 * KIB), seed).unwrap();
        assert_eq!(drain(&mut g, 100).len(), 4);
    }
    assert!((5..=35).contains(&short), "{short} of 40 ended early");
}

#[test]
fn uneven_files_are_done_when_their_maps_are_full() {
    // fio 3.33 here: nrfiles=3 size=8m bs=4k randread makes three files of
    // 2796202 bytes, 682 whole blocks each, and does 2046 reads: each file
    // is done when its random map is full, although 4094 bytes of the
    // size are left.
    let s = spec(RwPattern::RandRead);
    let len = (8u64 << 20) / 3;
    let l = JobLayout::new(
        (0..3).map(|k| Region::whole(k * len, len)).collect(),
        3 * len,
    );
    let mut g = Generator::new(&s, &l, 1).unwrap();
    assert_eq!(drain(&mut g, usize::MAX).len(), 2046);
}

#[test]
fn files_smaller_than_size_end_the_job_unless_io_size_asks_for_more() {
    // filesize= files hold less than size=: each file is done at its end
    // and the job with it (fio: 287 writes of 64k for three files of
    // 4m-12m with size=40m). With io_size= fio starts another pass.
    // fio caps size at the files' total (setup_files), so the layout's
    // budget is 96k there.
    let mut s = spec(RwPattern::Write);
    let files = vec![Region::whole(0, 64 * KIB), Region::whole(MIB, 32 * KIB)];
    let l = JobLayout::new(files.clone(), 96 * KIB);
    let mut g = Generator::new(&s, &l, 1).unwrap();
    assert_eq!(drain(&mut g, usize::MAX).len(), 24);
    s.io_size = Some(SizeSpec::Bytes(400 * KIB));
    let l = JobLayout::new(files, 400 * KIB);
    let mut g = Generator::new(&s, &l, 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 100);
    assert_eq!(ios[24].offset, 0, "a new pass starts at the first file");
}

const MIB: u64 = 1 << 20;

fn two_files(service: FileService) -> Vec<u64> {
    let mut s = spec(RwPattern::Read);
    s.file_service = service;
    let l = JobLayout::new(
        vec![Region::whole(0, 16 * KIB), Region::whole(MIB, 16 * KIB)],
        32 * KIB,
    );
    let mut g = Generator::new(&s, &l, 3).unwrap();
    drain(&mut g, usize::MAX)
        .iter()
        .map(|io| io.offset / MIB)
        .collect()
}

#[test]
fn file_service_types_pick_files_as_fio_does() {
    use crate::job::FileServiceKind as K;
    let svc = |kind, per_turn| FileService { kind, per_turn };
    assert_eq!(two_files(svc(K::RoundRobin, 1)), [0, 1, 0, 1, 0, 1, 0, 1]);
    assert_eq!(two_files(svc(K::RoundRobin, 3)), [0, 0, 0, 1, 1, 1, 0, 1]);
    assert_eq!(two_files(svc(K::Sequential, 1)), [0, 0, 0, 0, 1, 1, 1, 1]);
    let random = two_files(svc(K::Random, 1));
    assert_eq!(random.iter().filter(|&&f| f == 0).count(), 4);
    assert_ne!(random, [0, 1, 0, 1, 0, 1, 0, 1]);
    // A popular first file is served far more often while it lasts.
    let mut s = spec(RwPattern::RandRead);
    s.file_service = svc(K::Zipf(2.0), 1);
    s.time_based = true;
    let l = JobLayout::new(
        (0..8).map(|k| Region::whole(k * MIB, MIB)).collect(),
        8 * MIB,
    );
    let mut g = Generator::new(&s, &l, 3).unwrap();
    let first = (0..1000)
        .filter(|_| next_of_job(&mut g).unwrap().offset < MIB)
        .count();
    assert!(first > 500, "{first} of 1000 to the hottest of 8 files");
}

/// The MiB-sized pieces of the device a strided job's I/O touched, and its
/// I/O count, for a job on a 1 GiB device at `offset` of `size` bytes.
fn strided_run(
    rw: RwPattern,
    bs: u64,
    zones: StridedZones,
    offset: u64,
    size: u64,
) -> (usize, Vec<u64>) {
    let mut s = spec(rw);
    s.bs = [
        BlockSizes::Fixed(bs),
        BlockSizes::Fixed(bs),
        BlockSizes::Fixed(bs),
    ];
    s.strided_zones = Some(zones);
    let l = JobLayout::new(
        vec![Region {
            start: offset,
            len: size,
            after: (1 << 30) - offset - size,
            before: offset,
            later_before: offset,
        }],
        size,
    );
    let mut g = Generator::new(&s, &l, 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    let mut mibs: Vec<u64> = ios.iter().map(|io| io.offset / MIB).collect();
    mibs.sort_unstable();
    mibs.dedup();
    (ios.len(), mibs)
}

#[test]
fn strided_zones_touch_what_fio_touched() {
    // fio 3.33 on a 1 GiB loop device, offsets from write_iolog.
    let z = |size, range, skip| StridedZones { size, range, skip };
    let every = |from: u64, step: u64, n: u64| (0..n).map(|k| from + k * step).collect::<Vec<_>>();
    // zonesize=1m zoneskip=3m size=64m: 64 zones of 1 MiB, 4 MiB apart,
    // past size= (which bounds the bytes only).
    let (n, mibs) = strided_run(RwPattern::Read, 64 * KIB, z(MIB, MIB, 3 * MIB), 0, 64 * MIB);
    assert_eq!((n, mibs), (1024, every(0, 4, 64)));
    let (n, mibs) = strided_run(
        RwPattern::RandRead,
        4 * KIB,
        z(MIB, MIB, 3 * MIB),
        0,
        64 * MIB,
    );
    assert_eq!((n, mibs), (16384, every(0, 4, 64)));
    // zonesize=2m zonerange=1m zoneskip=1m size=16m: each 1 MiB range read
    // twice, 8 zones 2 MiB apart.
    let (n, mibs) = strided_run(RwPattern::Read, 64 * KIB, z(2 * MIB, MIB, MIB), 0, 16 * MIB);
    assert_eq!((n, mibs), (256, every(0, 2, 8)));
    // zonesize=256k zonerange=1m size=8m randread: 32 zones of 1 MiB.
    let (n, mibs) = strided_run(
        RwPattern::RandRead,
        4 * KIB,
        z(256 * KIB, MIB, 0),
        0,
        8 * MIB,
    );
    assert_eq!((n, mibs), (2048, every(0, 1, 32)));
    // offset=100m size=10m zonesize=1m zoneskip=1m: from 100 MiB.
    let (n, mibs) = strided_run(
        RwPattern::Read,
        64 * KIB,
        z(MIB, MIB, MIB),
        100 * MIB,
        10 * MIB,
    );
    assert_eq!((n, mibs), (160, every(100, 2, 10)));
}

#[test]
fn strided_zones_wrap_at_the_end_of_the_file() {
    // A 4 MiB file, zones of 1 MiB every 3 MiB, 4 MiB of reads: zones at
    // 0 and 3 MiB, then 0 and 3 again.
    let mut s = spec(RwPattern::Read);
    s.strided_zones = Some(StridedZones {
        size: MIB,
        range: MIB,
        skip: 2 * MIB,
    });
    let mut g = Generator::new(&s, &one_file(0, 4 * MIB), 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    let starts: Vec<u64> = ios.iter().step_by(256).map(|io| io.offset / MIB).collect();
    assert_eq!(starts, [0, 3, 0, 3]);
}

#[test]
fn verify_reads_the_pass_back_in_the_order_it_was_written() {
    // fio 3.33 (write_iolog here): rw=randwrite verify=crc32c wrote 2048
    // blocks, then read the same 2048 in the same order.
    let mut s = spec(RwPattern::RandWrite);
    s.verify = true;
    s.loops = 2;
    let mut g = Generator::new(&s, &one_file(0, 64 * KIB), 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_eq!(ios.len(), 4 * 16);
    for pass in ios.chunks(32) {
        let (writes, reads) = pass.split_at(16);
        assert!(writes.iter().all(|io| io.ddir == Ddir::Write));
        assert!(reads.iter().all(|io| io.ddir == Ddir::Read));
        let at = |v: &[IoUnit]| v.iter().map(|io| (io.offset, io.len)).collect::<Vec<_>>();
        assert_eq!(at(writes), at(reads));
    }
    // The second pass writes in the first's order (randrepeat reseeds;
    // fio 3.33 with write_iolog: w0 w11 w13 ... r0 r11 r13 ... w0 w11 ...),
    // and in another order without it.
    assert_eq!(ios[..32], ios[32..]);
    s.randrepeat = false;
    let mut g = Generator::new(&s, &one_file(0, 64 * KIB), 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    assert_ne!(ios[..32], ios[32..]);
}

#[test]
fn verify_reads_back_only_the_writes_of_a_mixed_job() {
    let mut s = spec(RwPattern::RandRw);
    s.verify = true;
    let mut g = Generator::new(&s, &one_file(0, 256 * KIB), 1).unwrap();
    let ios = drain(&mut g, usize::MAX);
    let writes: Vec<u64> = ios[..64]
        .iter()
        .filter(|io| io.ddir == Ddir::Write)
        .map(|io| io.offset)
        .collect();
    let back: Vec<u64> = ios[64..].iter().map(|io| io.offset).collect();
    assert!(ios[64..].iter().all(|io| io.ddir == Ddir::Read));
    assert_eq!(writes, back);
}

#[test]
fn a_time_based_job_that_verifies_writes_its_size_then_reads_it_back_again_and_again() {
    let mut s = spec(RwPattern::Write);
    s.verify = true;
    s.time_based = true;
    let mut g = Generator::new(&s, &one_file(0, 16 * KIB), 1).unwrap();
    let dirs: Vec<Ddir> = drain(&mut g, 24).iter().map(|io| io.ddir).collect();
    let (w, r) = (Ddir::Write, Ddir::Read);
    assert_eq!(dirs, [w, w, w, w, r, r, r, r].repeat(3));
}
