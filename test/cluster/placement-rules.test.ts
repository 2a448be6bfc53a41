// Constraints, affinity and spread on a real cluster: a real Server and three
// node agents as their own processes, each with its datacenter, node class
// and meta from its client config. Checks, in sequence, that:
//   - every node's class and meta reach the server (what constraints read);
//   - a constraint and distinct_hosts place only where Nomad's docs say, and
//     `job plan` (API and CLI) shows the very placements `job run` makes;
//   - an affinity picks the preferred node; a spread follows its targets;
//   - version / regexp / set_contains constraints over attributes and meta;
//   - a placement nothing satisfies names its constraint and how many nodes
//     it filtered, in the evaluation and in `job plan`;
//   - `job run -check-index` refuses a job that changed since its plan;
//   - `job plan` exits 0 with nothing to change and 1 with changes.

import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/cli/index.js';
import type * as Api from '../../src/api/index.js';
import type { Evaluation, JobPlanResponse } from '../../src/api/index.js';
import { nomadJob, registration } from '../support/nomad-jobs.js';
import { AgentProcess, cleanupUnder, TestServer, TOKENS, until } from '../support/runtime-cluster.js';

const dir = mkdtempSync('/tmp/brt-place-');
let server: TestServer;
const agents: AgentProcess[] = [];
/** Node name -> node ID. */
const ids: Record<string, string> = {};

const NODES = [
  { name: 'web-1', datacenter: 'dc1', nodeClass: 'fast', meta: { rack: 'r1', tags: 'ssd,gpu', sw: '1.4.2' } },
  { name: 'web-2', datacenter: 'dc1', nodeClass: 'slow', meta: { rack: 'r1', tags: 'ssd', sw: '1.2.0' } },
  { name: 'web-3', datacenter: 'dc2', nodeClass: 'slow', meta: { rack: 'r2', tags: 'hdd', sw: '2.0.0' } },
];

/** A service job whose tasks only sleep (raw_exec), with `rules` at the job level and `groupRules` on its group. */
function job(id: string, count: number, rules: Record<string, unknown> = {}, groupRules: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    datacenters: ['dc1', 'dc2'],
    ...rules,
    groups: [
      {
        name: 'g',
        count,
        ...groupRules,
        tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['600'] }, resources: { cpuMhz: 20, memoryMb: 20 } }],
      },
    ],
  };
}

const nameOf = (nodeId: string): string => Object.entries(ids).find(([, id]) => id === nodeId)?.[0] ?? nodeId;

async function plan(spec: Record<string, unknown>): Promise<JobPlanResponse> {
  return server.ok<JobPlanResponse>('PUT', `/v1/job/${String(spec['id'])}/plan`, { Job: nomadJob(spec), Diff: true });
}

/** Runs the job; returns its evaluation and the node names of its live allocations, sorted. */
async function run(spec: Record<string, unknown>): Promise<{ evaluation: Evaluation; nodes: string[]; allocs: Api.Allocation[] }> {
  const evaluation = await server.submit(spec);
  const stubs = (await server.ok<Api.AllocationListStub[]>('GET', `/v1/job/${String(spec['id'])}/allocations`)).filter((a) => a.DesiredStatus === 'run');
  const allocs = await Promise.all(stubs.map((a) => server.ok<Api.Allocation>('GET', `/v1/allocation/${a.ID}`)));
  return { evaluation, allocs, nodes: allocs.map((a) => nameOf(a.NodeID)).sort() };
}

const plannedNodes = (p: JobPlanResponse): string[] => (p.BerthPlacements ?? []).map((x) => x.NodeName).sort();

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli([...argv, '--address', server.url, '--token', TOKENS.management], { io: { stdout: (t) => void (out += t), stderr: (t) => void (err += t) } });
  return { code, out, err };
}

before(async () => {
  server = new TestServer(path.join(dir, 'server'));
  await server.start();
  for (const n of NODES) {
    const agent = new AgentProcess(server, {
      dataDir: path.join(dir, n.name),
      nodeName: n.name,
      logLevel: 'info',
      extra: { datacenter: n.datacenter, nodeClass: n.nodeClass, meta: n.meta },
    });
    agents.push(agent);
  }
  // One at a time: the machine is shared and each agent starts its own runtime.
  for (const a of agents) await a.start();
});

after(async () => {
  for (const a of agents) await a.drain().catch(() => undefined);
  for (const a of agents) await a.kill().catch(() => undefined);
  await server?.stop();
  cleanupUnder(dir);
});

