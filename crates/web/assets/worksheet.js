// worksheet.js: the charts of the worksheet, stacked on one time axis. Each chart is a
// <section class="chart"> with its title in words, its tools (kind, outliers, vertical
// zoom), the canvas (two in compare mode) and the side panel of breakdown values.
// Fetches each query once for the whole run (live runs: only the newer seconds), zooms
// and pans in the client, and broadcasts the hovered second to every chart.

import { fmtValue, fmtNum, fmtInt, fmtRange, fmtElapsed, fmtClock, fmtNs, fmtTick, stepName } from './format.js';
import { keyColor, PERCENTILE_COLORS, HEAT_STOPS, hueLut } from './color.js';
import { prepareHeat, indexRange, bucketCounts, heatRange, heatRangeLinear, keyTotals, mergeHeat, binSeconds, coveredSeconds, columnSecondsFor, valueBounds, coarseEdges, coarseRanges, OUTLIER_CUTS } from './histo.js';
import { prepareSeries, sideTotals, linearRange, percentileRange, probeRange, timelineMarks, timelineFromSteps, mergeSeries, PERCENTILES, PERCENTILE_LABELS } from './series.js';
import { chartTitle, statNote, statLabel, kindsFor, KIND_LABELS, drillOptions, endpointFor, whereString, makeChart, visibleRange } from './state.js';
import { getData, queryPath, isEmbedded, isAnswered } from './api.js';
import { drawChart, chartHeight, plotRect, xOf, secondAt } from './draw.js';

// A tiny DOM builder: h('div', { class: 'x', onclick: f }, child, 'text').
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'style' && typeof v === 'object') Object.assign(el.style, v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// Replace an element's children (nested arrays flattened, null and false skipped).
export function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c != null && c !== false).map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
  return el;
}

const HEAT_GRADIENT = `linear-gradient(90deg, ${HEAT_STOPS.map(([t, c]) => `rgb(${c.join(',')}) ${Math.round(t * 100)}%`).join(', ')})`;

function hueGradient(hex) {
  const lut = hueLut(hex);
  const at = (i) => `rgb(${lut[i * 4]},${lut[i * 4 + 1]},${lut[i * 4 + 2]})`;
  return `linear-gradient(90deg, ${at(0)}, ${at(153)}, ${at(255)})`;
}

// A coarse range of the heat-map panel in few characters: "10–20 µs", "512 KiB–1 MiB", "≥ 5 s".
export function coarseLabel(lo, hi, unit) {
  if (hi === Infinity) return `≥ ${fmtTick(lo, unit)}`;
  const a = fmtTick(lo, unit);
  const b = fmtTick(hi, unit);
  const ma = /^([\d.]+)\s*(.*)$/.exec(a);
  const mb = /^([\d.]+)\s*(.*)$/.exec(b);
  if (ma && mb && (ma[2] === mb[2] || a === '0')) return `${ma[1]}–${b}`;
  return `${a}–${b}`;
}

const CUT_LABELS = { 0: 'none', 5: '5%', 1: '1%', 0.1: '0.1%', 0.01: '0.01%' };

// The menu entry of a statistic over a selection with no breakdown: a counter's total, a
// distribution's heat map or percentiles.
function wholeLabel(chart) {
  if (chart.kind === 'line' || chart.kind === 'stacked') return 'total';
  return (KIND_LABELS[chart.kind] || chart.kind).toLowerCase();
}

// --- data: one fetch per query for the whole run; live runs append newer seconds -------

export class DataStore {
  constructor() {
    this.entries = new Map();
  }

  // `columnSeconds` > 1: a heat map in columns of that many seconds (a whole-run view of
  // a long run; see ChartView.columnSeconds).
  key(runId, chart, columnSeconds) {
    return queryPath(runId, endpointFor(chart.kind), { stat: chart.stat, by: chart.by, where: whereString(chart.where), columnSeconds });
  }

  // The prepared data of a chart's query for a run (cached).
  get(runId, chart, columnSeconds) {
    const key = this.key(runId, chart, columnSeconds);
    let e = this.entries.get(key);
    if (!e) {
      const endpoint = endpointFor(chart.kind);
      const opts = { stat: chart.stat, by: chart.by, where: whereString(chart.where), columnSeconds };
      e = { key, runId: String(runId), endpoint, opts, data: null, error: null, promise: null, version: 0 };
      this.entries.set(key, e);
    }
    if (e.data) return Promise.resolve(e);
    if (!e.promise) {
      e.promise = getData(e.runId, e.endpoint, e.opts)
        .then((resp) => {
          e.data = e.endpoint === 'heatmap' ? prepareHeat(resp) : prepareSeries(resp);
          e.error = null;
          e.version++;
          return e;
        })
        .catch((err) => {
          e.error = err;
          return e;
        })
        .finally(() => {
          e.promise = null;
        });
    }
    return e.promise;
  }

  peek(runId, chart, columnSeconds) {
    return this.entries.get(this.key(runId, chart, columnSeconds)) || null;
  }

  // Fetch the seconds from the last one held onwards for every query of `runId`
  // (the last held second again, in case it was still filling) and merge them in.
  async refresh(runId) {
    const jobs = [];
    for (const e of this.entries.values()) {
      if (e.runId !== String(runId) || e.promise) continue;
      if (e.error && !e.data) {
        e.error = null;
        continue; // retried by the next get()
      }
      // Columns of several seconds are for finished runs only (live runs get seconds).
      if (!e.data || e.data.columnSeconds > 1) continue;
      const secs = e.data.seconds;
      const from = secs.length ? secs[secs.length - 1] : undefined;
      const opts = from == null ? e.opts : { ...e.opts, from };
      e.promise = getData(e.runId, e.endpoint, opts)
        .then((resp) => {
          if (from == null) e.data = e.endpoint === 'heatmap' ? prepareHeat(resp) : prepareSeries(resp);
          else e.data = e.endpoint === 'heatmap' ? mergeHeat(e.data, resp) : mergeSeries(e.data, resp);
          e.version++;
        })
        .catch(() => {})
        .finally(() => {
          e.promise = null;
        });
      jobs.push(e.promise);
    }
    await Promise.all(jobs);
  }

  // The per-second step and warm-up of a run, from the longest series answer held.
  timeline(runId) {
    let best = null;
    for (const e of this.entries.values()) {
      if (e.runId !== String(runId) || !e.data || e.endpoint !== 'series') continue;
      if (!best || e.data.seconds.length > best.seconds.length) best = e.data;
    }
    return best;
  }
}

// --- one chart ---------------------------------------------------------------------------

class ChartView {
  constructor(ws, spec, index) {
    this.ws = ws;
    this.index = index;
    this.spec = spec;
    this.drawn = [null, null];
    this.entries = [null, null];
    this.build();
  }

  get info() {
    return this.ws.statInfo(this.spec.stat);
  }

