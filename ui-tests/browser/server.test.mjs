// A run with target series (the probed server: CPU, memory, eth0, loop3, ganesha.nfsd;
// from second 20 its disk is the limit): the server worksheet draws the client latency
// heat map, the block latency heat map under it, the NFS server's CPU and the disk's IOPS
// on one time axis with the fixture's data; a target statistic is added from its own
// group of Add statistic and drilled into by its own dimensions; the summary shows the
// target section; the HTML report holds the server worksheet. The results file is written
// by crates/web/examples/server_run.rs with the real store writer.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { BIN, ioscope, serve, launch, open, ready, drawn, pixels, tmpdir, SHOTS } from './harness.mjs';

const SATURATED = 25; // a second of the disk-bound phase (from 20)
const CALM = 5;

let server;
let browser;
let results;
before(async () => {
  results = path.join(tmpdir(), 'server.db');
  const example = path.join(path.dirname(BIN), 'examples', 'server_run');
  if (existsSync(example)) execFileSync(example, [results]);
  else execFileSync('cargo', ['run', '-q', '-p', 'ioscope-web', '--example', 'server_run', '--', results], { stdio: 'inherit' });
  server = await serve(['ui', results, '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

async function api(page, query) {
  return page.evaluate(async (q) => (await fetch(`/api/v1/runs/0/${q}`)).json(), query);
}

const BGS = [[12, 15, 20], [24, 27, 35]];
// How far a pixel is from the plot's backgrounds (plain and warm-up).
const offBg = (p) => Math.min(...BGS.map((b) => Math.max(...b.map((v, i) => Math.abs(v - p[i])))));

// The plot point of `value` at the middle of `second` on chart `c` (its data-drawn record).
function at(c, second, value) {
  const d = c.drawn;
  const x = ((second - d.from + 0.5) * d.plot.width) / (d.to + 1 - d.from);
  const f = d.yscale === 'lin'
    ? (value - d.ymin) / (d.ymax - d.ymin)
    : (Math.log(value) - Math.log(d.ymin)) / (Math.log(d.ymax) - Math.log(d.ymin));
  return [Math.round(x), Math.round(d.plot.height * (1 - f))];
}

// Whether chart `index` is drawn (not background) at `value` in each of `seconds`: any
// pixel within 3 rows of it (a heat map's buckets are rows with gaps between them).
async function paintedAt(page, index, value, seconds) {
  const c = (await drawn(page))[index];
  const out = [];
  for (const s of seconds) {
    const [x, y] = at(c, s, value);
    const rows = [-3, -2, -1, 0, 1, 2, 3].map((dy) => [x, Math.max(1, Math.min(c.drawn.plot.height - 2, y + dy))]);
    out.push((await pixels(page, index, rows)).some((p) => offBg(p) > 40));
  }
  return out;
}

// The side panel's values of chart `index` by key, while the pointer is on second `s`.
async function sideAt(page, index, s) {
  const chart = page.locator(`section.chart[data-index="${index}"]`);
  await chart.locator('canvas.plot').scrollIntoViewIfNeeded();
  const d = JSON.parse(await chart.getAttribute('data-drawn'));
  const x = d.plot.x + ((s - d.from + 0.5) * d.plot.width) / (d.to + 1 - d.from);
  const box = await chart.locator('canvas.plot').boundingBox();
  await page.mouse.move(box.x + x, box.y + d.plot.y + d.plot.height / 2);
  const when = `at 0:${String(s).padStart(2, '0')}`;
  await page.waitForFunction(([i, w]) => {
    const el = document.querySelector(`section.chart[data-index="${i}"] .when`);
    return el && el.textContent === w;
  }, [index, when]);
  return page.$$eval(`section.chart[data-index="${index}"] li[data-key]`, (els) => Object.fromEntries(els.map((e) => [e.dataset.key, e.querySelector('.v').textContent])));
}

async function formatted(page, v, unit) {
  return page.evaluate(async ([x, u]) => (await import('/assets/format.js')).fmtValue(x, u), [v, unit]);
}

async function serverWorksheet(page) {
  const button = page.locator('[data-action="server-worksheet"]');
  assert.ok(await button.isVisible(), 'a run with target series offers the server worksheet');
  await button.click();
  await ready(page);
}

test('the server worksheet: client latency, block latency under it, NFS server CPU and disk IOPS on one time axis', async () => {
  const { page, errors } = await open(browser, server.url);
  await serverWorksheet(page);
  const cs = await drawn(page);
  assert.deepEqual(cs.map((c) => [c.stat, c.by, c.kind]), [
    ['latency', 'op', 'heatmap'],
    ['block_latency', 'op', 'heatmap'],
    ['process_cpu', 'process', 'stacked'],
    ['disk_ops', 'disk', 'stacked'],
  ]);
  // One time axis: the same seconds over the same pixels in every chart.
  for (const c of cs) {
    assert.equal(c.drawn.message, undefined, `${c.stat}: ${c.drawn.message}`);
    assert.deepEqual([c.drawn.from, c.drawn.to, c.drawn.plot.x, c.drawn.plot.width], [0, 29, cs[0].drawn.plot.x, cs[0].drawn.plot.width], c.stat);
  }
  assert.ok(cs[0].drawn.cells > 0 && cs[1].drawn.cells > 0, 'both heat maps have cells');
  assert.deepEqual(await page.$$eval('section.chart', (els) => els.map((e) => e.classList.contains('target'))), [false, true, true, true]);

  // The heat maps show what the fixture holds: 8 ms I/O only once the disk is the limit,
  // on the client (its writes) and on the device (its writes) alike.
  assert.deepEqual(await paintedAt(page, 0, 8e6, [CALM, SATURATED]), [false, true], 'client latency at 8 ms');
  assert.deepEqual(await paintedAt(page, 1, 8e6, [CALM, SATURATED]), [false, true], 'block latency at 8 ms');
  assert.deepEqual(await paintedAt(page, 1, 3e5, [CALM, SATURATED]), [true, false], 'block latency at 300 µs');
  // The block heat map's side panel counts the API's block I/O.
  const block = await api(page, 'series?stat=block_latency&by=op');
  const counts = Object.fromEntries(block.series.map((s) => [s.key, s.count.reduce((a, c) => a + (c || 0), 0)]));
  const listed = await page.$$eval('section.chart[data-index="1"] li[data-key]', (els) => Object.fromEntries(els.map((e) => [e.dataset.key, Number(e.querySelector('.v').textContent.replace(/,/g, ''))])));
  assert.deepEqual(listed, counts);
  assert.ok(counts.read > 0 && counts.write > 0, JSON.stringify(counts));

  // Process CPU in percent, as the API answers it, second by second.
  const cpu = await api(page, 'series?stat=process_cpu&by=process');
  assert.equal(cpu.unit, 'percent');
  for (const s of [CALM, SATURATED]) {
    const v = cpu.series[0].values[s];
    assert.deepEqual(await sideAt(page, 2, s), { 'ganesha.nfsd': await formatted(page, v, 'percent') }, `second ${s}`);
  }
  assert.match((await sideAt(page, 2, CALM))['ganesha.nfsd'], /^\d+(\.\d+)?%$/);
  // ganesha used about half a CPU, less once it waits on the disk.
  assert.deepEqual(await paintedAt(page, 2, 40, [CALM, SATURATED]), [true, false], 'process CPU at 40%');
  // Disk IOPS: three times as many once the page cache is full.
  const iops = await api(page, 'series?stat=disk_ops&by=disk');
  for (const s of [CALM, SATURATED]) {
    const side = await sideAt(page, 3, s);
    const want = await page.evaluate(async (x) => (await import('/assets/format.js')).fmtNum(x), iops.series[0].values[s]);
    assert.deepEqual(side, { loop3: want }, `second ${s}`);
  }
  assert.deepEqual(await paintedAt(page, 3, 1000, [CALM, SATURATED]), [false, true], 'disk IOPS at 1,000/s');
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(SHOTS, 'server-worksheet.png'), fullPage: true });
  // A link reproduces it.
  const hash = await page.evaluate(() => location.hash);
  assert.match(hash, /c=latency,by=op,kind=heatmap&c=block_latency,by=op,kind=heatmap&c=process_cpu,by=process,kind=stacked&c=disk_ops,by=disk,kind=stacked/);
  assert.deepEqual(errors, []);
});

test('a target statistic added from its own group of Add statistic draws its values in its unit', async () => {
  const { page, errors } = await open(browser, server.url);
  await page.click('[data-action="add-stat"]');
  const groups = await page.$$eval('select[name=stat] optgroup', (gs) => gs.map((g) => [g.label, [...g.children].map((o) => o.value)]));
  assert.deepEqual(groups.map((g) => g[0]), ['Client', 'Target (server)']);
  assert.ok(groups[0][1].includes('latency') && !groups[0][1].includes('disk_busy'));
  assert.ok(['cpu', 'process_cpu', 'page_cache', 'disk_ops', 'disk_busy', 'block_latency', 'syscall_latency'].every((s) => groups[1][1].includes(s)), groups[1][1].join());
  await page.selectOption('select[name=stat]', 'disk_busy');
  const bys = await page.$$eval('select[name=by] option', (os) => os.map((o) => o.value));
  assert.deepEqual(bys, ['', 'host', 'disk']);
  await page.selectOption('select[name=by]', 'disk');
  await page.screenshot({ path: path.join(SHOTS, 'server-add-statistic.png') });
  await page.click('[data-action="add-confirm"]');
  await ready(page);
  let cs = await drawn(page);
  const busy = cs.length - 1;
  assert.deepEqual([cs[busy].stat, cs[busy].by, cs[busy].kind, cs[busy].drawn.series], ['disk_busy', 'disk', 'stacked', 1]);
  assert.deepEqual(await sideAt(page, busy, SATURATED), { loop3: '100%' }, 'the disk busy all the second');
  // CPU by mode: two CPUs' modes stack up to 200%.
  await page.click('[data-action="add-stat"]');
  await page.selectOption('select[name=stat]', 'cpu');
  await page.selectOption('select[name=by]', 'mode');
  await page.click('[data-action="add-confirm"]');
  await ready(page);
  cs = await drawn(page);
  const modes = cs.length - 1;
  assert.deepEqual([cs[modes].stat, cs[modes].by, cs[modes].drawn.series], ['cpu', 'mode', 5]);
  assert.equal(cs[modes].drawn.ymax >= 200, true, JSON.stringify(cs[modes].drawn));
  const side = await sideAt(page, modes, SATURATED);
  assert.equal(side.iowait, '90.0%', JSON.stringify(side));
  // A gauge: the page cache, in bytes.
  await page.click('[data-action="add-stat"]');
  await page.selectOption('select[name=stat]', 'page_cache');
  await page.click('[data-action="add-confirm"]');
  await ready(page);
  cs = await drawn(page);
  assert.deepEqual([cs[cs.length - 1].stat, cs[cs.length - 1].kind], ['page_cache', 'line']);
  assert.deepEqual(await sideAt(page, cs.length - 1, SATURATED), { all: '3 GiB' });
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(SHOTS, 'server-added.png'), fullPage: true });
  assert.deepEqual(errors, []);
});

