//! The restore journal: what a lab run changed, written durably before it
//! changes anything, so that a run killed outright (SIGKILL, a crash, a
//! lost machine session) is undone by the next one.
//!
//! **Where:** `/run/elevator-lab/` (override: `ELEVATOR_LAB_JOURNAL_DIR`).
//! `/run` is a tmpfs emptied at boot, which is exactly right: a reboot
//! resets every queue knob and cgroup by itself, and a journal that survived
//! it would describe devices that may since have become something else.
//!
//! **Files:** one journal per session, `ID.json` (ID = `PID-N`), rewritten
//! atomically (temporary file, fsync, rename, fsync of the directory) each
//! time something is added, and `ID.lock`, which the session holds locked
//! (`flock`) for as long as it runs. The kernel drops the lock when the
//! process dies, however it dies, so a journal whose lock can be taken
//! belongs to a run that is gone.
//!
//! **Format** (JSON, `"format": "elevator-lab-journal-1"`):
//! - `id`, `pid`, `command` (lab, calibrate, validate), `started` (Unix s);
//! - `device`: the device given, its disk, queue directory and `MAJ:MIN`,
//!   the loop device's backing file (to recognise the same device later),
//!   and what every file held: `scheduler`, `knobs` (queue attributes),
//!   `iosched` (the scheduler's tunables) — recorded before the first write;
//! - `cgroups`: group directories, each recorded before it is made;
//!   `cgroup_io_enabled`: a `cgroup.subtree_control` the run wrote `+io` to;
//! - `temp_dirs`: private working directories, each recorded before it is
//!   made, and marked inside with a `.elevator-lab` file holding the ID;
//! - `processes`: fio's process groups (the leader's pid and start time).
//!
//! **Recovery** ([`recover`]; every `lab`, `validate` and `calibrate` run
//! does it before taking its baseline, and `elevator lab --recover` does it
//! alone): for each journal whose lock can be taken, kill what is left of
//! its fio process groups (and fio processes still in its cgroups), restore
//! the device (only if it is still the same device) in dependency order and
//! verify it, remove its cgroups and its marked working directories, and
//! delete the journal. Whatever cannot be undone is reported and the journal
//! stays for the next attempt.

use super::device::{BlockDev, Queue, Snapshot};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The journal directory when `ELEVATOR_LAB_JOURNAL_DIR` is not set.
pub const DEFAULT_DIR: &str = "/run/elevator-lab";
/// Environment variable naming another journal directory (tests).
pub const DIR_ENV: &str = "ELEVATOR_LAB_JOURNAL_DIR";
/// The marker file in a working directory.
pub const MARKER: &str = ".elevator-lab";
const FORMAT: &str = "elevator-lab-journal-1";

/// The journal directory.
pub fn dir() -> PathBuf {
    std::env::var_os(DIR_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
}

/// The device and what its files held before the run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct DeviceRecord {
    pub path: String,
    pub disk: String,
    pub queue: PathBuf,
    /// `MAJ:MIN` of the disk (`/sys/block/DISK/dev`).
    pub disk_devno: String,
    /// A loop device's backing file.
    pub loop_backing: Option<String>,
    pub scheduler: Option<String>,
    pub knobs: Vec<(String, String)>,
    pub iosched: Vec<(String, String)>,
}

/// A process group leader: pid and start time (clock ticks since boot).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcRecord {
    pub pid: u32,
    pub start: u64,
}

/// Everything one session changed.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Record {
    pub format: String,
    pub id: String,
    pub pid: u32,
    pub command: String,
    pub started: u64,
    pub device: Option<DeviceRecord>,
    pub cgroups: Vec<PathBuf>,
    pub cgroup_io_enabled: Option<PathBuf>,
    pub temp_dirs: Vec<PathBuf>,
    pub processes: Vec<ProcRecord>,
    /// File systems mounted for `--mount` (mount points, journaled before
    /// mounting); unmounted before the working directories are removed.
    #[serde(default)]
    pub mounts: Vec<PathBuf>,
    /// `vm.*` sysctls (name, value before the lab), journaled before the
    /// first write.
    #[serde(default)]
    pub sysctls: Vec<(String, String)>,
}

