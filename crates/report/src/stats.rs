//! Small statistics the verdicts share: median, mean and standard error, rounding for
//! evidence. A leaf: it imports nothing from the crate.

/// The median of `v` (the mean of the middle two for an even count); None if empty.
pub(crate) fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// Mean and standard error of the mean.
pub(crate) fn mean_se(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n.max(1.0);
    let var = if v.len() > 1 { v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0) } else { 0.0 };
    (mean, (var / n.max(1.0)).sqrt())
}

/// `v` rounded to two decimals, for evidence read by people.
pub(crate) fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// No read that goes to a device or over a network completes faster than this: an NVMe
/// flash read takes about 10 µs from submission to completion at best (a local page-cache
/// hit takes 1 to 3 µs for 4 KiB). See docs/verdicts.md.
pub(crate) const READ_FLOOR_NS: u64 = 10_000;
/// ...plus the time to move the bytes at this rate (bytes per ns: 8 GB/s, above one PCIe
/// 4.0 x4 NVMe device's ~7 GB/s), so that large reads get a floor they can beat only from
/// memory.
pub(crate) const DEVICE_BYTES_PER_NS: u64 = 8;
