//! Regression tests for defects found by fuzzing the simulator's inputs.
//! Black-box: each runs the built binary and checks its exit code and
//! stderr, so they hold whatever the crate's insides look like.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_elevator");

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Longest a single run may take: the defects include runs that never end
/// in practice (an include tree of 4^14 files, a simulation 1300 times
/// slower than real time); with the fix every run here takes well under a
/// second.
const TIMEOUT: Duration = Duration::from_secs(120);

fn elevator(args: &[&str]) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the elevator binary runs");
    // Read both pipes on threads so a chatty child cannot block on them.
    let mut so = child.stdout.take().expect("stdout");
    let mut se = child.stderr.take().expect("stderr");
    let so = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = so.read_to_end(&mut v);
        v
    });
    let se = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = se.read_to_end(&mut v);
        v
    });
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait for elevator") {
            break st;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("elevator {args:?} still running after {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = Output {
        status,
        stdout: so.join().expect("stdout reader"),
        stderr: se.join().expect("stderr reader"),
    };
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

// ---- 3. allocations sized by input ----

#[test]
fn iodepth_beyond_the_engine_queue_limit_is_refused() {
    let dir = scratch("iodepth");
    let job = write(
        &dir,
        "job.fio",
        "[global]\nioengine=libaio\niodepth=4294967295\nsize=1m\n[a]\n",
    );
    elevator(&["run", &job]).bad_input(&[
        "job.fio:3: option 'iodepth': 4294967295 exceeds 65536",
        "aio-max-nr",
    ]);
    // The engine may come after the depth, or from [global].
    let job = write(
        &dir,
        "late.fio",
        "[global]\niodepth=40000\n[a]\nsize=1m\nioengine=io_uring\n",
    );
    elevator(&["run", &job]).bad_input(&[
        "late.fio:2: option 'iodepth': 40000 exceeds 32768",
        "IORING_MAX_ENTRIES",
    ]);
    elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--ioengine=null",
        "--iodepth=100000",
    ])
    .bad_input(&["option 'iodepth'", "100000 exceeds 65536"]);
    // At the limits they run; a synchronous engine runs at depth 1 whatever
    // iodepth says, as fio caps it.
    elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--ioengine=libaio",
        "--iodepth=65536",
    ])
    .ok();
    elevator(&["run", "--name=a", "--size=1m", "--iodepth=4294967295"]).ok();
}

#[test]
fn nrfiles_beyond_the_open_file_limit_is_refused() {
    elevator(&["run", "--name=a", "--size=1g", "--nrfiles=5000000"])
        .bad_input(&["option 'nrfiles': 5000000 exceeds 1048576", "nr_open"]);
}

#[test]
fn total_job_state_is_bounded_before_allocating() {
    // Each job within its limits, all of them together far beyond memory.
    elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--ioengine=libaio",
        "--iodepth=65536",
        "--numjobs=4096",
    ])
    .bad_input(&["option 'iodepth'", "limit of 1024 MiB"]);
    elevator(&[
        "run",
        "--name=a",
        "--size=16g",
        "--nrfiles=1000000",
        "--numjobs=64",
    ])
    .bad_input(&["option 'nrfiles'", "limit of 1024 MiB"]);
}

#[test]
fn include_fan_out_is_bounded() {
    // Each level includes the next one four times: 4^13 reads of the last.
    let dir = scratch("include-fanout");
    for i in 1..=14 {
        let text = if i < 14 {
            format!("include l{}.fio\n", i + 1).repeat(4)
        } else {
            "bs=4k\n".to_string()
        };
        write(&dir, &format!("l{i}.fio"), &text);
    }
    let main = write(&dir, "main.fio", "[a]\nsize=1m\ninclude l1.fio\n");
    elevator(&["run", &main]).bad_input(&["option 'include'", "1024 includes", ".fio:"]);
    // The bytes read are bounded too: two includes of a 9 MiB file.
    let big = "bs=4k\n".repeat((9 << 20) / 6);
    write(&dir, "big.fio", &big);
    let main = write(
        &dir,
        "twice.fio",
        "[a]\nsize=1m\ninclude big.fio\ninclude big.fio\n",
    );
    elevator(&["run", &main]).bad_input(&[
        "twice.fio:4: option 'include'",
        "big.fio",
        "16777216 bytes",
    ]);
}

// ---- 4. CPU costs and simulated time arithmetic ----

