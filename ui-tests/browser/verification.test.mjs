// The summary panel shows what --verify found: blocks checked, mismatches by kind, the
// cost, and each bad block (kind, file, offset, expected and found header). A first run
// writes its working set with headers; between runs, this test flips bytes of one block
// and copies another over a third; a read-only run with --verify report finds both.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { openSync, readSync, writeSync, closeSync } from 'node:fs';
import { ioscope, serve, launch, open, tmpdir, SHOTS } from './harness.mjs';

const BLOCK = 4096;
let server;
let browser;
before(async () => {
  const dir = tmpdir();
  const data = path.join(dir, 'w');
  const common = ['--engine', 'posix', '--bs', '4k', '--size', '256k', '--duration', '1s', '--dir', data, '--quiet'];
  ioscope(['run', '--verify', '--rw', 'write', ...common, '--out', path.join(dir, 'write.db')]);
  const fd = openSync(path.join(data, 'ioscope.0.dat'), 'r+');
  const b = Buffer.alloc(BLOCK);
  readSync(fd, b, 0, BLOCK, 5 * BLOCK);
  for (let i = 1000; i < 1010; i++) b[i] ^= 0x5a;
  writeSync(fd, b, 0, BLOCK, 5 * BLOCK);
  readSync(fd, b, 0, BLOCK, 3 * BLOCK);
  writeSync(fd, b, 0, BLOCK, 9 * BLOCK);
  closeSync(fd);
  const results = path.join(dir, 'read.db');
  ioscope(['run', '--verify', 'report', '--rw', 'randread', ...common, '--out', results]);
  server = await serve(['ui', results, '--listen', '127.0.0.1:0']);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.close();
});

test('the summary panel shows each bad block with its kind, offset and the header found', async () => {
  const { page, errors } = await open(browser, `${server.url}#run=0`);
  const run = await page.evaluate(async () => (await fetch('/api/v1/runs/0')).json());
  const v = run.summary.verification;
  assert.ok(v && v.mismatches > 0, JSON.stringify(v));
  await page.waitForSelector('.verification');
  const line = await page.$eval('.verification-line', (e) => e.textContent);
  assert.match(line, /--verify report/);
  assert.match(line, /checksum/);
  assert.match(line, /misplaced/);
  const shown = await page.$$eval('ul.mismatches li', (els) => els.map((e) => [e.dataset.mismatch, Number(e.dataset.offset)]));
  assert.deepEqual(shown.sort(), [['checksum', 5 * BLOCK], ['misplaced', 9 * BLOCK]]);
  // A checksum that fails says so, and where in the block: bytes 1000..1009 were flipped.
  const said = await page.$eval('ul.mismatches li[data-mismatch="checksum"] .verdict-message', (e) => e.textContent);
  assert.match(said, /checksum fails: the first changed byte is in bytes 512\.\.1024 of the 4096-byte block/);
  const found = await page.$eval('ul.mismatches li[data-mismatch="misplaced"] .evidence', (e) => e.textContent);
  assert.match(found, /"offset":12288/, 'the header found names block 3');
  const verdicts = await page.$$eval('ul.verdicts li.verdict[data-verdict]', (els) => els.map((e) => e.dataset.verdict));
  assert.equal(verdicts[0], 'data-mismatch');
  const block = await page.$('.summary-block');
  await block.screenshot({ path: path.join(SHOTS, 'verification.png') });
  assert.deepEqual(errors, []);
});
