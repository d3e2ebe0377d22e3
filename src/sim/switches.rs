//! Scheduler switches (`--switch TIME=NAME`) seen from outside the run: when
//! a switch cannot happen because every job is over by then, and what became
//! of each switch after the run.

use super::time::{Ns, NS_PER_MS};
use crate::block::SwitchEvent;
use crate::job::{EngineKind, JobSpec};
use crate::report::SwitchOutcome;

/// The time by which every job has stopped issuing I/O, if the job file
/// says so cheaply: each job must end by time (`runtime`, or the run's
/// `--max-runtime` cap), after its start delay (the longest of a range)
/// and ramp; a stonewall starts the jobs after it once those before it are
/// done. None when some job runs until it has done its `size` (how long
/// that takes is what the simulation finds out). In-flight I/O still
/// completes after this.
pub fn issue_end_bound(jobs: &[JobSpec], max_runtime: Option<Ns>) -> Option<Ns> {
    let mut segment_start: Ns = 0;
    let mut segment_end: Ns = 0;
    for job in jobs {
        if job.ioengine.kind == EngineKind::NotModelled {
            continue; // never runs
        }
        if job.stonewall {
            segment_start = segment_end;
        }
        // As the engine's start_job: ramp_time + runtime, capped.
        let limit = match (job.runtime, max_runtime) {
            (Some(r), Some(c)) => job.ramp_time.saturating_add(r).min(c),
            (Some(r), None) => job.ramp_time.saturating_add(r),
            (None, Some(c)) => c,
            (None, None) => return None,
        };
        let end = segment_start
            .saturating_add(job.startdelay.1)
            .saturating_add(limit);
        segment_end = segment_end.max(end);
    }
    Some(segment_end)
}

/// Warnings, before the run, for switches after `issue_end_bound`.
pub fn warnings_before_run(
    jobs: &[JobSpec],
    max_runtime: Option<Ns>,
    switches: &[(Ns, String)],
) -> Vec<(usize, String)> {
    let Some(end) = issue_end_bound(jobs, max_runtime) else {
        return Vec::new();
    };
    switches
        .iter()
        .enumerate()
        .filter(|(_, (at, _))| *at > end)
        .map(|(i, (at, name))| {
            (
                i,
                format!(
                    "--switch {}={name} lies after the end of every job (all stop by {}: \
                     runtime, --max-runtime); it will not happen unless their last I/Os \
                     are still completing then",
                    duration(*at),
                    ms(end)
                ),
            )
        })
        .collect()
}

/// A warning, after the run, for a switch that did not take place.
pub fn warning_after_run(at: Ns, name: &str, outcome: &SwitchOutcome) -> Option<String> {
    let what = match *outcome {
        SwitchOutcome::NotReached { run_end } => {
            format!("the run ended at {}, before it", ms(run_end))
        }
        SwitchOutcome::Unfinished { run_end, .. } => {
            format!("the run ended at {} while the queue drained", ms(run_end))
        }
        SwitchOutcome::Superseded { .. } => {
            "a later switch was asked for while the queue drained".to_string()
        }
        SwitchOutcome::Switched { .. } | SwitchOutcome::AlreadyActive => return None,
    };
    Some(format!(
        "--switch {}={name} did not happen: {what}",
        duration(at)
    ))
}

/// Each of `n` requested switches' outcome, from the block layer's log of
/// the switch requests it received (in order; a switch the run did not
/// reach was never requested) and the time the run ended.
pub(crate) fn outcomes(n: usize, log: &[SwitchEvent], run_end: Ns) -> Vec<SwitchOutcome> {
    (0..n)
        .map(|i| match log.get(i) {
            None => SwitchOutcome::NotReached { run_end },
            Some(e) if e.already_active => SwitchOutcome::AlreadyActive,
            Some(e) if e.superseded => SwitchOutcome::Superseded {
                drain_start: e.requested,
            },
            Some(SwitchEvent {
                requested,
                done: Some(done),
                ..
            }) => SwitchOutcome::Switched {
                drain_start: *requested,
                done: *done,
            },
            Some(e) => SwitchOutcome::Unfinished {
                drain_start: e.requested,
                run_end,
            },
        })
        .collect()
}

