// draw.js: canvas drawing of one chart: heat maps through ImageData (seconds summed into
// pixel columns, buckets mapped to rows once per draw), lines, stacked areas, percentile
// lines and probe durations; the shared time axis, warm-up seconds and step boundaries.
// Returns what was drawn (the data-drawn contract the browser tests read).

import { fmtTick, fmtElapsed, logTicks, linearTicks, binaryTicks, timeTicks } from './format.js';
import { PLOT_BG, WARMUP_BG, HEAT_LUT, GREY_LUT, hueLut, rgba, PERCENTILE_COLORS } from './color.js';
import { indexRange, logScale, linScale, bucketRows, columnBins, accumulate } from './histo.js';
import { stack, stackOrder, stepRuns, stepLine, PERCENTILES } from './series.js';

export const MARGIN = { left: 64, right: 12, top: 14, bottom: 22 };

const AXIS_FONT = '10.5px "JetBrains Mono", "SF Mono", ui-monospace, Menlo, Consolas, "DejaVu Sans Mono", monospace';
const LABEL_FONT = '10.5px Inter, "Segoe UI", system-ui, -apple-system, "DejaVu Sans", sans-serif';
const AXIS_TEXT = 'rgba(180, 190, 205, 0.78)';
const GRID = 'rgba(150, 165, 190, 0.10)';
const STEP_LINE = 'rgba(200, 210, 230, 0.38)';
const WARM_STRIP = 'rgba(214, 170, 90, 0.55)';
const KNEE_LINE = 'rgba(255, 196, 92, 0.85)';
const KNEE_TEXT = 'rgba(255, 196, 92, 0.95)';

export function chartHeight(kind) {
  if (kind === 'heatmap') return 260;
  if (kind === 'percentiles') return 220;
  if (kind === 'probe') return 150;
  return 200;
}

// Size the canvas backing store for the device pixel ratio; drawing is in CSS pixels.
export function prepareCanvas(canvas, cssW, cssH) {
  const dpr = (typeof window !== 'undefined' && window.devicePixelRatio) || 1;
  const w = Math.max(1, Math.round(cssW * dpr));
  const h = Math.max(1, Math.round(cssH * dpr));
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h) canvas.height = h;
  canvas.style.width = `${cssW}px`;
  canvas.style.height = `${cssH}px`;
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return { ctx, dpr };
}

export function plotRect(cssW, cssH) {
  return {
    x: MARGIN.left,
    y: MARGIN.top,
    width: Math.max(10, cssW - MARGIN.left - MARGIN.right),
    height: Math.max(10, cssH - MARGIN.top - MARGIN.bottom),
  };
}

// CSS x of time t (seconds; second s spans [x(s), x(s + 1))).
export function xOf(plot, from, to, t) {
  return plot.x + ((t - from) * plot.width) / (to + 1 - from);
}

// The second under CSS x (clamped to [from, to]).
export function secondAt(plot, from, to, x) {
  const n = to + 1 - from;
  const s = from + Math.floor(((x - plot.x) / plot.width) * n);
  return Math.max(from, Math.min(to, s));
}

function yScale(y, h) {
  return y.scale === 'lin' ? linScale(y.ymin, y.ymax, h) : logScale(y.ymin, y.ymax, h);
}

function lut32(lut) {
  const out = new Uint32Array(256);
  const le = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
  for (let i = 0; i < 256; i++) {
    const r = lut[i * 4];
    const g = lut[i * 4 + 1];
    const b = lut[i * 4 + 2];
    out[i] = le ? (255 << 24) | (b << 16) | (g << 8) | r : (r << 24) | (g << 16) | (b << 8) | 255;
  }
  return out;
}

const HEAT32 = lut32(HEAT_LUT);
const GREY32 = lut32(GREY_LUT);
const hueCache = new Map();
function hue32(hex) {
  if (!hueCache.has(hex)) hueCache.set(hex, lut32(hueLut(hex)));
  return hueCache.get(hex);
}
function rgb32(rgb) {
  return lut32(new Uint8ClampedArray([...rgb, 255, ...new Array(255 * 4).fill(0)]))[0];
}
const BG32 = rgb32(PLOT_BG);
const WARM32 = rgb32(WARMUP_BG);

