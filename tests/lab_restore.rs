//! Restoring in dependency order, and never discarding results (hardening
//! issue, item 11). On this kernel writing `rotational` or `max_sectors_kb`
//! recomputes `read_ahead_kb`, so it must be restored last; and when
//! something cannot be restored, the results are printed first, then the
//! problem, with exit code 4, and `elevator lab --recover` finishes the job.
//! Root and fio (CI); counted as skipped elsewhere (tests/lab_support).

mod lab_support;

use lab_support::{
    elevator_env, job, our_cgroups, ready, scratch, serial, text, wait_for, Loop, BIN,
};
use std::process::{Child, Command, Stdio};

const EXIT_NOT_RESTORED: i32 = 4;

#[test]
fn read_ahead_is_restored_after_the_limits_that_reset_it() {
    if !ready("read_ahead_is_restored_after_the_limits_that_reset_it", &[]) {
        return;
    }
    let _g = serial();
    let dev = Loop::with(&["--size", "64M", "--rotational", "1"]);
    dev.write("read_ahead_kb", "512");
    let before = dev.state();
    assert_eq!(dev.read("rotational"), "1");
    let dir = scratch("order");
    let jd = dir.path().join("journal");
    let _recover = lab_support::RecoverOnDrop(jd.clone());
    let j = job(
        dir.path(),
        "r.fio",
        "[r]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nruntime=1\ntime_based=1\n",
    );
    let o = elevator_env(
        &[
            "lab",
            &j,
            "--dev",
            &dev.0,
            "--schedulers",
            "none,mq-deadline",
            "--set",
            "read_ahead_kb=64",
            "--set",
            "max_sectors_kb=256",
            "--set",
            "rotational=0",
        ],
        &[("ELEVATOR_LAB_JOURNAL_DIR", jd.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("mq-deadline"),
        "{}",
        text(&o)
    );
    assert_eq!(before, dev.state(), "queue state not restored");
    // The --set values were in effect together (read_ahead_kb was written
    // after the limits that would have reset it).
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("the kernel shows"),
        "{}",
        text(&o)
    );
}

struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn results_are_printed_when_restoring_fails_and_recover_finishes_later() {
    if !ready(
        "results_are_printed_when_restoring_fails_and_recover_finishes_later",
        &["sleep"],
    ) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("64M");
    let before = dev.state();
    let cg_before = our_cgroups();
    let dir = scratch("unrestored");
    let jd = dir.path().join("journal");
    let _recover = lab_support::RecoverOnDrop(jd.clone());
    let env = [("ELEVATOR_LAB_JOURNAL_DIR", jd.to_str().unwrap())];
    let j = job(
        dir.path(),
        "cg.fio",
        "[a]\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=4k\nruntime=2\ntime_based=1\ncgroup=a\n",
    );
    let lab = Command::new(BIN)
        .args(["lab", &j, "--dev", &dev.0, "--schedulers", "none"])
        .env(env[0].0, env[0].1)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let group = format!("/sys/fs/cgroup/blkio/elv{}_a", lab.id());
    assert!(
        wait_for(10.0, || std::path::Path::new(&group).exists()),
        "the lab made no group {group}"
    );
    // A process that is not the lab's sits in the group: it cannot be removed.
    let sleeper = Sleeper(Command::new("sleep").arg("120").spawn().unwrap());
    std::fs::write(format!("{group}/cgroup.procs"), sleeper.0.id().to_string()).unwrap();
    let o = lab.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(EXIT_NOT_RESTORED), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("scheduler") && out.contains("iops") && out.contains("none"),
        "results were discarded: {}",
        text(&o)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("removing cgroup"), "{err}");
    assert!(err.contains("--recover"), "{err}");
    // The queue itself was restored; the journal keeps the group.
    assert_eq!(before, dev.state());
    let journals = || {
        std::fs::read_dir(&jd)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                    .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(journals(), 1);
    // --recover does not kill what is not fio's: still there, exit 4.
    let o = elevator_env(&["lab", "--recover"], &env);
    assert_eq!(o.status.code(), Some(EXIT_NOT_RESTORED), "{}", text(&o));
    assert!(std::path::Path::new(&group).exists());
    assert_eq!(journals(), 1);
    drop(sleeper);
    let o = elevator_env(&["lab", "--recover"], &env);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("recovered an interrupted lab run"),
        "{}",
        text(&o)
    );
    assert!(!std::path::Path::new(&group).exists());
    assert_eq!(cg_before, our_cgroups());
    assert_eq!(journals(), 0);
    let o = elevator_env(&["lab", "--recover"], &env);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("nothing to recover"),
        "{}",
        text(&o)
    );
}
