// The compare view: two runs of one workload at 1,000 and 1,200 IOPS, the second compared
// with the first. The panel lists each figure of A and B, the difference, and (one run
// each) says it may be noise. Screenshot: $IOSCOPE_SCREENSHOTS/compare-table.png.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ioscope, serve, launch, open, tmpdir, SHOTS } from './harness.mjs';

let dir;
let server;
let browser;
before(async () => {
  dir = tmpdir();
  for (const [name, rate] of [['slow', '1000'], ['fast', '1200']]) {
    ioscope(['run', '--engine', 'null', '--rate-iops', rate, '--duration', '2s', '--quiet', '--out', path.join(dir, `${name}.db`)]);
  }
  server = await serve(['ui', path.join(dir, 'slow.db'), path.join(dir, 'fast.db'), '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test('a compare run shows the table of B against A with the difference and "may be noise"', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0&cmp=1&c=ops,by=op`);
  await page.waitForSelector('table.grid.comparison');
  await page.locator('details[data-panel="compare"]').screenshot({ path: path.join(SHOTS, 'compare-table.png') });
  const rows = await page.$$eval('table.grid.comparison tbody tr', (trs) => trs.map((tr) => ({
    op: tr.dataset.op, figure: tr.dataset.figure, finding: tr.dataset.finding,
    cells: [...tr.querySelectorAll('td')].map((td) => td.textContent),
  })));
  const iops = rows.find((r) => r.op === 'read' && r.figure === 'IOPS');
  assert.ok(iops, JSON.stringify(rows));
  assert.equal(iops.finding, 'noise');
  const pct = Number(iops.cells[4].match(/\(\+([\d.]+)%\)/)[1]);
  assert.ok(pct > 18 && pct < 22, `IOPS +${pct}%`);
  assert.equal(iops.cells[5], 'may be noise');
  assert.equal(iops.cells[6], '—');
  assert.ok(rows.some((r) => r.op === 'total' && r.figure === 'latency p99'), 'the total row');
  const text = await page.textContent('details[data-panel="compare"]');
  assert.match(text, /workload differs: rate_iops/);
  assert.match(text, /one run each: a difference may be noise/);
  // Without a compare run there is no compare panel.
  await page.goto(`${server.url}#run=0&c=ops,by=op`);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  assert.equal(await page.$('details[data-panel="compare"]'), null);
  assert.deepEqual(errors, []);
});
