//! `ioscope plot`: a heat map as a PNG image: x = seconds, y = value (log scale; offsets
//! on a linear one, as in the UI, so latency art reads), colour = I/O count per cell on a
//! log scale (one I/O is still visible), with a legend of that scale. With a breakdown, one
//! panel per value, stacked on the same time axis and coloured on one scale. Axis labels
//! are written as the UI writes them (`plot_text`). The image carries its geometry in a
//! text chunk (iTXt `ioscope:plot`, JSON) for programs and tests that read its pixels.

use crate::plot_text::{self, elapsed, tick_label};
use crate::query::{self, Query, QueryError};
use ioscope_metrics::StatId;
use ioscope_report::format::int;
use ioscope_store::Results;
use std::path::PathBuf;

/// Largest image drawn, in pixels (3 bytes each): 64 Mpx, 192 MB of RGB.
pub const MAX_PIXELS: u64 = 64 << 20;
/// Width and panel height are clamped to these ranges.
pub const WIDTH_RANGE: (u32, u32) = (200, 8192);
pub const PANEL_HEIGHT_RANGE: (u32, u32) = (80, 4096);
/// The keyword of the PNG text chunk that holds the image's geometry.
pub const GEOMETRY_KEYWORD: &str = "ioscope:plot";

pub struct PlotOptions {
    pub width: u32,
    /// Height of each panel.
    pub panel_height: u32,
}

/// Room for y labels such as "1.5 MiB" (7 glyphs of 12 px) and the tick.
const LEFT: u32 = 96;
const RIGHT: u32 = 16;
const TITLE: u32 = 30;
/// The time axis labels, then the colour legend.
const AXIS: u32 = 26;
const LEGEND: u32 = 26;
const BOTTOM: u32 = AXIS + LEGEND;
const SCALE: u32 = 2;
/// One glyph with its blank column, in pixels.
const GLYPH_PX: u32 = 6 * SCALE;
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

/// The value axis: log, or linear from 0 (offsets: a file is a line of blocks).
struct Axis {
    lo: f64,
    hi: f64,
    linear: bool,
    rows: u32,
}

impl Axis {
    /// Rows from the top (0) to the bottom (`rows`) of value `v`, clamped to the panel.
    fn row_of(&self, v: f64) -> f64 {
        let f = if self.linear {
            (self.hi - v) / (self.hi - self.lo)
        } else {
            (self.hi.ln() - v.max(self.lo).ln()) / (self.hi.ln() - self.lo.ln())
        };
        (f * self.rows as f64).clamp(0.0, self.rows as f64)
    }

    /// The rows a bucket of values [lo, hi) covers, as fractions: (top, bottom).
    fn span_of(&self, lo: f64, hi: f64) -> (f64, f64) {
        (self.row_of(hi), self.row_of(lo))
    }

    fn ticks(&self, unit: &str) -> Vec<f64> {
        // A label is 14 px tall: leave as much again between two.
        let fit = (self.rows / 28).max(2) as usize;
        if self.linear {
            plot_text::linear_ticks(self.lo, self.hi, unit, fit.min(6))
        } else {
            plot_text::log_ticks(self.lo, self.hi, unit, fit)
        }
    }
}

/// I/O count per (pixel column, pixel row) of one panel. A bucket taller than a row is
/// spread over the rows it covers in proportion to the overlap, so a cell holds the I/Os
/// whose values fall in its range (uniform within a bucket) and an even density looks
/// even, whatever the bucket widths: no stripes where buckets and rows do not align.
fn cells(columns: &[Vec<(u32, u64)>], spans: &[(f64, f64)], pw: u32, ph: u32, seconds: usize) -> Vec<f64> {
    let mut cells = vec![0f64; (pw * ph) as usize];
    for (i, col) in columns.iter().enumerate() {
        let (x0, x1) = second_columns(i, seconds, pw);
        for &(b, count) in col {
            let Some(&(top, bottom)) = spans.get(b as usize) else { continue };
            let first = (top.floor() as u32).min(ph - 1);
            let last = (bottom.ceil() as u32).clamp(first + 1, ph);
            let tall = bottom - top;
            for y in first..last {
                // Share of the bucket in row y; a bucket thinner than a row (or clamped
                // to the edge) is wholly in its row.
                let share =
                    if tall > 0.0 { ((bottom.min(y as f64 + 1.0) - top.max(y as f64)) / tall).max(0.0) } else { 1.0 };
                let share = if last - first == 1 { 1.0 } else { share };
                for x in x0..x1 {
                    cells[(y * pw + x) as usize] += count as f64 * share;
                }
            }
        }
    }
    cells
}

