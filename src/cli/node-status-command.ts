// `berth node status`, as Nomad's `nomad node status` prints it: the node
// list (`-verbose` adds the address and version, `-os` the OS, `-allocs`
// the running allocations, `-quiet` only IDs), or one node (its drain,
// eligibility, drivers, CSI plugins, events, allocated resources and
// allocations; `-verbose` adds the drivers' table, attributes and meta,
// `-short` leaves out all but the allocations). `-json` prints Nomad's JSON.
// Also how the node commands find a node by ID prefix and read its
// allocations.

import type { Command } from 'commander';
import type * as Api from '../api/index.js';
import { ApiClient, ApiClientError, KINDS } from './api-client.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import { tokenOf } from './alloc-io-commands.js';
import type { CommandContext } from './command-context.js';
import { formatKV, formatList, formatTime, iBytes, prettyTimeDiff } from './nomad-format.js';
import { UsageError } from './usage-error.js';

/** Adds `status` to `berth node`. */
export function addNodeStatusCommand(node: Command, ctx: CommandContext): void {
  apiCommand(
    node
      .command('status')
      .description('List nodes, or show one node: drain, eligibility, drivers, CSI plugins, events, resources and allocations')
      .argument('[node]', 'node ID or a unique prefix (at least two characters)')
      .option('--self', 'the node of the agent at --address')
      .option('--verbose', 'full IDs, and more of each node (address and version; drivers, attributes and meta of one node)')
      .option('--short', 'one node: leave out events and resources')
      .option('--os', 'list: add each node\'s operating system')
      .option('--quiet', 'list: only the node IDs')
      .option('--allocs', 'list: add the number of running allocations of each node')
      .option('--filter <expression>', 'list: only the nodes this filter expression (Nomad\'s, go-bexpr) keeps, such as \'Status == "ready"\'')
      .option('--per-page <n>', 'list: at most this many nodes')
      .option('--page-token <token>', 'list: start at this node (from the last page\'s hint)'),
    ['node status', 'node status -verbose', 'node status -filter \'Datacenter == "dc1"\'', 'node status 9c1e', 'node status -self -short', 'node status 9c1e -json'],
  ).action(apiAction(ctx, nodeStatus));
}

/** The full ID of the node `idOrPrefix` names, as Nomad's CLI finds it (`/v1/nodes?prefix=`). Throws UsageError when none or several match. */
export async function resolveNode(s: ApiSession, idOrPrefix: string): Promise<string> {
  if (idOrPrefix.length === 1) throw new UsageError('Identifier must contain at least two characters.');
  const prefix = sanitizeUuidPrefix(idOrPrefix);
  const { body: nodes } = await s.api.get<Api.NodeListStub[]>(KINDS.node.listPath, { prefix });
  if (nodes.length === 1) return (nodes[0] as Api.NodeListStub).ID;
  const exact = nodes.find((n) => n.ID === prefix);
  if (exact) return exact.ID;
  if (nodes.length === 0) throw new ApiClientError('NOT_FOUND', `No node(s) with prefix "${idOrPrefix}" found`, 404);
  throw new ApiClientError('CLI_AMBIGUOUS_PREFIX', `Prefix matched multiple nodes\n\n${stubTable(nodes, false).join('\n')}`, 0, { matches: nodes.map((n) => n.ID) });
}

/** Nomad's sanitizeUUIDPrefix: an odd-length prefix longer than a UUID's first group loses its last character (prefix search is by byte). */
function sanitizeUuidPrefix(prefix: string): string {
  const hyphens = (prefix.match(/-/g) ?? []).length;
  const length = prefix.length - hyphens;
  return length % 2 !== 0 && /^[0-9a-f-]+$/.test(prefix) && prefix.length > 8 ? prefix.slice(0, -1) : prefix;
}

/** The node that the agent at --address runs (`-self`). */
export async function selfNode(s: ApiSession, opts: Record<string, unknown>): Promise<string> {
  const token = tokenOf(opts);
  const agent = new ApiClient({ address: s.api.address, signal: s.signal, answerTimeoutMs: s.api.answerTimeoutMs, ...(token ? { token } : {}) });
  const { body } = await agent.get<{ nodeId: string }>('/v1/client/self');
  return body.nodeId;
}

