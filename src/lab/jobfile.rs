//! The job file fio runs in the lab, and the check that it can only reach
//! the lab's device.
//!
//! The lab runs as root on real disks, so the job fio gets must not be able
//! to name any other file, device or program. The user's file is read the way
//! fio reads it (a line's content ends at `;` or `#`, keys are matched
//! exactly, `${VAR}` is replaced on the whole line, any line starting with
//! `include` splices a file) and every option goes through an **allow-list**:
//!
//! - options known to be harmless (sizes, patterns, rates, queue depths,
//!   reporting, ...) pass unchanged;
//! - options that say where the I/O goes (`filename`, `directory`,
//!   `filename_format`, `opendir`, `nrfiles`, `replay_redirect`, ...) are
//!   replaced by the device (`filename=DEV` in a leading `[global]`);
//! - files fio writes (`write_bw_log`, `write_lat_log`, `write_iops_log`,
//!   `write_hist_log`, `write_iolog`) get a plain name, so they land in the
//!   lab's private working directory and never at a path the job names;
//! - a trace given with `read_iolog` is read and checked here (fio iolog
//!   version 2 or 3, or blktrace binary), and fio replays a private copy in
//!   which every file or device is the lab's device, with
//!   `replay_redirect=DEV` on top;
//! - `cgroup=` names a group the lab made, fio's `cgroup_weight=` and
//!   `cgroup_nodelete=` are the lab's business, runtimes are capped by
//!   `--max-runtime`;
//! - everything else is refused with the file, line and option: commands
//!   (`exec_prerun`, `exec_postrun`), engines other than the local block
//!   I/O ones (`ioengine=external:...` loads code), buffers or patterns read
//!   from files (`mem=mmap:FILE`, `buffer_pattern='FILE'`), fio switching
//!   the scheduler itself (`ioscheduler`), built-in profiles, and any option
//!   this list does not know (a new fio option is refused until it is
//!   checked and added here).
//!
//! The option list was checked against fio's `options.c`, the engines'
//! option tables and `HOWTO.rst` (fio 3.33 and the development tree).

use crate::sim::time::parse_duration;
use crate::sim::time::{Ns, NS_PER_MS, NS_PER_SEC};
use std::fmt;
use std::path::{Path, PathBuf};

/// Nested includes deeper than this are treated as a loop (as the parser does).
const MAX_INCLUDE_DEPTH: u32 = 16;

/// Longest line passed to fio (it reads lines in pieces of 8191 bytes, and
/// the rest of a longer line as a line of its own).
const MAX_LINE: usize = 4096;

/// Traces larger than this are refused (they are checked and copied in memory).
pub const MAX_TRACE_BYTES: u64 = 512 << 20;

/// I/O engines the lab passes to fio: local block I/O through the kernel's
/// block layer. Anything else is refused: network, exec, file-metadata and
/// passthrough engines, and names fio would load as shared objects.
pub const ENGINES: &[&str] = &[
    "sync", "psync", "vsync", "pvsync", "pvsync2", "libaio", "io_uring", "posixaio", "mmap", "null",
];

/// Options of the engines in [`ENGINES`] (none names a file).
const ENGINE_OPTIONS: &[&str] = &[
    "userspace_reap",
    "nowait",
    "libaio_vectored",
    "cmdprio",
    "cmdprio_class",
    "cmdprio_hint",
    "cmdprio_percentage",
    "cmdprio_bssplit",
    "hipri",
    "hipri_percentage",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "nonvectored",
    "uncached",
    "force_async",
    "thp",
];

/// fio options (names and aliases) that cannot name a file, a device or a
/// command, and are passed to fio as written.
const SAFE_OPTIONS: &[&str] = &[
    // Description, dependencies between jobs.
    "description",
    "name",
    "wait_for",
    "comm",
    "stonewall",
    "wait_for_previous",
    "new_group",
    "thread",
    "exitall",
    "exit_what",
    "exitall_on_error",
    // I/O type and pattern.
    "rw",
    "readwrite",
    "rw_sequencer",
    "rwmixread",
    "rwmixwrite",
    "rwmixcycle",
    "direct",
    "atomic",
    "buffered",
    "sync",
    "overwrite",
    "invalidate",
    "pre_read",
    "lockfile",
    "fadvise_hint",
    "fallocate",
    "write_hint",
    "fsync",
    "fdatasync",
    "write_barrier",
    "sync_file_range",
    "end_fsync",
    "fsync_on_close",
    "end_syncfs",
    "create_serialize",
    "create_fsync",
    "create_on_open",
    "create_only",
    "allow_file_create",
    // fio unlinks regular files only; the lab's files are all the device.
    "unlink",
    "unlink_each_loop",
    // Sizes and offsets.
    "size",
    "io_size",
    "io_limit",
    "fill_device",
    "fill_fs",
    "filesize",
    "file_append",
    "offset",
    "fileoffset",
    "offset_align",
    "offset_increment",
    "number_ios",
    "num_range",
    "openfiles",
    "file_service_type",
    // Block sizes.
    "bs",
    "blocksize",
    "ba",
    "blockalign",
    "bsrange",
    "blocksize_range",
    "bssplit",
    "bs_unaligned",
    "blocksize_unaligned",
    "bs_is_seq_rand",
    // Randomness.
    "randrepeat",
    "allrandrepeat",
    "randseed",
    "norandommap",
    "softrandommap",
    "sprandom",
    "spr_num_regions",
    "spr_op",
    "spr_cs",
    "random_generator",
    "random_distribution",
    "random_sequence_stride",
    "percentage_random",
    "percentage_sequential",
    // Queueing.
    "iodepth",
    "iodepth_batch",
    "iodepth_batch_submit",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete",
    "iodepth_batch_complete_max",
    "iodepth_low",
    "serialize_overlap",
    "io_submit_mode",
    // Time.
    "loops",
    "numjobs",
    "startdelay",
    "time_based",
    "ramp_time",
    "ramp_size",
    "clocksource",
    "gtod_reduce",
    "gtod_cpu",
    "job_start_clock_id",
    "steadystate",
    "ss",
    "steadystate_duration",
    "ss_dur",
    "steadystate_ramp_time",
    "ss_ramp",
    "steadystate_check_interval",
    "ss_interval",
    // Memory for buffers (`mem`/`iomem` are checked: no file).
    "iomem_align",
    "mem_align",
    "hugepage-size",
    "lockmem",
    // Buffer contents (`buffer_pattern`/`verify_pattern` are checked: no file).
    "zero_buffers",
    "refill_buffers",
    "scramble_buffers",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    "dedupe_global",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    // Verification (state files go to fio's working directory, the lab's).
    "verify",
    "do_verify",
    "verify_only",
    "verify_policy",
    "verifysort",
    "verifysort_nr",
    "verify_interval",
    "verify_offset",
    "verify_pattern_interval",
    "verify_fatal",
    "verify_dump",
    "verify_async",
    "verify_backlog",
    "verify_backlog_batch",
    "verify_async_cpus",
    "experimental_verify",
    "verify_state_load",
    "verify_state_save",
    "verify_write_sequence",
    "verify_header_seed",
    "trim_percentage",
    "trim_verify_zero",
    "trim_backlog",
    "trim_backlog_batch",
    // Trace replay tuning (the trace itself is `read_iolog`, checked).
    "read_iolog_chunked",
    "replay_no_stall",
    "replay_scale",
    "replay_align",
    "replay_time_scale",
    "replay_skip",
    "merge_blktrace_scalars",
    "merge_blktrace_iters",
    // Zones and data placement (on the device).
    "zonemode",
    "zonesize",
    "zonecapacity",
    "zonerange",
    "zoneskip",
    "read_beyond_wp",
    "max_open_zones",
    "job_max_open_zones",
    "ignore_zone_limits",
    "zone_reset_threshold",
    "zone_reset_frequency",
    "recover_zbd_write_error",
    "write_zone_remainder",
    "fdp",
    "dataplacement",
    "data_placement",
    "plid_select",
    "fdp_pli_select",
    "plids",
    "fdp_pli",
    // Process and CPU.
    "nice",
    "prio",
    "prioclass",
    "priohint",
    "cpumask",
    "cpus_allowed",
    "cpus_allowed_policy",
    "numa_cpu_nodes",
    "numa_mem_policy",
    "gpu_dev_id",
    "uid",
    "gid",
    // Think time and rates.
    "thinktime",
    "thinktime_spin",
    "thinkcycles",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "thinktime_iotime",
    "rate",
    "rate_min",
    "ratemin",
    "rate_iops",
    "rate_iops_min",
    "rate_process",
    "rate_cycle",
    "ratecycle",
    "rate_ignore_thinktime",
    "max_latency",
    "latency_target",
    "latency_window",
    "latency_percentile",
    "latency_run",
    "flow_id",
    "flow",
    "flow_watermark",
    "flow_sleep",
    // Log settings (the log files themselves are named by the lab).
    "per_job_logs",
    "log_entries",
    "log_avg_msec",
    "log_hist_msec",
    "log_hist_coarseness",
    "log_window_value",
    "log_max_value",
    "log_offset",
    "log_prio",
    "log_issue_time",
    "log_compression",
    "log_compression_cpus",
    "log_store_compressed",
    "log_alternate_epoch",
    "log_unix_epoch",
    "log_alternate_epoch_clock_id",
    // Reporting.
    "block_error_percentiles",
    "bwavgtime",
    "iopsavgtime",
    "group_reporting",
    "stats",
    "clat_percentiles",
    "lat_percentiles",
    "slat_percentiles",
    "percentile_list",
    "significant_figures",
    "disk_util",
    "disable_lat",
    "disable_clat",
    "disable_slat",
    "disable_bw_measurement",
    "disable_bw",
    "unified_rw_reporting",
    "kb_base",
    "unit_base",
    // Errors.
    "continue_on_error",
    "ignore_error",
    "error_dump",
];

