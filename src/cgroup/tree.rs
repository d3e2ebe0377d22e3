//! The cgroup hierarchy of a run and the weights written to it.
//!
//! Groups are named by paths relative to the controller's root (`a/b/c`;
//! leading, trailing and doubled slashes ignored; the empty path is the
//! root) and created with their ancestors on first use, like `mkdir -p`.
//! Ids are indices in creation order (0 = root), so they are stable and
//! deterministic; requests carry them as `u16`.
//!
//! Each group holds, per policy, the weight written to its file (or none:
//! the file's default) and an optional per-device override. The simulation
//! has one device, so `MAJ:MIN N` applies to it whatever the numbers are;
//! they are kept only to be shown back.
//!
//! Writes have an origin: a job's fio `cgroup_weight=` ([`Origin::Job`]) or
//! the user's `--set cgroup:PATH/FILE=VALUE` ([`Origin::User`]). The user's
//! word is the last: a job's write never replaces a value the user set,
//! whichever comes first.

use std::collections::BTreeMap;

use super::files::{
    fio_weight_file, weight_file, CgroupVersion, DevNum, ParseError, WeightFile, WeightPolicy,
    WeightWrite, WriteSyntax, NR_POLICIES, WEIGHT_FILES,
};
use super::CgroupError;

/// How many groups a tree can hold: ids are `u16`, the root included.
pub const MAX_GROUPS: usize = u16::MAX as usize + 1;

/// The prefix of a `--set` key that writes a cgroup file.
pub const SET_PREFIX: &str = "cgroup:";

/// `NAME_MAX` (include/uapi/linux/limits.h): the longest group name.
const NAME_MAX: usize = 255;

/// Who wrote a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// A job's fio option (`cgroup_weight=`).
    Job,
    /// The user (`--set cgroup:...`): never replaced by a job's write.
    User,
}

/// One policy's weight in one group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
struct Slot {
    /// The group's weight as written (`N` / `default N`).
    set: Option<(u32, Origin)>,
    /// The device override (`MAJ:MIN N`).
    dev: Option<(DevNum, u32, Origin)>,
    /// What the scheduler sees: the override, else the written weight, else
    /// the file's default; kept up to date so reading it is O(1).
    effective: u32,
}

#[derive(Clone, Debug)]
struct Group {
    /// Normalised path ("" for the root).
    path: String,
    parent: u16,
    depth: u16,
    children: Vec<u16>,
    slots: [Slot; NR_POLICIES],
}

/// The cgroup hierarchy of a run, for one interface version.
#[derive(Clone, Debug)]
pub struct CgroupTree {
    version: CgroupVersion,
    groups: Vec<Group>,
    /// Path → id. A BTreeMap: nothing here ever iterates in hash order.
    by_path: BTreeMap<String, u16>,
}

impl Default for CgroupTree {
    /// A v1 tree with only the root.
    fn default() -> Self {
        CgroupTree::new(CgroupVersion::default())
    }
}

/// The components of a group path, checked: no `.`/`..`, no newline
/// (`cgroup_mkdir` refuses it), at most `NAME_MAX` bytes, and not the name
/// of a weight file (the directory would clash with the file).
fn components(path: &str) -> Result<Vec<&str>, CgroupError> {
    let bad = |reason: String| CgroupError::BadPath {
        path: path.to_string(),
        reason,
    };
    let mut out = Vec::new();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        if c == "." || c == ".." {
            return Err(bad(format!("'{c}' is not a group name")));
        }
        if c.contains('\n') {
            return Err(bad("a group name cannot contain a newline".into()));
        }
        if c.len() > NAME_MAX {
            return Err(bad(format!("a group name is at most {NAME_MAX} bytes")));
        }
        if WEIGHT_FILES.iter().any(|f| f.name == c) {
            return Err(bad(format!("'{c}' is a weight file, not a group")));
        }
        out.push(c);
    }
    Ok(out)
}

