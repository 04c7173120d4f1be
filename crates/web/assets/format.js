// format.js: numbers with units, as a storage engineer reads them.
// Latency in ns/µs/ms/s, sizes in binary units (KiB, MiB), rates compact on axes and
// exact in tables, elapsed time as m:ss. Pure: no DOM, no window.

const NS_SCALES = [
  { div: 1, suffix: 'ns' },
  { div: 1e3, suffix: 'µs' },
  { div: 1e6, suffix: 'ms' },
  { div: 1e9, suffix: 's' },
];
const BYTE_SCALES = [
  { div: 1, suffix: 'B' },
  { div: 1024, suffix: 'KiB' },
  { div: 1024 ** 2, suffix: 'MiB' },
  { div: 1024 ** 3, suffix: 'GiB' },
  { div: 1024 ** 4, suffix: 'TiB' },
  { div: 1024 ** 5, suffix: 'PiB' },
  { div: 1024 ** 6, suffix: 'EiB' },
];
const SI_SCALES = [
  { div: 1, suffix: '' },
  { div: 1e3, suffix: 'K' },
  { div: 1e6, suffix: 'M' },
  { div: 1e9, suffix: 'G' },
  { div: 1e12, suffix: 'T' },
];

// Three significant digits: 1.50, 15.0, 150.
export function sig3(x) {
  const a = Math.abs(x);
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

// The scale (divisor and suffix) a value is shown in: the largest whose quotient is >= 1,
// moved up one when rounding to 3 digits would print "1000" (999.7 µs -> 1.00 ms).
function pickScale(v, scales) {
  const a = Math.abs(v);
  let i = 0;
  while (i + 1 < scales.length && a >= scales[i + 1].div) i++;
  if (i + 1 < scales.length && Math.abs(Number(sig3(a / scales[i].div))) >= 1000 && scales[i].div !== 1) i++;
  return scales[i];
}

function scalesFor(unit) {
  if (unit === 'ns') return NS_SCALES;
  if (unit === 'bytes' || unit === 'bytes/s') return BYTE_SCALES;
  return SI_SCALES;
}

function inScale(v, s, exactInts) {
  const q = v / s.div;
  if (s.div === 1) {
    // Below the first step: integers as such (850 ns, 512 B), fractions with 3 digits.
    return Number.isInteger(v) ? String(v) : sig3(v);
  }
  if (exactInts && Number.isInteger(q)) return String(q);
  return sig3(q);
}

// 1500000 -> "1.50 ms"; 850 -> "850 ns".
export function fmtNs(ns) {
  if (ns == null || !Number.isFinite(ns)) return '—';
  const s = pickScale(ns, NS_SCALES);
  return `${inScale(ns, s, false)} ${s.suffix}`;
}

// 4096 -> "4 KiB"; 1572864 -> "1.50 MiB"; 512 -> "512 B".
export function fmtBytes(b) {
  if (b == null || !Number.isFinite(b)) return '—';
  const s = pickScale(b, BYTE_SCALES);
  return `${inScale(b, s, true)} ${s.suffix}`;
}

// Compact decimal: 20001 -> "20.0K", 950 -> "950", 0.5 -> "0.50".
export function fmtSI(v) {
  if (v == null || !Number.isFinite(v)) return '—';
  if (v === 0) return '0';
  const s = pickScale(v, SI_SCALES);
  if (s.div === 1) {
    if (Number.isInteger(v)) return String(v);
    return sig3(v);
  }
  return `${sig3(v / s.div)}${s.suffix}`;
}

// Integer with thousands separators: 1200000 -> "1,200,000".
export function fmtInt(v) {
  if (v == null || !Number.isFinite(v)) return '—';
  const r = Math.round(v);
  const neg = r < 0;
  const digits = String(Math.abs(r));
  let out = '';
  for (let i = 0; i < digits.length; i++) {
    if (i > 0 && (digits.length - i) % 3 === 0) out += ',';
    out += digits[i];
  }
  return neg ? `-${out}` : out;
}

// A rate for a table or the side panel: exact enough to compare (20,001 or 12.5).
export function fmtNum(v) {
  if (v == null || !Number.isFinite(v)) return '—';
  if (Math.abs(v) >= 100) return fmtInt(v);
  if (v === 0) return '0';
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

// A value in a statistic's unit, compact (axes, hover): "1.50 ms", "4 KiB", "20.0K".
export function fmtValue(v, unit) {
  if (v == null || !Number.isFinite(v)) return '—';
  if (unit === 'ns') return fmtNs(v);
  if (unit === 'bytes') return fmtBytes(v);
  if (unit === 'bytes/s') return `${fmtBytes(v)}/s`;
  // Target CPU and disk utilization: 100 = one CPU or one device busy all the second.
  if (unit === 'percent') return `${fmtNum(v)}%`;
  return fmtSI(v);
}

// An axis label: the compact form without trailing zeros ("5K", "10 ms", "2.5 µs").
export function fmtTick(v, unit) {
  if (v === 0) return '0';
  return fmtValue(v, unit).replace(/(\d)\.(\d*?)0+(?=\D|$)/, (m, a, b) => (b ? `${a}.${b}` : a));
}

// A value with its unit spelled out where the compact form drops it ("20.0K ops/s").
export function fmtWithUnit(v, unit) {
  if (unit === 'ns' || unit === 'bytes' || unit === 'bytes/s' || unit === 'percent') return fmtValue(v, unit);
  return unit ? `${fmtValue(v, unit)} ${unit}` : fmtValue(v, unit);
}

// A bucket's inclusive range in one scale (the lower bound's), with enough digits that
// the two bounds differ: [1024, 1031] ns -> "1.02–1.03 µs"; [999424, 1003519] -> "999–1004 µs".
export function fmtRange(lo, hi, unit) {
  if (lo === hi) return fmtValue(lo, unit);
  const s = pickScale(Math.max(lo, 1), scalesFor(unit));
  const sep = unit === 'ns' || unit === 'bytes' ? ' ' : '';
  if (s.div === 1) return `${lo}–${hi}${sep}${s.suffix}`;
  const qa = lo / s.div;
  const qb = hi / s.div;
  const base = Math.abs(qa) >= 100 ? 0 : Math.abs(qa) >= 10 ? 1 : 2;
  const f = (q, d) => (unit === 'bytes' && Number.isInteger(q) ? String(q) : q.toFixed(d));
  let d = base;
  while (d < base + 3 && f(qa, d) === f(qb, d)) d++;
  return `${f(qa, d)}–${f(qb, d)}${sep}${s.suffix}`;
}

// Elapsed seconds as m:ss or h:mm:ss (83 -> "1:23", 3600 -> "1:00:00").
export function fmtElapsed(sec) {
  if (sec == null || !Number.isFinite(sec)) return '—';
  const neg = sec < 0;
  let s = Math.abs(Math.round(sec));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const ss = String(s).padStart(2, '0');
  const out = h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
  return neg ? `-${out}` : out;
}

// Wall-clock time of day (local) for a unix ms instant: "13:45:07".
export function fmtClock(unixMs) {
  if (unixMs == null || !Number.isFinite(unixMs)) return '';
  const d = new Date(unixMs);
  const p = (n) => String(n).padStart(2, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// Date and time for the run header: "2025-11-22 13:45".
export function fmtDateTime(unixMs) {
  if (unixMs == null || !Number.isFinite(unixMs)) return '';
  const d = new Date(unixMs);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

// Linear axis ticks at 1-2-5 steps covering [min, max]; about `target` of them.
export function linearTicks(min, max, target) {
  if (!(max > min)) return { step: 1, ticks: [min] };
  const raw = (max - min) / Math.max(1, target);
  const mag = 10 ** Math.floor(Math.log10(raw));
  let step = mag;
  for (const m of [1, 2, 2.5, 5, 10]) {
    if (m * mag >= raw) {
      step = m * mag;
      break;
    }
  }
  const ticks = [];
  const first = Math.ceil(min / step - 1e-9) * step;
  for (let v = first; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return { step, ticks };
}

// Linear ticks for bytes: steps of a power of two (0, 1 GiB, 2 GiB ... not 954 MiB).
export function binaryTicks(min, max, target) {
  if (!(max > min)) return { step: 1, ticks: [min] };
  const step = 2 ** Math.ceil(Math.log2((max - min) / Math.max(1, target)));
  const ticks = [];
  for (let v = Math.ceil(min / step) * step; v <= max * (1 + 1e-12); v += step) ticks.push(v);
  return { step, ticks };
}

// The top of a linear axis: a round value at least 4% above `max`, so a flat line at
// the maximum does not run along the top edge (0 stays a small positive).
export function niceMax(max) {
  if (!(max > 0)) return 1;
  const m = max * 1.04;
  const { step } = linearTicks(0, m, 8);
  return Math.ceil(m / step - 1e-9) * step || step;
}

// Log axis ticks in [min, max]: decades with 2 and 5 between when they fit (ns, rates),
// powers of two for bytes. At most about `maxCount` ticks.
export function logTicks(min, max, unit, maxCount) {
  const out = [];
  if (!(max > min) || !(min > 0)) return out;
  if (unit === 'bytes') {
    let p = Math.ceil(Math.log2(min) - 1e-9);
    const top = Math.floor(Math.log2(max) + 1e-9);
    let every = 1;
    while ((top - p + 1) / every > maxCount) every++;
    p = Math.ceil(p / every) * every;
    for (; p <= top; p += every) out.push(2 ** p);
    return out;
  }
  const lo = Math.floor(Math.log10(min));
  const hi = Math.ceil(Math.log10(max));
  for (const mults of [[1, 2, 5], [1, 3], [1]]) {
    out.length = 0;
    for (let e = lo; e <= hi; e++) {
      for (const m of mults) {
        const v = m * 10 ** e;
        if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) out.push(v);
      }
    }
    if (out.length <= maxCount) return out;
  }
  // Still too many decades: every k-th decade.
  const all = out.slice();
  const k = Math.ceil(all.length / maxCount);
  return all.filter((_, i) => i % k === 0);
}

// Time axis ticks in seconds: a step from a list of human intervals, about `target` ticks.
export function timeTicks(from, to, target) {
  const span = Math.max(1, to - from);
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  let step = steps[steps.length - 1];
  for (const s of steps) {
    if (span / s <= target) {
      step = s;
      break;
    }
  }
  const ticks = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) ticks.push(t);
  return { step, ticks };
}

// A step's name, with its repeat when the run has repeats (--repeat; the API's step rows
// carry `repeat` from the second repeat on): "repeat 1 threads=4".
export function stepName(step, steps) {
  if (!(steps || []).some((x) => x.repeat)) return step.label;
  const r = `repeat ${step.repeat || 0}`;
  return step.label ? `${r} ${step.label}` : r;
}
