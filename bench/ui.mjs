#!/usr/bin/env node
// bench/ui.mjs: how fast the Analytics UI shows data, in headless Chromium.
//
//  1. Heat map: serves a results file of (at least) an hour and, for each encoding of the
//     /heatmap answer (JSON, packed), measures its size plain and gzip-compressed on the
//     wire (one column per second, and as the UI asks for the whole run: columns of
//     several seconds, column_seconds=N, as many as the plot has pixel columns), its
//     time, and the time from opening a worksheet with one latency heat map of the whole
//     run to that heat map drawn; then the redraw time (binning the columns into pixels
//     and painting them).
//  2. Live: starts `ioscope run --ui`, keeps the default worksheet open with follow on,
//     and for every second of the run notes when a chart first shows it. The lag of
//     second s is that moment minus the end of second s (run start + s + 1 s): the
//     earliest it could possibly be drawn.
//
// Usage: node bench/ui.mjs HOUR.db [--live-seconds 40] [--rounds 5] [--label NAME]
//   HOUR.db: a results file of an hour at 1 s: a real one, e.g.
//   ioscope run --engine posix --dir /var/tmp/hour --size 256m --rw randrw --rwmix-read 70 \
//     --bs 4k:70,64k:30 --threads 2 --rate-iops 10000 --duration 3600s --out HOUR.db
//   or, in a minute, a 60 s run of the same workload (--duration 60s --out SAMPLE.db)
//   stretched to an hour by repeating its real seconds:
//   cargo run --release -p ioscope-web --example stretch_run SAMPLE.db HOUR.db 3600
// Needs `npm ci` in ui-tests/ (playwright-core) and Debian chromium; uses the release
// binary ($IOSCOPE_BIN or $CARGO_TARGET_DIR/release/ioscope). Prints a markdown report
// and writes it to bench/results/YYYY-MM-DD-HOST-ui[-LABEL].md.

import { writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const target = process.env.CARGO_TARGET_DIR || path.join(os.homedir(), '.cache/ioscope/target');
process.env.IOSCOPE_BIN ||= path.join(target, 'release/ioscope');
const { serve, launch, open, ready, tmpdir, BIN } = await import('../ui-tests/browser/harness.mjs');

const args = process.argv.slice(2);
const hourFile = args.find((a) => !a.startsWith('--'));
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
if (!hourFile) {
  console.error('usage: node bench/ui.mjs HOUR.db [--live-seconds 40] [--label NAME]');
  process.exit(2);
}
const liveSeconds = Number(opt('live-seconds', '40'));
const rounds = Number(opt('rounds', '5'));
const label = opt('label', '');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
};
const f1 = (x) => x.toFixed(1);

const browser = await launch();
const lines = [];
const say = (s = '') => {
  console.log(s);
  lines.push(s);
};

// 1. Heat map of an hour, in both encodings of /heatmap: JSON (the API's default) and
//    packed (what the UI reads), as the UI asks for them (a whole run longer than the plot
//    is wide in columns of several seconds, column_seconds=N) and, for comparison, packed
//    with one column per second (what the UI asked for before). The page always asks for
//    packed columns; for the other variants the browser's request is rewritten, and the
//    UI takes that answer as it is. A first page (not timed) finds what the UI asks for;
//    every answer is then asked for once so the server keeps it, as it does for every
//    viewer after the first. Rounds alternate between the variants.
const wire = (url) =>
  new Promise((resolve, reject) => {
    const t = performance.now();
    http
      .get(url, { headers: { 'Accept-Encoding': 'gzip' } }, (res) => {
        let bytes = 0;
        res.on('data', (d) => (bytes += d.length));
        res.on('end', () => resolve({ bytes, ms: performance.now() - t, gzip: res.headers['content-encoding'] === 'gzip' }));
      })
      .on('error', reject);
  });
