//! The lab on real loop devices: runs as root with fio (CI does; there a
//! test that cannot run fails), skipped and counted otherwise (see
//! tests/lab_support). Every fio run is 1 s; the tests share one lock so
//! they do not disturb each other's devices or timings.

mod lab_support;

use lab_support::{elevator, job, our_cgroups, ready, scratch, serial, text, Loop, BIN};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MIXED: &str = "\
[global]
filename=/dev/sda1
bs=4k
direct=1
ioengine=libaio
iodepth=4
runtime=1
time_based=1
group_reporting=1
[randwrite]
rw=randwrite
numjobs=2
[randrw20]
new_group
rw=randrw
rwmixread=20
";

#[test]
fn lab_runs_the_kernel_schedulers_interleaved_and_restores_everything() {
    if !ready(
        "lab_runs_the_kernel_schedulers_interleaved_and_restores_everything",
        &[],
    ) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("256M");
    // A state that is not the default, to see it come back.
    dev.write("scheduler", "mq-deadline");
    dev.write("iosched/fifo_batch", "7");
    dev.write("read_ahead_kb", "256");
    dev.write("nr_requests", "100");
    let before = dev.state();
    let dir = scratch("lab");
    let j = job(dir.path(), "mixed.fio", MIXED);
    let out = dir.path().join("lab.json");
    let o = elevator(&[
        "lab",
        &j,
        "--dev",
        &dev.0,
        "--schedulers",
        "none,mq-deadline,kyber,bfq,cfq",
        "--repeat",
        "2",
        "--set",
        "nr_requests=64",
        "--set",
        "iosched/fifo_batch=3",
        "--set",
        "iosched/low_latency=0",
        "--format",
        "json,table",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let after = dev.state();
    assert_eq!(before, after, "queue state not restored");
    let all = std::fs::read_to_string(&out).unwrap();
    let (json_part, table) = all.split_at(all.find("\nlab: ").expect("table follows JSON") + 1);
    let doc: serde_json::Value = serde_json::from_str(json_part).unwrap();
    let t = doc["table"].as_array().unwrap();
    let names: Vec<&str> = t.iter().map(|c| c["scheduler"].as_str().unwrap()).collect();
    assert_eq!(names, ["none", "mq-deadline", "kyber", "bfq", "cfq"]);
    // The kernel's own schedulers run where this kernel has them; one it
    // lacks (BFQ in some builds) is a row that says so.
    let kernel: Vec<&str> = ["none", "mq-deadline", "kyber", "bfq"]
        .into_iter()
        .filter(|s| dev.offers(s))
        .collect();
    assert!(kernel.len() >= 3, "{:?}", dev.offered());
    for c in &t[..4] {
        if !kernel.contains(&c["scheduler"].as_str().unwrap()) {
            assert!(
                c["skipped"]
                    .as_str()
                    .unwrap()
                    .contains("not offered by this kernel"),
                "{c}"
            );
            continue;
        }
        assert_eq!(c["rounds"], 2, "{c}");
        let g = &c["groups"][0];
        assert_eq!(g["name"], "randwrite");
        assert!(g["iops"]["median"].as_f64().unwrap() > 100.0, "{g}");
        assert_eq!(g["iops"]["n"], 2);
        assert_eq!(g["iops_ratio_to_first"]["n"], 2);
    }
    assert!(t[4]["skipped"]
        .as_str()
        .unwrap()
        .contains("simulation only"));
    // Interleaved: A B C D, A B C D.
    let order: Vec<(String, u64)> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["scheduler"].as_str().unwrap().to_string(),
                r["round"].as_u64().unwrap(),
            )
        })
        .collect();
    let expect: Vec<(String, u64)> = [1u64, 2]
        .iter()
        .flat_map(|r| kernel.iter().map(|s| (s.to_string(), *r)))
        .collect();
    assert_eq!(order, expect);
    // The knobs really were in effect during the runs.
    let md = &doc["runs"][1]["fio"]["elevator"];
    assert_eq!(md["scheduler"], "mq-deadline");
    assert_eq!(md["knobs"]["nr_requests"], "64");
    assert_eq!(md["knobs"]["iosched/fifo_batch"], "3");
    if let Some(b) = kernel.iter().position(|s| *s == "bfq") {
        assert_eq!(
            doc["runs"][b]["fio"]["elevator"]["knobs"]["iosched/low_latency"],
            "0"
        );
    }
    assert_eq!(doc["runs"][0]["fio"]["elevator"]["mode"], "lab");
    assert!(table.contains("iops / none"), "{table}");
    assert!(
        table.contains("cfq") && table.contains("simulation only"),
        "{table}"
    );
    assert!(table.contains("2 rounds"), "{table}");
}

