//! fio's option names (with aliases) and which of them the model uses.
//!
//! The table lists every job option of fio's `options.c` plus the common
//! ioengine-specific ones documented in HOWTO.rst. Options the model does not
//! use are still recognised, so real job files parse: they are accepted
//! unvalidated and reported in `JobFile::ignored`. A name not in the table is
//! an error, with a "did you mean" suggestion.

use super::spec::EngineKind;

/// Options the parser turns into `JobSpec` fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Key {
    Name,
    /// fio's built-in workload generators: refused (`Key::Profile` in
    /// the parser says why).
    Profile,
    Rw,
    RwMixRead,
    RwMixWrite,
    Bs,
    BsRange,
    BsSplit,
    BlockAlign,
    BsUnaligned,
    Size,
    IoSize,
    Offset,
    OffsetIncrement,
    OffsetAlign,
    Filename,
    Directory,
    FileSize,
    NrFiles,
    FileServiceType,
    ZoneMode,
    ZoneSize,
    ZoneRange,
    ZoneSkip,
    Verify,
    DoVerify,
    NumJobs,
    IoDepth,
    IoDepthBatchSubmit,
    IoDepthBatchCompleteMin,
    IoDepthBatchCompleteMax,
    IoDepthLow,
    Direct,
    Buffered,
    IoEngine,
    Runtime,
    TimeBased,
    RampTime,
    StartDelay,
    Loops,
    NumberIos,
    Rate,
    RateIops,
    RateProcess,
    ThinkTime,
    ThinkTimeBlocks,
    RandomDistribution,
    RandomGenerator,
    PercentageRandom,
    PercentageSequential,
    NoRandomMap,
    RandRepeat,
    RandSeed,
    GroupReporting,
    NewGroup,
    Stonewall,
    Cgroup,
    CgroupWeight,
    Prio,
    PrioClass,
    CpusAllowed,
    CpusAllowedPolicy,
    PercentileList,
    ClatPercentiles,
    LatPercentiles,
    SlatPercentiles,
    BwAvgTime,
    IopsAvgTime,
    Fsync,
    Fdatasync,
    EndFsync,
    FsyncOnClose,
    EndSyncfs,
    Invalidate,
    Unlink,
    UnlinkEachLoop,
    Overwrite,
    PreRead,
    FadviseHint,
    Sync,
    KbBase,
    Description,
    WriteLatLog,
    WriteBwLog,
    WriteIopsLog,
    LogAvgMsec,
    LogWindowValue,
    PerJobLogs,
    LogOffset,
    LogPrio,
}

/// Whether an option may be written without `=value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arg {
    /// fio's "set" options (`time_based`, `thread`): bare means on.
    Flag,
    /// fio's booleans (`direct`, `randrepeat`): a value 0 or 1 is required,
    /// bare use is an error in fio ("requires an argument").
    Bool,
    /// A value is required.
    Value,
    /// The value is optional (`write_bw_log` with or without a prefix).
    Optional,
}

impl Arg {
    pub(crate) fn bare_ok(self) -> bool {
        matches!(self, Arg::Flag | Arg::Optional)
    }
}

#[derive(Debug)]
pub(crate) struct OptDef {
    /// fio's canonical name, used in `job_options` and `ignored`.
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub arg: Arg,
    /// `None` = a valid fio option the model ignores.
    pub key: Option<Key>,
    /// Defined by an ioengine, not by fio's core table.
    pub engine: bool,
}

impl OptDef {
    /// fio parses a section's options sorted by this priority (`kb_base`
    /// first, `filename` after `directory`), engine options after all core
    /// ones; its option lists in JSON come out in that order.
    pub(crate) fn order(&self) -> (bool, i8) {
        let prio = match self.name {
            "kb_base" | "unit_base" | "lockfile" | "cpus_allowed_policy" => 1,
            "filename" | "filename_format" => -1,
            _ => 0,
        };
        (self.engine, -prio)
    }
}

