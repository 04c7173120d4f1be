// queryPath is both the live URL and the key of an embedded report's responses, so it
// must be byte-exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { queryPath, getData, getRuns, isEmbedded } from '../../crates/web/assets/api.js';

test('query paths are exact', () => {
  assert.equal(queryPath('0', 'series', { stat: 'ops' }), '/api/v1/runs/0/series?stat=ops');
  assert.equal(queryPath('0', 'heatmap', { stat: 'latency', by: 'op' }), '/api/v1/runs/0/heatmap?stat=latency&by=op&encoding=packed');
  assert.equal(
    queryPath('1', 'heatmap', { stat: 'latency', by: 'host', where: 'op:write;host:h1' }),
    '/api/v1/runs/1/heatmap?stat=latency&by=host&where=op:write;host:h1&encoding=packed',
  );
  assert.equal(
    queryPath('0', 'series', { stat: 'ops', where: 'workload:a b&c', from: 10, to: 20 }),
    '/api/v1/runs/0/series?stat=ops&where=workload:a%20b%26c&from=10&to=20',
  );
  assert.equal(queryPath('0', 'series', { stat: 'ops', by: '', where: '' }), '/api/v1/runs/0/series?stat=ops');
  assert.equal(queryPath('0', 'series', { stat: 'ops', from: 0 }), '/api/v1/runs/0/series?stat=ops&from=0');
});

test('an embedded report answers by exact key and says what it lacks', async () => {
  const runs = { api_version: 1, runs: [{ id: '0', name: 'r' }] };
  const resp = { stat: 'ops', seconds: [] };
  globalThis.window = {
    IOSCOPE_EMBEDDED: { runs, responses: { '/api/v1/runs/0/series?stat=ops&by=op': resp }, worksheet: 'run=0' },
  };
  try {
    assert.ok(isEmbedded());
    assert.equal(await getRuns(), runs);
    assert.equal(await getData('0', 'series', { stat: 'ops', by: 'op' }), resp);
    await assert.rejects(getData('0', 'series', { stat: 'ops' }), (e) => e.notIncluded && /not included in this report/.test(e.message));
  } finally {
    delete globalThis.window;
  }
});
