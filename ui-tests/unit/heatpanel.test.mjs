// The heat map's side-panel state in the link: a picked value range and a pinned second.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeState, encodeState, completeState } from '../../crates/web/assets/state.js';

test('a pinned second and a picked value range survive the link', () => {
  const st = decodeState('#run=0&c=latency,by=op,kind=heatmap,yr=20000-50000,pin=7');
  assert.deepEqual(st.charts[0].yr, [20000, 50000]);
  assert.equal(st.charts[0].pin, 7);
  const again = decodeState(encodeState(completeState(st, '0', null)));
  assert.deepEqual([again.charts[0].yr, again.charts[0].pin], [[20000, 50000], 7]);
  // Nonsense is ignored, not drawn: a range upside down, a pin that is not a second.
  const bad = decodeState('#run=0&c=latency,kind=heatmap,yr=50-20,pin=-3&c=offset,pin=x,yr=1e3-2');
  assert.deepEqual(bad.charts.map((c) => [c.yr, c.pin]), [[null, null], [null, null]]);
  assert.doesNotMatch(encodeState(completeState(decodeState('#run=0&c=latency'), '0', null)), /yr=|pin=/, 'unset: not written');
});