  dataKey(spec) {
    return `${spec.stat}|${spec.by}|${whereString(spec.where)}|${endpointFor(spec.kind)}`;
  }

  build() {
    const c = this.spec;
    this.section = h('section', { class: 'chart' });
    this.titleEl = h('h2', { class: 'chart-title' });
    this.toolsEl = h('div', { class: 'chart-tools' });
    this.legendEl = h('div', { class: 'chart-legend' });
    this.head = h('header', { class: 'chart-head' }, h('div', { class: 'chart-heading' }, this.titleEl, this.legendEl), this.toolsEl);
    this.plots = h('div', { class: 'plots' });
    this.sideHead = h('div', { class: 'side-head' });
    this.list = h('ul', { class: 'breakdown', role: 'listbox', 'aria-multiselectable': 'true' });
    this.hoverEl = h('div', { class: 'hover-list' });
    this.side = h('aside', { class: 'side' }, this.sideHead, this.list, this.hoverEl);
    this.section.append(this.head, h('div', { class: 'chart-body' }, this.plots, this.side));
    this.wraps = [];
    this.applySpec(c, true);
  }

  makeWrap(which) {
    const canvas = h('canvas', { class: which === 0 ? 'plot' : 'plot-compare' });
    const cross = h('div', { class: 'crosshair', hidden: true }, h('span', { class: 'crosshair-tag' }));
    const sel = h('div', { class: 'selection', hidden: true });
    const msg = h('div', { class: 'plot-msg', hidden: true });
    const caption = h('div', { class: 'plot-caption' });
    const wrap = h('div', { class: 'plot-wrap' }, caption, h('div', { class: 'canvas-box' }, canvas, cross, sel, msg));
    const w = { which, wrap, canvas, cross, sel, msg, caption, box: wrap.querySelector('.canvas-box') };
    this.attachPointer(w);
    return w;
  }

  applySpec(spec, force) {
    const old = this.spec;
    const reload = force || this.dataKey(old) !== this.dataKey(spec);
    this.spec = spec;
    const c = spec;
    Object.assign(this.section.dataset, {
      stat: c.stat,
      by: c.by || '',
      where: whereString(c.where),
      kind: c.kind,
      index: String(this.index),
    });
    if (reload) {
      this.entries = [null, null];
      delete this.section.dataset.drawn;
      delete this.section.dataset.drawnCompare;
    }
    this.renderHead();
  }

  renderHead() {
    const c = this.spec;
    const info = this.info;
    this.titleEl.textContent = chartTitle(c, info);
    // What the server did, told apart from what the client saw at a glance.
    const target = !!info && info.side === 'target';
    this.section.classList.toggle('target', target);
    if (target) this.titleEl.prepend(h('span', { class: 'side-tag', title: 'Recorded on the target by the probe' }, 'target'));
    const note = statNote(info);
    if (info && info.unit) this.titleEl.append(h('span', { class: 'unit' }, note ? `${info.unit} · ${note}` : info.unit));
    const tools = [];
    // A report offers only the kinds whose answers it embeds.
    const kinds = (info ? kindsFor(info.kind) : [c.kind]).filter((k) => k === c.kind || this.ws.answered({ ...c, kind: k }));
    if (kinds.length > 1) {
      tools.push(
        h('div', { class: 'seg', role: 'group', 'aria-label': 'Chart kind' },
          kinds.map((k) => h('button', {
            type: 'button', 'data-action': 'kind', 'data-kind': k, 'aria-pressed': String(k === c.kind),
            class: k === c.kind ? 'on' : '', onclick: () => this.ws.updateChart(this, { kind: k }),
          }, KIND_LABELS[k] || k))),
      );
    }
    if (c.kind === 'heatmap') {
      const sel = h('select', {
        'data-action': 'outliers', 'aria-label': 'Outlier elimination', title: 'Outlier elimination: drop the top share of the visible I/O from the y range',
        onchange: (ev) => this.ws.updateChart(this, { cut: Number(ev.target.value) }),
      }, OUTLIER_CUTS.map((p) => h('option', { value: String(p), selected: p === c.cut }, `outliers: ${CUT_LABELS[p]}`)));
      tools.push(h('label', { class: 'tool-select' }, sel));
      tools.push(
        h('div', { class: 'seg', role: 'group', 'aria-label': 'Vertical zoom' },
          h('button', { type: 'button', 'data-action': 'vzoom-out', 'aria-label': 'Zoom out vertically', title: 'Zoom out vertically (up to the values the data holds)', disabled: this.yLimits ? this.yLimits.full : false, onclick: () => this.ws.updateChart(this, { vz: c.vz - 1 }) }, '−'),
          h('button', { type: 'button', 'data-action': 'vzoom-in', 'aria-label': 'Zoom in vertically', title: 'Zoom in vertically (keeps the bottom)', disabled: this.yLimits ? this.yLimits.deepest : false, onclick: () => this.ws.updateChart(this, { vz: c.vz + 1 }) }, '+'),
          c.yr || c.vz ? h('button', { type: 'button', 'data-action': 'vzoom-reset', 'aria-label': 'Reset the vertical zoom', title: 'Back to the whole value range', onclick: () => this.ws.updateChart(this, { vz: 0, yr: null }) }, '↺') : null,
          h('button', {
            type: 'button', 'data-action': 'yscale', 'aria-label': 'Y axis scale', title: 'Log or linear value axis',
            onclick: () => this.ws.updateChart(this, { ys: c.ys === 'lin' ? 'log' : 'lin', vz: 0, yr: null }),
          }, c.ys === 'lin' ? 'lin' : 'log')),
      );
    }
    tools.push(
      h('div', { class: 'seg quiet', role: 'group', 'aria-label': 'Chart order' },
        h('button', { type: 'button', 'data-action': 'move-up', 'aria-label': 'Move chart up', title: 'Move up', disabled: this.index === 0, onclick: () => this.ws.moveChart(this, -1) }, '↑'),
        h('button', { type: 'button', 'data-action': 'move-down', 'aria-label': 'Move chart down', title: 'Move down', disabled: this.index === this.ws.views.length - 1, onclick: () => this.ws.moveChart(this, 1) }, '↓'),
        h('button', { type: 'button', 'data-action': 'remove-chart', 'aria-label': 'Remove chart', title: 'Remove chart', onclick: () => this.ws.removeChart(this) }, '×')),
    );
    fill(this.toolsEl, ...tools);
    this.renderLegend();
  }

