// The URL is the worksheet: a link must reproduce the view exactly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  encodeState, decodeState, completeState, defaultState, makeChart, chartTitle, drillDims, drillChart,
  visibleRange, zoomOut, pan, kindsFor, drillOptions, statTakes, selectionWhere,
} from '../../crates/web/assets/state.js';

const run = JSON.parse(readFileSync(new URL('../fixtures/run-0.json', import.meta.url)));
const stat = (name) => run.stats.find((s) => s.name === name);

test('every part of the state survives encode then decode', () => {
  const st = {
    run: '0',
    compare: '1',
    range: [10, 50],
    follow: false,
    charts: [
      makeChart('ops', { by: 'op', kind: 'stacked', hl: ['read'] }),
      makeChart('latency', { by: 'host', where: [['op', 'write'], ['op', 'read']], kind: 'heatmap', cut: 0.1, vz: 2, hl: ['h1', 'h2'] }),
      makeChart('offset', { kind: 'heatmap', ys: 'lin', vz: -1 }),
      makeChart('probe', { by: 'probe', kind: 'probe' }),
    ],
  };
  const back = decodeState(encodeState(st));
  assert.deepEqual(back, st);
  const following = { ...st, follow: true };
  assert.deepEqual(decodeState(`#${encodeState(following)}`), following, 'a leading # is accepted');
});

test('awkward names (commas, colons, spaces, unicode) round-trip', () => {
  const st = {
    run: '2', compare: null, range: null, follow: true,
    charts: [makeChart('latency', { by: 'host', where: [['workload', 'a,b:c;d=e&f'], ['host', 'nœud 1']], hl: ['x y', 'ü'] })],
  };
  const h = encodeState(st);
  assert.ok(!h.includes(' '), 'no raw space in the URL');
  assert.deepEqual(decodeState(h), st);
});

test('a hand-written hash decodes to what it says', () => {
  const st = decodeState('#run=1&cmp=0&t=30-90&c=ops,by=op,kind=stacked&c=latency,by=host,where=op:write,kind=heatmap,cut=1,hl=h2');
  assert.equal(st.run, '1');
  assert.equal(st.compare, '0');
  assert.deepEqual(st.range, [30, 90]);
  assert.equal(st.follow, false, 'a fixed range does not follow');
  assert.equal(st.charts.length, 2);
  assert.deepEqual(st.charts[1], {
    stat: 'latency', by: 'host', where: [['op', 'write']], kind: 'heatmap', cut: 1, hl: ['h2'], vz: 0, ys: 'log', yr: null, pin: null,
  });
});

test('an empty hash is the default worksheet; an emptied worksheet stays empty', () => {
  const st = completeState(decodeState(''), '0', run.stats);
  assert.deepEqual(
    st.charts.map((c) => [c.stat, c.by, c.kind]),
    [['ops', 'op', 'stacked'], ['latency', 'op', 'heatmap'], ['offset', '', 'heatmap']],
  );
  assert.equal(st.run, '0');
  assert.equal(st.follow, true);
  assert.deepEqual(encodeState(defaultState('0')), encodeState(st));
  const empty = { ...st, charts: [] };
  assert.deepEqual(decodeState(encodeState(empty)).charts, []);
});

test('offset heat maps default to a linear axis, the others to log; either can be chosen', () => {
  assert.equal(makeChart('offset', {}).ys, 'lin');
  assert.equal(makeChart('latency', {}).ys, 'log');
  assert.equal(decodeState('c=offset,kind=heatmap,ys=lin').charts[0].ys, 'lin');
  assert.equal(decodeState('c=offset,kind=heatmap,ys=log').charts[0].ys, 'log');
  assert.equal(decodeState('c=latency,ys=lin').charts[0].ys, 'lin');
  assert.equal(encodeState({ run: '0', charts: [makeChart('offset', {})] }), 'run=0&c=offset', 'the default is not spelled out');
  assert.equal(encodeState({ run: '0', charts: [makeChart('offset', { ys: 'log' })] }), 'run=0&c=offset,ys=log');
});

test('completing a state fixes kinds the statistic cannot be drawn as', () => {
  const st = completeState(decodeState('run=0&c=ops,kind=heatmap&c=latency&c=probe'), null, run.stats);
  assert.deepEqual(st.charts.map((c) => c.kind), ['line', 'heatmap', 'probe']);
  assert.deepEqual(kindsFor('distribution'), ['heatmap', 'percentiles']);
});

