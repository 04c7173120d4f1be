//! The one log-linear bucket layout used for every distribution, and a plain
//! (non-atomic) histogram that merges by bucket addition.
//!
//! Layout: values below 256 have a bucket each (exact). Above that, every power
//! of two `[2^h, 2^(h+1))` is split into 128 equal buckets, so a bucket is at most
//! 1/128 of its lower bound wide. Reporting the bucket midpoint therefore has a
//! relative error of at most 1/256 (0.39 %); the lower bound is off by at most
//! 1/128 (0.78 %). The documented bound is "<= 1 %". 7,424 buckets cover all u64.

use serde::{Deserialize, Serialize};

/// log2 of the number of linear buckets per power of two.
pub const GROUPING_POWER: u32 = 7;
const SUB_BUCKETS: u64 = 1 << GROUPING_POWER;
/// Total number of buckets covering 0..=u64::MAX.
pub const BUCKETS: usize = ((64 - GROUPING_POWER as usize) << GROUPING_POWER) + SUB_BUCKETS as usize;
/// Worst-case relative error of a reported value (bucket midpoint), as a fraction.
pub const RELATIVE_ERROR: f64 = 1.0 / (2 * SUB_BUCKETS) as f64;

/// Bucket index of a value.
#[inline(always)]
pub fn bucket_index(value: u64) -> usize {
    if value < 2 * SUB_BUCKETS {
        value as usize
    } else {
        let h = 63 - value.leading_zeros();
        let shift = h - GROUPING_POWER;
        (((shift as u64) << GROUPING_POWER) + (value >> shift)) as usize
    }
}

/// Inclusive value range `[low, high]` covered by a bucket.
pub fn bucket_range(index: usize) -> (u64, u64) {
    let index = index as u64;
    if index < 2 * SUB_BUCKETS {
        (index, index)
    } else {
        let shift = (index >> GROUPING_POWER) - 1;
        let low = (SUB_BUCKETS + (index & (SUB_BUCKETS - 1))) << shift;
        let high = low + ((1u64 << shift) - 1);
        (low, high)
    }
}

/// The value reported for a bucket: its midpoint.
pub fn bucket_value(index: usize) -> u64 {
    let (low, high) = bucket_range(index);
    low + (high - low) / 2
}

/// A histogram with exact count, sum, min and max beside the buckets. Only non-empty
/// buckets are kept (ascending by index), so a second of I/O costs a few KiB, not the
/// 58 KiB of all 7,424 buckets, and merging costs the buckets used, not all of them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Wire", try_from = "Wire")]
pub struct Histogram {
    /// (bucket index, count > 0), ascending by index.
    cells: Vec<(u32, u64)>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    pub fn new() -> Self {
        Self { cells: Vec::new(), count: 0, sum: 0, min: u64::MAX, max: 0 }
    }

    #[cfg(test)]
    fn new_with(value: u64) -> Self {
        let mut h = Self::new();
        h.record(value);
        h
    }

    pub fn record(&mut self, value: u64) {
        self.record_n(value, 1);
    }

    pub fn record_n(&mut self, value: u64, n: u64) {
        if n == 0 {
            return;
        }
        let index = bucket_index(value) as u32;
        match self.cells.binary_search_by_key(&index, |c| c.0) {
            Ok(i) => self.cells[i].1 += n,
            Err(i) => self.cells.insert(i, (index, n)),
        }
        self.count += n;
        self.sum += value as u128 * n as u128;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
    }

