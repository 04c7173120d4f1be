//! Access patterns of a transfer workload on the flat working set: where its I/Os go in a
//! file (backwards or strided sequential, skewed random distributions, a share of random
//! I/Os) and when they arrive in the open loop (even intervals or a Poisson process).
//!
//! This module holds the plan's types, their text forms (fio's spellings: `zipf:1.2`,
//! `zoned:60/10:30/20:10/70`, a signed size for `seq_skip`) and their bounds; the offset
//! generators are in ioscope-exec (`access.rs`), docs in docs/workload.md ("Access patterns").

use crate::units::{parse_size, size_literal};
use serde::{Deserialize, Serialize};

/// The access keys, as written in a `[[workload]]` or (for the one workload) at the top level.
pub const KEYS: [&str; 4] = ["seq_skip", "random_distribution", "percentage_random", "arrivals"];
/// Most zones of a `zoned` or `zoned_abs` distribution (fio's limit).
pub const MAX_ZONES: usize = 256;
/// Largest `seq_skip`, either way: far beyond any file, small enough for any arithmetic.
pub const MAX_SEQ_SKIP: u64 = 1 << 50;
/// `seq_skip` is a multiple of this (direct I/O needs aligned offsets).
pub const SEQ_SKIP_ALIGN: u64 = 512;

/// How a workload's I/Os are placed and timed, beyond `rw`. The default is what ioscope did
/// before these keys: uniform random or plain forward sequential, even arrivals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Access {
    /// Sequential: bytes added to the offset after each I/O, before the next (fio's
    /// `rw=read:4k`); negative moves back (with bs 4k, -8k reads backwards).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub seq_skip: i64,
    /// Random: how the offsets are drawn.
    #[serde(default, skip_serializing_if = "Distribution::is_uniform")]
    pub distribution: Distribution,
    /// Random: share of I/Os at a random offset in percent; the others continue a
    /// sequential stream of their own (fio's `percentage_random`).
    #[serde(default = "all_random", skip_serializing_if = "is_all_random")]
    pub random_pct: u8,
    /// Open loop: when the I/Os are due.
    #[serde(default, skip_serializing_if = "Arrivals::is_uniform")]
    pub arrivals: Arrivals,
}

impl Default for Access {
    fn default() -> Self {
        Access { seq_skip: 0, distribution: Distribution::Uniform, random_pct: 100, arrivals: Arrivals::Uniform }
    }
}

impl Access {
    pub fn is_default(&self) -> bool {
        *self == Access::default()
    }
    /// What differs from the default, for the summary's workload line: "seq_skip -8k",
    /// "zipf:1.2", "50% random", "poisson arrivals".
    pub fn describe(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.seq_skip != 0 {
            out.push(format!("seq_skip {}", seq_skip_literal(self.seq_skip)));
        }
        if !self.distribution.is_uniform() {
            out.push(self.distribution.literal());
        }
        if self.random_pct != 100 {
            out.push(format!("{}% random", self.random_pct));
        }
        if !self.arrivals.is_uniform() {
            out.push(format!("{} arrivals", self.arrivals.name()));
        }
        out
    }
}

fn is_zero(x: &i64) -> bool {
    *x == 0
}
fn all_random() -> u8 {
    100
}
fn is_all_random(x: &u8) -> bool {
    *x == 100
}

/// How random offsets are drawn over a file's blocks (fio's `random_distribution`). Ranks
/// are laid out on contiguous blocks, hottest first (from `center` when given), so a skew
/// shows as a band in the offset heat map.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// Every block equally likely.
    #[default]
    Uniform,
    /// Block of rank k (from 1) with probability proportional to 1 / k^theta.
    Zipf { theta: f64, center: Option<f64> },
    /// fio's pareto:H: rank = n · u^(ln H / ln (1−H)) for a uniform u, hottest first.
    Pareto { h: f64, center: Option<f64> },
    /// Normal around `center` (default the middle), standard deviation `dev_pct` % of the
    /// blocks, wrapped around the file's ends.
    Normal { dev_pct: f64, center: Option<f64> },
    /// Zones laid end to end from the start: `io_pct` % of the I/Os uniformly in the next
    /// `span_pct` % of the file.
    Zoned(Vec<Zone>),
    /// As `Zoned`, with each zone's size in bytes.
    ZonedAbs(Vec<AbsZone>),
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Zone {
    pub io_pct: f64,
    pub span_pct: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct AbsZone {
    pub io_pct: f64,
    pub bytes: u64,
}

/// When the I/Os of an open loop are due (fio's `rate_process`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// At even intervals (fio's `linear`).
    #[default]
    Uniform,
    /// A Poisson process: exponential gaps with the same mean.
    Poisson,
}

