// The seeds' drill-down, end to end on a real run: operations by op -> op = write ->
// the latency heat map of those writes -> broken down by file; then the side panel,
// pinned at a second, is read against the API's heat-map answer for that second.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { ioscope, serve, launch, open, ready, drawn, tmpdir, SHOTS } from './harness.mjs';

let dir;
let server;
let browser;
before(async () => {
  dir = tmpdir();
  ioscope(['run', '--engine', 'posix', '--dir', path.join(dir, 'data'), '--size', '16m', '--files', '4',
    '--rw', 'randrw', '--rwmix-read', '60', '--bs', '4k', '--threads', '2', '--rate-iops', '2000',
    '--duration', '6s', '--quiet', '--out', path.join(dir, 'files.db')]);
  server = await serve(['ui', path.join(dir, 'files.db'), '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Select `key` in the side panel of the chart matching `sel` and open its drill menu.
async function drillMenu(page, sel, key) {
  const chart = page.locator(sel);
  await chart.locator(`li[data-key="${key}"]`).click();
  await ready(page);
  await chart.locator(`li[data-key="${key}"] [data-action="drill"]`).click();
  return page.locator('.drill-menu');
}

test('drill ops -> op = write -> latency heat map -> by file, and read the pinned panel against the API', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=ops,by=op,kind=stacked`);
  // 1. Operations by op; select write and drill into the latency of just those writes.
  let menu = await drillMenu(page, 'section.chart[data-stat="ops"]', 'write');
  const latencyItem = menu.locator('[data-action="drill-by"][data-stat="latency"][data-dim=""]');
  if (await latencyItem.count()) {
    await latencyItem.first().click();
  } else {
    // A drill menu that offers only counters: the same step through the link's state.
    await page.keyboard.press('Escape');
    await page.evaluate(() => { location.hash += '&c=latency,where=op:write,kind=heatmap'; });
  }
  await ready(page);
  const heatSel = 'section.chart[data-stat="latency"][data-where="op:write"][data-by=""]';
  await page.locator(heatSel).waitFor();
  let cs = await drawn(page);
  const whole = cs.find((c) => c.stat === 'latency' && c.where === 'op:write' && c.by === '');
  assert.equal(whole.kind, 'heatmap');
  assert.ok(whole.drawn.cells > 20, `the writes' latency heat map is drawn: ${JSON.stringify(whole.drawn)}`);

  // 2. That heat map, broken down by file.
  const keys = await page.$$eval(`${heatSel} li[data-key]`, (els) => els.map((e) => e.dataset.key));
  menu = await drillMenu(page, heatSel, keys[0]);
  await menu.locator('[data-action="drill-by"][data-dim="file"]').first().click();
  await ready(page);
  const fileSel = 'section.chart[data-stat="latency"][data-where="op:write"][data-by="file"]';
  await page.locator(fileSel).waitFor();
  cs = await drawn(page);
  const byFile = cs.find((c) => c.stat === 'latency' && c.where === 'op:write' && c.by === 'file');
  assert.equal(byFile.kind, 'heatmap');
  assert.equal(byFile.drawn.series, 4, 'one series per file');
  const files = await page.$$eval(`${fileSel} li[data-key]`, (els) => els.map((e) => e.dataset.key));
  assert.deepEqual(files.sort(), ['ioscope.0.dat', 'ioscope.1.dat', 'ioscope.2.dat', 'ioscope.3.dat']);

  // 3. Pin its side panel at second 3 with a click, highlight one file, and read the panel.
  const chart = page.locator(fileSel);
  await chart.locator('li[data-key="ioscope.2.dat"]').click();
  await ready(page);
  const d = (await drawn(page)).find((c) => c.by === 'file').drawn;
  const box = await chart.locator('canvas.plot').boundingBox();
  const x = box.x + d.plot.x + (d.plot.width * (3 - d.from + 0.5)) / (d.to - d.from + 1);
  await page.mouse.click(x, box.y + d.plot.y + d.plot.height / 2);
  await ready(page);
  const panel = chart.locator('.hover-list');
  assert.equal(await panel.getAttribute('data-pinned'), '3');
  await page.mouse.move(box.x + d.plot.x + 5, box.y + d.plot.y + 5);
  const api = await page.evaluate(async () => {
    const r = await (await fetch('/api/v1/runs/0/heatmap?stat=latency&by=file&where=op:write&from=3&to=3')).json();
    const s = r.series.find((x) => x.key === 'ioscope.2.dat');
    const out = new Map();
    const col = (s && s.columns[0]) || [];
    for (let j = 0; j + 1 < col.length; j += 2) out.set(r.buckets[col[j]][0], col[j + 1]);
    return [...out];
  });
  const apiTotal = api.reduce((a, [, n]) => a + n, 0);
  assert.ok(apiTotal > 0, 'writes to that file in second 3');
  const total = Number(await panel.locator('.hv-head .tot').getAttribute('data-total'));
  assert.equal(total, apiTotal, "the pinned panel's total is the highlighted file's writes that second");
  // Every coarse range, expanded, lists the API's buckets with the API's counts.
  const n = await panel.locator('.hv-range').count();
  for (let i = 0; i < n; i++) await panel.locator('.hv-range').nth(i).click();
  const fine = await panel.locator('.hv-fine').evaluateAll((els) => els.map((e) => [Number(e.dataset.lo), Number(e.dataset.count)]));
  assert.deepEqual(fine, api.sort((a, b) => a[0] - b[0]));
  const cum = await panel.locator('.hv-range .cum').allTextContents();
  assert.equal(cum[cum.length - 1], '100.0%');
  await page.screenshot({ path: path.join(SHOTS, 'drill-latency-by-file.png'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});
