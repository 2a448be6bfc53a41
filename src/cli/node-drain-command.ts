// `berth node drain` and `berth node eligibility`: ask the servers to move
// work off a node (or stop placing work on it), then watch the drain until
// it is done, as Nomad's `nomad node drain` prints it.

import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import type * as Api from '../api/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { nodeAllocations, resolveNode, selfNode } from './node-status-command.js';
import { UsageError } from './usage-error.js';
import { parseDuration } from './values.js';

const DEFAULT_DEADLINE = '1h';

/** Adds `drain` and `eligibility` to `berth node`. */
export function addNodeDrainCommands(node: Command, ctx: CommandContext): void {
  apiCommand(
    node
      .command('drain')
      .description('Move allocations off a node before maintenance (-enable), or cancel its drain (-disable); follows the drain until done')
      .argument('[node]', 'node ID or a unique prefix (or -self)')
      .option('--enable', 'start draining the node')
      .option('--disable', 'cancel the drain (allocations already moved stay where they are)')
      .option('--deadline <duration>', `allocations still on the node after this are stopped (default ${DEFAULT_DEADLINE})`)
      .option('--no-deadline', 'no deadline: wait for every migration however long it takes')
      .option('--force', 'stop every allocation at once (a deadline of now)')
      .option('--ignore-system', 'leave system job allocations running on the node')
      .option('--keep-ineligible', 'with -disable: the node stays ineligible for new allocations')
      .option('--detach', 'return once the drain is set instead of following it')
      .option('--monitor', 'only follow a drain already in progress')
      .option('-m <message>', 'a message kept with the drain (as "message"; as "cancel_message" with -disable)')
      .option('--meta <key=value>', 'more to keep with the drain; repeatable', (v: string, prev: string[] | undefined) => [...(prev ?? []), v])
      .option('--self', 'the node of the agent at --address')
      .option('-y, --yes', 'do not ask for confirmation'),
    [
      'node drain -enable 9c1e',
      'node drain -enable -deadline 10m -ignore-system -m "kernel upgrade" 9c1e',
      'node drain -enable -force -detach -yes 9c1e',
      'node drain -disable -keep-ineligible 9c1e',
    ],
  ).action(apiAction(ctx, (s, args, opts) => nodeDrain(ctx, s, args, opts)));

  apiCommand(
    node
      .command('eligibility')
      .description('Let a node take new allocations (-enable) or not (-disable); what runs there keeps running')
      .argument('[node]', 'node ID or a unique prefix (or -self)')
      .option('--enable', 'mark the node eligible')
      .option('--disable', 'mark the node ineligible')
      .option('--self', 'the node of the agent at --address'),
    ['node eligibility -disable 9c1e', 'node eligibility -enable 9c1e'],
  ).action(apiAction(ctx, (s, args, opts) => nodeEligibility(s, args, opts)));
}

/** The node named by the argument (an ID or a unique prefix), or with -self the one the agent at --address runs. */
async function targetNode(s: ApiSession, idArg: string | undefined, opts: Record<string, unknown>): Promise<string> {
  if (opts['self']) {
    if (idArg) throw new UsageError('give either a node ID or -self, not both');
    return selfNode(s, opts);
  }
  if (!idArg) throw new UsageError('name the node (its ID or a unique prefix), or use -self');
  return resolveNode(s, idArg);
}

function onOff(opts: Record<string, unknown>): boolean {
  const enable = Boolean(opts['enable']);
  const disable = Boolean(opts['disable']);
  if (enable === disable) throw new UsageError('give exactly one of -enable or -disable');
  return enable;
}

async function nodeEligibility(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const enable = onOff(opts);
  const nodeId = await targetNode(s, idArg, opts);
  const body: Api.NodeUpdateEligibilityRequest = { NodeID: nodeId, Eligibility: enable ? 'eligible' : 'ineligible' };
  const { body: answer } = await s.api.request<Api.NodeEligibilityUpdateResponse>('POST', `/v1/node/${encodeURIComponent(nodeId)}/eligibility`, { body });
  if (s.out.json) return s.out.document(answer);
  s.out.line(`Node "${nodeId}" scheduling eligibility set: ${enable ? 'eligible' : 'ineligible'} for scheduling`);
}

/** The deadline in ms as the API takes it: 0 none, -1 force. */
function deadlineOf(opts: Record<string, unknown>): number {
  const given = opts['deadline'];
  // commander's --no-deadline sets deadline=false.
  if (given === false) {
    if (opts['force']) throw new UsageError('-force and -no-deadline cannot be combined');
    return 0;
  }
  if (opts['force']) {
    if (typeof given === 'string') throw new UsageError('-force and -deadline cannot be combined');
    return -1;
  }
  const text = typeof given === 'string' ? given : DEFAULT_DEADLINE;
  try {
    return parseDuration(text);
  } catch {
    throw new UsageError(`-deadline must be a positive duration such as "30m" or "1h" (use -force to stop everything at once), got "${text}"`);
  }
}

