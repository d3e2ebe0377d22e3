//! File-backed loop devices for the lab (`elevator loop create|remove`).
//!
//! A device is a backing file in a private directory (marked with an
//! `ELEVATOR_LOOP` file so that `remove` only ever deletes what `create`
//! made), attached with `losetup --direct-io=on`. Backing:
//! - `tmpfs`: the file lives in a private tmpfs mount: CPU-bound, the least
//!   noisy device these machines have (scheduler CPU cost shows).
//! - `disk`: the file lives on the filesystem of `--dir` (default /var/tmp):
//!   real I/O underneath, but host caching makes it drift.
//!
//! The backing is written in full first: unwritten extents would read back as
//! zeros without any I/O (tmpfs pages would not exist yet).

use super::device::BlockDev;
use super::LabError;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const MARKER: &str = "ELEVATOR_LOOP";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backing {
    Tmpfs,
    Disk,
}

#[derive(Clone, Debug)]
pub struct LoopSpec {
    pub size: u64,
    pub rotational: Option<bool>,
    pub backing: Backing,
    /// Where the private directory goes (default /tmp for tmpfs, /var/tmp for disk).
    pub dir: Option<PathBuf>,
}

/// `4G`, `512M`, `4GiB`, `1T`, `65536`: binary units.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("expected a size like 4G or 512M, got '{s}'"))?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit
        .strip_suffix("ib")
        .or_else(|| unit.strip_suffix('b'))
        .unwrap_or(&unit);
    let mult: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Err(format!("unknown size unit in '{s}' (K, M, G, T)")),
    };
    n.checked_mul(mult)
        .ok_or_else(|| format!("size '{s}' is too large"))
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}").replace('"', "");
    let out = cmd
        .output()
        .map_err(|e| format!("{shown}: cannot run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn unique_dir(base: &Path) -> Result<PathBuf, String> {
    fs::create_dir_all(base).map_err(|e| format!("{}: {e}", base.display()))?;
    for k in 0..1000 {
        let p = base.join(format!("elevator-loop-{}-{k}", std::process::id()));
        match fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{}: {e}", p.display())),
        }
    }
    Err(format!("no free directory name under {}", base.display()))
}

fn is_mountpoint(p: &Path) -> bool {
    let mounts = fs::read_to_string("/proc/mounts").unwrap_or_default();
    let want = p.display().to_string();
    mounts
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(want.as_str()))
}

/// Partial state, undone on drop unless disarmed.
struct Undo {
    dir: PathBuf,
    mnt: Option<PathBuf>,
    dev: Option<String>,
    armed: bool,
}

