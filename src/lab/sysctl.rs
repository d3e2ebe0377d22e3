//! The `vm.*` writeback sysctls the lab writes for `--set vm.NAME=VALUE`:
//! only those the simulator models ([`crate::cache::vm::SYSCTLS`], one
//! list for both sides), checked against the same ranges, journaled before
//! the first write and restored afterwards.
//!
//! These are machine-wide: while the lab runs, every process's dirty pages
//! follow them. Restoring must undo the kernel's pairing: writing
//! `dirty_bytes` zeroes `dirty_ratio` and the other way round
//! (mm/page-writeback.c `dirty_bytes_handler`), and writing 0 to
//! `dirty_bytes` is refused, so of each pair the half that was in force
//! before is written back last (it zeroes the other again).

use crate::cache::vm::{VmSettings, SYSCTLS};
use std::fs;
use std::path::PathBuf;

/// Where the kernel shows `vm.NAME`.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from("/proc/sys/vm").join(name)
}

/// `(name, value)` settings.
type Pairs = Vec<(String, String)>;

/// Split `--set` into `vm.*` sysctls (checked: name and range) and the rest.
pub fn split(sets: &[(String, String)]) -> Result<(Pairs, Pairs), String> {
    let mut vm = Vec::new();
    let mut rest = Vec::new();
    let mut check = VmSettings::default();
    for (k, v) in sets {
        match k.strip_prefix("vm.") {
            Some(name) => {
                check.set(name, v).map_err(|e| format!("--set {k}: {e}"))?;
                vm.push((name.to_string(), v.trim().to_string()));
            }
            None => rest.push((k.clone(), v.clone())),
        }
    }
    Ok((vm, rest))
}

/// Every modelled sysctl's current value on this machine.
pub fn snapshot() -> Result<Vec<(String, String)>, String> {
    SYSCTLS
        .iter()
        .map(|s| {
            let p = path(s.name);
            fs::read_to_string(&p)
                .map(|v| (s.name.to_string(), v.trim().to_string()))
                .map_err(|e| format!("{}: {e}", p.display()))
        })
        .collect()
}

/// The writes that put `saved` back: every value, and of each ratio/bytes
/// pair the one in force (non-zero) last.
pub fn restore_order(saved: &[(String, String)]) -> Vec<(String, String)> {
    let in_force_pair_half = |name: &str, value: &str| {
        SYSCTLS.iter().any(|s| s.name == name && s.clears.is_some()) && value != "0"
    };
    let (last, first): (Vec<_>, Vec<_>) = saved
        .iter()
        .filter(|(n, v)| {
            // The zero half of a pair is zeroed by writing the other one;
            // writing it would be refused (dirty_bytes) or wrong.
            let is_pair = SYSCTLS.iter().any(|s| s.name == n && s.clears.is_some());
            !(is_pair && v == "0")
        })
        .cloned()
        .partition(|(n, v)| in_force_pair_half(n, v));
    first.into_iter().chain(last).collect()
}

/// Write `(name, value)` pairs in order.
pub fn write_all(values: &[(String, String)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (n, v) in values {
        let p = path(n);
        if let Err(e) = fs::write(&p, v) {
            problems.push(format!("writing {v} to {}: {e}", p.display()));
        }
    }
    problems
}

/// Put `saved` back and check it; what differs afterwards is returned.
pub fn restore(saved: &[(String, String)]) -> Vec<String> {
    let mut problems = write_all(&restore_order(saved));
    if let Ok(now) = snapshot() {
        for (n, v) in saved {
            if let Some((_, got)) = now.iter().find(|(m, _)| m == n) {
                if got != v {
                    problems.push(format!("vm.{n} is {got}, was {v} before the lab"));
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn split_checks_names_and_ranges_with_the_simulators_table() {
        let (vm, rest) = split(&pairs(&[
            ("vm.dirty_ratio", "80"),
            ("read_ahead_kb", "512"),
        ]))
        .unwrap();
        assert_eq!(vm, pairs(&[("dirty_ratio", "80")]));
        assert_eq!(rest, pairs(&[("read_ahead_kb", "512")]));
        let e = split(&pairs(&[("vm.swappiness", "1")])).unwrap_err();
        assert!(
            e.contains("--set vm.swappiness") && e.contains("unknown"),
            "{e}"
        );
        let e = split(&pairs(&[("vm.dirty_ratio", "101")])).unwrap_err();
        assert!(e.contains("0..=100"), "{e}");
    }

    #[test]
    fn restore_writes_the_half_in_force_last_and_never_a_zero_bytes() {
        let saved = pairs(&[
            ("dirty_ratio", "20"),
            ("dirty_bytes", "0"),
            ("dirty_background_ratio", "0"),
            ("dirty_background_bytes", "100000000"),
            ("dirty_expire_centisecs", "3000"),
            ("dirty_writeback_centisecs", "500"),
        ]);
        let order = restore_order(&saved);
        let names: Vec<&str> = order.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "dirty_expire_centisecs",
                "dirty_writeback_centisecs",
                "dirty_ratio",
                "dirty_background_bytes"
            ]
        );
    }
}
