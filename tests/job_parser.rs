//! End-to-end tests of the fio job parser: the seed experiments' job files
//! (E1, E2, E5 in shared/reference/seed-experiments.md), the E4 command
//! line, job files in the style of fio's examples, and "never panics".

use std::path::Path;

use elevator::job::*;
use proptest::prelude::*;

fn parse(text: &str) -> JobFile {
    match parse_str(text, "test.fio", Path::new("."), &Inputs::plain()) {
        Ok(f) => f,
        Err(e) => panic!("{e}"),
    }
}

const SEC: u64 = 1_000_000_000;

fn fixed4k() -> [BlockSizes; 3] {
    [
        BlockSizes::Fixed(4096),
        BlockSizes::Fixed(4096),
        BlockSizes::Fixed(4096),
    ]
}

fn opts(list: &[(String, String)]) -> Vec<String> {
    list.iter().map(|(k, v)| format!("{k}={v}")).collect()
}

/// The global section shared by E1 and E2 (only iodepth differs).
fn e1_e2_global(iodepth: u32) -> String {
    format!(
        "[global]\nioengine=libaio\nblocksize=4k\ndirect=1\nbuffered=0\niodepth={iodepth}\nruntime=7200\n\
         random_generator=lfsr\nfilename=/dev/sda1\n"
    )
}

fn check_e1_e2_common(j: &JobSpec, iodepth: u32) {
    assert_eq!(j.ioengine.name, "libaio");
    assert_eq!(j.ioengine.kind, EngineKind::Async);
    assert_eq!(j.bs, fixed4k());
    assert!(j.direct);
    assert_eq!((j.iodepth, j.iodepth_low), (iodepth, iodepth));
    assert_eq!(j.runtime, Some(7200 * SEC));
    assert!(!j.time_based);
    assert_eq!(j.random_generator, RandomGenerator::Lfsr);
    assert_eq!(j.filenames, vec!["/dev/sda1".to_string()]);
    assert_eq!(j.group_id, 0);
    assert!(!j.stonewall);
}

#[test]
fn seed_e1_hdd_seven_schedulers() {
    let text = e1_e2_global(1)
        + "\n[writers]\nnumjobs=2\nrw=randwrite\n\n[reader_40]\nrw=randrw\nrwmixread=40\n";
    let f = parse(&text);
    assert_eq!(f.jobs.len(), 3);
    for j in &f.jobs {
        check_e1_e2_common(j, 1);
    }
    let w: Vec<_> = f
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.clone_index, j.job_index))
        .collect();
    assert_eq!(
        w,
        vec![("writers", 0, 0), ("writers", 1, 1), ("reader_40", 0, 2)]
    );
    assert_eq!(f.jobs[0].rw, RwPattern::RandWrite);
    assert_eq!(f.jobs[0].numjobs, 2);
    assert_eq!((f.jobs[2].rw, f.jobs[2].rwmixread), (RwPattern::RandRw, 40));
    assert_eq!(
        opts(&f.global_options),
        vec![
            "ioengine=libaio",
            "bs=4k",
            "direct=1",
            "buffered=0",
            "iodepth=1",
            "runtime=7200",
            "random_generator=lfsr",
            "filename=/dev/sda1"
        ]
    );
    assert_eq!(
        opts(&f.jobs[0].job_options),
        vec!["numjobs=2", "rw=randwrite"]
    );
    assert_eq!(
        opts(&f.jobs[2].job_options),
        vec!["rw=randrw", "rwmixread=40"]
    );
    assert!(f.ignored.is_empty());
}

#[test]
fn seed_e2_sata_ssd() {
    let text = e1_e2_global(4) + "\n[writers]\nnumjobs=10\nrw=randwrite\n\n[reader_20]\nnumjobs=2\nrw=randrw\nrwmixread=20\n";
    let f = parse(&text);
    assert_eq!(f.jobs.len(), 12);
    for j in &f.jobs {
        check_e1_e2_common(j, 4);
    }
    assert!(f.jobs[..10]
        .iter()
        .all(|j| j.name == "writers" && j.rw == RwPattern::RandWrite));
    assert!(f.jobs[10..]
        .iter()
        .all(|j| j.name == "reader_20" && j.rw == RwPattern::RandRw && j.rwmixread == 20));
    let idx: Vec<_> = f.jobs.iter().map(|j| j.job_index).collect();
    assert_eq!(idx, (0..12).collect::<Vec<_>>());
    assert_eq!((f.jobs[10].clone_index, f.jobs[11].clone_index), (0, 1));
}

