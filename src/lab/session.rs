//! What every command that writes to a device shares (`lab`, `validate`,
//! `calibrate`), in this order:
//!
//! 1. root and fio;
//! 2. recovery of earlier runs that were killed ([`super::journal`]), so the
//!    baseline is the device's real state and not a leftover;
//! 3. the device must not be in use, and is opened exclusively (`O_EXCL`)
//!    for the whole session: the kernel refuses that while it is mounted or
//!    claimed in any mount namespace, and nothing can mount or claim it
//!    while the session holds it (fio's ordinary opens still work);
//! 4. the journal, with the device's state, written before the first
//!    change; then the private working directory (journaled, then made).
//!
//! [`Session::finish`] restores everything in dependency order, verifies it,
//! removes the cgroups and the working directory, and deletes the journal
//! only when all of that worked; otherwise the journal stays for
//! `elevator lab --recover` and the problems are returned.

use super::cgroup::{self, Groups};
use super::device::{BlockDev, Queue, QueueGuard};
use super::fio::{self, FioRun};
use super::fsmount::{self, FsSpec};
use super::journal::{self, Journal};
use super::sysctl;
use super::{signal, LabError, TempDir};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A device held for the lab, with everything that must be undone.
pub struct Session {
    pub bd: BlockDev,
    pub fio: PathBuf,
    pub fio_version: String,
    /// What the recovery of earlier runs did (also printed on stderr).
    pub recovered: Vec<String>,
    journal: Option<Journal>,
    hold: Option<fs::File>,
    guard: Option<QueueGuard>,
    work: Option<TempDir>,
    groups: Option<Groups>,
    /// The `vm.*` sysctls before the session wrote any.
    sysctls_saved: Option<Vec<(String, String)>>,
    /// Where the run's file system is mounted (`--mount`).
    mounted: Option<PathBuf>,
}

/// Recover earlier runs, printing what was done; the problems are returned.
pub fn recover_earlier(verbose: bool) -> journal::Recovery {
    let r = journal::recover();
    for n in &r.notes {
        super::say::line(&format!("elevator: {n}"));
    }
    if verbose {
        for n in &r.running {
            super::say::line(&format!("elevator: note: {n}"));
        }
    }
    for p in &r.problems {
        super::say::line(&format!("elevator: warning: {p}"));
    }
    r
}

impl Session {
    /// Take `bd` for a session of `command`; `extra_knobs` are queue knobs
    /// the session will write besides the usual snapshot.
    pub fn start(
        command: &str,
        bd: BlockDev,
        force: bool,
        extra_knobs: &[String],
    ) -> Result<Session, LabError> {
        if !super::is_root() {
            return Err(LabError::failed(
                "the lab needs root: it writes sysfs queue files, cgroups and the device itself (run it with sudo)",
            ));
        }
        let (fio_path, fio_version) = fio::require()?;
        signal::install();
        let rec = recover_earlier(false);
        let dev = bd.path.display().to_string();
        if rec.devices_not_restored.contains(&dev) {
            return Err(LabError::failed(format!(
                "an interrupted earlier run on {dev} could not be undone (see the warnings above); its settings are not a baseline. Fix them, then run `elevator lab --recover`"
            )));
        }
        let why = bd.in_use();
        if !why.is_empty() {
            let msg = format!(
                "refusing {dev}: {}. The lab writes to the device and would destroy that data; unmount or release it first, or pass --force",
                why.join("; ")
            );
            if !force {
                return Err(LabError::failed(msg));
            }
            super::say::line(&format!("elevator: warning: --force: {msg}"));
        }
        let hold = match bd.claim() {
            Ok(f) => Some(f),
            Err(e) => {
                let busy = e.raw_os_error() == Some(16);
                let mut msg = if busy {
                    format!(
                        "refusing {dev}: the kernel reports it busy (an exclusive open fails with EBUSY): it is mounted or claimed by someone, possibly in another mount namespace"
                    )
                } else {
                    format!("refusing {dev}: cannot open it exclusively: {e}")
                };
                let elsewhere = bd.mounts_elsewhere();
                if !elsewhere.is_empty() {
                    msg.push_str(&format!(" ({})", elsewhere.join("; ")));
                }
                msg.push_str(". The lab writes to the device and would destroy that data; release it first, or pass --force");
                if !force {
                    return Err(LabError::failed(msg));
                }
                super::say::line(&format!("elevator: warning: --force: {msg}"));
                None
            }
        };
        let journal = Journal::begin(command)?;
        let guard = QueueGuard::new(bd.queue(), extra_knobs);
        journal.record_device(&bd, &guard.snapshot)?;
        let path = super::temp_path(&format!("elevator-{command}"));
        journal.add_temp_dir(&path)?;
        let work = TempDir::create_at(path)?;
        journal.mark_temp_dir(work.path())?;
        Ok(Session {
            bd,
            fio: fio_path,
            fio_version,
            recovered: rec.notes,
            journal: Some(journal),
            hold,
            guard: Some(guard),
            work: Some(work),
            groups: None,
            sysctls_saved: None,
            mounted: None,
        })
    }

