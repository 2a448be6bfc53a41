// A Nomad client nobody here wrote, against a real dev agent: mcp-nomad
// (github.com/kocierik/mcp-nomad, MIT), a Model Context Protocol server for
// Nomad written in Go, from npm as @kocierik/mcp-nomad-linux-x64 (a
// devDependency pinned to 0.3.1: a static binary, no install script, nothing
// fetched at run time). It speaks Nomad's /v1 HTTP API with its own Go
// structs (X-Nomad-Token, PascalCase JSON decoded by encoding/json), so a
// route or a field that is not where Nomad has it shows as a failed tool.
// The test runs it as an MCP host would (stdio, NOMAD_ADDR and NOMAD_TOKEN
// pointing at the agent) and checks what its user would be shown.
//
// Calls it makes here: GET /v1/status/leader (its start-up check),
// /v1/operator/raft/configuration, /v1/regions, /v1/nodes, POST
// /v1/jobs/parse and /v1/jobs, GET /v1/jobs, /v1/job/:id, /summary,
// /allocations, /evaluations, /deployments, /v1/allocation/:id,
// /v1/client/fs/logs/:alloc?plain=true, /v1/deployments, /v1/volumes,
// DELETE /v1/job/:id?purge=true.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { AgentRun, cleanEnv, freePort, until } from '../support/agent-run.js';
import { McpStdioClient, type ToolResult } from '../support/mcp-stdio.js';

const require = createRequire(import.meta.url);