/// Split a `--set` key `cgroup:PATH/FILE` into the group path and the file
/// (the last component, which must be a known weight file). `cgroup:FILE`
/// names the root's file.
pub fn parse_set_key(key: &str) -> Result<(String, &'static WeightFile), CgroupError> {
    let rest = key
        .strip_prefix(SET_PREFIX)
        .ok_or_else(|| CgroupError::BadKey {
            key: key.to_string(),
        })?;
    let rest = rest.trim_end_matches('/');
    let (path, name) = match rest.rfind('/') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => ("", rest),
    };
    if name.is_empty() {
        return Err(CgroupError::BadKey {
            key: key.to_string(),
        });
    }
    let file = weight_file(name).ok_or_else(|| CgroupError::UnknownFile {
        file: name.to_string(),
    })?;
    let path = components(path)?.join("/");
    Ok((path, file))
}

impl CgroupTree {
    /// A tree with only the root group.
    pub fn new(version: CgroupVersion) -> CgroupTree {
        let mut root = Group {
            path: String::new(),
            parent: 0,
            depth: 0,
            children: Vec::new(),
            slots: [Slot::default(); NR_POLICIES],
        };
        for policy in [WeightPolicy::Blkcg, WeightPolicy::Bfq] {
            root.slots[policy as usize].effective =
                super::weight_file_for(version, policy).initial(true);
        }
        let mut by_path = BTreeMap::new();
        by_path.insert(String::new(), 0);
        CgroupTree {
            version,
            groups: vec![root],
            by_path,
        }
    }

    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// Number of groups, the root included.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// Always false: the root group always exists.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The id of the group at `path`, if it exists (the path is normalised
    /// first; an invalid path names no group).
    pub fn lookup(&self, path: &str) -> Option<u16> {
        let key = components(path).ok()?.join("/");
        self.by_path.get(&key).copied()
    }

    /// The id of the group at `path`, created with its missing ancestors.
    pub fn get_or_create(&mut self, path: &str) -> Result<u16, CgroupError> {
        let comps = components(path)?;
        let full = comps.join("/");
        if let Some(&id) = self.by_path.get(&full) {
            return Ok(id);
        }
        // Count the missing groups first so a failure creates none of them.
        let mut prefixes = Vec::with_capacity(comps.len());
        for i in 1..=comps.len() {
            prefixes.push(comps[..i].join("/"));
        }
        let missing = prefixes
            .iter()
            .filter(|p| !self.by_path.contains_key(*p))
            .count();
        if self.groups.len() + missing > MAX_GROUPS {
            return Err(CgroupError::TooManyGroups { path: full });
        }
        let mut parent = 0u16;
        for p in prefixes {
            parent = match self.by_path.get(&p) {
                Some(&id) => id,
                None => self.push_child(parent, p),
            };
        }
        Ok(parent)
    }

    fn push_child(&mut self, parent: u16, path: String) -> u16 {
        // Capacity was checked by the caller.
        let id = self.groups.len() as u16;
        let mut slots = [Slot::default(); NR_POLICIES];
        for policy in [WeightPolicy::Blkcg, WeightPolicy::Bfq] {
            slots[policy as usize].effective =
                super::weight_file_for(self.version, policy).initial(false);
        }
        let depth = self.groups[parent as usize].depth + 1;
        self.groups[parent as usize].children.push(id);
        self.by_path.insert(path.clone(), id);
        self.groups.push(Group {
            path,
            parent,
            depth,
            children: Vec::new(),
            slots,
        });
        id
    }

    /// The group's parent; `None` for the root (and unknown ids).
    pub fn parent(&self, id: u16) -> Option<u16> {
        match id {
            0 => None,
            _ => self.groups.get(id as usize).map(|g| g.parent),
        }
    }