test('drill-down on a target chart: its disk offers the statistics of the disk, and its block latency by op draws', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=disk_ops,by=disk,kind=stacked`);
  const chart = page.locator('section.chart[data-index="0"]');
  await chart.locator('li[data-key="loop3"]').click();
  await ready(page);
  await chart.locator('li[data-key="loop3"] [data-action="drill"]').click();
  const offered = await page.$$eval('.drill-menu .drill-stat', (els) => els.map((e) => e.dataset.stat));
  assert.deepEqual(offered, ['disk_ops', 'disk_bytes', 'disk_busy', 'disk_queue', 'block_latency', 'block_size', 'block_offset']);
  await page.click('.drill-menu [data-action="drill-by"][data-stat="block_latency"][data-dim="op"]');
  await ready(page);
  const cs = await drawn(page);
  assert.deepEqual([cs[1].stat, cs[1].by, cs[1].where, cs[1].kind], ['block_latency', 'op', 'disk:loop3', 'heatmap']);
  assert.ok(cs[1].drawn.cells > 0 && !cs[1].drawn.message, JSON.stringify(cs[1].drawn));
  assert.deepEqual(errors, []);
});

// The summary's target section as the lead's report writes it (docs/api.md); used when the
// run's summary has none of its own.
const TARGET = {
  server: {
    ebpf: null,
    cpu_percent: { mean: 61.5, max: 140.25 },
    memory_bytes: { page_cache: { mean: 2.5 * 2 ** 30, max: 3 * 2 ** 30 }, dirty: { mean: 2 ** 27, max: 600 * 2 ** 20 }, available: { mean: 2 ** 30, max: 2 ** 31 } },
    nics: { eth0: { rx_bytes_per_sec: { mean: 50e6, max: 60e6 }, tx_bytes_per_sec: { mean: 9e6, max: 10e6 }, drops: 4 } },
    disks: { loop3: {
      iops: { mean: 992, max: 1800 }, bytes_per_sec: { mean: 2 ** 27, max: 2 ** 28 }, util_percent: { mean: 58, max: 100 },
      queue_depth: { mean: 8.4, max: 24 }, latency_ns: { mean: 2e6, min: 1e5, p50: 1.5e6, p90: 5e6, p99: 9e6, p999: 1.2e7, max: 2.4e7 },
    } },
    processes: { 'ganesha.nfsd': {
      cpu_percent: { mean: 43.2, max: 50.1 },
      syscalls: { pwrite64: { count: 23122, latency_ns: { mean: 1e5, min: 2e4, p50: 5e4, p90: 3e5, p99: 8e5, p999: 1e6, max: 1.1e6 } } },
    } },
  },
};

test('the summary shows the target section: CPU, memory, the disk at 100%, eth0 and ganesha with its system calls', async () => {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  let target = null;
  await page.route('**/api/v1/runs/0', async (route) => {
    const resp = await route.fetch();
    const body = await resp.json();
    if (!body.summary.target) body.summary.target = TARGET;
    target = body.summary.target;
    await route.fulfill({ response: resp, json: body });
  });
  await page.goto(server.url);
  await ready(page);
  const host = Object.keys(target)[0];
  const block = page.locator(`.target-host[data-host="${host}"]`);
  assert.equal(await block.locator('.target-head').textContent(), `Targethost ${host}`);
  const want = await page.evaluate(async (t) => {
    const m = await import('/assets/target.js');
    return m.targetSections(t);
  }, target);
  const figs = await block.locator('.fig .fig-v').allTextContents();
  assert.deepEqual(figs, want[0].figures.map((f) => f.value));
  const disk = await block.locator('table.target-disks tbody tr').first().locator('td').allTextContents();
  const d = want[0].disks[0];
  assert.deepEqual(disk, [d.name, d.iops.mean, d.iops.max, d.bytes.mean, d.bytes.max, d.util.mean, d.util.max, d.queue.mean, d.queue.max, d.latency.p50, d.latency.p99, d.latency.p999, d.latency.max]);
  const sys = await block.locator('table.target-processes tr[data-syscall]').first().locator('td').allTextContents();
  const p = want[0].processes[0];
  assert.equal(sys[0], p.syscalls[0].name);
  assert.equal(sys[3], p.syscalls[0].count);
  if (target === TARGET) {
    assert.deepEqual(figs, ['61.5%', '2.50 GiB', '128 MiB', '1 GiB']);
    assert.deepEqual(disk.slice(0, 3), ['loop3', '992', '1,800']);
    assert.equal(await block.locator('table.target-nics tr[data-nic="eth0"] td.bad').textContent(), '4');
  }
  await page.locator('details[data-panel="summary"]').screenshot({ path: path.join(SHOTS, 'server-summary.png') });
  assert.deepEqual(errors, []);
  await page.close();
});

test('the HTML report of the run holds the server worksheet', async () => {
  const report = path.join(path.dirname(results), 'server.html');
  ioscope(['report', results, '-o', report, '--force']);
  const { page, errors } = await open(browser, `file://${report}`);
  await serverWorksheet(page);
  const cs = await drawn(page);
  assert.deepEqual(cs.map((c) => c.stat), ['latency', 'block_latency', 'process_cpu', 'disk_ops']);
  for (const c of cs) assert.ok(!c.drawn.message && (c.drawn.cells > 0 || c.drawn.series > 0), `${c.stat}: ${JSON.stringify(c.drawn)}`);
  assert.deepEqual(errors, []);
});

