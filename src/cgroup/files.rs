//! The weight files, as data: one table for the simulator and the lab.
//!
//! Each row says what the kernel does with the file: which interface
//! generation has it, which policy reads it, its range and default, whether
//! the root group has it, and how a write is parsed. The figures were
//! checked against the kernel source cited on each row (CFQ in v4.19, the
//! last kernel that has it; BFQ, io.cost and the cgroup core in v6.x).

use std::fmt;

/// cgroup interface generation. v1 ("legacy", the `blkio` controller) is
/// the default: the source documents' experiments and fio's
/// `cgroup_weight=` use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum CgroupVersion {
    #[default]
    V1,
    V2,
}

impl CgroupVersion {
    /// 1 or 2, as `--cgroup-version` takes it.
    pub fn number(self) -> u8 {
        match self {
            CgroupVersion::V1 => 1,
            CgroupVersion::V2 => 2,
        }
    }

    /// From `--cgroup-version`'s value.
    pub fn from_number(n: u8) -> Option<CgroupVersion> {
        match n {
            1 => Some(CgroupVersion::V1),
            2 => Some(CgroupVersion::V2),
            _ => None,
        }
    }
}

impl fmt::Display for CgroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cgroup v{}", self.number())
    }
}

/// Who reads a weight: the plain blkcg weight (CFQ and tpps on v1 and v2,
/// io.cost on v2) or BFQ's own. A scheduler asks for its policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WeightPolicy {
    Blkcg = 0,
    Bfq = 1,
}

/// Number of policies (the per-group slots).
pub const NR_POLICIES: usize = 2;

/// How the kernel parses a write to the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteSyntax {
    /// A `write_u64` file: `kstrtoull(buf, 0)` in `cgroup_file_write`
    /// (kernel/cgroup/cgroup.c): an optional `+`, decimal, `0x` hex or `0`
    /// octal, at most one trailing newline, nothing else.
    U64,
    /// `bfq_io_set_weight` (block/bfq-cgroup.c; CFQ's v4.19
    /// `cfq_set_weight_on_dfl` is the same code): after trimming, a whole
    /// number (any base, as `simple_strtoull(buf, 0)`) or `default N` sets
    /// the group's weight and drops its device override; otherwise
    /// `MAJ:MIN N` / `MAJ:MIN default` sets / drops the device override.
    BfqDfl,
    /// `ioc_weight_write` (block/blk-iocost.c): without a `:`, `default N`
    /// or `N` (decimal, trailing text ignored, as `sscanf("%u")`) sets the
    /// group's weight and keeps any device override; with one,
    /// `MAJ:MIN N` / `MAJ:MIN default` as above.
    IoCost,
}

/// One weight file.
#[derive(Debug, PartialEq, Eq)]
pub struct WeightFile {
    pub name: &'static str,
    pub version: CgroupVersion,
    pub policy: WeightPolicy,
    pub min: u32,
    pub max: u32,
    /// A new group's weight.
    pub default: u32,
    /// Whether the root group has the file (and so can be written).
    pub on_root: bool,
    /// The root group's weight for this policy until written.
    pub root_default: u32,
    pub syntax: WriteSyntax,
}

/// `CFQ_WEIGHT_LEGACY_MIN` / `_DFL` / `_MAX` (block/cfq-iosched.c, v4.19).
const CFQ_WEIGHT_LEGACY_MIN: u32 = 10;
const CFQ_WEIGHT_LEGACY_DFL: u32 = 500;
const CFQ_WEIGHT_LEGACY_MAX: u32 = 1000;
/// `CGROUP_WEIGHT_MIN` / `_DFL` / `_MAX` (include/linux/cgroup.h).
const CGROUP_WEIGHT_MIN: u32 = 1;
const CGROUP_WEIGHT_DFL: u32 = 100;
const CGROUP_WEIGHT_MAX: u32 = 10000;
/// `BFQ_MIN_WEIGHT` / `BFQ_MAX_WEIGHT` (block/bfq-iosched.h), for both the
/// v1 and the v2 file. A 2021 patch raising the maximum to 10000 ("block,
/// bfq: Accept symmetric weight adjustments") was not merged: v6.6 still
/// has 1000.
const BFQ_MIN_WEIGHT: u32 = 1;
const BFQ_MAX_WEIGHT: u32 = 1000;
/// BFQ's group default: `BFQ_WEIGHT_LEGACY_DFL` (100) on v1 in
/// `bfq_cpd_init` up to v6.3, `CGROUP_WEIGHT_DFL` in `bfq_cpd_alloc` since
/// (block/bfq-cgroup.c); 100 either way.
const BFQ_WEIGHT_DFL: u32 = 100;

