//! A lab run killed outright (hardening issue, item 12): after `kill -9`
//! no fio process is left writing, and the restore journal lets the next
//! run (or `elevator lab --recover`) put back the scheduler, the knobs and
//! the cgroups and remove the working directory before taking its baseline.
//! Also: Ctrl-C during `--settle` starts no fio. Root and fio (CI); counted
//! as skipped elsewhere (tests/lab_support).

mod lab_support;

use lab_support::{
    elevator_env, job, our_cgroups, procs_matching, ready, scratch, serial, text, wait_for,
    work_dirs, Loop, BIN,
};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const JOB: &str = "[global]\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=4k\niodepth=8\nruntime=60\ntime_based=1\n\
                   [a]\ncgroup=a\ncgroup_weight=800\n[b]\ncgroup=b\ncgroup_weight=200\n";

fn journals(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0)
}

/// `elevator lab JOBFILE` on `dev` with BFQ, or another scheduler where
/// the kernel lacks it.
fn lab_on(dev: &Loop, jobfile: &str) -> Command {
    let mut c = Command::new(BIN);
    c.args(["lab", jobfile, "--dev", &dev.0, "--schedulers"])
        .arg(dev.switch_target());
    c
}

/// Start a lab run with BFQ (or another scheduler where the kernel lacks
/// it) and changed knobs, wait until fio writes, then SIGKILL it. Returns
/// the dead lab's pid.
fn start_and_kill(dev: &Loop, jobfile: &str, journal_dir: &Path) -> u32 {
    let mut lab = lab_on(dev, jobfile)
        .args([
            "--set",
            "nr_requests=32",
            "--set",
            "read_ahead_kb=1024",
            "--set",
            "iosched/low_latency=0",
        ])
        .env("ELEVATOR_LAB_JOURNAL_DIR", journal_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = lab.id();
    let pattern = format!("elevator-lab-{pid}-");
    // fio and its two job processes.
    let running = wait_for(15.0, || lab_support::fio_procs(&pattern).len() >= 3);
    if !running {
        let _ = lab.kill();
        let _ = lab.wait();
        panic!("fio did not start");
    }
    std::thread::sleep(Duration::from_millis(500));
    lab.kill().unwrap(); // SIGKILL
    lab.wait().unwrap();
    pid
}

#[test]
fn kill_9_leaves_no_fio_and_recover_restores_everything() {
    if !ready("kill_9_leaves_no_fio_and_recover_restores_everything", &[]) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("256M");
    dev.write("read_ahead_kb", "512");
    let before = dev.state();
    let cg_before = our_cgroups();
    let dir = scratch("kill9");
    let jd = dir.path().join("journal");
    let _recover = lab_support::RecoverOnDrop(jd.clone());
    let j = job(dir.path(), "cg.fio", JOB);
    let pid = start_and_kill(&dev, &j, &jd);
    let pattern = format!("elevator-lab-{pid}-");
    assert!(
        wait_for(5.0, || procs_matching(&pattern).is_empty()),
        "fio outlived the lab: {:?}",
        procs_matching(&pattern)
    );
    // What the killed run left: its scheduler, knobs, groups, directory.
    assert!(dev
        .read("scheduler")
        .contains(&format!("[{}]", dev.switch_target())));
    assert_eq!(dev.read("nr_requests"), "32");
    assert_eq!(our_cgroups().len(), cg_before.len() + 2);
    assert_eq!(work_dirs(pid).len(), 1);
    assert_eq!(journals(&jd), 1);
    let o = elevator_env(
        &["lab", "--recover"],
        &[("ELEVATOR_LAB_JOURNAL_DIR", jd.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("recovered an interrupted lab run"), "{out}");
    assert!(out.contains(&format!("pid {pid}")), "{out}");
    assert_eq!(before, dev.state(), "queue state after --recover");
    assert_eq!(cg_before, our_cgroups(), "cgroups after --recover");
    assert!(work_dirs(pid).is_empty(), "working directory left");
    assert_eq!(journals(&jd), 0);
}

#[test]
fn the_next_run_restores_a_killed_run_before_taking_its_baseline() {
    if !ready(
        "the_next_run_restores_a_killed_run_before_taking_its_baseline",
        &[],
    ) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("256M");
    dev.write("scheduler", "mq-deadline");
    dev.write("iosched/fifo_batch", "7");
    let before = dev.state();
    let cg_before = our_cgroups();
    let dir = scratch("kill9next");
    let jd = dir.path().join("journal");
    let _recover = lab_support::RecoverOnDrop(jd.clone());
    let j = job(dir.path(), "cg.fio", JOB);
    let pid = start_and_kill(&dev, &j, &jd);
    assert!(wait_for(5.0, || procs_matching(&format!(
        "elevator-lab-{pid}-"
    ))
    .is_empty()));
    assert!(dev
        .read("scheduler")
        .contains(&format!("[{}]", dev.switch_target())));
    let short = job(
        dir.path(),
        "short.fio",
        "[r]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nruntime=1\ntime_based=1\n",
    );
    let o = elevator_env(
        &["lab", &short, "--dev", &dev.0, "--schedulers", "none"],
        &[("ELEVATOR_LAB_JOURNAL_DIR", jd.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("recovered an interrupted lab run") && err.contains(&format!("pid {pid}")),
        "{err}"
    );
    // Its baseline was the real one, so that is what it left.
    assert_eq!(before, dev.state());
    assert_eq!(cg_before, our_cgroups());
    assert!(work_dirs(pid).is_empty());
    assert_eq!(journals(&jd), 0);
}

#[test]
fn ctrl_c_during_settle_starts_no_fio() {
    if !ready("ctrl_c_during_settle_starts_no_fio", &[]) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("64M");
    let before = dev.state();
    let dir = scratch("settle");
    let jd = dir.path().join("journal");
    let _recover = lab_support::RecoverOnDrop(jd.clone());
    let j = job(
        dir.path(),
        "r.fio",
        "[r]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\nruntime=1\ntime_based=1\n",
    );
    let target = dev.switch_target();
    let mut lab = Command::new(BIN)
        .args([
            "lab",
            &j,
            "--dev",
            &dev.0,
            "--schedulers",
            &target,
            "--settle",
            "6s",
        ])
        .env("ELEVATOR_LAB_JOURNAL_DIR", &jd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pattern = format!("elevator-lab-{}-", lab.id());
    assert!(
        wait_for(10.0, || dev
            .read("scheduler")
            .contains(&format!("[{target}]"))),
        "the lab did not switch to {target}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let k = Command::new("kill")
        .args(["-INT", &lab.id().to_string()])
        .output()
        .unwrap();
    assert!(k.status.success());
    let t0 = Instant::now();
    let mut saw_fio = false;
    let status = loop {
        if !lab_support::fio_procs(&pattern).is_empty() {
            saw_fio = true;
        }
        if let Some(st) = lab.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = lab.kill();
            panic!("the lab did not stop");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stopped_after = t0.elapsed();
    let o = lab.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(130), "{}", text(&o));
    assert!(!saw_fio, "fio started after Ctrl-C");
    assert!(
        stopped_after < Duration::from_secs(3),
        "Ctrl-C waited for the settle pause ({stopped_after:?})"
    );
    assert_eq!(before, dev.state());
}

/// Start a lab run on `dev` and wait for fio; returns the lab and its guard's pid.
fn start_with_guard(dev: &Loop, jobfile: &str, jd: &Path) -> (std::process::Child, u32) {
    let lab = lab_on(dev, jobfile)
        .env("ELEVATOR_LAB_JOURNAL_DIR", jd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pattern = format!("elevator-lab-{}-", lab.id());
    assert!(wait_for(15.0, || lab_support::fio_procs(&pattern).len() >= 3));
    let guards: Vec<u32> = procs_matching(&pattern)
        .into_iter()
        .filter(|(_, cmd)| cmd.contains("elevator-fio-guard"))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(guards.len(), 1, "{:?}", procs_matching(&pattern));
    (lab, guards[0])
}

fn signal(sig: &str, pid: u32) {
    let k = Command::new("kill")
        .args([sig, &pid.to_string()])
        .output()
        .unwrap();
    assert!(k.status.success(), "kill {sig} {pid}");
}

#[test]
fn fio_is_killed_even_when_its_guard_is_killed() {
    if !ready("fio_is_killed_even_when_its_guard_is_killed", &[]) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("256M");
    let before = dev.state();
    let dir = scratch("kill9guard");
    let jd = dir.path().join("journal");
    let _recover = lab_support::RecoverOnDrop(jd.clone());
    let j = job(dir.path(), "cg.fio", JOB);

    // The guard dies (SIGKILL: its trap cannot run), the lab lives: the lab
    // kills fio itself, restores and fails.
    let (lab, guard) = start_with_guard(&dev, &j, &jd);
    let pattern = format!("elevator-lab-{}-", lab.id());
    signal("-KILL", guard);
    let o = lab.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("guard ended"),
        "{}",
        text(&o)
    );
    assert!(
        procs_matching(&pattern).is_empty(),
        "{:?}",
        procs_matching(&pattern)
    );
    assert_eq!(before, dev.state());
    assert_eq!(journals(&jd), 0);

    // The lab is frozen, its guard killed, then the lab: fio is left, and
    // recovery kills it by its command line.
    let (mut lab, guard) = start_with_guard(&dev, &j, &jd);
    let pattern = format!("elevator-lab-{}-", lab.id());
    signal("-STOP", lab.id());
    signal("-KILL", guard);
    lab.kill().unwrap();
    lab.wait().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !lab_support::fio_procs(&pattern).is_empty(),
        "fio stopped without its guard"
    );
    let o = elevator_env(
        &["lab", "--recover"],
        &[("ELEVATOR_LAB_JOURNAL_DIR", jd.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("killed leftover fio processes"),
        "{}",
        text(&o)
    );
    assert!(wait_for(5.0, || procs_matching(&pattern).is_empty()));
    assert_eq!(before, dev.state());
    assert_eq!(journals(&jd), 0);
}
