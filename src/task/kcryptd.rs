//! dm-crypt between the jobs and the device (`--dm crypt`): the per-CPU
//! `kcryptd` workers that encrypt writes and submit them as themselves.
//!
//! What the kernel does (drivers/md/dm-crypt.c, 2.6.38 to 3.x, dm-crypt
//! 1.10-1.11; the per-CPU workqueue arrived with "dm crypt: scale to
//! multiple cpus", 2.6.38, version from memory):
//! - `crypt_map` takes a write and queues it on `kcryptd`, a bound workqueue
//!   (WQ_CPU_INTENSIVE, max_active 1): the work item runs on the CPU that
//!   submitted the bio, one item at a time per CPU, in queue order.
//! - The worker encrypts the data into new pages sector by sector (one
//!   cipher request per 512 bytes, `crypt_convert`), then submits the clone
//!   with `generic_make_request` from its own context. So the scheduler
//!   below sees the kworker as the submitting process: one CFQ/BFQ queue
//!   per CPU's worker instead of one per writer, in the worker's cgroup
//!   (the root) at its I/O priority (none: best effort 4 from nice 0).
//!   The clone keeps the bio's flags (`clone_init`: `bi_rw`).
//! - A read is cloned and submitted in the caller's context (`crypt_map` →
//!   `kcryptd_io_read`), so it keeps the process's identity; its completion
//!   (`crypt_endio`) queues the decryption on `kcryptd` of the CPU where it
//!   completed, and the read completes when that work item has run.
//! - Flushes and discards bypass the workers (remapped in `crypt_map`).
//!
//! Model: one kernel task per CPU, outside the fair-share run queues like
//! the flusher (its CPU time delays the jobs of its CPU through the CPU's
//! busy time). Costs are CPU time on the reference core per 512-byte
//! sector and per bio (work item, clone, page allocation), scaled by the
//! machine's speed. Not modelled: dm-crypt's mempools running dry, the
//! kcryptd_io worker of async (hardware) ciphers, 4.0's sorted write
//! thread (`dmcrypt_write`), and the device-mapper layers' own per-bio
//! cost.

use super::{BioOwner, Task, TaskCx, TaskId};
use crate::block::request::Op;
use crate::block::{BioDone, BioSubmit, SubmitResult};
use crate::sim::time::Ns;
use std::collections::VecDeque;

/// `--dm crypt[:sector_ns=N,bio_ns=N]`: what the workers cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CryptCosts {
    /// CPU time per 512-byte sector, encryption or decryption (ns on the
    /// reference core). Default: aes-cbc-essiv:sha256 (LUKS1's default)
    /// with AES-NI at ~500 MB/s per core plus the per-sector cipher request
    /// of these kernels; an estimate.
    pub sector_ns: Ns,
    /// CPU time per bio besides the cipher: the work item, the clone and
    /// its pages (ns on the reference core); an estimate.
    pub bio_ns: Ns,
}

impl Default for CryptCosts {
    fn default() -> Self {
        CryptCosts {
            sector_ns: 1_000,
            bio_ns: 2_000,
        }
    }
}

impl CryptCosts {
    /// Parse `crypt` or `crypt:sector_ns=N,bio_ns=N` (the `--dm` value).
    pub fn parse(text: &str) -> Result<CryptCosts, String> {
        let (target, opts) = match text.split_once(':') {
            Some((t, o)) => (t, Some(o)),
            None => (text, None),
        };
        if target != "crypt" {
            return Err(format!(
                "'{target}': the device-mapper target modelled is crypt (--dm crypt[:sector_ns=N,bio_ns=N])"
            ));
        }
        let mut c = CryptCosts::default();
        for kv in opts.into_iter().flat_map(|o| o.split(',')) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("'{kv}': expected NAME=VALUE (sector_ns, bio_ns)"))?;
            let n: Ns = v
                .parse()
                .ok()
                .filter(|n| *n <= 1_000_000_000)
                .ok_or_else(|| format!("{k}={v}: expected ns from 0 to 1000000000"))?;
            match k {
                "sector_ns" => c.sector_ns = n,
                "bio_ns" => c.bio_ns = n,
                _ => return Err(format!("'{k}': unknown crypt cost (sector_ns, bio_ns)")),
            }
        }
        Ok(c)
    }

    fn for_bio(&self, nr_sectors: u32) -> Ns {
        self.bio_ns + self.sector_ns * nr_sectors as Ns
    }
}

/// A read whose decryption is queued on a worker.
#[derive(Clone, Copy, Debug)]
struct Decrypt {
    owner: u64,
    nr_sectors: u32,
    /// When its clone completed.
    at: Ns,
}