    /// The group's children, in creation order.
    pub fn children(&self, id: u16) -> &[u16] {
        self.groups
            .get(id as usize)
            .map_or(&[][..], |g| &g.children[..])
    }

    /// Depth below the root (root = 0).
    pub fn depth(&self, id: u16) -> Option<u16> {
        self.groups.get(id as usize).map(|g| g.depth)
    }

    /// The normalised path ("" for the root).
    pub fn path(&self, id: u16) -> Option<&str> {
        self.groups.get(id as usize).map(|g| g.path.as_str())
    }

    /// The weight a scheduler of `policy` sees for the group: its device
    /// override, else the value written to its file, else the file's
    /// default (the root's own default where the kernel gives it one).
    /// O(1). An id this tree did not hand out reads as a new group.
    pub fn weight(&self, id: u16, policy: WeightPolicy) -> u32 {
        match self.groups.get(id as usize) {
            Some(g) => g.slots[policy as usize].effective,
            None => super::weight_file_for(self.version, policy).default,
        }
    }

    /// The per-device override the group has for `policy`, if any.
    pub fn device_weight(&self, id: u16, policy: WeightPolicy) -> Option<(DevNum, u32)> {
        let g = self.groups.get(id as usize)?;
        g.slots[policy as usize].dev.map(|(d, w, _)| (d, w))
    }

    /// `--set cgroup:PATH/FILE=VALUE`: write `value` to `file` of the group
    /// at `path` (created if new), as the user. Nothing changes on error.
    pub fn set_file(&mut self, path: &str, file: &str, value: &str) -> Result<(), CgroupError> {
        let f = weight_file(file).ok_or_else(|| CgroupError::UnknownFile {
            file: file.to_string(),
        })?;
        let comps = components(path)?;
        let path = comps.join("/");
        let w = self.check(&path, f, value)?;
        let id = self.get_or_create(&path)?;
        self.apply(id, f, w, Origin::User);
        Ok(())
    }

    /// `set_file` from a whole `--set` key (`cgroup:PATH/FILE`).
    pub fn set_key(&mut self, key: &str, value: &str) -> Result<(), CgroupError> {
        let (path, file) = parse_set_key(key)?;
        self.set_file(&path, file.name, value)
    }

    /// fio's `cgroup=` and `cgroup_weight=` for one job: the id of the
    /// group the job runs in. fio sets a group up only when `cgroup=` is
    /// given (backend.c), so a weight alone leaves the job in the root;
    /// the weight goes to [`fio_weight_file`] (`blkio.weight`), unless the
    /// user set that file; on v2 fio refuses the option.
    ///
    /// Decision: the weight also goes to `blkio.bfq.weight` (unless the
    /// user set it), as the lab writes it: on a kernel where BFQ owns the
    /// group weight there is no `blkio.weight` and fio's own write fails
    /// (reference: real-kernel-lab), so the lab gives the job's weight to
    /// BFQ's file; the simulation does the same, so `validate` compares
    /// like with like and a job file's weights mean the same under every
    /// scheduler.
    pub fn join_fio(
        &mut self,
        cgroup: Option<&str>,
        weight: Option<u32>,
    ) -> Result<u16, CgroupError> {
        let Some(path) = cgroup else {
            return Ok(0);
        };
        let file = match weight {
            Some(_) => Some(fio_weight_file(self.version).ok_or(CgroupError::FioWeightOnV2)?),
            None => None,
        };
        let comps = components(path)?;
        let path = comps.join("/");
        let w = match (file, weight) {
            // fio writes "%u".
            (Some(f), Some(w)) => Some((f, self.check(&path, f, &w.to_string())?)),
            _ => None,
        };
        let bfq = match (file, weight) {
            (Some(_), Some(w)) => {
                let f = super::weight_file_for(self.version, WeightPolicy::Bfq);
                Some((f, self.check(&path, f, &w.to_string())?))
            }
            _ => None,
        };
        let id = self.get_or_create(&path)?;
        for (f, w) in w.into_iter().chain(bfq) {
            self.apply(id, f, w, Origin::Job);
        }
        Ok(id)
    }

