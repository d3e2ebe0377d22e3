//! kyber against the block layer's side of the contract (the harness in
//! sched/testing.rs): domains and batches, tokens and their wake-ups, the
//! kcq merge lists, the latency timer and the tunables.

use super::latency::{GOOD_BUCKETS, IO, TOTAL};
use super::*;
use crate::block::elevator::check_attr_table;
use crate::block::request::flags;
use crate::sched::testing::Harness;
use crate::sim::time::NS_PER_US;

fn harness() -> Harness<Kyber> {
    // One CPU, one hardware queue, queue depth 32, nr_requests 64.
    let mut q = QueueInfo::new(1, 1, 32, 64);
    q.rotational = false;
    Harness::with_queue(Kyber::new(), q)
}

#[test]
fn attribute_table_holds_its_defaults() {
    check_attr_table(&mut Kyber::new(), KYBER_ATTRS);
    let k = Kyber::new();
    let t = k.tunables();
    let names: Vec<&str> = t.iter().map(|t| t.name).collect();
    assert_eq!(names, ["read_lat_nsec", "write_lat_nsec"]);
    assert_eq!(t[0].value, "2000000");
    assert_eq!(t[1].value, "10000000");
}

#[test]
fn tunables_parse_as_kstrtoull_base_10() {
    let mut k = Kyber::new();
    k.set_tunable("read_lat_nsec", "1000000000\n").unwrap();
    assert_eq!(k.tunables()[0].value, "1000000000");
    k.set_tunable("write_lat_nsec", "010").unwrap();
    assert_eq!(k.tunables()[1].value, "10", "decimal, not octal");
    k.set_tunable("read_lat_nsec", "0").unwrap();
    for bad in ["0x10", "-1", "", "1e6", "18446744073709551616"] {
        assert!(k.set_tunable("read_lat_nsec", bad).is_err(), "{bad:?}");
    }
    let e = k.set_tunable("discard_lat_nsec", "1").unwrap_err();
    assert!(e.contains("read_lat_nsec, write_lat_nsec"), "{e}");
}

#[test]
fn async_requests_get_the_shallow_depth() {
    let mut h = harness();
    assert_eq!(h.sched.async_depth(), 48, "75 % of nr_requests 64");
    assert_eq!(h.limit_depth(Op::Write, false), Some(48));
    assert_eq!(
        h.limit_depth(Op::Write, true),
        None,
        "O_DIRECT writes are sync"
    );
    assert_eq!(h.limit_depth(Op::Read, true), None);
    h.q.nr_requests = 256;
    let q = h.q.clone();
    h.sched.depth_updated(&q);
    assert_eq!(h.sched.async_depth(), 192);
}

#[test]
fn batches_rotate_through_domains() {
    let mut h = harness();
    let reads: Vec<RqId> = (0..20).map(|i| h.read(i * 8, 8)).collect();
    let writes: Vec<RqId> = (0..10).map(|i| h.write(10_000 + i * 8, 8)).collect();
    let d = h.insert_new(Op::Discard, 50_000, 8, false);
    let out = h.dispatch_all();
    // READ batch of 16, WRITE batch of 8, DISCARD 1, (OTHER empty), READ
    // again for the 4 left, then WRITE's last 2.
    let mut want = reads[..16].to_vec();
    want.extend(&writes[..8]);
    want.push(d);
    want.extend(&reads[16..]);
    want.extend(&writes[8..]);
    assert_eq!(out, want);
    h.finish_all();
}

#[test]
fn an_empty_domain_gives_way_without_losing_the_batch_order() {
    let mut h = harness();
    let w = h.write(0, 8);
    assert_eq!(h.dispatch(), Some(w));
    assert_eq!(h.sched.cur_domain(0), (WRITE, 1));
    let r = h.read(100, 8);
    // WRITE has nothing: a new batch starts at the next domain and wraps
    // around to READ.
    assert_eq!(h.dispatch(), Some(r));
    assert_eq!(h.sched.cur_domain(0), (READ, 1));
    h.finish_all();
}

