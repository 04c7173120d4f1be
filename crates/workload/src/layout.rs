//! A dataset tree's files and their sizes, pure from its definition ([`Dataset`]): how many
//! files it has after the `total_size` cap, which of them the workloads use (the first ones
//! up to `working_set` bytes) and each file's size (a weighted pick by a hash of its index,
//! never stored). The executor lays the tree out from this, and the report computes the
//! exact bytes a run worked on from the same numbers.

use crate::plan::Dataset;

/// At most this many files in a dataset (validation refuses more).
pub const MAX_DATASET_FILES: u64 = 100_000_000;

/// Keeps the pick of preallocated files apart from the pick of sizes.
const PREALLOC_SALT: u64 = 0x5bd1_e995_0f1b_a7c3;

/// splitmix64's finalizer: a cheap, well-mixed hash of an index (file sizes, data seeds).
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The files of a dataset tree and their sizes.
#[derive(Clone, Debug)]
pub struct FileSizes {
    /// (cumulative weight, size): a file's size is the first entry above its hash.
    cum: Vec<(u64, u64)>,
    files: u64,
    working_files: u64,
    total_bytes: u64,
    working_bytes: u64,
    /// Share of the files preparation creates, in percent (100: all).
    prealloc_pct: u8,
}

impl FileSizes {
    /// One pass over the files (up to width^depth x files of them): the `total_size` cap
    /// and the working set are both "the longest prefix of files whose sizes fit".
    pub fn new(spec: &Dataset) -> FileSizes {
        let mut acc = 0u64;
        let cum = spec
            .sizes
            .iter()
            .map(|b| {
                acc = acc.saturating_add(u64::from(b.weight));
                (acc, b.bytes)
            })
            .collect();
        let prealloc_pct = spec.prealloc_pct.unwrap_or(100).min(100);
        let mut l = FileSizes { cum, files: 0, working_files: 0, total_bytes: 0, working_bytes: 0, prealloc_pct };
        let max = u64::from(spec.width).saturating_pow(spec.depth).saturating_mul(u64::from(spec.files));
        let mut working = None;
        while l.files < max {
            let next = l.total_bytes.saturating_add(l.file_size(l.files));
            if spec.total_size_bytes.is_some_and(|t| next > t) {
                break;
            }
            if working.is_none() {
                if spec.working_set_bytes.is_some_and(|w| next > w) {
                    // At least one file is used, even one larger than the working set.
                    working = Some(l.files.max(1));
                    if l.files == 0 {
                        l.working_bytes = next;
                    }
                } else {
                    l.working_bytes = next;
                }
            }
            (l.total_bytes, l.files) = (next, l.files + 1);
        }
        l.working_files = working.unwrap_or(l.files).min(l.files);
        l.working_bytes = l.working_bytes.min(l.total_bytes);
        l
    }

    /// [`FileSizes::new`] for a definition read from outside (a results file's plan, which
    /// was not validated here): none when it has more files than validation allows, so a
    /// hostile definition cannot make the pass endless.
    pub fn bounded(spec: &Dataset) -> Option<FileSizes> {
        let files = u64::from(spec.width).checked_pow(spec.depth)?.checked_mul(u64::from(spec.files))?;
        (files <= MAX_DATASET_FILES).then(|| FileSizes::new(spec))
    }

    /// Files in the tree, after the total_size cap.
    pub fn files(&self) -> u64 {
        self.files
    }
    /// Files the workloads use: the first ones up to working_set bytes (at least one).
    pub fn working_files(&self) -> u64 {
        self.working_files
    }
    /// Sum of the sizes of all files.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }
    /// Sum of the sizes of the files the workloads use: the run's working set.
    pub fn working_bytes(&self) -> u64 {
        self.working_bytes
    }

    /// Whether preparation creates file i (`prealloc`: a share of the files, picked by a
    /// hash of the index; all of them without it).
    #[inline]
    pub fn preallocated(&self, i: u64) -> bool {
        self.prealloc_pct >= 100 || mix(i ^ PREALLOC_SALT) % 100 < u64::from(self.prealloc_pct)
    }

    /// File i's size: a weighted pick by a hash of i. Cheap: workers call it per file they open.
    #[inline]
    pub fn file_size(&self, i: u64) -> u64 {
        let total = self.cum.last().map_or(1, |c| c.0);
        let r = ((u128::from(mix(i)) * u128::from(total)) >> 64) as u64;
        let k = self.cum.partition_point(|&(c, _)| c <= r);
        self.cum.get(k).map_or(0, |c| c.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{BlockSize, DatasetFormat};

    fn tree(files: u32, sizes: &[(u64, u32)], total: Option<u64>, working: Option<u64>) -> Dataset {
        Dataset {
            name: None,
            dir: "/d".into(),
            depth: 2,
            width: 3,
            files,
            sizes: sizes.iter().map(|&(bytes, weight)| BlockSize { bytes, weight }).collect(),
            total_size_bytes: total,
            working_set_bytes: working,
            format: DatasetFormat::Reuse,
            prealloc_pct: None,
            size_gamma: None,
        }
    }

    #[test]
    fn the_working_set_of_a_tree_is_the_sum_of_its_files_sizes_not_files_times_the_largest() {
        let d = tree(10, &[(4096, 90), (1 << 30, 1)], None, None);
        let l = FileSizes::new(&d);
        let sum: u64 = (0..90).map(|i| l.file_size(i)).sum();
        assert_eq!(l.files(), 90);
        assert_eq!((l.total_bytes(), l.working_bytes()), (sum, sum));
        assert!(sum < 90 * (1 << 30), "{sum}");
        // A working set takes the first files that fit, at least one.
        let w = FileSizes::new(&tree(10, &[(4096, 1)], None, Some(10 * 4096 + 100)));
        assert_eq!((w.working_files(), w.working_bytes(), w.total_bytes()), (10, 10 * 4096, 90 * 4096));
        let one = FileSizes::new(&tree(10, &[(4096, 1)], None, Some(100)));
        assert_eq!((one.working_files(), one.working_bytes()), (1, 4096));
        // The total size caps the tree.
        let capped = FileSizes::new(&tree(10, &[(4096, 1)], Some(5 * 4096), None));
        assert_eq!((capped.files(), capped.total_bytes(), capped.working_bytes()), (5, 5 * 4096, 5 * 4096));
    }

    #[test]
    fn a_definition_with_more_files_than_allowed_is_not_walked() {
        let mut d = tree(1000, &[(4096, 1)], None, None);
        d.width = 1000;
        d.depth = 9;
        assert!(FileSizes::bounded(&d).is_none());
        assert!(FileSizes::bounded(&tree(10, &[(4096, 1)], None, None)).is_some());
    }
}