#[test]
fn seed_e3_nvme_is_e2_with_iodepth_8() {
    let text = e1_e2_global(8).replace("/dev/sda1", "/dev/nvme0n1p1")
        + "[writers]\nnumjobs=10\nrw=randwrite\n[reader_20]\nnumjobs=2\nrw=randrw\nrwmixread=20\n";
    let f = parse(&text);
    assert_eq!(f.jobs.len(), 12);
    assert!(f
        .jobs
        .iter()
        .all(|j| j.iodepth == 8 && j.filenames == ["/dev/nvme0n1p1"]));
}

#[test]
fn seed_e4_command_line() {
    let line = "fio -rw=randwrite -bs=4k -size=100m -directory=/tmp -direct=1 -numjobs=50 \
                -name=file1 -ioengine=libaio -group_reporting";
    let args: Vec<String> = line.split_whitespace().skip(1).map(String::from).collect();
    let f = parse_args(&args, &Inputs::plain()).unwrap();
    assert_eq!(f.jobs.len(), 50);
    for (i, j) in f.jobs.iter().enumerate() {
        assert_eq!(j.name, "file1");
        assert_eq!(
            (j.clone_index, j.job_index, j.group_id),
            (i as u32, i as u32, 0)
        );
        assert_eq!(j.rw, RwPattern::RandWrite);
        assert_eq!(j.bs, fixed4k());
        assert_eq!(j.size, Some(SizeSpec::Bytes(100 * 1024 * 1024)));
        assert_eq!(j.directory.as_deref(), Some("/tmp"));
        assert!(j.direct && j.group_reporting);
        assert_eq!(
            (j.ioengine.name.as_str(), j.ioengine.kind),
            ("libaio", EngineKind::Async)
        );
        assert_eq!(j.iodepth, 1);
        assert!(j.filenames.is_empty());
    }
    assert!(f.ignored.is_empty());
}

#[test]
fn seed_e5_cgroup_weights() {
    let text = "[global]\ndirect=1\nioengine=libaio\nruntime=20\nbs=4k\nrw=randwrite\niodepth=1024\n\
                filename=/dev/sdX\nnumjobs=4\n\n[test1]\ncgroup=test1\ncgroup_weight=1000\n\n[test2]\n\
                cgroup=test2\ncgroup_weight=800\n\n[test3]\ncgroup=test3\ncgroup_weight=600\n\n[test4]\n\
                cgroup=test4\ncgroup_weight=400\n";
    let f = parse(text);
    assert_eq!(f.jobs.len(), 16);
    for (i, j) in f.jobs.iter().enumerate() {
        let section = i / 4 + 1;
        assert_eq!(j.name, format!("test{section}"));
        assert_eq!(j.clone_index as usize, i % 4);
        assert_eq!(j.cgroup, Some(format!("test{section}")));
        assert_eq!(j.cgroup_weight, Some(1200 - 200 * section as u32));
        assert_eq!(
            (j.iodepth, j.iodepth_low, j.iodepth_batch_submit),
            (1024, 1024, 1)
        );
        assert_eq!(j.runtime, Some(20 * SEC));
        assert_eq!(j.rw, RwPattern::RandWrite);
        assert_eq!(j.group_id, 0);
        assert_eq!(j.numjobs, 4);
        assert!(j.direct);
    }
}

// ------------------------------------------------- fio-example-style files

#[test]
fn example_ssd_phases_separated_by_stonewall() {
    let text = "; four phases on one file\n[global]\nbs=4k\nioengine=libaio\niodepth=4\nsize=10g\ndirect=1\n\
                runtime=60\ndirectory=/mnt/ssd\nfilename=ssd.test.file\n\n[seq-read]\nrw=read\nstonewall\n\n\
                [rand-read]\nrw=randread\nstonewall\n\n[seq-write]\nrw=write\nstonewall\n\n[rand-write]\n\
                rw=randwrite\nstonewall\n";
    let f = parse(text);
    let s: Vec<_> = f
        .jobs
        .iter()
        .map(|j| (j.name.as_str(), j.group_id, j.stonewall, j.rw))
        .collect();
    assert_eq!(
        s,
        vec![
            ("seq-read", 0, true, RwPattern::Read),
            ("rand-read", 1, true, RwPattern::RandRead),
            ("seq-write", 2, true, RwPattern::Write),
            ("rand-write", 3, true, RwPattern::RandWrite),
        ]
    );
    assert!(f
        .jobs
        .iter()
        .all(|j| j.size == Some(SizeSpec::Bytes(10 << 30))
            && j.directory.as_deref() == Some("/mnt/ssd")
            && j.filenames == ["ssd.test.file"]));
}

