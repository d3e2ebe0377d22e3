//! Shared by the lab tests (`tests/lab_*.rs`): whether the lab can run here,
//! skips that are counted instead of passing silently, loop devices, and
//! running the `elevator` binary.
//!
//! A lab test needs root, fio and some tools (losetup, mount, unshare,
//! mkfs.ext4). When one is missing:
//! - with `ELEVATOR_REQUIRE_LAB=1` (CI: `.ci/run` sets it) the test fails;
//! - otherwise it is skipped: the note goes to the real standard error (not
//!   the test harness's captured one), and when `ELEVATOR_SKIP_DIR` names a
//!   directory, a file there records the skip; `.ci/run` counts those files
//!   and reports them as skipped, not passed.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

pub const BIN: &str = env!("CARGO_BIN_EXE_elevator");
pub const REQUIRE_ENV: &str = "ELEVATOR_REQUIRE_LAB";
pub const SKIP_DIR_ENV: &str = "ELEVATOR_SKIP_DIR";

/// The lab tests of one binary run one at a time (devices, timings, cgroups).
pub static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the lab must run here (CI).
pub fn required() -> bool {
    std::env::var(REQUIRE_ENV).is_ok_and(|v| v == "1")
}

/// `test` cannot run here because of `why`: fail under
/// `ELEVATOR_REQUIRE_LAB=1`, else record the skip. Returns false (so a test
/// can `return` on `!ready(..)`).
pub fn skip(test: &str, why: &str) -> bool {
    if required() {
        panic!("{test}: {why}, and {REQUIRE_ENV}=1 says the lab tests must run here");
    }
    let line = format!("SKIPPED {test}: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(dir) = std::env::var_os(SKIP_DIR_ENV).filter(|d| !d.is_empty()) {
        let name: String = test
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let p = Path::new(&dir).join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::write(p, line);
    }
    false
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn have(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// Root, fio and `tools` present; otherwise skipped (or failed in CI).
pub fn ready(test: &str, tools: &[&str]) -> bool {
    if !is_root() {
        return skip(test, "needs root (loop devices, sysfs, cgroups)");
    }
    if elevator::lab::fio::find().is_none() {
        return skip(
            test,
            &format!(
                "fio is not installed ({})",
                elevator::lab::fio::INSTALL_HINT
            ),
        );
    }
    for t in ["losetup", "mount", "umount", "dd"].iter().chain(tools) {
        if !have(t) {
            return skip(test, &format!("{t} is not installed"));
        }
    }
    true
}

pub fn elevator(args: &[&str]) -> Output {
    elevator_env(args, &[])
}

pub fn elevator_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(BIN);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("runs elevator")
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The queue attributes the lab snapshots.
pub const KNOBS: &[&str] = &[
    "scheduler",
    "nr_requests",
    "read_ahead_kb",
    "rotational",
    "nomerges",
    "max_sectors_kb",
    "write_cache",
    "wbt_lat_usec",
    "rq_affinity",
];

/// A tmpfs-backed loop device, removed on drop.
pub struct Loop(pub String);

impl Loop {
    pub fn new(size: &str) -> Loop {
        Loop::with(&["--size", size])
    }
    pub fn with(args: &[&str]) -> Loop {
        let mut a = vec!["loop", "create"];
        a.extend(args);
        let o = elevator(&a);
        assert!(o.status.success(), "loop create: {}", text(&o));
        let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
        assert!(dev.starts_with("/dev/loop"), "{dev}");
        Loop(dev)
    }
    pub fn name(&self) -> &str {
        self.0.trim_start_matches("/dev/")
    }
    pub fn queue(&self, attr: &str) -> PathBuf {
        Path::new("/sys/block")
            .join(self.name())
            .join("queue")
            .join(attr)
    }
    pub fn read(&self, attr: &str) -> String {
        std::fs::read_to_string(self.queue(attr))
            .unwrap_or_default()
            .trim()
            .to_string()
    }
    /// The schedulers the kernel offers for this device (its
    /// `queue/scheduler` line without the brackets). Kernels differ: some
    /// builds of these machines' kernel have BFQ, some do not.
    pub fn offered(&self) -> Vec<String> {
        self.read("scheduler")
            .split_whitespace()
            .map(|s| s.trim_matches(|c| c == '[' || c == ']').to_string())
            .collect()
    }
    pub fn offers(&self, scheduler: &str) -> bool {
        self.offered().iter().any(|s| s == scheduler)
    }
    /// A scheduler to switch to that is not the loop's default (none):
    /// BFQ when the kernel has it (the one with cgroup weights), else the
    /// first other one offered.
    pub fn switch_target(&self) -> String {
        let offered = self.offered();
        ["bfq", "kyber", "mq-deadline"]
            .iter()
            .find(|s| offered.iter().any(|o| o == *s))
            .map(|s| s.to_string())
            .unwrap_or_else(|| panic!("{} offers no scheduler but none: {offered:?}", self.0))
    }
    pub fn write(&self, attr: &str, v: &str) {
        std::fs::write(self.queue(attr), v).unwrap_or_else(|e| panic!("{attr}={v}: {e}"));
    }
    /// Scheduler line, queue knobs and the current scheduler's tunables.
    pub fn state(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = KNOBS
            .iter()
            .map(|a| (a.to_string(), self.read(a)))
            .collect();
        if let Ok(rd) = std::fs::read_dir(self.queue("iosched")) {
            let mut t: Vec<(String, String)> = rd
                .flatten()
                .map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    (format!("iosched/{n}"), self.read(&format!("iosched/{n}")))
                })
                .collect();
            t.sort();
            v.extend(t);
        }
        v
    }
    /// `MAJ:MIN`.
    pub fn devno(&self) -> (u32, u32) {
        let s =
            std::fs::read_to_string(Path::new("/sys/block").join(self.name()).join("dev")).unwrap();
        let (a, b) = s.trim().split_once(':').unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    }
    /// The first `len` bytes of the device.
    pub fn head(&self, len: usize) -> Vec<u8> {
        use std::io::Read;
        let mut f = std::fs::File::open(&self.0).unwrap();
        let mut b = vec![0u8; len];
        f.read_exact(&mut b).unwrap();
        b
    }
    /// Fill the first `mib` MiB with `byte`.
    pub fn fill(&self, byte: u8, mib: usize) {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.0)
            .unwrap();
        f.write_all_at(&vec![byte; mib << 20], 0).unwrap();
        f.sync_all().unwrap();
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let o = elevator(&["loop", "remove", &self.0]);
        if !o.status.success() {
            eprintln!("loop remove {}: {}", self.0, text(&o));
        }
    }
}

