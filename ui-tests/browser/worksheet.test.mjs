// A storage engineer's session on a real run: add a latency heat map, drill into writes
// by file, zoom into a time range, share the link; compare two runs; open the report
// with no server. Screenshots go to $IOSCOPE_SCREENSHOTS.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ioscope, serve, launch, open, ready, drawn, tmpdir, SHOTS } from './harness.mjs';

let dir;
let server;
let browser;
before(async () => {
  dir = tmpdir();
  ioscope(['run', '--engine', 'posix', '--dir', path.join(dir, 'data'), '--size', '64m', '--files', '4',
    '--rw', 'randrw', '--rwmix-read', '70', '--bs', '4k:80,64k:20', '--threads', '2', '--rate-iops', '3000',
    '--duration', '10s', '--quiet', '--out', path.join(dir, 'mixed.db')]);
  ioscope(['run', '--engine', 'posix', '--dir', path.join(dir, 'data'), '--size', '64m', '--files', '4',
    '--rw', 'randread', '--threads', '2', '--rate-iops', '2000', '--duration', '6s', '--quiet',
    '--out', path.join(dir, 'reads.db')]);
  server = await serve(['ui', path.join(dir, 'mixed.db'), path.join(dir, 'reads.db'), '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

const charts = async (page) => (await drawn(page)).map((c) => ({ ...c, d: c.drawn }));

test('add a latency heat map, drill into writes by file, zoom, and share the view', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=-`);
  assert.equal((await charts(page)).length, 0, 'an empty worksheet');

  // Add statistic: latency, broken down by op, as a heat map.
  await page.click('[data-action="add-stat"]');
  await page.selectOption('select[name="stat"]', 'latency');
  await page.selectOption('select[name="by"]', 'op');
  await page.selectOption('select[name="kind"]', 'heatmap');
  await page.click('[data-action="add-confirm"]');
  await ready(page);
  let cs = await charts(page);
  assert.equal(cs.length, 1);
  assert.deepEqual([cs[0].stat, cs[0].by, cs[0].kind], ['latency', 'op', 'heatmap']);
  assert.equal(cs[0].d.series, 2, 'read and write');
  assert.ok(cs[0].d.cells > 50, `cells drawn: ${cs[0].d.cells}`);
  assert.ok(cs[0].d.ymin > 0 && cs[0].d.ymax > cs[0].d.ymin);

  // Operations by op, stacked; select write and drill down by file.
  await page.click('[data-action="add-stat"]');
  await page.selectOption('select[name="stat"]', 'ops');
  await page.selectOption('select[name="by"]', 'op');
  await page.selectOption('select[name="kind"]', 'stacked');
  await page.click('[data-action="add-confirm"]');
  await ready(page);
  const opsChart = page.locator('section.chart[data-stat="ops"]');
  await opsChart.locator('li[data-key="write"]').click();
  await ready(page);
  await opsChart.locator('li[data-key="write"] [data-action="drill"]').click();
  await page.click('[data-action="drill-by"][data-dim="file"]');
  await ready(page);
  cs = await charts(page);
  const drill = cs.find((c) => c.where === 'op:write' && c.by === 'file');
  assert.ok(drill, `a drill-down chart: ${JSON.stringify(cs.map((c) => [c.stat, c.by, c.where]))}`);
  assert.equal(drill.d.series, 4, 'one series per file');
  const files = await page.$$eval('section.chart[data-where="op:write"] li[data-key]', (els) => els.map((e) => e.dataset.key));
  assert.deepEqual(files.sort(), ['ioscope.0.dat', 'ioscope.1.dat', 'ioscope.2.dat', 'ioscope.3.dat']);
  await page.screenshot({ path: path.join(SHOTS, 'drill-down.png'), fullPage: true });

  // Zoom: drag across the first chart from 20% to 60% of its plot.
  const box = await page.locator('section.chart canvas.plot').first().boundingBox();
  const p = cs[0].d.plot;
  const y = box.y + p.y + p.height / 2;
  await page.mouse.move(box.x + p.x + p.width * 0.2, y);
  await page.mouse.down();
  await page.mouse.move(box.x + p.x + p.width * 0.6, y, { steps: 8 });
  await page.mouse.up();
  await ready(page);
  cs = await charts(page);
  const ranges = new Set(cs.map((c) => `${c.d.from}-${c.d.to}`));
  assert.equal(ranges.size, 1, `one time axis for every chart: ${[...ranges]}`);
  const [from, to] = [cs[0].d.from, cs[0].d.to];
  assert.ok(from >= 1 && to <= 7 && to > from, `zoomed to ${from}-${to} of 0-9`);

  // The link reproduces the view.
  const link = page.url();
  assert.match(link, /t=\d+-\d+/);
  const again = await open(browser, link);
  const cs2 = await charts(again.page);
  assert.deepEqual(cs2.map((c) => [c.stat, c.by, c.where, c.kind, c.d.from, c.d.to]),
    cs.map((c) => [c.stat, c.by, c.where, c.kind, c.d.from, c.d.to]));
  await again.page.close();
  assert.deepEqual(errors, []);
});

test('the default worksheet shows ops by op stacked and latency and offset heat maps', async () => {
  const { page, errors } = await open(browser, `${server.url}`);
  const cs = await charts(page);
  assert.deepEqual(cs.map((c) => [c.stat, c.kind]), [['ops', 'stacked'], ['latency', 'heatmap'], ['offset', 'heatmap']]);
  for (const c of cs) assert.ok(c.d.series >= 1 && c.d.to === 9, JSON.stringify(c));
  // The per-op stacked ops add up to the rate asked: 3,000 IOPS.
  const total = await page.evaluate(async () => {
    const r = await (await fetch('/api/v1/runs/0/series?stat=ops&by=op')).json();
    return r.series.reduce((a, s) => a + s.values[5], 0);
  });
  assert.ok(Math.abs(total - 3000) < 60, `second 5: ${total} ops/s`);
  await page.screenshot({ path: path.join(SHOTS, 'worksheet.png'), fullPage: true });
  assert.deepEqual(errors, []);
});

test('two runs side by side share the y scale', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&cmp=1&c=ops,by=op,kind=stacked&c=latency,kind=heatmap`);
  await page.screenshot({ path: path.join(SHOTS, 'compare.png'), fullPage: true });
  const canvases = await page.$$eval('section.chart', (els) => els.map((e) => e.querySelectorAll('canvas.plot, canvas.plot-compare').length));
  assert.deepEqual(canvases, [2, 2], 'two plots per chart');
  const tags = await page.$$eval('section.chart .run-name', (els) => els.map((e) => e.textContent));
  assert.ok(tags.includes('mixed') && tags.includes('reads'), `both runs named: ${tags}`);
  assert.deepEqual(errors, []);
});

test('the HTML report opens from a file with no server and draws its heat maps', async () => {
  const report = path.join(dir, 'mixed.html');
  ioscope(['report', path.join(dir, 'mixed.db'), '-o', report]);
  const { page, errors } = await open(browser, `file://${report}`);
  const cs = await charts(page);
  assert.ok(cs.length >= 3, `${cs.length} charts`);
  const heat = cs.find((c) => c.stat === 'latency' && c.kind === 'heatmap');
  assert.ok(heat && heat.d.cells > 50, 'latency heat map drawn from embedded data');
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.locator('section.chart[data-stat="latency"] li[data-key="read"]').first().click();
  await ready(page);
  assert.deepEqual(requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:')), [], 'no network');
  await page.screenshot({ path: path.join(SHOTS, 'report.png'), fullPage: true });
  assert.deepEqual(errors, []);
});