impl Arrivals {
    pub fn is_uniform(&self) -> bool {
        *self == Arrivals::Uniform
    }
    pub fn name(self) -> &'static str {
        match self {
            Arrivals::Uniform => "uniform",
            Arrivals::Poisson => "poisson",
        }
    }
}

/// The expected form of `random_distribution`, for diagnostics.
pub const DISTRIBUTION_EXPECTED: &str = "random, zipf:THETA, pareto:H, normal:DEV (each with an optional :CENTER from 0 to 1), zoned:IO%/SPAN%:... or zoned_abs:IO%/SIZE:... (like zipf:1.2, pareto:0.9, normal:20, zoned:60/10:30/20:10/70)";

impl Distribution {
    pub fn is_uniform(&self) -> bool {
        *self == Distribution::Uniform
    }

    /// Reads fio's spelling (`zipf:1.2`, `zoned:60/10:40/90`); Err is the note saying what
    /// is wrong (the expected form is [`DISTRIBUTION_EXPECTED`]).
    pub fn parse(text: &str) -> Result<Distribution, String> {
        let t = text.trim().to_ascii_lowercase();
        if t.contains(',') {
            return Err(
                "one distribution for reads and writes alike (fio's comma-separated sets per direction are not taken)"
                    .into(),
            );
        }
        let (kind, rest) = t.split_once(':').unwrap_or((t.as_str(), ""));
        let num = |s: &str, what: &str| -> Result<f64, String> {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("{what} `{s}` is not a number"))
        };
        // THETA[:CENTER], H[:CENTER], DEV[:CENTER]
        let param_center = |what: &str, ok: &dyn Fn(f64) -> bool, range: &str| -> Result<(f64, Option<f64>), String> {
            let (p, c) = match rest.split_once(':') {
                Some((p, c)) => (p, Some(c)),
                None => (rest, None),
            };
            if p.is_empty() {
                return Err(format!("{kind} needs its {what} after a colon"));
            }
            let v = num(p, what)?;
            if !ok(v) {
                return Err(format!("the {what} of {kind} is {range}, not {p}"));
            }
            let center = match c {
                None => None,
                Some(c) => {
                    let c = num(c, "the center")?;
                    if !(0.0..=1.0).contains(&c) {
                        return Err(format!("the center is a fraction of the file from 0 to 1, not {c}"));
                    }
                    Some(c)
                }
            };
            Ok((v, center))
        };
        match kind {
            "random" | "uniform" if rest.is_empty() => Ok(Distribution::Uniform),
            "zipf" => {
                let (theta, center) = param_center("theta", &|x| x > 0.0 && x <= 10.0, "above 0 and at most 10")?;
                Ok(Distribution::Zipf { theta, center })
            }
            "pareto" => {
                let (h, center) = param_center("h", &|x| x > 0.0 && x < 1.0, "between 0 and 1 (exclusive)")?;
                Ok(Distribution::Pareto { h, center })
            }
            "normal" | "gauss" => {
                let (dev_pct, center) =
                    param_center("deviation", &|x| x > 0.0 && x <= 100.0, "a percentage above 0 and at most 100")?;
                Ok(Distribution::Normal { dev_pct, center })
            }
            "zoned" | "zoned_abs" => {
                let abs = kind == "zoned_abs";
                let mut zones = Vec::new();
                let mut abs_zones = Vec::new();
                let (mut io_sum, mut span_sum) = (0.0, 0.0);
                let parts: Vec<&str> = rest.split(':').collect();
                for (k, part) in parts.iter().copied().enumerate() {
                    if zones.len() + abs_zones.len() >= MAX_ZONES {
                        return Err(format!("at most {MAX_ZONES} zones"));
                    }
                    let Some((io, span)) = part.split_once('/') else {
                        return Err(format!("`{part}` is not IO%/{}", if abs { "SIZE" } else { "SPAN%" }));
                    };
                    let io = num(io, "the I/O share")?;
                    if !(0.0..=100.0).contains(&io) {
                        return Err(format!("a zone's I/O share is a percentage from 0 to 100, not {io}"));
                    }
                    io_sum += io;
                    if abs {
                        let bytes = parse_size(span).map_err(|e| format!("zone size `{span}`: {e}"))?;
                        if bytes == 0 {
                            return Err("a zone's size is above 0".into());
                        }
                        abs_zones.push(AbsZone { io_pct: io, bytes });
                    } else {
                        // fio's `zoned:50/5:30/15:20/`: the last zone, without a span, is the rest.
                        let rest_of_file = span.trim().is_empty() && k + 1 == parts.len();
                        let span =
                            if rest_of_file { 100.0 - span_sum } else { num(span, "the zone's share of the file")? };
                        if !(span > 0.0 && span <= 100.0) {
                            return Err(format!("a zone's share of the file is above 0 and at most 100, not {span}"));
                        }
                        span_sum += span;
                        zones.push(Zone { io_pct: io, span_pct: span });
                    }
                }
                if (io_sum - 100.0f64).abs() > 1e-6 {
                    return Err(format!("the zones' I/O shares add up to {io_sum}, not 100"));
                }
                if span_sum > 100.0 + 1e-6 {
                    return Err(format!("the zones cover {span_sum}% of the file, more than 100"));
                }
                Ok(if abs { Distribution::ZonedAbs(abs_zones) } else { Distribution::Zoned(zones) })
            }
            _ => Err(String::new()),
        }
    }

    /// The text form, as [`Distribution::parse`] reads it back.
    pub fn literal(&self) -> String {
        let with_center = |kind: &str, v: f64, c: &Option<f64>| match c {
            Some(c) => format!("{kind}:{v}:{c}"),
            None => format!("{kind}:{v}"),
        };
        match self {
            Distribution::Uniform => "random".into(),
            Distribution::Zipf { theta, center } => with_center("zipf", *theta, center),
            Distribution::Pareto { h, center } => with_center("pareto", *h, center),
            Distribution::Normal { dev_pct, center } => with_center("normal", *dev_pct, center),
            Distribution::Zoned(z) => {
                let parts: Vec<String> = z.iter().map(|z| format!("{}/{}", z.io_pct, z.span_pct)).collect();
                format!("zoned:{}", parts.join(":"))
            }
            Distribution::ZonedAbs(z) => {
                let parts: Vec<String> = z.iter().map(|z| format!("{}/{}", z.io_pct, size_literal(z.bytes))).collect();
                format!("zoned_abs:{}", parts.join(":"))
            }
        }
    }
}

