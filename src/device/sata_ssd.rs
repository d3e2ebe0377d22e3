//! `sata-ssd`: a flash SSD behind a SATA link with NCQ.
//!
//! Host interface: every command passes one serial stage, the controller's
//! per-command processing plus its data on the half-duplex SATA link (reads
//! and writes share it). This caps small-block IOPS and large-block bandwidth.
//!
//! Reads: each `page_bytes` piece of a read is served by one of `units` flash
//! parallel units (channel × die, chosen by hashing the page), one read at a
//! time per unit: array read time plus the transfer to the controller.
//!
//! Writes: land in the power-loss-protected write buffer (fast) and drain
//! through the flash program path (`program_bandwidth`, shared by host data
//! and garbage-collection copies). A full buffer makes writes wait.
//!
//! Garbage collection, with counters only (no page map): `valid` bytes of
//! user data (random writes to unmapped space add to it in expectation),
//! `free` bytes in erased blocks. Programming consumes free space; when it
//! falls below `gc_threshold_blocks`, a GC job picks a victim block whose
//! valid fraction follows from the fill of the used space (uniform random
//! writes, FIFO cleaning: u = (v − 1)/ln v), copies its valid data through
//! the program path and erases it. The copy delays host data (lower write
//! throughput, write latency spikes while the buffer is full); the victim's
//! die is busy reading the copy (host reads there wait for one page read)
//! and erasing (host reads there wait for the erase). When the program path
//! has been idle, background GC refills the free pool to `gc_idle_blocks`.
//! The counters know the fill, not the write pattern: on a preconditioned
//! drive sequential writes pay the same GC cost as random ones.
//!
//! Read/program collisions (optional, `program_ns` > 0): every `page_bytes`
//! the program path writes (host data and GC copies) is one program on the
//! next unit in turn, holding it for `program_ns` from when the path reaches
//! that page; a host read whose unit is programming waits for the program
//! to end (no program suspend), as `nvme`'s `program_ns` does.
//!
//! FLUSH CACHE is not an NCQ command: libata issues it only once every
//! queued command has completed and defers every command behind it until it
//! completes (`ata_std_qc_defer`, drivers/ata/libata-core.c), so a flush
//! drains the drive's queue and holds the host until it is done; a command
//! submitted meanwhile is refused (busy) and the block layer re-runs the
//! queue when the flush completes, as `hdd` does.

use super::profile::{in_range, BadValue, MAX_BANDWIDTH, MAX_COMMAND_NS, MIN_DRIVE_BANDWIDTH};
use super::Profile;
use crate::block::driver::{Device, DeviceCmd, DeviceOut, QueueLimits, Submit};
use crate::block::request::Op;
use crate::sim::time::{Ns, NS_PER_SEC};
use rand::Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use std::collections::VecDeque;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SataSsdParams {
    /// Flash parallel units (channels × dies).
    pub units: u32,
    /// Array read time per page read on a unit (tR + ECC), ns.
    pub read_ns: u64,
    /// Transfer rate from a unit to the controller, bytes/s.
    pub unit_bandwidth: u64,
    /// Multi-plane page: the read and program unit, bytes.
    pub page_bytes: u64,
    /// Controller processing per command, ns.
    pub controller_ns: u64,
    /// SATA link bandwidth (both directions share it), bytes/s.
    pub link_bandwidth: u64,
    /// Latency of a write absorbed by the buffer, ns.
    pub write_ns: u64,
    /// Write buffer size, bytes.
    pub write_buffer: u64,
    /// Flash program path for host data and GC copies, bytes/s.
    pub program_bandwidth: u64,
    /// Block erase time, ns.
    pub erase_ns: u64,
    /// Erase block (the GC unit), bytes.
    pub block_bytes: u64,
    /// Spare flash beyond the user capacity, as a fraction of it.
    pub over_provisioning: f64,
    /// Foreground GC runs while fewer blocks than this are free.
    pub gc_threshold_blocks: u64,
    /// Background GC refills the free pool to this many blocks when idle.
    pub gc_idle_blocks: u64,
    /// Fraction of the user capacity holding data at the start (0..1).
    pub initial_fill: f64,
    /// true: start in random-write steady state (free pool at the GC
    /// threshold); false: everything not holding data is erased (fresh or
    /// secure-erased drive filled sequentially).
    pub preconditioned: bool,
    /// Data set management (trim) command time, ns.
    pub trim_ns: u64,
    /// Flush command time, ns (the buffer is power-loss protected).
    pub flush_ns: u64,
    /// Exponential jitter: service = base × (1 − j + j·Exp(1)), 0 ≤ j ≤ 1.
    pub jitter: f64,
    /// true: a write that finds the write buffer full holds the controller's
    /// command front end until the buffer takes its data, so every later
    /// command — reads included — waits behind the write backlog (a SATA
    /// drive asks for a write's data with DMA Setup only when it has room,
    /// and its single command processor handles commands in order). false
    /// (the default, and the model before interference was added): reads pass
    /// writes that wait for buffer space.
    #[serde(default)]
    pub front_end_waits_for_buffer: bool,
    /// Time one flash program holds its unit, ns; 0 (the default): host
    /// reads never wait for programs.
    #[serde(default)]
    pub program_ns: u64,
}