  renderLegend() {
    const c = this.spec;
    fill(this.legendEl);
    if (c.kind === 'heatmap') {
      // The colour scale: one I/O per cell up to the densest cell drawn (log).
      const max = Math.max(0, ...this.drawn.filter(Boolean).map((d) => d.maxCell || 0));
      if (!max) return;
      const hlKey = c.hl.find((k) => this.keys().includes(k));
      const bar = h('span', { class: 'lg-ramp' });
      bar.style.background = hlKey ? hueGradient(this.colors().get(hlKey)) : HEAT_GRADIENT;
      this.legendEl.append(h('span', { class: 'lg', title: 'Colour: I/O per cell (pixel column x row), log scale' }, h('span', { class: 'lg-n' }, '1'), bar, h('span', { class: 'lg-n' }, `${fmtInt(max)} I/O per cell`)));
      const cs = Math.max(1, ...this.entries.filter((e) => e && e.data).map((e) => e.data.columnSeconds || 1));
      if (cs > 1) {
        this.legendEl.append(h('span', { class: 'lg lg-cols', title: 'The whole run is drawn in columns of several seconds, each the exact sum of its seconds (every I/O in its bucket); zoom in for single seconds' }, `${cs} s per column`));
      }
      return;
    }
    if (c.kind !== 'percentiles') return;
    const d = this.entries[0] && this.entries[0].data;
    const hl = new Set(c.hl);
    const active = d ? d.series.filter((s) => !hl.size || hl.has(s.key)) : [];
    const single = active.length <= 1;
    for (const p of PERCENTILES) {
      const sw = h('span', { class: `lg-line ${single ? '' : `dash-${p}`}` });
      if (single) sw.style.background = PERCENTILE_COLORS[p];
      this.legendEl.append(h('span', { class: 'lg' }, sw, PERCENTILE_LABELS[p]));
    }
  }

  // Both runs' data (compare mode: the same query for the compare run).
  async load() {
    const runs = this.ws.runIds();
    const jobs = runs.map((r, i) => this.ws.store.get(r, this.spec, this.columnSeconds(r)).then((e) => {
      this.entries[i] = e;
    }));
    await Promise.all(jobs);
    this.renderLegend();
  }

  // Seconds per heat-map column to ask for: when the whole of a finished run is shown
  // and it has more seconds than the plot has pixel columns, columns of several seconds
  // (each the exact sum of its seconds), so the answer holds no more columns than can be
  // drawn; zoomed in, live, or in a report: one column per second.
  columnSeconds(runId) {
    const ws = this.ws;
    if (this.spec.kind !== 'heatmap' || isEmbedded()) return 1;
    const meta = ws.runMeta(runId);
    const vis = ws.visible;
    const span = ws.span();
    if (!meta || meta.live || meta.first_second == null || meta.last_second == null || !vis || !span) return 1;
    if (vis[0] !== span[0] || vis[1] !== span[1]) return 1;
    const dpr = window.devicePixelRatio || 1;
    const px = Math.round(plotRect(ws.plotWidth(ws.runIds().length > 1), chartHeight('heatmap')).width * dpr);
    return columnSecondsFor(meta.last_second - meta.first_second + 1, px);
  }

  keys() {
    const out = [];
    for (const e of this.entries) {
      if (!e || !e.data) continue;
      for (const s of e.data.series) if (!out.includes(s.key)) out.push(s.key);
    }
    return out;
  }

  colors() {
    const keys = this.keys();
    return new Map(keys.map((k, i) => [k, keyColor(k, i, keys)]));
  }

  activeKeys(data) {
    const hl = this.spec.hl.filter((k) => data.series.some((s) => s.key === k));
    return hl.length ? new Set(hl) : null;
  }

  // Heat-map columns of several seconds narrower on screen than a pixel column holds
  // would leave gaps: say the seconds are on their way instead (zooming in fetches them).
  coarseMessage(data, from, to, cssW) {
    if (!data || !(data.columnSeconds > 1) || from == null) return null;
    const dpr = window.devicePixelRatio || 1;
    const px = Math.max(1, Math.round(plotRect(cssW, chartHeight('heatmap')).width * dpr));
    return (to + 1 - from) / px < data.columnSeconds ? 'loading every second of this time range…' : null;
  }

  // The y range for one run's data over the visible seconds.
  yRange(data, from, to) {
    const c = this.spec;
    const info = this.info || {};
    const unit = data.unit || info.unit;
    const [i0, i1] = indexRange(data.seconds, from, to);
    const hl = this.activeKeys(data);
    if (c.kind === 'heatmap') {
      const counts = bucketCounts(data, hl, i0, i1);
      const scale = c.ys === 'lin' ? 'lin' : 'log';
      const r = scale === 'lin' ? heatRangeLinear(counts, data.hi, unit, c.cut, c.vz, c.yr) : heatRange(counts, data.lo, data.hi, unit, c.cut, c.vz, c.yr);
      return r ? { ...r, scale, bounds: valueBounds(counts, data.lo, data.hi, unit, scale) } : null;
    }
    if (c.kind === 'percentiles') {
      const r = percentileRange(data, i0, i1, hl, unit);
      return r ? { ...r, scale: 'log' } : null;
    }
    if (c.kind === 'probe') return { ...probeRange(data, i0, i1), scale: 'lin' };
    return { ...linearRange(data, i0, i1, hl, c.kind === 'stacked'), scale: 'lin' };
  }

  // What a drawing depends on; equal signatures draw equal pixels.
  signature() {
    const ws = this.ws;
    const runs = ws.runIds();
    const vis = ws.visible;
    const from = vis ? vis[0] : null;
    const to = vis ? vis[1] : null;
    return JSON.stringify([this.spec, this.info || null, runs, vis, ws.plotWidth(runs.length > 1), window.devicePixelRatio || 1,
      this.entries.map((e) => (e ? [e.key, e.version, e.error ? String(e.error.message) : null] : null)),
      runs.map((r) => [ws.marks(r, from, to), ws.probeMarks(r), ws.runMeta(r)])]);
  }

  // Draw unless nothing it depends on changed since the last drawing (an hour-long heat
  // map costs tens of milliseconds to draw).
  drawIfChanged() {
    if (this.drawnSignature !== this.signature()) this.draw();
  }

