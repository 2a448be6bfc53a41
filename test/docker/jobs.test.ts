// Docker job files as Nomad's docs write them, on a dev agent with the docker
// plugin configured: the image by registry name, `ports`, `volumes`, `mount`,
// `privileged`, a template rendered into `local/`; what the task sees inside
// its container (/alloc, /local, /secrets, NOMAD_* and the image's own PATH,
// not the agent's); a port published in the default (host) group network
// mode and one mapped in group mode "bridge" (the pause container's namespace
// attached by the CNI bridge), both answering on 127.0.0.1; and after
// `job stop` no container of either allocation is left.

import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Allocation, PortMapping } from '../../src/api/index.js';
import {
  ALLOC_LABEL, containersNamed, dockerApi, dockerRig, dockerSkip, PAUSE_IMAGE, testImage, waitForContainerOutput, type TestDocker,
} from '../support/docker.js';
import { assertNothingLeft, containersOf, DockerAgent, ok, until } from './_agent.js';

const skip = dockerSkip();
const tag = (process.pid % 100000).toString(36);
const BRIDGE = `bdk${tag}`;
const NET = `10.${200 + (process.pid % 50)}.${process.pid % 250}`;

/** The busybox image's PATH (Docker Hub's): what the task must see instead of the agent's. */
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