    /// Builds a histogram from dense bucket counts (one per bucket of the layout) and the
    /// exact extras kept beside them.
    pub fn from_parts(buckets: Vec<u64>, sum: u128, min: u64, max: u64) -> Self {
        debug_assert_eq!(buckets.len(), BUCKETS);
        let cells: Vec<(u32, u64)> =
            buckets.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (i as u32, *c)).collect();
        Self::from_cells(cells, sum, min, max)
    }

    /// Builds a histogram from (bucket index, count) pairs in any order (a repeated index
    /// adds up; an index past the layout or a zero count is left out) and the exact
    /// extras kept beside them: what a sampler that counts buckets elsewhere (the kernel)
    /// hands over.
    pub fn from_sparse(pairs: impl IntoIterator<Item = (usize, u64)>, sum: u128, min: u64, max: u64) -> Self {
        let mut cells: Vec<(u32, u64)> =
            pairs.into_iter().filter(|&(i, c)| i < BUCKETS && c > 0).map(|(i, c)| (i as u32, c)).collect();
        cells.sort_unstable_by_key(|c| c.0);
        cells.dedup_by(|next, kept| {
            let same = next.0 == kept.0;
            if same {
                kept.1 = kept.1.saturating_add(next.1);
            }
            same
        });
        Self::from_cells(cells, sum, min, max)
    }

    pub(crate) fn from_cells(cells: Vec<(u32, u64)>, sum: u128, min: u64, max: u64) -> Self {
        let count = cells.iter().fold(0u64, |n, c| n.saturating_add(c.1));
        Self { cells, count, sum, min: if count == 0 { u64::MAX } else { min }, max }
    }

    /// No values, but a sum and a max: the rest of a record read in two passes, whose
    /// bucket the first pass counted (only a recorder's read makes one; merging it into that
    /// first pass completes it).
    pub(crate) fn partial(sum: u128, max: u64) -> Self {
        Self { sum, max, ..Self::new() }
    }

    /// Adds another histogram's buckets: aggregates over workers, hosts and seconds are exact.
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            // Empty, or the rest of a record in two passes ([`Histogram::partial`]).
            self.sum = self.sum.saturating_add(other.sum);
            self.max = self.max.max(other.max);
            return;
        }
        if self.cells.is_empty() {
            self.cells.clone_from(&other.cells);
        } else {
            let (a, b) = (&self.cells, &other.cells);
            let mut out = Vec::with_capacity(a.len().max(b.len()));
            let (mut i, mut j) = (0, 0);
            while i < a.len() && j < b.len() {
                match a[i].0.cmp(&b[j].0) {
                    std::cmp::Ordering::Less => {
                        out.push(a[i]);
                        i += 1;
                    }
                    std::cmp::Ordering::Greater => {
                        out.push(b[j]);
                        j += 1;
                    }
                    std::cmp::Ordering::Equal => {
                        out.push((a[i].0, a[i].1.saturating_add(b[j].1)));
                        i += 1;
                        j += 1;
                    }
                }
            }
            out.extend_from_slice(&a[i..]);
            out.extend_from_slice(&b[j..]);
            self.cells = out;
        }
        // Saturating: totals of valid data fit (the store checks a file's totals); a
        // histogram must not panic on data that does not.
        self.count = self.count.saturating_add(other.count);
        self.sum = self.sum.saturating_add(other.sum);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn sum(&self) -> u128 {
        self.sum
    }
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// Exact minimum, or None when empty.
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }
    /// Exact maximum, or None when empty.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }
    /// Exact mean (from the exact sum), or None when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// Value at quantile `q` in 0..=1 (nearest rank), as the bucket midpoint clamped
    /// to the exact min and max; within [`RELATIVE_ERROR`] of the true value.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for &(i, c) in &self.cells {
            seen += c;
            if seen >= rank {
                // max(min).min(max) rather than clamp: never a panic, even if a
                // histogram built from damaged parts had min > max.
                return Some(bucket_value(i as usize).max(self.min).min(self.max));
            }
        }
        Some(self.max)
    }

    /// Non-empty buckets as (index, count) pairs, ascending by index.
    pub fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.cells.iter().map(|&(i, c)| (i as usize, c))
    }

    /// Sparse encoding: LEB128 varints of (index delta, count) for non-zero buckets.
    pub fn encode_sparse(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut last = 0usize;
        for (i, c) in self.nonzero() {
            put_varint(&mut out, (i - last) as u64);
            put_varint(&mut out, c);
            last = i;
        }
        out
    }

    /// Decodes [`Histogram::encode_sparse`] output; sum, min and max are stored beside it.
    /// Counts that add up past u64 and min > max are errors (the blob comes from a file).
    pub fn decode_sparse(bytes: &[u8], sum: u128, min: u64, max: u64) -> Result<Self, DecodeError> {
        let mut cells: Vec<(u32, u64)> = Vec::new();
        let mut pos = 0;
        let mut index = 0usize;
        let mut count = 0u64;
        while pos < bytes.len() {
            let delta = get_varint(bytes, &mut pos)? as usize;
            index = index.checked_add(delta).filter(|i| *i < BUCKETS).ok_or(DecodeError)?;
            let n = get_varint(bytes, &mut pos)?;
            count = count.checked_add(n).ok_or(DecodeError)?;
            match cells.last_mut() {
                // Written ascending; a repeated index (delta 0) adds up.
                Some(last) if last.0 as usize == index => last.1 += n, // <= count: no overflow
                Some(last) if last.0 as usize > index => return Err(DecodeError),
                _ if n > 0 => cells.push((index as u32, n)),
                _ => {}
            }
        }
        if count > 0 && min > max {
            return Err(DecodeError);
        }
        Ok(Self::from_cells(cells, sum, min, max))
    }
}

