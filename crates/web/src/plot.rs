//! `ioscope plot`: a heat map as a PNG image: x = seconds, y = value on a log scale,
//! colour = I/O count per cell on a log scale (one I/O is still visible). With a
//! breakdown, one panel per value, stacked on the same time axis.

use crate::query::{self, Query, QueryError};
use ioscope_store::Results;
use ioscope_workload::font;
use std::path::PathBuf;

/// Largest image drawn, in pixels (3 bytes each): 64 Mpx, 192 MB of RGB.
pub const MAX_PIXELS: u64 = 64 << 20;
/// Width and panel height are clamped to these ranges.
pub const WIDTH_RANGE: (u32, u32) = (LEFT + RIGHT + 100, 8192);
pub const PANEL_HEIGHT_RANGE: (u32, u32) = (80, 4096);

pub struct PlotOptions {
    pub width: u32,
    /// Height of each panel.
    pub panel_height: u32,
}

const LEFT: u32 = 84;
const RIGHT: u32 = 16;
const TITLE: u32 = 30;
const BOTTOM: u32 = 26;
const SCALE: u32 = 2;
const BACKGROUND: [u8; 3] = [16, 18, 24];
const PLOT_BACKGROUND: [u8; 3] = [6, 8, 12];
const TEXT: [u8; 3] = [200, 206, 218];
const GRID: [u8; 3] = [44, 50, 62];

/// Why a heat map cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The query cannot be answered (not a distribution, say).
    #[error(transparent)]
    Query(#[from] QueryError),
    #[error("no {stat} values recorded in {}", .file.display())]
    NoValues { stat: &'static str, file: PathBuf },
    #[error(
        "{panels} panels of {panel_height} px at width {width} make an image of {width}x{height} pixels; at most \
         {MAX_PIXELS} (draw fewer panels with --where, or lower --height or --width)"
    )]
    TooLarge { panels: usize, panel_height: u32, width: u32, height: u64 },
    /// The PNG encoder failed (writing to memory: not expected).
    #[error("{0}")]
    Png(png::EncodingError),
}

/// Renders the heat map(s) of a distribution query as PNG bytes.
pub fn render(results: &Results, q: &Query, opts: &PlotOptions) -> Result<Vec<u8>, PlotError> {
    let map = query::heat_map(results, q)?;
    let buckets: Vec<(f64, f64)> = map.buckets.iter().map(|&(lo, hi)| (lo as f64, hi as f64 + 1.0)).collect();
    if map.series.is_empty() || buckets.is_empty() {
        return Err(PlotError::NoValues { stat: q.stat.name, file: results.path.clone() });
    }
    let seconds = map.seconds.max(1);
    let from = map.from as u64;
    let width = opts.width.clamp(WIDTH_RANGE.0, WIDTH_RANGE.1);
    let ph = opts.panel_height.clamp(PANEL_HEIGHT_RANGE.0, PANEL_HEIGHT_RANGE.1);
    let height = (map.series.len() as u64).saturating_mul((ph + TITLE) as u64).saturating_add(BOTTOM as u64);
    if (width as u64).saturating_mul(height) > MAX_PIXELS {
        return Err(PlotError::TooLarge { panels: map.series.len(), panel_height: ph, width, height });
    }
    let height = height as u32; // at most MAX_PIXELS
    let mut img = Image::new(width, height);

    let lo = buckets[0].0.max(1.0);
    let hi = buckets.last().map_or(lo * 10.0, |b| b.1).max(lo * 2.0);
    let (llo, lhi) = (lo.ln(), hi.ln());
    let pw = width - LEFT - RIGHT;
    for (p, s) in map.series.iter().enumerate() {
        let top = p as u32 * (ph + TITLE) + TITLE;
        let title = match q.by {
            Some(d) => format!("{} BY {}: {}", q.stat.name, d.name(), s.key),
            None => q.stat.name.to_string(),
        };
        let filter = q.where_string();
        let title = if filter.is_empty() { title } else { format!("{title}  WHERE {filter}") };
        img.text(LEFT, top - 22, &title.replace('_', " "), TEXT);
        img.fill(LEFT, top, pw, ph, PLOT_BACKGROUND);

        // Sum counts into (pixel column, pixel row) cells.
        let mut cells = vec![0u64; (pw * ph) as usize];
        let row_of = |v: f64| (((lhi - v.max(lo).ln()) / (lhi - llo)) * ph as f64).clamp(0.0, ph as f64);
        for (i, col) in s.columns.iter().enumerate() {
            let x0 = (i as u64 * pw as u64 / seconds as u64) as u32;
            let x1 = (((i as u64 + 1) * pw as u64 / seconds as u64) as u32).max(x0 + 1).min(pw);
            for &(b, count) in col {
                let Some(&(blo, bhi)) = buckets.get(b as usize) else { continue };
                let y0 = row_of(bhi).floor() as u32;
                let y1 = (row_of(blo).ceil() as u32).max(y0 + 1).min(ph);
                for y in y0..y1 {
                    for x in x0..x1 {
                        let cell = &mut cells[(y * pw + x) as usize];
                        *cell = cell.saturating_add(count);
                    }
                }
            }
        }
        let max = cells.iter().copied().max().unwrap_or(1).max(1) as f64;
        for y in 0..ph {
            for x in 0..pw {
                let c = cells[(y * pw + x) as usize];
                if c > 0 {
                    let t = (c as f64).ln_1p() / max.ln_1p();
                    img.set(LEFT + x, top + y, ramp(t));
                }
            }
        }
        // Y axis: a label at each power of ten in range.
        let mut v = 10f64.powi(lo.log10().floor() as i32);
        while v <= hi {
            if v >= lo {
                let y = top + row_of(v).round() as u32;
                img.fill(LEFT - 4, y.min(top + ph - 1), 4, 1, GRID);
                let label = value_label(v, q.stat.unit);
                let w = label.len() as u32 * 6 * SCALE;
                img.text(LEFT.saturating_sub(8 + w), y.saturating_sub(7).max(top), &label, TEXT);
            }
            v *= 10.0;
        }
    }
    // X axis: seconds.
    let y = height - BOTTOM + 6;
    let step = nice_step(seconds as u64, (pw / 110).max(2) as u64);
    let mut s = 0;
    while s < seconds as u64 {
        let x = LEFT + (s * pw as u64 / seconds as u64) as u32;
        img.fill(x, y - 6, 1, 4, GRID);
        img.text(x, y, &format!("{}S", from + s), TEXT);
        s += step;
    }
    img.png().map_err(PlotError::Png)
}