/// A workload's access keys for its canonical form (only those that differ from the
/// default, so the hash of a workload without them is unchanged): `kv(key, value, comment)`.
pub(crate) fn canonical(a: &Access, kv: &mut dyn FnMut(&str, String, &str)) {
    use crate::canonical::toml_string;
    if a.seq_skip != 0 {
        kv("seq_skip", toml_string(&seq_skip_literal(a.seq_skip)), "bytes skipped after each sequential I/O");
    }
    if !a.distribution.is_uniform() {
        kv("random_distribution", toml_string(&a.distribution.literal()), "");
    }
    if a.random_pct != 100 {
        kv("percentage_random", a.random_pct.to_string(), "% of I/Os at a random offset");
    }
    if !a.arrivals.is_uniform() {
        kv("arrivals", toml_string(a.arrivals.name()), "");
    }
}

/// The expected form of `seq_skip`, for diagnostics.
pub const SEQ_SKIP_EXPECTED: &str =
    "a size, negative to move back, a multiple of 512 bytes (like \"4k\" for 4 KiB holes, \"-8k\" to read 4k blocks backwards)";

/// Reads `seq_skip`: a size with an optional sign (`-8k`); Err is the note.
pub fn parse_seq_skip(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let bytes = if body.trim() == "0" { 0 } else { parse_size(body).map_err(|e| e.to_string())? };
    check_seq_skip(if neg { -(bytes.min(MAX_SEQ_SKIP + 1) as i64) } else { bytes.min(MAX_SEQ_SKIP + 1) as i64 })
}