#[test]
fn tokens_bound_each_domain_and_a_free_wakes_the_queue_after_a_batch() {
    let mut h = harness();
    h.q.nr_requests = 2048;
    // More discards than the discard depth (64).
    let ids: Vec<RqId> = (0..70)
        .map(|i| h.insert_new(Op::Discard, i * 8, 8, false))
        .collect();
    let out = h.dispatch_all();
    assert_eq!(out.len(), 64);
    assert_eq!(h.sched.tokens_held(DISCARD), 64);
    assert!(h.sched.waiting(0, DISCARD), "the queue waits for a token");
    assert!(h.sched.has_work(0));
    // A read still goes: domains are independent.
    let r = h.read(1 << 20, 8);
    assert_eq!(h.dispatch(), Some(r));
    // Wake batch 8: seven frees do not run the queue, the eighth does.
    let kicks = h.kicks;
    for &id in &out[..7] {
        h.finish(id);
    }
    assert_eq!(h.kicks, kicks);
    h.finish(out[7]);
    assert_eq!(h.kicks, kicks + 1);
    assert!(!h.sched.waiting(0, DISCARD));
    let rest = h.dispatch_all();
    assert_eq!(rest, ids[64..]);
    h.finish_all();
    assert_eq!(h.sched.tokens_held(DISCARD), 0);
    assert_eq!(h.sched.tokens_held(READ), 0);
}

#[test]
fn throttled_requests_stay_mergeable_in_their_kcq() {
    let mut h = harness();
    // Take all 16 OTHER-free domain... use discards: depth 64, so fill it.
    let held: Vec<RqId> = (0..64)
        .map(|i| h.insert_new(Op::Discard, i * 8, 8, false))
        .collect();
    assert_eq!(h.dispatch_all().len(), 64);
    let a = h.insert_new(Op::Discard, 100_000, 8, false);
    assert_eq!(h.dispatch(), None, "out of tokens");
    // The request is still in the kcq: a bio right after it merges.
    let bio = h.bio(Op::Discard, 100_008, 8);
    let cand = h.with_ctx(|s, c| s.own_merge_candidate(c, &bio));
    assert_eq!(cand, Some((a, MergeKind::Back)));
    let bio = h.bio(Op::Discard, 99_992, 8);
    let cand = h.with_ctx(|s, c| s.own_merge_candidate(c, &bio));
    assert_eq!(cand, Some((a, MergeKind::Front)));
    // Other domains' lists are not looked at.
    let bio = h.bio(Op::Read, 100_008, 8);
    assert_eq!(h.with_ctx(|s, c| s.own_merge_candidate(c, &bio)), None);
    for id in held {
        h.finish(id);
    }
    assert_eq!(h.dispatch(), Some(a));
    // Once dispatched (flushed and taken) it is no candidate any more.
    let bio = h.bio(Op::Discard, 100_008, 8);
    assert_eq!(h.with_ctx(|s, c| s.own_merge_candidate(c, &bio)), None);
    h.finish_all();
}

#[test]
fn merge_scan_sees_only_the_newest_eight_and_skips_unmergeable() {
    let mut h = harness();
    let first = h.write(0, 8);
    for i in 1..=8 {
        h.write(i * 1000, 8);
    }
    let bio = h.bio(Op::Write, 8, 8);
    assert_eq!(h.with_ctx(|s, c| s.own_merge_candidate(c, &bio)), None);
    let _ = first;
    let last = h.write(50_000, 8);
    h.rqs[last].flags |= flags::NOMERGE;
    let bio = h.bio(Op::Write, 50_008, 8);
    assert_eq!(h.with_ctx(|s, c| s.own_merge_candidate(c, &bio)), None);
    h.dispatch_all();
    h.finish_all();
}

#[test]
fn head_inserts_go_first_within_their_domain() {
    let mut h = harness();
    let a = h.read(0, 8);
    let b = h.insert_new(Op::Read, 800, 8, true);
    assert_eq!(h.dispatch_all(), vec![b, a]);
    h.finish_all();
}

#[test]
fn requeue_gives_the_token_back() {
    let mut h = harness();
    let a = h.read(0, 8);
    assert_eq!(h.dispatch(), Some(a));
    assert_eq!(h.sched.tokens_held(READ), 1);
    h.with_ctx(|s, c| s.requeue_request(c, a));
    assert_eq!(h.sched.tokens_held(READ), 0);
    h.inflight.retain(|&x| x != a);
    h.insert(a, true);
    assert_eq!(h.dispatch(), Some(a));
    assert_eq!(h.sched.tokens_held(READ), 1);
    h.finish_all();
    assert_eq!(h.sched.tokens_held(READ), 0);
}

