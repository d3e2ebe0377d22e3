//! A real block device: its sysfs queue directory, the scheduler and knobs
//! (read, written, snapshotted and restored), and whether it is in use.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A whole-disk block device (a partition resolves to its disk for the queue).
#[derive(Clone, Debug)]
pub struct BlockDev {
    /// `/dev/NAME` as given (canonicalised).
    pub path: PathBuf,
    /// Kernel name of the device given (`loop0`, `sda1`).
    pub name: String,
    /// Kernel name of the whole disk that owns the queue (`loop0`, `sda`).
    pub disk: String,
    /// `/sys/block/DISK`.
    pub sys: PathBuf,
}

/// `O_EXCL` (asm-generic/fcntl.h and the architectures that differ).
#[cfg(any(target_arch = "mips", target_arch = "mips64"))]
const O_EXCL: i32 = 0x400;
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
const O_EXCL: i32 = 0x800;
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "sparc",
    target_arch = "sparc64"
)))]
const O_EXCL: i32 = 0o200;

/// `MAJ:MIN` of a device number as sysfs and mountinfo print it.
fn dev_string(rdev: u64) -> String {
    let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
    let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
    format!("{major}:{minor}")
}

impl BlockDev {
    /// Resolve `/dev/loop0`, `loop0` or a symlink to a block device.
    pub fn open(dev: &str) -> Result<BlockDev, String> {
        let given = if dev.contains('/') {
            PathBuf::from(dev)
        } else {
            Path::new("/dev").join(dev)
        };
        let path = fs::canonicalize(&given).map_err(|e| format!("{}: {e}", given.display()))?;
        let md = fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if !md.file_type().is_block_device() {
            return Err(format!("{}: not a block device", path.display()));
        }
        let devno = dev_string(md.rdev());
        let link = PathBuf::from(format!("/sys/dev/block/{devno}"));
        let real = fs::canonicalize(&link).map_err(|e| {
            format!(
                "{}: no sysfs entry {} ({e})",
                path.display(),
                link.display()
            )
        })?;
        let name = real
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .ok_or_else(|| format!("{}: odd sysfs path {}", path.display(), real.display()))?;
        let (disk, sys) = if real.join("partition").exists() {
            let parent = real
                .parent()
                .ok_or_else(|| format!("{}: partition without a disk", path.display()))?;
            let disk = parent
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (disk, parent.to_path_buf())
        } else {
            (name.clone(), real.clone())
        };
        Ok(BlockDev {
            path,
            name,
            disk,
            sys,
        })
    }

    /// The queue directory (`/sys/block/DISK/queue`).
    pub fn queue(&self) -> Queue {
        Queue {
            dir: self.sys.join("queue"),
            disk: self.disk.clone(),
        }
    }

    /// Size in bytes (`size` is in 512-byte sectors).
    pub fn size_bytes(&self) -> Result<u64, String> {
        let p = if self.name == self.disk {
            self.sys.join("size")
        } else {
            self.sys.join(&self.name).join("size")
        };
        read_trim(&p)?
            .parse::<u64>()
            .map(|s| s * 512)
            .map_err(|e| format!("{}: {e}", p.display()))
    }

    /// The disk and its partitions: (kernel name, sysfs dir).
    fn members(&self) -> Vec<(String, PathBuf)> {
        let mut v = vec![(self.disk.clone(), self.sys.clone())];
        if let Ok(rd) = fs::read_dir(&self.sys) {
            let mut parts: Vec<(String, PathBuf)> = rd
                .flatten()
                .filter(|e| e.path().join("partition").exists())
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect();
            parts.sort();
            v.extend(parts);
        }
        v
    }

    /// The device number of the device given, `MAJ:MIN`.
    pub fn devno(&self) -> Option<(u32, u32)> {
        let md = fs::metadata(&self.path).ok()?;
        let s = dev_string(md.rdev());
        let (a, b) = s.split_once(':')?;
        Some((a.parse().ok()?, b.parse().ok()?))
    }

    /// The whole disk's I/O statistics now (`/sys/block/DISK/stat`).
    pub fn stat(&self) -> Result<crate::block::stat::DiskStatFields, String> {
        let p = self.sys.join("stat");
        let text = fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        crate::block::stat::DiskStatFields::parse(&text)
            .map_err(|e| format!("{}: {e}", p.display()))
    }

