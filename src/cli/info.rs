//! `elevator schedulers` and `elevator devices`: what the registry and the
//! built-in profiles hold.

use super::args::{self, valued, Opt, Unknown, HELP};
use super::{emit, CliError};
use crate::block::elevator::Imp;
use crate::block::knobs::QUEUE_KNOBS;
use crate::device::{builtin_profiles, load_profile};
use crate::kernel::Era;
use crate::sched::{self, SCHEDULERS};

const SCHEDULERS_OPTS: &[Opt] = &[
    valued(
        "kernel",
        "VERSION",
        "list what that kernel had (e.g. 2.6.39, 4.12): its schedulers\nand the block-layer behaviours that differ between kernels",
    ),
    HELP,
];

pub fn schedulers_help() -> String {
    format!(
        "elevator schedulers — every scheduler elevator knows, with its iosched/ tunables

USAGE:
    elevator schedulers [--kernel VERSION]

For each scheduler: whether current mainline kernels have it, whether the
simulator runs it, and every tunable with its default, unit and meaning
(set them with `--set iosched/NAME=VALUE`); then the queue knobs.

{}",
        args::options_help(SCHEDULERS_OPTS)
    )
}

/// The listing.
pub fn schedulers_text() -> String {
    let mut s = String::new();
    for t in SCHEDULERS {
        let kernel = if t.mainline {
            "kernel: mainline"
        } else {
            "kernel: removed or never merged"
        };
        let sim = if t.simulated() {
            "simulated"
        } else {
            "not simulated yet"
        };
        s.push_str(&format!(
            "{}  ({kernel}; {sim})\n    {}\n",
            t.name, t.summary
        ));
        match t.imp {
            Imp::NoElevator => s.push_str("    tunables: none (no elevator)\n"),
            Imp::NotBuilt => {}
            Imp::Mq(_) | Imp::Legacy(_) => {
                let tunables = t.tunables();
                if tunables.is_empty() {
                    s.push_str("    tunables: none\n");
                }
                for x in tunables {
                    s.push_str(&format!(
                        "    iosched/{:<18} default {:<11} unit {:<10} {}\n",
                        x.name, x.default, x.unit, x.help
                    ));
                }
            }
        }
        s.push('\n');
    }
    s.push_str("queue knobs (--set NAME=VALUE): ");
    s.push_str(&QUEUE_KNOBS.join(", "));
    s.push('\n');
    s
}

/// `elevator schedulers`.
pub fn schedulers(argv: &[String]) -> Result<(), CliError> {
    let p = args::parse("schedulers", argv, SCHEDULERS_OPTS, Unknown::Reject)?;
    if p.help() {
        return emit(&schedulers_help(), None);
    }
    if let Some(x) = p.rest.first() {
        return Err(CliError::bad(format!(
            "schedulers: unexpected argument '{x}' (see `elevator schedulers --help`)"
        )));
    }
    match p.get("kernel") {
        Some(v) => {
            let era = Era::parse(v).map_err(|e| CliError::bad(format!("--kernel: {e}")))?;
            emit(&kernel_text(&era), None)
        }
        None => emit(&schedulers_text(), None),
    }
}

/// `elevator schedulers --kernel V`: the schedulers kernel V had, then its
/// block-layer behaviours (crate::kernel::CHANGES as that kernel has them).
pub fn kernel_text(era: &Era) -> String {
    let v = era.version;
    let mut s = format!("kernel {v}: schedulers\n");
    for t in SCHEDULERS {
        if !sched::in_kernel(t.name, v) {
            continue;
        }
        let sim = if t.simulated() {
            "simulated"
        } else {
            "not simulated yet"
        };
        let core = match t.imp {
            Imp::Legacy(_) => "legacy single-queue",
            Imp::Mq(_) | Imp::NoElevator => "blk-mq",
            Imp::NotBuilt => "",
        };
        s.push_str(&format!("  {:<12} {core:<20} {sim}\n", t.name));
    }
    let missing: Vec<&str> = SCHEDULERS
        .iter()
        .filter(|t| !sched::in_kernel(t.name, v))
        .map(|t| t.name)
        .collect();
    if !missing.is_empty() {
        s.push_str(&format!("  not in {v}: {}\n", missing.join(", ")));
    }
    s.push_str(&format!("\nkernel {v}: block layer\n"));
    for (what, value, source) in era.describe() {
        s.push_str(&format!("  {what}: {value}\n      source: {source}\n"));
    }
    s.push_str(&format!(
        "  a SATA NCQ device: queue depth {}, default nr_requests with a blk-mq scheduler {}\n",
        era.ata_depth(32),
        era.sched_nr_requests(era.ata_depth(32))
    ));
    s
}

const DEVICES_OPTS: &[Opt] = &[
    valued(
        "show",
        "NAME",
        "print a built-in profile's TOML (the format of --device FILE.toml;\nevery parameter documented with its unit and source)",
    ),
    HELP,
];

pub fn devices_help() -> String {
    format!(
        "elevator devices — the built-in device profiles

USAGE:
    elevator devices [--show NAME]

{}",
        args::options_help(DEVICES_OPTS)
    )
}

/// `elevator devices [--show NAME]`.
pub fn devices(argv: &[String]) -> Result<(), CliError> {
    let p = args::parse("devices", argv, DEVICES_OPTS, Unknown::Reject)?;
    if p.help() {
        return emit(&devices_help(), None);
    }
    if let Some(x) = p.rest.first() {
        return Err(CliError::bad(format!(
            "devices: unexpected argument '{x}' (see `elevator devices --help`)"
        )));
    }
    if let Some(name) = p.get("show") {
        let prof = load_profile(name).map_err(CliError::bad)?;
        return emit(&prof.text, None);
    }
    let mut s = String::new();
    for p in builtin_profiles() {
        let q = &p.queue;
        s.push_str(&format!(
            "{:<12} {:<9} {:>8.1} GB  hwq={:<4} qd={:<5} rot={}  {}\n",
            p.name,
            p.model,
            q.capacity as f64 / 1e9,
            q.nr_hw_queues,
            q.queue_depth,
            q.rotational as u8,
            p.description
        ));
    }
    s.push_str("show a profile: elevator devices --show NAME; use your own: --device FILE.toml\n");
    emit(&s, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing_has_every_scheduler_and_tunable_default() {
        let s = schedulers_text();
        for t in SCHEDULERS {
            assert!(s.contains(t.name), "{}", t.name);
            for x in t.tunables() {
                assert!(s.contains(&format!("iosched/{}", x.name)), "{}", x.name);
            }
        }
        // async_depth follows nr_requests (dd_depth_updated), not a number.
        let line = s
            .lines()
            .find(|l| l.contains("iosched/async_depth"))
            .unwrap();
        assert!(line.contains("default nr_requests"), "{line}");
    }
}