const fn m(name: &'static str, aliases: &'static [&'static str], arg: Arg, key: Key) -> OptDef {
    OptDef {
        name,
        aliases,
        arg,
        key: Some(key),
        engine: false,
    }
}

const fn ig(name: &'static str, aliases: &'static [&'static str], arg: Arg) -> OptDef {
    OptDef {
        name,
        aliases,
        arg,
        key: None,
        engine: false,
    }
}

/// An ioengine-specific option (ignored by the model).
const fn eng(name: &'static str, aliases: &'static [&'static str], arg: Arg) -> OptDef {
    OptDef {
        name,
        aliases,
        arg,
        key: None,
        engine: true,
    }
}

use Arg::{Bool, Flag, Optional, Value};

/// Every option fio knows. Canonical names and aliases follow options.c
/// (e.g. `bs` with alias `blocksize`, `iodepth_batch` with alias
/// `iodepth_batch_submit`).
pub(crate) static OPTIONS: &[OptDef] = &[
    // ---- modelled ----
    m("name", &[], Value, Key::Name),
    m("rw", &["readwrite"], Value, Key::Rw),
    m("rwmixread", &[], Value, Key::RwMixRead),
    m("rwmixwrite", &[], Value, Key::RwMixWrite),
    m("bs", &["blocksize"], Value, Key::Bs),
    m("bsrange", &["blocksize_range"], Value, Key::BsRange),
    m("bssplit", &[], Value, Key::BsSplit),
    m("ba", &["blockalign"], Value, Key::BlockAlign),
    m(
        "bs_unaligned",
        &["blocksize_unaligned"],
        Flag,
        Key::BsUnaligned,
    ),
    m("size", &[], Value, Key::Size),
    m("io_size", &["io_limit"], Value, Key::IoSize),
    m("offset", &["fileoffset"], Value, Key::Offset),
    m("offset_increment", &[], Value, Key::OffsetIncrement),
    m("offset_align", &[], Value, Key::OffsetAlign),
    m("filename", &[], Value, Key::Filename),
    m("directory", &[], Value, Key::Directory),
    m("filesize", &[], Value, Key::FileSize),
    m("nrfiles", &["nr_files"], Value, Key::NrFiles),
    m("numjobs", &[], Value, Key::NumJobs),
    m("iodepth", &[], Value, Key::IoDepth),
    m(
        "iodepth_batch",
        &["iodepth_batch_submit"],
        Value,
        Key::IoDepthBatchSubmit,
    ),
    m(
        "iodepth_batch_complete_min",
        &["iodepth_batch_complete"],
        Value,
        Key::IoDepthBatchCompleteMin,
    ),
    m(
        "iodepth_batch_complete_max",
        &[],
        Value,
        Key::IoDepthBatchCompleteMax,
    ),
    m("iodepth_low", &[], Value, Key::IoDepthLow),
    m("direct", &[], Bool, Key::Direct),
    m("buffered", &[], Bool, Key::Buffered),
    m("ioengine", &[], Value, Key::IoEngine),
    m("runtime", &["timeout"], Value, Key::Runtime),
    m("time_based", &[], Flag, Key::TimeBased),
    m("ramp_time", &[], Value, Key::RampTime),
    m("startdelay", &[], Value, Key::StartDelay),
    m("loops", &[], Value, Key::Loops),
    m("number_ios", &[], Value, Key::NumberIos),
    m("rate", &[], Value, Key::Rate),
    m("rate_iops", &[], Value, Key::RateIops),
    m("rate_process", &[], Value, Key::RateProcess),
    m("thinktime", &[], Value, Key::ThinkTime),
    m("thinktime_blocks", &[], Value, Key::ThinkTimeBlocks),
    m("random_distribution", &[], Value, Key::RandomDistribution),
    m("random_generator", &[], Value, Key::RandomGenerator),
    m("norandommap", &[], Flag, Key::NoRandomMap),
    m("randrepeat", &[], Bool, Key::RandRepeat),
    m("randseed", &[], Value, Key::RandSeed),
    m("group_reporting", &[], Flag, Key::GroupReporting),
    m("new_group", &[], Flag, Key::NewGroup),
    m("stonewall", &["wait_for_previous"], Flag, Key::Stonewall),
    m("cgroup", &[], Value, Key::Cgroup),
    m("cgroup_weight", &[], Value, Key::CgroupWeight),
    m("prio", &[], Value, Key::Prio),
    m("prioclass", &[], Value, Key::PrioClass),
    m("cpus_allowed", &[], Value, Key::CpusAllowed),
    m("cpus_allowed_policy", &[], Value, Key::CpusAllowedPolicy),
    m("percentile_list", &[], Value, Key::PercentileList),
    m("clat_percentiles", &[], Bool, Key::ClatPercentiles),
    m("lat_percentiles", &[], Bool, Key::LatPercentiles),
    m("slat_percentiles", &[], Bool, Key::SlatPercentiles),
    m("bwavgtime", &[], Value, Key::BwAvgTime),
    m("iopsavgtime", &[], Value, Key::IopsAvgTime),
    m("fsync", &[], Value, Key::Fsync),
    m("fdatasync", &[], Value, Key::Fdatasync),
    m("end_fsync", &[], Bool, Key::EndFsync),
    m("fsync_on_close", &[], Bool, Key::FsyncOnClose),
    m("sync", &[], Value, Key::Sync),
    m("kb_base", &[], Value, Key::KbBase),
    // ---- valid fio options the model ignores: files ----
    m("description", &[], Value, Key::Description),
    ig("wait_for", &[], Value),
    ig("filename_format", &[], Value),
    ig("filetype", &[], Value),
    ig("unique_filename", &[], Bool),
    ig("lockfile", &[], Value),
    ig("opendir", &[], Value),
    ig("rw_sequencer", &[], Value),
    ig("io_submit_mode", &[], Value),
    ig("serialize_overlap", &[], Bool),
    ig("fill_device", &["fill_fs"], Bool),
    ig("file_append", &[], Bool),
    ig("bs_is_seq_rand", &[], Bool),
    ig("softrandommap", &[], Bool),
    m("percentage_random", &[], Value, Key::PercentageRandom),
    m(
        "percentage_sequential",
        &[],
        Value,
        Key::PercentageSequential,
    ),
    ig("allrandrepeat", &[], Bool),
    ig("openfiles", &[], Value),
    m("file_service_type", &[], Value, Key::FileServiceType),
    ig("fallocate", &[], Value),
    m("fadvise_hint", &[], Value, Key::FadviseHint),
    ig("write_barrier", &[], Value),
    ig("sync_file_range", &[], Value),
    ig("atomic", &[], Bool),
    m("overwrite", &[], Bool, Key::Overwrite),
    ig("verify_only", &[], Flag),
    ig("clocksource", &[], Value),
    ig("mem", &["iomem"], Value),
    ig("iomem_align", &["mem_align"], Value),
    ig("hugepage-size", &[], Value),
    ig("lockmem", &[], Value),
    m("invalidate", &[], Bool, Key::Invalidate),
    ig("write_hint", &[], Value),
    ig("create_serialize", &[], Bool),
    ig("create_fsync", &[], Bool),
    ig("create_on_open", &[], Bool),
    ig("create_only", &[], Bool),
    ig("allow_file_create", &[], Bool),
    ig("allow_mounted_write", &[], Bool),
    m("pre_read", &[], Bool, Key::PreRead),
    m("end_syncfs", &[], Bool, Key::EndSyncfs),
    m("unlink", &[], Bool, Key::Unlink),
    m("unlink_each_loop", &[], Bool, Key::UnlinkEachLoop),
    ig("ioscheduler", &[], Value),
    ig("exec_prerun", &[], Value),
    ig("exec_postrun", &[], Value),
    ig("ramp_size", &[], Value),
    ig("num_range", &[], Value),
    // zones
    m("zonemode", &[], Value, Key::ZoneMode),
    m("zonesize", &[], Value, Key::ZoneSize),
    ig("zonecapacity", &[], Value),
    m("zonerange", &[], Value, Key::ZoneRange),
    m("zoneskip", &[], Value, Key::ZoneSkip),
    ig("read_beyond_wp", &[], Bool),
    ig("max_open_zones", &[], Value),
    ig("job_max_open_zones", &[], Value),
    ig("ignore_zone_limits", &[], Bool),
    ig("zone_reset_threshold", &[], Value),
    ig("zone_reset_frequency", &[], Value),
    ig("dataplacement", &["fdp", "data_placement"], Optional),
    ig("plids", &["fdp_pli"], Value),
    ig("dp_id_select", &[], Value),
    ig("plid_select", &["fdp_pli_select"], Value),
    ig("dp_scheme", &[], Value),
    ig("recover_zbd_write_error", &[], Bool),
    ig("write_zone_remainder", &[], Bool),
    ig("sprandom", &[], Bool),
    ig("spr_op", &[], Value),
    ig("spr_num_regions", &[], Value),
    ig("spr_cs", &[], Value),
    // verify / trim-verify
    m("verify", &[], Value, Key::Verify),
    m("do_verify", &[], Bool, Key::DoVerify),
    ig("verifysort", &[], Value),
    ig("verifysort_nr", &[], Value),
    ig("verify_interval", &[], Value),
    ig("verify_offset", &[], Value),
    ig("verify_pattern", &[], Value),
    ig("verify_fatal", &[], Bool),
    ig("verify_dump", &[], Bool),
    ig("verify_async", &[], Value),
    ig("verify_backlog", &[], Value),
    ig("verify_backlog_batch", &[], Value),
    ig("verify_async_cpus", &[], Value),
    ig("experimental_verify", &[], Bool),
    ig("verify_state_load", &[], Bool),
    ig("verify_state_save", &[], Bool),
    ig("verify_write_sequence", &[], Bool),
    ig("verify_header_seed", &[], Bool),
    ig("verify_pattern_interval", &[], Value),
    ig("verify_policy", &[], Value),
    ig("trim_percentage", &[], Value),
    ig("trim_verify_zero", &[], Bool),
    ig("trim_backlog", &[], Value),
    ig("trim_backlog_batch", &[], Value),
    // replay
    ig("write_iolog", &[], Value),
    ig("read_iolog", &[], Value),
    ig("read_iolog_chunked", &[], Bool),
    ig("replay_no_stall", &[], Bool),
    ig("replay_redirect", &[], Value),
    ig("replay_scale", &[], Value),
    ig("replay_align", &[], Value),
    ig("replay_time_scale", &[], Value),
    ig("replay_skip", &[], Value),
    ig("merge_blktrace_file", &[], Value),
    ig("merge_blktrace_scalars", &[], Value),
    ig("merge_blktrace_iters", &[], Value),
    // rate, think time, latency targets
    ig("rwmixcycle", &[], Value),
    ig("random_sequence_stride", &[], Bool),
    ig("thinktime_spin", &[], Value),
    ig("thinkcycles", &[], Value),
    ig("thinktime_blocks_type", &[], Value),
    ig("thinktime_iotime", &[], Value),
    ig("rate_min", &["ratemin"], Value),
    ig("rate_iops_min", &[], Value),
    ig("rate_cycle", &["ratecycle"], Value),
    ig("rate_ignore_thinktime", &[], Bool),
    ig("max_latency", &[], Value),
    ig("latency_target", &[], Value),
    ig("latency_window", &[], Value),
    ig("latency_percentile", &[], Value),
    ig("latency_run", &[], Bool),
    // processes, credentials, CPUs
    ig("nice", &[], Value),
    ig("priohint", &[], Value),
    ig("cpumask", &[], Value),
    ig("numa_cpu_nodes", &[], Value),
    ig("numa_mem_policy", &[], Value),
    ig("gpu_dev_id", &[], Value),
    ig("exitall", &[], Flag),
    ig("exit_what", &[], Value),
    ig("exitall_on_error", &[], Flag),
    ig("thread", &[], Flag),
    ig("uid", &[], Value),
    ig("comm", &[], Value),
    ig("gid", &[], Value),
    ig("cgroup_nodelete", &[], Bool),
    ig("flow_id", &[], Value),
    ig("flow", &[], Value),
    ig("flow_watermark", &[], Value),
    ig("flow_sleep", &[], Value),
    m("profile", &[], Value, Key::Profile),
    ig("job_start_clock_id", &[], Value),
    // logging and reporting
    m("per_job_logs", &[], Bool, Key::PerJobLogs),
    m("write_bw_log", &[], Optional, Key::WriteBwLog),
    m("write_lat_log", &[], Optional, Key::WriteLatLog),
    m("write_iops_log", &[], Optional, Key::WriteIopsLog),
    ig("write_hist_log", &[], Optional),
    ig("log_entries", &[], Value),
    m("log_avg_msec", &[], Value, Key::LogAvgMsec),
    ig("log_hist_msec", &[], Value),
    ig("log_hist_coarseness", &[], Value),
    m(
        "log_window_value",
        &["log_max_value"],
        Optional,
        Key::LogWindowValue,
    ),
    m("log_offset", &[], Bool, Key::LogOffset),
    m("log_prio", &[], Bool, Key::LogPrio),
    ig("log_issue_time", &[], Bool),
    ig("log_compression", &[], Value),
    ig("log_compression_cpus", &[], Value),
    ig("log_store_compressed", &[], Bool),
    ig("log_unix_epoch", &[], Bool),
    ig("log_alternate_epoch", &[], Bool),
    ig("log_alternate_epoch_clock_id", &[], Value),
    ig("block_error_percentiles", &[], Bool),
    ig("stats", &[], Bool),
    ig("significant_figures", &[], Value),
    ig("disk_util", &[], Bool),
    ig("gtod_reduce", &[], Bool),
    ig("disable_lat", &[], Bool),
    ig("disable_clat", &[], Bool),
    ig("disable_slat", &[], Bool),
    ig("disable_bw_measurement", &["disable_bw"], Bool),
    ig("gtod_cpu", &[], Value),
    ig("unified_rw_reporting", &[], Value),
    ig("unit_base", &[], Value),
    ig("continue_on_error", &[], Value),
    ig("ignore_error", &[], Value),
    ig("error_dump", &[], Bool),
    ig("steadystate", &["ss"], Value),
    ig("steadystate_duration", &["ss_dur"], Value),
    ig("steadystate_ramp_time", &["ss_ramp"], Value),
    ig("steadystate_check_interval", &["ss_interval"], Value),
    // buffer contents
    ig("zero_buffers", &[], Flag),
    ig("refill_buffers", &[], Flag),
    ig("scramble_buffers", &[], Bool),
    ig("buffer_pattern", &[], Value),
    ig("buffer_compress_percentage", &[], Value),
    ig("buffer_compress_chunk", &[], Value),
    ig("dedupe_percentage", &[], Value),
    ig("dedupe_global", &[], Bool),
    ig("dedupe_mode", &[], Value),
    ig("dedupe_working_set_percentage", &[], Value),
    // ---- ioengine-specific options (HOWTO "I/O engine specific parameters") ----
    eng("cmdprio_percentage", &[], Value),
    eng("cmdprio_class", &[], Value),
    eng("cmdprio", &[], Value),
    eng("cmdprio_hint", &[], Value),
    eng("cmdprio_bssplit", &[], Value),
    eng("fixedbufs", &[], Flag),
    eng("nonvectored", &[], Value),
    eng("force_async", &[], Value),
    eng("registerfiles", &[], Flag),
    eng("sqthread_poll", &[], Flag),
    eng("sqthread_poll_cpu", &[], Value),
    eng("cmd_type", &[], Value),
    eng("hipri", &[], Flag),
    eng("hipri_percentage", &[], Value),
    eng("userspace_reap", &[], Flag),
    eng("nowait", &[], Bool),
    eng("uncached", &[], Value),
    eng("md_per_io_size", &[], Value),
    eng("pi_act", &[], Value),
    eng("pi_chk", &[], Value),
    eng("apptag", &[], Value),
    eng("apptag_mask", &[], Value),
    eng("cpuload", &[], Value),
    eng("cpuchunks", &[], Value),
    eng("cpumode", &[], Value),
    eng("exit_on_io_done", &[], Bool),
    eng("namenode", &[], Value),
    eng("port", &[], Value),
    eng("hostname", &[], Value),
    eng("serverip", &[], Value),
    eng("direct_write_to_pmem", &[], Bool),
    eng("busy_wait_polling", &[], Bool),
    eng("interface", &[], Value),
    eng("ttl", &[], Value),
    eng("nodelay", &[], Bool),
    eng("protocol", &["proto"], Value),
    eng("listen", &[], Flag),
    eng("pingpong", &[], Flag),
    eng("window_size", &[], Value),
    eng("mss", &[], Value),
    eng("donorname", &[], Value),
    eng("inplace", &[], Value),
    eng("clustername", &[], Value),
    eng("rbdname", &[], Value),
    eng("clientname", &[], Value),
    eng("conf", &[], Value),
    eng("busy_poll", &[], Bool),
    eng("touch_objects", &[], Bool),
    eng("pool", &[], Value),
    eng("cont", &[], Value),
    eng("chunk_size", &[], Value),
    eng("object_class", &[], Value),
    eng("skip_bad", &[], Bool),
    eng("hdfsdirectory", &[], Value),
    eng("verb", &[], Value),
    eng("bindname", &[], Value),
    eng("stat_type", &[], Value),
    eng("readfua", &[], Bool),
    eng("writefua", &[], Bool),
    eng("sg_write_mode", &[], Value),
    eng("stream_id", &[], Value),
    eng("http_host", &[], Value),
    eng("http_user", &[], Value),
    eng("http_pass", &[], Value),
    eng("https", &[], Value),
    eng("http_mode", &[], Value),
    eng("http_s3_region", &[], Value),
    eng("http_s3_key", &[], Value),
    eng("http_s3_keyid", &[], Value),
    eng("http_s3_sse_customer_key", &[], Value),
    eng("http_s3_sse_customer_algorithm", &[], Value),
    eng("http_s3_storage_class", &[], Value),
    eng("http_swift_auth_token", &[], Value),
    eng("http_verbose", &[], Value),
    eng("uri", &[], Value),
    eng("gpu_dev_ids", &[], Value),
    eng("cuda_io", &[], Value),
    eng("nfs_url", &[], Value),
    eng("program", &[], Value),
    eng("arguments", &[], Value),
    eng("grace_time", &[], Value),
    eng("std_redirect", &[], Bool),
    eng("xnvme_async", &[], Value),
    eng("xnvme_sync", &[], Value),
    eng("xnvme_admin", &[], Value),
    eng("xnvme_dev_nsid", &[], Value),
    eng("xnvme_be", &[], Value),
    eng("cdb_len", &[], Value),
    eng("read_mode", &[], Value),
    eng("write_mode", &[], Value),
    eng("verify_mode", &[], Value),
    eng("verify_bytchk", &[], Value),
    eng("deac", &[], Bool),
    eng("libaio_vectored", &[], Bool),
    eng("no_completion_thread", &[], Flag),
    eng("hdfs_use_direct", &[], Bool),
    eng("single_instance", &[], Bool),
    eng("http_object_mode", &[], Value),
    eng("http_s3_security_token", &[], Value),
    eng("initiator", &[], Value),
    eng("rbd_encryption_format", &[], Value),
    eng("rbd_encryption_passphrase", &[], Value),
    eng("rocm_io", &[], Value),
    eng("svcl", &[], Value),
    eng("xnvme_dev_subnqn", &[], Value),
    eng("xnvme_mem", &[], Value),
    eng("xnvme_iovec", &[], Value),
    eng("libblkio_driver", &[], Value),
    eng("libblkio_path", &[], Value),
    eng("libblkio_pre_connect_props", &[], Value),
    eng("libblkio_num_entries", &[], Value),
    eng("libblkio_queue_size", &[], Value),
    eng("libblkio_pre_start_props", &[], Value),
    eng("libblkio_vectored", &[], Flag),
    eng("libblkio_write_zeroes_on_trim", &[], Flag),
    eng("libblkio_wait_mode", &[], Value),
    eng("libblkio_force_enable_completion_eventfd", &[], Flag),
    eng("thp", &[], Value),
    eng("volume", &[], Value),
    eng("brick", &[], Value),
    eng("single-instance", &[], Bool),
    // ---- options of fio's built-in profiles (tiobench, act); fio accepts
    // them in any job file (examples/steadystate.fio uses `threads=1`) ----
    ig("block", &[], Value),
    ig("numruns", &[], Value),
    ig("dir", &[], Value),
    ig("threads", &[], Value),
    ig("device-names", &[], Value),
    ig("load", &[], Value),
    ig("threads-per-queue", &[], Value),
    ig("read-req-num-512-blocks", &[], Value),
    ig("large-block-op-kbytes", &[], Value),
    ig("prep", &[], Flag),
];

/// Find an option by its name or one of its aliases (case-sensitive, as fio).
pub(crate) fn lookup(name: &str) -> Option<&'static OptDef> {
    OPTIONS
        .iter()
        .find(|o| o.name == name || o.aliases.contains(&name))
}

/// Levenshtein distance, for "did you mean" suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The closest of `candidates` to `name` within edit distance 2 (case
/// ignored), for "did you mean" suggestions.
pub fn nearest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // Very long names cannot be within distance 2 of any option; skip the work.
    if name.len() > 64 {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let mut best: Option<(usize, &'a str)> = None;
    for cand in candidates {
        let d = distance(&lower, cand);
        if d <= 2 && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, cand));
        }
    }
    best.map(|(_, n)| n)
}