    /// Whether `value` may be written to `f` in the group at (normalised)
    /// `path`, and what it asks for.
    fn check(
        &self,
        path: &str,
        f: &'static WeightFile,
        value: &str,
    ) -> Result<WeightWrite, CgroupError> {
        if f.version != self.version {
            return Err(CgroupError::WrongVersion {
                file: f.name,
                file_version: f.version,
                run_version: self.version,
            });
        }
        if path.is_empty() && !f.on_root {
            return Err(CgroupError::NotOnRoot { file: f.name });
        }
        let shown = value.trim().to_string();
        let out_of_range = || CgroupError::OutOfRange {
            path: path.to_string(),
            file: f.name,
            value: shown.clone(),
            min: f.min,
            max: f.max,
        };
        let w = match f.parse(value) {
            Ok(w) => w,
            Err(ParseError::Overflow) => return Err(out_of_range()),
            Err(ParseError::Invalid) => {
                return Err(CgroupError::Invalid {
                    path: path.to_string(),
                    file: f.name,
                    value: shown,
                    forms: f.forms(),
                    min: f.min,
                    max: f.max,
                })
            }
        };
        if let Some(v) = w.weight() {
            if v < u64::from(f.min) || v > u64::from(f.max) {
                return Err(out_of_range());
            }
        }
        Ok(w)
    }

