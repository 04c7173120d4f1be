// Target statistics (what the probed server did) as the UI shapes them, from the API's
// answers for the run with target series (fixtures/generated/server-*.json, written from
// crates/web/src/server_fixture.rs), and the summary's target section.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  serverCharts, hasTarget, statGroups, targetHosts, kindsFor, defaultKind, drillOptions, makeChart, completeState, defaultYScale,
} from '../../crates/web/assets/state.js';
import { prepareSeries, sideTotals, linearRange } from '../../crates/web/assets/series.js';
import { fmtValue, fmtTick, fmtWithUnit } from '../../crates/web/assets/format.js';
import { targetSections } from '../../crates/web/assets/target.js';
import { prepareHeat, keyTotals } from '../../crates/web/assets/histo.js';

const fixture = (name) => JSON.parse(readFileSync(new URL(`../fixtures/generated/${name}`, import.meta.url), 'utf8'));
const run = fixture('server-run-0.json');
const clientRun = fixture('run-0.json');

test('the server worksheet is the client latency heat map, block latency under it, process CPU and disk IOPS', () => {
  const charts = serverCharts(run.stats);
  assert.deepEqual(charts.map((c) => [c.stat, c.by, c.kind]), [
    ['latency', 'op', 'heatmap'],
    ['block_latency', 'op', 'heatmap'],
    ['process_cpu', 'process', 'stacked'],
    ['disk_ops', 'disk', 'stacked'],
  ]);
  // Without eBPF there is no block latency: the rest of the worksheet still comes.
  const noEbpf = run.stats.filter((s) => s.name !== 'block_latency');
  assert.deepEqual(serverCharts(noEbpf).map((c) => c.stat), ['latency', 'process_cpu', 'disk_ops']);
  assert.ok(hasTarget(run.stats));
  assert.ok(!hasTarget(clientRun.stats), 'a run without target series offers no server worksheet');
});

test('Add statistic lists the target statistics in their own group named after the probed host', () => {
  assert.deepEqual(targetHosts(run), ['server']);
  const groups = statGroups(run.stats, targetHosts(run));
  assert.deepEqual(groups.map((g) => g.label), ['Client', 'Target (server)']);
  assert.ok(groups[0].stats.every((s) => s.side === 'client'));
  assert.deepEqual(groups[1].stats.map((s) => s.name).slice(0, 3), ['cpu', 'process_cpu', 'page_cache']);
  assert.deepEqual(statGroups(clientRun.stats, []).map((g) => g.label), ['Client']);
  // The summary's target section names the hosts when present (a local probe shares the
  // client's host name).
  assert.deepEqual(targetHosts({ ...run, summary: { ...run.summary, target: { nfs1: {}, nfs2: {} } } }), ['nfs1', 'nfs2']);
});

test('target statistics break down and drill down by their own dimensions', () => {
  const info = (n) => run.stats.find((s) => s.name === n);
  const disk = makeChart('disk_ops', { by: 'disk', kind: 'stacked' });
  const options = drillOptions(disk, ['loop3'], run.stats);
  const stats = options.map((o) => o.stat);
  assert.deepEqual(stats, ['disk_ops', 'disk_bytes', 'disk_busy', 'disk_queue', 'block_latency', 'block_size', 'block_offset']);
  const own = options[0].charts.map((x) => [x.dim, x.chart.kind, x.chart.where]);
  assert.deepEqual(own, [['', 'line', [['disk', 'loop3']]], ['host', 'stacked', [['disk', 'loop3']]], ['op', 'stacked', [['disk', 'loop3']]]]);
  const proc = drillOptions(makeChart('process_cpu', { by: 'process', kind: 'stacked' }), ['ganesha.nfsd'], run.stats);
  assert.deepEqual(proc.map((o) => [o.stat, o.charts.map((x) => x.dim)]), [
    ['process_cpu', ['', 'host', 'mode']],
    ['syscall_latency', ['', 'host', 'syscall']],
  ]);
  assert.equal(proc[1].charts[0].chart.kind, 'heatmap');
  // Gauges draw as lines, stacked over a breakdown; block offsets read linearly.
  assert.deepEqual(kindsFor(info('page_cache').kind), ['line', 'stacked']);
  assert.equal(defaultKind('gauge', ''), 'line');
  const st = completeState({ charts: [makeChart('dirty', { kind: 'heatmap' })] }, '0', run.stats);
  assert.equal(st.charts[0].kind, 'line');
  assert.equal(defaultYScale('block_offset'), 'lin');
});

test('target units: percent as %, requests in flight as a number, gauges in bytes', () => {
  const cpu = prepareSeries(fixture('server-series-process-cpu-by-process.json'));
  assert.equal(cpu.unit, 'percent');
  const [t] = sideTotals(cpu, 0, cpu.seconds.length);
  assert.equal(t.key, 'ganesha.nfsd');
  assert.ok(t.value > 30 && t.value < 60, String(t.value));
  assert.equal(fmtValue(43.2, 'percent'), '43.2%');
  assert.equal(fmtTick(50, 'percent'), '50%');
  assert.equal(fmtWithUnit(100, 'percent'), '100%');
  const queue = prepareSeries(fixture('server-series-disk-queue.json'));
  assert.equal(queue.unit, 'requests');
  assert.equal(queue.series[0].values[25], 24, 'saturated: 24 requests in flight on average');
  assert.equal(fmtWithUnit(24, 'requests'), '24 requests');
  const cache = prepareSeries(fixture('server-series-page-cache.json'));
  assert.equal(cache.kind, 'gauge');
  assert.equal(fmtValue(cache.series[0].values[29], 'bytes'), '3 GiB');
  const [c] = sideTotals(cache, 0, cache.seconds.length);
  assert.equal(Math.round(c.value), cache.series[0].mean, 'the side panel shows the gauge\'s mean, as the API computes it');
  assert.ok(linearRange(cache, 0, cache.seconds.length, null, false).ymax >= 3 * 2 ** 30);
  const byMode = prepareSeries(fixture('server-series-cpu-by-mode.json'));
  const total = byMode.series.reduce((a, s) => a + s.values[0], 0);
  assert.equal(Math.round(total), 200, 'two CPUs: their modes add up to 200%');
});

