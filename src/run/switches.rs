//! Scheduler switches (`--switch TIME=NAME`) seen from outside the run: a
//! switch that cannot happen because every job is over by then, and what
//! became of each switch after the run (from the block layer's log).

use crate::block::SwitchEvent;
use crate::job::{EngineKind, JobSpec};
use crate::report::switches::{duration, ms};
use crate::report::SwitchOutcome;
use crate::sim::time::Ns;

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
    }
}
