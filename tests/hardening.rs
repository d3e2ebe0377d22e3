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
