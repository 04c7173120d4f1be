// The summary's host rows as the UI reads them, from the API's answers for the four-host
// run (fixtures/generated/hosts-*.json, written from crates/web/src/hosts_fixture.rs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { hostEntries, fmtOffset, fmtSignedNs, splitPlan } from '../../crates/web/assets/panels.js';

const fixture = (name) => JSON.parse(readFileSync(new URL(`../fixtures/generated/${name}`, import.meta.url), 'utf8'));
const run = fixture('hosts-run-0.json');
const byHost = fixture('hosts-series-ops-by-host.json');

test('each host has a row; their counters add up to the total, and each second of ops by host to the run', () => {
  const rows = hostEntries(run.summary);
  assert.deepEqual(rows.map(([name]) => name), ['h1', 'h2', 'h3', 'h4']);
  for (const k of ['ops', 'bytes', 'errors']) {
    assert.equal(rows.reduce((a, [, x]) => a + x[k], 0), run.summary.total[k], k);
  }
  const total = run.summary.samples.map((s) => s.ops);
  byHost.seconds.forEach((s, i) => assert.equal(byHost.series.reduce((a, x) => a + x.values[i], 0), total[i], `second ${s}`));
  assert.deepEqual(hostEntries({}), [], 'a local run has no host rows');
});

test('the clock offset reads as signed, with its uncertainty', () => {
  const offsets = hostEntries(run.summary).map(([, x]) => fmtOffset(x.agent));
  assert.deepEqual(offsets, ['−2.47 ms ± 40.0 µs', '−1.23 ms ± 2.50 ms', '+0 ns ± 50.0 µs', '+1.23 ms ± 55.0 µs']);
  assert.equal(fmtOffset(null), '—');
  assert.equal(fmtOffset({ clock_offset_ns: 1500 }), '+1.50 µs');
  assert.equal(fmtSignedNs(null), '—');
});

test('the plan a host ran is taken out of its configuration and pretty-printed', () => {
  const h1 = run.hosts.find((x) => x.name === 'h1');
  const [config, plan] = splitPlan(h1.config);
  assert.equal(plan, '{}');
  assert.ok(!('plan_json' in config.agent) && config.agent.status === 'completed');
  assert.ok('plan_json' in h1.config.agent, 'the answer itself is left as it was');
  assert.deepEqual(splitPlan({ cpus: 2 }), [{ cpus: 2 }, null]);
  assert.equal(splitPlan({ agent: { plan_json: '{"a":1}' } })[1], '{\n  "a": 1\n}');
  assert.equal(splitPlan({ agent: { plan_json: 'not json' } })[1], 'not json');
});
