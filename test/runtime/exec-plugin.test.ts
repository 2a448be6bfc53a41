// The hostpath CSI plugin as an `exec` system job (its own mount and PID
// namespaces, chrooted, the repository and its data directory bound in as
// host volumes, its mount root bound with bidirectional propagation), with
// `exec` workloads: one writes a file into a CSI volume at /data, a second
// reads it back, through a real Server and an agent process.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub, CSIPlugin, CSIVolume } from '../../src/api/index.js';
import { volumeRequest } from '../support/csi-api.js';
import { AgentProcess, cleanupUnder, hostpathPluginJob, REPO, TestServer, until, volumeJob } from '../support/runtime-cluster.js';

const dir = mkdtempSync('/tmp/brx-');
const hpData = path.join(dir, 'hpdata');
let server: TestServer;
let agent: AgentProcess;

async function finished(jobId: string): Promise<AllocationListStub> {
  return until(
    `job ${jobId} to finish`,
    async () => (await server.ok<AllocationListStub[]>('GET', `/v1/job/${jobId}/allocations`)).find((a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed'),
    60_000,
  );
}

function trail(a: AllocationListStub): string {
  return JSON.stringify(Object.values(a.TaskStates ?? {}).flatMap((t) => (t.Events ?? []).slice(-4).map((e) => e.DisplayMessage || e.Message)));
}

before(async () => {
  mkdirSync(hpData, { recursive: true });
  server = new TestServer(path.join(dir, 'server'));
  await server.start();
  agent = new AgentProcess(server, { dataDir: path.join(dir, 'a'), nodeName: 'rt-exec-node', hostVolumes: { repo: REPO, hpdata: hpData } });
  await agent.start();
});

after(async () => {
  await agent?.drain().catch(() => undefined);
  await agent?.kill().catch(() => undefined);
  await server?.stop();
  cleanupUnder(dir);
});

describe('hostpath plugin as an exec task, exec workloads', { timeout: 120_000 }, () => {
  it('serves volumes from its chroot: written by one exec workload, read back by another', async () => {
    await server.register(hostpathPluginJob({ id: 'hostpath-plugin', driver: 'exec', dataDir: hpData }));
    await until(
      'the plugin to be healthy',
      async () => {
        const p = await server.call<CSIPlugin>('GET', '/v1/plugin/csi/hostpath');
        return p.status === 200 && p.body.NodesHealthy === 1 && p.body.ControllersHealthy === 1;
      },
      60_000,
    );
    await server.ok(
      'PUT',
      '/v1/volume/csi/xdata/create',
      volumeRequest('xdata', { pluginId: 'hostpath', name: 'xdata', capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] }),
    );
    const token = `exec-${process.pid}-${Date.now()}`;
    await server.register(volumeJob({ id: 'xwriter', type: 'batch', driver: 'exec', volumeId: 'xdata', script: `echo ${token} > /data/hello.txt` }));
    const w = await finished('xwriter');
    assert.equal(w.ClientStatus, 'complete', trail(w));
    await until('the writer claim to be released', async () => (await server.ok<CSIVolume>('GET', '/v1/volume/csi/xdata')).BerthClaims.length === 0, 30_000);

    await server.register(volumeJob({ id: 'xreader', type: 'batch', driver: 'exec', volumeId: 'xdata', script: `grep -qx ${token} /data/hello.txt` }));
    const r = await finished('xreader');
    assert.equal(r.ClientStatus, 'complete', `the reader found the writer's file: ${trail(r)}`);
    // The file lives in the plugin's data directory on the host, under the volume's directory.
    // (Searched file by file: the plugin may be rewriting its own state files meanwhile.)
    const found = readdirSync(hpData, { recursive: true, encoding: 'utf8' })
      .filter((f) => path.basename(f) === 'hello.txt')
      .filter((f) => readFileSync(path.join(hpData, f), 'utf8').trim() === token);
    assert.equal(found.length, 1, `the writer's file under ${hpData}: ${found.join(', ')}`);
  });
});
