//! Typed job specification: what a parsed fio job file means.
//!
//! The parser (`parse.rs`) fills these from fio syntax; `numjobs` is already
//! expanded (one `JobSpec` per clone) and reporting groups are assigned.
//! Every later stage reads only these types, never raw option strings.

use crate::cgroup::IoPrioClass;
use crate::sim::time::Ns;

/// Data direction, fio's `ddir` order (read=0, write=1, trim=2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ddir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

impl Ddir {
    pub const ALL: [Ddir; 3] = [Ddir::Read, Ddir::Write, Ddir::Trim];
    pub fn index(self) -> usize {
        self as usize
    }
}

/// fio's `rw=` patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwPattern {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// `rw` / `readwrite`: sequential mixed reads and writes.
    ReadWrite,
    RandRw,
    /// `trimwrite`: sequential trim then write of the same block.
    TrimWrite,
    RandTrimWrite,
}

impl RwPattern {
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwPattern::RandRead
                | RwPattern::RandWrite
                | RwPattern::RandTrim
                | RwPattern::RandRw
                | RwPattern::RandTrimWrite
        )
    }
    /// Which directions this pattern issues.
    pub fn ddirs(self) -> &'static [Ddir] {
        match self {
            RwPattern::Read | RwPattern::RandRead => &[Ddir::Read],
            RwPattern::Write | RwPattern::RandWrite => &[Ddir::Write],
            RwPattern::Trim | RwPattern::RandTrim => &[Ddir::Trim],
            RwPattern::ReadWrite | RwPattern::RandRw => &[Ddir::Read, Ddir::Write],
            RwPattern::TrimWrite | RwPattern::RandTrimWrite => &[Ddir::Trim, Ddir::Write],
        }
    }
}

/// Block size choice for one direction.
#[derive(Clone, Debug, PartialEq)]
pub enum BlockSizes {
    Fixed(u64),
    /// `bsrange=min-max`: uniform in multiples of `min` (unless `bs_unaligned`).
    Range {
        min: u64,
        max: u64,
    },
    /// `bssplit=size/pct:...`: weights in percent (sum 100 after filling blanks).
    Split(Vec<(u64, u32)>),
}

impl BlockSizes {
    /// The smallest size it can choose (0 for a split without weights).
    pub fn min(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { min, max } => *min.min(max),
            BlockSizes::Split(v) => v.iter().filter(|e| e.1 > 0).map(|e| e.0).min().unwrap_or(0),
        }
    }

    /// The largest size it can choose.
    pub fn max(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { min, max } => *min.max(max),
            BlockSizes::Split(v) => v.iter().map(|e| e.0).max().unwrap_or(0),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// One I/O at a time, the task blocks until completion (sync, psync, vsync, pvsync, pvsync2, mmap).
    Sync,
    /// Up to `iodepth` in flight (libaio, io_uring, posixaio, solarisaio...).
    Async,
    /// Async passthrough commands that never enter the I/O scheduler (io_uring_cmd, sg).
    Passthrough,
    /// fio's null engine: I/O completes at once without a device.
    Null,
    /// Engines that cannot be modelled (network, exec, metadata, ...).
    NotModelled,
}

#[derive(Clone, Debug, PartialEq)]
pub struct IoEngine {
    pub name: String,
    pub kind: EngineKind,
}