function warmSet(marks) {
  const set = new Set();
  for (const [a, b] of (marks && marks.warm) || []) for (let s = a; s <= b; s++) set.add(s);
  return set;
}

// Plot background: the plot colour, warm-up seconds lighter with an amber strip on top.
function drawBackground(ctx, plot, from, to, marks) {
  ctx.fillStyle = `rgb(${PLOT_BG.join(',')})`;
  ctx.fillRect(plot.x, plot.y, plot.width, plot.height);
  for (const [a, b] of (marks && marks.warm) || []) {
    const x0 = xOf(plot, from, to, a);
    const x1 = xOf(plot, from, to, b + 1);
    ctx.fillStyle = `rgb(${WARMUP_BG.join(',')})`;
    ctx.fillRect(x0, plot.y, x1 - x0, plot.height);
  }
}

function drawWarmStrip(ctx, plot, from, to, marks) {
  for (const [a, b] of (marks && marks.warm) || []) {
    const x0 = xOf(plot, from, to, a);
    const x1 = xOf(plot, from, to, b + 1);
    ctx.fillStyle = WARM_STRIP;
    ctx.fillRect(x0, plot.y - 4, Math.max(1, x1 - x0), 3);
    if (x1 - x0 > 46) {
      ctx.font = LABEL_FONT;
      ctx.fillStyle = 'rgba(214, 170, 90, 0.85)';
      ctx.textAlign = 'left';
      ctx.textBaseline = 'top';
      ctx.fillText('warm-up', x0 + 4, plot.y + 3);
    }
  }
}

// Step boundaries as dashed lines, each labelled with its step above the plot, and the
// step in force at the left edge labelled there (step 0 has no boundary of its own). The
// knee step's boundary is a solid amber line and its label starts with "knee".
function drawSteps(ctx, plot, from, to, marks, stepLabel) {
  const bounds = (marks && marks.bounds) || [];
  const labels = [];
  const drawn = [];
  if (marks && marks.start) labels.push({ ...marks.start, x: plot.x, line: false });
  for (const b of bounds) labels.push({ ...b, x: Math.round(xOf(plot, from, to, b.second)) + 0.5, line: true });
  ctx.save();
  ctx.beginPath();
  ctx.rect(plot.x, plot.y - 12, plot.width, plot.height + 12);
  ctx.clip();
  for (let i = 0; i < labels.length; i++) {
    const l = labels[i];
    if (l.line) {
      ctx.strokeStyle = l.knee ? KNEE_LINE : STEP_LINE;
      ctx.setLineDash(l.knee ? [] : [3, 3]);
      ctx.lineWidth = l.knee ? 1.5 : 1;
      ctx.beginPath();
      ctx.moveTo(l.x, plot.y);
      ctx.lineTo(l.x, plot.y + plot.height);
      ctx.stroke();
      ctx.setLineDash([]);
    }
    const next = i + 1 < labels.length ? labels[i + 1].x : plot.x + plot.width;
    const room = next - l.x - 6;
    const name = stepLabel ? stepLabel(l.step) : `step ${l.step}`;
    const full = l.knee ? `knee · ${name}` : name;
    ctx.font = LABEL_FONT;
    let text = full;
    if (ctx.measureText(text).width > room) text = l.knee ? `knee ${l.step}` : `${l.step}`;
    if (ctx.measureText(text).width <= room) {
      ctx.fillStyle = l.knee ? KNEE_TEXT : 'rgba(200, 210, 230, 0.75)';
      ctx.textAlign = 'left';
      ctx.textBaseline = 'bottom';
      ctx.fillText(text, l.x + 4, plot.y - 1);
      drawn.push({ second: l.second, step: l.step, text, ...(l.knee ? { knee: true } : {}) });
    }
  }
  ctx.restore();
  return drawn;
}

