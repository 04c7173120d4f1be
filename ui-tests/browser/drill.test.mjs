// Drill-down into every statistic of a selection: from ops where op = write to the
// latency, service time, size and offset heat maps of just those I/Os, and deeper, as the
// API's statistic list allows; "Add statistic" with a filter; and the HTML report, which
// offers only the drill-downs and statistics it embeds (each one walked and drawn).

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ioscope, serve, launch, open, ready, drawn, tmpdir, SHOTS } from './harness.mjs';

let dir;
let server;
let browser;
before(async () => {
  dir = tmpdir();
  ioscope(['run', '--engine', 'posix', '--dir', path.join(dir, 'data'), '--size', '16m', '--files', '2',
    '--rw', 'randrw', '--rwmix-read', '70', '--bs', '4k:80,64k:20', '--threads', '2', '--rate-iops', '2000',
    '--duration', '4s', '--quiet', '--out', path.join(dir, 'mixed.db')]);
  server = await serve(['ui', path.join(dir, 'mixed.db'), '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

// The drill menu as { stat: [dim, ...] } ('' = the statistic over the selection, whole).
async function menuOf(page) {
  return page.$$eval('.drill-menu [data-action="drill-by"]', (els) => {
    const out = {};
    for (const e of els) (out[e.dataset.stat] ||= []).push(e.dataset.dim);
    return out;
  });
}

async function openDrill(page, chartSel, key) {
  const chart = page.locator(chartSel).first();
  const li = chart.locator(`li[data-key="${key}"]`);
  if ((await li.getAttribute('aria-selected')) !== 'true') {
    await li.click();
    await ready(page);
  }
  await chart.locator(`li[data-key="${key}"] [data-action="drill"]`).click();
}

test('the drill menu of ops where op = write offers every statistic of those I/Os, as deep as the data allows', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=ops,by=op,kind=stacked`);
  const stats = await page.evaluate(async () => (await (await fetch('/api/v1/runs/0')).json()).stats);
  await openDrill(page, 'section.chart[data-stat="ops"]', 'write');
  const menu = await menuOf(page);
  // Every statistic with an op dimension, each whole and by every other dimension the API
  // lists for it.
  for (const s of stats.filter((x) => x.dimensions.includes('op'))) {
    assert.deepEqual(menu[s.name], [''].concat(s.dimensions.filter((d) => d !== 'op')), `${s.name}: ${JSON.stringify(menu)}`);
  }
  for (const s of ['latency', 'service_time', 'size', 'offset']) assert.ok(menu[s], `${s} of the writes`);
  assert.ok(!menu.probe, 'probe durations have no op');
  await page.screenshot({ path: path.join(SHOTS, 'drill-menu.png') });

  // ops -> op = write -> latency heat map of the writes.
  await page.click('.drill-menu [data-action="drill-by"][data-stat="latency"][data-dim=""]');
  await ready(page);
  let cs = await drawn(page);
  const lat = cs.find((c) => c.stat === 'latency');
  assert.deepEqual([lat.by, lat.where, lat.kind], ['', 'op:write', 'heatmap']);
  assert.ok(lat.drawn.cells > 0 && !lat.drawn.message, JSON.stringify(lat.drawn));
  // Its I/O count is the API's count of write latencies.
  const count = await page.$eval('section.chart[data-stat="latency"] li[data-key="all"] .v', (e) => e.textContent.replace(/,/g, ''));
  const apiCount = await page.evaluate(async () => {
    const r = await (await fetch('/api/v1/runs/0/series?stat=latency&where=op:write')).json();
    return r.series[0].count.reduce((a, c) => a + (c || 0), 0);
  });
  assert.equal(Number(count), apiCount);

  // Deeper: the writes' latency, by each dimension latency has (read from the API).
  await openDrill(page, 'section.chart[data-stat="latency"]', 'all');
  const deeper = await menuOf(page);
  const latDims = stats.find((s) => s.name === 'latency').dimensions.filter((d) => d !== 'op');
  assert.deepEqual(deeper.latency, latDims, 'the latency chart itself is not offered again');
  assert.ok(deeper.ops && deeper.ops.includes(''), 'and the counters of the same I/Os');
  await page.click('.drill-menu [data-action="drill-by"][data-stat="latency"][data-dim="step"]');
  await ready(page);
  cs = await drawn(page);
  assert.deepEqual(cs.map((c) => [c.stat, c.by, c.where, c.kind]), [
    ['ops', 'op', '', 'stacked'],
    ['latency', '', 'op:write', 'heatmap'],
    ['latency', 'step', 'op:write', 'heatmap'],
  ]);

  // The address keeps the drill-downs.
  const again = await open(browser, page.url());
  assert.deepEqual((await drawn(again.page)).map((c) => [c.stat, c.by, c.where, c.kind]), cs.map((c) => [c.stat, c.by, c.where, c.kind]));
  await again.page.close();
  assert.deepEqual(errors, []);
});

test('Add statistic takes a filter: the size of the writes, by step', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=-`);
  await page.click('[data-action="add-stat"]');
  await page.selectOption('select[name="stat"]', 'size');
  await page.click('[data-action="filter-add"]');
  await page.selectOption('select[name="filter-dim"]', 'op');
  await page.selectOption('select[name="filter-value"]', 'write');
  const bys = await page.$$eval('select[name="by"] option', (els) => els.map((e) => e.value));
  assert.ok(!bys.includes('op'), `a filtered dimension is not a breakdown: ${bys}`);
  await page.selectOption('select[name="by"]', 'step');
  await page.click('[data-action="add-confirm"]');
  await ready(page);
  const [c] = await drawn(page);
  assert.deepEqual([c.stat, c.by, c.where, c.kind], ['size', 'step', 'op:write', 'heatmap']);
  assert.ok(c.drawn.cells > 0, JSON.stringify(c.drawn));
  assert.match(page.url(), /c=size,by=step,where=op:write,kind=heatmap/);
  const title = await page.$eval('section.chart .chart-title', (e) => e.textContent);
  assert.match(title, /I\/O size broken down by step, where op = write/);
  assert.deepEqual(errors, []);
});

test('the HTML report offers only drill-downs and statistics it embeds, and each one draws', async () => {
  const report = path.join(dir, 'mixed.html');
  ioscope(['report', path.join(dir, 'mixed.db'), '-o', report, '--force']);
  const { page, errors } = await open(browser, `file://${report}#run=0&c=ops,by=op,kind=stacked&c=latency,kind=heatmap`);
  const checked = [];
  // The chart at `index` (just added): drawn from embedded data, no "not included", its
  // values listed; then removed again.
  const check = async (what, index) => {
    await ready(page);
    const cs = await drawn(page);
    const c = cs[index];
    assert.ok(c.drawn && !c.drawn.message, `${what}: ${JSON.stringify(c.drawn)}`);
    const keys = await page.$$eval(`section.chart[data-index="${index}"] li[data-key]`, (els) => els.length);
    assert.ok(keys > 0, `${what}: values listed`);
    checked.push(what);
    await page.click(`section.chart[data-index="${index}"] [data-action="remove-chart"]`);
    await ready(page);
  };

  // Every drill-down offered from every value of the two charts (a drill-down goes right
  // below its chart).
  for (const [index, keysOf] of [[0, ['read', 'write']], [1, ['all']]]) {
    const sel = `section.chart[data-index="${index}"]`;
    for (const key of keysOf) {
      await openDrill(page, sel, key);
      const items = await page.$$eval('.drill-menu [data-action="drill-by"]', (els) => els.map((e) => [e.dataset.stat, e.dataset.dim]));
      assert.ok(items.length > 0, `${key}: something to drill into`);
      if (key === 'write') {
        const stats = new Set(items.map((i) => i[0]));
        for (const s of ['latency', 'service_time', 'size', 'offset']) assert.ok(stats.has(s), `${s} of the writes is embedded`);
      }
      await page.keyboard.press('Escape');
      for (const [stat, dim] of items) {
        await openDrill(page, sel, key);
        await page.click(`.drill-menu [data-action="drill-by"][data-stat="${stat}"][data-dim="${dim}"]`);
        await check(`${key} -> ${stat} by ${dim || '-'}`, index + 1);
      }
    }
  }

  // Every statistic, breakdown and kind Add statistic offers (no filter).
  await page.click('[data-action="add-stat"]');
  const statNames = await page.$$eval('select[name="stat"] option', (els) => els.map((e) => e.value));
  await page.click('[data-action="add-cancel"]');
  for (const stat of statNames) {
    await page.click('[data-action="add-stat"]');
    await page.selectOption('select[name="stat"]', stat);
    const bys = await page.$$eval('select[name="by"] option', (els) => els.map((e) => e.value));
    await page.click('[data-action="add-cancel"]');
    for (const by of bys) {
      await page.click('[data-action="add-stat"]');
      await page.selectOption('select[name="stat"]', stat);
      await page.selectOption('select[name="by"]', by);
      const kinds = await page.$$eval('select[name="kind"] option', (els) => els.map((e) => e.value));
      assert.ok(kinds.length > 0, `${stat} by ${by}: a kind`);
      await page.click('[data-action="add-cancel"]');
      for (const kind of kinds) {
        await page.click('[data-action="add-stat"]');
        await page.selectOption('select[name="stat"]', stat);
        await page.selectOption('select[name="by"]', by);
        await page.selectOption('select[name="kind"]', kind);
        await page.click('[data-action="add-confirm"]');
        await check(`add ${stat} by ${by || '-'} as ${kind}`, 2);
      }
    }
  }
  // Deeper than the report holds (one file of the writes): no drill button at all.
  await page.evaluate(() => window.ioscope.setState('#run=0&c=ops,by=file,where=op:write,kind=stacked'));
  await ready(page);
  const [byFile] = await drawn(page);
  assert.ok(byFile.drawn && !byFile.drawn.message, 'the writes by file are embedded');
  const file = await page.$eval('section.chart li[data-key]', (e) => e.dataset.key);
  await page.click(`section.chart li[data-key="${file}"]`);
  await ready(page);
  assert.equal(await page.$$eval('section.chart li.on', (els) => els.length), 1, 'the file is selected');
  assert.equal(await page.$$eval('section.chart [data-action="drill"]', (els) => els.length), 0, 'nothing embedded to drill into');
  assert.ok(checked.length > 20, `${checked.length} views walked`);
  console.log(`${checked.length} views walked`);
  assert.ok(checked.includes('write -> latency by -'), checked.join('\n'));
  assert.deepEqual(errors, []);
});
