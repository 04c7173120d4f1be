//! Data content: what the bytes of a write (and of the laid-out files) are. The default is
//! random and incompressible, unique in every 512-byte sector of every write; a workload may
//! ask for data an array compresses (`compress_ratio`, in chunks of `compress_chunk`), data
//! it dedups (`dedup_ratio`, in units of `dedup_unit`), both, or zeros (`zero_buffers`).
//!
//! This module holds the plan's type, its text forms and bounds; the bytes are made in
//! ioscope-exec (`content.rs`), docs in docs/workload.md ("Data content").

use serde::{Deserialize, Serialize};

/// The content keys, as written at the top level or in a `[[workload]]`.
pub const KEYS: [&str; 5] = ["compress_ratio", "compress_chunk", "dedup_ratio", "dedup_unit", "zero_buffers"];
/// The default chunk of `compress_ratio`: each chunk is random for `1/ratio` of its length,
/// then zeros. 4 KiB keeps lz4's per-chunk overhead under 2% of a 4:1 chunk (fio's
/// default of 512 bytes costs lz4 about 5%; the fio importer keeps fio's 512).
pub const DEFAULT_COMPRESS_CHUNK: u32 = 4096;
/// The default dedup unit (vdbench's `dedupunit` default is 128k; 4 KiB is what most
/// arrays dedup at).
pub const DEFAULT_DEDUP_UNIT: u32 = 4096;
/// Bounds of the ratios: beyond these no array's figure is meaningful.
pub const MAX_COMPRESS_RATIO: f64 = 100.0;
pub const MAX_DEDUP_RATIO: f64 = 1000.0;
/// Bounds of the chunk and the unit.
pub const MIN_CHUNK: u64 = 64;
pub const MIN_UNIT: u64 = 512;
pub const MAX_CHUNK_OR_UNIT: u64 = 1 << 20;

/// The expected form of a ratio, for diagnostics.
pub const RATIO_EXPECTED: &str = "a ratio from 1 (like 2 or \"2:1\"; 1 is the default: not reducible)";

/// What the bytes written are. The default is random, incompressible and never repeated.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Content {
    /// Compressed size : original size of each chunk (2 = half of it is random, half zeros).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub compress_ratio: f64,
    /// Bytes of the unit of `compress_ratio`, from a file offset multiple of it.
    #[serde(default = "default_chunk", skip_serializing_if = "is_default_chunk")]
    pub compress_chunk_bytes: u32,
    /// Units written : distinct units (3 = every unit's content appears three times).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub dedup_ratio: f64,
    /// Bytes of the unit of `dedup_ratio`, aligned on file offsets multiple of it.
    #[serde(default = "default_unit", skip_serializing_if = "is_default_unit")]
    pub dedup_unit_bytes: u32,
    /// Every byte zero (fio's `zero_buffers`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub zeros: bool,
}

fn one() -> f64 {
    1.0
}
fn is_one(x: &f64) -> bool {
    *x == 1.0
}
fn default_chunk() -> u32 {
    DEFAULT_COMPRESS_CHUNK
}
fn is_default_chunk(x: &u32) -> bool {
    *x == DEFAULT_COMPRESS_CHUNK
}
fn default_unit() -> u32 {
    DEFAULT_DEDUP_UNIT
}
fn is_default_unit(x: &u32) -> bool {
    *x == DEFAULT_DEDUP_UNIT
}

impl Default for Content {
    fn default() -> Self {
        Content {
            compress_ratio: 1.0,
            compress_chunk_bytes: DEFAULT_COMPRESS_CHUNK,
            dedup_ratio: 1.0,
            dedup_unit_bytes: DEFAULT_DEDUP_UNIT,
            zeros: false,
        }
    }
}

