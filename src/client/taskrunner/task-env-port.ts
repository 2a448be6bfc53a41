// The task environment as hooks see it: the variables the task will get and
// the interpolation of `${...}` in the fields Nomad interpolates (template
// and artifact source/destination...). The client's taskenv module (Nomad's
// client/taskenv) is the one place that expands `${...}`; `interimTaskEnv`
// below only stands in for it until it is wired in here.

import type { Allocation, Task } from '../../structs/index.js';
import type { TaskDir } from '../allocdir/index.js';

/** What hooks read of the task's environment. */
export interface TaskEnvironment {
  /** Every variable the task gets (before what prestart hooks add). */
  readonly env: Readonly<Record<string, string>>;
  /** Expands `${...}` in a job field as Nomad's taskenv does. Pure; never throws. */
  interpolate(text: string): string;
}

/** The task's own env plus Berth's variables: what the driver is given (before prestart hooks add theirs). */
export function berthTaskEnv(alloc: Allocation, task: Task, td: TaskDir, chroot: boolean): Record<string, string> {
  return {
    ...task.env,
    BERTH_ALLOC_ID: alloc.id,
    BERTH_ALLOC_INDEX: String(alloc.index ?? 0),
    BERTH_JOB_ID: alloc.jobId,
    BERTH_GROUP_NAME: alloc.taskGroup,
    BERTH_TASK_NAME: task.name,
    // The node the allocation was placed on: plugins use it as their node ID, so agents sharing a machine stay apart.
    BERTH_NODE_ID: alloc.nodeId,
    BERTH_ALLOC_DIR: chroot ? '/alloc' : td.sharedDir,
    BERTH_TASK_DIR: chroot ? '/local' : td.localDir,
    BERTH_SECRETS_DIR: chroot ? '/secrets' : td.secretsDir,
  };
}

/**
 * MERGE POINT: replace with the client's TaskEnv (src/client/taskenv), which
 * satisfies TaskEnvironment. Until then: the task's variables with a NOMAD_*
 * twin of each BERTH_* one, and `${NAME}` replaced by the variable NAME
 * when it is set (anything else is left as written).
 */
export function interimTaskEnv(base: Record<string, string>): TaskEnvironment {
  const env: Record<string, string> = { ...base };
  for (const [k, v] of Object.entries(base)) if (k.startsWith('BERTH_')) env[`NOMAD_${k.slice(6)}`] ??= v;
  return { env, interpolate: (text) => text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, name: string) => env[name] ?? m) };
}