test('titles read as sentences', () => {
  const c = makeChart('latency', { by: 'op', where: [['op', 'write']] });
  assert.equal(chartTitle(c, stat('latency')), 'Latency broken down by op, where op = write');
  const d = makeChart('ops', { by: 'host', where: [['op', 'read'], ['op', 'write'], ['step', '2']] });
  assert.equal(chartTitle(d, stat('ops')), 'Operations broken down by host, where op = read or write, and step = 2');
  assert.equal(chartTitle(makeChart('offset', {}), stat('offset')), 'Offset');
});

test('drill-down offers only the dimensions left, as the statistic list gives them', () => {
  const lat = makeChart('latency', { by: 'op', kind: 'heatmap' });
  assert.deepEqual(drillDims(lat, stat('latency')), ['workload', 'host', 'step']);
  const ops = makeChart('ops', { by: 'op', where: [['host', 'h1']], kind: 'stacked' });
  assert.deepEqual(drillDims(ops, stat('ops')), ['workload', 'step', 'worker']);
  const deeper = drillChart(lat, ['write'], 'host', stat('latency'));
  assert.deepEqual(deeper.where, [['op', 'write']]);
  assert.equal(deeper.by, 'host');
  assert.equal(deeper.kind, 'heatmap');
  assert.deepEqual(drillDims(deeper, stat('latency')), ['workload', 'step']);
  const both = drillChart(lat, ['read', 'write'], 'step', stat('latency'));
  assert.deepEqual(both.where, [['op', 'read'], ['op', 'write']], 'several values: any of them');
  const ops2 = { ...stat('ops'), dimensions: ['op', 'workload', 'host', 'step', 'worker', 'file'] };
  const byWorker = makeChart('ops', { by: 'worker', where: [['op', 'write']] });
  assert.deepEqual(drillDims(byWorker, ops2), ['host', 'step'], 'worker, file and workload do not combine');
  assert.deepEqual(drillDims(makeChart('ops', { by: 'op' }), ops2), ['workload', 'host', 'step', 'worker', 'file']);
  const errors = { ...stat('errors'), dimensions: ['op', 'workload', 'host', 'step', 'worker', 'file', 'error'] };
  assert.deepEqual(drillDims(makeChart('errors', { by: 'error' }), errors), ['op', 'workload', 'host', 'step'],
    'error kinds are per operation: not with worker or file');
  assert.deepEqual(drillDims(makeChart('errors', { by: 'workload' }), errors), ['op', 'host', 'step', 'error']);
  // Distributions per worker and per file: offered as soon as the API lists them.
  const lat2 = { ...stat('latency'), dimensions: ['op', 'workload', 'host', 'step', 'worker', 'file'] };
  assert.deepEqual(drillDims(makeChart('latency', { by: 'op', where: [['op', 'write']] }), lat2), ['workload', 'host', 'step', 'worker', 'file']);
  const last = makeChart('latency', { by: 'step', where: [['op', 'read'], ['host', 'h1'], ['workload', 'main']] });
  assert.deepEqual(drillDims(last, stat('latency')), [], 'nothing left to drill into');
});

test('time range: follow keeps the width at the end; zoom out and pan stay in the run', () => {
  assert.deepEqual(visibleRange({ range: null, follow: true }, 0, 99), [0, 99]);
  assert.deepEqual(visibleRange({ range: [10, 29], follow: true }, 0, 99), [80, 99]);
  assert.deepEqual(visibleRange({ range: [10, 29], follow: false }, 0, 99), [10, 29]);
  assert.deepEqual(visibleRange({ range: [10, 500], follow: false }, 0, 99), [10, 99]);
  assert.deepEqual(zoomOut([40, 59], 0, 99), [30, 69]);
  assert.equal(zoomOut([10, 80], 0, 99), null, 'covering the run means "whole run"');
  assert.deepEqual(pan([40, 59], -1, 0, 99), [30, 49]);
  assert.deepEqual(pan([90, 99], 1, 0, 99), [90, 99]);
  assert.deepEqual(pan([5, 24], -1, 0, 99), [0, 19]);
});

// What the drill menu offers, as [stat, [dims...], [kinds...]].
const menu = (opts) => opts.map((o) => [o.stat, o.charts.map((x) => x.dim), o.charts.map((x) => x.chart.kind)]);