/// One line for the normal output's preamble: every switch and what became
/// of it. None without switches.
pub fn preamble_line(switches: &[(Ns, String)], outcomes: &[SwitchOutcome]) -> Option<String> {
    if switches.is_empty() || outcomes.len() != switches.len() {
        return None;
    }
    let parts: Vec<String> = switches
        .iter()
        .zip(outcomes)
        .map(|((at, name), o)| {
            let what = match *o {
                SwitchOutcome::Switched { drain_start, done } => {
                    format!("drained {}-{}", ms_bare(drain_start), ms(done))
                }
                SwitchOutcome::AlreadyActive => "already active, nothing to do".into(),
                SwitchOutcome::Superseded { drain_start } => format!(
                    "draining from {}, superseded by a later switch",
                    ms(drain_start)
                ),
                SwitchOutcome::Unfinished {
                    drain_start,
                    run_end,
                } => format!(
                    "draining from {}, unfinished when the run ended at {}",
                    ms(drain_start),
                    ms(run_end)
                ),
                SwitchOutcome::NotReached { run_end } => {
                    format!("did not happen, the run ended at {}", ms(run_end))
                }
            };
            format!("{name} at {} ({what})", duration(*at))
        })
        .collect();
    Some(format!("elevator switches: {}", parts.join("; ")))
}

/// Milliseconds with microsecond digits: `1.043 ms`.
fn ms(t: Ns) -> String {
    format!("{} ms", ms_bare(t))
}

fn ms_bare(t: Ns) -> String {
    format!("{}.{:03}", t / NS_PER_MS, t % NS_PER_MS / 1000)
}

/// A duration as it would be written on the command line: `5s`, `1ms`, `250us`, `7ns`.
fn duration(t: Ns) -> String {
    if t == 0 {
        return "0s".into();
    }
    for (unit, ns) in [("s", 1_000_000_000), ("ms", NS_PER_MS), ("us", 1_000)] {
        if t.is_multiple_of(ns) {
            return format!("{}{unit}", t / ns);
        }
    }
    format!("{t}ns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::time::NS_PER_SEC;

    fn job(name: &str) -> JobSpec {
        JobSpec::with_defaults(name)
    }

    #[test]
    fn bound_needs_every_job_time_limited() {
        let mut a = job("a");
        a.runtime = Some(2 * NS_PER_SEC);
        let b = job("b");
        assert_eq!(issue_end_bound(&[a.clone()], None), Some(2 * NS_PER_SEC));
        assert_eq!(issue_end_bound(&[a.clone(), b.clone()], None), None);
        // The cap bounds the size-limited job too.
        assert_eq!(
            issue_end_bound(&[a.clone(), b.clone()], Some(NS_PER_SEC)),
            Some(NS_PER_SEC)
        );
        // Stonewalls add up; start delays and ramps count.
        let mut c = a.clone();
        c.stonewall = true;
        c.startdelay = (0, NS_PER_SEC);
        c.ramp_time = NS_PER_SEC;
        assert_eq!(issue_end_bound(&[a, c], None), Some(6 * NS_PER_SEC));
    }

    #[test]
    fn outcomes_follow_the_log() {
        let log = [
            SwitchEvent {
                requested: 10,
                done: Some(30),
                already_active: false,
                superseded: false,
            },
            SwitchEvent {
                requested: 40,
                done: Some(40),
                already_active: true,
                superseded: false,
            },
        ];
        let o = outcomes(3, &log, 99);
        assert_eq!(
            o,
            vec![
                SwitchOutcome::Switched {
                    drain_start: 10,
                    done: 30
                },
                SwitchOutcome::AlreadyActive,
                SwitchOutcome::NotReached { run_end: 99 }
            ]
        );
        let sw = vec![
            (NS_PER_MS, "noop".to_string()),
            (2 * NS_PER_MS, "none".to_string()),
            (5 * NS_PER_SEC, "deadline".to_string()),
        ];
        let line = preamble_line(&sw, &o).unwrap();
        assert!(
            line.starts_with("elevator switches: noop at 1ms (drained 0.000-0.000 ms)"),
            "{line}"
        );
        assert!(line.contains("deadline at 5s (did not happen"), "{line}");
        assert!(warning_after_run(sw[2].0, &sw[2].1, &o[2]).is_some());
        assert!(warning_after_run(sw[0].0, &sw[0].1, &o[0]).is_none());
        assert_eq!(duration(1_500_000), "1500us");
        assert_eq!(ms(2_001_234_567), "2001.234 ms");
    }
}
