// modules: format.js color.js histo.js series.js state.js api.js draw.js worksheet.js target.js compare.js panels.js app.js
// app.js: the entry. Loads the runs, keeps the worksheet state in the URL (location.hash;
// back/forward restore it), draws the top bar (run, LIVE, compare, time range, link),
// the worksheet and the panels, and follows live runs: each new second arrives as a
// Server-Sent Event (/api/v1/runs/{id}/events); polling every second is the fallback.

import { fmtElapsed, fmtDateTime } from './format.js';
import { decodeState, encodeState, completeState, defaultKind, kindsFor, KIND_LABELS, makeChart, visibleRange, zoomOut, pan, drillDims, statTakes, serverCharts, hasTarget, statGroups, targetHosts } from './state.js';
import { getRuns, getRun, getCompare, isEmbedded, embeddedWorksheet } from './api.js';
import { Worksheet, h, fill } from './worksheet.js';
import { renderPanels, hostEntries, fmtOffset } from './panels.js';

const app = {
  runs: [],
  details: new Map(),
  state: null,
  ws: null,
  ready: Promise.resolve(),
  generation: 0,
  panelsKey: '',
  polling: false,
  pollAgain: false,
  pollCount: 1,
  ticks: 0,
  streams: new Map(),
};

function runMeta(id) {
  return app.runs.find((r) => String(r.id) === String(id)) || null;
}

function runDetail(id) {
  return app.details.get(String(id)) || null;
}

async function ensureDetail(id) {
  if (id == null || !runMeta(id)) return null;
  if (!app.details.has(String(id))) {
    try {
      app.details.set(String(id), await getRun(id));
    } catch (err) {
      app.details.set(String(id), { id: String(id), error: err.message, stats: [], steps: [], probes: [], hosts: [] });
    }
  }
  return runDetail(id);
}

// --- state <-> URL ------------------------------------------------------------------------

function writeHash(push) {
  const hash = `#${encodeState(app.state)}`;
  if (location.hash === hash) return;
  if (push) history.pushState(null, '', hash);
  else history.replaceState(null, '', hash);
}

async function resolveState(partial) {
  const first = app.runs.length ? String(app.runs[0].id) : null;
  const runId = partial.run != null && runMeta(partial.run) ? String(partial.run) : first;
  const detail = await ensureDetail(runId);
  if (partial.compare != null && runMeta(partial.compare)) await ensureDetail(partial.compare);
  const st = completeState({ ...partial, run: runId }, runId, detail ? detail.stats : null);
  if (st.compare != null && !runMeta(st.compare)) st.compare = null;
  return st;
}

// Apply a change to the state (a patch of its fields); push = a new history entry.
async function change(patch, push) {
  const next = await resolveState({ ...app.state, ...patch });
  if (encodeState(next) === encodeState(app.state)) return app.ready;
  app.state = next;
  writeHash(push);
  return apply();
}

async function onHash() {
  const hash = location.hash;
  const st = await resolveState(decodeState(hash));
  if (encodeState(st) === encodeState(app.state)) return;
  app.state = st;
  writeHash(false);
  apply();
}

// Redraw everything for the current state; resolves when every chart has drawn.
function apply() {
  const gen = ++app.generation;
  document.body.dataset.ready = '0';
  renderTopBar();
  renderWsTools();
  renderPanelsIfNeeded();
  const p = app.ws.render().then(() => {
    if (gen === app.generation) {
      document.body.dataset.ready = '1';
      // For bench/ui.mjs: when every chart had drawn.
      performance.mark('ioscope-ready');
    }
  });
  app.ready = p;
  return p;
}

function shownRuns() {
  const ids = [app.state.run];
  if (app.state.compare != null && runMeta(app.state.compare)) ids.push(app.state.compare);
  return ids;
}

function renderPanelsIfNeeded(force) {
  const ids = shownRuns();
  const key = ids.map((id) => `${id}:${runDetail(id) && runDetail(id).status}`).join('|');
  if (!force && key === app.panelsKey) return;
  app.panelsKey = key;
  const runs = ids.map((id) => ({ ...(runDetail(id) || {}), name: (runMeta(id) || {}).name }));
  renderPanels(els.panels, runs, (range) => {
    change({ range, follow: false }, true);
    els.worksheet.scrollIntoView({ behavior: 'smooth', block: 'start' });
  }, ids.length > 1 ? () => getCompare(ids[0], ids[1]) : null);
}

