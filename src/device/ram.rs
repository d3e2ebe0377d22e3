//! `ram`: a memory-backed device like null_blk (timer mode) or brd/zram.
//! Every command waits a fixed latency; the data copy is serialised per
//! hardware queue at memory bandwidth, so throughput saturates with depth.

use super::profile::{in_range, BadValue, MAX_BANDWIDTH, MAX_COMMAND_NS};
use super::Profile;
use crate::block::driver::{Device, DeviceCmd, DeviceOut, QueueLimits, Submit};
use crate::sim::time::{Ns, NS_PER_SEC};
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RamParams {
    /// Fixed completion latency per command, ns (null_blk `completion_nsec`).
    pub latency_ns: u64,
    /// Copy bandwidth per hardware queue, bytes/s.
    pub bandwidth: u64,
}

/// The `[ram]` table's ranges (every value `calibrate` fits lies inside).
pub fn check(p: &RamParams) -> Result<(), BadValue> {
    in_range("ram.latency_ns", p.latency_ns, 0, MAX_COMMAND_NS, "ns")?;
    // One core's memcpy moves ~10^10 bytes/s; the range is the shared one.
    in_range("ram.bandwidth", p.bandwidth, 1, MAX_BANDWIDTH, "bytes/s")
}

pub struct Ram {
    limits: QueueLimits,
    p: RamParams,
    /// Time each hardware queue's copy engine is busy until.
    busy_until: Vec<Ns>,
}

impl Ram {
    pub fn new(profile: &Profile) -> Result<Ram, String> {
        let p = profile.ram.clone().ok_or("ram model needs a [ram] table")?;
        if p.bandwidth == 0 {
            return Err(format!(
                "{}: ram.bandwidth must be > 0 (bytes/s)",
                profile.name
            ));
        }
        Ok(Ram {
            busy_until: vec![0; profile.queue.nr_hw_queues as usize],
            limits: profile.queue.clone(),
            p,
        })
    }
}

impl Device for Ram {
    fn limits(&self) -> &QueueLimits {
        &self.limits
    }
    fn set_write_cache(&mut self, write_back: bool) {
        // Flushes then reach the model (a loop worker's vfs_fsync, a
        // RAM disk's no-op) instead of being completed by the block layer.
        self.limits.write_cache = write_back;
    }
    fn submit(&mut self, now: Ns, cmd: &DeviceCmd, out: &mut DeviceOut) -> Submit {
        let q = cmd.hwq as usize % self.busy_until.len();
        let copy = cmd.bytes() * NS_PER_SEC / self.p.bandwidth;
        let start = self.busy_until[q].max(now);
        self.busy_until[q] = start + copy;
        out.completions
            .push((start + copy + self.p.latency_ns, cmd.id));
        Submit::Accepted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::request::Op;
    use crate::device::load_profile;

    #[test]
    fn fixed_latency_and_serial_copy() {
        let p = load_profile("ram").unwrap();
        let mut d = Ram::new(&p).unwrap();
        let mut out = DeviceOut::default();
        let cmd = |id| DeviceCmd {
            id,
            op: Op::Read,
            sector: 0,
            nr_sectors: 8,
            hwq: 0,
            fua: false,
        };
        d.submit(0, &cmd(0), &mut out);
        d.submit(0, &cmd(1), &mut out);
        let (t0, t1) = (out.completions[0].0, out.completions[1].0);
        let copy = 4096 * NS_PER_SEC / d.p.bandwidth;
        assert_eq!(t0, copy + d.p.latency_ns);
        assert_eq!(t1, 2 * copy + d.p.latency_ns);
    }
}