test('the drill menu of a selected value offers every statistic of that selection', () => {
  const ops = makeChart('ops', { by: 'op', kind: 'stacked', hl: ['write'] });
  const opts = drillOptions(ops, ['write'], run.stats);
  assert.deepEqual(menu(opts), [
    ['ops', ['', 'workload', 'host', 'step', 'worker'], ['line', 'stacked', 'stacked', 'stacked', 'stacked']],
    ['bytes', ['', 'workload', 'host', 'step', 'worker'], ['line', 'stacked', 'stacked', 'stacked', 'stacked']],
    ['errors', ['', 'workload', 'host', 'step', 'worker'], ['line', 'stacked', 'stacked', 'stacked', 'stacked']],
    ['latency', ['', 'workload', 'host', 'step'], ['heatmap', 'heatmap', 'heatmap', 'heatmap']],
    ['service_time', ['', 'workload', 'host', 'step'], ['heatmap', 'heatmap', 'heatmap', 'heatmap']],
    ['size', ['', 'workload', 'host', 'step'], ['heatmap', 'heatmap', 'heatmap', 'heatmap']],
    ['offset', ['', 'workload', 'host', 'step'], ['heatmap', 'heatmap', 'heatmap', 'heatmap']],
  ], 'ops where op = write -> the latency, service time, size and offset of just those I/Os; probes have no op');
  const lat = opts.find((o) => o.stat === 'latency').charts[0].chart;
  assert.deepEqual([lat.stat, lat.by, lat.where, lat.kind], ['latency', '', [['op', 'write']], 'heatmap']);
  assert.equal(lat.ys, 'log');
  assert.equal(opts.find((o) => o.stat === 'offset').charts[0].chart.ys, 'lin', 'offset keeps its linear axis');

  // Deeper: the latency of writes, by file, once the API lists file for latency.
  const stats = run.stats.map((s) => (s.kind === 'event' ? s : { ...s, dimensions: [...new Set([...s.dimensions, 'worker', 'file'])] }));
  const deeper = drillOptions(lat, [], stats);
  assert.deepEqual(deeper[0].charts.map((x) => x.dim), ['workload', 'host', 'step', 'worker', 'file'],
    'the chart itself is not offered again; every dimension left is');
  const byFile = deeper[0].charts.find((x) => x.dim === 'file').chart;
  assert.deepEqual([byFile.stat, byFile.by, byFile.where, byFile.kind], ['latency', 'file', [['op', 'write']], 'heatmap']);
  // And from latency by file, a file selected: its counters and distributions, no workload.
  const oneFile = drillOptions(byFile, ['f0'], stats);
  assert.deepEqual(oneFile.map((o) => o.stat), ['latency', 'ops', 'bytes', 'errors', 'service_time', 'size', 'offset'], 'own statistic first');
  assert.deepEqual(oneFile[0].charts.map((x) => x.dim), ['', 'host', 'step'], 'file excludes workload and worker');
});

test('a statistic takes a filter only on its own dimensions, never two exclusive ones', () => {
  assert.ok(statTakes(stat('latency'), [['op', 'write']]));
  assert.ok(!statTakes(stat('latency'), [['worker', '0']]), 'the run lists no worker for latency');
  assert.ok(!statTakes(stat('probe'), [['op', 'write']]));
  assert.ok(!statTakes(stat('ops'), [['worker', '0'], ['workload', 'main']]), 'per-worker rows carry no workload');
  assert.deepEqual(selectionWhere(makeChart('ops', { by: 'op', where: [['host', 'h1']] }), ['read', 'write']),
    [['host', 'h1'], ['op', 'read'], ['op', 'write']]);
  const errs = drillOptions(makeChart('errors', { by: 'error' }), ['EIO'], [{ ...stat('errors'), dimensions: ['op', 'error'] }, stat('latency')]);
  assert.deepEqual(errs.map((o) => o.stat), ['errors'], 'only errors have kinds of failure');
});

test('a report offers only the drill-downs whose answers it embeds', () => {
  const ops = makeChart('ops', { by: 'op', kind: 'stacked' });
  // Embedded: series of every statistic where op = write, heat maps only unbroken.
  const available = (c) => c.where.length === 1 && (c.kind !== 'heatmap' || c.by === '') && (c.by === '' || c.by === 'step');
  const opts = drillOptions(ops, ['write'], run.stats, available);
  assert.deepEqual(menu(opts).find((o) => o[0] === 'latency'), ['latency', ['', 'step'], ['heatmap', 'percentiles']],
    'latency by step is there as percentiles only: offered as percentiles');
  assert.deepEqual(menu(opts).find((o) => o[0] === 'ops'), ['ops', ['', 'step'], ['line', 'stacked']]);
  assert.deepEqual(drillOptions(ops, ['write'], run.stats, () => false), [], 'nothing embedded: nothing offered');
});
