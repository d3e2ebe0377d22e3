//! `elevator compare`: one job file simulated under several schedulers, the
//! table the source documents print.

use super::args::{self, valued, with_short, Opt, Unknown, HELP};
use super::run::{build_spec, notices, run_many_with_bar, RUN_OPTS};
use super::{emit, note, CliError};
use crate::report::table::{self, Column, Outcome};
use crate::report::{fio_json, fio_text, RunReport};
use crate::run::RunSpec;
use crate::sched;
use crate::sim::time::NS_PER_SEC;
use serde_json::json;

const OWN_OPTS: &[Opt] = &[
    valued(
        "schedulers",
        "LIST",
        "comma-separated (default: every scheduler current mainline kernels\nhave); schedulers the simulator does not have yet are listed as\nsuch (`elevator schedulers`)",
    ),
    valued(
        "format",
        "FMT",
        "table (default), json, normal (fio's text per scheduler);\nseveral comma-separated",
    ),
    with_short(valued("output", "FILE", "write the result to FILE"), 'o'),
    HELP,
];

fn all_opts() -> Vec<Opt> {
    let mut v = OWN_OPTS.to_vec();
    v.splice(1..1, RUN_OPTS.iter().copied());
    v
}

pub fn help() -> String {
    format!(
        "elevator compare — simulate one job file under several schedulers

USAGE:
    elevator compare JOBFILE --schedulers LIST [OPTIONS]

Prints the table of the source documents: per scheduler and reporting group,
bandwidth, IOPS and mean latency for reads and writes, p99 completion
latency, and each scheduler's IOPS ratio to the first. The runs go side by
side on this machine's CPUs; each is deterministic.

{}",
        args::options_help(&all_opts())
    )
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

/// The per-scheduler runs: a spec for each simulated scheduler (its
/// `iosched/` settings narrowed to the tunables it has), None for the rest.
fn plan(base: &RunSpec, names: &[String]) -> Result<Vec<(String, Option<RunSpec>)>, CliError> {
    let mut known: Vec<&'static str> = Vec::new();
    let mut plans = Vec::new();
    for n in names {
        let t = sched::find(n).map_err(|e| CliError::bad(format!("--schedulers: {e}")))?;
        if !t.simulated() {
            plans.push((t.name.to_string(), None));
            continue;
        }
        let mine = sched::tunable_names(t);
        known.extend(mine.iter().copied());
        let mut spec = base.clone().scheduler(t.name);
        spec.settings.retain(|s| {
            s.name
                .strip_prefix("iosched/")
                .is_none_or(|x| mine.contains(&x))
        });
        plans.push((t.name.to_string(), Some(spec)));
    }
    for s in &base.settings {
        if let Some(x) = s.name.strip_prefix("iosched/") {
            if !known.contains(&x) {
                return Err(CliError::bad(format!(
                    "--set {}: no simulated scheduler of the list ({}) has this tunable",
                    s.name,
                    names.join(", ")
                )));
            }
        }
    }
    Ok(plans)
}

/// `elevator compare`.
pub fn cmd(argv: &[String]) -> Result<(), CliError> {
    for a in argv {
        let name = a.trim_start_matches('-').split('=').next().unwrap_or("");
        if a.starts_with('-') && matches!(name, "scheduler" | "output-format" | "print-spec") {
            return Err(CliError::bad(format!(
                "compare: '{a}' is a `run` option; compare takes --schedulers LIST and --format table|json|normal"
            )));
        }
    }
    let opts = all_opts();
    let p = args::parse("compare", argv, &opts, Unknown::PassFio)?;
    if p.help() {
        return emit(&help(), None);
    }
    let fmts = list(p.get("format").unwrap_or("table"));
    for f in &fmts {
        if !["table", "json", "normal"].contains(&f.as_str()) {
            return Err(CliError::bad(format!(
                "--format: unknown format '{f}' (table, json, normal)"
            )));
        }
    }
    let names = match p.get("schedulers") {
        Some(l) => list(l),
        None => sched::SCHEDULERS
            .iter()
            .filter(|t| t.mainline)
            .map(|t| t.name.to_string())
            .collect(),
    };
    if names.is_empty() {
        return Err(CliError::bad(
            "--schedulers: expected a comma-separated list",
        ));
    }
    let (base, jf) = build_spec("compare", &p)?;
    let plans = plan(&base, &names)?;
    notices(&jf, base.mount.as_deref());
    let long = jf
        .jobs
        .iter()
        .filter_map(|j| j.runtime)
        .max()
        .is_some_and(|r| r > 60 * NS_PER_SEC);
    if long && base.max_runtime_ns.is_none() {
        note("note: the job runs for more than a minute of simulated time per scheduler; --max-runtime caps it");
    }
    let specs: Vec<RunSpec> = plans.iter().filter_map(|(_, s)| s.clone()).collect();
    let mut results = run_many_with_bar(&specs, !p.flag("no-progress")).into_iter();
    let mut cols = Vec::new();
    for (name, spec) in &plans {
        let outcome = match spec {
            None => Outcome::Skipped("not simulated yet".into()),
            Some(_) => {
                let r = results.next().expect("one result per spec")?;
                for w in &r.elevator.warnings {
                    note(&format!("warning: {name}: {w}"));
                }
                Outcome::Runs(vec![r])
            }
        };
        cols.push(Column {
            scheduler: name.clone(),
            outcome,
            cpu_us_per_io: Vec::new(),
        });
    }
    emit(&render(&fmts, &base, &cols, &p.rest), p.get("output"))
}

fn render(fmts: &[String], base: &RunSpec, cols: &[Column], job_args: &[String]) -> String {
    let device = &base.device.name;
    let mut out = String::new();
    for f in fmts {
        match f.as_str() {
            "json" => {
                let runs: Vec<serde_json::Value> = cols
                    .iter()
                    .filter_map(|c| match &c.outcome {
                        Outcome::Runs(r) => r.first().map(|x: &RunReport| {
                            json!({"scheduler": c.scheduler, "round": 1, "fio": fio_json::render(x)})
                        }),
                        _ => None,
                    })
                    .collect();
                let doc = json!({
                    "mode": "simulation",
                    "job": job_args.join(" "),
                    "device": device,
                    "seed": base.seed,
                    "table": table::to_json(cols),
                    "runs": runs,
                });
                out.push_str(&serde_json::to_string_pretty(&doc).unwrap_or_default());
                out.push('\n');
            }
            "normal" => {
                for c in cols {
                    if let Outcome::Runs(r) = &c.outcome {
                        out.push_str(&format!(
                            "=== {} (simulation on {device}) ===\n",
                            c.scheduler
                        ));
                        for rep in r {
                            out.push_str(&fio_text::render(rep));
                        }
                    }
                }
            }
            _ => {
                let title = vec![
                    format!(
                        "compare: {} on {device} (simulation, seed {}{})",
                        job_args.join(" "),
                        base.seed,
                        base.max_runtime_ns
                            .map(|m| format!(
                                ", runtime capped at {:.3} s",
                                m as f64 / NS_PER_SEC as f64
                            ))
                            .unwrap_or_default()
                    ),
                    String::new(),
                ];
                out.push_str(&table::render(&title, cols));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn unknown_schedulers_and_run_options_are_errors() {
        let e = cmd(&s(&["--name=a", "--size=1m", "--schedulers", "none,foo"])).unwrap_err();
        assert_eq!(e.code, super::super::EXIT_BAD_INPUT);
        assert!(
            e.message.contains("unknown scheduler 'foo'") && e.message.contains("mq-deadline"),
            "{}",
            e.message
        );
        let e = cmd(&s(&["--name=a", "--output-format", "json"])).unwrap_err();
        assert!(e.message.contains("--format"), "{}", e.message);
        let e = cmd(&s(&["--name=a", "--scheduler=bfq"])).unwrap_err();
        assert!(e.message.contains("--schedulers"), "{}", e.message);
    }

    #[test]
    fn plan_narrows_tunables_and_marks_unbuilt() {
        let base = RunSpec::from_text("j.fio", "[a]\n").set("iosched/fifo_batch", "1");
        let p = plan(&base, &s(&["none", "mq-deadline", "kyber"])).unwrap();
        assert!(p[0].1.as_ref().unwrap().settings.is_empty());
        assert_eq!(p[1].1.as_ref().unwrap().settings.len(), 1);
        // kyber has no fifo_batch.
        assert!(p[2].1.as_ref().unwrap().settings.is_empty());
        // A scheduler not built yet (while the registry has one) gets no run.
        if let Some(t) = crate::sched::SCHEDULERS.iter().find(|t| !t.simulated()) {
            let p = plan(&base, &s(&["mq-deadline", t.name])).unwrap();
            assert!(p[1].1.is_none(), "{}", t.name);
        }
        let bad = RunSpec::from_text("j.fio", "[a]\n").set("iosched/quantum", "1");
        assert!(plan(&bad, &s(&["none", "mq-deadline"])).is_err());
    }
}
