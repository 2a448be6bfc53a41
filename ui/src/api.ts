// The UI's one door to Berth: every path, query and field name of the public
// HTTP API that the pages use is here, and nowhere else. The shapes below are
// the UI's own reading of the API's JSON (it imports nothing from the server);
// fields a page only displays are typed loosely.
//
// Volume health (usage, condition, usage history, drift) comes from the
// server's volume health work; until a server carries those fields they are
// simply absent and the pages say "no usage reported". Their names are in
// HEALTH_FIELDS and the `usage*`/`condition*`/`drift*` functions only.

import type { ACLToken, AgentSelf, Event, Events } from '../../src/api/index.js';

const TOKEN_KEY = 'berth.token';

/** A refused or failed API call: the API's `{ code, message }`, with the HTTP status. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
  }
}

/** The token kept for this browser tab (sessionStorage), or '' when none. */
export function savedToken(): string {
  return sessionStorage.getItem(TOKEN_KEY) ?? '';
}

/** Keeps `token` for this tab only; '' forgets it. */
export function saveToken(token: string): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const token = savedToken();
  const withAccept = { Accept: 'application/json', ...extra };
  return token ? { ...withAccept, 'X-Nomad-Token': token } : withAccept;
}

async function fail(res: Response): Promise<never> {
  let code = `HTTP_${res.status}`;
  let message = res.statusText || `HTTP ${res.status}`;
  try {
    const body = (await res.json()) as { code?: string; message?: string };
    if (body.code) code = body.code;
    if (body.message) message = body.message;
  } catch {
    // Not JSON: keep the status line.
  }
  throw new ApiError(res.status, code, message);
}

/** GET a JSON document. Throws ApiError for any non-2xx answer. */
export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { headers: headers(), ...(signal ? { signal } : {}) });
  if (!res.ok) return fail(res);
  return (await res.json()) as T;
}

/** A change (POST/PUT/DELETE). Throws ApiError for any non-2xx answer. */
export async function sendJson<T>(method: 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const init: RequestInit = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  if (!res.ok) return fail(res);
  return (await res.json()) as T;
}

const enc = encodeURIComponent;

// ---- shapes ---------------------------------------------------------------

export type Role = 'management' | 'read-only' | 'node';
export interface Caller {
  name: string;
  role: Role;
}

export interface HealthReport {
  healthy: boolean;
  healthReason: string;
  allocId?: string;
  nodeId?: string;
  provider?: string;
  version?: string;
  updatedAt?: number;
}

export interface Node {
  id: string;
  name: string;
  datacenter: string;
  httpAddr: string;
  status: string;
  statusDescription: string;
  lastHeartbeat: number;
  resources: { cpuMhz: number; memoryMb: number };
  attributes: Record<string, string>;
  drivers: Record<string, { detected: boolean; healthy: boolean; healthReason: string }>;
  csiControllerPlugins: Record<string, HealthReport>;
  csiNodePlugins: Record<string, HealthReport>;
}

export interface PluginInstance extends HealthReport {
  nodeId: string;
  externalNodeId?: string;
  maxVolumes?: number;
  topology?: Record<string, string>;
}

export interface Plugin {
  id: string;
  provider: string;
  version: string;
  controllerRequired: boolean;
  controllerCapabilities: string[];
  nodeCapabilities: string[];
  controllers: Record<string, PluginInstance>;
  nodes: Record<string, PluginInstance>;
  controllersHealthy: number;
  controllersExpected: number;
  nodesHealthy: number;
  nodesExpected: number;
  allocations: Array<{ allocId: string; nodeId: string; jobId: string; namespace: string; type: string; desiredStatus: string; clientStatus: string }>;
}

export interface Claim {
  namespace: string;
  volumeId: string;
  allocId: string;
  nodeId: string;
  mode: 'read' | 'write';
  accessMode: string;
  attachmentMode: string;
  /** taken, or a release step (releasing, ...). */
  state: string;
  controllerPublish: string;
  releaseReason: string;
  releaseAttempts: number;
  lastError: string;
  claimTime: number;
}

/** One usage report of a volume (from NodeGetVolumeStats), as the volume health work names it. */
export interface VolumeUsage {
  bytesTotal?: number;
  bytesUsed?: number;
  bytesAvailable?: number;
  inodesTotal?: number;
  inodesUsed?: number;
  inodesAvailable?: number;
  node?: string;
  reportedAt?: number;
}

