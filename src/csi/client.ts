import * as grpc from '@grpc/grpc-js';
import {
  ControllerDefinition,
  GroupControllerDefinition,
  IdentityDefinition,
  NodeDefinition,
  type MessageFns,
} from '../gen/csi/v1/csi.js';
import {
  AbortedError,
  retry,
  silentLogger,
  systemClock,
  throwIfAborted,
  type BackoffPolicy,
  type Clock,
  type Logger,
  type SecretMap,
} from '../lib/index.js';
import { checkValidation, type ValidationAnswer, type ValidationVerdict } from './capability.js';
import * as conv from './_convert.js';
import * as check from './_validate.js';
import { listAllPages } from './paging.js';
import { CsiEndpointError, CsiError, CsiProtocolError, CsiRequestError, GRPC_CODES, grpcCodeName } from './errors.js';
import { checkMap, checkPath, checkString, MAX_NODE_ID_BYTES } from './limits.js';
import { RPC_POLICIES, type CsiRpc, type RpcPolicy } from './policy.js';
import type {
  CapacityAnswer,
  ControllerCapability,
  ControllerPublishRequest,
  ControllerUnpublishRequest,
  CreateSnapshotRequest,
  CreateVolumeRequest,
  CsiSnapshot,
  CsiVolume,
  ExpandVolumeRequest,
  GetCapacityRequest,
  GroupControllerCapability,
  ListedVolume,
  ListSnapshotsRequest,
  NodeCapability,
  NodeExpandVolumeRequest,
  NodeInfo,
  NodePublishRequest,
  NodeStageRequest,
  Page,
  PluginCapabilities,
  PluginFingerprint,
  PluginInfo,
  ProbeResult,
  ValidateRequest,
  VolumeCondition,
  VolumeStats,
} from './types.js';

/**
 * What a teardown call (unpublish, unstage, delete) resolves with.
 * `alreadyDone`: the plugin answered NOT_FOUND, which for these calls means
 * there was nothing left to undo.
 */
export interface TeardownResult {
  alreadyDone: boolean;
}

/** Per-call options every client method takes. */
export interface CallOptions {
  /** Cancels the call (and any retry wait). */
  signal?: AbortSignal;
  /** Deadline of one attempt, instead of the RPC's default (see RPC_POLICIES). */
  deadlineMs?: number;
  /** `false`: one attempt only. An object: overrides fields of the RPC's backoff. */
  retry?: false | Partial<BackoffPolicy>;
}

export interface CsiClientOptions {
  /** `unix:///abs/path.sock` (a bare absolute path is accepted too). */
  endpoint: string;
  logger?: Logger;
  /** Clock for retry backoff; injectable for tests. */
  clock?: Clock;
  /** Randomness for backoff jitter; injectable for tests. */
  random?: () => number;
  /** Per-RPC overrides of the default policy table. */
  policies?: Partial<Record<CsiRpc, Partial<RpcPolicy>>>;
  /** Told of every attempt sent to the plugin (see CsiCallObserver). Default none, at no cost. */
  observer?: CsiCallObserver;
}

/**
 * Watches the calls a CsiClient sends, e.g. to count them (see
 * csiCallMetrics). `onCall` runs once per attempt that reached the wire
 * (retries count separately) with the RPC name, `OK` or the gRPC code name,
 * and the attempt's duration in seconds. It must not throw or block; a throw
 * is swallowed.
 */
export interface CsiCallObserver {
  onCall(rpc: CsiRpc, code: string, seconds: number): void;
}

// The longest path a unix socket address can hold (sun_path is 108 bytes with its NUL).
const MAX_SOCKET_PATH_BYTES = 107;

// Reconnect quickly: a plugin that restarts comes back within a second or two,
// and Berth would rather try again than wait out grpc-js's 1 s..120 s backoff.
const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2_000,
  'grpc.max_receive_message_length': 16 * 1024 * 1024,
  'grpc.enable_retries': 0,
};

const NO_RETRY: BackoffPolicy = { maxAttempts: 1, initialDelayMs: 0, maxDelayMs: 0, multiplier: 1, jitter: 0 };

/**
 * Parses a CSI endpoint into the socket path. Throws CsiEndpointError for
 * anything but an absolute unix socket path that fits in sun_path.
 */
