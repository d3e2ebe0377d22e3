//! Sections of raw options → `JobSpec`s.
//!
//! Mirrors fio's model: `[global]` sections accumulate into one default job
//! (fio's `def_thread`); each job section starts from a copy of it, so a
//! global only affects jobs below it. Jobs are expanded by `numjobs` and get
//! reporting groups the way fio's `add_job` assigns them.

use super::lexer::{error, RawOpt, Section};
use super::options::{
    engine_kind, engine_runs_syncfs, iodepth_limit, lookup, suggest, Arg, Key, OptDef, ENGINE_HINT,
    MAX_NR_FILES,
};
use super::spec::*;
use super::units::{
    eval_expression, parse_float, parse_percent, parse_signed, parse_size, parse_time_ns,
    split_top_level, Unit, SIZE_HINT,
};
use super::Inputs;
use crate::cgroup::IoPrioClass;
use crate::machine::Machine;

/// fio's limit on the number of jobs (`FIO_MAX_JOBS`).
pub(crate) const MAX_JOBS: usize = 4096;
/// fio's limits: `BSSPLIT_MAX`, `ZONESPLIT_MAX`, `FIO_IO_U_LIST_MAX_LEN`.
const BSSPLIT_MAX: usize = 64;
const ZONESPLIT_MAX: usize = 256;
const PERCENTILE_MAX: usize = 20;
/// Highest CPU number accepted in `cpus_allowed` (bounds the list size).
const MAX_CPU: u64 = 4095;

const NS_PER_SEC: u64 = 1_000_000_000;
const NS_PER_US: u64 = 1_000;

/// fio's `$pagesize` (x86-64 pages). `$ncpus` and `$mb_memory` come from the
/// simulated machine, not the host, so results stay deterministic.
pub(crate) const PAGESIZE: u64 = 4096;

const RW_HINT: &str =
    "expected one of: read, write, trim, randread, randwrite, randtrim, rw, readwrite, randrw, trimwrite, randtrimwrite";

/// A job section's options before fio's end-of-parse fixups.
#[derive(Clone, Debug)]
struct Builder {
    spec: JobSpec,
    /// Per-direction `bs`, `bsrange` and `bssplit`; fio keeps them apart and
    /// `bssplit` beats `bsrange` beats `bs` (see `finish`).
    bs: [u64; 3],
    bsrange: [Option<(u64, u64)>; 3],
    bssplit: [Option<Vec<(u64, u32)>>; 3],
    new_group: bool,
    /// `bwavgtime` / `iopsavgtime` given explicitly (fio's
    /// `fio_option_is_set`): otherwise a bw/iops log sets them.
    bwavgtime_set: bool,
    iopsavgtime_set: bool,
    /// Where `iodepth` was set (its limit depends on the engine, which may
    /// come later or from `[global]`), for the error message.
    iodepth_at: Option<RawOpt>,
    /// Where `end_syncfs` was turned on (fio checks the engine for it).
    end_syncfs_at: Option<RawOpt>,
    /// Where `size` was set, for fio's check against the smallest block.
    size_at: Option<RawOpt>,
    zones: ZoneOpts,
    rates: RateOpts,
    /// `verify=` names a kind of check (not 0) and `do_verify` (default
    /// on): fio runs the read-back only with both.
    verify_kind: bool,
    do_verify: bool,
}

/// `zonemode` and its sizes as given, checked together when the job ends
/// (fio's `fixup_options`), with where they were set for the message.
#[derive(Clone, Debug, Default)]
struct ZoneOpts {
    strided: bool,
    size: u64,
    range: u64,
    skip: u64,
    mode_at: Option<RawOpt>,
    size_at: Option<RawOpt>,
}

impl ZoneOpts {
    /// fio 3.33 init.c: zonesize with zonemode=none (the default) and
    /// zonemode=strided without zonesize are errors; zonerange defaults to
    /// zonesize.
    fn strided(&self) -> Result<Option<StridedZones>, JobError> {
        let at = |o: &Option<RawOpt>, msg: &str| match o {
            Some(o) => error(&o.file, o.line, Some(&o.key), with_arg(msg.to_string(), o)),
            None => error("", 0, None, msg),
        };
        match (self.strided, self.size) {
            (false, 0) => Ok(None),
            (false, _) => Err(at(
                &self.size_at,
                "zonesize needs zonemode=strided (fio 3.33 refuses zonesize with \
                 zonemode=none, its default: --zonemode=none and --zonesize are not compatible)",
            )),
            (true, 0) => Err(at(
                &self.mode_at,
                "zonemode=strided needs zonesize (fio: --zonesize must be specified when \
                 using --zonemode=strided)",
            )),
            (true, size) => Ok(Some(StridedZones {
                size,
                range: if self.range == 0 { size } else { self.range },
                skip: self.skip,
            })),
        }
    }
}

/// Where the rate limits were last given a value that is not 0, checked
/// when the job ends (fio's `fixup_options`).
#[derive(Clone, Debug, Default)]
struct RateOpts {
    rate: Option<RawOpt>,
    rate_iops: Option<RawOpt>,
    rate_min: Option<RawOpt>,
    rate_iops_min: Option<RawOpt>,
}

impl RateOpts {
    /// Note option `o` (`name` as the table spells it) if it is a rate
    /// option; a value of 0 in every direction unsets it, as in fio.
    fn note(&mut self, name: &str, o: &RawOpt, value: Option<&str>, kb: u32) {
        let slot = match name {
            "rate" => &mut self.rate,
            "rate_iops" => &mut self.rate_iops,
            "rate_min" => &mut self.rate_min,
            "rate_iops_min" => &mut self.rate_iops_min,
            _ => return,
        };
        let any = value.is_some_and(|v| {
            v.split(',')
                .any(|p| !p.trim().is_empty() && parse_size(p.trim(), kb).map_or(true, |x| x > 0))
        });
        *slot = any.then(|| o.clone());
    }

    /// fio 3.33 refuses `rate` with `rate_iops` (in any directions), and
    /// `rate_min` with `rate_iops_min`; and its Poisson process divides by
    /// the I/Os a second a byte rate gives (`usec_for_io`: rate / smallest
    /// block), so a rate below one block a second cannot run.
    fn check(&self, spec: &JobSpec) -> Result<(), JobError> {
        let pairs = [
            ("rate", &self.rate, "rate_iops", &self.rate_iops),
            (
                "rate_min",
                &self.rate_min,
                "rate_iops_min",
                &self.rate_iops_min,
            ),
        ];
        for (bytes_name, bytes, ios_name, ios) in pairs {
            if let (Some(a), Some(b)) = (bytes, ios) {
                // Point at the later of the two; name the other.
                let (later, other) = if (a.file.as_str(), a.line) >= (b.file.as_str(), b.line) {
                    (a, b)
                } else {
                    (b, a)
                };
                let place = if other.line == 0 {
                    other.file.clone()
                } else {
                    format!("{}:{}", other.file, other.line)
                };
                let msg = format!(
                    "{bytes_name} and {ios_name} are mutually exclusive: fio 3.33 refuses a \
                     job that gives both (the other is set at {place})"
                );
                return Err(error(&later.file, later.line, Some(&later.key), msg));
            }
        }
        if spec.rate_process == RateProcess::Poisson {
            for d in Ddir::ALL {
                let (Some(rate), Some(at)) = (spec.rate[d.index()], &self.rate) else {
                    continue;
                };
                let min_bs = spec.bs[d.index()].min();
                if rate < min_bs {
                    let msg = format!(
                        "{} rate {rate} B/s is below one block ({min_bs} B) a second: fio's \
                         rate_process=poisson counts rate / smallest block I/Os a second and \
                         divides by that 0",
                        ["read", "write", "trim"][d.index()]
                    );
                    return Err(error(&at.file, at.line, Some(&at.key), msg));
                }
            }
        }
        Ok(())
    }
}

impl Builder {
    fn new() -> Builder {
        let mut spec = JobSpec::with_defaults("");
        // 0 = "not set": fio derives these from iodepth at the end.
        spec.iodepth_low = 0;
        spec.iodepth_batch_complete_max = 0;
        Builder {
            spec,
            bs: [4096; 3],
            bsrange: [None, None, None],
            bssplit: [None, None, None],
            new_group: false,
            bwavgtime_set: false,
            iopsavgtime_set: false,
            iodepth_at: None,
            end_syncfs_at: None,
            size_at: None,
            zones: ZoneOpts::default(),
            rates: RateOpts::default(),
            verify_kind: false,
            do_verify: true,
        }
    }

