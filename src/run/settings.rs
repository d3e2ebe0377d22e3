//! The settings of a run (`--set NAME=VALUE`), each understood once here:
//! queue knobs by their sysfs names, scheduler tunables as `iosched/NAME`,
//! CPU costs as `cpu/NAME`, cgroup files as `cgroup:PATH/FILE`.

use super::spec::Setting;
use super::InputError;
use crate::block::cpu::CpuCosts;
use crate::block::elevator::ElevatorType;
use crate::block::knobs::{QueueKnobs, QUEUE_KNOBS};
use crate::cache::vm::VmSettings;
use crate::kernel::Version;
use crate::sched;

/// Settings sorted by what they configure, in the order given.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub knobs: QueueKnobs,
    /// `iosched/NAME=VALUE`: applied to every scheduler of the run that has NAME.
    pub iosched: Vec<(String, String)>,
    /// Costs from the profile's `[cpu]` table with `cpu/...` applied.
    pub cpu_costs: CpuCosts,
    /// `cgroup:PATH/FILE=VALUE`, in order (validated by the cgroup model).
    pub cgroup: Vec<(String, String)>,
    /// `vm.NAME=VALUE`: the dirty-writeback sysctls, applied in order.
    pub vm: VmSettings,
}

fn bad(setting: &Setting, message: String) -> InputError {
    InputError {
        file: None,
        line: None,
        option: Some(format!("--set {}", setting.name)),
        message,
    }
}