  draw() {
    this.drawnSignature = this.signature();
    const ws = this.ws;
    const c = this.spec;
    const runs = ws.runIds();
    const compare = runs.length > 1;
    while (this.wraps.length < runs.length) this.wraps.push(this.makeWrap(this.wraps.length));
    while (this.wraps.length > runs.length) this.wraps.pop().wrap.remove();
    if (this.plots.children.length !== this.wraps.length || this.wraps.some((w, i) => this.plots.children[i] !== w.wrap)) {
      fill(this.plots, ...this.wraps.map((w) => w.wrap));
    }
    this.plots.classList.toggle('two', compare);
    const vis = ws.visible;
    const from = vis ? vis[0] : null;
    const to = vis ? vis[1] : null;
    // One y scale for both runs.
    let y = null;
    for (const e of this.entries) {
      if (!e || !e.data || from == null) continue;
      const r = this.yRange(e.data, from, to);
      if (!r) continue;
      if (!y) y = { ...r };
      else {
        y.ymin = Math.min(y.ymin, r.ymin);
        y.ymax = Math.max(y.ymax, r.ymax);
        if (y.bounds && r.bounds) y.bounds = { min: Math.min(y.bounds.min, r.bounds.min), max: Math.max(y.bounds.max, r.bounds.max) };
      }
    }
    this.updateZoomLimits(y);
    const pinned = c.kind === 'heatmap' && c.pin != null ? this.hoverSeconds(c.pin) : null;
    const models = [];
    const colors = this.colors();
    const cssW = ws.plotWidth(compare);
    const cssH = chartHeight(c.kind);
    this.wraps.forEach((w, i) => {
      const runId = runs[i];
      const meta = ws.runMeta(runId);
      fill(w.caption,
        compare ? h('span', { class: `run-tag ${i === 0 ? 'a' : 'b'}` }, i === 0 ? 'A' : 'B') : null,
        compare ? h('span', { class: 'run-name' }, meta ? meta.name : runId) : null,
      );
      w.caption.hidden = !compare;
      const e = this.entries[i];
      const data = e && e.data ? e.data : null;
      const msg = this.message(e, data, from, to) || (data && !y ? 'nothing to draw in this time range' : null) || this.coarseMessage(data, from, to, cssW);
      const marks = ws.marks(runId, from, to);
      const model = {
        kind: c.kind, cssW, cssH, data: msg ? null : data, unit: (data && data.unit) || (this.info && this.info.unit),
        from, to, y, highlight: data ? this.activeKeys(data) : null, colors, marks,
        stepLabel: (s) => ws.stepLabel(runId, s), probes: ws.probeMarks(runId), pin: pinned,
      };
      models.push(model);
      let info = drawChart(w.canvas, model);
      // Compare: both panes on the colour scale of the denser one (the legend's), so a
      // colour means the same count in each pane.
      if (compare && c.kind === 'heatmap' && i === this.wraps.length - 1) {
        const drawnAll = this.drawn.slice(0, i).concat([info]);
        const main = Math.max(0, ...drawnAll.map((d) => (d && d.ownMax) || 0));
        const grey = Math.max(0, ...drawnAll.map((d) => (d && d.ownGrey) || 0));
        info = drawChart(w.canvas, { ...model, scaleMax: { main, grey } });
        for (let j = 0; j < i; j++) {
          if (!this.drawn[j] || !models[j].data) continue;
          const again = drawChart(this.wraps[j].canvas, { ...models[j], scaleMax: { main, grey } });
          this.drawn[j] = { ...this.drawn[j], ...again };
          if (j === 0) this.section.dataset.drawn = JSON.stringify(this.drawn[j]);
          else this.section.dataset.drawnCompare = JSON.stringify(this.drawn[j]);
        }
      }
      if (data && data.columnSeconds > 1) info.columnSeconds = data.columnSeconds;
      w.plot = info.plot;
      w.msg.hidden = !msg;
      w.msg.textContent = msg || '';
      if (msg) info.message = msg;
      this.drawn[i] = info;
      const json = JSON.stringify(info);
      if (i === 0) this.section.dataset.drawn = json;
      else this.section.dataset.drawnCompare = json;
    });
    this.renderLegend();
    this.renderSide();
    this.positionCrosshair();
  }

  // Whether the vertical zoom can go further out (the data's bounds reached) or in.
  updateZoomLimits(y) {
    if (this.spec.kind !== 'heatmap' || !y || !y.bounds) {
      this.yLimits = null;
    } else {
      const b = y.bounds;
      const full = y.ymin <= b.min * (1 + 1e-9) + 1e-9 && y.ymax >= b.max * (1 - 1e-9);
      const deepest = y.scale === 'lin' ? y.ymax - y.ymin <= Math.max(8, (b.max - b.min) / 4096) * (1 + 1e-6) : y.ymax / y.ymin <= 1.1 * (1 + 1e-6);
      this.yLimits = { full, deepest };
    }
    const out = this.toolsEl.querySelector('[data-action="vzoom-out"]');
    const inn = this.toolsEl.querySelector('[data-action="vzoom-in"]');
    if (out) out.disabled = !!(this.yLimits && this.yLimits.full);
    if (inn) inn.disabled = !!(this.yLimits && this.yLimits.deepest);
  }

  message(e, data, from, to) {
    if (!e) return 'loading…';
    if (e.error) return e.error.notIncluded ? 'not included in this report' : e.error.message;
    if (!data) return 'loading…';
    if (from == null) return 'no seconds stored yet';
    const [i0, i1] = indexRange(data.seconds, from, to);
    if (i1 <= i0) return 'no data in this time range';
    if (!data.series.length) return 'no data';
    return null;
  }

  // --- side panel --------------------------------------------------------------------

  sideRows(data, from, to, at) {
    const c = this.spec;
    if (!data || from == null) return new Map();
    if (at != null) {
      const [i0, i1] = indexRange(data.seconds, at[0], at[1]);
      if (c.kind === 'heatmap') return new Map(keyTotals(data, i0, i1).map((t) => [t.key, t.count]));
      return new Map(sideTotals(data, i0, i1).map((t) => [t.key, c.kind === 'probe' ? t.value : t.value]));
    }
    const [i0, i1] = indexRange(data.seconds, from, to);
    if (c.kind === 'heatmap') return new Map(keyTotals(data, i0, i1).map((t) => [t.key, t.count]));
    return new Map(sideTotals(data, i0, i1).map((t) => [t.key, t.value]));
  }

  fmtSide(v) {
    const c = this.spec;
    const info = this.info || {};
    if (v == null) return '—';
    if (c.kind === 'heatmap' || c.kind === 'percentiles') return fmtInt(v);
    if (c.kind === 'probe') return fmtNs(v);
    // Target units: gauges in bytes, CPU and utilization in percent; requests in flight
    // and the other rates as numbers.
    if (info.unit === 'bytes/s' || info.unit === 'bytes' || info.unit === 'percent') return fmtValue(v, info.unit);
    return fmtNum(v);
  }

  sideCaption(hovering) {
    const c = this.spec;
    const info = this.info || {};
    if (c.kind === 'heatmap' || c.kind === 'percentiles') return hovering ? 'count' : 'count';
    if (c.kind === 'probe') return hovering ? 'duration' : 'longest';
    const unit = info.unit === 'percent' ? '%' : info.unit || '';
    return hovering ? unit : `avg ${unit}`;
  }