/// Seconds between x labels: 1, 2, 5, 10, 15, 30, 60, ... so that about `n` fit.
fn nice_step(seconds: u64, n: u64) -> u64 {
    let raw = seconds.div_ceil(n).max(1);
    [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200].into_iter().find(|s| *s >= raw).unwrap_or(raw)
}

/// A value as the 5x7 font can write it: "10US", "1MS", "4K", "1G".
fn value_label(v: f64, unit: &str) -> String {
    let scaled = |names: &[(&str, f64)]| {
        let (name, div) = names.iter().rev().find(|(_, d)| v >= *d).copied().unwrap_or(names[0]);
        format!("{}{name}", (v / div).round())
    };
    if unit == "ns" {
        scaled(&[("NS", 1.0), ("US", 1e3), ("MS", 1e6), ("S", 1e9)])
    } else {
        scaled(&[("B", 1.0), ("K", 1024.0), ("M", 1048576.0), ("G", 1073741824.0), ("T", 1099511627776.0)])
    }
}

/// False colour from rare (deep blue, still well above the background) to frequent
/// (pale yellow).
pub fn ramp(t: f64) -> [u8; 3] {
    const STOPS: [(f64, [f64; 3]); 5] = [
        (0.0, [38.0, 70.0, 190.0]),
        (0.3, [120.0, 60.0, 200.0]),
        (0.55, [220.0, 60.0, 120.0]),
        (0.8, [250.0, 150.0, 40.0]),
        (1.0, [255.0, 250.0, 190.0]),
    ];
    let t = t.clamp(0.0, 1.0);
    let i = STOPS.iter().position(|(s, _)| *s >= t).unwrap_or(STOPS.len() - 1).max(1);
    let ((a, ca), (b, cb)) = (STOPS[i - 1], STOPS[i]);
    let f = if b > a { (t - a) / (b - a) } else { 0.0 };
    std::array::from_fn(|k| (ca[k] + (cb[k] - ca[k]) * f).round() as u8)
}

struct Image {
    width: u32,
    height: u32,
    rgb: Vec<u8>,
}

impl Image {
    fn new(width: u32, height: u32) -> Self {
        let mut rgb = Vec::with_capacity(width as usize * height as usize * 3);
        for _ in 0..width * height {
            rgb.extend_from_slice(&BACKGROUND);
        }
        Image { width, height, rgb }
    }

    fn set(&mut self, x: u32, y: u32, c: [u8; 3]) {
        if x < self.width && y < self.height {
            let i = (y as usize * self.width as usize + x as usize) * 3;
            self.rgb[i..i + 3].copy_from_slice(&c);
        }
    }

    fn fill(&mut self, x: u32, y: u32, w: u32, h: u32, c: [u8; 3]) {
        for yy in y..y + h {
            for xx in x..x + w {
                self.set(xx, yy, c);
            }
        }
    }

    /// Text in the 5x7 font at `SCALE`; characters it has no glyph for are skipped.
    fn text(&mut self, x: u32, y: u32, s: &str, c: [u8; 3]) {
        let printable: String = s.chars().filter(|ch| font::render(&ch.to_string()).is_ok()).collect();
        let cols = font::render(&printable).unwrap_or_default();
        for (i, col) in cols.iter().enumerate() {
            for r in 0..font::ROWS {
                if (col >> r) & 1 == 1 {
                    self.fill(x + i as u32 * SCALE, y + r * SCALE, SCALE, SCALE, c);
                }
            }
        }
    }

    fn png(&self) -> Result<Vec<u8>, png::EncodingError> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header()?;
        w.write_image_data(&self.rgb)?;
        w.finish()?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_is_visible_at_one_io_and_brightens() {
        let lum = |c: [u8; 3]| c.iter().map(|&x| x as u32).sum::<u32>();
        assert!(lum(ramp(0.0)) > lum(PLOT_BACKGROUND) + 150, "a single I/O must stand out");
        assert!(lum(ramp(1.0)) > lum(ramp(0.5)) && lum(ramp(0.5)) > lum(ramp(0.0)));
    }

    #[test]
    fn labels_use_units_the_font_can_write() {
        assert_eq!(value_label(1e6, "ns"), "1MS");
        assert_eq!(value_label(1e4, "ns"), "10US");
        assert_eq!(value_label(4096.0, "bytes"), "4K");
        assert_eq!(nice_step(3600, 10), 600);
        assert!(font::render(&value_label(1e4, "ns")).is_ok());
    }
}