/// Sort `settings` into their kinds and check each against what it names.
/// `schedulers` are the run's schedulers (the first and every switch
/// target): an `iosched/` tunable must belong to one of them. `kernel` is
/// the run's era (a scheduler's built-in hook costs depend on it).
pub fn interpret(
    settings: &[Setting],
    base_costs: CpuCosts,
    schedulers: &[&'static ElevatorType],
    kernel: Version,
) -> Result<Settings, InputError> {
    let mut out = Settings {
        cpu_costs: base_costs,
        ..Settings::default()
    };
    for s in settings {
        let (k, v) = (s.name.trim(), s.value.as_str());
        if let Some(name) = k.strip_prefix("iosched/") {
            check_tunable(s, name, v, schedulers)?;
            out.iosched.push((name.to_string(), v.to_string()));
        } else if let Some(name) = k.strip_prefix("cpu/") {
            set_cost(&mut out.cpu_costs, name, v, kernel).map_err(|e| bad(s, e))?;
        } else if let Some(name) = k.strip_prefix("vm.") {
            out.vm.set(name, v).map_err(|e| bad(s, e))?;
        } else if let Some(rest) = k.strip_prefix("cgroup:") {
            out.cgroup.push((rest.to_string(), v.to_string()));
        } else if QUEUE_KNOBS.contains(&k) {
            out.knobs.set(k, v).map_err(|e| bad(s, e))?;
        } else {
            return Err(bad(
                s,
                format!(
                    "unknown setting '{k}' (queue knobs: {}; scheduler tunables: iosched/NAME; CPU costs: cpu/NAME; cgroup files: cgroup:PATH/FILE; dirty writeback: vm.NAME)",
                    QUEUE_KNOBS.join(", ")
                ),
            ));
        }
    }
    Ok(out)
}

/// `iosched/NAME` must name a tunable of some scheduler of the run, and
/// every scheduler that has it must take the value (so no switch fails on
/// it in mid-run).
fn check_tunable(
    s: &Setting,
    name: &str,
    value: &str,
    schedulers: &[&'static ElevatorType],
) -> Result<(), InputError> {
    let mut known: Vec<&'static str> = Vec::new();
    let mut found = false;
    for t in schedulers {
        let names = sched::tunable_names(t);
        if names.contains(&name) {
            found = true;
            if let Some(mut e) = t.instantiate() {
                e.set_tunable(name, value)
                    .map_err(|err| bad(s, format!("{err} (for {})", t.name)))?;
            }
        }
        for n in names {
            if !known.contains(&n) {
                known.push(n);
            }
        }
    }
    if found {
        return Ok(());
    }
    let names: Vec<&str> = schedulers.iter().map(|t| t.name).collect();
    Err(bad(
        s,
        format!(
            "no scheduler of this run ({}) has the tunable '{name}'{}",
            names.join(", "),
            if known.is_empty() {
                String::new()
            } else {
                format!(" (known: {})", known.join(", "))
            }
        ),
    ))
}

/// `cpu/NAME=NS`: a cost of the path below the scheduler, or
/// `cpu/SCHEDULER.HOOK` (the other hooks keep `kernel`'s built-in costs).
pub fn set_cost(
    costs: &mut CpuCosts,
    name: &str,
    value: &str,
    kernel: Version,
) -> Result<(), String> {
    match name.split_once('.') {
        Some((sched_name, field)) => {
            let t = sched::find(sched_name).map_err(|e| format!("cpu/{name}: {e}"))?;
            costs.set_sched(t.name, field, value, t.cost_at(kernel))
        }
        None => costs.set(name, value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, value: &str) -> Setting {
        Setting {
            name: name.into(),
            value: value.into(),
        }
    }

    fn run_scheds(names: &[&str]) -> Vec<&'static ElevatorType> {
        names.iter().map(|n| sched::find(n).unwrap()).collect()
    }

    #[test]
    fn settings_sort_into_kinds() {
        let s = interpret(
            &[
                set("nr_requests", "64"),
                set("iosched/fifo_batch", "1"),
                set("cpu/mq-deadline.insert_ns", "9"),
                set("cpu/submit_ns", "7"),
                set("cgroup:a/b/blkio.weight", "300"),
            ],
            CpuCosts::default(),
            &run_scheds(&["mq-deadline"]),
            Version::new(4, 12, 0),
        )
        .unwrap();
        assert_eq!(s.knobs.nr_requests, Some(64));
        assert_eq!(s.iosched, vec![("fifo_batch".into(), "1".into())]);
        let dl = sched::find("mq-deadline").unwrap();
        let old = s.cpu_costs.sched_cost(dl.name, dl.cost);
        assert_eq!(old.insert_ns, 9);
        // The other hooks keep the run's kernel's costs.
        assert_eq!(
            old.dispatch_ns,
            dl.cost_at(Version::new(4, 12, 0)).dispatch_ns
        );
        let newer = interpret(
            &[set("cpu/mq-deadline.insert_ns", "9")],
            CpuCosts::default(),
            &run_scheds(&["mq-deadline"]),
            Version::new(6, 17, 0),
        )
        .unwrap()
        .cpu_costs
        .sched_cost(dl.name, dl.cost);
        assert_eq!(newer.insert_ns, 9);
        assert_eq!(newer.dispatch_ns, sched::MQ_DEADLINE_5_14.dispatch_ns);
        assert_ne!(newer.dispatch_ns, old.dispatch_ns);
        assert_eq!(s.cpu_costs.submit_ns, 7);
        assert_eq!(s.cgroup, vec![("a/b/blkio.weight".into(), "300".into())]);
    }

    #[test]
    fn errors_name_the_setting() {
        let check = |st: Setting, scheds: &[&str], want: &str| {
            let e = interpret(
                &[st],
                CpuCosts::default(),
                &run_scheds(scheds),
                Version::new(6, 17, 0),
            )
            .unwrap_err();
            assert!(e.option.as_deref().unwrap().starts_with("--set "), "{e:?}");
            assert!(e.message.contains(want), "{}", e.message);
        };
        check(set("bogus", "1"), &["none"], "unknown setting 'bogus'");
        check(
            set("iosched/fifo_batch", "1"),
            &["none", "noop"],
            "no scheduler of this run",
        );
        check(
            set("iosched/quantum", "1"),
            &["mq-deadline"],
            "known: read_expire",
        );
        check(
            set("cpu/nope.insert_ns", "1"),
            &["none"],
            "unknown scheduler 'nope'",
        );
        check(set("nomerges", "3"), &["none"], "nomerges");
    }
}
