// The UI's one door to Berth: every path, query and field name of the public
// HTTP API that the pages use is here, and nowhere else. The shapes below are
// the UI's own reading of the API's JSON (it imports nothing from the server);
// fields a page only displays are typed loosely.
//
// Volume health (usage, condition, usage history, drift) comes from the
// server's volume health work; until a server carries those fields they are
// simply absent and the pages say "no usage reported". Their names are in
// HEALTH_FIELDS and the `usage*`/`condition*`/`drift*` functions only.

import type {
  AllocationListStub,
  Allocation as NomadAllocation,
  CSIPlugin,
  CSIPluginListStub,
  CSIVolume,
  CSIVolumeListStub,
  HostVolumeStub as NomadHostVolumeStub,
  Evaluation as NomadEvaluation,
  Job as NomadJob,
  JobListStub,
  AllocationMetric,
  VolumeClaimListStub,
  VolumeClaimState,
  NodeVolumeUsage,
  VolumeCondition as NomadVolumeCondition,
  VolumeUsageHistory,
  DriftFinding,
  ACLToken,
  NodeListStub,
  Node as NomadNode,
  CSIInfo,
} from '../../src/api/index.js';

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

/** The request headers: Accept JSON, the saved token as X-Nomad-Token, and `extra`. */
export function headers(extra: Record<string, string> = {}): Record<string, string> {
  const token = savedToken();
  const withAccept = { Accept: 'application/json', ...extra };
  return token ? { ...withAccept, 'X-Nomad-Token': token } : withAccept;
}

/** Throws the ApiError of a non-2xx answer (its `{ code, message }`, or Nomad's plain-text error). */
export async function fail(res: Response): Promise<never> {
  let code = res.headers.get('X-Berth-Error-Code') ?? `HTTP_${res.status}`;
  let message = res.statusText || `HTTP ${res.status}`;
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { code?: string; message?: string };
    if (body.code) code = body.code;
    if (body.message) message = body.message;
  } catch {
    // Not JSON (Nomad's plain-text error): the text is the message.
    if (text.trim()) message = text.trim();
  }
  throw new ApiError(res.status, code, message);
}

/** GET a JSON document. Throws ApiError for any non-2xx answer. */
export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { headers: headers(), ...(signal ? { signal } : {}) });
  if (!res.ok) return fail(res);
  return (await res.json()) as T;
}

/** GET a JSON document with the index it is at (`X-Nomad-Index`). Throws ApiError for any non-2xx answer. */
export async function getIndexed<T>(path: string): Promise<{ body: T; index: number }> {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) return fail(res);
  return { body: (await res.json()) as T, index: Number(res.headers.get('X-Nomad-Index') ?? '0') || 0 };
}