    /// Open the device exclusively (`O_EXCL` on a block device): the kernel
    /// refuses with EBUSY while it is mounted or claimed anywhere, in any
    /// mount namespace, and nothing can mount or claim it while the returned
    /// file stays open. Ordinary opens (fio's) still work.
    pub fn claim(&self) -> std::io::Result<fs::File> {
        use std::os::unix::fs::OpenOptionsExt;
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(O_EXCL)
            .open(&self.path)
    }

    /// Mounts of the disk or its partitions in every mount namespace this
    /// machine has (from each process's mountinfo): "DEV is mounted at MNT
    /// (FSTYPE) in the mount namespace of pid N".
    pub fn mounts_elsewhere(&self) -> Vec<String> {
        let own = fs::read_link("/proc/self/ns/mnt").ok();
        let mut seen = Vec::new();
        let mut out = Vec::new();
        let Ok(rd) = fs::read_dir("/proc") else {
            return out;
        };
        let mut pids: Vec<u32> = rd
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        pids.sort_unstable();
        let members: Vec<(String, String)> = self
            .members()
            .into_iter()
            .map(|(name, sys)| (name, read_trim(&sys.join("dev")).unwrap_or_default()))
            .collect();
        for pid in pids {
            let Ok(ns) = fs::read_link(format!("/proc/{pid}/ns/mnt")) else {
                continue;
            };
            if Some(&ns) == own.as_ref() || seen.contains(&ns) {
                continue;
            }
            seen.push(ns);
            let mi = fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
            for (name, devno) in &members {
                let devpath = format!("/dev/{name}");
                for (mnt, fstype) in mounts_of(&mi, devno, &devpath) {
                    out.push(format!(
                        "{devpath} is mounted at {mnt} ({fstype}) in the mount namespace of pid {pid}"
                    ));
                }
            }
        }
        out
    }

    /// Reasons the device must not be written to: mounted filesystems on the
    /// disk or its partitions, holders (device-mapper, md, ...), swap.
    pub fn in_use(&self) -> Vec<String> {
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let swaps = fs::read_to_string("/proc/swaps").unwrap_or_default();
        let mut why = Vec::new();
        for (name, sys) in self.members() {
            let devno = read_trim(&sys.join("dev")).unwrap_or_default();
            let devpath = format!("/dev/{name}");
            for (mnt, fstype) in mounts_of(&mountinfo, &devno, &devpath) {
                why.push(format!("{devpath} is mounted at {mnt} ({fstype})"));
            }
            if let Ok(rd) = fs::read_dir(sys.join("holders")) {
                let mut holders: Vec<String> = rd
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                holders.sort();
                if !holders.is_empty() {
                    why.push(format!(
                        "{devpath} is held by {} (device-mapper, md or another stacked device)",
                        holders.join(", ")
                    ));
                }
            }
            if is_swap(&swaps, &devpath) {
                why.push(format!("{devpath} is used as swap"));
            }
        }
        why
    }
}

/// Mount points of a device in /proc/self/mountinfo text: matched by device
/// number (field 3) or by mount source.
pub fn mounts_of(mountinfo: &str, devno: &str, devpath: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in mountinfo.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let Some(sep) = f.iter().position(|x| *x == "-") else {
            continue;
        };
        if f.len() < 5 || f.len() < sep + 3 {
            continue;
        }
        let (num, mnt, fstype, source) = (f[2], f[4], f[sep + 1], f[sep + 2]);
        let same_source = source == devpath
            || (source.starts_with('/')
                && fs::canonicalize(source).is_ok_and(|p| p == Path::new(devpath)));
        // Device numbers identify block-backed filesystems; pseudo filesystems
        // use anonymous major 0.
        let same_num = !devno.is_empty() && num == devno && !num.starts_with("0:");
        if same_source || same_num {
            out.push((unescape_mount(mnt), fstype.to_string()));
        }
    }
    out
}

