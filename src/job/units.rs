//! Numbers as fio writes them: sizes with k/m/g/t/p suffixes (meaning set by
//! `kb_base`), times with d/h/m/s/ms/us/ns suffixes, percentages, and
//! arithmetic in parentheses (`size=(2*1024)m`).
//!
//! Every function returns `Err(message)` instead of panicking: the caller
//! turns the message into a `JobError` carrying file, line and option.

use crate::sim::time::Ns;

/// What a number means, which decides how a suffix is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Bytes (or a plain count): size suffixes scaled by `kb_base`.
    Size { kb_base: u32 },
    /// Time; the value is nanoseconds. `default_ns` is the unit of a bare
    /// number (seconds for runtime, microseconds for thinktime).
    Time { default_ns: u64 },
}

pub(crate) const SIZE_HINT: &str = "expected a size like 4k, 1m, 512 or (2*4)k";
pub(crate) const TIME_HINT: &str = "expected a time like 30, 500ms, 10s, 2m, 100us";

/// Nesting limit for parentheses, so hostile input cannot exhaust the stack.
const MAX_DEPTH: u32 = 64;

/// Multiplier of a size suffix (`k`, `KiB`, `mb`, ...), case-insensitive.
///
/// fio's compatibility rule: with `kb_base=1024` (default) the plain prefixes
/// are binary (`4k` = `4kb` = 4096) and the IEC spelling is decimal (`4KiB` =
/// 4000); with `kb_base=1000` it is the other way round. As in fio's parser
/// (checked against fio 3.33) only the full `Xib` form swaps: a bare `4ki`
/// reads like `4k`, although HOWTO.rst's example table says otherwise.
pub(crate) fn size_multiplier(suffix: &str, kb_base: u32) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    let b = s.as_bytes();
    let (letter, iec) = match b {
        [] | [b'b'] => return Some(1),
        [l] | [l, b'b'] | [l, b'i'] => (*l, false),
        [l, b'i', b'b'] => (*l, true),
        _ => return None,
    };
    let power: u32 = match letter {
        b'k' => 1,
        b'm' => 2,
        b'g' => 3,
        b't' => 4,
        b'p' => 5,
        _ => return None,
    };
    let plain: u64 = if kb_base == 1000 { 1000 } else { 1024 };
    let other: u64 = if kb_base == 1000 { 1024 } else { 1000 };
    let base = if iec { other } else { plain };
    base.checked_pow(power)
}

/// Nanoseconds per unit of a time suffix; `""` is the option's default unit.
pub(crate) fn time_multiplier(suffix: &str, default_ns: u64) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    Some(match s.as_str() {
        "" => default_ns,
        "ns" | "nsec" => 1,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" | "hour" => 3_600_000_000_000,
        "d" | "day" => 86_400_000_000_000,
        _ => return None,
    })
}

/// A number literal split from its suffix: digits (decimal with optional
/// fraction, or `0x` hex) and the trailing letters.
struct Literal<'a> {
    value: f64,
    /// Exact integer value when the literal has no fraction.
    int: Option<u128>,
    suffix: &'a str,
}

fn split_literal(s: &str) -> Option<Literal<'_>> {
    let s = s.strip_prefix('+').unwrap_or(s);
    let bytes = s.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' && (bytes[1] == b'x' || bytes[1] == b'X') {
        let end = 2 + bytes[2..]
            .iter()
            .take_while(|b| b.is_ascii_hexdigit())
            .count();
        if end == 2 {
            return None;
        }
        let v = u128::from_str_radix(&s[2..end], 16).ok()?;
        return Some(Literal {
            value: v as f64,
            int: Some(v),
            suffix: &s[end..],
        });
    }
    let int_end = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut end = int_end;
    if end < bytes.len() && bytes[end] == b'.' {
        end += 1 + bytes[end + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
    }
    if int_end == 0 && end <= 1 {
        return None;
    }
    let text = &s[..end];
    let value: f64 = text.parse().ok()?;
    let int = if end == int_end {
        text.parse::<u128>().ok()
    } else {
        None
    };
    Some(Literal {
        value,
        int,
        suffix: &s[end..],
    })
}

/// Evaluates arithmetic for `(expr)` values. Literals may carry a suffix of
/// the option's kind; inside expressions fio counts time in microseconds.
struct Expr<'a> {
    s: &'a [u8],
    src: &'a str,
    pos: usize,
    unit: Unit,
    depth: u32,
}

