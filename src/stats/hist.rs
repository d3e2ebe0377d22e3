//! fio's log-linear latency histogram ("plat" buckets) and its percentile
//! walk. Bucket layout, bucket values and the percentile threshold test are
//! the same as fio's `stat.c`, so percentiles come out identical to fio's for
//! the same samples.
//!
//! Layout: values below 128 ns get one bucket each; above that, every power
//! of two is split into 64 equal buckets (6 index bits after the MSB), for 29
//! groups and 1856 buckets in total. A bucket reports the midpoint of its
//! range.

use super::ld::Ext;

/// Index bits per power-of-two group (`FIO_IO_U_PLAT_BITS`).
pub const PLAT_BITS: u32 = 6;
/// Buckets per group (`FIO_IO_U_PLAT_VAL`).
pub const PLAT_VAL: usize = 1 << PLAT_BITS;
/// Number of groups (`FIO_IO_U_PLAT_GROUP_NR`).
pub const PLAT_GROUP_NR: usize = 29;
/// Total buckets (`FIO_IO_U_PLAT_NR`).
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL;
/// fio keeps at most this many percentiles (`FIO_IO_U_LIST_MAX_LEN`).
pub const LIST_MAX_LEN: usize = 20;

/// fio's default `percentile_list`.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// Bucket index of a latency in ns (fio's `plat_val_to_idx`).
///
/// fio: below 128 the value is its own index; otherwise, with `msb` the
/// top set bit and `e = msb - 6` the bits dropped, the index is
/// `(e + 1) * 64 + ((val >> e) & 63)`. As `val >> e` lies in `[64, 128)`
/// that is `e * 64 + (val >> e)`, and taking `e` from `val | 64` (whose top
/// bit is at least bit 6) makes `e = 0` and the index `val` below 128, so
/// one branch-free expression covers both cases.
#[inline]
pub fn val_to_idx(val: u64) -> usize {
    let e = 57 - (val | PLAT_VAL as u64).leading_zeros();
    (((e as usize) << PLAT_BITS) + (val >> e) as usize).min(PLAT_NR - 1)
}

/// Value a bucket stands for (fio's `plat_idx_to_val`): the midpoint of the
/// bucket's range, exact below 128 ns.
#[inline]
pub fn idx_to_val(idx: usize) -> u64 {
    assert!(idx < PLAT_NR);
    if idx < 2 * PLAT_VAL {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx % PLAT_VAL) as u64;
    // fio computes base + (k + 0.5) * 2^error_bits in double; error_bits >= 1
    // here, so that is an exact integer.
    base + (k << error_bits) + (1u64 << (error_bits - 1))
}

/// All-zero buckets, allocated directly on the heap (15 KiB).
fn zeroed_counts() -> Box<[u64; PLAT_NR]> {
    match vec![0u64; PLAT_NR].into_boxed_slice().try_into() {
        Ok(c) => c,
        Err(_) => unreachable!("vec has PLAT_NR elements"),
    }
}

