// compare.js: the compare view's table: for the run shown (A) and the run compared with it
// (B), per step, each operation's and the total's headline figures, the difference of B
// from A and, when both runs have repeats, its 95% interval and whether it is significant
// (GET /api/v1/runs/{a}/compare?with={b}, docs/compare.md). Without repeats the
// difference "may be noise".

import { fmtNs, fmtNum } from './format.js';
import { h } from './worksheet.js';

const FIGURE_LABELS = { iops: 'IOPS', bytes_per_sec: 'MB/s', latency_p50_ns: 'latency p50', latency_p99_ns: 'latency p99' };

// A figure's value for the table.
function value(figure, v) {
  if (v == null || !Number.isFinite(v)) return '—';
  if (figure === 'bytes_per_sec') return fmtNum(v / 1e6);
  if (figure.endsWith('_ns')) return fmtNs(Math.round(v));
  return fmtNum(v);
}

function signed(text, v) {
  return `${v < 0 ? '−' : '+'}${text}`;
}

// "+20.0%", "−0.04%".
export function fmtPct(p) {
  if (p == null || !Number.isFinite(p)) return '—';
  const a = Math.abs(p);
  return signed(`${a >= 0.1 || a === 0 ? a.toFixed(1) : a.toFixed(2)}%`, p);
}

// "yes", "no", "no (within ±1%)" (negligible), "no (may be under 1%)" (small), or "—" (no interval).
function significance(f) {
  if (f.significant == null) return '—';
  if (f.significant) return 'yes';
  if (f.finding === 'negligible') return 'no (within ±1%)';
  if (f.finding === 'small') return 'no (may be under 1%)';
  return 'no';
}

// The comparison as rows of text, per step: what the table shows.
export function compareRows(comparison) {
  return ((comparison && comparison.steps) || []).map((st) => ({
    step: st.step,
    label: st.label,
    rows: st.figures.map((f) => {
      const i = f.interval;
      let interval = 'may be noise';
      if (i) interval = i.low_pct != null && i.high_pct != null ? `${fmtPct(i.low_pct)} to ${fmtPct(i.high_pct)}` : `${signed(value(f.figure, Math.abs(i.low)), i.low)} to ${signed(value(f.figure, Math.abs(i.high)), i.high)}`;
      return {
        op: f.op,
        figure: FIGURE_LABELS[f.figure] || f.figure,
        a: value(f.figure, f.a),
        b: value(f.figure, f.b),
        difference: `${signed(value(f.figure, Math.abs(f.difference)), f.difference)}${f.difference_pct != null ? ` (${fmtPct(f.difference_pct)})` : ''}`,
        interval,
        significant: significance(f),
        finding: f.finding,
        message: f.message,
      };
    }),
  }));
}

// What differs between the two runs besides the figures: workload keys, hosts, systems.
export function differences(comparison) {
  const out = [];
  const w = comparison && comparison.workload_differs;
  if (w) out.push(`workload differs${w.keys.length ? `: ${w.keys.join(', ')}` : ` (hash ${w.a_hash} vs ${w.b_hash})`}`);
  for (const d of (comparison && comparison.system_differs) || []) out.push(`system differs: ${d}`);
  return out;
}

// The compare panel's body for an answer of /compare (or why there is none).
export function compareBlock(answer, names) {
  const c = answer && answer.comparison;
  if (!c) return h('p', { class: 'muted' }, 'No comparison.');
  const [nameA, nameB] = names || ['A', 'B'];
  const repeats = (n) => (n > 1 ? `${n} repeats` : 'one run');
  const steps = compareRows(c);
  const several = steps.length > 1 || steps.some((s) => s.label);
  return h('div', { class: 'compare-view', 'data-method': c.method },
    h('div', { class: 'compare-sides' },
      h('span', { class: 'run-tag a' }, 'A'), ` ${nameA} (${repeats(c.a.repeats)})  `,
      h('span', { class: 'run-tag b' }, 'B'), ` ${nameB} (${repeats(c.b.repeats)})`),
    differences(c).map((d) => h('p', { class: 'compare-differs' }, d)),
    steps.map((st) => h('div', { class: 'table-scroll', 'data-step': st.step },
      several ? h('div', { class: 'compare-step' }, `step ${st.step}${st.label ? ` ${st.label}` : ''}`) : null,
      h('table', { class: 'grid comparison' },
        h('thead', {}, h('tr', {}, ['', 'figure', 'A', 'B', 'B − A', `${c.confidence_pct}% interval of B − A`, 'significant'].map((t, i) => h('th', { class: i < 2 ? 'l' : '' }, t)))),
        h('tbody', {}, st.rows.map((r) => h('tr', { 'data-op': r.op, 'data-figure': r.figure, 'data-finding': r.finding, title: r.message },
          h('td', { class: 'l key' }, r.op),
          h('td', { class: 'l' }, r.figure),
          h('td', {}, r.a),
          h('td', {}, r.b),
          h('td', { class: r.significant === 'yes' ? 'em' : '' }, r.difference),
          h('td', { class: r.interval === 'may be noise' ? 'muted' : '' }, r.interval),
          h('td', { class: r.significant === 'yes' ? 'em sig' : 'muted' }, r.significant === 'yes' ? '✔ yes' : r.significant))))))),
    c.method === 'welch'
      ? h('p', { class: 'muted compare-method' }, `Welch's t on the repeat means; significant = the ${c.confidence_pct}% interval lies beyond ±${c.min_effect_pct}% of A.`)
      : null,
    c.notes.map((n) => h('p', { class: 'compare-note' }, n)));
}
