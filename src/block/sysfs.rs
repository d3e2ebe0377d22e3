//! How the kernel reads numbers written to sysfs files (`echo V > FILE`), and
//! the jiffy conversions its show/store functions apply. Shared by every
//! scheduler's `iosched/` attributes (see `elevator::Attr`) and the queue
//! knobs, so a value behaves as it does on the kernel each scheduler models.

use crate::sim::time::{self, NS_PER_JIFFY};

fn invalid(s: &str) -> String {
    format!("invalid value '{}': not a number", s.trim_end())
}

fn out_of_range(s: &str, what: &str) -> String {
    format!("invalid value '{}': out of range for {what}", s.trim_end())
}

/// Digits of `s` in `base`: (value wrapped to 64 bits, overflowed, digits used).
fn parse_digits(s: &[u8], base: u64) -> (u64, bool, usize) {
    let mut v: u64 = 0;
    let mut overflow = false;
    let mut n = 0;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => (c - b'0') as u64,
            b'a'..=b'f' => (c - b'a' + 10) as u64,
            b'A'..=b'F' => (c - b'A' + 10) as u64,
            _ => break,
        };
        if d >= base {
            break;
        }
        match v.checked_mul(base).and_then(|x| x.checked_add(d)) {
            Some(x) => v = x,
            None => {
                overflow = true;
                v = v.wrapping_mul(base).wrapping_add(d);
            }
        }
        n += 1;
    }
    (v, overflow, n)
}

/// `_kstrtoull(s, 0)` (lib/kstrtox.c): base from the prefix (0x → 16,
/// leading 0 → 8), the whole string must be digits apart from one trailing
/// newline; overflow is -ERANGE.
pub fn kstrtoull(s: &str) -> Result<u64, String> {
    let b = s.as_bytes();
    let (base, skip) = if b.first() == Some(&b'0') {
        if b.len() > 2 && (b[1] | 0x20) == b'x' && b[2].is_ascii_hexdigit() {
            (16, 2)
        } else {
            (8, 0)
        }
    } else {
        (10, 0)
    };
    let rest = &b[skip..];
    let (v, overflow, n) = parse_digits(rest, base);
    if overflow {
        return Err(out_of_range(s, "u64"));
    }
    if n == 0 {
        return Err(invalid(s));
    }
    let tail = &rest[n..];
    let tail = tail.strip_prefix(b"\n").unwrap_or(tail);
    if !tail.is_empty() {
        return Err(invalid(s));
    }
    Ok(v)
}

/// `kstrtoull(s, 10)` (lib/kstrtox.c): one optional leading '+', decimal
/// digits only (no 0x or octal prefix: "010" is ten), one trailing newline;
/// overflow is -ERANGE.
pub fn kstrtoull_base10(s: &str) -> Result<u64, String> {
    let rest = s.strip_prefix('+').unwrap_or(s).as_bytes();
    let (v, overflow, n) = parse_digits(rest, 10);
    if overflow {
        return Err(out_of_range(s, "u64"));
    }
    if n == 0 {
        return Err(invalid(s));
    }
    let tail = &rest[n..];
    let tail = tail.strip_prefix(b"\n").unwrap_or(tail);
    if !tail.is_empty() {
        return Err(invalid(s));
    }
    Ok(v)
}

/// `kstrtoll(s, 0)`: an optional sign ('+' or '-') before `kstrtoull`.
pub fn kstrtoll(s: &str) -> Result<i64, String> {
    let relabel = |e: String, rest: &str| e.replace(rest.trim_end(), s.trim_end());
    if let Some(rest) = s.strip_prefix('-') {
        let u = kstrtoull(rest).map_err(|e| relabel(e, rest))?;
        if u > 1u64 << 63 {
            return Err(out_of_range(s, "s64"));
        }
        Ok((u as i64).wrapping_neg())
    } else {
        let rest = s.strip_prefix('+').unwrap_or(s);
        let u = kstrtoull(rest).map_err(|e| relabel(e, rest))?;
        i64::try_from(u).map_err(|_| out_of_range(s, "s64"))
    }
}

/// The kernel's `kstrtoint(s, 0, &v)` (v6.x store functions): `kstrtoll`
/// then -ERANGE outside `int`.
pub fn kstrtoint(s: &str) -> Result<i32, String> {
    let v = kstrtoll(s).map_err(|e| e.replace("s64", "int"))?;
    i32::try_from(v).map_err(|_| out_of_range(s, "int"))
}

