// Heat-map shaping: what ends up in which pixel, and what the side panel lists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  prepareHeat, indexRange, bucketCounts, cutValue, heatRange, logScale, bucketRows, columnBins,
  accumulate, keyTotals, valuesAt, mergeHeat,
} from '../../crates/web/assets/histo.js';

const fixture = (name) => JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url)));

// The server's log-linear layout (crates/metrics/src/histogram.rs), to build big inputs.
function bucketIndex(v) {
  if (v < 256) return v;
  const shift = Math.floor(Math.log2(v)) - 7;
  return shift * 128 + Math.floor(v / 2 ** shift);
}
function bucketRange(i) {
  if (i < 256) return [i, i];
  const shift = (i >> 7) - 1;
  const low = (128 + (i & 127)) * 2 ** shift;
  return [low, low + 2 ** shift - 1];
}
// A heatmap response with one series from per-second lists of values.
function heatOf(perSecond) {
  const used = new Set();
  for (const vs of perSecond) for (const v of vs) used.add(bucketIndex(v));
  const idx = [...used].sort((a, b) => a - b);
  const pos = new Map(idx.map((b, i) => [b, i]));
  const columns = perSecond.map((vs) => {
    const m = new Map();
    for (const v of vs) m.set(pos.get(bucketIndex(v)), (m.get(pos.get(bucketIndex(v))) || 0) + 1);
    return [...m].sort((a, b) => a[0] - b[0]).flat();
  });
  return prepareHeat({
    stat: 'latency', unit: 'ns', by: '', where: '', relative_error: 0.0039,
    seconds: perSecond.map((_, i) => i), buckets: idx.map(bucketRange),
    series: [{ key: 'all', total: perSecond.flat().length, columns }],
  });
}

test('buckets map to rows by log(value): higher values higher up, decades equally tall', () => {
  const h = 300;
  const scale = logScale(1e3, 1e6, h); // three decades, 100 px each
  const lo = Float64Array.from([1000, 9999, 10_000, 100_000, 999_999]);
  const hi = Float64Array.from([1000, 9999, 10_000, 100_000, 999_999]);
  const { top, bot } = bucketRows(lo, hi, scale, h);
  assert.equal(top[0], 299, '1 µs sits on the bottom row');
  assert.equal(top[2], 199, '10 µs is one decade (100 px) up');
  assert.equal(top[3], 99, '100 µs two decades up');
  assert.equal(top[4], 0, 'the top of the range is the top row');
  assert.ok(top[1] >= top[2], 'a smaller value is never above a larger one');
  // a bucket wider than a row covers several rows: 4.19-4.23 ms over a 0.1 decade range
  const wide = bucketRows(Float64Array.from([4_194_304]), Float64Array.from([4_227_071]), logScale(4e6, 4.5e6, 200), 200);
  assert.ok(wide.bot[0] - wide.top[0] >= 10, `one bucket spans rows ${wide.top[0]}..${wide.bot[0]}`);
  // a bucket outside the range is not drawn
  const out = bucketRows(Float64Array.from([5e6]), Float64Array.from([5.1e6]), scale, h);
  assert.equal(out.top[0], -1);
});

test('seconds fill whole pixel columns when zoomed in, and are summed when zoomed out', () => {
  const few = columnBins(0, 9, 100);
  assert.equal(few.nbins, 10);
  assert.equal(few.x0[3], 30);
  assert.equal(few.x0[10], 100);
  const many = columnBins(0, 3599, 900);
  assert.equal(many.nbins, 900);
  assert.equal(many.binOf(0), 0);
  assert.equal(many.binOf(3), 0, 'four seconds per pixel column');
  assert.equal(many.binOf(4), 1);
  assert.equal(many.binOf(3599), 899);
});

test('column summation adds the buckets of the seconds of one column', () => {
  // 4 seconds, 2 pixel columns wide: seconds 0+1 and 2+3 are summed
  const heat = heatOf([[1000, 1000], [1000], [50_000], [50_000, 50_000, 50_000]]);
  const h = 100;
  const scale = logScale(100, 1e6, h);
  const rows = bucketRows(heat.lo, heat.hi, scale, h);
  const bins = columnBins(0, 3, 2);
  const acc = accumulate(heat, [null], 0, 4, bins, rows, h);
  const r1k = rows.top[0];
  const r50k = rows.top[1];
  assert.equal(acc.grids[0][0 * h + r1k], 3, 'column 0: 2 + 1 I/O at 1 µs');
  assert.equal(acc.grids[0][1 * h + r50k], 4, 'column 1: 1 + 3 I/O at 50 µs');
  assert.equal(acc.grids[0][1 * h + r1k], 0);
  assert.equal(acc.maxes[0], 4);
  assert.equal(acc.cells, 2, 'two non-empty (column, bucket) cells');
});

