//! `elevator published`: every published cell of the source documents'
//! experiments E1–E4 (IOPS and mean latency per group and direction) beside
//! the simulated one, each experiment run with `--kernel` set to the
//! documents' kernel. The schedulers come from the registry: a scheduler
//! with published cells is simulated when the registry can, and listed as
//! "not simulated yet" otherwise, so its cells fill in once it is built.
//!
//! Published figures: reference/seed-experiments.md (copied as published;
//! E1–E3 per-job medians, E4 one group). Latency: fio's mean `lat` (E4
//! publishes `clat`, which differs from it by the few-microsecond `slat`).

use super::args::{self, flag, valued, with_short, Opt, Unknown, HELP};
use super::{emit, CliError};
use crate::job::Ddir;
use crate::report::table::{group_rows, GroupRow};
use crate::run::{JobSource, RunSpec};
use crate::sched;
use crate::sim::time::{parse_duration, Ns, NS_PER_SEC};

/// One published cell pair: a group's direction, IOPS and mean latency (ms).
#[derive(Clone, Copy, Debug)]
pub struct Published {
    pub group: &'static str,
    pub dir: Ddir,
    pub iops: f64,
    pub lat_ms: f64,
}

const fn cell(group: &'static str, dir: Ddir, iops: f64, lat_ms: f64) -> Published {
    Published {
        group,
        dir,
        iops,
        lat_ms,
    }
}

/// One experiment of the documents as the model runs it.
pub struct Experiment {
    pub id: &'static str,
    /// The job: a job file's text, or fio's command-line options.
    pub job: Job,
    /// The built-in device profile.
    pub device: &'static str,
    /// The documents' kernel.
    pub kernel: &'static str,
    /// CPUs of the documents' machine (hardware threads), or None where
    /// they do not say (the simulator's default then).
    pub cpus: Option<u32>,
    /// Simulated time per run, or None to run the job to its end. The
    /// documents ran 7200 s. E2 runs all of it: its drive fills up for
    /// hours and 4.12 kyber's write depth ratchets down over minutes, so
    /// its cells move with the length (see `help`), and its profile's fill
    /// was fitted over the same 7200 s. E1 (a disk) and E3 (a drive in
    /// steady state) settle within their shorter times.
    pub runtime_s: Option<u64>,
    /// What sits between the jobs and the device in the documents' set-up
    /// where the model has it: `--mount` and `--dm` values.
    pub mount: Option<&'static str>,
    pub dm: Option<&'static str>,
    /// Published rows: scheduler and its cells.
    pub rows: &'static [(&'static str, &'static [Published])],
    /// What differs from the published set-up.
    pub note: &'static str,
}

pub enum Job {
    File(&'static str, &'static str),
    Args(&'static [&'static str]),
}

use Ddir::{Read as R, Write as W};

const fn three(w: (f64, f64), rw: (f64, f64), rr: (f64, f64), g2: &'static str) -> [Published; 3] {
    [
        cell("writers", W, w.0, w.1),
        cell(g2, W, rw.0, rw.1),
        cell(g2, R, rr.0, rr.1),
    ]
}

const E1_NONE: [Published; 3] = three((81., 12.30), (51., 7.10), (34., 18.30), "reader_40");
const E1_MQDL: [Published; 3] = three((81., 12.29), (51., 7.08), (34., 18.32), "reader_40");
const E1_DL: [Published; 3] = three((80., 12.39), (51., 7.20), (34., 18.39), "reader_40");
const E1_NOOP: [Published; 3] = three((80., 12.36), (51., 7.16), (34., 18.42), "reader_40");
const E1_CFQ: [Published; 3] = three((80., 12.36), (51., 7.17), (34., 18.36), "reader_40");
const E1_BFQ: [Published; 3] = three((93., 10.65), (50., 6.2800_1), (33., 20.03), "reader_40");
const E1_KYBER: [Published; 3] = three((94., 10.63), (47., 9.15), (31., 18.01), "reader_40");

