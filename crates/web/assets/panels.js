// panels.js: the run's paperwork below the worksheet, each panel collapsible: the summary
// (totals, per-operation table with latency percentiles, knee, verdicts), the step table,
// the probes, the system configuration of every host, and the workload as run.

import { fmtInt, fmtNs, fmtBytes, fmtElapsed, fmtDateTime, fmtNum, stepName } from './format.js';
import { h, fill } from './worksheet.js';
import { targetSections } from './target.js';
import { compareBlock } from './compare.js';

const openState = new Map([['compare', true], ['summary', true], ['steps', true], ['probes', true], ['config', false], ['workload', false]]);

function panel(id, title, count, body) {
  const d = h('details', { class: 'panel', 'data-panel': id, open: openState.get(id) !== false },
    h('summary', {}, h('span', { class: 'panel-title' }, title), count != null ? h('span', { class: 'panel-count' }, count) : null),
    h('div', { class: 'panel-body' }, body));
  d.addEventListener('toggle', () => openState.set(id, d.open));
  return d;
}

function mbs(bytesPerSec) {
  return bytesPerSec == null ? '—' : fmtNum(bytesPerSec / 1e6);
}

function tag(which) {
  return which == null ? null : h('span', { class: `run-tag ${which === 0 ? 'a' : 'b'}` }, which === 0 ? 'A' : 'B');
}

function figure(label, value, sub) {
  return h('div', { class: 'fig' }, h('div', { class: 'fig-v' }, value), h('div', { class: 'fig-l' }, label, sub ? h('span', { class: 'fig-s' }, sub) : null));
}

// An operation's failed I/Os by kind, most frequent first: "EROFS 12,345, EIO 3".
function errorKinds(o) {
  const kinds = Object.entries(o.errors_by_kind || {}).sort((a, b) => b[1] - a[1]);
  return kinds.length ? kinds.map(([k, n]) => `${k} ${fmtInt(n)}`).join(', ') : null;
}

// The summary's host rows, by name: present for runs of several hosts or with agents.
export function hostEntries(s) {
  return Object.entries((s && s.hosts) || {});
}

// A signed duration: "+1.2 ms", "−40.0 µs".
export function fmtSignedNs(v) {
  if (v == null) return '—';
  return `${v < 0 ? '−' : '+'}${fmtNs(Math.abs(v))}`;
}

// "+1.2 ms ± 40.0 µs": an agent's clock offset (its clock minus the coordinator's) and how
// far it may be off.
export function fmtOffset(a) {
  if (!a || a.clock_offset_ns == null) return '—';
  return a.clock_uncertainty_ns == null ? fmtSignedNs(a.clock_offset_ns) : `${fmtSignedNs(a.clock_offset_ns)} ± ${fmtNs(a.clock_uncertainty_ns)}`;
}

// How each host's agent fared: status, address, clock offset ± uncertainty, round trip,
// the second a lost host stopped at. Nothing for a local run.
function agentsTable(s) {
  const rows = hostEntries(s).filter(([, x]) => x.agent);
  if (!rows.length) return null;
  return h('div', { class: 'table-scroll' }, h('table', { class: 'grid agents' },
    h('thead', {}, h('tr', {}, ['host', 'status', 'address', 'clock offset', 'round trip', 'lost at', 'detail'].map((c, i) => h('th', { class: i < 3 || i === 6 ? 'l' : '' }, c)))),
    h('tbody', {}, rows.map(([name, x]) => {
      const a = x.agent;
      const st = a.status || '—';
      return h('tr', { 'data-host': name },
        h('td', { class: 'l key' }, name),
        h('td', { class: 'l' }, h('span', { class: `badge status-${st === 'lost' ? 'failed' : st}` }, st)),
        h('td', { class: 'l mono' }, a.address ? `${a.address}${a.transport ? ` (${a.transport})` : ''}` : '—'),
        h('td', { class: a.clock_uncertainty_ns > 1e6 ? 'em' : '' }, fmtOffset(a)),
        h('td', {}, a.rtt_ns == null ? '—' : fmtNs(a.rtt_ns)),
        h('td', { class: a.lost_at_second != null ? 'bad' : '' }, a.lost_at_second == null ? '' : `second ${a.lost_at_second}`),
        h('td', { class: 'l muted' }, a.detail || ''));
    }))));
}