/// `blkio.weight`: CFQ's (and tpps's) weight on v1. CFQ gives the root group
/// the file too ("on root, weight is mapped to leaf_weight",
/// `cfq_blkcg_legacy_files`), and `cfq_cpd_init` doubles the root's
/// default: 1000.
pub const BLKIO_WEIGHT: WeightFile = WeightFile {
    name: "blkio.weight",
    version: CgroupVersion::V1,
    policy: WeightPolicy::Blkcg,
    min: CFQ_WEIGHT_LEGACY_MIN,
    max: CFQ_WEIGHT_LEGACY_MAX,
    default: CFQ_WEIGHT_LEGACY_DFL,
    on_root: true,
    root_default: 2 * CFQ_WEIGHT_LEGACY_DFL,
    syntax: WriteSyntax::U64,
};

/// `blkio.bfq.weight`: BFQ's weight on v1 (`bfq_blkcg_legacy_files`,
/// `CFTYPE_NOT_ON_ROOT`, `write_u64`). BFQ's root group has no entity, so
/// the root's weight is never used; it reads as the default.
pub const BLKIO_BFQ_WEIGHT: WeightFile = WeightFile {
    name: "blkio.bfq.weight",
    version: CgroupVersion::V1,
    policy: WeightPolicy::Bfq,
    min: BFQ_MIN_WEIGHT,
    max: BFQ_MAX_WEIGHT,
    default: BFQ_WEIGHT_DFL,
    on_root: false,
    root_default: BFQ_WEIGHT_DFL,
    syntax: WriteSyntax::U64,
};

/// `io.weight`: the blkcg weight on v2, io.cost's in current kernels
/// (`ioc_files`, block/blk-iocost.c), CFQ's in v4.19 (`cfq_blkcg_files`);
/// `CFTYPE_NOT_ON_ROOT` in both. CFQ doubles the root's default (200).
pub const IO_WEIGHT: WeightFile = WeightFile {
    name: "io.weight",
    version: CgroupVersion::V2,
    policy: WeightPolicy::Blkcg,
    min: CGROUP_WEIGHT_MIN,
    max: CGROUP_WEIGHT_MAX,
    default: CGROUP_WEIGHT_DFL,
    on_root: false,
    root_default: 2 * CGROUP_WEIGHT_DFL,
    syntax: WriteSyntax::IoCost,
};

/// `io.bfq.weight`: BFQ's weight on v2 (`bfq_blkg_files`,
/// `CFTYPE_NOT_ON_ROOT`). Range 1..1000 like v1, not 1..10000.
pub const IO_BFQ_WEIGHT: WeightFile = WeightFile {
    name: "io.bfq.weight",
    version: CgroupVersion::V2,
    policy: WeightPolicy::Bfq,
    min: BFQ_MIN_WEIGHT,
    max: BFQ_MAX_WEIGHT,
    default: BFQ_WEIGHT_DFL,
    on_root: false,
    root_default: BFQ_WEIGHT_DFL,
    syntax: WriteSyntax::BfqDfl,
};

/// Every weight file this model knows.
pub const WEIGHT_FILES: [&WeightFile; 4] =
    [&BLKIO_WEIGHT, &BLKIO_BFQ_WEIGHT, &IO_WEIGHT, &IO_BFQ_WEIGHT];

/// The file with this name.
pub fn weight_file(name: &str) -> Option<&'static WeightFile> {
    WEIGHT_FILES.into_iter().find(|f| f.name == name)
}