/// Bucket counts. Allocated on first use so jobs that never record a kind of
/// latency (slat for sync engines, lat percentiles off) cost nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// Fixed length, so indexing with a clamped bucket index needs no
    /// bounds check.
    counts: Option<Box<[u64; PLAT_NR]>>,
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram { counts: None }
    }

    #[inline]
    pub fn add(&mut self, val: u64) {
        let idx = val_to_idx(val);
        match &mut self.counts {
            Some(c) => c[idx] += 1,
            None => self.add_cold(idx),
        }
    }

    #[cold]
    fn add_cold(&mut self, idx: usize) {
        let mut c = zeroed_counts();
        c[idx] = 1;
        self.counts = Some(c);
    }

    /// Add `n` samples of value `val` at once (lab imports, tests).
    pub fn add_count(&mut self, val: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.add(val);
        if let Some(c) = &mut self.counts {
            c[val_to_idx(val)] += n - 1;
        }
    }

    /// Add another histogram's counts (group_reporting sums buckets).
    pub fn merge(&mut self, other: &Histogram) {
        let Some(src) = &other.counts else { return };
        match &mut self.counts {
            Some(dst) => {
                for (d, s) in dst.iter_mut().zip(src.iter()) {
                    *d += *s;
                }
            }
            None => self.counts = Some(src.clone()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.counts.is_none()
    }

    /// Count in bucket `idx`.
    pub fn count(&self, idx: usize) -> u64 {
        self.counts.as_ref().map_or(0, |c| c[idx])
    }

    /// Sum of all buckets.
    pub fn total(&self) -> u64 {
        self.counts.as_ref().map_or(0, |c| c.iter().sum())
    }

    /// Non-empty buckets as `(bucket value, count)`, ascending (json+ "bins").
    pub fn bins(&self) -> Vec<(u64, u64)> {
        match &self.counts {
            None => Vec::new(),
            Some(c) => c
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| (idx_to_val(i), *n))
                .collect(),
        }
    }

    /// fio's `calc_clat_percentiles`: `plist` must already be prepared with
    /// [`prepare_list`]; `nr` is the sample count of the matching latency stat.
    /// Each percentile is the value of the first bucket at which the running
    /// count reaches `p / 100 * nr`, that comparison done in x87 extended
    /// precision exactly as fio's `long double` expression does.
    pub fn percentiles(&self, nr: u64, plist: &[f64]) -> Vec<u64> {
        let mut out = Vec::with_capacity(plist.len());
        let Some(c) = &self.counts else { return out };
        if plist.is_empty() {
            return out;
        }
        let hundred = Ext::from_f64(100.0);
        let nr_ext = Ext::from_u64(nr);
        let thresholds: Vec<Ext> = plist
            .iter()
            .map(|p| Ext::from_f64(*p).div(hundred).mul(nr_ext))
            .collect();
        let mut sum: u64 = 0;
        let mut j = 0;
        for (i, n) in c.iter().enumerate() {
            sum += *n;
            while j < plist.len() && thresholds[j].le_u64(sum) {
                out.push(idx_to_val(i));
                j += 1;
            }
            if j == plist.len() {
                break;
            }
        }
        // fio logs an error and leaves the rest unset; report the top bucket
        // with samples instead of garbage.
        if out.len() < plist.len() {
            let top = c.iter().rposition(|n| *n > 0).map_or(0, idx_to_val);
            out.resize(plist.len(), top);
        }
        out
    }
}

/// fio's handling of `percentile_list`: entries up to the first 0 (at most
/// 20), sorted ascending.
pub fn prepare_list(list: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = list
        .iter()
        .copied()
        .take(LIST_MAX_LEN)
        .take_while(|p| *p != 0.0)
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v
}