// --- time range ------------------------------------------------------------------------

function span() {
  let first = null;
  let last = null;
  for (const id of shownRuns()) {
    const m = runMeta(id);
    if (!m || m.first_second == null || m.last_second == null) continue;
    first = first == null ? m.first_second : Math.min(first, m.first_second);
    last = last == null ? m.last_second : Math.max(last, m.last_second);
  }
  return first == null ? null : [first, last];
}

function visible() {
  const s = span();
  return s ? visibleRange(app.state, s[0], s[1]) : null;
}

function doZoomOut() {
  const s = span();
  const v = visible();
  if (!s || !v) return;
  const r = zoomOut(v, s[0], s[1]);
  change({ range: r, follow: r ? app.state.follow : true }, true);
}

function doPan(dir) {
  const s = span();
  const v = visible();
  if (!s || !v) return;
  if (!app.state.range) return;
  const r = pan(v, dir, s[0], s[1]);
  const atEnd = r[1] >= s[1];
  const live = shownRuns().some((id) => runMeta(id) && runMeta(id).live);
  change({ range: r, follow: live && atEnd && dir > 0 }, true);
}

function doFollow() {
  change({ range: null, follow: true }, true);
}

// --- top bar -----------------------------------------------------------------------------

const els = {};

function statusBadge(meta) {
  if (!meta) return null;
  if (meta.live) return h('span', { class: 'badge live', title: 'The run is still writing; new seconds appear as they are stored' }, h('span', { class: 'dot' }), 'LIVE');
  const st = meta.status || 'completed';
  return h('span', { class: `badge status-${st}` }, st);
}

// The run's hosts in the top bar: "4 hosts", "4 hosts · 1 lost"; each host's status and
// clock offset in its title. Nothing for a local run of one host.
function hostsChip(detail) {
  const hosts = hostEntries(detail && detail.summary);
  if (!hosts.length) return null;
  const bad = hosts.filter(([, x]) => x.agent && x.agent.status && x.agent.status !== 'completed');
  const counts = {};
  for (const [, x] of bad) counts[x.agent.status] = (counts[x.agent.status] || 0) + 1;
  const text = [`${hosts.length} host${hosts.length === 1 ? '' : 's'}`, ...Object.entries(counts).map(([k, n]) => `${n} ${k}`)].join(' · ');
  const title = hosts.map(([name, x]) => (x.agent
    ? `${name}: ${x.agent.status || '—'}, clock ${fmtOffset(x.agent)}${x.agent.lost_at_second != null ? `, lost at second ${x.agent.lost_at_second}` : ''}`
    : `${name}: local`)).join('\n');
  return h('span', { class: `badge hosts-chip ${bad.length ? 'status-failed' : 'status-completed'}`, 'data-hosts': String(hosts.length), title }, text);
}

