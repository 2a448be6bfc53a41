// The berth CLI's cluster-wide commands on Nomad's routes, driven as the real
// binary against a real Server: operator scheduler get-config|set-config
// (check-and-set), operator metrics (JSON and Prometheus), system gc and
// system reconcile summaries, server members.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { MetricsSummary, SchedulerConfigurationResponse, ServerMembers } from '../../src/api/index.js';
import { json } from './_berth.js';
import { startCluster, TOKENS, type Cluster } from './_cluster.js';

let c: Cluster;
before(async () => {
  c = await startCluster();
});
after(async () => {
  await c?.close();
});

describe("berth's cluster-wide commands", () => {
  it("operator scheduler get-config shows Nomad's fields; set-config changes only what it is given, and --check-index refuses a stale index", async () => {
    const shown = await c.cli(['operator', 'scheduler', 'get-config']);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /^Scheduler Algorithm\s+binpack$/m);
    assert.match(shown.stdout, /^Preemption System Scheduler\s+true$/m);
    assert.match(shown.stdout, /^Modify Index\s+0$/m);

    const set = await c.cli(['operator', 'scheduler', 'set-config', '-scheduler-algorithm=spread', '-memory-oversubscription', 'true']);
    assert.equal(set.code, 0, set.stderr);
    assert.match(set.stdout, /Scheduler configuration updated!/);
    const after = json<SchedulerConfigurationResponse>(await c.cli(['operator', 'scheduler', 'get-config', '--json']));
    assert.equal(after.SchedulerConfig.SchedulerAlgorithm, 'spread');
    assert.equal(after.SchedulerConfig.MemoryOversubscriptionEnabled, true);
    assert.equal(after.SchedulerConfig.PreemptionConfig.SystemSchedulerEnabled, true, 'left as it was');

    const stale = await c.cli(['operator', 'scheduler', 'set-config', '--scheduler-algorithm', 'binpack', '--check-index', String(after.SchedulerConfig.ModifyIndex - 1)]);
    assert.equal(stale.code, 1);
    assert.match(stale.stderr, /changed since index/);
    const fresh = await c.cli(['operator', 'scheduler', 'set-config', '--scheduler-algorithm', 'binpack', '--check-index', String(after.SchedulerConfig.ModifyIndex)]);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.equal((await c.cli(['operator', 'scheduler', 'set-config', '--scheduler-algorithm', 'random'])).code, 2);
    assert.equal((await c.cli(['operator', 'scheduler', 'set-config', '--pause-eval-broker', 'maybe'])).code, 2);
    const readOnly = await c.cli(['operator', 'scheduler', 'set-config', '--scheduler-algorithm', 'spread'], { token: TOKENS.readOnly });
    assert.equal(readOnly.code, 5);
  });

  it('operator metrics prints the JSON summary, or the Prometheus text with --format prometheus', async () => {
    const summary = json<MetricsSummary>(await c.cli(['operator', 'metrics']));
    assert.ok(summary.Gauges.some((g) => g.Name === 'berth_nodes'));
    const prom = await c.cli(['operator', 'metrics', '--format', 'prometheus'], { token: TOKENS.readOnly });
    assert.equal(prom.code, 0, prom.stderr);
    assert.match(prom.stdout, /^# HELP berth_nodes /m);
  });

  it('system gc and system reconcile summaries', async () => {
    const gc = await c.cli(['system', 'gc']);
    assert.equal(gc.code, 0, gc.stderr);
    assert.match(gc.stdout, /^Collected \d+ allocations?, \d+ evaluations?, \d+ stopped jobs?$/m);
    const rec = await c.cli(['system', 'reconcile', 'summaries']);
    assert.equal(rec.code, 0, rec.stderr);
    assert.match(rec.stdout, /Reconciled job summaries/);
  });

  it('server members lists the one server, leading and alive', async () => {
    const members = json<ServerMembers>(await c.cli(['server', 'members', '--json']));
    assert.equal(members.Members.length, 1);
    const table = await c.cli(['server', 'members']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, new RegExp(`^${members.Members[0]!.Name}\\s+${new URL(c.url).host.replace(/\./g, '\\.')}\\s+true\\s+alive\\s+\\S+\\s+-$`, 'm'));
  });
});