impl Content {
    pub fn is_default(&self) -> bool {
        *self == Content::default()
    }
    /// Random, incompressible, unique: the default's bytes (the chunk and unit do not matter).
    pub fn is_random(&self) -> bool {
        !self.zeros && self.compress_ratio == 1.0 && self.dedup_ratio == 1.0
    }
    /// Bytes of each compress chunk that are random (the rest are zeros), a multiple of 8.
    pub fn random_bytes_per_chunk(&self) -> u32 {
        let chunk = f64::from(self.compress_chunk_bytes.max(8));
        let ratio = self.compress_ratio.clamp(1.0, MAX_COMPRESS_RATIO);
        (((chunk / ratio) / 8.0).round() as u32 * 8).clamp(8, self.compress_chunk_bytes.max(8))
    }
    /// What differs from the default, for the summary's workload line: "compress 2:1 (4k chunks)".
    pub fn describe(&self) -> Vec<String> {
        use crate::units::size_literal;
        let mut out = Vec::new();
        if self.zeros {
            out.push("zeros".to_string());
        }
        if self.compress_ratio != 1.0 {
            out.push(format!(
                "compress {}:1 ({} chunks)",
                ratio_shown(self.compress_ratio),
                size_literal(u64::from(self.compress_chunk_bytes))
            ));
        }
        if self.dedup_ratio != 1.0 {
            out.push(format!(
                "dedup {}:1 ({} units)",
                ratio_shown(self.dedup_ratio),
                size_literal(u64::from(self.dedup_unit_bytes))
            ));
        }
        out
    }
}

/// `2`, `2.5`: a ratio as written in a file, exact (it reads back as the same number).
pub fn ratio_literal(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as u64)
    } else {
        format!("{x}")
    }
}

/// A ratio to show: at most three decimals (`1.333`).
pub fn ratio_shown(x: f64) -> String {
    ratio_literal((x * 1000.0).round() / 1000.0)
}

/// Reads a ratio written as a number (`2`, `2.5`) or as `N:1`; Err is the note.
pub fn parse_ratio(text: &str, max: f64) -> Result<f64, String> {
    let t = text.trim();
    let (n, d) = match t.split_once(':') {
        Some((n, d)) => (n.trim(), d.trim()),
        None => (t, "1"),
    };
    let num = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite());
    let (Some(n), Some(d)) = (num(n), num(d)) else {
        return Err(format!("`{t}` is not a number or N:1"));
    };
    if d <= 0.0 {
        return Err(format!("`{t}`: the second number must be above 0"));
    }
    check_ratio(n / d, max)
}

/// A ratio in `1..=max`; Err is the note.
pub fn check_ratio(x: f64, max: f64) -> Result<f64, String> {
    if !x.is_finite() || x < 1.0 {
        return Err(format!("{} is below 1: data cannot grow by being reduced", ratio_literal(x.max(0.0))));
    }
    if x > max {
        return Err(format!("at most {}:1", ratio_literal(max)));
    }
    Ok(x)
}

/// fio's `buffer_compress_percentage` and `dedupe_percentage` (share of the data that
/// reduces away) as a ratio: P% → 100 / (100 − P). None for 100 (infinitely reducible).
pub fn ratio_of_percentage(pct: f64) -> Option<f64> {
    (0.0..100.0).contains(&pct).then(|| 100.0 / (100.0 - pct))
}