export function parseEndpoint(endpoint: string): string {
  let path: string;
  if (endpoint.startsWith('unix://')) path = endpoint.slice('unix://'.length);
  else if (endpoint.startsWith('unix:')) path = endpoint.slice('unix:'.length);
  else if (endpoint.startsWith('/')) path = endpoint;
  else throw new CsiEndpointError(`CSI endpoint "${endpoint}" is not a unix socket address (expected unix:///absolute/path.sock)`);
  if (!path.startsWith('/')) throw new CsiEndpointError(`CSI endpoint "${endpoint}" must name an absolute path`);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
    throw new CsiEndpointError(`CSI socket path is ${Buffer.byteLength(path)} bytes; unix sockets allow at most ${MAX_SOCKET_PATH_BYTES}`);
  }
  return path;
}

interface MethodDef<Req, Res> {
  readonly name: string;
  readonly requestType: MessageFns<Req>;
  readonly responseType: MessageFns<Res>;
}

// What a request may be built from: the generated type's DeepPartial.
type WireInit<T> = Parameters<MessageFns<T>['fromPartial']>[0];

interface WireMethod<Req, Res> {
  rpc: CsiRpc;
  path: string;
  serialize: (req: Req) => Buffer;
  deserialize: (buf: Buffer) => Res;
  requestType: MessageFns<Req>;
}

const wireMethods = new Map<object, WireMethod<unknown, unknown>>();