/// Counters the tests read.
#[derive(Clone, Copy, Debug, Default)]
pub struct SsdStats {
    pub gc_jobs: u64,
    pub gc_copied_bytes: f64,
    pub host_written_bytes: f64,
}

pub struct SataSsd {
    limits: QueueLimits,
    p: SataSsdParams,
    rng: ChaCha8Rng,
    /// Host interface (controller + link) busy until.
    host_free: Ns,
    /// The latest completion of any command accepted so far.
    last_done: Ns,
    /// A flush holds the host until then (commands before it are refused).
    flush_until: Ns,
    /// Host reads: each unit busy until.
    unit_free: Vec<Ns>,
    /// GC on a unit: copy reads from `gc_start` to `gc_read_end`, then the
    /// erase until `erase_end`.
    gc_start: Vec<Ns>,
    gc_read_end: Vec<Ns>,
    erase_end: Vec<Ns>,
    gc_next_unit: usize,
    /// Programs per unit, (start, end), in order (`program_ns` > 0).
    programs: Vec<VecDeque<(Ns, Ns)>>,
    next_program_unit: usize,
    /// Bytes through the program path not yet making a whole page.
    program_fill: u64,
    /// Buffered writes in order: (time its data is programmed, bytes).
    buffer: VecDeque<(Ns, u64)>,
    buffered: u64,
    last_admit: Ns,
    /// Program path busy until.
    path_free: Ns,
    user_bytes: f64,
    flash_bytes: f64,
    valid: f64,
    free: f64,
    pub stats: SsdStats,
}

