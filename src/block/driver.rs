//! The driver interface: what the block layer hands a device and what it
//! gets back (the kernel's `blk_mq_ops` and `struct queue_limits`). Device
//! models in `crate::device` implement [`Device`].

use super::request::{Op, RqId};
use crate::sim::time::Ns;
use serde::Deserialize;

/// Identity and queue limits every device has (what sysfs `queue/` shows).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QueueLimits {
    /// Capacity in bytes.
    pub capacity: u64,
    /// Logical block size in bytes (`logical_block_size`).
    #[serde(default = "default_lbs")]
    pub logical_block_size: u32,
    /// Hardware queues the device offers (blk-mq uses min(this, CPUs)).
    pub nr_hw_queues: u32,
    /// Driver tags per hardware queue (`queue_depth`).
    pub queue_depth: u32,
    /// `rotational`.
    pub rotational: bool,
    /// `write_cache`: true = "write back" (volatile cache; flushes cost time).
    pub write_cache: bool,
    /// `fua`: the device honours FUA writes (BLK_FEAT_FUA, sysfs
    /// `queue/fua`). With a write cache, a FUA write then goes down with FUA;
    /// without FUA support the block layer follows it with a cache flush
    /// (block/blk-flush.c). Default false, as for a driver that does not
    /// advertise it.
    #[serde(default)]
    pub fua: bool,
    /// `max_hw_sectors_kb`.
    pub max_hw_sectors_kb: u32,
    /// `max_segments`.
    #[serde(default = "default_max_segments")]
    pub max_segments: u32,
    /// SCSI-style per-device budget: the scheduler is not asked for a request
    /// while the device has no free slot (`get_budget`), so requests stay
    /// mergeable in the scheduler.
    #[serde(default)]
    pub budget: bool,
}

fn default_lbs() -> u32 {
    512
}
fn default_max_segments() -> u32 {
    // BLK_MAX_SEGMENTS (include/linux/blkdev.h)
    128
}

/// A command as the driver hands it to the device.
#[derive(Clone, Copy, Debug)]
pub struct DeviceCmd {
    pub id: RqId,
    pub op: Op,
    pub sector: u64,
    pub nr_sectors: u32,
    /// Hardware queue it was submitted on.
    pub hwq: u16,
    pub fua: bool,
}

impl DeviceCmd {
    pub fn bytes(&self) -> u64 {
        self.nr_sectors as u64 * 512
    }
}

/// What a device call produced: completions at given times and internal
/// wake-ups the device wants (`Device::wakeup(token)` at that time).
#[derive(Default, Debug)]
pub struct DeviceOut {
    pub completions: Vec<(Ns, RqId)>,
    pub wakeups: Vec<(Ns, u64)>,
}

/// Outcome of `queue_rq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submit {
    Accepted,
    /// BLK_STS_RESOURCE: the device cannot take it now; the block layer puts it
    /// back on the dispatch list and retries later.
    Busy,
}

/// A storage device model.
pub trait Device {
    /// Queue limits and identity (capacity, hardware queues, depth, rotational...).
    fn limits(&self) -> &QueueLimits;
    /// Accept a command (`queue_rq`). Completions are reported through `out`,
    /// at once (calendar models) or later from `wakeup`/`completed`.
    fn submit(&mut self, now: Ns, cmd: &DeviceCmd, out: &mut DeviceOut) -> Submit;
    /// An internal wake-up the device asked for.
    fn wakeup(&mut self, _now: Ns, _token: u64, _out: &mut DeviceOut) {}
    /// The completion of `id` was delivered (a device that serves one command
    /// at a time starts its next one here).
    fn completed(&mut self, _now: Ns, _id: RqId, _out: &mut DeviceOut) {}
    /// Volatile write cache setting (`write_cache` sysfs): true = "write back".
    fn set_write_cache(&mut self, _write_back: bool) {}
}
