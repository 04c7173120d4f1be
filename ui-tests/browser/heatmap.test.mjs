// Heat maps read as numbers: every view of a second counts the same I/O, a compare view's
// legend tells the colours of both panes, and the side panel (pinned by a click) and the
// vertical zoom stay within what the data holds. Two runs made by the real binary.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { ioscope, serve, launch, open, ready, drawn, tmpdir, SHOTS } from './harness.mjs';
import { HEAT_LUT, rampIndex } from '../../crates/web/assets/color.js';

let dir;
let server;
let browser;
before(async () => {
  dir = tmpdir();
  const run = (name, iops) => ioscope(['run', '--engine', 'null', '--size', '16m', '--rw', 'randrw', '--bs', '4k:80,64k:20',
    '--threads', '2', '--rate-iops', String(iops), '--duration', '6s', '--quiet', '--out', path.join(dir, `${name}.db`)]);
  // Forty times apart, so that the busy run stays the denser however a loaded machine spreads its latencies.
  run('busy', 4000);
  run('quiet', 100);
  server = await serve(['ui', path.join(dir, 'busy.db'), path.join(dir, 'quiet.db'), '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// RGB at plot point [x, y] (CSS pixels) of pane `which` (0: canvas.plot, 1: the compare pane).
async function pixelAt(page, chart, which, [x, y]) {
  return page.$$eval('section.chart', (els, [i, w, px, py]) => {
    const canvas = els[i].querySelector(w === 0 ? 'canvas.plot' : 'canvas.plot-compare');
    const d = JSON.parse(w === 0 ? els[i].dataset.drawn : els[i].dataset.drawnCompare);
    const scale = canvas.width / canvas.getBoundingClientRect().width;
    const p = canvas.getContext('2d').getImageData(Math.floor((d.plot.x + px) * scale), Math.floor((d.plot.y + py) * scale), 1, 1).data;
    return [p[0], p[1], p[2]];
  }, [chart, which, x, y]);
}

const near = (a, b, tol) => a.every((v, i) => Math.abs(v - b[i]) <= tol);

test('the ops chart, the latency heat map and the offset heat map count the same I/O every second', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0`);
  const cs = await drawn(page);
  assert.deepEqual(cs.map((c) => [c.stat, c.kind]), [['ops', 'stacked'], ['latency', 'heatmap'], ['offset', 'heatmap']]);
  const lat = cs[1].drawn;
  const off = cs[2].drawn;
  // The ops chart's numbers: the API answer the page drew it from (every op summed).
  const ops = await page.evaluate(async () => {
    const r = await (await fetch('/api/v1/runs/0/series?stat=ops&by=op')).json();
    const out = {};
    r.seconds.forEach((s, i) => {
      out[s] = r.series.reduce((a, x) => a + (x.values[i] || 0), 0);
    });
    return out;
  });
  assert.equal(lat.to - lat.from + 1, lat.columns.length, 'one heat-map column per second');
  const rows = [];
  for (let s = lat.from; s <= lat.to; s++) {
    const k = s - lat.from;
    rows.push(`${s}: ops ${ops[s]} latency ${lat.columns[k]} offset ${off.columns[k]}`);
  }
  for (let s = lat.from; s <= lat.to; s++) {
    const k = s - lat.from;
    assert.ok(ops[s] > 0, `second ${s} has I/O`);
    assert.ok(Math.abs(lat.columns[k] - ops[s]) < 0.01 && Math.abs(off.columns[k] - ops[s]) < 0.01, `second ${s} disagrees:\n${rows.join('\n')}`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test("a compare view colours both panes on its legend's scale (the densest cell of each)", async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&cmp=1&c=latency,kind=heatmap`);
  await page.screenshot({ path: path.join(SHOTS, 'heatmap-compare.png'), fullPage: true });
  const info = await page.$eval('section.chart', (e) => ({ a: JSON.parse(e.dataset.drawn), b: JSON.parse(e.dataset.drawnCompare) }));
  const legend = await page.$$eval('section.chart .chart-legend .lg-n', (els) => els.map((e) => e.textContent));
  const top = Number(/^([\d,]+) I\/O per cell/.exec(legend[1])[1].replace(/,/g, ''));
  assert.equal(legend[0], '1');
  assert.ok(info.a.ownMax > 4 * info.b.ownMax, `the busy run is the denser: ${info.a.ownMax} vs ${info.b.ownMax}`);
  assert.ok(Math.abs(top - Math.max(info.a.ownMax, info.b.ownMax)) <= 0.5, `the legend's top ${top} is the denser pane's densest cell`);
  const lut = (i) => [HEAT_LUT[i * 4], HEAT_LUT[i * 4 + 1], HEAT_LUT[i * 4 + 2]];
  for (const [which, d] of [[0, info.a], [1, info.b]]) {
    const want = lut(rampIndex(d.ownMax, top));
    const got = await pixelAt(page, 0, which, [d.maxAt.x, d.maxAt.y]);
    assert.ok(near(got, want, 6), `pane ${which ? 'B' : 'A'}: densest cell (${d.ownMax.toFixed(1)} I/O) drawn ${got}, the legend says ${want}`);
  }
  // The quiet pane's densest cell is far from the legend's top colour.
  const quiet = await pixelAt(page, 0, 1, [info.b.maxAt.x, info.b.maxAt.y]);
  assert.ok(!near(quiet, lut(255), 40), `B's densest cell ${quiet} is not drawn as hot as A's`);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a click pins the side panel at a second: coarse ranges with cumulative shares, Esc unpins', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=latency,by=op,kind=heatmap`);
  const chart = page.locator('section.chart').first();
  let [c] = await drawn(page);
  const box = await chart.locator('canvas.plot').boundingBox();
  const xAt = (s) => box.x + c.drawn.plot.x + (c.drawn.plot.width * (s - c.drawn.from + 0.5)) / (c.drawn.to - c.drawn.from + 1);
  const y = box.y + c.drawn.plot.y + c.drawn.plot.height / 2;
  await page.mouse.click(xAt(3), y);
  await ready(page);
  assert.match(page.url(), /pin=3/, 'the pinned second is in the link');
  [c] = await drawn(page);
  assert.deepEqual(c.drawn.pin, [3, 3], 'and marked on the chart');
  // The cursor moves on; the panel stays at 0:03.
  await page.mouse.move(xAt(1), y);
  const panel = chart.locator('.hover-list');
  assert.equal(await panel.getAttribute('data-pinned'), '3');
  assert.match(await panel.locator('.hv-head').first().textContent(), /^0:03/);
  const api = await page.evaluate(async () => {
    const r = await (await fetch('/api/v1/runs/0/heatmap?stat=latency&by=op&from=3&to=3')).json();
    return r.series.reduce((a, s) => a + (s.columns[0] || []).reduce((b, v, i) => (i % 2 ? b + v : b), 0), 0);
  });
  const total = Number(await panel.locator('.hv-head .tot').getAttribute('data-total'));
  assert.equal(total, api, 'the column total is the API answer for that second');
  const ranges = await panel.locator('.hv-range').evaluateAll((els) => els.map((e) => ({ lo: Number(e.dataset.lo), count: Number(e.dataset.count), cum: e.querySelector('.cum').textContent })));
  assert.ok(ranges.length >= 2, `${ranges.length} coarse ranges`);
  assert.equal(ranges.reduce((a, r) => a + r.count, 0), total, 'the ranges add up to the column');
  assert.ok(ranges.every((r, i) => i === 0 || ranges[i - 1].lo < r.lo), 'fastest first');
  assert.equal(ranges[ranges.length - 1].cum, '100.0%');
  // Expand the largest range into its buckets; they add up to it.
  const big = ranges.reduce((a, r, i) => (r.count > ranges[a].count ? i : a), 0);
  await panel.locator('.hv-range').nth(big).click();
  const fine = await panel.locator('.hv-fine').evaluateAll((els) => els.map((e) => Number(e.dataset.count)));
  assert.equal(fine.reduce((a, b) => a + b, 0), ranges[big].count);
  await page.screenshot({ path: path.join(SHOTS, 'heatmap-pinned.png') });
  // Scrolled, the panel stays where it was while the cursor moves over other seconds.
  await panel.evaluate((e) => { e.scrollTop = 40; });
  await page.mouse.move(xAt(4), y);
  await page.mouse.move(xAt(5), y);
  assert.equal(await panel.evaluate((e) => e.scrollTop), 40, 'a pinned panel keeps its scroll position');
  await page.keyboard.press('Escape');
  await ready(page);
  assert.doesNotMatch(page.url(), /pin=/, 'Esc unpins');
  assert.equal(await panel.getAttribute('data-pinned'), null);
  assert.deepEqual(errors, []);
  await page.close();
});

test('vertical zoom stays within the values the data holds, and a coarse range sets the y range', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=latency,kind=heatmap,pin=2`);
  const [first] = await drawn(page);
  const maxNs = await page.evaluate(async () => {
    const r = await (await fetch('/api/v1/runs/0/heatmap?stat=latency')).json();
    return Math.max(...r.buckets.map((b) => b[1] + 1));
  });
  const chart = page.locator('section.chart').first();
  for (let i = 0; i < 2; i++) {
    const out = chart.locator('[data-action="vzoom-out"]');
    if (await out.isDisabled()) break;
    await out.click();
    await ready(page);
  }
  const [c] = await drawn(page);
  assert.ok(c.drawn.ymin >= 1 && c.drawn.ymax <= Math.max(first.drawn.ymax, 10 * maxNs), `two zoom-outs: ${c.drawn.ymin}..${c.drawn.ymax} ns for data up to ${maxNs} ns`);
  assert.ok(await chart.locator('[data-action="vzoom-out"]').isDisabled(), 'zoom-out stops at the bounds');
  // The side panel's zoom on a coarse range: the axis shows that range.
  const range = chart.locator('.hv-range').first();
  const [lo, hi] = [Number(await range.getAttribute('data-lo')), Number(await range.getAttribute('data-hi'))];
  await range.locator('[data-action="yzoom"]').click();
  await ready(page);
  const [z] = await drawn(page);
  assert.match(page.url(), /yr=\d+-\d+/);
  assert.ok(Math.abs(z.drawn.ymin - Math.max(1, lo)) < 1e-6 * hi && Math.abs(z.drawn.ymax - hi) < 1e-6 * hi, `y ${z.drawn.ymin}..${z.drawn.ymax} for ${lo}..${hi}`);
  await page.screenshot({ path: path.join(SHOTS, 'heatmap-zoomed.png') });
  // A low and a high pick among the fine buckets: zoom to the fastest bucket, then
  // shift-zoom to the slowest one; the axis spans from the one to the other.
  const ranges = chart.locator('.hv-range');
  await ranges.first().click();
  await ranges.last().click();
  const low = chart.locator('.hv-fine').first();
  const lowLo = Number(await low.getAttribute('data-lo'));
  await low.locator('[data-action="yzoom"]').click();
  await ready(page);
  const high = chart.locator('.hv-fine').last();
  const highHi = Number(await high.getAttribute('data-hi'));
  await high.locator('[data-action="yzoom"]').click({ modifiers: ['Shift'] });
  await ready(page);
  const [lh] = await drawn(page);
  assert.ok(Math.abs(lh.drawn.ymin - Math.max(1, lowLo)) < 1e-6 * highHi && Math.abs(lh.drawn.ymax - (highHi + 1)) < 1e-6 * highHi,
    `low/high pick: y ${lh.drawn.ymin}..${lh.drawn.ymax} for ${lowLo}..${highHi + 1}`);
  await chart.locator('[data-action="vzoom-reset"]').click();
  await ready(page);
  const [back] = await drawn(page);
  assert.deepEqual([back.drawn.ymin, back.drawn.ymax], [first.drawn.ymin, first.drawn.ymax]);
  assert.deepEqual(errors, []);
  await page.close();
});
