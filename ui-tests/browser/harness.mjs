// harness.mjs: what the browser tests share: the ioscope binary, results files made by
// real runs, the UI server it starts, and Debian Chromium driven by playwright-core.

import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const target = process.env.CARGO_TARGET_DIR || path.join(os.homedir(), '.cache/ioscope/target');
export const BIN = process.env.IOSCOPE_BIN || path.join(target, 'debug/ioscope');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/// Where screenshots go: IOSCOPE_SCREENSHOTS, or a temporary directory.
export const SHOTS = process.env.IOSCOPE_SCREENSHOTS || mkdtempSync(path.join(os.tmpdir(), 'ioscope-shots-'));
mkdirSync(SHOTS, { recursive: true });

export function tmpdir() {
  return mkdtempSync(path.join(os.tmpdir(), 'ioscope-ui-test-'));
}

/// Runs ioscope to completion and returns its stdout (throws with its stderr on failure).
export function ioscope(args) {
  return execFileSync(BIN, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/// Starts `ioscope ARGS...` and resolves once it prints the UI address.
export function serve(args) {
  return new Promise((resolve, reject) => {
    const proc = spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no UI address within 30 s:\n${err}`)), 30000);
    proc.stderr.on('data', (d) => {
      err += d;
      const m = err.match(/Analytics UI: (http:\/\/\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1], proc, stderr: () => err, close: () => proc.kill('SIGINT') });
      }
    });
    proc.on('exit', (code) => reject(new Error(`ioscope exited with ${code} before serving:\n${err}`)));
  });
}

export async function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
}

/// Opens a worksheet URL and waits until every chart has drawn.
export async function open(browser, url, viewport = { width: 1440, height: 1000 }) {
  const page = await browser.newPage({ viewport, deviceScaleFactor: 1 });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(url);
  await ready(page);
  return { page, errors };
}

export async function ready(page) {
  await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 30000 });
}

/// The `data-drawn` record of every chart, in page order.
export async function drawn(page) {
  return page.$$eval('section.chart', (els) => els.map((e) => ({
    stat: e.dataset.stat, by: e.dataset.by, where: e.dataset.where, kind: e.dataset.kind,
    drawn: e.dataset.drawn ? JSON.parse(e.dataset.drawn) : null,
  })));
}

/// RGB of canvas pixels of chart `index` at CSS-pixel points [[x, y], ...] (plot coordinates).
export async function pixels(page, index, points) {
  return page.$$eval('section.chart', (els, [i, pts]) => {
    const canvas = els[i].querySelector('canvas.plot');
    const d = JSON.parse(els[i].dataset.drawn);
    const scale = canvas.width / canvas.getBoundingClientRect().width;
    const ctx = canvas.getContext('2d');
    return pts.map(([x, y]) => {
      const p = ctx.getImageData(Math.round((d.plot.x + x) * scale), Math.round((d.plot.y + y) * scale), 1, 1).data;
      return [p[0], p[1], p[2]];
    });
  }, [index, points]);
}