  renderSide() {
    const ws = this.ws;
    const c = this.spec;
    const vis = ws.visible;
    const hover = ws.hover;
    const runs = ws.runIds();
    const hoverRange = hover != null ? this.hoverSeconds(hover) : null;
    const rows = runs.map((r, i) => {
      const e = this.entries[i];
      return this.sideRows(e && e.data, vis && vis[0], vis && vis[1], hoverRange);
    });
    const keys = this.keys();
    const colors = this.colors();
    const hl = new Set(c.hl.filter((k) => keys.includes(k)));
    const dimLabel = c.by || 'total';
    const cap = this.sideCaption(hoverRange != null);
    const when = hoverRange
      ? hoverRange[0] === hoverRange[1] ? `at ${fmtElapsed(hoverRange[0])}` : `${fmtElapsed(hoverRange[0])}–${fmtElapsed(hoverRange[1])}`
      : 'visible range';
    fill(this.sideHead,
      h('span', { class: 'dim' }, dimLabel),
      h('span', { class: 'cap' }, runs.length > 1 ? h('span', {}, h('span', { class: 'run-tag a' }, 'A'), ' ', h('span', { class: 'run-tag b' }, 'B')) : null, `${cap}`, h('span', { class: 'when' }, when)),
    );
    // The drill button only when the selection has something to drill into (a report:
    // something it embeds).
    const drillable = hl.size > 0 && drillOptions(c, c.by ? c.hl.slice() : [], ws.stats(), (ch) => ws.answered(ch)).length > 0;
    const items = keys.map((k) => {
      const on = hl.has(k);
      const vals = rows.map((m) => h('span', { class: 'v' }, this.fmtSide(m.get(k))));
      const li = h('li', {
        'data-key': k, role: 'option', 'aria-selected': String(on), class: `${on ? 'on' : ''} ${hl.size && !on ? 'dimmed' : ''}`,
        title: 'Click: highlight · Shift-click: add to the highlight',
        onclick: (ev) => {
          if (ev.target.closest('[data-action="drill"]')) return;
          this.toggleHighlight(k, ev.shiftKey);
        },
      },
      h('span', { class: 'sw', style: { background: colors.get(k) } }),
      h('span', { class: 'k', title: this.keyLabel(k) }, this.keyLabel(k)),
      h('span', { class: 'vals' }, vals));
      if (on && drillable) {
        li.append(h('button', {
          type: 'button', class: 'drill', 'data-action': 'drill', 'aria-label': `Drill down on ${k}`, title: 'Drill down: a new chart of this value, broken down by…',
          onclick: (ev) => {
            ev.stopPropagation();
            this.openDrill(li);
          },
        }, 'drill ▾'));
      }
      return li;
    });
    fill(this.list, ...items);
    if (!keys.length) this.list.append(h('li', { class: 'empty' }, '—'));
    this.renderHover(hoverRange);
  }

  keyLabel(k) {
    if (this.spec.by === 'step') {
      const l = this.ws.stepLabel(this.ws.runIds()[0], Number(k));
      return l || `step ${k}`;
    }
    return k;
  }

  renderHover(hoverRange) {
    const c = this.spec;
    if (c.kind === 'heatmap') {
      this.renderHeatPanel(c.pin != null ? this.hoverSeconds(c.pin) : hoverRange);
      return;
    }
    fill(this.hoverEl);
    if (!hoverRange) {
      this.hoverEl.hidden = true;
      return;
    }
    this.hoverEl.hidden = false;
    const runs = this.ws.runIds();
    runs.forEach((r, i) => {
      const e = this.entries[i];
      const data = e && e.data;
      if (!data) return;
      const [i0, i1] = indexRange(data.seconds, hoverRange[0], hoverRange[1]);
      const meta = this.ws.runMeta(r);
      const clock = meta && meta.started_unix_ms != null ? fmtClock(meta.started_unix_ms + hoverRange[0] * 1000) : '';
      const tag = runs.length > 1 ? h('span', { class: `run-tag ${i === 0 ? 'a' : 'b'}` }, i === 0 ? 'A' : 'B') : null;
      if (c.kind === 'percentiles') {
        const keys = this.activeKeys(data);
        const blocks = data.series.filter((s) => !keys || keys.has(s.key)).map((s) => {
          const idx = i0;
          return h('div', { class: 'hv-block' },
            data.series.length > 1 ? h('div', { class: 'hv-key' }, s.key) : null,
            PERCENTILES.slice().reverse().map((p) => h('div', { class: 'hv-row' }, h('span', { class: 'r' }, PERCENTILE_LABELS[p]), h('span', { class: 'n' }, idx < i1 && s[p] ? fmtValue(s[p][idx], data.unit) : '—'))));
        });
        this.hoverEl.append(h('div', { class: 'hv' }, h('div', { class: 'hv-head' }, tag, h('span', {}, fmtElapsed(hoverRange[0])), h('span', { class: 'clock' }, clock)), blocks));
      } else {
        // Counters: the sum over the breakdown at that second; probes: nothing more.
        let total = null;
        if (c.kind === 'stacked' || c.kind === 'line') {
          for (const s of data.series) {
            const v = i0 < i1 && s.values ? s.values[i0] : null;
            if (v != null) total = (total || 0) + v;
          }
        }
        this.hoverEl.append(h('div', { class: 'hv' }, h('div', { class: 'hv-head' }, tag, h('span', {}, fmtElapsed(hoverRange[0])), h('span', { class: 'clock' }, clock),
          total != null && data.series.length > 1 ? h('span', { class: 'tot' }, `total ${this.fmtSide(total)}`) : null)));
      }
    });
  }