/// Pixel columns [x0, x1) of second `i` of `seconds` in a plot `pw` wide: at least one.
fn second_columns(i: usize, seconds: usize, pw: u32) -> (u32, u32) {
    let x0 = (i as u64 * pw as u64 / seconds as u64) as u32;
    let x1 = (((i as u64 + 1) * pw as u64 / seconds as u64) as u32).max(x0 + 1).min(pw);
    (x0.min(pw - 1), x1)
}

/// The colour of a cell of `count` I/Os when the densest cell holds `max` (log scale). A
/// cell with a share of one I/O (a bucket spread over rows) has the colour of one I/O,
/// so every I/O stays visible.
fn color_of(count: f64, max: f64) -> [u8; 3] {
    if max <= 1.0 {
        return ramp(1.0);
    }
    ramp(count.max(1.0).ln_1p() / max.ln_1p())
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
    let unit = q.stat.unit;

    let top = buckets.last().map_or(1.0, |b| b.1);
    let axis = if q.stat.id == StatId::Offset {
        Axis { lo: 0.0, hi: plot_text::linear_top(top, unit), linear: true, rows: ph }
    } else {
        let lo = buckets[0].0.max(1.0);
        Axis { lo, hi: top.max(lo * 2.0), linear: false, rows: ph }
    };
    let spans: Vec<(f64, f64)> = buckets.iter().map(|&(lo, hi)| axis.span_of(lo, hi)).collect();
    let pw = width - LEFT - RIGHT;
    // One colour scale for every panel, so equal colours mean equal counts and one legend
    // is true for all: the densest cell of any panel is the top of the scale.
    let max = map.series.iter().map(|s| cells(&s.columns, &spans, pw, ph, seconds).into_iter().fold(0.0, f64::max));
    let max = max.fold(1.0, f64::max);

    let mut panels = Vec::new();
    for (p, s) in map.series.iter().enumerate() {
        let top = p as u32 * (ph + TITLE) + TITLE;
        let title = match q.by {
            Some(d) => format!("{} by {}: {}", q.stat.name, d.name(), s.key),
            None => q.stat.name.to_string(),
        };
        let filter = q.where_string();
        let title = if filter.is_empty() { title } else { format!("{title}  where {filter}") };
        img.text(LEFT, top - 22, &title.replace('_', " "), TEXT);
        img.fill(LEFT, top, pw, ph, PLOT_BACKGROUND);

        let cells = cells(&s.columns, &spans, pw, ph, seconds);
        for y in 0..ph {
            for x in 0..pw {
                let c = cells[(y * pw + x) as usize];
                if c > 0.0 {
                    img.set(LEFT + x, top + y, color_of(c, max));
                }
            }
        }
        for v in axis.ticks(unit) {
            let y = top + (axis.row_of(v).round() as u32).min(ph - 1);
            img.fill(LEFT - 4, y, 4, 1, GRID);
            let label = tick_label(v, unit);
            let w = label.chars().count() as u32 * GLYPH_PX;
            img.text(LEFT.saturating_sub(6 + w), y.saturating_sub(7).clamp(top, top + ph - 14), &label, TEXT);
        }
        panels.push(serde_json::json!({ "key": s.key, "x": LEFT, "y": top, "width": pw, "height": ph }));
    }
    // X axis: time from the start of the run, m:ss as in the UI.
    let y = height - BOTTOM + 6;
    let step = nice_step(seconds as u64, (pw / 110).max(2) as u64);
    let mut s = 0;
    while s < seconds as u64 {
        let x = LEFT + (s * pw as u64 / seconds as u64) as u32;
        img.fill(x, y - 6, 1, 4, GRID);
        img.text(x, y, &elapsed(from + s), TEXT);
        s += step;
    }
    legend(&mut img, height - LEGEND + 4, max);

    let geometry = serde_json::json!({
        "stat": q.stat.name,
        "unit": unit,
        "scale": if axis.linear { "linear" } else { "log" },
        "ymin": axis.lo,
        "ymax": axis.hi,
        "from": from,
        "seconds": seconds,
        "max_count": max.round(),
        "panels": panels,
    });
    img.png(&geometry.to_string()).map_err(PlotError::Png)
}

