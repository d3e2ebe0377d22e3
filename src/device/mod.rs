//! Device models behind one small trait, and the TOML profiles that configure
//! them. Built-in profiles live in `profiles/*.toml` and are compiled in.

pub mod hdd;
pub mod nvme;
pub mod profile;
pub mod ram;
pub mod rng;
pub mod sata_ssd;

use crate::block::request::{Op, RqId};
use crate::sim::time::Ns;

pub use profile::{builtin_profiles, load_profile, Profile, QueueLimits};

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

/// Build the model a profile names.
pub fn build(profile: &Profile, seed: u64) -> Result<Box<dyn Device>, String> {
    match profile.model.as_str() {
        "ram" => Ok(Box::new(ram::Ram::new(profile)?)),
        "nvme" => Ok(Box::new(nvme::Nvme::new(profile, seed)?)),
        "hdd" => Ok(Box::new(hdd::Hdd::new(profile, seed)?)),
        "sata-ssd" => Ok(Box::new(sata_ssd::SataSsd::new(profile, seed)?)),
        other => Err(format!(
            "profile '{}': unknown model '{other}' (known: ram, nvme, hdd, sata-ssd)",
            profile.name
        )),
    }
}
