//! `elevator lab --mount ext4[:OPTIONS]` and `--set vm.NAME=VALUE`: the jobs
//! run on a fresh ext4 made on the loop device, the device's own counters
//! come back in the report, and the file system and the sysctls are undone
//! afterwards, also after kill -9 (by `--recover`). Root and fio (CI);
//! counted as skipped elsewhere (tests/lab_support).

mod lab_support;

use lab_support::{elevator_env, job, ready, scratch, serial, text, wait_for, Loop, BIN};
use std::process::{Command, Stdio};

const EXPIRE: &str = "/proc/sys/vm/dirty_expire_centisecs";

fn expire() -> String {
    std::fs::read_to_string(EXPIRE).unwrap().trim().to_string()
}

/// Whether `dev` is mounted anywhere this process can see.
fn mounted(dev: &str) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .any(|l| l.split(" - ").nth(1).and_then(|t| t.split(' ').nth(1)) == Some(dev))
}

/// An expire value the machine does not have now (so restoring is seen).
fn other_expire() -> String {
    if expire() == "1234" { "1235" } else { "1234" }.to_string()
}

const FSYNC_JOB: &str =
    "[f]\nioengine=psync\nrw=randwrite\nbs=4k\nsize=16m\nio_size=64k\nfsync=1\n\
                         filename=/mnt/ext4/f\n";

#[test]
fn fsync_on_ext4_reaches_the_device_with_flushes_and_everything_is_undone() {
    if !ready(
        "fsync_on_ext4_reaches_the_device_with_flushes_and_everything_is_undone",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("256M");
    let before = dev.state();
    let expire_before = expire();
    let dir = scratch("mount");
    let jd = dir.path().join("journal");
    let _recover = lab_support::RecoverOnDrop(jd.clone());
    let j = job(dir.path(), "f.fio", FSYNC_JOB);
    let value = other_expire();
    let run = |mount: &str| {
        let o = elevator_env(
            &[
                "lab",
                &j,
                "--dev",
                &dev.0,
                "--schedulers",
                "mq-deadline",
                "--mount",
                mount,
                "--set",
                "write_cache=write back",
                "--set",
                &format!("vm.dirty_expire_centisecs={value}"),
                "--format",
                "json",
                "--quiet",
            ],
            &[("ELEVATOR_LAB_JOURNAL_DIR", jd.to_str().unwrap())],
        );
        assert!(o.status.success(), "{}", text(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let run = &doc["runs"][0]["fio"];
        let knobs = run["elevator"]["knobs"].to_string();
        assert!(knobs.contains(&value), "the sysctl is reported: {knobs}");
        let ds = &run["elevator"]["disk_stats"];
        (
            ds["write_ios"].as_u64().unwrap(),
            ds["flush_ios"].as_u64().unwrap(),
        )
    };
    // 16 fsyncs of one 4 KiB write: data, journal and commit, with cache
    // flushes; nobarrier sends none.
    let (writes, flushes) = run("ext4");
    assert!(writes >= 32, "{writes} writes for 16 fsyncs");
    assert!(flushes >= 16, "{flushes} flushes for 16 fsyncs");
    let (_, flushes) = run("ext4:nobarrier");
    assert_eq!(flushes, 0);
    assert_eq!(expire(), expire_before, "vm sysctl restored");
    assert!(!mounted(&dev.0), "file system left mounted");
    assert_eq!(before, dev.state(), "queue state after the runs");
}

#[test]
fn recover_unmounts_and_restores_the_sysctls_of_a_killed_run() {
    if !ready(
        "recover_unmounts_and_restores_the_sysctls_of_a_killed_run",
        &["mkfs.ext4"],
    ) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("256M");
    let expire_before = expire();
    let dir = scratch("mountkill");
    let jd = dir.path().join("journal");
    let _recover = lab_support::RecoverOnDrop(jd.clone());
    let j = job(
        dir.path(),
        "w.fio",
        "[w]\nioengine=psync\nrw=write\nbs=64k\nsize=64m\nruntime=30\ntime_based=1\n",
    );
    let mut lab = Command::new(BIN)
        .args([
            "lab",
            &j,
            "--dev",
            &dev.0,
            "--schedulers",
            "none",
            "--mount",
            "ext4",
            "--set",
            &format!("vm.dirty_expire_centisecs={}", other_expire()),
        ])
        .env("ELEVATOR_LAB_JOURNAL_DIR", &jd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = lab.id();
    let up = wait_for(20.0, || {
        mounted(&dev.0) && !lab_support::fio_procs(&format!("elevator-lab-{pid}-")).is_empty()
    });
    lab.kill().unwrap();
    lab.wait().unwrap();
    assert!(up, "the run never mounted its file system and started fio");
    assert_ne!(expire(), expire_before, "the killed run left its sysctl");
    assert!(mounted(&dev.0), "the killed run left its file system");
    let o = elevator_env(
        &["lab", "--recover"],
        &[("ELEVATOR_LAB_JOURNAL_DIR", jd.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("unmounted"), "{out}");
    assert!(!mounted(&dev.0), "still mounted after --recover");
    assert_eq!(expire(), expire_before, "vm sysctl after --recover");
    assert!(
        lab_support::work_dirs(pid).is_empty(),
        "working directory left"
    );
}
