//! The CPU cost model: scheduler hooks take CPU time, and single-lock
//! schedulers serialise across CPUs, which caps IOPS on fast devices.

use elevator::block::knobs::QueueKnobs;
use elevator::device::load_profile;
use elevator::job::{self, Ddir};
use elevator::run::{simulate, SimConfig, DEFAULT_SEED};
use elevator::sim::time::NS_PER_SEC;
use std::path::Path;

fn iops(sched: &str, cpus: usize, costs: elevator::block::cpu::CpuCosts) -> f64 {
    let text = format!(
        "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=128\nruntime=0.5\ntime_based\n\
         filename=/dev/nvme0n1\n[r]\nnumjobs={cpus}\n"
    );
    let jf = job::parse_str(&text, "cpu.fio", Path::new("."), &|_| None).unwrap();
    let cfg = SimConfig {
        scheduler: sched.into(),
        profile: load_profile("nvme").unwrap(),
        knobs: QueueKnobs::default(),
        iosched: Vec::new(),
        seed: DEFAULT_SEED,
        cpus,
        max_runtime: Some(NS_PER_SEC / 2),
        switches: Vec::new(),
        cpu_costs: costs,
        progress: None,
    };
    let rep = simulate(&jf, cfg).unwrap();
    rep.jobs
        .iter()
        .map(|j| j.stats.total_ios(Ddir::Read) as f64 / (j.stats.runtime_ns() as f64 / 1e9))
        .sum()
}

#[test]
fn mq_deadline_costs_iops_on_fast_nvme_and_the_gap_widens_with_cpus() {
    let c = elevator::block::cpu::CpuCosts::default;
    let gap = |cpus| 1.0 - iops("mq-deadline", cpus, c()) / iops("none", cpus, c());
    let g4 = gap(4);
    let g8 = gap(8);
    assert!(
        g4 >= 0.10,
        "4 CPUs: mq-deadline only {:.1}% below none",
        g4 * 100.0
    );
    assert!(g8 > g4, "gap should widen: 4 CPUs {g4:.3}, 8 CPUs {g8:.3}");
}

#[test]
fn without_hook_costs_the_schedulers_deliver_alike() {
    // Zero the hook costs: the remaining difference is scheduling, which a
    // random read on an idle-queue NVMe barely has.
    let mut c = elevator::block::cpu::CpuCosts::default();
    let dl = elevator::sched::find("mq-deadline").unwrap();
    for hook in ["insert_ns", "dispatch_ns", "complete_ns", "merge_ns"] {
        c.set_sched(dl.name, hook, "0", dl.cost).unwrap();
    }
    c.set("lock_handoff_ns", "0").unwrap();
    let none = iops("none", 4, c.clone());
    let dl = iops("mq-deadline", 4, c);
    assert!(
        (dl / none - 1.0).abs() < 0.05,
        "none {none:.0} vs mq-deadline {dl:.0}"
    );
}