/// The running session's journal.
pub struct Journal {
    dir: PathBuf,
    rec: RefCell<Record>,
    /// Held locked while the session runs.
    _lock: fs::File,
}

fn write_durably(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let tmp = path.with_extension("json.tmp");
    let err = |e: std::io::Error| format!("writing the restore journal {}: {e}", path.display());
    {
        let mut f = fs::File::create(&tmp).map_err(err)?;
        f.write_all(bytes).map_err(err)?;
        f.sync_all().map_err(err)?;
    }
    fs::rename(&tmp, path).map_err(err)?;
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(err)?;
    Ok(())
}

/// Start time of a process (field 22 of /proc/PID/stat), None if gone.
pub fn start_time(pid: u32) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    // Fields after the command: state is field 3, start time field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Process group of a process (field 5 of /proc/PID/stat).
fn pgrp(pid: u32) -> Option<u32> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

fn comm(pid: u32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

fn all_pids() -> Vec<u32> {
    fs::read_dir("/proc")
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

impl Journal {
    /// Create this session's journal (and lock it) before anything changes.
    pub fn begin(command: &str) -> Result<Journal, String> {
        Journal::begin_in(&dir(), command)
    }

    /// [`Journal::begin`] in another directory.
    pub fn begin_in(dir: &Path, command: &str) -> Result<Journal, String> {
        let dir = dir.to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| {
            format!(
                "creating the restore journal directory {}: {e}",
                dir.display()
            )
        })?;
        let pid = std::process::id();
        let mut n = 0;
        let (id, lock) = loop {
            n += 1;
            let id = format!("{pid}-{n}");
            let lp = dir.join(format!("{id}.lock"));
            if dir.join(format!("{id}.json")).exists() {
                continue;
            }
            let f = fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lp)
                .map_err(|e| format!("{}: {e}", lp.display()))?;
            match f.try_lock() {
                Ok(()) => break (id, f),
                Err(_) if n < 1000 => continue,
                Err(e) => return Err(format!("{}: cannot lock: {e}", lp.display())),
            }
        };
        let started = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let j = Journal {
            dir,
            rec: RefCell::new(Record {
                format: FORMAT.into(),
                id,
                pid,
                command: command.into(),
                started,
                ..Record::default()
            }),
            _lock: lock,
        };
        j.save()?;
        Ok(j)
    }

    pub fn id(&self) -> String {
        self.rec.borrow().id.clone()
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(format!("{}.json", self.id()))
    }

    pub fn record(&self) -> Record {
        self.rec.borrow().clone()
    }

    fn save(&self) -> Result<(), String> {
        let text = serde_json::to_string_pretty(&*self.rec.borrow())
            .map_err(|e| format!("restore journal: {e}"))?;
        write_durably(&self.path(), text.as_bytes())
    }

    fn update(&self, f: impl FnOnce(&mut Record)) -> Result<(), String> {
        f(&mut self.rec.borrow_mut());
        self.save()
    }

    /// The device and its state before the first write.
    pub fn record_device(&self, bd: &BlockDev, snap: &Snapshot) -> Result<(), String> {
        let q = bd.queue();
        let rec = DeviceRecord {
            path: bd.path.display().to_string(),
            disk: bd.disk.clone(),
            queue: q.dir.clone(),
            disk_devno: fs::read_to_string(bd.sys.join("dev"))
                .unwrap_or_default()
                .trim()
                .to_string(),
            loop_backing: fs::read_to_string(bd.sys.join("loop/backing_file"))
                .ok()
                .map(|s| s.trim().to_string()),
            scheduler: snap.scheduler.clone(),
            knobs: snap.knobs.clone(),
            iosched: snap.iosched.clone(),
        };
        self.update(|r| r.device = Some(rec))
    }

    /// A cgroup directory about to be made.
    pub fn add_cgroup(&self, dir: &Path) -> Result<(), String> {
        self.update(|r| r.cgroups.push(dir.to_path_buf()))
    }

    /// `+io` about to be written to this `cgroup.subtree_control`.
    pub fn set_io_enabled(&self, ctl: &Path) -> Result<(), String> {
        self.update(|r| r.cgroup_io_enabled = Some(ctl.to_path_buf()))
    }

    /// A working directory about to be made.
    pub fn add_temp_dir(&self, dir: &Path) -> Result<(), String> {
        self.update(|r| r.temp_dirs.push(dir.to_path_buf()))
    }

    /// Mark a working directory as this session's.
    pub fn mark_temp_dir(&self, dir: &Path) -> Result<(), String> {
        let p = dir.join(MARKER);
        fs::write(&p, self.id()).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// A file system about to be mounted at `mnt`.
    pub fn add_mount(&self, mnt: &Path) -> Result<(), String> {
        self.update(|r| {
            if !r.mounts.iter().any(|m| m == mnt) {
                r.mounts.push(mnt.to_path_buf())
            }
        })
    }

    /// The file system at `mnt` was unmounted.
    pub fn remove_mount(&self, mnt: &Path) -> Result<(), String> {
        self.update(|r| r.mounts.retain(|m| m != mnt))
    }

    /// The `vm.*` sysctls' values before the lab writes any.
    pub fn record_sysctls(&self, saved: &[(String, String)]) -> Result<(), String> {
        self.update(|r| r.sysctls = saved.to_vec())
    }

    /// fio's process group, just started.
    pub fn add_process(&self, pid: u32) -> Result<(), String> {
        let start = start_time(pid).unwrap_or(0);
        self.update(|r| r.processes.push(ProcRecord { pid, start }))
    }

    /// fio's process group, finished.
    pub fn remove_process(&self, pid: u32) -> Result<(), String> {
        self.update(|r| r.processes.retain(|p| p.pid != pid))
    }

    /// Everything was restored: delete the journal.
    pub fn close(self) {
        let _ = fs::remove_file(self.path());
        let _ = fs::remove_file(self.dir.join(format!("{}.lock", self.id())));
    }
}

/// What a recovery did.
#[derive(Clone, Debug, Default)]
pub struct Recovery {
    /// One line per journal recovered.
    pub notes: Vec<String>,
    /// What could not be undone (those journals stay).
    pub problems: Vec<String>,
    /// Journals of runs still in progress, left alone.
    pub running: Vec<String>,
    /// Devices whose settings could not be restored (their paths).
    pub devices_not_restored: Vec<String>,
}

/// Recover every journal in [`dir`] whose session is gone.
pub fn recover() -> Recovery {
    recover_in(&dir())
}

/// Recover every journal in `dir` whose session is gone.
pub fn recover_in(dir: &Path) -> Recovery {
    let mut out = Recovery::default();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    let mut journals: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    journals.sort();
    for jp in journals {
        let lp = jp.with_extension("lock");
        let Ok(lock) = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lp)
        else {
            out.problems
                .push(format!("{}: cannot open its lock file", jp.display()));
            continue;
        };
        if lock.try_lock().is_err() {
            out.running.push(format!(
                "{} belongs to a lab run that is still going; left alone",
                jp.display()
            ));
            continue;
        }
        // Another recoverer may have finished it meanwhile.
        let Ok(text) = fs::read_to_string(&jp) else {
            continue;
        };
        let rec: Record = match serde_json::from_str(&text) {
            Ok(r) => r,
            Err(e) => {
                out.problems.push(format!(
                    "{}: unreadable restore journal ({e}); check what it names and delete it by hand",
                    jp.display()
                ));
                continue;
            }
        };
        let (done, problems, device_ok) = undo(&rec);
        if !device_ok {
            if let Some(d) = &rec.device {
                out.devices_not_restored.push(d.path.clone());
            }
        }
        if problems.is_empty() {
            let _ = fs::remove_file(&jp);
            let _ = fs::remove_file(&lp);
            out.notes.push(format!(
                "recovered an interrupted lab run ({}, pid {}, journal {}): {}",
                rec.command,
                rec.pid,
                jp.display(),
                if done.is_empty() {
                    "nothing was left to undo".to_string()
                } else {
                    done.join("; ")
                }
            ));
        } else {
            out.problems.extend(problems.into_iter().map(|p| {
                format!(
                    "interrupted lab run ({}, pid {}, journal {}): {p}",
                    rec.command,
                    rec.pid,
                    jp.display()
                )
            }));
            if !done.is_empty() {
                out.notes.push(format!(
                    "partly recovered an interrupted lab run (pid {}): {}",
                    rec.pid,
                    done.join("; ")
                ));
            }
        }
    }
    out
}