function drawTimeAxis(ctx, plot, from, to) {
  const n = to + 1 - from;
  const target = Math.max(2, Math.floor(plot.width / 78));
  const { ticks } = timeTicks(from, to + 1, target);
  ctx.font = AXIS_FONT;
  ctx.fillStyle = AXIS_TEXT;
  ctx.textBaseline = 'top';
  ctx.strokeStyle = 'rgba(150, 165, 190, 0.35)';
  ctx.lineWidth = 1;
  for (const t of ticks) {
    const x = Math.round(xOf(plot, from, to, t)) + 0.5;
    if (x < plot.x - 0.5 || x > plot.x + plot.width + 0.5) continue;
    ctx.beginPath();
    ctx.moveTo(x, plot.y + plot.height);
    ctx.lineTo(x, plot.y + plot.height + 4);
    ctx.stroke();
    const label = fmtElapsed(t);
    const w = ctx.measureText(label).width;
    let tx = x - w / 2;
    tx = Math.max(plot.x - 4, Math.min(plot.x + plot.width - w + 4, tx));
    ctx.textAlign = 'left';
    ctx.fillText(label, tx, plot.y + plot.height + 6);
  }
  return n;
}

function drawYAxis(ctx, plot, y, unit, grid) {
  const h = plot.height;
  const sc = yScale(y, h);
  const maxCount = Math.max(2, Math.floor(h / 24));
  const linTicks = unit === 'bytes' || unit === 'bytes/s' ? binaryTicks : linearTicks;
  let ticks = y.scale === 'lin' ? linTicks(y.ymin, y.ymax, Math.min(6, maxCount)).ticks : logTicks(y.ymin, y.ymax, unit, maxCount);
  if (ticks.length < 2 && y.scale !== 'lin') ticks = [y.ymin, y.ymax];
  ctx.font = AXIS_FONT;
  ctx.fillStyle = AXIS_TEXT;
  ctx.textAlign = 'right';
  ctx.textBaseline = 'middle';
  ctx.lineWidth = 1;
  for (const v of ticks) {
    const py = Math.round(plot.y + sc.toY(v)) + 0.5;
    if (py < plot.y - 0.5 || py > plot.y + h + 0.5) continue;
    if (grid) {
      ctx.strokeStyle = GRID;
      ctx.beginPath();
      ctx.moveTo(plot.x, py);
      ctx.lineTo(plot.x + plot.width, py);
      ctx.stroke();
    }
    ctx.strokeStyle = 'rgba(150, 165, 190, 0.35)';
    ctx.beginPath();
    ctx.moveTo(plot.x - 4, py);
    ctx.lineTo(plot.x, py);
    ctx.stroke();
    ctx.fillText(fmtTick(v, unit), plot.x - 7, Math.max(plot.y + 4, Math.min(plot.y + h - 4, py)));
  }
}

function drawFrame(ctx, plot) {
  ctx.strokeStyle = 'rgba(150, 165, 190, 0.16)';
  ctx.lineWidth = 1;
  ctx.strokeRect(plot.x - 0.5, plot.y - 0.5, plot.width + 1, plot.height + 1);
}

// Probe markers: a triangle on the time axis at the probe's start, named beside it when
// there is room before the next one. Returns the names drawn.
function drawProbeMarks(ctx, plot, from, to, probes) {
  const named = [];
  const shown = (probes || []).filter((p) => p.second >= from && p.second <= to).sort((a, b) => a.second - b.second);
  const xs = shown.map((p) => xOf(plot, from, to, p.second + 0.5));
  ctx.font = LABEL_FONT;
  for (let i = 0; i < shown.length; i++) {
    const x = xs[i];
    const yb = plot.y + plot.height;
    ctx.fillStyle = 'rgba(111, 211, 232, 0.9)';
    ctx.beginPath();
    ctx.moveTo(x, yb - 6);
    ctx.lineTo(x + 4, yb);
    ctx.lineTo(x - 4, yb);
    ctx.closePath();
    ctx.fill();
    const name = shown[i].name;
    if (!name) continue;
    const room = (i + 1 < xs.length ? xs[i + 1] : plot.x + plot.width) - x - 8;
    if (ctx.measureText(name).width > room) continue;
    ctx.textAlign = 'left';
    ctx.textBaseline = 'bottom';
    ctx.fillStyle = 'rgba(12, 15, 20, 0.75)';
    const w = ctx.measureText(name).width;
    ctx.fillRect(x + 5, yb - 14, w + 4, 13);
    ctx.fillStyle = 'rgba(111, 211, 232, 0.95)';
    ctx.fillText(name, x + 7, yb - 2);
    named.push({ second: shown[i].second, name });
  }
  return named;
}