async function confirm(ctx: CommandContext, question: string): Promise<boolean> {
  if (!process.stdin.isTTY) return true;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N]: `);
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
    void ctx;
  }
}

/** What the operator sends with the drain (Nomad's -m and -meta): on -disable, the last drain's meta with a `cancel_message`. */
function drainMeta(opts: Record<string, unknown>, enable: boolean, last: Record<string, string> | null | undefined): Record<string, string> {
  const meta: Record<string, string> = enable ? {} : { ...(last ?? {}) };
  const message = opts['m'];
  if (typeof message === 'string' && message) meta[enable ? 'message' : 'cancel_message'] = message;
  for (const kv of (opts['meta'] as string[] | undefined) ?? []) {
    const eq = kv.indexOf('=');
    if (eq === 0) throw new UsageError(`-meta "${kv}" is not key=value`);
    if (eq < 0) meta[kv] = '';
    else meta[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  return meta;
}

async function nodeDrain(ctx: CommandContext, s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const monitorOnly = Boolean(opts['monitor']);
  if (monitorOnly && (opts['enable'] || opts['disable'])) throw new UsageError('-monitor only follows a drain; leave out -enable/-disable');
  const enable = monitorOnly ? true : onOff(opts);
  if (!enable && (opts['force'] || opts['ignoreSystem'] || typeof opts['deadline'] === 'string')) {
    throw new UsageError('-deadline, -force and -ignore-system go with -enable');
  }
  if (enable && opts['keepIneligible']) throw new UsageError('-keep-ineligible goes with -disable');
  const deadlineMs = enable && !monitorOnly ? deadlineOf(opts) : 0;
  const nodeId = await targetNode(s, idArg, opts);
  if (monitorOnly) return monitorDrain(s, nodeId, 0, false);
  if (enable && !opts['yes'] && !s.out.json && !(await confirm(ctx, `Are you sure you want to enable drain mode for node "${nodeId}"?`))) {
    s.out.line('Canceled.');
    return;
  }
  // A cancel keeps the drain's meta (Nomad's CLI sends it back with the cancel message).
  const last = enable ? undefined : (await s.api.get<Api.Node>(KINDS.node.getPath(nodeId))).body.LastDrain?.Meta;
  const body: Api.NodeUpdateDrainRequest = {
    NodeID: nodeId,
    DrainSpec: enable ? { Deadline: deadlineMs < 0 ? -1 : deadlineMs * 1e6, IgnoreSystemJobs: Boolean(opts['ignoreSystem']) } : null,
    MarkEligible: !enable && !opts['keepIneligible'],
    Meta: drainMeta(opts, enable, last),
  };
  const { body: answer, index } = await s.api.request<Api.NodeDrainUpdateResponse>('POST', `/v1/node/${encodeURIComponent(nodeId)}/drain`, { body });
  if (!enable || opts['detach']) {
    if (s.out.json) return s.out.document(answer);
    s.out.line(`Node "${nodeId}" drain strategy ${enable ? 'set' : 'unset'}`);
    return;
  }
  await monitorDrain(s, nodeId, index, true);
}

/**
 * Follows the drain of `nodeId` with blocking reads, printing each change
 * of its allocations (Nomad's monitor lines) until the drain is complete or
 * canceled. Ctrl-C stops watching; the drain goes on.
 */
async function monitorDrain(s: ApiSession, nodeId: string, fromIndex: number, justSet: boolean): Promise<void> {
  const say = (text: string): void => s.out.line(`${new Date().toISOString()}: ${text}`);
  say('Ctrl-C to stop monitoring: will not cancel the node drain');
  if (justSet) say(`Node "${nodeId}" drain strategy set`);
  const seen = new Map<string, { status: string; migrating: boolean }>();
  let nodeIndex = fromIndex;
  let allocIndex = 0;
  let lastMessage = '';
  let allMarked = false;
  for (;;) {
    const [{ body: node, index: ni }, { rows: allocs, index: ai }] = await Promise.all([
      s.api.get<Api.Node>(KINDS.node.getPath(nodeId), { index: String(nodeIndex), wait: '5s' }),
      nodeAllocations(s, nodeId, { index: String(allocIndex), wait: '5s' }),
    ]);
    nodeIndex = ni;
    allocIndex = ai;
    for (const a of allocs) {
      const before = seen.get(a.id);
      if (!before) {
        seen.set(a.id, { status: a.clientStatus, migrating: a.migrating });
        if (a.migrating && (a.clientStatus === 'pending' || a.clientStatus === 'running')) say(`Alloc "${a.id}" marked for migration`);
        continue;
      }
      if (a.migrating && !before.migrating) say(`Alloc "${a.id}" marked for migration`);
      if (before.status !== a.clientStatus) say(`Alloc "${a.id}" status ${before.status} -> ${a.clientStatus}`);
      seen.set(a.id, { status: a.clientStatus, migrating: a.migrating });
    }
    const live = allocs.filter((a) => a.clientStatus === 'pending' || a.clientStatus === 'running');
    if (!allMarked && live.length > 0 && live.every((a) => a.migrating || a.desiredStatus !== 'run')) {
      allMarked = true;
      say(`Node "${nodeId}" has marked all allocations for migration`);
    }
    const message = node.LastDrain?.BerthMessage ?? '';
    if (message && message !== lastMessage && node.DrainStrategy) say(`Drain: ${message}`);
    lastMessage = message;
    if (!node.DrainStrategy) {
      if (node.LastDrain?.Status === 'complete') {
        say(`All allocations on node "${nodeId}" have stopped`);
        say(`Drain complete for node ${nodeId}`);
      } else say(`Drain for node ${nodeId} was canceled`);
      if (s.out.json) s.out.document(node);
      return;
    }
  }
}