/// mountinfo escapes space, tab, newline and backslash as `\\ooo` octal.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = |k: usize| b.get(k).is_some_and(|c| (b'0'..=b'7').contains(c));
        if b[i] == b'\\' && octal(i + 1) && octal(i + 2) && octal(i + 3) {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `devpath` appears as a swap area in /proc/swaps text.
pub fn is_swap(swaps: &str, devpath: &str) -> bool {
    swaps.lines().skip(1).any(|l| {
        l.split_whitespace().next().is_some_and(|src| {
            src == devpath
                || (src.starts_with('/')
                    && fs::canonicalize(src).is_ok_and(|p| p == Path::new(devpath)))
        })
    })
}

fn read_trim(p: &Path) -> Result<String, String> {
    fs::read_to_string(p)
        .map(|s| s.trim_end_matches('\n').to_string())
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// `/sys/block/DISK/queue`.
#[derive(Clone, Debug)]
pub struct Queue {
    pub dir: PathBuf,
    pub disk: String,
}

/// The order queue knobs are written in, restoring as well as applying:
/// `nr_requests` right after the scheduler (a switch resets it); then the
/// queue limits (`rotational`, `max_sectors_kb`, `write_cache` and any knob
/// not known here): on this kernel committing a limit recomputes
/// `read_ahead_kb` (with rotational=1 it becomes twice `max_sectors_kb`);
/// then the knobs that change nothing else; `read_ahead_kb` last.
pub fn knob_rank(name: &str) -> u8 {
    match name {
        "nr_requests" => 0,
        "rotational" | "max_sectors_kb" | "write_cache" => 1,
        "nomerges" | "rq_affinity" | "wbt_lat_usec" | "iostats" | "add_random" | "io_poll"
        | "io_poll_delay" => 3,
        "read_ahead_kb" => 4,
        _ => 2,
    }
}

/// `knobs` in the order they must be written ([`knob_rank`]), stable.
pub fn in_write_order(knobs: &[(String, String)]) -> Vec<(String, String)> {
    let mut v = knobs.to_vec();
    v.sort_by_key(|(k, _)| knob_rank(k));
    v
}

/// The queue limits among `knobs`, to be written before a scheduler is
/// selected as well as after: a scheduler may read them once, at init. BFQ
/// takes `nonrot_with_queueing` from `rotational` in `bfq_init_queue` and
/// recomputes it only while its hw_tag detection has not settled on 1
/// (6.18 block/bfq-iosched.c, `bfq_update_hw_tag`), so a flag written after
/// the switch is not seen by its stable merging. Measured here: a disk-backed
/// loop switched to rotational=0 under an already selected BFQ still merged
/// late, as with 1 (QD1 reader 1647 and 1438 IOPS); re-selecting BFQ after
/// the write merged at once (181 and 188 IOPS, as mq-deadline).
pub fn limits_before_switch(knobs: &[(String, String)]) -> Vec<(String, String)> {
    knobs
        .iter()
        .filter(|(k, _)| knob_rank(k) == 1)
        .cloned()
        .collect()
}

/// Queue attributes the lab snapshots and restores besides the ones a user
/// sets (a scheduler switch resets `nr_requests`; BFQ turns wbt off).
pub const SNAPSHOT_KNOBS: &[&str] = &[
    "nr_requests",
    "read_ahead_kb",
    "rotational",
    "nomerges",
    "max_sectors_kb",
    "write_cache",
    "wbt_lat_usec",
    "rq_affinity",
];

impl Queue {
    pub fn path(&self, attr: &str) -> PathBuf {
        self.dir.join(attr)
    }

    pub fn has(&self, attr: &str) -> bool {
        self.path(attr).exists()
    }

    pub fn read(&self, attr: &str) -> Result<String, String> {
        read_trim(&self.path(attr))
    }

    pub fn write(&self, attr: &str, value: &str) -> Result<(), String> {
        let p = self.path(attr);
        fs::write(&p, value).map_err(|e| format!("writing '{value}' to {}: {e}", p.display()))
    }

    /// Schedulers offered and the one in use; None for bio-based devices
    /// (no `queue/scheduler`, e.g. zram).
    pub fn schedulers(&self) -> Option<(Vec<String>, String)> {
        let text = self.read("scheduler").ok()?;
        Some(parse_scheduler_line(&text))
    }

    pub fn scheduler(&self) -> Option<String> {
        self.schedulers().map(|(_, cur)| cur)
    }

    /// Selects `name` as a fresh instance, the state the simulator starts
    /// every run from. Writing the running scheduler's own name changes
    /// nothing in the kernel (block/elevator.c: a change to the current
    /// elevator returns early), so its learned state would carry over from
    /// the previous run: BFQ's peak rate and budgets (measured on 6.18 here:
    /// BFQ's minimum budget stayed 4228 sectors after writing `bfq` again,
    /// and was 512, the default's 1/32, after `none` then `bfq`), kyber's
    /// depths, CFQ's hw_tag. So a scheduler already running is switched
    /// away from first.
    pub fn start_scheduler(&self, name: &str) -> Result<(), String> {
        let (offered, current) = self
            .schedulers()
            .ok_or_else(|| format!("{}: no scheduler file", self.disk))?;
        for step in fresh_switch(&offered, &current, name) {
            self.set_scheduler(step)?;
        }
        Ok(())
    }

    pub fn set_scheduler(&self, name: &str) -> Result<(), String> {
        self.write("scheduler", name)?;
        match self.scheduler() {
            Some(cur) if cur == name => Ok(()),
            Some(cur) => Err(format!(
                "{}: asked for scheduler '{name}', the kernel shows '{cur}'",
                self.disk
            )),
            None => Err(format!("{}: scheduler file vanished", self.disk)),
        }
    }

    /// `iosched/*` tunables of the current scheduler, sorted by name.
    pub fn iosched(&self) -> Vec<(String, String)> {
        let mut v = Vec::new();
        if let Ok(rd) = fs::read_dir(self.dir.join("iosched")) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Ok(val) = read_trim(&e.path()) {
                    v.push((name, val));
                }
            }
        }
        v.sort();
        v
    }

    /// Record the scheduler, the knobs in [`SNAPSHOT_KNOBS`] plus `extra`, and
    /// the current scheduler's tunables.
    pub fn snapshot(&self, extra: &[String]) -> Snapshot {
        let mut names: Vec<String> = SNAPSHOT_KNOBS.iter().map(|s| s.to_string()).collect();
        for e in extra {
            if !names.contains(e) {
                names.push(e.clone());
            }
        }
        let knobs = names
            .into_iter()
            .filter_map(|n| self.read(&n).ok().map(|v| (n, v)))
            .collect();
        Snapshot {
            scheduler: self.scheduler(),
            knobs,
            iosched: self.iosched(),
        }
    }

    /// Put back a snapshot in dependency order: the scheduler (switching
    /// resets its tunables and `nr_requests`), its tunables, then the queue
    /// knobs in [`knob_rank`] order; only values that differ are written.
    /// Every value is read back afterwards; when something still differs
    /// (one write undid another) the whole sequence runs once more. Returns
    /// what could not be restored.
    pub fn restore(&self, s: &Snapshot) -> Vec<String> {
        let names: Vec<String> = s.knobs.iter().map(|(k, _)| k.clone()).collect();
        let mut errors = Vec::new();
        for pass in 0..2 {
            errors.clear();
            self.restore_pass(s, &mut errors);
            let now = self.snapshot(&names);
            let diff = s.differences(&now);
            if diff.is_empty() && errors.is_empty() {
                return errors;
            }
            if pass == 1 {
                for d in diff {
                    errors.push(format!("{}: not restored: {d}", self.disk));
                }
            }
        }
        errors
    }

    fn restore_pass(&self, s: &Snapshot, errors: &mut Vec<String>) {
        if let Some(sched) = &s.scheduler {
            if self.scheduler().as_deref() != Some(sched.as_str()) {
                for (name, val) in limits_before_switch(&s.knobs) {
                    if self.read(&name).ok().as_deref() != Some(val.as_str()) {
                        if let Err(e) = self.write(&name, &val) {
                            errors.push(e);
                        }
                    }
                }
                if let Err(e) = self.set_scheduler(sched) {
                    errors.push(e);
                }
            }
        }
        for (name, val) in &s.iosched {
            let attr = format!("iosched/{name}");
            if self.read(&attr).ok().as_deref() != Some(val.as_str()) {
                if let Err(e) = self.write(&attr, val) {
                    errors.push(e);
                }
            }
        }
        for (name, val) in in_write_order(&s.knobs) {
            if self.read(&name).ok().as_deref() != Some(val.as_str()) {
                if let Err(e) = self.write(&name, &val) {
                    errors.push(e);
                }
            }
        }
    }
}