// The seconds [a, b] the heat map's side panel is pinned at: a bracket over their columns.
function drawPin(ctx, plot, from, to, pin) {
  const [a, b] = pin;
  if (b < from || a > to) return;
  const x0 = Math.round(xOf(plot, from, to, Math.max(a, from)));
  const x1 = Math.max(x0 + 1, Math.round(xOf(plot, from, to, Math.min(b, to) + 1)));
  ctx.save();
  ctx.strokeStyle = 'rgba(235, 240, 250, 0.9)';
  ctx.lineWidth = 1;
  ctx.strokeRect(x0 - 0.5, plot.y - 0.5, x1 - x0 + 1, plot.height + 1);
  ctx.fillStyle = 'rgba(235, 240, 250, 0.9)';
  ctx.beginPath();
  const xm = (x0 + x1) / 2;
  ctx.moveTo(xm - 5, plot.y - 7);
  ctx.lineTo(xm + 5, plot.y - 7);
  ctx.lineTo(xm, plot.y - 1);
  ctx.closePath();
  ctx.fill();
  ctx.restore();
}

// --- heat map -------------------------------------------------------------------------

function drawHeat(ctx, dpr, plot, m) {
  const heat = m.data;
  const [i0, i1] = indexRange(heat.seconds, m.from, m.to);
  const px = Math.round(plot.x * dpr);
  const py = Math.round(plot.y * dpr);
  const pw = Math.max(1, Math.round(plot.width * dpr));
  const ph = Math.max(1, Math.round(plot.height * dpr));
  const bins = columnBins(m.from, m.to, pw);
  const rows = bucketRows(heat.lo, heat.hi, yScale(m.y, ph), ph);
  const hl = m.highlight && m.highlight.size ? m.highlight : null;
  const keys = heat.series.map((s) => s.key);
  // Layers: each highlighted value in its colour, the rest in grey; or all in false colour.
  const layers = [];
  const luts = [];
  if (hl) {
    for (const k of keys) {
      if (hl.has(k)) {
        layers.push(new Set([k]));
        luts.push(hue32(m.colors.get(k) || '#5aa2ff'));
      }
    }
    layers.push(new Set(keys.filter((k) => !hl.has(k))));
    luts.push(GREY32);
  } else {
    layers.push(null);
    luts.push(HEAT32);
  }
  const acc = accumulate(heat, layers, i0, i1, bins, rows, ph);
  const warm = warmSet(m.marks);
  const img = ctx.createImageData(pw, ph);
  const pix = new Uint32Array(img.data.buffer);
  const col = new Uint32Array(ph);
  const nl = layers.length;
  const hlCount = hl ? nl - 1 : nl;
  // One scale for all coloured layers so equal counts look equal; grey has its own.
  // `m.scaleMax` (compare: the larger of both panes) sets the scale so both panes and the
  // legend read alike.
  let hlMax = 0;
  for (let l = 0; l < hlCount; l++) hlMax = Math.max(hlMax, acc.maxes[l]);
  const greyMax = hl ? acc.maxes[nl - 1] : 0;
  const sm = m.scaleMax || {};
  const kHl = 255 / Math.log(Math.max(hlMax, sm.main || 0, 4));
  const kGrey = hl ? 255 / Math.log(Math.max(greyMax, sm.grey || 0, 4)) : 0;
  // A row's share of a bucket can be under one I/O: it still gets the first colour.
  const idx = (v, k) => Math.max(0, Math.min(255, Math.round(Math.log(v) * k)));
  // Which bins hold a warm-up second (background shade).
  const warmBin = new Uint8Array(bins.nbins);
  if (warm.size) for (const s of warm) if (s >= m.from && s <= m.to) warmBin[bins.binOf(s)] = 1;
  const grids = acc.grids;
  // Where the densest coloured cell is drawn (plot CSS pixels), for a reader to check its
  // colour against the legend.
  let top = 0;
  let maxAt = null;
  for (let b = 0; b < bins.nbins; b++) {
    const bg = warmBin[b] ? WARM32 : BG32;
    const base = b * ph;
    for (let r = 0; r < ph; r++) {
      let c = bg;
      let best = 0;
      for (let l = 0; l < hlCount; l++) {
        const v = grids[l][base + r];
        if (v > best) {
          best = v;
          c = luts[l][idx(v, kHl)];
        }
      }
      if (best > top) {
        top = best;
        maxAt = { x: (bins.x0[b] + bins.x0[b + 1]) / 2 / dpr, y: (r + 0.5) / dpr };
      }
      if (best === 0 && hl) {
        const v = grids[nl - 1][base + r];
        if (v > 0) c = GREY32[idx(v, kGrey)];
      }
      col[r] = c;
    }
    const x0 = bins.x0[b];
    const x1 = bins.x0[b + 1];
    for (let r = 0; r < ph; r++) {
      const rowBase = r * pw;
      const c = col[r];
      for (let x = x0; x < x1; x++) pix[rowBase + x] = c;
    }
  }
  ctx.putImageData(img, px, py);
  let series = 0;
  for (const s of heat.series) {
    let any = false;
    for (let i = i0; i < i1 && !any; i++) any = s.columns[i] && s.columns[i].length > 0;
    if (any) series++;
  }
  // The I/O drawn in each pixel column (every row, every layer): what a reader can check
  // against the ops chart (kept for up to 2,000 columns).
  let columns = null;
  if (bins.nbins <= 2000) {
    columns = new Array(bins.nbins).fill(0);
    for (const g of grids) for (let b = 0; b < bins.nbins; b++) for (let r = 0; r < ph; r++) columns[b] += g[b * ph + r];
    columns = columns.map((v) => Math.round(v * 1000) / 1000);
  }
  const maxCell = Math.max(hl ? hlMax : acc.maxes[0], sm.main || 0);
  return { cells: acc.cells, series, maxCell, maxGrey: hl ? Math.max(greyMax, sm.grey || 0) : undefined, ownMax: hl ? hlMax : acc.maxes[0], ownGrey: hl ? greyMax : undefined, maxAt, columns };
}

