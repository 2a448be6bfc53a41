// Parsing a submitted job spec: the schema's answer turned into problems
// at field paths (`groups[0].tasks[1].name`), worded without the submitted
// values, in a JobValidationError.

import type { z } from 'zod';
import { BerthError } from '../lib/index.js';
import { parseWithHclConversions } from './hcl-conversions.js';
import { implicitGroupPath, implicitGroups } from './job-blocks.js';
import { jobSpecSchema, type JobSpec } from './job.js';
import { SERVER_JOB_FIELDS } from './stored-job.js';

/** One problem with a job spec: where (e.g. `groups[0].tasks[1].volumeMounts[0].propagationMode`) and what. */
export interface JobProblem {
  path: string;
  message: string;
}

/**
 * A job spec that cannot be accepted. `problems` lists every problem found,
 * each naming its field; the message joins them. Never carries a secret: only
 * field paths and rule descriptions, never submitted values.
 */
export class JobValidationError extends BerthError {
  readonly problems: JobProblem[];

  constructor(problems: JobProblem[]) {
    super('INVALID', `job is invalid: ${problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; ')}`);
    this.problems = problems;
  }
}

/** `['groups', 0, 'tasks', 1, 'name']` -> `groups[0].tasks[1].name`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out;
}

/** The specs parseJobSpec returned (fresh objects of its own), which checkedJobSpec need not check again. */
const checkedSpecs = new WeakSet<object>();

/**
 * `input` as a checked spec: the very object parseJobSpec returned is taken
 * as it is (an API registration reads and checks its body once, then hands
 * the spec on), anything else is parsed. A caller that changes a checked spec
 * in place must hand on a copy (`{ ...spec }` is checked again).
 */
export function checkedJobSpec(input: unknown): JobSpec {
  if (input !== null && typeof input === 'object' && checkedSpecs.has(input)) return input as JobSpec;
  return parseJobSpec(input);
}

/**
 * Takes `copy`, a structured clone of a spec parseJobSpec returned in another
 * thread of this process (an API front worker's, sent over its message port),
 * as checked, so checkedJobSpec does not check it again: the clone holds the
 * same plain data (a spec is JSON-like: no functions, classes or dates),
 * only its identity is new. Returns it. Call it only on a clone the process's
 * own code made of parseJobSpec's output, never on anything a caller sent.
 */
export function adoptCheckedJobSpec(copy: JobSpec): JobSpec {
  checkedSpecs.add(copy);
  return copy;
}

/**
 * Parses and checks a submitted job spec, applying defaults. Pure; throws a
 * JobValidationError listing every problem (field paths, no values) when the
 * spec is malformed. Server-managed fields of a stored job are ignored.
 * `hclConversions`: primitives convert as HCL converts them (a job file's
 * `cpu = "500"`); Nomad's API decodes JSON strictly, so its routes do not ask.
 */
export function parseJobSpec(input: unknown, opts: { hclConversions?: boolean } = {}): JobSpec {
  let candidate = input;
  let fromTask = new Map<number, number>();
  if (candidate && typeof candidate === 'object' && !Array.isArray(candidate)) {
    const copy: Record<string, unknown> = { ...(candidate as Record<string, unknown>) };
    for (const key of SERVER_JOB_FIELDS) delete copy[key];
    ({ input: candidate, fromTask } = implicitGroups(copy));
  }
  const result = opts.hclConversions ? parseWithHclConversions(jobSpecSchema, candidate).result : jobSpecSchema.safeParse(candidate);
  if (result.success) {
    checkedSpecs.add(result.data);
    return result.data;
  }
  const problems = result.error.issues.map((issue) => ({ path: formatPath(implicitGroupPath(issue.path, fromTask)), message: describeIssue(issue) }));
  throw new JobValidationError(problems);
}

function describeIssue(issue: z.core.$ZodIssue): string {
  // zod's default messages for these can quote the submitted input; keep field names only.
  if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  if (issue.code === 'invalid_value') return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  if (issue.code === 'invalid_type') return `expected ${issue.expected}`;
  return issue.message;
}
