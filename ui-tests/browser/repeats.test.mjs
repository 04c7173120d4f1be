// A run with repeats (--repeat): the step table names each step's repeat, and the summary
// panel gives each step's mean over the repeats with its interval, as the API's summary does.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ioscope, serve, launch, open, tmpdir } from './harness.mjs';

let server;
let browser;
before(async () => {
  const results = path.join(tmpdir(), 'repeats.db');
  ioscope(['run', '--engine', 'null', '--set', 'for_threads=[1,2]', '--rate-iops', '500', '--duration', '1s',
    '--repeat', '2', '--out', results, '--quiet']);
  server = await serve(['ui', results, '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test('the step table names the repeat of each step and the summary gives the intervals of the repeats', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0`);
  const run = await page.evaluate(async () => (await fetch('/api/v1/runs/0')).json());
  assert.equal(run.summary.repeats.count, 2);
  // (A knee badge may follow the first repeat's label: the label is the cell's first text.)
  const steps = await page.$$eval('table.steps tbody td.key', (tds) => tds.map((td) => td.firstChild.textContent));
  assert.deepEqual(steps, ['repeat 0 threads=1 rate=500', 'repeat 0 threads=2 rate=500', 'repeat 1 threads=1 rate=500',
    'repeat 1 threads=2 rate=500']);
  const iops = await page.$$eval('table.repeats tbody tr', (rows) => rows
    .map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent))
    .filter((cells) => cells[1] === 'IOPS'));
  assert.equal(iops.length, 2, 'one IOPS row per step of the plan');
  const mean = run.summary.repeats.steps[1].ops.total.iops.mean;
  assert.equal(iops[1][0], '1 threads=2 rate=500');
  assert.equal(iops[1][2], Math.round(mean).toLocaleString('en-US'));
  assert.match(iops[1][3], /^± \d+\.\d%$/);
  assert.deepEqual(errors, []);
});
