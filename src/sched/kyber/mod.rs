//! blk-mq `kyber` as in v6.17 (block/kyber-iosched.c, lib/sbitmap.c).
//!
//! Requests are sorted into four domains by operation (read, write,
//! discard, other). Each domain has device-wide tokens ([`tokens`]): a
//! request needs one to be dispatched and holds it until it is freed, so the
//! tokens bound each domain's requests at the device. A timer started by
//! completions ([`latency`]) shrinks every domain's depth when some domain's
//! I/O latency p90 is over its target (congestion), scaled by each domain's
//! own total-latency p99, and grows the depth of domains whose p99 is over
//! target. Only `read_lat_nsec` and `write_lat_nsec` are tunable.
//!
//! Per hardware queue (`kyber_hctx_data`): one list per domain of requests
//! already taken from the software queues, the domain being served and how
//! many it served in a row (`batching`, up to 16 reads, 8 writes, 1
//! discard, 1 other), and one kyber software queue (`kcq`) per CPU mapped
//! to it, with a list per domain, that bios merge into.
//!
//! Pitfalls (each checked in tests.rs):
//! - A domain's software queues are spliced into the hardware queue's list
//!   only once a token is in hand, so requests stay mergeable while the
//!   domain is throttled.
//! - A hardware queue out of tokens goes on the domain's wait queue; it is
//!   run again only when a wake-up fires, which takes `wake_batch` frees (8
//!   for the full depths), and then every waiting queue is run.
//! - O_DIRECT writes carry REQ_SYNC, so `limit_depth`'s shallow depth
//!   (`async_depth`, 75 % of `nr_requests`) does not apply to them; all
//!   writes are one domain whatever their sync flag.
//! - The write target applies to every write (the documentation's
//!   "synchronous writes" is older kernels' wording).
//! - The timer only runs while completions arrive (re-armed to at most 100
//!   ms ahead by each), and percentiles need 500 samples or a second.
//! - No queue-wide lock: inserts and bio merges take their CPU's kcq lock,
//!   dispatch the hardware queue's lock (and each flushed kcq's lock),
//!   completions only per-CPU counters and the token bitmap's atomics.
//!
//! Kernels before 4.18 (`--kernel 4.12`, the source documents' E2 and E3)
//! ran kyber's first algorithm ([`v412`]): three domains (read, sync write,
//! other), mean I/O latency over 10 / 100 ms statistics windows and the
//! read/write fairness rules of `kyber_adjust_rw_depth`; the requests sat in
//! blk-mq's software queues, all flushed to the domain lists whenever the
//! served domain's list was empty. The heuristics were replaced by the
//! histograms and the software queues by kcqs in 4.18 (commits "kyber:
//! implement improved heuristics" and "block: kyber: make kyber more
//! friendly with merging"; the version is from memory).

pub mod latency;
#[cfg(test)]
mod tests;
pub mod tokens;
pub mod v412;

use crate::block::cpu::HookLock;
use crate::block::elevator::{
    show_attrs, store_attr, Attr, AttrConv, AttrDefault, AttrParse, AttrRange, BioInfo, Elevator,
    Hook, MergeKind, QueueInfo, SchedCtx, Tunable,
};
use crate::block::request::{flags, Op, Request, RequestArena, RqId, RqList};
use crate::kernel::Version;
use crate::sim::time::{self, Ns, HZ, NS_PER_JIFFY, NS_PER_MS, NS_PER_SEC};
use latency::{Latency, Rescale, MEASURED};
use tokens::{TokenPool, WAIT_QUEUES};

/// Scheduling domains (`enum { KYBER_READ, ... }`).
pub const READ: usize = 0;
pub const WRITE: usize = 1;
pub const DISCARD: usize = 2;
pub const OTHER: usize = 3;
pub const DOMAINS: usize = 4;
/// `kyber_domain_names`.
pub const DOMAIN_NAMES: [&str; DOMAINS] = ["READ", "WRITE", "DISCARD", "OTHER"];