#[test]
fn cpu_costs_are_range_checked() {
    elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--scheduler=mq-deadline",
        "--set=cpu/mq-deadline.dispatch_ns=18446744073709550000",
    ])
    .bad_input(&["cpu/mq-deadline.dispatch_ns", "0..=1000000 ns"]);
    let r = elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--set=cpu/submit_ns=100000000000",
        "--max-runtime=200ms",
    ]);
    r.bad_input(&["cpu/submit_ns", "0..=1000000 ns"]);
    // The same range in a profile's [cpu] table, with the file and line;
    // a host speed out of its range too.
    let dir = scratch("cpu");
    for (file, entry, range) in [
        ("slow-cpu.toml", "driver_ns = 5000000", "0..=1000000 ns"),
        ("fast-cache.toml", "cache_speed = 50", "0.05..=20"),
    ] {
        let mut text = elevator(&["devices", "--show", "nvme"]).ok().stdout.clone();
        text.push_str(&format!("\n[cpu]\n{entry}\n"));
        let line = text.lines().count();
        let prof = write(&dir, file, &text);
        let (key, value) = entry.split_once(" = ").unwrap();
        elevator(&["run", "--name=a", "--size=1m", "--device", &prof]).bad_input(&[
            &format!("{file}:{line}: cpu.{key}: {value} is out of range"),
            range,
        ]);
    }
    // At the limit a cost is taken, and the run stays near its cap.
    let r = elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--set=cpu/submit_ns=1000000",
        "--max-runtime=200ms",
        "--output-format=json",
    ]);
    r.ok();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let runtime_ms = v["jobs"][0]["read"]["runtime"].as_u64().unwrap();
    assert!(runtime_ms <= 202, "ran {runtime_ms} ms past a 200 ms cap");
}

#[test]
fn job_times_that_add_up_past_the_clock_saturate() {
    // startdelay + ramp_time + runtime, and a think time near the clock's end.
    elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--startdelay=1s",
        "--ramp_time=18446744073s",
        "--runtime=1s",
    ])
    .ok();
    elevator(&["run", "--name=a", "--size=8k", "--thinktime=18446744073s"]).ok();
}

// ---- 6. profile values have physical ranges ----

/// A built-in profile's TOML with `key = ...` in `[table]` set to `value`,
/// and the line it is on.
fn edited_profile(name: &str, table: &str, key: &str, value: &str) -> (String, usize) {
    let text = elevator(&["devices", "--show", name]).ok().stdout.clone();
    let (mut out, mut cur, mut at) = (String::new(), String::new(), 0);
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            cur = t.trim_matches(|c| c == '[' || c == ']').to_string();
        }
        if at == 0 && cur == table && t.split('=').next().map(str::trim) == Some(key) {
            out.push_str(&format!("{key} = {value}\n"));
            at = i + 1;
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    assert!(at > 0, "{table}.{key} not in the {name} profile");
    (out, at)
}

#[test]
fn profile_values_out_of_range_are_refused_with_file_line_and_range() {
    let dir = scratch("profiles");
    let (text, line) = edited_profile("sata-ssd", "sata_ssd", "block_bytes", "4");
    let prof = write(&dir, "tiny-blocks.toml", &text);
    elevator(&["run", "--name=a", "--size=1m", "--device", &prof]).bad_input(&[
        &format!("tiny-blocks.toml:{line}: sata_ssd.block_bytes: 4 is out of range"),
        "65536..=1073741824 bytes",
    ]);
    // The keys whose values size allocations (issue item 3).
    for (model, table, key) in [
        ("hdd", "hdd", "zones"),
        ("hdd", "hdd", "write_cache_entries"),
        ("hdd", "hdd", "read_ahead_segments"),
        ("nvme", "nvme", "units"),
        ("sata-ssd", "sata_ssd", "units"),
    ] {
        let (text, line) = edited_profile(model, table, key, "4294967295");
        let prof = write(&dir, &format!("{model}-{key}.toml"), &text);
        elevator(&["run", "--name=a", "--size=1m", "--device", &prof]).bad_input(&[
            &format!("{model}-{key}.toml:{line}: {table}.{key}: 4294967295 is out of range"),
            "expected",
        ]);
    }
    // Every built-in profile, as `devices --show` prints it, loads.
    for name in ["nvme", "ram", "hdd", "sata-ssd"] {
        let text = elevator(&["devices", "--show", name]).ok().stdout.clone();
        let prof = write(&dir, &format!("{name}.toml"), &text);
        elevator(&["run", "--name=a", "--size=1m", "--device", &prof]).ok();
    }
}