function renderTopBar() {
  const st = app.state;
  const meta = runMeta(st.run);
  const runs = app.runs;
  const runCtl = runs.length > 1
    ? h('select', {
      name: 'run', 'data-action': 'run', 'aria-label': 'Run', class: 'run-select',
      onchange: (ev) => change({ run: ev.target.value, compare: app.state.compare === ev.target.value ? null : app.state.compare, range: null, follow: true }, true),
    }, runs.map((r) => h('option', { value: r.id, selected: String(r.id) === String(st.run) }, `${r.name}`)))
    : h('span', { class: 'run-name' }, meta ? meta.name : 'no runs');
  const s = span();
  const secs = meta && meta.last_second != null ? meta.last_second - meta.first_second + 1 : 0;
  const runInfo = h('div', { class: 'run' },
    runCtl,
    statusBadge(meta),
    meta ? h('span', { class: 'run-meta' }, [fmtDateTime(meta.started_unix_ms), meta.last_second != null ? `${fmtElapsed(secs)} (${secs} s)` : 'no seconds yet'].filter(Boolean).join(' · ')) : null,
    hostsChip(runDetail(st.run)));
  const compare = runs.length > 1
    ? h('label', { class: 'compare' }, h('span', { class: 'lbl' }, 'compare with'),
      h('select', {
        name: 'compare', 'data-action': 'compare', 'aria-label': 'Compare with run',
        onchange: (ev) => change({ compare: ev.target.value || null }, true),
      },
      h('option', { value: '' }, '—'),
      runs.filter((r) => String(r.id) !== String(st.run)).map((r) => h('option', { value: r.id, selected: String(r.id) === String(st.compare) }, r.name))),
      st.compare != null && runMeta(st.compare) && runMeta(st.compare).live ? statusBadge(runMeta(st.compare)) : null)
    : null;
  const v = visible();
  const following = st.follow && shownRuns().some((id) => runMeta(id) && runMeta(id).live);
  const readout = v && s
    ? h('span', { class: 'range-readout', title: 'Visible seconds of the run' },
      h('b', {}, `${fmtElapsed(v[0])}–${fmtElapsed(v[1] + 1)}`),
      ` of ${fmtElapsed(s[1] + 1)}`,
      h('span', { class: 'muted' }, ` · ${v[1] - v[0] + 1} s`))
    : h('span', { class: 'range-readout muted' }, 'no data yet');
  const whole = !st.range;
  const time = h('div', { class: 'timectl', role: 'group', 'aria-label': 'Time range' },
    h('button', { type: 'button', 'data-action': 'pan-left', 'aria-label': 'Pan left', title: 'Pan left (←)', disabled: whole, onclick: () => doPan(-1) }, '◂'),
    h('button', { type: 'button', 'data-action': 'zoom-out', 'aria-label': 'Zoom out', title: 'Zoom out (−)', disabled: whole, onclick: doZoomOut }, 'zoom out'),
    h('button', { type: 'button', 'data-action': 'pan-right', 'aria-label': 'Pan right', title: 'Pan right (→)', disabled: whole, onclick: () => doPan(1) }, '▸'),
    h('button', {
      type: 'button', 'data-action': 'follow', 'aria-label': meta && meta.live ? 'Follow' : 'Whole run', 'aria-pressed': String(whole && st.follow),
      class: whole ? 'on' : '', title: meta && meta.live ? 'Show the whole run and follow new seconds (0)' : 'Show the whole run (0)', onclick: doFollow,
    }, meta && meta.live ? (following ? '● following' : 'follow') : 'whole run'),
    readout);
  const link = h('a', {
    class: 'copy-link', href: location.href, 'data-action': 'copy-link', title: 'Copy a link to this exact view',
    onclick: (ev) => {
      ev.preventDefault();
      const done = () => {
        link.textContent = 'Link copied';
        link.classList.add('ok');
        setTimeout(() => {
          link.textContent = 'Copy link';
          link.classList.remove('ok');
        }, 1500);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) navigator.clipboard.writeText(location.href).then(done, done);
      else done();
    },
  }, 'Copy link');
  fill(els.top,
    h('div', { class: 'brand' }, h('span', { class: 'logo', 'aria-hidden': 'true' }, h('i'), h('i'), h('i'), h('i')), h('span', { class: 'name' }, 'ioscope'), h('span', { class: 'sub' }, isEmbedded() ? 'Analytics report' : 'Analytics')),
    runInfo, compare, h('div', { class: 'spacer' }), time, link);
}

// --- add statistic -------------------------------------------------------------------------

