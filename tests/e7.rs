//! E7 (seed 003, the build server): examples/seed/e7-build.fio on ext4 with
//! the kernel defaults, with all of seed 003's tuning, and with each knob
//! alone; the table of the time the jobs spent in their read/write calls
//! (cache copies, waits for reads, dirty throttling) is printed.

use elevator::job::Ddir;
use elevator::report::RunReport;
use elevator::run::{JobSource, RunSpec};

const BUILD_MOUNT: &str = "ext4:data=writeback,noatime,nobarrier,delalloc,\
                           inode_readahead_blks=4096,journal_async_commit,commit=1800";

/// One row: its name, mount, and settings.
struct Row {
    name: &'static str,
    mount: &'static str,
    sets: &'static [(&'static str, &'static str)],
}

const VM_RATIOS: &[(&str, &str)] = &[
    ("vm.dirty_background_ratio", "60"),
    ("vm.dirty_ratio", "80"),
];
const VM_EXPIRE: &[(&str, &str)] = &[
    ("vm.dirty_expire_centisecs", "12000"),
    ("vm.dirty_writeback_centisecs", "6000"),
];
const ALL: &[(&str, &str)] = &[
    ("vm.dirty_background_ratio", "60"),
    ("vm.dirty_ratio", "80"),
    ("vm.dirty_expire_centisecs", "12000"),
    ("vm.dirty_writeback_centisecs", "6000"),
    ("nr_requests", "1024"),
    ("read_ahead_kb", "512"),
];

const ROWS: &[Row] = &[
    Row {
        name: "defaults",
        mount: "ext4",
        sets: &[],
    },
    Row {
        name: "all of seed 003",
        mount: BUILD_MOUNT,
        sets: ALL,
    },
    Row {
        name: "ext4 options",
        mount: BUILD_MOUNT,
        sets: &[],
    },
    Row {
        name: "dirty ratios 60/80",
        mount: "ext4",
        sets: VM_RATIOS,
    },
    Row {
        name: "expire 120 s, interval 60 s",
        mount: "ext4",
        sets: VM_EXPIRE,
    },
    Row {
        name: "nr_requests 1024",
        mount: "ext4",
        sets: &[("nr_requests", "1024")],
    },
    Row {
        name: "read_ahead_kb 512",
        mount: "ext4",
        sets: &[("read_ahead_kb", "512")],
    },
];

fn run(row: &Row) -> RunReport {
    let path = format!("{}/examples/seed/e7-build.fio", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap();
    let mut s = RunSpec::from_text("e7-build.fio", "")
        .scheduler("mq-deadline")
        .device("hdd")
        .mount(row.mount)
        // 3.13 had no WBT.
        .set("wbt_lat_usec", "0");
    s.machine.memory = 4 << 30;
    for (k, v) in row.sets {
        s = s.set(k, v);
    }
    s.job = JobSource::text("e7-build.fio", &text);
    elevator::run::run(&s).expect("E7 runs")
}

/// Seconds all jobs spent in read and write calls: Σ mean lat × I/Os.
fn io_wait_s(r: &RunReport) -> f64 {
    r.jobs
        .iter()
        .map(|j| {
            [Ddir::Read, Ddir::Write]
                .iter()
                .map(|&d| j.stats.lat_mean_ns(d) * j.stats.total_ios(d) as f64)
                .sum::<f64>()
        })
        .sum::<f64>()
        / 1e9
}

#[test]
#[ignore = "7 simulations of 60 s with 16 jobs: seconds in release, minutes in debug; run with --ignored to print the README's E7 table"]
fn e7_table() {
    println!("| configuration | I/O wait (s) | vs defaults | journal commits | flushes | device writes (MiB) |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    let mut base = 0.0;
    let mut all = 0.0;
    for (i, row) in ROWS.iter().enumerate() {
        let r = run(row);
        let w = io_wait_s(&r);
        if i == 0 {
            base = w;
        }
        if i == 1 {
            all = w;
        }
        let fs = r.elevator.fs.as_ref().unwrap();
        let du = &r.disk_util[0];
        println!(
            "| {} | {:.1} | {:+.0}% | {} | {} | {:.0} |",
            row.name,
            w,
            (w / base - 1.0) * 100.0,
            fs.journal.commits,
            r.elevator.disk_stats.as_ref().map_or(0, |d| d
                .named()
                .into_iter()
                .find(|(k, _)| *k == "flush_ios")
                .map_or(0, |x| x.1)),
            du.write_sectors as f64 * 512.0 / 1048576.0
        );
    }
    assert!(
        all < base,
        "seed 003's tuning must cut the I/O wait: {all} vs {base}"
    );
}
