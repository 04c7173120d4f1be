// A run from four hosts (h3 the slow one, behind its "bad cable"): ops broken down by
// host add up exactly to the total in every second, and the chart shows the API's
// values; the drill host -> op -> file through the drill menu; the notes name the slow
// host; the summary and the top bar show each host's status and clock offset. The
// results file is written by crates/web/examples/hosts_run.rs with the real store writer.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { BIN, ioscope, serve, launch, open, ready, drawn, tmpdir, SHOTS } from './harness.mjs';

const HOSTS = ['h1', 'h2', 'h3', 'h4'];
const SLOW = 'h3';

let server;
let browser;
let results;
before(async () => {
  results = path.join(tmpdir(), 'hosts.db');
  // `cargo test` builds the example beside the binary; build it if it is not there.
  const example = path.join(path.dirname(BIN), 'examples', 'hosts_run');
  if (existsSync(example)) execFileSync(example, [results]);
  else execFileSync('cargo', ['run', '-q', '-p', 'ioscope-web', '--example', 'hosts_run', '--', results], { stdio: 'inherit' });
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

const valuesOf = (answer, key) => answer.series.find((s) => s.key === key).values;

// The side panel's values of chart `index` by key, while the pointer is on second `s`.
async function sideAt(page, index, s) {
  const chart = page.locator(`section.chart[data-index="${index}"]`);
  const d = JSON.parse(await chart.getAttribute('data-drawn'));
  const x = d.plot.x + ((s - d.from + 0.5) * d.plot.width) / (d.to + 1 - d.from);
  const box = await chart.locator('canvas.plot').boundingBox();
  await page.mouse.move(box.x + x, box.y + d.plot.y + d.plot.height / 2);
  await page.waitForFunction(([i, sec]) => {
    const when = document.querySelector(`section.chart[data-index="${i}"] .when`);
    return when && when.textContent.startsWith('at ') && when.textContent.includes(sec);
  }, [index, fmtSecond(s)]);
  return page.$$eval(`section.chart[data-index="${index}"] li[data-key]`, (els) => Object.fromEntries(els.map((e) => [e.dataset.key, e.querySelector('.v').textContent])));
}

// Elapsed time as the side panel writes it (format.js fmtElapsed): "0:07".
function fmtSecond(s) {
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

// Checks chart `index` against the API's answer `answer`: every key listed, and at every
// second the side panel shows the API's value of each key, as the UI formats it.
async function sameAsApi(page, index, answer) {
  const keys = await page.$$eval(`section.chart[data-index="${index}"] li[data-key]`, (els) => els.map((e) => e.dataset.key));
  assert.deepEqual(keys, answer.series.map((s) => s.key));
  for (const s of answer.seconds) {
    const side = await sideAt(page, index, s);
    const i = answer.seconds.indexOf(s);
    const want = await page.evaluate(async ([vals]) => {
      const f = await import('/assets/format.js');
      return Object.fromEntries(vals.map(([k, v]) => [k, f.fmtNum(v)]));
    }, [answer.series.map((x) => [x.key, x.values[i]])]);
    assert.deepEqual(side, want, `second ${s}`);
  }
}

test('ops by host: the hosts add up exactly to the total in every second, and the chart shows the API values', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=ops,by=host,kind=stacked`);
  const [c] = await drawn(page);
  assert.deepEqual([c.stat, c.by, c.kind, c.drawn.series], ['ops', 'host', 'stacked', 4]);
  const whole = await api(page, 'series?stat=ops');
  const byHost = await api(page, 'series?stat=ops&by=host');
  assert.deepEqual(byHost.series.map((s) => s.key), HOSTS);
  assert.equal(whole.seconds.length, 20);
  whole.seconds.forEach((s, i) => {
    const sum = HOSTS.reduce((a, h) => a + valuesOf(byHost, h)[i], 0);
    assert.equal(sum, valuesOf(whole, 'all')[i], `second ${s}: the hosts add up to the total`);
  });
  for (const stat of ['bytes', 'errors']) {
    const w = await api(page, `series?stat=${stat}`);
    const b = await api(page, `series?stat=${stat}&by=host`);
    w.seconds.forEach((s, i) => assert.equal(HOSTS.reduce((a, h) => a + (valuesOf(b, h)[i] || 0), 0), valuesOf(w, 'all')[i] || 0, `${stat} ${s}`));
  }
  // The slow host is plainly the thin band.
  const mean = (h) => valuesOf(byHost, h).reduce((a, v) => a + v, 0) / whole.seconds.length;
  assert.ok(mean(SLOW) * 4 < mean('h1'), `${mean(SLOW)} vs ${mean('h1')}`);
  await sameAsApi(page, 0, byHost);
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(SHOTS, 'hosts-breakdown.png') });
  assert.deepEqual(errors, []);
});

test('drill host -> op -> file through the drill menu: each chart is the API answer of its filter', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=ops,by=host,kind=stacked`);
  const drill = async (index, key, stat, dim) => {
    const chart = page.locator(`section.chart[data-index="${index}"]`);
    await chart.locator(`li[data-key="${key}"]`).click();
    await ready(page);
    await chart.locator(`li[data-key="${key}"] [data-action="drill"]`).click();
    const item = page.locator(`.drill-menu [data-action="drill-by"][data-stat="${stat}"][data-dim="${dim}"]`);
    assert.equal(await item.count(), 1, `${key}: ${stat} by ${dim} offered`);
    await item.click();
    await ready(page);
  };
  // host h3 -> its operations.
  await drill(0, SLOW, 'ops', 'op');
  let cs = await drawn(page);
  assert.deepEqual([cs[1].stat, cs[1].by, cs[1].where], ['ops', 'op', `host:${SLOW}`]);
  await sameAsApi(page, 1, await api(page, `series?stat=ops&by=op&where=host:${SLOW}`));
  // -> its reads, by file.
  await drill(1, 'read', 'ops', 'file');
  cs = await drawn(page);
  assert.deepEqual(cs.map((c) => [c.stat, c.by, c.where]), [
    ['ops', 'host', ''],
    ['ops', 'op', `host:${SLOW}`],
    ['ops', 'file', `host:${SLOW};op:read`],
  ]);
  const byFile = await api(page, `series?stat=ops&by=file&where=host:${SLOW};op:read`);
  assert.deepEqual(byFile.series.map((s) => s.key), ['f0', 'f1', 'f2', 'f3']);
  await sameAsApi(page, 2, byFile);
  // The files of h3's reads add up to its reads.
  const reads = await api(page, `series?stat=ops&where=host:${SLOW};op:read`);
  reads.seconds.forEach((s, i) => assert.equal(byFile.series.reduce((a, f) => a + f.values[i], 0), valuesOf(reads, 'all')[i], `second ${s}`));
  // And their latency, file by file, as a heat map of those I/Os.
  await drill(2, 'f0', 'latency', '');
  cs = await drawn(page);
  assert.deepEqual([cs[3].stat, cs[3].where, cs[3].kind], ['latency', `host:${SLOW};op:read;file:f0`, 'heatmap']);
  assert.ok(cs[3].drawn.cells > 0 && !cs[3].drawn.message, JSON.stringify(cs[3].drawn));
  const count = await page.$eval('section.chart[data-index="3"] li[data-key="all"] .v', (e) => Number(e.textContent.replace(/,/g, '')));
  const lat = await api(page, `series?stat=latency&where=host:${SLOW};op:read;file:f0`);
  assert.equal(count, lat.series[0].count.reduce((a, c) => a + (c || 0), 0));
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(SHOTS, 'hosts-drill.png'), fullPage: true });
  assert.deepEqual(errors, []);
});

