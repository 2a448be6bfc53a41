// The checks of a job spec that need the server's state: every CSI volume a
// group names is registered, its plugin is known, and the access/attachment
// mode the group asks for is one the volume (and its plugin) supports.

import { SINGLE_NODE_MULTI_WRITER_MODES } from '../../csi/index.js';
import { volumeIdFor, type JobProblem, type JobSpec } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';
import { driverConfigProblems } from './driver-config-problems.js';

/**
 * Problems of `spec` against the state in `reader`, each naming its field
 * (`groups[0].volumes.data.source: ...`). Pure; empty when the spec is fine.
 */
export function problemsAgainstState(spec: JobSpec, reader: StateReader): JobProblem[] {
  const problems: JobProblem[] = [];
  spec.groups.forEach((group, gi) => {
    for (const [name, vol] of Object.entries(group.volumes)) {
      if (vol.type !== 'csi') continue;
      const path = `groups[${gi}].volumes.${name}`;
      const ids = vol.perAlloc ? Array.from({ length: group.count }, (_, i) => volumeIdFor(vol, i)) : [vol.source];
      for (const id of ids) {
        const volume = reader.get('volumes', rowKey(spec.namespace, id));
        if (!volume) {
          problems.push({ path: `${path}.source`, message: `volume "${id}" is not registered in namespace "${spec.namespace}"` });
          continue;
        }
        const plugin = reader.get('plugins', rowKey(volume.pluginId));
        if (!plugin) {
          problems.push({
            path: `${path}.source`,
            message: `volume "${id}" uses plugin "${volume.pluginId}", which is unknown to the server (no node runs it)`,
          });
          continue;
        }
        const supported = volume.capabilities.some((c) => c.accessMode === vol.accessMode && c.attachmentMode === vol.attachmentMode);
        if (!supported) {
          const list = volume.capabilities.map((c) => `${c.accessMode}/${c.attachmentMode}`).join(', ') || 'none';
          problems.push({
            path: `${path}.accessMode`,
            message: `volume "${id}" does not support ${vol.accessMode}/${vol.attachmentMode} (it supports ${list})`,
          });
        } else if (SINGLE_NODE_MULTI_WRITER_MODES.includes(vol.accessMode) && !plugin.nodeCapabilities.includes('SINGLE_NODE_MULTI_WRITER')) {
          problems.push({
            path: `${path}.accessMode`,
            message: `access mode "${vol.accessMode}" needs plugin "${plugin.id}" to advertise SINGLE_NODE_MULTI_WRITER, and it does not`,
          });
        }
      }
    }
  });
  problems.push(...pluginOwnerProblems(spec, reader));
  problems.push(...driverConfigProblems(spec, reader.list('nodes')));
  return problems;
}

/**
 * A CSI plugin ID is served by one job: a second job running the same ID
 * would put two instances on a node, behind one name, each with its own
 * socket and its own idea of what is staged there. Refused with the job that
 * serves it (an update of that same job is fine: it replaces its instances).
 */
function pluginOwnerProblems(spec: JobSpec, reader: StateReader): JobProblem[] {
  const problems: JobProblem[] = [];
  // Most jobs run no plugin: no pass over every job then (a registration's cost stays flat as jobs pile up).
  if (!spec.groups.some((g) => g.tasks.some((t) => t.csiPlugin))) return problems;
  const owners = new Map<string, string>();
  for (const job of reader.list('jobs', { filter: (j) => !j.stop && !(j.namespace === spec.namespace && j.id === spec.id) })) {
    for (const g of job.groups) for (const t of g.tasks) if (t.csiPlugin) owners.set(t.csiPlugin.id, `${job.namespace}/${job.id}`);
  }
  spec.groups.forEach((g, gi) =>
    g.tasks.forEach((t, ti) => {
      const owner = t.csiPlugin && owners.get(t.csiPlugin.id);
      if (owner) {
        problems.push({
          path: `groups[${gi}].tasks[${ti}].csiPlugin.id`,
          message: `CSI plugin "${t.csiPlugin?.id}" is already run by job "${owner}": one job runs a plugin ID (stop that job, or give this plugin another ID)`,
        });
      }
    }),
  );
  return problems;
}
