//! Control groups for jobs with `cgroup=`: created before fio runs, weights
//! written by us, removed afterwards.
//!
//! fio picks its hierarchy by scanning /proc/mounts for the first `cgroup`
//! mount with the `blkio` option or the first `cgroup2` mount, whichever
//! comes first; the lab follows the same rule so that the groups it prepares
//! are the ones fio moves its jobs into. fio's own `cgroup_weight=` writes
//! `blkio.weight`, which does not exist when BFQ owns the weight
//! (`blkio.bfq.weight`), so the job file fio gets has `cgroup=` and
//! `cgroup_nodelete=1` and no `cgroup_weight=`; the weight is written here.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cgroup::{weight_file_for, CgroupVersion, WeightPolicy};

/// Which cgroup hierarchy fio will use.
#[derive(Clone, Debug, PartialEq)]
pub enum Hierarchy {
    /// cgroup v1 with the blkio controller mounted at `root`.
    V1 { root: PathBuf },
    /// cgroup v2 mounted at `root`.
    V2 { root: PathBuf },
}

impl Hierarchy {
    pub fn root(&self) -> &Path {
        match self {
            Hierarchy::V1 { root } | Hierarchy::V2 { root } => root,
        }
    }

    pub fn version(&self) -> CgroupVersion {
        match self {
            Hierarchy::V1 { .. } => CgroupVersion::V1,
            Hierarchy::V2 { .. } => CgroupVersion::V2,
        }
    }
}

/// The first cgroup v1 mount with `blkio`, or cgroup2 mount, in /proc/mounts
/// order (fio's `find_cgroup_mnt`); also whether a cgroup2 mount exists at all.
pub fn detect_from(mounts: &str) -> (Option<Hierarchy>, Option<PathBuf>) {
    let mut first = None;
    let mut v2 = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let (mnt, fstype, opts) = (PathBuf::from(f[1]), f[2], f[3]);
        if fstype == "cgroup2" && v2.is_none() {
            v2 = Some(mnt.clone());
        }
        if first.is_none() {
            if fstype == "cgroup" && opts.split(',').any(|o| o == "blkio") {
                first = Some(Hierarchy::V1 { root: mnt });
            } else if fstype == "cgroup2" {
                first = Some(Hierarchy::V2 { root: mnt });
            }
        }
    }
    (first, v2)
}

/// The hierarchy to use on this machine, with a note saying why; an error
/// when fio would pick cgroup v2 but its io controller is unavailable.
pub fn detect() -> Result<(Hierarchy, String), String> {
    let mounts = fs::read_to_string("/proc/mounts").map_err(|e| format!("/proc/mounts: {e}"))?;
    match detect_from(&mounts) {
        (Some(h @ Hierarchy::V1 { .. }), v2) => {
            let note = match v2 {
                Some(v2) => format!(
                    "cgroups: v1 blkio at {} (fio uses it); cgroup v2 at {} cannot be used for I/O: its io controller is unavailable while blkio is bound to v1",
                    h.root().display(),
                    v2.display()
                ),
                None => format!("cgroups: v1 blkio at {}", h.root().display()),
            };
            Ok((h, note))
        }
        (Some(Hierarchy::V2 { root }), _) => {
            let ctl = fs::read_to_string(root.join("cgroup.controllers")).unwrap_or_default();
            if !ctl.split_whitespace().any(|c| c == "io") {
                return Err(format!(
                    "the job uses cgroups, fio would use cgroup v2 at {}, and its io controller is not available there (cgroup.controllers: '{}'); is blkio bound to a v1 hierarchy?",
                    root.display(),
                    ctl.trim()
                ));
            }
            Ok((
                Hierarchy::V2 { root: root.clone() },
                format!("cgroups: v2 at {} (io controller)", root.display()),
            ))
        }
        (None, _) => Err(
            "the job uses cgroups, but neither a cgroup v1 blkio hierarchy nor cgroup v2 is mounted"
                .into(),
        ),
    }
}

/// A group name fio can take: short (fio builds the path in a 64-byte
/// buffer), unique to this process, only safe characters.
pub fn group_name(pid: u32, job_cgroup: &str) -> String {
    let clean: String = job_cgroup
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(20)
        .collect();
    format!("elv{pid}_{clean}")
}

