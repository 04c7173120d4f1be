// The summary panel says what ran before the measured run and what ended it: a run with a
// precondition (the working set written twice, not measured) that ends by amount shows
// both lines, with the figures of the summary's JSON.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ioscope, serve, launch, open, tmpdir, SHOTS } from './harness.mjs';

let server;
let browser;
before(async () => {
  const dir = tmpdir();
  const results = path.join(dir, 'r.db');
  ioscope(['run', '--rw', 'randread', '--bs', '4k', '--size', '8m', '--dir', path.join(dir, 'w'), '--quiet',
    '--precondition', '2x sequential write', '--number-ios', '4000', '--out', results]);
  server = await serve(['ui', results, '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test('the summary panel shows the precondition and what ended the run', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0`);
  const run = await page.evaluate(async () => (await fetch('/api/v1/runs/0')).json());
  const p = run.summary.precondition;
  assert.equal(p.bytes, 2 * 8 * 1024 * 1024, JSON.stringify(p));
  assert.equal(run.summary.ended.by, 'amount');
  await page.waitForSelector('.phases');
  const pre = await page.$eval('.precondition-line', (e) => e.textContent);
  assert.match(pre, /^Precondition \(2x sequential write, not measured\): 16 MiB of 16 MiB in 128 KiB writes in [\d.]+ s, [\d,.]+ MB\/s/);
  assert.match(pre, /no errors\.$/);
  const data = await page.$eval('.content-line', (e) => e.textContent);
  const c = run.summary.content;
  assert.equal(c.asked, 'random (default)');
  assert.match(data, new RegExp(`^Data asked random \\(default\\); measured over [\\d.]+ MiB read back: compresses ${c.compress_ratio.toFixed(2)}:1 \\(lz4\\)`));
  const ended = await page.$eval('.ended-line', (e) => e.textContent);
  assert.equal(ended, 'Ended by amount: every workload issued its number_ios 4,000.');
  // The planned time of a run that may end earlier is its most.
  const figs = await page.$eval('.summary-block', (e) => e.textContent);
  assert.match(figs, /of at most 86400 s planned/);
  const block = await page.$('.summary-block');
  await block.screenshot({ path: path.join(SHOTS, 'phases.png') });
  assert.deepEqual(errors, []);
});