    /// fio's `fixup_options` for the fields the model uses.
    fn finish(mut self) -> JobSpec {
        self.spec.verify = self.verify_kind && self.do_verify;
        for d in 0..3 {
            self.spec.bs[d] = if let Some(split) = self.bssplit[d].take() {
                BlockSizes::Split(split)
            } else if let Some((min, max)) = self.bsrange[d] {
                BlockSizes::Range { min, max }
            } else {
                BlockSizes::Fixed(self.bs[d])
            };
        }
        let s = &mut self.spec;
        if s.iodepth_low == 0 || s.iodepth_low > s.iodepth {
            s.iodepth_low = s.iodepth;
        }
        if s.iodepth_batch_submit == 0 || s.iodepth_batch_submit > s.iodepth {
            s.iodepth_batch_submit = s.iodepth;
        }
        if s.iodepth_batch_complete_min > s.iodepth_batch_complete_max {
            s.iodepth_batch_complete_max = s.iodepth_batch_complete_min;
        }
        // `filename` overrides `nrfiles`.
        if !s.filenames.is_empty() {
            s.nrfiles = u32::try_from(s.filenames.len()).unwrap_or(u32::MAX);
        }
        // fio's add_job: a bw/iops log without an explicit bwavgtime /
        // iopsavgtime samples at log_avg_msec (0 = every I/O).
        if s.write_bw_log.is_some() && !self.bwavgtime_set {
            s.bwavgtime_ms = s.log_avg_msec;
        }
        if s.write_iops_log.is_some() && !self.iopsavgtime_set {
            s.iopsavgtime_ms = s.log_avg_msec;
        }
        self.spec
    }
}

/// Parses sections in order, keeping fio's global state between them.
pub(crate) struct Parser<'e> {
    env: &'e dyn Fn(&str) -> Option<String>,
    machine: &'e Machine,
    global: Builder,
    jobs: Vec<JobSpec>,
    global_options: Vec<(String, String)>,
    ignored: Vec<String>,
    group_id: u32,
    /// Jobs already in the current group (fio's `prev_group_jobs`).
    group_jobs: u32,
}