/** What the node commands read of a node's allocation. */
export interface NodeAllocRow {
  id: string;
  nodeId: string;
  jobId: string;
  taskGroup: string;
  jobVersion: number;
  desiredStatus: string;
  clientStatus: string;
  /** The drainer asked for it to move. */
  migrating: boolean;
  cpuMhz: number;
  memoryMb: number;
  /** Epoch milliseconds. */
  createTime: number;
  modifyTime: number;
}

/** The node's allocations (`GET /v1/node/:id/allocations`); a blocking read with `query.index`. */
export async function nodeAllocations(s: ApiSession, nodeId: string, query: Record<string, string> = {}): Promise<{ rows: NodeAllocRow[]; index: number }> {
  const { body, index } = await s.api.get<Api.Allocation[]>(`/v1/node/${encodeURIComponent(nodeId)}/allocations`, query);
  const rows = body.map((a) => ({
    id: a.ID,
    nodeId: a.NodeID,
    jobId: a.JobID,
    taskGroup: a.TaskGroup,
    jobVersion: a.Job?.Version ?? 0,
    desiredStatus: a.DesiredStatus,
    clientStatus: a.ClientStatus,
    migrating: Boolean(a.DesiredTransition.Migrate),
    cpuMhz: a.Resources?.CPU ?? 0,
    memoryMb: a.Resources?.MemoryMB ?? 0,
    createTime: Math.floor(a.CreateTime / 1_000_000),
    modifyTime: Math.floor(a.ModifyTime / 1_000_000),
  }));
  return { rows, index };
}

async function nodeStatus(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const verbose = Boolean(opts['verbose']);
  if (!idArg && !opts['self']) return nodeList(s, opts, verbose);
  if (idArg && opts['self']) throw new UsageError('give either a node ID or -self, not both');
  const id = idArg ? await resolveNode(s, idArg) : await selfNode(s, opts);
  const { body: node } = await s.api.get<Api.Node>(KINDS.node.getPath(id));
  if (s.out.json) return s.out.document(node);
  const { rows: allocs } = await nodeAllocations(s, id);
  printNode(s, node, allocs, { verbose, short: Boolean(opts['short']) });
}

async function nodeList(s: ApiSession, opts: Record<string, unknown>, verbose: boolean): Promise<void> {
  if (opts['quiet'] && (verbose || s.out.json)) throw new UsageError('-quiet cannot be used with -verbose or -json');
  const perPage = opts['perPage'] as string | undefined;
  if (perPage !== undefined && !/^\d+$/.test(perPage)) throw new UsageError('-per-page must be a whole number');
  const query: Record<string, string> = {};
  if (opts['filter']) query['filter'] = String(opts['filter']);
  if (perPage) query['per_page'] = perPage;
  if (opts['pageToken']) query['next_token'] = String(opts['pageToken']);
  if (opts['os']) query['os'] = 'true';
  const { body: nodes, headers } = await listWithHeaders(s, query);
  if (s.out.json) return s.out.document(nodes);
  if (nodes.length === 0) {
    s.out.line('No nodes registered');
    return;
  }
  if (opts['quiet']) {
    for (const n of nodes) s.out.line(n.ID);
    return;
  }
  const header = ['ID', 'Node Pool', 'DC', 'Name', 'Class', ...(opts['os'] ? ['OS'] : []), ...(verbose ? ['Address', 'Version'] : []), 'Drain', 'Eligibility', 'Status'];
  if (verbose) header.push('Leader Link');
  if (opts['allocs']) header.push('Running Allocs');
  const rows: string[][] = [];
  for (const n of nodes) {
    const row = [idOf(n.ID, verbose), n.NodePool, n.Datacenter, n.Name, n.NodeClass];
    if (opts['os']) row.push(n.Attributes?.['os.name'] ?? '');
    if (verbose) row.push(n.Address, n.Version);
    row.push(String(n.Drain), n.SchedulingEligibility, s.style.status(n.Status));
    if (verbose) row.push(leaderLink(n.BerthLeaderConnected));
    if (opts['allocs']) row.push(String((await nodeAllocations(s, n.ID)).rows.filter((a) => a.clientStatus === 'running').length));
    rows.push(row);
  }
  for (const line of formatList(header, rows)) s.out.line(line);
  const next = headers.get('x-nomad-nexttoken');
  if (next) {
    s.out.line();
    s.out.line('Results have been paginated. To get the next page run:');
    s.out.line();
    s.out.line(`${withoutPageToken(process.argv.slice(2))} -page-token ${next}`);
  }
}

