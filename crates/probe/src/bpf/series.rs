//! From entries read out of the kernel maps to per-second histograms: the key and value
//! layouts the C programs write (bpf/*.bpf.c), and the grouping of bucket counters and
//! count/sum/min/max entries into [`Histogram`]s. Plain data, no kernel: tested anywhere.

use ioscope_metrics::histogram::{bucket_range, bucket_value, BUCKETS};
use ioscope_metrics::Histogram;
use std::collections::BTreeMap;

/// Bytes of a key: `struct blk_key` and `struct sys_key` (second u32, id u32, two bytes
/// of series tag, bucket u16), native byte order.
pub const KEY_BYTES: usize = 12;
/// Bytes of one CPU's `struct stat_val` (count, sum lo, sum hi, min, max: five u64).
pub const STAT_BYTES: usize = 40;

/// A decoded map key. `id` is the device (block) or the process index (syscalls); `tag`
/// is op and statistic (block) or the call number (syscalls, native u16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    pub second: u32,
    pub id: u32,
    pub tag: [u8; 2],
    pub bucket: u16,
}

impl Key {
    pub fn decode(bytes: &[u8]) -> Option<Key> {
        let b: &[u8; KEY_BYTES] = bytes.get(..KEY_BYTES)?.try_into().ok()?;
        Some(Key {
            second: u32::from_ne_bytes([b[0], b[1], b[2], b[3]]),
            id: u32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
            tag: [b[8], b[9]],
            bucket: u16::from_ne_bytes([b[10], b[11]]),
        })
    }

    #[cfg(test)]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(KEY_BYTES);
        out.extend(self.second.to_ne_bytes());
        out.extend(self.id.to_ne_bytes());
        out.extend(self.tag);
        out.extend(self.bucket.to_ne_bytes());
        out
    }

    /// The series (id, tag) it belongs to.
    fn series(&self) -> SeriesId {
        (self.id, self.tag)
    }
}

/// Count, exact sum, min and max of one series in one second, over all CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals {
    pub count: u64,
    pub sum: u128,
    pub min: u64,
    pub max: u64,
}

impl Totals {
    /// Adds the per-CPU values of the `index`th totals of one stats entry (each CPU's
    /// value holds one or more totals of [`STAT_BYTES`]; a CPU that never counted it
    /// holds count 0).
    pub fn from_cpus<'a>(cpus: impl IntoIterator<Item = &'a [u8]>, index: usize) -> Totals {
        let mut t = Totals { count: 0, sum: 0, min: u64::MAX, max: 0 };
        for cpu in cpus {
            let cpu = cpu.get(index * STAT_BYTES..(index + 1) * STAT_BYTES).unwrap_or(&[]);
            let word = |i: usize| {
                cpu.get(i * 8..i * 8 + 8).and_then(|w| w.try_into().ok()).map(u64::from_ne_bytes).unwrap_or(0)
            };
            let count = word(0);
            if count == 0 {
                continue;
            }
            t.count = t.count.saturating_add(count);
            t.sum = t.sum.saturating_add(((word(2) as u128) << 64) | word(1) as u128);
            t.min = t.min.min(word(3));
            t.max = t.max.max(word(4));
        }
        t
    }
}

/// The non-empty bucket counters of an entry holding `stats` whole histograms (u64 per
/// bucket of the layout, one histogram after the other), as keys with the statistic in
/// `tag[1]` and the bucket: the form of a map with one entry per bucket.
pub fn dense_buckets(key: Key, value: &[u8], stats: usize) -> impl Iterator<Item = (Key, u64)> + '_ {
    value.chunks_exact(8).take(stats * BUCKETS).enumerate().filter_map(move |(i, word)| {
        let n = u64::from_ne_bytes(word.try_into().ok()?);
        (n > 0).then(|| (Key { tag: [key.tag[0], (i / BUCKETS) as u8], bucket: (i % BUCKETS) as u16, ..key }, n))
    })
}

/// A series of a map: `id` and `tag` of its keys.
pub type SeriesId = (u32, [u8; 2]);

/// What one take found: the histogram of each series of the second taken, and how many
/// events belonged to earlier seconds.
#[derive(Debug, Default, PartialEq)]
pub struct Taken {
    pub series: BTreeMap<SeriesId, Histogram>,
    pub late_events: u64,
}