const E2_NONE: [Published; 3] = three((3208., 1.245), (2543., 1.227), (635., 1.376), "reader_20");
const E2_MQDL: [Published; 3] = three((3162., 1.264), (2416., 1.298), (604., 1.423), "reader_20");
const E2_DL: [Published; 3] = three((3172., 1.259), (2569., 1.261), (641., 1.177), "reader_20");
const E2_NOOP: [Published; 3] = three((3127., 1.278), (2451., 1.278), (613., 1.405), "reader_20");
const E2_CFQ: [Published; 3] = three((3265., 1.223), (1580., 2.000), (394., 2.119), "reader_20");
const E2_BFQ: [Published; 3] = three((3201., 1.248), (2499., 1.248), (624., 1.398), "reader_20");
const E2_KYBER: [Published; 3] = three((2191., 1.824), (2143., 1.823), (535., 0.167), "reader_20");

const E3_NONE: [Published; 3] = three((11484., 0.695), (7716., 0.694), (1929., 1.367), "reader_20");
const E3_MQDL: [Published; 3] = three((11580., 0.690), (7777., 0.685), (1944., 1.369), "reader_20");
const E3_BFQ: [Published; 3] = three((11437., 0.698), (7635., 0.694), (1908., 1.409), "reader_20");
const E3_KYBER: [Published; 3] = three((7615., 1.049), (6927., 1.000), (1731., 0.612), "reader_20");

const E4_CFQ: [Published; 1] = [cell("file1", W, 14482., 3.378)];
const E4_DL: [Published; 1] = [cell("file1", W, 24764., 1.832)];
const E4_NOOP: [Published; 1] = [cell("file1", W, 26183., 1.875)];

/// E1–E4 of reference/seed-experiments.md.
pub static EXPERIMENTS: &[Experiment] = &[
    Experiment {
        id: "E1",
        job: Job::File("e1-hdd.fio", include_str!("../../examples/e1-hdd.fio")),
        device: "hgst-he10",
        kernel: "4.13",
        // Two Xeon E5-2630 v2: 2 x 6 cores x 2 threads.
        cpus: Some(24),
        runtime_s: Some(120),
        mount: None,
        dm: None,
        rows: &[
            ("none", &E1_NONE),
            ("mq-deadline", &E1_MQDL),
            ("deadline", &E1_DL),
            ("noop", &E1_NOOP),
            ("cfq", &E1_CFQ),
            ("bfq", &E1_BFQ),
            ("kyber", &E1_KYBER),
        ],
        note: "HGST HUH721008AL: the hdd profile, destaging fitted to the none row",
    },
    Experiment {
        id: "E2",
        job: Job::File("e2-sata-ssd.fio", include_str!("../../examples/e2-sata-ssd.fio")),
        device: "intel-s3520",
        kernel: "4.12",
        // One Xeon E5-1650 v3: 6 cores x 2 threads.
        cpus: Some(12),
        runtime_s: Some(7200),
        mount: None,
        dm: None,
        rows: &[
            ("none", &E2_NONE),
            ("mq-deadline", &E2_MQDL),
            ("deadline", &E2_DL),
            ("noop", &E2_NOOP),
            ("cfq", &E2_CFQ),
            ("bfq", &E2_BFQ),
            ("kyber", &E2_KYBER),
        ],
        note: "Intel DC S3520 with reads behind the write backlog and programs; fill and program time fitted to the none row",
    },
    Experiment {
        id: "E3",
        job: Job::File("e3-nvme.fio", include_str!("../../examples/e3-nvme.fio")),
        device: "micron-9100",
        kernel: "4.12",
        // E2's server.
        cpus: Some(12),
        runtime_s: Some(10),
        mount: None,
        dm: None,
        rows: &[
            ("none", &E3_NONE),
            ("mq-deadline", &E3_MQDL),
            ("bfq", &E3_BFQ),
            ("kyber", &E3_KYBER),
        ],
        note: "Micron 9100 in steady state, reads behind programs; drain rate and program time fitted to the none row",
    },
    Experiment {
        id: "E4",
        job: Job::Args(&[
            "-rw=randwrite",
            "-bs=4k",
            "-size=100m",
            "-directory=/tmp",
            "-direct=1",
            "-numjobs=50",
            "-name=file1",
            "-ioengine=libaio",
            "-group_reporting",
        ]),
        device: "desktop-ssd",
        kernel: "2.6.39",
        cpus: None,
        runtime_s: None,
        // -directory=/tmp: the root file system of Oracle Linux 6, ext4. The
        // disk stats show dm-1 on dm-0 on sda: LVM inside LUKS, the
        // encrypted install; dm-crypt is modelled, LVM's remap is not.
        mount: Some("ext4"),
        dm: Some("crypt"),
        rows: &[("cfq", &E4_CFQ), ("deadline", &E4_DL), ("noop", &E4_NOOP)],
        note: "2013 desktop SATA SSD (class estimates), program rate fitted to the noop row; ext4, dm-crypt inferred from the disk stats (dm-1 on dm-0 on sda), LVM not modelled",
    },
];

