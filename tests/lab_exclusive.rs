//! The lab holds its device exclusively (hardening issue, item 10): a
//! filesystem mounted in another mount namespace (invisible in the lab's own
//! mountinfo) makes the lab refuse the device, and while the lab runs no one
//! can claim the device, though fio's own opens work. Root, fio, unshare and
//! mkfs.ext4 (CI); counted as skipped elsewhere (tests/lab_support).

mod lab_support;

use lab_support::{elevator, job, ready, scratch, serial, text, wait_for, Loop, BIN};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Child, Command, Stdio};

/// `O_EXCL` on the architectures CI uses.
const O_EXCL: i32 = 0o200;
const EBUSY: i32 = 16;

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn claim(dev: &str) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_EXCL)
        .open(dev)
}

#[test]
fn a_mount_in_another_namespace_is_refused_and_the_device_is_held_while_the_lab_runs() {
    if !ready(
        "a_mount_in_another_namespace_is_refused_and_the_device_is_held_while_the_lab_runs",
        &["unshare", "mkfs.ext4"],
    ) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("64M");
    let o = Command::new("mkfs.ext4")
        .args(["-q", "-F", &dev.0])
        .output()
        .unwrap();
    assert!(o.status.success(), "mkfs: {}", text(&o));
    let dir = scratch("mntns");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    // Mounted in a private mount namespace: not in this namespace's mountinfo.
    let mut ns = KillOnDrop(
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c"])
            .arg(format!(
                "mount {} {} && echo mounted && exec sleep 120",
                dev.0,
                mnt.display()
            ))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut line = String::new();
    BufReader::new(ns.0.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "mounted", "unshare/mount failed");
    let here = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !here.contains(&mnt.display().to_string()),
        "the mount leaked into this namespace"
    );
    let before = dev.state();
    let j = job(
        dir.path(),
        "w.fio",
        "[w]\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=4k\nruntime=1\ntime_based=1\n",
    );
    let o = elevator(&["lab", &j, "--dev", &dev.0, "--schedulers", "none"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refusing"), "{err}");
    assert!(err.contains("busy"), "{err}");
    assert!(
        err.contains(&format!("is mounted at {}", mnt.display()))
            && err.contains("mount namespace of pid"),
        "{err}"
    );
    assert_eq!(before, dev.state(), "a refused run changed the device");
    let o = elevator(&["calibrate", &dev.0, "--probe-time", "100ms"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    // The filesystem is intact and still mounted over there.
    assert!(claim(&dev.0).is_err_and(|e| e.raw_os_error() == Some(EBUSY)));
    drop(ns);
    assert!(
        wait_for(5.0, || claim(&dev.0).is_ok()),
        "the namespace's mount did not go away"
    );

    // Now free: the lab runs, fio opens the device, and meanwhile nobody can
    // claim (mount) it.
    let j = job(
        dir.path(),
        "w3.fio",
        "[w]\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=4k\nruntime=3\ntime_based=1\n",
    );
    let mut lab = KillOnDrop(
        Command::new(BIN)
            .args(["lab", &j, "--dev", &dev.0, "--schedulers", "none"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let pattern = format!("elevator-lab-{}-", lab.0.id());
    assert!(
        wait_for(10.0, || !lab_support::fio_procs(&pattern).is_empty()),
        "fio did not start"
    );
    let e = claim(&dev.0).expect_err("the device can be claimed while the lab runs");
    assert_eq!(e.raw_os_error(), Some(EBUSY), "{e}");
    let o = Command::new("mount")
        .arg(&dev.0)
        .arg(&mnt)
        .output()
        .unwrap();
    if o.status.success() {
        let _ = Command::new("umount").arg(&mnt).output();
        panic!("mounted while the lab ran");
    }
    let child = std::mem::replace(&mut lab.0, Command::new("true").spawn().unwrap());
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("iops"),
        "{}",
        text(&o)
    );
    assert!(
        claim(&dev.0).is_ok(),
        "the lab kept the device after it ended"
    );
}