// The summary's target section: per probed host, its CPU and memory figures and tables of
// its disks, network interfaces and processes. Nothing when the run had no probe.
function targetBlock(s) {
  const sections = targetSections(s && s.target);
  if (!sections.length) return null;
  const mm = (x, maxCls) => [h('td', {}, x.mean), h('td', { class: maxCls || '' }, x.max)];
  const head = (first, groups) => h('thead', {},
    h('tr', { class: 'group' }, h('th', {}), groups.map(([g, n]) => h('th', { colspan: n, class: g ? 'grp' : '' }, g))),
    h('tr', {}, h('th', { class: 'l' }, first), groups.flatMap(([, n, cols]) => cols || Array(n).fill(null).map((_, i) => (i % 2 ? 'max' : 'mean'))).map((c) => h('th', {}, c))));
  const table = (cls, thead, rows) => (rows.length ? h('div', { class: 'table-scroll' }, h('table', { class: `grid ${cls}` }, thead, h('tbody', {}, rows))) : null);
  return h('div', { class: 'target-block', 'data-panel-part': 'target' }, sections.map((t) => h('div', { class: 'target-host', 'data-host': t.host },
    h('div', { class: 'target-head' }, 'Target', h('span', { class: 'muted' }, `host ${t.host}`)),
    t.ebpf ? h('p', { class: 'ebpf-note' }, `eBPF samplers not used: ${t.ebpf} (block and system call latency are missing; procfs figures are complete)`) : null,
    t.dropped ? h('p', { class: 'ebpf-note', 'data-dropped': t.dropped }, `${t.dropped} events the eBPF samplers could not count (not in the block and system call figures)`) : null,
    h('div', { class: 'figs' }, t.figures.map((f) => h('div', { class: 'fig', 'data-fig': f.key }, h('div', { class: 'fig-v' }, f.value), h('div', { class: 'fig-l' }, f.label, h('span', { class: 'fig-s' }, f.sub))))),
    table('target-disks', head('disk', [['IOPS', 2], ['throughput', 2], ['utilization', 2], ['queue depth', 2], ['block latency', 4, ['p50', 'p99', 'p99.9', 'max']]]),
      t.disks.map((d) => h('tr', { 'data-disk': d.name, title: d.saturated ? 'Busy all the time at its peak: the device, not ioscope, was the limit' : null },
        h('td', { class: 'l key' }, d.name), mm(d.iops), mm(d.bytes), mm(d.util, d.saturated ? 'em' : ''), mm(d.queue),
        h('td', {}, d.latency.p50), h('td', { class: 'em' }, d.latency.p99), h('td', {}, d.latency.p999), h('td', {}, d.latency.max)))),
    table('target-nics', head('interface', [['received', 2], ['sent', 2], ['', 1, ['drops']]]),
      t.nics.map((n) => h('tr', { 'data-nic': n.name }, h('td', { class: 'l key' }, n.name), mm(n.rx), mm(n.tx), h('td', { class: n.dropped ? 'bad' : '' }, n.drops)))),
    table('target-processes', head('process', [['CPU', 2], ['system call latency', 6, ['calls', 'mean', 'p50', 'p99', 'p99.9', 'max']]]),
      t.processes.flatMap((p) => [
        h('tr', { 'data-process': p.name }, h('td', { class: 'l key' }, p.name), mm(p.cpu), Array(6).fill(null).map(() => h('td', {}, ''))),
        ...p.syscalls.map((c) => h('tr', { class: 'host', 'data-process': p.name, 'data-syscall': c.name },
          h('td', { class: 'l key' }, c.name), h('td', {}, ''), h('td', {}, ''), h('td', {}, c.count),
          h('td', {}, c.latency.mean), h('td', {}, c.latency.p50), h('td', { class: 'em' }, c.latency.p99), h('td', {}, c.latency.p999), h('td', {}, c.latency.max))),
      ])))));
}