/// `kyber_depth`: each domain's maximum (and initial) device-wide depth.
pub const MAX_DEPTH: [u32; DOMAINS] = [256, 128, 64, 16];
/// `kyber_batch_size`: requests served in a row per domain.
pub const BATCH_SIZE: [u32; DOMAINS] = [16, 8, 1, 1];
/// `kyber_latency_targets` (ns): read 2 ms, write 10 ms, discard 5 s.
pub const DEFAULT_TARGET: [u64; MEASURED] = [2 * NS_PER_MS, 10 * NS_PER_MS, 5 * NS_PER_SEC];
/// KYBER_ASYNC_PERCENT: async requests may use 75 % of the scheduler tags.
pub const ASYNC_PERCENT: u32 = 75;
/// `timer_reduce(&kqd->timer, jiffies + HZ / 10)` in `kyber_completed_request`.
const TIMER_JIFFIES: u64 = HZ / 10;
/// KCQ merge scan depth (`blk_bio_list_merge`: the newest 8 requests).
const MERGE_SCAN: usize = 8;
/// The first kernel with the histogram heuristics, the DISCARD domain and
/// kcqs (from memory: the 4.18 merge window).
pub const HEURISTICS_SINCE: Version = Version::new(4, 18, 0);

/// `kyber_sched_domain(op)`.
pub fn domain_of(op: Op) -> usize {
    match op {
        Op::Read => READ,
        Op::Write => WRITE,
        Op::Discard => DISCARD,
        Op::Flush => OTHER,
    }
}

// Per-request words:
// elv[0] = domain token + 1 while one is held (`rq->elv.priv[0]`, -1 = none).
// elv[1] = where the request is queued: LOC_* | domain << 8 | kcq slot << 16.
const LOC_NONE: u64 = 0;
const LOC_KCQ: u64 = 1;
const LOC_HCTX: u64 = 2;

fn loc(r: &Request) -> (u64, usize, usize) {
    let w = r.elv[1];
    (
        w & 0xff,
        ((w >> 8) & 0xff) as usize % DOMAINS,
        (w >> 16) as usize,
    )
}

fn set_loc(r: &mut Request, l: u64, domain: usize, slot: usize) {
    r.elv[1] = l | (domain as u64) << 8 | (slot as u64) << 16;
}

/// One hardware queue's state (`struct kyber_hctx_data`).
#[derive(Clone, Debug)]
struct Khd {
    /// Requests taken from the kcqs, waiting for a token.
    rqs: [RqList; DOMAINS],
    cur_domain: usize,
    batching: u32,
    /// One kcq per software queue mapped here: a list per domain.
    kcqs: Vec<[RqList; DOMAINS]>,
    /// `kcq_map`: which kcqs hold requests of each domain (bitmaps).
    kcq_map: [Vec<u64>; DOMAINS],
    /// Wait queue this hctx waits on per domain, if it does
    /// (`domain_wait[d]` with `domain_ws[d]`).
    waiting: [Option<u8>; DOMAINS],
    /// `wait_index`: the wait queue of the next registration per domain.
    wait_index: [u8; DOMAINS],
    /// CPU of each kcq slot (for lock identities).
    slot_cpu: Vec<u16>,
    /// Requests inside (kcqs and lists): has_work in O(1).
    queued: u32,
}

impl Khd {
    fn new(slot_cpu: Vec<u16>) -> Khd {
        let n = slot_cpu.len().max(1);
        let words = n.div_ceil(64);
        Khd {
            rqs: [RqList::new(); DOMAINS],
            cur_domain: 0,
            batching: 0,
            kcqs: vec![[RqList::new(); DOMAINS]; n],
            kcq_map: std::array::from_fn(|_| vec![0; words]),
            waiting: [None; DOMAINS],
            wait_index: [0; DOMAINS],
            slot_cpu,
            queued: 0,
        }
    }

    fn kcq_busy(&self, d: usize) -> bool {
        self.kcq_map[d].iter().any(|&w| w != 0)
    }

    fn set_busy(&mut self, d: usize, slot: usize, busy: bool) {
        let (w, b) = (slot / 64, slot % 64);
        if busy {
            self.kcq_map[d][w] |= 1 << b;
        } else {
            self.kcq_map[d][w] &= !(1 << b);
        }
    }
}

