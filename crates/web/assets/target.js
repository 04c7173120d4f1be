// target.js: the summary's target section (what the probed servers did over the run) as
// the summary panel shows it: per host, its CPU and memory figures, and a table each for
// its disks, network interfaces and processes (with their system calls), every value
// formatted. Pure: no DOM. The summary's shape (docs/api.md):
//   target: { HOST: { ebpf: null | "why not", cpus: N, cpu_percent: {mean, max},
//     probe_cpu_percent: {mean, max} (the probe's own cost), probe_dropped: N,
//     memory_bytes: { page_cache: {mean, max}, dirty, available },
//     nics: { NIC: { rx_bytes_per_sec: {mean, max}, tx_bytes_per_sec, drops } },
//     disks: { DISK: { iops, bytes_per_sec, util_percent, queue_depth: {mean, max},
//                      latency_ns: null | {mean, min, p50, p90, p99, p999, max} } },
//     processes: { NAME: { cpu_percent: {mean, max},
//                          syscalls: { NAME: { count, latency_ns: {...} } } } } } }

import { fmtInt, fmtNs, fmtBytes, fmtNum } from './format.js';

const num = (x) => (typeof x === 'number' && Number.isFinite(x) ? x : null);
const pick = (o, k) => (o && typeof o === 'object' ? o[k] : null);
const entries = (o) => (o && typeof o === 'object' && !Array.isArray(o) ? Object.entries(o) : []);

// "45.0% / 98.0%": mean and max of a {mean, max} in percent.
function pct(v) {
  return v == null ? '—' : `${fmtNum(v)}%`;
}

function meanMax(o, f) {
  return { mean: f(num(pick(o, 'mean'))), max: f(num(pick(o, 'max'))) };
}

const bytes = (v) => (v == null ? '—' : fmtBytes(v));
const bytesPerSec = (v) => (v == null ? '—' : `${fmtBytes(v)}/s`);
const count = (v) => (v == null ? '—' : fmtNum(v));
const ns = (v) => (v == null ? '—' : fmtNs(v));

// Latency percentiles of a disk or a system call ('—' each when there are none).
function latency(l) {
  const out = {};
  for (const k of ['mean', 'p50', 'p99', 'p999', 'max']) out[k] = ns(num(pick(l, k)));
  return out;
}

// Every host of the summary's target section, shaped for the panel; [] when there is none.
export function targetSections(target) {
  return entries(target).map(([host, t]) => {
    const mem = pick(t, 'memory_bytes');
    const cpu = meanMax(pick(t, 'cpu_percent'), pct);
    const cpus = num(pick(t, 'cpus'));
    const figures = [
      { key: 'cpu', label: 'CPU mean', value: cpu.mean, sub: `max ${cpu.max} · 100% = one CPU${cpus ? ` of ${cpus}` : ''}` },
    ];
    for (const [k, label] of [['page_cache', 'page cache'], ['dirty', 'dirty'], ['available', 'available']]) {
      const m = meanMax(pick(mem, k), bytes);
      if (pick(mem, k)) figures.push({ key: k, label: `${label} mean`, value: m.mean, sub: `max ${m.max}` });
    }
    const disks = entries(pick(t, 'disks')).map(([name, d]) => ({
      name,
      iops: meanMax(pick(d, 'iops'), count),
      bytes: meanMax(pick(d, 'bytes_per_sec'), bytesPerSec),
      util: meanMax(pick(d, 'util_percent'), pct),
      // 100% busy all the time: the device, not ioscope, was the limit.
      saturated: (num(pick(pick(d, 'util_percent'), 'max')) || 0) >= 99.5,
      queue: meanMax(pick(d, 'queue_depth'), count),
      latency: latency(pick(d, 'latency_ns')),
    }));
    const nics = entries(pick(t, 'nics')).map(([name, n]) => ({
      name,
      rx: meanMax(pick(n, 'rx_bytes_per_sec'), bytesPerSec),
      tx: meanMax(pick(n, 'tx_bytes_per_sec'), bytesPerSec),
      drops: fmtInt(num(pick(n, 'drops'))),
      dropped: (num(pick(n, 'drops')) || 0) > 0,
    }));
    const processes = entries(pick(t, 'processes')).map(([name, p]) => ({
      name,
      cpu: meanMax(pick(p, 'cpu_percent'), pct),
      syscalls: entries(pick(p, 'syscalls')).map(([sc, x]) => ({
        name: sc,
        count: fmtInt(num(pick(x, 'count'))),
        latency: latency(pick(x, 'latency_ns')),
      })),
    }));
    // What the probe itself cost, and what its kernel samplers could not count.
    if (pick(t, 'probe_cpu_percent')) {
      const p = meanMax(pick(t, 'probe_cpu_percent'), pct);
      figures.push({ key: 'probe_cpu', label: 'probe CPU mean', value: p.mean, sub: `max ${p.max}` });
    }
    const dropped = num(pick(t, 'probe_dropped')) || 0;
    const ebpf = pick(t, 'ebpf');
    return { host, ebpf: typeof ebpf === 'string' && ebpf ? ebpf : null, dropped: dropped > 0 ? fmtInt(dropped) : null, figures, disks, nics, processes };
  });
}