/** The list with the answer's headers (the next page's token). */
async function listWithHeaders(s: ApiSession, query: Record<string, string>): Promise<{ body: Api.NodeListStub[]; headers: { get(name: string): string | null } }> {
  const res = await s.api.stream(KINDS.node.listPath, query);
  return { body: JSON.parse(await res.text()) as Api.NodeListStub[], headers: res.headers };
}

/** The command line as typed, without its page token (Nomad's argsWithoutPageToken). */
function withoutPageToken(args: readonly string[]): string {
  const out: string[] = ['berth'];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (/^--?page-token$/.test(a)) i++;
    else if (!/^--?page-token=/.test(a)) out.push(a);
  }
  return out.join(' ');
}

/** The first 8 characters of an ID, or all of it with -verbose (Nomad's limit to shortId/fullId). */
function idOf(id: string, verbose: boolean): string {
  return verbose ? id : id.slice(0, 8);
}

/** Berth's: whether the leader can call the node (controller calls go that way); only the leader knows. */
function leaderLink(connected: boolean | undefined): string {
  if (connected === undefined) return 'unknown (asked a follower)';
  return connected ? 'connected' : 'not connected';
}

/** Nomad's table of nodes a prefix matched. */
function stubTable(nodes: readonly Api.NodeListStub[], verbose: boolean): string[] {
  return formatList(
    ['ID', 'DC', 'Name', 'Class', 'Drain', 'Eligibility', 'Status'],
    nodes.map((n) => [idOf(n.ID, verbose), n.Datacenter, n.Name, n.NodeClass, String(n.Drain), n.SchedulingEligibility, n.Status]),
  );
}

/** Nomad's formatDrain: `false`, or `true` with the deadline, force, and whether system jobs stay. */
export function formatDrain(n: Pick<Api.Node, 'Drain' | 'DrainStrategy'>): string {
  const d = n.DrainStrategy;
  if (!d) return String(n.Drain);
  let out = 'true';
  if (d.Deadline < 0) out += '; force drain';
  else if (!formatTime(d.ForceDeadline)) out += '; no deadline';
  else out += `; ${formatTime(d.ForceDeadline)} deadline`;
  if (d.IgnoreSystemJobs) out += '; ignoring system jobs';
  return out;
}

const sorted = (m: Record<string, unknown> | null | undefined): string[] => Object.keys(m ?? {}).sort();

function printNode(s: ApiSession, n: Api.Node, allocs: NodeAllocRow[], opts: { verbose: boolean; short: boolean }): void {
  const running = allocs.filter((a) => a.clientStatus === 'running');
  const drivers = Object.entries(n.Drivers ?? {})
    .filter(([, d]) => d.Detected)
    .map(([name, d]) => (d.Healthy ? name : `${name} (unhealthy)`))
    .sort();
  const basic: Array<[string, string]> = [
    ['ID', n.ID],
    ['Name', n.Name],
    ['Node Pool', n.NodePool],
    ['Class', n.NodeClass],
    ['DC', n.Datacenter],
    ['Drain', formatDrain(n)],
    ['Eligibility', n.SchedulingEligibility],
    ['Status', s.style.status(n.Status)],
    ['CSI Controllers', sorted(n.CSIControllerPlugins).join(',')],
    ['CSI Drivers', sorted(n.CSINodePlugins).join(',')],
  ];
  if (opts.short || !opts.verbose) {
    basic.push(['Host Volumes', sorted(n.HostVolumes).join(',')], ['Host Networks', sorted(n.HostNetworks).join(',')], ['CSI Volumes', '']);
    basic.push([opts.short ? 'Drivers' : 'Driver Status', drivers.join(',')]);
  }
  // Berth's: how the servers hear from the node.
  const heard = n.BerthLastHeartbeat ?? '';
  basic.push(['Leader Link', leaderLink(n.BerthLeaderConnected)], ['Last Heartbeat', heard && `${formatTime(heard)} (${prettyTimeDiff(Date.parse(heard))})`]);
  for (const line of formatKV(basic)) s.out.line(line);

  if (!opts.short) {
    if (opts.verbose) printVerboseSections(s, n);
    section(s, 'Node Events');
    const events = [...(n.Events ?? [])].reverse();
    const header = opts.verbose ? ['Time', 'Subsystem', 'Message', 'Details'] : ['Time', 'Subsystem', 'Message'];
    const rows = events.map((e) => {
      const row = [formatTime(e.Timestamp), e.Details?.['driver'] ? `Driver: ${e.Details['driver']}` : e.Subsystem, e.Message];
      if (opts.verbose) row.push(Object.entries(e.Details ?? {}).map(([k, v]) => `${k}: ${v}`).join(', '));
      return row;
    });
    printList(s, header, rows);
    section(s, 'Allocated Resources');
    const total = { cpu: n.NodeResources?.Cpu.CpuShares ?? 0, memoryMb: n.NodeResources?.Memory.MemoryMB ?? 0, diskMb: n.NodeResources?.Disk.DiskMB ?? 0 };
    const used = running.reduce((u, a) => ({ cpu: u.cpu + a.cpuMhz, memoryMb: u.memoryMb + a.memoryMb }), { cpu: 0, memoryMb: 0 });
    const mb = 1024 * 1024;
    printList(
      s,
      ['CPU', 'Memory', 'Disk', 'Alloc Count'],
      [[`${used.cpu}/${total.cpu} MHz`, `${iBytes(used.memoryMb * mb)}/${iBytes(total.memoryMb * mb)}`, `${iBytes(0)}/${iBytes(total.diskMb * mb)}`, String(running.length)]],
    );
  }

  section(s, 'Allocations');
  if (allocs.length === 0) s.out.line('No allocations placed');
  else {
    // Nomad's formatAllocList; with -verbose full IDs and times (Berth's allocations carry no evaluation ID).
    const when = (ms: number): string => (opts.verbose ? formatTime(new Date(ms).toISOString()) : prettyTimeDiff(ms));
    printList(
      s,
      ['ID', 'Node ID', 'Task Group', 'Version', 'Desired', 'Status', 'Created', 'Modified'],
      allocs.map((a) => [idOf(a.id, opts.verbose), idOf(a.nodeId, opts.verbose), a.taskGroup, String(a.jobVersion), a.desiredStatus, s.style.status(a.clientStatus), when(a.createTime), when(a.modifyTime)]),
    );
  }
  if (opts.verbose) {
    section(s, 'Attributes');
    for (const line of formatKV(sorted(n.Attributes).map((k) => [k, n.Attributes?.[k] ?? '']))) s.out.line(line);
    section(s, 'Meta');
    for (const line of formatKV(sorted(n.Meta).map((k) => [k, n.Meta?.[k] ?? '']))) s.out.line(line);
  }
}