// Add statistic: a statistic, a filter (any number of dimension = value; values of one
// dimension mean "any of"), a breakdown and a kind. Only what the statistic takes is
// offered (its dimensions as the API lists them); in a report, only what it embedded.
function openAddStat() {
  closeAddStat();
  const detail = runDetail(app.state.run);
  const stats = (detail && detail.stats) || [];
  if (!stats.length) return;
  const values = (d) => ((detail && detail.dimensions && detail.dimensions[d]) || []).map(String);
  const info = () => stats.find((x) => x.name === statSel.value);
  const anyKind = (stat, where, by) => kindsFor(stat.kind).some((k) => app.ws.answered(makeChart(stat.name, { by, where, kind: k })));
  const shown = stats.filter((s) => anyKind(s, [], ''));
  if (!shown.length) return;
  // The client's statistics, then the target's (what the probed server did) in their own group.
  const option = (s) => h('option', { value: s.name, 'data-side': s.side || 'client' }, `${s.label || s.name}  (${s.unit})`);
  const groups = statGroups(shown, targetHosts(detail));
  const statSel = h('select', { name: 'stat', 'aria-label': 'Statistic' },
    groups.length > 1 ? groups.map((g) => h('optgroup', { label: g.label, 'data-side': g.side }, g.stats.map(option))) : shown.map(option));
  const bySel = h('select', { name: 'by', 'aria-label': 'Breakdown' });
  const kindSel = h('select', { name: 'kind', 'aria-label': 'Show as' });
  let where = [];
  const filterBox = h('div', { class: 'filters' });
  // The filters the statistic takes: each one's dimension and value pickers list the
  // choices left with the others in place.
  const renderFilters = () => {
    const s = info();
    where = where.filter((p, i) => statTakes(s, where.slice(0, i + 1)));
    const rows = where.map(([d, v], i) => {
      const others = where.filter((_, j) => j !== i);
      const dims = (s.dimensions || []).filter((x) => x === d || (statTakes(s, others.concat([[x, values(x)[0]]])) && values(x).some((y) => anyKind(s, others.concat([[x, y]]), ''))));
      const dimSel = h('select', { name: 'filter-dim', 'aria-label': 'Filter dimension', onchange: (ev) => {
        const nd = ev.target.value;
        const nv = values(nd).find((y) => anyKind(s, others.concat([[nd, y]]), ''));
        where[i] = [nd, nv];
        refill();
      } }, dims.map((x) => h('option', { value: x, selected: x === d }, x)));
      const valSel = h('select', { name: 'filter-value', 'aria-label': 'Filter value', onchange: (ev) => {
        where[i] = [d, ev.target.value];
        refill();
      } }, values(d).filter((y) => y === v || anyKind(s, others.concat([[d, y]]), '')).map((y) => h('option', { value: y, selected: y === v }, y)));
      return h('div', { class: 'filter-row' }, dimSel, h('span', { class: 'eq' }, '='), valSel,
        h('button', { type: 'button', 'data-action': 'filter-remove', 'aria-label': 'Remove filter', title: 'Remove this filter', onclick: () => {
          where.splice(i, 1);
          refill();
        } }, '×'));
    });
    // A new filter: the first dimension (and value) the statistic still takes.
    let next = null;
    for (const d of s.dimensions || []) {
      const v = values(d).find((y) => !where.some((p) => p[0] === d && p[1] === y) && statTakes(s, where.concat([[d, y]])) && anyKind(s, where.concat([[d, y]]), ''));
      if (v != null) {
        next = [d, v];
        break;
      }
    }
    const add = next
      ? h('button', { type: 'button', class: 'filter-add', 'data-action': 'filter-add', onclick: () => {
        where.push(next);
        refill();
      } }, where.length ? '+ another filter' : '+ filter (e.g. op = write)')
      : where.length ? null : h('span', { class: 'muted' }, 'none');
    fill(filterBox, ...rows, add);
  };
  const refill = () => {
    const s = info();
    renderFilters();
    const dims = drillDims({ stat: s.name, by: '', where }, s).filter((d) => anyKind(s, where, d));
    const prevBy = bySel.value;
    const whole = anyKind(s, where, '');
    fill(bySel, whole ? h('option', { value: '' }, 'none (raw statistic)') : null, ...dims.map((d) => h('option', { value: d, selected: d === prevBy }, `by ${d}`)));
    refillKinds();
  };
  const refillKinds = () => {
    const s = info();
    const kinds = kindsFor(s.kind).filter((k) => app.ws.answered(makeChart(s.name, { by: bySel.value, where, kind: k })));
    const def = defaultKind(s.kind, bySel.value);
    fill(kindSel, ...kinds.map((k) => h('option', { value: k, selected: k === def }, KIND_LABELS[k] || k)));
  };
  statSel.addEventListener('change', refill);
  bySel.addEventListener('change', refillKinds);
  refill();
  const add = () => {
    if (!kindSel.value) return;
    const chart = makeChart(statSel.value, { by: bySel.value, where, kind: kindSel.value });
    closeAddStat();
    app.ws.addChart(chart);
    requestAnimationFrame(() => {
      const last = els.worksheet.querySelector('section.chart:last-of-type');
      if (last) last.scrollIntoView({ behavior: 'smooth', block: 'nearest' });
    });
  };
  const pop = h('form', {
    class: 'menu add-pop', role: 'dialog', 'aria-label': 'Add statistic',
    onsubmit: (ev) => {
      ev.preventDefault();
      add();
    },
  },
  h('div', { class: 'menu-head' }, 'Add statistic'),
  h('label', {}, h('span', {}, 'Statistic'), statSel),
  h('div', { class: 'field' }, h('span', {}, 'Filter'), filterBox),
  h('label', {}, h('span', {}, 'Breakdown'), bySel),
  h('label', {}, h('span', {}, 'Show as'), kindSel),
  h('div', { class: 'row' },
    h('button', { type: 'submit', class: 'primary', 'data-action': 'add-confirm' }, 'Add'),
    h('button', { type: 'button', 'data-action': 'add-cancel', onclick: closeAddStat }, 'Cancel')));
  els.addWrap.append(pop);
  els.addPop = pop;
  statSel.focus();
}