/** The plugin's VOLUME_CONDITION. */
export interface VolumeCondition {
  abnormal: boolean;
  message: string;
}

export interface Volume {
  id: string;
  namespace: string;
  name: string;
  externalId: string;
  pluginId: string;
  provider: string;
  capacityMinBytes?: number;
  capacityMaxBytes?: number;
  capacityBytes?: number;
  capabilities: Array<{ accessMode: string; attachmentMode: string }>;
  parameters?: Record<string, string>;
  accessibleTopology?: Array<Record<string, string>>;
  secretNames?: string[];
  schedulable: boolean;
  claims: Claim[];
  createIndex: number;
  modifyIndex: number;
}

export interface TaskEvent {
  at: number;
  type: string;
  message: string;
  details: Record<string, string>;
}

export interface Allocation {
  id: string;
  namespace: string;
  jobId: string;
  taskGroup: string;
  name?: string;
  nodeId: string;
  csiVolumes?: Array<{ volumeId: string; pluginId: string; readOnly: boolean }>;
  desiredStatus: string;
  desiredDescription: string;
  clientStatus: string;
  clientDescription: string;
  taskStates: Record<string, { state: string; failed: boolean; restarts: number; startedAt: number; finishedAt: number; events: TaskEvent[] }>;
  createTime: number;
  modifyTime: number;
}

export interface JobGroup {
  name: string;
  count: number;
  volumes?: Record<string, { type: string; source: string; accessMode?: string; attachmentMode?: string; readOnly?: boolean }>;
  tasks: Array<{ name: string; driver: string; resources?: { cpuMhz: number; memoryMb: number }; csiPlugin?: { id: string; type: string } }>;
}

export interface Job {
  id: string;
  namespace: string;
  type: string;
  priority: number;
  status: string;
  stop: boolean;
  version: number;
  datacenters: string[];
  groups: JobGroup[];
  submitTime: number;
}

export interface PlacementFailure {
  unplaced: number;
  nodesEvaluated: number;
  nodesFiltered: number;
  nodesExhausted: number;
  reasons: Record<string, number>;
}

export interface Evaluation {
  id: string;
  jobId: string;
  triggeredBy: string;
  status: string;
  statusDescription: string;
  blockedReason: string;
  failedPlacements: Record<string, PlacementFailure>;
  placed: number;
  stopped: number;
  createTime: number;
}

/** One change of the event stream (Nomad's Event: Topic, Type, Key, Namespace, FilterKeys, Index, Payload). */
export type StreamEvent = Event;

/** The caller of a token as GET /v1/acl/token/self describes it: a management token, else a client token whose one policy is its Berth role. */
function callerOf(token: ACLToken): Caller {
  const role = token.Type === 'management' ? 'management' : token.Policies?.[0] === 'node' ? 'node' : 'read-only';
  return { name: token.Name, role };
}

// ---- reads ----------------------------------------------------------------

