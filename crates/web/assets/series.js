// series.js: line, stacked-area, percentile and probe shaping from a /series response:
// the visible slice, averages for the side panel, stacking (highlighted values at the
// bottom, the y axis scaled to them), value ranges, and the run's timeline (steps and
// warm-up seconds). Pure: no DOM.

import { niceMax } from './format.js';
import { niceDown, niceUp } from './histo.js';

export const PERCENTILES = ['p50', 'p90', 'p99', 'p999', 'max'];
export const PERCENTILE_LABELS = { p50: 'p50', p90: 'p90', p99: 'p99', p999: 'p99.9', max: 'max' };

export function prepareSeries(resp) {
  const n = resp.seconds.length;
  return {
    stat: resp.stat,
    unit: resp.unit,
    kind: resp.kind,
    by: resp.by || '',
    where: resp.where || '',
    seconds: resp.seconds.slice(),
    step: resp.step ? resp.step.slice() : new Array(n).fill(0),
    warmup: resp.warmup ? resp.warmup.slice() : new Array(n).fill(false),
    series: resp.series.map((s) => ({ ...s, key: String(s.key) })),
  };
}

// What the side panel shows per breakdown value over seconds [i0, i1):
// counters: the average rate over the seconds the value has; distributions: the count;
// probes: how many ran and the longest. A step has only its own seconds (the answer holds
// 0 for the others) and, like the step table, its measured ones: its warm-up seconds
// count only when the range holds no measured second of it.
export function sideTotals(ser, i0, i1) {
  const own = (s, i) => ser.by !== 'step' || String(ser.step[i]) === s.key;
  return ser.series.map((s) => {
    if (s.count) {
      let n = 0;
      for (let i = i0; i < i1; i++) n += s.count[i] || 0;
      return { key: s.key, count: n, value: n };
    }
    let measured = false;
    if (ser.by === 'step') for (let i = i0; i < i1 && !measured; i++) measured = own(s, i) && !ser.warmup[i] && s.values && s.values[i] != null;
    let sum = 0;
    let n = 0;
    let max = null;
    for (let i = i0; i < i1; i++) {
      const v = s.values ? s.values[i] : null;
      if (v == null || !own(s, i) || (measured && ser.warmup[i])) continue;
      sum += v;
      n++;
      if (max == null || v > max) max = v;
    }
    if (ser.kind === 'event') return { key: s.key, count: n, value: max };
    return { key: s.key, count: n, value: n ? sum / n : null };
  });
}

// Per-second values drawn as steps: runs of consecutive stored seconds with a value,
// as index ranges [a, b) into `ys` (ys[k] belongs to seconds[i0 + k]).
export function stepRuns(seconds, ys, i0) {
  const runs = [];
  let a = -1;
  for (let k = 0; k <= ys.length; k++) {
    const finite = k < ys.length && Number.isFinite(ys[k]);
    const joined = a >= 0 && finite && seconds[i0 + k] === seconds[i0 + k - 1] + 1;
    if (a >= 0 && !joined) {
      runs.push([a, k]);
      a = -1;
    }
    if (finite && a < 0) a = k;
  }
  return runs;
}

// The outline of one run [a, b): each second flat across [s, s + 1) as [time, value]
// points, so a step change stands as an edge and the run covers its first and last
// seconds whole.
export function stepLine(seconds, ys, i0, a, b) {
  const pts = [];
  for (let k = a; k < b; k++) {
    const s = seconds[i0 + k];
    pts.push([s, ys[k]], [s + 1, ys[k]]);
  }
  return pts;
}

// Stack order: highlighted values at the bottom (in their listed order), then the rest.
export function stackOrder(keys, highlight) {
  if (!highlight || highlight.size === 0) return keys.slice();
  return keys.filter((k) => highlight.has(k)).concat(keys.filter((k) => !highlight.has(k)));
}

// Tops of stacked layers over [i0, i1): layer k's top is the running sum of layers 0..k.
// A missing value counts as 0 unless every layer is missing at that second (then NaN:
// a gap, no tick stored).
export function stack(valuesList, i0, i1) {
  const n = Math.max(0, i1 - i0);
  const tops = valuesList.map(() => new Float64Array(n));
  for (let i = 0; i < n; i++) {
    let sum = 0;
    let any = false;
    for (let k = 0; k < valuesList.length; k++) {
      const v = valuesList[k][i0 + i];
      if (v != null) {
        sum += v;
        any = true;
      }
      tops[k][i] = sum;
    }
    if (!any) for (let k = 0; k < valuesList.length; k++) tops[k][i] = NaN;
  }
  return tops;
}

// The top of a linear y axis over [i0, i1): stacked sums or single values of the
// highlighted series (all when nothing is highlighted), rounded up to a 1-2-5 step.
// With a highlight the axis rescales to the highlighted values alone.
export function linearRange(ser, i0, i1, highlight, stacked) {
  const active = ser.series.filter((s) => !highlight || highlight.size === 0 || highlight.has(s.key));
  let max = 0;
  for (let i = i0; i < i1; i++) {
    let sum = 0;
    for (const s of active) {
      const v = s.values ? s.values[i] : null;
      if (v == null) continue;
      if (stacked) sum += v;
      else if (v > max) max = v;
    }
    if (stacked && sum > max) max = sum;
  }
  return { ymin: 0, ymax: niceMax(max) };
}

