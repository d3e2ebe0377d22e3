//! Restoring in dependency order (hardening issue, item 11). On this kernel
//! writing `rotational` or `max_sectors_kb` recomputes `read_ahead_kb`, so
//! it must be restored last. Root and fio (CI); counted as skipped
//! elsewhere (tests/lab_support).

mod lab_support;

use lab_support::{elevator_env, job, ready, scratch, serial, text, Loop};

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