/// Digits fio prints after the point for percentile names (`percentile_precision`):
/// at least 2 (from the default list), more if the user list needs them.
pub fn list_precision(list: &[f64]) -> u32 {
    let mut prec = 2u32;
    for p in list {
        let s = format!("{}", p);
        if let Some(dot) = s.find('.') {
            prec = prec.max((s.len() - dot - 1) as u32);
        }
    }
    prec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_128() {
        for v in 0..128u64 {
            assert_eq!(val_to_idx(v), v as usize);
            assert_eq!(idx_to_val(v as usize), v);
        }
    }

    #[test]
    fn known_fio_midpoints() {
        // Values fio prints in its percentile tables.
        assert_eq!(idx_to_val(val_to_idx(325_632)), 325_632);
        assert_eq!(idx_to_val(val_to_idx(325_000)), 325_632);
        assert_eq!(idx_to_val(val_to_idx(11_584)), 11_584);
        assert_eq!(idx_to_val(val_to_idx(11_600)), 11_584);
        assert_eq!(idx_to_val(val_to_idx(128)), 129);
        assert_eq!(idx_to_val(val_to_idx(129)), 129);
        assert_eq!(idx_to_val(val_to_idx(130)), 131);
        assert_eq!(idx_to_val(val_to_idx(256)), 258);
        // 742 usec, 1037 usec and 4883 usec from real fio output (values are
        // rounded up to usec by the text printer).
        assert_eq!(idx_to_val(val_to_idx(741_000)).div_ceil(1000), 742);
        assert_eq!(idx_to_val(val_to_idx(1_036_000)).div_ceil(1000), 1037);
        assert_eq!(idx_to_val(val_to_idx(4_882_000)).div_ceil(1000), 4883);
    }

    #[test]
    fn index_bounds_and_monotone() {
        let mut last = 0;
        for idx in 0..PLAT_NR {
            let v = idx_to_val(idx);
            assert!(idx == 0 || v > last);
            assert_eq!(val_to_idx(v), idx, "round trip at {idx}");
            last = v;
        }
        assert_eq!(val_to_idx(u64::MAX), PLAT_NR - 1);
        // Every value lands in a bucket whose midpoint is within 1/128.
        for v in [200u64, 1000, 99_999, 1 << 20, 123_456_789, 1 << 33] {
            let m = idx_to_val(val_to_idx(v)) as f64;
            assert!(((m - v as f64) / v as f64).abs() <= 1.0 / 128.0);
        }
    }

    /// fio's `plat_val_to_idx`, written as fio writes it.
    fn fio_val_to_idx(val: u64) -> usize {
        let msb = if val == 0 {
            0
        } else {
            63 - val.leading_zeros()
        };
        if msb <= PLAT_BITS {
            return val as usize;
        }
        let error_bits = msb - PLAT_BITS;
        let base = ((error_bits + 1) as usize) << PLAT_BITS;
        let offset = ((val >> error_bits) as usize) & (PLAT_VAL - 1);
        (base + offset).min(PLAT_NR - 1)
    }

    #[test]
    fn index_matches_fio_formula() {
        for v in 0..(1u64 << 18) {
            assert_eq!(val_to_idx(v), fio_val_to_idx(v), "{v}");
        }
        for b in 0..64 {
            let p = 1u64 << b;
            for v in [p - 1, p, p + 1, p | (p >> 1), p.wrapping_mul(3) / 2] {
                assert_eq!(val_to_idx(v), fio_val_to_idx(v), "{v}");
            }
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for v in [x, x >> (x % 64), x % 10_000_000_000] {
                assert_eq!(val_to_idx(v), fio_val_to_idx(v), "{v}");
            }
        }
        assert_eq!(val_to_idx(u64::MAX), fio_val_to_idx(u64::MAX));
    }

    #[test]
    fn group_boundaries() {
        // First bucket of each group: 2^(g+5) for g >= 2.
        assert_eq!(val_to_idx(127), 127);
        assert_eq!(val_to_idx(128), 128);
        assert_eq!(val_to_idx(255), 191);
        assert_eq!(val_to_idx(256), 192);
        assert_eq!(val_to_idx(1 << 33), 28 * 64);
        assert_eq!(val_to_idx((1 << 34) - 1), PLAT_NR - 1);
        assert_eq!(val_to_idx(1 << 40), PLAT_NR - 1);
    }

    fn hist_of(vals: &[u64]) -> Histogram {
        let mut h = Histogram::new();
        for v in vals {
            h.add(*v);
        }
        h
    }

    #[test]
    fn percentiles_of_uniform_1_to_100() {
        let vals: Vec<u64> = (1..=100).collect();
        let h = hist_of(&vals);
        let p = h.percentiles(100, &[1.0, 50.0, 99.0, 100.0]);
        assert_eq!(p, vec![1, 50, 99, 100]);
    }

    #[test]
    fn percentile_first_bucket_reaching_fraction() {
        // 1000 samples: 995 at 10 us, 5 at 1 ms. 99.5% needs 995 samples,
        // which the first bucket reaches exactly (fio's long double compare
        // says 995 >= 995.0000...).
        let mut vals = vec![10_000u64; 995];
        vals.extend([1_000_000u64; 5]);
        let h = hist_of(&vals);
        let p = h.percentiles(1000, &[99.0, 99.5, 99.9]);
        assert_eq!(p[0], idx_to_val(val_to_idx(10_000)));
        assert_eq!(p[2], idx_to_val(val_to_idx(1_000_000)));
        assert_eq!(p[1], idx_to_val(val_to_idx(10_000)));
    }

    #[test]
    fn prepare_list_sorts_and_stops_at_zero() {
        assert_eq!(prepare_list(&[99.0, 50.0, 0.0, 10.0]), vec![50.0, 99.0]);
        assert_eq!(list_precision(&DEFAULT_PERCENTILES), 2);
        assert_eq!(list_precision(&[50.0, 99.999]), 3);
    }

    #[test]
    fn merge_adds() {
        let mut a = hist_of(&[1, 2, 3, 1000]);
        let b = hist_of(&[3, 1000, 5000]);
        a.merge(&b);
        assert_eq!(a.total(), 7);
        assert_eq!(a.count(3), 2);
        assert_eq!(a.count(val_to_idx(1000)), 2);
        let mut e = Histogram::new();
        e.merge(&b);
        assert_eq!(e, b);
    }
}
