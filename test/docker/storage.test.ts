// The storage story with containers, as a Nomad user runs it: Berth's
// hostpath CSI plugin as a privileged docker plugin job (image pulled from a
// registry by name), a volume created through its controller, a docker
// writer and a docker reader that reads back what the writer wrote, the
// agent SIGKILLed and started again (the plugin container is reattached, not
// replaced, and serves again), and at the end nothing left: no container of
// any allocation, nothing mounted, the volume's directory gone.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CSIVolume } from '../../src/api/index.js';
import { ALLOC_LABEL, dockerApi, dockerRig, dockerSkip, listContainers, type TestDocker } from '../support/docker.js';
import { assertNothingLeft, containersOf, DockerAgent, images, ok, pluginJob, until } from './_agent.js';

const skip = dockerSkip();

const VOLUME = `
id        = "shared-data"
name      = "shared-data"
type      = "csi"
plugin_id = "hostpath"

capacity_min = "10MiB"
capacity_max = "1GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}
`;

function writerJob(image: string): string {
  return `
job "writer" {
  type = "batch"

  group "writer" {
    volume "data" {
      type            = "csi"
      source          = "shared-data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    restart {
      attempts = 0
      mode     = "fail"
    }

    task "write" {
      driver = "docker"

      config {
        image   = "${image}"
        command = "sh"
        args    = ["-c", "echo \\"written by $NOMAD_ALLOC_ID\\" > /data/hello.txt"]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`;
}

function readerJob(name: string, image: string): string {
  return `
job "${name}" {
  type = "batch"

  group "reader" {
    volume "data" {
      type            = "csi"
      source          = "shared-data"
      access_mode     = "single-node-reader-only"
      attachment_mode = "file-system"
      read_only       = true
    }

    restart {
      attempts = 0
      mode     = "fail"
    }

    task "read" {
      driver = "docker"

      config {
        image   = "${image}"
        command = "cat"
        args    = ["/data/hello.txt"]
      }

      volume_mount {
        volume      = "data"
        destination = "/data"
        read_only   = true
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`;
}

interface ContainerJSON {
  Id: string;
  State: { Running: boolean };
  HostConfig: { Privileged: boolean };
  Mounts: Array<{ Source: string; Destination: string; Propagation: string; RW: boolean }>;
}