#[test]
fn example_bsrange_numjobs_with_trailing_comment() {
    let text = "[global]\ndirect=1\nsize=256m\nbsrange=4k-4k\ntimeout=60\nnumjobs=4 ; 4 simultaneous threads\n\
                \n[f1]\nrw=write\n\n[f2]\nstonewall\nrw=randwrite\n";
    let f = parse(text);
    assert_eq!(f.jobs.len(), 8);
    assert_eq!(
        f.jobs[0].bs[0],
        BlockSizes::Range {
            min: 4096,
            max: 4096
        }
    );
    assert_eq!(f.jobs[0].runtime, Some(60 * SEC));
    let groups: Vec<_> = f.jobs.iter().map(|j| j.group_id).collect();
    assert_eq!(groups, vec![0, 0, 0, 0, 1, 1, 1, 1]);
}

#[test]
fn example_bssplit_with_blanks_per_direction() {
    let text = "[iometer-like]\nrw=randrw\nrwmixread=80\nbssplit=512/10:1k/5:2k/5:4k/60:8k/2:16k/4:32k/4:64k/10\n\
                [mixed-dirs]\nbssplit=2k/50:4k/50,4k/90:8k/\n[blanks]\nbssplit=4k/50:1k/:32k/\n";
    let f = parse(text);
    let io = &f.jobs[0];
    assert_eq!(io.rwmixread, 80);
    match &io.bs[0] {
        BlockSizes::Split(v) => {
            assert_eq!(v.len(), 8);
            assert_eq!(v.iter().map(|e| e.1).sum::<u32>(), 100);
            assert!(v.contains(&(512, 10)) && v.contains(&(4096, 60)));
        }
        other => panic!("expected a split, got {other:?}"),
    }
    assert_eq!(io.bs[0], io.bs[1]);
    let m = &f.jobs[1];
    assert_eq!(m.bs[0], BlockSizes::Split(vec![(2048, 50), (4096, 50)]));
    assert_eq!(m.bs[1], BlockSizes::Split(vec![(8192, 10), (4096, 90)]));
    assert_eq!(m.bs[2], m.bs[1]);
    assert_eq!(
        f.jobs[2].bs[0],
        BlockSizes::Split(vec![(1024, 25), (32768, 25), (4096, 50)])
    );
}

#[test]
fn example_zipf_and_other_distributions() {
    let text = "[global]\nrw=randread\nnorandommap\nsize=1g\n[zipf]\nrandom_distribution=zipf:0.5\n\
                [pareto]\nrandom_distribution=pareto:0.9\n[normal]\nrandom_distribution=normal:20:0.25\n\
                [zoned]\nrandom_distribution=zoned:50/5:30/15:20/\n";
    let f = parse(text);
    assert_eq!(
        f.jobs[0].random_distribution,
        RandomDistribution::Zipf {
            theta: 0.5,
            center: None
        }
    );
    assert_eq!(
        f.jobs[1].random_distribution,
        RandomDistribution::Pareto {
            h: 0.9,
            center: None
        }
    );
    assert_eq!(
        f.jobs[2].random_distribution,
        RandomDistribution::Normal {
            sigma_pct: 20.0,
            center: Some(0.25)
        }
    );
    let z = f.jobs[3].random_zones.as_ref().unwrap();
    let access: Vec<_> = z[0].iter().map(|z| z.access_pct).collect();
    let region: Vec<_> = z[0].iter().map(|z| z.region).collect();
    assert_eq!(access, vec![50, 30, 20]);
    assert_eq!(
        region,
        vec![
            SizeSpec::Percent(5.0),
            SizeSpec::Percent(15.0),
            SizeSpec::Percent(80.0)
        ]
    );
    assert!(f.jobs.iter().all(|j| j.norandommap));
}

