// What a user sees when a container job cannot run: an image that is not in
// the registry (the pull error in the task events, the allocation failed,
// no container left); `privileged = true` on a node whose docker plugin
// config has `allow_privileged = false` (refused at placement, the
// evaluation saying why); and dockerd going away under a running agent (the
// node's docker driver turns unhealthy and says what is wrong). Also what a
// healthy docker driver reports of itself: Nomad's driver.docker.* attributes.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Evaluation } from '../../src/api/index.js';
import { startDockerRig, type DockerRig } from '../../scripts/docker-rig.mjs';
import { REPO } from '../support/agent-run.js';
import { dockerApi, dockerRig, dockerSkip, testImage, type TestDocker } from '../support/docker.js';
import { assertNothingLeft, containersOf, DockerAgent, ok, until } from './_agent.js';

const skip = dockerSkip();

function batchJob(name: string, image: string, extra = ''): string {
  return `
job "${name}" {
  type = "batch"

  group "g" {
    restart {
      attempts = 0
      mode     = "fail"
    }

    reschedule {
      attempts  = 0
      unlimited = false
    }

    task "t" {
      driver = "docker"

      config {
        image   = "${image}"
        command = "true"
${extra}
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

describe('container jobs that cannot run', { skip, timeout: 600_000 }, () => {
  let rig: TestDocker;
  let agent: DockerAgent;
  const allocIds = new Set<string>();

  before(async () => {
    rig = await dockerRig();
    await testImage(rig, 'busybox');
    agent = await new DockerAgent(rig, { allowPrivileged: false }).start();
  });

  after(async () => {
    await agent?.cleanup(allocIds);
  });

  it('an image missing from the registry: the pull error is in the task events, the allocation failed, nothing is left', async () => {
    const missing = `${rig.registry}/no-such-image:1.0`;
    ok(await agent.cli(['job', 'run', '-detach', agent.jobFile('missing', batchJob('missing', missing))]), 'job run missing');
    const alloc = await agent.allocWith('missing', 'failed');
    allocIds.add(alloc.ID);
    const events = alloc.TaskStates?.['t']?.Events ?? [];
    const said = events.map((e) => `${e.Type}: ${e.DisplayMessage}`).join('\n');
    assert.ok(alloc.TaskStates?.['t']?.Failed, `the task failed:\n${said}`);
    assert.ok(
      events.some((e) => /pull/i.test(e.DisplayMessage) && e.DisplayMessage.includes('no-such-image')),
      `a task event names the image that could not be pulled:\n${said}`,
    );
    assert.deepEqual(await containersOf(rig, [alloc.ID]), [], 'no container was left');
  });

  it('privileged = true where allow_privileged = false: refused at placement, the evaluation says why', async () => {
    const node = await agent.node();
    assert.notEqual(node.Attributes?.['driver.docker.privileged.enabled'], 'true', 'the node does not offer privileged containers');
    const run = await agent.cli(['job', 'run', agent.jobFile('priv', batchJob('priv', await testImage(rig, 'busybox'), '        privileged = true'))]);
    // `job run` fails when the evaluation could not place the group, and prints why.
    const said = `${run.stdout}${run.stderr}`;
    assert.notEqual(run.code, 0, said);
    assert.match(said, /privileged/, 'the placement failure names privileged mode');
    const evals = await agent.get<Evaluation[]>('/v1/job/priv/evaluations');
    const failed = evals.find((e) => e.FailedTGAllocs && e.FailedTGAllocs['g']);
    assert.ok(failed, `an evaluation with failed placements: ${JSON.stringify(evals)}`);
    assert.match(JSON.stringify(failed.FailedTGAllocs!['g']), /privileged/, 'the reason names privileged mode');
    assert.deepEqual(await agent.allocs('priv'), [], 'no allocation was placed');
  });

  it('the agent stops clean', async () => {
    await agent.stop();
    await assertNothingLeft(agent, allocIds, 'after the agent stopped');
  });
});

describe('the docker driver as the node reports it', { skip, timeout: 300_000 }, () => {
  // A dockerd of this test's own: it is stopped under the agent, which the suite's rig must never be.
  let own: DockerRig;
  let agent: DockerAgent;

  before(async () => {
    mkdirSync(path.join(REPO, '.tmp'), { recursive: true });
    own = await startDockerRig({ dir: mkdtempSync(path.join(REPO, '.tmp', 'docker-own-')) });
    agent = await new DockerAgent({ host: own.host, socketPath: own.socketPath, registry: own.registry, sharedDir: own.sharedDir }).start();
  });

  after(async () => {
    await agent?.cleanup();
    await own?.stop();
  });

  it('reports Nomad\'s driver.docker attributes while dockerd answers', async () => {
    const { Version: ServerVersion } = await dockerApi<{ Version: string }>({ host: own.host, socketPath: own.socketPath, registry: own.registry, sharedDir: own.sharedDir }, 'GET', '/version');
    const drv = await until('the docker driver to be detected and healthy', async () => {
      const d = (await agent.node()).Drivers?.['docker'];
      return d?.Detected && d.Healthy ? d : undefined;
    });
    assert.equal(drv.Attributes?.['driver.docker'], 'true');
    assert.equal(drv.Attributes?.['driver.docker.version'], ServerVersion);
    assert.equal(drv.Attributes?.['driver.docker.privileged.enabled'], 'true');
    assert.equal(drv.Attributes?.['driver.docker.volumes.enabled'], 'true');
    const node = await agent.node();
    assert.equal(node.Attributes?.['driver.docker.version'], ServerVersion, 'driver attributes are node attributes too (constraints use them)');
  });

  it('turns unhealthy, naming the reason, when dockerd is stopped', async () => {
    await own.stop();
    const drv = await until('the docker driver to turn unhealthy', async () => {
      const d = (await agent.node()).Drivers?.['docker'];
      return d && !d.Healthy ? d : undefined;
    }, 120_000);
    assert.match(drv.HealthDescription, /docker/i, `the health description says what is wrong: ${drv.HealthDescription}`);
    assert.notEqual(drv.HealthDescription, '', 'a reason is given');
    await agent.stop();
  });
});