/** A change (POST/PUT/DELETE). Throws ApiError for any non-2xx answer. */
export async function sendJson<T>(method: 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const init: RequestInit = { method, headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...(signal ? { signal } : {}) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  if (!res.ok) return fail(res);
  return (await res.json()) as T;
}

const enc = encodeURIComponent;

// ---- shapes ---------------------------------------------------------------
// The API's shapes are Nomad's, defined once in src/api (schemas the server
// answers in and the tests check); the UI imports their types only.


export type Job = NomadJob;
export type JobStub = JobListStub;
export type Allocation = NomadAllocation;
export type AllocStub = AllocationListStub;
export type Evaluation = NomadEvaluation;
export type PlacementFailure = AllocationMetric;
export type Volume = CSIVolume;
export type VolumeStub = CSIVolumeListStub;
/** A dynamic host volume in the list (Nomad 1.10's HostVolumeStub). */
export type HostVolumeStub = NomadHostVolumeStub;
export type Plugin = CSIPlugin;
export type PluginStub = CSIPluginListStub;
export type Claim = VolumeClaimState;
/** A claim as the `claim` topic's events carry it (`Payload.Claim`): the claim with its volume and its allocation's job and status. */
export type ClaimEvent = VolumeClaimListStub;
export type Node = NomadNode;
export type NodeStub = NodeListStub;
export type HealthReport = CSIInfo;
export type Caller = ACLToken;
export type VolumeCondition = NomadVolumeCondition;
export type Drift = DriftFinding;

/** One usage report of a volume (from NodeGetVolumeStats), in the UI's units: bytes, inodes, ms. */
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

/** Berth's role of a token: `management`, else the role Berth gives a client token as its one policy (`read-only`, `node`). */
export function roleOf(caller: Caller): string {
  return caller.Type === 'management' ? 'management' : (caller.Policies?.[0] ?? 'client');
}

/** Whether a token may change things: Nomad's `management` type. */
export function canWrite(caller: Caller | undefined): boolean {
  return caller?.Type === 'management';
}

/** A time in Nomad's nanoseconds since the epoch, as the UI's milliseconds (undefined for 0). */
export function fromNs(ns: number | undefined | null): number | undefined {
  return ns ? Math.floor(ns / 1e6) : undefined;
}

/** A Go time (RFC 3339) as milliseconds; undefined for Go's zero time or none. */
export function fromGoTime(t: string | undefined | null): number | undefined {
  if (!t || t.startsWith('0001-01-01')) return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

// ---- reads ----------------------------------------------------------------

export const api = {
  self: () => getJson<Caller>('/v1/acl/token/self'),
  nodes: () => getJson<NodeStub[]>('/v1/nodes'),
  node: (id: string) => getJson<Node>(`/v1/node/${enc(id)}`),
  nodeAllocations: (id: string) => getJson<Allocation[]>(`/v1/node/${enc(id)}/allocations`),
  plugins: () => getJson<PluginStub[]>('/v1/plugins?type=csi'),
  plugin: (id: string) => getJson<Plugin>(`/v1/plugin/csi/${enc(id)}`),
  volumes: () => getJson<VolumeStub[]>('/v1/volumes?type=csi&namespace=*'),
  hostVolumes: () => getJson<HostVolumeStub[]>('/v1/volumes?type=host&namespace=*'),
  volume: (ns: string, id: string) => getJson<Volume>(`/v1/volume/csi/${enc(id)}?namespace=${enc(ns)}`),
  jobs: () => getJson<JobStub[]>('/v1/jobs?namespace=*'),
  job: (ns: string, id: string) => getJson<Job>(`/v1/job/${enc(id)}?namespace=${enc(ns)}`),
  jobAllocations: (ns: string, id: string) => getJson<AllocStub[]>(`/v1/job/${enc(id)}/allocations?all=true&namespace=${enc(ns)}`),
  jobEvaluations: (ns: string, id: string) => getJson<Evaluation[]>(`/v1/job/${enc(id)}/evaluations?namespace=${enc(ns)}`),
  allocations: () => getJson<AllocStub[]>('/v1/allocations?namespace=*'),
  allocation: (id: string) => getJson<Allocation>(`/v1/allocation/${enc(id)}`),
  /**
   * The last `bytes` of a task's stdout or stderr, as plain text (Nomad's
   * logs route with `origin=end` and `plain=true`). Served by the agent that
   * runs the allocation (the dev agent serves its own); management tokens only.
   */
  async logTail(allocId: string, task: string, type: 'stdout' | 'stderr', bytes = 16 * 1024): Promise<string> {
    const q = `task=${enc(task)}&type=${type}&origin=end&offset=${bytes}&plain=true`;
    const res = await fetch(`/v1/client/fs/logs/${enc(allocId)}?${q}`, { headers: headers() });
    if (!res.ok) return fail(res);
    const text = await res.text();
    // The tail starts mid-line: drop the partial first line unless the whole log fit.
    const cut = text.length >= bytes ? text.indexOf('\n') : -1;
    return cut >= 0 ? text.slice(cut + 1) : text;
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
  stopJob: (ns: string, id: string) => sendJson<{ EvalID: string; Index: number }>('DELETE', `/v1/job/${enc(id)}?namespace=${enc(ns)}`),
  detachVolume: (ns: string, id: string, nodeId: string, force: boolean) =>
    sendJson<{ StoppedAllocations: string[]; Warnings: string }>(
      'DELETE',
      `/v1/volume/csi/${enc(id)}/detach?namespace=${enc(ns)}&node=${enc(nodeId)}${force ? '&force=true' : ''}`,
    ),
};

// ---- volume health (Berth's additions to the CSI API) ---------------------

/**
 * Where Berth's volume health lives: a volume's `BerthUsage` (the latest
 * report per node) and `BerthCondition` (the plugin's VOLUME_CONDITION) are
 * Berth's fields beside Nomad's CSIVolume (a list row carries neither); the usage over time and the drift findings are Berth's
 * own routes beside Nomad's.
 */
export const HEALTH_FIELDS = {
  /** Usage over time: GET, answers VolumeUsageHistory `{ Latest, Samples: [{ At, NodeID, BytesUsed, ... }] }`. */
  usageHistoryPath: (ns: string, id: string) => `/v1/volume/csi/${enc(id)}/usage?namespace=${enc(ns)}`,
  /** The drift loop's latest differences about the volume: GET, answers VolumeDrift `{ Differences, CheckedAt }`. */
  driftPath: (ns: string, id: string) => `/v1/volume/csi/${enc(id)}/drift?namespace=${enc(ns)}`,
  /** Event stream topics whose changes may carry new usage, condition or drift of a volume. */
  topics: ['CSIVolume', 'volume-condition', 'drift'],
} as const;

function usageOf(u: NodeVolumeUsage): VolumeUsage {
  const at = fromGoTime(u.ReportedAt);
  return {
    node: u.NodeID,
    ...(at !== undefined ? { reportedAt: at } : {}),
    ...(u.Bytes ? { bytesTotal: u.Bytes.Total, bytesUsed: u.Bytes.Used, bytesAvailable: u.Bytes.Available } : {}),
    ...(u.Inodes ? { inodesTotal: u.Inodes.Total, inodesUsed: u.Inodes.Used, inodesAvailable: u.Inodes.Available } : {}),
  };
}

/** The volume's (or a volume list row's) latest usage reports (one per node), or [] when none was reported. */
export function volumeUsage(v: Pick<Volume, 'BerthUsage'>): VolumeUsage[] {
  return (v.BerthUsage ?? []).map(usageOf);
}

/** The plugin's condition of the volume, or undefined when none was reported. */
export function volumeCondition(v: Volume): VolumeCondition | undefined {
  return v.BerthCondition ?? undefined;
}

/** Usage reports over time, oldest first. */
export async function usageHistory(ns: string, id: string): Promise<VolumeUsage[]> {
  const body = await getJson<VolumeUsageHistory>(HEALTH_FIELDS.usageHistoryPath(ns, id));
  return body.Samples.map((s) => {
    const at = fromGoTime(s.At);
    return {
      node: s.NodeID,
      ...(at !== undefined ? { reportedAt: at } : {}),
      ...(s.BytesUsed !== null ? { bytesUsed: s.BytesUsed } : {}),
      ...(s.BytesTotal !== null ? { bytesTotal: s.BytesTotal } : {}),
      ...(s.InodesUsed !== null ? { inodesUsed: s.InodesUsed } : {}),
      ...(s.InodesTotal !== null ? { inodesTotal: s.InodesTotal } : {}),
    };
  }).sort((a, b) => (a.reportedAt ?? 0) - (b.reportedAt ?? 0));
}

/** The differences `volume doctor` last found for the volume. */
export async function volumeDrift(ns: string, id: string): Promise<Drift[]> {
  const body = await getJson<{ Differences: Drift[] }>(HEALTH_FIELDS.driftPath(ns, id));
  return body.Differences;
}

// ---- the event stream -----------------------------------------------------

/** One event of the stream, as Nomad's `api.Event`: its payload under Nomad's key (`Job`, `Allocation`, ...). */
export interface StreamEvent {
  Topic: string;
  Type: string;
  Key: string;
  Namespace: string;
  Index: number;
  Payload: Record<string, unknown>;
}

/** The events of a stream's text: one JSON frame a line, `{ Index, Events: [...] }`, or `{}` (a heartbeat). */
function parseLines(text: string): StreamEvent[] {
  const out: StreamEvent[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const frame = JSON.parse(line) as { Index?: number; Events?: Array<Partial<StreamEvent>> };
    for (const ev of frame.Events ?? []) {
      if (typeof ev.Index === 'number' && ev.Topic) out.push({ Type: '', Key: '', Namespace: '', Payload: {}, ...ev } as StreamEvent);
    }
  }
  return out;
}

/**
 * Whether an event's topic is one a page named: pages name topics in the
 * UI's words (job, allocation, node, plugin, volume, claim...) or in Nomad's
 * spelling, the stream in Nomad's (Job, Allocation, Node, CSIPlugin,
 * CSIVolume) or Berth's own (claim, volume-condition, drift); case and a
 * `CSI` prefix do not count. Pure.
 */
export function topicMatches(pageTopics: readonly string[], topic: string): boolean {
  const word = (name: string): string => name.toLowerCase().replace(/^csi/, '');
  const t = word(topic);
  // A page may name a topic in Nomad's words too (`Job`, `CSIVolume`): compared in the UI's.
  return pageTopics.some((raw) => {
    const p = word(raw);
    return p === t || (p === 'node' && t === 'nodedrain');
  });
}

/**
 * Follows `GET /v1/event/stream` (every topic) from `index` (the latest when
 * undefined), calling `onEvent` per event, until `signal` fires or the
 * stream ends. Resolves with the last index seen; rejects with ApiError on a
 * refused request and with the network's error when the stream breaks.
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