impl<'a> Expr<'a> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn expr(&mut self) -> Result<f64, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("expression nested too deeply".into());
        }
        let mut v = self.term()?;
        while let Some(c) = self.peek() {
            match c {
                b'+' => {
                    self.pos += 1;
                    v += self.term()?;
                }
                b'-' => {
                    self.pos += 1;
                    v -= self.term()?;
                }
                _ => break,
            }
        }
        self.depth -= 1;
        Ok(v)
    }

    fn term(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        while let Some(c) = self.peek() {
            match c {
                b'*' => {
                    self.pos += 1;
                    v *= self.power()?;
                }
                b'/' => {
                    self.pos += 1;
                    let d = self.power()?;
                    if d == 0.0 {
                        return Err("division by zero in expression".into());
                    }
                    v /= d;
                }
                b'%' => {
                    self.pos += 1;
                    let d = self.power()?;
                    if d == 0.0 {
                        return Err("modulo by zero in expression".into());
                    }
                    v %= d;
                }
                _ => break,
            }
        }
        Ok(v)
    }

    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.peek() == Some(b'^') {
            self.pos += 1;
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err("expression nested too deeply".into());
            }
            let exp = self.power()?;
            self.depth -= 1;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<f64, String> {
        match self.peek() {
            Some(b'-') => {
                self.pos += 1;
                self.depth += 1;
                if self.depth > MAX_DEPTH {
                    return Err("expression nested too deeply".into());
                }
                let v = self.unary()?;
                self.depth -= 1;
                Ok(-v)
            }
            Some(b'+') => {
                self.pos += 1;
                self.unary()
            }
            Some(b'(') => {
                self.pos += 1;
                let v = self.expr()?;
                if self.peek() != Some(b')') {
                    return Err("missing ')' in expression".into());
                }
                self.pos += 1;
                Ok(v)
            }
            Some(_) => self.literal(),
            None => Err("expression ends too early".into()),
        }
    }

    fn literal(&mut self) -> Result<f64, String> {
        let start = self.pos;
        let mut end = start;
        while end < self.s.len() && (self.s[end].is_ascii_alphanumeric() || self.s[end] == b'.') {
            end += 1;
        }
        let text = self.src.get(start..end).unwrap_or("");
        let lit =
            split_literal(text).ok_or_else(|| format!("bad number '{text}' in expression"))?;
        self.pos = end;
        let mult = match self.unit {
            Unit::Size { kb_base } => size_multiplier(lit.suffix, kb_base).map(|m| m as f64),
            // Microseconds inside expressions, as fio documents.
            Unit::Time { .. } => time_multiplier(lit.suffix, 1_000).map(|m| m as f64 / 1_000.0),
        }
        .ok_or_else(|| format!("unknown unit '{}' in expression", lit.suffix))?;
        Ok(lit.value * mult)
    }
}

/// Evaluate a whole arithmetic string; used for `(expr)` values and for the
/// `bc`-style maths fio applies after `$ncpus`-like keyword substitution.
pub(crate) fn eval_expression(text: &str, unit: Unit) -> Result<f64, String> {
    let mut e = Expr {
        s: text.as_bytes(),
        src: text,
        pos: 0,
        unit,
        depth: 0,
    };
    let v = e.expr()?;
    e.skip_ws();
    if e.pos != e.s.len() {
        return Err(format!("unexpected '{}' in expression", &text[e.pos..]));
    }
    if !v.is_finite() {
        return Err("expression result is not a finite number".into());
    }
    Ok(v)
}

