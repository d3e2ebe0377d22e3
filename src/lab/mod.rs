//! The real-device lab: the same fio job files on a real block device with
//! the kernel's own schedulers, driven through fio, landing in the same
//! results type ([`crate::report::RunReport`]) as the simulator.
//!
//! - [`device`]: which block device, its sysfs `queue/` directory, the
//!   scheduler and knob state and its restoration, and the refusal of devices
//!   that are in use (mounted, partitions mounted, holders, swap).
//! - [`cgroup`]: blkio (v1) or io (v2) groups for jobs that ask for them, with
//!   the BFQ weight written by us (fio's own `cgroup_weight=` fails under BFQ).
//! - [`jobfile`]: the job file checked against an allow-list and rewritten
//!   for fio, so it can reach only the device (traces checked, logs kept in
//!   the lab's private directory, cgroups, runtime cap).
//! - [`fio`]: finding and running fio, and reading its JSON into a `RunReport`.
//! - [`record`]: a session kept with `--save-json` and read back by
//!   `validate --from-lab`.
//! - [`runner`]: schedulers × rounds, interleaved, with everything restored
//!   afterwards (also on error and on Ctrl-C, see [`signal`]).
//! - [`session`]: what lab, validate and calibrate share: recovery of
//!   killed runs, the device held exclusively, the restore [`journal`]
//!   written before anything changes, restoration in dependency order.
//! - [`loopdev`]: file-backed loop devices for the lab (`elevator loop`).
//! - [`fsmount`]: `--mount ext4[:OPTIONS]`: a fresh ext4 per run, mounted
//!   with the simulator's options, unmounted before anything else is undone.
//! - [`sysctl`]: `--set vm.NAME=VALUE`, the writeback sysctls the simulator
//!   models, journaled and restored.
//! - [`calibrate`]: probes fitted into a device profile for the simulator.
//! - [`validate`]: lab against simulation, per scheduler and group.
//! - [`cli`]: the `lab`, `loop`, `calibrate`, `validate` and `compare` commands.
//!
//! What these machines can measure, and why the lab works this way, is in
//! `shared/reference/real-kernel-lab.md`.

pub mod calibrate;
pub mod cgroup;
pub mod device;
pub mod fio;
pub mod fsmount;
pub mod jobfile;
pub mod journal;
pub mod loopdev;
pub mod record;
pub mod runner;
pub mod say;
pub mod session;
pub mod signal;
pub mod sysctl;
pub mod validate;

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a lab command failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabErrorKind {
    /// The input is wrong: a job file or option, or a device path that does
    /// not exist or is not a block device (exit 2).
    Input,
    /// Anything else: no root, no fio, a device in use, fio failed (exit 1).
    Failed,
}

/// A failed lab command. `unrestored` lists what could not be put back (the
/// restore journal keeps it for `elevator lab --recover`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabError {
    pub kind: LabErrorKind,
    pub message: String,
    pub unrestored: Vec<String>,
}

impl LabError {
    pub fn input(message: impl Into<String>) -> LabError {
        LabError {
            kind: LabErrorKind::Input,
            message: message.into(),
            unrestored: Vec::new(),
        }
    }

    pub fn failed(message: impl Into<String>) -> LabError {
        LabError {
            kind: LabErrorKind::Failed,
            message: message.into(),
            unrestored: Vec::new(),
        }
    }
}

impl From<String> for LabError {
    fn from(message: String) -> LabError {
        LabError::failed(message)
    }
}

impl From<&str> for LabError {
    fn from(message: &str) -> LabError {
        LabError::failed(message)
    }
}

impl fmt::Display for LabError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if !self.unrestored.is_empty() {
            write!(
                f,
                " (and could not restore: {}; the journal keeps it for `elevator lab --recover`)",
                self.unrestored.join("; ")
            )?;
        }
        Ok(())
    }
}

/// A private scratch directory under the system temp dir, removed on drop.
#[derive(Debug)]
pub struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    pub fn new(prefix: &str) -> Result<TempDir, String> {
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        for attempt in 0..100u32 {
            let p = base.join(format!(
                "{prefix}-{}-{:08x}",
                std::process::id(),
                nanos.wrapping_add(attempt.wrapping_mul(0x9E37_79B9))
            ));
            match std::fs::create_dir(&p) {
                Ok(()) => {
                    return Ok(TempDir {
                        path: p,
                        keep: false,
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(format!("cannot create {}: {e}", p.display())),
            }
        }
        Err(format!(
            "cannot create a temporary directory in {}",
            base.display()
        ))
    }

    /// Create the directory at `path` (chosen with [`temp_path`]); fails if
    /// it exists.
    pub fn create_at(path: PathBuf) -> Result<TempDir, String> {
        std::fs::create_dir(&path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(TempDir { path, keep: false })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leave the directory in place on drop.
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// A fresh path for a scratch directory under the system temp dir (not
/// created: the lab journals it first, see [`journal`]).
pub fn temp_path(prefix: &str) -> PathBuf {
    let base = std::env::temp_dir();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    for attempt in 0..1000u32 {
        let p = base.join(format!(
            "{prefix}-{}-{:08x}",
            std::process::id(),
            nanos.wrapping_add(attempt.wrapping_mul(0x9E37_79B9))
        ));
        if !p.exists() {
            return p;
        }
    }
    base.join(format!("{prefix}-{}-{nanos:08x}-last", std::process::id()))
}

/// Median of a slice (NaN-free input); 0 for an empty slice.
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    signal::euid() == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0]), 3.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn temp_dirs_are_unique_and_removed() {
        let a = TempDir::new("elevator-test").unwrap();
        let b = TempDir::new("elevator-test").unwrap();
        assert_ne!(a.path(), b.path());
        let p = a.path().to_path_buf();
        std::fs::write(p.join("x"), "y").unwrap();
        drop(a);
        assert!(!p.exists());
    }
}