function summaryBlock(run, which) {
  const s = run.summary;
  if (!s) return h('p', { class: 'muted' }, 'No summary stored for this run.');
  const t = s.total || {};
  const status = s.status || run.status;
  const figs = h('div', { class: 'figs' },
    tag(which),
    figure('IOPS', fmtInt(t.iops)),
    figure('MB/s', mbs(t.bytes_per_sec)),
    figure('operations', fmtInt(t.ops)),
    figure('transferred', fmtBytes(t.bytes)),
    figure('errors', fmtInt(t.errors), t.errors ? '⚠' : null),
    figure('measured', `${s.duration_s != null ? s.duration_s.toFixed(1) : '—'} s`, s.planned_duration_s != null ? `of ${s.ended && s.ended.by !== 'duration' ? 'at most ' : ''}${s.planned_duration_s.toFixed(0)} s planned` : null),
    figure('status', status, s.status_detail || null));
  const ops = Object.entries(s.ops || {});
  const lat = (d, k) => (d ? fmtNs(d[k]) : '—');
  const size = (o) => (o.size_bytes ? (o.size_bytes.min === o.size_bytes.max ? fmtBytes(o.size_bytes.min) : `${fmtBytes(o.size_bytes.min)}–${fmtBytes(o.size_bytes.max)}`) : '—');
  // Columns: [group, heading, cell of an op, cell of the total row, class]. Side by side
  // (compare) each summary has half the width: the columns marked `full` are left out
  // there (the operation count is in the figures above; mean, p90, service p50 and size
  // in each run's own view) so the rest fits without scrolling.
  const cols = [
    ['', 'IOPS', (o) => fmtInt(o.iops), (x) => fmtInt(x.iops)],
    ['', 'MB/s', (o) => mbs(o.bytes_per_sec), (x) => mbs(x.bytes_per_sec)],
    ['', 'ops', (o) => fmtInt(o.ops), (x) => fmtInt(x.ops), 'full'],
    ['', 'errors', (o) => fmtInt(o.errors), (x) => fmtInt(x.errors)],
    ['lat', 'mean', (o) => lat(o.latency_ns, 'mean'), null, 'full'],
    ['lat', 'p50', (o) => lat(o.latency_ns, 'p50')],
    ['lat', 'p90', (o) => lat(o.latency_ns, 'p90'), null, 'full'],
    ['lat', 'p99', (o) => lat(o.latency_ns, 'p99'), null, 'em'],
    ['lat', 'p99.9', (o) => lat(o.latency_ns, 'p999')],
    ['lat', 'max', (o) => lat(o.latency_ns, 'max')],
    ['svc', 'p50', (o) => lat(o.service_time_ns, 'p50'), null, 'full'],
    ['svc', 'p99', (o) => lat(o.service_time_ns, 'p99')],
    ['', 'size', size, null, 'full'],
  ].filter((c) => which == null || c[4] !== 'full');
  const span = (g) => cols.filter((c) => c[0] === g).length;
  const first = (g) => cols.findIndex((c) => c[0] === g);
  const groups = [];
  for (let i = 0; i < cols.length; i++) {
    const g = cols[i][0];
    if (g && first(g) === i) groups.push(h('th', { colspan: span(g), class: 'grp' }, g === 'lat' ? (which == null ? 'latency (from intended start)' : 'latency') : 'service time'));
    else if (!g) groups.push(h('th', {}));
  }
  const table = h('table', { class: `grid ops${which != null ? ' compact' : ''}` },
    h('thead', {},
      h('tr', { class: 'group' }, h('th', {}), groups),
      h('tr', {}, h('th', { class: 'l' }, 'op'), cols.map((c) => h('th', {}, c[1])))),
    h('tbody', {}, ops.map(([op, o]) => h('tr', {},
      h('td', { class: 'l key' }, op),
      cols.map((c) => h('td', { class: c[1] === 'errors' ? (o.errors ? 'bad' : '') : c[4] === 'em' ? 'em' : '', title: c[1] === 'errors' ? errorKinds(o) : null }, c[2](o))))),
    h('tr', { class: 'total' }, h('td', { class: 'l key' }, s.total_label || 'total'),
      cols.map((c) => h('td', { class: c[1] === 'errors' && t.errors ? 'bad' : '' }, c[3] ? c[3](t) : (s.total_latency_ns && c[0] === 'lat' ? c[2]({ latency_ns: s.total_latency_ns }) : '')))),
    // Each host under the total: its own counters and the latency of its transfers, from
    // its own histograms (the total's latency merges all of them).
    hostEntries(s).map(([name, x]) => h('tr', { class: 'host', 'data-host': name },
      h('td', { class: 'l key' }, `host ${name}`),
      cols.map((c) => h('td', { class: c[1] === 'errors' && x.errors ? 'bad' : '' }, c[3] ? c[3](x) : (c[0] === 'lat' ? c[2](x) : '')))))));
  const err = s.latency_relative_error;
  const foot = h('p', { class: 'foot' },
    'Latency counts from the moment each I/O was meant to start (queueing included); ',
    err != null ? `percentiles within ±${(err * 100).toFixed(2)}% (log-linear histogram).` : '');
  const knee = s.knee ? h('div', { class: 'callout knee' }, h('b', {}, `Knee: step ${s.knee.step} (${s.knee.label})`), ' — ', s.knee.reason) : null;
  const notes = verdictList(s);
  const verification = verificationBlock(s);
  const phases = phasesBlock(s);
  // The run's checks (--check), as the summary evaluated them: passed or failed, with the figure.
  const checks = (s.checks || []).length
    ? h('ul', { class: 'checks' }, s.checks.map((c) => h('li', { class: c.passed ? 'check-passed' : 'check-failed' },
      h('span', { class: 'check-icon', 'aria-hidden': 'true' }, c.passed ? '✓' : '✗'),
      h('span', {}, c.message), h('code', {}, c.check))))
    : null;
  const repeats = repeatsBlock(s);
  const meta = h('div', { class: 'meta-line' },
    h('span', {}, s.results_file || run.path || ''),
    s.host ? h('span', {}, `host ${s.host}`) : null,
    s.started_unix_ms ? h('span', {}, `started ${fmtDateTime(s.started_unix_ms)}`) : null,
    s.ioscope_version ? h('span', {}, `ioscope ${s.ioscope_version}`) : null);
  return h('div', { class: 'summary-block' }, figs, knee, h('div', { class: 'table-scroll' }, table), foot, agentsTable(s), targetBlock(s), phases, verification, notes, checks, repeats, meta);
}