/// The file a policy reads under a version.
pub fn weight_file_for(version: CgroupVersion, policy: WeightPolicy) -> &'static WeightFile {
    match (version, policy) {
        (CgroupVersion::V1, WeightPolicy::Blkcg) => &BLKIO_WEIGHT,
        (CgroupVersion::V1, WeightPolicy::Bfq) => &BLKIO_BFQ_WEIGHT,
        (CgroupVersion::V2, WeightPolicy::Blkcg) => &IO_WEIGHT,
        (CgroupVersion::V2, WeightPolicy::Bfq) => &IO_BFQ_WEIGHT,
    }
}

/// The file fio's `cgroup_weight=` writes: `blkio.weight` on v1. On v2 fio
/// refuses the option ("cgroup weit doesn't work with cgroup2",
/// `cgroup_setup` in fio's cgroup.c), so there is none.
pub fn fio_weight_file(version: CgroupVersion) -> Option<&'static WeightFile> {
    match version {
        CgroupVersion::V1 => Some(&BLKIO_WEIGHT),
        CgroupVersion::V2 => None,
    }
}

/// "blkio.weight, blkio.bfq.weight (cgroup v1), io.weight, io.bfq.weight
/// (cgroup v2)", for messages.
pub fn known_files() -> String {
    let list = |v: CgroupVersion| {
        let names: Vec<&str> = WEIGHT_FILES
            .iter()
            .filter(|f| f.version == v)
            .map(|f| f.name)
            .collect();
        format!("{} ({v})", names.join(", "))
    };
    format!("{}, {}", list(CgroupVersion::V1), list(CgroupVersion::V2))
}

impl WeightFile {
    /// The weight a group has before anything is written to the file.
    pub fn initial(&self, is_root: bool) -> u32 {
        if is_root {
            self.root_default
        } else {
            self.default
        }
    }

    /// What a write of `text` asks for, or why the kernel refuses it. The
    /// range is not checked here (see [`WeightWrite::weight`]).
    pub fn parse(&self, text: &str) -> Result<WeightWrite, ParseError> {
        let b = text.as_bytes();
        match self.syntax {
            WriteSyntax::U64 => kstrtoull(b).map(WeightWrite::Default),
            WriteSyntax::BfqDfl => {
                let b = strim(b);
                let (v, used) = simple_strtoull(b);
                if used == b.len() {
                    // An empty write is 0 here, and 0 is out of range.
                    return v.map(WeightWrite::Default).ok_or(ParseError::Overflow);
                }
                if let Some(v) = scan_default(b) {
                    return v.map(WeightWrite::Default).ok_or(ParseError::Overflow);
                }
                let (dev, body) = device_key(b)?;
                match scan_u(body) {
                    Some((Some(v), _)) => Ok(WeightWrite::Device { dev, weight: v }),
                    Some((None, _)) => Err(ParseError::Overflow),
                    None if strim(body) == b"default" => Ok(WeightWrite::DeviceDefault { dev }),
                    None => Err(ParseError::Invalid),
                }
            }
            WriteSyntax::IoCost => {
                if !b.contains(&b':') {
                    // sscanf("%u") stores 32 bits; a longer number would be
                    // truncated by the kernel, refused here.
                    let v = match scan_default(b) {
                        Some(v) => v,
                        None => scan_u(b).ok_or(ParseError::Invalid)?.0,
                    };
                    return u32_weight(v).map(WeightWrite::Default);
                }
                let (dev, body) = device_key(b)?;
                if body.starts_with(b"default") {
                    return Ok(WeightWrite::DeviceDefault { dev });
                }
                let (v, _) = scan_u(body).ok_or(ParseError::Invalid)?;
                u32_weight(v).map(|weight| WeightWrite::Device { dev, weight })
            }
        }
    }

    /// The text that sets a group's weight to `w` (`N` for v1's `write_u64`
    /// files, `default N` for v2's).
    pub fn default_write(&self, w: u32) -> String {
        match self.syntax {
            WriteSyntax::U64 => w.to_string(),
            WriteSyntax::BfqDfl | WriteSyntax::IoCost => format!("default {w}"),
        }
    }

    /// The forms a write may take, for messages.
    pub fn forms(&self) -> &'static str {
        match self.syntax {
            WriteSyntax::U64 => "N",
            WriteSyntax::BfqDfl | WriteSyntax::IoCost => {
                "N, \"default N\", \"MAJ:MIN N\" or \"MAJ:MIN default\""
            }
        }
    }
}