  // The heat map's side panel, as the seeds' reads: at the cursor's column (or the pinned
  // one), the I/O in coarse value ranges, fastest first, with count, share and cumulative
  // share, each expandable into its fine buckets and a zoom to its values; totals for the
  // column and for the visible range. Re-drawn only when what it shows changes, so a
  // pinned panel keeps its scroll position while the cursor moves elsewhere.
  renderHeatPanel(range) {
    const c = this.spec;
    const runs = this.ws.runIds();
    const vis = this.ws.visible;
    const sig = JSON.stringify([range, c.pin, c.hl, c.yr, c.vz, c.ys, c.cut, vis, runs, this.drawn.map((d) => (d ? [d.ymin, d.ymax] : null)), [...(this.expanded || [])], this.entries.map((e) => (e ? [e.key, e.version] : null))]);
    if (sig === this.panelSig) return;
    this.panelSig = sig;
    const scroll = this.hoverEl.scrollTop;
    fill(this.hoverEl);
    this.hoverEl.classList.toggle('pinned', c.pin != null);
    if (c.pin != null) this.hoverEl.dataset.pinned = String(c.pin);
    else delete this.hoverEl.dataset.pinned;
    if (!range || !vis) {
      this.hoverEl.hidden = true;
      return;
    }
    this.hoverEl.hidden = false;
    if (!this.expanded) this.expanded = new Set();
    runs.forEach((r, i) => {
      const e = this.entries[i];
      const data = e && e.data;
      if (!data) return;
      const keys = this.activeKeys(data);
      const unit = data.unit;
      const [i0, i1] = indexRange(data.seconds, range[0], range[1]);
      const [v0, v1] = indexRange(data.seconds, vis[0], vis[1]);
      const scale = c.ys === 'lin' ? 'lin' : 'log';
      const visCounts = bucketCounts(data, keys, v0, v1);
      let visTotal = 0;
      let top = 0;
      for (let b = 0; b < visCounts.length; b++) {
        if (visCounts[b] > 0) {
          visTotal += visCounts[b];
          top = data.hi[b] + 1;
        }
      }
      const { total, ranges } = coarseRanges(data, keys, i0, i1, coarseEdges(unit, scale, top));
      const y = this.drawn[i] && this.drawn[i].ymax != null ? this.drawn[i] : null;
      const meta = this.ws.runMeta(r);
      const tag = runs.length > 1 ? h('span', { class: `run-tag ${i === 0 ? 'a' : 'b'}` }, i === 0 ? 'A' : 'B') : null;
      const [a, b] = coveredSeconds(data, range[0], range[1]);
      const cols = data.columnSeconds > 1 ? h('span', { class: 'cols', title: `${i1 - i0} column${i1 - i0 === 1 ? '' : 's'} of ${data.columnSeconds} s, each the exact sum of its seconds` }, `${i1 - i0} × ${data.columnSeconds} s`) : null;
      const at = meta && meta.started_unix_ms != null ? fmtClock(meta.started_unix_ms + a * 1000) : '';
      const pin = c.pin != null
        ? h('button', { type: 'button', class: 'hv-pin on', 'data-action': 'unpin', title: 'Pinned (click the heat map again or press Esc to unpin)', onclick: () => this.ws.updateChart(this, { pin: null }) }, 'pinned ×')
        : h('span', { class: 'hv-pin', title: 'Click the heat map to pin this panel at a second' }, 'click to pin');
      const head = h('div', { class: 'hv-head' }, tag, h('span', {}, a === b ? fmtElapsed(a) : `${fmtElapsed(a)}–${fmtElapsed(b)}`), h('span', { class: 'clock' }, at), cols,
        h('span', { class: 'tot', 'data-total': String(total) }, `${fmtInt(total)} I/O`), i === 0 ? pin : null);
      const visLine = h('div', { class: 'hv-vis', 'data-total': String(visTotal) }, `visible ${fmtElapsed(vis[0])}–${fmtElapsed(vis[1])}: ${fmtInt(visTotal)} I/O`);
      const pct = (x) => (x >= 99.95 && x < 100 ? '>99.9' : x < 0.1 && x > 0 ? '<0.1' : x.toFixed(1));
      const label = (lo, hi) => coarseLabel(lo, hi, unit);
      // Zoom the value axis to [lo, hi); with Shift, extend the zoom already set to it (a
      // low and a high pick, as the seeds' panel does).
      const zoomButton = (lo, hi, what) => h('button', {
        type: 'button', class: 'yz', 'data-action': 'yzoom', title: `Zoom the value axis to ${what} (Shift: extend the zoom to it)`,
        onclick: (ev) => {
          ev.stopPropagation();
          let yr = [Math.max(scale === 'log' ? 1 : 0, lo), hi];
          if (ev.shiftKey && c.yr) yr = [Math.min(yr[0], c.yr[0]), Math.max(yr[1], c.yr[1])];
          this.ws.updateChart(this, { yr, vz: 0 });
        },
      }, '⤢');
      const rows = [];
      for (const rg of ranges) {
        const id = `${rg.lo}`;
        const open = this.expanded.has(id);
        // Outside the value axis (cut as an outlier, or zoomed away): listed, but dimmed.
        const out = y && (rg.lo >= y.ymax || rg.buckets[rg.buckets.length - 1].hi + 1 <= y.ymin);
        rows.push(h('div', {
          class: `hv-range${open ? ' open' : ''}${out ? ' out' : ''}`, 'data-lo': String(rg.lo), 'data-hi': String(rg.hi), 'data-count': String(rg.count),
          title: `${fmtInt(rg.count)} I/O from ${label(rg.lo, rg.hi)}; ${pct(rg.cum)}% of this column are below ${rg.hi === Infinity ? 'the top' : fmtTick(rg.hi, unit)}${out ? '; outside the value axis' : ''}. Click to list its buckets`,
          onclick: (ev) => {
            if (ev.target.closest('[data-action="yzoom"]')) return;
            if (open) this.expanded.delete(id);
            else this.expanded.add(id);
            this.panelSig = null;
            this.renderHeatPanel(range);
          },
        },
        h('span', { class: 'tw' }, open ? '▾' : '▸'),
        h('span', { class: 'r' }, label(rg.lo, rg.hi)),
        h('span', { class: 'n' }, fmtInt(rg.count)),
        h('span', { class: 'p' }, `${pct(rg.pct)}%`),
        h('span', { class: 'cum' }, `${pct(rg.cum)}%`),
        zoomButton(rg.lo, rg.hi === Infinity ? rg.buckets[rg.buckets.length - 1].hi + 1 : rg.hi, 'this range')));
        if (open) {
          for (const bk of rg.buckets) {
            rows.push(h('div', { class: 'hv-fine', 'data-lo': String(bk.lo), 'data-hi': String(bk.hi), 'data-count': String(bk.count) },
              h('span', { class: 'r' }, fmtRange(bk.lo, bk.hi, unit)), h('span', { class: 'n' }, fmtInt(bk.count)), h('span', { class: 'p' }, `${pct(total ? (100 * bk.count) / total : 0)}%`),
              h('span', { class: 'cum' }), zoomButton(bk.lo, bk.hi + 1, 'this bucket')));
          }
        }
      }
      const colHead = ranges.length ? h('div', { class: 'hv-cols' }, h('span', { class: 'r' }, /offset$/.test(data.stat) ? 'offset' : 'value'), h('span', { class: 'n' }, 'I/O'), h('span', { class: 'p' }, '%'), h('span', { class: 'cum' }, 'cum.')) : null;
      this.hoverEl.append(h('div', { class: 'hv hv-heat', 'data-run': String(r) }, head, visLine, colHead, h('div', { class: 'hv-rows' }, rows.length ? rows : h('div', { class: 'hv-more' }, 'no I/O in this column'))));
    });
    this.hoverEl.scrollTop = scroll;
  }

  // Pin the side panel at second s (a click on the heat map), or unpin when it is pinned there.
  togglePin(s) {
    const cur = this.spec.pin;
    const same = cur != null && (() => {
      const a = this.hoverSeconds(cur);
      return a && s >= a[0] && s <= a[1];
    })();
    this.ws.updateChart(this, { pin: same ? null : s });
  }

  // Seconds summed under the cursor: the pixel column of the hovered second.
  hoverSeconds(s) {
    const vis = this.ws.visible;
    if (!vis || s < vis[0] || s > vis[1]) return null;
    if (this.spec.kind !== 'heatmap') return [s, s];
    const d = this.drawn[0];
    const dpr = window.devicePixelRatio || 1;
    const w = d ? Math.round(d.plot.width * dpr) : 1000;
    const [a, b] = binSeconds(vis[0], vis[1], w, s);
    // Columns of several seconds: the seconds of the columns drawn in that pixel column.
    const data = this.entries[0] && this.entries[0].data;
    return data && data.columnSeconds > 1 ? coveredSeconds(data, a, b) : [a, b];
  }

