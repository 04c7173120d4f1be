//! What the working set holds after a run, measured rather than assumed: regions of its
//! files (at most 16 of 1 MiB, spread evenly over the working set) are read back and
//! compressed with lz4 (compressibility: bytes in : bytes out) and split into dedup units
//! whose XXH3-64 digests are counted (dedup: units : distinct units). An array that
//! compresses or dedups sees about these ratios; a region's edge may split one run of
//! duplicate units, so dedup is low by at most one unit per region.

use ioscope_workload::Plan;
use std::collections::HashSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// The most regions read back, and each one's bytes.
const REGIONS: u64 = 16;
const REGION_BYTES: u64 = 1 << 20;

/// Regions are aligned on this (the usual page size; elsewhere the cache is left as read).
const PAGE: u64 = 4096;

fn lcm(a: u64, b: u64) -> u64 {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    (a / gcd(a, b).max(1)).saturating_mul(b)
}

/// Drops the runs of pages that `before` says were not cached.
fn uncache(f: &std::fs::File, offset: u64, before: &[bool]) {
    let mut k = 0;
    while k < before.len() {
        if before[k] {
            k += 1;
            continue;
        }
        let start = k;
        while k < before.len() && !before[k] {
            k += 1;
        }
        crate::cache::drop_range(f, offset + start as u64 * PAGE, (k - start) as u64 * PAGE);
    }
}

/// The measured ratios, as each host's configuration records them (`content_measured`).
pub fn measure(plan: &Plan, files: &[PathBuf]) -> serde_json::Value {
    let unit = u64::from(plan.content.dedup_unit_bytes.max(512));
    let file_size = plan.file_size_bytes();
    let total = file_size.saturating_mul(files.len() as u64);
    if total == 0 {
        return serde_json::Value::Null;
    }
    // Regions start on a page (to tell what was cached) and on a unit.
    let align = lcm(unit, PAGE);
    let region = REGION_BYTES.min(file_size) / align * align;
    if region == 0 {
        return serde_json::Value::Null;
    }
    let n = REGIONS.min(total / region).max(1);
    let (mut read, mut compressed, mut units) = (0u64, 0u64, 0u64);
    let mut distinct: HashSet<u64> = HashSet::new();
    let mut buf = vec![0u8; region as usize];
    let mut errors: Vec<String> = Vec::new();
    for k in 0..n {
        // Evenly over the whole set, each region inside one file and aligned on the unit.
        let at = total / n * k;
        let (file, offset) = ((at / file_size) as usize, at % file_size / align * align);
        let offset = offset.min((file_size - region) / align * align);
        let Some(path) = files.get(file) else { continue };
        let got = std::fs::File::open(path).and_then(|mut f| {
            let before = crate::cache::resident_pages(&f, offset, region);
            // No readahead: it would cache pages past the region, which nothing then drops.
            let _ = rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::Random);
            f.seek(SeekFrom::Start(offset))?;
            let read = f.read_exact(&mut buf);
            if let Some(before) = before {
                uncache(&f, offset, &before);
            }
            read
        });
        if let Err(e) = got {
            if errors.len() < 4 {
                errors.push(format!("{} at offset {offset}: {e}", path.display()));
            }
            continue;
        }
        read += region;
        compressed += lz4_flex::compress(&buf).len() as u64;
        for u in buf.chunks_exact(unit as usize) {
            units += 1;
            distinct.insert(xxhash_rust::xxh3::xxh3_64(u));
        }
    }
    let ratio = |a: u64, b: u64| if b > 0 { a as f64 / b as f64 } else { 0.0 };
    serde_json::json!({
        "sample_bytes": read,
        "compressed_bytes": compressed,
        "units": units,
        "distinct_units": distinct.len(),
        "regions": n,
        "compress_ratio": ratio(read, compressed),
        "dedup_ratio": ratio(units, distinct.len() as u64),
        "dedup_unit_bytes": unit,
        "errors": errors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_over(files: u32, size: &str) -> Plan {
        crate::test_plan(&format!("engine = 'posix'\ndir = '/tmp/x'\nsize = '{size}'\nfiles = {files}"))
    }

    #[test]
    fn random_bytes_measure_one_to_one_and_repeated_halves_of_zeros_two_and_three_to_one() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        let p = plan_over(1, "8m");
        // Random: neither compresses nor dedups.
        let mut rng = 7u64;
        let random: Vec<u8> = (0..8 << 20)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        std::fs::write(&path, &random).unwrap();
        let m = measure(&p, std::slice::from_ref(&path));
        assert_eq!((m["sample_bytes"].as_u64(), m["regions"].as_u64()), (Some(8 << 20), Some(8)));
        assert!((m["compress_ratio"].as_f64().unwrap() - 1.0).abs() < 0.01, "{m}");
        assert_eq!(m["dedup_ratio"], 1.0);
        // Each 4 KiB unit half random, half zeros, and written three times in a row.
        let mut shaped = Vec::with_capacity(8 << 20);
        for u in random.chunks(4096).step_by(3) {
            for _ in 0..3 {
                shaped.extend_from_slice(&u[..2048]);
                shaped.extend_from_slice(&[0u8; 2048]);
            }
        }
        shaped.truncate(8 << 20);
        std::fs::write(&path, &shaped).unwrap();
        let m = measure(&p, std::slice::from_ref(&path));
        let c = m["compress_ratio"].as_f64().unwrap();
        // lz4 finds the repeats too: at least the zeros' 2:1, at most 6:1.
        assert!((2.0..=6.5).contains(&c), "{m}");
        let d = m["dedup_ratio"].as_f64().unwrap();
        assert!((d - 3.0).abs() < 0.05, "{m}");
    }

    #[test]
    fn reading_the_sample_leaves_a_cold_file_cold() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        std::fs::write(&path, vec![7u8; 4 << 20]).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        f.sync_all().unwrap();
        crate::cache::drop_range(&f, 0, 4 << 20);
        if crate::cache::resident_bytes(&f, 4 << 20) != Some(0) {
            eprintln!("this file system keeps its pages (tmpfs): not checked");
            return;
        }
        let m = measure(&plan_over(1, "4m"), std::slice::from_ref(&path));
        assert_eq!(m["sample_bytes"], 4 << 20, "{m}");
        assert_eq!(crate::cache::resident_bytes(&f, 4 << 20), Some(0), "the sample's pages were left cached");
    }

    #[test]
    fn a_file_shorter_than_the_plan_says_is_an_error_named_not_a_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        std::fs::write(&path, [1u8; 1000]).unwrap();
        let m = measure(&plan_over(1, "4m"), &[path]);
        assert_eq!(m["sample_bytes"], 0);
        assert!(m["errors"][0].as_str().unwrap().contains("at offset"), "{m}");
    }
}