test('an hour of seconds sums into 1,000 pixel columns without losing an I/O', () => {
  const per = [];
  for (let s = 0; s < 3600; s++) {
    const vs = [];
    for (let k = 0; k < 60; k++) vs.push(1000 + k * 40 + (s % 7));
    per.push(vs);
  }
  const heat = heatOf(per);
  const h = 240;
  const range = heatRange(bucketCounts(heat, null, 0, 3600), heat.lo, heat.hi, 'ns', 0, 0);
  const rows = bucketRows(heat.lo, heat.hi, logScale(range.ymin, range.ymax, h), h);
  const acc = accumulate(heat, [null], 0, 3600, columnBins(0, 3599, 1000), rows, h);
  // 3.6 seconds per column, one I/O per value per second: cells hold 3 to a few I/Os.
  assert.ok(acc.maxes[0] >= 3 && acc.maxes[0] <= 8, `densest cell ${acc.maxes[0]}`);
  assert.ok(acc.cells >= 1000 * 50, `${acc.cells} cells`);
  // Every I/O lands in at least one row of its column (a bucket may span several rows).
  const grid = acc.grids[0];
  let columnsWithAll = 0;
  for (let b = 0; b < 1000; b++) {
    let rowsLit = 0;
    for (let r = 0; r < h; r++) if (grid[b * h + r] > 0) rowsLit++;
    if (rowsLit >= 50) columnsWithAll++;
  }
  assert.equal(columnsWithAll, 1000);
});

test('outlier elimination: 1% cuts the y range below 10 huge values out of 1000', () => {
  const values = [];
  for (let i = 0; i < 990; i++) values.push(1000 + (i % 50));
  for (let i = 0; i < 10; i++) values.push(5_000_000);
  const heat = heatOf([values]);
  const counts = bucketCounts(heat, null, 0, 1);
  const none = cutValue(counts, heat.hi, 0);
  const one = cutValue(counts, heat.hi, 1);
  const five = cutValue(counts, heat.hi, 5);
  assert.ok(none > 5_000_000, `"none" keeps the outliers (top ${none})`);
  assert.ok(one < 1100 && one > 1049, `"1%" ends just above the bulk (top ${one})`);
  assert.ok(five <= one, '5% cuts at least as low as 1%');
  const rNone = heatRange(counts, heat.lo, heat.hi, 'ns', 0, 0);
  const rOne = heatRange(counts, heat.lo, heat.hi, 'ns', 1, 0);
  assert.ok(rNone.ymax >= 5_000_000);
  assert.ok(rOne.ymax < 5_000_000 && rOne.ymax >= 1049, `axis top ${rOne.ymax}`);
  // 0.1% of 1000 is one I/O: the ten outliers stay in range
  assert.ok(cutValue(counts, heat.hi, 0.1) > 5_000_000);
});

test('vertical zoom halves the log span and keeps the bottom', () => {
  const heat = heatOf([[1000, 1_000_000]]);
  const counts = bucketCounts(heat, null, 0, 1);
  const r0 = heatRange(counts, heat.lo, heat.hi, 'ns', 0, 0);
  const r1 = heatRange(counts, heat.lo, heat.hi, 'ns', 0, 1);
  assert.equal(r1.ymin, r0.ymin);
  assert.ok(Math.abs(Math.log(r1.ymax / r1.ymin) - Math.log(r0.ymax / r0.ymin) / 2) < 1e-9);
});

test('a single bucket becomes a band, not the whole height', () => {
  const heat = heatOf([[4096, 4096, 4096]]);
  const r = heatRange(bucketCounts(heat, null, 0, 1), heat.lo, heat.hi, 'bytes', 0, 0);
  assert.ok(r.ymin <= 2048 && r.ymax >= 8192, `range ${r.ymin}..${r.ymax}`);
});