/// The colour scale at `y`: "I/O per cell 1 [ramp] max" (the caption only if it fits).
/// Each pixel of the bar is the colour of the count at its place on the log scale.
fn legend(img: &mut Image, y: u32, max: f64) {
    const CAPTION: &str = "I/O per cell";
    let max_label = int(max.round() as u64);
    let label_w = |s: &str| s.chars().count() as u32 * GLYPH_PX;
    let room = img.width.saturating_sub(8 + RIGHT);
    let fixed = label_w("1") + 6 + 6 + label_w(&max_label);
    let with_caption = label_w(CAPTION) + 8 + fixed + 40 <= room;
    let mut x = 8;
    if with_caption {
        img.text(x, y, CAPTION, TEXT);
        x += label_w(CAPTION) + 8;
    }
    img.text(x, y, "1", TEXT);
    x += label_w("1") + 6;
    let bar = room.saturating_sub(x - 8 + 6 + label_w(&max_label)).clamp(8, 240);
    let (l1, lmax) = (1f64.ln_1p(), max.ln_1p());
    for i in 0..bar {
        // The count at this pixel: from 1 at the left end to `max` at the right.
        let f = if bar > 1 { i as f64 / (bar - 1) as f64 } else { 1.0 };
        let count = (l1 + (lmax - l1) * f).exp_m1().clamp(1.0, max.max(1.0));
        img.fill(x + i, y + 1, 1, 12, color_of(count, max));
    }
    img.text(x + bar + 6, y, &max_label, TEXT);
}

/// Seconds between x labels: 1, 2, 5, 10, 15, 30, 60, ... so that about `n` fit.
fn nice_step(seconds: u64, n: u64) -> u64 {
    let raw = seconds.div_ceil(n).max(1);
    [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200].into_iter().find(|s| *s >= raw).unwrap_or(raw)
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

    #[cfg(test)]
    fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
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
        for (i, col) in plot_text::columns(s).iter().enumerate() {
            for r in 0..ioscope_workload::font::ROWS {
                if (col >> r) & 1 == 1 {
                    self.fill(x + i as u32 * SCALE, y + r * SCALE, SCALE, SCALE, c);
                }
            }
        }
    }

    /// The image as PNG, with `geometry` in a text chunk.
    fn png(&self, geometry: &str) -> Result<Vec<u8>, png::EncodingError> {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, self.width, self.height);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        // iTXt: UTF-8, as breakdown keys (file names) may be.
        enc.add_itxt_chunk(GEOMETRY_KEYWORD.to_string(), geometry.to_string())?;
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
        assert_eq!(nice_step(3600, 10), 600);
    }

    #[test]
    fn the_legend_runs_from_the_colour_of_one_io_to_that_of_the_densest_cell() {
        let mut img = Image::new(400, 40);
        legend(&mut img, 10, 7497.0);
        let row: Vec<[u8; 3]> = (0..400).map(|x| img.pixel(x, 16)).collect();
        let first =
            row.iter().position(|c| *c == color_of(1.0, 7497.0)).expect("the colour of one I/O is in the legend");
        let last =
            row.iter().rposition(|c| *c == color_of(7497.0, 7497.0)).expect("the densest colour is in the legend");
        assert!(last > first + 20, "a bar from {first} to {last}");
        assert!(row[first..=last].iter().all(|c| *c != BACKGROUND && *c != TEXT));
    }

    #[test]
    fn an_even_density_of_offsets_is_drawn_even_whatever_the_bucket_widths() {
        use ioscope_metrics::histogram::{bucket_index, bucket_range};
        // Every 4 KiB block of a 64 MiB file once in one second: log-linear buckets of
        // every width from 1 block to 64 blocks, on a linear axis of 64 MiB.
        let mut counts = std::collections::BTreeMap::new();
        for block in 0..16384u64 {
            *counts.entry(bucket_index(block * 4096)).or_insert(0u64) += 1;
        }
        // 300 rows: rows of 218.5 KiB, which the power-of-two buckets do not align with.
        let axis = Axis { lo: 0.0, hi: (64u64 << 20) as f64, linear: true, rows: 300 };
        let spans: Vec<(f64, f64)> =
            counts.keys().map(|&i| bucket_range(i)).map(|(lo, hi)| axis.span_of(lo as f64, hi as f64 + 1.0)).collect();
        let column: Vec<(u32, u64)> = counts.values().enumerate().map(|(k, &n)| (k as u32, n)).collect();
        let cells = cells(&[column], &spans, 1, 300, 1);
        let even = 16384.0 / 300.0;
        for (row, c) in cells.iter().enumerate() {
            assert!((c - even).abs() <= even * 0.05, "row {row}: {c:.1} I/Os where every row has {even:.1}");
        }
        assert!((cells.iter().sum::<f64>() - 16384.0).abs() < 1e-6, "every I/O is drawn once");
    }

    #[test]
    fn geometry_with_any_breakdown_key_is_written() {
        let png = Image::new(4, 4).png(r#"{"panels":[{"key":"/data/日本/ü"}]}"#).unwrap();
        let reader = png::Decoder::new(std::io::Cursor::new(png)).read_info().unwrap();
        let text = reader.info().utf8_text.iter().find(|t| t.keyword == GEOMETRY_KEYWORD).unwrap();
        assert!(text.get_text().unwrap().contains("日本/ü"));
    }
}
