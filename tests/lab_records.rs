//! The lab records kept in `lab-records/` stay replayable: `validate
//! --from-lab` accepts a record only with the job file it was made with,
//! byte for byte, so editing one of those job files would silently strand
//! its record. Each record's job must still exist as a file of the
//! repository (under `examples/` or the session's `jobs/`), each session's
//! profile must load and its probes must parse.

use elevator::device::load_profile;
use elevator::lab::calibrate::Measured;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn sessions() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(Path::new(ROOT).join("lab-records"))
        .expect("lab-records/")
        .map(|e| e.expect("entry").path())
        // traces/ holds kernel traces (perf), not validate sessions.
        .filter(|p| p.is_dir() && !p.ends_with("traces"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no session under lab-records/");
    v
}

/// Every `.fio` file under `dir`, recursively, sorted.
fn job_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = rd.map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            job_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "fio") {
            out.push(p);
        }
    }
}

#[test]
fn every_record_still_has_the_job_file_it_was_made_with() {
    for s in sessions() {
        let mut jobs = Vec::new();
        job_files(&Path::new(ROOT).join("examples"), &mut jobs);
        job_files(&s.join("jobs"), &mut jobs);
        let texts: Vec<String> = jobs
            .iter()
            .map(|p| fs::read_to_string(p).expect("job file"))
            .collect();
        let mut records: Vec<PathBuf> = fs::read_dir(&s)
            .expect("session dir")
            .map(|e| e.expect("entry").path().join("lab.json"))
            .filter(|p| p.is_file())
            .collect();
        records.sort();
        assert!(!records.is_empty(), "{}: no record", s.display());
        for r in records {
            let doc: Value = serde_json::from_str(&fs::read_to_string(&r).expect("record"))
                .expect("record is JSON");
            let text = doc["job_text"].as_str().expect("job_text");
            assert!(
                texts.iter().any(|t| t == text),
                "{}: its job file is gone or changed (no file under examples/ or the session's jobs/ has its text)",
                r.display()
            );
        }
    }
}

#[test]
fn every_session_profile_loads_and_its_probes_parse() {
    for s in sessions() {
        let cal = s.join("cal.toml");
        load_profile(cal.to_str().expect("utf-8 path"))
            .unwrap_or_else(|e| panic!("{}: {e}", cal.display()));
        let probes = s.join("probes.json");
        let m: Measured = serde_json::from_str(&fs::read_to_string(&probes).expect("probes"))
            .unwrap_or_else(|e| panic!("{}: {e}", probes.display()));
        assert!(!m.points.is_empty(), "{}: no probe", probes.display());
    }
}
