// The seeds' latency art, end to end: a pattern workload spells "HI" into its offsets,
// one font column per second; the UI's offset heat map must show the word.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ioscope, serve, launch, open, drawn, pixels, tmpdir, SHOTS } from './harness.mjs';

// The 5x7 font's columns for "HI" (bit r = row r from the top), as in crates/workload/src/font.rs.
const HI = [0x7f, 0x08, 0x08, 0x08, 0x7f, 0, 0x00, 0x41, 0x7f, 0x41, 0x00, 0];

let server;
let browser;
before(async () => {
  const dir = tmpdir();
  const spec = path.join(dir, 'art.toml');
  writeFileSync(spec, 'engine = "null"\nsize = "7m"\nduration = "12s"\nrate_iops = 3000\n\n'
    + '[[workload]]\nbs = "4k"\npattern = { text = "HI", map = "offset" }\n');
  const results = path.join(dir, 'art.db');
  ioscope(['run', spec, '--out', results, '--quiet']);
  server = await serve(['ui', results, '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test('the offset heat map of a latency-art run spells its word', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=offset,kind=heatmap,ys=lin`);
  const [chart] = await drawn(page);
  assert.equal(chart.kind, 'heatmap');
  const d = chart.drawn;
  assert.ok(d.cells > 0, 'cells drawn');
  const band = (7 << 20) / 7;
  const xOf = (s) => d.plot.width * (s - d.from + 0.5) / (d.to - d.from + 1);
  const yOf = (v) => d.plot.height * (1 - (v - d.ymin) / (d.ymax - d.ymin));
  // Background: the plot's colour where nothing can be (second 5 is the blank column).
  const [bg] = await pixels(page, 0, [[xOf(5), yOf(3.5 * band)]]);
  const lit = (rgb) => Math.abs(rgb[0] - bg[0]) + Math.abs(rgb[1] - bg[1]) + Math.abs(rgb[2] - bg[2]) > 60;
  const rows = [];
  for (let r = 0; r < 7; r++) {
    const pts = [];
    for (let s = 0; s < HI.length - 1; s++) pts.push([xOf(s), yOf((6 - r + 0.5) * band)]);
    const px = await pixels(page, 0, pts);
    rows.push(px.map((p) => (lit(p) ? '#' : '.')).join(''));
  }
  const want = [];
  for (let r = 0; r < 7; r++) want.push(HI.slice(0, -1).map((c) => ((c >> r) & 1 ? '#' : '.')).join(''));
  await page.screenshot({ path: path.join(SHOTS, 'latency-art.png') });
  assert.equal(rows.join('\n'), want.join('\n'), `drawn:\n${rows.join('\n')}\nwant:\n${want.join('\n')}`);
  assert.deepEqual(errors, []);
});