// A real run recorded with `--probe local` against nfs-ganesha (its CI test hands its
// results file over as IOSCOPE_SERVER_RESULTS): the server worksheet draws every chart the
// run offers with data, on one time axis. Skipped when no such file is given.
const REAL = process.env.IOSCOPE_SERVER_RESULTS;
test('the server worksheet of a real probed run draws every chart with its data', { skip: !REAL && 'IOSCOPE_SERVER_RESULTS not set' }, async () => {
  const real = await serve(['ui', REAL, '--listen', '127.0.0.1:0']);
  try {
    const { page, errors } = await open(browser, real.url);
    await serverWorksheet(page);
    const cs = await drawn(page);
    const stats = cs.map((c) => c.stat);
    for (const s of ['latency', 'process_cpu', 'disk_ops']) assert.ok(stats.includes(s), `${s} in ${stats}`);
    for (const [i, c] of cs.entries()) {
      assert.equal(c.drawn.message, undefined, `${c.stat}: ${c.drawn.message}`);
      assert.deepEqual([c.drawn.from, c.drawn.to, c.drawn.plot.width], [cs[0].drawn.from, cs[0].drawn.to, cs[0].drawn.plot.width], c.stat);
      if (c.kind === 'heatmap') assert.ok(c.drawn.cells > 0, `${c.stat}: cells`);
      else assert.ok(c.drawn.series > 0, `${c.stat}: series`);
      // The side panel lists values, and at least one is not zero.
      const vals = await page.$$eval(`section.chart[data-index="${i}"] li[data-key] .v`, (els) => els.map((e) => Number.parseFloat(e.textContent.replace(/,/g, ''))));
      assert.ok(vals.some((v) => v > 0), `${c.stat}: ${vals}`);
    }
    await page.mouse.move(0, 0);
    await page.screenshot({ path: path.join(SHOTS, 'server-worksheet-real.png'), fullPage: true });
    assert.deepEqual(errors, []);
  } finally {
    real.close();
  }
});
