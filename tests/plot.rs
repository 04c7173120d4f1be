//! `ioscope plot` read back as a user sees it: the PNG's pixels, located by the geometry
//! the image carries in its `ioscope:plot` text chunk (as the browser tests read the
//! UI's canvas by the geometry it reports).

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn ioscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ioscope"))
}

fn run_ok(args: &[&str]) {
    let out = ioscope().args(args).output().unwrap();
    assert!(out.status.success(), "ioscope {args:?} failed: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// An RGB image and its geometry.
struct Png {
    width: u32,
    rgb: Vec<u8>,
    geometry: Value,
}

impl Png {
    fn read(path: &Path) -> Png {
        let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
        let mut reader = png::Decoder::new(file).read_info().unwrap();
        let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
        let frame = reader.next_frame(&mut rgb).unwrap();
        assert_eq!(frame.color_type, png::ColorType::Rgb);
        let info = reader.info();
        let text = info.utf8_text.iter().find(|t| t.keyword == "ioscope:plot").expect("the plot's geometry chunk");
        Png { width: frame.width, rgb, geometry: serde_json::from_str(&text.get_text().unwrap()).unwrap() }
    }

    fn pixel(&self, x: f64, y: f64) -> [u8; 3] {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }
}

#[test]
fn plot_of_the_offsets_of_a_latency_art_run_spells_its_word() {
    let tmp = tempfile::tempdir().unwrap();
    let spec = tmp.path().join("art.toml");
    std::fs::write(
        &spec,
        "engine = \"null\"\nsize = \"7m\"\nduration = \"12s\"\nrate_iops = 3000\n\n[[workload]]\nbs = \"4k\"\npattern = { text = \"HI\", map = \"offset\" }\n",
    )
    .unwrap();
    let results = tmp.path().join("art.db");
    run_ok(&["run", s(&spec), "--out", s(&results), "--quiet"]);
    let image = tmp.path().join("art.png");
    run_ok(&["plot", s(&results), "--stat", "offset", "-o", s(&image)]);

    let png = Png::read(&image);
    let g = &png.geometry;
    assert_eq!(g["scale"], "linear", "offsets are drawn on a linear axis, as in the UI");
    let panel = &g["panels"][0];
    let num = |v: &Value| v.as_f64().unwrap();
    let (px, py, pw, ph) = (num(&panel["x"]), num(&panel["y"]), num(&panel["width"]), num(&panel["height"]));
    let (from, seconds, ymin, ymax) = (num(&g["from"]), num(&g["seconds"]), num(&g["ymin"]), num(&g["ymax"]));
    // The font's 7 rows are 7 bands of the 7 MiB file, the top row at the highest offsets.
    let band = (7u64 << 20) as f64 / 7.0;
    let x_of = |second: f64| px + pw * (second - from + 0.5) / seconds;
    let y_of = |v: f64| py + ph * (1.0 - (v - ymin) / (ymax - ymin));
    // The plot's own background: second 5 is the blank column between the letters.
    let bg = png.pixel(x_of(5.0), y_of(3.5 * band));
    let lit = |c: [u8; 3]| c.iter().zip(bg).map(|(a, b)| (*a as i32 - b as i32).abs()).sum::<i32>() > 60;

    let want = ioscope_workload::font::render("HI").unwrap();
    let columns = want.len() - 1; // the blank column after the last letter may not be stored
    let mut drawn = String::new();
    let mut expected = String::new();
    for r in 0..7u32 {
        for (second, col) in want.iter().enumerate().take(columns) {
            let c = png.pixel(x_of(second as f64), y_of((6 - r) as f64 * band + band / 2.0));
            drawn.push(if lit(c) { '#' } else { '.' });
            expected.push(if col & (1 << r) != 0 { '#' } else { '.' });
        }
        drawn.push('\n');
        expected.push('\n');
    }
    assert_eq!(drawn, expected, "drawn:\n{drawn}\nwant:\n{expected}");
}
