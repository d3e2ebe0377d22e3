//! The simulated machine: how many CPUs, how much memory, how fast a CPU is.
//! One description used by every stage — the job parser (`$ncpus`,
//! `$mb_memory`, `cpus_allowed`), the block layer (software queues and the
//! CPU → queue map), the CPU cost model, and later the page cache.

use serde::{Deserialize, Serialize};

/// Most CPUs a machine may have (the parser's and the block layer's maps
/// are sized by it; the kernel's default NR_CPUS on x86_64 is 8192, a run
/// with more simulated CPUs than this is not meaningful here).
pub const MAX_CPUS: u32 = 4096;
/// Bounds on memory: at least 64 MiB, at most 64 TiB.
pub const MIN_MEMORY: u64 = 64 << 20;
pub const MAX_MEMORY: u64 = 64 << 40;

/// A machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// CPUs (`--cpus`): software queues, task placement, CPU time.
    pub cpus: u32,
    /// Memory in bytes (`--mem`): fio's `$mb_memory`; the page cache later.
    pub memory: u64,
    /// CPU speed relative to the ~2.4 GHz core the built-in CPU costs are
    /// for (`--cpu-speed`): every CPU cost is divided by it.
    pub cpu_speed: f64,
}

impl Default for Machine {
    fn default() -> Self {
        Machine::DEFAULT
    }
}

impl Machine {
    /// 2 CPUs (the machines this project's lab runs on), 16 GiB.
    pub const DEFAULT: Machine = Machine {
        cpus: 2,
        memory: 16 << 30,
        cpu_speed: 1.0,
    };

    /// Check the description; the message names the field and its range.
    pub fn validate(&self) -> Result<(), String> {
        if self.cpus == 0 || self.cpus > MAX_CPUS {
            return Err(format!("cpus: expected 1..{MAX_CPUS}, got {}", self.cpus));
        }
        if !(MIN_MEMORY..=MAX_MEMORY).contains(&self.memory) {
            return Err(format!(
                "memory: expected {} MiB to {} TiB, got {} bytes",
                MIN_MEMORY >> 20,
                MAX_MEMORY >> 40,
                self.memory
            ));
        }
        if !(self.cpu_speed.is_finite() && (0.01..=100.0).contains(&self.cpu_speed)) {
            return Err(format!(
                "cpu_speed: expected 0.01..100 (1 = the ~2.4 GHz core of the built-in costs), got {}",
                self.cpu_speed
            ));
        }
        Ok(())
    }

    /// fio's `$mb_memory`: memory in MiB.
    pub fn mb_memory(&self) -> u64 {
        self.memory >> 20
    }

    /// A CPU cost of the reference core on this machine's CPUs, in whole ns.
    pub fn scale_ns(&self, ns: u64) -> u64 {
        if self.cpu_speed == 1.0 {
            ns
        } else {
            (ns as f64 / self.cpu_speed).round() as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_valid_and_ranges_are_checked() {
        assert!(Machine::DEFAULT.validate().is_ok());
        let bad = |m: Machine, field: &str| {
            let e = m.validate().unwrap_err();
            assert!(e.starts_with(field), "{e}");
        };
        bad(
            Machine {
                cpus: 0,
                ..Machine::DEFAULT
            },
            "cpus",
        );
        bad(
            Machine {
                cpus: MAX_CPUS + 1,
                ..Machine::DEFAULT
            },
            "cpus",
        );
        bad(
            Machine {
                memory: 1 << 20,
                ..Machine::DEFAULT
            },
            "memory",
        );
        bad(
            Machine {
                cpu_speed: 0.0,
                ..Machine::DEFAULT
            },
            "cpu_speed",
        );
        bad(
            Machine {
                cpu_speed: f64::NAN,
                ..Machine::DEFAULT
            },
            "cpu_speed",
        );
    }

    #[test]
    fn cpu_speed_scales_costs() {
        let m = Machine {
            cpu_speed: 2.0,
            ..Machine::DEFAULT
        };
        assert_eq!(m.scale_ns(700), 350);
        assert_eq!(Machine::DEFAULT.scale_ns(700), 700);
        assert_eq!(Machine::DEFAULT.mb_memory(), 16384);
    }
}
