//! Device profiles: documented TOML files that users can write and pass with
//! `--device FILE.toml`. Each model reads its own table (`[ram]`, `[nvme]`).

use serde::Deserialize;
use std::path::Path;

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

/// A device profile file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Profile name (`--device NAME`).
    pub name: String,
    /// Which model: ram, nvme, hdd, sata-ssd.
    pub model: String,
    /// One line for `elevator devices`.
    pub description: String,
    pub queue: QueueLimits,
    pub ram: Option<super::ram::RamParams>,
    pub nvme: Option<super::nvme::NvmeParams>,
    pub hdd: Option<super::hdd::HddParams>,
    pub sata_ssd: Option<super::sata_ssd::SataSsdParams>,
    /// CPU cost of the I/O path on the host this device is attached to
    /// (block layer, driver, completion, scheduler hooks); defaults if absent.
    pub cpu: Option<crate::block::cpu::CpuCosts>,
    /// The profile text as read (for `devices --show`).
    #[serde(skip)]
    pub text: String,
}

const BUILTIN: &[(&str, &str)] = &[
    ("ram", include_str!("../../profiles/ram.toml")),
    ("nvme", include_str!("../../profiles/nvme.toml")),
    ("hdd", include_str!("../../profiles/hdd.toml")),
    ("sata-ssd", include_str!("../../profiles/sata-ssd.toml")),
];

/// Names reserved for models that other issues add.
pub const RESERVED: &[&str] = &[];

fn parse(text: &str, origin: &str) -> Result<Profile, String> {
    let mut p: Profile = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
    p.text = text.to_string();
    validate(&p).map_err(|e| format!("{origin}: {e}"))?;
    Ok(p)
}

fn validate(p: &Profile) -> Result<(), String> {
    let q = &p.queue;
    if q.capacity < 1 << 20 {
        return Err("queue.capacity: expected at least 1 MiB (bytes)".into());
    }
    if !q.logical_block_size.is_power_of_two() || !(512..=65536).contains(&q.logical_block_size) {
        return Err("queue.logical_block_size: expected a power of two from 512 to 65536".into());
    }
    if q.nr_hw_queues == 0 || q.nr_hw_queues > 4096 {
        return Err("queue.nr_hw_queues: expected 1..4096".into());
    }
    // BLK_MQ_MAX_DEPTH = 10240 (blk-mq.h)
    if q.queue_depth == 0 || q.queue_depth > 10240 {
        return Err("queue.queue_depth: expected 1..10240 (BLK_MQ_MAX_DEPTH)".into());
    }
    if q.max_hw_sectors_kb < 4 {
        return Err("queue.max_hw_sectors_kb: expected at least 4".into());
    }
    let has = |b: bool, n: &str| -> Result<(), String> {
        if b {
            Ok(())
        } else {
            Err(format!("model '{}' needs a [{n}] table", p.model))
        }
    };
    match p.model.as_str() {
        "ram" => has(p.ram.is_some(), "ram"),
        "nvme" => has(p.nvme.is_some(), "nvme"),
        "hdd" => {
            has(p.hdd.is_some(), "hdd")?;
            super::hdd::check(p.hdd.as_ref().expect("checked"))
        }
        "sata-ssd" => {
            has(p.sata_ssd.is_some(), "sata_ssd")?;
            super::sata_ssd::check(p.sata_ssd.as_ref().expect("checked"))
        }
        other => Err(format!(
            "model: unknown model '{other}' (known: ram, nvme, hdd, sata-ssd)"
        )),
    }
}

/// All built-in profiles, in listing order.
pub fn builtin_profiles() -> Vec<Profile> {
    BUILTIN
        .iter()
        .map(|(name, text)| {
            parse(text, &format!("built-in profile {name}")).expect("built-in profile parses")
        })
        .collect()
}

/// A built-in profile by name, or a TOML file by path.
pub fn load_profile(name_or_path: &str) -> Result<Profile, String> {
    if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return parse(text, &format!("built-in profile {name_or_path}"));
    }
    if RESERVED.contains(&name_or_path) {
        return Err(format!(
            "device '{name_or_path}' is reserved for a model that is not built yet; built-in devices: {}",
            BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ));
    }
    let path = Path::new(name_or_path);
    if path.extension().is_some_and(|e| e == "toml") || path.exists() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{name_or_path}: cannot read device profile: {e}"))?;
        return parse(&text, name_or_path);
    }
    Err(format!(
        "unknown device '{name_or_path}': not a built-in ({}) and no such profile file",
        BUILTIN
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_parse() {
        let all = builtin_profiles();
        assert!(all.iter().any(|p| p.name == "nvme"));
        assert!(all.iter().any(|p| p.name == "ram"));
    }

    #[test]
    fn unknown_key_names_line() {
        let text = "name='x'\nmodel='ram'\ndescription='d'\n[queue]\ncapacity=1073741824\nnr_hw_queues=1\nqueue_depth=32\nrotational=false\nwrite_cache=false\nmax_hw_sectors_kb=128\nbogus=1\n[ram]\nlatency_ns=1000\nbandwidth=1000000000\n";
        let e = parse(text, "x.toml").unwrap_err();
        assert!(e.contains("x.toml"), "{e}");
        assert!(e.contains("bogus"), "{e}");
        assert!(e.contains("line 11") || e.contains("11"), "{e}");
    }

    #[test]
    fn hdd_and_sata_ssd_are_built_in() {
        for name in ["hdd", "sata-ssd"] {
            let p = load_profile(name).unwrap();
            assert_eq!(p.model, name);
            assert!(crate::device::build(&p, 1).is_ok(), "{name} builds");
        }
    }

    #[test]
    fn bad_depth_is_rejected() {
        let text = "name='x'\nmodel='ram'\ndescription='d'\n[queue]\ncapacity=1073741824\nnr_hw_queues=1\nqueue_depth=0\nrotational=false\nwrite_cache=false\nmax_hw_sectors_kb=128\n[ram]\nlatency_ns=1000\nbandwidth=1000000000\n";
        let e = parse(text, "x.toml").unwrap_err();
        assert!(e.contains("queue_depth"), "{e}");
    }
}