function envJob(image: string, hostDir: string): string {
  return `
job "inside" {
  group "inside" {
    network {
      port "http" {
        to = 8080
      }
    }

    task "web" {
      driver = "docker"

      config {
        image      = "${image}"
        command    = "sh"
        args       = ["-c", "env | sort > /alloc/env.txt; echo started; exec httpd -f -p 8080 -h /local/www"]
        ports      = ["http"]
        privileged = true
        volumes    = ["${hostDir}:/extra"]

        mount {
          type     = "bind"
          source   = "local/mnt"
          target   = "/mnt/bound"
          readonly = true
        }
      }

      template {
        data        = "hello from {{ env \\"NOMAD_ALLOC_ID\\" }}\\n"
        destination = "local/www/index.html"
      }

      template {
        data        = "mounted read-only\\n"
        destination = "local/mnt/note.txt"
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

function bridgeJob(image: string): string {
  return `
job "bridged" {
  group "bridged" {
    network {
      mode = "bridge"
      port "http" {
        to = 8080
      }
    }

    task "web" {
      driver = "docker"

      config {
        image   = "${image}"
        command = "sh"
        args    = ["-c", "mkdir -p /tmp/www && echo \\"bridged $NOMAD_ALLOC_ID\\" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
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

interface Inspect {
  Id: string;
  Name: string;
  Config: { Env: string[]; Image: string; Labels: Record<string, string> };
  HostConfig: { Privileged: boolean; NetworkMode: string; PortBindings: Record<string, Array<{ HostIp: string; HostPort: string }>> | null };
  Mounts: Array<{ Source: string; Destination: string; RW: boolean }>;
  State: { Running: boolean };
}

describe('docker job files on a dev agent', { skip, timeout: 600_000 }, () => {
  let rig: TestDocker;
  let agent: DockerAgent;
  let busybox = '';
  let hostDir = '';
  const allocIds = new Set<string>();
  let inside: Allocation;
  let container: Inspect;

  before(async () => {
    rig = await dockerRig();
    busybox = await testImage(rig, 'busybox');
    await testImage(rig, 'pause');
    agent = new DockerAgent(rig, {
      extraConfig: `client {\n  bridge_network_name   = "${BRIDGE}"\n  bridge_network_subnet = "${NET}.0/24"\n}\n`,
    });
    hostDir = path.join(agent.dir, 'extra');
    mkdirSync(hostDir);
    writeFileSync(path.join(hostDir, 'from-host.txt'), 'a host directory via volumes\n');
    await agent.start();
  });

  after(async () => {
    await agent?.cleanup(allocIds);
  });

  /** The inspected container of an allocation's task `task` (Nomad names it `<task>-<alloc ID>`). */
  async function containerOf(allocId: string, task: string): Promise<Inspect> {
    const c = await until(`the ${task} container of ${allocId} to run`, async () => {
      const list = await containersNamed(rig, `${task}-${allocId}`);
      return list.find((x) => x.State === 'running');
    });
    return dockerApi<Inspect>(rig, 'GET', `/containers/${c.Id}/json`);
  }

  /** A file the task wrote into the shared alloc dir, through the API (Nomad's fs cat). */
  async function cat(allocId: string, file: string): Promise<string> {
    const r = await agent.call<string>('GET', `/v1/client/fs/cat/${allocId}?path=${encodeURIComponent(file)}`);
    return r.status === 200 ? String(r.body) : '';
  }

  it('runs a docker task from an image named by registry, with Nomad\'s labels, privileged, its binds and mounts', async () => {
    ok(await agent.cli(['job', 'run', '-detach', agent.jobFile('inside', envJob(busybox, hostDir))]), 'job run inside');
    inside = await agent.allocWith('inside', 'running');
    allocIds.add(inside.ID);
    container = await containerOf(inside.ID, 'web');
    await waitForContainerOutput(rig, container.Id, /started/);
    assert.equal(container.Config.Image, busybox, 'the image as the job file names it');
    assert.equal(container.Config.Labels[ALLOC_LABEL], inside.ID, 'Nomad\'s alloc_id label');
    assert.equal(container.HostConfig.Privileged, true);
    const dest = (d: string) => container.Mounts.find((m) => m.Destination === d);
    for (const d of ['/alloc', '/local', '/secrets']) assert.ok(dest(d), `${d} is bound into the container: ${JSON.stringify(container.Mounts)}`);
    assert.equal(dest('/extra')?.Source, hostDir, '`volumes` binds the host directory');
    assert.ok(dest('/mnt/bound')?.Source.endsWith('/web/local/mnt'), '`mount` with a relative source is under the task directory');
    assert.equal(dest('/mnt/bound')?.RW, false, 'readonly = true');
  });

  it('the task sees /alloc, /local, /secrets, NOMAD_* and the image PATH, not the agent\'s', async () => {
    assert.ok(inside, 'the allocation of job "inside" runs (the first step)');
    const env = await until('the task to write its environment', async () => {
      const text = await cat(inside.ID, 'alloc/env.txt');
      return text.includes('PATH=') ? text : undefined;
    });
    const vars = new Map(env.split('\n').filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const));
    assert.equal(vars.get('NOMAD_ALLOC_DIR'), '/alloc');
    assert.equal(vars.get('NOMAD_TASK_DIR'), '/local');
    assert.equal(vars.get('NOMAD_SECRETS_DIR'), '/secrets');
    assert.equal(vars.get('NOMAD_ALLOC_ID'), inside.ID);
    assert.equal(vars.get('NOMAD_JOB_NAME'), 'inside');
    assert.equal(vars.get('NOMAD_TASK_NAME'), 'web');
    assert.equal(vars.get('NOMAD_PORT_http'), '8080', 'the port inside the container is `to`');
    assert.equal(vars.get('PATH'), IMAGE_PATH, 'the image\'s PATH applies');
    assert.notEqual(vars.get('PATH'), process.env['PATH']);
  });

  it('publishes a port in the default network mode on 127.0.0.1 and serves the template rendered into local/', async () => {
    assert.ok(inside, 'the allocation of job "inside" runs (the first step)');
    // The allocation's host port (in host mode Berth's API shows it as To too; the container side is the group's `to`).
    const http = inside.AllocatedResources?.Shared.Ports?.find((p: PortMapping) => p.Label === 'http');
    assert.ok(http && http.Value > 0, JSON.stringify(inside.AllocatedResources?.Shared.Ports));
    const bindings = container.HostConfig.PortBindings?.['8080/tcp'];
    assert.deepEqual(bindings, [{ HostIp: http.HostIP, HostPort: String(http.Value) }], 'docker publishes the allocation\'s host port to `to`');
    const body = await until(`the task to answer on 127.0.0.1:${http.Value}`, async () => {
      const res = await fetch(`http://127.0.0.1:${http.Value}/index.html`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
      return res?.ok ? res.text() : undefined;
    });
    assert.equal(body, `hello from ${inside.ID}\n`);
  });

  it('group network mode "bridge": the task joins the pause container and its port answers on 127.0.0.1', async () => {
    ok(await agent.cli(['job', 'run', '-detach', agent.jobFile('bridged', bridgeJob(busybox))]), 'job run bridged');
    const alloc = await agent.allocWith('bridged', 'running');
    allocIds.add(alloc.ID);
    const web = await containerOf(alloc.ID, 'web');
    const [pause] = await containersNamed(rig, `nomad_init_${alloc.ID}`);
    assert.ok(pause, 'a pause container holds the group\'s namespace, named as Nomad names it');
    assert.equal(pause.Image, PAUSE_IMAGE, 'made from the plugin config\'s infra_image');
    assert.equal(web.HostConfig.NetworkMode, `container:${pause.Id}`);
    const http = alloc.AllocatedResources?.Shared.Ports?.find((p: PortMapping) => p.Label === 'http');
    assert.ok(http && http.To === 8080, JSON.stringify(alloc.AllocatedResources?.Shared.Ports));
    const body = await until(`the bridged task to answer on 127.0.0.1:${http.Value}`, async () => {
      const res = await fetch(`http://127.0.0.1:${http.Value}/index.html`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
      return res?.ok ? res.text() : undefined;
    });
    assert.equal(body, `bridged ${alloc.ID}\n`);
  });

  it('job stop removes the containers of both jobs, the pause container too, and the agent stops clean', async () => {
    ok(await agent.cli(['job', 'stop', 'inside']), 'job stop inside');
    ok(await agent.cli(['job', 'stop', 'bridged']), 'job stop bridged');
    await until('no container of either allocation, pause container included', async () => (await containersOf(rig, allocIds)).length === 0);
    await agent.stop();
    await assertNothingLeft(agent, allocIds, 'after job stop and the agent stopped');
  });
});