/// Valid fraction of the victim block when used space holds valid data at
/// fraction `u`, for uniform random writes and FIFO (oldest block) cleaning:
/// u = (v − 1) / ln v (Desnoyers, "Analytic models of SSD write performance",
/// 2012; greedy cleaning does a little better).
pub fn victim_valid(u: f64) -> f64 {
    if u <= 0.0 {
        return 0.0;
    }
    if u >= 1.0 {
        return 1.0;
    }
    let g = |v: f64| (v - 1.0) / v.ln();
    let (mut lo, mut hi) = (1e-12, 1.0 - 1e-12);
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if g(mid) < u {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Profile validation hook (the `[sata_ssd]` table's own checks).
/// The `[sata_ssd]` table's ranges (physical, for a NAND flash SSD; every
/// value of the built-in profile lies inside) and its consistency rules.
pub fn check(p: &SataSsdParams) -> Result<(), BadValue> {
    const MS: u64 = 1_000_000;
    const GIB: u64 = 1 << 30;
    // Channels x dies: 8-16 channels of up to 16 dies.
    in_range("sata_ssd.units", p.units, 1, 1024, "units")?;
    // NAND array read (tR): 25 us (SLC) to ~150 us (QLC), with ECC retries more.
    in_range("sata_ssd.read_ns", p.read_ns, 0, 10 * MS, "ns")?;
    for (k, v) in [
        ("sata_ssd.unit_bandwidth", p.unit_bandwidth),
        ("sata_ssd.link_bandwidth", p.link_bandwidth),
        ("sata_ssd.program_bandwidth", p.program_bandwidth),
    ] {
        in_range(k, v, MIN_DRIVE_BANDWIDTH, MAX_BANDWIDTH, "bytes/s")?;
    }
    // A NAND page is 2 KiB (old SLC) to 16 KiB, times up to 6 planes; a
    // read is served page by page.
    in_range("sata_ssd.page_bytes", p.page_bytes, 2048, 1 << 20, "bytes")?;
    for (k, v) in [
        ("sata_ssd.controller_ns", p.controller_ns),
        ("sata_ssd.write_ns", p.write_ns),
        ("sata_ssd.trim_ns", p.trim_ns),
        ("sata_ssd.flush_ns", p.flush_ns),
    ] {
        in_range(k, v, 0, MAX_COMMAND_NS, "ns")?;
    }
    // Power-loss-protected write buffers are a few MiB to some hundreds;
    // the model keeps one entry per buffered write.
    in_range("sata_ssd.write_buffer", p.write_buffer, 4096, GIB, "bytes")?;
    // Block erase (tBERS): a few ms, at most ~25 ms.
    in_range("sata_ssd.erase_ns", p.erase_ns, 0, 100 * MS, "ns")?;
    // NAND tPROG: ~200 us (SLC) to a few ms (TLC/QLC); 0 turns it off.
    in_range("sata_ssd.program_ns", p.program_ns, 0, 20 * MS, "ns")?;
    // An erase block holds many pages: 128 KiB (old SLC) to tens of MiB
    // (3D NAND, multi-plane). Garbage collection works block by block, so a
    // tiny block makes GC run once per few bytes written.
    in_range(
        "sata_ssd.block_bytes",
        p.block_bytes,
        64 << 10,
        GIB,
        "bytes",
    )?;
    if p.block_bytes < p.page_bytes {
        return Err(BadValue::new(
            "sata_ssd.block_bytes",
            format!(
                "{} is smaller than page_bytes ({})",
                p.block_bytes, p.page_bytes
            ),
        ));
    }
    let frac = |k: &str, v: f64, lo: f64, hi: f64| -> Result<(), BadValue> {
        if v.is_finite() && (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(BadValue::new(
                k,
                format!("{v} is out of range: expected {lo}..={hi}"),
            ))
        }
    };
    frac("sata_ssd.jitter", p.jitter, 0.0, 1.0)?;
    frac("sata_ssd.initial_fill", p.initial_fill, 0.0, 1.0)?;
    // Spare flash: ~7% (GB vs GiB) on consumer drives, 28% or more on
    // write-intensive ones; below 1% each GC copy frees almost nothing.
    frac("sata_ssd.over_provisioning", p.over_provisioning, 0.01, 4.0)?;
    // Free-block pool targets: a few percent of the blocks.
    in_range(
        "sata_ssd.gc_threshold_blocks",
        p.gc_threshold_blocks,
        1,
        65536,
        "blocks",
    )?;
    in_range(
        "sata_ssd.gc_idle_blocks",
        p.gc_idle_blocks,
        1,
        65536,
        "blocks",
    )?;
    if p.gc_idle_blocks < p.gc_threshold_blocks {
        return Err(BadValue::new(
            "sata_ssd.gc_idle_blocks",
            "must be >= gc_threshold_blocks",
        ));
    }
    Ok(())
}

impl SataSsd {
    pub fn new(profile: &Profile, seed: u64) -> Result<SataSsd, String> {
        let p = profile
            .sata_ssd
            .clone()
            .ok_or("sata-ssd model needs a [sata_ssd] table")?;
        check(&p).map_err(|e| format!("{}: {e}", profile.name))?;
        let user = profile.queue.capacity as f64;
        let flash = user * (1.0 + p.over_provisioning);
        let valid = user * p.initial_fill;
        let block = p.block_bytes as f64;
        if flash - valid < (p.gc_idle_blocks as f64 + 1.0) * block {
            return Err(format!(
                "{}: sata_ssd.over_provisioning leaves no room for {} free blocks",
                profile.name, p.gc_idle_blocks
            ));
        }
        let free = if p.preconditioned {
            p.gc_threshold_blocks as f64 * block
        } else {
            flash - valid
        };
        let units = p.units as usize;
        // A write is at least one sector: this bounds the buffer's entries.
        let entries = (p.write_buffer / 512 + 1) as usize;
        Ok(SataSsd {
            limits: profile.queue.clone(),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7361_7461),
            host_free: 0,
            last_done: 0,
            flush_until: 0,
            unit_free: vec![0; units],
            gc_start: vec![0; units],
            gc_read_end: vec![0; units],
            erase_end: vec![0; units],
            gc_next_unit: 0,
            programs: vec![VecDeque::new(); if p.program_ns > 0 { units } else { 0 }],
            next_program_unit: 0,
            program_fill: 0,
            buffer: VecDeque::with_capacity(entries.min(1 << 16)),
            buffered: 0,
            last_admit: 0,
            path_free: 0,
            user_bytes: user,
            flash_bytes: flash,
            valid,
            free,
            stats: SsdStats::default(),
            p,
        })
    }

    fn jittered(&mut self, base: Ns) -> Ns {
        if self.p.jitter == 0.0 || base == 0 {
            return base;
        }
        let e: f64 = -(1.0 - self.rng.gen::<f64>()).ln();
        (base as f64 * (1.0 - self.p.jitter + self.p.jitter * e)) as Ns
    }

    /// Controller + link stage, serial over all commands.
    fn host_stage(&mut self, now: Ns, bytes: u64) -> Ns {
        let cost = self.p.controller_ns + bytes * NS_PER_SEC / self.p.link_bandwidth;
        let t = self.host_free.max(now) + cost;
        self.host_free = t;
        t
    }

    fn unit_of(&self, page: u64) -> usize {
        // Pages scatter over units as the FTL stripes them.
        let h = page.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h >> 32) % self.p.units as u64) as usize
    }

    /// When a host read may start on unit `u` at `t`: it waits for an
    /// in-flight GC copy read and for an erase (no erase suspend).
    fn unit_ready(&self, u: usize, t: Ns) -> Ns {
        let mut s = t.max(self.unit_free[u]);
        if s >= self.gc_start[u] && s < self.gc_read_end[u] && self.p.read_ns > 0 {
            let into = (s - self.gc_start[u]) % self.p.read_ns;
            s += self.p.read_ns - into;
        }
        if s >= self.gc_read_end[u] && s < self.erase_end[u] {
            s = self.erase_end[u];
        }
        s
    }

    fn read(&mut self, t: Ns, sector: u64, bytes: u64) -> Ns {
        let first = sector * 512 / self.p.page_bytes;
        let last = (sector * 512 + bytes.max(1) - 1) / self.p.page_bytes;
        let mut done = t;
        for page in first..=last {
            let lo = (page * self.p.page_bytes).max(sector * 512);
            let hi = ((page + 1) * self.p.page_bytes).min(sector * 512 + bytes.max(1));
            let u = self.unit_of(page);
            let start = self.after_programs(u, self.unit_ready(u, t));
            let end = start
                + self.jittered(self.p.read_ns)
                + (hi - lo) * NS_PER_SEC / self.p.unit_bandwidth;
            self.unit_free[u] = end;
            done = done.max(end);
        }
        done
    }

    /// One GC job starting on the program path at `t`: returns when the path
    /// has programmed the copied data.
    fn gc_job(&mut self, t: Ns) -> Ns {
        let block = self.p.block_bytes as f64;
        let used = (self.flash_bytes - self.free).max(block);
        let v = victim_valid((self.valid / used).min(1.0));
        let copy = v * block;
        let u = self.gc_next_unit;
        self.gc_next_unit = (u + 1) % self.unit_free.len();
        let s = t.max(self.erase_end[u]);
        let reads = (copy / self.p.page_bytes as f64).ceil() as u64;
        self.gc_start[u] = s;
        self.gc_read_end[u] = s + reads * self.p.read_ns;
        self.erase_end[u] = self.gc_read_end[u] + self.p.erase_ns;
        self.free += block - copy;
        self.stats.gc_jobs += 1;
        self.stats.gc_copied_bytes += copy;
        // Copy reads pipeline under the programs; the path time dominates.
        let end = t + (copy * NS_PER_SEC as f64 / self.p.program_bandwidth as f64) as Ns;
        self.schedule_programs(t, end, copy as u64);
        end
    }

    /// The program path writes `bytes` from `from` to `to`: each whole
    /// `page_bytes` is a program on the next unit in turn, starting when the
    /// path reaches that page (after the unit's previous program).
    fn schedule_programs(&mut self, from: Ns, to: Ns, bytes: u64) {
        if self.p.program_ns == 0 || bytes == 0 {
            return;
        }
        let page = self.p.page_bytes;
        let before = self.program_fill;
        self.program_fill += bytes;
        let mut k = 1;
        while self.program_fill >= page {
            self.program_fill -= page;
            // The path reaches the end of this page `reached` bytes in.
            let reached = (k * page).saturating_sub(before).min(bytes);
            let at = from + ((to - from) as u128 * reached as u128 / bytes as u128) as Ns;
            let u = self.next_program_unit;
            self.next_program_unit = (u + 1) % self.programs.len();
            let q = &mut self.programs[u];
            // Every later read passes the host stage after `host_free`:
            // programs over by then cannot hold one (and the queues stay
            // as short as the path's backlog, whatever the run's length).
            while q.front().is_some_and(|&(_, end)| end <= self.host_free) {
                q.pop_front();
            }
            let start = q.back().map_or(at, |&(_, end)| end.max(at));
            q.push_back((start, start + self.p.program_ns));
            k += 1;
        }
    }

    /// When a host read ready at `s` on unit `u` may start: after any
    /// program holding the unit then (no program suspend). Reads on a unit
    /// come in time order, so programs that ended before `s` are dropped.
    fn after_programs(&mut self, u: usize, mut s: Ns) -> Ns {
        let Some(q) = self.programs.get_mut(u) else {
            return s;
        };
        while q.front().is_some_and(|&(_, end)| end <= s) {
            q.pop_front();
        }
        for &(start, end) in q.iter() {
            if start <= s && s < end {
                s = end;
            }
        }
        s
    }

    /// Program `bytes` of host data that entered the buffer at `at`: returns
    /// when they leave it.
    fn program(&mut self, at: Ns, bytes: u64) -> Ns {
        let block = self.p.block_bytes as f64;
        // Background GC in the idle time the path had before `at`.
        let idle_target = self.p.gc_idle_blocks as f64 * block;
        if self.path_free < at && self.free < idle_target {
            let mut t = self.path_free;
            while self.free < idle_target && t < at {
                t = self.gc_job(t);
            }
            self.path_free = t;
        }
        let mut start = self.path_free.max(at);
        let threshold = self.p.gc_threshold_blocks as f64 * block;
        let mut guard = 0;
        while self.free < threshold && guard < 10_000 {
            start = self.gc_job(start);
            guard += 1;
        }
        let end = start + bytes * NS_PER_SEC / self.p.program_bandwidth;
        self.path_free = end;
        self.schedule_programs(start, end, bytes);
        let b = bytes as f64;
        self.free -= b;
        // Writing to an unmapped LBA adds data; the mapped fraction is
        // valid/user for writes spread like the data already there.
        self.valid = (self.valid + b * (1.0 - self.valid / self.user_bytes)).min(self.user_bytes);
        self.stats.host_written_bytes += b;
        end
    }

    /// Admit a write into the buffer at or after `t`, in arrival order.
    fn write_admit(&mut self, t: Ns, bytes: u64) -> Ns {
        let mut at = t.max(self.last_admit);
        while let Some(&(rel, b)) = self.buffer.front() {
            if rel > at {
                break;
            }
            self.buffered -= b;
            self.buffer.pop_front();
        }
        while self.buffered + bytes > self.p.write_buffer {
            let Some((rel, b)) = self.buffer.pop_front() else {
                break;
            };
            at = at.max(rel);
            self.buffered -= b;
        }
        let rel = self.program(at, bytes);
        self.buffer.push_back((rel, bytes));
        self.buffered += bytes;
        self.last_admit = at;
        at
    }

    /// Free space in erased blocks and valid data, in bytes (for tests and
    /// reports).
    pub fn fill_state(&self) -> (f64, f64) {
        (self.free, self.valid)
    }
}

