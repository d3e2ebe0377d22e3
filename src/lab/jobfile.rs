//! The job file fio runs in the lab: the user's file with its includes
//! spliced in, every `filename=`/`directory=` replaced by the device, each
//! `cgroup=` pointed at a group the lab prepared (with `cgroup_nodelete=1`
//! and without fio's `cgroup_weight=`), and runtimes capped by
//! `--max-runtime`. Everything else is passed through verbatim, so fio reads
//! the job exactly as the user wrote it.

use crate::sim::time::parse_duration;
use crate::sim::time::{Ns, NS_PER_MS, NS_PER_SEC};
use std::path::Path;

/// Nested includes deeper than this are treated as a loop (as the parser does).
const MAX_INCLUDE_DEPTH: u32 = 16;

/// Options that name files; the device replaces them all.
const FILE_OPTIONS: &[&str] = &[
    "filename",
    "directory",
    "filename_format",
    "nrfiles",
    "opendir",
    "unique_filename",
];

/// Read a job file with its `include` lines replaced by the included text.
pub fn read_inlined(path: &Path) -> Result<String, String> {
    inline(path, 0)
}

fn inline(path: &Path, depth: u32) -> Result<String, String> {
    if depth > MAX_INCLUDE_DEPTH {
        return Err(format!(
            "{}: includes nested more than {MAX_INCLUDE_DEPTH} deep (include loop?)",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let base = path.parent().unwrap_or(Path::new(""));
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let t = strip_comment(line).trim();
        match t.strip_prefix("include") {
            Some(rest) if rest.starts_with([' ', '\t']) && !rest.trim().is_empty() => {
                let target = base.join(rest.trim());
                out.push_str(&format!("; elevator lab: {}\n", line.trim()));
                out.push_str(&inline(&target, depth + 1)?);
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    Ok(out)
}

/// Everything before a `;` or `#` (fio ends a line's content there).
fn strip_comment(line: &str) -> &str {
    match line.find([';', '#']) {
        Some(i) => &line[..i],
        None => line,
    }
}

/// Parse a job file as it will run on `device`: every filename replaced
/// first, so a `filename=${DEV}` whose variable is unset still parses.
/// Cgroup names stay as the user wrote them.
pub fn parse_for_device(path: &Path, device: &str) -> Result<crate::job::JobFile, String> {
    let text = read_inlined(path)?;
    let none = |_: &str| None;
    let text = rewrite(
        &text,
        &Rewrite {
            device,
            cgroup: &none,
            max_runtime: None,
        },
    );
    let env = |n: &str| std::env::var(n).ok();
    let base = path.parent().unwrap_or(Path::new(""));
    let inputs = crate::job::Inputs {
        env: &env,
        ..crate::job::Inputs::plain()
    };
    crate::job::parse_str(&text, &path.display().to_string(), base, &inputs)
        .map_err(|e| e.to_string())
}

/// What to change in the job file.
pub struct Rewrite<'a> {
    /// The block device every job uses.
    pub device: &'a str,
    /// A job's `cgroup=` value → the group path fio should use (None: leave it).
    pub cgroup: &'a dyn Fn(&str) -> Option<String>,
    /// Cap on every job's runtime.
    pub max_runtime: Option<Ns>,
}

/// A runtime as fio reads it (seconds unless a unit is given), printed back.
fn fio_time(ns: Ns) -> String {
    if ns.is_multiple_of(NS_PER_SEC) {
        format!("{}", ns / NS_PER_SEC)
    } else {
        format!("{}ms", ns.div_ceil(NS_PER_MS).max(1))
    }
}

/// The rewritten job text for fio.
pub fn rewrite(text: &str, rw: &Rewrite) -> String {
    let mut uses_cgroup = false;
    let mut body = String::with_capacity(text.len() + 256);
    for line in text.lines() {
        let content = strip_comment(line).trim();
        if content.is_empty() || content.starts_with('[') {
            body.push_str(line);
            body.push('\n');
            continue;
        }
        let (key, value) = match content.split_once('=') {
            Some((k, v)) => (k.trim().to_ascii_lowercase(), Some(v.trim())),
            None => (content.to_ascii_lowercase(), None),
        };
        let key = key.trim_start_matches('-');
        if FILE_OPTIONS.contains(&key) || key == "cgroup_weight" || key == "cgroup_nodelete" {
            body.push_str(&format!("; elevator lab: removed: {}\n", line.trim()));
            continue;
        }
        if key == "cgroup" {
            uses_cgroup = true;
            if let Some(v) = value {
                if let Some(path) = (rw.cgroup)(v) {
                    body.push_str(&format!("cgroup={path}\n"));
                    continue;
                }
            }
        }
        if key == "runtime" || key == "timeout" {
            if let (Some(cap), Some(v)) = (rw.max_runtime, value) {
                if let Ok(t) = parse_duration(v) {
                    // fio treats runtime=0 as unlimited.
                    let capped = if t == 0 { cap } else { t.min(cap) };
                    body.push_str(&format!("runtime={}\n", fio_time(capped)));
                    continue;
                }
            }
        }
        body.push_str(line);
        body.push('\n');
    }
    let mut out = String::new();
    out.push_str("; Rewritten by elevator lab for fio: device, cgroups, runtime cap.\n");
    out.push_str("[global]\n");
    out.push_str(&format!("filename={}\n", rw.device));
    if uses_cgroup {
        out.push_str("cgroup_nodelete=1\n");
    }
    if let Some(cap) = rw.max_runtime {
        out.push_str(&format!("runtime={}\n", fio_time(cap)));
    }
    out.push('\n');
    out.push_str(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_cg(_: &str) -> Option<String> {
        None
    }

    const E5: &str = "\
; E5
[global]
direct=1
runtime=20
filename=/dev/sdX
numjobs=4
[test1]
cgroup=test1
cgroup_weight=1000
[test2]
cgroup = test2 ; comment
cgroup_weight=800
runtime=5
";

    #[test]
    fn device_cgroups_and_runtime() {
        let map = |n: &str| Some(format!("elv1_{n}"));
        let out = rewrite(
            E5,
            &Rewrite {
                device: "/dev/loop7",
                cgroup: &map,
                max_runtime: Some(10 * NS_PER_SEC),
            },
        );
        assert!(out.starts_with("; Rewritten"));
        assert!(out.contains("[global]\nfilename=/dev/loop7\ncgroup_nodelete=1\nruntime=10\n"));
        assert!(!out.contains("\nfilename=/dev/sdX"));
        assert!(out.contains("; elevator lab: removed: filename=/dev/sdX"));
        assert!(!out.lines().any(|l| l.starts_with("cgroup_weight")));
        assert!(out.contains("cgroup=elv1_test1\n"));
        assert!(out.contains("cgroup=elv1_test2\n"));
        // 20 s capped at 10; 5 s stays.
        assert!(out.contains("\nruntime=10\nfilename") || out.contains("runtime=10\n"));
        assert!(out.contains("\nruntime=5\n"));
        assert!(!out.contains("runtime=20"));
    }

    #[test]
    fn without_cap_or_cgroups_only_the_device_changes() {
        let text =
            "[global]\nfilename=/dev/sda1\nruntime=7200\n[w]\nrw=randwrite\ndirectory=/tmp\n";
        let out = rewrite(
            text,
            &Rewrite {
                device: "/dev/loop0",
                cgroup: &no_cg,
                max_runtime: None,
            },
        );
        assert!(out.contains("runtime=7200\n"));
        assert!(!out.contains("cgroup_nodelete"));
        assert!(out.contains("; elevator lab: removed: directory=/tmp"));
        assert_eq!(out.matches("filename=").count(), 2, "{out}"); // ours + the comment
    }

    #[test]
    fn runtime_formats() {
        assert_eq!(fio_time(3 * NS_PER_SEC), "3");
        assert_eq!(fio_time(1500 * NS_PER_MS), "1500ms");
        let out = rewrite(
            "[a]\nruntime=2m\ntimeout=0\n",
            &Rewrite {
                device: "/dev/loop0",
                cgroup: &no_cg,
                max_runtime: Some(1500 * NS_PER_MS),
            },
        );
        assert_eq!(out.matches("runtime=1500ms").count(), 3, "{out}");
    }

    #[test]
    fn unset_device_variable_still_parses() {
        let dir = crate::lab::TempDir::new("elevator-jobfile-test").unwrap();
        let p = dir.path().join("j.fio");
        std::fs::write(
            &p,
            "[global]\nfilename=${ELEVATOR_TEST_UNSET_DEV}\n[a]\nrw=read\ncgroup=g1\n",
        )
        .unwrap();
        let jf = parse_for_device(&p, "/dev/loop9").unwrap();
        assert_eq!(jf.jobs[0].filenames, vec!["/dev/loop9".to_string()]);
        assert_eq!(jf.jobs[0].cgroup.as_deref(), Some("g1"));
    }

    #[test]
    fn includes_are_spliced() {
        let dir = crate::lab::TempDir::new("elevator-jobfile-test").unwrap();
        std::fs::write(dir.path().join("inc.fio"), "filename=/dev/sdb\nbs=8k\n").unwrap();
        std::fs::write(
            dir.path().join("job.fio"),
            "[a]\ninclude inc.fio\nrw=read\n",
        )
        .unwrap();
        let text = read_inlined(&dir.path().join("job.fio")).unwrap();
        assert!(text.contains("bs=8k\nrw=read"), "{text}");
        let out = rewrite(
            &text,
            &Rewrite {
                device: "/dev/loop1",
                cgroup: &no_cg,
                max_runtime: None,
            },
        );
        assert!(out.contains("removed: filename=/dev/sdb"));
        std::fs::write(dir.path().join("loop.fio"), "[a]\ninclude loop.fio\n").unwrap();
        assert!(read_inlined(&dir.path().join("loop.fio"))
            .unwrap_err()
            .contains("nested"));
    }
}
