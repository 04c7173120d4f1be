// state.js: the worksheet state and its URL form (location.hash), so a link reproduces a
// view and back/forward restore it. Also what depends only on the state: chart titles
// in words, the chart kinds a statistic allows, and drill-down. Pure: no DOM.
//
// Hash form (each name and value encodeURIComponent-encoded, so the separators below
// never occur inside one):
//   run=0&cmp=1&t=10-50&follow=1&c=<chart>&c=<chart>...
//   <chart> = STAT[,by=DIM][,where=DIM:VALUE;DIM:VALUE][,kind=K][,cut=PCT][,hl=KEY;KEY][,vz=N][,ys=lin|log]
//             [,yr=LOW-HIGH][,pin=SECOND]
// e.g.  #run=0&c=ops,by=op,kind=stacked&c=latency,by=host,where=op:write,kind=heatmap,cut=1,hl=h2
// t absent = the whole run; follow defaults to on without t and off with it. ys (the heat
// map's value axis) is written only when it differs from the default: linear for offset,
// log for the rest. yr (a heat map's y range picked in its side panel, whole values of its
// unit) and pin (the second its side panel is pinned at) are written when set.
// `c=-` stands for an empty worksheet (no c at all means the default charts).

export const KINDS = {
  counter: ['stacked', 'line'],
  distribution: ['heatmap', 'percentiles'],
  event: ['probe'],
  // Target levels (memory): one line, or stacked over a breakdown (they sum over values).
  gauge: ['line', 'stacked'],
};

export const KIND_LABELS = {
  stacked: 'Stacked',
  line: 'Lines',
  heatmap: 'Heat map',
  percentiles: 'Percentiles',
  probe: 'Durations',
};

const CUTS = [0, 5, 1, 0.1, 0.01];

export function kindsFor(statKind) {
  return KINDS[statKind] || ['line'];
}

export function defaultKind(statKind, by) {
  if (statKind === 'distribution') return 'heatmap';
  if (statKind === 'event') return 'probe';
  return by ? 'stacked' : 'line';
}

// The chart kinds that read /heatmap; the others read /series.
export function endpointFor(kind) {
  return kind === 'heatmap' ? 'heatmap' : 'series';
}

// Offsets read linearly (a file is a line of blocks; latency art is drawn in linear
// bands); every other distribution on a log scale.
export function defaultYScale(stat) {
  return stat === 'offset' || stat === 'block_offset' ? 'lin' : 'log';
}

export function makeChart(stat, opts) {
  const o = opts || {};
  return {
    stat,
    by: o.by || '',
    where: (o.where || []).map((p) => [p[0], p[1]]),
    kind: o.kind || '',
    cut: CUTS.includes(Number(o.cut)) ? Number(o.cut) : 0,
    hl: (o.hl || []).slice(),
    vz: Number.isInteger(o.vz) ? o.vz : 0,
    ys: o.ys === 'lin' || o.ys === 'log' ? o.ys : defaultYScale(stat),
    yr: Array.isArray(o.yr) && o.yr.length === 2 && o.yr.every((v) => Number.isFinite(v) && v >= 0) && o.yr[1] > o.yr[0] ? [o.yr[0], o.yr[1]] : null,
    pin: Number.isInteger(o.pin) && o.pin >= 0 ? o.pin : null,
  };
}

export function defaultCharts() {
  return [
    makeChart('ops', { by: 'op', kind: 'stacked' }),
    makeChart('latency', { by: 'op', kind: 'heatmap' }),
    makeChart('offset', { kind: 'heatmap' }),
  ];
}

// The server worksheet: what the target did under the client's load, on one time axis.
// The client's latency heat map with the target's block latency heat map right under it
// (the same I/O seen from both ends), then the NFS server's CPU and the disks' IOPS.
// Only the statistics the run offers (`stats`, the API's list): block latency needs the
// eBPF samplers, process CPU a named process.
export const SERVER_CHARTS = [
  ['latency', { by: 'op', kind: 'heatmap' }],
  ['block_latency', { by: 'op', kind: 'heatmap' }],
  ['process_cpu', { by: 'process', kind: 'stacked' }],
  ['disk_ops', { by: 'disk', kind: 'stacked' }],
];

export function serverCharts(stats) {
  const has = (name, by) => (stats || []).some((s) => s.name === name && (!by || (s.dimensions || []).includes(by)));
  return SERVER_CHARTS.filter(([stat, o]) => has(stat, o.by)).map(([stat, o]) => makeChart(stat, o));
}

// Whether the run has target series (the server worksheet and the target group of Add
// statistic are offered then).
export function hasTarget(stats) {
  return (stats || []).some((s) => s.side === 'target');
}

