// The job blocks Berth shares with Nomad beyond groups, tasks and volumes:
// meta, lifecycle, ephemeral_disk, the reschedule delay functions, and the
// blocks Berth parses but refuses by name (Nomad features Berth does not
// have, or not yet). job.ts assembles them into the job schema.

import { z } from 'zod';
import { lazySchema } from '../api/index.js';

/** Nomad's `meta`: free keys, values as strings (numbers and booleans written bare become strings, as Nomad does). */
export const metaSchema = lazySchema(() => z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String)));

export const LIFECYCLE_HOOKS = ['prestart', 'poststart', 'poststop'] as const;
export type LifecycleHook = (typeof LIFECYCLE_HOOKS)[number];

/**
 * A task's `lifecycle`: when it runs relative to the group's main tasks
 * (Nomad's task hook coordinator). A prestart task that is not a sidecar
 * must complete before the main tasks start; a sidecar runs beside them.
 */
export const lifecycleSchema = lazySchema(() => z.strictObject({
  hook: z.enum(LIFECYCLE_HOOKS),
  sidecar: z.boolean().default(false),
}));

/**
 * `ephemeral_disk`: `size` (MB) is accepted and shown but not enforced nor
 * counted by placement; `sticky` and `migrate` (keeping the allocation
 * directory across replacements) are refused while Berth does not do them.
 */
export const ephemeralDiskSchema = lazySchema(() => z.strictObject({
  size: z.number().int().min(1).default(300),
  sticky: z.boolean().default(false).refine((v) => !v, 'Berth does not support ephemeral_disk.sticky yet: a replacement allocation starts with an empty directory'),
  migrate: z.boolean().default(false).refine((v) => !v, 'Berth does not support ephemeral_disk.migrate yet: a replacement allocation starts with an empty directory'),
}));

export const DELAY_FUNCTIONS = ['constant', 'exponential', 'fibonacci'] as const;
export type DelayFunction = (typeof DELAY_FUNCTIONS)[number];

/**
 * The wait before reschedule number `attempt` (1 for the first) under a
 * delay function, as Nomad computes it: constant is `delay` every time;
 * exponential doubles it per attempt; fibonacci adds the two previous waits
 * (delay, delay, 2 delay, 3 delay, 5 delay...); both are capped at
 * `maxDelayMs`. Pure.
 */
export function rescheduleDelayMs(fn: DelayFunction, delayMs: number, maxDelayMs: number, attempt: number): number {
  const n = Math.max(1, attempt);
  let wait: number;
  if (fn === 'constant') return delayMs;
  if (fn === 'exponential') wait = delayMs * 2 ** Math.min(n - 1, 40);
  else {
    let [a, b] = [delayMs, delayMs];
    for (let i = 2; i < n && b < maxDelayMs; i++) [a, b] = [b, a + b];
    wait = n <= 2 ? delayMs : b;
  }
  return Math.min(wait, maxDelayMs);
}

/**
 * Why a block is refused: Nomad features Berth will not have (`never`), and
 * ones a later version gives meaning to (`later`; they already parse, with
 * their position, so that the message points at them).
 */
const UNSUPPORTED: Record<string, { block: string; why: string; later?: boolean }> = {
  vault: { block: 'vault', why: "Berth has no Vault integration; pass secrets through the task's env or files under its secrets dir" },
  consul: { block: 'consul', why: 'Berth has no Consul integration' },
  connect: { block: 'connect', why: 'Berth has no Consul Connect service mesh' },
  scaling: { block: 'scaling', why: 'Berth has no autoscaler; set the group count' },
  device: { block: 'device', why: 'Berth schedules no devices (GPUs and the like)' },
  multiregion: { block: 'multiregion', why: 'Berth runs one region' },
  csiPlugins: { block: 'csi_plugin', why: 'a task has at most one csi_plugin block' },
  disconnect: { block: 'disconnect', why: 'Berth has no disconnected-client policy; see the agent\'s stop_after_server_disconnect' },
  maxClientDisconnect: { block: 'max_client_disconnect', why: 'Berth has no disconnected-client policy' },
  stopAfterClientDisconnect: { block: 'stop_after_client_disconnect', why: "Berth stops tasks on a partitioned node by the agent's stop_after_server_disconnect" },
};