// --- lines, stacked areas ----------------------------------------------------------------

// Each second is drawn flat across its own width: [time, value] points to canvas points.
function tracePath(ctx, plot, m, pts, Y, first) {
  for (let j = 0; j < pts.length; j++) {
    const x = xOf(plot, m.from, m.to, pts[j][0]);
    const y = Y(pts[j][1]);
    if (j === 0 && first) ctx.moveTo(x, y);
    else ctx.lineTo(x, y);
  }
}

function drawLines(ctx, plot, m, stacked) {
  const ser = m.data;
  const [i0, i1] = indexRange(ser.seconds, m.from, m.to);
  const sc = linScale(m.y.ymin, m.y.ymax, plot.height);
  const hl = m.highlight && m.highlight.size ? m.highlight : null;
  const keys = ser.series.map((s) => s.key);
  const order = stackOrder(keys, hl);
  const byKey = new Map(ser.series.map((s) => [s.key, s]));
  const Y = (v) => plot.y + sc.toY(v);
  const secs = ser.seconds;
  let drawn = 0;
  ctx.save();
  ctx.beginPath();
  ctx.rect(plot.x, plot.y, plot.width, plot.height);
  ctx.clip();
  if (stacked) {
    // With a highlight the y axis is scaled to the highlighted layers alone: the layers
    // above them would only show as clipped shapes, so they are not drawn.
    const layers = hl ? order.filter((k) => hl.has(k)) : order;
    const tops = stack(layers.map((k) => byKey.get(k).values || []), i0, i1);
    for (let k = 0; k < layers.length; k++) {
      const key = layers[k];
      const color = m.colors.get(key);
      const top = tops[k];
      const below = k > 0 ? tops[k - 1] : null;
      if (top.some((v, i) => Number.isFinite(v) && v > (below ? below[i] : 0))) drawn++;
      for (const [a, b] of stepRuns(secs, top, i0)) {
        const upper = stepLine(secs, top, i0, a, b);
        const lower = below ? stepLine(secs, below, i0, a, b) : [[upper[0][0], 0], [upper[upper.length - 1][0], 0]];
        ctx.beginPath();
        tracePath(ctx, plot, m, upper, Y, true);
        tracePath(ctx, plot, m, lower.reverse(), Y, false);
        ctx.closePath();
        ctx.fillStyle = rgba(color, 0.62);
        ctx.fill();
        ctx.beginPath();
        tracePath(ctx, plot, m, upper, Y, true);
        ctx.strokeStyle = rgba(color, 1);
        ctx.lineWidth = 1.4;
        ctx.stroke();
      }
    }
  } else {
    // Dimmed lines first, highlighted on top.
    const drawOrder = order.slice().reverse();
    for (const key of drawOrder) {
      const s = byKey.get(key);
      const vals = [];
      for (let i = i0; i < i1; i++) vals.push(s.values && s.values[i] != null ? s.values[i] : NaN);
      if (vals.some(Number.isFinite)) drawn++;
      const dim = hl && !hl.has(key);
      ctx.strokeStyle = rgba(m.colors.get(key), dim ? 0.22 : 1);
      ctx.lineWidth = dim ? 1 : hl ? 2 : 1.5;
      ctx.lineJoin = 'miter';
      for (const [a, b] of stepRuns(secs, vals, i0)) {
        ctx.beginPath();
        tracePath(ctx, plot, m, stepLine(secs, vals, i0, a, b), Y, true);
        ctx.stroke();
      }
    }
  }
  ctx.restore();
  return { cells: 0, series: drawn };
}

