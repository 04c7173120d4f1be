// The UI's shaping over what the API really answers: every fixture here is an answer of
// the server for the small results file of the Rust tests (ui-tests/fixtures/generated/,
// written and kept current by the Rust test ui_fixtures_are_what_the_api_answers). That
// run has seconds 0..4 on hosts a and b, host b misses second 2, nobody stored second 3,
// second 1 lasted 0.5 s, second 0 is warm-up, and a probe ran twice.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { prepareSeries, sideTotals, stack, timelineMarks, probeRange } from '../../crates/web/assets/series.js';
import { prepareHeat, keyTotals, valuesAt } from '../../crates/web/assets/histo.js';
import { unpackHeatmap } from '../../crates/web/assets/api.js';

const answer = (name) => JSON.parse(readFileSync(new URL(`../fixtures/generated/${name}`, import.meta.url)));

test('counter answers: rates per second, a gap where nothing was stored, parts that sum to the whole', () => {
  const byOp = prepareSeries(answer('series-ops-by-op.json'));
  const all = prepareSeries(answer('series-ops.json'));
  assert.deepEqual(byOp.series.map((s) => s.key), ['read', 'write']);
  // 101 reads on each host in half a second: 404/s.
  assert.equal(byOp.series[0].values[1], 404);
  assert.equal(all.series[0].values[3], null, 'second 3 was never stored: a gap, not zero');
  const tops = stack(byOp.series.map((s) => s.values), 0, 5);
  for (const i of [0, 1, 2, 4]) assert.equal(tops[1][i], all.series[0].values[i], `second ${i}: read + write = all`);
  assert.ok(Number.isNaN(tops[1][3]), 'the stacked chart leaves the gap');
  // The side panel averages over the seconds that have a value.
  assert.deepEqual(sideTotals(byOp, 0, 5).map((t) => [t.key, t.count, t.value]), [['read', 4, 228.5], ['write', 4, 112.5]]);
  assert.deepEqual(timelineMarks(byOp, 0, 4).warm, [[0, 0]], 'second 0 is warm-up');
});

test('a second with nothing stored is not a step boundary', () => {
  const byOp = prepareSeries(answer('series-ops-by-op.json'));
  assert.deepEqual(timelineMarks(byOp, 0, 4).bounds, [{ second: 2, step: 1 }, { second: 4, step: 2 }]);
});

test('distribution answers: the line chart and the heat map count the same I/Os', () => {
  const lat = answer('series-latency-by-op.json');
  const counts = sideTotals(prepareSeries(lat), 0, 5).map((t) => [t.key, t.count]);
  assert.deepEqual(counts, lat.series.map((s) => [s.key, s.total]));
  const heat = prepareHeat(answer('heatmap-latency-by-op.json'));
  assert.deepEqual(keyTotals(heat, 0, 5).map((t) => [t.key, t.count]), counts);
  // The packed form the UI asks for decodes to the same totals.
  const packed = prepareHeat(unpackHeatmap(answer('heatmap-latency-by-op.packed.json')));
  assert.deepEqual(keyTotals(packed, 0, 5), keyTotals(heat, 0, 5));
  // Writes took about 2 ms: the cursor's list shows buckets around it, highest first.
  const at = valuesAt(heat, new Set(['write']), 0, 1);
  assert.ok(at.length > 0 && at.every((b) => b.lo <= b.hi && b.lo >= 1.9e6 && b.hi < 2.1e6), JSON.stringify(at));
  assert.ok(at[0].lo > at[at.length - 1].lo, 'highest first');
});

test('a heat map has empty columns for the seconds nothing was stored', () => {
  const off = prepareHeat(answer('heatmap-offset.json'));
  assert.deepEqual(off.seconds, [0, 1, 2, 3, 4]);
  assert.deepEqual(valuesAt(off, null, 3, 4), [], 'second 3: nothing');
  assert.equal(keyTotals(off, 0, 5)[0].count, off.series[0].total);
});

test('probe answers: how many ran and the longest', () => {
  const probe = prepareSeries(answer('series-probe.json'));
  assert.deepEqual(sideTotals(probe, 0, 5).map((t) => [t.key, t.count, t.value]), [['all', 2, 700_000_000]]);
  assert.ok(probeRange(probe, 0, 5).ymax >= 700_000_000);
});