// What ran before the measured run (`precondition`, not measured), the data content asked
// and measured, and what ended the run (its amount, steady, or its planned duration), as
// the text summary says them.
export function phasesBlock(s) {
  const p = s.precondition;
  const e = s.ended;
  if (!p && !e && !s.content) return null;
  // As the text summary writes them: grouped digits, a fixed number of decimals.
  const fix = (v, d) => Number(v).toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
  const lines = [];
  if (p) {
    const range = p.mb_per_s_min != null && p.mb_per_s_max != null
      ? ` (each whole second ${fix(p.mb_per_s_min, 1)}–${fix(p.mb_per_s_max, 1)} MB/s)` : '';
    lines.push(h('p', { class: 'foot precondition-line' },
      h('b', {}, 'Precondition'), ` (${p.passes}x sequential write, not measured): `,
      `${fmtBytes(p.bytes)} of ${fmtBytes(p.planned_bytes)} in ${fmtBytes(p.bs_bytes)} writes in ${fix(p.seconds, 2)} s, `,
      `${fix(p.mb_per_s, 1)} MB/s${range}, `,
      h('span', { class: p.errors ? 'bad' : '' }, p.errors ? `${fmtInt(p.errors)} errors` : 'no errors'), '.'));
  }
  const c = s.content;
  if (c) {
    const got = c.sample_bytes
      ? `measured over ${fmtBytes(c.sample_bytes)} read back: compresses ${fix(c.compress_ratio, 2)}:1 (lz4), dedups ${fix(c.dedup_ratio, 2)}:1 (${fmtBytes(c.dedup_unit_bytes)} units)`
      : 'nothing could be read back to measure it';
    lines.push(h('p', { class: 'foot content-line' }, h('b', {}, 'Data'), ` asked ${c.asked}; ${got}.`));
  }
  if (e) {
    const said = {
      amount: `by amount: every workload issued its ${e.amount}`,
      steady: 'steady, before its planned end (until_steady)',
    }[e.by] || (e.amount ? `at its planned duration, before the amount (${e.amount}) was issued` : 'at its planned duration, never steady (until_steady)');
    lines.push(h('p', { class: 'foot ended-line', 'data-ended': e.by }, h('b', {}, 'Ended'), ` ${said}.`));
  }
  return h('div', { class: 'phases' }, lines);
}

