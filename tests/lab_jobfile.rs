//! A lab job file reaches only `--dev` (hardening issue, item 9): traces
//! that name other devices are replayed on `--dev`, logs stay in the lab's
//! private directory, options that run commands or load code are refused
//! with the file, line and option, and nothing outside `--dev` changes.
//! Root and fio (CI); counted as skipped elsewhere (tests/lab_support).

mod lab_support;

use lab_support::{elevator, job, ready, scratch, serial, text, Loop};
use std::path::Path;

/// A blktrace binary trace (little endian): `n` 4 KiB writes queued on
/// device `(maj, min)` at sectors 0, 8, 16, ...
fn blktrace_writes(maj: u32, min: u32, n: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        out.extend(0x6561_7407u32.to_le_bytes()); // magic | version 7
        out.extend(i.to_le_bytes()); // sequence
        out.extend((u64::from(i) * 1000).to_le_bytes()); // time, ns
        out.extend((u64::from(i) * 8).to_le_bytes()); // sector
        out.extend(4096u32.to_le_bytes()); // bytes
        out.extend(((2u32 << 16) | 1).to_le_bytes()); // BLK_TC_WRITE, __BLK_TA_QUEUE
        out.extend(100u32.to_le_bytes()); // pid
        out.extend(((maj << 20) | min).to_le_bytes()); // device
        out.extend(0u32.to_le_bytes()); // cpu
        out.extend(0u16.to_le_bytes()); // error
        out.extend(0u16.to_le_bytes()); // pdu_len
    }
    out
}

fn untouched(victim: &Loop, byte: u8) -> bool {
    victim.head(1 << 20).iter().all(|&b| b == byte)
}

#[test]
fn traces_naming_another_device_are_replayed_on_dev_only() {
    if !ready("traces_naming_another_device_are_replayed_on_dev_only", &[]) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("64M");
    let victim = Loop::new("16M");
    victim.fill(0xab, 1);
    let dir = scratch("jobsafety");
    let d = dir.path();
    // fio iolog v2, and a blktrace binary trace, both naming the victim.
    let mut v2 = String::from("fio version 2 iolog\n");
    v2.push_str(&format!("{} add\n{} open\n", victim.0, victim.0));
    for i in 0..16 {
        v2.push_str(&format!("{} write {} 4096\n", victim.0, i * 4096));
    }
    v2.push_str(&format!("{} close\n", victim.0));
    std::fs::write(d.join("victim.iolog"), v2).unwrap();
    let (maj, min) = victim.devno();
    std::fs::write(d.join("victim.blktrace"), blktrace_writes(maj, min, 16)).unwrap();
    let outside = d.join("outside");
    std::fs::create_dir(&outside).unwrap();
    let j = job(
        d,
        "replay.fio",
        &format!(
            "[global]\nioengine=libaio\ndirect=1\n\
             [iolog]\nread_iolog={iolog}\nreplay_redirect={victim}\n\
             [blktrace]\nstonewall\nread_iolog={bt}\n\
             [logs]\nstonewall\nrw=write\nbs=4k\nsize=64k\noffset=1m\n\
             write_lat_log={out}/lat\nwrite_bw_log={out}/bw\nwrite_iolog={out}/written.iolog\n",
            iolog = d.join("victim.iolog").display(),
            bt = d.join("victim.blktrace").display(),
            victim = victim.0,
            out = outside.display(),
        ),
    );
    assert!(
        dev.head(1 << 16).iter().all(|&b| b == 0),
        "a fresh device reads zeros"
    );
    let o = elevator(&["lab", &j, "--dev", &dev.0, "--schedulers", "none"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(untouched(&victim, 0xab), "the job wrote to {}", victim.0);
    assert!(
        dev.head(1 << 16).iter().any(|&b| b != 0),
        "the replayed writes did not reach {}",
        dev.0
    );
    let left: Vec<_> = std::fs::read_dir(&outside).unwrap().flatten().collect();
    assert!(left.is_empty(), "fio wrote where the job said: {left:?}");
}

#[test]
fn options_that_run_commands_or_load_code_are_refused_with_file_line_and_option() {
    if !ready(
        "options_that_run_commands_or_load_code_are_refused_with_file_line_and_option",
        &[],
    ) {
        return;
    }
    let _g = serial();
    let dev = Loop::new("32M");
    let victim = Loop::new("16M");
    victim.fill(0xcd, 1);
    let before = dev.state();
    let dir = scratch("jobrefuse");
    let d = dir.path();
    let pwned = d.join("pwned");
    let base = "[global]\nioengine=libaio\ndirect=1\nruntime=1\ntime_based=1\n[w]\nrw=randwrite\n";
    for (extra, option) in [
        (
            format!("exec_prerun=touch {}", pwned.display()),
            "exec_prerun",
        ),
        (
            format!("exec_postrun=touch {}", pwned.display()),
            "exec_postrun",
        ),
        (
            "ioengine=external:/nonexistent/engine.so".to_string(),
            "ioengine",
        ),
        (format!("mem=mmapshared:{}", pwned.display()), "mem"),
        ("ioscheduler=bfq".to_string(), "ioscheduler"),
        (
            format!("merge_blktrace_file={}", pwned.display()),
            "merge_blktrace_file",
        ),
        (format!("read_iolog={}", victim.0), "read_iolog"),
        (
            format!("an_option_from_the_future={}", victim.0),
            "an_option_from_the_future",
        ),
    ] {
        let j = job(d, "bad.fio", &format!("{base}{extra}\n"));
        let line = base.lines().count() + 1;
        let o = elevator(&["lab", &j, "--dev", &dev.0, "--schedulers", "none"]);
        assert_eq!(o.status.code(), Some(2), "{extra}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("bad.fio:{line}: option '{option}'")),
            "{extra}: {err}"
        );
        assert!(!pwned.exists(), "{extra}: a command ran");
    }
    // An include is checked too, and named by its own file and line.
    std::fs::write(
        d.join("inc.fio"),
        format!("bs=4k\nexec_prerun=touch {}\n", pwned.display()),
    )
    .unwrap();
    let j = job(d, "inc-job.fio", &format!("{base}include inc.fio\n"));
    let o = elevator(&["lab", &j, "--dev", &dev.0]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("inc.fio:2: option 'exec_prerun'"),
        "{}",
        text(&o)
    );
    assert!(!pwned.exists());
    assert!(untouched(&victim, 0xcd));
    assert_eq!(before, dev.state(), "a refused job changed the device");
    assert!(!Path::new(&pwned).exists());
}
