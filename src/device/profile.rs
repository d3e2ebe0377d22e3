//! Device profiles: documented TOML files that users can write and pass with
//! `--device FILE.toml`. Each model reads its own table (`[ram]`, `[nvme]`).

use crate::block::driver::QueueLimits;
use serde::Deserialize;
use std::path::Path;

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
    /// The `[loop]` table (model `loop`).
    #[serde(rename = "loop")]
    pub loop_dev: Option<super::loopdev::LoopParams>,
    /// CPU cost of the I/O path on the host this device is attached to
    /// (block layer, driver, completion, scheduler hooks); defaults if absent.
    pub cpu: Option<crate::block::cpu::CpuCosts>,
    /// What `calibrate` measured for its reference probe on the real
    /// device; `validate` runs that probe again to show how far the host
    /// has drifted since. The simulation does not read it.
    pub calibrated: Option<CalibratedReference>,
    /// The profile text as read (for `devices --show`).
    #[serde(skip)]
    pub text: String,
}

/// The `[calibrated]` table of a profile `calibrate` wrote.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CalibratedReference {
    /// The probe's name (one of calibrate's probes, e.g. `randread-qd1`).
    pub reference_probe: String,
    /// Its IOPS when the device was calibrated.
    pub reference_iops: f64,
    /// How long it ran, ms.
    pub probe_time_ms: u64,
}

impl CalibratedReference {
    fn check(&self) -> Result<(), BadValue> {
        if !(self.reference_iops.is_finite() && self.reference_iops > 0.0) {
            return Err(BadValue::new(
                "calibrated.reference_iops",
                format!("{} is not a positive IOPS count", self.reference_iops),
            ));
        }
        // A probe of one millisecond to ten minutes.
        in_range(
            "calibrated.probe_time_ms",
            self.probe_time_ms,
            1,
            600_000,
            "ms",
        )
    }
}

const BUILTIN: &[(&str, &str)] = &[
    ("ram", include_str!("../../profiles/ram.toml")),
    ("nvme", include_str!("../../profiles/nvme.toml")),
    ("hdd", include_str!("../../profiles/hdd.toml")),
    ("sata-ssd", include_str!("../../profiles/sata-ssd.toml")),
    (
        "intel-s3520",
        include_str!("../../profiles/intel-s3520.toml"),
    ),
    (
        "micron-9100",
        include_str!("../../profiles/micron-9100.toml"),
    ),
    (
        "desktop-ssd",
        include_str!("../../profiles/desktop-ssd.toml"),
    ),
    ("hgst-he10", include_str!("../../profiles/hgst-he10.toml")),
    ("loop", include_str!("../../profiles/loop.toml")),
];

/// Names reserved for models that other issues add.
pub const RESERVED: &[&str] = &[];

fn parse(text: &str, origin: &str) -> Result<Profile, String> {
    // The toml crate's errors carry the line and column themselves.
    let mut p: Profile = toml::from_str(text).map_err(|e| format!("{origin}: {e}"))?;
    p.text = text.to_string();
    validate(&p).map_err(|e| match key_line(text, &e.key) {
        Some(line) => format!("{origin}:{line}: {e}"),
        None => format!("{origin}: {e}"),
    })?;
    Ok(p)
}

// ---- valid ranges -----------------------------------------------------------
//
// Every profile value has a documented range, checked when a profile is
// loaded: physical (what a real device of that kind can have), and wide
// enough for every built-in profile and every profile `calibrate` writes.
// The ranges shared by several models:

