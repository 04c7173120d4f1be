// The compare view's rows, from the API's compare answer (fixtures/generated/compare-0-with-1.json,
// written from crates/web/src/tests_fixtures.rs) and from a comparison of repeat sets in the
// same shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { compareRows, differences, fmtPct } from '../../crates/web/assets/compare.js';

const answer = JSON.parse(readFileSync(new URL('../fixtures/generated/compare-0-with-1.json', import.meta.url), 'utf8'));

test('single runs: each figure with A, B and the difference, and "may be noise" in place of an interval', () => {
  const [step] = compareRows(answer.comparison);
  const iops = step.rows.find((r) => r.op === 'read' && r.figure === 'IOPS');
  const fig = answer.comparison.steps[0].figures.find((f) => f.op === 'read' && f.figure === 'iops');
  assert.equal(iops.difference, `+${Math.round(fig.difference).toLocaleString('en-US')} (+${fig.difference_pct.toFixed(1)}%)`);
  assert.equal(iops.interval, 'may be noise');
  assert.equal(iops.significant, '—');
  assert.match(iops.message, /may be noise/);
  assert.ok(step.rows.some((r) => r.figure === 'latency p99'));
  assert.deepEqual(differences(answer.comparison).slice(0, 2), [
    'workload differs (hash x vs hosts4)',
    'system differs: hosts: A ran on a, b, B on h1, h2, h3, h4',
  ]);
});

test('repeat sets: the interval in percent of A and whether the difference is significant', () => {
  const figure = (f) => ({ op: 'read', a_repeats: 5, b_repeats: 5, ...f });
  const comparison = {
    method: 'welch', confidence_pct: 95, min_effect_pct: 1, workload_differs: null, system_differs: [], notes: [],
    steps: [{ step: 0, label: '', figures: [
      figure({ figure: 'iops', a: 1000, b: 1200, difference: 200, difference_pct: 20, significant: true, finding: 'higher', message: 'B is 20.0% higher',
        interval: { low: 190, high: 210, low_pct: 19, high_pct: 21, df: 7.9, p_value: 1e-9 } }),
      figure({ figure: 'latency_p99_ns', a: 100000, b: 100030, difference: 30, difference_pct: 0.03, significant: false, finding: 'negligible', message: 'no difference beyond ±1%',
        interval: { low: 10, high: 50, low_pct: 0.01, high_pct: 0.05, df: 8, p_value: 0.01 } }),
    ] }],
  };
  const [step] = compareRows(comparison);
  assert.deepEqual(step.rows.map((r) => [r.figure, r.a, r.b, r.difference, r.interval, r.significant]), [
    ['IOPS', '1,000', '1,200', '+200 (+20.0%)', '+19.0% to +21.0%', 'yes'],
    ['latency p99', '100 µs', '100 µs', '+30 ns (+0.03%)', '+0.01% to +0.05%', 'no (within ±1%)'],
  ]);
  assert.equal(fmtPct(-0.04), '−0.04%');
  assert.equal(fmtPct(null), '—');
  assert.deepEqual(compareRows(null), []);
});