test('the notes name the slow host; the summary and the top bar show each host, its status and clock offset', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&c=ops,by=host,kind=stacked`);
  const run = await page.evaluate(async () => (await fetch('/api/v1/runs/0')).json());
  const notes = await page.$$eval('ul.notes li', (els) => els.map((e) => e.textContent));
  const named = notes.filter((n) => n.includes('differs from the other hosts'));
  assert.equal(named.length, 1, notes.join('\n'));
  assert.match(named[0], new RegExp(`host ${SLOW} differs from the other hosts beyond noise`));
  assert.match(named[0], / MB\/s against the median host's .* latency p50 /);
  assert.ok(notes.some((n) => n.includes("host h2's clock offset is known to ±2.5 ms")), notes.join('\n'));

  // A row per host under the total, with the API's numbers.
  const rows = await page.$$eval('table.ops tr.host', (els) => els.map((e) => [e.dataset.host, ...[...e.querySelectorAll('td')].map((td) => td.textContent)]));
  assert.deepEqual(rows.map((r) => r[0]), HOSTS);
  const f = await page.evaluate(async (hosts) => {
    const m = await import('/assets/format.js');
    return Object.fromEntries(Object.entries(hosts).map(([k, x]) => [k, { iops: m.fmtInt(x.iops), p99: m.fmtNs(x.latency_ns.p99) }]));
  }, run.summary.hosts);
  for (const r of rows) {
    assert.equal(r[1], `host ${r[0]}`);
    assert.ok(r.includes(f[r[0]].iops) && r.includes(f[r[0]].p99), `${r.join(' | ')} has ${JSON.stringify(f[r[0]])}`);
  }
  // The agents: status and clock offset ± uncertainty, h2's uncertain clock marked.
  const agents = await page.$$eval('table.agents tbody tr', (els) => els.map((e) => [...e.querySelectorAll('td')].map((td) => td.textContent)));
  assert.deepEqual(agents.map((a) => [a[0], a[1]]), HOSTS.map((h) => [h, 'completed']));
  const offsets = await page.evaluate(async (hosts) => {
    const p = await import('/assets/panels.js');
    return Object.values(hosts).map((x) => p.fmtOffset(x.agent));
  }, run.summary.hosts);
  assert.deepEqual(agents.map((a) => a[3]), offsets);
  assert.equal(offsets[1], "−1.23 ms ± 2.50 ms");
  assert.equal(await page.$eval('table.agents tr[data-host="h2"] td:nth-child(4)', (e) => e.className), 'em');
  // The top bar: how many hosts, each one's status and offset on hover.
  const chip = await page.$eval('.hosts-chip', (e) => [e.textContent, e.title]);
  assert.equal(chip[0], '4 hosts');
  assert.match(chip[1], /^h1: completed, clock −2.47 ms ± 40.0 µs\nh2: completed, clock −1.23 ms ± 2.50 ms\n/);
  await page.locator('details[data-panel="summary"]').screenshot({ path: path.join(SHOTS, 'hosts-summary.png') });
  // The system configuration: each host's agent object, the plan it ran apart.
  await page.click('details[data-panel="config"] > summary');
  const card = page.locator('.host-card[data-host="h2"]');
  const tree = await card.locator('.kv-tree').textContent();
  assert.ok(tree.includes('clock_uncertainty_ns') && !tree.includes('plan_json'), tree);
  assert.equal(await card.locator('details.host-plan pre').textContent(), '{}');
  await card.locator('details.host-plan > summary').click();
  await page.locator('details[data-panel="config"]').screenshot({ path: path.join(SHOTS, 'hosts-config.png') });
  assert.deepEqual(errors, []);
});

test('the HTML report of the four hosts has their rows, their agents, the host breakdown and the note', async () => {
  const report = path.join(path.dirname(results), 'hosts.html');
  ioscope(['report', results, '-o', report, '--force']);
  const { page, errors } = await open(browser, `file://${report}#run=0&c=ops,by=host,kind=stacked`);
  const [c] = await drawn(page);
  assert.deepEqual([c.by, c.drawn.series, c.drawn.message], ['host', 4, undefined]);
  assert.deepEqual(await page.$$eval('table.ops tr.host', (els) => els.map((e) => e.dataset.host)), HOSTS);
  assert.deepEqual(await page.$$eval('table.agents tbody tr', (els) => els.map((e) => e.dataset.host)), HOSTS);
  assert.equal(await page.$eval('.hosts-chip', (e) => e.textContent), '4 hosts');
  const notes = await page.$$eval('ul.notes li', (els) => els.map((e) => e.textContent));
  assert.ok(notes.some((n) => n.includes(`host ${SLOW} differs`)), notes.join('\n'));
  assert.deepEqual(errors, []);
});
