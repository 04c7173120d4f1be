#!/usr/bin/env node
// screenshots.mjs: the README's pictures, from real runs made here (about 1 minute):
// the default worksheet, a drill-down by file, a drill into the heat maps of the writes,
// two runs compared, and latency art; and the server worksheet of the run with target
// series that crates/web/examples/server_run.rs writes.
// Usage: node ui-tests/screenshots.mjs [OUT_DIR]   (default docs/images)

import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, serve, launch, open, tmpdir } from './browser/harness.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = path.resolve(process.argv[2] || path.join(root, 'docs/images'));
mkdirSync(out, { recursive: true });
const dir = tmpdir();

const run = (args) => new Promise((resolve, reject) => {
  const p = spawn(BIN, ['run', ...args], { stdio: ['ignore', 'ignore', 'inherit'] });
  p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ioscope run ${args.join(' ')}: exit ${code}`))));
});
// A directory belongs to one run at a time: each run has its own.
const common = (name) => ['--engine', 'posix', '--dir', path.join(dir, name), '--size', '256m', '--files', '4', '--threads', '4', '--quiet'];
await Promise.all([
  run([...common('mixed'), '--rw', 'randrw', '--rwmix-read', '70', '--bs', '4k:70,64k:25,1m:5', '--rate-iops', '8000',
    '--duration', '60s', '--out', path.join(dir, 'mixed-70-30.db')]),
  run([...common('reads'), '--rw', 'randread', '--bs', '4k', '--rate-iops', '8000', '--duration', '45s',
    '--out', path.join(dir, 'randread-4k.db')]),
  run([path.join(root, 'examples/latency-art.toml'), '--set', 'engine=null', '--quiet',
    '--out', path.join(dir, 'latency-art.db')]),
]);

const server = await serve(['ui', path.join(dir, 'mixed-70-30.db'), path.join(dir, 'randread-4k.db'),
  path.join(dir, 'latency-art.db'), '--listen', '127.0.0.1:0']);
const browser = await launch();
const shots = [
  ['worksheet.png', ''],
  ['drill-down.png', '#run=0&c=latency,by=op,kind=heatmap&c=ops,by=op,kind=stacked,hl=write&c=ops,by=file,where=op:write,kind=stacked'],
  ['drill-heatmap.png', '#run=0&c=ops,by=op,kind=stacked,hl=write&c=latency,by=file,where=op:write,kind=heatmap,pin=30&c=offset,where=op:write,kind=heatmap'],
  ['compare.png', '#run=0&cmp=1&c=ops,by=op,kind=stacked&c=latency,kind=heatmap'],
  ['latency-art.png', '#run=2&c=offset,kind=heatmap&c=ops,kind=line'],
];
for (const [name, hash] of shots) {
  const { page, errors } = await open(browser, `${server.url}${hash}`, { width: 1440, height: 960 });
  await page.screenshot({ path: path.join(out, name) });
  if (errors.length) console.error(`${name}: ${errors.join('; ')}`);
  console.log(path.join(out, name));
  await page.close();
}
server.close();

// The server worksheet (docs/analytics.md): the fixture run with target series.
const serverDb = path.join(dir, 'server.db');
execFileSync(path.join(path.dirname(BIN), 'examples', 'server_run'), [serverDb]);
const targetServer = await serve(['ui', serverDb, '--listen', '127.0.0.1:0']);
const serverHash = '#run=0&c=latency,by=op,kind=heatmap&c=block_latency,by=op,kind=heatmap&c=process_cpu,by=process,kind=stacked&c=disk_ops,by=disk,kind=stacked';
const { page } = await open(browser, `${targetServer.url}${serverHash}`, { width: 1440, height: 1300 });
await page.screenshot({ path: path.join(out, 'server-worksheet.png') });
console.log(path.join(out, 'server-worksheet.png'));
await browser.close();
targetServer.close();