/// `[none] mq-deadline kyber bfq` → (all, current).
pub fn parse_scheduler_line(text: &str) -> (Vec<String>, String) {
    let mut all = Vec::new();
    let mut cur = String::new();
    for w in text.split_whitespace() {
        if let Some(n) = w.strip_prefix('[').and_then(|w| w.strip_suffix(']')) {
            cur = n.to_string();
            all.push(n.to_string());
        } else {
            all.push(w.to_string());
        }
    }
    if cur.is_empty() && all.len() == 1 {
        cur = all[0].clone();
    }
    (all, cur)
}

/// Scheduler, queue knobs and the scheduler's tunables at one moment.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    pub scheduler: Option<String>,
    pub knobs: Vec<(String, String)>,
    pub iosched: Vec<(String, String)>,
}

impl Snapshot {
    /// Human-readable differences `name: was -> now`.
    pub fn differences(&self, now: &Snapshot) -> Vec<String> {
        let mut d = Vec::new();
        if self.scheduler != now.scheduler {
            d.push(format!(
                "scheduler: {} -> {}",
                self.scheduler.as_deref().unwrap_or("-"),
                now.scheduler.as_deref().unwrap_or("-")
            ));
        }
        let find = |v: &[(String, String)], k: &str| {
            v.iter().find(|(n, _)| n == k).map(|(_, x)| x.clone())
        };
        for (k, v) in &self.knobs {
            let n = find(&now.knobs, k);
            if n.as_deref() != Some(v.as_str()) {
                d.push(format!("{k}: {v} -> {}", n.unwrap_or_else(|| "-".into())));
            }
        }
        if self.scheduler == now.scheduler {
            for (k, v) in &self.iosched {
                let n = find(&now.iosched, k);
                if n.as_deref() != Some(v.as_str()) {
                    d.push(format!(
                        "iosched/{k}: {v} -> {}",
                        n.unwrap_or_else(|| "-".into())
                    ));
                }
            }
        }
        d
    }
}