// The probed hosts of a run's detail: the summary's target section names them; without
// it, the hosts of series that are not the run's client hosts (empty when a local probe
// shares the client's name).
export function targetHosts(detail) {
  const t = detail && detail.summary && detail.summary.target;
  if (t && typeof t === 'object') return Object.keys(t);
  const clients = new Set(((detail && detail.hosts) || []).map((x) => x.name));
  if (detail && detail.summary && detail.summary.host) clients.add(detail.summary.host);
  const all = (detail && detail.dimensions && detail.dimensions.host) || [];
  return hasTarget(detail && detail.stats) ? all.filter((x) => !clients.has(x)) : [];
}

// The statistics of Add statistic in groups: the client's, then the target's, named
// after the probed hosts when known ("Target (server)").
export function statGroups(stats, targetHosts) {
  const client = (stats || []).filter((s) => s.side !== 'target');
  const target = (stats || []).filter((s) => s.side === 'target');
  const hosts = (targetHosts || []).length ? targetHosts.join(', ') : 'server';
  return [
    { side: 'client', label: 'Client', stats: client },
    { side: 'target', label: `Target (${hosts})`, stats: target },
  ].filter((g) => g.stats.length);
}

export function defaultState(runId) {
  return { run: runId == null ? null : String(runId), compare: null, range: null, follow: true, charts: defaultCharts() };
}

const enc = encodeURIComponent;

function dec(s) {
  try {
    return decodeURIComponent(s);
  } catch (_) {
    return s;
  }
}

// `op:write;host:h1` from [['op','write'],['host','h1']], each part encoded (state form)
// or raw (API form, encoded later by queryPath).
export function whereString(where, encode) {
  const e = encode ? enc : (x) => x;
  return (where || []).map(([d, v]) => `${e(d)}:${e(v)}`).join(';');
}

export function parseWhere(s, decode) {
  const d = decode ? dec : (x) => x;
  if (!s) return [];
  return s
    .split(';')
    .filter(Boolean)
    .map((p) => {
      const i = p.indexOf(':');
      return i < 0 ? null : [d(p.slice(0, i)), d(p.slice(i + 1))];
    })
    .filter(Boolean);
}

export function encodeChart(c) {
  const parts = [enc(c.stat)];
  if (c.by) parts.push(`by=${enc(c.by)}`);
  if (c.where && c.where.length) parts.push(`where=${whereString(c.where, true)}`);
  if (c.kind) parts.push(`kind=${enc(c.kind)}`);
  if (c.cut) parts.push(`cut=${c.cut}`);
  if (c.hl && c.hl.length) parts.push(`hl=${c.hl.map(enc).join(';')}`);
  if (c.vz) parts.push(`vz=${c.vz}`);
  if (c.ys && c.ys !== defaultYScale(c.stat)) parts.push(`ys=${c.ys}`);
  if (c.yr) parts.push(`yr=${Math.round(c.yr[0])}-${Math.round(c.yr[1])}`);
  if (c.pin != null) parts.push(`pin=${c.pin}`);
  return parts.join(',');
}

export function decodeChart(s) {
  const parts = s.split(',');
  const stat = dec(parts[0]);
  if (!stat) return null;
  const o = {};
  for (const p of parts.slice(1)) {
    const i = p.indexOf('=');
    if (i < 0) continue;
    const k = p.slice(0, i);
    const v = p.slice(i + 1);
    if (k === 'by') o.by = dec(v);
    else if (k === 'where') o.where = parseWhere(v, true);
    else if (k === 'kind') o.kind = dec(v);
    else if (k === 'cut') o.cut = Number(v);
    else if (k === 'hl') o.hl = v.split(';').filter(Boolean).map(dec);
    else if (k === 'vz') o.vz = Math.max(-6, Math.min(12, parseInt(v, 10) || 0));
    else if (k === 'ys') o.ys = v;
    else if (k === 'yr') {
      const m = /^(\d+)-(\d+)$/.exec(v);
      if (m) o.yr = [Number(m[1]), Number(m[2])];
    } else if (k === 'pin' && /^\d+$/.test(v)) o.pin = Number(v);
  }
  return makeChart(stat, o);
}

// State -> hash string (without the leading '#').
export function encodeState(st) {
  const parts = [];
  if (st.run != null) parts.push(`run=${enc(st.run)}`);
  if (st.compare != null && st.compare !== '') parts.push(`cmp=${enc(st.compare)}`);
  if (st.range) parts.push(`t=${Math.round(st.range[0])}-${Math.round(st.range[1])}`);
  if (st.range && st.follow) parts.push('follow=1');
  if (!st.range && st.follow === false) parts.push('follow=0');
  const charts = st.charts || [];
  if (charts.length === 0) parts.push('c=-');
  for (const c of charts) parts.push(`c=${encodeChart(c)}`);
  return parts.join('&');
}