test('the fixture: visible seconds, totals per op, and highlight layers', () => {
  const heat = prepareHeat(fixture('heatmap-latency-by-op.json'));
  assert.deepEqual(indexRange(heat.seconds, 1, 4), [1, 5]);
  assert.deepEqual(indexRange(heat.seconds, 10, 20), [6, 6]);
  const totals = keyTotals(heat, 0, 6);
  assert.deepEqual(totals, [{ key: 'read', count: 1810 }, { key: 'write', count: 170 }]);
  assert.deepEqual(keyTotals(heat, 4, 5), [{ key: 'read', count: 400 }, { key: 'write', count: 50 }]);
  // read highlighted, write in the grey layer: separate grids
  const h = 120;
  const counts = bucketCounts(heat, null, 0, 6);
  const r = heatRange(counts, heat.lo, heat.hi, 'ns', 0, 0);
  const rows = bucketRows(heat.lo, heat.hi, logScale(r.ymin, r.ymax, h), h);
  const acc = accumulate(heat, [new Set(['read']), null], 0, 6, columnBins(0, 5, 60), rows, h);
  const readSum = acc.grids[0].reduce((a, b) => a + b, 0);
  const writeSum = acc.grids[1].reduce((a, b) => a + b, 0);
  assert.ok(readSum >= 1810, 'every read is in the highlighted layer');
  assert.ok(writeSum >= 170 && acc.grids[1][0 * h + rows.top[5]] === 0, 'writes only in the grey layer');
});

test('values at the cursor: bucket ranges with counts, highest first', () => {
  const heat = prepareHeat(fixture('heatmap-latency-by-op.json'));
  const at0 = valuesAt(heat, null, 0, 1);
  assert.deepEqual(at0.map((v) => [v.lo, v.count]), [[4_194_304, 1], [1032, 99], [1024, 200], [64, 10], [58, 20]]);
  const readOnly = valuesAt(heat, new Set(['read']), 1, 2);
  assert.deepEqual(readOnly.map((v) => [v.lo, v.hi, v.count]), [[999_424, 1_003_519, 4], [1032, 1039, 96], [1024, 1031, 300]]);
  assert.deepEqual(valuesAt(heat, null, 3, 4), [], 'an idle second lists nothing');
});

test('live updates merge newer seconds and new buckets', () => {
  const a = prepareHeat(fixture('heatmap-latency-by-op.json'));
  const add = {
    stat: 'latency', unit: 'ns', by: 'op', where: '', from: 5, to: 6, relative_error: 0.0039,
    seconds: [5, 6], buckets: [[512, 515], [1024, 1031]],
    series: [{ key: 'read', total: 3, columns: [[1, 1], [0, 2]] }],
  };
  const m = mergeHeat(a, add);
  assert.deepEqual(m.seconds, [0, 1, 2, 3, 4, 5, 6]);
  assert.equal(m.buckets[0][0], 58);
  assert.ok(m.buckets.some((b) => b[0] === 512));
  const at6 = valuesAt(m, null, 6, 7);
  assert.deepEqual(at6.map((v) => [v.lo, v.count]), [[512, 2]]);
  const at5 = valuesAt(m, null, 5, 6);
  assert.deepEqual(at5.map((v) => [v.lo, v.count]), [[1024, 1]], 'second 5 replaced by the newer answer');
  assert.deepEqual(valuesAt(m, null, 0, 1).map((v) => v.count), [1, 99, 200, 10, 20], 'older seconds kept');
});

test('the column under the cursor names the seconds summed into it', async () => {
  const { binSeconds, columnBins: cb } = await import('../../crates/web/assets/histo.js');
  assert.deepEqual(binSeconds(0, 9, 100, 4), [4, 4], 'zoomed in: one second');
  const [a, b] = binSeconds(0, 3599, 900, 10);
  assert.deepEqual([a, b], [8, 11], 'four seconds per column');
  const bins = cb(0, 3599, 900);
  for (let s = a; s <= b; s++) assert.equal(bins.binOf(s), bins.binOf(10));
  assert.notEqual(bins.binOf(a - 1), bins.binOf(10));
  assert.notEqual(bins.binOf(b + 1), bins.binOf(10));
});

test('a linear offset axis ends at a round binary size just above the data', async () => {
  const { heatRangeLinear } = await import('../../crates/web/assets/histo.js');
  const hi = Float64Array.from([7 * 2 ** 20 - 1]);
  assert.deepEqual(heatRangeLinear(Float64Array.from([5]), hi, 'bytes', 0, 0), { ymin: 0, ymax: 7 * 2 ** 20 });
  const g4 = Float64Array.from([2 ** 32 - 1]);
  assert.deepEqual(heatRangeLinear(Float64Array.from([5]), g4, 'bytes', 0, 0), { ymin: 0, ymax: 2 ** 32 });
  assert.equal(heatRangeLinear(Float64Array.from([5]), g4, 'bytes', 0, 1).ymax, 2 ** 31, 'zoomed in once: half');
});