#[test]
fn example_rate_caps_writes_only() {
    let text = "[global]\nioengine=libaio\ndirect=1\n[reader]\nrw=randread\n[writer]\nrw=randwrite\nrate=,500k\n\
                [both]\nrw=randrw\nrate=1m,500k\n[paced]\nrw=read\nrate_iops=300,300,300\nrate_process=poisson\n";
    let f = parse(text);
    assert_eq!(f.jobs[0].rate, [None, None, None]);
    assert_eq!(f.jobs[1].rate[0], None);
    assert_eq!(f.jobs[1].rate[1], Some(500 * 1024));
    assert_eq!(f.jobs[2].rate[..2], [Some(1 << 20), Some(500 * 1024)]);
    assert_eq!(f.jobs[3].rate_iops, [Some(300); 3]);
    assert_eq!(f.jobs[3].rate_process, RateProcess::Poisson);
}

#[test]
fn example_aio_read_with_depths_and_buffered_0() {
    let text = "[global]\nioengine=libaio\nbuffered=0\nrw=randread\nbs=128k\nsize=512m\ndirectory=/data1\n\n\
                [file1]\niodepth=4\n\n[file2]\niodepth=32\n\n[file3]\niodepth=8\n\n[file4]\niodepth=16\n";
    let f = parse(text);
    let qd: Vec<_> = f.jobs.iter().map(|j| j.iodepth).collect();
    assert_eq!(qd, vec![4, 32, 8, 16]);
    assert!(f
        .jobs
        .iter()
        .all(|j| j.direct && j.bs[0] == BlockSizes::Fixed(128 << 10)));
}

#[test]
fn example_with_many_unmodelled_options() {
    let text = "[global]\nthread\nexitall\ngtod_reduce=0\nlog_avg_msec=1000\nwrite_bw_log=bw\nwrite_lat_log\n\
                unified_rw_reporting=mixed\ncontinue_on_error=all\nrefill_buffers\nscramble_buffers=0\n\
                buffer_compress_percentage=50\nlockmem=1g\nnice=-5\ncpumask=3\nfile_service_type=random:8\n\
                overwrite=1\nserialize_overlap=1\nsignificant_figures=6\nclocksource=clock_gettime\n\
                cgroup_nodelete=1\nuid=0\ngid=0\nflow=2\nflow_id=1\nlatency_target=10ms\nss=iops_slope:0.1%\n\
                ss_dur=60\nverify=crc32c\ndisk_util=0\n[job]\nrw=randwrite\ninvalidate=1\nioscheduler=mq-deadline\n";
    let f = parse(text);
    assert_eq!(f.jobs.len(), 1);
    assert!(f.ignored.contains(&"steadystate".to_string()));
    assert!(f.ignored.contains(&"steadystate_duration".to_string()));
    assert!(f.ignored.contains(&"ioscheduler".to_string()));
    assert!(f.jobs[0].verify, "verify=crc32c is modelled");
    // log_avg_msec, write_bw_log, write_lat_log, invalidate (page cache),
    // overwrite (the file's layout on ext4) and file_service_type are
    // modelled.
    assert_eq!(f.ignored.len(), 24);
    assert!(!f.ignored.contains(&"overwrite".to_string()));
    assert!(!f.ignored.contains(&"file_service_type".to_string()));
    assert_eq!(f.jobs[0].file_service.per_turn, 8);
    let mut sorted = f.ignored.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), f.ignored.len(), "ignored names are unique");
}

#[test]
fn example_backwards_read_and_holes() {
    let f = parse(
        "[backwards]\nrw=read:-8k\nbs=8k\n[holes]\nrw=read:512k\n[seq-random]\nrw=randread:16\n",
    );
    assert_eq!(f.jobs[0].rw_modifier, Some(-8192));
    assert_eq!(f.jobs[1].rw_modifier, Some(512 * 1024));
    assert_eq!(f.jobs[2].rw_modifier, Some(16));
}

// ------------------------------------------------------------ never panics