/// The closest known option name (or alias) within edit distance 2.
pub(crate) fn suggest(name: &str) -> Option<&'static str> {
    nearest(
        name,
        OPTIONS
            .iter()
            .flat_map(|o| std::iter::once(o.name).chain(o.aliases.iter().copied())),
    )
}

/// fio's engine names, classified by how the model can run them.
pub(crate) fn engine_kind(name: &str) -> Option<EngineKind> {
    use EngineKind::*;
    // `external:/path/engine.so` and engine paths load third-party code.
    if name.starts_with("external") || name.contains('/') {
        return Some(NotModelled);
    }
    Some(match name {
        "sync" | "psync" | "vsync" | "pvsync" | "pvsync2" | "mmap" => Sync,
        "libaio" | "io_uring" | "posixaio" | "solarisaio" | "windowsaio" => Async,
        "io_uring_cmd" | "sg" => Passthrough,
        "null" => Null,
        "net"
        | "netsplice"
        | "cpuio"
        | "exec"
        | "filecreate"
        | "filestat"
        | "filedelete"
        | "dircreate"
        | "dirstat"
        | "dirdelete"
        | "rdma"
        | "librpma_apm"
        | "librpma_gpspm"
        | "librpma_apm_client"
        | "librpma_apm_server"
        | "librpma_gpspm_client"
        | "librpma_gpspm_server"
        | "http"
        | "nbd"
        | "rbd"
        | "rados"
        | "libhdfs"
        | "nfs"
        | "dfs"
        | "ime_psync"
        | "ime_psyncv"
        | "ime_aio"
        | "falloc"
        | "ftruncate"
        | "e4defrag"
        | "splice"
        | "libpmem"
        | "pmemblk"
        | "dev-dax"
        | "mtd"
        | "gfapi"
        | "gfapi_async"
        | "xnvme"
        | "libblkio"
        | "libzbc"
        | "libiscsi"
        | "libcufile"
        | "spdk"
        | "guasi"
        | "binject"
        | "syslet-rw" => NotModelled,
        _ => return None,
    })
}