// Data validation (--verify): blocks checked, bad blocks by kind (checksum, torn,
// header-destroyed, misplaced, stale, unissued, zeroed, truncated), unverified blocks and
// the cost, then the first mismatch of each bad block (kind, file, offset, what was found
// in words, expected generation and the header found) listed like the verdicts.
export function verificationBlock(s) {
  const v = s.verification;
  if (!v) return null;
  const kinds = Object.entries(v.by_kind || {}).map(([k, n]) => `${fmtInt(n)} ${k}`).join(', ');
  const cost = (ns) => (ns == null ? '–' : fmtNs(ns));
  const line = h('p', { class: 'foot verification-line' },
    h('b', {}, 'Verification'), ` (--verify ${v.mode}, blocks of ${fmtBytes(v.block_len)}): `,
    `${fmtInt(v.blocks_checked)} blocks checked, ${fmtInt(v.verified)} verified, `,
    h('span', { class: v.mismatches ? 'bad' : '' }, `${fmtInt(v.mismatches)} mismatches${kinds ? ` (${kinds})` : ''}`),
    `, ${fmtInt(v.unverified)} unverified; stamp ${cost(v.stamp_ns_per_block)}, check ${cost(v.check_ns_per_block)} per block.`);
  const list = (v.first_mismatches || []).length
    ? h('ul', { class: 'notes verdicts mismatches' }, v.first_mismatches.map((m) => h('li', { class: 'verdict verdict-error', 'data-mismatch': m.kind, 'data-offset': String(m.offset) },
      h('span', { class: 'severity severity-error' }, m.kind),
      h('div', { class: 'verdict-body' },
        h('span', { class: 'verdict-message' }, `${m.path} at offset ${fmtInt(m.offset)} (second ${m.second})${m.found ? `: ${m.found}` : ''}`),
        h('div', { class: 'evidence' },
          h('span', {}, h('span', { class: 'ek' }, 'expected generation:'), ` ${m.expected_generation}`),
          h('span', {}, h('span', { class: 'ek' }, 'found:'), ` ${m.found_header_json || 'no header'}`))))))
    : null;
  return h('div', { class: 'verification' }, line, list);
}

// The run's repeats (--repeat, --until-ci): each step's total over the repeats, its mean
// with the Student t interval and the spread, and a trend when the repeats drift.
function repeatsBlock(s) {
  const r = s.repeats;
  if (!r || !(r.steps || []).length) return null;
  const figs = [['iops', 'IOPS', fmtInt], ['bytes_per_sec', 'MB/s', mbs], ['latency_p50_ns', 'p50', fmtNs], ['latency_p99_ns', 'p99', fmtNs]];
  const rows = [];
  for (const st of r.steps) {
    const total = (st.ops || {}).total || {};
    for (const [key, name, f] of figs) {
      const x = total[key];
      if (!x) continue;
      const v = (n) => f(Math.max(0, key === 'iops' ? Math.round(n) : n));
      rows.push(h('tr', { 'data-repeat-step': String(st.step) },
        h('td', { class: 'l key' }, r.steps.length > 1 ? `${st.step} ${st.label}` : (st.label || 'run')), h('td', { class: 'l' }, name),
        h('td', {}, v(x.mean)), h('td', { class: 'em' }, `± ${x.half_width_pct.toFixed(1)}%`),
        h('td', {}, `${v(x.ci_low)} – ${v(x.ci_high)}`), h('td', {}, v(x.min)), h('td', {}, v(x.max))));
    }
  }
  const stopped = { count: 'as asked', interval: 'stopped: intervals narrow enough', max: 'stopped at the most repeats: intervals still wider than asked' }[r.stopped]
    || 'the run stopped early: its last repeat is left out';
  const trends = r.steps.filter((st) => st.trend);
  return h('div', { class: 'repeats' },
    h('p', { class: 'foot' }, `${r.count} repeats (${stopped}); ${r.confidence_pct}% intervals, Student t on the repeat means.`),
    h('div', { class: 'table-scroll' }, h('table', { class: 'grid repeats' },
      h('thead', {}, h('tr', {}, ['step', 'figure', 'mean', '±', `${r.confidence_pct}% interval`, 'min', 'max'].map((c, i) => h('th', { class: i < 2 ? 'l' : '' }, c)))),
      h('tbody', {}, rows))),
    trends.length ? h('ul', { class: 'notes' }, trends.map((st) => h('li', {}, h('span', { class: 'note-icon', 'aria-hidden': 'true' }, '!'), `step ${st.step}: ${st.trend}`))) : null);
}

