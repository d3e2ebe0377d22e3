//! A run-level fuzzer: random job files (valid and broken option values),
//! schedulers, settings, switches, machines and mutated device profiles go
//! through `elevator::run::run`. Every case must end, in bounded time, with
//! a report or an input error — never a panic, an abort or an internal
//! error.
//!
//! Deterministic: case N of a seed is always the same. `ELEVATOR_FUZZ_CASES`
//! sets the number of cases (CI runs the default; run 10000 or more by
//! hand), `ELEVATOR_FUZZ_SEED` the seed. To look at one case (a hang never
//! reaches the report), `ELEVATOR_FUZZ_FROM=N` skips the runs before case N
//! (they are still drawn, so N stays the same case) and `ELEVATOR_FUZZ_SHOW`
//! prints each case's spec before it runs.

use elevator::run::{DeviceSource, Error, JobSource, RunSpec, Setting, Switch};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// xorshift64*: enough for picking inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// One of `v`; entries marked `!` (broken on purpose) only one time in
    /// 25, so most cases get far enough to run.
    fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
        loop {
            let x = v[self.below(v.len())];
            match x.strip_prefix('!') {
                None => return x,
                Some(bad) if self.chance(4) => return bad,
                Some(_) => {}
            }
        }
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.next() % 100 < pct
    }
}

/// Option names and the values tried for each (valid ones mostly, some
/// broken, some at the edges).
const OPTIONS: &[(&str, &[&str])] = &[
    (
        "rw",
        &[
            "read",
            "write",
            "randread",
            "randwrite",
            "rw",
            "randrw",
            "trim",
            "randtrim",
            "readwrite",
            "!bogus",
            "randread:8",
            "write:4k",
        ],
    ),
    (
        "bs",
        &[
            "512", "4k", "8k", "64k", "128k", "1m", "!3", "!0", "!4q", "!4k-16k", "1k,8k",
        ],
    ),
    ("bsrange", &["4k-64k", "512-1m", "!64k-4k"]),
    (
        "bssplit",
        &["4k/50:64k/50", "4k/10:8k/10", "1m/100", "!x/y"],
    ),
    (
        "iodepth",
        &[
            "1",
            "2",
            "8",
            "32",
            "128",
            "1024",
            "!0",
            "!-1",
            "!70000",
            "!4294967295",
        ],
    ),
    ("iodepth_batch_submit", &["1", "4", "16", "0"]),
    ("numjobs", &["1", "2", "4", "!0", "!5000"]),
    (
        "size",
        &["64k", "1m", "4m", "16m", "!0", "1t", "!-5", "10%", "!200%"],
    ),
    ("io_size", &["1m", "512k", "8m"]),
    ("offset", &["0", "4k", "1m", "50%", "!-1"]),
    (
        "ioengine",
        &[
            "libaio",
            "psync",
            "sync",
            "io_uring",
            "null",
            "mmap",
            "!net",
            "pvsync2",
            "io_uring_cmd",
            "!external:x",
            "!nope",
        ],
    ),
    ("direct", &["0", "1", "1", "!2"]),
    ("rwmixread", &["0", "30", "70", "100", "!101"]),
    (
        "random_distribution",
        &[
            "random",
            "zipf:1.2",
            "pareto:0.9",
            "normal:20",
            "zoned:50/10:50/90",
            "zoned_abs:100/1m",
            "!zipf:0",
            "!gauss",
        ],
    ),
    (
        "random_generator",
        &["tausworthe", "lfsr", "tausworthe64", "!x"],
    ),
    ("norandommap", &["0", "1"]),
    ("rate", &["1m", "100k,200k", "0", "1"]),
    ("rate_iops", &["100", "5000", "1"]),
    ("rate_process", &["linear", "poisson"]),
    ("thinktime", &["0", "10", "1ms", "5s"]),
    ("thinktime_blocks", &["1", "4", "0"]),
    ("startdelay", &["0", "1ms", "0-5ms", "10s"]),
    ("ramp_time", &["0", "1ms", "!18446744073s"]),
    ("runtime", &["1ms", "5ms", "1", "0"]),
    ("time_based", &["0", "1"]),
    ("number_ios", &["1", "10", "1000", "0"]),
    ("loops", &["1", "2", "0"]),
    ("fsync", &["0", "1", "4"]),
    ("fdatasync", &["0", "2"]),
    ("end_fsync", &["0", "1"]),
    ("fsync_on_close", &["0", "1"]),
    ("end_syncfs", &["0", "1"]),
    ("invalidate", &["0", "1"]),
    ("unlink", &["0", "1"]),
    ("unlink_each_loop", &["0", "1"]),
    ("overwrite", &["0", "1"]),
    ("sync", &["0", "1", "dsync", "none", "!what"]),
    ("nrfiles", &["1", "4", "!0", "!2000000"]),
    ("filename", &["/dev/sda", "/dev/nvme0n1:/dev/nvme1n1", "!"]),
    ("cpus_allowed", &["0", "0-1", "1", "!0-3", "!9"]),
    ("cgroup", &["a", "a/b", "!x/../y", "/", "!"]),
    ("cgroup_weight", &["100", "500", "1000", "!5", "!2000"]),
    ("prio", &["0", "4", "7", "!8"]),
    ("prioclass", &["0", "1", "2", "3", "!4"]),
    ("stonewall", &["0", "1"]),
    ("new_group", &["1"]),
    ("group_reporting", &["0", "1"]),
    ("zonemode", &["none", "strided"]),
    ("blockalign", &["4k", "512"]),
    ("percentile_list", &["50:99", "99.9", "!x"]),
    ("randseed", &["1", "42"]),
    ("write_lat_log", &["lat"]),
];