/// Groups the entries of seconds <= `second` (bucket counters and totals) by series.
/// Entries of earlier seconds are counted in `late_events`, only for series
/// `counts_events` says stand for one event each (block I/O has three statistics per
/// I/O; it is counted once). A series whose totals were lost to a full map gets them
/// from its buckets (within the layout's error).
pub fn take(
    second: u32,
    buckets: &[(Key, u64)],
    totals: &[(Key, Totals)],
    counts_events: impl Fn([u8; 2]) -> bool,
) -> Taken {
    let mut cells: BTreeMap<SeriesId, Vec<(usize, u64)>> = BTreeMap::new();
    let mut out = Taken::default();
    for (key, n) in buckets {
        if key.second == second {
            cells.entry(key.series()).or_default().push((key.bucket as usize, *n));
        } else if key.second < second && counts_events(key.tag) {
            out.late_events = out.late_events.saturating_add(*n);
        }
    }
    let totals: BTreeMap<SeriesId, Totals> =
        totals.iter().filter(|(k, _)| k.second == second).map(|(k, t)| (k.series(), *t)).collect();
    for (series, pairs) in cells {
        let histogram = match totals.get(&series) {
            Some(t) => Histogram::from_sparse(pairs, t.sum, t.min, t.max),
            None => {
                let sum = pairs.iter().map(|&(i, c)| bucket_value(i) as u128 * c as u128).sum();
                let min = pairs.iter().map(|p| p.0).min().map_or(0, |i| bucket_range(i).0);
                let max = pairs.iter().map(|p| p.0).max().map_or(0, |i| bucket_range(i).1);
                Histogram::from_sparse(pairs, sum, min, max)
            }
        };
        out.series.insert(series, histogram);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ioscope_metrics::histogram::bucket_index;

    fn key(second: u32, id: u32, tag: [u8; 2], value: u64) -> Key {
        Key { second, id, tag, bucket: bucket_index(value) as u16 }
    }

    fn cpu(count: u64, sum: u128, min: u64, max: u64) -> Vec<u8> {
        [count, sum as u64, (sum >> 64) as u64, min, max].iter().flat_map(|w| w.to_ne_bytes()).collect()
    }

    #[test]
    fn a_key_reads_back_as_the_kernel_program_wrote_it() {
        let k = Key { second: 7, id: (7 << 20) | 3, tag: [1, 2], bucket: 7423 };
        assert_eq!(Key::decode(&k.encode()), Some(k));
        assert_eq!(Key::decode(&k.encode()[..11]), None, "a short key is refused, not read past");
    }

    #[test]
    fn whole_histograms_in_one_entry_read_as_bucket_counters_per_statistic() {
        let mut value = vec![0u8; 3 * BUCKETS * 8];
        let mut put = |stat: usize, bucket: usize, n: u64| {
            let at = (stat * BUCKETS + bucket) * 8;
            value[at..at + 8].copy_from_slice(&n.to_ne_bytes());
        };
        put(0, 7423, 2);
        put(1, 0, 5);
        put(2, 300, 1);
        let entry = Key { second: 9, id: 4, tag: [1, 0], bucket: 0 };
        let got: Vec<(Key, u64)> = dense_buckets(entry, &value, 3).collect();
        let want = vec![
            (Key { tag: [1, 0], bucket: 7423, ..entry }, 2),
            (Key { tag: [1, 1], bucket: 0, ..entry }, 5),
            (Key { tag: [1, 2], bucket: 300, ..entry }, 1),
        ];
        assert_eq!(got, want);
        assert_eq!(dense_buckets(entry, &value[..100], 3).count(), 0, "a short value: no panic");
    }

    #[test]
    fn totals_add_up_over_cpus_with_a_sum_past_64_bits() {
        let a = cpu(2, (1u128 << 64) + 5, 10, 1 << 62);
        let b = cpu(0, 0, u64::MAX, 0); // a CPU that never counted this series
        let c = cpu(1, 7, 3, 7);
        let t = Totals::from_cpus([a.as_slice(), b.as_slice(), c.as_slice()], 0);
        assert_eq!(t, Totals { count: 3, sum: (1u128 << 64) + 12, min: 3, max: 1 << 62 });
        // The second totals of an entry holding two per CPU.
        let two: Vec<u8> = [cpu(9, 9, 9, 9), a.clone()].concat();
        assert_eq!(
            Totals::from_cpus([two.as_slice()], 1),
            Totals { count: 2, sum: (1u128 << 64) + 5, min: 10, max: 1 << 62 }
        );
        assert_eq!(Totals::from_cpus([a.as_slice()], 1).count, 0, "past the value: nothing, no panic");
    }

    #[test]
    fn a_second_taken_holds_its_own_entries_and_counts_earlier_ones_as_late() {
        let latency = [0, 0];
        let size = [0, 1];
        let buckets = vec![
            (key(5, 1, latency, 1000), 2),
            (key(5, 1, latency, 90_000), 1),
            (key(5, 1, size, 4096), 3),
            (key(4, 1, latency, 1000), 4), // a late entry of second 4
            (key(4, 1, size, 4096), 4),    // the same I/Os: not counted twice
        ];
        let totals = vec![(key(5, 1, latency, 0), Totals { count: 3, sum: 92_000, min: 995, max: 90_000 })];
        let taken = take(5, &buckets, &totals, |tag| tag == latency);
        assert_eq!(taken.late_events, 4);
        let lat = &taken.series[&(1, latency)];
        assert_eq!((lat.count(), lat.sum(), lat.min(), lat.max()), (3, 92_000, Some(995), Some(90_000)));
        // Totals lost to a full map: the buckets give count exactly, the rest within 1 %.
        let size_h = &taken.series[&(1, size)];
        assert_eq!(size_h.count(), 3);
        assert_eq!(size_h.min(), Some(4096));
        let error = (size_h.sum() as f64 - 3.0 * 4096.0).abs() / (3.0 * 4096.0);
        assert!(error <= ioscope_metrics::RELATIVE_ERROR, "sum {} vs {}", size_h.sum(), 3 * 4096);
    }
}
