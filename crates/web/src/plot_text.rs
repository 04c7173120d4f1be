//! The text of PNG plots: the workload's 5x7 font with lower case and `µ` added, and axis
//! values written as the UI writes them (crates/web/assets/format.js: `µs`, `KiB`, binary
//! sizes, decades for time, powers of two for bytes), so a plot and the UI read alike.

use ioscope_workload::font::{self, from_rows};

/// Lower case and `µ`, which the pattern font (upper case only) does not have.
#[rustfmt::skip]
const EXTRA: &[(char, [u8; font::WIDTH])] = &[
    ('a', from_rows([".....", ".....", ".###.", "....#", ".####", "#...#", ".####"])),
    ('b', from_rows(["#....", "#....", "#.##.", "##..#", "#...#", "#...#", "####."])),
    ('c', from_rows([".....", ".....", ".###.", "#....", "#....", "#...#", ".###."])),
    ('d', from_rows(["....#", "....#", ".##.#", "#..##", "#...#", "#...#", ".####"])),
    ('e', from_rows([".....", ".....", ".###.", "#...#", "#####", "#....", ".###."])),
    ('f', from_rows(["..##.", ".#..#", ".#...", "###..", ".#...", ".#...", ".#..."])),
    ('g', from_rows([".....", ".####", "#...#", "#...#", ".####", "....#", ".###."])),
    ('h', from_rows(["#....", "#....", "#.##.", "##..#", "#...#", "#...#", "#...#"])),
    ('i', from_rows(["..#..", ".....", ".##..", "..#..", "..#..", "..#..", ".###."])),
    ('j', from_rows(["...#.", ".....", "..##.", "...#.", "...#.", "#..#.", ".##.."])),
    ('k', from_rows(["#....", "#....", "#..#.", "#.#..", "##...", "#.#..", "#..#."])),
    ('l', from_rows([".##..", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."])),
    ('m', from_rows([".....", ".....", "##.#.", "#.#.#", "#.#.#", "#...#", "#...#"])),
    ('n', from_rows([".....", ".....", "#.##.", "##..#", "#...#", "#...#", "#...#"])),
    ('o', from_rows([".....", ".....", ".###.", "#...#", "#...#", "#...#", ".###."])),
    ('p', from_rows([".....", ".....", "####.", "#...#", "####.", "#....", "#...."])),
    ('q', from_rows([".....", ".....", ".##.#", "#..##", ".####", "....#", "....#"])),
    ('r', from_rows([".....", ".....", "#.##.", "##..#", "#....", "#....", "#...."])),
    ('s', from_rows([".....", ".....", ".###.", "#....", ".###.", "....#", "####."])),
    ('t', from_rows([".#...", ".#...", "###..", ".#...", ".#...", ".#..#", "..##."])),
    ('u', from_rows([".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#"])),
    ('v', from_rows([".....", ".....", "#...#", "#...#", "#...#", ".#.#.", "..#.."])),
    ('w', from_rows([".....", ".....", "#...#", "#...#", "#.#.#", "#.#.#", ".#.#."])),
    ('x', from_rows([".....", ".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#"])),
    ('y', from_rows([".....", ".....", "#...#", "#...#", ".####", "....#", ".###."])),
    ('z', from_rows([".....", ".....", "#####", "...#.", "..#..", ".#...", "#####"])),
    ('µ', from_rows([".....", ".....", "#..#.", "#..#.", "#..#.", "###.#", "#...."])),
    ('%', from_rows(["##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"])),
];

/// The text as pixel columns (bit r = row r from the top), each glyph followed by a blank
/// column; characters with no glyph are left out.
pub fn columns(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * (font::WIDTH + 1));
    for c in text.chars() {
        if let Some((_, cols)) = EXTRA.iter().find(|(e, _)| *e == c) {
            out.extend_from_slice(cols);
            out.push(0);
        } else if let Ok(cols) = font::render(&c.to_string()) {
            out.extend_from_slice(&cols);
        }
    }
    out
}

struct Scale {
    div: f64,
    suffix: &'static str,
}

const NS: &[Scale] = &[
    Scale { div: 1.0, suffix: "ns" },
    Scale { div: 1e3, suffix: "µs" },
    Scale { div: 1e6, suffix: "ms" },
    Scale { div: 1e9, suffix: "s" },
];
const BYTES: &[Scale] = &[
    Scale { div: 1.0, suffix: "B" },
    Scale { div: 1024.0, suffix: "KiB" },
    Scale { div: 1048576.0, suffix: "MiB" },
    Scale { div: 1073741824.0, suffix: "GiB" },
    Scale { div: 1099511627776.0, suffix: "TiB" },
    Scale { div: 1125899906842624.0, suffix: "PiB" },
    Scale { div: 1152921504606846976.0, suffix: "EiB" },
];
const SI: &[Scale] = &[
    Scale { div: 1.0, suffix: "" },
    Scale { div: 1e3, suffix: "K" },
    Scale { div: 1e6, suffix: "M" },
    Scale { div: 1e9, suffix: "G" },
    Scale { div: 1e12, suffix: "T" },
];

/// Three significant digits, as format.js's sig3: 1.50, 15.0, 150.
fn sig3(x: f64) -> String {
    match x.abs() {
        a if a >= 100.0 => format!("{x:.0}"),
        a if a >= 10.0 => format!("{x:.1}"),
        _ => format!("{x:.2}"),
    }
}

/// The largest scale whose quotient is >= 1, one up when 3 digits would print "1000".
fn pick(v: f64, scales: &'static [Scale]) -> &'static Scale {
    let a = v.abs();
    let mut i = 0;
    while i + 1 < scales.len() && a >= scales[i + 1].div {
        i += 1;
    }
    if i + 1 < scales.len() && scales[i].div != 1.0 && sig3(a / scales[i].div).parse::<f64>().unwrap_or(0.0) >= 1000.0 {
        i += 1;
    }
    &scales[i]
}

/// "1.50" -> "1.5", "2.00" -> "2", "150" -> "150".
fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// An axis label, as format.js's fmtTick: "0", "10 µs", "2.5 ms", "4 KiB", "1.5 MiB", "20K".
pub fn tick_label(v: f64, unit: &str) -> String {
    if v == 0.0 || !v.is_finite() {
        return "0".to_string();
    }
    let (scales, sep) = match unit {
        "ns" => (NS, " "),
        "bytes" => (BYTES, " "),
        _ => (SI, ""),
    };
    let s = pick(v, scales);
    let q = v / s.div;
    let number = if s.div == 1.0 && v.fract() == 0.0 {
        format!("{v:.0}")
    } else if unit == "bytes" && q.fract() == 0.0 {
        format!("{q:.0}")
    } else {
        trim_zeros(sig3(q))
    };
    if s.suffix.is_empty() {
        number
    } else {
        format!("{number}{sep}{}", s.suffix)
    }
}

/// Elapsed seconds as m:ss or h:mm:ss, as the UI's time axis: 83 -> "1:23".
pub fn elapsed(sec: u64) -> String {
    let (h, m, s) = (sec / 3600, sec / 60 % 60, sec % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// Ticks of a log axis over [min, max] (min > 0), at most about `max_count`: powers of two
/// for bytes (every k-th when they do not fit), else decades with 2 and 5, or 3, between
/// when they fit (format.js's logTicks).
pub fn log_ticks(min: f64, max: f64, unit: &str, max_count: usize) -> Vec<f64> {
    if max.is_nan() || min.is_nan() || max <= min || min <= 0.0 {
        return Vec::new();
    }
    let max_count = max_count.max(1);
    if unit == "bytes" {
        let first = (min.log2() - 1e-9).ceil() as i32;
        let top = (max.log2() + 1e-9).floor() as i32;
        let mut every = 1;
        let span = usize::try_from(top - first + 1).unwrap_or(0);
        while span.div_ceil(every) > max_count {
            every += 1;
        }
        let every = every as i32;
        let start = (first as f64 / every as f64).ceil() as i32 * every;
        return (start..=top).step_by(every as usize).map(|p| 2f64.powi(p)).collect();
    }
    let (lo, hi) = (min.log10().floor() as i32, max.log10().ceil() as i32);
    let mut out = Vec::new();
    for mults in [&[1.0, 2.0, 5.0][..], &[1.0, 3.0], &[1.0]] {
        out.clear();
        for e in lo..=hi {
            for m in mults {
                let v = m * 10f64.powi(e);
                if v >= min * (1.0 - 1e-9) && v <= max * (1.0 + 1e-9) {
                    out.push(v);
                }
            }
        }
        if out.len() <= max_count {
            return out;
        }
    }
    let k = out.len().div_ceil(max_count);
    out.into_iter().step_by(k).collect()
}

/// Ticks of a linear axis over [min, max], about `target` of them: steps of a power of two
/// for bytes (0, 16 MiB, 32 MiB, not 954 MiB), of 1, 2, 2.5 or 5 times a decade otherwise.
pub fn linear_ticks(min: f64, max: f64, unit: &str, target: usize) -> Vec<f64> {
    if max.is_nan() || min.is_nan() || max <= min {
        return vec![min];
    }
    let raw = (max - min) / target.max(1) as f64;
    let step = if unit == "bytes" {
        2f64.powi(raw.log2().ceil() as i32)
    } else {
        let mag = 10f64.powi(raw.log10().floor() as i32);
        [1.0, 2.0, 2.5, 5.0, 10.0].into_iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
    };
    let mut out = Vec::new();
    let mut v = (min / step - 1e-9).ceil() * step;
    while v <= max + step * 1e-9 && out.len() <= 2 * target + 2 {
        out.push(v);
        v += step;
    }
    out
}

/// The top of a linear axis over values up to `top`: a round value at or above it (a
/// power-of-two step for bytes), as the UI's heat map rounds it.
pub fn linear_top(top: f64, unit: &str) -> f64 {
    let t = top.max(2.0);
    let step = *linear_ticks(0.0, t, unit, 8).get(1).unwrap_or(&t);
    (t / step - 1e-9).ceil() * step
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_read_as_the_ui_writes_them_in_one_base() {
        assert_eq!(tick_label(1e4, "ns"), "10 µs");
        assert_eq!(tick_label(1e6, "ns"), "1 ms");
        assert_eq!(tick_label(2.5e6, "ns"), "2.5 ms");
        assert_eq!(tick_label(100.0, "ns"), "100 ns");
        assert_eq!(tick_label(4096.0, "bytes"), "4 KiB");
        assert_eq!(tick_label(1536.0 * 1024.0, "bytes"), "1.5 MiB");
        assert_eq!(tick_label(512.0, "bytes"), "512 B");
        assert_eq!(tick_label(0.0, "bytes"), "0");
        assert_eq!(tick_label(20000.0, "ops"), "20K");
        // Bytes on a log axis are powers of two, so no "1000 B" next to "977 KiB".
        let ticks = log_ticks(512.0, 4.0 * 1048576.0, "bytes", 20);
        assert!(ticks.iter().all(|v| v.log2().fract() == 0.0), "{ticks:?}");
        let labels: Vec<String> = ticks.iter().map(|v| tick_label(*v, "bytes")).collect();
        assert!(labels.iter().all(|l| l.ends_with(" B") || l.ends_with("KiB") || l.ends_with("MiB")), "{labels:?}");
        assert!(!labels.iter().any(|l| l.starts_with("1000") || l.starts_with("977")), "{labels:?}");
        // Every character of a label has a glyph.
        for l in labels.iter().chain(["10 µs".to_string(), "2.5 ms".into(), "0:15".into()].iter()) {
            assert_eq!(columns(l).len(), 6 * l.chars().count(), "{l}");
        }
    }

    #[test]
    fn ticks_stay_few_and_inside_the_range() {
        let t = log_ticks(1e3, 1e9, "ns", 4);
        assert!(t.len() <= 4 && t.iter().all(|v| (1e3..=1e9).contains(v)), "{t:?}");
        let t = log_ticks(256.0, (1u64 << 40) as f64, "bytes", 5);
        assert!(t.len() <= 5 && !t.is_empty(), "{t:?}");
        assert_eq!(
            linear_ticks(0.0, 64.0 * 1048576.0, "bytes", 6),
            (0..=4).map(|k| k as f64 * 16.0 * 1048576.0).collect::<Vec<_>>()
        );
        assert_eq!(linear_top(67104768.0, "bytes"), 64.0 * 1048576.0);
        assert_eq!(elapsed(83), "1:23");
        assert_eq!(ioscope_report::format::int(7497), "7,497");
    }
}