// One evidence figure in words: its key names the unit (read_latency_p50_ns: 1.4 µs).
export function evidenceValue(key, v) {
  if (typeof v !== 'number') return typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  if (key.endsWith('_ns')) return fmtNs(v);
  if (key.endsWith('_bytes')) return fmtBytes(v);
  if (key.endsWith('_pct')) return `${fmtNum(v)}%`;
  return Number.isInteger(v) ? fmtInt(v) : fmtNum(v);
}

// The verdicts (what the measurements say about how far the numbers can be trusted), most
// severe first as the summary lists them: a severity badge, the message, and the measured
// evidence as a small key: value line. Summaries without verdicts show their notes.
export function verdictList(s) {
  const verdicts = s.verdicts || [];
  if (!verdicts.length) {
    return (s.notes || []).length
      ? h('ul', { class: 'notes' }, s.notes.map((n) => h('li', {}, h('span', { class: 'note-icon', 'aria-hidden': 'true' }, '!'), n)))
      : null;
  }
  return h('ul', { class: 'notes verdicts' }, verdicts.map((v) => h('li', { class: `verdict verdict-${v.severity}`, 'data-verdict': v.id },
    h('span', { class: `severity severity-${v.severity}` }, v.severity),
    h('div', { class: 'verdict-body' },
      h('span', { class: 'verdict-message' }, v.message, ' ', h('span', { class: 'verdict-id' }, v.id)),
      Object.keys(v.evidence || {}).length
        ? h('div', { class: 'evidence' }, Object.entries(v.evidence).map(([k, x]) => h('span', {}, h('span', { class: 'ek' }, `${k}:`), ` ${evidenceValue(k, x)}`)))
        : null))));
}

function stepsBlock(run, which, onZoom) {
  const s = run.summary || {};
  const rows = s.steps || [];
  const planned = run.steps || [];
  if (!rows.length && !planned.length) return null;
  const kneeStep = s.knee ? s.knee.step : null;
  const zoomFor = (index) => {
    const p = planned.find((x) => x.index === index);
    if (!p) return null;
    const a = p.start_second;
    const n = Math.max(1, Math.ceil(((p.warmup_ns || 0) + (p.duration_ns || 0)) / 1e9));
    return [a, a + n - 1];
  };
  const body = rows.length
    ? rows.map((r) => {
      const z = zoomFor(r.index);
      return h('tr', {
        class: `${r.index === kneeStep ? 'knee' : ''} ${z ? 'click' : ''}`, 'data-action': z ? 'zoom-step' : null, 'data-step': String(r.index),
        title: z ? 'Zoom the worksheet to this step' : null, onclick: z ? () => onZoom(z) : null,
      },
      h('td', { class: 'l' }, String(r.index)),
      h('td', { class: 'l key' }, r.label, r.index === kneeStep ? h('span', { class: 'badge knee-badge' }, 'knee') : null),
      h('td', {}, r.threads == null ? '—' : String(r.threads)),
      h('td', {}, r.rate_iops == null ? 'max' : fmtInt(r.rate_iops)),
      h('td', {}, String(r.seconds)),
      h('td', {}, fmtInt(r.iops)),
      h('td', {}, mbs(r.bytes_per_sec)),
      h('td', {}, fmtNs(r.latency_p50_ns)),
      h('td', { class: 'em' }, fmtNs(r.latency_p99_ns)),
      h('td', { class: r.errors ? 'bad' : '' }, fmtInt(r.errors)));
    })
    : planned.map((p) => {
      const z = zoomFor(p.index);
      return h('tr', { class: 'click', 'data-action': 'zoom-step', 'data-step': String(p.index), onclick: () => onZoom(z) },
        h('td', { class: 'l' }, String(p.index)), h('td', { class: 'l key' }, stepName(p, planned)), h('td', {}, p.threads == null ? '—' : String(p.threads)),
        h('td', {}, p.rate_iops == null ? 'max' : fmtInt(p.rate_iops)), h('td', {}, String(Math.round((p.duration_ns || 0) / 1e9))),
        h('td', {}, '—'), h('td', {}, '—'), h('td', {}, '—'), h('td', {}, '—'), h('td', {}, '—'));
    });
  return h('div', {},
    which != null ? h('div', { class: 'block-tag' }, tag(which), run.name) : null,
    h('div', { class: 'table-scroll' }, h('table', { class: 'grid steps' },
      h('thead', {}, h('tr', {}, ['#', 'step', 'threads', 'rate asked', 'seconds', 'IOPS', 'MB/s', 'p50', 'p99', 'errors'].map((c, i) => h('th', { class: i < 2 ? 'l' : '' }, c)))),
      h('tbody', {}, body))));
}