// --- percentiles ------------------------------------------------------------------------

const DASH = { p50: [], p90: [], p99: [], p999: [5, 3], max: [1.5, 2.5] };
const WIDTH = { p50: 1.2, p90: 1.2, p99: 1.8, p999: 1.3, max: 1 };
const ALPHA = { p50: 0.55, p90: 0.75, p99: 1, p999: 0.9, max: 0.7 };

function drawPercentiles(ctx, plot, m) {
  const ser = m.data;
  const [i0, i1] = indexRange(ser.seconds, m.from, m.to);
  const sc = yScale(m.y, plot.height);
  const hl = m.highlight && m.highlight.size ? m.highlight : null;
  const active = ser.series.filter((s) => !hl || hl.has(s.key));
  const single = active.length === 1;
  const Y = (v) => plot.y + sc.toY(v);
  let drawn = 0;
  ctx.save();
  ctx.beginPath();
  ctx.rect(plot.x, plot.y, plot.width, plot.height);
  ctx.clip();
  for (const s of active) {
    let any = false;
    for (const p of PERCENTILES.slice().reverse()) {
      const arr = s[p] || [];
      const vals = [];
      for (let i = i0; i < i1; i++) vals.push(arr[i] != null && arr[i] > 0 ? arr[i] : NaN);
      if (vals.some(Number.isFinite)) any = true;
      const color = single ? PERCENTILE_COLORS[p] : m.colors.get(s.key);
      ctx.strokeStyle = rgba(color, single ? 1 : ALPHA[p]);
      ctx.lineWidth = WIDTH[p];
      ctx.setLineDash(single ? (p === 'max' ? [1.5, 2.5] : []) : DASH[p]);
      ctx.lineJoin = 'miter';
      for (const [a, b] of stepRuns(ser.seconds, vals, i0)) {
        ctx.beginPath();
        tracePath(ctx, plot, m, stepLine(ser.seconds, vals, i0, a, b), Y, true);
        ctx.stroke();
      }
    }
    if (any) drawn++;
  }
  ctx.setLineDash([]);
  ctx.restore();
  return { cells: 0, series: drawn };
}

// --- probes -----------------------------------------------------------------------------

function drawProbes(ctx, plot, m) {
  const ser = m.data;
  const [i0, i1] = indexRange(ser.seconds, m.from, m.to);
  const sc = linScale(m.y.ymin, m.y.ymax, plot.height);
  const hl = m.highlight && m.highlight.size ? m.highlight : null;
  const colW = plot.width / (m.to + 1 - m.from);
  const w = Math.max(3, Math.min(14, colW * 0.6));
  let drawn = 0;
  for (const s of ser.series) {
    const color = m.colors.get(s.key);
    const dim = hl && !hl.has(s.key);
    let any = false;
    for (let i = i0; i < i1; i++) {
      const v = s.values ? s.values[i] : null;
      if (v == null) continue;
      any = true;
      const x = xOf(plot, m.from, m.to, ser.seconds[i] + 0.5);
      const yt = plot.y + Math.max(0, sc.toY(v));
      ctx.fillStyle = rgba(color, dim ? 0.15 : 0.55);
      ctx.fillRect(x - w / 2, yt, w, plot.y + plot.height - yt);
      ctx.fillStyle = rgba(color, dim ? 0.3 : 1);
      ctx.fillRect(x - w / 2, yt, w, 2);
      // The probe's own duration along the time axis: a thin bar from its start.
      const secs = v / 1e9;
      const x1 = xOf(plot, m.from, m.to, ser.seconds[i] + secs);
      ctx.fillRect(x - w / 2, yt - 1, Math.max(w, x1 - (x - w / 2)), 1);
    }
    if (any) drawn++;
  }
  return { cells: 0, series: drawn };
}

