//! Regression tests for defects found by fuzzing the simulator's inputs.
//! Black-box: each runs the built binary and checks its exit code and
//! stderr, so they hold whatever the crate's insides look like.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_elevator");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn elevator(args: &[&str]) -> Run {
    let out: Output = Command::new(BIN)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("the elevator binary runs");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Run {
    #[track_caller]
    fn ok(&self) -> &Run {
        assert_eq!(
            self.code,
            Some(0),
            "expected success\nstderr:\n{}",
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        self
    }
    /// Refused as bad input (exit 2) with a message that contains `needles`.
    #[track_caller]
    fn bad_input(&self, needles: &[&str]) -> &Run {
        assert_eq!(
            self.code,
            Some(2),
            "expected exit 2\nstderr:\n{}",
            self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        for n in needles {
            assert!(
                self.stderr.contains(n),
                "stderr lacks {n:?}:\n{}",
                self.stderr
            );
        }
        self
    }
}

/// A fresh directory under the target directory for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hardening-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write test file");
    p.display().to_string()
}

// ---- 1. switching to a legacy scheduler with several hardware queues ----

#[test]
fn switch_to_legacy_scheduler_with_several_hw_queues() {
    for device in ["nvme", "ram"] {
        for sched in ["noop", "deadline"] {
            for cpus in ["2", "4"] {
                elevator(&[
                    "run",
                    "--name=a",
                    "--size=1m",
                    "--numjobs=2",
                    "--device",
                    device,
                    "--cpus",
                    cpus,
                    "--switch",
                    &format!("1ms={sched}"),
                ])
                .ok();
            }
        }
    }
    // Back and forth between one queue and several, with delayed queue runs
    // in flight (async engine, deep queue, a mixed workload).
    elevator(&[
        "run",
        "--name=a",
        "--size=4m",
        "--ioengine=libaio",
        "--iodepth=64",
        "--rw=randrw",
        "--numjobs=3",
        "--cpus=4",
        "--scheduler=mq-deadline",
        "--switch=1ms=noop",
        "--switch=2ms=mq-deadline",
        "--switch=3ms=deadline",
        "--switch=4ms=none",
        "--max-runtime=20ms",
    ])
    .ok();
}

// ---- 2. switching to none with nr_requests above the device depth ----

/// The value of a knob in the JSON report's `elevator.knobs`.
fn knob(json: &str, name: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(json).expect("JSON report");
    v["elevator"]["knobs"][name]
        .as_str()
        .unwrap_or_else(|| panic!("no knob {name} in {}", v["elevator"]))
        .to_string()
}

#[test]
fn switch_resets_nr_requests_to_the_new_default() {
    // nr_requests=64 belongs to mq-deadline; after the switch "none" has
    // the device's queue depth (32 NCQ tags), as the kernel sets it.
    let r = elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--device",
        "hdd",
        "--scheduler",
        "mq-deadline",
        "--set",
        "nr_requests=64",
        "--switch",
        "1ms=none",
        "--output-format=json",
    ]);
    r.ok();
    assert_eq!(knob(&r.stdout, "nr_requests"), "32");
    // And the other way: none with a lowered depth, then mq-deadline gets
    // its own default 2 x min(32, 128) = 64.
    let r = elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--device=hdd",
        "--set=nr_requests=8",
        "--switch=1ms=mq-deadline",
        "--output-format=json",
    ]);
    r.ok();
    assert_eq!(knob(&r.stdout, "nr_requests"), "64");
    // Without a switch the setting cannot apply to none: refused up front.
    elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--device=hdd",
        "--set=nr_requests=64",
    ])
    .bad_input(&["nr_requests", "32"]);
}

#[test]
fn settings_for_switch_targets_are_checked_before_the_run() {
    // fifo_batch only exists in the scheduler switched to: a bad value must
    // be refused before the run, not fail the switch in mid-run.
    let r = elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--set=iosched/fifo_batch=abc",
        "--switch=1ms=mq-deadline",
    ]);
    r.bad_input(&["iosched/fifo_batch", "abc"]);
    assert!(r.stdout.is_empty(), "nothing ran: {}", r.stdout);
}
