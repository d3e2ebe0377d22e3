//! CFQ's `iosched/` files (block/cfq-iosched.c v4.19: `cfq_attrs`, the
//! SHOW_FUNCTION/STORE_FUNCTION and USEC_* macros).
//!
//! Every store parses with `cfq_var_store` (`simple_strtoul(page, &p, 10)`
//! into an unsigned int), clamps to the macro's MIN..UINT_MAX and converts
//! ms (or us) to the ns the scheduler keeps. Modelled with the legacy
//! `simple_strtol` parser: identical for every value up to INT_MAX and for
//! negative input (the kernel reads "-1" as 0, the model as -1; both end at
//! MIN after the clamp); values above INT_MAX wrap negative here and clamp
//! to MIN where the kernel keeps them.

use super::Cfq;
use crate::block::elevator::{Attr, AttrConv, AttrDefault, AttrParse, AttrRange};
use crate::sim::time::NS_PER_MS;

const UINT_MAX: i128 = u32::MAX as i128;

// Defaults, cfq-iosched.c v4.19 (file-scope statics).
/// `cfq_quantum`: requests a queue may have in the driver (ceiling).
pub const DEFAULT_QUANTUM: u32 = 8;
/// `cfq_fifo_expire[0]` (async) = NSEC_PER_SEC / 4.
pub const DEFAULT_FIFO_EXPIRE_ASYNC_MS: u64 = 250;
/// `cfq_fifo_expire[1]` (sync) = NSEC_PER_SEC / 8.
pub const DEFAULT_FIFO_EXPIRE_SYNC_MS: u64 = 125;
/// `cfq_back_max` = 16 * 1024 KiB.
pub const DEFAULT_BACK_SEEK_MAX_KB: u32 = 16 * 1024;
/// `cfq_back_penalty`.
pub const DEFAULT_BACK_SEEK_PENALTY: u32 = 2;
/// `cfq_slice[1]` = NSEC_PER_SEC / 10.
pub const DEFAULT_SLICE_SYNC_MS: u64 = 100;
/// `cfq_slice[0]` = NSEC_PER_SEC / 25.
pub const DEFAULT_SLICE_ASYNC_MS: u64 = 40;
/// `cfq_slice_async_rq`.
pub const DEFAULT_SLICE_ASYNC_RQ: u32 = 2;
/// `cfq_slice_idle` = NSEC_PER_SEC / 125; `cfq_registered_queue` sets it to
/// 0 on a non-rotational queue.
pub const DEFAULT_SLICE_IDLE_MS: u64 = 8;
/// `cfq_group_idle` = NSEC_PER_SEC / 125 (with CONFIG_CFQ_GROUP_IOSCHED).
pub const DEFAULT_GROUP_IDLE_MS: u64 = 8;
/// `cfq_target_latency` = NSEC_PER_SEC * 3 / 10.
pub const DEFAULT_TARGET_LATENCY_MS: u64 = 300;

type Get = fn(&Cfq) -> i128;
type Set = fn(&mut Cfq, i128) -> Result<(), String>;

#[allow(clippy::too_many_arguments)]
const fn attr(
    name: &'static str,
    unit: &'static str,
    help: &'static str,
    default: AttrDefault,
    min: i128,
    conv: AttrConv,
    get: Get,
    set: Set,
) -> Attr<Cfq> {
    Attr {
        name,
        unit,
        help,
        default,
        parse: AttrParse::SimpleStrtolInt,
        range: AttrRange::Clamp(min, UINT_MAX),
        conv,
        get,
        set,
    }
}

const fn ms(v: u64) -> AttrDefault {
    AttrDefault::Value(v as i128)
}

const fn us(v_ms: u64) -> AttrDefault {
    AttrDefault::Value((v_ms * 1000) as i128)
}

const SLICE_IDLE_DEFAULT: AttrDefault =
    AttrDefault::Derived("8 ms; 0 on a non-rotational queue (cfq_registered_queue)");
const SLICE_IDLE_US_DEFAULT: AttrDefault =
    AttrDefault::Derived("8000 us; 0 on a non-rotational queue (cfq_registered_queue)");

