//! Parser tests through the public API; end-to-end job files (seed
//! experiments, fio examples, never-panics) live in tests/job_parser.rs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::*;
use crate::cgroup::IoPrioClass;

/// An 8-CPU machine, so job files may name CPUs up to 7.
const EIGHT_CPUS: crate::machine::Machine = crate::machine::Machine {
    cpus: 8,
    ..crate::machine::Machine::DEFAULT
};

fn parse(text: &str) -> Result<JobFile, JobError> {
    let inputs = Inputs {
        machine: &EIGHT_CPUS,
        ..Inputs::plain()
    };
    parse_str(text, "test.fio", Path::new("/nonexistent"), &inputs)
}

fn ok(text: &str) -> JobFile {
    match parse(text) {
        Ok(f) => f,
        Err(e) => panic!("unexpected error: {e}\n--- input ---\n{text}"),
    }
}

fn err(text: &str) -> JobError {
    match parse(text) {
        Ok(f) => panic!(
            "expected an error, got {} jobs\n--- input ---\n{text}",
            f.jobs.len()
        ),
        Err(e) => e,
    }
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A fresh directory under the system temp dir, unique per test and process.
/// A scratch directory removed when the test ends (passing or not).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(tag: &str) -> Scratch {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "elevator-job-unit-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

const SEC: u64 = 1_000_000_000;

// ---------------------------------------------------------------- errors

#[test]
fn unknown_option_with_suggestion() {
    let e = err("[job]\nrw=read\niodpth=4\n");
    assert_eq!((e.file.as_str(), e.line), ("test.fio", 3));
    assert_eq!(e.option.as_deref(), Some("iodpth"));
    assert!(e.message.contains("did you mean 'iodepth'"), "{e}");
    assert_eq!(
        e.to_string(),
        format!("test.fio:3: option 'iodpth': {}", e.message)
    );
}

#[test]
fn fio_profile_is_refused_in_a_job_file_too() {
    // fio's built-in workload generators replace the jobs: never ignored.
    let e = err("[job]\nrw=read\nprofile=act\n");
    assert_eq!((e.line, e.option.as_deref()), (3, Some("profile")));
    assert!(e.message.contains("--device FILE"), "{e}");
}

#[test]
fn unknown_option_without_suggestion() {
    let e = err("[job]\nfrobnicate_everything=1\n");
    assert_eq!(
        (e.line, e.option.as_deref()),
        (2, Some("frobnicate_everything"))
    );
    assert!(!e.message.contains("did you mean"), "{e}");
}

#[test]
fn size_below_every_block_size_is_refused_as_fio_does() {
    // fio 3.33: "size too small, must not be less than minimum block size".
    let e = err("[global]\nsize=2k\n[job]\nrw=read\nbs=4k\nfilesize=8k\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("size")));
    assert!(e.message.contains("2048 < 4096"), "{e}");
    // The smallest block over all three directions, used or not.
    let f = parse("[job]\nrw=read\nbs=1m,4k\nsize=256k\n").unwrap();
    assert_eq!(f.jobs.len(), 1);
    assert!(parse("[job]\nrw=read\nbs=8k,1m\nsize=4k\n").is_err());
    // A percentage is not checked.
    assert!(parse("[job]\nrw=read\nbs=8k\nsize=1%\n").is_ok());
}

#[test]
fn bad_size_value() {
    let e = err("[global]\nbs=4x\n[job]\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("bs")));
    assert!(e.message.contains("expected a size like 4k"), "{e}");
}

#[test]
fn bad_enum_values() {
    let e = err("[job]\nrw=sideways\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("rw")));
    assert!(e.message.contains("expected one of: read, write"), "{e}");
    let e = err("[job]\nrandom_generator=mt\n");
    assert!(e.message.contains("tausworthe, lfsr"), "{e}");
    let e = err("[job]\nrate_process=bursty\n");
    assert!(e.message.contains("linear, poisson"), "{e}");
    let e = err("[job]\nkb_base=512\n");
    assert!(e.message.contains("1024, 1000"), "{e}");
    let e = err("[job]\ndirect=maybe\n");
    assert_eq!(e.option.as_deref(), Some("direct"));
}

#[test]
fn values_out_of_range() {
    for (text, opt) in [
        ("[job]\ncgroup_weight=50\n", "cgroup_weight"),
        ("[job]\ncgroup_weight=1001\n", "cgroup_weight"),
        ("[job]\nprio=8\n", "prio"),
        ("[job]\nprioclass=4\n", "prioclass"),
        ("[job]\nrwmixread=101\n", "rwmixread"),
        ("[job]\nrwmixwrite=120\n", "rwmixwrite"),
        ("[job]\niodepth=0\n", "iodepth"),
        ("[job]\nnumjobs=0\n", "numjobs"),
        ("[job]\nsize=150%\n", "size"),
        (
            "[job]\npercentile_list=1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20:21\n",
            "percentile_list",
        ),
        ("[job]\npercentile_list=99:101\n", "percentile_list"),
        (
            "[job]\nrandom_distribution=zipf:1.0\n",
            "random_distribution",
        ),
        (
            "[job]\nrandom_distribution=pareto:0\n",
            "random_distribution",
        ),
    ] {
        let e = err(text);
        assert_eq!((e.line, e.option.as_deref()), (2, Some(opt)), "{text}: {e}");
    }
    assert!(err("[job]\nprio=8\n").message.contains("0..7"));
}

#[test]
fn value_required() {
    let e = err("[job]\nbs\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("bs")));
    assert!(e.message.contains("needs a value"), "{e}");
    // Ignored options still need a value when fio requires one.
    let e = err("[job]\nverify\n");
    assert_eq!(e.option.as_deref(), Some("verify"));
    let e = err("[job]\nfilename=\n");
    assert_eq!(e.option.as_deref(), Some("filename"));
}

#[test]
fn unknown_engine() {
    let e = err("[job]\nioengine=libaoi\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("ioengine")));
    assert!(e.message.contains("unknown ioengine 'libaoi'"), "{e}");
}

#[test]
fn end_syncfs_needs_an_engine_that_runs_syncfs() {
    // fio's setup_files: "I/O engine does not support syncfs".
    let e = err("[global]\nend_syncfs=1\n[job]\nioengine=io_uring\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("end_syncfs")));
    assert!(
        e.message.contains("io_uring does not support syncfs"),
        "{e}"
    );
    let j = parse("[job]\nioengine=libaio\nend_syncfs=1\n").unwrap();
    assert!(j.jobs[0].end_syncfs);
}

#[test]
fn structural_errors() {
    let e = err("bs=4k\n[job]\n");
    assert_eq!((e.line, e.option.as_deref()), (1, Some("bs")));
    assert!(e.message.contains("before any [section]"), "{e}");
    let e = err("[global]\nbs=4k\n[job\n");
    assert_eq!(e.line, 3);
    assert!(e.message.contains("no closing ']'"), "{e}");
    let e = err("[global]\nbs=4k\n");
    assert!(e.message.contains("no jobs defined"), "{e}");
    let e = err("");
    assert!(e.message.contains("no jobs defined"), "{e}");
}

#[test]
fn missing_file() {
    let path = temp_dir("missing").join("does-not-exist.fio");
    let e = parse_file(&path, &Inputs::plain()).unwrap_err();
    assert_eq!(e.file, path.display().to_string());
    assert_eq!(e.line, 0);
    assert!(e.message.contains("cannot read job file"), "{e}");
}

#[test]
fn include_errors() {
    let dir = temp_dir("incerr");
    std::fs::write(dir.join("sect.fio"), "bs=8k\n[sneaky]\n").unwrap();
    std::fs::write(dir.join("bad.fio"), "\n\nbs=8q\n").unwrap();
    std::fs::write(dir.join("loop.fio"), "include loop.fio\n").unwrap();
    let p = |t: &str| parse_str(t, "main.fio", &dir, &Inputs::plain()).unwrap_err();

    let e = p("[job]\ninclude nope.fio\n");
    assert_eq!(
        (e.file.as_str(), e.line, e.option.as_deref()),
        ("main.fio", 2, Some("include"))
    );
    assert!(e.message.contains("nope.fio"), "{e}");

    let e = p("[job]\ninclude sect.fio\n");
    assert_eq!(e.file, dir.join("sect.fio").display().to_string());
    assert_eq!(e.line, 2);
    assert!(e.message.contains("may not contain sections"), "{e}");

    // Errors inside an included file point into that file.
    let e = p("[job]\ninclude bad.fio\n");
    assert_eq!(e.file, dir.join("bad.fio").display().to_string());
    assert_eq!((e.line, e.option.as_deref()), (3, Some("bs")));

    let e = p("[job]\ninclude loop.fio\n");
    assert!(e.message.contains("nested"), "{e}");
}

#[test]
fn too_many_jobs() {
    let e = err("[a]\nnumjobs=4000\n[b]\nnumjobs=100\n");
    assert_eq!((e.line, e.option.as_deref()), (3, Some("numjobs")));
}

// ---------------------------------------------------------------- syntax

#[test]
fn comments_blank_lines_spacing_and_bare_flags() {
    let f = ok(
        "; comment\n# comment\n\n[job]\n  bs = 8k   ; trailing comment\nrw=randread # another\n\
                time_based\nruntime = 10\ndirect=1\nnorandommap\n",
    );
    let j = &f.jobs[0];
    assert_eq!(j.bs[0], BlockSizes::Fixed(8192));
    assert_eq!(j.rw, RwPattern::RandRead);
    assert!(j.time_based && j.direct && j.norandommap);
    assert_eq!(j.runtime, Some(10 * SEC));
    assert_eq!(
        j.job_options,
        vec![
            // fio reports `key = value` with the blank after '=' kept.
            ("bs".to_string(), " 8k".to_string()),
            ("rw".into(), "randread".into()),
            ("runtime".into(), " 10".into()),
            ("direct".into(), "1".into()),
        ]
    );
}

/// fio 3.33 `--parse-only`, checked on this machine: a boolean needs 0 or
/// 1 (sscanf-style, so "0x1", " 1" and "1abc" are 1), a "set" option takes
/// any number, and words like "yes" are refused by both, modelled or not.
#[test]
fn on_off_options_take_what_fio_takes() {
    let job = |opt: &str| format!("[job]\nrw=read\nsize=1m\n{opt}\n");
    for (opt, direct) in [
        ("direct=0", false),
        ("direct= 1", true),
        ("direct=0x1", true),
        ("direct=1abc", true),
    ] {
        assert_eq!(ok(&job(opt)).jobs[0].direct, direct, "{opt}");
    }
    for (opt, want) in [
        ("direct", "needs a value"),
        ("direct=true", "expected 0 or 1, got 'true'"),
        ("direct=yes", "expected 0 or 1"),
        ("direct=2", "out of range"),
        ("randrepeat=2", "out of range"),
        ("time_based=yes", "expected a number"),
        ("fill_device=on", "expected 0 or 1"),
        ("fill_device", "needs a value"),
    ] {
        let e = err(&job(opt));
        let name = opt.split('=').next().unwrap();
        assert_eq!((e.line, e.option.as_deref()), (4, Some(name)), "{opt}");
        assert!(e.message.contains(want), "{opt}: {e}");
    }
    let f = ok(&job("group_reporting=2\ntime_based=0\nruntime=1"));
    assert!(f.jobs[0].group_reporting && !f.jobs[0].time_based);
}

#[test]
fn defaults_match_fio() {
    let f = ok("[job]\n");
    let j = &f.jobs[0];
    let d = JobSpec::with_defaults("job");
    assert_eq!(j.name, "job");
    assert_eq!(j.rw, d.rw);
    assert_eq!(j.bs, d.bs);
    assert_eq!(j.ioengine, d.ioengine);
    assert_eq!(
        (j.iodepth, j.iodepth_low, j.iodepth_batch_submit),
        (1, 1, 1)
    );
    assert_eq!(
        (j.iodepth_batch_complete_min, j.iodepth_batch_complete_max),
        (1, 1)
    );
    assert_eq!((j.numjobs, j.nrfiles, j.loops), (1, 1, 1));
    assert_eq!(j.rwmixread, 50);
    assert!(j.randrepeat && j.clat_percentiles && !j.lat_percentiles);
    assert_eq!((j.bwavgtime_ms, j.iopsavgtime_ms), (500, 500));
    assert_eq!(j.kb_base, 1024);
    assert!(j.job_options.is_empty());
    assert!(f.global_options.is_empty() && f.ignored.is_empty());
}

#[test]
fn iodepth_fixups() {
    let j = &ok("[job]\niodepth=16\n").jobs[0];
    assert_eq!((j.iodepth_low, j.iodepth_batch_submit), (16, 1));
    assert_eq!(
        (j.iodepth_batch_complete_min, j.iodepth_batch_complete_max),
        (1, 1)
    );
    let j = &ok("[job]\niodepth=16\niodepth_batch=0\niodepth_low=4\n").jobs[0];
    assert_eq!((j.iodepth_low, j.iodepth_batch_submit), (4, 16));
    let j = &ok("[job]\niodepth=8\niodepth_batch_submit=32\niodepth_low=64\n").jobs[0];
    assert_eq!((j.iodepth_low, j.iodepth_batch_submit), (8, 8));
    let j = &ok("[job]\niodepth=8\niodepth_batch_complete=4\n").jobs[0];
    assert_eq!(
        (j.iodepth_batch_complete_min, j.iodepth_batch_complete_max),
        (4, 4)
    );
    let j = &ok("[job]\niodepth=8\niodepth_batch_complete_min=0\niodepth_batch_complete_max=8\n")
        .jobs[0];
    assert_eq!(
        (j.iodepth_batch_complete_min, j.iodepth_batch_complete_max),
        (0, 8)
    );
}

#[test]
fn aliases_and_canonical_names() {
    let f = ok(
        "[job]\nreadwrite=randwrite\nblocksize=16k\nblockalign=4k\nblocksize_range=4k-8k\n\
                timeout=5\nio_limit=1m\nwait_for_previous=1\nnr_files=2\nfileoffset=4k\n",
    );
    let j = &f.jobs[0];
    assert_eq!(j.rw, RwPattern::RandWrite);
    assert_eq!(
        j.bs[1],
        BlockSizes::Range {
            min: 4096,
            max: 8192
        }
    );
    assert_eq!(j.blockalign, [Some(4096); 3]);
    assert_eq!(j.runtime, Some(5 * SEC));
    assert_eq!(j.io_size, Some(SizeSpec::Bytes(1 << 20)));
    assert!(j.stonewall);
    assert_eq!(j.nrfiles, 2);
    assert_eq!(j.offset, SizeSpec::Bytes(4096));
    let names: Vec<&str> = j.job_options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "rw",
            "bs",
            "ba",
            "bsrange",
            "runtime",
            "io_size",
            "stonewall",
            "nrfiles",
            "offset"
        ]
    );
}

// ---------------------------------------------------------------- units

#[test]
fn rate_and_rate_iops_together_are_refused_where_the_second_is_set() {
    // fio 3.33 fixup_options: "rate and rate_iops are mutually exclusive",
    // whatever the directions; 0 unsets a limit.
    let e = err("[global]\nrate_iops=10\n[a]\nrw=read\nrate=,1m\n");
    assert_eq!((e.line, e.option.as_deref()), (5, Some("rate")), "{e}");
    assert!(
        e.message.contains("mutually exclusive") && e.message.contains(":2)"),
        "{e}"
    );
    let e = err("[a]\nrate_min=1m\nrate_iops_min=5\n");
    assert_eq!(e.option.as_deref(), Some("rate_iops_min"), "{e}");
    ok("[a]\nrate=0\nrate_iops=10\n");
    ok("[a]\nrate=1m\n[b]\nrate_iops=10\n");
}

#[test]
fn poisson_rate_below_one_block_a_second_is_refused() {
    // fio divides by rate / min_bs I/Os a second (SIGFPE at 0).
    let e = err("[a]\nbs=4k\nrate=100\nrate_process=poisson\n");
    assert!(e.message.contains("below one block"), "{e}");
    ok("[a]\nbs=4k\nrate=4k\nrate_process=poisson\n");
    ok("[a]\nbs=4k\nrate=100\n");
}

#[test]
fn units_in_options() {
    let j = &ok(
        "[job]\nsize=(2*1024)m\noffset=10%\noffset_increment=1g\nthinktime=100\n\
                 ramp_time=2m\nstartdelay=1-5\nfilesize=4m-1m\nrate=1m\nnumber_ios=1k\n\
                 randseed=0x1234\n",
    )
    .jobs[0];
    assert_eq!(j.size, Some(SizeSpec::Bytes(2 << 30)));
    assert_eq!(j.offset, SizeSpec::Percent(10.0));
    assert_eq!(j.offset_increment, SizeSpec::Bytes(1 << 30));
    assert_eq!(j.thinktime, 100_000);
    assert_eq!(j.ramp_time, 120 * SEC);
    assert_eq!(j.startdelay, (SEC, 5 * SEC));
    assert_eq!(j.filesize, Some((1 << 20, 4 << 20)));
    assert_eq!(j.rate, [Some(1 << 20); 3]);
    assert_eq!(
        ok("[job]\nrate_iops=,500\n").jobs[0].rate_iops,
        [None, Some(500), Some(500)]
    );
    assert_eq!(j.number_ios, Some(1024));
    assert_eq!(j.randseed, Some(0x1234));

    let j = &ok("[job]\nsize=50%\nthinktime=2ms\nruntime=1h\nstartdelay=500ms:100ms\n").jobs[0];
    assert_eq!(j.size, Some(SizeSpec::Percent(50.0)));
    assert_eq!(j.thinktime, 2_000_000);
    assert_eq!(j.runtime, Some(3600 * SEC));
    assert_eq!(j.startdelay, (100_000_000, 500_000_000));
}

#[test]
fn kb_base_applies_to_its_section_and_below() {
    // kb_base is applied before the other options of its section, like fio.
    let f = ok("[a]\nbs=4k\nkb_base=1000\n[global]\nkb_base=1000\n[b]\nbs=4k,4kib\n[c]\nkb_base=1024\nbs=4k\n");
    assert_eq!(f.jobs[0].bs[0], BlockSizes::Fixed(4000));
    assert_eq!(f.jobs[1].bs[0], BlockSizes::Fixed(4000));
    assert_eq!(f.jobs[1].bs[1], BlockSizes::Fixed(4096));
    assert_eq!(f.jobs[1].kb_base, 1000);
    assert_eq!(f.jobs[2].bs[0], BlockSizes::Fixed(4096));
    let j = &ok("[a]\nsize=1MiB\n").jobs[0];
    assert_eq!(j.size, Some(SizeSpec::Bytes(1_000_000)));
}

// ---------------------------------------------------------------- semantics

#[test]
fn per_direction_block_sizes() {
    let bs = |v: &str| ok(&format!("[j]\nbs={v}\n")).jobs[0].bs.clone();
    let f = |n: u64| BlockSizes::Fixed(n);
    assert_eq!(bs("8k"), [f(8192), f(8192), f(8192)]);
    assert_eq!(bs("8k,32k"), [f(8192), f(32768), f(32768)]);
    assert_eq!(bs("8k,32k,"), [f(8192), f(32768), f(4096)]);
    assert_eq!(bs(",8k"), [f(4096), f(8192), f(8192)]);
    assert_eq!(bs(",8k,"), [f(4096), f(8192), f(4096)]);
    assert_eq!(bs("1k,2k,3k"), [f(1024), f(2048), f(3072)]);
    // bssplit beats bsrange beats bs, per direction, like fio.
    let j = &ok("[global]\nbsrange=1k:4k\n[j]\nbs=64k\nbssplit=,4k/50:8k/\n").jobs[0];
    assert_eq!(
        j.bs[0],
        BlockSizes::Range {
            min: 1024,
            max: 4096
        }
    );
    assert_eq!(j.bs[1], BlockSizes::Split(vec![(4096, 50), (8192, 50)]));
    assert_eq!(j.bs[2], j.bs[1]);
    assert!(err("[j]\nbs=0\n").message.contains("at least 1"));
}

#[test]
fn rw_modifiers_and_mix() {
    let j = &ok("[j]\nrw=randread:8\n").jobs[0];
    assert_eq!((j.rw, j.rw_modifier), (RwPattern::RandRead, Some(8)));
    let j = &ok("[j]\nrw=read:-8k\n").jobs[0];
    assert_eq!((j.rw, j.rw_modifier), (RwPattern::Read, Some(-8192)));
    let j = &ok("[j]\nrw=write:4k\n").jobs[0];
    assert_eq!(j.rw_modifier, Some(4096));
    let j = &ok("[global]\nrw=randread:8\n[j]\nrw=randwrite\n").jobs[0];
    assert_eq!(j.rw_modifier, None);
    assert!(parse("[j]\nrw=randread:\n").is_err());
    assert!(parse("[j]\nrw=randread:-2\n").is_err());
    // rwmixread/rwmixwrite: the last one wins.
    assert_eq!(ok("[j]\nrw=randrw\nrwmixread=70\n").jobs[0].rwmixread, 70);
    assert_eq!(
        ok("[j]\nrwmixread=70\nrwmixwrite=40\n").jobs[0].rwmixread,
        60
    );
    assert_eq!(
        ok("[j]\nrwmixwrite=40\nrwmixread=70\n").jobs[0].rwmixread,
        70
    );
    // direct/buffered: the last one wins.
    assert!(ok("[j]\nbuffered=0\n").jobs[0].direct);
    assert!(!ok("[j]\ndirect=1\nbuffered=1\n").jobs[0].direct);
    assert!(ok("[j]\nbuffered=1\ndirect=1\n").jobs[0].direct);
}

#[test]
fn cpus_beyond_the_machine_are_refused_as_fio_does() {
    let e = err("[j]\ncpus_allowed=0-8\n");
    assert_eq!(e.option.as_deref(), Some("cpus_allowed"));
    assert!(
        e.message.contains("CPU 8 too large (max=7)"),
        "{}",
        e.message
    );
    let two = parse_str(
        "[j]\ncpus_allowed=1\n",
        "t.fio",
        Path::new("."),
        &Inputs::plain(),
    );
    assert!(two.is_ok(), "CPU 1 exists on the default 2-CPU machine");
}

#[test]
fn other_modelled_options() {
    let f = ok("[j]\nfilename=/dev/sda:/dev/sd\\:x\nnrfiles=8\ndirectory=/tmp\ncgroup=grp\ncgroup_weight=500\n\
                prio=3\nprioclass=2\ncpus_allowed=0-3,6\npercentile_list=99:99.9:99.99\nclat_percentiles=0\n\
                lat_percentiles=1\nslat_percentiles=1\nbwavgtime=1000\niopsavgtime=250\nfsync=32\nfdatasync=8\n\
                end_fsync=1\nrate_process=poisson\nthinktime_blocks=4\nrandom_generator=lfsr\nrandrepeat=0\n\
                loops=3\ngroup_reporting\nbs_unaligned\nioengine=io_uring_cmd\nname=renamed\n");
    let j = &f.jobs[0];
    assert_eq!(j.name, "renamed");
    assert_eq!(
        j.filenames,
        vec!["/dev/sda".to_string(), "/dev/sd:x".to_string()]
    );
    assert_eq!(j.nrfiles, 2, "filename overrides nrfiles");
    assert_eq!(j.directory.as_deref(), Some("/tmp"));
    assert_eq!(
        (j.cgroup.as_deref(), j.cgroup_weight),
        (Some("grp"), Some(500))
    );
    assert_eq!((j.prio, j.prioclass), (Some(3), Some(IoPrioClass::Be)));
    assert_eq!(j.cpus_allowed, Some(vec![0, 1, 2, 3, 6]));
    assert_eq!(j.percentile_list, Some(vec![99.0, 99.9, 99.99]));
    assert!(!j.clat_percentiles && j.lat_percentiles && j.slat_percentiles);
    assert_eq!((j.bwavgtime_ms, j.iopsavgtime_ms), (1000, 250));
    assert_eq!((j.fsync, j.fdatasync, j.end_fsync), (32, 8, true));
    assert_eq!(j.rate_process, RateProcess::Poisson);
    assert_eq!(j.thinktime_blocks, 4);
    assert_eq!(j.random_generator, RandomGenerator::Lfsr);
    assert!(!j.randrepeat && j.group_reporting && j.bs_unaligned);
    assert_eq!(j.loops, 3);
    assert_eq!(j.ioengine.kind, EngineKind::Passthrough);
    for (engine, kind) in [
        ("sync", EngineKind::Sync),
        ("pvsync2", EngineKind::Sync),
        ("mmap", EngineKind::Sync),
        ("libaio", EngineKind::Async),
        ("io_uring", EngineKind::Async),
        ("posixaio", EngineKind::Async),
        ("sg", EngineKind::Passthrough),
        ("null", EngineKind::Null),
        ("cpuio", EngineKind::NotModelled),
        ("rbd", EngineKind::NotModelled),
        ("external:/opt/engine.so", EngineKind::NotModelled),
    ] {
        let j = &ok(&format!("[j]\nioengine={engine}\n")).jobs[0];
        assert_eq!((j.ioengine.name.as_str(), j.ioengine.kind), (engine, kind));
    }
    let j = &ok("[j]\nioengine=aio\n").jobs[0];
    assert_eq!(
        (j.ioengine.name.as_str(), j.ioengine.kind),
        ("libaio", EngineKind::Async)
    );
}

#[test]
fn ignored_options_are_listed_once() {
    let f = ok(
        "[global]\nthread\nverify_dump=1\n[a]\nunlink=0\nthread=1\nwrite_bw_log\n[b]\nfill_fs=1\n\
                ioscheduler=none\nverify_dump=0\nhipri\n",
    );
    assert_eq!(
        f.ignored,
        vec![
            "thread",
            "verify_dump",
            "fill_device",
            "ioscheduler",
            "hipri"
        ]
    );
    assert_eq!(
        f.global_options,
        vec![("verify_dump".to_string(), "1".to_string())]
    );
    // Ignored options are still reported as job options.
    assert_eq!(
        f.jobs[1].job_options[0],
        ("fill_device".to_string(), "1".to_string())
    );
}

#[test]
fn option_lists_follow_fio_order() {
    // fio parses kb_base first, filename after everything else and engine
    // options last; its JSON lists them in that order (checked with fio 3.33).
    let f = ok("[global]\nfilename=/dev/sdb\nhipri=1\nbs=4k\nkb_base=1000\n[j]\nfilename=/dev/sdc\nrw=read\n\
                directory=/d\n");
    let g: Vec<_> = f.global_options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(g, vec!["kb_base", "bs", "filename", "hipri"]);
    let j: Vec<_> = f.jobs[0]
        .job_options
        .iter()
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(j, vec!["rw", "directory", "filename"]);
}

#[test]
fn globals_apply_below_and_accumulate() {
    let f = ok("[global]\nbs=8k\nrw=randread\n[a]\n[global]\nbs=16k\niodepth=4\n[b]\nrw=write\n[c]\nbs=32k\n");
    let bs: Vec<_> = f.jobs.iter().map(|j| j.bs[0].clone()).collect();
    assert_eq!(
        bs,
        vec![
            BlockSizes::Fixed(8192),
            BlockSizes::Fixed(16384),
            BlockSizes::Fixed(32768)
        ]
    );
    let rw: Vec<_> = f.jobs.iter().map(|j| j.rw).collect();
    assert_eq!(
        rw,
        vec![RwPattern::RandRead, RwPattern::Write, RwPattern::RandRead]
    );
    let qd: Vec<_> = f.jobs.iter().map(|j| j.iodepth).collect();
    assert_eq!(qd, vec![1, 4, 4]);
    // Global options are listed in order; job options hold only the job's own.
    let g: Vec<_> = f
        .global_options
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    assert_eq!(g, vec!["bs=8k", "rw=randread", "bs=16k", "iodepth=4"]);
    assert!(f.jobs[0].job_options.is_empty());
    assert_eq!(
        f.jobs[1].job_options,
        vec![("rw".to_string(), "write".to_string())]
    );
}

#[test]
fn numjobs_and_groups() {
    let f = ok("[a]\nnumjobs=3\n[b]\nnumjobs=2\n[c]\nstonewall\nnumjobs=2\n[d]\nnew_group\n[e]\n");
    let summary: Vec<_> = f
        .jobs
        .iter()
        .map(|j| {
            (
                j.name.as_str(),
                j.clone_index,
                j.job_index,
                j.group_id,
                j.stonewall,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("a", 0, 0, 0, false),
            ("a", 1, 1, 0, false),
            ("a", 2, 2, 0, false),
            ("b", 0, 3, 0, false),
            ("b", 1, 4, 0, false),
            ("c", 0, 5, 1, true),
            ("c", 1, 6, 1, false),
            ("d", 0, 7, 2, false),
            ("e", 0, 8, 2, false),
        ]
    );
    // A stonewall on the very first job does not open a new group.
    let f = ok("[a]\nstonewall\n[b]\n");
    assert_eq!((f.jobs[0].group_id, f.jobs[1].group_id), (0, 0));
    assert!(f.jobs[0].stonewall);
    // stonewall in [global] puts every job section in its own group.
    let f = ok("[global]\nstonewall\n[a]\nnumjobs=2\n[b]\n[c]\n");
    let g: Vec<_> = f.jobs.iter().map(|j| (j.group_id, j.stonewall)).collect();
    assert_eq!(g, vec![(0, true), (0, false), (1, true), (2, true)]);
}

#[test]
fn env_and_keywords() {
    let vars: HashMap<&str, &str> = [("SIZE", "64m"), ("NUMJOBS", "4"), ("DEV", "sdb")]
        .into_iter()
        .collect();
    let env = |k: &str| vars.get(k).map(|v| v.to_string());
    let text = "[job]\nsize=${SIZE}\nnumjobs=${NUMJOBS}\nfilename=/dev/${DEV}${UNDEFINED}\n\
                iodepth=$ncpus\nbs=(2*$pagesize)\nio_size=2*$mb_memory\n";
    let machine = crate::machine::Machine {
        cpus: 16,
        ..Default::default()
    };
    let inputs = Inputs {
        env: &env,
        machine: &machine,
        ..Inputs::plain()
    };
    let f = parse_str(text, "env.fio", Path::new("."), &inputs).unwrap();
    let j = &f.jobs[0];
    assert_eq!(j.size, Some(SizeSpec::Bytes(64 << 20)));
    assert_eq!(f.jobs.len(), 4);
    assert_eq!(j.filenames, vec!["/dev/sdb".to_string()]);
    assert_eq!(j.iodepth, 16);
    assert_eq!(j.bs[0], BlockSizes::Fixed(8192));
    // `2*$mb_memory` is computed like fio's bc step: a plain number of bytes.
    assert_eq!(j.io_size, Some(SizeSpec::Bytes(2 * 16384)));
    // Job options hold the values after expansion.
    assert!(j
        .job_options
        .contains(&("size".to_string(), "64m".to_string())));
    // An undefined variable expands to nothing.
    let e = parse_str("[j]\nsize=${NOPE}\n", "env.fio", Path::new("."), &inputs).unwrap_err();
    assert_eq!(e.option.as_deref(), Some("size"));
    assert!(
        e.to_string()
            .contains("${NOPE} is not set in the environment"),
        "{e}"
    );
}

#[test]
fn includes_splice_options_into_their_section() {
    let dir = temp_dir("inc");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("glob.fio"),
        "; shared settings\nthread=1\ngroup_reporting=1\ninclude sub/deep.fio\n",
    )
    .unwrap();
    // Nested includes resolve against the including file's directory.
    std::fs::write(dir.join("sub/deep.fio"), "bs=8k\n").unwrap();
    std::fs::write(dir.join("test.fio"), "ioengine=libaio\niodepth=4\n").unwrap();
    let main = "[global]\nfilename=/tmp/test\ninclude glob.fio\n[test]\nrw=randread\ninclude test.fio\n[other]\n";
    std::fs::write(dir.join("main.fio"), main).unwrap();
    let f = parse_file(&dir.join("main.fio"), &Inputs::plain()).unwrap();
    let (t, o) = (&f.jobs[0], &f.jobs[1]);
    assert!(t.group_reporting && o.group_reporting);
    assert_eq!(t.bs[0], BlockSizes::Fixed(8192));
    assert_eq!((t.ioengine.name.as_str(), t.iodepth), ("libaio", 4));
    assert_eq!((o.ioengine.name.as_str(), o.iodepth), ("psync", 1));
    assert_eq!(f.ignored, vec!["thread"]);
    let names: Vec<_> = t.job_options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, vec!["rw", "ioengine", "iodepth"]);
    assert_eq!(f.global_options.len(), 4);
    assert_eq!(f.source, dir.join("main.fio").display().to_string());
}

// ---------------------------------------------------------------- command line

#[test]
fn command_line_seed_e4() {
    let a = args(&[
        "-rw=randwrite",
        "-bs=4k",
        "-size=100m",
        "-directory=/tmp",
        "-direct=1",
        "-numjobs=50",
        "-name=file1",
        "-ioengine=libaio",
        "-group_reporting",
    ]);
    let f = parse_args(&a, &Inputs::plain()).unwrap();
    assert_eq!(f.source, "<command line>");
    assert_eq!(f.jobs.len(), 50);
    for (i, j) in f.jobs.iter().enumerate() {
        assert_eq!(
            (
                j.name.as_str(),
                j.clone_index as usize,
                j.job_index as usize
            ),
            ("file1", i, i)
        );
        assert_eq!(j.group_id, 0);
        assert_eq!(j.rw, RwPattern::RandWrite);
        assert_eq!(
            j.bs,
            [
                BlockSizes::Fixed(4096),
                BlockSizes::Fixed(4096),
                BlockSizes::Fixed(4096)
            ]
        );
        assert_eq!(j.size, Some(SizeSpec::Bytes(100 << 20)));
        assert_eq!(j.directory.as_deref(), Some("/tmp"));
        assert!(j.direct && j.group_reporting);
        assert_eq!(j.ioengine.kind, EngineKind::Async);
    }
    let g: Vec<_> = f
        .global_options
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    assert_eq!(
        g,
        vec![
            "rw=randwrite",
            "bs=4k",
            "size=100m",
            "directory=/tmp",
            "direct=1",
            "numjobs=50"
        ]
    );
    assert_eq!(
        f.jobs[0].job_options,
        vec![
            ("name".to_string(), "file1".to_string()),
            ("ioengine".into(), "libaio".into()),
        ]
    );
}

#[test]
fn command_line_forms() {
    let a = args(&[
        "--name=global",
        "--rw=randread",
        "--bs",
        "8k",
        "--name=job1",
        "--direct",
        "1",
        "--name=job2",
        "--time_based",
        "--runtime=30",
    ]);
    let f = parse_args(&a, &Inputs::plain()).unwrap();
    assert_eq!(f.jobs.len(), 2);
    assert!(f
        .jobs
        .iter()
        .all(|j| j.rw == RwPattern::RandRead && j.bs[0] == BlockSizes::Fixed(8192)));
    assert!(f.jobs[0].direct && !f.jobs[1].direct);
    assert!(f.jobs[1].time_based);
    assert_eq!(f.jobs[1].runtime, Some(30 * SEC));
    // A boolean takes the next argument as its value, as fio's getopt does:
    // `--direct --bs=16k` is direct="--bs=16k", an error naming direct.
    let e = parse_args(
        &args(&["--name=j", "--direct", "--bs=16k"]),
        &Inputs::plain(),
    )
    .unwrap_err();
    assert_eq!(e.option.as_deref(), Some("direct"), "{e}");
    let e = parse_args(&args(&["--name=j", "--direct"]), &Inputs::plain()).unwrap_err();
    assert!(e.message.contains("needs a value"), "{e}");
}

#[test]
fn command_line_errors() {
    let e = parse_args(&args(&["--name=j", "--iodpeth=4"]), &Inputs::plain()).unwrap_err();
    assert_eq!(
        (e.file.as_str(), e.line, e.option.as_deref()),
        ("<command line>", 0, Some("iodpeth"))
    );
    assert!(e.message.contains("did you mean 'iodepth'"), "{e}");
    assert!(e.message.contains("--iodpeth=4"), "{e}");
    let e = parse_args(&args(&["--name=j", "-bs=4x"]), &Inputs::plain()).unwrap_err();
    assert_eq!((e.line, e.option.as_deref()), (0, Some("bs")));
    assert!(e.message.contains("-bs=4x"), "{e}");
    let e = parse_args(&args(&["--name=j", "--bs"]), &Inputs::plain()).unwrap_err();
    assert!(e.message.contains("needs a value"), "{e}");
    // fio's --profile generates its own jobs: refused, and a device
    // profile (what `validate --profile` takes) is pointed to --device.
    let e = parse_args(
        &args(&["j.fio", "--profile", "loop.toml"]),
        &Inputs::plain(),
    )
    .unwrap_err();
    assert_eq!(e.option.as_deref(), Some("profile"), "{e}");
    assert!(e.message.contains("--device FILE"), "{e}");
    let e = parse_args(&args(&["--name="]), &Inputs::plain()).unwrap_err();
    assert_eq!(e.option.as_deref(), Some("name"));
    let e = parse_args(&args(&["--output=x.json"]), &Inputs::plain()).unwrap_err();
    assert_eq!(e.option.as_deref(), Some("output"));
    let e = parse_args(&args(&["--rw=read"]), &Inputs::plain()).unwrap_err();
    assert!(e.message.contains("no jobs"), "{e}");
    let e = parse_args(&args(&["/nonexistent/dir/job.fio"]), &Inputs::plain()).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("/nonexistent/dir/job.fio", 0));
}

#[test]
fn command_line_job_files() {
    let dir = temp_dir("cli");
    let one = dir.join("one.fio");
    let two = dir.join("two.fio");
    std::fs::write(&one, "[global]\nrw=randread\n[a]\n[b]\n").unwrap();
    std::fs::write(&two, "[c]\nnumjobs=2\n").unwrap();
    let a = vec![
        "--bs=8k".to_string(),
        one.display().to_string(),
        "--name=cli".to_string(),
        two.display().to_string(),
    ];
    let f = parse_args(&a, &Inputs::plain()).unwrap();
    let s: Vec<_> = f
        .jobs
        .iter()
        .map(|j| {
            (
                j.name.as_str(),
                j.group_id,
                j.stonewall,
                j.rw,
                j.bs[0].clone(),
            )
        })
        .collect();
    let (b4, b8) = (BlockSizes::Fixed(4096), BlockSizes::Fixed(8192));
    // Command-line jobs first, then the files in order. The command line's
    // globals reach into the first file; fio resets the globals before each
    // later file, which also starts behind a stonewall (checked with fio 3.33).
    assert_eq!(
        s,
        vec![
            ("cli", 0, false, RwPattern::Read, b8.clone()),
            ("a", 0, false, RwPattern::RandRead, b8.clone()),
            ("b", 0, false, RwPattern::RandRead, b8),
            ("c", 1, true, RwPattern::Read, b4.clone()),
            ("c", 1, false, RwPattern::Read, b4),
        ]
    );
    // Global options are those in force at the end, as fio prints them.
    assert!(f.global_options.is_empty());
}

#[test]
fn sync_option_takes_fios_values() {
    for (v, want) in [
        ("none", SyncIo::None),
        ("0", SyncIo::None),
        ("sync", SyncIo::Sync),
        ("1", SyncIo::Sync),
        ("dsync", SyncIo::Dsync),
    ] {
        assert_eq!(ok(&format!("[j]\nsync={v}\n")).jobs[0].sync_io, want, "{v}");
    }
    assert_eq!(ok("[j]\n").jobs[0].sync_io, SyncIo::None);
    let f = ok("[j]\nsync=1\n");
    assert!(
        f.ignored.iter().all(|o| o != "sync"),
        "sync= is modelled now"
    );
    let e = err("[j]\nsync=2\n").to_string();
    assert!(e.contains("dsync"), "{e}");
}

#[test]
fn direct_io_needs_logical_block_alignment() {
    let mut j = JobSpec::with_defaults("a");
    j.direct = true;
    assert_eq!(j.direct_misalignment(512), None);
    j.bs[0] = BlockSizes::Fixed(3000);
    assert_eq!(j.direct_misalignment(512).as_deref(), Some("bs=3000"));
    j.direct = false;
    assert_eq!(
        j.direct_misalignment(512),
        None,
        "buffered I/O has no such rule"
    );
    j.direct = true;
    j.bs[0] = BlockSizes::Range {
        min: 4096,
        max: 65536,
    };
    assert_eq!(j.direct_misalignment(512), None);
    j.bs_unaligned = true;
    assert_eq!(
        j.direct_misalignment(512).as_deref(),
        Some("bsrange=4096-65536 with blocksize_unaligned=1")
    );
    j.bs[0] = BlockSizes::Range {
        min: 4096,
        max: 4096,
    };
    assert_eq!(
        j.direct_misalignment(512),
        None,
        "one size, aligned: fio 3.33 runs it"
    );
    j.bs_unaligned = false;
    j.bs[0] = BlockSizes::Split(vec![(4096, 50), (1000, 50)]);
    assert_eq!(j.direct_misalignment(512).as_deref(), Some("bssplit=1000"));
    j.bs[0] = BlockSizes::Fixed(512);
    assert_eq!(
        j.direct_misalignment(4096).as_deref(),
        Some("bs=512"),
        "a 4Kn device"
    );
    j.offset = SizeSpec::Bytes(1000);
    assert_eq!(j.direct_misalignment(512).as_deref(), Some("offset=1000"));
}

#[test]
fn percentage_random_and_sequential_per_direction() {
    let job = |opt: &str| format!("[job]\nrw=randrw\nsize=1m\n{opt}\n");
    assert_eq!(ok(&job("")).jobs[0].percentage_random, [100; 3]);
    assert_eq!(
        ok(&job("percentage_random=30")).jobs[0].percentage_random,
        [30; 3]
    );
    assert_eq!(
        ok(&job("percentage_sequential=,90")).jobs[0].percentage_random,
        [100, 10, 10]
    );
    let e = err(&job("percentage_random=101"));
    assert_eq!(e.option.as_deref(), Some("percentage_random"));
    assert!(e.message.contains("0..100"), "{e}");
}