fn job_text(r: &mut Rng) -> String {
    let mut s = String::new();
    if !r.chance(2) {
        // Where fio would need them: a device and a size (jobs may override).
        s.push_str("[global]\nfilename=/dev/fuzz\nsize=4m\n");
        for _ in 0..r.below(5) {
            option_line(r, &mut s);
        }
    }
    for j in 0..1 + r.below(3) {
        s.push_str(&format!("[job{j}]\n"));
        for _ in 0..r.below(7) {
            option_line(r, &mut s);
        }
    }
    if r.chance(1) {
        s.push_str("garbage line without equals = = =\n[");
    }
    s
}

fn option_line(r: &mut Rng, s: &mut String) {
    let (name, values) = OPTIONS[r.below(OPTIONS.len())];
    if name == "write_lat_log" && r.chance(80) {
        return; // logs need a directory; keep them rare
    }
    s.push_str(&format!("{name}={}\n", r.pick(values)));
}

const SCHEDULERS: &[&str] = &[
    "none",
    "mq-deadline",
    "deadline",
    "noop",
    "kyber",
    "bfq",
    "cfq",
    "tpps",
    "tpps-mq",
    "!bfqq",
    "!junk",
    " mq-deadline\n",
];
/// `--mount` values: ext4 with the options that change its journal, and
/// some it refuses.
const MOUNTS: &[&str] = &[
    "ext4",
    "ext4:nobarrier",
    "ext4:data=writeback,journal_async_commit,commit=1",
    "ext4:noatime,commit=1",
    "!ext4:data=journal",
    "!xfs",
];
const DEVICES: &[&str] = &[
    "nvme",
    "ram",
    "hdd",
    "sata-ssd",
    "intel-s3520",
    "micron-9100",
    "desktop-ssd",
    "hgst-he10",
    "loop",
];
const SETTINGS: &[(&str, &[&str])] = &[
    (
        "nr_requests",
        &["1", "4", "64", "256", "2048", "!5000", "!x"],
    ),
    ("nomerges", &["0", "1", "2", "!3"]),
    ("max_sectors_kb", &["4", "128", "1280", "0", "!100000"]),
    ("rotational", &["0", "1", "!2"]),
    ("write_cache", &["write back", "write through", "!maybe"]),
    ("read_ahead_kb", &["0", "128", "!x"]),
    ("iosched/fifo_batch", &["1", "16", "0", "-3", "!x"]),
    ("iosched/read_expire", &["0", "10", "500", "!2147483648"]),
    ("iosched/async_depth", &["1", "64", "0"]),
    ("iosched/writes_starved", &["-1", "2", "100"]),
    (
        "iosched/read_lat_nsec",
        &["0", "1", "2000000", "1000000000", "!0x10"],
    ),
    ("iosched/write_lat_nsec", &["0", "10000000", "!-1"]),
    ("iosched/slice_idle", &["0", "1", "8", "!-1"]),
    ("iosched/low_latency", &["0", "1", "!2"]),
    ("iosched/strict_guarantees", &["0", "1"]),
    ("iosched/quantum", &["1", "8", "64", "!0"]),
    ("iosched/group_idle", &["0", "8"]),
    ("iosched/back_seek_penalty", &["1", "2", "!0"]),
    ("iosched/timeout_sync", &["1", "125", "!0"]),
    ("iosched/max_budget", &["0", "16384"]),
    (
        "cpu/submit_ns",
        &["0", "400", "1000000", "!1000001", "!18446744073709550000"],
    ),
    ("cpu/mq-deadline.dispatch_ns", &["0", "300", "!x"]),
    ("cgroup:a/blkio.weight", &["10", "500", "1000", "!5", "!x"]),
    ("cgroup:a/blkio.bfq.weight", &["1", "100", "!1001"]),
    ("cgroup:b/io.weight", &["1", "10000", "default 50"]),
    ("!bogus", &["1"]),
];

