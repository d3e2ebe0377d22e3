//! elevator as a library: one simulation per scheduler for the same job, read
//! back from the report. Run it with `cargo run --release --example library`.

use elevator::job::Ddir;
use elevator::{RunReport, RunSpec};

const JOB: &str = "\
[global]
ioengine=libaio
direct=1
bs=4k
iodepth=16
runtime=2
time_based
filename=/dev/sdb

[reader]
rw=randread

[writer]
rw=write
bs=64k
iodepth=64
";

/// (IOPS, mean latency in µs) of the reads of every job together.
fn reads(report: &RunReport) -> (f64, f64) {
    let (mut ios, mut lat_ns, mut runtime_ns) = (0u64, 0.0, 0u64);
    for job in &report.jobs {
        let n = job.stats.total_ios(Ddir::Read);
        ios += n;
        lat_ns += job.stats.lat_mean_ns(Ddir::Read) * n as f64;
        runtime_ns = runtime_ns.max(job.stats.runtime_ns());
    }
    let iops = ios as f64 * 1e9 / runtime_ns.max(1) as f64;
    (iops, lat_ns / ios.max(1) as f64 / 1e3)
}

fn main() {
    if let Err(e) = compare() {
        eprintln!("library example: {e}");
        std::process::exit(2);
    }
}

fn compare() -> Result<(), elevator::Error> {
    for scheduler in ["none", "mq-deadline"] {
        let spec = RunSpec::from_text("mixed.fio", JOB)
            .scheduler(scheduler)
            .device("sata-ssd")
            .seed(1);
        let report = elevator::run(&spec)?;
        let (iops, lat_us) = reads(&report);
        println!("{scheduler:12} reads: {iops:8.0} IOPS, mean latency {lat_us:8.1} us");
    }
    Ok(())
}