/// Per-command device times (ns): 0 to 30 s. The kernel's default request
/// timeout is 30 s (reference §1.13, `io_timeout`); a device that needs
/// longer for one command has every request timed out and reset.
pub const MAX_COMMAND_NS: u64 = 30_000_000_000;
/// Transfer rates (bytes/s): from 1 (`calibrate` writes at least 1 for a
/// probe that moved no data) to 10^12, above any device link or memory bus
/// (PCIe 6.0 x16 carries about 1.2 x 10^11 bytes/s).
pub const MAX_BANDWIDTH: u64 = 1_000_000_000_000;
/// A drive's link and media rates (`hdd`, `sata_ssd`; `calibrate` writes
/// neither): from 1 MB/s, below ATA PIO mode 0 (3.3 MB/s) and any NAND
/// die's program rate. A slower one is no device: one 1 MiB request at
/// 7 bytes/s takes 1.7 simulated days, spent re-running the queue every
/// 3 ms (found by the run fuzzer, seed 8080, case 2852).
pub const MIN_DRIVE_BANDWIDTH: u64 = 1_000_000;

/// A profile value outside its range, or at odds with another value.
#[derive(Clone, Debug, PartialEq)]
pub struct BadValue {
    /// The key as the TOML file writes it: `table.key`, or
    /// `table[NAME].key` for an entry of an array of tables with that `name`.
    pub key: String,
    pub message: String,
}

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl BadValue {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> BadValue {
        BadValue {
            key: key.into(),
            message: message.into(),
        }
    }
}

/// `key`'s value `v` must lie in `lo..=hi`, in `unit`.
pub fn in_range<T: PartialOrd + std::fmt::Display>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
    unit: &str,
) -> Result<(), BadValue> {
    if v >= lo && v <= hi {
        return Ok(());
    }
    Err(BadValue::new(
        key,
        format!("{v} is out of range: expected {lo}..={hi} {unit}"),
    ))
}

/// The 1-based line of `key` (as `BadValue::key` names it) in TOML `text`,
/// found by scanning tables and keys (the toml crate gives spans only for
/// its own parse errors).
fn key_line(text: &str, key: &str) -> Option<usize> {
    let (table, leaf) = match key.rsplit_once('.') {
        Some((t, l)) => (t, l),
        None => ("", key),
    };
    let (table, entry) = match table.split_once('[') {
        Some((t, rest)) => (t, rest.strip_suffix(']')),
        None => (table, None),
    };
    let unquote = |s: &str| s.trim().trim_matches('"').trim_matches('\'').to_string();
    // Each table block: its name, its `name = ...` value, where `leaf` is.
    let mut cur = (String::new(), None::<String>, None::<usize>);
    let mut blocks = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if let Some(h) = line.strip_prefix('[') {
            let name = h.trim_start_matches('[').trim_end_matches(']').trim();
            blocks.push(std::mem::replace(&mut cur, (name.to_string(), None, None)));
        } else if let Some((k, v)) = line.split_once('=') {
            let k = unquote(k);
            if k == "name" {
                cur.1 = Some(unquote(v));
            }
            if k == leaf && cur.2.is_none() {
                cur.2 = Some(i + 1);
            }
        }
    }
    blocks.push(cur);
    blocks
        .into_iter()
        .find(|(t, name, at)| {
            t == table && at.is_some() && entry.is_none_or(|e| name.as_deref() == Some(e))
        })
        .and_then(|b| b.2)
}

