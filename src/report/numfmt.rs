//! Number and date formatting the way fio prints them: `num2str` (3-4
//! significant digits with SI or IEC prefixes, including its truncation
//! quirks) and `ctime`. Rust's `{:.N}` rounds exactly like glibc's `%.Nf`
//! (correct rounding of the binary value, ties to even), so plain `format!`
//! is used for fio's `%f`-style fields.

/// fio's `enum n2s_unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    None,
    PerSec,
    Byte,
    Bit,
    BytePerSec,
    BitPerSec,
}

impl Unit {
    fn suffix(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::PerSec => "/s",
            Unit::Byte => "B",
            Unit::Bit => "bit",
            Unit::BytePerSec => "B/s",
            Unit::BitPerSec => "bit/s",
        }
    }
}

const SI: [&str; 6] = ["", "k", "M", "G", "T", "P"];
const IEC: [&str; 6] = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];

fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// fio's `num2str(num, maxlen, base, pow2, units)`: divide by 1000 (or 1024
/// when `pow2`) until at most `maxlen` digits remain, then show as many
/// decimals of the remainder as fit. Like fio, the decimals come from
/// printing `remainder / 1000` with `%.Nf` and dropping the leading "0.", so
/// a remainder that rounds up to 1.0 prints as ".0" without a carry.
pub fn num2str(num: u64, maxlen: usize, base: u64, pow2: bool, units: Unit) -> String {
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let prefixes = if pow2 { &IEC } else { &SI };
    let mut post_index = 0usize;
    let mut b = base;
    while b > 1 {
        b /= thousand;
        post_index += 1;
    }
    let mut num = match units {
        Unit::Bit | Unit::BitPerSec => num.wrapping_mul(8),
        _ => num,
    };
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post_index < SI.len() {
        if digits(num) <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post_index += 1;
    }
    let done = |num: u64, post_index: usize| {
        let p = if post_index >= SI.len() {
            0
        } else {
            post_index
        };
        format!("{}{}{}", num, prefixes[p], units.suffix())
    };
    let Some(modulo) = modulo else {
        return done(num, post_index);
    };
    let len = digits(num);
    if maxlen as i64 - len as i64 <= 1 {
        if carry {
            num += 1;
        }
        return done(num, post_index);
    }
    let prec = maxlen - len - 1;
    let frac = format!("{:.*}", prec, modulo as f64 / thousand as f64);
    format!(
        "{}.{}{}{}",
        num,
        &frac[2..],
        prefixes[post_index],
        units.suffix()
    )
}

/// `ctime(3)` in UTC without the trailing newline: `Thu Jan  1 00:00:00 1970`.
pub fn ctime(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (h, mi, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // 1970-01-01 was a Thursday.
    let wday = ((days + 4) % 7) as usize;
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!(
        "{} {} {:2} {:02}:{:02}:{:02} {}",
        DAYS[wday],
        MONTHS[(m - 1) as usize],
        d,
        h,
        mi,
        s,
        y
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bw(n: u64) -> (String, String) {
        (
            num2str(n, 4, 1, true, Unit::BytePerSec),
            num2str(n, 4, 1, false, Unit::BytePerSec),
        )
    }

    #[test]
    fn bandwidth_strings_from_real_fio_output() {
        assert_eq!(bw(10_240_000), ("9.77MiB/s".into(), "10.2MB/s".into()));
        // "BW=156MiB/s (164MB/s)" for 18.3GiB in 120001 ms.
        let io: u64 = 4_803_938 * 4096;
        assert_eq!(
            bw(io * 1000 / 120_001),
            ("156MiB/s".into(), "164MB/s".into())
        );
        assert_eq!(
            num2str(io, 4, 1, true, Unit::Byte),
            "18.3GiB",
            "io= of the same run"
        );
        // "BW=7856KiB/s (8044kB/s)", "io=5000MiB (5243MB)".
        let io = 5000u64 << 20;
        assert_eq!(
            bw(io * 1000 / 651_762),
            ("7856KiB/s".into(), "8044kB/s".into())
        );
        assert_eq!(num2str(io, 4, 1, true, Unit::Byte), "5000MiB");
        assert_eq!(num2str(io, 4, 1, false, Unit::Byte), "5243MB");
        assert_eq!(num2str(22 << 20, 4, 1, true, Unit::Byte), "22.0MiB");
        assert_eq!(num2str(4096, 4, 1, true, Unit::Byte), "4096B");
        assert_eq!(num2str(16384, 4, 1, true, Unit::Byte), "16.0KiB");
        assert_eq!(num2str(1 << 20, 4, 1, true, Unit::Byte), "1024KiB");
    }

    #[test]
    fn iops_and_latency_strings() {
        assert_eq!(num2str(40_031, 4, 1, false, Unit::None), "40.0k");
        assert_eq!(num2str(4801, 4, 1, false, Unit::None), "4801");
        assert_eq!(num2str(3_461_234, 4, 1, false, Unit::None), "3461k");
        assert_eq!(num2str(3_461_634, 4, 1, false, Unit::None), "3462k");
        // display_lat uses 6 digits: "max=9574.2k", "max=1799.0k".
        assert_eq!(num2str(9_574_200, 6, 1, false, Unit::None), "9574.2k");
        assert_eq!(num2str(1_799_012, 6, 1, false, Unit::None), "1799.0k");
        assert_eq!(num2str(279_767, 6, 1, false, Unit::None), "279767");
        // The fio quirk: 40999 -> remainder .999 prints as "1.0" -> ".0".
        assert_eq!(num2str(40_999, 4, 1, false, Unit::None), "40.0k");
        assert_eq!(num2str(0, 4, 1, false, Unit::None), "0");
    }

    #[test]
    fn ctime_format() {
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(1_718_334_968), "Fri Jun 14 03:16:08 2024");
        assert_eq!(ctime(951_782_400), "Tue Feb 29 00:00:00 2000");
        assert_eq!(ctime(1_700_000_000), "Tue Nov 14 22:13:20 2023");
    }
}