/// Groups created for one lab session.
pub struct Groups {
    pub hierarchy: Hierarchy,
    /// (job's cgroup name, directory created, weight).
    pub groups: Vec<(String, PathBuf, Option<u32>)>,
    /// cgroup v2: we enabled `+io` in the root's subtree_control.
    enabled_io: bool,
    /// Weight files written: (path, value) for the report.
    pub written: Vec<(String, String)>,
    removed: bool,
}

impl Groups {
    /// Create one group per distinct job cgroup name and write its weight.
    /// Each directory (and `+io`) goes into the journal before it is made.
    pub fn create(
        hierarchy: Hierarchy,
        wanted: &[(String, Option<u32>)],
        journal: Option<&super::journal::Journal>,
    ) -> Result<Groups, String> {
        let mut g = Groups {
            hierarchy,
            groups: Vec::new(),
            enabled_io: false,
            written: Vec::new(),
            removed: false,
        };
        if let Hierarchy::V2 { root } = &g.hierarchy {
            let sub = fs::read_to_string(root.join("cgroup.subtree_control")).unwrap_or_default();
            if !sub.split_whitespace().any(|c| c == "io") {
                let p = root.join("cgroup.subtree_control");
                if let Some(j) = journal {
                    j.set_io_enabled(&p)?;
                }
                fs::write(&p, "+io")
                    .map_err(|e| format!("writing '+io' to {}: {e}", p.display()))?;
                g.enabled_io = true;
            }
        }
        let pid = std::process::id();
        for (name, weight) in wanted {
            if g.groups.iter().any(|(n, _, _)| n == name) {
                continue;
            }
            let mut dir_name = group_name(pid, name);
            let mut k = 1;
            while g.groups.iter().any(|(_, d, _)| d.ends_with(&dir_name)) {
                k += 1;
                dir_name = format!("{}{k}", group_name(pid, name));
            }
            let dir = g.hierarchy.root().join(&dir_name);
            if let Some(j) = journal {
                j.add_cgroup(&dir)?;
            }
            fs::create_dir(&dir).map_err(|e| format!("creating cgroup {}: {e}", dir.display()))?;
            g.groups.push((name.clone(), dir.clone(), *weight));
            if let Some(w) = weight {
                g.write_weight(&dir, *w)?;
            }
        }
        Ok(g)
    }

    /// Write `w` to the group's BFQ weight file and its plain blkcg one
    /// (CFQ's on v1, io.cost's on v2), those of them that exist.
    fn write_weight(&mut self, dir: &Path, w: u32) -> Result<(), String> {
        let version = self.hierarchy.version();
        let files = [WeightPolicy::Bfq, WeightPolicy::Blkcg].map(|p| weight_file_for(version, p));
        let present: Vec<_> = files.iter().filter(|f| dir.join(f.name).exists()).collect();
        // The kernel would refuse a weight out of range; say why before
        // writing any file.
        if let Some(f) = present.iter().find(|f| !(f.min..=f.max).contains(&w)) {
            return Err(format!(
                "{}: weight {w} out of range {}..{}",
                dir.join(f.name).display(),
                f.min,
                f.max
            ));
        }
        let any = !present.is_empty();
        for f in present {
            let p = dir.join(f.name);
            let v = f.default_write(w);
            fs::write(&p, &v).map_err(|e| format!("writing '{v}' to {}: {e}", p.display()))?;
            self.written.push((p.display().to_string(), v));
        }
        if !any {
            let names: Vec<&str> = files.iter().map(|f| f.name).collect();
            super::say::line(&format!(
                "elevator: warning: {}: no weight file ({}); weight {w} ignored",
                dir.display(),
                names.join(", ")
            ));
        }
        Ok(())
    }

    /// The path fio's `cgroup=` needs for a job's cgroup name.
    pub fn fio_path(&self, job_cgroup: &str) -> Option<String> {
        self.groups
            .iter()
            .find(|(n, _, _)| n == job_cgroup)
            .and_then(|(_, d, _)| d.strip_prefix(self.hierarchy.root()).ok())
            .map(|p| p.display().to_string())
    }