/// The content keys in the canonical form of a plan: those that differ from `base` (the
/// default at the top level, the run's content in a workload).
pub(crate) fn canonical(c: &Content, base: &Content, kv: &mut dyn FnMut(&str, String, &str)) {
    use crate::canonical::toml_string;
    use crate::units::size_literal;
    if c.zeros != base.zeros {
        kv("zero_buffers", c.zeros.to_string(), "");
    }
    if c.compress_ratio != base.compress_ratio {
        kv("compress_ratio", ratio_literal(c.compress_ratio), "original : compressed size");
    }
    if c.compress_chunk_bytes != base.compress_chunk_bytes {
        kv("compress_chunk", toml_string(&size_literal(c.compress_chunk_bytes.into())), "");
    }
    if c.dedup_ratio != base.dedup_ratio {
        kv("dedup_ratio", ratio_literal(c.dedup_ratio), "units written : distinct units");
    }
    if c.dedup_unit_bytes != base.dedup_unit_bytes {
        kv("dedup_unit", toml_string(&size_literal(c.dedup_unit_bytes.into())), "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_read_as_numbers_or_n_to_1_and_fio_percentages_convert() {
        assert_eq!(parse_ratio("2", MAX_COMPRESS_RATIO), Ok(2.0));
        assert_eq!(parse_ratio("4:1", MAX_COMPRESS_RATIO), Ok(4.0));
        assert_eq!(parse_ratio(" 2.5 ", MAX_COMPRESS_RATIO), Ok(2.5));
        assert!(parse_ratio("0.5", MAX_COMPRESS_RATIO).is_err());
        assert!(parse_ratio("1:0", MAX_COMPRESS_RATIO).is_err());
        assert!(parse_ratio("nan", MAX_COMPRESS_RATIO).is_err());
        assert!(parse_ratio("101", MAX_COMPRESS_RATIO).is_err());
        assert_eq!(ratio_of_percentage(50.0), Some(2.0));
        assert_eq!(ratio_of_percentage(75.0), Some(4.0));
        assert_eq!(ratio_of_percentage(0.0), Some(1.0));
        assert_eq!(ratio_of_percentage(100.0), None);
    }

    #[test]
    fn a_chunk_is_random_for_one_ratioth_of_its_length_in_whole_words() {
        let c = |r: f64, chunk: u32| Content { compress_ratio: r, compress_chunk_bytes: chunk, ..Content::default() };
        assert_eq!(c(2.0, 4096).random_bytes_per_chunk(), 2048);
        assert_eq!(c(4.0, 512).random_bytes_per_chunk(), 128);
        assert_eq!(c(1.0, 4096).random_bytes_per_chunk(), 4096);
        assert_eq!(c(100.0, 64).random_bytes_per_chunk(), 8);
        assert_eq!(c(3.0, 4096).random_bytes_per_chunk(), 1368);
    }

    /// The content of the first workload that writes, from imported TOML.
    fn content_of_toml(toml: &str) -> Content {
        let src = crate::SourceFile { path: "imported.toml".into(), text: toml.to_string() };
        let plan = crate::build_plan(Some(&src), &Default::default())
            .unwrap_or_else(|d| panic!("{toml}\n{}", crate::render_diagnostics(&d)));
        plan.workloads.iter().find(|w| w.writes()).map(|w| w.content).unwrap()
    }

    fn fio(job: &str) -> Content {
        let text = format!("[job]\nrw=randwrite\nbs=8k\nsize=64m\nruntime=5\n{job}\n");
        let none = |_: &std::path::Path, _: u64| -> Result<String, crate::fio::ReadError> { unreachable!() };
        let imported = crate::fio::convert(std::path::Path::new("job.fio"), &text, None, &none)
            .unwrap_or_else(|e| panic!("{job}: {e:?}"));
        content_of_toml(&imported.toml)
    }

    fn vdbench(general: &str) -> Content {
        let text = format!(
            "{general}\nfsd=fsd1,anchor=/tmp/ioscope-vd,depth=1,width=2,files=4,sizes=1m\nfwd=fwd1,fsd=fsd1,operation=write,xfersize=8k,fileio=random,threads=1\nrd=rd1,fwd=fwd1,fwdrate=max,format=yes,elapsed=5,interval=1\n"
        );
        content_of_toml(&crate::vdbench::convert(&text).unwrap_or_else(|e| panic!("{general}: {e:?}")))
    }

    #[test]
    fn fio_and_vdbench_spellings_of_compression_and_dedup_import_to_the_same_content() {
        let ours = |r: f64, chunk: u32, d: f64, unit: u32| Content {
            compress_ratio: r,
            compress_chunk_bytes: chunk,
            dedup_ratio: d,
            dedup_unit_bytes: unit,
            zeros: false,
        };
        // fio: P% reducible is 100/(100-P); its chunk defaults to 512; it dedups whole buffers.
        assert_eq!(fio("buffer_compress_percentage=50"), ours(2.0, 512, 1.0, 4096));
        assert_eq!(fio("buffer_compress_percentage=75\nbuffer_compress_chunk=4k"), ours(4.0, 4096, 1.0, 4096));
        assert_eq!(fio("dedupe_percentage=50"), ours(1.0, 4096, 2.0, 8192));
        assert_eq!(fio("zero_buffers=1"), Content { zeros: true, ..Content::default() });
        // vdbench: the same ratios; its dedupunit defaults to 128k.
        assert_eq!(vdbench("compratio=4"), ours(4.0, 4096, 1.0, 4096));
        assert_eq!(vdbench("dedupratio=3\ndedupunit=4k"), ours(1.0, 4096, 3.0, 4096));
        assert_eq!(vdbench("dedupratio=2"), ours(1.0, 4096, 2.0, 128 << 10));
    }
}