/// The schedulers to write, in order, so that `want` runs as a new
/// instance: itself, after another one (`none` when offered) if it is the
/// one running. `none` keeps no state, so it needs no detour.
fn fresh_switch<'a>(offered: &'a [String], current: &str, want: &'a str) -> Vec<&'a str> {
    if current != want || want == "none" {
        return vec![want];
    }
    let other = offered
        .iter()
        .map(String::as_str)
        .filter(|&s| s != want)
        .min_by_key(|&s| s != "none");
    match other {
        Some(o) => vec![o, want],
        None => vec![want],
    }
}

/// Restores a snapshot when dropped (error paths and panics included), unless
/// [`QueueGuard::restore`] already did.
pub struct QueueGuard {
    pub queue: Queue,
    pub snapshot: Snapshot,
    done: bool,
}

impl QueueGuard {
    pub fn new(queue: Queue, extra: &[String]) -> QueueGuard {
        let snapshot = queue.snapshot(extra);
        QueueGuard {
            queue,
            snapshot,
            done: false,
        }
    }

    pub fn restore(&mut self) -> Vec<String> {
        self.done = true;
        self.queue.restore(&self.snapshot)
    }
}

impl Drop for QueueGuard {
    fn drop(&mut self) {
        if !self.done {
            for e in self.restore() {
                super::say::line(&format!("elevator: warning: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_line() {
        let (all, cur) = parse_scheduler_line("[none] mq-deadline kyber bfq \n");
        assert_eq!(all, vec!["none", "mq-deadline", "kyber", "bfq"]);
        assert_eq!(cur, "none");
        let (_, cur) = parse_scheduler_line("none mq-deadline [bfq]");
        assert_eq!(cur, "bfq");
        let (all, cur) = parse_scheduler_line("none");
        assert_eq!((all.len(), cur.as_str()), (1, "none"));
    }

    #[test]
    fn a_running_scheduler_is_restarted_through_another() {
        let offered: Vec<String> = ["none", "mq-deadline", "kyber", "bfq"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(fresh_switch(&offered, "none", "bfq"), vec!["bfq"]);
        assert_eq!(fresh_switch(&offered, "bfq", "bfq"), vec!["none", "bfq"]);
        assert_eq!(fresh_switch(&offered, "none", "none"), vec!["none"]);
        let no_none: Vec<String> = vec!["mq-deadline".into(), "kyber".into()];
        assert_eq!(
            fresh_switch(&no_none, "kyber", "kyber"),
            vec!["mq-deadline", "kyber"]
        );
        let only: Vec<String> = vec!["kyber".into()];
        assert_eq!(fresh_switch(&only, "kyber", "kyber"), vec!["kyber"]);
    }

    #[test]
    fn device_numbers() {
        // makedev(7, 1) and makedev(259, 3) as glibc encodes them.
        assert_eq!(dev_string((7 << 8) | 1), "7:1");
        assert_eq!(dev_string((259 << 8) | 3), "259:3");
        let big = ((300u64 & 0xff) | ((1u64 & 0xfff) << 8)) | ((300u64 & !0xff) << 12);
        assert_eq!(dev_string(big), "1:300");
    }

    const MOUNTINFO: &str = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 7:3 / /tmp/my\\040mnt rw,relatime - ext4 /dev/loop3 rw
41 22 0:35 / /tmp/t rw - tmpfs labtmpfs rw,size=5G
";

    #[test]
    fn mounts_by_number_and_source() {
        let m = mounts_of(MOUNTINFO, "7:3", "/dev/loop3");
        assert_eq!(m, vec![("/tmp/my mnt".to_string(), "ext4".to_string())]);
        assert!(mounts_of(MOUNTINFO, "7:4", "/dev/loop4").is_empty());
        // Anonymous device numbers never match a block device.
        assert!(mounts_of(MOUNTINFO, "0:35", "/dev/loop9").is_empty());
        assert_eq!(mounts_of(MOUNTINFO, "", "/dev/vda").len(), 1);
    }

    #[test]
    fn swaps() {
        let s = "Filename\tType\tSize\tUsed\tPriority\n/dev/loop5 partition 1024 0 -2\n";
        assert!(is_swap(s, "/dev/loop5"));
        assert!(!is_swap(s, "/dev/loop6"));
        assert!(!is_swap("Filename\tType\n", "/dev/loop5"));
    }

    /// Every kind of knob: scheduler-reset, limits, plain, read-ahead and
    /// one the lab does not know, each set to "1".
    fn every_kind_of_knob() -> Vec<(String, String)> {
        [
            "nr_requests",
            "read_ahead_kb",
            "rotational",
            "nomerges",
            "max_sectors_kb",
            "write_cache",
            "wbt_lat_usec",
            "rq_affinity",
            "some_new_limit",
        ]
        .iter()
        .map(|k| (k.to_string(), "1".to_string()))
        .collect()
    }

    #[test]
    fn limits_go_before_the_scheduler_switch_and_the_rest_after() {
        let first: Vec<String> = limits_before_switch(&every_kind_of_knob())
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(first, ["rotational", "max_sectors_kb", "write_cache"]);
    }

    #[test]
    fn read_ahead_is_written_after_the_limits_that_reset_it() {
        let knobs = every_kind_of_knob();
        let order: Vec<String> = in_write_order(&knobs).into_iter().map(|(k, _)| k).collect();
        let at = |k: &str| order.iter().position(|x| x == k).unwrap();
        assert_eq!(at("nr_requests"), 0);
        assert_eq!(at("read_ahead_kb"), order.len() - 1);
        for limit in [
            "rotational",
            "max_sectors_kb",
            "write_cache",
            "some_new_limit",
        ] {
            assert!(at(limit) < at("read_ahead_kb"), "{order:?}");
        }
    }

    #[test]
    fn snapshot_differences() {
        let a = Snapshot {
            scheduler: Some("none".into()),
            knobs: vec![("nr_requests".into(), "128".into())],
            iosched: vec![],
        };
        let mut b = a.clone();
        assert!(a.differences(&b).is_empty());
        b.knobs[0].1 = "64".into();
        b.scheduler = Some("bfq".into());
        let d = a.differences(&b);
        assert_eq!(d.len(), 2, "{d:?}");
        assert!(d[1].contains("nr_requests: 128 -> 64"));
    }
}