/// Bounds a `seq_skip` in bytes.
pub fn check_seq_skip(bytes: i64) -> Result<i64, String> {
    if bytes.unsigned_abs() > MAX_SEQ_SKIP {
        return Err(format!("at most {} either way", size_literal(MAX_SEQ_SKIP)));
    }
    if bytes.unsigned_abs() % SEQ_SKIP_ALIGN != 0 {
        return Err(format!("{bytes} bytes is not a multiple of {SEQ_SKIP_ALIGN} (direct I/O needs aligned offsets)"));
    }
    Ok(bytes)
}

/// `seq_skip` as written back: "-8k", "4k".
pub fn seq_skip_literal(bytes: i64) -> String {
    let mag = size_literal(bytes.unsigned_abs());
    if bytes < 0 {
        format!("-{mag}")
    } else {
        mag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_spellings_read_and_write_back() {
        for t in [
            "random",
            "zipf:1.2",
            "zipf:1.2:0.25",
            "pareto:0.9",
            "normal:20",
            "normal:20:0.3",
            "zoned:60/10:30/20:10/70",
            "zoned_abs:60/20m:30/100m:10/500m",
        ] {
            let d = Distribution::parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
            assert_eq!(Distribution::parse(&d.literal()).unwrap(), d, "{t}");
        }
        assert_eq!(Distribution::parse("zipf:1.2").unwrap(), Distribution::Zipf { theta: 1.2, center: None });
        // fio's examples/rand-zones.fio: a last zone without a span takes the rest of the file.
        assert_eq!(
            Distribution::parse("zoned:50/5:30/15:20/").unwrap(),
            Distribution::parse("zoned:50/5:30/15:20/80").unwrap()
        );
        assert!(Distribution::parse("zoned:50/:50/50").is_err(), "only the last zone may leave out its span");
    }

    #[test]
    fn out_of_range_distributions_are_refused_with_a_reason() {
        for t in [
            "zipf",
            "zipf:0",
            "zipf:-1",
            "zipf:nan",
            "zipf:inf",
            "zipf:11",
            "zipf:1.2:2",
            "pareto:1",
            "pareto:0",
            "normal:0",
            "normal:101",
            "zoned:60/10:30/20",
            "zoned:100/0",
            "zoned:50/60:50/60",
            "zoned:x/1",
            "zoned_abs:100/0",
            "zoned:60/10,40/90",
            "triangle:3",
            "zoned",
            "",
        ] {
            assert!(Distribution::parse(t).is_err(), "{t} is refused");
        }
        let many = format!("zoned:{}", vec!["0/0.1"; MAX_ZONES + 1].join(":"));
        assert!(Distribution::parse(&many).unwrap_err().contains("at most 256"));
    }

    #[test]
    fn seq_skip_takes_a_signed_aligned_bounded_size() {
        assert_eq!(parse_seq_skip("-8k"), Ok(-8192));
        assert_eq!(parse_seq_skip("4k"), Ok(4096));
        assert_eq!(parse_seq_skip("0"), Ok(0));
        assert!(parse_seq_skip("1000").is_err(), "not a multiple of 512");
        assert!(parse_seq_skip("-9999999p").is_err());
        assert!(parse_seq_skip("--4k").is_err());
        assert_eq!(seq_skip_literal(-8192), "-8k");
    }
}
