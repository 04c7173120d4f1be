// Heat maps of long runs in columns of several seconds (column_seconds, docs/api.md): what
// the UI asks for, how it reads the answer, and that no pixel column is left empty.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { queryPath, unpackHeatmap } from '../../crates/web/assets/api.js';
import { prepareHeat, columnBins, columnSecondsFor, coveredSeconds, indexRange, bucketCounts } from '../../crates/web/assets/histo.js';

test('the query asks for columns of several seconds only when there are more than one', () => {
  assert.equal(queryPath('0', 'heatmap', { stat: 'latency', columnSeconds: 3 }), '/api/v1/runs/0/heatmap?stat=latency&encoding=packed&column_seconds=3');
  assert.equal(queryPath('0', 'heatmap', { stat: 'latency', columnSeconds: 1 }), '/api/v1/runs/0/heatmap?stat=latency&encoding=packed');
  assert.equal(queryPath('0', 'series', { stat: 'ops', columnSeconds: 3 }), '/api/v1/runs/0/series?stat=ops');
});

test('an hour on a plot of 1,186 pixel columns is asked for in columns of 3 seconds, a minute in seconds', () => {
  assert.equal(columnSecondsFor(3600, 1186), 3);
  assert.equal(columnSecondsFor(60, 1186), 1);
  assert.equal(columnSecondsFor(2000, 1186), 1);
  assert.equal(columnSecondsFor(3600, 0), 3600);
});

test('every pixel column of a whole-run view gets at least one column start', () => {
  for (const n of [2400, 3600, 3601, 7200, 86400]) {
    for (const w of [240, 700, 1186, 1999]) {
      const cs = columnSecondsFor(n, w);
      const from = 17;
      const bins = columnBins(from, from + n - 1, w);
      const hit = new Uint8Array(bins.nbins);
      for (let s = from; s < from + n; s += cs) hit[bins.binOf(s)] = 1;
      assert.equal(hit.indexOf(0), -1, `${n} s on ${w} px in columns of ${cs} s`);
    }
  }
});

// A packed answer of 7 seconds in columns of 3: seconds 10-12, 13-15, 16.
function packedColumns() {
  const b64 = (bytes) => Buffer.from(bytes).toString('base64');
  return {
    stat: 'latency', unit: 'ns', by: 'op', where: '', from: 10, to: 16, relative_error: 0.0039,
    seconds: [10, 13, 16], column_seconds: 3, encoding: 'packed',
    buckets: [[1000, 1007], [2000, 2015], [5000, 5031]],
    // Columns: [0:4, 2:1], [], [1:300]
    series: [{ key: 'read', total: 305, lengths: b64([2, 0, 1]), steps: b64([0, 2, 1]), counts: b64([4, 1, 0xac, 0x02]) }],
  };
}

test('a packed answer in columns decodes with its width and its columns exact', () => {
  const heat = prepareHeat(unpackHeatmap(packedColumns()));
  assert.equal(heat.columnSeconds, 3);
  assert.deepEqual(heat.seconds, [10, 13, 16]);
  assert.deepEqual(heat.series[0].columns.map((c) => Array.from(c)), [[0, 4, 2, 1], [], [1, 300]]);
  const [i0, i1] = indexRange(heat.seconds, 10, 16);
  assert.deepEqual(Array.from(bucketCounts(heat, null, i0, i1)), [4, 300, 1]);
  // An answer without columns is one per second.
  const { column_seconds: _, ...perSecond } = packedColumns();
  assert.equal(prepareHeat(unpackHeatmap(perSecond)).columnSeconds, 1);
});

test('the hover names the seconds the columns under the cursor cover', () => {
  const heat = prepareHeat(unpackHeatmap(packedColumns()));
  // A pixel column holding seconds 12-14 sums the column that starts at 13: 13-15.
  assert.deepEqual(coveredSeconds(heat, 12, 14), [13, 15]);
  assert.deepEqual(coveredSeconds(heat, 10, 13), [10, 15]);
  assert.deepEqual(coveredSeconds({ ...heat, columnSeconds: 1 }, 12, 14), [12, 14]);
});