/// The command line of a process, NULs as spaces.
fn cmdline(pid: u32) -> String {
    let b = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&b).replace('\0', " ")
}

/// Whether `pid` is fio, or the guard shell fio runs under (`lab::fio`).
fn is_fio_or_guard(pid: u32) -> bool {
    match comm(pid).as_str() {
        "fio" => true,
        "sh" => cmdline(pid).contains("elevator-fio-guard"),
        _ => false,
    }
}

/// Kill the group led by the guard `p` if that guard still runs (same pid,
/// same start time, still the guard: a reused pid is left alone), and wait
/// for it to go. Returns the pids killed.
pub fn kill_group(p: &ProcRecord) -> Vec<u32> {
    if start_time(p.pid) != Some(p.start) || !is_fio_or_guard(p.pid) {
        return Vec::new();
    }
    let mut killed = Vec::new();
    for _ in 0..50 {
        let now: Vec<u32> = all_pids()
            .into_iter()
            .filter(|&q| pgrp(q) == Some(p.pid))
            .collect();
        if now.is_empty() {
            break;
        }
        super::signal::send_group(p.pid, super::signal::SIGKILL);
        for q in now {
            if !killed.contains(&q) {
                killed.push(q);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    killed
}

/// Kill fio and its guard wherever their command line names one of `dirs`
/// (the lab's working directories: fio's job file is there), and wait for
/// them to go. fio's job processes leave the guard's process group (fio
/// gives each a session of its own) but keep fio's command line. Returns
/// the pids killed.
pub fn kill_fio_in(dirs: &[PathBuf]) -> Vec<u32> {
    let dirs: Vec<String> = dirs.iter().map(|d| format!("{}/", d.display())).collect();
    let mut killed = Vec::new();
    if dirs.is_empty() {
        return killed;
    }
    for _ in 0..50 {
        let left: Vec<u32> = all_pids()
            .into_iter()
            .filter(|&q| {
                is_fio_or_guard(q) && {
                    let cmd = cmdline(q);
                    dirs.iter().any(|d| cmd.contains(d.as_str()))
                }
            })
            .collect();
        if left.is_empty() {
            break;
        }
        for q in left {
            super::signal::send(q, super::signal::SIGKILL);
            if !killed.contains(&q) {
                killed.push(q);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    killed
}

/// Tasks of a cgroup (v1 `tasks` or v2 `cgroup.procs`).
fn cgroup_tasks(dir: &Path) -> Vec<u32> {
    let text = fs::read_to_string(dir.join("cgroup.procs"))
        .or_else(|_| fs::read_to_string(dir.join("tasks")))
        .unwrap_or_default();
    text.split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect()
}

/// A lab cgroup: a directory named `elv...`.
fn is_lab_cgroup(p: &Path) -> bool {
    p.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("elv"))
}

/// Undo what a record names. Returns what was done, what failed, and
/// whether the device's settings are as before (or were not touched).
/// The order matters: fio first, then its file systems, the vm sysctls,
/// the device, the cgroups, and the working directories last.
pub fn undo(rec: &Record) -> (Vec<String>, Vec<String>, bool) {
    let mut done = Vec::new();
    let mut problems = Vec::new();
    kill_leftover_fio(rec, &mut done);
    let unmounted = unmount_all(rec, &mut done, &mut problems);
    if !rec.sysctls.is_empty() {
        let errs = super::sysctl::restore(&rec.sysctls);
        if errs.is_empty() {
            done.push("restored the vm sysctls".into());
        } else {
            problems.extend(errs);
        }
    }
    let device_ok = match &rec.device {
        Some(d) => restore_device(d, &mut done, &mut problems),
        None => true,
    };
    remove_cgroups(rec, &mut done, &mut problems);
    remove_temp_dirs(rec, unmounted, &mut done, &mut problems);
    (done, problems, device_ok)
}

/// fio's process groups, then fio processes still in our cgroups.
fn kill_leftover_fio(rec: &Record, done: &mut Vec<String>) {
    let mut killed = Vec::new();
    for p in &rec.processes {
        killed.extend(kill_group(p));
    }
    killed.extend(kill_fio_in(&rec.temp_dirs));
    for cg in rec.cgroups.iter().filter(|c| is_lab_cgroup(c)) {
        for t in cgroup_tasks(cg) {
            if comm(t) == "fio" {
                super::signal::send(t, super::signal::SIGKILL);
                killed.push(t);
            }
        }
    }
    if !killed.is_empty() {
        killed.sort_unstable();
        killed.dedup();
        done.push(format!(
            "killed leftover fio processes ({})",
            killed
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
}

/// Our file systems (fio is gone), before the working directories; true
/// if none is left mounted.
fn unmount_all(rec: &Record, done: &mut Vec<String>, problems: &mut Vec<String>) -> bool {
    let mut unmounted = true;
    for m in &rec.mounts {
        match super::fsmount::unmount(m) {
            Ok(()) => done.push(format!("unmounted {}", m.display())),
            Err(e) => {
                unmounted = false;
                problems.push(e);
            }
        }
    }
    unmounted
}

/// The device's scheduler, knobs and tunables, if it is still the same
/// device; false if restoring failed.
fn restore_device(d: &DeviceRecord, done: &mut Vec<String>, problems: &mut Vec<String>) -> bool {
    let sys = d.queue.parent().map(Path::to_path_buf).unwrap_or_default();
    let devno = fs::read_to_string(sys.join("dev"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let backing = fs::read_to_string(sys.join("loop/backing_file"))
        .ok()
        .map(|s| s.trim().to_string());
    if devno != d.disk_devno || (d.loop_backing.is_some() && backing != d.loop_backing) {
        done.push(format!(
            "{} is no longer the device the run used (detached or replaced); its settings were not touched",
            d.path
        ));
        return true;
    }
    let q = Queue {
        dir: d.queue.clone(),
        disk: d.disk.clone(),
    };
    let snap = Snapshot {
        scheduler: d.scheduler.clone(),
        knobs: d.knobs.clone(),
        iosched: d.iosched.clone(),
    };
    let names: Vec<String> = d.knobs.iter().map(|(k, _)| k.clone()).collect();
    let before = q.snapshot(&names);
    let changed = snap.differences(&before);
    let errs = q.restore(&snap);
    if !errs.is_empty() {
        problems.extend(errs);
        return false;
    }
    if changed.is_empty() {
        done.push(format!("{}: settings were already as before", d.path));
    } else {
        done.push(format!(
            "restored {} ({})",
            d.path,
            changed
                .iter()
                .map(|c| swap_arrow(c))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    true
}

/// Our cgroups (lab names only, empty ones only: rmdir), and the io
/// controller if the run enabled it.
fn remove_cgroups(rec: &Record, done: &mut Vec<String>, problems: &mut Vec<String>) {
    for cg in rec.cgroups.iter().rev() {
        if !cg.exists() {
            continue;
        }
        if !is_lab_cgroup(cg) {
            problems.push(format!(
                "{} is not a lab cgroup name; not removed",
                cg.display()
            ));
            continue;
        }
        let mut last = None;
        for _ in 0..30 {
            match fs::remove_dir(cg) {
                Ok(()) => {
                    last = None;
                    break;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    last = None;
                    break;
                }
                Err(e) => {
                    last = Some(e);
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        match last {
            None => done.push(format!("removed cgroup {}", cg.display())),
            Some(e) => {
                let tasks = cgroup_tasks(cg);
                problems.push(format!(
                    "removing cgroup {}: {e}{}",
                    cg.display(),
                    if tasks.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " (processes still in it, not ours to kill: {})",
                            tasks
                                .iter()
                                .map(|t| format!("{t} {}", comm(*t)))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                ))
            }
        }
    }
    if let Some(ctl) = &rec.cgroup_io_enabled {
        match fs::write(ctl, "-io") {
            Ok(()) => done.push(format!("wrote -io to {}", ctl.display())),
            Err(e) => problems.push(format!("writing '-io' to {}: {e}", ctl.display())),
        }
    }
}

/// Working directories: only those marked with this journal's ID, or empty.
fn remove_temp_dirs(
    rec: &Record,
    unmounted: bool,
    done: &mut Vec<String>,
    problems: &mut Vec<String>,
) {
    for t in &rec.temp_dirs {
        if !t.exists() {
            continue;
        }
        if !unmounted {
            problems.push(format!(
                "{}: not removed while a file system of the run is still mounted",
                t.display()
            ));
            continue;
        }
        let marker = fs::read_to_string(t.join(MARKER)).unwrap_or_default();
        let r = if marker.trim() == rec.id {
            fs::remove_dir_all(t)
        } else {
            fs::remove_dir(t)
        };
        match r {
            Ok(()) => done.push(format!("removed {}", t.display())),
            Err(e) => problems.push(format!(
                "{}: not removed ({e}); it is not marked as this run's",
                t.display()
            )),
        }
    }
}

/// "name: a -> b" (was → now) as "name b -> a" (now → restored).
fn swap_arrow(d: &str) -> String {
    match d
        .split_once(": ")
        .and_then(|(k, v)| Some((k, v.split_once(" -> ")?)))
    {
        Some((k, (was, now))) => format!("{k} {now} -> {was}"),
        None => d.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_lock_while_running() {
        let tmp = crate::lab::TempDir::new("elevator-journal-test").unwrap();
        let j = Journal::begin_in(tmp.path(), "lab").unwrap();
        let cg = tmp.path().join("elv1_a");
        j.add_cgroup(&cg).unwrap();
        let work = tmp.path().join("work");
        j.add_temp_dir(&work).unwrap();
        fs::create_dir(&work).unwrap();
        j.mark_temp_dir(&work).unwrap();
        fs::write(work.join("junk"), "x").unwrap();
        let text = fs::read_to_string(j.path()).unwrap();
        let rec: Record = serde_json::from_str(&text).unwrap();
        assert_eq!(rec.format, FORMAT);
        assert_eq!(rec.cgroups, vec![cg.clone()]);
        assert_eq!(rec.temp_dirs, vec![work.clone()]);
        // Locked while this session runs: recovery leaves it alone.
        let r = recover_in(tmp.path());
        assert_eq!(r.running.len(), 1, "{r:?}");
        assert!(work.exists());
        // The session is gone (lock dropped, file kept): recovered.
        let path = j.path();
        drop(j);
        assert!(path.exists());
        let r = recover_in(tmp.path());
        assert!(r.problems.is_empty(), "{r:?}");
        assert_eq!(r.notes.len(), 1, "{r:?}");
        assert!(
            r.notes[0].contains(&format!("removed {}", work.display())),
            "{r:?}"
        );
        assert!(!work.exists());
        assert!(!path.exists());
    }

    #[test]
    fn unmarked_directories_are_not_removed() {
        let tmp = crate::lab::TempDir::new("elevator-journal-test").unwrap();
        let other = tmp.path().join("someone-elses");
        fs::create_dir(&other).unwrap();
        fs::write(other.join("data"), "keep").unwrap();
        let rec = Record {
            id: "1-1".into(),
            temp_dirs: vec![other.clone()],
            cgroups: vec![tmp.path().join("not-ours")],
            ..Record::default()
        };
        fs::create_dir(tmp.path().join("not-ours")).unwrap();
        let (_, problems, device_ok) = undo(&rec);
        assert!(device_ok);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(other.join("data").exists());
        assert!(tmp.path().join("not-ours").exists());
    }

    #[test]
    fn arrows() {
        assert_eq!(
            swap_arrow("scheduler: none -> bfq"),
            "scheduler bfq -> none"
        );
        assert!(start_time(std::process::id()).is_some());
        assert!(pgrp(std::process::id()).is_some());
    }
}