impl Device for SataSsd {
    fn limits(&self) -> &QueueLimits {
        &self.limits
    }

    fn submit(&mut self, now: Ns, cmd: &DeviceCmd, out: &mut DeviceOut) -> Submit {
        if now < self.flush_until {
            // A flush is active: libata defers the command.
            return Submit::Busy;
        }
        let bytes = cmd.bytes();
        let done = match cmd.op {
            Op::Read => {
                let t = self.host_stage(now, bytes);
                self.read(t, cmd.sector, bytes)
            }
            Op::Write => {
                let t = self.host_stage(now, bytes);
                let admitted = self.write_admit(t, bytes);
                if self.p.front_end_waits_for_buffer {
                    // Back-pressure: nothing behind this write starts before it is taken.
                    self.host_free = self.host_free.max(admitted);
                }
                admitted + self.jittered(self.p.write_ns)
            }
            Op::Discard => {
                // Trimmed LBAs stop holding data: in expectation the mapped
                // fraction of them.
                let b = bytes as f64;
                self.valid = (self.valid - b * self.valid / self.user_bytes).max(0.0);
                self.host_stage(now, 0) + self.p.trim_ns
            }
            Op::Flush => {
                // Issued once everything queued before it is done.
                let t = self.host_stage(now, 0).max(self.last_done);
                let done = if self.limits.write_cache {
                    t + self.p.flush_ns
                } else {
                    t
                };
                self.flush_until = done;
                done
            }
        };
        self.last_done = self.last_done.max(done);
        out.completions.push((done, cmd.id));
        Submit::Accepted
    }