/// kyber.
pub struct Kyber {
    /// `domain_tokens`.
    tokens: [TokenPool; DOMAINS],
    khds: Vec<Khd>,
    latency: Latency,
    /// `latency_targets` (ns): read, write, discard.
    targets: [u64; MEASURED],
    async_depth: u32,
    /// The timer's expiry while it is pending (`timer_reduce`), and the
    /// token of the latest arming (older firings are stale).
    timer_at: Option<Ns>,
    timer_token: u64,
    /// Scratch for wake-ups and timer decisions (no allocation per request).
    woken: Vec<u16>,
    rescales: Vec<Rescale>,
    nr_cpus: usize,
    /// Every depth change, for tests and inspection: (time, domain, depth).
    pub depth_log: DepthLog,
    /// The pre-4.18 algorithm ([`v412`]) instead of the histograms.
    v412: bool,
    /// Domains in use (4, or 3 before 4.18), their maximum depths and
    /// batch sizes.
    ndomains: usize,
    max_depth: [u32; DOMAINS],
    batch: [u32; DOMAINS],
    /// v4.12: the statistics window's samples (while `timer_at` is set the
    /// window is open: `blk_stat_is_active`).
    window: v412::Window,
}

/// The last depth changes (bounded: memory does not grow with run time).
#[derive(Clone, Debug, Default)]
pub struct DepthLog {
    pub changes: u64,
    pub last: Vec<(Ns, usize, u32)>,
}

const DEPTH_LOG_KEEP: usize = 64;

impl DepthLog {
    fn push(&mut self, at: Ns, domain: usize, depth: u32) {
        self.changes += 1;
        if self.last.len() == DEPTH_LOG_KEEP {
            self.last.remove(0);
        }
        self.last.push((at, domain, depth));
    }
}

impl Default for Kyber {
    fn default() -> Self {
        Kyber::new()
    }
}

/// `kyber_sched_attrs`: the two latency targets, shown with "%llu" and
/// stored with `kstrtoull(page, 10)` unclamped (0 is accepted: buckets of
/// 1 ns).
const KYBER_ATTRS: &[Attr<Kyber>] = &[
        Attr {
            name: "read_lat_nsec",
            unit: "ns",
            help: "target latency of reads; when some domain's I/O latency p90 exceeds its target, every domain's depth is scaled by its p99 against its target",
            default: AttrDefault::Value(DEFAULT_TARGET[READ] as i128),
            parse: AttrParse::Kstrtoull10,
            range: AttrRange::Reject(0, u64::MAX as i128),
            conv: AttrConv::Plain,
            get: |s| s.targets[READ] as i128,
            set: |s, v| {
                s.targets[READ] = v as u64;
                Ok(())
            },
        },
        Attr {
            name: "write_lat_nsec",
            unit: "ns",
            help: "target latency of writes (all writes, sync or not)",
            default: AttrDefault::Value(DEFAULT_TARGET[WRITE] as i128),
            parse: AttrParse::Kstrtoull10,
            range: AttrRange::Reject(0, u64::MAX as i128),
            conv: AttrConv::Plain,
            get: |s| s.targets[WRITE] as i128,
            set: |s, v| {
                s.targets[WRITE] = v as u64;
                Ok(())
            },
        },
];

impl Kyber {
    pub fn new() -> Kyber {
        Kyber::with_cpus(1)
    }

    fn with_cpus(nr_cpus: usize) -> Kyber {
        Kyber::of_kernel(nr_cpus, crate::kernel::NEWEST)
    }

    /// kyber as kernel `v` had it: the v4.12 layout and rules before 4.18.
    fn of_kernel(nr_cpus: usize, v: Version) -> Kyber {
        let v412 = v < HEURISTICS_SINCE;
        let (ndomains, max_depth, batch) = if v412 {
            let m = v412::MAX_DEPTH;
            let b = v412::BATCH_SIZE;
            (v412::DOMAINS, [m[0], m[1], m[2], 1], [b[0], b[1], b[2], 1])
        } else {
            (DOMAINS, MAX_DEPTH, BATCH_SIZE)
        };
        Kyber {
            tokens: std::array::from_fn(|d| {
                TokenPool::new(max_depth[d], nr_cpus, 0x6b79_6265_7200 + d as u64)
            }),
            khds: vec![Khd::new(vec![0])],
            latency: Latency::new(nr_cpus),
            targets: DEFAULT_TARGET,
            async_depth: 0,
            timer_at: None,
            timer_token: 0,
            woken: Vec::new(),
            rescales: Vec::new(),
            nr_cpus: nr_cpus.max(1),
            depth_log: DepthLog::default(),
            v412,
            ndomains,
            max_depth,
            batch,
            window: v412::Window::default(),
        }
    }

    /// Whether this is the pre-4.18 kyber.
    pub fn is_v412(&self) -> bool {
        self.v412
    }