  toggleHighlight(k, add) {
    const cur = this.spec.hl.slice();
    let hl;
    if (add) hl = cur.includes(k) ? cur.filter((x) => x !== k) : cur.concat([k]);
    else hl = cur.length === 1 && cur[0] === k ? [] : [k];
    this.ws.updateChart(this, { hl });
  }

  // The drill menu of the selected values: every statistic of that selection (the
  // chart's own first), each as a whole and broken down by every dimension left, as the
  // API's statistic list says; in a report only what it embedded.
  openDrill(li) {
    this.ws.closeMenus();
    const values = this.spec.by ? this.spec.hl.slice() : [];
    const what = values.length ? `${this.spec.by} = ${values.join(' or ')}` : 'all';
    const options = drillOptions(this.spec, values, this.ws.stats(), (ch) => this.ws.answered(ch));
    const button = (stat, dim, chart) => h('button', {
      type: 'button', role: 'menuitem', 'data-action': 'drill-by', 'data-stat': stat, 'data-dim': dim, 'data-kind': chart.kind,
      title: chartTitle(chart, this.ws.statInfo(stat)),
      onclick: () => {
        this.ws.closeMenus();
        this.ws.insertChart(this, chart);
      },
    }, dim ? `by ${dim}` : wholeLabel(chart));
    const menu = h('div', { class: 'menu drill-menu', role: 'menu' },
      h('div', { class: 'menu-head' }, `Drill down on ${what}`),
      options.length
        ? options.map((o) => h('div', { class: `drill-stat${o.stat === this.spec.stat ? ' own' : ''}`, 'data-stat': o.stat },
          h('span', { class: 'drill-label' }, statLabel(o.info, o.stat)),
          h('span', { class: 'drill-dims' }, o.charts.map((x) => button(o.stat, x.dim, x.chart)))))
        : h('div', { class: 'menu-empty' }, isEmbedded() ? 'this report holds no drill-down of this selection' : 'no statistic or dimension left to drill into'),
    );
    // In the side panel, not the (scrolling) list, so the list cannot clip it.
    const top = li.getBoundingClientRect().bottom - this.side.getBoundingClientRect().top + 2;
    menu.style.top = `${top}px`;
    this.side.append(menu);
    this.ws.openMenu = menu;
  }

  // --- pointer: crosshair, drag to zoom --------------------------------------------------

  attachPointer(w) {
    const box = w.box;
    const localX = (ev) => ev.clientX - box.getBoundingClientRect().left;
    box.addEventListener('mousemove', (ev) => {
      if (!w.plot || !this.ws.visible) return;
      const x = localX(ev);
      const [from, to] = this.ws.visible;
      if (x < w.plot.x || x > w.plot.x + w.plot.width) {
        if (!this.drag) this.ws.setHover(null);
      } else this.ws.setHover(secondAt(w.plot, from, to, x));
      if (this.drag && this.drag.w === w) {
        this.drag.x1 = Math.max(w.plot.x, Math.min(w.plot.x + w.plot.width, x));
        const a = Math.min(this.drag.x0, this.drag.x1);
        const b = Math.max(this.drag.x0, this.drag.x1);
        w.sel.hidden = b - a < 3;
        w.sel.style.left = `${a}px`;
        w.sel.style.width = `${b - a}px`;
        w.sel.style.top = `${w.plot.y}px`;
        w.sel.style.height = `${w.plot.height}px`;
      }
    });
    box.addEventListener('mouseleave', () => {
      if (!this.drag) this.ws.setHover(null);
    });
    box.addEventListener('mousedown', (ev) => {
      if (ev.button !== 0 || !w.plot || !this.ws.visible) return;
      const x = localX(ev);
      if (x < w.plot.x || x > w.plot.x + w.plot.width) return;
      ev.preventDefault();
      this.drag = { w, x0: x, x1: x };
      const up = () => {
        window.removeEventListener('mouseup', up);
        const d = this.drag;
        this.drag = null;
        w.sel.hidden = true;
        if (!d) return;
        if (Math.abs(d.x1 - d.x0) < 4) {
          // A click (no drag) on a heat map pins its side panel at that second.
          if (this.spec.kind === 'heatmap') {
            const [from, to] = this.ws.visible;
            this.togglePin(secondAt(w.plot, from, to, d.x0));
          }
          return;
        }
        const [from, to] = this.ws.visible;
        const a = secondAt(w.plot, from, to, Math.min(d.x0, d.x1));
        const b = secondAt(w.plot, from, to, Math.max(d.x0, d.x1) - 0.01);
        this.ws.zoomTo([a, Math.max(a, b)]);
      };
      window.addEventListener('mouseup', up);
    });
    box.addEventListener('dblclick', () => this.ws.host.zoomOut());
  }

  positionCrosshair() {
    const s = this.ws.hover;
    const vis = this.ws.visible;
    const hr = s != null ? this.hoverSeconds(s) : null;
    for (const w of this.wraps) {
      if (hr == null || !w.plot || !vis) {
        w.cross.hidden = true;
        continue;
      }
      const x0 = xOf(w.plot, vis[0], vis[1], hr[0]);
      const x1 = xOf(w.plot, vis[0], vis[1], hr[1] + 1);
      const x = (x0 + x1) / 2;
      w.cross.hidden = false;
      w.cross.style.left = `${Math.round(x)}px`;
      w.cross.style.top = `${w.plot.y}px`;
      w.cross.style.height = `${w.plot.height}px`;
      const meta = this.ws.runMeta(this.ws.runIds()[w.which]);
      const clock = meta && meta.started_unix_ms != null ? ` · ${fmtClock(meta.started_unix_ms + hr[0] * 1000)}` : '';
      const tag = w.cross.firstChild;
      tag.textContent = hr[0] === hr[1] ? `${fmtElapsed(hr[0])}${clock}` : `${fmtElapsed(hr[0])}–${fmtElapsed(hr[1])}`;
      // Centred under the line on the time axis; kept inside the plot at its edges.
      tag.classList.toggle('left', x > w.plot.x + w.plot.width - 60);
      tag.classList.toggle('right', x < w.plot.x + 60);
    }
  }
}

// --- the worksheet -------------------------------------------------------------------------

