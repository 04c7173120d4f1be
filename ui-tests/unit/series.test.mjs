// Line and stacked charts: what the y axis and the side panel show.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  prepareSeries, sideTotals, stack, stackOrder, linearRange, percentileRange, timelineMarks,
  timelineFromSteps, mergeSeries, probeRange, stepRuns, stepLine,
} from '../../crates/web/assets/series.js';

const fixture = (name) => JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url)));

test('stacked tops are the running sums of the layers', () => {
  const ser = prepareSeries(fixture('series-ops-by-op.json'));
  const tops = stack(ser.series.map((s) => s.values), 0, 6);
  assert.deepEqual([...tops[0]].slice(0, 3), [1000, 1200, 800]);
  assert.deepEqual([...tops[1]].slice(0, 3), [1400, 1700, 1100], 'read + write');
  assert.ok(Number.isNaN(tops[1][3]), 'a second with no tick stored is a gap, not zero');
  assert.equal(tops[1][4], 2100);
});

test('the stacked y axis covers the tallest stack; a highlight rescales to it alone', () => {
  const ser = prepareSeries(fixture('series-ops-by-op.json'));
  assert.equal(linearRange(ser, 0, 6, null, true).ymax, 2500, 'tallest stack 2100 -> 2500');
  assert.equal(linearRange(ser, 0, 6, null, false).ymax, 1600, 'lines: largest value 1500');
  const onlyWrite = linearRange(ser, 0, 6, new Set(['write']), true);
  assert.equal(onlyWrite.ymax, 700, 'write alone peaks at 600');
  assert.deepEqual(stackOrder(['read', 'write'], new Set(['write'])), ['write', 'read'], 'highlighted at the bottom');
  // zooming to seconds 1..2 lowers the axis
  assert.equal(linearRange(ser, 1, 3, null, true).ymax, 2000);
});

test('side panel: average rate for counters, count for distributions', () => {
  const ops = prepareSeries(fixture('series-ops-by-op.json'));
  const t = sideTotals(ops, 0, 6);
  assert.equal(t[0].key, 'read');
  assert.equal(t[0].value, 1200, 'average over the 5 seconds with a value');
  assert.equal(t[1].value, 480);
  const lat = prepareSeries(fixture('series-latency-by-op.json'));
  const d = sideTotals(lat, 0, 6);
  assert.deepEqual(d.map((x) => x.value), [1810, 170]);
  const probe = prepareSeries(fixture('series-probe.json'));
  const p = sideTotals(probe, 0, 6)[0];
  assert.equal(p.count, 2, 'two probe runs');
  assert.equal(p.value, 1_200_000_000, 'the longest');
  assert.equal(probeRange(probe, 0, 6).ymax, 1_400_000_000);
});

test('percentile lines get a log range from the lowest p50 to the highest max', () => {
  const lat = prepareSeries(fixture('series-latency-by-op.json'));
  const all = percentileRange(lat, 0, 6, null, 'ns');
  assert.ok(all.ymin <= 58 && all.ymax >= 4_210_687, `${all.ymin}..${all.ymax}`);
  const read = percentileRange(lat, 2, 3, new Set(['read']), 'ns');
  assert.ok(read.ymin <= 1035 && read.ymax >= 1035 && read.ymax < 100_000, `${read.ymin}..${read.ymax}`);
});

test('steps and warm-up seconds are found for shading', () => {
  const ops = prepareSeries(fixture('series-ops-by-op.json'));
  const m = timelineMarks(ops, 0, 5);
  assert.deepEqual(m.bounds, [{ second: 3, step: 1 }]);
  assert.deepEqual(m.warm, [[0, 0], [3, 3]]);
  assert.deepEqual(timelineMarks(ops, 1, 2), { start: { second: 1, step: 0 }, bounds: [], warm: [] });
  const run = fixture('run-0.json');
  const tl = timelineFromSteps(run.steps, 0, 5);
  assert.deepEqual(tl.step, ops.step);
  assert.deepEqual(tl.warmup, ops.warmup);
});

test('live updates append seconds; an overlapping second is replaced', () => {
  const ops = prepareSeries(fixture('series-ops-by-op.json'));
  const add = {
    stat: 'ops', unit: 'ops/s', kind: 'counter', by: 'op', where: '', from: 5, to: 6,
    seconds: [5, 6], step: [1, 1], warmup: [false, false],
    series: [{ key: 'read', total: 3000, values: [1400, 1600] }, { key: 'fsync', total: 10, values: [5, 5] }],
  };
  const m = mergeSeries(ops, add);
  assert.deepEqual(m.seconds, [0, 1, 2, 3, 4, 5, 6]);
  const read = m.series.find((s) => s.key === 'read');
  assert.deepEqual(read.values.slice(4), [1500, 1400, 1600]);
  const write = m.series.find((s) => s.key === 'write');
  assert.deepEqual(write.values.slice(4), [600, null, null], 'no newer value for write');
  const fsync = m.series.find((s) => s.key === 'fsync');
  assert.equal(fsync.values.length, 7);
  assert.equal(fsync.values[0], null);
});