/// Index of the `)` matching a leading `(`.
fn matching_paren(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn to_u64(v: f64) -> Result<u64, String> {
    if !v.is_finite() || v < 0.0 {
        return Err("value must not be negative".into());
    }
    if v >= u64::MAX as f64 {
        return Err("value too large".into());
    }
    Ok(v as u64)
}

/// Parse a signed number in `unit`; the result is bytes or nanoseconds.
pub(crate) fn parse_signed(text: &str, unit: Unit) -> Result<i128, String> {
    let hint = match unit {
        Unit::Size { .. } => SIZE_HINT,
        Unit::Time { .. } => TIME_HINT,
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(format!("missing value; {hint}"));
    }
    if let Some(rest) = t.strip_prefix('-') {
        if rest.starts_with('-') {
            return Err(format!("bad value '{t}'; {hint}"));
        }
        return parse_signed(rest, unit).map(|v| -v);
    }
    if t.starts_with('(') {
        let close = matching_paren(t).ok_or_else(|| format!("missing ')' in '{t}'"))?;
        let v = eval_expression(&t[1..close], unit).map_err(|e| format!("{e} in '{t}'"))?;
        let suffix = t[close + 1..].trim();
        // The expression value is in bytes / microseconds unless a suffix says otherwise.
        let scaled = match unit {
            Unit::Size { kb_base } => {
                v * size_multiplier(suffix, kb_base)
                    .ok_or_else(|| format!("unknown size unit '{suffix}'; {hint}"))?
                    as f64
            }
            Unit::Time { .. } => {
                let m = if suffix.is_empty() {
                    1_000
                } else {
                    time_multiplier(suffix, 1_000)
                        .ok_or_else(|| format!("unknown time unit '{suffix}'; {hint}"))?
                };
                v * m as f64
            }
        };
        if !scaled.is_finite() || scaled.abs() >= u64::MAX as f64 {
            return Err(format!("value '{t}' is out of range"));
        }
        return Ok(scaled as i128);
    }
    let lit = split_literal(t).ok_or_else(|| format!("bad value '{t}'; {hint}"))?;
    let mult = match unit {
        Unit::Size { kb_base } => size_multiplier(lit.suffix, kb_base),
        Unit::Time { default_ns } => time_multiplier(lit.suffix, default_ns),
    }
    .ok_or_else(|| format!("bad value '{t}' (unknown unit '{}'); {hint}", lit.suffix))?;
    let v: u128 = match lit.int {
        Some(i) => i
            .checked_mul(mult as u128)
            .ok_or_else(|| format!("value '{t}' is too large"))?,
        None => to_u64(lit.value * mult as f64).map_err(|e| format!("{e}: '{t}'"))? as u128,
    };
    if v > u64::MAX as u128 {
        return Err(format!("value '{t}' is too large"));
    }
    Ok(v as i128)
}

/// Unsigned number in `unit` (bytes, a count, or nanoseconds).
pub(crate) fn parse_unsigned(text: &str, unit: Unit) -> Result<u64, String> {
    let v = parse_signed(text, unit)?;
    if v < 0 {
        return Err(format!("value '{}' must not be negative", text.trim()));
    }
    u64::try_from(v).map_err(|_| format!("value '{}' is too large", text.trim()))
}

pub(crate) fn parse_size(text: &str, kb_base: u32) -> Result<u64, String> {
    parse_unsigned(text, Unit::Size { kb_base })
}

pub(crate) fn parse_time_ns(text: &str, default_ns: u64) -> Result<Ns, String> {
    parse_unsigned(text, Unit::Time { default_ns })
}

/// `N%` → Some(percent), anything else → None.
pub(crate) fn parse_percent(text: &str) -> Option<Result<f64, String>> {
    let t = text.trim();
    let num = t.strip_suffix('%')?.trim();
    let v = if num.starts_with('(') {
        match num
            .strip_prefix('(')
            .and_then(|n| n.strip_suffix(')'))
            .ok_or_else(|| format!("bad percentage '{t}'"))
            .and_then(|inner| eval_expression(inner, Unit::Size { kb_base: 1024 }))
        {
            Ok(v) => v,
            Err(e) => return Some(Err(e)),
        }
    } else {
        match num.parse::<f64>() {
            Ok(v) => v,
            Err(_) => return Some(Err(format!("bad percentage '{t}'; expected e.g. 50%"))),
        }
    };
    if !v.is_finite() || !(0.0..=100.0).contains(&v) {
        return Some(Err(format!("percentage '{t}' out of range 0..100%")));
    }
    Some(Ok(v))
}

/// Plain floating point value (distribution parameters, percentiles).
pub(crate) fn parse_float(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let v: f64 = if t.starts_with('(') && t.ends_with(')') && t.len() >= 2 {
        eval_expression(&t[1..t.len() - 1], Unit::Size { kb_base: 1024 })?
    } else {
        t.parse()
            .map_err(|_| format!("expected a number, got '{t}'"))?
    };
    if !v.is_finite() {
        return Err(format!("expected a finite number, got '{t}'"));
    }
    Ok(v)
}

/// Split `text` at the first top-level (outside parentheses) occurrence of
/// any of `seps`, skipping a leading sign so `-8k` is not a range.
pub(crate) fn split_top_level<'a>(text: &'a str, seps: &[char]) -> Option<(&'a str, &'a str)> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ if depth == 0 && i > 0 && seps.contains(&c) => {
                return Some((&text[..i], &text[i + c.len_utf8()..]));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Unit = Unit::Size { kb_base: 1024 };
    const S1000: Unit = Unit::Size { kb_base: 1000 };
    const SEC: u64 = 1_000_000_000;

    #[test]
    fn sizes_default_base() {
        for (t, v) in [
            ("4096", 4096),
            ("4k", 4096),
            ("4K", 4096),
            ("4kb", 4096),
            ("4KB", 4096),
            ("4kB", 4096),
            ("4096b", 4096),
            ("4096B", 4096),
            ("1m", 1 << 20),
            ("1024k", 1 << 20),
            ("1g", 1 << 30),
            ("1t", 1 << 40),
            ("1p", 1 << 50),
            ("1mib", 1_000_000),
            ("1MiB", 1_000_000),
            ("1000kib", 1_000_000),
            ("4kib", 4000),
            ("4KiB", 4000),
            ("1tib", 1_000_000_000_000),
            // fio reads a bare "ki" like "k".
            ("4ki", 4096),
            ("1mi", 1 << 20),
            ("0x10", 16),
            ("0x10k", 16 * 1024),
            ("1.5k", 1536),
            ("(2*1024)m", 2 << 30),
            ("(1+1)k", 2048),
            ("(2^10)", 1024),
            ("(10%3)", 1),
            ("(4k*2)", 8192),
        ] {
            assert_eq!(parse_unsigned(t, S), Ok(v), "{t}");
        }
    }

    #[test]
    fn sizes_kb_base_1000() {
        for (t, v) in [
            ("4k", 4000),
            ("4kib", 4096),
            ("4KiB", 4096),
            ("4ki", 4000),
            ("1m", 1_000_000),
            ("1mib", 1 << 20),
            ("1024kib", 1 << 20),
            ("1t", 1_000_000_000_000),
            ("1tib", 1 << 40),
        ] {
            assert_eq!(parse_unsigned(t, S1000), Ok(v), "{t}");
        }
    }

    #[test]
    fn size_errors() {
        for t in [
            "",
            "k",
            "4x",
            "4kk",
            "-4k",
            "4 k k",
            "0x",
            "(1+",
            "(1/0)",
            "99999999999999999999999p",
        ] {
            assert!(parse_unsigned(t, S).is_err(), "{t}");
        }
        assert_eq!(parse_signed("-8k", S), Ok(-8192));
    }

    #[test]
    fn times() {
        let s = Unit::Time { default_ns: SEC };
        let us = Unit::Time { default_ns: 1_000 };
        assert_eq!(parse_unsigned("30", s), Ok(30 * SEC));
        assert_eq!(parse_unsigned("2m", s), Ok(120 * SEC));
        assert_eq!(parse_unsigned("1h", s), Ok(3600 * SEC));
        assert_eq!(parse_unsigned("1d", s), Ok(86400 * SEC));
        assert_eq!(parse_unsigned("500ms", s), Ok(SEC / 2));
        assert_eq!(parse_unsigned("500msec", s), Ok(SEC / 2));
        assert_eq!(parse_unsigned("10us", s), Ok(10_000));
        assert_eq!(parse_unsigned("10usec", s), Ok(10_000));
        assert_eq!(parse_unsigned("7ns", s), Ok(7));
        assert_eq!(parse_unsigned("10s", s), Ok(10 * SEC));
        assert_eq!(parse_unsigned("1.5s", s), Ok(3 * SEC / 2));
        assert_eq!(parse_unsigned("100", us), Ok(100_000));
        assert_eq!(parse_unsigned("1ms", us), Ok(1_000_000));
        // Expressions count microseconds unless a suffix follows.
        assert_eq!(parse_unsigned("(1000*1000)", s), Ok(SEC));
        assert_eq!(parse_unsigned("(1+1)s", s), Ok(2 * SEC));
        assert_eq!(parse_unsigned("(1ms+500us)", s), Ok(1_500_000));
        assert!(parse_unsigned("10x", s).is_err());
        assert!(parse_unsigned("10k", s).is_err());
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent("50%"), Some(Ok(50.0)));
        assert_eq!(parse_percent("12.5%"), Some(Ok(12.5)));
        assert_eq!(parse_percent("50"), None);
        assert!(matches!(parse_percent("150%"), Some(Err(_))));
        assert!(matches!(parse_percent("x%"), Some(Err(_))));
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let t = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert!(parse_unsigned(&t, S).is_err());
        let t = format!("({}1)", "-".repeat(500));
        assert!(parse_unsigned(&t, S).is_err());
    }

    #[test]
    fn top_level_split() {
        assert_eq!(split_top_level("4k-16k", &['-', ':']), Some(("4k", "16k")));
        assert_eq!(
            split_top_level("(1-1)k:8k", &['-', ':']),
            Some(("(1-1)k", "8k"))
        );
        assert_eq!(split_top_level("8k", &['-', ':']), None);
    }
}