    /// Store a checked write. A job's write leaves the user's values alone.
    fn apply(&mut self, id: u16, f: &WeightFile, w: WeightWrite, origin: Origin) {
        let is_root = id == 0;
        let slot = &mut self.groups[id as usize].slots[f.policy as usize];
        let may = |cur: Option<Origin>| !(origin == Origin::Job && cur == Some(Origin::User));
        // Checked against the range, which fits in u32.
        let weight = |v: u64| v as u32;
        match w {
            WeightWrite::Default(v) => {
                if may(slot.set.map(|s| s.1)) {
                    slot.set = Some((weight(v), origin));
                }
                // BFQ's default write drops the device override
                // (bfq_io_set_weight_legacy → bfq_group_set_weight(.., 0));
                // CFQ and io.cost keep it.
                if f.syntax == WriteSyntax::BfqDfl && may(slot.dev.map(|d| d.2)) {
                    slot.dev = None;
                }
            }
            WeightWrite::Device { dev, weight: v } => {
                if may(slot.dev.map(|d| d.2)) {
                    slot.dev = Some((dev, weight(v), origin));
                }
            }
            WeightWrite::DeviceDefault { .. } => {
                if may(slot.dev.map(|d| d.2)) {
                    slot.dev = None;
                }
            }
        }
        slot.effective = match (slot.dev, slot.set) {
            (Some((_, w, _)), _) => w,
            (None, Some((w, _))) => w,
            (None, None) => f.initial(is_root),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::super::files::{BLKIO_BFQ_WEIGHT, BLKIO_WEIGHT, IO_BFQ_WEIGHT, IO_WEIGHT};
    use super::*;
    use CgroupVersion::{V1, V2};
    use WeightPolicy::{Bfq, Blkcg};

    #[test]
    fn groups_are_created_with_their_ancestors() {
        let mut t = CgroupTree::default();
        assert_eq!((t.len(), t.version()), (1, V1));
        let c = t.get_or_create("a/b/c").unwrap();
        assert_eq!(c, 3);
        let (a, b) = (t.lookup("a").unwrap(), t.lookup("a/b").unwrap());
        assert_eq!((a, b), (1, 2));
        assert_eq!(t.parent(c), Some(b));
        assert_eq!(t.parent(b), Some(a));
        assert_eq!(t.parent(a), Some(0));
        assert_eq!(t.parent(0), None);
        assert_eq!(t.depth(c), Some(3));
        assert_eq!(t.depth(0), Some(0));
        assert_eq!(t.path(c), Some("a/b/c"));
        assert_eq!(t.path(0), Some(""));
        assert_eq!(t.children(0), &[a]);
        assert_eq!(t.children(c), &[] as &[u16]);
        // Siblings in creation order; existing groups keep their ids.
        let d = t.get_or_create("a/d").unwrap();
        let e = t.get_or_create("a/b/e").unwrap();
        assert_eq!((d, e), (4, 5));
        assert_eq!(t.children(a), &[b, d]);
        assert_eq!(t.children(b), &[c, e]);
        assert_eq!(t.get_or_create("a/b/c").unwrap(), c);
        assert_eq!(t.len(), 6);
        assert!(!t.is_empty());
        // Unknown ids.
        assert_eq!((t.parent(99), t.depth(99), t.path(99)), (None, None, None));
        assert!(t.children(99).is_empty());
    }

    #[test]
    fn paths_are_normalised() {
        let mut t = CgroupTree::default();
        let a = t.get_or_create("test1").unwrap();
        for p in ["/test1", "test1/", "//test1//", "/test1/"] {
            assert_eq!(t.get_or_create(p).unwrap(), a, "{p}");
            assert_eq!(t.lookup(p), Some(a), "{p}");
        }
        let b = t.get_or_create("/x//y/").unwrap();
        assert_eq!(t.path(b), Some("x/y"));
        for root in ["", "/", "//"] {
            assert_eq!(t.get_or_create(root).unwrap(), 0);
        }
        assert_eq!(t.lookup("nope"), None);
        assert_eq!(t.len(), 4);
    }

    #[test]
    fn bad_paths_are_refused_without_creating_anything() {
        let mut t = CgroupTree::default();
        for p in [
            "a/../b",
            "./a",
            "a\nb",
            "a/blkio.weight",
            "io.bfq.weight",
            &"x".repeat(256),
        ] {
            let e = t.get_or_create(p).unwrap_err();
            assert!(matches!(e, CgroupError::BadPath { .. }), "{p:?}: {e}");
            assert_eq!(t.lookup(p), None);
        }
        assert_eq!(t.len(), 1);
        assert!(t.get_or_create(&"x".repeat(255)).is_ok());
        let e = t.get_or_create("a/..").unwrap_err().to_string();
        assert_eq!(e, "cgroup path 'a/..': '..' is not a group name");
    }

    #[test]
    fn group_limit_is_the_id_space() {
        let mut t = CgroupTree::default();
        for i in 1..MAX_GROUPS - 1 {
            t.get_or_create(&format!("g{i}")).unwrap();
        }
        assert_eq!(t.len(), MAX_GROUPS - 1);
        // Two new groups do not fit in the one id left: nothing is created.
        let e = t.get_or_create("last/child").unwrap_err();
        assert!(matches!(e, CgroupError::TooManyGroups { .. }));
        assert!(e.to_string().contains("more than 65536 cgroups"), "{e}");
        assert_eq!(t.lookup("last"), None);
        assert_eq!(t.get_or_create("last").unwrap(), u16::MAX);
        assert_eq!(t.len(), MAX_GROUPS);
        assert!(t.get_or_create("one/more").is_err());
        // Existing groups are still found.
        assert_eq!(t.get_or_create("g1").unwrap(), 1);
    }

    #[test]
    fn defaults_per_version_and_policy() {
        let mut t1 = CgroupTree::new(V1);
        let g = t1.get_or_create("g").unwrap();
        assert_eq!((t1.weight(0, Blkcg), t1.weight(g, Blkcg)), (1000, 500));
        assert_eq!((t1.weight(0, Bfq), t1.weight(g, Bfq)), (100, 100));
        let mut t2 = CgroupTree::new(V2);
        let g = t2.get_or_create("g").unwrap();
        assert_eq!((t2.weight(0, Blkcg), t2.weight(g, Blkcg)), (200, 100));
        assert_eq!((t2.weight(0, Bfq), t2.weight(g, Bfq)), (100, 100));
        assert_eq!(
            t2.weight(999, Blkcg),
            100,
            "an unknown id reads as a new group"
        );
    }

    /// Every file's range edges, on a child group.
    #[test]
    fn range_edges() {
        for f in WEIGHT_FILES {
            let mut t = CgroupTree::new(f.version);
            let g = t.get_or_create("g").unwrap();
            let set = |t: &mut CgroupTree, v: u64| t.set_file("g", f.name, &v.to_string());
            for v in [f.min, f.max] {
                set(&mut t, u64::from(v)).unwrap();
                assert_eq!(t.weight(g, f.policy), v, "{}", f.name);
            }
            for v in [u64::from(f.min) - 1, u64::from(f.max) + 1] {
                let e = set(&mut t, v).unwrap_err();
                assert_eq!(
                    e.to_string(),
                    format!(
                        "cgroup g: {}: {v} out of range {}..{}",
                        f.name, f.min, f.max
                    )
                );
                assert_eq!(t.weight(g, f.policy), f.max, "unchanged by a refused write");
            }
            for bad in ["abc", "-1", "x1"] {
                let e = t.set_file("g", f.name, bad).unwrap_err();
                assert!(
                    matches!(e, CgroupError::Invalid { .. }),
                    "{} {bad}: {e}",
                    f.name
                );
                let m = e.to_string();
                assert!(
                    m.starts_with(&format!("cgroup g: {}: '{bad}'", f.name)),
                    "{m}"
                );
                assert!(m.contains(&format!("range {}..{}", f.min, f.max)), "{m}");
            }
            let e = t
                .set_file("g", f.name, "99999999999999999999999")
                .unwrap_err();
            assert!(
                matches!(e, CgroupError::OutOfRange { .. }),
                "{}: {e}",
                f.name
            );
        }
    }

    #[test]
    fn issue_example_messages() {
        let mut t = CgroupTree::new(V2);
        let e = t.set_file("test1", "io.bfq.weight", "20000").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cgroup test1: io.bfq.weight: 20000 out of range 1..1000"
        );
        assert_eq!(t.lookup("test1"), None, "a refused write creates no group");
        let e = t.set_file("test1", "blkio.weight", "300").unwrap_err();
        assert_eq!(
            e.to_string(),
            "blkio.weight is a cgroup v1 file; this run uses cgroup v2 (--cgroup-version 2)"
        );
        let mut t = CgroupTree::new(V1);
        let e = t.set_file("test1", "io.weight", "300").unwrap_err();
        assert_eq!(
            e.to_string(),
            "io.weight is a cgroup v2 file; this run uses cgroup v1 (--cgroup-version 1)"
        );
        let e = t.set_file("test1", "blkio.wieght", "300").unwrap_err();
        assert_eq!(
            e.to_string(),
            "no cgroup weight file 'blkio.wieght'; known: blkio.weight, blkio.bfq.weight (cgroup v1), io.weight, io.bfq.weight (cgroup v2)"
        );
    }

    #[test]
    fn v2_default_and_device_forms() {
        let mut t = CgroupTree::new(V2);
        t.set_file("g", "io.bfq.weight", "default 300").unwrap();
        let g = t.lookup("g").unwrap();
        assert_eq!(t.weight(g, Bfq), 300);
        assert_eq!(t.weight(g, Blkcg), 100, "policies are separate");
        t.set_file("g", "io.bfq.weight", "8:16 700").unwrap();
        assert_eq!(t.weight(g, Bfq), 700);
        assert_eq!(
            t.device_weight(g, Bfq),
            Some((
                DevNum {
                    major: 8,
                    minor: 16
                },
                700
            ))
        );
        t.set_file("g", "io.bfq.weight", "8:16 default").unwrap();
        assert_eq!((t.weight(g, Bfq), t.device_weight(g, Bfq)), (300, None));
        // BFQ: writing the group weight drops the override.
        t.set_file("g", "io.bfq.weight", "8:16 700").unwrap();
        t.set_file("g", "io.bfq.weight", "200").unwrap();
        assert_eq!((t.weight(g, Bfq), t.device_weight(g, Bfq)), (200, None));
        // io.cost keeps it.
        t.set_file("g", "io.weight", "8:0 5000").unwrap();
        t.set_file("g", "io.weight", "default 50").unwrap();
        assert_eq!(t.weight(g, Blkcg), 5000);
        t.set_file("g", "io.weight", "8:0 default").unwrap();
        assert_eq!(t.weight(g, Blkcg), 50);
        // Device values are range-checked too.
        let e = t.set_file("g", "io.bfq.weight", "8:0 1001").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cgroup g: io.bfq.weight: 8:0 1001 out of range 1..1000"
        );
        let e = t.set_file("g", "io.bfq.weight", "8:0 0").unwrap_err();
        assert!(matches!(e, CgroupError::OutOfRange { .. }));
        let e = t.set_file("g", "io.weight", "default").unwrap_err();
        assert!(e.to_string().contains("\"MAJ:MIN default\""), "{e}");
    }