impl Drop for Undo {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        if let Some(d) = &self.dev {
            let _ = Command::new("losetup").arg("-d").arg(d).output();
        }
        if let Some(m) = &self.mnt {
            for _ in 0..20 {
                if Command::new("umount")
                    .arg(m)
                    .output()
                    .is_ok_and(|o| o.status.success())
                {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Create, fill and attach; returns `/dev/loopN`.
pub fn create(spec: &LoopSpec) -> Result<String, String> {
    if !super::is_root() {
        return Err("loop create needs root (mount, losetup)".into());
    }
    if spec.size < 1 << 20 || !spec.size.is_multiple_of(1 << 20) {
        return Err(format!(
            "--size: expected a whole number of MiB, at least 1M (got {} bytes)",
            spec.size
        ));
    }
    let base = spec.dir.clone().unwrap_or_else(|| {
        PathBuf::from(match spec.backing {
            Backing::Tmpfs => "/tmp",
            Backing::Disk => "/var/tmp",
        })
    });
    let dir = unique_dir(&base)?;
    let mut undo = Undo {
        dir: dir.clone(),
        mnt: None,
        dev: None,
        armed: true,
    };
    let mib = spec.size >> 20;
    let file = match spec.backing {
        Backing::Tmpfs => {
            let mnt = dir.join("tmpfs");
            fs::create_dir(&mnt).map_err(|e| format!("{}: {e}", mnt.display()))?;
            // Room for the file plus tmpfs's own bookkeeping.
            let size_opt = format!("size={}m,mode=0700", mib + 16);
            run(Command::new("mount")
                .args(["-t", "tmpfs", "-o", &size_opt, "elevator-loop"])
                .arg(&mnt))?;
            undo.mnt = Some(mnt.clone());
            let f = mnt.join("backing.img");
            run(Command::new("dd")
                .arg("if=/dev/zero")
                .arg(format!("of={}", f.display()))
                .args(["bs=1M", &format!("count={mib}"), "status=none"]))?;
            f
        }
        Backing::Disk => {
            let f = dir.join("backing.img");
            let fh = fs::File::create(&f).map_err(|e| format!("{}: {e}", f.display()))?;
            fh.set_len(spec.size)
                .map_err(|e| format!("{}: {e}", f.display()))?;
            f
        }
    };
    let dev = run(Command::new("losetup")
        .args(["--direct-io=on", "--find", "--show"])
        .arg(&file))?;
    undo.dev = Some(dev.clone());
    if spec.backing == Backing::Disk {
        // Through the loop device with O_DIRECT: allocates real extents
        // without filling the page cache.
        run(Command::new("dd")
            .arg("if=/dev/zero")
            .arg(format!("of={dev}"))
            .args([
                "bs=1M",
                &format!("count={mib}"),
                "oflag=direct",
                "status=none",
            ]))?;
    }
    let bd = BlockDev::open(&dev)?;
    if let Some(r) = spec.rotational {
        bd.queue().write("rotational", if r { "1" } else { "0" })?;
    }
    let dio = fs::read_to_string(bd.sys.join("loop/dio")).unwrap_or_default();
    if dio.trim() != "1" {
        super::say::line(&format!("elevator: warning: {dev}: direct I/O to the backing file is off (loop/dio = {}); the page cache sits under the device", dio.trim()));
    }
    let marker = format!(
        "created by elevator loop create\ndevice={dev}\nbacking={}\ntmpfs={}\nsize={}\n",
        file.display(),
        undo.mnt
            .as_ref()
            .map(|m| m.display().to_string())
            .unwrap_or_else(|| "-".into()),
        spec.size
    );
    fs::write(dir.join(MARKER), marker).map_err(|e| format!("{}: {e}", dir.display()))?;
    undo.armed = false;
    Ok(dev)
}

/// The private directory of a loop device made by [`create`], found from its
/// backing file.
fn our_dir(backing: &Path) -> Option<PathBuf> {
    let parent = backing.parent()?;
    [parent, parent.parent()?]
        .into_iter()
        .find(|d| d.join(MARKER).is_file())
        .map(Path::to_path_buf)
}

/// Detach a loop device made by `create` and delete its backing and tmpfs.
/// A device that does not exist, is not a loop device or was not made by
/// `create` is bad input.
pub fn remove(dev: &str, force: bool) -> Result<(), LabError> {
    let bd = BlockDev::open(dev).map_err(LabError::input)?;
    let backing_file = bd.sys.join("loop/backing_file");
    let backing = fs::read_to_string(&backing_file).map_err(|_| {
        LabError::input(format!(
            "{}: not an attached loop device",
            bd.path.display()
        ))
    })?;
    if !super::is_root() {
        return Err(LabError::failed("loop remove needs root (losetup, umount)"));
    }
    let backing = PathBuf::from(backing.trim().trim_end_matches(" (deleted)"));
    let dir = our_dir(&backing).ok_or_else(|| {
        LabError::input(format!(
            "{} was not created by `elevator loop create` (no {MARKER} file next to its backing file {}); detach it yourself with `losetup -d {}`",
            bd.path.display(),
            backing.display(),
            bd.path.display()
        ))
    })?;
    let mut why = bd.in_use();
    if why.is_empty() {
        if let Err(e) = bd.claim() {
            why.push(format!(
                "the kernel reports it busy ({e}): mounted or claimed elsewhere{}",
                bd.mounts_elsewhere()
                    .iter()
                    .map(|m| format!("; {m}"))
                    .collect::<String>()
            ));
        }
    }
    if !why.is_empty() {
        let msg = format!("{} is in use: {}", bd.path.display(), why.join("; "));
        if !force {
            return Err(LabError::failed(format!(
                "refusing to remove: {msg} (pass --force to detach anyway)"
            )));
        }
        super::say::line(&format!("elevator: warning: --force: {msg}"));
    }
    let q = bd.queue();
    run(Command::new("losetup").arg("-d").arg(&bd.path))?;
    // Leave the (persistent) loop device as an untouched one looks.
    for (k, v) in [
        ("scheduler", "none"),
        ("rotational", "0"),
        ("read_ahead_kb", "128"),
    ] {
        if q.read(k).ok().as_deref().map(|s| {
            if k == "scheduler" {
                super::device::parse_scheduler_line(s).1
            } else {
                s.to_string()
            }
        }) != Some(v.to_string())
        {
            let _ = q.write(k, v);
        }
    }
    let _ = fs::remove_file(&backing);
    let mnt = dir.join("tmpfs");
    if is_mountpoint(&mnt) {
        let mut last = String::new();
        let mut ok = false;
        for _ in 0..50 {
            match run(Command::new("umount").arg(&mnt)) {
                Ok(_) => {
                    ok = true;
                    break;
                }
                Err(e) => {
                    last = e;
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            }
        }
        if !ok {
            return Err(LabError::failed(format!(
                "detached, but the tmpfs stays mounted: {last}"
            )));
        }
    }
    fs::remove_dir_all(&dir).map_err(|e| LabError::failed(format!("{}: {e}", dir.display())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4G").unwrap(), 4 << 30);
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_size("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_size("64mb").unwrap(), 64 << 20);
        assert!(parse_size("4X").is_err());
        assert!(parse_size("G").is_err());
    }

    #[test]
    fn marker_lookup() {
        let d = crate::lab::TempDir::new("elevator-loop-test").unwrap();
        let tmpfs = d.path().join("tmpfs");
        fs::create_dir(&tmpfs).unwrap();
        assert_eq!(our_dir(&tmpfs.join("backing.img")), None);
        fs::write(d.path().join(MARKER), "x").unwrap();
        assert_eq!(
            our_dir(&tmpfs.join("backing.img")).as_deref(),
            Some(d.path())
        );
        assert_eq!(
            our_dir(&d.path().join("backing.img")).as_deref(),
            Some(d.path())
        );
    }
}