/// A device number, `MAJ:MIN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DevNum {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for DevNum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

/// What a write to a weight file asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightWrite {
    /// The group's weight (for every device without an override).
    Default(u64),
    /// A per-device override.
    Device { dev: DevNum, weight: u64 },
    /// Drop the per-device override.
    DeviceDefault { dev: DevNum },
}

impl WeightWrite {
    /// The weight written, if any (the one to check against the range).
    pub fn weight(&self) -> Option<u64> {
        match *self {
            WeightWrite::Default(v) | WeightWrite::Device { weight: v, .. } => Some(v),
            WeightWrite::DeviceDefault { .. } => None,
        }
    }
}

/// Why a write does not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Not in any form the file takes (-EINVAL).
    Invalid,
    /// A number too large to hold (-ERANGE); out of range like any other.
    Overflow,
}

fn u32_weight(v: Option<u64>) -> Result<u64, ParseError> {
    match v {
        Some(v) if v <= u64::from(u32::MAX) => Ok(v),
        _ => Err(ParseError::Overflow),
    }
}

/// The kernel's `isspace` (lib/ctype.c): space, \t \n \v \f \r.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn skip_spaces(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|&&c| is_space(c)).count();
    &b[n..]
}

/// `strim`: leading and trailing whitespace removed.
fn strim(b: &[u8]) -> &[u8] {
    let b = skip_spaces(b);
    let n = b.iter().rev().take_while(|&&c| is_space(c)).count();
    &b[..b.len() - n]
}

/// `_parse_integer_fixup_radix` for base 0 (lib/kstrtox.c): `0x` followed by
/// a hex digit is hex (prefix skipped), a leading 0 octal, else decimal.
fn fixup_radix(b: &[u8]) -> (u32, &[u8]) {
    if b.first() == Some(&b'0') {
        if b.get(1).map(u8::to_ascii_lowercase) == Some(b'x')
            && b.get(2).is_some_and(u8::is_ascii_hexdigit)
        {
            (16, &b[2..])
        } else {
            (8, b)
        }
    } else {
        (10, b)
    }
}

/// `_parse_integer` (lib/kstrtox.c): digits of `base` from the start; the
/// value (`None` on overflow) and how many bytes were digits.
fn parse_integer(b: &[u8], base: u32) -> (Option<u64>, usize) {
    let mut v: Option<u64> = Some(0);
    let mut n = 0;
    for &c in b {
        let d = match (c as char).to_digit(16) {
            Some(d) if d < base => d,
            _ => break,
        };
        v = v
            .and_then(|v| v.checked_mul(u64::from(base)))
            .and_then(|v| v.checked_add(u64::from(d)));
        n += 1;
    }
    (v, n)
}

/// `kstrtoull(s, 0)` (lib/kstrtox.c).
fn kstrtoull(b: &[u8]) -> Result<u64, ParseError> {
    let b = b.strip_prefix(b"+").unwrap_or(b);
    let (base, b) = fixup_radix(b);
    let (v, n) = parse_integer(b, base);
    if n == 0 {
        return Err(ParseError::Invalid);
    }
    let v = v.ok_or(ParseError::Overflow)?;
    let rest = &b[n..];
    let rest = rest.strip_prefix(b"\n").unwrap_or(rest);
    if rest.is_empty() {
        Ok(v)
    } else {
        Err(ParseError::Invalid)
    }
}

/// `simple_strtoull(s, &end, 0)` (lib/vsprintf.c): the value and how many
/// bytes it used, prefix included (0 and 0 for no digits). The kernel
/// lets an overflow wrap; here it is `None`.
fn simple_strtoull(b: &[u8]) -> (Option<u64>, usize) {
    let (base, rest) = fixup_radix(b);
    let prefix = b.len() - rest.len();
    let (v, n) = parse_integer(rest, base);
    if n == 0 {
        (Some(0), 0)
    } else {
        (v, prefix + n)
    }
}