pub fn job(dir: &Path, name: &str, body: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p.display().to_string()
}

pub fn scratch(tag: &str) -> elevator::lab::TempDir {
    elevator::lab::TempDir::new(&format!("elevator-test-{tag}")).unwrap()
}

/// The lab's cgroups (`elv*`) in the blkio hierarchy.
pub fn our_cgroups() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/fs/cgroup/blkio")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("elv"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Processes whose command line contains `pattern` (not this one).
pub fn procs_matching(pattern: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(pattern) {
            v.push((pid, cmd));
        }
    }
    v
}

/// fio processes (comm "fio") whose command line contains `pattern`.
pub fn fio_procs(pattern: &str) -> Vec<(u32, String)> {
    procs_matching(pattern)
        .into_iter()
        .filter(|(pid, _)| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "fio")
        })
        .collect()
}

/// The lab's working directories of process `pid` in the temp dir.
pub fn work_dirs(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("elevator-lab-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// Wait up to `secs` for `f` to hold.
pub fn wait_for(secs: f64, mut f: impl FnMut() -> bool) -> bool {
    let t0 = std::time::Instant::now();
    while t0.elapsed().as_secs_f64() < secs {
        if f() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    f()
}

/// The journal directory variable.
pub const JOURNAL_ENV: &str = "ELEVATOR_LAB_JOURNAL_DIR";

/// Runs `elevator lab --recover` on a test's journal directory when dropped,
/// so a failing test does not leave its lab state behind (drop it before
/// the directory that holds the journal).
pub struct RecoverOnDrop(pub PathBuf);

impl Drop for RecoverOnDrop {
    fn drop(&mut self) {
        if self.0.exists() {
            let _ = elevator_env(
                &["lab", "--recover"],
                &[(JOURNAL_ENV, self.0.to_str().unwrap())],
            );
        }
    }
}