const SUMMARY_TARGET = {
  server: {
    ebpf: null,
    cpus: 2,
    cpu_percent: { mean: 61.5, max: 140.25 },
    probe_cpu_percent: { mean: 0.42, max: 0.9 },
    probe_dropped: 0,
    memory_bytes: { page_cache: { mean: 2.5 * 2 ** 30, max: 3 * 2 ** 30 }, dirty: { mean: 2 ** 27, max: 600 * 2 ** 20 }, available: { mean: 2 ** 30, max: 2 ** 31 } },
    nics: { eth0: { rx_bytes_per_sec: { mean: 50e6, max: 60e6 }, tx_bytes_per_sec: { mean: 9e6, max: 10e6 }, drops: 4 } },
    disks: { loop3: {
      iops: { mean: 992, max: 1800 }, bytes_per_sec: { mean: 2 ** 27, max: 2 ** 28 }, util_percent: { mean: 58, max: 100 },
      queue_depth: { mean: 8.4, max: 24 }, latency_ns: { mean: 2e6, min: 1e5, p50: 1.5e6, p90: 5e6, p99: 9e6, p999: 1.2e7, max: 2.4e7 },
    } },
    processes: { 'ganesha.nfsd': {
      cpu_percent: { mean: 43.2, max: 50.1 },
      syscalls: { pwrite64: { count: 23122, latency_ns: { mean: 1e5, min: 2e4, p50: 5e4, p90: 3e5, p99: 8e5, p999: 1e6, max: 1.1e6 } } },
    } },
  },
};

test('the summary\'s target section: CPU and memory figures, disks, interfaces and processes with their system calls', () => {
  assert.deepEqual(targetSections(undefined), [], 'no target section: nothing shown');
  const [s] = targetSections(SUMMARY_TARGET);
  assert.equal(s.host, 'server');
  assert.equal(s.ebpf, null);
  assert.deepEqual(s.figures.map((f) => [f.key, f.value, f.sub]), [
    ['cpu', '61.5%', 'max 140% · 100% = one CPU of 2'],
    ['page_cache', '2.50 GiB', 'max 3 GiB'],
    ['dirty', '128 MiB', 'max 600 MiB'],
    ['available', '1 GiB', 'max 2 GiB'],
    ['probe_cpu', '0.42%', 'max 0.90%'],
  ]);
  assert.equal(s.dropped, null, 'nothing dropped: nothing said');
  const [d] = s.disks;
  assert.deepEqual([d.name, d.iops.mean, d.iops.max, d.util.max, d.saturated, d.queue.mean, d.latency.p99], ['loop3', '992', '1,800', '100%', true, '8.40', '9.00 ms']);
  assert.deepEqual([s.nics[0].rx.mean, s.nics[0].drops, s.nics[0].dropped], ['47.7 MiB/s', '4', true]);
  const [p] = s.processes;
  assert.deepEqual([p.name, p.cpu.mean, p.syscalls[0].name, p.syscalls[0].count, p.syscalls[0].latency.p50], ['ganesha.nfsd', '43.2%', 'pwrite64', '23,122', '50.0 µs']);
  // No eBPF: said, and the latencies are dashes, not zeros.
  const [n] = targetSections({ s: { ebpf: 'not permitted (CAP_BPF)', probe_dropped: 1234, disks: { sda: { latency_ns: null } } } });
  assert.equal(n.ebpf, 'not permitted (CAP_BPF)');
  assert.equal(n.dropped, '1,234');
  assert.equal(n.disks[0].latency.p99, '—');
  assert.equal(n.figures[0].value, '—');
});

test('the block latency heat map: each op\'s I/O in every second, slower once the disk is the limit', () => {
  const heat = prepareHeat(fixture('server-heatmap-block-latency-by-op.json'));
  assert.equal(heat.unit, 'ns');
  assert.deepEqual(heat.seconds.length, 30);
  const totals = keyTotals(heat, 0, heat.seconds.length);
  assert.deepEqual(totals.map((t) => t.key), ['read', 'write']);
  const ops = fixture('server-series-disk-ops-by-disk.json');
  const diskRw = ops.series[0].values.reduce((a, v) => a + v, 0);
  const flushes = 20 * 5 + 10 * 20; // diskstats counts flushes; the block heat map has reads and writes
  assert.equal(totals.reduce((a, t) => a + t.count, 0), diskRw - flushes, 'every read and write diskstats counted is in the heat map');
  // The slowest bucket with I/O at second 5 and at second 25.
  const top = (i) => Math.max(...heat.series.map((s) => {
    const col = s.columns[i] || [];
    let m = 0;
    for (let j = 0; j < col.length; j += 2) if (col[j + 1] > 0) m = Math.max(m, heat.hi[col[j]]);
    return m;
  }));
  assert.ok(top(25) > 5 * top(5), `${top(5)} -> ${top(25)}`);
});