// ---- 7. switches that never happen, and switches in the normal output ----

#[test]
fn switch_after_every_job_is_warned_about() {
    // Known before the run: every job is time-bound.
    let r = elevator(&[
        "run",
        "--name=a",
        "--size=1g",
        "--runtime=2s",
        "--time_based",
        "--device=sata-ssd",
        "--switch=1ms=noop",
        "--switch=5s=deadline",
    ]);
    r.ok();
    let warns: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("elevator: warning: "))
        .collect();
    assert_eq!(warns.len(), 1, "{}", r.stderr);
    assert!(
        warns[0].contains("--switch 5s=deadline lies after the end of every job")
            && warns[0].contains("2000.000 ms"),
        "{}",
        r.stderr
    );
    // Known only after the run: the job is bound by its size.
    let r = elevator(&["run", "--name=a", "--size=1m", "--switch=5s=noop"]);
    r.ok();
    assert!(
        r.stderr
            .contains("elevator: warning: --switch 5s=noop did not happen: the run ended at"),
        "{}",
        r.stderr
    );
    // A switch that happens is not warned about.
    let r = elevator(&["run", "--name=a", "--size=1m", "--switch=1ms=noop"]);
    r.ok();
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
}

#[test]
fn normal_output_lists_switches_before_the_job_lines() {
    let r = elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--switch=1ms=noop",
        "--switch=2ms=mq-deadline",
        "--switch=5s=deadline",
    ]);
    r.ok();
    let first = r.stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("elevator switches: noop at 1ms (drained 1.000-"),
        "{first}"
    );
    assert!(
        first.contains("; mq-deadline at 2ms (drained 2.000-"),
        "{first}"
    );
    assert!(
        first.contains("; deadline at 5s (did not happen, the run ended at "),
        "{first}"
    );
    // Then fio's preamble as before: the job line, version, processes.
    let second = r.stdout.lines().nth(1).unwrap_or_default();
    assert!(second.starts_with("a: (g=0): rw=read"), "{second}");
    // Without switches, fio's output alone.
    let r = elevator(&["run", "--name=a", "--size=1m"]);
    r.ok();
    assert!(r.stdout.starts_with("a: (g=0): "), "{}", r.stdout);
    // The JSON report says when each switch drained.
    let r = elevator(&[
        "run",
        "--name=a",
        "--size=1m",
        "--switch=1ms=noop",
        "--output-format=json",
    ]);
    r.ok();
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let s = &v["elevator"]["switches"][0];
    assert_eq!(s["outcome"], "switched", "{s}");
    assert_eq!(s["drain_start_ns"], 1_000_000, "{s}");
    assert!(s["done_ns"].as_u64().unwrap() >= 1_000_000, "{s}");
}

/// Found by tests/fuzz_run.rs: tasks asleep for a tag when a switch froze
/// the queue were lost when the switch rebuilt the hardware queues, and the
/// run ended with a job that never finished. Tag waiters have entered the
/// queue (the kernel's freeze waits for them), so they get their requests
/// during the drain and the switch happens after.
#[test]
fn a_switch_keeps_the_tasks_waiting_for_tags() {
    use elevator::run::{DeviceSource, JobSource, RunSpec, Setting, Switch};
    let job = "[global]\nsize=4m\nnumjobs=4\n[job0]\n[job1]\n[job2]\n";
    for from in ["noop", "none", "mq-deadline", "deadline"] {
        let mut spec = RunSpec::new(JobSource::text("waiters.fio", job));
        spec.device = DeviceSource {
            name: "hdd".into(),
            profile: None,
        };
        spec.scheduler = from.into();
        spec.settings.push(Setting {
            name: "nr_requests".into(),
            value: "1".into(),
        });
        spec.switches.push(Switch {
            at_ns: 1_000_000,
            scheduler: if from == "mq-deadline" {
                "none"
            } else {
                "mq-deadline"
            }
            .into(),
        });
        spec.max_runtime_ns = Some(2_000_000);
        let report = elevator::run::run(&spec).unwrap_or_else(|e| panic!("{from}: {e}"));
        let ios: u64 = report
            .jobs
            .iter()
            .map(|j| j.stats.total_ios(elevator::job::spec::Ddir::Read))
            .sum();
        // Twelve jobs, each with its one request done before it could stop.
        assert!(ios >= 12, "{from}: {ios} I/Os");
    }
}

