//! A skipped lab test is not a passed one (hardening issue, item 14): under
//! `ELEVATOR_REQUIRE_LAB=1` (what `.ci/run` sets) a lab test that cannot run
//! fails; elsewhere it records the skip in `ELEVATOR_SKIP_DIR`, and `.ci/run`'s
//! closing line counts it as skipped. Runs everywhere (no root needed).

mod lab_support;

use std::path::Path;
use std::process::Command;

/// Run only as a child of the tests below (`LAB_SKIPS_CHILD=1`): skips.
#[test]
fn child_that_skips() {
    if std::env::var("LAB_SKIPS_CHILD").is_ok_and(|v| v == "1") {
        lab_support::skip("child_that_skips", "a reason given by the test");
    }
}

fn child(env: &[(&str, &str)]) -> std::process::Output {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "child_that_skips",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("LAB_SKIPS_CHILD", "1")
    .env_remove(lab_support::REQUIRE_ENV)
    .env_remove(lab_support::SKIP_DIR_ENV);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn a_skip_fails_where_the_lab_is_required_and_is_recorded_elsewhere() {
    let dir = lab_support::scratch("skips");
    // Required (CI): the test fails, naming why.
    let o = child(&[(lab_support::REQUIRE_ENV, "1")]);
    assert!(!o.status.success(), "{}", lab_support::text(&o));
    assert!(
        lab_support::text(&o).contains("a reason given by the test"),
        "{}",
        lab_support::text(&o)
    );
    // Not required: it passes as far as cargo knows, the note reaches the
    // real stderr, and the skip is recorded.
    let skips = dir.path().join("skips");
    std::fs::create_dir(&skips).unwrap();
    let o = child(&[(lab_support::SKIP_DIR_ENV, skips.to_str().unwrap())]);
    assert!(o.status.success(), "{}", lab_support::text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("SKIPPED child_that_skips: a reason given by the test"),
        "{}",
        lab_support::text(&o)
    );
    let files: Vec<_> = std::fs::read_dir(&skips).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
}

#[test]
fn ci_run_counts_skips_in_its_closing_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    for want in [
        "ELEVATOR_REQUIRE_LAB",
        "ELEVATOR_SKIP_DIR",
        "--summarize",
        "skipped",
    ] {
        // Checked first: without --summarize, running .ci/run would run the
        // whole test suite.
        assert!(ci.contains(want), ".ci/run does not mention {want}");
    }
    let dir = lab_support::scratch("cisummary");
    let log = dir.path().join("log");
    std::fs::write(
        &log,
        "running 5 tests\n\
         test result: ok. 5 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s\n\
         test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s\n\
         test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
    )
    .unwrap();
    let skips = dir.path().join("skips");
    std::fs::create_dir(&skips).unwrap();
    std::fs::write(skips.join("a-1"), "SKIPPED lab_a: needs root\n").unwrap();
    std::fs::write(skips.join("b-2"), "SKIPPED lab_b: fio is not installed\n").unwrap();
    let o = Command::new("bash")
        .arg(root.join(".ci/run"))
        .arg("--summarize")
        .arg(&log)
        .arg(&skips)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", lab_support::text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("skipped: lab_a: needs root"), "{out}");
    assert!(
        out.contains("skipped: lab_b: fio is not installed"),
        "{out}"
    );
    assert_eq!(
        out.lines().last(),
        Some("total: 6 passed, 1 failed, 2 skipped"),
        "{out}"
    );
}