describe('the storage story with docker tasks and a docker CSI plugin', { skip, timeout: 600_000 }, () => {
  let rig: TestDocker;
  let agent: DockerAgent;
  let img: { busybox: string; plugin: string };
  let hostDir = '';
  const allocIds = new Set<string>();
  let pluginAlloc = '';
  let pluginContainer = '';
  let writerAlloc = '';
  let externalId = '';

  before(async () => {
    rig = await dockerRig();
    img = await images(rig);
    agent = new DockerAgent(rig);
    hostDir = path.join(agent.dir, 'hostpath');
    mkdirSync(hostDir);
    await agent.start();
  });

  after(async () => {
    await agent?.cleanup(allocIds);
  });

  /** The plugin task's container (Nomad names it `<task>-<alloc ID>` and labels it with the alloc ID), inspected. */
  async function containerOf(allocId: string): Promise<ContainerJSON> {
    const [c] = await until(`the container of allocation ${allocId}`, async () => {
      const list = await listContainers(rig, `${ALLOC_LABEL}=${allocId}`);
      return list.length > 0 ? list : undefined;
    });
    assert.equal(c!.Names[0], `/plugin-${allocId}`);
    return dockerApi<ContainerJSON>(rig, 'GET', `/containers/${c!.Id}/json`);
  }

  it('runs the hostpath plugin as a privileged docker plugin job, /csi bound rshared, and it becomes healthy', async () => {
    ok(await agent.cli(['job', 'run', '-detach', agent.jobFile('hostpath-plugin', pluginJob(img.plugin, hostDir))]), 'job run hostpath-plugin');
    await agent.pluginHealthy('hostpath');
    const alloc = await agent.allocWith('hostpath-plugin', 'running');
    pluginAlloc = alloc.ID;
    allocIds.add(pluginAlloc);
    const c = await containerOf(pluginAlloc);
    pluginContainer = c.Id;
    assert.equal(c.State.Running, true);
    assert.equal(c.HostConfig.Privileged, true);
    assert.ok(c.Mounts.some((m) => m.Destination === '/csi'), `the plugin's mount dir is bound at /csi: ${JSON.stringify(c.Mounts)}`);
    // Where the plugin stages and publishes (/csi itself as Nomad binds it, or a directory under it) is
    // bound rshared: the mounts it makes there must reach the host.
    assert.ok(
      c.Mounts.some((m) => (m.Destination === '/csi' || m.Destination.startsWith('/csi/')) && m.Propagation === 'rshared'),
      `a bind under /csi with rshared propagation: ${JSON.stringify(c.Mounts)}`,
    );
    assert.ok(c.Mounts.some((m) => m.Destination === '/dev'), 'a node plugin gets the host /dev');
    // The task saw the image's entrypoint with the agent's CSI_ENDPOINT inside the container.
    const { Config } = await dockerApi<{ Config: { Env: string[] } }>(rig, 'GET', `/containers/${c.Id}/json`);
    assert.ok(Config.Env.includes('CSI_ENDPOINT=unix:///csi/csi.sock'), JSON.stringify(Config.Env));
  });

  it('creates a volume through the plugin controller in the container', async () => {
    ok(await agent.cli(['volume', 'create', agent.jobFile('volume', VOLUME)]), 'volume create');
    const vol = await agent.get<CSIVolume>('/v1/volume/csi/shared-data');
    assert.equal(vol.Schedulable, true);
    externalId = vol.ExternalID;
    assert.ok(existsSync(path.join(hostDir, 'volumes', externalId)), `the plugin made the volume's directory under ${hostDir}`);
  });

  it('a docker writer writes into the volume and a docker reader reads it back', async () => {
    ok(await agent.cli(['job', 'run', '-detach', agent.jobFile('writer', writerJob(img.busybox))]), 'job run writer');
    const writer = await agent.allocWith('writer', 'complete');
    writerAlloc = writer.ID;
    allocIds.add(writerAlloc);
    assert.equal(readFileSync(path.join(hostDir, 'volumes', externalId, 'hello.txt'), 'utf8'), `written by ${writerAlloc}\n`);

    ok(await agent.cli(['job', 'run', '-detach', agent.jobFile('reader', readerJob('reader', img.busybox))]), 'job run reader');
    const reader = await agent.allocWith('reader', 'complete');
    allocIds.add(reader.ID);
    assert.equal(await agent.logs(reader.ID, 'read'), `written by ${writerAlloc}\n`);
    // Completed tasks' volume claims are released (after the node unpublished the volume), their containers removed.
    await until('the volume claims to be released', async () => {
      const vol = await agent.get<CSIVolume>('/v1/volume/csi/shared-data');
      return Object.keys(vol.ReadAllocs ?? {}).length === 0 && Object.keys(vol.WriteAllocs ?? {}).length === 0;
    });
    await assertNothingLeftOf([writerAlloc, reader.ID], 'after the writer and reader completed');
  });

  /** No container of these allocations, and no mount whose path names them. */
  async function assertNothingLeftOf(ids: string[], when: string): Promise<void> {
    await until(`no container of ${ids.join(', ')} ${when}`, async () => (await containersOf(rig, ids)).length === 0);
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n');
    for (const id of ids) {
      // The allocation's own directory (its secrets tmpfs) stays until the allocation is collected, as in
      // Nomad; the volume's staging and publish mounts must be gone once the claim is released.
      const left = mounts.map((l) => l.split(' ')[4] ?? '').filter((p) => p.includes(id) && !p.includes(`/alloc/${id}/`));
      assert.deepEqual(left, [], `volume mounts of allocation ${id} are left ${when}`);
    }
  }

  it('after kill -9 of the agent and a restart the plugin container is reattached and serves a new reader', async () => {
    const killed = await agent.run.stop('SIGKILL');
    assert.equal(killed.signal, 'SIGKILL');
    // The containers do not depend on the agent: dockerd keeps them running.
    const during = await dockerApi<ContainerJSON>(rig, 'GET', `/containers/${pluginContainer}/json`);
    assert.equal(during.State.Running, true, 'the plugin container outlives its agent');

    await agent.restart();
    await agent.pluginHealthy('hostpath');
    const plugin = await containerOf(pluginAlloc);
    assert.equal(plugin.Id, pluginContainer, 'the same container, reattached rather than started again');
    const [live] = (await agent.allocs('hostpath-plugin')).filter((a) => a.ClientStatus === 'running');
    assert.equal(live?.ID, pluginAlloc, 'the same plugin allocation runs');

    ok(await agent.cli(['job', 'run', '-detach', agent.jobFile('reader-again', readerJob('reader-again', img.busybox))]), 'job run reader-again');
    const reader = await agent.allocWith('reader-again', 'complete');
    allocIds.add(reader.ID);
    assert.equal(await agent.logs(reader.ID, 'read'), `written by ${writerAlloc}\n`);
  });

  it('with the volume deleted and the agent stopped, nothing is left: no container, no mount, no volume directory', async () => {
    ok(await agent.cli(['volume', 'delete', 'shared-data']), 'volume delete');
    assert.equal(existsSync(path.join(hostDir, 'volumes', externalId)), false, 'the plugin removed the volume directory');
    await agent.stop();
    await assertNothingLeft(agent, allocIds, 'after the agent stopped');
    assert.equal((await listContainers(rig, ALLOC_LABEL)).filter((c) => allocIds.has(c.Labels[ALLOC_LABEL] ?? '')).length, 0);
  });
});