impl<'e> Parser<'e> {
    pub(crate) fn new(inputs: &Inputs<'e>) -> Parser<'e> {
        Parser {
            env: inputs.env,
            machine: inputs.machine,
            global: Builder::new(),
            jobs: Vec::new(),
            global_options: Vec::new(),
            ignored: Vec::new(),
            group_id: 0,
            group_jobs: 0,
        }
    }

    /// Apply one section. `force_stonewall` is set for the first job of the
    /// second and later job files on a command line (fio separates job files
    /// by a stonewall).
    pub(crate) fn section(&mut self, sec: &Section, force_stonewall: bool) -> Result<(), JobError> {
        if sec.is_global() {
            let mut g = std::mem::replace(&mut self.global, Builder::new());
            let mut opts = Vec::new();
            let r = self.apply_all(&mut g, &sec.opts, &mut opts);
            self.global = g;
            r?;
            self.global_options.extend(opts);
            return Ok(());
        }
        let mut b = self.global.clone();
        b.spec.name = sec.name.clone();
        let mut opts = Vec::new();
        self.apply_all(&mut b, &sec.opts, &mut opts)?;
        if force_stonewall {
            b.spec.stonewall = true;
        }
        let new_group = b.new_group;
        let iodepth_at = b.iodepth_at.take();
        let end_syncfs_at = b.end_syncfs_at.take();
        let size_at = b.size_at.take();
        let zones = std::mem::take(&mut b.zones);
        let rates = std::mem::take(&mut b.rates);
        let mut spec = b.finish();
        spec.strided_zones = zones.strided()?;
        rates.check(&spec)?;
        if let (Some(SizeSpec::Bytes(size)), Some(at)) = (spec.size, &size_at) {
            // fio's fixup_options: a byte size (not a percentage) below
            // td_min_bs, the smallest block of any direction, used or not.
            let min_bs = Ddir::ALL.iter().map(|d| spec.bs[d.index()].min()).min();
            if let Some(min_bs) = min_bs.filter(|&m| size > 0 && size < m) {
                let msg = format!(
                    "size too small, must not be less than minimum block size: \
                     {size} < {min_bs} (fio refuses the job)"
                );
                return Err(error(&at.file, at.line, Some(&at.key), msg));
            }
        }
        if let (Some((max, why)), Some(at)) = (
            iodepth_limit(&spec.ioengine.name, spec.ioengine.kind),
            &iodepth_at,
        ) {
            if spec.iodepth > max {
                let msg = format!(
                    "{} exceeds {max}, {why}; ioengine={}",
                    spec.iodepth, spec.ioengine.name
                );
                return Err(error(&at.file, at.line, Some(&at.key), with_arg(msg, at)));
            }
        }
        if let Some(at) = end_syncfs_at.filter(|_| !engine_runs_syncfs(&spec.ioengine.name)) {
            let msg = format!(
                "ioengine={} does not support syncfs (fio runs end_syncfs with \
                 sync, psync, vsync, pvsync, pvsync2, libaio or posixaio)",
                spec.ioengine.name
            );
            return Err(error(&at.file, at.line, Some(&at.key), msg));
        }
        spec.job_options = opts;
        let n = spec.numjobs as usize;
        if self.jobs.len() + n > MAX_JOBS {
            return Err(error(
                &sec.file,
                sec.line,
                Some("numjobs"),
                format!("too many jobs: more than {MAX_JOBS} in total (fio's limit)"),
            ));
        }
        // fio's add_job: stonewall/new_group opens a new group unless the
        // current one is still empty; clones stay in their parent's group.
        if (spec.stonewall || new_group) && self.group_jobs > 0 {
            self.group_id += 1;
            self.group_jobs = 0;
        }
        for clone in 0..spec.numjobs {
            let mut j = spec.clone();
            j.clone_index = clone;
            j.subjob_number = if clone == 0 { 0 } else { spec.numjobs - clone };
            j.job_index = u32::try_from(self.jobs.len()).unwrap_or(u32::MAX);
            j.group_id = self.group_id;
            j.stonewall = spec.stonewall && clone == 0;
            self.jobs.push(j);
            self.group_jobs += 1;
        }
        Ok(())
    }

    /// Forget all `[global]` settings (fio's `fill_def_thread`, done before
    /// every job file after the first on a command line).
    pub(crate) fn reset_globals(&mut self) {
        self.global = Builder::new();
        self.global_options.clear();
    }

    pub(crate) fn finish(self, source: &str) -> Result<JobFile, JobError> {
        if self.jobs.is_empty() {
            return Err(error(
                source,
                0,
                None,
                "no jobs defined: need at least one [jobname] section (or --name=jobname)",
            ));
        }
        Ok(JobFile {
            source: source.to_string(),
            jobs: self.jobs,
            global_options: self.global_options,
            ignored: self.ignored,
        })
    }

    /// Apply a section's options; `kb_base` first, as fio sorts it ahead of
    /// the others so it governs every size in the section.
    fn apply_all(
        &mut self,
        b: &mut Builder,
        opts: &[RawOpt],
        out: &mut Vec<(String, String)>,
    ) -> Result<(), JobError> {
        for o in opts
            .iter()
            .filter(|o| lookup(&o.key).and_then(|d| d.key) == Some(Key::KbBase))
        {
            self.apply(b, o, &mut Vec::new())?;
        }
        let start = out.len();
        for o in opts {
            self.apply(b, o, out)?;
        }
        // List options in the order fio parses (and so reports) them; `sort_by_key`
        // is stable, so file order holds within a priority.
        out[start..].sort_by_key(|(name, _)| lookup(name).map(OptDef::order).unwrap_or((false, 0)));
        Ok(())
    }

    fn apply(
        &mut self,
        b: &mut Builder,
        o: &RawOpt,
        out: &mut Vec<(String, String)>,
    ) -> Result<(), JobError> {
        let fail = |msg: String| error(&o.file, o.line, Some(&o.key), with_arg(msg, o));
        let Some(def) = lookup(&o.key) else {
            let msg = match suggest(&o.key) {
                Some(s) => format!("unknown option '{}'; did you mean '{s}'?", o.key),
                None => format!("unknown option '{}'", o.key),
            };
            return Err(fail(msg));
        };
        let mut unset = Vec::new();
        let value = o.value.as_deref().map(|v| self.expand(v, &mut unset));
        if value.is_none() && !def.arg.bare_ok() {
            return Err(fail(format!(
                "option '{}' needs a value ({}=...)",
                o.key, o.key
            )));
        }
        // fio's JSON lists options with their value; bare ones are left out.
        if let Some(v) = &value {
            out.push((def.name.to_string(), v.clone()));
        }
        b.rates.note(def.name, o, value.as_deref(), b.spec.kb_base);
        let Some(key) = def.key else {
            // Not modelled, but fio still checks an on/off option's form.
            if matches!(def.arg, Arg::Bool | Arg::Flag) {
                on_off_value(def.arg, value.as_deref()).map_err(fail)?;
            }
            if !self.ignored.iter().any(|n| n == def.name) {
                self.ignored.push(def.name.to_string());
            }
            return Ok(());
        };
        set(b, key, def, value.as_deref().map(str::trim)).map_err(|msg| {
            match unset.as_slice() {
                [] => fail(msg),
                names => fail(format!(
                    "{msg}: ${{{}}} is not set in the environment (fio expands it to nothing)",
                    names.join("}, ${")
                )),
            }
        })?;
        if key == Key::CpusAllowed {
            // fio: "CPU %d too large (max=%ld)" against the configured CPUs.
            let top = b.spec.cpus_allowed.as_ref().and_then(|l| l.last().copied());
            if let Some(cpu) = top.filter(|&c| c >= self.machine.cpus) {
                return Err(fail(format!(
                    "CPU {cpu} too large (max={}): the simulated machine has {} CPUs (--cpus sets them)",
                    self.machine.cpus - 1,
                    self.machine.cpus
                )));
            }
        }
        if key == Key::IoDepth {
            b.iodepth_at = Some(o.clone());
        }
        if key == Key::Size {
            b.size_at = Some(o.clone());
        }
        if key == Key::EndSyncfs {
            b.end_syncfs_at = b.spec.end_syncfs.then(|| o.clone());
        }
        if key == Key::ZoneMode {
            b.zones.mode_at = Some(o.clone());
        }
        if key == Key::ZoneSize {
            b.zones.size_at = Some(o.clone());
        }
        Ok(())
    }

    /// `${VAR}` from the environment (undefined → empty, its name added to
    /// `unset` for the error message), then fio's
    /// `$pagesize`/`$mb_memory`/`$ncpus` keywords with `bc`-like maths.
    fn expand(&self, v: &str, unset: &mut Vec<String>) -> String {
        let mut out = String::with_capacity(v.len());
        let mut rest = v;
        while let Some(start) = rest.find("${") {
            let after = &rest[start + 2..];
            let Some(end) = after.find('}') else {
                break;
            };
            out.push_str(&rest[..start]);
            let name = &after[..end];
            if !name.is_empty() {
                match (self.env)(name) {
                    Some(val) => out.push_str(&val),
                    None => unset.push(name.to_string()),
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        if !out.contains('$') {
            return out;
        }
        let replaced = out
            .replace("$pagesize", &PAGESIZE.to_string())
            .replace("$mb_memory", &self.machine.mb_memory().to_string())
            .replace("$ncpus", &self.machine.cpus.to_string());
        if replaced == out {
            return out;
        }
        // Like fio piping through bc: integer result, or the text unchanged.
        if replaced.contains(['+', '-', '*', '/']) {
            if let Ok(v) = eval_expression(&replaced, Unit::Size { kb_base: 1024 }) {
                if v.abs() < 9.0e18 {
                    return format!("{}", v.trunc() as i64);
                }
            }
        }
        replaced
    }
}

/// An error message about `o`, naming its command-line argument if it has one.
fn with_arg(msg: String, o: &RawOpt) -> String {
    match &o.arg {
        Some(a) => format!("{msg} (argument '{a}')"),
        None => msg,
    }
}

/// fio's `check_int` (parse.c): `sscanf("%u")`, or `"%x"` when the text
/// holds "0x". Leading blanks and a sign are taken, and reading stops at the
/// first character that is not a digit, so "1abc" is 1 and "yes" is no
/// number at all.
fn fio_check_int(v: &str) -> Option<i64> {
    let t = v.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let hex = v.contains("0x") || v.contains("0X");
    let (digits, radix) = if hex {
        let t = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        (t, 16)
    } else {
        (t, 10)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let n = i64::from_str_radix(&digits[..end], radix).ok()?;
    Some(if neg { -n } else { n })
}

/// The value of one of fio's on/off options. `Arg::Bool` (FIO_OPT_BOOL:
/// `direct`, `randrepeat`, ...) needs a number and allows at most 1;
/// `Arg::Flag` (FIO_OPT_STR_SET: `time_based`, `group_reporting`, ...) is
/// on when bare and otherwise any number, 0 meaning off. Words such as
/// "yes" or "true" are errors in fio 3.33, so they are here.
fn on_off_value(arg: Arg, v: Option<&str>) -> Result<bool, String> {
    let Some(v) = v else {
        return match arg {
            Arg::Bool => Err("needs a value 0 or 1".to_string()),
            _ => Ok(true),
        };
    };
    let Some(n) = fio_check_int(v) else {
        let want = if arg == Arg::Bool {
            "0 or 1"
        } else {
            "a number (0 is off)"
        };
        return Err(format!("expected {want}, got '{}'", v.trim()));
    };
    // fio compares against the option's maxval of 1 only from above: a
    // negative number (stored as a large unsigned one) passes, and is on.
    if arg == Arg::Bool && n > 1 {
        return Err(format!("value {n} out of range (1 max)"));
    }
    Ok(n != 0)
}

/// fio's integer options accept size suffixes too (`iodepth=1k` is 1024).
fn int_in(v: &str, kb_base: u32, min: u64, max: u64) -> Result<u64, String> {
    let t = v.trim();
    let n = parse_size(t, kb_base).map_err(|_| format!("expected a whole number, got '{t}'"))?;
    if n < min || n > max {
        return Err(format!("value {n} out of range {min}..{max}"));
    }
    Ok(n)
}

fn u32_in(v: &str, kb_base: u32, min: u32, max: u32) -> Result<u32, String> {
    int_in(v, kb_base, u64::from(min), u64::from(max)).map(|n| n as u32)
}

/// fio's per-direction lists `read,write,trim`: an empty entry leaves that
/// direction alone; a last non-empty entry also covers the directions after
/// it (`bs=8k,32k` → trim 32k, `bs=8k,32k,` → trim unchanged).
fn per_dir<T: Clone>(
    value: &str,
    mut parse: impl FnMut(&str) -> Result<T, String>,
) -> Result<[Option<T>; 3], String> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "at most 3 comma-separated values (read,write,trim), got {}",
            parts.len()
        ));
    }
    let mut out: [Option<T>; 3] = [None, None, None];
    for (d, slot) in out.iter_mut().enumerate() {
        if let Some(p) = parts.get(d) {
            if !p.is_empty() {
                *slot = Some(parse(p)?);
            }
        }
    }
    if let Some(last) = parts.last().filter(|p| !p.is_empty()) {
        let fill = parse(last)?;
        for slot in out.iter_mut().skip(parts.len()) {
            *slot = Some(fill.clone());
        }
    }
    if out.iter().all(Option::is_none) {
        return Err("missing value".into());
    }
    Ok(out)
}

fn size_or_percent(v: &str, kb_base: u32) -> Result<SizeSpec, String> {
    if let Some(p) = parse_percent(v) {
        return p.map(SizeSpec::Percent);
    }
    if v.trim().ends_with(['z', 'Z']) {
        return Err(format!(
            "zone units ('{}') need zonemode=zbd, which is not modelled",
            v.trim()
        ));
    }
    parse_size(v, kb_base)
        .map(SizeSpec::Bytes)
        .map_err(|e| format!("{e}, or a percentage like 50%"))
}

/// `a-b` or `a:b` (swapped if reversed) or a single `a` meaning `a-a`.
fn range<T: PartialOrd + Copy>(
    v: &str,
    mut parse: impl FnMut(&str) -> Result<T, String>,
) -> Result<(T, T), String> {
    let t = v.trim();
    let (lo, hi) = match split_top_level(t, &['-', ':']) {
        Some((a, b)) => (parse(a)?, parse(b)?),
        None => {
            let x = parse(t)?;
            (x, x)
        }
    };
    Ok(if lo > hi { (hi, lo) } else { (lo, hi) })
}

fn positive_size(v: &str, kb_base: u32) -> Result<u64, String> {
    let n = parse_size(v, kb_base)?;
    if n == 0 {
        return Err(format!(
            "size must be at least 1 byte, got '{}'; {SIZE_HINT}",
            v.trim()
        ));
    }
    Ok(n)
}

/// `bssplit` entries `size/pct:size/pct:...` for one direction. Blank or
/// zero percentages share what is left of 100 (fio's rule); the list is
/// sorted by percentage like fio does before picking sizes.
fn bssplit(v: &str, kb_base: u32) -> Result<Vec<(u64, u32)>, String> {
    let mut entries: Vec<(u64, Option<u32>)> = Vec::new();
    for item in v.split(':') {
        let item = item.trim();
        if item.is_empty() {
            // fio stops at the first empty entry.
            break;
        }
        if entries.len() == BSSPLIT_MAX {
            return Err(format!("bssplit has more than {BSSPLIT_MAX} entries"));
        }
        let (size, pct) = match item.split_once('/') {
            Some((s, p)) => (s, Some(p.trim())),
            None => (item, None),
        };
        let size = positive_size(size, kb_base)?;
        let pct = match pct {
            None | Some("") => None,
            Some(p) => {
                let n: u64 = p.parse().map_err(|_| {
                    format!("bad bssplit percentage '{p}'; expected e.g. 4k/10:64k/90")
                })?;
                if n == 0 {
                    None
                } else {
                    Some(n.min(100) as u32)
                }
            }
        };
        entries.push((size, pct));
    }
    if entries.is_empty() {
        return Err("empty bssplit; expected e.g. 4k/10:64k/50:32k/40".into());
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if given > 100 {
        return Err(format!(
            "bssplit percentages add up to {given}, more than 100"
        ));
    }
    let share = (100 - given).checked_div(missing).unwrap_or(0);
    let mut out: Vec<(u64, u32)> = entries
        .into_iter()
        .map(|(s, p)| (s, p.unwrap_or(share)))
        .collect();
    out.sort_by_key(|e| e.1);
    Ok(out)
}

/// `filename=a:b` with `\:` escaping a colon.
fn filenames(v: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = v.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' => {
                if !cur.trim().is_empty() {
                    out.push(cur.trim().to_string());
                }
                cur.clear();
            }
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

fn cpu_list(v: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |s: &str| -> Result<u64, String> {
            let n: u64 = s
                .trim()
                .parse()
                .map_err(|_| format!("bad CPU number '{}'; expected e.g. 0-3,6", s.trim()))?;
            if n > MAX_CPU {
                return Err(format!("CPU {n} too large (max {MAX_CPU})"));
            }
            Ok(n)
        };
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => (num(part)?, num(part)?),
        };
        if lo > hi {
            return Err(format!("bad CPU range '{part}': start after end"));
        }
        cpus.extend((lo..=hi).map(|c| c as u32));
    }
    if cpus.is_empty() {
        return Err("empty CPU list; expected e.g. 0-3,6".into());
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn percentile_list(v: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for p in v.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let x = parse_float(p)?;
        if !(0.0..=100.0).contains(&x) {
            return Err(format!("percentile {p} out of range 0..100"));
        }
        out.push(x);
    }
    if out.is_empty() {
        return Err("empty percentile list; expected e.g. 99:99.9:99.99".into());
    }
    if out.len() > PERCENTILE_MAX {
        return Err(format!(
            "at most {PERCENTILE_MAX} percentiles, got {}",
            out.len()
        ));
    }
    Ok(out)
}

fn rw_pattern(base: &str) -> Option<RwPattern> {
    Some(match base {
        "read" => RwPattern::Read,
        "write" => RwPattern::Write,
        "trim" => RwPattern::Trim,
        "randread" => RwPattern::RandRead,
        "randwrite" => RwPattern::RandWrite,
        "randtrim" => RwPattern::RandTrim,
        "rw" | "readwrite" => RwPattern::ReadWrite,
        "randrw" => RwPattern::RandRw,
        "trimwrite" => RwPattern::TrimWrite,
        "randtrimwrite" => RwPattern::RandTrimWrite,
        // Metadata patterns of the filecreate/filestat/filedelete engines;
        // those engines are NotModelled, so the direction is only nominal.
        "filecreate" => RwPattern::Write,
        "filestat" | "filedelete" => RwPattern::Read,
        _ => return None,
    })
}

/// Zones per direction, as stored in `JobSpec::random_zones`.
type Zones = Option<[Vec<RandomZone>; 3]>;

/// `file_service_type=TYPE[:N]` as fio's `str_fst_cb` takes it: N is the
/// I/Os per turn for random, roundrobin and sequential, and the parameter
/// of zipf (theta, default 1.1, not 1), pareto (h in 0..1, default 0.2) and
/// normal/gauss (deviation in 0..100 %, default 0).
fn file_service(v: &str) -> Result<FileService, String> {
    let t = v.trim();
    let (name, postfix) = match t.split_once(':') {
        Some((a, p)) => (a.trim(), Some(p.trim())),
        None => (t, None),
    };
    let param = || postfix.map(parse_float).transpose();
    let kind = match name {
        "roundrobin" => FileServiceKind::RoundRobin,
        "sequential" => FileServiceKind::Sequential,
        "random" => FileServiceKind::Random,
        "zipf" => FileServiceKind::Zipf(zipf_theta(param()?)?),
        "pareto" => FileServiceKind::Pareto(pareto_h(param()?)?),
        "normal" | "gauss" => FileServiceKind::Normal(normal_deviation(param()?)?),
        _ => {
            return Err(format!(
                "bad value '{name}'; expected one of: random, roundrobin, sequential, \
                 zipf[:THETA], pareto[:H], normal[:DEV], gauss[:DEV] (with :N I/Os per \
                 turn for the first three)"
            ))
        }
    };
    let per_turn = match (kind, postfix) {
        (FileServiceKind::Zipf(_) | FileServiceKind::Pareto(_) | FileServiceKind::Normal(_), _)
        | (_, None) => 1,
        // fio takes atoi(N); 0 would never change file, which is what
        // sequential does anyway, so only positive counts are taken.
        (_, Some(n)) => n.parse::<u32>().ok().filter(|&n| n > 0).ok_or_else(|| {
            format!("'{n}' after '{name}:': expected the number of I/Os per file turn (1 or more)")
        })?,
    };
    Ok(FileService { kind, per_turn })
}

/// zipf's theta, fio's default 1.1 when absent: positive and not 1 (both
/// `random_distribution` and `file_service_type` take it so).
fn zipf_theta(param: Option<f64>) -> Result<f64, String> {
    match param.unwrap_or(1.1) {
        th if th > 0.0 && th.is_finite() && th != 1.0 => Ok(th),
        th => Err(format!(
            "zipf theta {th}: expected a number > 0 other than 1"
        )),
    }
}

/// pareto's h, fio's default 0.2 when absent: 0 < h < 1.
fn pareto_h(param: Option<f64>) -> Result<f64, String> {
    match param.unwrap_or(0.2) {
        h if h > 0.0 && h < 1.0 => Ok(h),
        h => Err(format!("pareto h {h}: expected 0 < h < 1")),
    }
}

/// normal's deviation in % of the range, default 0: 0 <= deviation < 100.
fn normal_deviation(param: Option<f64>) -> Result<f64, String> {
    match param.unwrap_or(0.0) {
        d if (0.0..100.0).contains(&d) => Ok(d),
        d => Err(format!(
            "normal deviation {d}: expected 0 <= deviation < 100"
        )),
    }
}

/// `random_distribution`: random | zipf[:θ[:c]] | pareto[:h[:c]] |
/// normal[:σ%[:c]] | zoned:... | zoned_abs:...
fn distribution(v: &str, kb_base: u32) -> Result<(RandomDistribution, Zones), String> {
    let t = v.trim();
    for (prefix, absolute) in [("zoned_abs:", true), ("zoned:", false)] {
        if let Some(rest) = t.strip_prefix(prefix) {
            let zones = per_dir(rest, |d| zones(d, absolute, kb_base))?;
            let [r, w, tr] = zones;
            return Ok((
                RandomDistribution::Random,
                Some([
                    r.unwrap_or_default(),
                    w.unwrap_or_default(),
                    tr.unwrap_or_default(),
                ]),
            ));
        }
    }
    if t.starts_with("sequence:") || t == "sequence" {
        // fio 3.41's fixed list of block indices, repeated
        // (random_sequence_stride): an access pattern the model has no
        // generator for; a substitute would silently change the workload.
        return Err(format!(
            "'{t}': the 'sequence' distribution (a fixed list of block indices) is not \
             modelled; expected one of: random, zipf:THETA, pareto:H, normal:SIGMA, \
             zoned:PCT/PCT:..., zoned_abs:PCT/SIZE:..."
        ));
    }
    let mut parts = t.split(':');
    let name = parts.next().unwrap_or("").trim();
    let param = parts.next().map(parse_float).transpose()?;
    let center = parts.next().map(parse_float).transpose()?;
    if parts.next().is_some() {
        return Err(format!(
            "too many ':' fields in '{t}'; expected e.g. zipf:1.2 or zipf:1.2:0.5"
        ));
    }
    if let Some(c) = center {
        if !(0.0..=1.0).contains(&c) {
            return Err(format!("distribution center {c} out of range 0..1"));
        }
    }
    let dist = match name {
        "random" if param.is_none() => RandomDistribution::Random,
        "zipf" => RandomDistribution::Zipf {
            theta: zipf_theta(param)?,
            center,
        },
        "pareto" => RandomDistribution::Pareto {
            h: pareto_h(param)?,
            center,
        },
        "normal" => RandomDistribution::Normal {
            sigma_pct: normal_deviation(param)?,
            center,
        },
        _ => {
            return Err(format!(
            "bad distribution '{t}'; expected one of: random, zipf:THETA, pareto:H, normal:SIGMA, \
                 zoned:PCT/PCT:..., zoned_abs:PCT/SIZE:..."
        ))
        }
    };
    Ok((dist, None))
}

/// One direction of a zoned distribution: `access/region:access/region:...`.
fn zones(v: &str, absolute: bool, kb_base: u32) -> Result<Vec<RandomZone>, String> {
    let mut raw: Vec<(Option<u32>, Option<u64>)> = Vec::new();
    for item in v.split(':').map(str::trim) {
        if item.is_empty() {
            break;
        }
        if raw.len() == ZONESPLIT_MAX {
            return Err(format!("more than {ZONESPLIT_MAX} zones"));
        }
        let (a, r) = item.split_once('/').unwrap_or((item, ""));
        // fio 3.33 rejects a zone without its access percentage ("split
        // conversion failed"); only the size may be left out.
        let access = match a.trim() {
            "" => {
                return Err(format!(
                    "zone '{item}' needs an access percentage, e.g. 60/10"
                ))
            }
            a => Some(
                a.parse::<u32>()
                    .ok()
                    .filter(|n| *n <= 100)
                    .ok_or_else(|| format!("bad zone access percentage '{a}'"))?,
            ),
        };
        let region = match r.trim() {
            "" if absolute => return Err(format!("zone '{item}' needs a size, e.g. 60/20g")),
            "" => None,
            r if absolute => Some(parse_size(r, kb_base)?),
            r => Some(
                r.parse::<u64>()
                    .ok()
                    .filter(|n| *n <= 100)
                    .ok_or_else(|| format!("bad zone size percentage '{r}'"))?,
            ),
        };
        raw.push((access, region));
    }
    if raw.is_empty() {
        return Err("empty zone list; expected e.g. zoned:60/10:30/20:10/70".into());
    }
    let fill = |vals: Vec<Option<u64>>, what: &str, exact: bool| -> Result<Vec<u64>, String> {
        let given: u64 = vals.iter().flatten().sum();
        let missing = vals.iter().filter(|v| v.is_none()).count() as u64;
        if given > 100 {
            return Err(format!(
                "zone {what} percentages add up to {given}, more than 100"
            ));
        }
        // fio's zone_split_ddir: every missing value gets an equal share,
        // rounded down (zoned:60/:30/:10/ gives 33% each; the last 1% of
        // the file is never touched).
        let share = (100 - given).checked_div(missing).unwrap_or(0);
        let out: Vec<u64> = vals.iter().map(|v| v.unwrap_or(share)).collect();
        if exact && out.iter().sum::<u64>() != 100 {
            return Err(format!(
                "zone {what} percentages must add up to 100, got {given}"
            ));
        }
        Ok(out)
    };
    let access = fill(
        raw.iter().map(|z| z.0.map(u64::from)).collect(),
        "access",
        true,
    )?;
    let regions: Vec<SizeSpec> = if absolute {
        raw.iter()
            .map(|z| SizeSpec::Bytes(z.1.unwrap_or(0)))
            .collect()
    } else {
        fill(raw.iter().map(|z| z.1).collect(), "size", false)?
            .into_iter()
            .map(|p| SizeSpec::Percent(p as f64))
            .collect()
    };
    Ok(access
        .into_iter()
        .zip(regions)
        .map(|(a, region)| RandomZone {
            access_pct: a as u32,
            region,
        })
        .collect())
}

/// Set one modelled option. `v` is None only for options that allow bare use.
/// Every key is dispatched here, so a key without a setter does not compile.
fn set(b: &mut Builder, key: Key, def: &OptDef, v: Option<&str>) -> Result<(), String> {
    if matches!(def.arg, Arg::Bool | Arg::Flag) {
        return set_flag(b, key, def, on_off_value(def.arg, v)?);
    }
    match key {
        Key::Rw
        | Key::RwMixRead
        | Key::RwMixWrite
        | Key::PercentageRandom
        | Key::PercentageSequential
        | Key::RandomDistribution
        | Key::RandomGenerator
        | Key::RandSeed => set_pattern(b, key, def, v),
        Key::Bs | Key::BsRange | Key::BsSplit | Key::BlockAlign => set_block_size(b, key, def, v),
        Key::Size
        | Key::IoSize
        | Key::Offset
        | Key::OffsetIncrement
        | Key::OffsetAlign
        | Key::Filename
        | Key::Directory
        | Key::FileSize
        | Key::NrFiles
        | Key::FileServiceType => set_file_option(b, key, def, v),
        Key::ZoneMode | Key::ZoneSize | Key::ZoneRange | Key::ZoneSkip => set_zone(b, key, def, v),
        Key::Verify => {
            b.verify_kind = verify_kind(required(def, v)?)?;
            Ok(())
        }
        // Not an option fio's jobs can ignore harmlessly: it replaces the
        // jobs with a generated workload.
        Key::Profile => Err("fio's profile option runs one of fio's built-in workload \
             generators (tiobench, act), which elevator does not model; a device \
             profile (a TOML file) is given to `elevator run` with --device FILE"
            .to_string()),
        Key::Rate | Key::RateIops | Key::RateProcess | Key::ThinkTime | Key::ThinkTimeBlocks => {
            set_pacing(b, key, def, v)
        }
        Key::Fsync | Key::Fdatasync | Key::FadviseHint | Key::Sync => {
            set_sync_option(b, key, def, v)
        }
        Key::PercentileList
        | Key::BwAvgTime
        | Key::IopsAvgTime
        | Key::Description
        | Key::WriteLatLog
        | Key::WriteBwLog
        | Key::WriteIopsLog
        | Key::LogAvgMsec
        | Key::LogWindowValue => set_report_option(b, key, def, v),
        Key::Name
        | Key::KbBase
        | Key::NumJobs
        | Key::IoDepth
        | Key::IoDepthBatchSubmit
        | Key::IoDepthBatchCompleteMin
        | Key::IoDepthBatchCompleteMax
        | Key::IoDepthLow
        | Key::IoEngine
        | Key::Runtime
        | Key::RampTime
        | Key::StartDelay
        | Key::Loops
        | Key::NumberIos
        | Key::Cgroup
        | Key::CgroupWeight
        | Key::Prio
        | Key::PrioClass
        | Key::CpusAllowed
        | Key::CpusAllowedPolicy => set_job_option(b, key, def, v),
        Key::BsUnaligned
        | Key::Direct
        | Key::Buffered
        | Key::TimeBased
        | Key::NoRandomMap
        | Key::RandRepeat
        | Key::GroupReporting
        | Key::NewGroup
        | Key::Stonewall
        | Key::ClatPercentiles
        | Key::LatPercentiles
        | Key::SlatPercentiles
        | Key::EndFsync
        | Key::FsyncOnClose
        | Key::EndSyncfs
        | Key::Invalidate
        | Key::Unlink
        | Key::UnlinkEachLoop
        | Key::Overwrite
        | Key::PreRead
        | Key::PerJobLogs
        | Key::LogOffset
        | Key::LogPrio
        | Key::DoVerify => unreachable_bool(def),
    }
}

/// An on/off option (fio's FIO_OPT_BOOL and "set" options).
fn set_flag(b: &mut Builder, key: Key, def: &OptDef, on: bool) -> Result<(), String> {
    match key {
        Key::BsUnaligned => b.spec.bs_unaligned = on,
        Key::Direct => b.spec.direct = on,
        Key::Buffered => b.spec.direct = !on,
        Key::TimeBased => b.spec.time_based = on,
        Key::NoRandomMap => b.spec.norandommap = on,
        Key::RandRepeat => b.spec.randrepeat = on,
        Key::GroupReporting => b.spec.group_reporting = on,
        Key::NewGroup => b.new_group = on,
        Key::Stonewall => b.spec.stonewall = on,
        Key::ClatPercentiles => b.spec.clat_percentiles = on,
        Key::LatPercentiles => b.spec.lat_percentiles = on,
        Key::SlatPercentiles => b.spec.slat_percentiles = on,
        Key::EndFsync => b.spec.end_fsync = on,
        Key::FsyncOnClose => b.spec.fsync_on_close = on,
        Key::EndSyncfs => b.spec.end_syncfs = on,
        Key::Invalidate => b.spec.invalidate = on,
        Key::Unlink => b.spec.unlink = on,
        Key::UnlinkEachLoop => b.spec.unlink_each_loop = on,
        Key::Overwrite => b.spec.overwrite = on,
        Key::PreRead => b.spec.pre_read = on,
        Key::PerJobLogs => b.spec.per_job_logs = on,
        Key::LogOffset => b.spec.log_offset = on,
        Key::LogPrio => b.spec.log_prio = on,
        Key::DoVerify => b.do_verify = on,
        _ => return Err(format!("internal: option '{}' is not a boolean", def.name)),
    }
    Ok(())
}

/// The job's identity, queue depth and engine, run length, cgroup and priority.
fn set_job_option(b: &mut Builder, key: Key, def: &OptDef, v: Option<&str>) -> Result<(), String> {
    let kb = b.spec.kb_base;
    let val = || required(def, v);
    let nonempty = || required_nonempty(def, v);
    let s = &mut b.spec;
    match key {
        Key::Name => s.name = nonempty()?,
        Key::KbBase => {
            s.kb_base = match val()?.trim() {
                "1024" => 1024,
                "1000" => 1000,
                t => return Err(format!("expected one of: 1024, 1000; got '{t}'")),
            }
        }
        Key::NumJobs => s.numjobs = u32_in(val()?, kb, 1, MAX_JOBS as u32)?,
        Key::IoDepth => s.iodepth = u32_in(val()?, kb, 1, u32::MAX)?,
        Key::IoDepthBatchSubmit => s.iodepth_batch_submit = u32_in(val()?, kb, 0, u32::MAX)?,
        Key::IoDepthBatchCompleteMin => {
            s.iodepth_batch_complete_min = u32_in(val()?, kb, 0, u32::MAX)?
        }
        Key::IoDepthBatchCompleteMax => {
            s.iodepth_batch_complete_max = u32_in(val()?, kb, 0, u32::MAX)?
        }
        Key::IoDepthLow => s.iodepth_low = u32_in(val()?, kb, 0, u32::MAX)?,
        Key::IoEngine => {
            let name = nonempty()?;
            // fio converts the old names "aio" and "linuxaio" to libaio.
            let name = if name == "aio" || name == "linuxaio" {
                "libaio".to_string()
            } else {
                name
            };
            let kind = engine_kind(&name).ok_or_else(|| {
                format!("unknown ioengine '{name}'; expected one of: {ENGINE_HINT}")
            })?;
            s.ioengine = IoEngine { name, kind };
        }
        Key::Runtime => {
            let t = parse_time_ns(val()?, NS_PER_SEC)?;
            s.runtime = (t > 0).then_some(t);
        }
        Key::RampTime => s.ramp_time = parse_time_ns(val()?, NS_PER_SEC)?,
        Key::StartDelay => s.startdelay = range(val()?, |x| parse_time_ns(x, NS_PER_SEC))?,
        Key::Loops => s.loops = u32_in(val()?, kb, 0, u32::MAX)?,
        Key::NumberIos => {
            let n = int_in(val()?, kb, 0, u64::MAX)?;
            s.number_ios = (n > 0).then_some(n);
        }
        Key::Cgroup => s.cgroup = Some(nonempty()?),
        Key::CgroupWeight => s.cgroup_weight = Some(u32_in(val()?, kb, 100, 1000)?),
        Key::Prio => s.prio = Some(u32_in(val()?, kb, 0, 7)? as u8),
        Key::PrioClass => {
            let n = u32_in(val()?, kb, 0, 3)? as u16;
            s.prioclass = IoPrioClass::from_number(n)
        }
        Key::CpusAllowed => s.cpus_allowed = Some(cpu_list(val()?)?),
        Key::CpusAllowedPolicy => {
            s.cpus_allowed_split = match val()?.trim() {
                "shared" => false,
                "split" => true,
                t => return Err(format!("expected one of: shared, split; got '{t}'")),
            }
        }
        _ => return not_in_group(def),
    }
    Ok(())
}

/// The access pattern: `rw` and its modifier, mixes, randomness, distributions and seeds.
fn set_pattern(b: &mut Builder, key: Key, def: &OptDef, v: Option<&str>) -> Result<(), String> {
    let kb = b.spec.kb_base;
    let val = || required(def, v);
    let s = &mut b.spec;
    match key {
        Key::Rw => {
            let t = val()?.trim();
            let (base, postfix) = match t.split_once(':') {
                Some((a, p)) => (a.trim(), Some(p.trim())),
                None => (t, None),
            };
            let rw = rw_pattern(base).ok_or_else(|| format!("bad value '{base}'; {RW_HINT}"))?;
            s.rw = rw;
            s.rw_modifier = match postfix {
                None => None,
                Some("") => return Err(format!("missing number after ':' in '{t}'")),
                Some(p) if rw.is_random() => {
                    let n = int_in(p, kb, 1, i64::MAX as u64).map_err(|e| {
                        format!(
                            "{e}; expected the number of I/Os per random offset, e.g. randread:8"
                        )
                    })?;
                    Some(n as i64)
                }
                Some(p) => {
                    let n = parse_signed(p, Unit::Size { kb_base: kb })?;
                    Some(i64::try_from(n).map_err(|_| format!("offset step '{p}' too large"))?)
                }
            };
        }
        Key::RwMixRead => s.rwmixread = u32_in(val()?, kb, 0, 100)?,
        Key::RwMixWrite => s.rwmixread = 100 - u32_in(val()?, kb, 0, 100)?,
        // fio: maxval 100, one value per direction.
        Key::PercentageRandom | Key::PercentageSequential => {
            let perc = per_dir(val()?, |p| u32_in(p, kb, 0, 100))?;
            for (slot, p) in s.percentage_random.iter_mut().zip(perc) {
                if let Some(p) = p {
                    *slot = if key == Key::PercentageRandom {
                        p
                    } else {
                        100 - p
                    };
                }
            }
        }
        Key::RandomDistribution => {
            let (d, z) = distribution(val()?, kb)?;
            s.random_distribution = d;
            s.random_zones = z;
        }
        Key::RandomGenerator => {
            s.random_generator = match val()?.trim() {
                "tausworthe" => RandomGenerator::Tausworthe,
                "lfsr" => RandomGenerator::Lfsr,
                "tausworthe64" => RandomGenerator::Tausworthe64,
                t => {
                    return Err(format!(
                        "bad value '{t}'; expected one of: tausworthe, lfsr, tausworthe64"
                    ))
                }
            }
        }
        Key::RandSeed => s.randseed = Some(int_in(val()?, kb, 0, u64::MAX)?),
        _ => return not_in_group(def),
    }
    Ok(())
}

/// Block sizes: `bs`, `bsrange`, `bssplit`, `blockalign` (per direction).
fn set_block_size(b: &mut Builder, key: Key, def: &OptDef, v: Option<&str>) -> Result<(), String> {
    let kb = b.spec.kb_base;
    let val = || required(def, v);
    let s = &mut b.spec;
    match key {
        Key::Bs => set_given(&mut b.bs, per_dir(val()?, |p| positive_size(p, kb))?, |x| x),
        Key::BsRange => set_given(
            &mut b.bsrange,
            per_dir(val()?, |p| range(p, |x| positive_size(x, kb)))?,
            Some,
        ),
        Key::BsSplit => set_given(&mut b.bssplit, per_dir(val()?, |p| bssplit(p, kb))?, Some),
        Key::BlockAlign => set_given(
            &mut s.blockalign,
            per_dir(val()?, |p| positive_size(p, kb))?,
            Some,
        ),
        _ => return not_in_group(def),
    }
    Ok(())
}

/// Where the job does I/O: sizes, offsets, files and directories.
fn set_file_option(b: &mut Builder, key: Key, def: &OptDef, v: Option<&str>) -> Result<(), String> {
    let kb = b.spec.kb_base;
    let val = || required(def, v);
    let s = &mut b.spec;
    match key {
        Key::Size => {
            s.size = match size_or_percent(val()?, kb)? {
                SizeSpec::Bytes(0) => None,
                x => Some(x),
            }
        }
        Key::IoSize => {
            s.io_size = match size_or_percent(val()?, kb)? {
                SizeSpec::Bytes(0) => None,
                x => Some(x),
            }
        }
        Key::Offset => s.offset = size_or_percent(val()?, kb)?,
        Key::OffsetIncrement => s.offset_increment = size_or_percent(val()?, kb)?,
        // fio divides by it (get_start_offset): 0 would be its crash.
        Key::OffsetAlign => s.offset_align = Some(positive_size(val()?, kb)?),
        Key::Filename => {
            let names = filenames(val()?);
            if names.is_empty() {
                return Err("expected one or more file names separated by ':'".into());
            }
            s.filenames = names;
        }
        // An empty directory (e.g. from an unset ${VAR}) means "none".
        Key::Directory => s.directory = Some(val()?.trim().to_string()).filter(|d| !d.is_empty()),
        Key::FileSize => s.filesize = Some(range(val()?, |x| positive_size(x, kb))?),
        Key::NrFiles => {
            let n = u32_in(val()?, kb, 1, u32::MAX)?;
            if n > MAX_NR_FILES {
                return Err(format!(
                    "{n} exceeds {MAX_NR_FILES}, the most files one job can hold open \
                     (fs.nr_open; fio opens all of a job's files at once)"
                ));
            }
            s.nrfiles = n;
        }
        Key::FileServiceType => s.file_service = file_service(val()?)?,
        _ => return not_in_group(def),
    }
    Ok(())
}

/// `zonemode` and the strided zones' sizes (checked together in
/// `ZoneOpts::strided`).
fn set_zone(b: &mut Builder, key: Key, def: &OptDef, v: Option<&str>) -> Result<(), String> {
    let kb = b.spec.kb_base;
    let v = required(def, v)?;
    let bytes = || match size_or_percent(v, kb)? {
        SizeSpec::Bytes(n) => Ok(n),
        SizeSpec::Percent(_) => Err("expected a size like 1m (not a percentage)".to_string()),
    };
    let z = &mut b.zones;
    match key {
        Key::ZoneMode => {
            z.strided = match v.trim() {
                "none" => false,
                "strided" => true,
                "zbd" => return Err(
                    "zonemode=zbd (zoned block devices) is not modelled; expected none or strided"
                        .into(),
                ),
                t => {
                    return Err(format!(
                        "bad value '{t}'; expected one of: none, strided, zbd"
                    ))
                }
            }
        }
        Key::ZoneSize => z.size = bytes()?,
        Key::ZoneRange => z.range = bytes()?,
        Key::ZoneSkip => z.skip = bytes()?,
        _ => return not_in_group(def),
    }
    Ok(())
}

/// `verify=`: whether the value names a check (fio 3.33's list); "0" is
/// none. The kind changes only the CPU fio spends on checksums, which the
/// model does not charge.
fn verify_kind(v: &str) -> Result<bool, String> {
    const KINDS: [&str; 18] = [
        "md5",
        "crc64",
        "crc32",
        "crc32c-intel",
        "crc32c",
        "crc16",
        "crc7",
        "sha1",
        "sha256",
        "sha512",
        "sha3-224",
        "sha3-256",
        "sha3-384",
        "sha3-512",
        "xxhash",
        "meta",
        "pattern",
        "null",
    ];
    match v.trim() {
        "0" => Ok(false),
        t if KINDS.contains(&t) => Ok(true),
        t => Err(format!(
            "bad value '{t}'; expected one of: 0, {}",
            KINDS.join(", ")
        )),
    }
}

/// Pacing: rate limits and think time.
fn set_pacing(b: &mut Builder, key: Key, def: &OptDef, v: Option<&str>) -> Result<(), String> {
    let kb = b.spec.kb_base;
    let val = || required(def, v);
    let s = &mut b.spec;
    match key {
        // 0 means no limit.
        Key::Rate => set_given(&mut s.rate, per_dir(val()?, |p| parse_size(p, kb))?, |x| {
            (x > 0).then_some(x)
        }),
        Key::RateIops => set_given(
            &mut s.rate_iops,
            per_dir(val()?, |p| int_in(p, kb, 0, u64::MAX))?,
            |x| (x > 0).then_some(x),
        ),
        Key::RateProcess => {
            s.rate_process = match val()?.trim() {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                t => return Err(format!("bad value '{t}'; expected one of: linear, poisson")),
            }
        }
        Key::ThinkTime => s.thinktime = parse_time_ns(val()?, NS_PER_US)?,
        Key::ThinkTimeBlocks => s.thinktime_blocks = u32_in(val()?, kb, 0, u32::MAX)?,
        _ => return not_in_group(def),
    }
    Ok(())
}

/// Syncs and page-cache hints: `fsync`, `fdatasync`, `fadvise_hint`, `sync`.
fn set_sync_option(b: &mut Builder, key: Key, def: &OptDef, v: Option<&str>) -> Result<(), String> {
    let kb = b.spec.kb_base;
    let val = || required(def, v);
    let s = &mut b.spec;
    match key {
        Key::Fsync => s.fsync = u32_in(val()?, kb, 0, u32::MAX)?,
        Key::Fdatasync => s.fdatasync = u32_in(val()?, kb, 0, u32::MAX)?,
        Key::FadviseHint => {
            // fio 3.33 options.c: 0 → none, 1 → by the pattern, or a forced one.
            s.fadvise_hint = match val()?.trim() {
                "0" => FadviseHint::None,
                "1" => FadviseHint::Auto,
                "sequential" => FadviseHint::Sequential,
                "random" => FadviseHint::Random,
                t => {
                    return Err(format!(
                        "bad value '{t}'; expected one of: 0, 1, sequential, random"
                    ))
                }
            }
        }
        Key::Sync => {
            // fio 3.33 options.c: none|0 → 0, sync|1 → O_SYNC, dsync → O_DSYNC.
            s.sync_io = match val()?.trim() {
                "none" | "0" => SyncIo::None,
                "sync" | "1" => SyncIo::Sync,
                "dsync" => SyncIo::Dsync,
                t => {
                    return Err(format!(
                        "bad value '{t}'; expected one of: none, 0, sync, 1, dsync"
                    ))
                }
            }
        }
        _ => return not_in_group(def),
    }
    Ok(())
}

/// What the report and the logs show: percentiles, averaging windows, log files.
fn set_report_option(
    b: &mut Builder,
    key: Key,
    def: &OptDef,
    v: Option<&str>,
) -> Result<(), String> {
    let kb = b.spec.kb_base;
    let val = || required(def, v);
    let s = &mut b.spec;
    match key {
        Key::PercentileList => s.percentile_list = Some(percentile_list(val()?)?),
        Key::BwAvgTime => {
            s.bwavgtime_ms = int_in(val()?, kb, 1, u64::MAX)?;
            b.bwavgtime_set = true;
        }
        Key::IopsAvgTime => {
            s.iopsavgtime_ms = int_in(val()?, kb, 1, u64::MAX)?;
            b.iopsavgtime_set = true;
        }
        Key::Description => {
            s.description = v.map(str::to_string).filter(|d| !d.is_empty());
        }
        // fio: any value (even "0") is the file name prefix; bare or empty
        // means the job name.
        Key::WriteLatLog => s.write_lat_log = Some(v.unwrap_or("").to_string()),
        Key::WriteBwLog => s.write_bw_log = Some(v.unwrap_or("").to_string()),
        Key::WriteIopsLog => s.write_iops_log = Some(v.unwrap_or("").to_string()),
        Key::LogAvgMsec => s.log_avg_msec = int_in(val()?, kb, 0, u64::from(u32::MAX))?,
        Key::LogWindowValue => {
            s.log_max_value = match v.map(|t| t.trim().to_ascii_lowercase()).as_deref() {
                None | Some("1") | Some("max") | Some("true") | Some("on") => true,
                Some("0") | Some("avg") | Some("false") | Some("off") => false,
                Some("both") | Some("2") => {
                    return Err(
                        "'both' is not supported (fio 3.33 logs either avg or max); \
                         expected one of: avg, max"
                            .into(),
                    )
                }
                Some(t) => return Err(format!("bad value '{t}'; expected one of: avg, max")),
            }
        }
        _ => return not_in_group(def),
    }
    Ok(())
}

/// Store each direction's value the option gave (`per_dir`), leaving the
/// other directions as they were.
fn set_given<T, U>(slots: &mut [U; 3], given: [Option<T>; 3], store: impl Fn(T) -> U) {
    for (slot, x) in slots.iter_mut().zip(given) {
        if let Some(x) = x {
            *slot = store(x);
        }
    }
}

/// The value of an option that takes one (`Some` here, checked by the
/// caller, for every option that is not an on/off one).
fn required<'a>(def: &OptDef, v: Option<&'a str>) -> Result<&'a str, String> {
    v.ok_or_else(|| format!("option '{}' needs a value", def.name))
}