test('offset 0 is drawn (a log axis starts at 1, a linear one at 0)', async () => {
  const { heatRangeLinear, linScale } = await import('../../crates/web/assets/histo.js');
  const heat = prepareHeat(fixture('heatmap-offset.json'));
  const counts = bucketCounts(heat, null, 0, 3);
  const log = heatRange(counts, heat.lo, heat.hi, 'bytes', 0, 0);
  assert.ok(log.ymin >= 1 && log.ymin <= 1, `log axis from ${log.ymin}`);
  const rowsLog = bucketRows(heat.lo, heat.hi, logScale(log.ymin, log.ymax, 100), 100);
  assert.equal(rowsLog.bot[0], 99, 'offset 0 sits on the bottom row of a log axis');
  const lin = heatRangeLinear(counts, heat.hi, 'bytes', 0, 0);
  assert.equal(lin.ymin, 0);
  const rowsLin = bucketRows(heat.lo, heat.hi, linScale(lin.ymin, lin.ymax, 100), 100);
  assert.equal(rowsLin.bot[0], 99, 'and of a linear one');
  assert.equal(lin.ymax, 640 * 2 ** 20, 'the next 128 MiB step above the 516 MiB top');
  assert.equal(rowsLin.top[4], 19, 'the 512-516 MiB bucket a fifth of the way down');
});

// Rows of a one-column heat map: the count each pixel row got, for the range [ymin, ymax].
async function rowCounts(heat, ymin, ymax, h) {
  const rows = bucketRows(heat.lo, heat.hi, logScale(ymin, ymax, h), h);
  const acc = accumulate(heat, [null], 0, heat.seconds.length, columnBins(0, heat.seconds.length - 1, 1), rows, h);
  return { grid: acc.grids[0], rows };
}

test('a dense band fills every pixel row between its lowest and highest bucket, evenly', async () => {
  // One I/O at every 8th ns from 20 µs to 40 µs: a band dense in every fine bucket.
  const vs = [];
  for (let v = 20_000; v < 40_000; v += 8) vs.push(v);
  const heat = heatOf([vs]);
  const h = 260;
  // Zoomed out (buckets thinner than a row), zoomed in (each bucket several rows), and the
  // zoom where buckets are about a row tall (where rows once got one or two buckets).
  for (const [ymin, ymax] of [[1, 1e9], [1e4, 1e6], [19_000, 41_000], [15_000, 50_000]]) {
    const { grid, rows } = await rowCounts(heat, ymin, ymax, h);
    let rTop = h;
    let rBot = -1;
    for (let b = 0; b < heat.lo.length; b++) {
      if (rows.top[b] < 0) continue;
      rTop = Math.min(rTop, rows.top[b]);
      rBot = Math.max(rBot, rows.bot[b]);
    }
    const empty = [];
    for (let r = rTop; r <= rBot; r++) if (!(grid[r] > 0)) empty.push(r);
    assert.deepEqual(empty, [], `range ${ymin}..${ymax}: rows ${rTop}..${rBot} without counts: ${empty}`);
    // No invented structure: inside the band (its edge rows are partly covered), adjacent
    // rows differ by no more than the band's own slope, not by a factor of two.
    const inTop = rows.bot[heat.lo.length - 1] + 1;
    const inBot = rows.top[0] - 1;
    for (let r = inTop; r < inBot; r++) {
      const q = grid[r] / grid[r + 1];
      assert.ok(q > 0.8 && q < 1.25, `range ${ymin}..${ymax}: rows ${r} and ${r + 1} hold ${grid[r]} and ${grid[r + 1]}`);
    }
    // And nothing is lost or counted twice: the rows hold every I/O.
    const sum = grid.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - vs.length) < 1e-6, `range ${ymin}..${ymax}: rows hold ${sum} of ${vs.length}`);
  }
});

