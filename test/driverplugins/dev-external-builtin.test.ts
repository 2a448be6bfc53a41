// `berth agent --dev --config` with client { options = { "driver.raw_exec.mode"
// = "external" } }: the agent runs `berth driver serve raw_exec` itself, and
// the examples' hostpath plugin job (which calls `berth` from PATH, the dev
// agent's shim) runs on it and becomes healthy.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import { mountsUnder, pidsWith, until } from '../support/runtime-cluster.js';
import { EXAMPLES, startAgent, tempDir, type AgentUnderTest } from '../agent/_agent.js';

describe('a dev agent running its raw_exec out of process (driver.raw_exec.mode = "external")', { timeout: 240_000 }, () => {
  let dir = '';
  let agent: AgentUnderTest;
  let nodeId = '';

  before(async () => {
    dir = await tempDir('bdd-');
    const config = path.join(dir, 'dev.hcl');
    writeFileSync(config, `client {\n  options = {\n    "driver.raw_exec.mode" = "external"\n  }\n}\n`);
    agent = await startAgent(['--dev', '--port', '0', '--data-dir', path.join(dir, 'data'), '--config', config]).ready(true);
  });

  after(async () => {
    await agent?.cli(['job', 'stop', '--purge', 'hostpath-plugin']).catch(() => undefined);
    await agent?.stop('SIGINT').catch(() => undefined);
    for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
    // Where the example plugin job keeps its volumes (a directory per node ID).
    if (nodeId) rmSync(`/var/lib/berth/hostpath/${nodeId}`, { recursive: true, force: true });
  });

  it('reports raw_exec as an external driver served by `berth driver serve raw_exec`', async () => {
    const node = await until('raw_exec from the plugin, healthy', async () =>
      (await agent.get<Api.NodeListStub[]>('/v1/nodes')).find((n) => n.Drivers?.['raw_exec']?.BerthExternal && n.Drivers['raw_exec'].Healthy),
    );
    nodeId = node.ID;
    assert.equal(node.Drivers?.['exec']?.BerthExternal, undefined, 'exec stays in process');
    assert.ok(pidsWith('driver serve raw_exec').length > 0);
  });

  it('runs the examples’ hostpath plugin job on it, with `berth` on the task’s PATH', async () => {
    const r = await agent.cli(['job', 'run', path.join(EXAMPLES, 'hostpath-plugin.hcl')]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    await until('the hostpath plugin to be healthy', async () => /Nodes Healthy\s+1\n/.test((await agent.cli(['plugin', 'status', 'hostpath'])).stdout), 120_000);
  });
});