/// Complete `n` reads dispatched at `now` after `io` ns at the device
/// (created `wait` ns before dispatch).
fn complete_reads(h: &mut Harness<Kyber>, n: usize, wait: Ns, io: Ns) {
    for i in 0..n {
        let id = h.read(i as u64 * 8, 8);
        h.rqs[id].start_ns = h.now.saturating_sub(wait);
        assert_eq!(h.dispatch(), Some(id));
        h.now += io;
        h.finish(id);
    }
}

#[test]
fn completions_arm_the_timer_at_most_100ms_ahead() {
    let mut h = harness();
    complete_reads(&mut h, 1, 0, 10 * NS_PER_US);
    assert_eq!(h.pending_timers(), 1);
    // Later completions do not push it back (timer_reduce).
    h.advance_ms(50);
    complete_reads(&mut h, 3, 0, 10 * NS_PER_US);
    assert_eq!(h.pending_timers(), 1);
    h.advance_ms(50);
    assert_eq!(h.fired, 1);
    // No completions, no timer.
    h.advance_ms(500);
    assert_eq!(h.fired, 1);
    assert_eq!(h.pending_timers(), 0);
}

#[test]
fn congestion_shrinks_good_domains_by_their_p99() {
    let mut h = harness();
    // Writes fast (well under 10 ms): p99 bucket 0, remembered.
    for i in 0..600u64 {
        let id = h.write(i * 8, 8);
        assert_eq!(h.dispatch(), Some(id));
        h.now += 100 * NS_PER_US;
        h.finish(id);
    }
    h.advance_ms(100);
    assert_eq!(h.sched.depth(WRITE), 128, "no congestion: unchanged");
    // Reads slow at the device (I/O p90 over 2 ms): congestion.
    complete_reads(&mut h, 600, 0, 3 * NS_PER_MS);
    h.advance_ms(100);
    assert_eq!(h.sched.depth(WRITE), 32, "x1/4 from the remembered p99");
    assert_eq!(h.sched.depth(READ), 256, "read p99 bucket 7: x2, capped");
    // The remembered p99 was consumed: more congestion without new write
    // samples leaves writes alone.
    complete_reads(&mut h, 600, 0, 3 * NS_PER_MS);
    h.advance_ms(100);
    assert_eq!(h.sched.depth(WRITE), 32);
    assert!(h.sched.depth_log.changes >= 1);
}

#[test]
fn a_domain_over_target_grows_without_congestion() {
    let mut h = harness();
    // Shrink reads first: congestion with a good read p99 is impossible in
    // one domain, so use writes congested and reads good.
    complete_reads(&mut h, 600, 0, 100 * NS_PER_US);
    h.advance_ms(100);
    for i in 0..600u64 {
        let id = h.write(i * 8, 8);
        assert_eq!(h.dispatch(), Some(id));
        h.now += 20 * NS_PER_MS;
        h.finish(id);
    }
    h.advance_ms(100);
    assert_eq!(h.sched.depth(READ), 64, "remembered p99 bucket 0: x1/4");
    // Reads now slow in total (waiting before dispatch) but fast at the
    // device: no congestion, p99 bucket 5 (2.5-3 ms) scales them x3/2.
    complete_reads(&mut h, 600, 2_600 * NS_PER_US, 100 * NS_PER_US);
    h.advance_ms(100);
    assert_eq!(h.sched.depth(READ), 96);
    assert!(h.sched.latency_pending(READ) == 0);
}

#[test]
fn latency_targets_are_used_for_new_samples() {
    let mut h = harness();
    h.sched.set_tunable("read_lat_nsec", "1000000000").unwrap();
    // 3 ms reads against a 1 s target: good, no congestion.
    complete_reads(&mut h, 600, 0, 3 * NS_PER_MS);
    h.advance_ms(100);
    assert_eq!(h.sched.depth(READ), 256);
    assert_eq!(h.sched.depth_log.changes, 0);
}

