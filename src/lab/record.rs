//! A lab session kept on disk and read back. With `--save-json DIR` the
//! session writes [`RECORD_FILE`] into DIR beside fio's JSON of every run;
//! `validate --from-lab DIR` reads them back instead of measuring, so one
//! measurement can be set against several profiles or builds of the model.
//! Why: on these VMs the machine itself drifts (a tmpfs loop's IOPS moved by
//! a fifth within an hour), so two models compared on two measurements
//! differ by the drift as much as by the models.
//!
//! The record holds what `validate` needs besides fio's JSON: the job file's
//! text (a different job file is refused), the options that shaped the runs
//! (`--set`, `--max-runtime`, `--mount`, rounds), the schedulers run and
//! skipped, the notes, and per run the machine's CPU time and the device's
//! `stat`. Not kept: the 100 ms disk samples (they are in DIR as CSV).

use super::fio::{self, CpuTimes};
use super::jobfile;
use super::runner::{LabResult, LabRun};
use crate::block::stat::DiskStatFields;
use crate::sim::time::Ns;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The record's file name inside the `--save-json` directory.
pub const RECORD_FILE: &str = "lab.json";

/// The record's layout version; a reader refuses any other.
const FORMAT: u32 = 1;

/// What shaped the runs: the options `validate` must simulate with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecordedOptions {
    pub sets: Vec<(String, String)>,
    pub max_runtime_ns: Option<Ns>,
    /// `--mount` as given (`ext4[:OPTIONS]`).
    pub mount: Option<String>,
    pub repeat: usize,
    /// The measuring machine's CPUs and memory (bytes): what `--from-lab`
    /// simulates unless told otherwise.
    #[serde(default)]
    pub cpus: Option<usize>,
    #[serde(default)]
    pub memory: Option<u64>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct RecordedRun {
    scheduler: String,
    round: usize,
    /// fio's JSON, a file in the same directory.
    fio_json: String,
    busy_ns: Ns,
    steal_ns: Ns,
    #[serde(default)]
    block_softirqs: u64,
    /// The kworkers' and ksoftirqds' CPU time (absent in records kept
    /// before 2026-12-06f).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kthread_ns: Option<Ns>,
    /// Entries into the CPUs' idle states (absent before 2026-12-07h).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    idle_entries: Option<u64>,
    wall_ns: Ns,
    knobs: Vec<(String, String)>,
    /// The device's `stat` over the run, in the kernel's field order.
    disk_stat: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Record {
    format: u32,
    job_text: String,
    options: RecordedOptions,
    device: String,
    fio_version: String,
    offered: Vec<String>,
    schedulers: Vec<String>,
    skipped: Vec<(String, String)>,
    notes: Vec<String>,
    runs: Vec<RecordedRun>,
}

/// How a run's files in the `--save-json` directory begin.
pub fn run_prefix(round: usize, scheduler: &str) -> String {
    format!("round{round}-{scheduler}")
}

/// The file name of a run's fio JSON in the `--save-json` directory.
fn run_file(round: usize, scheduler: &str) -> String {
    format!("{}.json", run_prefix(round, scheduler))
}

fn stat_line(s: &DiskStatFields) -> String {
    let v: Vec<String> = s.named().iter().map(|(_, v)| v.to_string()).collect();
    v.join(" ")
}

/// Write the record of a finished session into `dir`.
pub fn save(
    dir: &Path,
    job_text: &str,
    options: RecordedOptions,
    r: &LabResult,
) -> Result<(), String> {
    let rec = Record {
        format: FORMAT,
        job_text: job_text.to_string(),
        options,
        device: r.device.clone(),
        fio_version: r.fio_version.clone(),
        offered: r.offered.clone(),
        schedulers: r.schedulers.clone(),
        skipped: r.skipped.clone(),
        notes: r.notes.clone(),
        runs: r
            .runs
            .iter()
            .map(|x| RecordedRun {
                scheduler: x.scheduler.clone(),
                round: x.round,
                fio_json: run_file(x.round, &x.scheduler),
                busy_ns: x.cpu.busy_ns,
                steal_ns: x.cpu.steal_ns,
                block_softirqs: x.cpu.block_softirqs,
                kthread_ns: x.cpu.kthread_ns,
                idle_entries: x.cpu.idle_entries,
                wall_ns: x.wall_ns,
                knobs: x.report.elevator.knobs.clone(),
                disk_stat: x.report.elevator.disk_stats.as_ref().map(stat_line),
            })
            .collect(),
    };
    let text = serde_json::to_string_pretty(&rec).map_err(|e| e.to_string())?;
    let p = dir.join(RECORD_FILE);
    std::fs::write(&p, text + "\n").map_err(|e| format!("{}: {e}", p.display()))
}

/// Read a record back for the job file `job`: the session as the lab
/// returned it (without the disk samples) and the options it ran with.
/// Errors name the file and what is wrong with it.
pub fn load(dir: &Path, job: &Path) -> Result<(LabResult, RecordedOptions), String> {
    let p = dir.join(RECORD_FILE);
    let text = std::fs::read_to_string(&p).map_err(|e| {
        format!(
            "{}: {e} (a directory written by `elevator validate --save-json DIR` or `elevator lab --save-json DIR`)",
            p.display()
        )
    })?;
    let rec: Record = serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}:{}: not a lab record: {e}",
            p.display(),
            e.line(),
            e.column()
        )
    })?;
    if rec.format != FORMAT {
        return Err(format!(
            "{}: record format {} (this elevator reads {FORMAT})",
            p.display(),
            rec.format
        ));
    }
    let job_text = std::fs::read_to_string(job).map_err(|e| format!("{}: {e}", job.display()))?;
    if job_text != rec.job_text {
        return Err(format!(
            "{}: recorded for another job file: {} differs from the text the runs were made with",
            p.display(),
            job.display()
        ));
    }
    let jf = jobfile::parse_for_device(job, &rec.device, rec.options.mount.is_some())?;
    let mut runs = Vec::with_capacity(rec.runs.len());
    for x in &rec.runs {
        let f = dir.join(&x.fio_json);
        let json = std::fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let mut report =
            fio::parse_json(&json, Some(&jf)).map_err(|e| format!("{}: {e}", f.display()))?;
        report.elevator.scheduler = x.scheduler.clone();
        report.elevator.device = rec.device.clone();
        report.elevator.knobs = x.knobs.clone();
        report.elevator.disk_stats = x
            .disk_stat
            .as_deref()
            .map(DiskStatFields::parse)
            .transpose()
            .map_err(|e| format!("{}: run {} {}: {e}", p.display(), x.round, x.scheduler))?;
        runs.push(LabRun {
            scheduler: x.scheduler.clone(),
            round: x.round,
            report,
            cpu: CpuTimes {
                busy_ns: x.busy_ns,
                steal_ns: x.steal_ns,
                block_softirqs: x.block_softirqs,
                kthread_ns: x.kthread_ns,
                idle_entries: x.idle_entries,
            },
            wall_ns: x.wall_ns,
            disk_log: Vec::new(),
        });
    }
    let result = LabResult {
        device: rec.device,
        fio_version: rec.fio_version,
        offered: rec.offered,
        schedulers: rec.schedulers,
        skipped: rec.skipped,
        runs,
        notes: rec.notes,
        recovered: Vec::new(),
        unrestored: Vec::new(),
    };
    Ok((result, rec.options))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::TempDir;
    use std::path::PathBuf;

    const FIXTURE: &str = "tests/fixtures/fio/randread_qd64";

    fn fixture(ext: &str) -> String {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("{FIXTURE}.{ext}"));
        std::fs::read_to_string(p).unwrap()
    }

    /// A two-round session of one scheduler, saved the way the runner saves
    /// it, in a fresh directory holding the job file too.
    fn saved_session() -> (TempDir, PathBuf, LabResult) {
        let dir = TempDir::new("elevator-record-test").unwrap();
        let job = dir.path().join("job.fio");
        std::fs::write(&job, fixture("fio")).unwrap();
        let json = fixture("json");
        let jf = jobfile::parse_for_device(&job, "/dev/loop9", false).unwrap();
        let mut result = LabResult {
            device: "/dev/loop9".into(),
            fio_version: "fio-3.33".into(),
            offered: vec!["none".into(), "bfq".into()],
            schedulers: vec!["none".into()],
            skipped: vec![("cfq".into(), "simulation only".into())],
            notes: vec!["CPU steal during the runs: 0.10 s in all".into()],
            ..LabResult::default()
        };
        for round in 1..=2 {
            std::fs::write(
                dir.path()
                    .join(format!("{}.json", run_prefix(round, "none"))),
                &json,
            )
            .unwrap();
            let mut report = fio::parse_json(&json, Some(&jf)).unwrap();
            report.elevator.knobs = vec![("nr_requests".into(), "256".into())];
            report.elevator.disk_stats = Some(DiskStatFields {
                read_ios: 1000 * round as u64,
                flush_ios: 3,
                ..DiskStatFields::default()
            });
            result.runs.push(LabRun {
                scheduler: "none".into(),
                round,
                report,
                cpu: CpuTimes {
                    busy_ns: 7_000_000 * round as u64,
                    steal_ns: 5,
                    block_softirqs: 40_000 + round as u64,
                    kthread_ns: (round == 2).then_some(3_000_000),
                    idle_entries: (round == 1).then_some(12_345),
                },
                wall_ns: 1_100_000_000,
                disk_log: Vec::new(),
            });
        }
        let options = RecordedOptions {
            sets: vec![("iosched/slice_idle".into(), "0".into())],
            max_runtime_ns: Some(5_000_000_000),
            mount: None,
            repeat: 2,
            cpus: Some(6),
            memory: Some(1 << 33),
        };
        save(dir.path(), &fixture("fio"), options, &result).unwrap();
        (dir, job, result)
    }

    #[test]
    fn a_saved_session_reads_back_as_it_was() {
        let (dir, job, before) = saved_session();
        let (after, options) = load(dir.path(), &job).unwrap();
        assert_eq!(options.repeat, 2);
        assert_eq!((options.cpus, options.memory), (Some(6), Some(1 << 33)));
        assert_eq!(options.max_runtime_ns, Some(5_000_000_000));
        assert_eq!(
            options.sets,
            vec![("iosched/slice_idle".into(), "0".into())]
        );
        assert_eq!(after.device, before.device);
        assert_eq!(after.schedulers, before.schedulers);
        assert_eq!(after.skipped, before.skipped);
        assert_eq!(after.notes, before.notes);
        assert_eq!(after.runs.len(), 2);
        for (a, b) in after.runs.iter().zip(&before.runs) {
            assert_eq!((a.round, &a.scheduler), (b.round, &b.scheduler));
            assert_eq!(a.cpu, b.cpu);
            assert_eq!(a.wall_ns, b.wall_ns);
            assert_eq!(a.report.elevator.knobs, b.report.elevator.knobs);
            assert_eq!(a.report.elevator.disk_stats, b.report.elevator.disk_stats);
            assert_eq!(a.report.jobs.len(), b.report.jobs.len());
            for (x, y) in a.report.jobs.iter().zip(&b.report.jobs) {
                assert_eq!(x.stats.dirs[0].total_ios, y.stats.dirs[0].total_ios);
            }
            assert!(a.report.jobs[0].stats.dirs[0].total_ios > 0);
        }
    }

    #[test]
    fn another_job_file_or_a_broken_record_is_refused_by_name() {
        let (dir, job, _) = saved_session();
        std::fs::write(&job, fixture("fio").replace("iodepth=64", "iodepth=32")).unwrap();
        let e = load(dir.path(), &job).unwrap_err();
        assert!(
            e.contains("lab.json") && e.contains("another job file"),
            "{e}"
        );
        std::fs::write(&job, fixture("fio")).unwrap();
        let rec = dir.path().join(RECORD_FILE);
        let text = std::fs::read_to_string(&rec).unwrap();
        std::fs::write(&rec, text.replacen("\"format\": 1", "\"format\": 7", 1)).unwrap();
        let e = load(dir.path(), &job).unwrap_err();
        assert!(e.contains("record format 7"), "{e}");
        std::fs::write(&rec, "{\"format\": 1,\n \"runs\": 3}").unwrap();
        let e = load(dir.path(), &job).unwrap_err();
        assert!(
            e.contains("lab.json:") && e.contains("not a lab record"),
            "{e}"
        );
        let e = load(&dir.path().join("nowhere"), &job).unwrap_err();
        assert!(e.contains("--save-json"), "{e}");
    }
}
