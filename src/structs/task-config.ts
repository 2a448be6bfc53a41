// What a task's `config` must hold for its driver, checked when a job is
// validated rather than when a node tries to start the task: a config
// mistake is not transient, and retrying it under the restart policy only
// hides it. The built-in drivers' schemas live here, in code; drivers that
// describe their own config (external drivers, reported by the nodes that
// run them) are passed in as `extra` schemas by the caller that knows them.

import { z } from 'zod';
import { DOCKER_TASK_CONFIG_SCHEMA } from './docker-config.js';
import { parseWithHclConversions } from './hcl-conversions.js';
import type { JobProblem } from './job-parse.js';
import type { JobSpec } from './job.js';
import { lazySchema } from '../api/index.js';

/** A driver's config schema: a zod schema whose issues name the config field. */
export type DriverConfigSchema = z.ZodType;

const argv = lazySchema(() => z.array(z.string({ error: 'must be a string' }), { error: 'must be a list of strings' }));

/** raw_exec and exec: a command (a path, or a name found on PATH) and its arguments. Other keys are the driver's to ignore. */
const processConfig = lazySchema(() => z.looseObject(
  {
    command: z
      .string({ error: (iss) => (iss.input === undefined ? 'is required: the program to run (a path, or a name found on PATH)' : 'must be a string') })
      .min(1, { error: 'must not be empty' }),
    args: argv.optional(),
  },
  { error: 'must be an object' },
));

/** The config schemas of the drivers built into every Berth node. */
export const BUILTIN_DRIVER_CONFIG_SCHEMAS: Readonly<Record<string, DriverConfigSchema>> = {
  raw_exec: processConfig,
  exec: processConfig,
  docker: DOCKER_TASK_CONFIG_SCHEMA,
};

/**
 * The problems of one task's `config` under its driver's schema, each as
 * `{ path: 'config.command', message }` relative to the task. A driver
 * with no known schema (neither built in nor in `extra`) is not checked
 * here: placement decides whether any node runs it. Pure; never throws;
 * never quotes a config value (a config may carry credentials).
 */
export function taskConfigProblems(driver: string, config: unknown, extra: Readonly<Record<string, DriverConfigSchema>> = {}): JobProblem[] {
  const schema = Object.hasOwn(extra, driver) ? extra[driver] : Object.hasOwn(BUILTIN_DRIVER_CONFIG_SCHEMAS, driver) ? BUILTIN_DRIVER_CONFIG_SCHEMAS[driver] : undefined;
  if (!schema) return [];
  const result = schema.safeParse(config ?? {});
  if (result.success) return [];
  return result.error.issues.map((issue) => ({ path: ['config', ...issue.path.map(String)].join('.'), message: `${issue.message} (driver ${driver})` }));
}

/**
 * Every task's config problems in a checked job spec, with the full path
 * (`groups[0].tasks[1].config.command`). Pure.
 */
export function jobTaskConfigProblems(spec: JobSpec, extra: Readonly<Record<string, DriverConfigSchema>> = {}): JobProblem[] {
  const problems: JobProblem[] = [];
  spec.groups.forEach((group, gi) =>
    group.tasks.forEach((task, ti) => {
      for (const p of taskConfigProblems(task.driver, task.config, extra)) problems.push({ path: `groups[${gi}].tasks[${ti}].${p.path}`, message: p.message });
    }),
  );
  return problems;
}

/**
 * The job with each task's `config` converted as HCL converts primitives
 * (`privileged = "true"`, `shm_size = "64"`) where its driver's schema is
 * known; a config that does not parse even so is kept as written, for
 * jobTaskConfigProblems to report. Pure.
 */
export function withConvertedTaskConfigs(spec: JobSpec, extra: Readonly<Record<string, DriverConfigSchema>> = {}): JobSpec {
  let changed = false;
  const groups = spec.groups.map((group) => {
    const tasks = group.tasks.map((task) => {
      const schema = Object.hasOwn(extra, task.driver) ? extra[task.driver] : Object.hasOwn(BUILTIN_DRIVER_CONFIG_SCHEMAS, task.driver) ? BUILTIN_DRIVER_CONFIG_SCHEMAS[task.driver] : undefined;
      if (!schema) return task;
      const { result, input } = parseWithHclConversions(schema, task.config ?? {});
      if (!result.success || input === task.config) return task;
      changed = true;
      return { ...task, config: input as typeof task.config };
    });
    return tasks.some((t, i) => t !== group.tasks[i]) ? { ...group, tasks } : group;
  });
  return changed ? { ...spec, groups } : spec;
}