/// `fs.aio-max-nr`'s default, `aio_max_nr = 0x10000` (linux fs/aio.c):
/// `io_setup(nr_events)` fails with EAGAIN when `nr_events` is above it, so
/// fio's libaio engine cannot set up a queue deeper than this.
pub(crate) const AIO_MAX_NR: u32 = 0x10000;
/// `IORING_MAX_ENTRIES` (linux io_uring/io_uring.h): `io_uring_setup` fails
/// with EINVAL above it unless the ring is clamped, which fio does not ask
/// for (engines/io_uring.c; fio also rounds the depth up to a power of two,
/// which keeps every depth up to this one within it).
pub(crate) const IORING_MAX_ENTRIES: u32 = 32768;
/// Engines without a kernel queue limit (null, posixaio, ...): fio's only
/// bound is the memory for `iodepth` I/O units and their buffers. The model
/// takes the largest kernel queue above, libaio's, as their limit.
pub(crate) const MODEL_MAX_IODEPTH: u32 = AIO_MAX_NR;

/// The deepest `iodepth` a job with this engine can set up, and why; None
/// for synchronous engines, which fio runs at depth 1 whatever `iodepth` says.
pub(crate) fn iodepth_limit(engine: &str, kind: EngineKind) -> Option<(u32, &'static str)> {
    match engine {
        _ if kind == EngineKind::Sync => None,
        "libaio" => Some((
            AIO_MAX_NR,
            "the deepest libaio queue io_setup allows (fs.aio-max-nr, 65536 by default)",
        )),
        "io_uring" | "io_uring_cmd" => Some((
            IORING_MAX_ENTRIES,
            "the deepest ring io_uring_setup allows (IORING_MAX_ENTRIES)",
        )),
        _ => Some((
            MODEL_MAX_IODEPTH,
            "the simulator's limit for engines without a kernel queue limit \
             (libaio's fs.aio-max-nr default)",
        )),
    }
}

