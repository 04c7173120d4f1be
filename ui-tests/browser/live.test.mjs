// A live run (`run --ui`) followed in the browser: new seconds arrive over the event
// stream (/api/v1/runs/{id}/events) and the charts grow while the run goes on; the heat
// maps come in the packed encoding.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { serve, launch, ready, tmpdir } from './harness.mjs';

test('a live run is followed over the event stream and its heat maps come packed', async () => {
  const dir = tmpdir();
  const server = await serve(['run', '--engine', 'null', '--rate-iops', '2000', '--duration', '8s', '--quiet',
    '--out', path.join(dir, 'live.db'), '--ui', '--listen', '127.0.0.1:0']);
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const requests = [];
    page.on('request', (r) => requests.push(r.url()));
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(server.url);
    await ready(page);
    const lastShown = () => page.$$eval('section.chart', (els) => Math.max(...els.map((e) => (e.dataset.drawn ? JSON.parse(e.dataset.drawn).to : -1))));
    const start = await lastShown();
    // Until the charts show a later second than at load, or the run is over.
    let shown = start;
    for (let i = 0; i < 200 && shown <= start; i++) {
      await new Promise((r) => setTimeout(r, 100));
      shown = await lastShown();
    }
    assert.ok(shown > start, `the charts grew while the run went on (second ${start} at load, ${shown} later)`);
    assert.ok(requests.some((u) => /\/api\/v1\/runs\/0\/events$/.test(u)), 'the page opened the event stream');
    const heat = requests.filter((u) => u.includes('/heatmap?'));
    assert.ok(heat.length > 0 && heat.every((u) => u.includes('encoding=packed')), heat.join('\n'));
    assert.deepEqual(errors, []);
    await page.close();
  } finally {
    await browser.close();
    server.close();
  }
});
