// The summary panel's total row says what it counts, as the API's summary labels it: a
// run with fdatasync after each write counts writes only in its total.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ioscope, serve, launch, open, tmpdir } from './harness.mjs';

let server;
let browser;
before(async () => {
  const dir = tmpdir();
  const results = path.join(dir, 'sync.db');
  ioscope(['run', '--engine', 'posix', '--rw', 'randwrite', '--bs', '4k', '--size', '4m', '--sync', 'fdatasync',
    '--rate-iops', '200', '--duration', '2s', '--dir', path.join(dir, 'w'), '--out', results, '--quiet']);
  server = await serve(['ui', results, '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test('the summary panel labels the total row with what it counts, as the API does', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0`);
  const run = await page.evaluate(async () => (await fetch('/api/v1/runs/0')).json());
  assert.equal(run.summary.total_label, 'total (write)');
  const labels = await page.$$eval('table.ops tr.total td.key', (tds) => tds.map((td) => td.textContent));
  assert.deepEqual(labels, ['total (write)']);
  assert.deepEqual(errors, []);
});