/// Whether fio's engine can run `end_syncfs`: the engines flagged
/// FIO_SYNCFS (sync.c: sync, psync, vsync, pvsync, pvsync2) or
/// FIO_ASYNCIO_SYNC_SYNCFS (libaio, posixaio); fio refuses the rest in
/// `setup_files` ("I/O engine does not support syncfs").
pub(crate) fn engine_runs_syncfs(engine: &str) -> bool {
    matches!(
        engine,
        "sync" | "psync" | "vsync" | "pvsync" | "pvsync2" | "libaio" | "posixaio"
    )
}

/// fio opens all of a job's files at once (`openfiles` defaults to
/// `nrfiles`, init.c) and fails with EMFILE past the open-file limit, which
/// no process can raise above `fs.nr_open`: `sysctl_nr_open = 1024*1024`
/// (linux fs/file.c).
pub(crate) const MAX_NR_FILES: u32 = 1024 * 1024;

/// Engine names for the "expected one of" message.
pub(crate) const ENGINE_HINT: &str =
    "sync, psync, vsync, pvsync, pvsync2, mmap, libaio, io_uring, \
posixaio, io_uring_cmd, sg, null, or another fio engine (net, cpuio, rbd, http, ...)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for o in OPTIONS {
            for n in std::iter::once(&o.name).chain(o.aliases.iter()) {
                assert!(seen.insert(*n), "duplicate option name {n}");
            }
        }
    }

    #[test]
    fn lookup_by_alias() {
        assert_eq!(lookup("blocksize").map(|o| o.name), Some("bs"));
        assert_eq!(
            lookup("iodepth_batch_submit").map(|o| o.name),
            Some("iodepth_batch")
        );
        assert_eq!(lookup("readwrite").map(|o| o.name), Some("rw"));
        assert_eq!(lookup("timeout").map(|o| o.name), Some("runtime"));
        assert_eq!(lookup("ss").map(|o| o.name), Some("steadystate"));
        assert!(lookup("nonsense").is_none());
        assert!(lookup("BS").is_none());
    }

    #[test]
    fn options_of_recent_fio_releases_are_recognised() {
        // Checked against fio's options.c and engines/*.c (fio master,
        // 2026): the newest core and engine options, which a job file for a
        // current fio may carry.
        for name in [
            "comm",
            "filetype",
            "random_sequence_stride",
            "thinkcycles",
            "spr_op",
            "spr_num_regions",
            "spr_cs",
            "plid_select",
            "fdp_pli_select",
            "data_placement",
            "dp_scheme",
            "verify_pattern_interval",
            "verify_policy",
            "recover_zbd_write_error",
            "write_zone_remainder",
            "write_mode",
            "read_mode",
            "verify_mode",
            "cdb_len",
            "deac",
            "libaio_vectored",
        ] {
            let o = lookup(name).unwrap_or_else(|| panic!("{name} is a fio option"));
            assert!(o.key.is_none(), "{name}: recognised, not modelled");
        }
    }

    #[test]
    fn suggestions() {
        assert_eq!(suggest("iodpth"), Some("iodepth"));
        assert_eq!(suggest("BS"), Some("bs"));
        assert_eq!(suggest("runtme"), Some("runtime"));
        assert_eq!(suggest("completely_unknown_option"), None);
    }

    #[test]
    fn syncfs_engines_are_fios() {
        assert!(engine_runs_syncfs("psync"));
        assert!(engine_runs_syncfs("libaio"));
        assert!(!engine_runs_syncfs("io_uring"));
        assert!(!engine_runs_syncfs("null"));
        assert!(!engine_runs_syncfs("mmap"));
    }

    #[test]
    fn iodepth_limits_follow_the_engine() {
        let lim = |e: &str| iodepth_limit(e, engine_kind(e).unwrap()).map(|l| l.0);
        assert_eq!(lim("libaio"), Some(65536));
        assert_eq!(lim("io_uring"), Some(32768));
        assert_eq!(lim("io_uring_cmd"), Some(32768));
        assert_eq!(lim("null"), Some(MODEL_MAX_IODEPTH));
        assert_eq!(lim("psync"), None);
    }

    #[test]
    fn engines() {
        assert_eq!(engine_kind("libaio"), Some(EngineKind::Async));
        assert_eq!(engine_kind("psync"), Some(EngineKind::Sync));
        assert_eq!(engine_kind("io_uring_cmd"), Some(EngineKind::Passthrough));
        assert_eq!(engine_kind("null"), Some(EngineKind::Null));
        assert_eq!(engine_kind("net"), Some(EngineKind::NotModelled));
        assert_eq!(
            engine_kind("external:/tmp/x.so"),
            Some(EngineKind::NotModelled)
        );
        assert_eq!(engine_kind("libaoi"), None);
    }
}