    /// The domain of a request or bio: `kyber_sched_domain(op)`, or before
    /// 4.18 `rq_sched_domain` (reads, sync writes, everything else).
    fn domain(&self, op: Op, rq_flags: u32) -> usize {
        if !self.v412 {
            return domain_of(op);
        }
        match op {
            Op::Read => v412::READ,
            Op::Write if crate::block::request::op_is_sync(op, rq_flags) => v412::SYNC_WRITE,
            _ => v412::OTHER,
        }
    }

    /// A domain's current token depth.
    pub fn depth(&self, domain: usize) -> u32 {
        self.tokens[domain % DOMAINS].depth()
    }
    /// Tokens a domain has handed out and not had back.
    pub fn tokens_held(&self, domain: usize) -> u32 {
        self.tokens[domain % DOMAINS].held()
    }
    pub fn async_depth(&self) -> u32 {
        self.async_depth
    }
    /// Latency samples of `domain` not yet consumed by the timer (total latency).
    pub fn latency_pending(&self, domain: usize) -> u32 {
        if domain < MEASURED {
            self.latency.pending(domain, latency::TOTAL)
        } else {
            0
        }
    }
    /// Whether hardware queue `hctx` waits for a token of `domain`.
    pub fn waiting(&self, hctx: u16, domain: usize) -> bool {
        self.khds
            .get(hctx as usize)
            .is_some_and(|k| k.waiting[domain % DOMAINS].is_some())
    }
    /// The domain hardware queue `hctx` serves and how many it served in a row.
    pub fn cur_domain(&self, hctx: u16) -> (usize, u32) {
        self.khds
            .get(hctx as usize)
            .map_or((0, 0), |k| (k.cur_domain, k.batching))
    }

    fn khd_index(&self, hctx: u16) -> usize {
        (hctx as usize).min(self.khds.len() - 1)
    }

    /// The kcq slot of `cpu` within its hardware queue (`index_hw`).
    fn slot_of(q: &QueueInfo, cpu: u16) -> usize {
        let n = q.cpu_ctx.len();
        if n == 0 {
            0
        } else {
            q.cpu_ctx[cpu as usize % n] as usize
        }
    }

    // ----- tokens -------------------------------------------------------

    /// `kyber_get_domain_token` for hctx `h`'s current domain, by `cpu`.
    fn get_token(&mut self, h: usize, cpu: u16) -> Option<u32> {
        let d = self.khds[h].cur_domain;
        let pool = &mut self.tokens[d];
        let mut nr = pool.get(cpu);
        let khd = &mut self.khds[h];
        if nr.is_none() && khd.waiting[d].is_none() {
            // Make sure the queue is run when a token frees; try again in
            // case one was freed before we were on the wait queue.
            let ws = khd.wait_index[d];
            khd.wait_index[d] = (ws + 1) % WAIT_QUEUES as u8;
            pool.add_waiter(ws as usize, h as u16);
            khd.waiting[d] = Some(ws);
            nr = pool.get(cpu);
        }
        if nr.is_some() {
            if let Some(ws) = khd.waiting[d].take() {
                pool.del_waiter(ws as usize, h as u16);
            }
        }
        nr
    }

    /// `rq_clear_domain_token`, then run the queues a wake-up released
    /// (`kyber_domain_wake`: `blk_mq_run_hw_queue(hctx, true)`).
    fn put_token(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let r = &mut ctx.rqs[rq];
        if r.elv[0] == 0 {
            return;
        }
        let nr = (r.elv[0] - 1) as u32;
        r.elv[0] = 0;
        let (op, rq_flags, cpu) = (r.op, r.flags, r.cpu);
        let d = self.domain(op, rq_flags);
        self.woken.clear();
        self.tokens[d].clear(nr, cpu, &mut self.woken);
        for i in 0..self.woken.len() {
            let h = self.woken[i];
            if let Some(k) = self.khds.get_mut(h as usize) {
                k.waiting[d] = None;
            }
            ctx.kick_hctx(h);
        }
    }

    // ----- dispatch -----------------------------------------------------