/// A value that must not be empty or blank.
fn required_nonempty(def: &OptDef, v: Option<&str>) -> Result<String, String> {
    let s = required(def, v)?.trim();
    if s.is_empty() {
        return Err(format!("option '{}' needs a non-empty value", def.name));
    }
    Ok(s.to_string())
}

/// A key dispatched to a setter that does not handle it: the option table
/// and the setters disagree.
fn not_in_group(def: &OptDef) -> Result<(), String> {
    Err(format!("internal: no setter handles option '{}'", def.name))
}

/// Boolean keys are handled above; reaching here means the table is wrong.
fn unreachable_bool(def: &OptDef) -> Result<(), String> {
    Err(format!(
        "internal: option '{}' should be a boolean",
        def.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_dir_rules() {
        let p = |v: &str| per_dir(v, |x| Ok::<_, String>(x.to_string())).unwrap();
        let s = |x: &str| Some(x.to_string());
        assert_eq!(p("a"), [s("a"), s("a"), s("a")]);
        assert_eq!(p("a,b"), [s("a"), s("b"), s("b")]);
        assert_eq!(p("a,b,"), [s("a"), s("b"), None]);
        assert_eq!(p(",b"), [None, s("b"), s("b")]);
        assert_eq!(p(",b,"), [None, s("b"), None]);
        assert_eq!(p("a,"), [s("a"), None, None]);
        assert_eq!(p("a,b,c"), [s("a"), s("b"), s("c")]);
        assert!(per_dir("a,b,c,d", |x| Ok::<_, String>(x.to_string())).is_err());
        assert!(per_dir(",", |x| Ok::<_, String>(x.to_string())).is_err());
    }

    #[test]
    fn bssplit_blanks_share_the_rest() {
        assert_eq!(
            bssplit("4k/50:1k/:32k/", 1024).unwrap(),
            vec![(1024, 25), (32768, 25), (4096, 50)]
        );
        assert_eq!(
            bssplit("4k/10:64k/50:32k/40", 1024).unwrap(),
            vec![(4096, 10), (32768, 40), (65536, 50)]
        );
        assert_eq!(bssplit("8k", 1024).unwrap(), vec![(8192, 100)]);
        assert!(bssplit("4k/60:8k/60", 1024).is_err());
        assert!(bssplit("4k/x", 1024).is_err());
        assert!(bssplit("0/10", 1024).is_err());
    }

    #[test]
    fn filename_escapes() {
        assert_eq!(filenames("/dev/sda:/dev/sdb"), vec!["/dev/sda", "/dev/sdb"]);
        assert_eq!(
            filenames("/dev/dsk/foo@3,0\\:c"),
            vec!["/dev/dsk/foo@3,0:c"]
        );
        assert_eq!(filenames(":a::b:"), vec!["a", "b"]);
    }

    #[test]
    fn cpus() {
        assert_eq!(cpu_list("0-3,6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(cpu_list("6,0-1,1").unwrap(), vec![0, 1, 6]);
        assert!(cpu_list("3-1").is_err());
        assert!(cpu_list("x").is_err());
        assert!(cpu_list("0-99999").is_err());
    }

    #[test]
    fn file_service_types() {
        let f = |v: &str| file_service(v);
        let svc = |kind, per_turn| Ok(FileService { kind, per_turn });
        assert_eq!(f("roundrobin"), svc(FileServiceKind::RoundRobin, 1));
        assert_eq!(f("random:4"), svc(FileServiceKind::Random, 4));
        assert_eq!(f("sequential"), svc(FileServiceKind::Sequential, 1));
        assert_eq!(f("zipf"), svc(FileServiceKind::Zipf(1.1), 1));
        assert_eq!(f("pareto:0.5"), svc(FileServiceKind::Pareto(0.5), 1));
        assert_eq!(f("gauss"), svc(FileServiceKind::Normal(0.0), 1));
        assert_eq!(f("normal:10"), svc(FileServiceKind::Normal(10.0), 1));
        for bad in [
            "zipf:1",
            "pareto:1",
            "normal:100",
            "random:0",
            "random:x",
            "lru",
        ] {
            assert!(f(bad).is_err(), "{bad}");
        }
        assert!(f("lru").unwrap_err().contains("roundrobin"));
    }

    #[test]
    fn distributions() {
        let d = |v: &str| distribution(v, 1024).map(|x| x.0);
        assert_eq!(d("random"), Ok(RandomDistribution::Random));
        assert_eq!(
            d("zipf:1.2"),
            Ok(RandomDistribution::Zipf {
                theta: 1.2,
                center: None
            })
        );
        assert_eq!(
            d("zipf:1.2:0.5"),
            Ok(RandomDistribution::Zipf {
                theta: 1.2,
                center: Some(0.5)
            })
        );
        assert_eq!(
            d("zipf"),
            Ok(RandomDistribution::Zipf {
                theta: 1.1,
                center: None
            })
        );
        assert_eq!(
            d("pareto:0.9"),
            Ok(RandomDistribution::Pareto {
                h: 0.9,
                center: None
            })
        );
        assert_eq!(
            d("normal:20"),
            Ok(RandomDistribution::Normal {
                sigma_pct: 20.0,
                center: None
            })
        );
        assert!(d("zipf:1").is_err());
        assert!(d("pareto:1.5").is_err());
        assert!(d("normal:100").is_err());
        assert!(d("zipf:1.2:2").is_err());
        assert!(d("uniform").is_err());
        assert!(d("zipf:1.2:0.5:1").is_err());
        let e = d("sequence:2,0,1").unwrap_err();
        assert!(
            e.contains("'sequence' distribution") && e.contains("not modelled"),
            "{e}"
        );
    }

    #[test]
    fn zoned() {
        let (_, z) = distribution("zoned:60/10:30/20:8/30:2/40", 1024).unwrap();
        let z = z.unwrap();
        assert_eq!(z[0].len(), 4);
        assert_eq!(z[0], z[2]);
        assert_eq!(
            z[0][0],
            RandomZone {
                access_pct: 60,
                region: SizeSpec::Percent(10.0)
            }
        );
        // A trailing blank size takes what is left.
        let (_, z) = distribution("zoned:50/5:30/15:20/", 1024).unwrap();
        assert_eq!(z.unwrap()[1][2].region, SizeSpec::Percent(80.0));
        let (_, z) = distribution("zoned_abs:60/20G:30/100G:10/500g", 1024).unwrap();
        assert_eq!(z.unwrap()[0][1].region, SizeSpec::Bytes(100 << 30));
        assert!(distribution("zoned:60/10:30/20", 1024).is_err());
        assert!(distribution("zoned_abs:60/:40/1g", 1024).is_err());
        // As fio 3.33: blank sizes share the rest rounded down; a blank
        // access percentage is an error.
        let (_, z) = distribution("zoned:60/:30/:10/", 1024).unwrap();
        let sizes: Vec<SizeSpec> = z.unwrap()[0].iter().map(|z| z.region).collect();
        assert_eq!(sizes, [SizeSpec::Percent(33.0); 3]);
        assert!(distribution("zoned:60/10:/20:/70", 1024).is_err());
    }
}