#[test]
fn shrunk_depth_throttles_dispatch() {
    let mut h = harness();
    h.q.nr_requests = 2048;
    for i in 0..600u64 {
        let id = h.write(i * 8, 8);
        assert_eq!(h.dispatch(), Some(id));
        h.now += 100 * NS_PER_US;
        h.finish(id);
    }
    h.advance_ms(100);
    complete_reads(&mut h, 600, 0, 3 * NS_PER_MS);
    h.advance_ms(100);
    assert_eq!(h.sched.depth(WRITE), 32);
    for i in 0..40u64 {
        h.write(i * 8, 8);
    }
    assert_eq!(h.dispatch_all().len(), 32);
    assert!(h.sched.waiting(0, WRITE));
    h.finish_all();
    assert_eq!(h.dispatch_all().len(), 8);
    h.finish_all();
}

#[test]
fn several_cpus_have_their_own_kcqs_and_locks() {
    // Two CPUs on one hardware queue: two kcqs, flushed in order.
    let q = QueueInfo::new(2, 1, 32, 64);
    let mut h = Harness::with_queue(Kyber::new(), q);
    let a = h.alloc(Op::Read, 0, 8);
    h.rqs[a].cpu = 1;
    h.insert(a, false);
    let b = h.alloc(Op::Read, 8, 8);
    h.insert(b, false);
    // kcq 0 (CPU 0) is spliced before kcq 1.
    assert_eq!(h.dispatch_all(), vec![b, a]);
    // A bio from CPU 1 looks at CPU 1's kcq only.
    let c = h.alloc(Op::Read, 100, 8);
    h.rqs[c].cpu = 1;
    h.insert(c, false);
    let mut bio = h.bio(Op::Read, 108, 8);
    assert_eq!(h.with_ctx(|s, x| s.own_merge_candidate(x, &bio)), None);
    bio.cpu = 1;
    assert_eq!(
        h.with_ctx(|s, x| s.own_merge_candidate(x, &bio)),
        Some((c, MergeKind::Back))
    );
    assert_eq!(
        h.sched.hook_lock(Hook::Insert, 1, 0),
        Some(HookLock::Ctx(1))
    );
    assert_eq!(
        h.sched.hook_lock(Hook::Dispatch, 1, 0),
        Some(HookLock::Hctx(0))
    );
    assert_eq!(h.sched.hook_lock(Hook::Complete, 1, 0), None);
    h.dispatch_all();
    h.finish_all();
}

#[test]
fn workout_within_the_contract() {
    for seed in 1..6 {
        let mut h = harness();
        h.random_workout(seed, 4000);
        assert_eq!(h.sched.tokens_held(READ), 0);
        assert_eq!(h.sched.tokens_held(WRITE), 0);
        assert_eq!(h.sched.tokens_held(DISCARD), 0);
    }
}

#[test]
fn histogram_constants_match_the_kernel() {
    assert_eq!(GOOD_BUCKETS, 4);
    assert_eq!(latency::BUCKETS, 8);
    assert_eq!((TOTAL, IO), (0, 1));
    assert_eq!(MAX_DEPTH, [256, 128, 64, 16]);
    assert_eq!(BATCH_SIZE, [16, 8, 1, 1]);
}

// ----- kyber before 4.18 (v412) ------------------------------------------

fn harness_412() -> Harness<Kyber> {
    let mut q = QueueInfo::new(1, 1, 32, 64);
    q.kernel = crate::kernel::Version::new(4, 12, 0);
    Harness::with_queue(Kyber::new(), q)
}

/// A synchronous write (O_DIRECT), inserted.
fn sync_write(h: &mut Harness<Kyber>, sector: u64) -> RqId {
    let id = h.alloc(Op::Write, sector, 8);
    h.rqs[id].flags |= flags::SYNC;
    h.insert(id, false);
    id
}

/// Dispatch `id` now and complete it `io` ns later.
fn run_one(h: &mut Harness<Kyber>, id: RqId, io: Ns) {
    assert_eq!(h.dispatch(), Some(id));
    h.now += io;
    h.finish(id);
}

