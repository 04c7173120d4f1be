// Line and stacked charts as a user reads them on a stepped run with a probe: each second
// drawn flat across its own width (no ramps, no blank half-seconds at the ends), a
// highlighted stack with nothing clipped above it, every step (step 0 too), the probe and
// the knee labelled, the side panel's average of a step equal to the step table's, and
// the compare view's summaries within their half width. Screenshots: $IOSCOPE_SCREENSHOTS.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ioscope, serve, launch, open, drawn, pixels, tmpdir, SHOTS } from './harness.mjs';

let dir;
let server;
let browser;
before(async () => {
  dir = tmpdir();
  // Three steps of 3 s (the first second of each is warm-up), a probe at 4 s.
  writeFileSync(path.join(dir, 'stair.toml'), [
    'engine = "posix"', 'rw = "randrw"', 'rwmix_read = 70', 'bs = "4k"', 'size = "8m"',
    `dir = "${path.join(dir, 'data')}"`, 'rate_iops = 3000', 'staircase = "1-3/3s"', 'warmup = "1s"',
    '[[probe]]', 'name = "sync"', 'command = "true"', 'at = "4s"', '',
  ].join('\n'));
  ioscope(['run', path.join(dir, 'stair.toml'), '--quiet', '--out', path.join(dir, 'stair.db')]);
  ioscope(['run', '--engine', 'null', '--size', '8m', '--rw', 'randrw', '--threads', '2', '--duration', '3s',
    '--quiet', '--out', path.join(dir, 'null.db')]);
  server = await serve(['ui', path.join(dir, 'stair.db'), path.join(dir, 'null.db'), '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

const BGS = [[12, 15, 20], [24, 27, 35]];
// How far a pixel is from the plot's backgrounds (plain and warm-up).
const offBg = (p) => Math.min(...BGS.map((b) => Math.max(...b.map((v, i) => Math.abs(v - p[i])))));

// The topmost row of column x (plot coordinates) filled by a drawn area.
async function topOf(page, index, x, height) {
  const col = await pixels(page, index, Array.from({ length: height - 1 }, (_, y) => [x, y + 1]));
  const y = col.findIndex((p) => offBg(p) > 60);
  return y < 0 ? null : y + 1;
}

test('per-second values are steps across their whole second, the ends included', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=ops,by=op,kind=stacked&c=latency,by=op,kind=percentiles`);
  await page.screenshot({ path: path.join(SHOTS, 'steps.png'), fullPage: true });
  const [ops] = await drawn(page);
  const { plot, from, to } = ops.drawn;
  const w = plot.width / (to + 1 - from);
  // Within second 1 (measured, away from step lines) the top of the stack is one row.
  const tops = [];
  for (const f of [0.2, 0.5, 0.8]) tops.push(await topOf(page, 0, Math.round((1 - from + f) * w), plot.height));
  assert.ok(tops.every((t) => t != null && Math.abs(t - tops[1]) <= 1), `flat across second 1: ${tops}`);
  // The first and the last seconds are drawn whole: near both edges the area is there.
  const edges = await pixels(page, 0, [[2, plot.height - 3], [plot.width - 3, plot.height - 3]]);
  assert.ok(edges.every((p) => offBg(p) > 60), `first and last half-seconds filled: ${JSON.stringify(edges)}`);
  assert.deepEqual(errors, []);
});

test('a highlighted stack draws the highlighted values alone, nothing clipped above them', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=ops,by=op,kind=stacked,hl=write`);
  await page.screenshot({ path: path.join(SHOTS, 'stack-highlight.png') });
  const [ops] = await drawn(page);
  assert.equal(ops.drawn.series, 1, 'only write is drawn (the axis is scaled to it)');
  const { plot, from, to } = ops.drawn;
  const w = plot.width / (to + 1 - from);
  for (const s of [1, 4, 7]) {
    const x = Math.round((s - from + 0.5) * w);
    const top = await topOf(page, 0, x, plot.height);
    assert.ok(top != null, `second ${s}: write drawn`);
    // Above the write layer: background and grid lines only (a dimmed read layer clipped
    // at the top of the plot would tint it).
    const above = await pixels(page, 0, Array.from({ length: Math.max(0, top - 16) }, (_, y) => [x, y + 14]));
    assert.ok(above.every((p) => offBg(p) < 20), `second ${s}: nothing above the highlight: ${JSON.stringify(above.find((p) => offBg(p) >= 20))}`);
  }
  assert.deepEqual(errors, []);
});

test('every step is labelled (step 0 too), the probe is named and the knee is marked', async () => {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
  // The summary of this short run finds no knee: the test gives it one at step 1.
  await page.route('**/api/v1/runs/0', async (route) => {
    const res = await route.fetch();
    const body = await res.json();
    body.summary.knee = { step: 1, label: 'threads=2', reason: 'for the test' };
    await route.fulfill({ response: res, json: body });
  });
  await page.goto(`${server.url}#run=0&c=ops,by=op,kind=stacked&c=latency,kind=heatmap`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.screenshot({ path: path.join(SHOTS, 'step-labels.png') });
  for (const c of await drawn(page)) {
    const steps = c.drawn.labels.steps;
    assert.deepEqual(steps.map((s) => s.step), [0, 1, 2], `${c.stat}: ${JSON.stringify(steps)}`);
    assert.equal(steps[0].second, c.drawn.from, 'step 0 labelled at the left edge');
    assert.match(steps[0].text, /^step 0 · threads=1\b/);
    const knee = steps.filter((s) => s.knee);
    assert.deepEqual(knee.map((s) => s.step), [1]);
    assert.match(knee[0].text, /^knee · step 1 · threads=2\b/);
    assert.deepEqual(c.drawn.labels.probes.map((p) => p.name), ['sync']);
  }
  await page.close();
});

test('the side panel averages each step over its own measured seconds, as the step table does', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=ops,by=step,kind=stacked`);
  const side = await page.$$eval('section.chart li[data-key]', (els) => els.map((e) => [e.dataset.key, Number(e.querySelector('.v').textContent.replace(/,/g, ''))]));
  const table = await page.evaluate(async () => (await (await fetch('/api/v1/runs/0')).json()).summary.steps.map((s) => [String(s.index), s.iops]));
  assert.equal(side.length, 3);
  for (const [k, v] of side) {
    const [, iops] = table.find((t) => t[0] === k);
    assert.ok(Math.abs(v - iops) <= iops * 0.01 + 1, `step ${k}: side panel ${v}, step table ${iops}`);
  }
  assert.deepEqual(errors, []);
});

test('compare: each summary fits its half of the page', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&cmp=1&c=ops,by=op,kind=stacked`);
  await page.screenshot({ path: path.join(SHOTS, 'compare-summary.png'), fullPage: true });
  const fits = await page.$$eval('.panel[data-panel="summary"] .summary-block', (els) => els.map((e) => {
    const t = e.querySelector('.table-scroll');
    return [e.getBoundingClientRect().width, t.scrollWidth, t.clientWidth];
  }));
  assert.equal(fits.length, 2);
  for (const [w, scroll, client] of fits) {
    assert.ok(w < 720, `half width: ${w}`);
    assert.ok(scroll <= client, `the table fits: ${scroll} > ${client}`);
  }
  assert.deepEqual(errors, []);
});