/// A built-in profile with one numeric value replaced by an extreme.
fn mutated_profile(r: &mut Rng, name: &str) -> DeviceSource {
    let p = elevator::device::load_profile(name).expect("built-in");
    let lines: Vec<&str> = p.text.lines().collect();
    let numeric: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim();
            !t.starts_with('#')
                && t.split_once('=').is_some_and(|(_, v)| {
                    v.trim().chars().next().is_some_and(|c| c.is_ascii_digit())
                })
        })
        .map(|(i, _)| i)
        .collect();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    if !numeric.is_empty() {
        let i = numeric[r.below(numeric.len())];
        let key = out[i]
            .split_once('=')
            .map(|(k, _)| k.to_string())
            .unwrap_or_default();
        let v = r.pick(&[
            "0",
            "1",
            "7",
            "-1",
            "1e300",
            "18446744073709551615",
            "0.5",
            "4294967296",
        ]);
        out[i] = format!("{key}= {v}");
    }
    DeviceSource {
        name: format!("{name}-mutated"),
        profile: Some(out.join("\n") + "\n"),
    }
}

fn case(r: &mut Rng) -> RunSpec {
    let text = job_text(r);
    let mut spec = RunSpec::new(JobSource::text("fuzz.fio", &text));
    spec.scheduler = r.pick(SCHEDULERS).to_string();
    let dev = r.pick(DEVICES);
    spec.device = if r.chance(6) {
        mutated_profile(r, dev)
    } else {
        DeviceSource {
            name: dev.to_string(),
            profile: None,
        }
    };
    for _ in 0..r.below(3) {
        let (name, values) = SETTINGS[r.below(SETTINGS.len())];
        let name = match name.strip_prefix('!') {
            Some(bad) if r.chance(4) => bad,
            Some(_) => continue,
            None => name,
        };
        spec.settings.push(Setting {
            name: name.to_string(),
            value: r.pick(values).to_string(),
        });
    }
    for _ in 0..r.below(3) {
        spec.switches.push(Switch {
            at_ns: r.below(6) as u64 * 1_000_000,
            scheduler: r.pick(SCHEDULERS).trim().to_string(),
        });
    }
    spec.switches.sort_by_key(|s| s.at_ns);
    spec.machine.cpus = *[1, 2, 2, 3, 4, 8].get(r.below(6)).unwrap();
    if r.chance(1) {
        spec.machine.cpus = 0;
    }
    spec.cgroup_version = if r.chance(20) { 2 } else { 1 };
    if r.chance(30) {
        spec.mount = Some(r.pick(MOUNTS).to_string());
    }
    spec.seed = r.next();
    // Bounded: a few simulated milliseconds per case.
    spec.max_runtime_ns = Some(1_000_000 + r.below(5) as u64 * 1_000_000);
    // The kernel era and dm-crypt come from a generator of their own,
    // seeded by the case, so that adding them kept every earlier draw (and
    // the case numbers of findings reported before) as it was.
    let mut era = Rng(spec.seed | 1);
    if era.chance(30) {
        spec.kernel = Some(era.pick(KERNELS).to_string());
    }
    if era.chance(10) {
        spec.dm = Some(era.pick(DMS).to_string());
    }
    spec
}

