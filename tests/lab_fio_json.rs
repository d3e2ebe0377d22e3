//! fio's JSON, as real fio 3.33 printed it on a loop device (files in
//! tests/fixtures/fio, made by the job files next to them; see README there),
//! read into the results type the simulator fills (`RunReport`) and printed
//! back through elevator's own fio JSON writer, the comparison table and the
//! text report.

use elevator::job::{self, Ddir, JobFile};
use elevator::lab::fio::parse_json;
use elevator::report::table::group_rows;
use elevator::report::{fio_json, fio_text, layout, RunReport};
use elevator::stats::LatKind;
use serde_json::Value;
use std::path::Path;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fio");

fn load(name: &str) -> (String, Value, JobFile) {
    let text = std::fs::read_to_string(format!("{DIR}/{name}.json")).expect("fixture");
    let doc: Value = serde_json::from_str(&text).expect("fixture is JSON");
    let env = |n: &str| (n == "DEV").then(|| "/dev/loop0".to_string());
    let inputs = job::Inputs {
        env: &env,
        ..job::Inputs::plain()
    };
    let jf = job::parse_file(Path::new(&format!("{DIR}/{name}.fio")), &inputs).expect("job parses");
    (text, doc, jf)
}

fn report(name: &str) -> (RunReport, Value) {
    let (text, doc, jf) = load(name);
    (parse_json(&text, Some(&jf)).expect("fio JSON imports"), doc)
}

const DIRS: [(&str, Ddir); 3] = [
    ("read", Ddir::Read),
    ("write", Ddir::Write),
    ("trim", Ddir::Trim),
];

/// Every entry's numbers survive the trip fio JSON → RunReport → elevator's
/// fio JSON: bytes, I/Os, runtime, IOPS, bandwidth, latency statistics and
/// (listed) percentiles.
fn assert_round_trip(name: &str) {
    let (rep, doc) = report(name);
    let back = fio_json::render(&rep);
    let a = doc["jobs"].as_array().unwrap();
    let b = back["jobs"].as_array().unwrap();
    assert_eq!(a.len(), b.len(), "{name}: entries");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x["jobname"], y["jobname"], "{name}");
        assert_eq!(x["groupid"], y["groupid"], "{name}");
        assert_eq!(x["job options"], y["job options"], "{name}");
        for (d, _) in DIRS {
            let (p, q) = (&x[d], &y[d]);
            for k in [
                "io_bytes",
                "io_kbytes",
                "bw_bytes",
                "bw",
                "runtime",
                "total_ios",
                "bw_min",
                "bw_max",
                "bw_samples",
                "iops_min",
                "iops_max",
                "iops_samples",
            ] {
                assert_eq!(p[k], q[k], "{name} {d} {k}");
            }
            let close = |u: &Value, v: &Value, what: &str| {
                let (u, v) = (u.as_f64().unwrap(), v.as_f64().unwrap());
                assert!(
                    (u - v).abs() <= 1e-6 * u.abs().max(1.0),
                    "{name} {d} {what}: {u} vs {v}"
                );
            };
            close(&p["iops"], &q["iops"], "iops");
            close(&p["bw_mean"], &q["bw_mean"], "bw_mean");
            close(&p["bw_dev"], &q["bw_dev"], "bw_dev");
            for lat in ["slat_ns", "clat_ns", "lat_ns"] {
                for k in ["min", "max", "N"] {
                    assert_eq!(p[lat][k], q[lat][k], "{name} {d} {lat} {k}");
                }
                close(&p[lat]["mean"], &q[lat]["mean"], "mean");
                close(&p[lat]["stddev"], &q[lat]["stddev"], "stddev");
                assert_eq!(
                    p[lat].get("percentile"),
                    q[lat].get("percentile"),
                    "{name} {d} {lat} percentiles"
                );
            }
        }
        for k in ["job_runtime", "ctx", "majf", "minf"] {
            assert_eq!(x[k], y[k], "{name} {k}");
        }
        assert_eq!(
            x["sync"]["total_ios"], y["sync"]["total_ios"],
            "{name} sync"
        );
        assert_eq!(
            x["sync"]["lat_ns"]["N"], y["sync"]["lat_ns"]["N"],
            "{name} sync N"
        );
    }
    assert_eq!(doc["global options"], back["global options"], "{name}");
    assert_eq!(doc["timestamp"], back["timestamp"], "{name}");
    // The disk_util entry keeps fio's counters.
    assert_eq!(doc["disk_util"][0]["name"], back["disk_util"][0]["name"]);
    assert_eq!(
        doc["disk_util"][0]["write_ios"],
        back["disk_util"][0]["write_ios"]
    );
    // And the text report prints every entry.
    let text = fio_text::render(&rep);
    for x in a {
        assert!(
            text.contains(x["jobname"].as_str().unwrap()),
            "{name}: text report"
        );
    }
}

#[test]
fn every_fixture_round_trips() {
    for name in [
        "mixed_group_reporting",
        "e2_per_job",
        "randread_qd64",
        "psync_fsync",
        "cgroups_bfq",
    ] {
        assert_round_trip(name);
    }
}