/// The kernel's `sscanf(s, "%u")` / `"%llu"` (lib/vsprintf.c `vsscanf`):
/// leading whitespace skipped, then at least one decimal digit; what
/// follows is left alone. The value (`None` on overflow) and the rest.
fn scan_u(b: &[u8]) -> Option<(Option<u64>, &[u8])> {
    let b = skip_spaces(b);
    let (v, n) = parse_integer(b, 10);
    (n > 0).then(|| (v, &b[n..]))
}

/// `sscanf(s, "default %llu") == 1`: the literal word, any whitespace
/// (including none), a decimal number.
fn scan_default(b: &[u8]) -> Option<Option<u64>> {
    let rest = b.strip_prefix(b"default")?;
    scan_u(rest).map(|(v, _)| v)
}

/// The `MAJ:MIN ` key of a per-device write (`blkg_conf_open_bdev`,
/// block/blk-cgroup.c: `sscanf("%u:%u%n")`, then whitespace) and the body
/// after it.
fn device_key(b: &[u8]) -> Result<(DevNum, &[u8]), ParseError> {
    let (major, rest) = scan_u(b).ok_or(ParseError::Invalid)?;
    let rest = rest.strip_prefix(b":").ok_or(ParseError::Invalid)?;
    let (minor, rest) = scan_u(rest).ok_or(ParseError::Invalid)?;
    if !rest.first().is_some_and(|&c| is_space(c)) {
        return Err(ParseError::Invalid);
    }
    let num = |v: Option<u64>| {
        v.and_then(|v| u32::try_from(v).ok())
            .ok_or(ParseError::Invalid)
    };
    let dev = DevNum {
        major: num(major)?,
        minor: num(minor)?,
    };
    Ok((dev, skip_spaces(rest)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ParseError::{Invalid, Overflow};
    use WeightWrite::{Default as Dfl, Device, DeviceDefault};

    const SDA: DevNum = DevNum { major: 8, minor: 0 };

    #[test]
    fn table_figures() {
        let row = |f: &WeightFile| {
            (
                f.version,
                f.policy,
                f.min,
                f.max,
                f.default,
                f.on_root,
                f.root_default,
            )
        };
        use CgroupVersion::{V1, V2};
        use WeightPolicy::{Bfq, Blkcg};
        assert_eq!(row(&BLKIO_WEIGHT), (V1, Blkcg, 10, 1000, 500, true, 1000));
        assert_eq!(row(&BLKIO_BFQ_WEIGHT), (V1, Bfq, 1, 1000, 100, false, 100));
        assert_eq!(row(&IO_WEIGHT), (V2, Blkcg, 1, 10000, 100, false, 200));
        assert_eq!(row(&IO_BFQ_WEIGHT), (V2, Bfq, 1, 1000, 100, false, 100));
        for f in WEIGHT_FILES {
            assert_eq!(weight_file(f.name), Some(f));
            assert_eq!(weight_file_for(f.version, f.policy), f);
            assert!(f.min <= f.default && f.default <= f.max, "{}", f.name);
        }
        assert_eq!(weight_file("blkio.bfq.weight_device"), None);
        assert_eq!(fio_weight_file(V1), Some(&BLKIO_WEIGHT));
        assert_eq!(fio_weight_file(V2), None);
        assert_eq!(
            known_files(),
            "blkio.weight, blkio.bfq.weight (cgroup v1), io.weight, io.bfq.weight (cgroup v2)"
        );
    }

    #[test]
    fn version_numbers() {
        for v in [CgroupVersion::V1, CgroupVersion::V2] {
            assert_eq!(CgroupVersion::from_number(v.number()), Some(v));
        }
        assert_eq!(CgroupVersion::from_number(3), None);
        assert_eq!(CgroupVersion::default(), CgroupVersion::V1);
    }

    #[test]
    fn u64_files_parse_like_kstrtoull() {
        for f in [&BLKIO_WEIGHT, &BLKIO_BFQ_WEIGHT] {
            let p = |s: &str| f.parse(s);
            assert_eq!(p("300"), Ok(Dfl(300)));
            assert_eq!(p("300\n"), Ok(Dfl(300)), "echo's newline");
            assert_eq!(p("+300"), Ok(Dfl(300)));
            assert_eq!(p("0x12c"), Ok(Dfl(300)));
            assert_eq!(p("0X12C"), Ok(Dfl(300)));
            assert_eq!(p("0454"), Ok(Dfl(300)), "octal");
            assert_eq!(p("0"), Ok(Dfl(0)));
            assert_eq!(p("18446744073709551615"), Ok(Dfl(u64::MAX)));
            assert_eq!(p("18446744073709551616"), Err(Overflow));
            for bad in [
                "",
                " 300",
                "300 ",
                "300\n\n",
                "-5",
                "abc",
                "3e2",
                "default 300",
                "8:0 300",
                "0x",
                "09",
                "++1",
                "300kb",
            ] {
                assert_eq!(p(bad), Err(Invalid), "{f:?} {bad:?}");
            }
        }
    }

    #[test]
    fn bfq_dfl_forms() {
        let p = |s: &str| IO_BFQ_WEIGHT.parse(s);
        assert_eq!(p("300"), Ok(Dfl(300)));
        assert_eq!(p("  300\n"), Ok(Dfl(300)), "trimmed");
        assert_eq!(p("0x12c"), Ok(Dfl(300)));
        assert_eq!(p("default 300"), Ok(Dfl(300)));
        assert_eq!(p("default300"), Ok(Dfl(300)), "sscanf's space matches none");
        assert_eq!(
            p("default 300 junk"),
            Ok(Dfl(300)),
            "sscanf ignores the rest"
        );
        assert_eq!(p(""), Ok(Dfl(0)), "0, then out of range");
        assert_eq!(
            p("8:0 300"),
            Ok(Device {
                dev: SDA,
                weight: 300
            })
        );
        assert_eq!(p("8:0   default "), Ok(DeviceDefault { dev: SDA }));
        assert_eq!(
            p("8:0 0"),
            Ok(Device {
                dev: SDA,
                weight: 0
            }),
            "0 is out of range"
        );
        assert_eq!(p("99999999999999999999"), Err(Overflow));
        for bad in [
            "abc",
            "+300",
            "default",
            "default x",
            "300 400",
            "8:0",
            "8:0300",
            "8 300",
            "8:0 defaults",
            "8:0 x",
            "99999999999:0 1",
        ] {
            assert_eq!(p(bad), Err(Invalid), "{bad:?}");
        }
    }

    #[test]
    fn iocost_forms() {
        let p = |s: &str| IO_WEIGHT.parse(s);
        assert_eq!(p("300"), Ok(Dfl(300)));
        assert_eq!(p("300\n"), Ok(Dfl(300)));
        assert_eq!(p(" 300"), Ok(Dfl(300)));
        assert_eq!(p("300abc"), Ok(Dfl(300)), "sscanf ignores the rest");
        assert_eq!(p("default 300"), Ok(Dfl(300)));
        assert_eq!(p("0x12c"), Ok(Dfl(0)), "decimal only: reads the 0");
        assert_eq!(
            p("8:0 300"),
            Ok(Device {
                dev: SDA,
                weight: 300
            })
        );
        assert_eq!(p("8:0 default\n"), Ok(DeviceDefault { dev: SDA }));
        assert_eq!(p("4294967296"), Err(Overflow));
        for bad in ["", "abc", "default", "+1", "8:0", "8:0 x", "x:0 1"] {
            assert_eq!(p(bad), Err(Invalid), "{bad:?}");
        }
    }

    #[test]
    fn default_writes_parse_back() {
        for f in WEIGHT_FILES {
            let text = f.default_write(300);
            assert_eq!(f.parse(&text), Ok(Dfl(300)), "{}: {text}", f.name);
        }
        assert_eq!(BLKIO_BFQ_WEIGHT.default_write(300), "300");
        assert_eq!(IO_BFQ_WEIGHT.default_write(300), "default 300");
    }

    #[test]
    fn written_weight() {
        assert_eq!(Dfl(5).weight(), Some(5));
        assert_eq!(
            Device {
                dev: SDA,
                weight: 7
            }
            .weight(),
            Some(7)
        );
        assert_eq!(DeviceDefault { dev: SDA }.weight(), None);
        assert_eq!(SDA.to_string(), "8:0");
    }
}
