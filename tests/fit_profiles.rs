//! The fits behind the profiles' FITTED values, rerunnable:
//!
//!   cargo test --test fit_profiles -- --ignored --nocapture
//!
//! Each fit runs the experiment's `none` row (noop's for E4, which has no
//! none) with the documents' kernel and bisects one profile value until the
//! simulated cell matches the published one (E1: a grid over two values,
//! smallest largest error over the row's six cells); it prints the value to
//! write into the profile. The non-ignored test checks that the committed
//! profiles still reproduce the cells they were fitted to (so a model change
//! that moves them is noticed), and nothing else: every other cell is a
//! prediction (`elevator published`).

use elevator::cli::published::{Experiment, EXPERIMENTS};
use elevator::job::Ddir;
use elevator::report::table::group_rows;
use elevator::run::DeviceSource;

fn experiment(id: &str) -> &'static Experiment {
    EXPERIMENTS.iter().find(|e| e.id == id).unwrap()
}

fn builtin_text(name: &str) -> String {
    let path = format!("{}/profiles/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

/// The profile text with `key = ...` set to `value` (the rest of the line,
/// its comment, kept).
fn with_value(text: &str, key: &str, value: &str) -> String {
    let mut found = false;
    let out: Vec<String> = text
        .lines()
        .map(|l| {
            let k = l.split('=').next().unwrap_or("").trim();
            if k == key && !l.trim_start().starts_with('#') {
                found = true;
                let comment = l.find('#').map(|i| &l[i..]).unwrap_or("");
                format!("{key} = {value}    {comment}")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(found, "no {key} in the profile");
    out.join("\n") + "\n"
}

/// (IOPS, mean latency ms) of each `(group, dir)` in experiment `id` under
/// `scheduler` on the profile `text`, from one run.
fn cells(id: &str, scheduler: &str, text: &str, wanted: &[(&str, Ddir)]) -> Vec<(f64, f64)> {
    let e = experiment(id);
    let mut spec = e.spec(scheduler);
    spec.device = DeviceSource {
        name: e.device.to_string(),
        profile: Some(text.to_string()),
    };
    let rep = elevator::run::run(&spec).expect("runs");
    let rows = group_rows(&rep);
    wanted
        .iter()
        .map(|&(group, dir)| {
            let r = rows
                .iter()
                .find(|r| r.name == group && r.dir == dir)
                .expect("group row");
            (r.iops, r.lat_mean_us / 1000.0)
        })
        .collect()
}

/// (IOPS, mean latency ms) of `group`/`dir` in experiment `id` under
/// `scheduler` on the profile `text`.
fn cell(id: &str, scheduler: &str, text: &str, group: &str, dir: Ddir) -> (f64, f64) {
    cells(id, scheduler, text, &[(group, dir)])[0]
}

/// Bisect `key` in [lo, hi] until `measure` (increasing in the value when
/// `increasing`) meets `target`.
fn bisect(
    text: &str,
    key: &str,
    (mut lo, mut hi): (f64, f64),
    increasing: bool,
    target: f64,
    measure: impl Fn(&str) -> f64,
    fmt: impl Fn(f64) -> String,
) -> String {
    for _ in 0..10 {
        let mid = 0.5 * (lo + hi);
        let m = measure(&with_value(text, key, &fmt(mid)));
        println!("  {key} = {} -> {m:.4} (target {target})", fmt(mid));
        if (m < target) == increasing {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let v = fmt(0.5 * (lo + hi));
    println!("FITTED {key} = {v}");
    with_value(text, key, &v)
}

/// Solve `measure(key) = target` by the secant method from `x0` and `x1`
/// (for a measure that is smooth and monotonic in the value, where each
/// evaluation costs minutes: a few steps instead of bisection's ten),
/// stopping within `tol` (relative) of the target. Starting from the
/// committed value, a rerun that still holds costs one evaluation.
fn secant(
    text: &str,
    key: &str,
    (x0, x1): (f64, f64),
    target: f64,
    tol: f64,
    measure: impl Fn(&str) -> f64,
    fmt: impl Fn(f64) -> String,
) -> String {
    let eval = |x: f64| {
        let m = measure(&with_value(text, key, &fmt(x)));
        println!("  {key} = {} -> {m:.4} (target {target})", fmt(x));
        m - target
    };
    let (mut a, mut fa) = (x0, eval(x0));
    let mut b = x0;
    if fa.abs() > tol * target {
        b = x1;
        let mut fb = eval(x1);
        for _ in 0..6 {
            if fb.abs() <= tol * target || fb == fa {
                break;
            }
            let c = b - fb * (b - a) / (fb - fa);
            (a, fa) = (b, fb);
            b = c;
            fb = eval(b);
        }
    }
    let v = fmt(b);
    println!("FITTED {key} = {v}");
    with_value(text, key, &v)
}

/// The profile's committed value of `key`.
fn value_of(text: &str, key: &str) -> f64 {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.split('#').next().unwrap().trim().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no {key} in the profile"))
}

#[test]
#[ignore = "a fit: tens of minutes of simulation; prints the values for the profile"]
fn intel_s3520() {
    // E2 none, kernel 4.12, over the documents' 7200 s. Two values, two
    // cells: the program time sets how long the reader's reads wait behind
    // programs on their unit (the writes barely move), then the drive's
    // fill at the start sets the write rate; it rises as the run's random
    // writes map unmapped blocks, so each fit runs the whole length. Each
    // starts from the committed value.
    let text = builtin_text("intel-s3520");
    let program = value_of(&text, "program_ns");
    let text = secant(
        &text,
        "program_ns",
        (program, program + 250_000.0),
        1.376,
        0.01,
        |t| cell("E2", "none", t, "reader_20", Ddir::Read).1,
        |v| format!("{:.0}", (v / 1e4).round() * 1e4),
    );
    let fill = value_of(&text, "initial_fill");
    secant(
        &text,
        "initial_fill",
        (fill, fill + 0.01),
        3208.0,
        0.005,
        |t| cell("E2", "none", t, "writers", Ddir::Write).0,
        |v| format!("{v:.3}"),
    );
}

#[test]
#[ignore = "a fit: minutes of simulation; prints the values for the profile"]
fn micron_9100() {
    // E3 none, kernel 4.12: the drain rate sets the writers' IOPS, then the
    // program time the reads' latency (it barely moves the writes).
    let text = builtin_text("micron-9100");
    let text = bisect(
        &text,
        "write_drain_bandwidth",
        (2e8, 1.2e9),
        true,
        11484.0,
        |t| cell("E3", "none", t, "writers", Ddir::Write).0,
        |v| format!("{:.0}", (v / 1e6).round() * 1e6),
    );
    bisect(
        &text,
        "program_ns",
        (500_000.0, 6_000_000.0),
        true,
        1.367,
        |t| cell("E3", "none", t, "reader_20", Ddir::Read).1,
        |v| format!("{:.0}", (v / 1e4).round() * 1e4),
    );
}

#[test]
#[ignore = "a fit: minutes of simulation; prints the values for the profile"]
fn desktop_ssd() {
    // E4 noop (no none row), kernel 2.6.39: the program rate sets the IOPS.
    let text = builtin_text("desktop-ssd");
    bisect(
        &text,
        "program_bandwidth",
        (1e8, 6e8),
        true,
        26183.0,
        |t| cell("E4", "noop", t, "file1", Ddir::Write).0,
        |v| format!("{:.0}", (v / 1e6).round() * 1e6),
    );
}

/// E1's none row as published: (group, direction, IOPS, mean latency ms).
const E1_NONE: [(&str, Ddir, f64, f64); 3] = [
    ("writers", Ddir::Write, 81.0, 12.30),
    ("reader_40", Ddir::Write, 51.0, 7.10),
    ("reader_40", Ddir::Read, 34.0, 18.30),
];

/// The largest relative error over E1's six none cells on profile `text`.
fn e1_none_max_error(text: &str) -> f64 {
    E1_NONE
        .iter()
        .flat_map(|&(g, d, iops, lat)| {
            let (si, sl) = cell("E1", "none", text, g, d);
            [(si / iops - 1.0).abs(), (sl / lat - 1.0).abs()]
        })
        .fold(0.0, f64::max)
}

#[test]
#[ignore = "a fit: minutes of simulation; prints the values for the profile"]
fn hgst_he10() {
    // E1 none, kernel 4.13: the write cache's reorder window and how much
    // closer a destage must be to beat a host command set how the drive
    // splits its time between destaging and the reader. Two values, six
    // cells: a grid, keeping the pair with the smallest largest error.
    let text = builtin_text("hgst-he10");
    let mut best = (f64::MAX, 0, 0.0);
    for entries in [160, 176, 192, 208, 224] {
        for factor in [5.5, 6.0, 6.5, 7.0] {
            let t = with_value(&text, "write_cache_entries", &entries.to_string());
            let t = with_value(&t, "destage_cost_factor", &format!("{factor:.1}"));
            let err = e1_none_max_error(&t);
            println!("  entries {entries} factor {factor:.1} -> max error {err:.3}");
            if err < best.0 {
                best = (err, entries, factor);
            }
        }
    }
    println!("FITTED write_cache_entries = {}", best.1);
    println!("FITTED destage_cost_factor = {:.1}", best.2);
}

/// The committed profiles reproduce the cells they were fitted to.
#[test]
fn fitted_profiles_reproduce_their_fitting_cells() {
    let near = |sim: f64, published: f64, what: &str| {
        let err = sim / published - 1.0;
        assert!(err.abs() < 0.05, "{what}: {sim} vs {published} ({err:+.3})");
    };
    let e2 = cells(
        "E2",
        "none",
        &builtin_text("intel-s3520"),
        &[("writers", Ddir::Write), ("reader_20", Ddir::Read)],
    );
    near(e2[0].0, 3208.0, "E2 none writers IOPS");
    near(e2[1].1, 1.376, "E2 none read latency");
    // E1: two values for six cells; the fit left the largest error at 20.4%.
    let e1 = e1_none_max_error(&builtin_text("hgst-he10"));
    assert!(e1 < 0.21, "E1 none: largest error {e1:.3}");
    let e3 = builtin_text("micron-9100");
    near(
        cell("E3", "none", &e3, "writers", Ddir::Write).0,
        11484.0,
        "E3 none writers IOPS",
    );
    near(
        cell("E3", "none", &e3, "reader_20", Ddir::Read).1,
        1.367,
        "E3 none read latency",
    );
}