describe('constraints, affinity and spread on three real nodes', { timeout: 300_000 }, () => {
  it("reports each node's datacenter, class and meta to the server", async () => {
    const nodes = await until('three ready nodes with their meta', async () => {
      const list = await server.ok<Api.NodeListStub[]>('GET', '/v1/nodes');
      if (list.length !== 3 || !list.every((n) => n.Status === 'ready')) return undefined;
      const full = await Promise.all(list.map((n) => server.ok<Api.Node>('GET', `/v1/node/${n.ID}`)));
      return full.every((n) => n.Meta?.['rack']) ? full : undefined;
    }, 60_000);
    for (const n of nodes) ids[n.Name] = n.ID;
    const web1 = nodes.find((n) => n.Name === 'web-1');
    assert.equal(web1?.NodeClass, 'fast');
    assert.equal(web1?.Datacenter, 'dc1');
    assert.deepEqual(web1?.Meta, NODES[0]!.meta);
  });

  it('a constraint with distinct_hosts places one allocation on each matching node, and plan showed exactly that', async () => {
    const spec = job('racked', 2, { constraints: [{ attribute: '${meta.rack}', value: 'r1' }, { distinctHosts: true }] });
    const p = await plan(spec);
    assert.equal(p.Diff?.Type, 'Added');
    assert.equal(p.JobModifyIndex, 0);
    assert.deepEqual(plannedNodes(p), ['web-1', 'web-2']);
    const r = await run(spec);
    assert.equal(r.evaluation.Status, 'complete');
    assert.deepEqual(r.nodes, plannedNodes(p), 'job run placed what job plan showed');
    const metrics = r.allocs[0]!.Metrics;
    assert.equal(metrics?.ConstraintFiltered?.['${meta.rack} = r1'], 1, 'the placement metrics say web-3 was filtered by the rack constraint');
  });

  it('an affinity picks the preferred class; a negative one avoids a rack', async () => {
    const prefer = job('fast-pref', 1, { affinities: [{ attribute: '${node.class}', value: 'fast', weight: 100 }] });
    const p = await plan(prefer);
    assert.deepEqual(plannedNodes(p), ['web-1']);
    const r = await run(prefer);
    assert.deepEqual(r.nodes, ['web-1']);
    assert.equal(r.allocs[0]!.Metrics?.ScoreMetaData?.[0]?.Scores?.['node-affinity'], 1);

    const avoid = job('avoid-r1', 1, { affinities: [{ attribute: '${meta.rack}', value: 'r1', weight: -100 }] });
    assert.deepEqual(plannedNodes(await plan(avoid)), ['web-3']);
    assert.deepEqual((await run(avoid)).nodes, ['web-3']);
  });

  it('a spread with targets splits allocations across datacenters by percentage', async () => {
    const spec = job('spread-dc', 4, {}, { spreads: [{ attribute: '${node.datacenter}', targets: [{ value: 'dc1', percent: 50 }, { value: 'dc2', percent: 50 }] }] });
    const p = await plan(spec);
    const r = await run(spec);
    assert.deepEqual(r.nodes, plannedNodes(p));
    const dcOf = (name: string): string => NODES.find((n) => n.name === name)!.datacenter;
    assert.deepEqual(r.nodes.map(dcOf).sort(), ['dc1', 'dc1', 'dc2', 'dc2']);
  });

  it('version, regexp and set_contains read attributes and meta as Nomad does', async () => {
    const spec = job('picky', 1, {
      constraints: [
        { attribute: '${meta.sw}', version: '>= 1.3, < 2.0' },
        { attribute: '${node.unique.name}', regexp: '^web-[0-9]$' },
        { attribute: '${meta.tags}', setContains: 'ssd' },
        { attribute: '${attr.kernel.name}', value: 'linux' },
      ],
    });
    const p = await plan(spec);
    assert.deepEqual(plannedNodes(p), ['web-1']);
    assert.deepEqual((await run(spec)).nodes, ['web-1']);
  });

  it('a placement nothing satisfies names its constraint and the nodes it filtered, in plan and in the evaluation', async () => {
    const spec = job('nowhere', 1, {}, { constraints: [{ attribute: '${meta.rack}', value: 'r9' }] });
    const p = await plan(spec);
    assert.equal(p.BerthPlacements?.length, 0);
    assert.equal(p.FailedTGAllocs?.['g']?.ConstraintFiltered?.['${meta.rack} = r9'], 3);
    const { evaluation } = await run(spec);
    assert.equal(evaluation.Status, 'blocked');
    assert.deepEqual(evaluation.FailedTGAllocs?.['g']?.ConstraintFiltered, { '${meta.rack} = r9': 3 });
    const status = await cli('job', 'status', 'nowhere');
    assert.match(status.out, /Placement Failure[\s\S]*Constraint "\$\{meta\.rack\} = r9": 3 nodes excluded by filter/);
    const evals = await cli('eval', 'status', evaluation.ID);
    assert.match(evals.out, /Failed Placements\nTask Group "g" \(failed to place 1 allocation\):\n( {2}\* .*\n)* {2}\* Constraint "\$\{meta\.rack\} = r9": 3 nodes excluded by filter\n/);
  });

  it('job plan exits 0 with nothing to change and 1 with changes; run -check-index refuses a stale index', async () => {
    const file = path.join(dir, 'racked.json');
    writeFileSync(file, JSON.stringify(job('racked', 2, { constraints: [{ attribute: '${meta.rack}', value: 'r1' }, { distinctHosts: true }] })));
    const same = await cli('job', 'plan', file);
    assert.equal(same.code, 0, same.out + same.err);
    assert.match(same.out, /Job Modify Index: [1-9]\d*/);
    const index = Number(/Job Modify Index: (\d+)/.exec(same.out)![1]);

    writeFileSync(file, JSON.stringify(job('racked', 3, { constraints: [{ attribute: '${meta.rack}', value: 'r1' }, { distinctHosts: true }] })));
    const changed = await cli('job', 'plan', file);
    assert.equal(changed.code, 1, changed.out + changed.err);
    assert.match(changed.out, /\+\/- Job: "racked"/);
    assert.match(changed.out, /\+\/- Count: "2" => "3"/);
    assert.match(changed.out, /\* Constraint "distinct_hosts": 2 nodes excluded by filter/, 'a third allocation has no host left');

    // Someone else changes the job between the plan and the run: the run is refused.
    await server.register(job('racked', 1, { constraints: [{ attribute: '${meta.rack}', value: 'r1' }] }));
    const stale = await server.call('PUT', '/v1/jobs', registration(job('racked', 3), { checkIndex: index }));
    assert.equal(stale.status, 409, stale.text);
    assert.match(stale.text, /^Enforcing job modify index \d+: job exists with conflicting job modify index: \d+$/);
    const bad = await cli('job', 'plan', path.join(dir, 'missing.hcl'));
    assert.equal(bad.code, 255);
  });
});