/// `cfq_attrs`, in the kernel's order.
pub const CFQ_ATTRS: &[Attr<Cfq>] = &[
    attr(
        "quantum",
        "requests",
        "requests a queue may have in the driver: quantum/2 normally, up to quantum early in a slice",
        AttrDefault::Value(DEFAULT_QUANTUM as i128),
        1,
        AttrConv::Plain,
        |s| s.quantum as i128,
        |s, v| {
            s.quantum = v as u32;
            Ok(())
        },
    ),
    attr(
        "fifo_expire_sync",
        "ms",
        "deadline of a sync request; a queue checks its FIFO once per slice",
        ms(DEFAULT_FIFO_EXPIRE_SYNC_MS),
        1,
        AttrConv::MsecsAsNs,
        |s| s.fifo_expire[1] as i128,
        |s, v| {
            s.fifo_expire[1] = v as u64;
            Ok(())
        },
    ),
    attr(
        "fifo_expire_async",
        "ms",
        "deadline of an async request",
        ms(DEFAULT_FIFO_EXPIRE_ASYNC_MS),
        1,
        AttrConv::MsecsAsNs,
        |s| s.fifo_expire[0] as i128,
        |s, v| {
            s.fifo_expire[0] = v as u64;
            Ok(())
        },
    ),
    attr(
        "back_seek_max",
        "KiB",
        "longest backward seek still served in sweep order",
        AttrDefault::Value(DEFAULT_BACK_SEEK_MAX_KB as i128),
        0,
        AttrConv::Plain,
        |s| s.back_max as i128,
        |s, v| {
            s.back_max = v as u32;
            Ok(())
        },
    ),
    attr(
        "back_seek_penalty",
        "factor",
        "how much more a backward seek costs than a forward one of the same length",
        AttrDefault::Value(DEFAULT_BACK_SEEK_PENALTY as i128),
        1,
        AttrConv::Plain,
        |s| s.back_penalty as i128,
        |s, v| {
            s.back_penalty = v as u32;
            Ok(())
        },
    ),
    attr(
        "slice_sync",
        "ms",
        "base time slice of a sync queue (scaled by ioprio: level 0 = 1.8x, level 7 = 0.4x)",
        ms(DEFAULT_SLICE_SYNC_MS),
        1,
        AttrConv::MsecsAsNs,
        |s| s.slice[1] as i128,
        |s, v| {
            s.slice[1] = v as u64;
            Ok(())
        },
    ),
    attr(
        "slice_sync_us",
        "us",
        "slice_sync in microseconds",
        us(DEFAULT_SLICE_SYNC_MS),
        1,
        AttrConv::UsecsAsNs,
        |s| s.slice[1] as i128,
        |s, v| {
            s.slice[1] = v as u64;
            Ok(())
        },
    ),
    attr(
        "slice_async",
        "ms",
        "base time slice of an async queue",
        ms(DEFAULT_SLICE_ASYNC_MS),
        1,
        AttrConv::MsecsAsNs,
        |s| s.slice[0] as i128,
        |s, v| {
            s.slice[0] = v as u64;
            Ok(())
        },
    ),
    attr(
        "slice_async_us",
        "us",
        "slice_async in microseconds",
        us(DEFAULT_SLICE_ASYNC_MS),
        1,
        AttrConv::UsecsAsNs,
        |s| s.slice[0] as i128,
        |s, v| {
            s.slice[0] = v as u64;
            Ok(())
        },
    ),
    attr(
        "slice_async_rq",
        "requests",
        "async requests per slice: 2 * slice_async_rq * (8 - ioprio level)",
        AttrDefault::Value(DEFAULT_SLICE_ASYNC_RQ as i128),
        1,
        AttrConv::Plain,
        |s| s.slice_async_rq as i128,
        |s, v| {
            s.slice_async_rq = v as u32;
            Ok(())
        },
    ),
    attr(
        "slice_idle",
        "ms",
        "how long an emptied sync queue waits for its next request; 0 = no idling (and IOPS-mode group charging with NCQ)",
        SLICE_IDLE_DEFAULT,
        0,
        AttrConv::MsecsAsNs,
        |s| s.slice_idle as i128,
        |s, v| {
            s.slice_idle = v as u64;
            Ok(())
        },
    ),
    attr(
        "slice_idle_us",
        "us",
        "slice_idle in microseconds",
        SLICE_IDLE_US_DEFAULT,
        0,
        AttrConv::UsecsAsNs,
        |s| s.slice_idle as i128,
        |s, v| {
            s.slice_idle = v as u64;
            Ok(())
        },
    ),
    attr(
        "group_idle",
        "ms",
        "how long a cgroup whose last queue emptied keeps the disk waiting for more",
        ms(DEFAULT_GROUP_IDLE_MS),
        0,
        AttrConv::MsecsAsNs,
        |s| s.group_idle as i128,
        |s, v| {
            s.group_idle = v as u64;
            Ok(())
        },
    ),
    attr(
        "group_idle_us",
        "us",
        "group_idle in microseconds",
        us(DEFAULT_GROUP_IDLE_MS),
        0,
        AttrConv::UsecsAsNs,
        |s| s.group_idle as i128,
        |s, v| {
            s.group_idle = v as u64;
            Ok(())
        },
    ),
    Attr {
        name: "low_latency",
        unit: "bool",
        help: "scale slices so all busy queues fit in target_latency; ramp async depth after delayed sync I/O",
        default: AttrDefault::Value(1),
        parse: AttrParse::SimpleStrtolInt,
        range: AttrRange::Clamp(0, 1),
        conv: AttrConv::Plain,
        get: |s| s.low_latency as i128,
        set: |s, v| {
            s.low_latency = v != 0;
            Ok(())
        },
    },
    attr(
        "target_latency",
        "ms",
        "latency target that low_latency scales slices to",
        ms(DEFAULT_TARGET_LATENCY_MS),
        1,
        AttrConv::MsecsAsNs,
        |s| s.target_latency as i128,
        |s, v| {
            s.target_latency = v as u64;
            Ok(())
        },
    ),
    attr(
        "target_latency_us",
        "us",
        "target_latency in microseconds",
        us(DEFAULT_TARGET_LATENCY_MS),
        1,
        AttrConv::UsecsAsNs,
        |s| s.target_latency as i128,
        |s, v| {
            s.target_latency = v as u64;
            Ok(())
        },
    ),
];

/// Nanoseconds of a default given in ms.
pub const fn ms_ns(v: u64) -> u64 {
    v * NS_PER_MS
}