const plainBytes = async (url) => (await (await fetch(url, { headers: { 'Accept-Encoding': 'identity' } })).arrayBuffer()).byteLength;
// A variant of what the UI asks for: the encoding, and columns or seconds.
const VARIANTS = [
  { name: 'json, columns', enc: 'json', cols: true },
  { name: 'packed, per second (before)', enc: 'packed', cols: false },
  { name: 'packed, columns (the UI)', enc: 'packed', cols: true },
];
const asVariant = (url, v) => {
  const u = url.replace('encoding=packed', `encoding=${v.enc}`);
  return v.cols ? u : u.replace(/&column_seconds=\d+/, '');
};
{
  const server = await serve(['ui', hourFile, '--listen', '127.0.0.1:0']);
  const runs = await (await fetch(`${server.url}api/v1/runs`)).json();
  const run = runs.runs[0];
  const seconds = run.last_second - run.first_second + 1;
  const res = VARIANTS.map(() => ({ plain: 0, wire: 0, apiMs: [], paintMs: [], heatMs: [], afterMs: [], draws: [] }));
  const openHeat = async (v) => {
    const page = await browser.newPage({ viewport: { width: 1600, height: 900 }, deviceScaleFactor: 1 });
    const asked = [];
    await page.route('**/heatmap?*', (route) => {
      asked.push(route.request().url());
      return route.continue({ url: v ? asVariant(route.request().url(), v) : route.request().url() });
    });
    const t0 = performance.now();
    await page.goto(`${server.url}#run=0&c=latency,kind=heatmap`);
    await ready(page);
    return { page, ms: performance.now() - t0, asked: asked[0] };
  };
  // What the UI asks for.
  const probe = await openHeat(null);
  const asked = probe.asked;
  await probe.page.close();
  for (const [k, v] of VARIANTS.entries()) {
    res[k].plain = await plainBytes(asVariant(asked, v));
    res[k].wire = (await wire(asVariant(asked, v))).bytes;
  }
  let first = null;
  for (let round = 0; round < rounds; round++) {
    for (const [k, v] of VARIANTS.entries()) {
      const w = await wire(asVariant(asked, v));
      if (!w.gzip) throw new Error('the answer was not gzip-compressed');
      res[k].apiMs.push(w.ms);
      const { page, ms } = await openHeat(v);
      res[k].paintMs.push(ms);
      // In the page: the heat map's request, its answer's end, and every chart drawn.
      const [reqAt, respAt, drawnAt] = await page.evaluate(() => {
        const r = performance.getEntriesByType('resource').filter((x) => x.name.includes('/heatmap?')).pop();
        const m = performance.getEntriesByName('ioscope-ready').pop();
        return [r.startTime, r.responseEnd, m.startTime];
      });
      res[k].heatMs.push(drawnAt - reqAt);
      res[k].afterMs.push(drawnAt - respAt);
      const drawn = await page.$eval('section.chart', (el) => JSON.parse(el.dataset.drawn));
      if (v.cols && v.enc === 'packed') first = drawn;
      res[k].draws.push(drawn.ms);
      await page.close();
    }
  }
  // Redraws (no fetch): the same for both encodings once decoded.
  const { page } = await open(browser, `${server.url}#run=0&c=latency,kind=heatmap`, { width: 1600, height: 900 });
  const draws = [];
  const cuts = [1, 0, 5, 0, 0.1, 0];
  for (let i = 0; i < 30; i++) {
    // setState resolves once every chart has drawn again.
    await page.evaluate(async (cut) => {
      const st = window.ioscope.state();
      st.charts[0].cut = cut;
      await window.ioscope.setState(st);
    }, cuts[i % cuts.length]);
    draws.push((await page.$eval('section.chart', (el) => JSON.parse(el.dataset.drawn))).ms);
  }
  await page.close();
  const mb = (b) => (b / 1e6).toFixed(2);
  say(`# Analytics UI in headless Chromium (${new Date().toISOString().slice(0, 10)}, ${os.hostname()}, ${os.cpus().length} x ${os.cpus()[0].model})`);
  say();
  const cs = Number((/column_seconds=(\d+)/.exec(asked) || [0, 1])[1]);
  say(`## Latency heat map of ${seconds} seconds at 1 s (${path.basename(hourFile)}, ${first.cells.toLocaleString('en')} pixel cells)`);
  say();
  say(`The UI asked for \`${asked.replace(/^https?:\/\/[^/]+/, '')}\`: ${cs > 1 ? `columns of ${cs} s, each the exact sum of its seconds` : 'one column per second'}.`);
  say();
  say(`| answer | size, MB | on the wire (gzip), MB | answer on the wire, ms | heat map requested to drawn, ms | answer received to drawn (decode, bin, paint), ms | page load to first heat map drawn, ms |`);
  say(`|---|---|---|---|---|---|---|`);
  const mm = (xs) => `${f1(median(xs))} / ${f1(Math.max(...xs))}`;
  for (const [k, v] of VARIANTS.entries()) {
    const r = res[k];
    say(`| ${v.name} | ${mb(r.plain)} | ${mb(r.wire)} | ${mm(r.apiMs)} | ${mm(r.heatMs)} | ${mm(r.afterMs)} | ${mm(r.paintMs)} |`);
  }
  say();
  say('Times are median / max.');
  say();
  say(`${rounds} rounds alternating between the answers, a fresh page each (page load = navigation to every chart drawn: page, scripts, run list, run detail, the heat map fetched, decoded, binned and painted).`);
  say(`Redraw without fetching (bin ${first.cells.toLocaleString('en')} cells into ${first.plot.width} x ${first.plot.height} px, paint): median ${f1(median(draws))} ms, p90 ${f1(pct(draws, 0.9))} ms, max ${f1(Math.max(...draws))} ms over ${draws.length} draws.`);
  server.close();
}