    /// `kyber_flush_busy_kcqs`: splice every busy kcq's list of domain `d`
    /// to the tail of the hctx list, in kcq order, each under its lock.
    fn flush_kcqs(&mut self, ctx: &mut SchedCtx, h: usize, d: usize) {
        let khd = &mut self.khds[h];
        for w in 0..khd.kcq_map[d].len() {
            let mut bits = khd.kcq_map[d][w];
            while bits != 0 {
                let slot = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                ctx.lock_hop(HookLock::Ctx(khd.slot_cpu[slot]));
                let mut list = khd.kcqs[slot][d];
                let mut id = list.head;
                while id != crate::block::request::NIL {
                    set_loc(&mut ctx.rqs[id], LOC_HCTX, d, 0);
                    id = ctx.rqs[id].next;
                }
                khd.rqs[d].append(ctx.rqs, &mut list);
                khd.kcqs[slot][d] = list;
                khd.set_busy(d, slot, false);
            }
        }
    }

    /// Take the head of hctx `h`'s list of domain `d` with token `nr`.
    fn take_head(&mut self, ctx: &mut SchedCtx, h: usize, d: usize, nr: u32) -> Option<RqId> {
        let khd = &mut self.khds[h];
        let rq = khd.rqs[d].pop_front(ctx.rqs)?;
        khd.batching += 1;
        khd.queued -= 1;
        let r = &mut ctx.rqs[rq];
        r.elv[0] = nr as u64 + 1;
        set_loc(r, LOC_NONE, 0, 0);
        Some(rq)
    }

    /// `kyber_dispatch_cur_domain`.
    fn dispatch_cur_domain(&mut self, ctx: &mut SchedCtx, h: usize) -> Option<RqId> {
        let d = self.khds[h].cur_domain;
        if let Some(head) = self.khds[h].rqs[d].front() {
            let cpu = ctx.rqs[head].cpu;
            let nr = self.get_token(h, cpu)?;
            return self.take_head(ctx, h, d, nr);
        }
        if self.khds[h].kcq_busy(d) {
            // Flush the kcqs only with a token in hand: while throttled the
            // requests stay where bios can merge into them.
            let cpu = self.khds[h].slot_cpu.first().copied().unwrap_or(0);
            let nr = self.get_token(h, cpu)?;
            self.flush_kcqs(ctx, h, d);
            return self.take_head(ctx, h, d, nr);
        }
        None
    }

    /// The current domain's request, as the run's kernel picks it.
    fn dispatch_domain(
        &mut self,
        ctx: &mut SchedCtx,
        h: usize,
        flushed: &mut bool,
    ) -> Option<RqId> {
        if self.v412 {
            self.dispatch_cur_domain_v412(ctx, h, flushed)
        } else {
            self.dispatch_cur_domain(ctx, h)
        }
    }

    /// v4.12 `kyber_dispatch_cur_domain`: with nothing pending in the
    /// domain's list, flush every software queue once (all domains,
    /// `kyber_flush_busy_ctxs`), then take the head if a token is free.
    fn dispatch_cur_domain_v412(
        &mut self,
        ctx: &mut SchedCtx,
        h: usize,
        flushed: &mut bool,
    ) -> Option<RqId> {
        let d = self.khds[h].cur_domain;
        if self.khds[h].rqs[d].is_empty() && !*flushed {
            self.flush_all_v412(ctx, h);
            *flushed = true;
        }
        let head = self.khds[h].rqs[d].front()?;
        let cpu = ctx.rqs[head].cpu;
        let nr = self.get_token(h, cpu)?;
        self.take_head(ctx, h, d, nr)
    }

    /// `blk_mq_flush_busy_ctxs` + sorting by domain: every busy software
    /// queue (one lock each) to the tail of its domains' lists, in queue
    /// order.
    fn flush_all_v412(&mut self, ctx: &mut SchedCtx, h: usize) {
        let nslots = self.khds[h].kcqs.len();
        for slot in 0..nslots {
            let khd = &mut self.khds[h];
            let (w, b) = (slot / 64, slot % 64);
            let busy = (0..self.ndomains).any(|d| khd.kcq_map[d][w] & (1 << b) != 0);
            if !busy {
                continue;
            }
            ctx.lock_hop(HookLock::Ctx(khd.slot_cpu[slot]));
            for d in 0..self.ndomains {
                let mut list = khd.kcqs[slot][d];
                let mut id = list.head;
                while id != crate::block::request::NIL {
                    set_loc(&mut ctx.rqs[id], LOC_HCTX, d, 0);
                    id = ctx.rqs[id].next;
                }
                khd.rqs[d].append(ctx.rqs, &mut list);
                khd.kcqs[slot][d] = list;
                khd.set_busy(d, slot, false);
            }
        }
    }