export class Worksheet {
  // host: { state(), change(patch, push), runMeta(id), runDetail(id), zoomOut() }
  constructor(root, host) {
    this.root = root;
    this.host = host;
    this.store = new DataStore();
    this.views = [];
    this.hover = null;
    this.visible = null;
    this.openMenu = null;
    this.chartsEl = h('div', { class: 'charts' });
    this.emptyEl = h('div', { class: 'empty-ws', hidden: true }, 'The worksheet is empty. Add a statistic to start.');
    root.append(this.chartsEl, this.emptyEl);
    document.addEventListener('mousedown', (ev) => {
      if (this.openMenu && !ev.target.closest('.menu') && !ev.target.closest('[data-action="drill"]')) this.closeMenus();
    });
    document.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Escape') return;
      if (this.openMenu) this.closeMenus();
      else this.unpinAll();
    });
    let pending = false;
    this.resizeObserver = new ResizeObserver(() => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        const w = this.root.clientWidth;
        if (w !== this.lastWidth) {
          this.lastWidth = w;
          this.drawAll();
        }
      });
    });
    this.resizeObserver.observe(this.root);
  }

  // Esc: every pinned heat-map panel follows the cursor again (one history entry).
  unpinAll() {
    const st = this.state();
    if (!st.charts.some((c) => c.pin != null)) return;
    this.host.change({ charts: st.charts.map((c) => (c.pin != null ? makeChart(c.stat, { ...c, pin: null }) : c)) }, true);
  }

  closeMenus() {
    if (this.openMenu) this.openMenu.remove();
    this.openMenu = null;
  }

  state() {
    return this.host.state();
  }

  runIds() {
    const st = this.state();
    return st.compare != null && this.host.runMeta(st.compare) ? [st.run, st.compare] : [st.run];
  }

  runMeta(id) {
    return this.host.runMeta(id);
  }

  // The statistics the run offers (the API's list, with each one's dimensions).
  stats() {
    const d = this.host.runDetail(this.state().run);
    return (d && d.stats) || [];
  }

  // Whether every shown run has the data of `chart` (a report: only what it embedded).
  answered(chart) {
    return this.runIds().every((r) => isAnswered(r, endpointFor(chart.kind), { stat: chart.stat, by: chart.by, where: whereString(chart.where) }));
  }

  statInfo(name) {
    const d = this.host.runDetail(this.state().run);
    return d && d.stats ? d.stats.find((s) => s.name === name) : null;
  }

  stepLabel(runId, step) {
    const d = this.host.runDetail(runId);
    const st = d && d.steps ? d.steps.find((x) => x.index === step) : null;
    return st ? `step ${step} · ${stepName(st, d.steps)}` : `step ${step}`;
  }

  probeMarks(runId) {
    const d = this.host.runDetail(runId);
    return ((d && d.probes) || []).map((p) => ({ second: Math.floor(p.at_ns / 1e9), name: p.name }));
  }

  marks(runId, from, to) {
    if (from == null) return { start: null, bounds: [], warm: [] };
    let tl = this.store.timeline(runId);
    if (!tl) {
      const d = this.host.runDetail(runId);
      const meta = this.runMeta(runId);
      if (d && meta) tl = timelineFromSteps(d.steps, meta.first_second, meta.last_second);
    }
    const d = this.host.runDetail(runId);
    const knee = d && d.summary && d.summary.knee ? d.summary.knee.step : null;
    return timelineMarks(tl, from, to, knee);
  }

  // Seconds spanned by the runs shown (compare: the longer one).
  span() {
    let first = null;
    let last = null;
    for (const id of this.runIds()) {
      const m = this.runMeta(id);
      if (!m || m.first_second == null || m.last_second == null) continue;
      first = first == null ? m.first_second : Math.min(first, m.first_second);
      last = last == null ? m.last_second : Math.max(last, m.last_second);
    }
    return first == null ? null : [first, last];
  }

  plotWidth(compare) {
    const total = this.chartsEl.clientWidth || this.root.clientWidth || 1000;
    const side = 280;
    const gap = 16;
    const w = total - side - gap - 2;
    return Math.max(240, Math.floor(compare ? (w - gap) / 2 : w));
  }

  // Re-create the chart views for the state (views whose query is unchanged keep their data).
  sync() {
    const st = this.state();
    const old = this.views;
    const next = [];
    st.charts.forEach((spec, i) => {
      let v = old[i] && !next.includes(old[i]) ? old[i] : null;
      if (!v) v = new ChartView(this, spec, i);
      v.index = i;
      v.applySpec(spec, false);
      next.push(v);
    });
    for (const v of old) if (!next.includes(v)) v.section.remove();
    this.views = next;
    fill(this.chartsEl, ...next.map((v) => v.section));
    for (const v of next) v.renderHead();
    this.emptyEl.hidden = next.length > 0;
  }

  // Load what each chart needs, then draw them all. Resolves once every chart is drawn.
  async render() {
    this.sync();
    this.updateVisible();
    this.drawAll();
    await Promise.all(this.views.map((v) => v.load().then(() => {
      this.updateVisible();
      v.drawIfChanged();
    })));
    // Again with every chart's data in (the time marks come from any of them), but only
    // the charts whose drawing would change.
    this.updateVisible();
    for (const v of this.views) v.drawIfChanged();
  }

  updateVisible() {
    const span = this.span();
    const st = this.state();
    if (!span) {
      this.visible = null;
      return;
    }
    this.visible = visibleRange(st, span[0], span[1]);
  }

  drawAll() {
    this.updateVisible();
    for (const v of this.views) v.draw();
  }

  // Live: fetch the newer seconds of every query of these runs, then redraw.
  async refresh(runIds) {
    await Promise.all(runIds.map((r) => this.store.refresh(r)));
    await Promise.all(this.views.map((v) => v.load()));
    this.drawAll();
  }

  setHover(s) {
    if (s === this.hover) return;
    this.hover = s;
    for (const v of this.views) {
      v.positionCrosshair();
      v.renderSide();
    }
  }

  // --- state edits (each becomes a history entry) ---------------------------------------

  updateChart(view, patch) {
    const st = this.state();
    const charts = st.charts.map((c, i) => (i === view.index ? makeChart(c.stat, { ...c, ...patch }) : c));
    this.host.change({ charts }, true);
  }

  insertChart(view, chart) {
    const st = this.state();
    const charts = st.charts.slice();
    charts.splice(view.index + 1, 0, chart);
    this.host.change({ charts }, true);
  }

  addChart(chart) {
    const st = this.state();
    this.host.change({ charts: st.charts.concat([chart]) }, true);
  }

  removeChart(view) {
    const st = this.state();
    this.host.change({ charts: st.charts.filter((_, i) => i !== view.index) }, true);
  }

  moveChart(view, dir) {
    const st = this.state();
    const charts = st.charts.slice();
    const j = view.index + dir;
    if (j < 0 || j >= charts.length) return;
    [charts[view.index], charts[j]] = [charts[j], charts[view.index]];
    this.host.change({ charts }, true);
  }

  zoomTo(range) {
    this.host.change({ range, follow: false }, true);
  }
}

// Plot area of a chart's canvas in CSS pixels (for tests and tools).
export function plotAreaFor(kind, cssW) {
  return plotRect(cssW, chartHeight(kind));
}
