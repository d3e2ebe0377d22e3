//! How scheduler switches (`--switch TIME=NAME`) read to a user: the line
//! the normal output adds before fio's job lines, and the warning for a
//! switch that did not take place.

use super::SwitchOutcome;
use crate::sim::time::{Ns, NS_PER_MS};

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
pub fn ms(t: Ns) -> String {
    format!("{} ms", ms_bare(t))
}

fn ms_bare(t: Ns) -> String {
    format!("{}.{:03}", t / NS_PER_MS, t % NS_PER_MS / 1000)
}

/// A duration as it would be written on the command line: `5s`, `1ms`, `250us`, `7ns`.
pub fn duration(t: Ns) -> String {
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

    #[test]
    fn lines_and_warnings() {
        let o = vec![
            SwitchOutcome::Switched {
                drain_start: 10,
                done: 30,
            },
            SwitchOutcome::AlreadyActive,
            SwitchOutcome::NotReached { run_end: 99 },
        ];
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