test('vertical zoom-out stops at 1 ns .. the largest latency rounded up', async () => {
  const { valueBounds } = await import('../../crates/web/assets/histo.js');
  const heat = heatOf([[1000, 2000, 900_000]]);
  const counts = bucketCounts(heat, null, 0, 1);
  const b = valueBounds(counts, heat.lo, heat.hi, 'ns', 'log');
  assert.deepEqual(b, { min: 1, max: 1_000_000 });
  for (const vz of [-1, -2, -6]) {
    const r = heatRange(counts, heat.lo, heat.hi, 'ns', 0, vz);
    assert.ok(r.ymin >= 1 && r.ymax <= 1_000_000 * (1 + 1e-9), `vz ${vz}: ${r.ymin}..${r.ymax}`);
  }
  const far = heatRange(counts, heat.lo, heat.hi, 'ns', 0, -6);
  assert.ok(Math.abs(far.ymin - 1) < 1e-9 && Math.abs(far.ymax - 1e6) < 1e-3, 'fully out: the whole bounds');
  // Zooming in stops at a span of 10%.
  const deep = heatRange(counts, heat.lo, heat.hi, 'ns', 0, 12);
  assert.ok(deep.ymax / deep.ymin >= 1.1 - 1e-9, `deepest zoom ${deep.ymin}..${deep.ymax}`);
});

test('vertical zoom of a linear offset axis stays within 0 .. the largest offset', async () => {
  const { heatRangeLinear } = await import('../../crates/web/assets/histo.js');
  const hi = Float64Array.from([7 * 2 ** 20 - 1]);
  const counts = Float64Array.from([5]);
  for (const vz of [-1, -3]) assert.deepEqual(heatRangeLinear(counts, hi, 'bytes', 0, vz), { ymin: 0, ymax: 7 * 2 ** 20 });
  const r = heatRangeLinear(counts, hi, 'bytes', 0, 0, [2 ** 20, 3 * 2 ** 20]);
  assert.deepEqual(r, { ymin: 2 ** 20, ymax: 3 * 2 ** 20 }, 'a low/high pick sets the range');
  const past = heatRangeLinear(counts, hi, 'bytes', 0, 0, [6 * 2 ** 20, 40 * 2 ** 20]);
  assert.ok(past.ymax <= 7 * 2 ** 20 && past.ymin >= 0, `a pick past the top is clamped: ${past.ymin}..${past.ymax}`);
});

test('a low/high pick sets a log y range, clamped to the bounds', () => {
  const heat = heatOf([[1000, 2000, 900_000]]);
  const counts = bucketCounts(heat, null, 0, 1);
  const pick = heatRange(counts, heat.lo, heat.hi, 'ns', 0, 0, [1000, 5000]);
  assert.ok(Math.abs(pick.ymin - 1000) < 1e-6 && Math.abs(pick.ymax - 5000) < 1e-6, `${pick.ymin}..${pick.ymax}`);
  const r = heatRange(counts, heat.lo, heat.hi, 'ns', 0, 0, [0, 1e12]);
  assert.ok(Math.abs(r.ymin - 1) < 1e-9 && Math.abs(r.ymax - 1e6) < 1e-3, `${r.ymin}..${r.ymax}`);
});

test('the side panel groups the I/O at the cursor into coarse ranges with cumulative shares', async () => {
  const { coarseEdges, coarseRanges } = await import('../../crates/web/assets/histo.js');
  assert.deepEqual(coarseEdges('ns', 'log', 300).slice(0, 8), [0, 1, 2, 5, 10, 20, 50, 100]);
  assert.equal(coarseEdges('ns', 'log', 300).at(-1), 500);
  assert.deepEqual(coarseEdges('bytes', 'log', 5000).slice(-3), [2048, 4096, 8192]);
  assert.deepEqual(coarseEdges('bytes', 'lin', 8 * 2 ** 20).slice(0, 3), [0, 2 ** 20, 2 * 2 ** 20]);
  // 90 I/O at 30-45 µs, 9 at 60 µs, 1 at 3 ms.
  const vs = [];
  for (let i = 0; i < 90; i++) vs.push(30_000 + i * 160);
  for (let i = 0; i < 9; i++) vs.push(60_000);
  vs.push(3_000_000);
  const heat = heatOf([vs]);
  const { total, ranges } = coarseRanges(heat, null, 0, 1, coarseEdges('ns', 'log', 3_000_000));
  assert.equal(total, 100);
  assert.deepEqual(ranges.map((r) => [r.lo, r.hi, r.count, Math.round(r.cum)]), [
    [20_000, 50_000, 90, 90], [50_000, 100_000, 9, 99], [2_000_000, 5_000_000, 1, 100],
  ]);
  assert.equal(ranges[0].buckets.reduce((a, b) => a + b.count, 0), 90, 'expandable into its fine buckets');
  assert.ok(ranges[0].buckets.every((b, i, a) => i === 0 || a[i - 1].lo < b.lo), 'fine buckets fastest first');
});
