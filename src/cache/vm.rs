//! The `vm.*` sysctls of dirty-page writeback, each declared once as data:
//! name, unit, range and default (kernel/sysctl.c and mm/page-writeback.c
//! `vm_page_writeback_sysctls`, v6.1; defaults from
//! Documentation/admin-guide/sysctl/vm.rst). Set with `--set vm.NAME=VALUE`.
//!
//! Pitfall: each ratio/bytes pair is exclusive in the kernel — writing
//! `dirty_bytes` zeroes `dirty_ratio` and the other way round
//! (`dirty_bytes_handler`, `dirty_ratio_handler`). Settings apply in order,
//! so the last one of a pair wins, as a sequence of sysctl writes would.

/// One sysctl's declaration.
#[derive(Clone, Copy, Debug)]
pub struct Sysctl {
    pub name: &'static str,
    pub unit: &'static str,
    pub min: u64,
    pub max: u64,
    pub default: u64,
    /// The other half of a ratio/bytes pair (zeroed when this one is set).
    pub clears: Option<&'static str>,
}

/// The table. Ranges as the kernel's sysctl table gives them: ratios 0..100
/// (`SYSCTL_ZERO`..`SYSCTL_ONE_HUNDRED`), `dirty_bytes` at least 2 pages
/// (`dirty_bytes_min` = 2 * PAGE_SIZE; 0 is refused, measured on 6.18),
/// `dirty_background_bytes` at least 1 (`SYSCTL_LONG_ONE`; 0 is allowed as
/// the write that hands control back to the ratio), centisecs 0..INT_MAX.
pub const SYSCTLS: &[Sysctl] = &[
    Sysctl {
        name: "dirty_ratio",
        unit: "percent",
        min: 0,
        max: 100,
        default: 20,
        clears: Some("dirty_bytes"),
    },
    Sysctl {
        name: "dirty_bytes",
        unit: "bytes",
        min: 2 * 4096,
        max: u64::MAX >> 1,
        default: 0,
        clears: Some("dirty_ratio"),
    },
    Sysctl {
        name: "dirty_background_ratio",
        unit: "percent",
        min: 0,
        max: 100,
        default: 10,
        clears: Some("dirty_background_bytes"),
    },
    Sysctl {
        name: "dirty_background_bytes",
        unit: "bytes",
        min: 0,
        max: u64::MAX >> 1,
        default: 0,
        clears: Some("dirty_background_ratio"),
    },
    Sysctl {
        name: "dirty_expire_centisecs",
        unit: "centiseconds",
        min: 0,
        max: i32::MAX as u64,
        default: 3000,
        clears: None,
    },
    Sysctl {
        name: "dirty_writeback_centisecs",
        unit: "centiseconds",
        min: 0,
        max: i32::MAX as u64,
        default: 500,
        clears: None,
    },
];

/// The values in effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VmSettings {
    values: [u64; 6],
}

impl Default for VmSettings {
    fn default() -> Self {
        let mut values = [0; 6];
        for (i, s) in SYSCTLS.iter().enumerate() {
            values[i] = s.default;
        }
        VmSettings { values }
    }
}

fn index(name: &str) -> Option<usize> {
    SYSCTLS.iter().position(|s| s.name == name)
}

impl VmSettings {
    /// The value of `name` (a name of [`SYSCTLS`]).
    pub fn get(&self, name: &str) -> u64 {
        self.values[index(name).expect("a vm sysctl of the table")]
    }

    /// Write `value` to `name` as `sysctl -w vm.NAME=VALUE` would.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let Some(i) = index(name) else {
            let names: Vec<&str> = SYSCTLS.iter().map(|s| s.name).collect();
            return Err(format!(
                "unknown vm sysctl '{name}' (known: {})",
                names.join(", ")
            ));
        };
        let s = &SYSCTLS[i];
        let v: u64 = value.trim().parse().map_err(|_| {
            format!(
                "'{value}' is not a whole number of {} for vm.{name}",
                s.unit
            )
        })?;
        if !(s.min..=s.max).contains(&v) {
            return Err(format!(
                "vm.{name}={v} is out of the kernel's range {}..={} {}",
                s.min, s.max, s.unit
            ));
        }
        self.values[i] = v;
        if let Some(other) = s.clears {
            // dirty_background_bytes=0 hands control back to the ratio
            // without touching it.
            if v != 0 {
                self.values[index(other).expect("pair")] = 0;
            }
        }
        Ok(())
    }

    pub fn dirty_ratio(&self) -> u64 {
        self.get("dirty_ratio")
    }
    pub fn dirty_bytes(&self) -> u64 {
        self.get("dirty_bytes")
    }
    pub fn dirty_background_ratio(&self) -> u64 {
        self.get("dirty_background_ratio")
    }
    pub fn dirty_background_bytes(&self) -> u64 {
        self.get("dirty_background_bytes")
    }
    /// `dirty_expire_centisecs` in ns.
    pub fn expire_ns(&self) -> u64 {
        self.get("dirty_expire_centisecs") * 10_000_000
    }
    /// `dirty_writeback_centisecs` in ns (0 = periodic writeback off).
    pub fn writeback_interval_ns(&self) -> u64 {
        self.get("dirty_writeback_centisecs") * 10_000_000
    }

    /// `(name, value)` of every sysctl, table order (for reports).
    pub fn all(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        SYSCTLS.iter().zip(self.values).map(|(s, v)| (s.name, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_kernels() {
        let v = VmSettings::default();
        assert_eq!(v.dirty_ratio(), 20);
        assert_eq!(v.dirty_background_ratio(), 10);
        assert_eq!(v.expire_ns(), 30_000_000_000);
        assert_eq!(v.writeback_interval_ns(), 5_000_000_000);
        assert_eq!(v.dirty_bytes(), 0);
    }

    #[test]
    fn pairs_exclude_each_other_and_ranges_are_checked() {
        let mut v = VmSettings::default();
        v.set("dirty_bytes", "419430400").unwrap();
        assert_eq!(v.dirty_ratio(), 0);
        v.set("dirty_ratio", "80").unwrap();
        assert_eq!((v.dirty_ratio(), v.dirty_bytes()), (80, 0));
        let e = v.set("dirty_ratio", "101").unwrap_err();
        assert!(e.contains("vm.dirty_ratio") && e.contains("0..=100"), "{e}");
        let e = v.set("dirty_bytes", "0").unwrap_err();
        assert!(e.contains("dirty_bytes"), "{e}");
        assert!(v.set("dirty_ratio", "-1").is_err());
        assert!(v.set("swappiness", "1").unwrap_err().contains("unknown"));
        v.set("dirty_background_bytes", "0").unwrap();
        assert_eq!(v.dirty_background_ratio(), 10, "0 leaves the ratio alone");
    }
}
