//! Tasks sharing CPUs (src/task/runqueue.rs): more fio jobs than CPUs are
//! time-sliced the way the kernel's fair scheduler does it, not run one
//! after another.

use elevator::job::Ddir;
use elevator::run::{JobSource, RunSpec};
use std::path::PathBuf;

fn job_text(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/jobs")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A scratch directory removed at the end of the test.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(tag: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("elevator-cpushare-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

#[test]
fn four_jobs_on_two_cpus_progress_together() {
    let dir = scratch("four");
    let mut spec = RunSpec::new(JobSource::text(
        "cpu-share-4jobs.fio",
        &job_text("cpu-share-4jobs.fio"),
    ))
    .device("ram")
    .cpus(2);
    spec.log_dir = Some(dir.0.to_string_lossy().into_owned());
    let rep = elevator::run(&spec).expect("runs");
    assert_eq!(rep.jobs.len(), 4);
    let iops: Vec<f64> = rep
        .jobs
        .iter()
        .map(|j| j.stats.total_ios(Ddir::Read) as f64 * 1e9 / j.stats.runtime_ns() as f64)
        .collect();
    let (lo, hi) = iops
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    assert!(
        hi <= lo * 1.10,
        "per-job IOPS differ by more than 10%: {iops:?}"
    );
    // They ran side by side: every job's runtime is about the whole run's.
    let runtimes: Vec<u64> = rep.jobs.iter().map(|j| j.stats.runtime_ns()).collect();
    let longest = *runtimes.iter().max().unwrap();
    for r in &runtimes {
        assert!(*r * 10 >= longest * 9, "runtimes {runtimes:?}");
    }
    // Each job's IOPS log starts in the first averaging window.
    for n in 1..=4 {
        let p = dir.0.join(format!("share_iops.{n}.log"));
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let first: u64 = text
            .lines()
            .next()
            .and_then(|l| l.split(", ").next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{}: no sample", p.display()));
        assert!(first <= 10, "job {n}'s log starts at {first} ms");
    }
}

#[test]
fn two_cpus_each_shared_by_two_jobs_give_the_machine_s_total() {
    // Sharing costs context switches, nothing more: the total stays within
    // a few percent of two jobs alone on the same two CPUs.
    let run = |numjobs: u32| {
        let text = format!(
            "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=32\n\
             runtime=200ms\ntime_based\nfilename=/dev/ram0\n[x]\nnumjobs={numjobs}\n"
        );
        let spec = RunSpec::from_text("t.fio", &text).device("ram").cpus(2);
        let rep = elevator::run(&spec).expect("runs");
        rep.jobs
            .iter()
            .map(|j| j.stats.total_ios(Ddir::Read) as f64 * 1e9 / j.stats.runtime_ns() as f64)
            .sum::<f64>()
    };
    let (two, four) = (run(2), run(4));
    assert!(
        four <= two * 1.01 && four >= two * 0.90,
        "two jobs {two:.0} IOPS, four jobs {four:.0}"
    );
}