/// What the lab does with one option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Passed to fio unchanged.
    Safe,
    /// Says where the I/O goes: replaced by the device.
    Device,
    /// A log fio writes (`write_*_log`): named by the lab, in its directory.
    Log,
    /// `write_iolog`: named by the lab, in its directory.
    WriteIolog,
    /// `read_iolog`: the trace is checked and a private copy replayed.
    ReadIolog,
    /// `cgroup`: pointed at a group the lab made.
    Cgroup,
    /// `cgroup_weight`, `cgroup_nodelete`: done by the lab, not fio.
    CgroupLab,
    /// `runtime`/`timeout`: capped by `--max-runtime`.
    Runtime,
    /// `ioengine`: one of [`ENGINES`].
    Engine,
    /// `mem`/`iomem`: no `:FILE` part.
    Mem,
    /// `buffer_pattern`/`verify_pattern`: no `'FILE'` part.
    Pattern,
    /// Refused, with the reason.
    Refused(&'static str),
}

/// How the lab treats option `key` (exact, as fio matches it).
pub fn classify(key: &str) -> Class {
    match key {
        "filename" | "directory" | "filename_format" | "unique_filename" | "opendir"
        | "nrfiles" | "nr_files" | "replay_redirect" => Class::Device,
        "write_bw_log" | "write_lat_log" | "write_iops_log" | "write_hist_log" => Class::Log,
        "write_iolog" => Class::WriteIolog,
        "read_iolog" => Class::ReadIolog,
        "cgroup" => Class::Cgroup,
        "cgroup_weight" | "cgroup_nodelete" => Class::CgroupLab,
        "runtime" | "timeout" => Class::Runtime,
        "ioengine" => Class::Engine,
        "mem" | "iomem" => Class::Mem,
        "buffer_pattern" | "verify_pattern" => Class::Pattern,
        "exec_prerun" | "exec_postrun" => {
            Class::Refused("runs a command; the lab runs fio and nothing else")
        }
        "ioscheduler" => Class::Refused(
            "fio would switch the device's scheduler itself; the lab does that (use --schedulers)",
        ),
        "profile" => Class::Refused(
            "fio's built-in profiles bring their own options, including device names",
        ),
        "merge_blktrace_file" => Class::Refused(
            "writes a merged trace to a path the job names (merging several traces is not supported in the lab)",
        ),
        "allow_mounted_write" => Class::Refused(
            "switches off fio's check for mounted devices; the lab decides which device is safe",
        ),
        "dp_scheme" => Class::Refused("reads a file the job names"),
        k if SAFE_OPTIONS.contains(&k) || ENGINE_OPTIONS.contains(&k) => Class::Safe,
        _ => Class::Refused(
            "not an option the lab knows to be safe: it passes to fio only options that cannot name a file, a device or a command",
        ),
    }
}

/// A job file refused (bad input): where and why.
#[derive(Clone, Debug, PartialEq)]
pub struct JobRefusal {
    pub file: String,
    pub line: usize,
    pub option: Option<String>,
    pub message: String,
}