// Hash string (with or without '#') -> state. Unknown parts are ignored; `charts` is null
// when the hash names none (the caller then uses the default charts).
export function decodeState(hash) {
  const s = (hash || '').replace(/^#/, '');
  const st = { run: null, compare: null, range: null, follow: null, charts: null };
  if (!s) return { ...st, follow: true };
  let sawCharts = false;
  const charts = [];
  for (const part of s.split('&')) {
    const i = part.indexOf('=');
    const k = i < 0 ? part : part.slice(0, i);
    const v = i < 0 ? '' : part.slice(i + 1);
    if (k === 'run') st.run = dec(v);
    else if (k === 'cmp') st.compare = dec(v) || null;
    else if (k === 't') {
      const m = /^(\d+)-(\d+)$/.exec(v);
      if (m) {
        const a = Number(m[1]);
        const b = Number(m[2]);
        st.range = [Math.min(a, b), Math.max(a, b)];
      }
    } else if (k === 'follow') st.follow = v === '1';
    else if (k === 'c') {
      sawCharts = true;
      if (v === '-') continue;
      const c = decodeChart(v);
      if (c) charts.push(c);
    }
  }
  if (st.follow == null) st.follow = !st.range;
  st.charts = sawCharts ? charts : null;
  return st;
}

// Fill what the hash left open: the run, the default charts, each chart's kind.
export function completeState(st, runId, stats) {
  const out = {
    run: st.run != null ? String(st.run) : runId == null ? null : String(runId),
    compare: st.compare != null ? String(st.compare) : null,
    range: st.range ? [st.range[0], st.range[1]] : null,
    follow: st.follow == null ? !st.range : !!st.follow,
    charts: (st.charts || defaultCharts()).map((c) => makeChart(c.stat, c)),
  };
  if (out.compare === out.run) out.compare = null;
  if (stats) {
    for (const c of out.charts) {
      const info = stats.find((s) => s.name === c.stat);
      const kinds = info ? kindsFor(info.kind) : null;
      if (info && (!c.kind || !kinds.includes(c.kind))) c.kind = defaultKind(info.kind, c.by);
    }
  }
  return out;
}

export function sameState(a, b) {
  return encodeState(a) === encodeState(b);
}

// A statistic's label without its parenthetical ("Latency (from intended start)" ->
// "Latency"), and the parenthetical alone, shown beside the title.
export function statLabel(info, stat) {
  const l = info ? info.label || info.name : stat;
  return l.replace(/\s*\(.*\)\s*$/, '') || l;
}

export function statNote(info) {
  const m = info && info.label ? /\(([^)]*)\)\s*$/.exec(info.label) : null;
  return m ? m[1] : '';
}

// "Latency broken down by op, where op = write or read, and host = h1"
export function chartTitle(c, info) {
  const label = statLabel(info, c.stat);
  let t = label;
  if (c.by) t += ` broken down by ${c.by}`;
  const groups = [];
  for (const [d, v] of c.where || []) {
    const g = groups.find((x) => x.d === d);
    if (g) g.vs.push(v);
    else groups.push({ d, vs: [v] });
  }
  if (groups.length) t += `, where ${groups.map((g) => `${g.d} = ${g.vs.join(' or ')}`).join(', and ')}`;
  return t;
}

// Dimensions a drill-down from chart `c` can break down by next: the statistic's
// dimensions (as the API lists them) minus the current breakdown, those already filtered
// on, and the dimensions exclusive with one in use. The server keeps per-worker and
// per-file rows (no workload, not both) and error kinds per operation (not per worker or
// file): once one of a pair is used, the other is not offered.
const EXCLUSIVE = [['worker', 'workload'], ['file', 'workload'], ['worker', 'file'], ['error', 'worker'], ['error', 'file']];

function exclusiveWith(d, used) {
  return EXCLUSIVE.some(([a, b]) => (a === d && used.has(b)) || (b === d && used.has(a)));
}

export function drillDims(c, info) {
  if (!info) return [];
  const used = new Set((c.where || []).map((p) => p[0]));
  if (c.by) used.add(c.by);
  return (info.dimensions || []).filter((d) => !used.has(d) && !exclusiveWith(d, used));
}

// The filter of a selection: the chart's filter plus the selected values of its
// breakdown (several values of one dimension mean "any of").
export function selectionWhere(c, values) {
  const where = (c.where || []).map((p) => [p[0], p[1]]);
  if (c.by) for (const v of values || []) where.push([c.by, v]);
  return where;
}