    /// v4.12 `kyber_completed_request` then `blk_stat_add`: a read or sync
    /// write over its target opens a 10 ms statistics window when none is
    /// open; every completion while one is open is a sample.
    fn completed_v412(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let r = &ctx.rqs[rq];
        let d = self.domain(r.op, r.flags);
        let io = ctx.now.saturating_sub(r.dispatch_ns);
        if self.timer_at.is_none() && d < v412::OTHER && io > self.targets[d] {
            self.open_window(ctx, v412::FIRST_WINDOW_MS);
        }
        if self.timer_at.is_some() {
            self.window.add(d, io);
        }
    }

    /// `blk_stat_activate_msecs`: the window closes `ms` (in whole jiffies,
    /// rounded up) after the current jiffy; its samples start empty.
    fn open_window(&mut self, ctx: &mut SchedCtx, ms: u64) {
        let at = time::jiffies(ctx.now) * NS_PER_JIFFY + time::ms_to_jiffies_ns(ms);
        self.window = v412::Window::default();
        self.timer_at = Some(at);
        self.timer_token += 1;
        ctx.arm_timer(at, self.timer_token);
    }

    /// `kyber_stat_timer_fn`: grade the window's means and move the depths.
    fn stat_timer_v412(&mut self, ctx: &mut SchedCtx) {
        use v412::{OTHER, READ as R, SYNC_WRITE as W};
        let w = std::mem::take(&mut self.window);
        let read = w.status(R, self.targets[R]);
        let write = w.status(W, self.targets[W]);
        let depth_r = v412::adjust_rw_depth(self.depth(R), self.max_depth[R], read, write);
        let depth_w = v412::adjust_rw_depth(self.depth(W), self.max_depth[W], write, read);
        let have_other = w.nr[OTHER] != 0;
        let depth_o = v412::adjust_other_depth(
            self.depth(OTHER),
            self.max_depth[OTHER],
            read,
            write,
            have_other,
        );
        self.resize(ctx.now, R, depth_r);
        self.resize(ctx.now, W, depth_w);
        self.resize(ctx.now, OTHER, depth_o);
        if v412::keep_monitoring(read, write, self.depth(OTHER)) {
            self.open_window(ctx, v412::NEXT_WINDOW_MS);
        }
    }

    // ----- timer --------------------------------------------------------

    /// `timer_reduce(&timer, jiffies + HZ / 10)`: arm, or bring forward.
    fn reduce_timer(&mut self, ctx: &mut SchedCtx) {
        let at = (time::jiffies(ctx.now) + TIMER_JIFFIES) * NS_PER_JIFFY;
        if self.timer_at.is_some_and(|t| t <= at) {
            return;
        }
        self.timer_at = Some(at);
        self.timer_token += 1;
        ctx.arm_timer(at, self.timer_token);
    }

    /// `kyber_resize_domain`.
    fn resize(&mut self, now: Ns, d: usize, depth: u32) {
        let depth = depth.clamp(1, self.max_depth[d]);
        if depth != self.tokens[d].depth() {
            self.tokens[d].resize(depth);
            self.depth_log.push(now, d, depth);
        }
    }

    /// Remove `rq` from whatever kyber list holds it.
    fn unlink(&mut self, rqs: &mut RequestArena, rq: RqId) {
        let (l, d, slot) = loc(&rqs[rq]);
        let h = self.khd_index(rqs[rq].hctx);
        let khd = &mut self.khds[h];
        match l {
            LOC_KCQ if slot < khd.kcqs.len() => {
                khd.kcqs[slot][d].remove(rqs, rq);
                if khd.kcqs[slot][d].is_empty() {
                    khd.set_busy(d, slot, false);
                }
                khd.queued -= 1;
            }
            LOC_HCTX => {
                khd.rqs[d].remove(rqs, rq);
                khd.queued -= 1;
            }
            _ => {}
        }
        set_loc(&mut rqs[rq], LOC_NONE, 0, 0);
    }
}

/// `blk_rq_merge_ok` and `rq_mergeable` as far as the model's requests go
/// (the core checks them again before merging).
fn bio_fits(r: &Request, bio: &BioInfo) -> Option<MergeKind> {
    const UNMERGEABLE: u32 = flags::NOMERGE
        | flags::STARTED
        | flags::PASSTHROUGH
        | flags::FUA
        | flags::PREFLUSH
        | flags::FLUSH_SEQ;
    if r.flags & UNMERGEABLE != 0
        || r.op != bio.op
        || r.cgroup != bio.cgroup
        || r.ioprio != bio.ioprio
    {
        return None;
    }
    if r.end_sector() == bio.sector {
        Some(MergeKind::Back)
    } else if r.sector == bio.end_sector() {
        Some(MergeKind::Front)
    } else {
        None
    }
}