// --- entry ------------------------------------------------------------------------------

// Draw one chart. `m`: { kind, cssW, cssH, data, unit, from, to, y: { ymin, ymax, scale },
// highlight: Set, colors: Map(key -> hex), marks: { bounds, warm }, stepLabel(step),
// probes: [{ second }], message, scaleMax: { main, grey } (heat maps: the colour scale's
// top when it is shared), pin: [a, b] (the pinned seconds) }. Returns the data-drawn record.
export function drawChart(canvas, m) {
  const t0 = performance.now();
  const { ctx, dpr } = prepareCanvas(canvas, m.cssW, m.cssH);
  ctx.clearRect(0, 0, m.cssW, m.cssH);
  const plot = plotRect(m.cssW, m.cssH);
  const info = {
    kind: m.kind,
    from: m.from,
    to: m.to,
    series: 0,
    cells: 0,
    ymin: m.y ? m.y.ymin : null,
    ymax: m.y ? m.y.ymax : null,
    yscale: m.y ? m.y.scale || 'log' : null,
    plot: { x: plot.x, y: plot.y, width: plot.width, height: plot.height },
    ms: 0,
  };
  const hasRange = m.from != null && m.to != null;
  if (hasRange) drawBackground(ctx, plot, m.from, m.to, m.marks);
  else {
    ctx.fillStyle = `rgb(${PLOT_BG.join(',')})`;
    ctx.fillRect(plot.x, plot.y, plot.width, plot.height);
  }
  if (hasRange && m.data && m.y) {
    let r;
    if (m.kind === 'heatmap') {
      r = drawHeat(ctx, dpr, plot, m);
      drawYAxis(ctx, plot, m.y, m.unit, true);
    } else {
      drawYAxis(ctx, plot, m.y, m.unit, true);
      if (m.kind === 'stacked') r = drawLines(ctx, plot, m, true);
      else if (m.kind === 'line') r = drawLines(ctx, plot, m, false);
      else if (m.kind === 'percentiles') r = drawPercentiles(ctx, plot, m);
      else r = drawProbes(ctx, plot, m);
    }
    info.series = r.series;
    info.cells = r.cells;
    if (r.maxCell != null) info.maxCell = r.maxCell;
    if (r.ownMax != null) info.ownMax = r.ownMax;
    if (r.maxGrey != null) info.maxGrey = r.maxGrey;
    if (r.ownGrey != null) info.ownGrey = r.ownGrey;
    if (r.columns) info.columns = r.columns;
    if (r.maxAt) info.maxAt = r.maxAt;
  }
  if (hasRange) {
    drawWarmStrip(ctx, plot, m.from, m.to, m.marks);
    // The labels drawn (for tests): steps (the knee marked) and probe names.
    info.labels = {
      steps: drawSteps(ctx, plot, m.from, m.to, m.marks, m.stepLabel),
      probes: m.kind !== 'probe' ? drawProbeMarks(ctx, plot, m.from, m.to, m.probes) : [],
    };
    drawTimeAxis(ctx, plot, m.from, m.to);
  }
  drawFrame(ctx, plot);
  if (hasRange && m.pin) {
    drawPin(ctx, plot, m.from, m.to, m.pin);
    info.pin = m.pin;
  }
  info.ms = Math.round((performance.now() - t0) * 100) / 100;
  return info;
}

// The legend of a percentile chart: which line is which.
export function percentileLegend(single) {
  return PERCENTILES.map((p) => ({ p, color: single ? PERCENTILE_COLORS[p] : null, dash: DASH[p] }));
}