/// How a histogram travels (the agent protocol): its non-empty buckets, sum, min and max.
/// Read back through the same checks as a stored blob: a peer's histogram is never trusted.
#[derive(Serialize, Deserialize)]
struct Wire {
    /// (bucket index, count), ascending by index.
    cells: Vec<(u32, u64)>,
    sum: u128,
    min: u64,
    max: u64,
}

impl From<Histogram> for Wire {
    fn from(h: Histogram) -> Self {
        Wire { cells: h.cells, sum: h.sum, min: h.min, max: h.max }
    }
}

impl TryFrom<Wire> for Histogram {
    type Error = DecodeError;
    fn try_from(w: Wire) -> Result<Self, DecodeError> {
        let mut count = 0u64;
        let mut last: Option<u32> = None;
        for &(i, n) in &w.cells {
            if i as usize >= BUCKETS || n == 0 || last.is_some_and(|l| l >= i) {
                return Err(DecodeError);
            }
            count = count.checked_add(n).ok_or(DecodeError)?;
            last = Some(i);
        }
        if count > 0 && w.min > w.max {
            return Err(DecodeError);
        }
        Ok(Self::from_cells(w.cells, w.sum, w.min, w.max))
    }
}

/// A sparse histogram blob was malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError;

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("malformed sparse histogram")
    }
}
impl std::error::Error for DecodeError {}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(bytes: &[u8], pos: &mut usize) -> Result<u64, DecodeError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *bytes.get(*pos).ok_or(DecodeError)?;
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(DecodeError)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_histogram_from_unordered_bucket_counts_equals_one_recorded_value_by_value() {
        let values = [3u64, 300, 300, 70_000, 5, 70_001, 1 << 40];
        let mut recorded = Histogram::new();
        let mut pairs = Vec::new();
        for v in values.iter().rev() {
            recorded.record(*v);
            pairs.push((bucket_index(*v), 1));
        }
        pairs.push((BUCKETS, 9)); // past the layout: left out
        pairs.push((7, 0));
        let sum = values.iter().map(|v| *v as u128).sum();
        let built = Histogram::from_sparse(pairs, sum, 3, 1 << 40);
        assert_eq!(built, recorded);
        assert_eq!(built.count(), 7);
    }

    #[test]
    fn a_histogram_from_a_peer_is_checked_like_a_stored_one() {
        let mut h = Histogram::new();
        h.record_n(1500, 3);
        h.record(9);
        let text = serde_json::to_string(&h).unwrap();
        assert_eq!(serde_json::from_str::<Histogram>(&text).unwrap(), h);
        for bad in [
            r#"{"cells":[[5,1],[5,1]],"sum":10,"min":1,"max":9}"#, // not ascending
            r#"{"cells":[[99999999,1]],"sum":10,"min":1,"max":9}"#, // no such bucket
            r#"{"cells":[[5,0]],"sum":10,"min":1,"max":9}"#,       // an empty cell
            r#"{"cells":[[5,18446744073709551615],[6,1]],"sum":1,"min":1,"max":9}"#, // overflow
            r#"{"cells":[[5,1]],"sum":10,"min":9,"max":1}"#,       // min above max
        ] {
            assert!(serde_json::from_str::<Histogram>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn buckets_are_contiguous_and_cover_u64() {
        let mut next = 0u64;
        for i in 0..BUCKETS {
            let (low, high) = bucket_range(i);
            assert_eq!(low, next, "bucket {i}");
            assert_eq!(bucket_index(low), i);
            assert_eq!(bucket_index(high), i);
            next = high.wrapping_add(1);
        }
        assert_eq!(next, 0, "last bucket ends at u64::MAX");
    }

    #[test]
    fn relative_error_is_within_documented_bound() {
        let mut v = 1u64;
        while v < u64::MAX / 3 {
            for x in [v, v + v / 3, v * 2 - 1] {
                let reported = bucket_value(bucket_index(x)) as f64;
                let err = (reported - x as f64).abs() / x as f64;
                assert!(err <= RELATIVE_ERROR, "value {x} reported {reported} err {err}");
            }
            v = v * 3 / 2 + 1;
        }
        const { assert!(RELATIVE_ERROR < 0.01) };
    }

    #[test]
    fn quantiles_of_uniform_values() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        for (q, want) in [(0.5, 50_000.0), (0.9, 90_000.0), (0.99, 99_000.0), (0.999, 99_900.0)] {
            let got = h.quantile(q).unwrap() as f64;
            assert!((got - want).abs() / want <= 0.01, "q{q}: {got} vs {want}");
        }
        assert_eq!(h.max(), Some(100_000));
        assert_eq!(h.min(), Some(1));
        assert_eq!(h.mean(), Some(50_000.5));
    }

    #[test]
    fn merge_adds_buckets_exactly() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in 0..5000u64 {
            let x = v * v * 37 + 3;
            if v % 3 == 0 {
                a.record(x)
            } else {
                b.record(x)
            }
            all.record(x);
        }
        a.merge(&b);
        assert_eq!(a, all);
    }

    #[test]
    fn sparse_round_trip() {
        let mut h = Histogram::new();
        for v in [0u64, 1, 255, 256, 1000, 1_000_000, u64::MAX] {
            h.record_n(v, v % 7 + 1);
        }
        let blob = h.encode_sparse();
        let back = Histogram::decode_sparse(&blob, h.sum(), h.min().unwrap(), h.max().unwrap()).unwrap();
        assert_eq!(back, h);
        assert!(Histogram::decode_sparse(&[0x80], 0, 0, 0).is_err());
    }

    #[test]
    fn damaged_parts_are_errors_or_answers_never_panics() {
        // Two cells of 2^63 + 2^63 in one bucket: past u64.
        let mut blob = Vec::new();
        for _ in 0..2 {
            put_varint(&mut blob, 0);
            put_varint(&mut blob, 1 << 63);
        }
        assert!(Histogram::decode_sparse(&blob, 0, 0, 0).is_err());
        let one = Histogram::new_with(5).encode_sparse();
        assert!(Histogram::decode_sparse(&one, 5, 900, 10).is_err(), "min > max");
        // Built by hand with min > max, quantiles still answer.
        let h = Histogram::from_cells(vec![(5, 1)], 5, 900, 10);
        assert_eq!(h.quantile(0.5), Some(10));
        let mut big = Histogram::from_cells(vec![(5, u64::MAX)], u128::MAX, 5, 5);
        big.merge(&big.clone());
        assert_eq!(big.count(), u64::MAX);
    }
}
