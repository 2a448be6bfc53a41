// `berth job run` tells the truth about how its allocations ended, as the
// real binary against a real Server whose stand-in nodes heartbeat as agents
// do until the test silences one (its agent hung or its machine died): the
// server marks it down after the heartbeat TTL and its allocation lost.
//   - lost with no other node to go to: the monitor names the group, the
//     node and why, shows the placement failure, and exits 1 (it once said
//     "0 allocations running" and exited 0);
//   - lost and replaced on another node: the replacement is followed, and
//     `job run` succeeds once it runs, saying one was lost and replaced;
//   - a group placed only in part (the rest blocked): exit 1 once the placed
//     allocation runs (it once exited 0), as Nomad's job run fails on
//     placement failures.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Allocation, AllocationListStub } from '../../src/api/index.js';
import type { Node } from '../../src/structs/index.js';
import { startBerth, type BerthProcess } from './_berth.js';
import { reportAllocations, startCluster, TOKENS, type Cluster } from './_cluster.js';
import { eventually } from '../support/eventually.js';

let c: Cluster;
let files: string;
/** The nodes that heartbeat, as their agents would, every 200 ms (the TTL is 2 s). */
const beating = new Set<string>();
let beats: NodeJS.Timeout | undefined;

const jobHcl = (id: string, group: string, extra = ''): string => `job "${id}" {
  group "${group}" {
${extra}
    task "work" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
    }
  }
}
`;

function run(id: string, text: string): BerthProcess {
  const file = join(files, `${id}.hcl`);
  writeFileSync(file, text);
  return startBerth(['job', 'run', file], { env: { BERTH_ADDR: c.url, BERTH_TOKEN: TOKENS.management, NO_COLOR: '1' } });
}

async function live(name: string): Promise<Node> {
  const node = await c.registerNode(name);
  beating.add(node.id);
  return node;
}

const allocsOf = async (jobId: string): Promise<AllocationListStub[]> => (await c.call<AllocationListStub[]>('GET', `/v1/job/${jobId}/allocations`)).body;

/** The job's allocation on `nodeId` once it is placed there (job run then follows it). */
const placedOn = (jobId: string, nodeId: string, what: string): Promise<AllocationListStub> =>
  eventually(what, async () => (await allocsOf(jobId)).find((a) => a.NodeID === nodeId && a.DesiredStatus === 'run'));

const short = (id: string): string => id.slice(0, 8);

describe('job run when allocations cannot run where they were placed', () => {
  before(async () => {
    files = mkdtempSync(join(tmpdir(), 'berth-outcome-'));
    c = await startCluster({ heartbeatTtlMs: 2_000 });
    beats = setInterval(() => {
      for (const id of beating) void c.heartbeat(id).catch(() => undefined);
    }, 200);
  });
  after(async () => {
    clearInterval(beats);
    await c?.close();
    rmSync(files, { recursive: true, force: true });
  });

  it("a node that goes down with no other node to go to: lost, which group and why, exit 1", async () => {
    const node = await live('gone-1');
    const proc = run('lonely', jobHcl('lonely', 'web'));
    const alloc = await placedOn('lonely', node.id, 'the allocation placed on gone-1');
    beating.delete(node.id);
    const res = await proc.exited;
    assert.equal(res.code, 1, res.stdout + res.stderr);
    const id = short(alloc.ID);
    assert.match(res.stdout, new RegExp(`Allocation "${id}" status changed: "pending" -> "lost" \\(node is down\\)`));
    assert.match(res.stdout, new RegExp(`==> Allocation "${id}" of group "web" lost: node "gone-1" \\(${short(node.id)}\\) is down: missed heartbeats for \\d+ s`));
    assert.match(res.stdout, /Task group "web" \(failed to place 1 allocation\):\n\s+\* 1 node was down\n/);
    assert.match(res.stdout, /==> Evaluation "[0-9a-f]{8}" is blocked; it is retried when the cluster changes/);
    assert.doesNotMatch(res.stdout, /allocations? running/);
    assert.match(res.stderr, new RegExp(`^error: allocation ${id} of group "web" lost: node "gone-1" \\(${short(node.id)}\\) is down: missed heartbeats for \\d+ s; no replacement could be placed: 1 node was down$`, 'm'));
  });

  it('a node that goes down while another is ready: the replacement is followed until it runs, exit 0', async () => {
    const first = await live('moved-1');
    const proc = run('moved', jobHcl('moved', 'api'));
    const lost = await placedOn('moved', first.id, 'the allocation placed on moved-1');
    const second = await live('moved-2');
    beating.delete(first.id);
    const replacement = await placedOn('moved', second.id, 'the replacement placed on moved-2');
    assert.equal((await c.call<Allocation>('GET', `/v1/allocation/${replacement.ID}`)).body.PreviousAllocation, lost.ID);
    // Act as moved-2's agent: its tasks start.
    await reportAllocations(c, second.id, 'running', (a) => a.jobId === 'moved');
    const res = await proc.exited;
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, new RegExp(`==> Allocation "${short(lost.ID)}" of group "api" lost: node "moved-1" \\(${short(first.id)}\\) is down`));
    assert.match(res.stdout, new RegExp(`Allocation "${short(replacement.ID)}" created: node "${short(second.id)}", group "api" \\(replaces lost allocation "${short(lost.ID)}"\\)`));
    assert.match(res.stdout, new RegExp(`Allocation "${short(replacement.ID)}" status changed: "pending" -> "running"`));
    assert.match(res.stdout, /==> 1 allocation running \(1 lost and replaced\)\n/);
  });

  it('a group placed only in part: exit 1 once the placed allocation runs, naming what was not placed', async () => {
    // One node, room for one of the two: the second waits (blocked) for the cluster to change.
    const node = await live('part-1');
    const pinned = '    count = 2\n    constraint {\n      attribute = "${node.unique.name}"\n      value     = "part-1"\n    }\n';
    const proc = run('half', jobHcl('half', 'db', pinned).replace('      config {', '      resources {\n        cpu = 3000\n      }\n      config {'));
    await placedOn('half', node.id, 'one allocation placed on part-1');
    await reportAllocations(c, node.id, 'running', (a) => a.jobId === 'half');
    const res = await proc.exited;
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stdout, /Task group "db" \(failed to place 1 allocation\):/);
    assert.match(res.stdout, /==> 1 allocation running\n/);
    assert.match(res.stdout, /is still blocked: not every allocation could be placed/);
    assert.match(res.stderr, /^error: placement failed: group "db": 1 allocation not placed: .*Resources exhausted on 1 node; Dimension "(cpu|memory)" exhausted on 1 node/m);
  });
});