    /// Remove the groups (retrying while the last tasks leave) and undo `+io`.
    pub fn remove(&mut self) -> Vec<String> {
        self.removed = true;
        let mut errors = Vec::new();
        for (_, dir, _) in self.groups.iter().rev() {
            let mut last = None;
            for _ in 0..50 {
                match fs::remove_dir(dir) {
                    Ok(()) => {
                        last = None;
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        last = None;
                        break;
                    }
                    Err(e) => {
                        last = Some(e);
                        std::thread::sleep(std::time::Duration::from_millis(100));
                    }
                }
            }
            if let Some(e) = last {
                errors.push(format!("removing cgroup {}: {e}", dir.display()));
            }
        }
        if self.enabled_io {
            let p = self.hierarchy.root().join("cgroup.subtree_control");
            if let Err(e) = fs::write(&p, "-io") {
                errors.push(format!("writing '-io' to {}: {e}", p.display()));
            }
        }
        errors
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        if !self.removed {
            for e in self.remove() {
                super::say::line(&format!("elevator: warning: {e}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cgroup::files::{BLKIO_BFQ_WEIGHT, BLKIO_WEIGHT, IO_BFQ_WEIGHT};

    const HERE: &str = "\
tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
";

    #[test]
    fn v1_blkio_first_like_fio() {
        let (h, v2) = detect_from(HERE);
        assert_eq!(
            h,
            Some(Hierarchy::V1 {
                root: "/sys/fs/cgroup/blkio".into()
            })
        );
        assert_eq!(v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
    }

    #[test]
    fn v2_when_it_comes_first_or_alone() {
        let (h, _) = detect_from("cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n");
        assert_eq!(
            h,
            Some(Hierarchy::V2 {
                root: "/sys/fs/cgroup".into()
            })
        );
        let (h, _) = detect_from("cgroup /c/cpu cgroup rw,cpu 0 0\n");
        assert_eq!(h, None);
        // "blkio" must be a whole mount option.
        let (h, _) = detect_from("cgroup /c/x cgroup rw,noblkio 0 0\n");
        assert_eq!(h, None);
    }

    #[test]
    fn weights_go_to_the_versions_files() {
        let tmp = super::super::TempDir::new("elevator-lab-cg").unwrap();
        let dir = tmp.path().to_path_buf();
        let v1_files = [BLKIO_BFQ_WEIGHT.name, BLKIO_WEIGHT.name];
        for f in v1_files {
            fs::write(dir.join(f), "").unwrap();
        }
        let mut g = Groups {
            hierarchy: Hierarchy::V1 { root: dir.clone() },
            groups: Vec::new(),
            enabled_io: false,
            written: Vec::new(),
            removed: true,
        };
        g.write_weight(&dir, 800).unwrap();
        let written: Vec<&str> = g.written.iter().map(|(p, _)| p.as_str()).collect();
        let expect: Vec<String> = v1_files
            .iter()
            .map(|f| dir.join(f).display().to_string())
            .collect();
        assert_eq!(written, expect);
        assert_eq!(fs::read_to_string(dir.join(v1_files[0])).unwrap(), "800");
        // Out of blkio.weight's range (10..1000): refused before writing.
        let e = g.write_weight(&dir, 5).unwrap_err();
        assert_eq!(fs::read_to_string(dir.join(v1_files[0])).unwrap(), "800");
        assert!(
            e.ends_with("blkio.weight: weight 5 out of range 10..1000"),
            "{e}"
        );
        // v2: "default N" into the files that exist.
        let v2 = dir.join("v2");
        fs::create_dir_all(&v2).unwrap();
        fs::write(v2.join(IO_BFQ_WEIGHT.name), "").unwrap();
        g.hierarchy = Hierarchy::V2 { root: dir.clone() };
        g.written.clear();
        g.write_weight(&v2, 300).unwrap();
        assert_eq!(g.written.len(), 1);
        assert_eq!(
            fs::read_to_string(v2.join(IO_BFQ_WEIGHT.name)).unwrap(),
            "default 300"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_are_short_and_safe() {
        let n = group_name(4_194_304, "a/b c");
        assert_eq!(n, "elv4194304_a_b_c");
        let long = group_name(4_194_304, &"x".repeat(100));
        assert!(("/sys/fs/cgroup/blkio/".len() + long.len()) < 64, "{long}");
    }
}
