// `berth job restart JOB`: restarts a job's running allocations in place, a
// batch at a time, as Nomad 1.6's `nomad job restart`: each allocation's
// tasks run again (same allocation, volumes stay mounted), or with
// -reschedule each allocation is stopped and the command waits for its
// replacement to run. Progress is printed per batch and per allocation; the
// first batch with an error stops the command (or, on a terminal with
// `-on-error ask`, asks), naming the allocation that failed.

import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { BerthError } from '../lib/index.js';
import type * as api from '../api/index.js';
import { restartAllocTasks, stopAllocation } from './alloc-ops-commands.js';
import { tokenOf } from './alloc-io-commands.js';
import { KINDS, sleep } from './api-client.js';
import { apiAction, apiCommand, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { UsageError } from './usage-error.js';
import { collect, humanDuration, parseDuration } from './values.js';

/** A -batch-size: a number of allocations, or a percentage of those to restart (rounded up). */
export interface BatchSize {
  value: number;
  percent: boolean;
}

/** Parses `-batch-size N` or `N%`; zero and anything else are refused. */
export function parseBatchSize(text: string): BatchSize {
  const m = /^(\d+)(%?)$/.exec(text.trim());
  if (!m) throw new UsageError(`invalid -batch-size "${text}": give a number of allocations or a percentage, such as 2 or 25%`);
  const value = Number(m[1]);
  if (value === 0) throw new UsageError(`invalid -batch-size "${text}": it must be greater than zero`);
  if (m[2] && value > 100) throw new UsageError(`invalid -batch-size "${text}": a percentage is at most 100%`);
  return { value, percent: m[2] === '%' };
}

/** How many allocations one batch restarts, out of `total`: a percentage is rounded up, so at least one. */
export function batchCount(size: BatchSize, total: number): number {
  return size.percent ? Math.max(1, Math.ceil((total * size.value) / 100)) : size.value;
}

/** English ordinal of a batch number: 1st, 2nd, 3rd, 11th, 22nd. */
export function ordinal(n: number): string {
  const teen = n % 100 >= 11 && n % 100 <= 13;
  const suffix = teen ? 'th' : ({ 1: 'st', 2: 'nd', 3: 'rd' } as Record<number, string>)[n % 10] ?? 'th';
  return `${n}${suffix}`;
}

/** Adds `restart` to `berth job`. */
export function addJobRestart(job: Command, ctx: CommandContext): void {
  apiCommand(
    job
      .command('restart')
      .description("Restart a job's running allocations in place, a batch at a time (or, with -reschedule, replace them)")
      .argument('<id>', 'job ID or a unique prefix')
      .option('--batch-size <n|n%>', 'allocations restarted at once: a number, or a percentage of those to restart (rounded up)', '1')
      .option('--batch-wait <duration|ask>', 'time to wait between batches; "ask" (on a terminal only) asks before each batch', '0')
      .option('--group <name>', 'only allocations of this group (repeatable)', collect)
      .option('--task <name>', 'only this task of each allocation (repeatable; not with -all-tasks or -reschedule)', collect)
      .option('--all-tasks', 'every task, also those that already ran (not with -task)')
      .option('--reschedule', 'stop each allocation and wait for its replacement to run, instead of restarting it in place')
      .option('--on-error <ask|fail>', 'when a batch fails: ask how to go on (on a terminal), or stop; without a terminal "ask" stops', 'ask')
      .option('-y, --yes', 'answer yes to every question: go on after a batch error and never wait for input')
      .option('--verbose', 'full allocation IDs, and say which allocations are skipped and why'),
    ['job restart web', 'job restart -batch-size 25% -batch-wait 30s web', 'job restart -group api -task server web', 'job restart -reschedule -yes web'],
  ).action(apiAction(ctx, jobRestart));
}

interface Plan {
  size: BatchSize;
  waitMs: number;
  waitAsk: boolean;
  onError: 'ask' | 'fail';
  groups: Set<string>;
  tasks: Set<string>;
  allTasks: boolean;
  reschedule: boolean;
  yes: boolean;
  verbose: boolean;
  token: string | undefined;
  /** Someone at a terminal to answer questions. */
  interactive: boolean;
}

function planOf(opts: Record<string, unknown>, interactive: boolean): Plan {
  const tasks = new Set((opts['task'] as string[] | undefined) ?? []);
  const allTasks = Boolean(opts['allTasks']);
  const reschedule = Boolean(opts['reschedule']);
  const yes = Boolean(opts['yes']);
  if (allTasks && tasks.size) throw new UsageError('-all-tasks cannot be used with -task');
  if (reschedule && tasks.size) throw new UsageError('-reschedule cannot be used with -task (it replaces whole allocations)');
  const waitText = String(opts['batchWait'] ?? '0').trim();
  const waitAsk = waitText.toLowerCase() === 'ask';
  if (waitAsk && !interactive && !yes) throw new UsageError('-batch-wait ask needs a terminal to ask on; give a duration such as 30s');
  let waitMs = 0;
  if (!waitAsk && !/^0+(ms|s|m|h)?$/.test(waitText)) {
    try {
      waitMs = parseDuration(waitText);
    } catch {
      throw new UsageError(`invalid -batch-wait "${waitText}": give a duration such as 30s or 2m, or "ask"`);
    }
  }
  const onError = String(opts['onError'] ?? 'ask');
  if (onError !== 'ask' && onError !== 'fail') throw new UsageError(`invalid -on-error "${onError}": "ask" or "fail"`);
  return {
    size: parseBatchSize(String(opts['batchSize'] ?? '1')),
    waitMs,
    waitAsk,
    onError,
    groups: new Set((opts['group'] as string[] | undefined) ?? []),
    tasks,
    allTasks,
    reschedule,
    yes,
    verbose: Boolean(opts['verbose']),
    token: tokenOf(opts),
    interactive,
  };
}

const now = (): string => timestamp(Date.now());

async function jobRestart(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const plan = planOf(opts, Boolean(process.stdin.isTTY && process.stdout.isTTY));
  const jobId = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  const id = (full: string): string => (plan.verbose ? full : full.slice(0, 8));
  // With --json the progress goes to stderr and stdout holds one document at the end.
  const print = (text: string): void => (s.out.json ? s.out.warn(text) : s.out.line(text));
  const say = (text: string): void => print(`==> ${now()}: ${text}`);
  const detail = (text: string): void => print(`    ${now()}: ${text}`);

  const all = (await s.api.get<api.AllocationListStub[]>(`/v1/job/${encodeURIComponent(jobId)}/allocations`, { namespace: s.namespace })).body;
  const chosen = all.filter((a) => {
    const skip = skipReason(a, plan);
    if (skip && plan.verbose) detail(`Skipping allocation "${id(a.ID)}" because ${skip}`);
    return !skip;
  });
  if (chosen.length === 0) {
    if (s.out.json) return s.out.document({ jobId, allocations: [] });
    s.out.line('No allocations to restart');
    return;
  }
  const perBatch = batchCount(plan.size, chosen.length);
  say(`Restarting ${chosen.length} allocation${chosen.length === 1 ? '' : 's'}`);

  const failures: string[] = [];
  const done: string[] = [];
  let waitMs = plan.waitMs;
  let waitAsk = plan.waitAsk;
  for (let start = 0; start < chosen.length; start += perBatch) {
    const batch = chosen.slice(start, start + perBatch);
    const active = await activeDeployment(s, jobId);
    if (active) {
      failures.push(`Deployment "${id(active.ID)}" is "${active.Status}"; restart again once it is done`);
      break;
    }
    if (perBatch > 1) say(`Restarting ${ordinal(start / perBatch + 1)} batch of ${batch.length} allocations`);
    const results = await Promise.allSettled(batch.map((a) => handleAlloc(s, a, plan, id, detail)));
    const errors = results.flatMap((r, i) => (r.status === 'rejected' ? [`Error restarting allocation "${id(batch[i]!.ID)}": ${(r.reason as Error).message}`] : []));
    failures.push(...errors);
    results.forEach((r, i) => r.status === 'fulfilled' && done.push(batch[i]!.ID));
    if (start + perBatch >= chosen.length) break;
    // An error stops the restart with -on-error fail, and with ask when nobody can be asked (-yes goes on).
    if (errors.length && (plan.onError === 'fail' || (!plan.yes && !plan.interactive))) {
      say('Stopping job restart due to error');
      break;
    }
    if (!plan.yes && (waitAsk || errors.length)) {
      for (const e of errors) s.out.warn(`==> ${now()}: ${e}`);
      const answer = await proceed(s, errors.length > 0, waitAsk);
      if (answer === false) {
        say('Job restart canceled');
        throw new BerthError('CLI_JOB_RESTART_CANCELED', failures.length ? failures.join('\n') : 'job restart canceled before every allocation was restarted');
      }
      if (typeof answer === 'number') {
        waitAsk = false;
        waitMs = answer;
        say(`Proceeding restarts with new wait time of ${humanDuration(answer)}`);
      }
    }
    if (waitMs > 0) {
      say(`Waiting ${humanDuration(waitMs)} before restarting the next batch`);
      await sleep(waitMs, s.signal);
    }
  }
  if (failures.length) {
    say('Job restart finished with errors');
    throw new BerthError('CLI_JOB_RESTART_FAILED', failures.join('\n'));
  }
  say('Job restart finished');
  if (s.out.json) return s.out.document({ jobId, allocations: done, rescheduled: plan.reschedule });
  s.out.line('');
  s.out.line('Job restarted successfully!');
}

/** Why an allocation is left alone, or undefined when it is restarted. */
function skipReason(a: api.AllocationListStub, plan: Plan): string | undefined {
  if (a.DesiredStatus !== 'run' || a.ClientStatus !== 'running') return `desired status is "${a.DesiredStatus}" and client status is "${a.ClientStatus}"`;
  if (plan.groups.size && !plan.groups.has(a.TaskGroup)) return "it doesn't have any of requested groups";
  if (plan.tasks.size && !Object.keys(a.TaskStates ?? {}).some((t) => plan.tasks.has(t))) return "it doesn't have any of requested tasks";
  return undefined;
}

async function activeDeployment(s: ApiSession, jobId: string): Promise<api.Deployment | undefined> {
  const { body } = await s.api.get<api.Deployment[]>(`/v1/job/${encodeURIComponent(jobId)}/deployments`, { namespace: s.namespace });
  return body.find((d) => d.Status === 'running' || d.Status === 'paused');
}

/** Restarts one allocation in place, or replaces it (-reschedule) and waits until the replacement runs. */
async function handleAlloc(s: ApiSession, a: api.AllocationListStub, plan: Plan, id: (full: string) => string, detail: (text: string) => void): Promise<void> {
  const where = `allocation "${id(a.ID)}" for group "${a.TaskGroup}"`;
  if (plan.reschedule) {
    detail(`Rescheduling ${where}`);
    return replace(s, a, id);
  }
  // The restart counts now, to know when each restarted task has run again.
  const { body: fresh, index } = await s.api.get<api.Allocation>(KINDS.allocation.getPath(a.ID), { namespace: s.namespace });
  let restarted: string[];
  if (plan.allTasks || plan.tasks.size === 0) {
    detail(`Restarting ${plan.allTasks ? 'all' : 'running'} tasks in ${where}`);
    restarted = (await restartAllocTasks(s, fresh, { allTasks: plan.allTasks }, plan.token)).restarted;
  } else {
    const tasks = [...plan.tasks].filter((t) => t in (fresh.TaskStates ?? {}));
    for (const t of tasks) detail(`Restarting task "${t}" in ${where}`);
    await Promise.all(tasks.map((task) => restartAllocTasks(s, fresh, { task, allTasks: false }, plan.token)));
    restarted = tasks;
  }
  await runningAgain(s, fresh, index, restarted);
}

/** Follows the allocation (blocking reads) until each restarted task counts one more restart and runs; a task that stays dead is an error. */
async function runningAgain(s: ApiSession, before: api.Allocation, index: number, tasks: readonly string[]): Promise<void> {
  let at = index;
  const restartsBefore = (t: string): number => before.TaskStates?.[t]?.Restarts ?? 0;
  for (;;) {
    const res = await s.api.get<api.Allocation>(KINDS.allocation.getPath(before.ID), { namespace: s.namespace, index: String(at), wait: '30s' });
    const states = res.body.TaskStates ?? {};
    const pending = tasks.filter((t) => !(states[t] && states[t].Restarts > restartsBefore(t) && states[t].State === 'running'));
    if (pending.length === 0) return;
    const dead = pending.find((t) => states[t]?.State === 'dead' && states[t].Restarts > restartsBefore(t));
    if (dead || res.body.ClientStatus === 'failed') throw new Error(`task "${dead ?? pending[0]}" did not run again (allocation ${res.body.ClientStatus}: ${res.body.ClientDescription})`);
    at = res.index;
  }
}

/** Stops `a` and follows the job's allocations (blocking reads) until its replacement runs; a blocked placement is an error. */
async function replace(s: ApiSession, a: api.AllocationListStub, id: (full: string) => string): Promise<void> {
  const { evaluation } = await stopAllocation(s, a);
  if (evaluation?.status === 'blocked') throw new Error(`its replacement cannot be placed: ${evaluation.blockedReason || 'no node fits'}`);
  let index = 0;
  for (;;) {
    const res = await s.api.get<api.AllocationListStub[]>(`/v1/job/${encodeURIComponent(a.JobID)}/allocations`, { namespace: s.namespace, ...(index ? { index: String(index), wait: '30s' } : {}) });
    // The stopped allocation names its replacement (NextAllocation).
    const nextId = res.body.find((b) => b.ID === a.ID)?.NextAllocation;
    const next = nextId ? res.body.find((b) => b.ID === nextId) : undefined;
    if (next?.ClientStatus === 'running') return;
    if (next && (next.ClientStatus === 'failed' || next.ClientStatus === 'lost')) throw new Error(`its replacement "${id(next.ID)}" is ${next.ClientStatus}: ${next.ClientDescription}`);
    index = res.index;
  }
}

/** Asks whether to go on with the next batch: true, false, or a new wait between batches (ms) when -batch-wait is ask. */
async function proceed(s: ApiSession, failed: boolean, waitAsk: boolean): Promise<boolean | number> {
  const question = failed ? 'Ignore the errors above and proceed with the next batch?' : 'Proceed with the next batch?';
  const options = `${failed ? 'y/N' : 'Y/n'}${waitAsk ? '/<wait duration>' : ''}`;
  const rl = createInterface({ input: process.stdin, output: process.stdout });
  try {
    for (;;) {
      const answer = (await rl.question(`==> ${now()}: ${question} [${options}]: `, { signal: s.signal })).trim().toLowerCase();
      if (answer === '') return !failed;
      if (answer === 'y' || answer === 'yes') return true;
      if (answer === 'n' || answer === 'no') return false;
      if (waitAsk) {
        try {
          return parseDuration(answer);
        } catch {
          // Asked again below.
        }
      }
      s.out.line(`    invalid answer "${answer}"`);
    }
  } finally {
    rl.close();
  }
}
