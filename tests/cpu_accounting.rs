//! fio's CPU figures (`usr_cpu`, `sys_cpu`, `ctx`) come from the simulated
//! task's own CPU time: fio, its system calls and the block layer and
//! driver work done in its context; completions and other tasks' work are
//! not its time.

use elevator::report::RunReport;
use elevator::run::{self, RunSpec};
use elevator::sim::time::NS_PER_SEC;

fn run(device: &str, engine: &str, depth: u32) -> RunReport {
    let text = format!(
        "[global]\nioengine={engine}\ndirect=1\nrw=randread\nbs=4k\niodepth={depth}\n\
         runtime=0.3\ntime_based\nfilename=/dev/sdx\n[r]\n"
    );
    let spec = RunSpec::from_text("cpu.fio", &text)
        .device(device)
        .cpus(2)
        .max_runtime(3 * NS_PER_SEC / 10);
    run::run(&spec).expect("runs")
}

/// (usr %, sys %, context switches, I/Os) of the run's only job.
fn cpu(r: &RunReport) -> (f64, f64, u64, u64) {
    let s = &r.jobs[0].stats;
    let pct = |ms: u64| ms as f64 * 100.0 / s.total_run_time_ms as f64;
    let ios = s.dirs.iter().map(|d| d.total_ios).sum();
    (pct(s.usr_time_ms), pct(s.sys_time_ms), s.ctx, ios)
}

#[test]
fn a_job_submitting_to_a_cpu_bound_device_is_busy_all_the_time() {
    // QD64 on the loop model: fio's CPU is the bottleneck of the machine.
    let (usr, sys, _, _) = cpu(&run("loop", "libaio", 64));
    assert!(usr > 0.0 && sys > usr, "usr {usr:.1}% sys {sys:.1}%");
    assert!(
        usr + sys > 70.0 && usr + sys <= 100.0,
        "usr {usr:.1}% sys {sys:.1}%"
    );
}

#[test]
fn a_job_waiting_on_a_disk_is_mostly_asleep_and_switches_once_per_io() {
    // QD1 on an HDD: each I/O is a sleep of milliseconds in io_getevents.
    let (usr, sys, ctx, ios) = cpu(&run("hdd", "libaio", 1));
    assert!(usr + sys < 1.0, "usr {usr:.2}% sys {sys:.2}%");
    assert!(ios > 10, "{ios} I/Os");
    assert!(
        ctx + 1 >= ios && ctx <= ios + 1,
        "{ctx} switches for {ios} I/Os"
    );
}

#[test]
fn cpu_use_shows_in_fio_output() {
    let r = run("loop", "libaio", 64);
    let text = elevator::report::fio_text::render(&r);
    let line = text
        .lines()
        .find(|l| l.contains("cpu          :"))
        .expect("cpu line");
    assert!(!line.contains("usr=0.00%, sys=0.00%"), "{line}");
}