impl Elevator for Kyber {
    fn name(&self) -> &'static str {
        "kyber"
    }

    /// `kyber_init_sched` + `kyber_init_hctx` for every hardware queue.
    fn init(&mut self, q: &QueueInfo) {
        let targets = self.targets;
        *self = Kyber::of_kernel(q.nr_cpus(), q.kernel);
        self.targets = targets;
        let mut slot_cpus: Vec<Vec<u16>> =
            q.hctx_nr_ctx.iter().map(|&n| vec![0; n as usize]).collect();
        for cpu in 0..q.nr_cpus() {
            let h = q.cpu_hctx[cpu] as usize;
            let s = q.cpu_ctx[cpu] as usize;
            if let Some(v) = slot_cpus.get_mut(h).and_then(|v| v.get_mut(s)) {
                *v = cpu as u16;
            }
        }
        self.khds = slot_cpus.into_iter().map(Khd::new).collect();
        if self.khds.is_empty() {
            self.khds.push(Khd::new(vec![0]));
        }
        self.depth_updated(q);
    }

    /// `kyber_depth_updated`: async_depth = 75 % of nr_requests (v6.17).
    /// (v4.12 took 75 % of one sched-tag bitmap word, a per-word shallow
    /// depth: the same share of the whole bitmap.)
    /// `kyber_depth_updated`: 75% of the tags for async requests, of one
    /// tag word before v6.17 (`(1 << sb.shift) * KYBER_ASYNC_PERCENT`), of
    /// the whole map from v6.17.
    fn depth_updated(&mut self, q: &QueueInfo) {
        self.async_depth = q.shallow_base() * ASYNC_PERCENT / 100;
    }

    /// `kyber_depth_updated` tells the bitmap its async depth.
    fn min_shallow_depth(&self) -> u32 {
        self.async_depth
    }

    fn tunables(&self) -> Vec<Tunable> {
        show_attrs(self, KYBER_ATTRS)
    }

    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), String> {
        store_attr(self, "kyber", KYBER_ATTRS, name, value)
    }

    /// `kyber_limit_depth`: async requests may only use `async_depth` tags.
    fn limit_depth(&mut self, _ctx: &mut SchedCtx, bio: &BioInfo) -> Option<u32> {
        (!bio.is_sync()).then_some(self.async_depth)
    }

    /// `kyber_prepare_request`: no token yet.
    fn prepare_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        let r = &mut ctx.rqs[rq];
        r.elv[0] = 0;
        set_loc(r, LOC_NONE, 0, 0);
    }

    /// `kyber_finish_request`: give the token back. (A request still
    /// queued is taken off its list first; the kernel's core never frees
    /// one, the harness's merges may.)
    fn finish_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        if ctx.rqs[rq].elv[1] != 0 {
            self.unlink(ctx.rqs, rq);
        }
        self.put_token(ctx, rq);
    }

    /// `kyber_insert_requests`: to the kcq of the request's CPU, domain
    /// list, head or tail; mark the kcq busy.
    fn insert(&mut self, ctx: &mut SchedCtx, rq: RqId, at_head: bool) {
        let (op, rq_flags, cpu, hctx) = {
            let r = &ctx.rqs[rq];
            (r.op, r.flags, r.cpu, r.hctx)
        };
        let d = self.domain(op, rq_flags);
        let h = self.khd_index(hctx);
        let slot = Self::slot_of(ctx.q, cpu).min(self.khds[h].kcqs.len() - 1);
        let khd = &mut self.khds[h];
        if at_head {
            khd.kcqs[slot][d].push_front(ctx.rqs, rq);
        } else {
            khd.kcqs[slot][d].push_back(ctx.rqs, rq);
        }
        khd.set_busy(d, slot, true);
        khd.queued += 1;
        set_loc(&mut ctx.rqs[rq], LOC_KCQ, d, slot);
    }

    /// `kyber_dispatch_request`: keep serving the current domain while its
    /// batch lasts, then try the next domains in turn (wrapping back to the
    /// current one last).
    fn dispatch(&mut self, ctx: &mut SchedCtx, hctx: u16) -> Option<RqId> {
        let h = self.khd_index(hctx);
        let cur = self.khds[h].cur_domain;
        // v4.12: the software queues are flushed at most once per call.
        let mut flushed = false;
        if self.khds[h].batching < self.batch[cur] {
            if let Some(rq) = self.dispatch_domain(ctx, h, &mut flushed) {
                return Some(rq);
            }
        }
        self.khds[h].batching = 0;
        for _ in 0..self.ndomains {
            let k = &mut self.khds[h];
            k.cur_domain = (k.cur_domain + 1) % self.ndomains;
            if let Some(rq) = self.dispatch_domain(ctx, h, &mut flushed) {
                return Some(rq);
            }
        }
        None
    }

    fn has_work(&self, hctx: u16) -> bool {
        self.khds.get(hctx as usize).is_some_and(|k| k.queued > 0)
    }

    /// `kyber_completed_request`: two samples into the completing CPU's
    /// histograms of the domain (not for OTHER), and the timer at most
    /// 100 ms ahead.
    fn completed_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        if self.v412 {
            return self.completed_v412(ctx, rq);
        }
        let r = &ctx.rqs[rq];
        let d = domain_of(r.op);
        if d >= MEASURED {
            return;
        }
        let now = ctx.now;
        let total = now.saturating_sub(r.start_ns);
        let io = now.saturating_sub(r.dispatch_ns);
        self.latency.add(r.cpu, d, self.targets[d], total, io);
        self.reduce_timer(ctx);
    }

    /// `.requeue_request = kyber_finish_request`: the token goes back; the
    /// request is re-inserted at head and takes a new one.
    fn requeue_request(&mut self, ctx: &mut SchedCtx, rq: RqId) {
        self.put_token(ctx, rq);
    }

    /// `kyber_bio_merge` → `blk_bio_list_merge`: the newest 8 requests of
    /// the current CPU's kcq list for the bio's domain; the first whose
    /// position fits decides.
    fn own_merge_candidate(&self, ctx: &SchedCtx, bio: &BioInfo) -> Option<(RqId, MergeKind)> {
        let h = self.khd_index(bio.hctx);
        let khd = &self.khds[h];
        let slot = Self::slot_of(ctx.q, bio.cpu).min(khd.kcqs.len() - 1);
        let list = &khd.kcqs[slot][self.domain(bio.op, bio.flags)];
        let mut id = list.tail;
        for _ in 0..MERGE_SCAN {
            if id == crate::block::request::NIL {
                break;
            }
            let r = &ctx.rqs[id];
            if let Some(kind) = bio_fits(r, bio) {
                return Some((id, kind));
            }
            id = r.prev;
        }
        None
    }

    /// Not a kyber hook (the kernel core never merges requests inside
    /// kyber); kept consistent for callers that do.
    fn requests_merged(&mut self, ctx: &mut SchedCtx, _rq: RqId, next: RqId) {
        if ctx.rqs[next].elv[1] != 0 {
            self.unlink(ctx.rqs, next);
        }
    }

    /// `kyber_timer_fn`.
    fn timer(&mut self, ctx: &mut SchedCtx, token: u64) {
        if token != self.timer_token || self.timer_at.is_none() {
            return;
        }
        self.timer_at = None;
        if self.v412 {
            return self.stat_timer_v412(ctx);
        }
        let mut out = std::mem::take(&mut self.rescales);
        out.clear();
        self.latency.timer(ctx.jiffies(), &mut out);
        for r in &out {
            let depth = latency::scaled_depth(self.tokens[r.domain].depth(), r.p99_bucket);
            self.resize(ctx.now, r.domain, depth);
        }
        self.rescales = out;
    }

    /// No queue-wide lock (`kyber_init_sched` clears QUEUE_FLAG_SQ_SCHED):
    /// inserts and merges under the software queue's kcq lock, dispatch
    /// under the hardware queue's `khd->lock`; completions take none.
    fn hook_lock(&self, hook: Hook, cpu: u16, hctx: u16) -> Option<HookLock> {
        match hook {
            Hook::Insert | Hook::Merge => Some(HookLock::Ctx(cpu % self.nr_cpus as u16)),
            Hook::Dispatch => Some(HookLock::Hctx(hctx)),
            Hook::Complete => None,
        }
    }
}
