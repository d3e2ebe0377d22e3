//! cgroups and I/O priority classes. Weights keep both interface generations'
//! names: v1 `blkio.weight` / `blkio.bfq.weight`, v2 `io.weight` / `io.bfq.weight`.

pub mod ioprio;

pub use ioprio::{IoPrio, IoPrioClass, IOPRIO_DEFAULT_LEVEL, IOPRIO_NR_LEVELS};

/// Default cgroup weight (CGROUP_WEIGHT_DFL in v2, CFQ_WEIGHT_DEFAULT... 500 in v1
/// blkio; fio's `cgroup_weight` accepts 100..1000).
pub const V1_WEIGHT_DEFAULT: u32 = 500;
pub const V2_WEIGHT_DEFAULT: u32 = 100;

/// One cgroup (a flat hierarchy under the root is enough for fio's `cgroup=`).
#[derive(Clone, Debug, PartialEq)]
pub struct Cgroup {
    pub name: String,
    /// `blkio.weight` (v1 scale, 10..1000) as fio's `cgroup_weight` sets it.
    pub weight: u32,
}

/// All cgroups of a run; index 0 is the root.
#[derive(Clone, Debug)]
pub struct CgroupTable {
    pub groups: Vec<Cgroup>,
}

impl Default for CgroupTable {
    fn default() -> Self {
        CgroupTable {
            groups: vec![Cgroup {
                name: "/".into(),
                weight: V1_WEIGHT_DEFAULT,
            }],
        }
    }
}

impl CgroupTable {
    /// Index of the named group, creating it (with `weight`, or the default) if new.
    /// A weight given later for an existing group overrides the earlier one.
    pub fn get_or_create(&mut self, name: &str, weight: Option<u32>) -> u16 {
        let name = name.trim_matches('/');
        if name.is_empty() {
            return 0;
        }
        if let Some(i) = self.groups.iter().position(|g| g.name == name) {
            if let Some(w) = weight {
                self.groups[i].weight = w;
            }
            return i as u16;
        }
        self.groups.push(Cgroup {
            name: name.to_string(),
            weight: weight.unwrap_or(V1_WEIGHT_DEFAULT),
        });
        (self.groups.len() - 1) as u16
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn groups_are_created_once() {
        let mut t = CgroupTable::default();
        let a = t.get_or_create("test1", Some(1000));
        let b = t.get_or_create("/test1/", None);
        assert_eq!(a, b);
        assert_eq!(t.groups[a as usize].weight, 1000);
        assert_eq!(t.get_or_create("", None), 0);
    }
}