// Whether statistic `info` can be asked for with filter `where`: it has every filtered
// dimension, and no two of them are exclusive.
export function statTakes(info, where) {
  if (!info) return false;
  const dims = new Set((where || []).map((p) => p[0]));
  const has = new Set(info.dimensions || []);
  for (const d of dims) {
    if (!has.has(d)) return false;
    const others = new Set([...dims].filter((x) => x !== d));
    if (exclusiveWith(d, others)) return false;
  }
  return true;
}

// The chart of statistic `stat` (its entry `info`) over a selection of chart `c`, broken
// down by `dim` ('' for none). The chart's own statistic keeps its kind, outlier cut and
// value axis; another statistic starts at its default kind.
export function drillTo(c, values, stat, info, dim) {
  const where = selectionWhere(c, values);
  const statKind = info ? info.kind : '';
  if (stat === c.stat) {
    const kinds = info ? kindsFor(info.kind) : [c.kind];
    let kind = kinds.includes(c.kind) ? c.kind : defaultKind(statKind, dim);
    if (statKind === 'counter') kind = defaultKind(statKind, dim);
    return makeChart(stat, { by: dim, where, kind, cut: c.cut, ys: c.ys });
  }
  return makeChart(stat, { by: dim, where, kind: defaultKind(statKind, dim) });
}

// The chart a drill-down adds below `c`: the same statistic over the selected values,
// broken down by `dim`.
export function drillChart(c, values, dim, info) {
  return drillTo(c, values, c.stat, info, dim);
}

// Everything a selection of chart `c` can be drilled into: every statistic of the run
// (`stats`, the API's list) that takes the selection's filter, the chart's own first,
// each with its breakdowns left ('' = the statistic over the selection, no breakdown; not
// offered when that is the chart itself). `available(chart)`, when given, drops the
// charts whose data is not at hand (a report holds only the answers it embedded).
// [{ stat, info, charts: [{ dim, chart }] }]; statistics with nothing left are dropped.
export function drillOptions(c, values, stats, available) {
  const where = selectionWhere(c, values);
  const own = (stats || []).filter((s) => s.name === c.stat);
  const rest = (stats || []).filter((s) => s.name !== c.stat);
  const out = [];
  for (const info of own.concat(rest)) {
    if (!statTakes(info, where)) continue;
    const base = { stat: info.name, by: '', where };
    const dims = [''].concat(drillDims(base, info));
    const charts = [];
    for (const dim of dims) {
      let chart = drillTo(c, values, info.name, info, dim);
      if (sameChart(chart, c)) continue;
      if (available && !available(chart)) {
        // Another kind of the statistic may be at hand (a report embeds some breakdowns
        // as percentiles only).
        chart = kindsFor(info.kind).map((k) => ({ ...chart, kind: k })).find(available);
        if (!chart) continue;
      }
      charts.push({ dim, chart });
    }
    if (charts.length) out.push({ stat: info.name, info, charts });
  }
  return out;
}

// Same statistic, breakdown and filter (the same data; kind and view options aside).
export function sameChart(a, b) {
  const w = (c) => (c.where || []).map((p) => `${p[0]}:${p[1]}`).sort().join(';');
  return a.stat === b.stat && (a.by || '') === (b.by || '') && w(a) === w(b);
}

// The visible seconds for a run span [first, last] under `range`/`follow`: following
// keeps the width of the range and moves it to the end.
export function visibleRange(st, first, last) {
  if (first == null || last == null) return null;
  if (!st.range) return [first, last];
  let [a, b] = st.range;
  if (st.follow) {
    const w = b - a;
    b = last;
    a = Math.max(first, b - w);
  }
  a = Math.max(first, Math.min(a, last));
  b = Math.max(a, Math.min(b, last));
  return [a, b];
}

// Zoom out around the middle (twice as wide); null when that covers the run.
export function zoomOut(vis, first, last) {
  const w = vis[1] - vis[0] + 1;
  const mid = (vis[0] + vis[1]) / 2;
  let a = Math.round(mid - w);
  let b = a + 2 * w - 1;
  if (a < first) {
    b += first - a;
    a = first;
  }
  if (b > last) {
    a -= b - last;
    b = last;
  }
  a = Math.max(first, a);
  if (a <= first && b >= last) return null;
  return [a, b];
}

// Pan by half the visible width (dir -1 left, +1 right), clamped to the run.
export function pan(vis, dir, first, last) {
  const w = vis[1] - vis[0];
  const step = Math.max(1, Math.round((w + 1) / 2));
  let a = vis[0] + dir * step;
  a = Math.max(first, Math.min(a, last - w));
  return [a, a + w];
}