function probesBlock(run, which, onZoom) {
  const probes = run.probes || [];
  if (!probes.length) return null;
  return h('div', {},
    which != null ? h('div', { class: 'block-tag' }, tag(which), run.name) : null,
    h('div', { class: 'table-scroll' }, h('table', { class: 'grid probes' },
      h('thead', {}, h('tr', {}, ['probe', 'command', 'at', 'duration', 'exit', 'detail'].map((c, i) => h('th', { class: i < 2 || i === 5 ? 'l' : '' }, c)))),
      h('tbody', {}, probes.map((p) => {
        const at = p.at_ns / 1e9;
        const z = [Math.max(0, Math.floor(at) - 10), Math.ceil(at + p.duration_ns / 1e9) + 10];
        return h('tr', { class: 'click', 'data-action': 'zoom-probe', title: 'Zoom the worksheet to this probe', onclick: () => onZoom(z) },
          h('td', { class: 'l key' }, p.name),
          h('td', { class: 'l mono cmd', title: p.command }, p.command),
          h('td', {}, fmtElapsed(at)),
          h('td', { class: 'em' }, fmtNs(p.duration_ns)),
          h('td', { class: p.exit_code === 0 ? '' : 'bad' }, p.exit_code == null ? '—' : String(p.exit_code)),
          h('td', { class: 'l muted' }, p.detail || ''));
      })))));
}

function configValue(k, v) {
  if (v == null) return h('span', { class: 'muted' }, '—');
  if (typeof v === 'number' && /bytes$/.test(k)) return h('span', {}, fmtBytes(v), h('span', { class: 'muted' }, ` (${fmtInt(v)})`));
  if (typeof v === 'number' && /_ns$/.test(k)) return h('span', {}, fmtNs(v));
  if (typeof v === 'boolean') return h('span', { class: v ? 'yes' : 'no' }, v ? 'yes' : 'no');
  return h('span', {}, String(v));
}

// A configuration object as an indented key/value tree.
export function configTree(obj, depth) {
  const d = depth || 0;
  const rows = [];
  const entries = Array.isArray(obj) ? obj.map((v, i) => [String(i), v]) : Object.entries(obj || {});
  for (const [k, v] of entries) {
    if (v && typeof v === 'object' && !(Array.isArray(v) && v.every((x) => typeof x !== 'object'))) {
      rows.push(h('div', { class: 'kv group', style: { paddingLeft: `${d * 16}px` } }, h('span', { class: 'k' }, k)));
      rows.push(...configTree(v, d + 1));
    } else if (Array.isArray(v)) {
      rows.push(h('div', { class: 'kv', style: { paddingLeft: `${d * 16}px` } }, h('span', { class: 'k' }, k), h('span', { class: 'v' }, v.join(', '))));
    } else {
      rows.push(h('div', { class: 'kv', style: { paddingLeft: `${d * 16}px` } }, h('span', { class: 'k' }, k), h('span', { class: 'v' }, configValue(k, v))));
    }
  }
  return rows;
}

