// `berth node meta apply|read` (Nomad 1.3+'s dynamic node metadata): set or
// read a node's meta on its agent, which keeps dynamic meta across restarts
// and sends it to the server at once, so constraints on ${meta.<key>} see it.
// Also what `alloc status --verbose` prints of a placement (Nomad's
// placement metrics).

import type { Command } from 'commander';
import type * as Api from '../api/index.js';
import type { AllocMetric } from '../structs/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import { nodeAgentAt, tokenOf } from './alloc-io-commands.js';
import type { CommandContext } from './command-context.js';
import { formatKV } from './nomad-format.js';
import { resolveNode } from './node-status-command.js';
import { UsageError } from './usage-error.js';

/** Adds `meta apply` and `meta read` to `berth node`. */
export function addNodeMetaCommands(node: Command, ctx: CommandContext): void {
  const meta = node.command('meta').description("Read or change a node's meta (dynamic meta survives agent restarts)");
  apiCommand(
    meta
      .command('apply')
      .description('Set dynamic meta on a node: KEY=VALUE ... (KEY= with nothing removes the key, a static one too, until set again)')
      .argument('[pairs...]', 'KEY=VALUE pairs')
      .option('--node-id <id>', 'the node (ID or unique prefix); default: the only node')
      .option('--unset <keys>', 'comma-separated dynamic keys to forget (they return to their static value, if any)'),
    ['node meta apply --node-id 9c1e rack=r2 tier=gold', 'node meta apply --node-id 9c1e --unset tier', 'node meta apply -node-id 9c1e -unset tier,zone rack=r3'],
  ).action(apiAction(ctx, apply));
  apiCommand(
    meta.command('read').description("Show a node's meta: all, dynamic and static").option('--node-id <id>', 'the node (ID or unique prefix); default: the only node'),
    ['node meta read --node-id 9c1e', 'node meta read --json'],
  ).action(apiAction(ctx, read));
}

/** The node named by --node-id, or the only node of the cluster. */
async function targetNode(s: ApiSession, opts: Record<string, unknown>): Promise<Api.Node> {
  let id = opts['nodeId'] as string | undefined;
  if (!id) {
    const { body: nodes } = await s.api.get<Api.NodeListStub[]>(KINDS.node.listPath);
    if (nodes.length !== 1) throw new UsageError(`the cluster has ${nodes.length} nodes; name one with --node-id`);
    id = (nodes[0] as Api.NodeListStub).ID;
  } else id = await resolveNode(s, id);
  return (await s.api.get<Api.Node>(KINDS.node.getPath(id))).body;
}

async function apply(s: ApiSession, args: string[], opts: Record<string, unknown>): Promise<void> {
  // commander hands a variadic argument over as one array.
  const pairs = (args as unknown[]).flat().map(String);
  const set: Record<string, string | null> = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new UsageError(`"${p}" is not KEY=VALUE`);
    const value = p.slice(eq + 1);
    set[p.slice(0, eq)] = value === '' ? null : value;
  }
  const unset = String(opts['unset'] ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean);
  if (pairs.length === 0 && unset.length === 0) throw new UsageError('give KEY=VALUE pairs to set, or --unset KEYS');
  const node = await targetNode(s, opts);
  const body: Api.NodeMetaApplyRequest = { NodeID: node.ID, Meta: set, BerthUnset: unset };
  const { body: answer } = await nodeAgentAt(s, node, tokenOf(opts)).request<Api.NodeMetaResponse>('POST', '/v1/client/metadata', { body });
  if (s.out.json) return s.out.document(answer);
  s.out.line(`Node "${node.Name}" (${shortId(node.ID)}) meta updated`);
  printMeta(s, answer);
}

async function read(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const node = await targetNode(s, opts);
  const { body } = await nodeAgentAt(s, node, tokenOf(opts)).get<Api.NodeMetaResponse>('/v1/client/metadata', { node_id: node.ID });
  if (s.out.json) return s.out.document(body);
  printMeta(s, body);
}

/** As Nomad's `node meta read`: all, dynamic (`<unset>` for a removed key) and static meta. */
function printMeta(s: ApiSession, v: Api.NodeMetaResponse): void {
  const section = (title: string, m: Record<string, string | null>, first = false): void => {
    if (!first) s.out.line();
    s.out.line(s.style.bold(title));
    for (const line of formatKV(Object.keys(m).sort().map((k) => [k, m[k] ?? '<unset>']))) s.out.line(line);
  };
  section('All Meta', v.Meta ?? {}, true);
  section('Dynamic Meta', v.Dynamic ?? {});
  section('Static Meta', v.Static ?? {});
}

/** Nomad's `alloc status -verbose` placement metrics: what was looked at, what filtered, the best scores. */
export function printPlacementMetrics(s: ApiSession, m: AllocMetric, nodeName: (id: string) => string): void {
  s.out.line();
  s.out.line(s.style.bold('Placement Metrics'));
  const dcs = Object.entries(m.nodesAvailable).map(([dc, n]) => `${dc}=${n}`).join(', ');
  s.out.line(`  * Nodes evaluated: ${m.nodesEvaluated}; filtered: ${m.nodesFiltered}; exhausted: ${m.nodesExhausted}; available: ${dcs || '-'}`);
  for (const [c, n] of Object.entries(m.constraintFiltered)) s.out.line(`  * Constraint "${c}": ${n} node${n === 1 ? '' : 's'} excluded by filter`);
  for (const [c, n] of Object.entries(m.classFiltered)) s.out.line(`  * Class "${c}": ${n} node${n === 1 ? '' : 's'} excluded by filter`);
  for (const [d, n] of Object.entries(m.dimensionExhausted)) s.out.line(`  * Dimension "${d}": ${n} node${n === 1 ? '' : 's'} exhausted`);
  if (m.scoreMetaData.length === 0) return;
  const names = [...new Set(m.scoreMetaData.flatMap((x) => Object.keys(x.scores)))];
  s.out.table(
    ['Node', ...names, 'final score'],
    m.scoreMetaData.map((x) => [`${shortId(x.nodeId)} ${nodeName(x.nodeId)}`.trim(), ...names.map((n) => (x.scores[n] === undefined ? '0' : x.scores[n].toFixed(3))), x.normScore.toFixed(3)]),
  );
}