function wire<Req, Res>(service: { fullName: string }, def: MethodDef<Req, Res>): WireMethod<Req, Res> {
  let m = wireMethods.get(def) as WireMethod<Req, Res> | undefined;
  if (!m) {
    m = {
      rpc: def.name as CsiRpc,
      path: `/${service.fullName}/${def.name}`,
      serialize: (req) => {
        const bytes = def.requestType.encode(req).finish();
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
      deserialize: (buf) => def.responseType.decode(buf),
      requestType: def.requestType,
    };
    wireMethods.set(def, m as WireMethod<unknown, unknown>);
  }
  return m;
}

// grpc-js appends its resolver's bookkeeping to connection errors; keep the part a person can act on.
function transportDetails(details: string): string {
  return details.replace(/\.?\s*Resolution note:\s*$/, '').trim();
}

const I = IdentityDefinition.methods;
const C = ControllerDefinition.methods;
const G = GroupControllerDefinition.methods;
const N = NodeDefinition.methods;
const reveal = (s: SecretMap | undefined): Record<string, string> => s?.reveal() ?? {};

/**
 * Berth's typed client for one CSI plugin socket. Methods take and return
 * Berth's types (never protobuf objects), check requests against the spec
 * before sending, send each attempt with a gRPC deadline, retry by the RPC's
 * policy, and throw CsiError (classified final/uncertain, retryable) when the
 * plugin fails, CsiRequestError when Berth refused to send, CsiProtocolError
 * when the plugin answered out of spec, AbortedError when `signal` fired
 * before anything was sent. A call cancelled in flight throws CsiError
 * CANCELLED: uncertain, since the plugin may have acted.
 *
 * The connection is made lazily on the first call and remade after an
 * UNAVAILABLE answer, so a plugin that restarts on a new socket at the same
 * path is reached again without the caller doing anything. Calls never block
 * each other: a hung call waits only for its own deadline.
 */
export class CsiClient {
  readonly endpoint: string;
  readonly socketPath: string;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #policies: Record<CsiRpc, RpcPolicy>;
  readonly #observer: CsiCallObserver | undefined;
  #channel: grpc.Client | undefined;
  #closed = false;

  constructor(opts: CsiClientOptions) {
    this.socketPath = parseEndpoint(opts.endpoint);
    this.endpoint = `unix://${this.socketPath}`;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'csi-client', endpoint: this.endpoint });
    this.#clock = opts.clock ?? systemClock;
    this.#random = opts.random ?? Math.random;
    this.#observer = opts.observer;
    this.#policies = { ...RPC_POLICIES };
    for (const [rpc, override] of Object.entries(opts.policies ?? {})) {
      this.#policies[rpc as CsiRpc] = { ...RPC_POLICIES[rpc as CsiRpc], ...override };
    }
  }

  /** False once close() was called. */
  get open(): boolean {
    return !this.#closed;
  }

  /**
   * Closes the connection. In-flight calls end with CANCELLED or UNAVAILABLE;
   * later calls throw. Safe to call twice.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#channel?.close();
    this.#channel = undefined;
  }

  // ---- Identity -----------------------------------------------------------

  /** GetPluginInfo. Throws CsiProtocolError when the name or version is missing or malformed. */
  async getPluginInfo(opts: CallOptions = {}): Promise<PluginInfo> {
    const res = await this.#call(IdentityDefinition, I.getPluginInfo, {}, opts);
    if (!res.name) throw new CsiProtocolError('GetPluginInfo', 'name is empty');
    if (res.name.length > 63) throw new CsiProtocolError('GetPluginInfo', `name "${res.name.slice(0, 70)}…" is longer than 63 characters`);
    if (!res.vendorVersion) throw new CsiProtocolError('GetPluginInfo', 'vendor_version is empty');
    return { name: res.name, vendorVersion: res.vendorVersion, manifest: { ...res.manifest } };
  }

  /** GetPluginCapabilities. Unknown capability values are dropped. */
  async getPluginCapabilities(opts: CallOptions = {}): Promise<PluginCapabilities> {
    const res = await this.#call(IdentityDefinition, I.getPluginCapabilities, {}, opts);
    return conv.pluginCapabilitiesFromWire(res.capabilities);
  }

  /** Probe. An unset `ready` means ready; an error means unhealthy (thrown). Not retried. */
  async probe(opts: CallOptions = {}): Promise<ProbeResult> {
    const res = await this.#call(IdentityDefinition, I.probe, {}, opts);
    return { ready: res.ready ?? true };
  }

  // ---- Controller ---------------------------------------------------------

  async controllerGetCapabilities(opts: CallOptions = {}): Promise<ControllerCapability[]> {
    const res = await this.#call(ControllerDefinition, C.controllerGetCapabilities, {}, opts);
    return conv.controllerCapabilitiesFromWire(res.capabilities);
  }

  /** CreateVolume. Idempotent by name at the plugin. */
  async createVolume(req: CreateVolumeRequest, opts: CallOptions = {}): Promise<CsiVolume> {
    check.checkCreateVolume(req);
    const res = await this.#call(
      ControllerDefinition,
      C.createVolume,
      {
        name: req.name,
        capacityRange: conv.capacityRangeToWire(req.capacityRange),
        volumeCapabilities: req.volumeCapabilities.map(conv.capabilityToWire),
        parameters: req.parameters ?? {},
        secrets: reveal(req.secrets),
        volumeContentSource: conv.contentSourceToWire(req.contentSource),
        accessibilityRequirements: conv.topologyRequirementToWire(req.accessibilityRequirements),
        mutableParameters: req.mutableParameters ?? {},
      },
      opts,
    );
    return conv.volumeFromWire('CreateVolume', res.volume);
  }

  /** DeleteVolume. A volume the plugin does not know counts as deleted. */
  async deleteVolume(volumeId: string, opts: CallOptions & { secrets?: SecretMap } = {}): Promise<TeardownResult> {
    check.checkVolumeId(volumeId);
    checkMap('secrets', opts.secrets);
    return this.#callDone(ControllerDefinition, C.deleteVolume, { volumeId, secrets: reveal(opts.secrets) }, opts);
  }

  /**
   * ControllerPublishVolume. `nodeId` must be the plugin's NodeGetInfo.node_id.
   * Returns the publish context to keep and pass to NodeStage/NodePublish.
   */
  async controllerPublishVolume(req: ControllerPublishRequest, opts: CallOptions = {}): Promise<{ publishContext: Record<string, string> }> {
    check.checkControllerPublish(req);
    const res = await this.#call(
      ControllerDefinition,
      C.controllerPublishVolume,
      {
        volumeId: req.volumeId,
        nodeId: req.nodeId,
        volumeCapability: conv.capabilityToWire(req.volumeCapability),
        readonly: req.readonly,
        secrets: reveal(req.secrets),
        volumeContext: req.volumeContext ?? {},
      },
      opts,
    );
    return { publishContext: { ...res.publishContext } };
  }

  /** ControllerUnpublishVolume. NOT_FOUND counts as done. */
  async controllerUnpublishVolume(req: ControllerUnpublishRequest, opts: CallOptions = {}): Promise<TeardownResult> {
    check.checkControllerUnpublish(req);
    return this.#callDone(
      ControllerDefinition,
      C.controllerUnpublishVolume,
      { volumeId: req.volumeId, nodeId: req.nodeId ?? '', secrets: reveal(req.secrets) },
      opts,
    );
  }

  /** ValidateVolumeCapabilities, raw: see `validate` for the spec's verdict. */
  async validateVolumeCapabilities(req: ValidateRequest, opts: CallOptions = {}): Promise<ValidationAnswer> {
    check.checkValidate(req);
    const res = await this.#call(
      ControllerDefinition,
      C.validateVolumeCapabilities,
      {
        volumeId: req.volumeId,
        volumeContext: req.volumeContext ?? {},
        volumeCapabilities: req.volumeCapabilities.map(conv.capabilityToWire),
        parameters: req.parameters ?? {},
        mutableParameters: req.mutableParameters ?? {},
        secrets: reveal(req.secrets),
      },
      opts,
    );
    const answer: ValidationAnswer = { message: res.message };
    if (res.confirmed) {
      answer.confirmed = {
        volumeContext: { ...res.confirmed.volumeContext },
        // A capability Berth cannot read confirms nothing it asked for.
        volumeCapabilities: res.confirmed.volumeCapabilities.flatMap((c) => conv.capabilityFromWire(c) ?? []),
        parameters: { ...res.confirmed.parameters },
        mutableParameters: { ...res.confirmed.mutableParameters },
      };
    }
    return answer;
  }

  /** ValidateVolumeCapabilities judged by the spec (see checkValidation). */
  async validate(req: ValidateRequest, opts: CallOptions = {}): Promise<ValidationVerdict> {
    return checkValidation(req, await this.validateVolumeCapabilities(req, opts));
  }

  /** One page of ListVolumes. ABORTED (bad token) is thrown, not retried. */
  async listVolumes(page: { maxEntries?: number; startingToken?: string } = {}, opts: CallOptions = {}): Promise<Page<ListedVolume>> {
    check.checkPaging(page.maxEntries);
    const res = await this.#call(
      ControllerDefinition,
      C.listVolumes,
      { maxEntries: page.maxEntries ?? 0, startingToken: page.startingToken ?? '' },
      opts,
    );
    return {
      entries: res.entries.map((e) => {
        const entry: ListedVolume = { volume: conv.volumeFromWire('ListVolumes', e.volume) };
        if (e.status) {
          entry.publishedNodeIds = [...e.status.publishedNodeIds];
          const condition = conv.conditionFromWire(e.status.volumeCondition);
          if (condition) entry.condition = condition;
        }
        return entry;
      }),
      nextToken: res.nextToken,
    };
  }

  /**
   * Every volume, page by page. When the plugin rejects a token (ABORTED) the
   * listing restarts from the top, at most `restarts` times (default 3).
   */
  async listAllVolumes(opts: CallOptions & { pageSize?: number; restarts?: number } = {}): Promise<ListedVolume[]> {
    return listAllPages((startingToken) => this.listVolumes({ maxEntries: opts.pageSize, startingToken }, opts), { restarts: opts.restarts });
  }

  async getCapacity(req: GetCapacityRequest = {}, opts: CallOptions = {}): Promise<CapacityAnswer> {
    const res = await this.#call(
      ControllerDefinition,
      C.getCapacity,
      {
        volumeCapabilities: (req.volumeCapabilities ?? []).map(conv.capabilityToWire),
        parameters: req.parameters ?? {},
        accessibleTopology: req.accessibleTopology ? { segments: { ...req.accessibleTopology } } : undefined,
      },
      opts,
    );
    const answer: CapacityAnswer = { availableCapacity: conv.int64ToNumber('GetCapacity', 'available_capacity', res.availableCapacity) };
    if (res.maximumVolumeSize !== undefined) answer.maximumVolumeSize = conv.int64ToNumber('GetCapacity', 'maximum_volume_size', res.maximumVolumeSize);
    if (res.minimumVolumeSize !== undefined) answer.minimumVolumeSize = conv.int64ToNumber('GetCapacity', 'minimum_volume_size', res.minimumVolumeSize);
    return answer;
  }

  async createSnapshot(req: CreateSnapshotRequest, opts: CallOptions = {}): Promise<CsiSnapshot> {
    check.checkCreateSnapshot(req);
    const res = await this.#call(
      ControllerDefinition,
      C.createSnapshot,
      { sourceVolumeId: req.sourceVolumeId, name: req.name, secrets: reveal(req.secrets), parameters: req.parameters ?? {} },
      opts,
    );
    return conv.snapshotFromWire('CreateSnapshot', res.snapshot);
  }

  /** DeleteSnapshot. A snapshot the plugin does not know counts as deleted. */
  async deleteSnapshot(snapshotId: string, opts: CallOptions & { secrets?: SecretMap } = {}): Promise<TeardownResult> {
    checkString('snapshot_id', snapshotId, { required: true });
    checkMap('secrets', opts.secrets);
    return this.#callDone(ControllerDefinition, C.deleteSnapshot, { snapshotId, secrets: reveal(opts.secrets) }, opts);
  }

  /** One page of ListSnapshots. ABORTED (bad token) is thrown, not retried. */
  async listSnapshots(req: ListSnapshotsRequest = {}, opts: CallOptions = {}): Promise<Page<CsiSnapshot>> {
    check.checkPaging(req.maxEntries);
    const res = await this.#call(
      ControllerDefinition,
      C.listSnapshots,
      {
        maxEntries: req.maxEntries ?? 0,
        startingToken: req.startingToken ?? '',
        sourceVolumeId: req.sourceVolumeId ?? '',
        snapshotId: req.snapshotId ?? '',
        secrets: reveal(req.secrets),
      },
      opts,
    );
    return { entries: res.entries.map((e) => conv.snapshotFromWire('ListSnapshots', e.snapshot)), nextToken: res.nextToken };
  }

  /** Every snapshot matching `req`, page by page, restarting on a rejected token. */
  async listAllSnapshots(req: Omit<ListSnapshotsRequest, 'startingToken'> = {}, opts: CallOptions & { restarts?: number } = {}): Promise<CsiSnapshot[]> {
    return listAllPages((startingToken) => this.listSnapshots({ ...req, startingToken }, opts), { restarts: opts.restarts });
  }

  /** GetSnapshot (alpha in v1.12). */
  async getSnapshot(snapshotId: string, opts: CallOptions & { secrets?: SecretMap } = {}): Promise<CsiSnapshot> {
    checkString('snapshot_id', snapshotId, { required: true });
    checkMap('secrets', opts.secrets);
    const res = await this.#call(ControllerDefinition, C.getSnapshot, { snapshotId, secrets: reveal(opts.secrets) }, opts);
    return conv.snapshotFromWire('GetSnapshot', res.snapshot);
  }

  /** ControllerExpandVolume. `nodeExpansionRequired` says whether NodeExpandVolume must follow. */
  async controllerExpandVolume(req: ExpandVolumeRequest, opts: CallOptions = {}): Promise<{ capacityBytes: number; nodeExpansionRequired: boolean }> {
    check.checkControllerExpand(req);
    const res = await this.#call(
      ControllerDefinition,
      C.controllerExpandVolume,
      {
        volumeId: req.volumeId,
        capacityRange: conv.capacityRangeToWire(req.capacityRange),
        secrets: reveal(req.secrets),
        volumeCapability: req.volumeCapability ? conv.capabilityToWire(req.volumeCapability) : undefined,
      },
      opts,
    );
    return {
      capacityBytes: conv.int64ToNumber('ControllerExpandVolume', 'capacity_bytes', res.capacityBytes),
      nodeExpansionRequired: res.nodeExpansionRequired,
    };
  }

  /** ControllerGetVolume (GET_VOLUME). */
  async controllerGetVolume(
    volumeId: string,
    opts: CallOptions = {},
  ): Promise<{ volume: CsiVolume; publishedNodeIds: string[]; condition?: VolumeCondition }> {
    check.checkVolumeId(volumeId);
    const res = await this.#call(ControllerDefinition, C.controllerGetVolume, { volumeId }, opts);
    const out: { volume: CsiVolume; publishedNodeIds: string[]; condition?: VolumeCondition } = {
      volume: conv.volumeFromWire('ControllerGetVolume', res.volume),
      publishedNodeIds: [...(res.status?.publishedNodeIds ?? [])],
    };
    const condition = conv.conditionFromWire(res.status?.volumeCondition);
    if (condition) out.condition = condition;
    return out;
  }

  /** ControllerModifyVolume (MODIFY_VOLUME). */
  async controllerModifyVolume(
    volumeId: string,
    mutableParameters: Record<string, string>,
    opts: CallOptions & { secrets?: SecretMap } = {},
  ): Promise<void> {
    check.checkVolumeId(volumeId);
    checkMap('mutable_parameters', mutableParameters);
    checkMap('secrets', opts.secrets);
    await this.#call(ControllerDefinition, C.controllerModifyVolume, { volumeId, mutableParameters, secrets: reveal(opts.secrets) }, opts);
  }

  // ---- GroupController ----------------------------------------------------

  async groupControllerGetCapabilities(opts: CallOptions = {}): Promise<GroupControllerCapability[]> {
    const res = await this.#call(GroupControllerDefinition, G.groupControllerGetCapabilities, {}, opts);
    return conv.groupCapabilitiesFromWire(res.capabilities);
  }

  async createVolumeGroupSnapshot(
    req: { name: string; sourceVolumeIds: string[]; parameters?: Record<string, string>; secrets?: SecretMap },
    opts: CallOptions = {},
  ): Promise<{ groupSnapshotId: string; snapshots: CsiSnapshot[]; readyToUse: boolean }> {
    checkString('name', req.name, { required: true });
    if (!req.sourceVolumeIds.length) throw new CsiRequestError('source_volume_ids must name at least one volume', 'source_volume_ids');
    checkMap('parameters', req.parameters);
    checkMap('secrets', req.secrets);
    const res = await this.#call(
      GroupControllerDefinition,
      G.createVolumeGroupSnapshot,
      { name: req.name, sourceVolumeIds: req.sourceVolumeIds, parameters: req.parameters ?? {}, secrets: reveal(req.secrets) },
      opts,
    );
    const g = res.groupSnapshot;
    if (!g?.groupSnapshotId) throw new CsiProtocolError('CreateVolumeGroupSnapshot', 'group_snapshot is missing');
    return {
      groupSnapshotId: g.groupSnapshotId,
      snapshots: g.snapshots.map((s) => conv.snapshotFromWire('CreateVolumeGroupSnapshot', s)),
      readyToUse: g.readyToUse,
    };
  }

  async deleteVolumeGroupSnapshot(
    req: { groupSnapshotId: string; snapshotIds: string[]; secrets?: SecretMap },
    opts: CallOptions = {},
  ): Promise<TeardownResult> {
    checkString('group_snapshot_id', req.groupSnapshotId, { required: true });
    checkMap('secrets', req.secrets);
    return this.#callDone(
      GroupControllerDefinition,
      G.deleteVolumeGroupSnapshot,
      { groupSnapshotId: req.groupSnapshotId, snapshotIds: req.snapshotIds, secrets: reveal(req.secrets) },
      opts,
    );
  }

  async getVolumeGroupSnapshot(
    req: { groupSnapshotId: string; snapshotIds: string[]; secrets?: SecretMap },
    opts: CallOptions = {},
  ): Promise<{ groupSnapshotId: string; snapshots: CsiSnapshot[]; readyToUse: boolean }> {
    checkString('group_snapshot_id', req.groupSnapshotId, { required: true });
    checkMap('secrets', req.secrets);
    const res = await this.#call(
      GroupControllerDefinition,
      G.getVolumeGroupSnapshot,
      { groupSnapshotId: req.groupSnapshotId, snapshotIds: req.snapshotIds, secrets: reveal(req.secrets) },
      opts,
    );
    const g = res.groupSnapshot;
    if (!g?.groupSnapshotId) throw new CsiProtocolError('GetVolumeGroupSnapshot', 'group_snapshot is missing');
    return {
      groupSnapshotId: g.groupSnapshotId,
      snapshots: g.snapshots.map((s) => conv.snapshotFromWire('GetVolumeGroupSnapshot', s)),
      readyToUse: g.readyToUse,
    };
  }

  // ---- Node ---------------------------------------------------------------

  async nodeGetCapabilities(opts: CallOptions = {}): Promise<NodeCapability[]> {
    const res = await this.#call(NodeDefinition, N.nodeGetCapabilities, {}, opts);
    return conv.nodeCapabilitiesFromWire(res.capabilities);
  }

  /** NodeGetInfo. Throws CsiProtocolError for an empty or oversized node_id. */
  async nodeGetInfo(opts: CallOptions = {}): Promise<NodeInfo> {
    const res = await this.#call(NodeDefinition, N.nodeGetInfo, {}, opts);
    if (!res.nodeId) throw new CsiProtocolError('NodeGetInfo', 'node_id is empty');
    if (Buffer.byteLength(res.nodeId) > MAX_NODE_ID_BYTES) {
      throw new CsiProtocolError('NodeGetInfo', `node_id is longer than ${MAX_NODE_ID_BYTES} bytes`);
    }
    const info: NodeInfo = {
      nodeId: res.nodeId,
      maxVolumesPerNode: conv.int64ToNumber('NodeGetInfo', 'max_volumes_per_node', res.maxVolumesPerNode),
    };
    const topology = conv.topologyFromWire(res.accessibleTopology);
    if (topology) info.accessibleTopology = topology;
    return info;
  }

  /** NodeStageVolume. The CO (caller) must have created the staging directory. */
  async nodeStageVolume(req: NodeStageRequest, opts: CallOptions = {}): Promise<void> {
    check.checkNodeStage(req);
    await this.#call(
      NodeDefinition,
      N.nodeStageVolume,
      {
        volumeId: req.volumeId,
        publishContext: req.publishContext ?? {},
        stagingTargetPath: req.stagingTargetPath,
        volumeCapability: conv.capabilityToWire(req.volumeCapability),
        secrets: reveal(req.secrets),
        volumeContext: req.volumeContext ?? {},
      },
      opts,
    );
  }

  /** NodeUnstageVolume. Carries no secrets. NOT_FOUND counts as done. */
  async nodeUnstageVolume(volumeId: string, stagingTargetPath: string, opts: CallOptions = {}): Promise<TeardownResult> {
    check.checkVolumeId(volumeId);
    checkPath('staging_target_path', stagingTargetPath, { required: true });
    return this.#callDone(NodeDefinition, N.nodeUnstageVolume, { volumeId, stagingTargetPath }, opts);
  }

  /** NodePublishVolume. The caller creates the parent of `targetPath`; the plugin creates the target. */
  async nodePublishVolume(req: NodePublishRequest, opts: CallOptions = {}): Promise<void> {
    check.checkNodePublish(req);
    await this.#call(
      NodeDefinition,
      N.nodePublishVolume,
      {
        volumeId: req.volumeId,
        publishContext: req.publishContext ?? {},
        stagingTargetPath: req.stagingTargetPath ?? '',
        targetPath: req.targetPath,
        volumeCapability: conv.capabilityToWire(req.volumeCapability),
        readonly: req.readonly,
        secrets: reveal(req.secrets),
        volumeContext: req.volumeContext ?? {},
      },
      opts,
    );
  }

  /** NodeUnpublishVolume. Carries no secrets. NOT_FOUND counts as done. */
  async nodeUnpublishVolume(volumeId: string, targetPath: string, opts: CallOptions = {}): Promise<TeardownResult> {
    check.checkVolumeId(volumeId);
    checkPath('target_path', targetPath, { required: true });
    return this.#callDone(NodeDefinition, N.nodeUnpublishVolume, { volumeId, targetPath }, opts);
  }

  async nodeGetVolumeStats(volumeId: string, volumePath: string, opts: CallOptions & { stagingTargetPath?: string } = {}): Promise<VolumeStats> {
    check.checkVolumeId(volumeId);
    const res = await this.#call(
      NodeDefinition,
      N.nodeGetVolumeStats,
      { volumeId, volumePath, stagingTargetPath: opts.stagingTargetPath ?? '' },
      opts,
    );
    const stats: VolumeStats = {
      usage: res.usage.map((u) => ({
        unit: conv.usageUnitFromWire(u.unit),
        available: conv.int64ToNumber('NodeGetVolumeStats', 'available', u.available),
        total: conv.int64ToNumber('NodeGetVolumeStats', 'total', u.total),
        used: conv.int64ToNumber('NodeGetVolumeStats', 'used', u.used),
      })),
    };
    const condition = conv.conditionFromWire(res.volumeCondition);
    if (condition) stats.condition = condition;
    return stats;
  }

  /** NodeExpandVolume. FAILED_PRECONDITION is final for this RPC; it is never retried. */
  async nodeExpandVolume(req: NodeExpandVolumeRequest, opts: CallOptions = {}): Promise<{ capacityBytes: number }> {
    check.checkNodeExpand(req);
    const res = await this.#call(
      NodeDefinition,
      N.nodeExpandVolume,
      {
        volumeId: req.volumeId,
        volumePath: req.volumePath,
        capacityRange: conv.capacityRangeToWire(req.capacityRange),
        stagingTargetPath: req.stagingTargetPath ?? '',
        volumeCapability: req.volumeCapability ? conv.capabilityToWire(req.volumeCapability) : undefined,
        secrets: reveal(req.secrets),
      },
      opts,
    );
    return { capacityBytes: conv.int64ToNumber('NodeExpandVolume', 'capacity_bytes', res.capacityBytes) };
  }

  // ---- Fingerprint --------------------------------------------------------

  /**
   * Everything Berth needs to know about the plugin: info, plugin
   * capabilities, and for each service it runs its capabilities and node
   * info. Controller is asked only when advertised; Node unless `node` is
   * false, and a plugin that answers UNIMPLEMENTED there serves no Node.
   */
  async fingerprint(opts: CallOptions & { node?: boolean } = {}): Promise<PluginFingerprint> {
    const [info, capabilities] = await Promise.all([this.getPluginInfo(opts), this.getPluginCapabilities(opts)]);
    const fp: PluginFingerprint = { info, capabilities };
    const wantController = capabilities.services.includes('CONTROLLER_SERVICE');
    const [controller, node] = await Promise.all([
      wantController ? this.controllerGetCapabilities(opts) : undefined,
      opts.node === false ? undefined : this.#nodeFingerprint(opts),
    ]);
    if (controller) fp.controller = { capabilities: controller };
    if (node) fp.node = { capabilities: node[0], info: node[1] };
    return fp;
  }

  // Node service is not advertised in plugin capabilities: a controller-only
  // plugin says so by answering UNIMPLEMENTED.
  async #nodeFingerprint(opts: CallOptions): Promise<[NodeCapability[], NodeInfo] | undefined> {
    try {
      return await Promise.all([this.nodeGetCapabilities(opts), this.nodeGetInfo(opts)]);
    } catch (err) {
      if (err instanceof CsiError && err.grpcCodeName === 'UNIMPLEMENTED') return undefined;
      throw err;
    }
  }

  // ---- Transport ----------------------------------------------------------

  #connection(): grpc.Client {
    if (this.#closed) throw new AbortedError(`CSI client for ${this.endpoint} is closed`);
    this.#channel ??= new grpc.Client(this.endpoint, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    return this.#channel;
  }

  // After UNAVAILABLE the socket may have been replaced: drop the channel so
  // the next attempt dials afresh rather than waiting out a reconnect backoff.
  #dropConnection(stale: grpc.Client): void {
    if (this.#channel !== stale) return;
    this.#channel = undefined;
    stale.close();
  }

  /** Like #call, but a NOT_FOUND that means "already done" resolves with alreadyDone. */
  async #callDone<Req, Res>(service: { fullName: string }, def: MethodDef<Req, Res>, req: WireInit<Req>, opts: CallOptions): Promise<TeardownResult> {
    try {
      await this.#call(service, def, req, opts);
      return { alreadyDone: false };
    } catch (err) {
      if (err instanceof CsiError && err.alreadyDone) {
        this.#logger.debug({ rpc: err.rpc }, 'plugin reported NOT_FOUND on teardown; treating as done');
        return { alreadyDone: true };
      }
      throw err;
    }
  }

  async #call<Req, Res>(service: { fullName: string }, def: MethodDef<Req, Res>, partial: WireInit<Req>, opts: CallOptions): Promise<Res> {
    const method = wire(service, def);
    const policy = this.#policies[method.rpc];
    const deadlineMs = opts.deadlineMs ?? policy.deadlineMs;
    const request = def.requestType.fromPartial(partial);
    const backoff = opts.retry === false ? NO_RETRY : opts.retry ? { ...policy.backoff, ...opts.retry } : policy.backoff;
    if (backoff.maxAttempts <= 1) return this.#attempt(method, request, deadlineMs, opts.signal);
    return retry(() => this.#attempt(method, request, deadlineMs, opts.signal), {
      policy: backoff,
      clock: this.#clock,
      random: this.#random,
      signal: opts.signal,
      shouldRetry: (err) => err instanceof CsiError && err.grpcCodeName !== 'UNIMPLEMENTED' && policy.retryOn.has(err.grpcCodeName),
      onRetry: ({ err, attempt, delayMs }) =>
        this.#logger.debug({ rpc: method.rpc, attempt, delayMs, code: (err as CsiError).grpcCodeName }, 'retrying CSI call'),
    });
  }

  #attempt<Req, Res>(method: WireMethod<Req, Res>, request: Req, deadlineMs: number, signal: AbortSignal | undefined): Promise<Res> {
    throwIfAborted(signal);
    const channel = this.#connection();
    const observer = this.#observer;
    const started = observer ? performance.now() : 0;
    const observe = (code: string): void => {
      try {
        observer?.onCall(method.rpc, code, (performance.now() - started) / 1000);
      } catch {
        // An observer's failure must never fail the call.
      }
    };
    return new Promise<Res>((resolve, reject) => {
      const onAbort = (): void => call.cancel();
      const call = channel.makeUnaryRequest<Req, Res>(
        method.path,
        method.serialize,
        method.deserialize,
        request,
        new grpc.Metadata(),
        { deadline: Date.now() + deadlineMs },
        (err, res) => {
          signal?.removeEventListener('abort', onAbort);
          if (observer) observe(err ? grpcCodeName(err.code) : 'OK');
          if (!err) {
            resolve(res as Res);
            return;
          }
          if (signal?.aborted && err.code === GRPC_CODES.CANCELLED) {
            reject(new CsiError(method.rpc, GRPC_CODES.CANCELLED, 'call cancelled by caller', { cause: signal.reason }));
            return;
          }
          if (err.code === GRPC_CODES.UNAVAILABLE) this.#dropConnection(channel);
          reject(new CsiError(method.rpc, err.code, transportDetails(err.details), { cause: err }));
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

}