export const api = {
  self: async () => callerOf(await getJson<ACLToken>('/v1/acl/token/self')),
  /** The server's latest store index (its `raft.applied_index`). */
  latestIndex: async () => Number((await getJson<AgentSelf>('/v1/agent/self')).stats['raft']?.['applied_index'] ?? 0),
  nodes: () => getJson<Node[]>('/v1/nodes'),
  node: (id: string) => getJson<Node>(`/v1/node/${enc(id)}`),
  nodeAllocations: (id: string) => getJson<Allocation[]>(`/v1/node/${enc(id)}/allocations`),
  plugins: () => getJson<Plugin[]>('/v1/plugins'),
  plugin: (id: string) => getJson<Plugin>(`/v1/plugin/csi/${enc(id)}`),
  volumes: () => getJson<Volume[]>('/v1/volumes'),
  volume: (ns: string, id: string) => getJson<Volume>(`/v1/volume/csi/${enc(id)}?namespace=${enc(ns)}`),
  jobs: () => getJson<Job[]>('/v1/jobs?namespace=*'),
  job: (ns: string, id: string) => getJson<Job>(`/v1/job/${enc(id)}?namespace=${enc(ns)}`),
  jobAllocations: (ns: string, id: string) => getJson<Allocation[]>(`/v1/job/${enc(id)}/allocations?namespace=${enc(ns)}`),
  jobEvaluations: (ns: string, id: string) => getJson<Evaluation[]>(`/v1/job/${enc(id)}/evaluations?namespace=${enc(ns)}`),
  allocations: () => getJson<Allocation[]>('/v1/allocations'),
  allocation: (id: string) => getJson<Allocation>(`/v1/allocation/${enc(id)}`),
  /**
   * The last `lines` lines of a task's stdout or stderr. Served by the agent
   * that runs the allocation (the dev agent serves its own); management tokens only.
   */
  async logTail(allocId: string, task: string, type: 'stdout' | 'stderr', lines = 50): Promise<string> {
    const res = await fetch(`/v1/client/allocation/${enc(allocId)}/logs?task=${enc(task)}&type=${type}&lines=${lines}`, { headers: headers() });
    if (!res.ok) return fail(res);
    return res.text();
  },
  /** Every change of the topics (`Topic` or `Topic:key`) up to now, from `index` on, in every namespace: the history a script reads with `--until-now`. */
  async history(topics: string[], index: number): Promise<StreamEvent[]> {
    const q = [...topics.map((t) => `topic=${enc(t)}`), `index=${index}`, 'namespace=*', 'until=now'].join('&');
    const res = await fetch(`/v1/event/stream?${q}`, { headers: headers() });
    if (!res.ok) return fail(res);
    return parseLines(await res.text());
  },
};

// ---- actions (management tokens; the API refuses others) -------------------

export const actions = {
  stopJob: (ns: string, id: string) => sendJson<{ evalId: string; index: number }>('DELETE', `/v1/job/${enc(id)}?namespace=${enc(ns)}`),
  detachVolume: (ns: string, id: string, nodeId: string, force: boolean) =>
    sendJson<{ detached: string; nodeId: string; stoppedAllocations?: string[]; warning?: string }>(
      'POST',
      `/v1/volume/csi/${enc(id)}/detach?namespace=${enc(ns)}&node=${enc(nodeId)}${force ? '&force=true' : ''}`,
    ),
};

// ---- volume health (fields of the volume health work) ---------------------

/**
 * Where the volume health work puts its data (docs/architecture.md section 8):
 * a volume's `usage` is a list, one entry per node
 * (`{ nodeId, bytes?: {available,total,used}, inodes?: {...}, reportedAt }`),
 * its `condition` `{ abnormal, message, sources }` or null.
 */
export const HEALTH_FIELDS = {
  /** On a volume: the latest report per node. */
  usage: 'usage',
  /** On a volume: the plugin's condition. */
  condition: 'condition',
  /** Usage over time: GET, answers `{ samples: [{ at, nodeId, bytesUsed, bytesTotal, inodesUsed, inodesTotal }] }`. */
  usageHistoryPath: (ns: string, id: string) => `/v1/volume/csi/${enc(id)}/usage?namespace=${enc(ns)}`,
  /** The drift loop's latest differences about the volume: GET, answers `{ differences: Drift[], checkedAt }`. */
  driftPath: (ns: string, id: string) => `/v1/volume/csi/${enc(id)}/drift?namespace=${enc(ns)}`,
  /** Event stream topics whose changes may carry new usage, condition or drift of a volume. */
  topics: ['CSIVolume', 'volume-condition', 'drift'],
} as const;

/** Endpoints this server answered 404 for: not asked again in this tab (a server without volume health). */
const missing = new Set<string>();

async function unlessMissing<T>(kind: string, read: () => Promise<T>): Promise<T | undefined> {
  if (missing.has(kind)) return undefined;
  try {
    return await read();
  } catch (err) {
    // "no route": this server has no such endpoint (a missing volume is a 404 too, but says so).
    if (err instanceof ApiError && err.status === 404 && err.message.startsWith('no route')) {
      missing.add(kind);
      return undefined;
    }
    throw err;
  }
}

/** One difference `volume doctor` found, with the command that repairs it. */
export interface Drift {
  kind: string;
  message?: string;
  volumeId?: string;
  nodeId?: string;
  repair?: string;
}

function field<T>(v: object, name: string): T | undefined {
  return (v as Record<string, unknown>)[name] as T | undefined;
}