test('step 0 is labelled at the left edge, and the knee step is marked', () => {
  const ops = prepareSeries(fixture('series-ops-by-op.json'));
  const m = timelineMarks(ops, 0, 5);
  assert.deepEqual(m.start, { second: 0, step: 0 }, 'step 0 has no boundary but gets a label');
  const zoomed = timelineMarks(ops, 4, 5);
  assert.deepEqual(zoomed.start, { second: 4, step: 1 }, 'the step in force at the left edge');
  assert.deepEqual(timelineMarks(ops, 3, 5).start, null, 'a boundary at the left edge labels itself');
  const knee = timelineMarks(ops, 0, 5, 1);
  assert.deepEqual(knee.bounds, [{ second: 3, step: 1, knee: true }]);
  assert.equal(knee.start.knee, undefined);
  assert.equal(timelineMarks(ops, 0, 5, 0).start.knee, true, 'a knee at step 0 marks its label');
});

test('the side panel averages a step over its own measured seconds, as the step table does', () => {
  // Seconds 0-7: step 0 on 0-3 (0 warm-up), step 1 on 4-7 (4 warm-up); the answer holds 0
  // for a step's value at the other step's seconds.
  const ser = prepareSeries({
    stat: 'ops', unit: 'ops/s', kind: 'counter', by: 'step', where: '',
    seconds: [0, 1, 2, 3, 4, 5, 6, 7], step: [0, 0, 0, 0, 1, 1, 1, 1],
    warmup: [true, false, false, false, true, false, false, false],
    series: [
      { key: '0', values: [100, 40000, 44000, 49581, 0, 0, 0, 0] },
      { key: '1', values: [0, 0, 0, 0, 300, 50000, 60000, 70000] },
    ],
  });
  const t = sideTotals(ser, 0, 8);
  assert.equal(t[0].value, 44527, 'step 0: seconds 1-3, not the whole range');
  assert.equal(t[1].value, 60000);
  // Zoomed into step 1's warm-up second alone: that second is all the step has there.
  assert.equal(sideTotals(ser, 4, 5)[1].value, 300);
  assert.equal(sideTotals(ser, 4, 5)[0].value, null, 'step 0 has no second there');
});

test('per-second values are steps: flat across each second, edges at changes, gaps kept', () => {
  const seconds = [10, 11, 12, 14, 15];
  const ys = [5, 8, 8, 3, NaN];
  const runs = stepRuns(seconds, ys, 0);
  assert.deepEqual(runs, [[0, 3], [3, 4]], 'second 13 is missing: two runs; NaN ends the second');
  assert.deepEqual(stepLine(seconds, ys, 0, 0, 3), [[10, 5], [11, 5], [11, 8], [12, 8], [12, 8], [13, 8]],
    'the change at 11 is a vertical edge, not a ramp from 10.5 to 11.5');
  const [first, last] = [stepLine(seconds, ys, 0, 0, 3)[0][0], stepLine(seconds, ys, 0, 0, 3).at(-1)[0]];
  assert.deepEqual([first, last], [10, 13], 'the first and last seconds are covered whole, no blank half-seconds');
  assert.deepEqual(stepRuns([3, 4, 5], [1, 2, 3], 0), [[0, 3]]);
  assert.deepEqual(stepRuns([0, 1, 2, 3], [1, 2, 3], 1), [[0, 3]], 'ys start at seconds[i0]');
  assert.deepEqual(stepRuns([0, 1, 5, 6], [1, 2, 3], 1), [[0, 1], [1, 3]], 'a gap after seconds[i0]');
});

test('p99.9 and max lines are told apart by colour, not only by dash', async () => {
  const { PERCENTILE_COLORS, hexToRgb } = await import('../../crates/web/assets/color.js');
  const dist = (a, b) => Math.hypot(...hexToRgb(a).map((v, i) => v - hexToRgb(b)[i]));
  assert.ok(dist(PERCENTILE_COLORS.p999, PERCENTILE_COLORS.max) > 120,
    `p99.9 ${PERCENTILE_COLORS.p999} vs max ${PERCENTILE_COLORS.max}`);
  for (const [a, b] of [['p50', 'p90'], ['p90', 'p99'], ['p99', 'p999']]) {
    assert.ok(dist(PERCENTILE_COLORS[a], PERCENTILE_COLORS[b]) > 90, `${a} vs ${b}`);
  }
});