/// Option names and values mixed at random, so the parser's deeper paths
/// (units, lists, ranges) get garbage too, not only the lexer.
fn job_text() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "bs",
        "bsrange",
        "bssplit",
        "size",
        "offset",
        "rw",
        "rwmixread",
        "rate",
        "rate_iops",
        "runtime",
        "thinktime",
        "startdelay",
        "filesize",
        "cpus_allowed",
        "percentile_list",
        "filename",
        "random_distribution",
        "prio",
        "prioclass",
        "cgroup_weight",
        "numjobs",
        "iodepth",
        "kb_base",
        "ioengine",
        "direct",
        "stonewall",
        "new_group",
        "verify",
        "blockalign",
        "io_size",
        "randseed",
        "unknown_opt",
        "iodepth_low",
        "number_ios",
    ]);
    let value = prop::sample::select(vec![
        "",
        "4k",
        "4k-16k",
        "1:2",
        "4k/10:64k/50:32k/",
        ",8k",
        "8k,,",
        "50%",
        "(2*1024)m",
        "((((",
        "-1",
        "0x",
        "1e9",
        "zipf:1.2:0.5",
        "zoned:60/10:40/",
        "randread:8",
        "read:-8k",
        "0-3,6",
        "99:99.9",
        "${X}",
        "$ncpus*2",
        "18446744073709551616",
        "9999999999p",
        "1000",
        "libaio",
        "%",
        "a\\:b",
    ]);
    let line = prop_oneof![
        (key, value).prop_map(|(k, v)| format!("{k}={v}")),
        "[a-z]{1,8}".prop_map(|s| format!("[{s}]")),
        Just("[global]".to_string()),
        "\\PC{0,30}",
    ];
    prop::collection::vec(line, 0..24).prop_map(|l| l.join("\n"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_random_text(text in "\\PC{0,400}") {
        let _ = parse_str(&text, "fuzz.fio", Path::new("/nonexistent"), &Inputs::plain());
    }

    #[test]
    fn never_panics_on_random_ini(text in job_text()) {
        let _ = parse_str(&format!("[job]\n{text}"), "fuzz.fio", Path::new("/nonexistent"), &Inputs::plain());
    }

    #[test]
    fn never_panics_on_random_args(args in prop::collection::vec("-{1,2}[a-z_]{0,12}(=\\PC{0,12})?", 0..10)) {
        let _ = parse_args(&args, &Inputs::plain());
    }

    /// Parsing is deterministic: same input, same result.
    #[test]
    fn deterministic(text in job_text()) {
        let text = format!("[job]\n{text}");
        let a = parse_str(&text, "d.fio", Path::new("/nonexistent"), &Inputs::plain());
        let b = parse_str(&text, "d.fio", Path::new("/nonexistent"), &Inputs::plain());
        prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}

fn parse_error(text: &str) -> String {
    parse_str(text, "zones.fio", Path::new("."), &Inputs::plain())
        .expect_err("refused")
        .to_string()
}

#[test]
fn strided_zones_as_fio_3_33_checks_them() {
    let f = parse("[j]\nrw=read\nzonemode=strided\nzonesize=1m\nzoneskip=3m\n");
    assert_eq!(
        f.jobs[0].strided_zones,
        Some(StridedZones {
            size: 1 << 20,
            range: 1 << 20,
            skip: 3 << 20
        })
    );
    assert!(f.ignored.is_empty(), "{:?}", f.ignored);
    // fio: "--zonemode=none and --zonesize are not compatible".
    let e = parse_error("[j]\nrw=read\nzonesize=1m\n");
    assert!(
        e.contains("zones.fio:3") && e.contains("zonemode=strided"),
        "{e}"
    );
    let e = parse_error("[j]\nrw=read\nzonemode=strided\n");
    assert!(
        e.contains("zones.fio:3") && e.contains("needs zonesize"),
        "{e}"
    );
    let e = parse_error("[j]\nzonemode=zbd\n");
    assert!(e.contains("not modelled"), "{e}");
    // zonerange and zoneskip alone are unused, as in fio.
    assert_eq!(parse("[j]\nzoneskip=1m\n").jobs[0].strided_zones, None);
}

#[test]
fn verify_as_fio_3_33_takes_it() {
    let on = |text: &str| parse(text).jobs[0].verify;
    assert!(on("[j]\nrw=write\nverify=crc32c\n"));
    assert!(on("[j]\nrw=write\nverify=md5\n"));
    assert!(on("[j]\nrw=write\nverify=null\n"));
    assert!(!on("[j]\nrw=write\nverify=0\n"));
    assert!(!on("[j]\nrw=write\nverify=crc32c\ndo_verify=0\n"));
    assert!(!on("[j]\nrw=write\n"));
    let e = parse_error("[j]\nrw=write\nverify=crc99\n");
    assert!(e.contains("zones.fio:3") && e.contains("crc32c"), "{e}");
    let f = parse("[j]\nrw=write\nverify=crc32c\nverify_backlog=16\n");
    assert_eq!(f.ignored, ["verify_backlog"]);
}