#[test]
fn json_plus_bins_give_fios_exact_histogram() {
    // With json+ every bucket is known: any percentile, not just the listed
    // ones, comes out as fio computes it, and the bucket total is N.
    let (rep, doc) = report("randread_qd64");
    let e = &rep.jobs[0].stats;
    let ds = &e.dirs[0];
    assert_eq!(ds.clat_hist.total(), ds.clat.samples);
    let listed = e.percentiles(LatKind::Clat, Ddir::Read);
    let pct = &doc["jobs"][0]["read"]["clat_ns"]["percentile"];
    assert_eq!(listed.len(), pct.as_object().unwrap().len());
    for (p, v) in listed {
        assert_eq!(pct[format!("{p:.6}")].as_u64(), Some(v), "p{p}");
    }
    // fio's own bins → the same bins back.
    let bins: Vec<(u64, u64)> = doc["jobs"][0]["read"]["clat_ns"]["bins"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
        .collect();
    let mut ours = ds.clat_hist.bins();
    let mut theirs = bins;
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs);
    assert!(doc["jobs"][0]["read"]["iops"].as_f64().unwrap() > 1000.0);
}

#[test]
fn group_reporting_entries_map_to_their_jobs() {
    let (rep, _) = report("mixed_group_reporting");
    let lay = layout(&rep);
    assert_eq!(lay.entries.len(), 2);
    assert_eq!(lay.entries[0].name, "randwrite");
    assert_eq!(lay.entries[1].name, "randrw20");
    assert_eq!(lay.entries[1].groupid, 1);
    // The spec is the job file's: 4 KiB random writes, 4 jobs in the group.
    assert_eq!(rep.jobs[0].spec.numjobs, 4);
    assert_eq!(rep.jobs[1].spec.rwmixread, 20);
    let rows = group_rows(&rep);
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(
        (rows[1].name.as_str(), rows[1].dir),
        ("randrw20", Ddir::Read)
    );
    // Mixed 20/80: reads are about a quarter of the writes.
    let q = rows[1].iops / rows[2].iops;
    assert!((0.2..0.3).contains(&q), "{q}");
    assert_eq!(rep.elevator.mode, "lab");
}

#[test]
fn per_job_entries_fold_into_medians_like_the_documents() {
    let (rep, doc) = report("e2_per_job");
    assert_eq!(rep.jobs.len(), 12);
    let rows = group_rows(&rep);
    let w = rows.iter().find(|r| r.name == "writers").unwrap();
    assert_eq!(w.jobs, 10);
    let mut iops: Vec<f64> = doc["jobs"].as_array().unwrap()[..10]
        .iter()
        .map(|j| j["write"]["iops"].as_f64().unwrap())
        .collect();
    iops.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let median = (iops[4] + iops[5]) / 2.0;
    assert!(
        (w.iops - median).abs() < 1e-6 * median,
        "{} vs {median}",
        w.iops
    );
    let r = rows
        .iter()
        .find(|r| r.name == "reader_20" && r.dir == Ddir::Read)
        .unwrap();
    assert_eq!(r.jobs, 2);
    // Plain json (no bins): the listed percentiles are rebuilt exactly.
    let e = &rep.jobs[11].stats;
    let pct = &doc["jobs"][11]["write"]["clat_ns"]["percentile"];
    for (p, v) in e.percentiles(LatKind::Clat, Ddir::Write) {
        assert_eq!(pct[format!("{p:.6}")].as_u64(), Some(v), "p{p}");
    }
}

#[test]
fn sync_engine_fsync_and_lat_percentiles() {
    let (rep, doc) = report("psync_fsync");
    let w = &rep.jobs[0].stats;
    assert!(w.sync_total > 0);
    assert_eq!(
        w.sync_total,
        doc["jobs"][0]["sync"]["total_ios"].as_u64().unwrap()
    );
    assert_eq!(w.sync.samples, w.sync_total);
    let r = &rep.jobs[1].stats;
    assert!(r.opts.lat_percentiles);
    assert_eq!(r.opts.percentile_list, vec![50.0, 90.0, 99.0, 99.9]);
    let lat = r.percentiles(LatKind::Lat, Ddir::Read);
    assert_eq!(lat.len(), 4);
    assert_eq!(
        Some(lat[2].1),
        doc["jobs"][1]["read"]["lat_ns"]["percentile"]["99.000000"].as_u64()
    );
}

#[test]
fn cgroup_jobs_keep_the_group_fio_used() {
    let (rep, doc) = report("cgroups_bfq");
    assert_eq!(rep.jobs.len(), 2);
    let opts = &rep.jobs[0].spec.job_options;
    let cg = opts
        .iter()
        .find(|(k, _)| k == "cgroup")
        .map(|(_, v)| v.clone())
        .unwrap();
    assert_eq!(
        Some(cg.as_str()),
        doc["jobs"][0]["job options"]["cgroup"].as_str()
    );
    assert!(cg.starts_with("elv"), "{cg}");
    // The job file's own cgroup and weight are on the spec.
    assert_eq!(rep.jobs[0].spec.cgroup.as_deref(), Some("test1"));
    assert_eq!(rep.jobs[1].spec.cgroup_weight, Some(400));
    // Weight 1000 against 400 under BFQ: the first group got more.
    let rows = group_rows(&rep);
    assert!(rows[0].iops > rows[1].iops, "{rows:?}");
}

#[test]
fn without_the_job_file_entries_still_import() {
    let (text, doc, _) = load("e2_per_job");
    let rep = parse_json(&text, None).unwrap();
    assert_eq!(rep.jobs.len(), doc["jobs"].as_array().unwrap().len());
    assert_eq!(rep.jobs[0].spec.name, "writers");
    assert_eq!(group_rows(&rep).len(), 3);
}