impl Experiment {
    /// The run of this experiment under `scheduler`, with its simulated
    /// time (`runtime`, when given, replaces a timed experiment's).
    pub fn spec_for(&self, scheduler: &str, runtime: Option<Ns>) -> RunSpec {
        let mut s = self.spec(scheduler);
        if let (Some(t), Some(_)) = (runtime, self.runtime_s) {
            s.max_runtime_ns = Some(t);
        }
        s
    }

    /// The run of this experiment under `scheduler`.
    pub fn spec(&self, scheduler: &str) -> RunSpec {
        let job = match self.job {
            Job::File(name, text) => JobSource::text(name, text),
            Job::Args(a) => JobSource::args(a),
        };
        let mut s = RunSpec::new(job)
            .scheduler(scheduler)
            .device(self.device)
            .kernel(self.kernel);
        if let Some(n) = self.cpus {
            s = s.cpus(n);
        }
        if let Some(m) = self.mount {
            s = s.mount(m);
        }
        if let Some(d) = self.dm {
            s = s.dm(d);
        }
        s.max_runtime_ns = self.runtime_s.map(|t| t * NS_PER_SEC);
        s
    }
}

/// One compared cell.
#[derive(Clone, Debug)]
pub struct Compared {
    pub experiment: &'static str,
    pub scheduler: &'static str,
    pub group: &'static str,
    pub dir: Ddir,
    pub metric: &'static str,
    pub published: f64,
    /// None: the scheduler is not simulated yet (or the run failed).
    pub simulated: Option<f64>,
}

impl Compared {
    /// Simulated / published − 1.
    pub fn error(&self) -> Option<f64> {
        self.simulated.map(|s| s / self.published - 1.0)
    }
}

fn find_row<'a>(rows: &'a [GroupRow], p: &Published) -> Option<&'a GroupRow> {
    rows.iter().find(|r| r.name == p.group && r.dir == p.dir)
}

/// How `compare` runs the experiments.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Simulated time of each timed experiment (E1–E3) instead of its own.
    pub runtime: Option<Ns>,
    /// A progress bar of the runs on a terminal.
    pub progress: bool,
}