/// The workers' queues, reachable from every task's context: the jobs queue
/// writes on their CPU's worker, completions queue reads' decryption.
pub struct CryptQueues {
    costs: CryptCosts,
    /// Task id of CPU 0's worker (CPU c's is `first + c`).
    first: TaskId,
    writes: Vec<VecDeque<BioSubmit>>,
    reads: Vec<VecDeque<Decrypt>>,
    /// Reads out on the device: (the job's owner token, sectors), by slot.
    reads_out: Vec<Option<(u64, u32)>>,
    free_slots: Vec<u32>,
}

impl CryptQueues {
    /// Queues for `cpus` workers with task ids from `first`; costs already
    /// scaled to the machine.
    pub fn new(costs: CryptCosts, cpus: usize, first: TaskId) -> CryptQueues {
        CryptQueues {
            costs,
            first,
            writes: vec![VecDeque::new(); cpus],
            reads: vec![VecDeque::new(); cpus],
            reads_out: Vec::new(),
            free_slots: Vec::new(),
        }
    }

    /// Whether `task` is one of the workers.
    pub fn is_worker(&self, task: TaskId) -> bool {
        self.worker_index(task).is_some()
    }

    /// The CPU of worker `task` (its index among the workers).
    pub fn worker_index(&self, task: TaskId) -> Option<usize> {
        let i = task.checked_sub(self.first)? as usize;
        (i < self.writes.len()).then_some(i)
    }

    /// How a job's bio goes down (`crypt_map`): a write is queued on the
    /// CPU's worker (true: taken); a read gets an owner token of the
    /// workers' so its completion comes back here for decryption (the
    /// caller gives it back with `unmap` if the block layer did not take
    /// it); flushes and discards pass as they are.
    pub fn map(&mut self, b: &mut BioSubmit, ready: &mut Vec<TaskId>) -> bool {
        match b.op {
            Op::Write if b.nr_sectors > 0 => {
                let cpu = b.cpu as usize % self.writes.len();
                self.wake_if_idle(cpu, ready);
                self.writes[cpu].push_back(*b);
                true
            }
            Op::Read => {
                let slot = match self.free_slots.pop() {
                    Some(s) => s,
                    None => {
                        self.reads_out.push(None);
                        (self.reads_out.len() - 1) as u32
                    }
                };
                self.reads_out[slot as usize] = Some((b.owner, b.nr_sectors));
                b.owner = BioOwner {
                    task: self.first,
                    tag: slot,
                }
                .token();
                false
            }
            _ => false,
        }
    }

    /// A read that `map` gave the workers' token to was not taken (its
    /// submitter sleeps and submits it again): restore its owner.
    pub fn unmap(&mut self, b: &mut BioSubmit) {
        let o = BioOwner::from_token(b.owner);
        if o.task != self.first || b.op != Op::Read {
            return;
        }
        let (owner, _) = self.reads_out[o.tag as usize]
            .take()
            .expect("an unmapped read was mapped");
        self.free_slots.push(o.tag);
        b.owner = owner;
    }

    /// A read's clone completed on `cpu` (`crypt_endio`): queue its
    /// decryption there.
    pub fn read_done(&mut self, tag: u32, d: BioDone, ready: &mut Vec<TaskId>) {
        let (owner, nr_sectors) = self.reads_out[tag as usize]
            .take()
            .expect("a crypt read completes once");
        self.free_slots.push(tag);
        let cpu = d.cpu as usize % self.reads.len();
        self.wake_if_idle(cpu, ready);
        self.reads[cpu].push_back(Decrypt {
            owner,
            nr_sectors,
            at: d.at,
        });
    }

    /// Work queued on CPU `cpu`'s worker: it is woken by the first item.
    fn has_work(&self, cpu: usize) -> bool {
        !self.writes[cpu].is_empty() || !self.reads[cpu].is_empty()
    }

    /// Wake CPU `cpu`'s worker if it has nothing queued yet.
    fn wake_if_idle(&self, cpu: usize, ready: &mut Vec<TaskId>) {
        if !self.has_work(cpu) {
            ready.push(self.first + cpu as TaskId);
        }
    }

    /// What is queued and out, for an end-of-run check's message.
    pub fn describe(&self) -> String {
        format!(
            "{} writes and {} decryptions queued, {} reads out",
            self.writes.iter().map(VecDeque::len).sum::<usize>(),
            self.reads.iter().map(VecDeque::len).sum::<usize>(),
            self.reads_out.iter().filter(|r| r.is_some()).count()
        )
    }

    /// Nothing queued and no read out.
    pub fn idle(&self) -> bool {
        (0..self.writes.len()).all(|c| !self.has_work(c))
            && self.reads_out.iter().all(|r| r.is_none())
    }
}

/// One CPU's `kcryptd` worker.
#[derive(Debug, Default)]
pub struct Kcryptd {
    /// The write at the head of its queue is encrypted already (it slept
    /// for a tag and submits it again).
    encrypted: bool,
}

