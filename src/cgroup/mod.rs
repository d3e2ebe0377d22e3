//! Control groups and I/O priorities.
//!
//! - [`tree`]: the cgroup hierarchy of a run (groups named by `/` paths, 16-bit
//!   ids that requests carry, index 0 = root) and the weights written to it.
//! - [`files`]: the weight files as data (v1 `blkio.weight` /
//!   `blkio.bfq.weight`, v2 `io.weight` / `io.bfq.weight`): range, default,
//!   root rule and write syntax, one table for the simulator and the lab.
//! - [`ioprio`]: I/O priority classes and levels, the kernel's encoding and
//!   fio's `prio=` / `prioclass=`.
//!
//! A scheduler reads a group's weight with [`CgroupTree::weight`] and its
//! policy ([`WeightPolicy::Blkcg`] for CFQ / tpps, [`WeightPolicy::Bfq`] for
//! BFQ); the tree's [`CgroupVersion`] picks the file behind it.

pub mod files;
pub mod ioprio;
pub mod tree;

pub use files::{
    fio_weight_file, weight_file, weight_file_for, CgroupVersion, DevNum, WeightFile, WeightPolicy,
    WEIGHT_FILES,
};
pub use ioprio::{IoPrio, IoPrioClass, IOPRIO_DEFAULT_LEVEL, IOPRIO_NR_LEVELS};
pub use tree::{parse_set_key, CgroupTree, Origin, MAX_GROUPS, SET_PREFIX};

use std::fmt;

/// Why a cgroup operation was refused. Messages name the group, the file,
/// the value and what would have been accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CgroupError {
    /// A weight outside the file's range (the kernel: -ERANGE or -EINVAL).
    OutOfRange {
        path: String,
        file: &'static str,
        value: String,
        min: u32,
        max: u32,
    },
    /// A value in no form the file takes (-EINVAL).
    Invalid {
        path: String,
        file: &'static str,
        value: String,
        forms: &'static str,
        min: u32,
        max: u32,
    },
    /// A file of the other interface generation.
    WrongVersion {
        file: &'static str,
        file_version: CgroupVersion,
        run_version: CgroupVersion,
    },
    /// Not a weight file this model knows.
    UnknownFile { file: String },
    /// A file the kernel creates only in child groups, written on the root.
    NotOnRoot { file: &'static str },
    /// A path that cannot name a cgroup.
    BadPath { path: String, reason: String },
    /// More groups than 16-bit ids can name.
    TooManyGroups { path: String },
    /// fio's `cgroup_weight=` under cgroup v2, which fio refuses.
    FioWeightOnV2,
    /// A `--set` key that is not `cgroup:PATH/FILE`.
    BadKey { key: String },
}

/// A group path for messages: the root is "/".
fn shown(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

impl fmt::Display for CgroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CgroupError::OutOfRange {
                path,
                file,
                value,
                min,
                max,
            } => write!(
                f,
                "cgroup {}: {file}: {value} out of range {min}..{max}",
                shown(path)
            ),
            CgroupError::Invalid {
                path,
                file,
                value,
                forms,
                min,
                max,
            } => write!(
                f,
                "cgroup {}: {file}: '{value}' is not a weight (write {forms}; range {min}..{max})",
                shown(path)
            ),
            CgroupError::WrongVersion {
                file,
                file_version,
                run_version,
            } => write!(
                f,
                "{file} is a {file_version} file; this run uses {run_version} (--cgroup-version {})",
                run_version.number()
            ),
            CgroupError::UnknownFile { file } => write!(
                f,
                "no cgroup weight file '{file}'; known: {}",
                files::known_files()
            ),
            CgroupError::NotOnRoot { file } => write!(
                f,
                "the root cgroup has no {file}: the kernel creates it only in child groups (write cgroup:NAME/{file})"
            ),
            CgroupError::BadPath { path, reason } => {
                write!(f, "cgroup path '{path}': {reason}")
            }
            CgroupError::TooManyGroups { path } => write!(
                f,
                "cgroup {}: more than {MAX_GROUPS} cgroups (group ids are 16-bit here; the kernel has no such limit)",
                shown(path)
            ),
            CgroupError::FioWeightOnV2 => write!(
                f,
                "cgroup_weight= does not work with cgroup v2 (fio refuses it: it writes {}, a cgroup v1 file); \
                 set a v2 weight with --set {SET_PREFIX}PATH/FILE=N",
                files::BLKIO_WEIGHT.name
            ),
            CgroupError::BadKey { key } => {
                write!(f, "'{key}': expected {SET_PREFIX}PATH/FILE (e.g. {SET_PREFIX}grp/{})", files::IO_BFQ_WEIGHT.name)
            }
        }
    }
}

impl std::error::Error for CgroupError {}