/// `--kernel` values: the documents' kernels, the eras' edges, and some the
/// model refuses.
const KERNELS: &[&str] = &[
    "2.6.32", "2.6.39", "3.10", "3.13", "4.11", "4.12", "4.14", "4.15", "4.19", "5.0", "5.4",
    "5.12", "6.6", "6.17", "!1.0", "!junk", "!99.1",
];
/// `--dm` values.
const DMS: &[&str] = &[
    "crypt",
    "crypt:sector_ns=100,bio_ns=2000",
    "!crypt:x=1",
    "!linear",
];

#[test]
fn random_runs_end_with_a_report_or_an_input_error() {
    let cases: u64 = std::env::var("ELEVATOR_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(400);
    let seed: u64 = std::env::var("ELEVATOR_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_f022);
    let from: u64 = std::env::var("ELEVATOR_FUZZ_FROM")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let show = std::env::var("ELEVATOR_FUZZ_SHOW").is_ok();
    let mut r = Rng(seed | 1);
    let (mut ran, mut refused) = (0u64, 0u64);
    for n in 0..cases {
        let spec = case(&mut r);
        if n < from {
            continue;
        }
        if show {
            eprintln!("case {n}:\n{}", spec.to_json());
        }
        let started = Instant::now();
        // A panic is caught and reported with its case; the hook records
        // where it happened instead of printing it.
        let at = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let at2 = at.clone();
        std::panic::set_hook(Box::new(move |info| {
            *at2.lock().unwrap() = info.location().map(|l| l.to_string()).unwrap_or_default();
        }));
        let out = catch_unwind(AssertUnwindSafe(|| elevator::run::run(&spec)));
        let _ = std::panic::take_hook();
        let took = started.elapsed();
        let json = spec.to_json();
        match out {
            Err(p) => {
                let at = at.lock().unwrap().clone();
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("case {n} (seed {seed}) panicked at {at}: {msg}\n{json}");
            }
            Ok(Err(Error::Internal(m))) => {
                panic!("case {n} (seed {seed}): internal error {m}\n{json}")
            }
            Ok(Err(e)) => {
                refused += 1;
                if std::env::var("ELEVATOR_FUZZ_VERBOSE").is_ok() {
                    eprintln!("refused: {e}");
                }
            }
            Ok(Ok(_)) => ran += 1,
        }
        assert!(
            took < Duration::from_secs(20),
            "case {n} (seed {seed}) took {took:?}: a hang\n{json}"
        );
    }
    eprintln!("fuzz: {cases} cases, {ran} ran, {refused} refused as bad input");
    assert!(from > 0 || (ran > 0 && refused > 0), "both outcomes occur");
}
