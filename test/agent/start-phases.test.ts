// A dev agent's start, as whoever profiles it reads it (issue 40, bench
// `agent-start`): at --log-level debug its log tells each start phase with
// the time since its process began (and its CPU and page faults by then), in
// the order the start takes them; the API listens before the client part starts.

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { AgentRun, freePort, until } from '../support/agent-run.js';

describe('berth agent --dev --log-level debug', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bsp-'));
  let agent: AgentRun | undefined;
  after(async () => {
    await agent?.stop('SIGINT');
    rmSync(dir, { recursive: true, force: true });
  });

  it('logs its start phases in order, each with the ms since the process began', async () => {
    agent = await new AgentRun(['--dev', '--data-dir', path.join(dir, 'a'), '--port', String(await freePort()), '--log-level', 'debug']).start();
    const res = await fetch(`${agent.addr}/v1/jobs`, { headers: { authorization: `Bearer ${agent.token}` } });
    assert.equal(res.status, 200, await res.text());
    const phases = readFileSync(path.join(dir, 'a', 'agent.log'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"start phase"'))
      .map((l) => JSON.parse(l) as { phase: string; ms: number; cpuMs: number; minorFaults: number });
    assert.deepEqual(
      phases.map((p) => p.phase),
      ['agent modules evaluated', 'config read, log opened', 'server starting', 'server API routes registered', 'listening', 'server started', 'client starting', 'client started', 'ready lines printed'],
    );
    for (let i = 1; i < phases.length; i++) {
      assert.ok(phases[i]!.ms >= phases[i - 1]!.ms, `${phases[i]!.phase} (${phases[i]!.ms} ms) comes after ${phases[i - 1]!.phase} (${phases[i - 1]!.ms} ms)`);
      // The process's CPU and page faults so far, which only grow.
      assert.ok(phases[i]!.cpuMs >= phases[i - 1]!.cpuMs && phases[i]!.minorFaults >= phases[i - 1]!.minorFaults, JSON.stringify(phases.slice(i - 1, i + 1)));
    }
    assert.ok(phases[0]!.ms > 0);
  });

  it('warms its job path once its node is registered and connected, not beside the registration', async () => {
    // The node's registration is a request to this same event loop: a warm-up round before it
    // put off the node, and the placement of a job submitted as the ready lines were printed.
    const log = (): { msg: string; component?: string }[] =>
      readFileSync(path.join(dir, 'a', 'agent.log'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { msg: string; component?: string });
    const lines = await until('the job path warm-up', () => {
      const all = log();
      return all.some((l) => l.msg === 'job path warmed') ? all : undefined;
    });
    const at = (msg: string, component?: string): number => lines.findIndex((l) => l.msg === msg && (component === undefined || l.component === component));
    assert.ok(at('connected to the server', 'node-connection') >= 0, 'the node connected');
    assert.ok(at('connected to the server', 'node-connection') < at('job path warmed'), 'the node connected before the warm-up');
    assert.ok(at('node registered', 'node-registration') < at('job path warmed'), 'the node registered before the warm-up');
  });
});