// A host's configuration without the plan its agent ran (a long JSON text), and that plan
// pretty-printed (null for a local run).
export function splitPlan(config) {
  const agent = config && config.agent;
  if (!agent || typeof agent !== 'object' || agent.plan_json == null) return [config, null];
  const { plan_json: planJson, ...rest } = agent;
  let plan = String(planJson);
  try {
    plan = JSON.stringify(JSON.parse(plan), null, 2);
  } catch {
    // Shown as stored.
  }
  return [{ ...config, agent: rest }, plan];
}

function configBlock(run, which) {
  const hosts = run.hosts || [];
  if (!hosts.length) return null;
  return h('div', { class: 'hosts' }, hosts.map((ho) => {
    const [config, plan] = splitPlan(ho.config);
    return h('div', { class: 'host-card', 'data-host': ho.name },
      h('div', { class: 'host-name' }, tag(which), ho.name),
      h('div', { class: 'kv-tree' }, configTree(config, 0)),
      plan ? h('details', { class: 'host-plan' }, h('summary', {}, 'the plan this host ran'), h('pre', { class: 'toml' }, plan)) : null);
  }));
}

function workloadBlock(run, which) {
  const s = run.summary || {};
  const toml = run.workload_toml || (s.workload && s.workload.toml) || '';
  return h('div', { class: 'workload' },
    which != null ? h('div', { class: 'block-tag' }, tag(which), run.name) : null,
    s.command_line ? h('div', { class: 'kv' }, h('span', { class: 'k' }, 'command'), h('code', { class: 'v' }, s.command_line)) : null,
    s.workload && s.workload.hash ? h('div', { class: 'kv' }, h('span', { class: 'k' }, 'hash'), h('code', { class: 'v' }, s.workload.hash)) : null,
    toml ? h('pre', { class: 'toml' }, toml) : h('p', { class: 'muted' }, 'No workload file stored.'));
}

// The compare panel: filled when `load` (the /compare answer of the two runs) resolves.
function comparePanel(runs, load) {
  const body = h('div', { class: 'compare-body' }, h('p', { class: 'muted' }, 'comparing…'));
  load().then(
    (answer) => fill(body, compareBlock(answer, runs.map((r) => r.name))),
    (err) => fill(body, h('p', { class: 'muted' }, err && err.notIncluded ? 'The comparison is not included in this report.' : `No comparison: ${err && err.message}`)),
  );
  return panel('compare', 'Compare: B against A', null, body);
}

// Render every panel for the run (and the compare run) into `root`; `loadCompare`, with
// two runs, answers their comparison.
export function renderPanels(root, runs, onZoom, loadCompare) {
  const both = runs.length > 1;
  const list = (fn) => runs.map((r, i) => fn(r, both ? i : null, onZoom)).filter(Boolean);
  const out = [];
  if (both && loadCompare) out.push(comparePanel(runs, loadCompare));
  out.push(panel('summary', 'Summary', null, h('div', { class: both ? 'two-col' : '' }, list(summaryBlock))));
  const steps = list(stepsBlock);
  const nSteps = Math.max(...runs.map((r) => ((r.summary && r.summary.steps) || r.steps || []).length), 0);
  if (steps.length && nSteps > 1) out.push(panel('steps', 'Steps', String(nSteps), steps));
  const probes = list(probesBlock);
  if (probes.length) out.push(panel('probes', 'Probes', String(runs.reduce((a, r) => a + (r.probes || []).length, 0)), probes));
  const cfg = list(configBlock);
  if (cfg.length) out.push(panel('config', 'System configuration', String(runs.reduce((a, r) => a + (r.hosts || []).length, 0)), h('div', { class: both ? 'two-col' : '' }, cfg)));
  out.push(panel('workload', 'Workload', null, h('div', { class: both ? 'two-col' : '' }, list(workloadBlock))));
  fill(root, ...out);
}