/** The message for a refused block, e.g. "Berth does not support `service` yet: ...". */
export function unsupportedMessage(field: keyof typeof UNSUPPORTED | string): string {
  const u = UNSUPPORTED[field];
  if (!u) return `Berth does not support \`${field}\``;
  return `Berth does not support \`${u.block}\`${u.later ? ' yet' : ''}: ${u.why}${u.later ? '; remove it to run this job on Berth today' : ''}`;
}

/** Schema entries that refuse each of `fields` when present, by name (never as an unknown field). */
export function refused(...fields: Array<keyof typeof UNSUPPORTED>): Record<string, z.ZodType<undefined>> {
  const shape: Record<string, z.ZodType<undefined>> = {};
  for (const f of fields) {
    shape[f] = z
      .unknown()
      .optional()
      .superRefine((v, ctx) => {
        if (v !== undefined) ctx.addIssue({ code: 'custom', message: unsupportedMessage(f) });
      })
      .transform(() => undefined);
  }
  return shape;
}

/** Linux signal names a task may be stopped with (`kill_signal`). */
export const KILL_SIGNALS = [
  'SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGKILL', 'SIGUSR1', 'SIGSEGV', 'SIGUSR2',
  'SIGPIPE', 'SIGALRM', 'SIGTERM', 'SIGSTKFLT', 'SIGCHLD', 'SIGCONT', 'SIGSTOP', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU', 'SIGURG',
  'SIGXCPU', 'SIGXFSZ', 'SIGVTALRM', 'SIGPROF', 'SIGWINCH', 'SIGIO', 'SIGPWR', 'SIGSYS',
] as const;

export const killSignalSchema = lazySchema(() => z
  .string()
  .transform((s) => (s.toUpperCase().startsWith('SIG') ? s.toUpperCase() : `SIG${s.toUpperCase()}`))
  .refine((s) => (KILL_SIGNALS as readonly string[]).includes(s), 'must be a signal name such as "SIGTERM", "SIGINT" or "SIGUSR1"'));

/**
 * Moves the tasks written directly under a job (Nomad's implicit groups)
 * into groups named after them. Returns the new input and, for each such
 * group's index, the index of its task under `tasks`, so that problems can
 * be reported at the path the user wrote. Pure; leaves other input alone.
 */
export function implicitGroups(input: Record<string, unknown>): { input: Record<string, unknown>; fromTask: Map<number, number> } {
  const tasks = input['tasks'];
  const fromTask = new Map<number, number>();
  if (!Array.isArray(tasks)) return { input, fromTask };
  const groups = Array.isArray(input['groups']) ? [...(input['groups'] as unknown[])] : input['groups'] === undefined ? [] : undefined;
  if (!groups) return { input, fromTask };
  const out: Record<string, unknown> = { ...input };
  delete out['tasks'];
  tasks.forEach((task, i) => {
    const name = task && typeof task === 'object' ? (task as Record<string, unknown>)['name'] : undefined;
    fromTask.set(groups.length, i);
    groups.push({ name, tasks: [task] });
  });
  out['groups'] = groups;
  return { input: out, fromTask };
}

/** `groups[3].tasks[0].x` -> `tasks[1].x` for a group made from `tasks[1]`. */
export function implicitGroupPath(path: PropertyKey[], fromTask: ReadonlyMap<number, number>): PropertyKey[] {
  if (path[0] !== 'groups' || typeof path[1] !== 'number') return path;
  const ti = fromTask.get(path[1]);
  if (ti === undefined) return path;
  if (path[2] === 'tasks' && path[3] === 0) return ['tasks', ti, ...path.slice(4)];
  return ['tasks', ti, ...path.slice(2)];
}
