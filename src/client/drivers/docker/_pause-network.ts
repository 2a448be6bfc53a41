// A group network's pause container, as Nomad's docker driver makes it: a
// container from the plugin's `infra_image` with no network of docker's
// (`none`), whose namespace (its SandboxKey) Berth's network manager then
// attaches with CNI, and which the group's tasks join (`container:<id>`).
// It is named after the allocation, so a restarted agent finds it again.

import type Dockerode from 'dockerode';
import type { Clock } from '../../../lib/index.js';
import { DriverError } from '../driver-error.js';
import { LABEL, pauseContainerName } from './_container-spec.js';
import { dockerMessage } from './_engine.js';
import { ensureImage, imageReference } from './_images.js';

/** Marks a pause container among the containers this driver labelled (reapOrphans keeps it while its allocation lives). */
export const INFRA_LABEL = 'io.berth.infra';

const missing = (err: unknown): boolean => (err as { statusCode?: number }).statusCode === 404;

/**
 * The allocation's pause container, made (image pulled when missing) and
 * started unless it already runs; resolves with its namespace path. Docker's
 * errors are thrown as they come (the driver words them).
 */
export async function ensurePauseContainer(
  docker: Dockerode,
  o: { allocId: string; hostname: string; infraImage: string; owner: string; clock: Clock; pullActivityTimeoutMs: number },
): Promise<string> {
  const name = pauseContainerName(o.allocId);
  let c = docker.getContainer(name);
  let info = await c.inspect().catch((err: unknown) => (missing(err) ? undefined : Promise.reject(err)));
  if (!info) {
    const image = imageReference(o.infraImage);
    await ensureImage(docker, image, o.clock, { forcePull: false, activityTimeoutMs: o.pullActivityTimeoutMs });
    c = await docker.createContainer({
      name,
      Image: image,
      Hostname: o.hostname,
      Labels: { [LABEL.allocId]: o.allocId, [LABEL.owner]: o.owner, [INFRA_LABEL]: 'true' },
      HostConfig: { NetworkMode: 'none', RestartPolicy: { Name: '', MaximumRetryCount: 0 } },
    });
    info = await c.inspect();
  }
  if (!info.State.Running) {
    await c.start();
    info = await c.inspect();
  }
  const sandbox = info.NetworkSettings.SandboxKey;
  if (!sandbox) throw new Error(`pause container ${name} has no network namespace`);
  return sandbox;
}

/** Removes the allocation's pause container. Safe to repeat. Throws DRIVER_EXECUTOR_FAILED when docker refuses. */
export async function removePauseContainer(docker: Dockerode, allocId: string): Promise<void> {
  await docker
    .getContainer(pauseContainerName(allocId))
    .remove({ force: true })
    .catch((err: unknown) => {
      if (!missing(err)) throw new DriverError('DRIVER_EXECUTOR_FAILED', `allocation ${allocId.slice(0, 8)}: docker could not remove the pause container: ${dockerMessage(err)}`, { cause: err });
    });
}

/** The id of the allocation's pause container, for a task to join. Throws DRIVER_START_FAILED when it is gone. */
export async function pauseContainerId(docker: Dockerode, allocId: string): Promise<string> {
  try {
    return (await docker.getContainer(pauseContainerName(allocId)).inspect()).Id;
  } catch (err) {
    throw new DriverError('DRIVER_START_FAILED', `allocation ${allocId.slice(0, 8)}: its network's pause container is missing: ${dockerMessage(err)}`, { cause: err });
  }
}