#[test]
fn v412_has_three_domains_and_async_writes_go_to_other() {
    let mut h = harness_412();
    assert!(h.sched.is_v412());
    let reads: Vec<RqId> = (0..20).map(|i| h.read(i * 8, 8)).collect();
    let syncw: Vec<RqId> = (0..10)
        .map(|i| sync_write(&mut h, 10_000 + i * 8))
        .collect();
    let asyncw: Vec<RqId> = (0..10).map(|i| h.write(20_000 + i * 8, 8)).collect();
    let d = h.insert_new(Op::Discard, 50_000, 8, false);
    let out = h.dispatch_all();
    // READ 16, SYNC_WRITE 8, OTHER 8 (async writes then the discard, in
    // arrival order), READ 4, SYNC_WRITE 2, OTHER 3.
    let mut want = reads[..16].to_vec();
    want.extend(&syncw[..8]);
    want.extend(&asyncw[..8]);
    want.extend(&reads[16..]);
    want.extend(&syncw[8..]);
    want.extend(&asyncw[8..]);
    want.push(d);
    assert_eq!(out, want);
    h.finish_all();
    assert_eq!(h.sched.depth(v412::OTHER), 64);
}

#[test]
fn v412_slow_reads_shrink_good_sync_writes_and_the_loss_stays() {
    let mut h = harness_412();
    // Fast completions open no window.
    let w = sync_write(&mut h, 0);
    run_one(&mut h, w, 100 * NS_PER_US);
    assert_eq!(h.pending_timers(), 0);
    // A read over 2 ms opens a 10 ms window (3 jiffies at HZ=250) and is
    // its first sample.
    let r = h.read(1000, 8);
    run_one(&mut h, r, 3 * NS_PER_MS);
    assert_eq!(h.pending_timers(), 1);
    let w = sync_write(&mut h, 8);
    run_one(&mut h, w, 200 * NS_PER_US);
    h.advance_ms(12);
    // Reads BAD (mean 3 ms), writes GREAT: writes lose 1/4; the bad read
    // domain grows (capped at 256); another, 100 ms window opens.
    assert_eq!(h.sched.depth(v412::SYNC_WRITE), 96);
    assert_eq!(h.sched.depth(v412::READ), 256);
    assert_eq!(h.pending_timers(), 1);
    // Awful reads (mean >= 4 ms) against great writes: halved.
    let r = h.read(2000, 8);
    run_one(&mut h, r, 5 * NS_PER_MS);
    let w = sync_write(&mut h, 16);
    run_one(&mut h, w, 100 * NS_PER_US);
    h.advance_ms(100);
    assert_eq!(h.sched.depth(v412::SYNC_WRITE), 48);
    // Both good: nothing moves and monitoring stops; the depth stays lost.
    let r = h.read(3000, 8);
    run_one(&mut h, r, 100 * NS_PER_US);
    let w = sync_write(&mut h, 24);
    run_one(&mut h, w, 100 * NS_PER_US);
    h.advance_ms(100);
    assert_eq!(h.pending_timers(), 0);
    h.advance_ms(1000);
    assert_eq!(h.sched.depth(v412::SYNC_WRITE), 48);
}

#[test]
fn v412_window_without_reads_gives_writes_one_back() {
    let mut h = harness_412();
    let r = h.read(0, 8);
    run_one(&mut h, r, 5 * NS_PER_MS);
    let w = sync_write(&mut h, 8);
    run_one(&mut h, w, 100 * NS_PER_US);
    h.advance_ms(12);
    assert_eq!(h.sched.depth(v412::SYNC_WRITE), 64, "awful vs great");
    // The next (100 ms) window sees only writes: +1.
    let w = sync_write(&mut h, 16);
    run_one(&mut h, w, 100 * NS_PER_US);
    h.advance_ms(100);
    assert_eq!(h.sched.depth(v412::SYNC_WRITE), 65);
    // 1 s targets: nothing is ever over target, no window opens.
    let mut h = harness_412();
    h.sched.set_tunable("read_lat_nsec", "1000000000").unwrap();
    let r = h.read(0, 8);
    run_one(&mut h, r, 500 * NS_PER_MS);
    assert_eq!(h.pending_timers(), 0);
    assert_eq!(h.sched.depth_log.changes, 0);
}

/// The async depth is 75% of the whole map from 6.17 and of one tag word
/// before (`kyber_depth_updated`), and it is what the bitmap's wake batch
/// is sized from.
#[test]
fn async_depth_is_in_the_eras_shallow_unit() {
    let mut k = Kyber::new();
    let mut q = QueueInfo::new(1, 1, 128, 256);
    k.depth_updated(&q);
    assert_eq!(k.min_shallow_depth(), 192);
    q.tag_bits_per_word = 64;
    q.shallow_per_word = true;
    k.depth_updated(&q);
    assert_eq!(k.min_shallow_depth(), 48);
}
