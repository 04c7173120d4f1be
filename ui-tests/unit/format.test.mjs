// Units as a storage engineer reads them on axes, in hover lists and in tables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  fmtTick, binaryTicks, fmtNs, fmtBytes, fmtValue, fmtRange, fmtSI, fmtInt, fmtElapsed, logTicks, linearTicks, timeTicks, niceMax, stepName,
} from '../../crates/web/assets/format.js';

test('latency in ns reads in the unit that fits, with three digits', () => {
  assert.equal(fmtNs(1_500_000), '1.50 ms');
  assert.equal(fmtNs(850), '850 ns');
  assert.equal(fmtNs(12_300), '12.3 µs');
  assert.equal(fmtNs(2_000_000_000), '2.00 s');
  // rounding must not print "1000 µs"
  assert.equal(fmtNs(999_700), '1.00 ms');
});

test('sizes are binary: exact multiples without decimals', () => {
  assert.equal(fmtBytes(4096), '4 KiB');
  assert.equal(fmtBytes(512), '512 B');
  assert.equal(fmtBytes(1_572_864), '1.50 MiB');
  assert.equal(fmtBytes(128 * 1024), '128 KiB');
  assert.equal(fmtBytes(3 * 1024 ** 3), '3 GiB');
  assert.equal(fmtValue(8192, 'bytes/s'), '8 KiB/s');
});

test('rates are compact on axes and grouped in tables', () => {
  assert.equal(fmtSI(20_001), '20.0K');
  assert.equal(fmtSI(950), '950');
  assert.equal(fmtSI(1_250_000), '1.25M');
  assert.equal(fmtInt(1_200_000), '1,200,000');
  assert.equal(fmtValue(20_001, 'ops/s'), '20.0K');
});

test('a bucket range is written in one unit and the bounds differ', () => {
  assert.equal(fmtRange(1024, 1031, 'ns'), '1.02–1.03 µs');
  assert.equal(fmtRange(999_424, 1_003_519, 'ns'), '999–1004 µs');
  assert.equal(fmtRange(58, 58, 'ns'), '58 ns');
  assert.match(fmtRange(4096, 4127, 'bytes'), /^4–4\.03 KiB$/);
});

test('elapsed time is m:ss, h:mm:ss past an hour', () => {
  assert.equal(fmtElapsed(83), '1:23');
  assert.equal(fmtElapsed(0), '0:00');
  assert.equal(fmtElapsed(3725), '1:02:05');
});

test('log ticks: 1-2-5 for ns, powers of two for bytes, never too many', () => {
  assert.deepEqual(logTicks(1000, 10_000, 'ns', 10), [1000, 2000, 5000, 10_000]);
  assert.deepEqual(logTicks(4096, 65536, 'bytes', 10), [4096, 8192, 16384, 32768, 65536]);
  assert.ok(logTicks(1, 1e12, 'ns', 8).length <= 8);
  assert.ok(logTicks(1, 2 ** 40, 'bytes', 8).length <= 8);
});

test('linear and time ticks land on round values', () => {
  assert.deepEqual(linearTicks(0, 2000, 4).ticks, [0, 500, 1000, 1500, 2000]);
  assert.equal(niceMax(1730), 2000);
  assert.equal(niceMax(1500), 1600, 'a flat line at the maximum stays below the top edge');
  assert.deepEqual(timeTicks(0, 120, 6).ticks, [0, 30, 60, 90, 120]);
  assert.equal(timeTicks(0, 3600, 8).step, 600);
});

test('axis labels drop trailing zeros; byte axes step in powers of two', () => {
  assert.equal(fmtTick(5000, 'ops/s'), '5K');
  assert.equal(fmtTick(10_000_000, 'ns'), '10 ms');
  assert.equal(fmtTick(2500, 'ops/s'), '2.5K');
  assert.equal(fmtTick(1500, 'ns'), '1.5 µs');
  assert.deepEqual(binaryTicks(0, 2 ** 32, 6).ticks.map((v) => fmtTick(v, 'bytes')), ['0', '1 GiB', '2 GiB', '3 GiB', '4 GiB']);
});

test('a step of a run with repeats is named with its repeat, and only then', () => {
  const repeated = [{ index: 0, label: 'threads=1' }, { index: 1, repeat: 1, label: 'threads=1' }];
  assert.equal(stepName(repeated[0], repeated), 'repeat 0 threads=1');
  assert.equal(stepName(repeated[1], repeated), 'repeat 1 threads=1');
  assert.equal(stepName({ index: 1, repeat: 1, label: '' }, repeated), 'repeat 1');
  const plain = [{ index: 0, label: 'threads=1' }, { index: 1, label: 'threads=2' }];
  assert.equal(stepName(plain[1], plain), 'threads=2');
});