/// fio's `sync=`: the open flag for synchronous writes (filesetup.c ORs it
/// into the open flags). On a block device, an O_DIRECT write then carries
/// REQ_FUA (block/fops.c `dio_bio_write_op`), and a synchronous write call
/// is followed by a cache flush (`generic_write_sync` → `blkdev_fsync`).
/// fio's `fadvise_hint`: the `posix_fadvise` advice fio gives a file at
/// open (`td_io_open_file`), which sets the kernel's readahead for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FadviseHint {
    /// `0`: no advice (the device's `read_ahead_kb`).
    None,
    /// `1` (the default): FADV_RANDOM for random patterns, else
    /// FADV_SEQUENTIAL.
    #[default]
    Auto,
    /// `sequential`: FADV_SEQUENTIAL (twice the readahead window).
    Sequential,
    /// `random`: FADV_RANDOM (no readahead).
    Random,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SyncIo {
    /// `none` or `0` (the default).
    #[default]
    None,
    /// `sync` or `1`: O_SYNC.
    Sync,
    /// `dsync`: O_DSYNC.
    Dsync,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateProcess {
    Linear,
    Poisson,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RandomDistribution {
    Random,
    /// zipf:theta
    Zipf {
        theta: f64,
        center: Option<f64>,
    },
    /// pareto:h
    Pareto {
        h: f64,
        center: Option<f64>,
    },
    /// normal:sigma_percent (fio's "gauss")
    Normal {
        sigma_pct: f64,
        center: Option<f64>,
    },
}

/// `zonemode=strided`: I/O in zones of `range` bytes, `size` bytes of I/O
/// in each, the next zone `range + skip` further on (fio's zonesize,
/// zonerange, zoneskip).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StridedZones {
    pub size: u64,
    pub range: u64,
    pub skip: u64,
}

/// `file_service_type`: how a job with several files picks the file of its
/// next I/O (fio's `get_next_file`). `per_turn` I/Os go to a file before the
/// next pick (the `:N` postfix of random, roundrobin and sequential; 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FileService {
    pub kind: FileServiceKind,
    pub per_turn: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FileServiceKind {
    /// Each file in turn (fio's default).
    RoundRobin,
    /// One file until it is done, then the next.
    Sequential,
    /// A uniformly random file.
    Random,
    /// Files by popularity: zipf theta, pareto h, normal deviation in % of
    /// the file count (fio's "non-uniform" types).
    Zipf(f64),
    Pareto(f64),
    Normal(f64),
}

impl FileServiceKind {
    /// fio resets a non-uniformly served file whose random map is full
    /// instead of ending it (`__FIO_FSERVICE_NONUNIFORM` in io_u.c).
    pub fn non_uniform(self) -> bool {
        matches!(self, Self::Zipf(_) | Self::Pareto(_) | Self::Normal(_))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RandomGenerator {
    Tausworthe,
    Lfsr,
    Tausworthe64,
}

/// One zone of `random_distribution=zoned:` / `zoned_abs:`: `access_pct` percent
/// of random I/Os fall into the next `region` of the file (a percentage for
/// `zoned`, bytes for `zoned_abs`); zones follow each other from offset 0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomZone {
    pub access_pct: u32,
    pub region: SizeSpec,
}

/// A size that may be given as bytes or as a percentage of the device/file.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SizeSpec {
    Bytes(u64),
    Percent(f64),
}

/// One job (one fio thread/process) after `numjobs` expansion.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// Job section name (`[name]` or `--name=`); clones share it.
    pub name: String,
    /// 0-based clone number within `numjobs` of this section.
    pub clone_index: u32,
    /// fio's `subjob_number`: 0 for the section's first job, and counting
    /// down from `numjobs - 1` for the clones after it (init.c add_job
    /// numbers them as it creates them); `offset_increment` multiplies it.
    pub subjob_number: u32,
    /// 0-based index of this job in the whole file (after expansion).
    pub job_index: u32,
    /// Reporting group id (fio's `groupid`), bumped by `stonewall`/`new_group`.
    pub group_id: u32,
    /// `stonewall` / `wait_for_previous`: start only after all earlier jobs end.
    pub stonewall: bool,
    pub group_reporting: bool,

    pub rw: RwPattern,
    /// `rw=randread:8` modifier (random: new offset every N I/Os; sequential:
    /// bytes added to each offset, may be negative).
    pub rw_modifier: Option<i64>,
    /// Percent of mixed I/O that reads (rwmixread / 100 - rwmixwrite).
    pub rwmixread: u32,
    /// Per direction: percent of a random job's offset choices that are
    /// random, the rest continuing where the last I/O ended
    /// (`percentage_random`, or 100 - `percentage_sequential`; fio's
    /// `perc_rand`, default 100).
    pub percentage_random: [u32; 3],
    /// Per direction (read, write, trim).
    pub bs: [BlockSizes; 3],
    pub blockalign: [Option<u64>; 3],
    pub bs_unaligned: bool,

    /// `size`: bytes of I/O region per job (None = whole file/device).
    pub size: Option<SizeSpec>,
    /// `io_size` / `io_limit`: bytes to transfer (None = size).
    pub io_size: Option<SizeSpec>,
    pub offset: SizeSpec,
    pub offset_increment: SizeSpec,
    /// `offset_align`: what a percentage offset (or increment) is rounded
    /// up to; None rounds to the smallest block size (fio's td_min_bs).
    pub offset_align: Option<u64>,
    /// `filename`: colon-separated list, escapes resolved. Empty = fio's own files.
    pub filenames: Vec<String>,
    pub directory: Option<String>,
    /// `filesize` range (min, max) in bytes.
    pub filesize: Option<(u64, u64)>,
    pub nrfiles: u32,
    pub file_service: FileService,
    /// `verify=` of some kind with `do_verify` on: a writing job reads its
    /// writes back after each pass.
    pub verify: bool,
    /// `zonemode=strided` with its sizes; None without zones.
    pub strided_zones: Option<StridedZones>,
    pub numjobs: u32,

    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    pub iodepth_batch_complete_max: u32,
    pub iodepth_low: u32,
    pub direct: bool,
    pub ioengine: IoEngine,

    /// `runtime` in ns (None = unlimited).
    pub runtime: Option<Ns>,
    pub time_based: bool,
    pub ramp_time: Ns,
    /// `startdelay`, possibly a range (min, max).
    pub startdelay: (Ns, Ns),
    pub loops: u32,
    pub number_ios: Option<u64>,

    /// `rate` in bytes/s per direction.
    pub rate: [Option<u64>; 3],
    /// `rate_iops` per direction.
    pub rate_iops: [Option<u64>; 3],
    pub rate_process: RateProcess,
    /// `thinktime` in ns and `thinktime_blocks`.
    pub thinktime: Ns,
    pub thinktime_blocks: u32,

    pub random_distribution: RandomDistribution,
    /// `random_distribution=zoned:...`/`zoned_abs:...` per direction (read,
    /// write, trim; an empty list means uniform for that direction);
    /// `random_distribution` is `Random` when this is set.
    pub random_zones: Option<[Vec<RandomZone>; 3]>,
    pub random_generator: RandomGenerator,
    pub norandommap: bool,
    pub randrepeat: bool,
    pub randseed: Option<u64>,

    pub cgroup: Option<String>,
    pub cgroup_weight: Option<u32>,
    /// `prio` 0..7 (None = not set).
    pub prio: Option<u8>,
    pub prioclass: Option<IoPrioClass>,
    pub cpus_allowed: Option<Vec<u32>>,
    /// `cpus_allowed_policy=split`: each job of the section gets one CPU of
    /// `cpus_allowed` (in turn); `shared` (fio's default): every job may
    /// run on any of them.
    pub cpus_allowed_split: bool,

    /// `percentile_list` (None = fio's default list).
    pub percentile_list: Option<Vec<f64>>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// `bwavgtime` / `iopsavgtime` in ms.
    pub bwavgtime_ms: u64,
    pub iopsavgtime_ms: u64,

    pub fsync: u32,
    pub fdatasync: u32,
    pub end_fsync: bool,
    /// `fsync_on_close`: fsync a written file when fio closes it. fio's
    /// end-of-pass sync runs for it as for `end_fsync` (backend.c `do_io`),
    /// and the close's own fsync then finds that the last I/O issued was a
    /// sync and is skipped (fio.h `should_fsync`): the two behave alike.
    pub fsync_on_close: bool,
    /// `end_syncfs`: at the end of each pass, `syncfs(2)` on the job's first
    /// file instead of fsync per file (backend.c `do_io`, `fio_syncfs`). It
    /// syncs the whole file system the file is on: every dirty file there,
    /// then the journal. On a raw block device the file is a device node,
    /// whose file system is devtmpfs, so it writes nothing (checked on 6.18:
    /// 64 MiB dirty on a loop device stayed dirty after `syncfs`).
    pub end_syncfs: bool,
    /// `invalidate` (default on): drop the file's clean cached pages at open
    /// (`posix_fadvise(POSIX_FADV_DONTNEED)`); ignored with `pre_read`.
    pub invalidate: bool,
    /// `unlink`: delete the job's files when it ends (fio's
    /// `close_and_free_files`, regular files only).
    pub unlink: bool,
    /// `unlink_each_loop`: delete them before every `loops=` pass after the
    /// first (backend.c `thread_main`, after `clear_io_state`); the pass's
    /// open creates them again, empty.
    pub unlink_each_loop: bool,
    /// `overwrite`: a job that only writes has its files laid out with
    /// data first (fio's `extend_file`), so its writes overwrite written
    /// blocks; otherwise they are only allocated (fio's `fallocate`).
    pub overwrite: bool,
    /// `pre_read`: read the file into the page cache before the job starts.
    pub pre_read: bool,
    /// `fadvise_hint`.
    pub fadvise_hint: FadviseHint,
    /// `sync`: O_SYNC / O_DSYNC writes.
    pub sync_io: SyncIo,

    /// `kb_base` (1024 or 1000): how size suffixes were read, and which unit
    /// prefixes fio's normal output prefers.
    pub kb_base: u32,

    /// `description`: free text fio prints with the job's results.
    pub description: Option<String>,
    /// `write_lat_log[=prefix]`: per-I/O (or windowed) slat/clat/lat logs
    /// `<prefix>_{slat,clat,lat}.<jobnum>.log`; `Some("")` means the job name
    /// is the prefix.
    pub write_lat_log: Option<String>,
    /// `write_bw_log[=prefix]`: `<prefix>_bw.<jobnum>.log` (KiB/s).
    pub write_bw_log: Option<String>,
    /// `write_iops_log[=prefix]`: `<prefix>_iops.<jobnum>.log`.
    pub write_iops_log: Option<String>,
    /// `log_avg_msec`: 0 logs every I/O, otherwise one averaged entry per
    /// window of this many ms.
    pub log_avg_msec: u64,
    /// `log_max_value` / `log_window_value=max`: windows log their maximum
    /// instead of their mean.
    pub log_max_value: bool,
    /// `per_job_logs` (default on): `.<jobnum>` in log file names; off means
    /// all jobs with one prefix append to one file.
    pub per_job_logs: bool,
    /// `log_offset`: add the I/O offset column to log entries.
    pub log_offset: bool,
    /// `log_prio`: the priority column holds the I/O priority value
    /// (`class << 13 | level`, hex) instead of 1 for the RT class, else 0.
    pub log_prio: bool,
    /// Directory for log files (`elevator run --log-dir`); not a fio option.
    /// None = the current directory, as fio writes them.
    pub log_dir: Option<std::path::PathBuf>,

    /// Options given in this job's own section (and its includes) as fio
    /// prints them under "job options" in JSON: fio's canonical name
    /// (`blocksize` → `bs`) and the value after `${VAR}` expansion, in file
    /// order except where fio reorders (`kb_base` first, `filename` last,
    /// ioengine-specific options after the rest); options written without a
    /// value (`time_based`) are left out, as fio does.
    pub job_options: Vec<(String, String)>,
}