interface UsageFigures {
  available: number;
  total: number;
  used: number;
}

/** The volume's latest usage reports (one per node), or [] when none was reported. */
export function volumeUsage(v: Volume): VolumeUsage[] {
  const list = field<Array<{ nodeId: string; bytes?: UsageFigures; inodes?: UsageFigures; reportedAt: number }>>(v, HEALTH_FIELDS.usage);
  if (!Array.isArray(list)) return [];
  return list.map((u) => ({
    node: u.nodeId,
    reportedAt: u.reportedAt,
    ...(u.bytes ? { bytesTotal: u.bytes.total, bytesUsed: u.bytes.used, bytesAvailable: u.bytes.available } : {}),
    ...(u.inodes ? { inodesTotal: u.inodes.total, inodesUsed: u.inodes.used, inodesAvailable: u.inodes.available } : {}),
  }));
}

/** The plugin's condition of the volume, or undefined when none was reported. */
export function volumeCondition(v: Volume): VolumeCondition | undefined {
  const c = field<VolumeCondition>(v, HEALTH_FIELDS.condition);
  return c && typeof c === 'object' && typeof c.abnormal === 'boolean' ? c : undefined;
}

function listOf<T>(body: unknown, key: string): T[] {
  if (Array.isArray(body)) return body as T[];
  const inner = body && typeof body === 'object' ? (body as Record<string, unknown>)[key] : undefined;
  return Array.isArray(inner) ? (inner as T[]) : [];
}

/** Usage reports over time, oldest first; undefined when this server has no such endpoint. */
export async function usageHistory(ns: string, id: string): Promise<VolumeUsage[] | undefined> {
  const body = await unlessMissing('usage-history', () => getJson(HEALTH_FIELDS.usageHistoryPath(ns, id)));
  if (body === undefined) return undefined;
  const samples = listOf<{ at: number; nodeId: string; bytesUsed?: number; bytesTotal?: number; inodesUsed?: number; inodesTotal?: number }>(body, 'samples');
  return samples
    .map(({ at, nodeId, ...figures }) => ({ ...figures, node: nodeId, reportedAt: at }))
    .sort((a, b) => (a.reportedAt ?? 0) - (b.reportedAt ?? 0));
}

/** The differences `volume doctor` last found for the volume; undefined when this server has no such endpoint. */
export async function volumeDrift(ns: string, id: string): Promise<Drift[] | undefined> {
  const body = await unlessMissing('drift', () => getJson(HEALTH_FIELDS.driftPath(ns, id)));
  return body === undefined ? undefined : listOf<Drift>(body, 'differences');
}

// ---- the event stream -----------------------------------------------------

/** The events of the stream's frames (one `{"Index":N,"Events":[...]}` per line; `{}` heartbeats carry none). */
function parseLines(text: string): StreamEvent[] {
  const out: StreamEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const frame = JSON.parse(line) as Partial<Events>;
    if (Array.isArray(frame.Events)) out.push(...frame.Events);
  }
  return out;
}

/**
 * Follows `GET /v1/event/stream` (every topic, every namespace) after
 * `index` (from the present when undefined), calling `onEvent` per change,
 * until `signal` fires or the stream ends. Resolves with the last index
 * seen; rejects with ApiError on a refused request and with the network's
 * error when the stream breaks.
 */
export async function followEvents(onEvent: (ev: StreamEvent) => void, opts: { index?: number; signal: AbortSignal; onOpen?: () => void }): Promise<number | undefined> {
  // Nomad's `index` is the first index to send: the one after the last seen.
  const q = opts.index === undefined ? '?namespace=*' : `?namespace=*&index=${opts.index + 1}`;
  const res = await fetch(`/v1/event/stream${q}`, { headers: headers(), signal: opts.signal, cache: 'no-store' });
  if (!res.ok) return fail(res);
  opts.onOpen?.();
  let last = opts.index ?? Number(res.headers.get('X-Nomad-Index') ?? '0');
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return last;
    buf += value;
    const cut = buf.lastIndexOf('\n');
    if (cut < 0) continue;
    const ready = buf.slice(0, cut);
    buf = buf.slice(cut + 1);
    for (const ev of parseLines(ready)) {
      last = ev.Index;
      onEvent(ev);
    }
  }
}