    #[test]
    fn root_files() {
        // v1 CFQ gives the root blkio.weight (its leaf weight), default 1000.
        let mut t = CgroupTree::new(V1);
        t.set_file("/", "blkio.weight", "10").unwrap();
        assert_eq!(t.weight(0, Blkcg), 10);
        let e = t.set_file("", "blkio.weight", "1001").unwrap_err();
        assert_eq!(
            e.to_string(),
            "cgroup /: blkio.weight: 1001 out of range 10..1000"
        );
        // BFQ's file and every v2 file are not on the root.
        let e = t.set_file("", "blkio.bfq.weight", "100").unwrap_err();
        assert_eq!(
            e,
            CgroupError::NotOnRoot {
                file: "blkio.bfq.weight"
            }
        );
        assert!(e
            .to_string()
            .starts_with("the root cgroup has no blkio.bfq.weight"));
        let mut t = CgroupTree::new(V2);
        for f in [&IO_WEIGHT, &IO_BFQ_WEIGHT] {
            let e = t.set_file("/", f.name, "100").unwrap_err();
            assert_eq!(e, CgroupError::NotOnRoot { file: f.name });
        }
        assert_eq!(t.weight(0, Blkcg), 200);
    }

    #[test]
    fn set_keys() {
        assert_eq!(
            parse_set_key("cgroup:test1/io.bfq.weight"),
            Ok(("test1".to_string(), &IO_BFQ_WEIGHT))
        );
        assert_eq!(
            parse_set_key("cgroup:/a//b/blkio.weight"),
            Ok(("a/b".to_string(), &BLKIO_WEIGHT))
        );
        assert_eq!(
            parse_set_key("cgroup:blkio.weight"),
            Ok((String::new(), &BLKIO_WEIGHT))
        );
        assert_eq!(
            parse_set_key("cgroup:a/blkio.bfq.weight/"),
            Ok(("a".to_string(), &BLKIO_BFQ_WEIGHT))
        );
        for k in [
            "test1/io.weight",
            "cgroup:",
            "cgroup:/",
            "iosched:slice_idle",
        ] {
            let e = parse_set_key(k).unwrap_err();
            assert!(matches!(e, CgroupError::BadKey { .. }), "{k}: {e}");
            assert!(e.to_string().contains("expected cgroup:PATH/FILE"), "{e}");
        }
        let e = parse_set_key("cgroup:test1").unwrap_err();
        assert_eq!(
            e,
            CgroupError::UnknownFile {
                file: "test1".into()
            }
        );
        let e = parse_set_key("cgroup:a/../io.weight").unwrap_err();
        assert!(matches!(e, CgroupError::BadPath { .. }));

        let mut t = CgroupTree::new(V2);
        t.set_key("cgroup:test1/io.bfq.weight", "300").unwrap();
        assert_eq!(t.weight(t.lookup("test1").unwrap(), Bfq), 300);
    }

