//! `--mount ext4[:OPTIONS]` in the lab: the jobs' files live on a fresh
//! ext4 made on the lab's device, mounted with the options the simulator's
//! `--mount` takes ([`crate::fs::MountOptions`] checks both sides, so an
//! option the model lacks, or one ext4 refuses such as
//! `journal_async_commit` with `data=ordered`, is refused before anything
//! changes).
//!
//! Every run gets its own file system (mkfs, mount, fio, unmount), as every
//! simulation starts from an empty one. mkfs initialises the inode tables
//! and the journal itself (`lazy_itable_init=0,lazy_journal_init=0`), so
//! no ext4lazyinit thread writes behind the job's back. The mount point is
//! journaled before the mount, and unmounted before anything else is
//! cleaned up, also by `elevator lab --recover`.

use std::path::Path;
use std::process::Command;

/// A checked `--mount` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsSpec {
    /// As given: `ext4` or `ext4:OPTIONS` (what the simulator gets).
    pub text: String,
    /// The `mount -o` list (`defaults` when none was given).
    pub options: String,
}

/// Check `--mount` with the simulator's parser.
pub fn parse(text: &str) -> Result<FsSpec, String> {
    let parsed =
        crate::fs::MountOptions::parse_mount(text).map_err(|e| format!("--mount {text}: {e}"))?;
    // The lab mounts only what the model simulates, so that a measured run
    // and its simulation compare (and nothing like errors=panic reaches the
    // kernel).
    if !parsed.not_modelled.is_empty() {
        return Err(format!(
            "--mount {text}: the lab takes only options the model simulates, not {}",
            parsed.not_modelled.join(", ")
        ));
    }
    let options = text.split_once(':').map_or("", |(_, o)| o).trim();
    Ok(FsSpec {
        text: text.to_string(),
        options: if options.is_empty() {
            "defaults".into()
        } else {
            options.to_string()
        },
    })
}

fn run(what: &str, cmd: &mut Command) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("{what}: cannot run it: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A new ext4 on `dev` (destroys what it held).
pub fn mkfs(dev: &Path) -> Result<(), String> {
    run(
        &format!("mkfs.ext4 {}", dev.display()),
        Command::new("mkfs.ext4")
            .args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"])
            .arg(dev),
    )
}

/// Mount `dev` at `mnt` with `spec`'s options.
pub fn mount(dev: &Path, mnt: &Path, spec: &FsSpec) -> Result<(), String> {
    run(
        &format!("mount -o {} {}", spec.options, dev.display()),
        Command::new("mount")
            .args(["-t", "ext4", "-o", &spec.options])
            .arg(dev)
            .arg(mnt),
    )
}

/// Whether something is mounted at `mnt` (`/proc/self/mountinfo`, field 5;
/// the kernel escapes spaces as `\040`).
pub fn is_mounted(mnt: &Path) -> bool {
    let want = mnt.display().to_string().replace(' ', "\\040");
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(want.as_str()))
}

/// Unmount `mnt` if it is mounted (dirty data is written back first, as
/// umount does). A just-killed fio may hold its files for a moment
/// (EBUSY), so it is tried for up to 3 s.
pub fn unmount(mnt: &Path) -> Result<(), String> {
    let mut last = Ok(());
    for _ in 0..30 {
        if !is_mounted(mnt) {
            return Ok(());
        }
        last = run(
            &format!("umount {}", mnt.display()),
            Command::new("umount").arg(mnt),
        );
        if last.is_ok() {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_by_the_simulators_parser() {
        assert_eq!(parse("ext4").unwrap().options, "defaults");
        let s = parse("ext4:data=writeback,nobarrier,commit=30").unwrap();
        assert_eq!(s.options, "data=writeback,nobarrier,commit=30");
        assert_eq!(s.text, "ext4:data=writeback,nobarrier,commit=30");
        let e = parse("ext4:journal_async_commit").unwrap_err();
        assert!(e.contains("--mount") && e.contains("data=ordered"), "{e}");
        assert!(parse("xfs").unwrap_err().contains("unknown file system"));
        let e = parse("ext4:errors=panic").unwrap_err();
        assert!(e.contains("only options the model simulates"), "{e}");
    }

    #[test]
    fn the_root_is_mounted_and_a_fresh_directory_is_not() {
        assert!(is_mounted(Path::new("/")));
        assert!(!is_mounted(Path::new("/no/such/elevator/mount")));
        assert!(unmount(Path::new("/no/such/elevator/mount")).is_ok());
    }
}
