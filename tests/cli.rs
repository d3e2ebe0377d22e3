//! The command line as a user meets it: help everywhere, suggestions for
//! typos, output errors reported, a job on standard input, a run re-run
//! from its JSON result byte for byte, cgroup files, the JSON's
//! `elevator.disk_stats`. Black-box: each test runs the built binary.

use std::io::Write;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_elevator");

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_with(args: &[&str], stdin: Option<&str>) -> Out {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_remove("SOURCE_DATE_EPOCH")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = cmd.spawn().expect("the elevator binary runs");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(text.as_bytes())
            .expect("write stdin");
    }
    let o = child.wait_with_output().expect("elevator ends");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn run(args: &[&str]) -> Out {
    run_with(args, None)
}

const SMALL: &[&str] = &["--name=a", "--size=1m", "--direct=1", "--no-progress"];

fn with_small(extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = vec!["run".into()];
    v.extend(SMALL.iter().map(|s| s.to_string()));
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

fn run_small(extra: &[&str]) -> Out {
    let v = with_small(extra);
    let args: Vec<&str> = v.iter().map(String::as_str).collect();
    run(&args)
}

/// A scratch directory removed when the test ends.
struct Scratch(std::path::PathBuf);
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
fn scratch(tag: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("elevator-cli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

#[test]
fn every_command_answers_help_both_ways() {
    for cmd in [
        "run",
        "compare",
        "schedulers",
        "devices",
        "lab",
        "validate",
        "calibrate",
        "loop",
    ] {
        let a = run(&[cmd, "--help"]);
        assert_eq!(a.code, 0, "{cmd} --help: {}", a.stderr);
        assert!(
            a.stdout.contains(&format!("elevator {cmd}")),
            "{cmd}: {}",
            a.stdout
        );
        let b = run(&["help", cmd]);
        assert_eq!(b.code, 0, "help {cmd}");
        assert_eq!(a.stdout, b.stdout, "help {cmd} is {cmd} --help");
    }
    let top = run(&["help"]);
    assert_eq!(top.code, 0);
    assert!(top.stdout.contains("compare") && top.stdout.contains("validate"));
}

#[test]
fn typos_get_suggestions_and_exit_2() {
    let e = run_small(&["--schedular", "mq-deadline"]);
    assert_eq!(e.code, 2);
    assert!(
        e.stderr.contains("did you mean '--scheduler'"),
        "{}",
        e.stderr
    );
    let e = run(&["compaer"]);
    assert_eq!(e.code, 2);
    assert!(e.stderr.contains("did you mean 'compare'"), "{}", e.stderr);
    let e = run(&["devices", "--shw", "hdd"]);
    assert_eq!(e.code, 2);
    assert!(e.stderr.contains("did you mean '--show'"), "{}", e.stderr);
}

#[test]
fn a_failed_write_of_the_output_is_an_error() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
    let Ok(full) = full else {
        eprintln!("note: no /dev/full here; skipping");
        return;
    };
    let o = Command::new(BIN)
        .args(with_small(&[]))
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("writing standard output"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn a_job_file_on_standard_input() {
    let job = "[a]\nrw=randread\nsize=1m\ndirect=1\nioengine=libaio\niodepth=4\n";
    let o = run_with(
        &["run", "-", "--no-progress", "--output-format=terse"],
        Some(job),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("3;"), "{}", o.stdout);
}

#[test]
fn a_json_result_reruns_byte_for_byte() {
    let dir = scratch("spec");
    let first = dir.0.join("first.json");
    let again = dir.0.join("again.json");
    let o = run_small(&[
        "--rw=randrw",
        "--ioengine=libaio",
        "--iodepth=8",
        "--scheduler=mq-deadline",
        "--set=iosched/fifo_batch=4",
        "--switch=1ms=none",
        "--cpus=3",
        "--seed=7",
        "--output-format=json",
        "--output",
        first.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = run(&[
        "run",
        "--spec",
        first.to_str().unwrap(),
        "--output-format=json",
        "--no-progress",
        "--output",
        again.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let a = std::fs::read(&first).unwrap();
    let b = std::fs::read(&again).unwrap();
    assert!(a == b, "the re-run differs");
    // The spec alone reproduces it too; a changed seed does not.
    let spec = dir.0.join("spec.json");
    let o = run(&[
        "run",
        "--spec",
        first.to_str().unwrap(),
        "--print-spec",
        "--output",
        spec.to_str().unwrap(),
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = run(&[
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--output-format=json",
        "--no-progress",
    ]);
    assert_eq!(o.stdout.as_bytes(), &a[..]);
    let o = run(&[
        "run",
        "--spec",
        spec.to_str().unwrap(),
        "--seed=8",
        "--output-format=json",
        "--no-progress",
    ]);
    assert_ne!(o.stdout.as_bytes(), &a[..]);
}

#[test]
fn json_carries_disk_stats_with_the_kernel_names() {
    let o = run_small(&["--output-format=json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let ds = v["elevator"]["disk_stats"].as_object().expect("disk_stats");
    let names: Vec<&str> = ds.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "read_ios",
            "read_merges",
            "read_sectors",
            "read_ticks",
            "write_ios",
            "write_merges",
            "write_sectors",
            "write_ticks",
            "in_flight",
            "io_ticks",
            "time_in_queue",
            "discard_ios",
            "discard_merges",
            "discard_sectors",
            "discard_ticks",
            "flush_ios",
            "flush_ticks"
        ]
    );
    assert_eq!(ds["read_sectors"], 2048, "1 MiB read");
}

#[test]
fn cgroup_files_are_set_with_their_ranges() {
    let ok = run_small(&[
        "--cgroup-version=2",
        "--set",
        "cgroup:test1/io.bfq.weight=300",
    ]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    for (args, want) in [
        (
            vec![
                "--cgroup-version=2",
                "--set",
                "cgroup:test1/io.bfq.weight=0",
            ],
            "out of range",
        ),
        (
            vec!["--set", "cgroup:test1/blkio.weight=5"],
            "out of range 10..1000",
        ),
        (
            vec!["--set", "cgroup:test1/io.weight=100"],
            "cgroup v2 file",
        ),
        (
            vec!["--set", "cgroup:test1/cpu.weight=100"],
            "no cgroup weight file",
        ),
        (vec!["--cgroup-version=3"], "--cgroup-version"),
    ] {
        let e = run_small(&args);
        assert_eq!(e.code, 2, "{args:?}: {}", e.stderr);
        assert!(e.stderr.contains(want), "{args:?}: {}", e.stderr);
    }
}

#[test]
fn compare_rejects_unknown_schedulers_and_run_only_options() {
    let e = run(&[
        "compare",
        "--name=a",
        "--size=1m",
        "--schedulers",
        "none,foo",
    ]);
    assert_eq!(e.code, 2);
    assert!(e.stderr.contains("unknown scheduler 'foo'"), "{}", e.stderr);
    let e = run(&["compare", "--name=a", "--output-format=json"]);
    assert_eq!(e.code, 2);
    assert!(e.stderr.contains("--format"), "{}", e.stderr);
}

#[test]
fn schedulers_lists_every_tunable_with_its_default() {
    let o = run(&["schedulers"]);
    assert_eq!(o.code, 0);
    for t in [
        "iosched/read_expire",
        "iosched/fifo_batch",
        "iosched/prio_aging_expire",
    ] {
        assert!(o.stdout.contains(t), "{t}");
    }
    // mq-deadline's async_depth defaults to nr_requests (dd_depth_updated sets
    // it on every depth change), not to 1 as the listing once said.
    let line = o
        .stdout
        .lines()
        .find(|l| l.contains("iosched/async_depth"))
        .expect("async_depth listed");
    assert!(line.contains("default nr_requests"), "{line}");
}

/// A kernel without blk-mq has no `none`: without `--scheduler` the run
/// takes that kernel's default elevator (CFQ) and says so; an explicit
/// `none` is still an error naming what the kernel had.
#[test]
fn a_kernel_before_blk_mq_defaults_to_its_own_elevator() {
    let o = run_small(&["--kernel", "2.6.32", "--output-format", "json"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr.contains("its default elevator, cfq, runs"),
        "{}",
        o.stderr
    );
    assert!(o.stdout.contains("\"scheduler\" : \"cfq\""), "{}", o.stdout);
    let o = run_small(&["--kernel", "2.6.32", "--scheduler", "none"]);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("kernel 2.6.32 had: noop, deadline, cfq"),
        "{}",
        o.stderr
    );
    let o = run_small(&["--kernel", "6.1"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!o.stderr.contains("default elevator"), "{}", o.stderr);
}

#[test]
fn dm_names_the_crypt_target_and_its_costs_or_says_what_is_wrong() {
    let o = run_small(&["--dm", "crypt:sector_ns=500", "--print-spec"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("\"dm\": \"crypt:sector_ns=500\""),
        "{}",
        o.stdout
    );
    let e = run_small(&["--dm", "linear"]);
    assert_eq!(e.code, 2);
    assert!(
        e.stderr
            .contains("--dm: 'linear': the device-mapper target modelled is crypt"),
        "{}",
        e.stderr
    );
    let e = run_small(&["--dm", "crypt:sector_ns=-1"]);
    assert_eq!(e.code, 2);
    assert!(e.stderr.contains("--dm: sector_ns=-1"), "{}", e.stderr);
}