/** `-verbose`: host volumes and networks, the drivers' table and (Berth's) each CSI plugin instance. */
function printVerboseSections(s: ApiSession, n: Api.Node): void {
  if (sorted(n.HostVolumes).length) {
    section(s, 'Host Volumes');
    printList(s, ['Name', 'ReadOnly', 'Source'], sorted(n.HostVolumes).map((k) => [k, String(n.HostVolumes?.[k]?.ReadOnly), n.HostVolumes?.[k]?.Path ?? '']));
  }
  if (sorted(n.HostNetworks).length) {
    section(s, 'Host Networks');
    printList(
      s,
      ['Name', 'CIDR', 'Interface', 'ReservedPorts'],
      sorted(n.HostNetworks).map((k) => {
        const h = n.HostNetworks?.[k];
        return [k, h?.CIDR ?? '', h?.Interface ?? '', h?.ReservedPorts ?? ''];
      }),
    );
  }
  section(s, 'Drivers');
  printList(
    s,
    ['Driver', 'Detected', 'Healthy', 'Message', 'Time'],
    sorted(n.Drivers).map((k) => {
      const d = n.Drivers?.[k] as Api.DriverInfo;
      return [k, String(d.Detected), s.style.status(String(d.Healthy)), d.HealthDescription, formatTime(d.UpdateTime)];
    }),
  );
  const plugins = [
    ...Object.values(n.CSIControllerPlugins ?? {}).map((p) => ({ p, kind: 'controller' })),
    ...Object.values(n.CSINodePlugins ?? {}).map((p) => ({ p, kind: 'node' })),
  ];
  if (plugins.length) {
    section(s, 'CSI Plugins');
    printList(
      s,
      ['ID', 'Type', 'Provider', 'Version', 'Healthy', 'Message'],
      plugins.map(({ p, kind }) => [p.PluginID, kind, p.Provider, p.ProviderVersion, s.style.status(String(p.Healthy)), p.HealthDescription]),
    );
  }
}

function section(s: ApiSession, title: string): void {
  s.out.line();
  s.out.line(s.style.bold(title));
}

function printList(s: ApiSession, header: readonly string[], rows: ReadonlyArray<readonly string[]>): void {
  for (const line of formatList(header, rows)) s.out.line(line);
}
