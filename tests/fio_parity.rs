//! The simulator's workload against real fio: for each job file in
//! tests/fixtures/fio-parity, the bytes and I/Os of every job and direction
//! must equal what fio 3.33 did with it (counts.tsv, recorded by record.sh on
//! a 1 GiB loop device, the fs-* jobs on ext4 on it). These jobs' amounts do
//! not depend on fio's random numbers: where a file ends, how holes, loops,
//! io_size, number_ios, offset_increment, percentages, several files and
//! their service order bound a job, are fio's rules, which the model keeps.

use elevator::job::Ddir;
use elevator::run::{DeviceSource, JobSource, RunSpec};
use std::collections::BTreeMap;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fio-parity");
/// The loop device the counts were recorded on: 1 GiB.
const DEVICE_BYTES: u64 = 1 << 30;

/// (job, direction, io_bytes, total_ios), in fio's order.
type Rows = Vec<(String, String, u64, u64)>;

fn recorded() -> BTreeMap<String, Rows> {
    let text = std::fs::read_to_string(format!("{DIR}/counts.tsv")).expect("counts.tsv");
    let mut out: BTreeMap<String, Rows> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 5, "counts.tsv: {line}");
        let n = |s: &str| s.parse::<u64>().expect("a count");
        out.entry(f[0].to_string()).or_default().push((
            f[1].to_string(),
            f[2].to_string(),
            n(f[3]),
            n(f[4]),
        ));
    }
    out
}

/// The built-in nvme profile, the size of the recording's device.
fn device() -> DeviceSource {
    let text = include_str!("../profiles/nvme.toml");
    let sized: Vec<String> = text
        .lines()
        .map(|l| {
            if l.starts_with("capacity =") {
                format!("capacity = {DEVICE_BYTES}")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(sized
        .iter()
        .any(|l| l == &format!("capacity = {DEVICE_BYTES}")));
    DeviceSource {
        name: "nvme-1g".into(),
        profile: Some(sized.join("\n")),
    }
}

fn simulated(file: &str) -> Rows {
    let text = std::fs::read_to_string(format!("{DIR}/{file}")).expect("job file");
    let text = text
        .replace("${DEV}", "/dev/nvme0n1")
        .replace("${DIR}", "/mnt/parity");
    let mut spec = RunSpec::new(JobSource::text(file, &text));
    spec.device = device();
    let rep = elevator::run::run(&spec).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut rows = Vec::new();
    for j in &rep.jobs {
        for (name, d) in [
            ("read", Ddir::Read),
            ("write", Ddir::Write),
            ("trim", Ddir::Trim),
        ] {
            let ios = j.stats.total_ios(d);
            if ios > 0 {
                rows.push((
                    j.spec.name.clone(),
                    name.to_string(),
                    j.stats.io_bytes(d),
                    ios,
                ));
            }
        }
    }
    rows
}

#[test]
fn every_job_moves_the_bytes_and_ios_fio_moved() {
    let want = recorded();
    assert!(want.len() >= 20, "{} job files recorded", want.len());
    let mut wrong = Vec::new();
    for (file, rows) in &want {
        let got = simulated(file);
        if &got != rows {
            wrong.push(format!("{file}: fio {rows:?}, model {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_job_file_here_is_recorded() {
    let want = recorded();
    let mut files: Vec<String> = std::fs::read_dir(DIR)
        .expect("fixtures")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".fio"))
        .collect();
    files.sort();
    let recorded: Vec<&String> = want.keys().collect();
    assert_eq!(files.iter().collect::<Vec<_>>(), recorded);
}
