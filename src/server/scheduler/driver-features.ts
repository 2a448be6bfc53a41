// Feasibility by what a task's driver config asks of the node's driver,
// beyond the driver being there and healthy: a docker task with
// `privileged = true` runs only where the driver allows privileged
// containers. Nomad 1.1.2 places such a task anywhere and fails it at start
// ("Docker privileged mode is disabled on this Nomad agent"); refusing it at
// placement puts the reason in the evaluation's failed placements instead,
// and lets it land on a node that does allow it.

import type { DriverInfo, Node, Task } from '../../structs/index.js';

/** The fingerprint attribute of a docker driver (Berth's or Nomad's plugin) that allows privileged containers. */
export const DOCKER_PRIVILEGED_ATTRIBUTE = 'driver.docker.privileged.enabled';

/** A driver attribute by its full name (`driver.<name>.<key>`), as the node reports it; drivers may report the short key. */
function driverAttribute(node: Node, driverName: string, driver: DriverInfo, name: string): string | undefined {
  const prefix = `driver.${driverName}.`;
  const short = name.startsWith(prefix) ? name.slice(prefix.length) : name;
  return driver.attributes?.[name] ?? driver.attributes?.[short] ?? node.attributes[name];
}

const truthy = (v: string | undefined): boolean => v === 'true' || v === '1';

/**
 * Why `node`'s driver cannot run `task` as its config asks, or undefined.
 * The reason reads after "N nodes" in the evaluation's failed placements.
 * Pure.
 */
export function driverConfigReason(node: Node, task: Pick<Task, 'driver' | 'config'>, driver: DriverInfo): string | undefined {
  if (task.driver === 'docker' && task.config['privileged'] === true && !truthy(driverAttribute(node, task.driver, driver, DOCKER_PRIVILEGED_ATTRIBUTE))) {
    return `did not allow privileged containers in driver "docker" (${DOCKER_PRIVILEGED_ATTRIBUTE} is not true: allow_privileged is off)`;
  }
  return undefined;
}
