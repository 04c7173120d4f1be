// The summary panel lists the run's verdicts as the API's summary gives them, most severe
// first: a severity badge, the message and the measured evidence (key: value, in the
// unit its key names). Buffered re-reads of a small file are the client-cache trap.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ioscope, serve, launch, open, tmpdir, SHOTS } from './harness.mjs';

let server;
let browser;
before(async () => {
  const dir = tmpdir();
  const results = path.join(dir, 'cached.db');
  ioscope(['run', '--engine', 'posix', '--rw', 'randread', '--bs', '4k', '--size', '4m', '--duration', '2s',
    '--dir', path.join(dir, 'w'), '--out', results, '--quiet']);
  server = await serve(['ui', results, '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test('the summary panel shows each verdict with its severity, message and evidence', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0`);
  const run = await page.evaluate(async () => (await fetch('/api/v1/runs/0')).json());
  const want = run.summary.verdicts;
  const cache = want.find((v) => v.id === 'client-cache');
  assert.ok(cache, JSON.stringify(want, null, 1));

  const shown = await page.$$eval('ul.verdicts li.verdict', (els) => els.map((e) => ({
    id: e.dataset.verdict,
    severity: e.querySelector('.severity').textContent,
    message: e.querySelector('.verdict-message').textContent,
    evidence: [...e.querySelectorAll('.evidence > span')].map((s) => s.textContent),
  })));
  assert.deepEqual(shown.map((v) => [v.id, v.severity]), want.map((v) => [v.id, v.severity]), 'every verdict, in order');
  const li = shown.find((v) => v.id === 'client-cache');
  assert.ok(li.message.startsWith(cache.message), li.message);
  assert.equal(li.evidence.length, Object.keys(cache.evidence).length);
  // Nanoseconds in words, percentages with their sign.
  const p50 = li.evidence.find((e) => e.startsWith('read_latency_p50_ns:'));
  assert.match(p50, /^read_latency_p50_ns: [\d.]+ (ns|µs)$/);
  assert.ok(li.evidence.some((e) => /^reads_below_floor_pct: [\d.]+%$/.test(e)), li.evidence.join('\n'));
  assert.ok(li.evidence.includes('floor_ns: 10.5 µs'), li.evidence.join('\n'));

  const block = await page.$('.summary-block');
  await block.screenshot({ path: path.join(SHOTS, 'verdicts.png') });
  assert.deepEqual(errors, []);
});