/// The 4.x legacy store path: `simple_strtol(page, &p, 10)` assigned to an
/// int. Leading '-' allowed, parsing stops at the first non-digit, the long
/// is truncated to int. Deviation: where the kernel silently stored 0 for
/// input without digits, the model rejects it (a typo should not pass).
pub fn simple_strtol_int(s: &str) -> Result<i32, String> {
    let (neg, rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (v, _overflow, n) = parse_digits(rest.as_bytes(), 10);
    if n == 0 {
        return Err(invalid(s));
    }
    let v = if neg { v.wrapping_neg() } else { v };
    Ok(v as i64 as i32)
}

/// `msecs_to_jiffies` for a non-negative value (rounds up, HZ = 250).
pub fn msecs_to_jiffies(ms: i64) -> i64 {
    (time::ms_to_jiffies_ns(ms.max(0) as u64) / NS_PER_JIFFY) as i64
}

/// What a show function prints for a value stored in jiffies:
/// `jiffies_to_msecs` returns an unsigned int that is printed with "%d", so
/// very large values wrap negative exactly as in the kernel.
pub fn jiffies_to_msecs_shown(j: i64) -> i32 {
    ((j as u64).wrapping_mul(1000 / time::HZ) as u32) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_number_parsing() {
        assert_eq!(kstrtoint("42"), Ok(42));
        assert_eq!(kstrtoint("42\n"), Ok(42));
        assert_eq!(kstrtoint("+7"), Ok(7));
        assert_eq!(kstrtoint("-0x10"), Ok(-16));
        assert_eq!(kstrtoint("010"), Ok(8));
        assert_eq!(kstrtoint("0"), Ok(0));
        assert!(kstrtoint("08").is_err());
        assert!(kstrtoint("0x").is_err());
        assert!(kstrtoint("12abc").is_err());
        assert!(kstrtoint(" 1").is_err());
        assert!(kstrtoint("").is_err());
        assert!(kstrtoint("-+1").is_err());
        assert!(kstrtoint("abc").unwrap_err().contains("invalid value"));
        assert!(kstrtoint("2147483648")
            .unwrap_err()
            .contains("out of range"));
        assert_eq!(kstrtoint("-2147483648"), Ok(i32::MIN));
        assert!(kstrtoint("99999999999999999999999").is_err());
        assert_eq!(kstrtoull("18446744073709551615"), Ok(u64::MAX));
        assert!(kstrtoull("18446744073709551616").is_err());
        assert!(kstrtoull("-1").is_err());
        // Base 10 (kyber's latency targets): no prefixes, '+' allowed.
        assert_eq!(kstrtoull_base10("010\n"), Ok(10));
        assert_eq!(kstrtoull_base10("+7"), Ok(7));
        assert!(kstrtoull_base10("0x10").is_err());
        assert!(kstrtoull_base10("+").is_err());
        assert!(kstrtoull_base10("-1").is_err());
        assert!(kstrtoull_base10("1 ").is_err());
        assert_eq!(kstrtoull_base10("18446744073709551615"), Ok(u64::MAX));
        assert!(kstrtoull_base10("18446744073709551616")
            .unwrap_err()
            .contains("out of range"));
        assert_eq!(kstrtoll("-9223372036854775808"), Ok(i64::MIN));
        assert!(kstrtoll("9223372036854775808").is_err());
        assert_eq!(simple_strtol_int("12abc"), Ok(12));
        assert_eq!(simple_strtol_int("-5\n"), Ok(-5));
        assert_eq!(simple_strtol_int("4294967297"), Ok(1)); // long truncated to int
        assert!(simple_strtol_int("+5").is_err());
        assert!(simple_strtol_int("abc")
            .unwrap_err()
            .contains("invalid value"));
    }

    #[test]
    fn jiffy_conversions() {
        assert_eq!(msecs_to_jiffies(10), 3);
        assert_eq!(msecs_to_jiffies(500), 125);
        assert_eq!(msecs_to_jiffies(i32::MAX as i64), 536_870_912);
        assert_eq!(jiffies_to_msecs_shown(3), 12);
        assert_eq!(jiffies_to_msecs_shown(536_870_912), i32::MIN);
    }
}