/// A parsed job file (or fio command line).
#[derive(Clone, Debug)]
pub struct JobFile {
    /// Where the jobs came from (file path or "<command line>").
    pub source: String,
    pub jobs: Vec<JobSpec>,
    /// Options of `[global]` sections, in order, for JSON "global options"
    /// (same form as `JobSpec::job_options`). With several job files on a
    /// command line fio resets its globals before each later file, so this
    /// then holds the last file's globals, as fio prints them.
    pub global_options: Vec<(String, String)>,
    /// Valid fio options the model does not use, first-seen order, unique.
    pub ignored: Vec<String>,
}

/// A job-file error: names the file, line and option, and what was expected.
#[derive(Clone, Debug, PartialEq)]
pub struct JobError {
    pub file: String,
    /// 1-based line, 0 when not tied to a line (e.g. command-line argument).
    pub line: u32,
    pub option: Option<String>,
    pub message: String,
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: ", self.file, self.line)?;
        } else {
            write!(f, "{}: ", self.file)?;
        }
        if let Some(opt) = &self.option {
            write!(f, "option '{}': ", opt)?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for JobError {}

impl JobSpec {
    /// Whether the job's I/O goes through the page cache: `direct=0` with
    /// an engine whose calls reach the file (sync or asynchronous; not the
    /// null engine or one the simulator does not model).
    pub fn is_buffered(&self) -> bool {
        !self.direct && matches!(self.ioengine.kind, EngineKind::Sync | EngineKind::Async)
    }

    /// With `direct=1`, the first option whose sizes or offsets are not
    /// multiples of the device's logical block size `lbs`, as `option=value`:
    /// O_DIRECT needs them aligned (the block layer and ext4 refuse others
    /// with EINVAL, and fio's job stops with error 22 on its first I/O).
    pub fn direct_misalignment(&self, lbs: u64) -> Option<String> {
        if !self.direct || lbs <= 1 {
            return None;
        }
        let off = |v: u64| !v.is_multiple_of(lbs);
        for &d in self.rw.ddirs() {
            let i = d.index();
            let bad = match &self.bs[i] {
                BlockSizes::Fixed(n) => off(*n).then(|| format!("bs={n}")),
                BlockSizes::Range { min, max } if off(*min) || off(*max) => {
                    Some(format!("bsrange={min}-{max}"))
                }
                // Any byte count in the range: all but the aligned ones fail.
                BlockSizes::Range { min, max } if self.bs_unaligned && min != max => {
                    Some(format!("bsrange={min}-{max} with blocksize_unaligned=1"))
                }
                BlockSizes::Range { .. } => None,
                BlockSizes::Split(parts) => parts
                    .iter()
                    .find(|(n, _)| off(*n))
                    .map(|(n, _)| format!("bssplit={n}")),
            };
            if bad.is_some() {
                return bad;
            }
            if let Some(a) = self.blockalign[i].filter(|&a| a > 0 && off(a)) {
                return Some(format!("blockalign={a}"));
            }
        }
        for (name, v) in [
            ("offset", &self.offset),
            ("offset_increment", &self.offset_increment),
        ] {
            if let SizeSpec::Bytes(b) = v {
                if off(*b) {
                    return Some(format!("{name}={b}"));
                }
            }
        }
        None
    }

    /// A job with fio's defaults for every option (`rw=read`, `bs=4k`,
    /// `ioengine=psync`, `iodepth=1`, ...), as if the section only had a name.
    pub fn with_defaults(name: &str) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            clone_index: 0,
            subjob_number: 0,
            job_index: 0,
            group_id: 0,
            stonewall: false,
            group_reporting: false,
            rw: RwPattern::Read,
            rw_modifier: None,
            rwmixread: 50,
            percentage_random: [100; 3],
            bs: [
                BlockSizes::Fixed(4096),
                BlockSizes::Fixed(4096),
                BlockSizes::Fixed(4096),
            ],
            blockalign: [None; 3],
            bs_unaligned: false,
            size: None,
            io_size: None,
            offset: SizeSpec::Bytes(0),
            offset_increment: SizeSpec::Bytes(0),
            offset_align: None,
            filenames: Vec::new(),
            directory: None,
            filesize: None,
            nrfiles: 1,
            file_service: FileService {
                kind: FileServiceKind::RoundRobin,
                per_turn: 1,
            },
            strided_zones: None,
            verify: false,
            numjobs: 1,
            iodepth: 1,
            iodepth_batch_submit: 1,
            iodepth_batch_complete_min: 1,
            iodepth_batch_complete_max: 1,
            iodepth_low: 1,
            direct: false,
            ioengine: IoEngine {
                name: "psync".to_string(),
                kind: EngineKind::Sync,
            },
            runtime: None,
            time_based: false,
            ramp_time: 0,
            startdelay: (0, 0),
            loops: 1,
            number_ios: None,
            rate: [None; 3],
            rate_iops: [None; 3],
            rate_process: RateProcess::Linear,
            thinktime: 0,
            thinktime_blocks: 1,
            random_distribution: RandomDistribution::Random,
            random_zones: None,
            random_generator: RandomGenerator::Tausworthe,
            norandommap: false,
            randrepeat: true,
            randseed: None,
            cgroup: None,
            cgroup_weight: None,
            prio: None,
            prioclass: None,
            cpus_allowed: None,
            cpus_allowed_split: false,
            percentile_list: None,
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            bwavgtime_ms: 500,
            iopsavgtime_ms: 500,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            fsync_on_close: false,
            end_syncfs: false,
            invalidate: true,
            unlink: false,
            unlink_each_loop: false,
            overwrite: false,
            pre_read: false,
            fadvise_hint: FadviseHint::Auto,
            sync_io: SyncIo::None,
            kb_base: 1024,
            description: None,
            write_lat_log: None,
            write_bw_log: None,
            write_iops_log: None,
            log_avg_msec: 0,
            log_max_value: false,
            per_job_logs: true,
            log_offset: false,
            log_prio: false,
            log_dir: None,
            job_options: Vec::new(),
        }
    }
}