// Log y range of percentile lines over [i0, i1) for the active series.
export function percentileRange(ser, i0, i1, highlight, unit) {
  const active = ser.series.filter((s) => !highlight || highlight.size === 0 || highlight.has(s.key));
  let lo = Infinity;
  let hi = 0;
  for (const s of active) {
    for (const p of PERCENTILES) {
      const arr = s[p];
      if (!arr) continue;
      for (let i = i0; i < i1; i++) {
        const v = arr[i];
        if (v == null || !(v > 0)) continue;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    }
  }
  if (!(hi > 0)) return null;
  let ymin = niceDown(lo, unit);
  let ymax = niceUp(hi * 1.05, unit);
  if (ymax / ymin < 4) {
    ymin = niceDown(ymin / 2, unit);
    ymax = niceUp(ymax * 2, unit);
  }
  return { ymin, ymax };
}

// Probe durations: linear from 0 to the longest visible run.
export function probeRange(ser, i0, i1) {
  let max = 0;
  for (const s of ser.series) {
    for (let i = i0; i < i1; i++) {
      const v = s.values ? s.values[i] : null;
      if (v != null && v > max) max = v;
    }
  }
  return { ymin: 0, ymax: niceMax(max) };
}

// Step boundaries and warm-up spans within [from, to] from per-second step/warmup
// arrays: { start, bounds: [{ second, step }], warm: [[first, last], ...] }. `start` is
// the step in force at the first visible second when no boundary is there (it gets a label
// too, step 0 included); `knee` (the summary's knee step) marks that step's entry.
export function timelineMarks(tl, from, to, knee) {
  const bounds = [];
  const warm = [];
  let start = null;
  if (!tl || !tl.seconds) return { start, bounds, warm };
  let wstart = null;
  // A second with nothing stored (step null) belongs to no step: a boundary is where a
  // stored second's step differs from the last stored one's.
  let lastStep = null;
  for (let i = 0; i < tl.seconds.length; i++) {
    const s = tl.seconds[i];
    const st = tl.step[i];
    if (st != null) {
      if (lastStep != null && st !== lastStep && s >= from && s <= to) bounds.push({ second: s, step: st });
      if (s <= from || start == null) start = s <= to ? { second: from, step: st } : start;
      lastStep = st;
    }
    const w = !!tl.warmup[i];
    if (w && wstart == null) wstart = s;
    if ((!w || i === tl.seconds.length - 1) && wstart != null) {
      const end = w ? s : tl.seconds[i - 1];
      if (end >= from && wstart <= to) warm.push([Math.max(wstart, from), Math.min(end, to)]);
      wstart = null;
    }
  }
  if (start && bounds.length && bounds[0].second <= from) start = null;
  if (knee != null) {
    for (const b of bounds) if (b.step === knee) b.knee = true;
    if (start && start.step === knee) start.knee = true;
  }
  return { start, bounds, warm };
}

// A timeline from the run's step list when no series response is at hand:
// each step starts at start_second, its first ceil(warmup_ns / 1e9) seconds are warm-up.
export function timelineFromSteps(steps, first, last) {
  const seconds = [];
  const step = [];
  const warmup = [];
  if (first == null || last == null) return { seconds, step, warmup };
  const sorted = (steps || []).slice().sort((a, b) => a.start_second - b.start_second);
  for (let s = first; s <= last; s++) {
    let cur = null;
    for (const st of sorted) if (st.start_second <= s) cur = st;
    seconds.push(s);
    step.push(cur ? cur.index : 0);
    warmup.push(cur ? s - cur.start_second < Math.ceil((cur.warmup_ns || 0) / 1e9) : false);
  }
  return { seconds, step, warmup };
}

// Append newer seconds to a prepared series response (seconds in both: newer wins).
export function mergeSeries(old, add) {
  const a = add.seconds ? add : prepareSeries(add);
  const firstNew = a.seconds.length ? a.seconds[0] : Infinity;
  let keep = 0;
  while (keep < old.seconds.length && old.seconds[keep] < firstNew) keep++;
  const n = a.seconds.length;
  const keys = [];
  for (const s of old.series) if (!keys.includes(s.key)) keys.push(s.key);
  for (const s of a.series) if (!keys.includes(s.key)) keys.push(s.key);
  const arrays = ['values', 'count', ...PERCENTILES];
  const series = keys.map((key) => {
    const so = old.series.find((s) => s.key === key);
    const sa = a.series.find((s) => s.key === key);
    const out = { key };
    for (const f of arrays) {
      if (!(so && so[f]) && !(sa && sa[f])) continue;
      const head = so && so[f] ? so[f].slice(0, keep) : new Array(keep).fill(null);
      const tail = sa && sa[f] ? sa[f] : new Array(n).fill(null);
      out[f] = head.concat(tail);
    }
    // Distributions: the total is the sum of the counts. Counters: the server's total
    // is over its range only; the side panel computes what it shows from the values.
    out.total = out.count ? out.count.reduce((x, c) => x + (c || 0), 0) : (sa ? sa.total : so.total);
    return out;
  });
  return {
    ...old,
    seconds: old.seconds.slice(0, keep).concat(a.seconds),
    step: old.step.slice(0, keep).concat(a.step),
    warmup: old.warmup.slice(0, keep).concat(a.warmup),
    series,
  };
}
