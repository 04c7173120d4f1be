// The packed heat-map encoding decodes to exactly the JSON form's cells. Both fixtures are
// the API's answers to the same query (ui-tests/fixtures/generated/, written by the Rust
// test ui_fixtures_are_what_the_api_answers).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { unpackHeatmap } from '../../crates/web/assets/api.js';
import { prepareHeat } from '../../crates/web/assets/histo.js';

const fixture = (name) => JSON.parse(readFileSync(new URL(`../fixtures/generated/${name}`, import.meta.url)));

test('a packed heat map decodes to the same cells as the JSON form', () => {
  const json = fixture('heatmap-latency-by-op.json');
  const packed = fixture('heatmap-latency-by-op.packed.json');
  assert.equal(packed.encoding, 'packed');
  const un = unpackHeatmap(packed);
  assert.equal(un.encoding, undefined);
  assert.deepEqual(un.buckets, json.buckets);
  assert.deepEqual(un.seconds, json.seconds);
  assert.equal(un.series.length, json.series.length);
  let cells = 0;
  un.series.forEach((s, i) => {
    assert.equal(s.key, json.series[i].key);
    assert.equal(s.total, json.series[i].total);
    assert.deepEqual(s.columns.map((c) => Array.from(c)), json.series[i].columns);
    for (const c of s.columns) cells += c.length / 2;
  });
  assert.ok(cells > 0, 'the fixture has cells');
  // And the UI shapes both alike.
  const a = prepareHeat(un);
  const b = prepareHeat(json);
  assert.deepEqual(Array.from(a.lo), Array.from(b.lo));
});

test('a JSON heat map and other answers pass through unchanged', () => {
  const json = fixture('heatmap-latency-by-op.json');
  assert.equal(unpackHeatmap(json), json);
});

test('a truncated packed heat map is refused, not drawn wrong', () => {
  const packed = fixture('heatmap-latency-by-op.packed.json');
  const s = packed.series[0];
  const cut = { ...packed, series: [{ ...s, counts: '' }] };
  assert.throws(() => unpackHeatmap(cut), /ends early/);
});
