//! The crate's top-level modules form layers that follow the data flow, and
//! a module may use only modules of lower layers (no cycles): the test reads
//! every `crate::` path in the sources.
//!
//! ```text
//! 0  sim (clock, events, rng)   machine   cgroup
//! 1  job                        fio job files
//! 2  workload   stats   cache   I/O streams; fio's statistics; the page
//!    fs                         cache (dirty limits, throttling, writeback
//!                               order); ext4 and its jbd2 journal's state
//! 3  block                      blk-mq and the interfaces it calls
//!                               (elevator, driver)
//! 4  sched   device   report    schedulers (+ registry); device models;
//!                               fio's formats (of stats and block counters)
//! 5  task                       what runs on the CPUs (the fio job driver)
//! 6  run                        the library entry: RunSpec -> RunReport,
//!                               the event loop
//! 7  lab                        real devices, driven through fio
//! 8  cli                        the command line
//! ```
//!
//! Test code (`#[cfg(test)]` modules and the files they declare) may use
//! higher layers: a block-layer test drives a concrete scheduler from the
//! registry. The rule is for the code that ships.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const LAYERS: &[(&str, u32)] = &[
    ("sim", 0),
    ("machine", 0),
    ("kernel", 0),
    ("cgroup", 0),
    ("job", 1),
    ("workload", 2),
    ("stats", 2),
    ("cache", 2),
    ("fs", 2),
    ("block", 3),
    ("report", 4),
    ("sched", 4),
    ("device", 4),
    ("task", 5),
    ("run", 6),
    ("lab", 7),
    ("cli", 8),
];

fn rank(m: &str) -> Option<u32> {
    LAYERS.iter().find(|(n, _)| *n == m).map(|(_, r)| *r)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let m = first.strip_suffix(".rs").unwrap_or(first);
    (m != "lib" && m != "main").then(|| m.to_string())
}

/// Files a parent declares under `#[cfg(test)]` (`#[cfg(test)] mod x;`).
fn test_only_files(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for w in lines.windows(2) {
            if w[0] != "#[cfg(test)]" {
                continue;
            }
            let decl = w[1]
                .trim_start_matches("pub(crate) ")
                .trim_start_matches("pub ");
            if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
                let dir = if f
                    .file_name()
                    .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
                {
                    f.parent().unwrap().to_path_buf()
                } else {
                    f.with_extension("")
                };
                out.push(dir.join(format!("{name}.rs")));
                out.push(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// Every `crate::NAME` in `text` outside comments and outside a trailing
/// `#[cfg(test)] mod ... {` block, with its line.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut prev_cfg_test = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if prev_cfg_test && t.starts_with("mod ") && t.ends_with('{') {
            break;
        }
        prev_cfg_test = t == "#[cfg(test)]";
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(pos) = rest.find("crate::") {
            let after = &rest[pos + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let boundary_ok = pos == 0
                || !rest[..pos]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            if boundary_ok && !name.is_empty() {
                out.push((i + 1, name));
            }
            rest = after;
        }
    }
    out
}

#[test]
fn modules_use_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let tests_only = test_only_files(&files);
    let mut violations = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let Some(m) = module_of(&src, f) else {
            continue;
        };
        if tests_only.contains(f) {
            continue;
        }
        *seen.entry(m.clone()).or_default() += 1;
        let Some(mine) = rank(&m) else {
            violations.push(format!(
                "{}: top-level module '{m}' has no layer in tests/layering.rs",
                f.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for (line, used) in crate_paths(&text) {
            if used == m {
                continue;
            }
            match rank(&used) {
                Some(r) if r < mine => {}
                Some(r) => violations.push(format!(
                    "{}:{line}: {m} (layer {mine}) uses crate::{used} (layer {r})",
                    f.strip_prefix(&src).unwrap().display()
                )),
                None => violations.push(format!(
                    "{}:{line}: crate::{used} is not a known top-level module",
                    f.strip_prefix(&src).unwrap().display()
                )),
            }
        }
    }
    assert!(
        violations.is_empty(),
        "layering violations:\n{}",
        violations.join("\n")
    );
    // Every layer names a module that exists.
    for (m, _) in LAYERS {
        assert!(seen.contains_key(*m), "no sources for layer module '{m}'");
    }
}

#[test]
fn the_scanner_finds_paths_and_skips_comments() {
    let text = "use crate::block::x;\n// crate::cli in a comment\nlet a = crate::sim::time::Ns; // crate::lab\nmy_crate::job\n\
                #[cfg(test)]\nmod tests {\n    use crate::cli;\n}\n";
    let found: Vec<String> = crate_paths(text).into_iter().map(|(_, n)| n).collect();
    assert_eq!(found, ["block", "sim"]);
}