    #[test]
    fn fio_options() {
        let mut t = CgroupTree::new(V1);
        // cgroup_weight= alone: fio sets up no group.
        assert_eq!(t.join_fio(None, Some(800)), Ok(0));
        assert_eq!(t.weight(0, Blkcg), 1000);
        let a = t.join_fio(Some("test1"), Some(1000)).unwrap();
        let b = t.join_fio(Some("/test1/"), None).unwrap();
        assert_eq!(a, b);
        assert_eq!(t.weight(a, Blkcg), 1000);
        assert_eq!(
            t.weight(a, Bfq),
            1000,
            "the lab gives fio's weight to BFQ too"
        );
        // A later job's weight replaces an earlier one, like fio's writes.
        t.join_fio(Some("test1"), Some(200)).unwrap();
        assert_eq!((t.weight(a, Blkcg), t.weight(a, Bfq)), (200, 200));
        // A user's BFQ weight stands against a job's.
        t.set_key("cgroup:test1/blkio.bfq.weight", "30").unwrap();
        t.join_fio(Some("test1"), Some(400)).unwrap();
        assert_eq!((t.weight(a, Blkcg), t.weight(a, Bfq)), (400, 30));
        let c = t.join_fio(Some("a/b"), Some(100)).unwrap();
        assert_eq!((t.path(c), t.parent(c)), (Some("a/b"), t.lookup("a")));
        // On v2 fio refuses cgroup_weight=.
        let mut t2 = CgroupTree::new(V2);
        let e = t2.join_fio(Some("g"), Some(500)).unwrap_err();
        assert_eq!(e, CgroupError::FioWeightOnV2);
        assert!(e
            .to_string()
            .starts_with("cgroup_weight= does not work with cgroup v2"));
        assert_eq!(t2.lookup("g"), None);
        assert_eq!(t2.join_fio(Some("g"), None), Ok(1));
    }