#[test]
fn a_mounted_device_is_refused_and_says_so() {
    if !ready("a_mounted_device_is_refused_and_says_so", &["mkfs.ext4"]) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("64M");
    let o = Command::new("mkfs.ext4")
        .args(["-q", "-F", &dev.0])
        .output()
        .unwrap();
    assert!(o.status.success(), "mkfs: {}", text(&o));
    let dir = scratch("mnt");
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let o = Command::new("mount")
        .arg(&dev.0)
        .arg(&mnt)
        .output()
        .unwrap();
    assert!(o.status.success(), "mount: {}", text(&o));
    struct Umount(PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).output();
        }
    }
    let um = Umount(mnt.clone());
    let before = dev.state();
    let j = job(dir.path(), "mixed.fio", MIXED);
    let o = elevator(&["lab", &j, "--dev", &dev.0]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refusing"), "{err}");
    assert!(
        err.contains(&format!("{} is mounted at {}", dev.0, mnt.display())),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    let o = elevator(&["calibrate", &dev.0, "--probe-time", "100ms"]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is mounted at"),
        "{}",
        text(&o)
    );
    let o = elevator(&["loop", "remove", &dev.0]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("is mounted at"),
        "{}",
        text(&o)
    );
    assert_eq!(before, dev.state(), "a refused run changed nothing");
    drop(um);
}

#[test]
fn ctrl_c_stops_fio_and_restores_queue_and_cgroups() {
    if !ready("ctrl_c_stops_fio_and_restores_queue_and_cgroups", &[]) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("256M");
    dev.write("read_ahead_kb", "512");
    let before = dev.state();
    let dir = scratch("sigint");
    let j = job(
        dir.path(),
        "cg.fio",
        "[global]\ndirect=1\nioengine=libaio\nruntime=3\ntime_based=1\nbs=4k\nrw=randwrite\niodepth=8\n\
         [a]\ncgroup=a\ncgroup_weight=800\n[b]\ncgroup=b\ncgroup_weight=200\n",
    );
    let cg_before = our_cgroups();
    let target = dev.switch_target();
    let child = Command::new(BIN)
        .args([
            "lab",
            &j,
            "--dev",
            &dev.0,
            "--schedulers",
            &format!("{target},none"),
            "--set",
            "nr_requests=32",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until fio runs (the scheduler selected, groups made), then Ctrl-C.
    let t0 = Instant::now();
    let selected = format!("[{target}]");
    while !dev.read("scheduler").contains(&selected) && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let during = our_cgroups();
    assert!(
        during.len() >= cg_before.len() + 2,
        "groups during the run: {during:?}"
    );
    let pid = child.id();
    let k = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .output()
        .unwrap();
    assert!(k.status.success());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("interrupted"),
        "{}",
        text(&o)
    );
    assert_eq!(before, dev.state(), "queue state after Ctrl-C");
    assert_eq!(cg_before, our_cgroups(), "cgroups left behind");
    // fio is gone too (it ran the job file in the lab's scratch directory).
    let pg = Command::new("pgrep")
        .args(["-f", &format!("elevator-lab-{pid}-")])
        .output();
    if let Ok(pg) = pg {
        assert!(!pg.status.success(), "fio still running: {}", text(&pg));
    }
    assert!(elevator::lab::device::BlockDev::open(&dev.0)
        .unwrap()
        .in_use()
        .is_empty());
}

#[test]
fn loop_create_and_remove_leave_nothing_behind() {
    if !ready("loop_create_and_remove_leave_nothing_behind", &[]) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("32M");
    let sys = Path::new("/sys/block").join(dev.name());
    assert_eq!(
        std::fs::read_to_string(sys.join("loop/dio"))
            .unwrap()
            .trim(),
        "1"
    );
    assert_eq!(
        std::fs::read_to_string(sys.join("size")).unwrap().trim(),
        "65536"
    );
    let backing = std::fs::read_to_string(sys.join("loop/backing_file")).unwrap();
    let backing = PathBuf::from(backing.trim());
    let private = backing.parent().unwrap().parent().unwrap().to_path_buf();
    assert!(private.join("ELEVATOR_LOOP").exists());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(mounts.contains(&private.join("tmpfs").display().to_string()));
    let name = dev.0.clone();
    drop(dev);
    assert!(!private.exists(), "{} left behind", private.display());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(!mounts.contains(&private.display().to_string()));
    assert!(
        !sys.join("loop/backing_file").exists(),
        "{name} still attached"
    );
    // A loop device elevator did not make is not removed.
    let o = elevator(&["loop", "remove", "/dev/vda"]);
    assert!(!o.status.success());
}

#[test]
fn calibrate_then_validate_on_a_tmpfs_loop() {
    if !ready("calibrate_then_validate_on_a_tmpfs_loop", &[]) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("512M");
    let before = dev.state();
    let dir = scratch("calib");
    let prof = dir.path().join("loop.toml");
    let o = elevator(&[
        "calibrate",
        &dev.0,
        "-o",
        prof.to_str().unwrap(),
        "--probe-time",
        "1s",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report = String::from_utf8_lossy(&o.stdout);
    let toml = std::fs::read_to_string(&prof).unwrap();
    assert!(
        report.contains("randread-qd64") && report.contains("mean |error|"),
        "{report}"
    );
    // The QD64 probe ran under mq-deadline too (the loop offers it): the
    // report says what became of the hooks' speed.
    assert!(report.contains("scheduler hooks"), "{report}");
    if toml.contains("hook_speed = ") {
        assert!(report.contains("randread-qd64 mq-deadline"), "{report}");
    }
    assert!(toml.contains("# Calibrated from"), "{toml}");
    assert_eq!(before, dev.state());
    // The simulator takes the profile.
    let j = job(
        dir.path(),
        "qd64.fio",
        "[global]\nfilename=/dev/x\ndirect=1\nioengine=libaio\nruntime=1\ntime_based=1\n[randread64]\nrw=randread\nbs=4k\niodepth=64\n",
    );
    let o = elevator(&[
        "run",
        &j,
        "--device",
        prof.to_str().unwrap(),
        "--max-runtime",
        "100ms",
        "--no-progress",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let kept = dir.path().join("kept");
    let o = elevator(&[
        "validate",
        &j,
        "--dev",
        &dev.0,
        "--profile",
        prof.to_str().unwrap(),
        "--schedulers",
        "none,mq-deadline,bfq",
        "--quiet",
        "--save-json",
        kept.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v = String::from_utf8_lossy(&o.stdout);
    // The kept session, set against the same profile again without
    // measuring, gives the same report under another title.
    let again = elevator(&[
        "validate",
        &j,
        "--from-lab",
        kept.to_str().unwrap(),
        "--profile",
        prof.to_str().unwrap(),
    ]);
    assert!(again.status.success(), "{}", text(&again));
    let w = String::from_utf8_lossy(&again.stdout);
    assert!(w.lines().next().unwrap().contains("recorded in"), "{w}");
    assert_eq!(
        v.lines().skip(1).collect::<Vec<_>>(),
        w.lines().skip(1).collect::<Vec<_>>()
    );
    for want in [
        "iops meas",
        "sim/meas",
        "p99 us meas",
        "summary:",
        "ranking",
        "mean absolute percentage error",
    ] {
        assert!(v.contains(want), "missing '{want}' in\n{v}");
    }
    // BFQ is simulated: validate compares it like the others, where the
    // kernel has it to measure.
    assert!(!v.contains("not simulated yet"), "{v}");
    if dev.offers("bfq") {
        assert!(
            v.lines()
                .any(|l| l.contains("bfq") && l.contains("randread64")),
            "no bfq row in\n{v}"
        );
    } else {
        assert!(
            v.contains("bfq: not offered by this kernel for this device"),
            "{v}"
        );
    }
    assert_eq!(before, dev.state());
}