fn validate(p: &Profile) -> Result<(), BadValue> {
    if p.name.trim().is_empty() {
        return Err(BadValue::new("name", "expected a non-empty name"));
    }
    let q = &p.queue;
    // At least 1 MiB; at most what a file offset can address (loff_t:
    // MAX_LFS_FILESIZE = LLONG_MAX, include/linux/fs.h).
    in_range(
        "queue.capacity",
        q.capacity,
        1 << 20,
        i64::MAX as u64,
        "bytes",
    )?;
    // 512 to 64 KiB, a power of two (blk_validate_block_size; large block
    // sizes up to 64 KiB since v6.11).
    if !q.logical_block_size.is_power_of_two() {
        return Err(BadValue::new(
            "queue.logical_block_size",
            format!("{} is not a power of two", q.logical_block_size),
        ));
    }
    in_range(
        "queue.logical_block_size",
        q.logical_block_size,
        512,
        65536,
        "bytes",
    )?;
    // blk-mq maps min(this, CPUs) queues; --cpus is at most 4096 too.
    in_range("queue.nr_hw_queues", q.nr_hw_queues, 1, 4096, "queues")?;
    // BLK_MQ_MAX_DEPTH = 10240 (blk-mq.h).
    in_range("queue.queue_depth", q.queue_depth, 1, 10240, "tags")?;
    // At least a page; at most what the kernel's `unsigned int
    // max_hw_sectors` (in 512-byte sectors) can hold.
    in_range(
        "queue.max_hw_sectors_kb",
        q.max_hw_sectors_kb,
        4,
        u32::MAX / 2,
        "KiB",
    )?;
    // `unsigned short max_segments` in struct queue_limits.
    in_range("queue.max_segments", q.max_segments, 1, 65535, "segments")?;
    if let Some(c) = &p.cpu {
        c.check().map_err(|(k, m)| BadValue::new(k, m))?;
    }
    if let Some(c) = &p.calibrated {
        c.check()?;
    }
    let has = |b: bool, n: &str| -> Result<(), BadValue> {
        if b {
            Ok(())
        } else {
            Err(BadValue::new(
                "model",
                format!("model '{}' needs a [{n}] table", p.model),
            ))
        }
    };
    match p.model.as_str() {
        "ram" => {
            has(p.ram.is_some(), "ram")?;
            super::ram::check(p.ram.as_ref().expect("checked"))
        }
        "nvme" => {
            has(p.nvme.is_some(), "nvme")?;
            super::nvme::check(p.nvme.as_ref().expect("checked"))
        }
        "hdd" => {
            has(p.hdd.is_some(), "hdd")?;
            super::hdd::check(p.hdd.as_ref().expect("checked"))
        }
        "sata-ssd" => {
            has(p.sata_ssd.is_some(), "sata_ssd")?;
            super::sata_ssd::check(p.sata_ssd.as_ref().expect("checked"))
        }
        "loop" => {
            has(p.loop_dev.is_some(), "loop")?;
            super::loopdev::check(p.loop_dev.as_ref().expect("checked"))
        }
        other => Err(BadValue::new(
            "model",
            format!("unknown model '{other}' (known: ram, nvme, hdd, sata-ssd, loop)"),
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

/// A profile from its TOML text; `origin` names it in errors (a file name).
pub fn from_text(text: &str, origin: &str) -> Result<Profile, String> {
    parse(text, origin)
}

/// The built-in profile `name`.
pub fn builtin(name: &str) -> Result<Profile, String> {
    match BUILTIN.iter().find(|(n, _)| *n == name) {
        Some((_, text)) => parse(text, &format!("built-in profile {name}")),
        None => Err(format!(
            "unknown built-in device '{name}' (built-in devices: {})",
            BUILTIN
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
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

    /// A built-in profile's text with `key = ...` under `[table]` replaced.
    fn edited(name: &str, table: &str, key: &str, value: &str) -> String {
        let text = load_profile(name).unwrap().text;
        let mut out = String::new();
        let mut cur = String::new();
        let mut done = false;
        for line in text.lines() {
            let t = line.trim();
            if t.starts_with('[') {
                cur = t.trim_matches(|c| c == '[' || c == ']').to_string();
            }
            if !done && cur == table && t.split('=').next().map(str::trim) == Some(key) {
                out.push_str(&format!("{key} = {value}\n"));
                done = true;
            } else {
                out.push_str(line);
                out.push('\n');
            }
        }
        assert!(done, "{table}.{key} not in {name}");
        out
    }

    #[test]
    fn out_of_range_values_name_file_line_key_and_range() {
        let text = edited("sata-ssd", "sata_ssd", "block_bytes", "4");
        let line = text
            .lines()
            .position(|l| l.starts_with("block_bytes = 4"))
            .unwrap()
            + 1;
        let e = parse(&text, "x.toml").unwrap_err();
        assert!(
            e.starts_with(&format!("x.toml:{line}: sata_ssd.block_bytes: 4 ")),
            "{e}"
        );
        assert!(e.contains("65536..=1073741824 bytes"), "{e}");
        for (model, table, key, value) in [
            ("hdd", "hdd", "zones", "100000000"),
            ("hdd", "hdd", "write_cache_entries", "4294967295"),
            ("hdd", "hdd", "read_ahead_segments", "4294967295"),
            ("hdd", "hdd", "rpm", "1"),
            ("nvme", "nvme", "units", "4294967295"),
            ("nvme", "nvme", "jitter", "2.0"),
            ("sata-ssd", "sata_ssd", "units", "0"),
            ("sata-ssd", "sata_ssd", "page_bytes", "1"),
            ("sata-ssd", "sata_ssd", "over_provisioning", "1e-9"),
            ("ram", "ram", "bandwidth", "0"),
            // A drive's link or media far below any device's (days per MiB).
            ("sata-ssd", "sata_ssd", "link_bandwidth", "7"),
            ("sata-ssd", "sata_ssd", "program_bandwidth", "999999"),
            ("hdd", "hdd", "link_bandwidth", "7"),
            ("ram", "queue", "max_segments", "0"),
            ("nvme", "queue", "max_hw_sectors_kb", "4294967295"),
        ] {
            let e = parse(&edited(model, table, key, value), "y.toml").unwrap_err();
            assert!(e.starts_with("y.toml:"), "{e}");
            assert!(e.contains(&format!("{table}.{key}: ")), "{e}");
            assert!(e.contains("expected"), "{e}");
        }
    }

    #[test]
    fn cpu_table_is_range_checked_at_load() {
        let mut text = load_profile("nvme").unwrap().text;
        text.push_str("\n[cpu]\nsubmit_ns = 400\n\n[[cpu.sched]]\nname = \"noop\"\ninsert_ns = 1\ndispatch_ns = 1\ncomplete_ns = 1\nmerge_ns = 1\nlocked = true\n\n[[cpu.sched]]\nname = \"mq-deadline\"\ninsert_ns = 1\ndispatch_ns = 9000000000000000000\ncomplete_ns = 1\nmerge_ns = 1\nlocked = true\n");
        let line = text
            .lines()
            .position(|l| l.starts_with("dispatch_ns = 9000"))
            .unwrap()
            + 1;
        let e = parse(&text, "c.toml").unwrap_err();
        assert!(
            e.starts_with(&format!(
                "c.toml:{line}: cpu.sched[mq-deadline].dispatch_ns: "
            )),
            "{e}"
        );
        assert!(e.contains("0..=1000000 ns"), "{e}");
    }

    #[test]
    fn key_lines() {
        let t = "name = 'x'\n[queue]\ncapacity = 1\n[[cpu.sched]]\nname = \"a\"\nmerge_ns = 1\n[[cpu.sched]]\nmerge_ns = 2\nname = \"b\"\n";
        assert_eq!(key_line(t, "name"), Some(1));
        assert_eq!(key_line(t, "queue.capacity"), Some(3));
        assert_eq!(key_line(t, "cpu.sched[a].merge_ns"), Some(6));
        assert_eq!(key_line(t, "cpu.sched[b].merge_ns"), Some(8));
        assert_eq!(key_line(t, "queue.nr_hw_queues"), None);
    }

    #[test]
    fn bad_depth_is_rejected() {
        let text = "name='x'\nmodel='ram'\ndescription='d'\n[queue]\ncapacity=1073741824\nnr_hw_queues=1\nqueue_depth=0\nrotational=false\nwrite_cache=false\nmax_hw_sectors_kb=128\n[ram]\nlatency_ns=1000\nbandwidth=1000000000\n";
        let e = parse(text, "x.toml").unwrap_err();
        assert!(e.contains("queue_depth"), "{e}");
    }
}