// 2. Live run.
{
  const dir = tmpdir();
  const server = await serve([
    'run', '--engine', 'posix', '--dir', path.join(dir, 'data'), '--size', '64m', '--rw', 'randrw',
    '--rate-iops', '5000', '--threads', '2', '--duration', `${liveSeconds}s`, '--quiet',
    '--out', path.join(dir, 'live.db'), '--ui', '--listen', '127.0.0.1:0',
  ]);
  let run = null;
  while (!run || run.first_second == null) {
    run = (await (await fetch(`${server.url}api/v1/runs`).catch(() => ({ json: () => ({ runs: [] }) }))).json()).runs[0];
    await new Promise((r) => setTimeout(r, 100));
  }
  const page = await browser.newPage({ viewport: { width: 1600, height: 900 } });
  await page.goto(server.url);
  const firstSeen = new Map();
  const deadline = Date.now() + (liveSeconds + 5) * 1000;
  while (Date.now() < deadline) {
    const tos = await page.$$eval('section.chart', (els) => els.map((e) => (e.dataset.drawn ? JSON.parse(e.dataset.drawn).to : -1)));
    const now = Date.now();
    for (const to of tos) if (to >= 0 && !firstSeen.has(to)) firstSeen.set(to, now);
    if (firstSeen.has(liveSeconds - 1)) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  const lags = [];
  for (const [s, at] of firstSeen) {
    // Seconds shown at page load were not waited for.
    if (s < 2) continue;
    lags.push((at - (run.started_unix_ms + (s + 1) * 1000)) / 1000);
  }
  say();
  say(`## Live: \`ioscope run --ui\`, ${liveSeconds} s at 5,000 IOPS (posix randrw), default worksheet, follow on`);
  say();
  say(`| seconds observed | lag median, s | lag p90, s | lag max, s |`);
  say(`|---|---|---|---|`);
  say(`| ${lags.length} | ${lags.length ? median(lags).toFixed(2) : '-'} | ${lags.length ? pct(lags, 0.9).toFixed(2) : '-'} | ${lags.length ? Math.max(...lags).toFixed(2) : '-'} |`);
  say();
  say('Lag of second s = when a chart first showed it minus the end of second s (run start + s + 1 s).');
  await page.close();
  server.close();
}

await browser.close();
say();
say(`binary: ${BIN}`);
const stamp = new Date().toISOString().slice(0, 10);
const out = path.join(here, 'results', `${stamp}-${os.hostname()}-ui${label ? `-${label}` : ''}.md`);
writeFileSync(out, `${lines.join('\n')}\n`);
console.log(`\nwritten: ${out}`);