    fn set_write_cache(&mut self, write_back: bool) {
        self.limits.write_cache = write_back;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::request::RqId;
    use crate::device::load_profile;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    fn ssd(edit: impl Fn(&mut Profile)) -> SataSsd {
        let mut p = load_profile("sata-ssd").unwrap();
        edit(&mut p);
        SataSsd::new(&p, 1).unwrap()
    }

    /// The built-in drive full of data (`initial_fill` 1), with `edit`.
    fn full_ssd(edit: impl Fn(&mut SataSsdParams)) -> SataSsd {
        ssd(|p| {
            let s = p.sata_ssd.as_mut().unwrap();
            s.initial_fill = 1.0;
            edit(s);
        })
    }

    /// Closed-loop random 4 KiB `op`s at `depth` for `n` completions:
    /// (IOPS, mean latency ns, max latency ns).
    fn closed_loop(d: &mut SataSsd, depth: usize, op: Op, n: u64) -> (f64, f64, u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let cap_sectors = d.limits.capacity / 512;
        let mut heap = BinaryHeap::new();
        let mut out = DeviceOut::default();
        let mut issue = |d: &mut SataSsd, now: Ns, id: RqId, out: &mut DeviceOut| {
            let sector = rng.gen_range(0..cap_sectors / 8) * 8;
            let c = DeviceCmd {
                id,
                op,
                sector,
                nr_sectors: 8,
                hwq: 0,
                fua: false,
            };
            assert_eq!(d.submit(now, &c, out), Submit::Accepted);
        };
        let mut start = vec![0u64; depth];
        for id in 0..depth as u32 {
            issue(d, 0, id, &mut out);
        }
        for (t, id) in out.completions.drain(..) {
            heap.push(Reverse((t, id)));
        }
        let (mut k, mut lat, mut max, mut now) = (0u64, 0u64, 0u64, 0);
        while k < n {
            let Reverse((t, id)) = heap.pop().unwrap();
            now = t;
            let l = t - start[id as usize];
            lat += l;
            max = max.max(l);
            k += 1;
            start[id as usize] = t;
            issue(d, t, id, &mut out);
            for (t, id) in out.completions.drain(..) {
                heap.push(Reverse((t, id)));
            }
        }
        (k as f64 * 1e9 / now as f64, lat as f64 / k as f64, max)
    }

    #[test]
    fn reads_wait_behind_writes_held_by_a_full_buffer() {
        // A full drive at QD32, one read in eight: with back-pressure on the
        // front end the reads queue behind the writes waiting for buffer
        // space and take longer than the writes; without it they pass them.
        let mixed = |hold: bool| {
            let mut d = full_ssd(|s| s.front_end_waits_for_buffer = hold);
            mixed_loop(&mut d, 32, 8, 60_000)
        };
        let (r_free, w_free) = mixed(false);
        let (r_held, w_held) = mixed(true);
        assert!(r_free < 0.5 * w_free, "free: read {r_free} write {w_free}");
        assert!(r_held > w_held, "held: read {r_held} write {w_held}");
        assert!(r_held < 1.5 * w_held, "held: read {r_held} write {w_held}");
    }

    #[test]
    fn reads_wait_for_programs_on_their_unit() {
        // A full drive at QD32, one read in eight: with programs holding
        // their unit the reads take longer, the writes (paced by the
        // program path's bandwidth, which does not change) do not.
        let mixed = |program_ns: u64| {
            let mut d = full_ssd(|s| s.program_ns = program_ns);
            mixed_loop(&mut d, 32, 8, 60_000)
        };
        let (r0, w0) = mixed(0);
        let (r1, w1) = mixed(2_000_000);
        assert!(r1 > r0 + 100_000.0, "reads {r0} -> {r1}");
        assert!((w1 / w0 - 1.0).abs() < 0.05, "writes {w0} -> {w1}");
    }

    #[test]
    fn a_flush_drains_the_queue_and_holds_the_host() {
        // FLUSH CACHE is not queued: it completes after every write before
        // it (plus its own time), and a command sent meanwhile is refused
        // until it is done, then accepted.
        let mut d = full_ssd(|_| {});
        let mut out = DeviceOut::default();
        let cmd = |id: RqId, op: Op, sector: u64| DeviceCmd {
            id,
            op,
            sector,
            nr_sectors: if op == Op::Flush { 0 } else { 8 },
            hwq: 0,
            fua: false,
        };
        for id in 0..16 {
            assert_eq!(
                d.submit(0, &cmd(id, Op::Write, id as u64 * 4096), &mut out),
                Submit::Accepted
            );
        }
        let last_write = out.completions.iter().map(|c| c.0).max().unwrap();
        assert_eq!(
            d.submit(0, &cmd(16, Op::Flush, 0), &mut out),
            Submit::Accepted
        );
        let flush_done = out.completions.last().unwrap().0;
        assert!(
            flush_done >= last_write + d.p.flush_ns,
            "flush at {flush_done}, last write at {last_write}"
        );
        let read = cmd(17, Op::Read, 1 << 20);
        assert_eq!(d.submit(flush_done - 1, &read, &mut out), Submit::Busy);
        assert_eq!(d.submit(flush_done, &read, &mut out), Submit::Accepted);
        assert!(out.completions.last().unwrap().0 > flush_done);
    }

    #[test]
    fn program_queues_stay_as_short_as_the_path_backlog() {
        // Writes only: no read ever drops a unit's programs, the host stage
        // does, so a long run keeps a bounded list per unit.
        let mut d = full_ssd(|s| s.program_ns = 2_000_000);
        closed_loop(&mut d, 32, Op::Write, 200_000);
        let longest = d.programs.iter().map(VecDeque::len).max().unwrap();
        assert!(
            longest > 0 && longest < 64,
            "{longest} programs queued on a unit"
        );
    }

    /// Closed loop at `depth`, every `every`-th command a read: (mean read
    /// latency, mean write latency) in ns.
    fn mixed_loop(d: &mut SataSsd, depth: usize, every: u64, n: u64) -> (f64, f64) {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let cap = d.limits.capacity / 512 / 8;
        let mut out = DeviceOut::default();
        let mut heap = BinaryHeap::new();
        let mut ops = vec![Op::Write; depth];
        let mut start = vec![0u64; depth];
        let mut k = 0u64;
        type Heap = BinaryHeap<Reverse<(Ns, RqId)>>;
        let mut issue = |d: &mut SataSsd, now: Ns, id: RqId, ops: &mut [Op], heap: &mut Heap| {
            k += 1;
            let op = if k.is_multiple_of(every) {
                Op::Read
            } else {
                Op::Write
            };
            ops[id as usize] = op;
            let c = DeviceCmd {
                id,
                op,
                sector: rng.gen_range(0..cap) * 8,
                nr_sectors: 8,
                hwq: 0,
                fua: false,
            };
            d.submit(now, &c, &mut out);
            for (t, id) in out.completions.drain(..) {
                heap.push(Reverse((t, id)));
            }
        };
        for id in 0..depth as u32 {
            issue(d, 0, id, &mut ops, &mut heap);
        }
        let (mut rs, mut rn, mut ws, mut wn) = (0u64, 0u64, 0u64, 0u64);
        for _ in 0..n {
            let Reverse((t, id)) = heap.pop().unwrap();
            let l = t - start[id as usize];
            if ops[id as usize] == Op::Read {
                rs += l;
                rn += 1;
            } else {
                ws += l;
                wn += 1;
            }
            start[id as usize] = t;
            issue(d, t, id, &mut ops, &mut heap);
        }
        (rs as f64 / rn as f64, ws as f64 / wn as f64)
    }

    #[test]
    fn victim_valid_fraction() {
        assert_eq!(victim_valid(0.0), 0.0);
        for u in [0.1, 0.5, 0.8, 0.917, 0.99] {
            let v = victim_valid(u);
            assert!(v < u, "victim {v} should hold less than the mean {u}");
            assert!(((v - 1.0) / v.ln() - u).abs() < 1e-9);
        }
        // 9% spare: write amplification about 6.
        let wa = 1.0 / (1.0 - victim_valid(1.0 / 1.09));
        assert!((5.0..8.0).contains(&wa), "WA {wa}");
    }

    #[test]
    fn reads_saturate_the_sata_interface() {
        let mut d = ssd(|_| {});
        let (iops1, lat1, _) = closed_loop(&mut d, 1, Op::Read, 20_000);
        let mut d = ssd(|_| {});
        let (iops32, _, _) = closed_loop(&mut d, 32, Op::Read, 100_000);
        assert!(lat1 < 250_000.0, "QD1 read latency {lat1}");
        assert!(lat1 > 60_000.0, "QD1 read latency {lat1}");
        assert!(
            (40_000.0..100_000.0).contains(&iops32),
            "QD32 {iops32} (QD1 {iops1})"
        );
    }

    #[test]
    fn gc_lowers_sustained_random_writes_on_a_full_drive() {
        let mut empty = ssd(|p| {
            let s = p.sata_ssd.as_mut().unwrap();
            s.initial_fill = 0.0;
            s.preconditioned = false;
        });
        let (e_iops, _, e_max) = closed_loop(&mut empty, 32, Op::Write, 200_000);
        assert_eq!(empty.stats.gc_jobs, 0);
        let mut full = full_ssd(|_| {});
        let (f_iops, _, f_max) = closed_loop(&mut full, 32, Op::Write, 100_000);
        assert!(full.stats.gc_jobs > 10);
        assert!(f_iops * 2.0 < e_iops, "full {f_iops} vs empty {e_iops}");
        assert!(
            (10_000.0..45_000.0).contains(&f_iops),
            "full drive {f_iops}"
        );
        // GC jobs stall the program path: latency spikes.
        assert!(
            f_max > 5 * e_max,
            "max latency full {f_max} vs empty {e_max}"
        );
        // Write amplification near 1 / (1 - v).
        let wa = (full.stats.host_written_bytes + full.stats.gc_copied_bytes)
            / full.stats.host_written_bytes;
        assert!((3.0..10.0).contains(&wa), "WA {wa}");
    }

    #[test]
    fn writes_fill_an_empty_drive_and_trim_empties_it() {
        let mut d = ssd(|p| {
            let s = p.sata_ssd.as_mut().unwrap();
            s.initial_fill = 0.0;
            s.preconditioned = false;
        });
        let (free0, valid0) = d.fill_state();
        assert_eq!(valid0, 0.0);
        closed_loop(&mut d, 8, Op::Write, 10_000);
        let (free1, valid1) = d.fill_state();
        assert!(valid1 > 0.99 * 10_000.0 * 4096.0);
        assert!(free1 < free0);
        let mut out = DeviceOut::default();
        let trim = DeviceCmd {
            id: 0,
            op: Op::Discard,
            sector: 0,
            nr_sectors: (d.limits.capacity / 512).min(u32::MAX as u64) as u32,
            hwq: 0,
            fua: false,
        };
        d.submit(1 << 40, &trim, &mut out);
        assert!(d.fill_state().1 < valid1);
    }

    #[test]
    fn idle_time_refills_the_free_pool() {
        // A burst after idle time is absorbed by background GC's free blocks.
        let mut d = ssd(|_| {});
        let mut out = DeviceOut::default();
        let w = |id, sector| DeviceCmd {
            id,
            op: Op::Write,
            sector,
            nr_sectors: 8,
            hwq: 0,
            fua: false,
        };
        d.submit(0, &w(0, 0), &mut out);
        let jobs = d.stats.gc_jobs;
        // One second idle, then one write: background GC ran in between.
        d.submit(NS_PER_SEC, &w(1, 8), &mut out);
        assert!(d.stats.gc_jobs > jobs);
        let block = d.p.block_bytes as f64;
        assert!(d.fill_state().0 > d.p.gc_threshold_blocks as f64 * block);
    }

    #[test]
    fn sequential_reads_are_capped_by_the_link() {
        let mut d = ssd(|_| {});
        let mut out = DeviceOut::default();
        let mut heap = BinaryHeap::new();
        let bs = 256u32; // 128 KiB
        let mut next = 0u64;
        for id in 0..32u32 {
            let c = DeviceCmd {
                id,
                op: Op::Read,
                sector: next,
                nr_sectors: bs,
                hwq: 0,
                fua: false,
            };
            next += bs as u64;
            d.submit(0, &c, &mut out);
        }
        for (t, id) in out.completions.drain(..) {
            heap.push(Reverse((t, id)));
        }
        let (mut k, mut now) = (0u64, 0);
        while k < 20_000 {
            let Reverse((t, id)) = heap.pop().unwrap();
            now = t;
            k += 1;
            let c = DeviceCmd {
                id,
                op: Op::Read,
                sector: next,
                nr_sectors: bs,
                hwq: 0,
                fua: false,
            };
            next += bs as u64;
            d.submit(t, &c, &mut out);
            for (t, id) in out.completions.drain(..) {
                heap.push(Reverse((t, id)));
            }
        }
        let mbps = (k * bs as u64 * 512) as f64 / now as f64 * 1e3;
        assert!(
            (400.0..=550.0).contains(&mbps),
            "sequential read {mbps} MB/s"
        );
    }
}