impl fmt::Display for JobRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.option {
            Some(o) => write!(
                f,
                "{}:{}: option '{o}': {}",
                self.file, self.line, self.message
            ),
            None if self.line > 0 => write!(f, "{}:{}: {}", self.file, self.line, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// One line of the job file, after includes are spliced in.
#[derive(Clone, Debug)]
pub struct SrcLine {
    pub file: String,
    pub line: usize,
    pub text: String,
}

/// A line's content as fio sees it: leading and trailing blanks and control
/// characters removed, and everything from the first `;` or `#` on.
pub fn content(line: &str) -> &str {
    let cut = match line.find([';', '#']) {
        Some(i) => &line[..i],
        None => line,
    };
    cut.trim_matches(|c: char| c.is_whitespace() || c.is_control())
}

/// The job file's lines with every `include` replaced by the included file's
/// lines (fio treats any line that starts with `include` as one).
pub fn read_lines(path: &Path) -> Result<Vec<SrcLine>, JobRefusal> {
    let mut out = Vec::new();
    splice(path, 0, &mut out, None)?;
    Ok(out)
}

fn splice(
    path: &Path,
    depth: u32,
    out: &mut Vec<SrcLine>,
    from: Option<(&str, usize)>,
) -> Result<(), JobRefusal> {
    let refuse = |message: String| match from {
        Some((file, line)) => JobRefusal {
            file: file.to_string(),
            line,
            option: Some("include".into()),
            message,
        },
        None => JobRefusal {
            file: path.display().to_string(),
            line: 0,
            option: None,
            message,
        },
    };
    if depth > MAX_INCLUDE_DEPTH {
        return Err(refuse(format!(
            "includes nested more than {MAX_INCLUDE_DEPTH} deep (include loop?)"
        )));
    }
    let md = std::fs::metadata(path)
        .map_err(|e| refuse(format!("cannot read {}: {e}", path.display())))?;
    if !md.is_file() {
        return Err(refuse(format!(
            "{} is not a regular file; the lab reads job files and includes only from regular files",
            path.display()
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| refuse(format!("cannot read {}: {e}", path.display())))?;
    let name = path.display().to_string();
    let base = path.parent().unwrap_or(Path::new(""));
    for (i, line) in text.lines().enumerate() {
        let c = content(line);
        if let Some(rest) = c.strip_prefix("include") {
            let target = rest.trim();
            if !rest.starts_with(char::is_whitespace) || target.is_empty() {
                return Err(JobRefusal {
                    file: name.clone(),
                    line: i + 1,
                    option: Some("include".into()),
                    message: format!(
                        "'{c}': fio reads every line that starts with 'include' as an include; expected 'include FILE'"
                    ),
                });
            }
            let target = if Path::new(target).is_absolute() {
                PathBuf::from(target)
            } else {
                base.join(target)
            };
            out.push(SrcLine {
                file: name.clone(),
                line: i + 1,
                text: format!("; elevator lab: {}", line.trim()),
            });
            splice(&target, depth + 1, out, Some((&name, i + 1)))?;
        } else {
            out.push(SrcLine {
                file: name.clone(),
                line: i + 1,
                text: line.to_string(),
            });
        }
    }
    Ok(())
}

/// Read a job file with its `include` lines replaced by the included text.
pub fn read_inlined(path: &Path) -> Result<String, String> {
    let lines = read_lines(path).map_err(|e| e.to_string())?;
    let mut s = String::new();
    for l in lines {
        s.push_str(&l.text);
        s.push('\n');
    }
    Ok(s)
}

/// Replace `${NAME}` by the variable's value (empty when unset), on the whole
/// line, once, as fio does.
pub fn expand_env(line: &str, env: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        match after.find('}') {
            Some(j) if j > 0 => {
                out.push_str(&rest[..i]);
                out.push_str(&env(&after[..j]).unwrap_or_default());
                rest = &after[j + 1..];
            }
            _ => {
                out.push_str(&rest[..i + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The device every job is sent to.
#[derive(Clone, Debug)]
pub struct Target {
    /// `/dev/loopN`.
    pub path: String,
    /// Its device number (major, minor), written into blktrace traces; None
    /// when only parsing.
    pub devno: Option<(u32, u32)>,
    /// `--mount`: the jobs' files are on a file system on the device, in a
    /// directory given when rendering ([`Rewrite::directory`]).
    pub fs: bool,
}

/// The format of a `read_iolog` trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceKind {
    IologV2,
    IologV3,
    Blktrace,
}

/// A checked trace: the private copy fio replays.
#[derive(Clone, Debug)]
pub struct Trace {
    /// File name in the lab's working directory.
    pub name: String,
    pub source: PathBuf,
    pub kind: TraceKind,
    pub data: Vec<u8>,
}

#[derive(Clone, Debug)]
enum Item {
    /// Passed as is (section headers, safe options, normalised).
    Keep(String),
    /// A comment for the reader of the rewritten file.
    Comment(String),
    Cgroup(String),
    Runtime(String),
    /// The trace at this index in [`Prepared::traces`].
    ReadIolog(usize),
    /// `KEY=NAME`, NAME a plain file name.
    Named(String, String),
    /// An option the lab carries out itself (`cgroup_weight=`): a comment in
    /// fio's copy, the option itself in the copy elevator parses.
    ByLab(String),
}

/// A job file checked for the lab, ready to be written for fio.
#[derive(Clone, Debug)]
pub struct Prepared {
    items: Vec<Item>,
    pub traces: Vec<Trace>,
    pub uses_cgroup: bool,
    device: String,
    fs: bool,
}

/// `name` reduced to a plain file name: letters, digits, `.`, `_`, `-`.
fn plain_name(name: &str, fallback: &str) -> String {
    let s: String = name
        .rsplit('/')
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let s = s.trim_start_matches('.').to_string();
    if s.is_empty() {
        fallback.to_string()
    } else {
        s
    }
}

/// Check a job file for the lab: every option through [`classify`], every
/// trace read and checked. Refusals name the file, line and option.
pub fn prepare(
    path: &Path,
    target: &Target,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Prepared, JobRefusal> {
    let lines = read_lines(path)?;
    let job_dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut p = Prepared {
        items: Vec::new(),
        traces: Vec::new(),
        uses_cgroup: false,
        device: target.path.clone(),
        fs: target.fs,
    };
    let mut section: Option<String> = None;
    let mut names_used: Vec<String> = Vec::new();
    for l in &lines {
        // As fio: the comment is cut first, variables are replaced after.
        let raw = content(&l.text);
        if raw.is_empty() {
            let t = l.text.trim();
            if !t.is_empty() {
                p.items.push(Item::Comment(t.replace(['\n', '\r'], " ")));
            }
            continue;
        }
        let expanded = expand_env(raw, env);
        let c = expanded.trim();
        let refuse = |option: Option<&str>, message: String| JobRefusal {
            file: l.file.clone(),
            line: l.line,
            option: option.map(str::to_string),
            message,
        };
        if let Some(problem) = line_problem(c) {
            return Err(refuse(None, problem));
        }
        if c.starts_with('[') {
            let name = c
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .ok_or_else(|| {
                    refuse(None, format!("bad section header '{c}'; expected [name]"))
                })?;
            section = Some(name.to_string());
            p.items.push(Item::Keep(c.to_string()));
            continue;
        }
        let (key, value) = match c.split_once('=') {
            Some((k, v)) => (k.trim_end(), Some(v.trim())),
            None => (c, None),
        };
        let Some(sec) = section.as_deref() else {
            return Err(refuse(
                Some(key),
                "option before any [section]; start with [global] or [jobname]".into(),
            ));
        };
        place_option(
            &mut p,
            Opt {
                key,
                value,
                line: c,
                section: sec,
            },
            target,
            &job_dir,
            &mut names_used,
        )
        .map_err(|m| refuse(Some(key), m))?;
    }
    Ok(p)
}

/// Why an expanded line cannot be passed to fio as it is, if it cannot.
fn line_problem(c: &str) -> Option<String> {
    // What is checked must be exactly what fio reads: one line, read
    // whole, not changed again.
    if c.contains("${") {
        return Some(format!(
            "'{c}': '${{' is left after replacing environment variables; fio would replace it again"
        ));
    }
    if c.chars().any(char::is_control) || c.contains([';', '#']) {
        return Some(format!(
            "'{}': an environment variable put a control character, ';' or '#' into the line",
            c.escape_debug()
        ));
    }
    if c.len() > MAX_LINE {
        return Some(format!(
            "a line of {} bytes; fio reads at most {MAX_LINE} as one line and would read the rest as another",
            c.len()
        ));
    }
    None
}

/// One option line of a job section, as `Opt` names it.
struct Opt<'a> {
    key: &'a str,
    value: Option<&'a str>,
    /// The whole line, as fio would read it.
    line: &'a str,
    section: &'a str,
}

/// What the lab does with one option: keep it, rewrite it to the device
/// or the private directory, take it over, or refuse it (the message).
fn place_option(
    p: &mut Prepared,
    o: Opt,
    target: &Target,
    job_dir: &Path,
    names_used: &mut Vec<String>,
) -> Result<(), String> {
    let Opt {
        key,
        value,
        line: c,
        section: sec,
    } = o;
    let was = || Item::Comment(format!("elevator lab: was: {c}"));
    match classify(key) {
        Class::Safe => p.items.push(Item::Keep(c.to_string())),
        Class::Device if target.fs => {
            let item = in_file_system(key, value.unwrap_or(""))?;
            p.items.push(item);
        }
        Class::Device => p.items.push(Item::Comment(format!(
            "elevator lab: replaced by filename={}: {c}",
            target.path
        ))),
        Class::CgroupLab => p.items.push(Item::ByLab(c.to_string())),
        Class::Cgroup => {
            p.uses_cgroup = true;
            let v = value.unwrap_or("");
            if v.is_empty() {
                return Err("needs a group name".into());
            }
            p.items.push(Item::Cgroup(v.to_string()));
        }
        Class::Runtime => match value {
            Some(v) => p.items.push(Item::Runtime(v.to_string())),
            None => return Err("needs a value".into()),
        },
        Class::Engine => {
            let v = value.unwrap_or("");
            if !ENGINES.contains(&v) {
                return Err(format!(
                    "engine '{v}' is not allowed in the lab (allowed: {}); other engines reach the network, run programs, work on file metadata, pass commands through, or are loaded from a file",
                    ENGINES.join(", ")
                ));
            }
            p.items.push(Item::Keep(c.to_string()));
        }
        Class::Mem => {
            if value.is_some_and(|v| v.contains(':')) {
                return Err(format!(
                    "'{}' maps a file for the I/O buffers; the lab allows the buffer types without a file",
                    value.unwrap_or("")
                ));
            }
            p.items.push(Item::Keep(c.to_string()));
        }
        Class::Pattern => {
            if value.is_some_and(|v| v.contains('\'')) {
                return Err(
                    "a pattern in single quotes is read from a file; give the pattern itself (0x..., \"text\")".into(),
                );
            }
            p.items.push(Item::Keep(c.to_string()));
        }
        Class::Log | Class::WriteIolog => {
            let base = plain_name(value.unwrap_or(""), &plain_name(sec, "job"));
            let mut name = if classify(key) == Class::WriteIolog {
                format!("{base}.iolog")
            } else {
                base
            };
            if classify(key) == Class::WriteIolog {
                let stem = name.clone();
                let mut k = 1;
                while names_used.contains(&name) {
                    k += 1;
                    name = format!("{k}-{stem}");
                }
                names_used.push(name.clone());
            }
            p.items.push(was());
            p.items.push(Item::Named(key.to_string(), name));
        }
        Class::ReadIolog if target.fs => {
            return Err("a trace replays to the device, not to files: not with --mount".into())
        }
        Class::ReadIolog => {
            let v = value.unwrap_or("");
            let trace = check_trace(v, job_dir, target, p.traces.len())?;
            p.items.push(was());
            p.traces.push(trace);
            p.items.push(Item::ReadIolog(p.traces.len() - 1));
        }
        Class::Refused(why) => return Err(why.to_string()),
    }
    Ok(())
}

/// A file-naming option with `--mount`: the files stay inside the lab's
/// file system. `filename=` keeps only its last path component (jobs that
/// name the same file still share it), the directory is the lab's.
fn in_file_system(key: &str, value: &str) -> Result<Item, String> {
    match key {
        "filename" => {
            let names: Vec<String> = value
                .split(':')
                .filter(|n| !n.is_empty())
                .map(|n| plain_name(n, "file"))
                .collect();
            if names.is_empty() {
                return Err("needs a file name".into());
            }
            Ok(Item::Keep(format!("filename={}", names.join(":"))))
        }
        "filename_format" if value.contains('/') => Err(format!(
            "'{value}' names a path; with --mount the files are in the lab's file system, give a name without '/'"
        )),
        "nrfiles" | "nr_files" | "unique_filename" | "filename_format" => {
            Ok(Item::Keep(format!("{key}={value}")))
        }
        _ => Ok(Item::Comment(format!(
            "elevator lab: replaced by the lab's file system directory: {key}={value}"
        ))),
    }
}

/// What to change when writing the job for fio.
pub struct Rewrite<'a> {
    /// A job's `cgroup=` value → the group path fio should use.
    pub cgroup: &'a dyn Fn(&str) -> Option<String>,
    /// Cap on every job's runtime.
    pub max_runtime: Option<Ns>,
    /// Where the traces' private copies are (the lab's working directory).
    pub trace_dir: &'a Path,
    /// With `--mount`: the mounted file system's directory.
    pub directory: Option<&'a Path>,
    /// Keep the options the lab carries out (`cgroup_weight=`) instead of
    /// commenting them out: for elevator's own parse, never for fio.
    pub keep_lab_options: bool,
}

/// `text` as one comment line of the job file (without its newline).
fn push_comment(out: &mut String, text: &str) {
    out.push_str("; ");
    out.push_str(&text.replace(['\n', '\r'], " "));
}

/// A runtime as fio reads it (seconds unless a unit is given), printed back.
fn fio_time(ns: Ns) -> String {
    if ns.is_multiple_of(NS_PER_SEC) {
        format!("{}", ns / NS_PER_SEC)
    } else {
        format!("{}ms", ns.div_ceil(NS_PER_MS).max(1))
    }
}

impl Prepared {
    /// The job text for fio. Errors when a `cgroup=` has no group.
    pub fn render(&self, rw: &Rewrite) -> Result<String, String> {
        let mut out = String::new();
        out.push_str("; Checked and rewritten by elevator lab for fio: device, logs, traces, cgroups, runtime cap.\n");
        out.push_str("[global]\n");
        if self.fs {
            let dir = rw
                .directory
                .ok_or("no directory for the jobs' files (--mount)")?;
            out.push_str(&format!("directory={}\n", dir.display()));
        } else {
            out.push_str(&format!("filename={}\n", self.device));
        }
        if self.uses_cgroup {
            out.push_str("cgroup_nodelete=1\n");
        }
        if let Some(cap) = rw.max_runtime {
            out.push_str(&format!("runtime={}\n", fio_time(cap)));
        }
        out.push('\n');
        for it in &self.items {
            match it {
                Item::Keep(s) => out.push_str(s),
                Item::Comment(s) => push_comment(&mut out, s),
                Item::Cgroup(v) => match (rw.cgroup)(v) {
                    Some(path) => out.push_str(&format!("cgroup={path}")),
                    None => return Err(format!("no cgroup prepared for cgroup={v}")),
                },
                Item::Runtime(v) => match (rw.max_runtime, parse_duration(v)) {
                    // fio treats runtime=0 as unlimited.
                    (Some(cap), Ok(t)) => {
                        let capped = if t == 0 { cap } else { t.min(cap) };
                        out.push_str(&format!("runtime={}", fio_time(capped)));
                    }
                    _ => out.push_str(&format!("runtime={v}")),
                },
                Item::ReadIolog(i) => {
                    let t = &self.traces[*i];
                    out.push_str(&format!(
                        "read_iolog={}\nreplay_redirect={}",
                        rw.trace_dir.join(&t.name).display(),
                        self.device
                    ));
                }
                Item::Named(k, name) => out.push_str(&format!("{k}={name}")),
                Item::ByLab(c) if rw.keep_lab_options => out.push_str(c),
                Item::ByLab(c) => {
                    push_comment(&mut out, &format!("elevator lab: done by the lab: {c}"))
                }
            }
            out.push('\n');
        }
        Ok(out)
    }

    /// Write the traces' private copies into `dir`.
    pub fn write_traces(&self, dir: &Path) -> Result<(), String> {
        for t in &self.traces {
            let p = dir.join(&t.name);
            std::fs::write(&p, &t.data).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        Ok(())
    }
}

/// The job file as it will run on `device`, for elevator's own reading:
/// every option the lab carries out kept, cgroup names as the user wrote
/// them, and the prepared file (its traces) beside it.
fn render_for_elevator(
    path: &Path,
    device: &str,
    fs: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Prepared, String), String> {
    let target = Target {
        path: device.to_string(),
        devno: None,
        fs,
    };
    let prepared = prepare(path, &target, env).map_err(|e| e.to_string())?;
    let same = |n: &str| Some(n.to_string());
    let text = prepared.render(&Rewrite {
        cgroup: &same,
        max_runtime: None,
        trace_dir: Path::new(""),
        directory: Some(Path::new("/mnt")),
        keep_lab_options: true,
    })?;
    Ok((prepared, text))
}

/// Parse a job file as it will run on `device` (for elevator's own reading
/// of the jobs: names, groups, block sizes). Refused files are refused here.
/// Cgroup names stay as the user wrote them.
pub fn parse_for_device(
    path: &Path,
    device: &str,
    fs: bool,
) -> Result<crate::job::JobFile, String> {
    let env = |n: &str| std::env::var(n).ok();
    let (_, text) = render_for_elevator(path, device, fs, &env)?;
    let base = path.parent().unwrap_or(Path::new(""));
    let inputs = crate::job::Inputs {
        env: &env,
        ..crate::job::Inputs::plain()
    };
    crate::job::parse_str(&text, &path.display().to_string(), base, &inputs)
        .map_err(|e| e.to_string())
}

/// The job text the simulation of a raw-device lab run takes: the jobs'
/// I/O goes to `device` as it does in fio's copy (`filename=DEV`; the
/// options that named files or directories are comments), so a job that
/// fio runs on the device without `size=` or with `directory=` is simulated
/// on the device too, not as files of a file system. None when the job
/// replays traces: their private copies exist only in the lab's working
/// directory, and the simulation then reads the job file as given.
pub fn sim_text_for_device(
    path: &Path,
    device: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, String> {
    let (prepared, text) = render_for_elevator(path, device, false, env)?;
    Ok(prepared.traces.is_empty().then_some(text))
}

// ---------------------------------------------------------------------------
// Traces

const IOLOG_V2: &str = "fio version 2 iolog";
const IOLOG_V3: &str = "fio version 3 iolog";
const BLK_IO_TRACE_MAGIC: u32 = 0x6561_7400;
const BLK_IO_TRACE_VERSION: u32 = 0x07;
/// `struct blk_io_trace`: 48 bytes, then `pdu_len` bytes.
const BLK_TRACE_SIZE: usize = 48;

/// Read and check the trace `value` names; the copy fio gets sends every
/// I/O to the target.
fn check_trace(
    value: &str,
    job_dir: &Path,
    target: &Target,
    index: usize,
) -> Result<Trace, String> {
    if value.is_empty() {
        return Err("needs a trace file".into());
    }
    if value == "-" {
        return Err(
            "reading the trace from standard input is not supported in the lab; give a file".into(),
        );
    }
    if value.contains(':') {
        return Err(format!(
            "'{value}': a list of traces (one per job, or several to merge) is not supported in the lab; give one file"
        ));
    }
    // fio opens the trace relative to its working directory (here: where
    // elevator runs); the job file's directory is tried next.
    let given = PathBuf::from(value);
    let path = if given.is_absolute() || given.exists() {
        given
    } else {
        job_dir.join(value)
    };
    let md = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !md.is_file() {
        return Err(format!(
            "{} is not a regular file (a device, socket or pipe cannot be checked)",
            path.display()
        ));
    }
    if md.len() > MAX_TRACE_BYTES {
        return Err(format!(
            "{} is {} bytes; the lab checks traces of up to {} MiB",
            path.display(),
            md.len(),
            MAX_TRACE_BYTES >> 20
        ));
    }
    let data = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let shown = path.display().to_string();
    let (kind, data) = if data.len() >= 4 && blktrace_endian(&data).is_some() {
        (
            TraceKind::Blktrace,
            check_blktrace(&data, target.devno, &shown)?,
        )
    } else {
        check_iolog(&data, &target.path, &shown)?
    };
    let ext = match kind {
        TraceKind::Blktrace => "bin",
        _ => "iolog",
    };
    Ok(Trace {
        name: format!("trace-{}.{ext}", index + 1),
        source: path,
        kind,
        data,
    })
}

/// fio's iolog versions 2 and 3, rewritten with every file name replaced by
/// `device`. Every line must be one fio reads; anything else is refused.
pub fn check_iolog(data: &[u8], device: &str, shown: &str) -> Result<(TraceKind, Vec<u8>), String> {
    let text = std::str::from_utf8(data).map_err(|_| {
        format!("{shown}: neither a blktrace binary trace nor a text iolog (not UTF-8); the lab cannot check it")
    })?;
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    let kind = if first.starts_with(IOLOG_V2) {
        TraceKind::IologV2
    } else if first.starts_with(IOLOG_V3) {
        TraceKind::IologV3
    } else {
        return Err(format!(
            "{shown}: not a trace the lab can check: the first line is neither '{IOLOG_V2}' nor '{IOLOG_V3}', and it is not a blktrace binary trace (fio no longer reads iolog version 1)"
        ));
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(if kind == TraceKind::IologV2 {
        IOLOG_V2
    } else {
        IOLOG_V3
    });
    out.push('\n');
    for (i, line) in lines.enumerate() {
        let n = i + 2;
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let bad = |why: &str| format!("{shown}:{n}: '{}': {why}", line.trim());
        let (time, rest) = if kind == TraceKind::IologV3 {
            let t: u64 = f[0].parse().map_err(|_| {
                bad("expected a timestamp (version 3: TIME FILE ACTION [OFFSET LENGTH])")
            })?;
            (Some(t), &f[1..])
        } else {
            (None, &f[..])
        };
        let prefix = time.map(|t| format!("{t} ")).unwrap_or_default();
        match rest {
            [_file, action] => {
                if !["add", "open", "close"].contains(action) {
                    return Err(bad("unknown file action (add, open, close)"));
                }
                out.push_str(&format!("{prefix}{device} {action}\n"));
            }
            [_file, action, offset, length] => {
                if !["read", "write", "trim", "sync", "datasync", "wait"].contains(action) {
                    return Err(bad(
                        "unknown I/O action (read, write, trim, sync, datasync, wait)",
                    ));
                }
                let o: u64 = offset.parse().map_err(|_| bad("bad offset"))?;
                let l: u32 = length.parse().map_err(|_| bad("bad length"))?;
                out.push_str(&format!("{prefix}{device} {action} {o} {l}\n"));
            }
            _ => {
                return Err(bad(if kind == TraceKind::IologV3 {
                    "expected TIME FILE ACTION or TIME FILE ACTION OFFSET LENGTH"
                } else {
                    "expected FILE ACTION or FILE ACTION OFFSET LENGTH"
                }))
            }
        }
    }
    Ok((kind, out.into_bytes()))
}

/// Little (true) or big (false) endian when `data` starts with a blktrace
/// record's magic.
fn blktrace_endian(data: &[u8]) -> Option<bool> {
    let b: [u8; 4] = data.get(..4)?.try_into().ok()?;
    if u32::from_le_bytes(b) & 0xffff_ff00 == BLK_IO_TRACE_MAGIC {
        Some(true)
    } else if u32::from_be_bytes(b) & 0xffff_ff00 == BLK_IO_TRACE_MAGIC {
        Some(false)
    } else {
        None
    }
}

/// A blktrace binary trace, every record checked (magic, version, length)
/// and its device set to `devno` (fio's `replay_redirect` sends it there as
/// well).
pub fn check_blktrace(
    data: &[u8],
    devno: Option<(u32, u32)>,
    shown: &str,
) -> Result<Vec<u8>, String> {
    let le = blktrace_endian(data).ok_or_else(|| format!("{shown}: not a blktrace trace"))?;
    let rd = |b: &[u8]| {
        let a: [u8; 4] = b.try_into().expect("4 bytes");
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let wr = |v: u32| if le { v.to_le_bytes() } else { v.to_be_bytes() };
    let mut out = data.to_vec();
    let mut at = 0usize;
    let mut n = 0usize;
    while at < data.len() {
        n += 1;
        let rec = data.get(at..at + BLK_TRACE_SIZE).ok_or_else(|| {
            format!("{shown}: record {n} at byte {at} is cut short (a blktrace record is {BLK_TRACE_SIZE} bytes)")
        })?;
        let magic = rd(&rec[0..4]);
        if magic & 0xffff_ff00 != BLK_IO_TRACE_MAGIC {
            return Err(format!(
                "{shown}: record {n} at byte {at}: bad magic {magic:#x}"
            ));
        }
        if magic & 0xff != BLK_IO_TRACE_VERSION {
            return Err(format!(
                "{shown}: record {n} at byte {at}: blktrace version {} (fio reads version {BLK_IO_TRACE_VERSION})",
                magic & 0xff
            ));
        }
        let pdu_len = if le {
            u16::from_le_bytes([rec[46], rec[47]])
        } else {
            u16::from_be_bytes([rec[46], rec[47]])
        } as usize;
        let end = at + BLK_TRACE_SIZE + pdu_len;
        if end > data.len() {
            return Err(format!(
                "{shown}: record {n} at byte {at}: its {pdu_len} bytes of payload run past the end"
            ));
        }
        if let Some((maj, min)) = devno {
            // Kernel dev_t as blktrace stores it: major << 20 | minor.
            let dev = (maj << 20) | (min & 0xf_ffff);
            out[at + 36..at + 40].copy_from_slice(&wr(dev));
        }
        at = end;
    }
    if n == 0 {
        return Err(format!("{shown}: empty trace"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    fn target() -> Target {
        Target {
            path: "/dev/loop7".into(),
            devno: Some((7, 7)),
            fs: false,
        }
    }

    fn dir() -> crate::lab::TempDir {
        crate::lab::TempDir::new("elevator-jobfile-test").unwrap()
    }

    fn prep(text: &str) -> Result<(Prepared, crate::lab::TempDir), JobRefusal> {
        let d = dir();
        let p = d.path().join("job.fio");
        std::fs::write(&p, text).unwrap();
        prepare(&p, &target(), &no_env).map(|x| (x, d))
    }

    fn render(p: &Prepared, cap: Option<Ns>) -> String {
        let map = |n: &str| Some(format!("elv1_{n}"));
        p.render(&Rewrite {
            cgroup: &map,
            max_runtime: cap,
            trace_dir: Path::new("/work"),
            directory: None,
            keep_lab_options: false,
        })
        .unwrap()
    }

    #[test]
    fn with_mount_files_stay_in_the_lab_file_system() {
        let d = dir();
        let p = d.path().join("job.fio");
        let text = "[global]\nrw=write\nnrfiles=4\nfilesize=1m\ndirectory=/etc\n\
                    [a]\nfilename=/mnt/x/../obj.o:../../etc/passwd\n[b]\nfilename_format=$jobname.$filenum\n";
        std::fs::write(&p, text).unwrap();
        let t = Target {
            fs: true,
            ..target()
        };
        let prepared = prepare(&p, &t, &no_env).unwrap();
        let out = prepared
            .render(&Rewrite {
                cgroup: &|n: &str| Some(n.to_string()),
                max_runtime: None,
                trace_dir: Path::new("/work"),
                directory: Some(Path::new("/work/mnt")),
                keep_lab_options: false,
            })
            .unwrap();
        assert!(out.contains("\ndirectory=/work/mnt\n"), "{out}");
        assert!(!out.contains("filename=/dev/loop7"), "{out}");
        assert!(out.contains("filename=obj.o:passwd\n"), "{out}");
        assert!(out.contains("nrfiles=4\n") && out.contains("filename_format=$jobname.$filenum"));
        assert!(!out.lines().any(|l| l == "directory=/etc"), "{out}");
        // A name with a path, or a trace, is refused.
        std::fs::write(&p, "[a]\nfilename_format=../$jobname\n").unwrap();
        let e = prepare(&p, &t, &no_env).unwrap_err();
        assert_eq!(e.option.as_deref(), Some("filename_format"));
        std::fs::write(&p, "[a]\nread_iolog=x.log\n").unwrap();
        assert!(prepare(&p, &t, &no_env)
            .unwrap_err()
            .message
            .contains("--mount"));
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
        let (p, _d) = prep(E5).unwrap();
        let out = render(&p, Some(10 * NS_PER_SEC));
        assert!(out.starts_with("; Checked"));
        assert!(out.contains("[global]\nfilename=/dev/loop7\ncgroup_nodelete=1\nruntime=10\n"));
        assert!(!out.contains("\nfilename=/dev/sdX"));
        assert!(out.contains("; elevator lab: replaced by filename=/dev/loop7: filename=/dev/sdX"));
        assert!(!out.lines().any(|l| l.starts_with("cgroup_weight")));
        assert!(out.contains("cgroup=elv1_test1\n"));
        assert!(out.contains("cgroup=elv1_test2\n"));
        assert!(out.contains("\nruntime=5\n"));
        assert!(!out.contains("runtime=20"));
    }

    #[test]
    fn runtime_formats() {
        assert_eq!(fio_time(3 * NS_PER_SEC), "3");
        assert_eq!(fio_time(1500 * NS_PER_MS), "1500ms");
        let (p, _d) = prep("[a]\nruntime=2m\ntimeout=0\n").unwrap();
        let out = render(&p, Some(1500 * NS_PER_MS));
        assert_eq!(out.matches("runtime=1500ms").count(), 3, "{out}");
        let out = render(&p, None);
        assert!(out.contains("runtime=2m\nruntime=0\n"), "{out}");
    }

    #[test]
    fn unset_device_variable_still_parses() {
        let d = dir();
        let p = d.path().join("j.fio");
        std::fs::write(
            &p,
            "[global]\nfilename=${ELEVATOR_TEST_UNSET_DEV}\n[a]\nrw=read\ncgroup=g1\n",
        )
        .unwrap();
        let jf = parse_for_device(&p, "/dev/loop9", false).unwrap();
        assert_eq!(jf.jobs[0].filenames, vec!["/dev/loop9".to_string()]);
        assert_eq!(jf.jobs[0].cgroup.as_deref(), Some("g1"));
    }

    #[test]
    fn the_simulation_of_a_raw_device_run_sends_the_io_to_the_device() {
        // fio runs a job without filename= or size= on the device (its size
        // is the device's); the simulation must too, not refuse it for
        // want of size= or put directory= jobs on a file system.
        let d = dir();
        let p = d.path().join("j.fio");
        std::fs::write(
            &p,
            "[a]
rw=randread
bs=4k
runtime=1
time_based
[b]
directory=/tmp
size=1m
rw=read
",
        )
        .unwrap();
        let text = sim_text_for_device(&p, "/dev/loop7", &no_env)
            .unwrap()
            .expect("no traces: a text");
        let spec =
            crate::run::RunSpec::new(crate::run::JobSource::text("j.fio", &text)).device("ram");
        let spec = crate::run::RunSpec {
            max_runtime_ns: Some(crate::sim::time::NS_PER_MS),
            ..spec
        };
        let jf = crate::run::parse_job(&spec).unwrap();
        for j in &jf.jobs {
            assert_eq!(j.filenames, vec!["/dev/loop7".to_string()], "{text}");
        }
        crate::run::run(&spec).expect("the simulator runs it");
        // A job that replays a trace keeps its own text.
        std::fs::write(
            d.path().join("t.log"),
            "fio version 2 iolog\n/dev/vdb add\n/dev/vdb open\n/dev/vdb read 0 4096\n/dev/vdb close\n",
        )
        .unwrap();
        std::fs::write(
            &p,
            format!("[a]\nread_iolog={}\n", d.path().join("t.log").display()),
        )
        .unwrap();
        assert_eq!(
            sim_text_for_device(&p, "/dev/loop7", &no_env).unwrap(),
            None
        );
    }

    #[test]
    fn the_lab_reads_the_weights_it_writes_itself() {
        // fio's copy has no cgroup_weight= (the lab writes the weight
        // file), but the lab's own parse must still see it: without it the
        // groups were made with the kernel's default weight, silently.
        let d = dir();
        let p = d.path().join("e5.fio");
        std::fs::write(&p, E5).unwrap();
        let jf = parse_for_device(&p, "/dev/loop7", false).unwrap();
        let w: Vec<(Option<&str>, Option<u32>)> = jf
            .jobs
            .iter()
            .map(|j| (j.cgroup.as_deref(), j.cgroup_weight))
            .collect();
        assert!(w.contains(&(Some("test1"), Some(1000))), "{w:?}");
        assert!(w.contains(&(Some("test2"), Some(800))), "{w:?}");
    }

    #[test]
    fn includes_are_spliced_and_checked() {
        let d = dir();
        std::fs::write(d.path().join("inc.fio"), "filename=/dev/sdb\nbs=8k\n").unwrap();
        std::fs::write(d.path().join("job.fio"), "[a]\ninclude inc.fio\nrw=read\n").unwrap();
        let text = read_inlined(&d.path().join("job.fio")).unwrap();
        assert!(text.contains("bs=8k\nrw=read"), "{text}");
        let p = prepare(&d.path().join("job.fio"), &target(), &no_env).unwrap();
        let out = render(&p, None);
        assert!(out.contains("replaced by filename=/dev/loop7: filename=/dev/sdb"));
        // A refused option in an include is named by the include's file and line.
        std::fs::write(d.path().join("bad.fio"), "bs=4k\nexec_prerun=rm -rf /\n").unwrap();
        std::fs::write(d.path().join("j2.fio"), "[a]\ninclude bad.fio\n").unwrap();
        let e = prepare(&d.path().join("j2.fio"), &target(), &no_env).unwrap_err();
        assert!(e.file.ends_with("bad.fio") && e.line == 2, "{e}");
        assert_eq!(e.option.as_deref(), Some("exec_prerun"));
        std::fs::write(d.path().join("loop.fio"), "[a]\ninclude loop.fio\n").unwrap();
        assert!(read_inlined(&d.path().join("loop.fio"))
            .unwrap_err()
            .contains("nested"));
        // fio includes any line starting with "include".
        std::fs::write(d.path().join("j3.fio"), "[a]\ninclude=/etc/passwd\n").unwrap();
        let e = prepare(&d.path().join("j3.fio"), &target(), &no_env).unwrap_err();
        assert_eq!((e.line, e.option.as_deref()), (2, Some("include")), "{e}");
        // Only regular files.
        std::fs::write(d.path().join("j4.fio"), "[a]\ninclude /dev/zero\n").unwrap();
        let e = prepare(&d.path().join("j4.fio"), &target(), &no_env).unwrap_err();
        assert!(e.message.contains("not a regular file"), "{e}");
    }

    #[test]
    fn refusals_name_file_line_and_option() {
        for (text, option) in [
            (
                "[a]\nrw=read\nexec_prerun=touch /x\n",
                "exec_postrun_or_prerun",
            ),
            ("[a]\nioengine=external:/tmp/x.so\n", "ioengine"),
            ("[a]\nioengine=sg\n", "ioengine"),
            ("[a]\nioengine=net\n", "ioengine"),
            ("[a]\nmem=mmapshared:/etc/x\n", "mem"),
            ("[a]\niomem=mmaphuge:/hugetlbfs/x\n", "iomem"),
            ("[a]\nbuffer_pattern='/etc/shadow'\n", "buffer_pattern"),
            ("[a]\nioscheduler=bfq\n", "ioscheduler"),
            ("[a]\nprofile=act\n", "profile"),
            ("[a]\nmerge_blktrace_file=/etc/x\n", "merge_blktrace_file"),
            ("[a]\nallow_mounted_write=1\n", "allow_mounted_write"),
            ("[a]\nsome_future_option=/dev/sda\n", "some_future_option"),
            ("[a]\nFILENAME=/dev/sda\n", "FILENAME"),
            ("[a]\n--filename=/dev/sda\n", "--filename"),
            ("[a]\nread_iolog=-\n", "read_iolog"),
            ("[a]\nread_iolog=/dev/sda\n", "read_iolog"),
            ("[a]\nread_iolog=a.log:b.log\n", "read_iolog"),
        ] {
            let e = prep(text).unwrap_err();
            assert!(e.file.ends_with("job.fio"), "{e}");
            let want_line = text.lines().count();
            assert_eq!(e.line, want_line, "{text}: {e}");
            if option != "exec_postrun_or_prerun" {
                assert_eq!(e.option.as_deref(), Some(option), "{e}");
            }
            let shown = e.to_string();
            assert!(
                shown.contains(&format!(":{want_line}: option '")),
                "{shown}"
            );
        }
        // Options before any section.
        let e = prep("bs=4k\n[a]\n").unwrap_err();
        assert_eq!(e.line, 1);
    }

    #[test]
    fn environment_variables_are_replaced_before_the_check() {
        let env = |n: &str| match n {
            "KEY" => Some("exec_prerun".to_string()),
            "BS" => Some("8k".to_string()),
            "AGAIN" => Some("${BS}".to_string()),
            _ => None,
        };
        let d = dir();
        let p = d.path().join("j.fio");
        std::fs::write(&p, "[a]\nbs=${BS}\n${KEY}=touch /x\n").unwrap();
        let e = prepare(&p, &target(), &env).unwrap_err();
        assert_eq!(e.option.as_deref(), Some("exec_prerun"), "{e}");
        std::fs::write(&p, "[a]\nbs=${BS}\n").unwrap();
        let out = render(&prepare(&p, &target(), &env).unwrap(), None);
        assert!(out.contains("\nbs=8k\n"), "{out}");
        std::fs::write(&p, "[a]\nbs=${AGAIN}\n").unwrap();
        assert!(prepare(&p, &target(), &env).is_err());
        // A variable cannot add a line, nor cut one.
        let env2 = |n: &str| match n {
            "NL" => Some("4k\nexec_prerun=touch /x".to_string()),
            "SEMI" => Some("4k;x".to_string()),
            _ => None,
        };
        for line in ["bs=${NL}", "bs=${SEMI}"] {
            std::fs::write(&p, format!("[a]\n{line}\n")).unwrap();
            let e = prepare(&p, &target(), &env2).unwrap_err();
            assert_eq!(e.line, 2, "{e}");
        }
        // The comment is cut before variables are replaced, as fio does.
        std::fs::write(&p, "[a]\nbs=4k ; ${NL}\n").unwrap();
        assert!(prepare(&p, &target(), &env2).is_ok());
        // fio reads a long line in pieces: refused.
        let long = format!(
            "[a]\ndescription={}exec_prerun=touch /x\n",
            "a".repeat(8179)
        );
        std::fs::write(&p, long).unwrap();
        assert!(prepare(&p, &target(), &env)
            .unwrap_err()
            .message
            .contains("bytes"));
        assert_eq!(expand_env("a=${X}b${}c", &|_| Some("1".into())), "a=1b${}c");
    }

    #[test]
    fn logs_go_to_plain_names() {
        let (p, _d) = prep(
            "[../../etc/x]\nwrite_lat_log=/etc/cron.d/evil\nwrite_bw_log\nwrite_iops_log=a b\nwrite_hist_log=..\nwrite_iolog=/root/.bashrc\n[b]\nwrite_iolog=x/.bashrc\n",
        )
        .unwrap();
        let out = render(&p, None);
        assert!(out.contains("\nwrite_lat_log=evil\n"), "{out}");
        assert!(out.contains("\nwrite_bw_log=x\n"), "{out}");
        assert!(out.contains("\nwrite_iops_log=a_b\n"), "{out}");
        assert!(out.contains("\nwrite_hist_log=x\n"), "{out}");
        assert!(out.contains("\nwrite_iolog=bashrc.iolog\n"), "{out}");
        assert!(out.contains("\nwrite_iolog=2-bashrc.iolog\n"), "{out}");
        for l in out.lines().filter(|l| l.starts_with("write_")) {
            assert!(!l.contains('/'), "{l}");
        }
    }

    #[test]
    fn every_option_fio_has_is_classified() {
        // A sample from fio's options.c: the file-naming ones are not Safe.
        for k in [
            "filename",
            "directory",
            "filename_format",
            "opendir",
            "read_iolog",
            "replay_redirect",
            "write_iolog",
            "write_lat_log",
            "write_bw_log",
            "write_iops_log",
            "write_hist_log",
            "exec_prerun",
            "exec_postrun",
            "ioengine",
            "mem",
            "buffer_pattern",
            "verify_pattern",
            "merge_blktrace_file",
            "dp_scheme",
            "ioscheduler",
            "profile",
        ] {
            assert_ne!(classify(k), Class::Safe, "{k}");
        }
        for k in [
            "bs", "rw", "iodepth", "pre_read", "lockfile", "hipri", "thread",
        ] {
            assert_eq!(classify(k), Class::Safe, "{k}");
        }
    }

    #[test]
    fn iologs_are_checked_and_sent_to_the_device() {
        let v2 = "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 0 4096\n/dev/sdb wait 0 100\n\n/dev/sdb close\n";
        let (k, out) = check_iolog(v2.as_bytes(), "/dev/loop7", "t").unwrap();
        assert_eq!(k, TraceKind::IologV2);
        let out = String::from_utf8(out).unwrap();
        assert_eq!(
            out,
            "fio version 2 iolog\n/dev/loop7 add\n/dev/loop7 open\n/dev/loop7 write 0 4096\n/dev/loop7 wait 0 100\n/dev/loop7 close\n"
        );
        let v3 = "fio version 3 iolog\n0 /mnt/x add\n5 /mnt/x open\n10 /mnt/x read 8192 512\n";
        let (k, out) = check_iolog(v3.as_bytes(), "/dev/loop7", "t").unwrap();
        assert_eq!(k, TraceKind::IologV3);
        assert!(String::from_utf8(out)
            .unwrap()
            .ends_with("10 /dev/loop7 read 8192 512\n"));
        for bad in [
            "/dev/sda write 0 4096\n",
            "fio version 2 iolog\n/dev/sda unlink\n",
            "fio version 2 iolog\n/dev/sda write x 4096\n",
            "fio version 2 iolog\n/dev/sda write 0\n",
            "fio version 2 iolog\n/dev/sda write 0 1 2\n",
            "fio version 3 iolog\n/dev/sda write 0 4096\n",
        ] {
            assert!(
                check_iolog(bad.as_bytes(), "/dev/loop7", "t").is_err(),
                "{bad}"
            );
        }
    }

    fn blk_record(le: bool, dev: u32, pdu: &[u8]) -> Vec<u8> {
        let w32 = |v: u32| if le { v.to_le_bytes() } else { v.to_be_bytes() };
        let mut r = Vec::new();
        r.extend(w32(BLK_IO_TRACE_MAGIC | BLK_IO_TRACE_VERSION));
        r.extend(w32(1)); // sequence
        r.extend([0u8; 8]); // time
        r.extend([0u8; 8]); // sector
        r.extend(w32(4096)); // bytes
        r.extend(w32(1)); // action
        r.extend(w32(100)); // pid
        r.extend(w32(dev));
        r.extend(w32(0)); // cpu
        r.extend([0u8; 2]); // error
        let l = pdu.len() as u16;
        r.extend(if le { l.to_le_bytes() } else { l.to_be_bytes() });
        r.extend(pdu);
        r
    }

    #[test]
    fn blktraces_are_checked_and_pointed_at_the_device() {
        for le in [true, false] {
            let sda = 8 << 20;
            let mut t = blk_record(le, sda, b"");
            t.extend(blk_record(le, sda, b"fio\0"));
            let out = check_blktrace(&t, Some((7, 3)), "t").unwrap();
            assert_eq!(out.len(), t.len());
            let dev = |at: usize| {
                let b: [u8; 4] = out[at + 36..at + 40].try_into().unwrap();
                if le {
                    u32::from_le_bytes(b)
                } else {
                    u32::from_be_bytes(b)
                }
            };
            assert_eq!(dev(0), (7 << 20) | 3);
            assert_eq!(dev(48), (7 << 20) | 3);
            // Cut short, bad version, payload past the end.
            assert!(check_blktrace(&t[..60], None, "t").is_err());
            let mut v = t.clone();
            v[if le { 0 } else { 3 }] = 0x06;
            assert!(check_blktrace(&v, None, "t").is_err());
            let mut p = blk_record(le, sda, b"");
            let n = if le { [200u8, 0] } else { [0u8, 200] };
            p[46..48].copy_from_slice(&n);
            assert!(check_blktrace(&p, None, "t").is_err());
        }
    }

    #[test]
    fn read_iolog_becomes_a_checked_private_copy() {
        let d = dir();
        std::fs::write(
            d.path().join("trace.log"),
            "fio version 2 iolog\n/dev/vdb add\n/dev/vdb open\n/dev/vdb write 0 4096\n/dev/vdb close\n",
        )
        .unwrap();
        let j = d.path().join("j.fio");
        std::fs::write(
            &j,
            format!(
                "[a]\nread_iolog={}\nreplay_redirect=/dev/vdb\n",
                d.path().join("trace.log").display()
            ),
        )
        .unwrap();
        let p = prepare(&j, &target(), &no_env).unwrap();
        assert_eq!(p.traces.len(), 1);
        let out = render(&p, None);
        assert!(
            out.contains("\nread_iolog=/work/trace-1.iolog\nreplay_redirect=/dev/loop7\n"),
            "{out}"
        );
        assert!(
            !out.lines().any(|l| l == "replay_redirect=/dev/vdb"),
            "{out}"
        );
        let copy = String::from_utf8(p.traces[0].data.clone()).unwrap();
        assert!(!copy.contains("vdb"), "{copy}");
        // Relative to the job file's directory.
        std::fs::write(&j, "[a]\nread_iolog=trace.log\n").unwrap();
        assert!(prepare(&j, &target(), &no_env).is_ok());
        std::fs::write(d.path().join("v1.log"), "/dev/vdb write 0 4096\n").unwrap();
        std::fs::write(&j, "[a]\nread_iolog=v1.log\n").unwrap();
        let e = prepare(&j, &target(), &no_env).unwrap_err();
        assert!(e.message.contains("not a trace the lab can check"), "{e}");
    }
}