impl Kcryptd {
    /// The worker acts at `cx.now`: one work item, then again when its CPU
    /// time is done, until its queue is empty.
    pub fn step(&mut self, task: &mut Task, cx: &mut TaskCx) {
        if !cx.kernel_task_may_run(task) {
            return;
        }
        let cpu = task.cpu as usize;
        let q = cx.crypt.as_deref_mut().expect("dm-crypt queues");
        let costs = q.costs;
        cx.block.cpu_begin(task.cpu, cx.now);
        if let Some(r) = q.reads[cpu].pop_front() {
            // Decryption queued by a completion that came before now.
            cx.block.cpu_charge(costs.for_bio(r.nr_sectors));
            let end = cx.block.cpu_end().max(r.at);
            cx.done.push(BioDone {
                owner: r.owner,
                at: end,
                cpu: task.cpu,
            });
            task.busy_until = task.busy_until.max(end);
        } else if let Some(&w) = q.writes[cpu].front() {
            if !self.encrypted {
                cx.block.cpu_charge(costs.for_bio(w.nr_sectors));
                self.encrypted = true;
            }
            let clone = BioSubmit {
                pid: task.id,
                cpu: task.cpu,
                cgroup: task.cgroup,
                ioprio: task.ioprio,
                ..w
            };
            match cx.with_block(|blk, env| blk.submit_bio(env, &clone, None)) {
                SubmitResult::Taken => {
                    self.encrypted = false;
                    let q = cx.crypt.as_deref_mut().expect("dm-crypt queues");
                    q.writes[cpu].pop_front();
                }
                SubmitResult::Sleep(why) => {
                    task.sleep = Some(why.into());
                }
            }
            let end = cx.block.cpu_end();
            task.busy_until = task.busy_until.max(end);
        } else {
            cx.block.cpu_end();
            return;
        }
        let q = cx.crypt.as_deref_mut().expect("dm-crypt queues");
        if q.has_work(cpu) && !task.blocked() {
            let at = task.busy_until;
            cx.wake_at(task, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dm_value_names_the_crypt_target_and_its_costs() {
        assert_eq!(CryptCosts::parse("crypt"), Ok(CryptCosts::default()));
        assert_eq!(
            CryptCosts::parse("crypt:sector_ns=300,bio_ns=0"),
            Ok(CryptCosts {
                sector_ns: 300,
                bio_ns: 0
            })
        );
        assert!(CryptCosts::parse("linear").unwrap_err().contains("crypt"));
        assert!(CryptCosts::parse("crypt:sector=3")
            .unwrap_err()
            .contains("unknown"));
        assert!(CryptCosts::parse("crypt:sector_ns=x")
            .unwrap_err()
            .contains("sector_ns=x"));
        assert!(CryptCosts::parse("crypt:bio_ns")
            .unwrap_err()
            .contains("NAME=VALUE"));
    }

    #[test]
    fn writes_queue_on_their_cpu_and_reads_come_back_for_decryption() {
        let mut q = CryptQueues::new(CryptCosts::default(), 2, 10);
        let mut ready = Vec::new();
        let mut w = BioSubmit {
            op: Op::Write,
            sector: 8,
            nr_sectors: 8,
            flags: 0,
            ioprio: Default::default(),
            cgroup: 3,
            pid: 1,
            cpu: 1,
            owner: 77,
        };
        assert!(q.map(&mut w, &mut ready));
        assert_eq!(ready, vec![11], "CPU 1's worker is woken");
        assert!(q.map(&mut w, &mut ready));
        assert_eq!(ready.len(), 1, "a busy worker is not woken twice");
        let mut r = BioSubmit { op: Op::Read, ..w };
        assert!(!q.map(&mut r, &mut ready));
        let o = BioOwner::from_token(r.owner);
        assert_eq!(o.task, 10);
        assert!(q.is_worker(o.task) && !q.is_worker(12) && !q.is_worker(9));
        q.read_done(
            o.tag,
            BioDone {
                owner: r.owner,
                at: 5,
                cpu: 0,
            },
            &mut ready,
        );
        assert_eq!(ready, vec![11, 10], "CPU 0's worker decrypts");
        assert_eq!(q.reads[0].front().map(|d| d.owner), Some(77));
        assert!(!q.idle());
    }

    #[test]
    fn a_read_the_block_layer_did_not_take_gets_its_owner_back() {
        let mut q = CryptQueues::new(CryptCosts::default(), 1, 5);
        let mut r = BioSubmit {
            op: Op::Read,
            sector: 0,
            nr_sectors: 8,
            flags: 0,
            ioprio: Default::default(),
            cgroup: 0,
            pid: 1,
            cpu: 0,
            owner: 42,
        };
        assert!(!q.map(&mut r, &mut Vec::new()));
        assert_ne!(r.owner, 42);
        q.unmap(&mut r);
        assert_eq!(r.owner, 42);
        assert!(q.idle(), "no read is left out");
        let mut w = BioSubmit { op: Op::Write, ..r };
        q.unmap(&mut w);
        assert_eq!(w.owner, 42, "only the workers' reads are unmapped");
    }
}