/// Run `experiments` (ids; empty = all) and compare every published cell.
pub fn compare(ids: &[String], opts: Options) -> Result<Vec<Compared>, CliError> {
    let chosen: Vec<&'static Experiment> = EXPERIMENTS
        .iter()
        .filter(|e| ids.is_empty() || ids.iter().any(|i| i.eq_ignore_ascii_case(e.id)))
        .collect();
    // Every published scheduler the registry can simulate, in registry order.
    let mut jobs: Vec<(&'static Experiment, &'static str, &'static [Published])> = Vec::new();
    for e in &chosen {
        for t in sched::SCHEDULERS {
            if let Some((_, cells)) = e.rows.iter().find(|(n, _)| *n == t.name) {
                jobs.push((e, t.name, cells));
            }
        }
    }
    let specs: Vec<RunSpec> = jobs
        .iter()
        .filter(|(_, s, _)| sched::find_simulated(s).is_ok())
        .map(|(e, s, _)| e.spec_for(s, opts.runtime))
        .collect();
    let mut results = super::run::run_many_with_bar(&specs, opts.progress).into_iter();
    let mut out = Vec::new();
    for (e, s, cells) in jobs {
        let rows = if sched::find_simulated(s).is_ok() {
            let rep = results.next().expect("one result per spec");
            let rep = rep.map_err(|err| CliError::bad(format!("{} {s}: {err}", e.id)))?;
            Some(group_rows(&rep))
        } else {
            None
        };
        for p in cells {
            let r = rows.as_ref().and_then(|rows| find_row(rows, p));
            for (metric, published, simulated) in [
                ("iops", p.iops, r.map(|r| r.iops)),
                ("lat ms", p.lat_ms, r.map(|r| r.lat_mean_us / 1000.0)),
            ] {
                out.push(Compared {
                    experiment: e.id,
                    scheduler: s,
                    group: p.group,
                    dir: p.dir,
                    metric,
                    published,
                    simulated,
                });
            }
        }
    }
    Ok(out)
}

fn fmt_num(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The markdown table and its summary line.
pub fn render(cells: &[Compared], runtime: Option<Ns>) -> String {
    let mut s = String::new();
    s.push_str("| exp | scheduler | group | dir | metric | published | simulated | error |\n");
    s.push_str("|---|---|---|---|---|---:|---:|---:|\n");
    let (mut inside, mut total) = (0, 0);
    for c in cells {
        let (sim, err) = match (c.simulated, c.error()) {
            (Some(v), Some(e)) => {
                total += 1;
                if e.abs() <= 0.25 {
                    inside += 1;
                }
                (fmt_num(v), format!("{:+.1}%", e * 100.0))
            }
            _ => ("not simulated yet".to_string(), String::new()),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            c.experiment,
            c.scheduler,
            c.group,
            crate::report::table::dir_name(c.dir),
            c.metric,
            fmt_num(c.published),
            sim,
            err
        ));
    }
    s.push_str(&format!(
        "\n{inside} of {total} simulated cells within ±25% of the published figure.\n"
    ));
    s.push_str("Set-ups (device profile, kernel, simulated time):\n");
    for e in EXPERIMENTS {
        let t = match (e.runtime_s, runtime) {
            (Some(_), Some(r)) if r % NS_PER_SEC == 0 => format!("{} s", r / NS_PER_SEC),
            (Some(_), Some(r)) => crate::report::switches::duration(r),
            (Some(t), None) => format!("{t} s"),
            (None, _) => "to the job's end".into(),
        };
        let cpus = e.cpus.map(|n| format!(" --cpus {n}")).unwrap_or_default();
        let mount = e.mount.map(|m| format!(" --mount {m}")).unwrap_or_default();
        let dm = e.dm.map(|d| format!(" --dm {d}")).unwrap_or_default();
        s.push_str(&format!(
            "  {}: --device {} --kernel {}{cpus}{mount}{dm}, {t}; {}\n",
            e.id, e.device, e.kernel, e.note
        ));
    }
    s
}

const OPTS: &[Opt] = &[
    valued(
        "experiments",
        "LIST",
        "comma-separated experiment ids (E1,E2,E3,E4; default all)",
    ),
    valued(
        "max-runtime",
        "DURATION",
        "simulated time of each timed experiment (E1-E3) instead of its\ndefault (each set-up line names it), e.g. 30s for a quick look",
    ),
    flag("no-progress", "no progress bar of the runs on a terminal"),
    with_short(valued("output", "FILE", "write the table to FILE"), 'o'),
    HELP,
];

pub fn help() -> String {
    format!(
        "elevator published — the source documents' tables against the simulation

USAGE:
    elevator published [--experiments E1,E2,...] [--max-runtime DURATION]

Every published cell of E1–E4 (IOPS and mean latency per group, direction
and scheduler) beside the simulated one, each experiment on its device
profile with --kernel set to the documents' kernel and --cpus to their
machine's hardware threads where they say; schedulers the simulator
does not have yet are listed as such. Prints a markdown table and how many
cells are within ±25%.

E1 and E3 are simulated for 120 s and 10 s (a disk, and a drive in steady
state: they settle within that), E2 for the documents' own 7200 s: its
drive fills up as random writes map unmapped blocks (the profile's starting
fill was fitted over those 7200 s), and 4.12 kyber's write depth only ever
shrinks while reads and writes are on target, so E2's cells move with the
length. That takes about twenty minutes of wall time on two cores (a bar
follows the runs' simulated time); --max-runtime 30s gives a look in
seconds, with E2's IOPS too high for its short run (the drive is emptier
at the start).

{}",
        args::options_help(OPTS)
    )
}

/// `elevator published`.
pub fn cmd(argv: &[String]) -> Result<(), CliError> {
    let p = args::parse("published", argv, OPTS, Unknown::Reject)?;
    if p.help() {
        return emit(&help(), None);
    }
    if let Some(x) = p.rest.first() {
        return Err(CliError::bad(format!(
            "published: unexpected argument '{x}' (see `elevator published --help`)"
        )));
    }
    let ids: Vec<String> = p
        .get("experiments")
        .map(|l| l.split(',').map(|x| x.trim().to_string()).collect())
        .unwrap_or_default();
    for id in &ids {
        if !EXPERIMENTS.iter().any(|e| e.id.eq_ignore_ascii_case(id)) {
            return Err(CliError::bad(format!(
                "--experiments: unknown experiment '{id}' (known: E1, E2, E3, E4)"
            )));
        }
    }
    let runtime = match p.get("max-runtime") {
        Some(v) => match parse_duration(v) {
            Ok(0) => return Err(CliError::bad("--max-runtime: must be greater than zero")),
            Ok(t) => Some(t),
            Err(e) => return Err(CliError::bad(format!("--max-runtime: {e}"))),
        },
        None => None,
    };
    let opts = Options {
        runtime,
        progress: !p.flag("no-progress"),
    };
    let cells = compare(&ids, opts)?;
    emit(&render(&cells, runtime), p.get("output"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn experiment(id: &str) -> &'static Experiment {
        EXPERIMENTS.iter().find(|e| e.id == id).expect("experiment")
    }

    #[test]
    fn max_runtime_replaces_only_a_timed_experiments_time() {
        let two_hours = Some(7200 * NS_PER_SEC);
        let e2 = experiment("E2");
        let half_minute = Some(30 * NS_PER_SEC);
        assert_eq!(e2.spec_for("kyber", None).max_runtime_ns, two_hours);
        assert_eq!(
            e2.spec_for("kyber", half_minute).max_runtime_ns,
            half_minute
        );
        // E4 runs its job to the end (a fixed size per job) whatever is asked.
        assert_eq!(
            experiment("E4").spec_for("noop", two_hours).max_runtime_ns,
            None
        );
    }

    #[test]
    fn the_set_up_lines_name_the_simulated_time() {
        let cells = [];
        let default = render(&cells, None);
        assert!(
            default.contains("E2: --device intel-s3520 --kernel 4.12 --cpus 12, 7200 s;"),
            "{default}"
        );
        assert!(default.contains("E3: --device micron-9100 --kernel 4.12 --cpus 12, 10 s;"));
        let short = render(&cells, Some(30 * NS_PER_SEC));
        assert!(
            short.contains("E2: --device intel-s3520 --kernel 4.12 --cpus 12, 30 s;"),
            "{short}"
        );
        assert!(short.contains(
            "E4: --device desktop-ssd --kernel 2.6.39 --mount ext4 --dm crypt, to the job's end;"
        ));
        let odd = render(&cells, Some(1_500_000_000));
        assert!(
            odd.contains("E1: --device hgst-he10 --kernel 4.13 --cpus 24, 1500ms;"),
            "{odd}"
        );
    }

    #[test]
    fn a_bad_max_runtime_is_an_error_naming_the_option() {
        for (v, want) in [("0", "greater than zero"), ("soon", "--max-runtime")] {
            let argv = vec!["--max-runtime".to_string(), v.to_string()];
            let Err(err) = cmd(&argv) else {
                panic!("--max-runtime {v} was accepted");
            };
            assert_eq!(err.code, super::super::EXIT_BAD_INPUT);
            let m = err.message;
            assert!(m.contains("--max-runtime") && m.contains(want), "{v}: {m}");
        }
    }
}
