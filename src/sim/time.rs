//! Simulated time: integer nanoseconds since the start of the run.

/// Nanoseconds.
pub type Ns = u64;

pub const NS_PER_US: Ns = 1_000;
pub const NS_PER_MS: Ns = 1_000_000;
pub const NS_PER_SEC: Ns = 1_000_000_000;

/// The kernel measures scheduler deadlines in jiffies. We model HZ=250, the
/// default of most distribution kernels (CONFIG_HZ_250), and round up to
/// whole jiffies where the kernel does (`msecs_to_jiffies`).
pub const HZ: u64 = 250;
pub const NS_PER_JIFFY: Ns = NS_PER_SEC / HZ;

/// `msecs_to_jiffies(ms)` rounds up; returned as nanoseconds.
pub fn ms_to_jiffies_ns(ms: u64) -> Ns {
    let jiffies = (ms * HZ).div_ceil(1000);
    jiffies * NS_PER_JIFFY
}

/// Current jiffy count at time `now` (the kernel's `jiffies`, starting at 0).
pub fn jiffies(now: Ns) -> u64 {
    now / NS_PER_JIFFY
}

/// A duration as written on elevator's command line: a plain number is
/// seconds; suffixes ns, us, ms, s, m, h, d (fio's time units).
pub fn parse_duration(s: &str) -> Result<Ns, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("expected a duration like 30s, 500ms or 2m, got '{s}'"))?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => NS_PER_SEC,
        "ns" => 1,
        "us" | "usec" => NS_PER_US,
        "ms" | "msec" => NS_PER_MS,
        "m" | "min" => 60 * NS_PER_SEC,
        "h" => 3600 * NS_PER_SEC,
        "d" => 86400 * NS_PER_SEC,
        _ => {
            return Err(format!(
                "unknown time unit '{unit}' in '{s}' (ns, us, ms, s, m, h, d)"
            ))
        }
    };
    let ns = v * mult as f64;
    if !ns.is_finite() || ns < 0.0 || ns >= u64::MAX as f64 {
        return Err(format!(
            "expected a non-negative duration below 584 years, got '{s}'"
        ));
    }
    Ok(ns.round() as Ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), 30 * NS_PER_SEC);
        assert_eq!(parse_duration("500ms").unwrap(), 500 * NS_PER_MS);
        assert_eq!(parse_duration("2m").unwrap(), 120 * NS_PER_SEC);
        assert_eq!(parse_duration("7").unwrap(), 7 * NS_PER_SEC);
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("1e30").is_err());
        assert!(parse_duration("99999999999d").is_err());
    }
}