/// Found by tests/fuzz_run.rs: a completion whose CPU work ended after the
/// task's already-armed wake-up was folded into that wake-up, and the step
/// then reaped only what had finished by then; the rest waited forever.
#[test]
fn completions_finishing_after_a_reap_are_reaped_later() {
    use elevator::run::{DeviceSource, JobSource, RunSpec, Switch};
    let job = "[global]\nfilename=/dev/fuzz\nnumjobs=2\n[job0]\nbs=1k,8k\niodepth=1024\nioengine=io_uring\n";
    let mut spec = RunSpec::new(JobSource::text("late.fio", job));
    spec.device = DeviceSource {
        name: "hdd".into(),
        profile: None,
    };
    spec.scheduler = "noop".into();
    spec.switches.push(Switch {
        at_ns: 5_000_000,
        scheduler: "none".into(),
    });
    spec.max_runtime_ns = Some(4_000_000);
    elevator::run::run(&spec).expect("every job finishes");
}

// ---- a task woken for a tag that retries on another hardware queue ----

/// A task woken for a tag of the hardware queue it slept on retries from
/// another CPU, whose queue is another: the kernel's `blk_mq_get_tag` then
/// wakes the old queue once more, so that queue's other sleepers still get
/// the tag that was left free there. Without that the run below (one tag
/// per queue, two queues, 1 MiB I/Os split into many requests, a scheduler
/// switch at 4 ms) froze for the switch with two tasks asleep on a queue
/// that had nothing in flight, and ended in "never finished" (found by the
/// run fuzzer, seed 7777 case 48274, seed 4242 case 79413).
#[test]
fn a_task_woken_for_a_tag_that_moves_queue_passes_the_wake_up_on() {
    let dir = scratch("tag-moved");
    let profile =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/profiles/ram.toml"))
            .expect("ram profile");
    let profile = profile
        .lines()
        .map(|l| {
            if l.starts_with("queue_depth") {
                "queue_depth = 1"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let dev = write(&dir, "ram1.toml", &profile);
    let job = write(
        &dir,
        "moved.fio",
        "[global]\nfilename=/dev/fuzz\nsize=4m\nio_size=512k\nbsrange=512-1m\n\
         [job0]\n[job1]\ndirect=0\n[job2]\nnumjobs=2\n",
    );
    for sched in ["none", "tpps-mq"] {
        elevator(&[
            "run",
            &job,
            "--device",
            &dev,
            "--scheduler",
            sched,
            "--switch",
            "4ms=bfq",
            "--max-runtime",
            "5ms",
            "--no-progress",
        ])
        .ok();
    }
}

// ---- a tag sleeper no free can wake: the kernel's hang, reported ----

/// mq-deadline on 5.14–6.9 sizes the tag map's wake batch for ¾ of
/// `nr_requests` (`dd_depth_updated`), and its sysfs `async_depth` store
/// does not resize it: with `async_depth` 1 a writer may hold one tag per
/// bitmap word and then waits for more frees than its few tags can make.
/// The kernel misses that wake-up too, so the run must say the modelled
/// kernel hangs, naming the depths, and not report an internal error
/// (found by the run fuzzer, seed 6 case 55352). On 6.10+ (minimum shallow
/// depth 1) the same job finishes.
#[test]
fn a_tag_sleeper_no_free_can_wake_is_reported_as_the_kernels_hang() {
    let dir = scratch("tag-hang");
    let job = write(
        &dir,
        "hang.fio",
        "[global]\nrw=write\nbs=4k\nsize=64m\ndirect=0\n[a]\n[b]\nstartdelay=1ms\n",
    );
    let args = |kernel: &'static str| {
        [
            "run",
            job.as_str(),
            "--device",
            "ram",
            "--scheduler",
            "mq-deadline",
            "--kernel",
            kernel,
            "--set",
            "iosched/async_depth=1",
            "--max-runtime",
            "3ms",
            "--no-progress",
        ]
    };
    let hung = elevator(&args("6.6"));
    assert_eq!(hung.code, Some(1), "{}", hung.stderr);
    assert!(
        hung.stderr.contains("the modelled kernel hangs")
            && hung.stderr.contains("a shallow depth of 1 ")
            && hung.stderr.contains("mq-deadline on 6.6")
            && !hung.stderr.contains("internal error"),
        "{}",
        hung.stderr
    );
    elevator(&args("6.10")).ok();
}
