// A task's `config {}` checked against its driver's TaskConfigSchema, as the
// nodes running that driver as an external plugin report it (Nomad checks
// the same at job register). Drivers no node reports a schema for (Berth's
// in-process ones, drivers no node has) are left to placement.

import { decodeConfig, HclSpecError, type Spec } from '../../plugins/index.js';
import type { JobProblem, JobSpec, Node } from '../../structs/index.js';

/**
 * Problems of each task's config against the schema of its driver, taken
 * from the first ready node that reports one; each names its field
 * (`groups[0].tasks[1].config.image: ...`). Pure; never throws.
 */
export function driverConfigProblems(spec: JobSpec, nodes: readonly Node[]): JobProblem[] {
  const schemas = new Map<string, Spec>();
  for (const node of nodes) {
    if (node.status !== 'ready') continue;
    for (const [name, d] of Object.entries(node.drivers)) {
      if (d.taskConfigSchema && !schemas.has(name)) schemas.set(name, d.taskConfigSchema as unknown as Spec);
    }
  }
  const problems: JobProblem[] = [];
  spec.groups.forEach((group, gi) => {
    group.tasks.forEach((task, ti) => {
      const schema = schemas.get(task.driver);
      if (!schema) return;
      const base = `groups[${gi}].tasks[${ti}]`;
      try {
        decodeConfig(schema, task.config, { path: 'config' });
      } catch (err) {
        if (!(err instanceof HclSpecError)) return;
        const path = err.path ? `${base}.${err.path}` : `${base}.config`;
        // The decoder's message starts with its own path; the problem names the field once.
        const message = err.path && err.message.startsWith(`${err.path}: `) ? err.message.slice(err.path.length + 2) : err.message;
        problems.push({ path, message: `driver "${task.driver}": ${message}` });
      }
    });
  });
  return problems;
}