    #[test]
    fn the_users_write_wins_over_fio() {
        // --set first, jobs after.
        let mut t = CgroupTree::new(V1);
        t.set_key("cgroup:test1/blkio.weight", "300").unwrap();
        let g = t.join_fio(Some("test1"), Some(1000)).unwrap();
        assert_eq!(t.weight(g, Blkcg), 300);
        // Jobs first, --set after.
        let mut t = CgroupTree::new(V1);
        let g = t.join_fio(Some("test1"), Some(1000)).unwrap();
        t.set_key("cgroup:test1/blkio.weight", "300").unwrap();
        assert_eq!(t.weight(g, Blkcg), 300);
        t.join_fio(Some("test1"), Some(800)).unwrap();
        assert_eq!(t.weight(g, Blkcg), 300);
        // A job's out-of-range weight is still an error (fio's own range
        // is 100..1000, inside blkio.weight's).
        let e = t.join_fio(Some("test1"), Some(5)).unwrap_err();
        assert!(matches!(e, CgroupError::OutOfRange { .. }));
    }

    #[test]
    fn ids_are_deterministic() {
        let build = || {
            let mut t = CgroupTree::default();
            for p in ["z", "a/b", "m", "a/c", "z/y"] {
                t.get_or_create(p).unwrap();
            }
            (0..t.len() as u16)
                .map(|i| t.path(i).unwrap().to_string())
                .collect::<Vec<_>>()
        };
        let order = build();
        assert_eq!(order, ["", "z", "a", "a/b", "m", "a/c", "z/y"]);
        assert_eq!(build(), order);
    }
}