/** The mcp-nomad binary from the devDependency, or why there is none here. */
function mcpNomadBinary(): { bin: string } | { skip: string } {
  if (process.platform !== 'linux' || process.arch !== 'x64') return { skip: `@kocierik/mcp-nomad-linux-x64 is built for linux-x64, not ${process.platform}-${process.arch}` };
  const bin = require.resolve('@kocierik/mcp-nomad-linux-x64/package.json').replace(/package\.json$/, 'bin/mcp-nomad');
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run npm ci`);
  return { bin };
}

const found = mcpNomadBinary();

const JOB_HCL = `job "mcp-hello" {
  datacenters = ["dc1"]
  type        = "service"

  # Nomad gives a service job without one the default update strategy (and so a
  # deployment); Berth does not yet, so this job says it.
  update {
    max_parallel     = 1
    min_healthy_time = "1s"
  }

  group "web" {
    count = 1

    task "hello" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello from berth; while true; do sleep 1; done"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`;

let agent: AgentRun | undefined;
let mcp: McpStdioClient | undefined;

/** Runs a tool and parses its JSON text, failing with the tool's own words when it failed. */
async function tool<T = unknown>(name: string, args: Record<string, unknown> = {}): Promise<T> {
  const r: ToolResult = await mcp!.call(name, args);
  assert.equal(r.isError, false, `${name} failed: ${r.text}\nmcp-nomad stderr:\n${mcp!.stderr.slice(-2000)}`);
  return JSON.parse(r.text) as T;
}

interface AllocView {
  ID: string;
  JobID: string;
  TaskGroup: string;
  NodeID: string;
  ClientStatus: string;
  DesiredStatus: string;
  TaskStates: Record<string, { State: string }>;
}

describe('mcp-nomad, a Nomad MCP server in Go from npm, against a dev agent', { timeout: 300_000, ...('skip' in found ? { skip: found.skip } : {}) }, () => {
  before(async () => {
    agent = await new AgentRun(['--dev', '--port', String(await freePort())]).start();
    // Only what it reads: the agent's address and token (no region, no TLS).
    const env = { PATH: cleanEnv()['PATH'] ?? '/usr/bin:/bin', NOMAD_ADDR: agent.addr, NOMAD_TOKEN: agent.token };
    mcp = await new McpStdioClient((found as { bin: string }).bin, [], { env }).start();
  });

  after(async () => {
    await mcp?.close();
    await agent?.stop('SIGINT');
  });

  it('starts (its start-up check is GET /v1/status/leader) and offers its job, node and allocation tools', async () => {
    assert.equal(mcp!.serverInfo.name, 'Nomad MCP');
    const tools = await mcp!.tools();
    for (const t of ['list_nodes', 'run_job', 'get_job', 'get_job_allocations', 'get_allocation_logs', 'stop_job']) assert.ok(tools.includes(t), `no ${t} in ${tools.join(', ')}`);
  });

  it('names the cluster leader from /v1/operator/raft/configuration and the region from /v1/regions', async () => {
    const servers = await tool<Array<{ Address: string; Leader: boolean; Voter: boolean }>>('get_cluster_leader');
    assert.equal(servers.length, 1);
    assert.equal(servers[0]!.Leader, true);
    assert.equal(servers[0]!.Voter, true);
    assert.deepEqual(await tool('list_regions'), ['global']);
  });

  it('lists the dev node as ready', async () => {
    const nodes = await tool<Array<{ id: string; name: string; status: string; datacenter: string }>>('list_nodes');
    assert.equal(nodes.length, 1);
    assert.match(nodes[0]!.id, /^[0-9a-f]{8}-[0-9a-f]{4}-/);
    assert.equal(nodes[0]!.status, 'ready');
    assert.equal(nodes[0]!.datacenter, 'dc1');
  });

  it('runs an HCL job (POST /v1/jobs/parse, then POST /v1/jobs) and shows it as Nomad would', async () => {
    const run = await tool<{ EvalID: string; JobModifyIndex: number }>('run_job', { job_spec: JOB_HCL });
    assert.match(run.EvalID, /^[0-9a-f]{8}-/);
    assert.ok(run.JobModifyIndex > 0);
    const job = await tool<{ ID: string; Type: string; Datacenters: string[]; TaskGroups: Array<{ Name: string; Count: number; Tasks: Array<{ Name: string; Driver: string; Resources: { CPU: number; MemoryMB: number } }> }> }>(
      'get_job',
      { job_id: 'mcp-hello' },
    );
    assert.equal(job.ID, 'mcp-hello');
    assert.equal(job.Type, 'service');
    assert.deepEqual(job.Datacenters, ['dc1']);
    assert.equal(job.TaskGroups[0]!.Name, 'web');
    assert.equal(job.TaskGroups[0]!.Count, 1);
    assert.equal(job.TaskGroups[0]!.Tasks[0]!.Driver, 'raw_exec');
    assert.deepEqual({ cpu: job.TaskGroups[0]!.Tasks[0]!.Resources.CPU, mem: job.TaskGroups[0]!.Tasks[0]!.Resources.MemoryMB }, { cpu: 50, mem: 32 });
    const listed = await tool<Array<{ ID: string; Type: string; JobSummary: { Summary: Record<string, unknown> } | null }>>('list_jobs');
    assert.deepEqual(
      listed.map((j) => j.ID),
      ['mcp-hello'],
    );
    assert.ok(listed[0]!.JobSummary?.Summary['web'], 'list_jobs shows the job summary of group web (GET /v1/job/:id/summary)');
    const evals = await tool<Array<{ ID: string; Status: string }>>('get_job_evaluations', { job_id: 'mcp-hello' });
    assert.ok(evals.some((e) => e.ID === run.EvalID));
  });

  it("shows the job's allocation running and the task's output from /v1/client/fs/logs", async () => {
    const alloc = await until('mcp-hello has a running allocation, by get_job_allocations', async () => {
      const allocs = await tool<AllocView[]>('get_job_allocations', { job_id: 'mcp-hello' });
      return allocs.find((a) => a.ClientStatus === 'running');
    });
    assert.equal(alloc.JobID, 'mcp-hello');
    assert.equal(alloc.TaskGroup, 'web');
    const one = await tool<AllocView>('get_allocation', { allocation_id: alloc.ID });
    assert.equal(one.ID, alloc.ID);
    assert.equal(one.DesiredStatus, 'run');
    assert.equal(one.TaskStates['hello']?.State, 'running');
    const logs = await until('the task printed its line', async () => {
      const r = await tool<{ logs: string }>('get_allocation_logs', { allocation_id: alloc.ID, task: 'hello' });
      return r.logs.includes('hello from berth') ? r.logs : undefined;
    });
    assert.match(logs, /^hello from berth$/m);
    // tail=5 asks for origin=end with offset 1000 (5 lines of 200 bytes): more than the file holds.
    const tail = await tool<{ logs: string }>('get_allocation_logs', { allocation_id: alloc.ID, task: 'hello', tail: 5 });
    assert.match(tail.logs, /hello from berth/);
    const summary = await tool<{ Summary: Record<string, { Running: number }> }>('get_job_summary', { job_id: 'mcp-hello' });
    assert.equal(summary.Summary['web']?.Running, 1);
  });

  it("lists the job's deployment, and the volumes (none)", async () => {
    // list_deployments decodes into its own summary struct (snake_case job_id, which Nomad's JobID does not fill).
    const deployments = await tool<Array<{ id: string; namespace: string; status: string }>>('list_deployments');
    assert.equal(deployments.length, 1, JSON.stringify(deployments));
    assert.match(deployments[0]!.id, /^[0-9a-f]{8}-/);
    assert.equal(deployments[0]!.namespace, 'default');
    const ofJob = await tool<Array<{ ID: string; JobID: string; Status: string; TaskGroups: Record<string, { DesiredTotal: number }> }>>('get_job_deployments', { job_id: 'mcp-hello' });
    assert.deepEqual(
      ofJob.map((d) => [d.ID, d.JobID, d.TaskGroups['web']?.DesiredTotal]),
      [[deployments[0]!.id, 'mcp-hello', 1]],
    );
    const volumes = await mcp!.call('list_volumes');
    assert.equal(volumes.isError, false, volumes.text);
  });

  it('stops and purges the job (DELETE /v1/job/:id?purge=true); then it is gone', async () => {
    const stopped = await tool<{ EvalID: string }>('stop_job', { job_id: 'mcp-hello', purge: true });
    assert.match(stopped.EvalID, /^[0-9a-f]{8}-/);
    const gone = await mcp!.call('get_job', { job_id: 'mcp-hello' });
    assert.equal(gone.isError, true);
    assert.match(gone.text, /404/);
  });
});