// --- server worksheet -----------------------------------------------------------------------

// The charts of the server worksheet this run can draw (a report: those it embedded).
function serverWorksheet() {
  const detail = runDetail(app.state.run);
  return serverCharts(detail && detail.stats).filter((c) => app.ws.answered(c));
}

function renderWsTools() {
  const detail = runDetail(app.state.run);
  els.serverWs.hidden = !(hasTarget(detail && detail.stats) && serverWorksheet().length);
}

function openServerWorksheet() {
  const charts = serverWorksheet();
  if (charts.length) change({ charts }, true);
}

function closeAddStat() {
  if (els.addPop) els.addPop.remove();
  els.addPop = null;
}

// --- live polling --------------------------------------------------------------------------

// One event stream per shown live run; a new second triggers a poll at once.
function follow() {
  if (isEmbedded() || typeof EventSource === 'undefined') return;
  const live = shownRuns().filter((id) => runMeta(id) && runMeta(id).live).map(String);
  for (const [id, es] of app.streams) {
    if (!live.includes(id)) {
      es.close();
      app.streams.delete(id);
    }
  }
  for (const id of live) {
    if (app.streams.has(id)) continue;
    const es = new EventSource(`/api/v1/runs/${encodeURIComponent(id)}/events`);
    es.onmessage = () => poll();
    app.streams.set(id, es);
  }
}

// Every second: poll when a live run has no open event stream, and every 5 s anyway
// (steps, probes and the summary so far).
function tick() {
  follow();
  const open = [...app.streams.values()].every((es) => es.readyState === EventSource.OPEN);
  if (app.streams.size && open && app.ticks++ % 5 !== 0) return;
  poll();
}

async function poll() {
  if (isEmbedded()) return;
  if (app.polling) {
    app.pollAgain = true;
    return;
  }
  const ids = shownRuns();
  if (!ids.some((id) => runMeta(id) && runMeta(id).live)) return;
  app.polling = true;
  try {
    const before = new Map(ids.map((id) => [id, { ...runMeta(id) }]));
    const res = await getRuns();
    app.runs = res.runs || [];
    const changed = [];
    const ended = [];
    for (const id of ids) {
      const a = before.get(id);
      const b = runMeta(id);
      if (!a || !b) continue;
      if (a.last_second !== b.last_second || a.first_second !== b.first_second) changed.push(id);
      if (a.live && !b.live) ended.push(id);
      else if (b.live && app.pollCount % 5 === 0) ended.push(id); // steps, probes, summary so far
    }
    app.pollCount++;
    if (changed.length || ended.length) {
      for (const id of ended) {
        try {
          app.details.set(String(id), await getRun(id));
        } catch (_) {
          // keep the previous detail
        }
      }
      const focus = document.activeElement;
      if (!(focus && focus.tagName === 'SELECT' && els.top.contains(focus))) renderTopBar();
      await app.ws.refresh(changed.concat(ended.filter((x) => !changed.includes(x))));
      if (ended.length) {
        renderPanelsIfNeeded(true);
        // A live run's target series may appear after its first seconds.
        renderWsTools();
      }
    }
    els.banner.hidden = true;
  } catch (err) {
    els.banner.hidden = false;
    els.banner.textContent = `Lost contact with the ioscope server: ${err.message}. Retrying every second.`;
  } finally {
    app.polling = false;
    if (app.pollAgain) {
      app.pollAgain = false;
      setTimeout(poll, 0);
    }
  }
}