    pub fn queue(&self) -> Queue {
        self.bd.queue()
    }

    /// The private working directory fio runs in.
    pub fn work(&self) -> &Path {
        self.work
            .as_ref()
            .map(TempDir::path)
            .unwrap_or(Path::new("."))
    }

    pub fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// Make the jobs' cgroups (journaled first); returns the hierarchy note.
    pub fn create_groups(&mut self, wanted: &[(String, Option<u32>)]) -> Result<String, LabError> {
        let (h, note) = cgroup::detect()?;
        self.groups = Some(Groups::create(h, wanted, self.journal.as_ref())?);
        Ok(note)
    }

    pub fn groups(&self) -> Option<&Groups> {
        self.groups.as_ref()
    }

    /// Write `vm.*` sysctls (checked by [`sysctl::split`]), their values
    /// before journaled first; restored by [`Session::finish`].
    pub fn set_sysctls(&mut self, vm: &[(String, String)]) -> Result<(), String> {
        if vm.is_empty() {
            return Ok(());
        }
        if self.sysctls_saved.is_none() {
            let saved = sysctl::snapshot()?;
            if let Some(j) = &self.journal {
                j.record_sysctls(&saved)?;
            }
            self.sysctls_saved = Some(saved);
        }
        let problems = sysctl::write_all(vm);
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }

    /// Where `--mount` puts the run's file system.
    pub fn mount_point(&self) -> PathBuf {
        self.work().join("mnt")
    }

    /// A fresh ext4 on the device, mounted with `spec`'s options at `mnt`
    /// inside the working directory; returns the mount point. The
    /// exclusive hold is given up first (mkfs and the mount claim the
    /// device themselves; a mounted file system keeps others out).
    pub fn mount_fresh(&mut self, spec: &FsSpec) -> Result<PathBuf, String> {
        self.unmount()?;
        self.hold = None;
        let mnt = self.mount_point();
        std::fs::create_dir_all(&mnt).map_err(|e| format!("{}: {e}", mnt.display()))?;
        if let Some(j) = &self.journal {
            j.add_mount(&mnt)?;
        }
        fsmount::mkfs(&self.bd.path)?;
        self.mounted = Some(mnt.clone());
        fsmount::mount(&self.bd.path, &mnt, spec)?;
        Ok(mnt)
    }

    /// Unmount the run's file system, if one is mounted.
    pub fn unmount(&mut self) -> Result<(), String> {
        if let Some(m) = self.mounted.clone() {
            fsmount::unmount(&m)?;
            self.mounted = None;
            if let Some(j) = &self.journal {
                j.remove_mount(&m)?;
            }
        }
        Ok(())
    }

    /// Sleep, but return early with an error when a signal arrives.
    pub fn settle(&self, d: Duration) -> Result<(), String> {
        let end = Instant::now() + d;
        loop {
            if let Some(sig) = signal::interrupted() {
                return Err(format!("interrupted by signal {sig}"));
            }
            let now = Instant::now();
            if now >= end {
                return Ok(());
            }
            std::thread::sleep((end - now).min(Duration::from_millis(10)));
        }
    }

    /// Run fio on a job file in the working directory.
    pub fn run_fio(&self, job: &Path) -> Result<FioRun, String> {
        fio::run(&self.fio, job, self.work(), self.journal.as_ref())
    }

    /// [`Session::run_fio`], calling `tick` every 20 ms while fio runs.
    pub fn run_fio_ticking(&self, job: &Path, tick: &mut dyn FnMut()) -> Result<FioRun, String> {
        fio::run_ticking(&self.fio, job, self.work(), self.journal.as_ref(), tick)
    }

    /// Restore, clean up and close the journal; returns what could not be
    /// restored (the journal then stays).
    pub fn finish(mut self) -> Vec<String> {
        self.cleanup()
    }

    fn cleanup(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        // The file system first: fio is done, and the working directory
        // holds its mount point.
        let unmounted = match self.unmount() {
            Ok(()) => true,
            Err(e) => {
                problems.push(e);
                false
            }
        };
        if let Some(saved) = self.sysctls_saved.take() {
            problems.extend(sysctl::restore(&saved));
        }
        if let Some(mut g) = self.guard.take() {
            problems.extend(g.restore());
        }
        if let Some(mut g) = self.groups.take() {
            problems.extend(g.remove());
        }
        if !unmounted {
            if let Some(mut w) = self.work.take() {
                w.keep();
            }
        }
        if let Some(mut w) = self.work.take() {
            let p = w.path().to_path_buf();
            w.keep();
            if let Err(e) = fs::remove_dir_all(&p) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    problems.push(format!("removing {}: {e}", p.display()));
                }
            }
        }
        self.hold = None;
        if let Some(j) = self.journal.take() {
            if problems.is_empty() {
                j.close();
            } else {
                super::say::line(&format!(
                    "elevator: the restore journal {} keeps what is left; `elevator lab --recover` tries again",
                    j.path().display()
                ));
            }
        }
        problems
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.journal.is_some() {
            for p in self.cleanup() {
                super::say::line(&format!("elevator: warning: {p}"));
            }
        }
    }
}