// --- start -------------------------------------------------------------------------------

function buildSkeleton() {
  fill(document.body);
  els.top = h('header', { class: 'topbar' });
  els.banner = h('div', { class: 'banner', hidden: true, role: 'status' });
  els.addWrap = h('div', { class: 'add-wrap' },
    h('button', { type: 'button', class: 'add-stat', 'data-action': 'add-stat', 'aria-label': 'Add statistic', onclick: openAddStat }, h('span', { class: 'plus' }, '+'), 'Add statistic'));
  // Offered when the run has target series (renderWsTools).
  els.serverWs = h('button', {
    type: 'button', class: 'server-ws', 'data-action': 'server-worksheet', hidden: true,
    title: 'The client latency heat map with the block latency heat map under it, the NFS server\'s CPU and the disks\' IOPS, on one time axis',
    onclick: openServerWorksheet,
  }, 'Server worksheet');
  els.wsTools = h('div', { class: 'ws-tools' },
    h('div', { class: 'ws-title' }, 'Worksheet'),
    h('div', { class: 'ws-hint' }, 'drag on a chart to zoom · double-click to zoom out · click a value to highlight, shift-click to add'),
    els.serverWs,
    els.addWrap);
  els.worksheet = h('div', { class: 'worksheet' });
  els.panels = h('div', { class: 'panels' });
  const main = h('main', {}, els.wsTools, els.worksheet, els.panels);
  document.body.append(els.top, els.banner, main);
  document.addEventListener('mousedown', (ev) => {
    if (els.addPop && !ev.target.closest('.add-wrap')) closeAddStat();
  });
  document.addEventListener('keydown', (ev) => {
    if (ev.target.closest && ev.target.closest('input, select, textarea')) return;
    if (ev.key === 'Escape') closeAddStat();
    else if (ev.key === 'ArrowLeft') doPan(-1);
    else if (ev.key === 'ArrowRight') doPan(1);
    else if (ev.key === '-') doZoomOut();
    else if (ev.key === '0') doFollow();
  });
}

async function main() {
  buildSkeleton();
  document.body.dataset.ready = '0';
  let res;
  try {
    res = await getRuns();
  } catch (err) {
    els.banner.hidden = false;
    els.banner.textContent = `Cannot load the runs: ${err.message}`;
    document.body.dataset.ready = '1';
    return;
  }
  app.runs = (res && res.runs) || [];
  const hash = location.hash && location.hash.length > 1 ? location.hash : embeddedWorksheet() || '';
  app.state = await resolveState(decodeState(hash));
  writeHash(false);
  app.ws = new Worksheet(els.worksheet, {
    state: () => app.state,
    change,
    runMeta,
    runDetail,
    zoomOut: doZoomOut,
  });
  window.addEventListener('popstate', onHash);
  window.addEventListener('hashchange', onHash);
  await apply();
  if (!isEmbedded()) setInterval(tick, 1000);
}

window.ioscope = {
  state: () => JSON.parse(JSON.stringify(app.state)),
  // A state object (fields to change) or a hash string; resolves when every chart drew.
  setState: async (obj) => {
    await starting;
    if (typeof obj === 'string') return resolveState(decodeState(obj)).then((st) => change(st, true));
    return change(obj || {}, true);
  },
  get ready() {
    return app.ready;
  },
  encode: () => encodeState(app.state),
};

const starting = main();
app.ready = starting;
