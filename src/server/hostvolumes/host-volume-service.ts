// Dynamic host volumes on the server (Nomad's nomad/host_volume_endpoint.go):
// `create` checks the spec, picks a node (its node_id, else the first node
// of its node_pool meeting its constraints and the plugin's fingerprint
// that has no volume of that name), asks that node's plugin to make it, and
// records it; `register` records an existing path on a named node; `delete`
// refuses a volume allocations use, asks its node's plugin to delete it,
// and forgets it. Operations on one volume run one at a time. A volume is
// written only after its node did its part, so a refusal changes nothing.

import { randomUUID } from 'node:crypto';
import { describeError, silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import {
  constraintsSchema,
  HOST_VOLUME_ACCESS_MODES,
  HOST_VOLUME_ATTACHMENT_MODES,
  hostVolumePluginAttribute,
  hostVolumeState,
  isClientTerminal,
  type Allocation,
  type HostVolume,
  type HostVolumeCapability,
  type HostVolumeConstraint,
  type HostVolumeState,
  type Node,
  type NodeRpcMethod,
  type NodeRpcParams,
  type NodeRpcResult,
} from '../../structs/index.js';
import { requireNamespace } from '../namespaces/index.js';
import { compileRule } from '../scheduler/index.js';
import { keyPrefix, rowKey, type StateReader, type StateStore } from '../state/index.js';
import { HostVolumeError } from './errors.js';

/** Berth has one node pool, Nomad's `default`. */
const NODE_POOL = 'default';
/** Nomad's DefaultHostVolumePlugin: a create that names no plugin asks for the one called `default`. */
const DEFAULT_PLUGIN = 'default';
/** How long a create or register waits for the node to report the volume before answering `pending`. */
const READY_WAIT_MS = 10_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A volume as create and register take it (the API's HostVolume fields, in Berth's names). */
export interface HostVolumeInput {
  namespace?: string;
  id?: string;
  name?: string;
  pluginId?: string;
  nodePool?: string;
  nodeId?: string;
  /** Raw, as written: `attribute`, `operator` ('' for `=`), `value`. */
  constraints?: Array<{ attribute?: string; operator?: string; value?: string }>;
  capacityMinBytes?: number;
  capacityMaxBytes?: number;
  capacityBytes?: number;
  capabilities?: Array<{ accessMode?: string; attachmentMode?: string }>;
  parameters?: Record<string, string>;
  hostPath?: string;
}

/** A volume with its state now and the allocations (not client-terminal) that use it. */
export interface HostVolumeView extends Omit<HostVolume, 'state'> {
  state: HostVolumeState;
  allocations: Allocation[];
}

export interface HostVolumeListFilter {
  /** Absent or `*`: every namespace. */
  namespace?: string;
  nodeId?: string;
  nodePool?: string;
  /** An ID or name prefix. */
  prefix?: string;
}

/** How the service reaches a node (NodeConnections.call). */
export type NodeCaller = <M extends NodeRpcMethod>(nodeId: string, method: M, params: NodeRpcParams<M>, opts: { timeoutMs: number }) => Promise<NodeRpcResult<M>>;

export interface HostVolumeServiceOptions {
  store: StateStore;
  callNode: NodeCaller;
  /** Whether the node has a connection to this server now. */
  connected: (nodeId: string) => boolean;
  clock?: Clock;
  logger?: Logger;
  /** How long a node call may take; default 60 s (Nomad's client RPC timeout). */
  callTimeoutMs?: number;
  /** How long create and register wait for the node's fingerprint to show the volume; default 10 s. */
  readyWaitMs?: number;
}

/** Nomad's refusal of a host volume in a namespace that does not exist. */
function unknownNamespace(vol: HostVolume): string {
  return `host volume ${vol.id} is in nonexistent namespace ${vol.namespace}`;
}

export class HostVolumeService {
  readonly #o: HostVolumeServiceOptions;
  readonly #store: StateStore;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** Volume ID -> the operation running on it (Nomad's serializeCall). */
  readonly #busy = new Map<string, Promise<unknown>>();

  constructor(opts: HostVolumeServiceOptions) {
    this.#o = opts;
    this.#store = opts.store;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'host-volumes' });
  }

  /** One volume, or undefined. Pure read of `snap`. */
  get(namespace: string, id: string, snap: StateReader = this.#store.snapshot()): HostVolumeView | undefined {
    const vol = snap.get('hostVolumes', rowKey(namespace, id));
    return vol && view(vol, snap);
  }

  /** Volumes matching `filter`, sorted by namespace and ID. Pure read of `snap`. */
  list(filter: HostVolumeListFilter, snap: StateReader = this.#store.snapshot()): HostVolumeView[] {
    const ns = filter.namespace && filter.namespace !== '*' ? filter.namespace : undefined;
    const prefix = filter.prefix ?? '';
    return snap
      .list('hostVolumes', ns ? { prefix: keyPrefix(ns) } : {})
      .filter((v) => (!filter.nodeId || v.nodeId === filter.nodeId) && (!filter.nodePool || v.nodePool === filter.nodePool) && (v.id.startsWith(prefix) || v.name.startsWith(prefix)))
      .map((v) => view(v, snap));
  }

  /**
   * Creates (or, with the ID of an existing volume, updates) a volume
   * through its node's plugin. Rejects with HostVolumeError: INVALID (the
   * spec, or no node can take it), NOT_FOUND (its node_id), UNAVAILABLE
   * (the node could not be asked), CONFLICT (the plugin refused or failed).
   */
  async create(input: HostVolumeInput): Promise<HostVolumeView> {
    const snap = this.#store.snapshot();
    const { vol, existing } = this.#checked(input, snap, 'create');
    if (!existing) await this.#place(vol, snap);
    return this.#serialized(vol.id, async () => {
      const made = await this.#call(vol.nodeId, 'hostvolume.create', {
        id: vol.id,
        name: vol.name,
        namespace: vol.namespace,
        nodeId: vol.nodeId,
        nodePool: vol.nodePool,
        pluginId: vol.pluginId,
        capacityMinBytes: vol.requestedCapacityMinBytes,
        capacityMaxBytes: vol.requestedCapacityMaxBytes,
        parameters: vol.parameters,
      });
      return this.#record({ ...vol, hostPath: made.hostPath, capacityBytes: made.capacityBytes });
    });
  }

  /** Records an existing path on a node as a volume (Nomad's Register). Rejects as `create` does. */
  async register(input: HostVolumeInput): Promise<HostVolumeView> {
    if (!input.nodeId) throw new HostVolumeError('INVALID', 'cannot register volume: node ID is required');
    if (!input.hostPath) throw new HostVolumeError('INVALID', 'cannot register volume: host path is required');
    const snap = this.#store.snapshot();
    const { vol } = this.#checked(input, snap, 'register');
    return this.#serialized(vol.id, async () => {
      await this.#call(vol.nodeId, 'hostvolume.register', {
        id: vol.id,
        name: vol.name,
        namespace: vol.namespace,
        nodeId: vol.nodeId,
        nodePool: vol.nodePool,
        parameters: vol.parameters,
        hostPath: vol.hostPath,
      });
      return this.#record(vol);
    });
  }

  /**
   * Deletes a volume through its node's plugin and forgets it. Rejects with
   * HostVolumeError NOT_FOUND (`no such volume`), IN_USE (allocations that
   * are not client-terminal use it), UNAVAILABLE (its node could not be
   * asked: `force` forgets it anyway), CONFLICT (the plugin failed).
   */
  async delete(namespace: string, id: string, opts: { force?: boolean } = {}): Promise<void> {
    if (!id) throw new HostVolumeError('INVALID', 'missing volume ID to delete');
    await this.#serialized(id, async () => {
      const vol = this.#store.snapshot().get('hostVolumes', rowKey(namespace, id));
      if (!vol) throw new HostVolumeError('NOT_FOUND', `no such volume: ${id}`);
      const inUse = usedBy(vol, this.#store.snapshot());
      if (inUse.length) throw new HostVolumeError('IN_USE', `volume ${id} in use by allocations: [${inUse.map((a) => a.id).join(' ')}]`);
      try {
        await this.#call(vol.nodeId, 'hostvolume.delete', {
          id: vol.id,
          name: vol.name,
          namespace: vol.namespace,
          nodeId: vol.nodeId,
          nodePool: vol.nodePool,
          parameters: vol.parameters,
          pluginId: vol.pluginId,
          hostPath: vol.hostPath,
        });
      } catch (err) {
        if (!(err instanceof HostVolumeError && err.code === 'UNAVAILABLE')) throw err;
        if (!opts.force) throw new HostVolumeError('UNAVAILABLE', `volume cannot be removed from unknown node without force=true (${err.message})`);
        this.#log.warn({ volumeId: id, nodeId: vol.nodeId }, 'host volume forgotten without its node (force)');
      }
      await this.#store.write((txn) => {
        // Checked again in the write: an allocation placed meanwhile keeps the row.
        const inUseNow = usedBy(vol, txn);
        if (inUseNow.length) throw new HostVolumeError('IN_USE', `could not delete volume ${id} in use by alloc ${inUseNow[0]?.id}`);
        txn.delete('hostVolumes', rowKey(namespace, id));
        for (const c of txn.list('hostVolumeClaims', { prefix: keyPrefix(namespace), filter: (c) => c.volumeId === id })) {
          txn.delete('hostVolumeClaims', rowKey(c.namespace, c.jobId, c.taskGroup, c.volumeId));
        }
      });
      this.#log.info({ volumeId: id, nodeId: vol.nodeId }, 'host volume deleted');
    });
  }

  /** The spec checked (Nomad's Validate, ValidateUpdate, validateVolumeForState) and canonicalized. */
  #checked(input: HostVolumeInput, snap: StateReader, op: 'create' | 'register'): { vol: HostVolume; existing: HostVolume | undefined } {
    const problems: string[] = [];
    const namespace = input.namespace || 'default';
    if (input.id && !UUID.test(input.id)) problems.push(`invalid ID "${input.id}"`);
    if (!input.name) problems.push('missing name');
    const min = input.capacityMinBytes ?? 0;
    const max = input.capacityMaxBytes ?? 0;
    if (max < min) problems.push(`capacity_max (${max}) must be larger than capacity_min (${min})`);
    const capabilities: HostVolumeCapability[] = [];
    for (const c of input.capabilities ?? []) {
      if (!(HOST_VOLUME_ATTACHMENT_MODES as readonly string[]).includes(c.attachmentMode ?? '')) problems.push(`invalid attachment mode: "${c.attachmentMode ?? ''}"`);
      else if (!(HOST_VOLUME_ACCESS_MODES as readonly string[]).includes(c.accessMode ?? '')) problems.push(`invalid access mode: "${c.accessMode ?? ''}"`);
      else capabilities.push({ accessMode: c.accessMode, attachmentMode: c.attachmentMode } as HostVolumeCapability);
    }
    let constraints: HostVolumeConstraint[] = [];
    for (const c of input.constraints ?? []) {
      if (c.operator === 'distinct_hosts' || c.operator === 'distinct_property') {
        problems.push(`invalid constraint ${c.operator}: host volumes of the same name are always on distinct hosts`);
      }
    }
    const parsed = constraintsSchema.safeParse((input.constraints ?? []).map((c) => ({ attribute: c.attribute ?? '', operator: c.operator || '=', ...(c.value !== undefined && c.value !== '' ? { value: c.value } : {}) })));
    if (!parsed.success) problems.push(...parsed.error.issues.map((i) => `invalid constraint: ${i.message}`));
    else constraints = parsed.data ?? [];
    if (problems.length) throw new HostVolumeError('INVALID', `volume validation failed: ${problems.join('; ')}`);

    let existing: HostVolume | undefined;
    if (input.id) {
      existing = snap.get('hostVolumes', rowKey(namespace, input.id));
      if (!existing) throw new HostVolumeError('NOT_FOUND', `cannot update volume "${input.id}": volume does not exist`);
      const why: string[] = [];
      const users = usedBy(existing, snap);
      if (users.length) why.push(`cannot update a volume in use: claimed by allocs (${users.map((a) => a.id).join(', ')})`);
      if (input.nodeId && input.nodeId !== existing.nodeId) why.push('node ID cannot be updated');
      if (input.nodePool && input.nodePool !== existing.nodePool) why.push('node pool cannot be updated');
      if (max > 0 && max < existing.capacityBytes) why.push(`capacity_max (${max}) cannot be less than existing provisioned capacity (${existing.capacityBytes})`);
      if (why.length) throw new HostVolumeError(users.length ? 'IN_USE' : 'INVALID', `validating volume "${input.id}" update failed: ${why.join('; ')}`);
    }

    // Nodes and pools must exist (validateVolumeForState).
    const nodeId = existing?.nodeId ?? input.nodeId ?? '';
    const stateProblem = (msg: string, code: 'INVALID' | 'NOT_FOUND' = 'INVALID'): HostVolumeError =>
      new HostVolumeError(code, `validating volume "${op === 'create' ? input.name : (input.id ?? input.name)}" against state failed: ${msg}`);
    if (nodeId && !snap.get('nodes', rowKey(nodeId))) throw stateProblem(`node "${nodeId}" does not exist`, 'NOT_FOUND');
    if (input.nodePool && input.nodePool !== NODE_POOL) throw stateProblem(`node pool "${input.nodePool}" does not exist`, 'NOT_FOUND');

    const now = this.#clock.now() * 1e6;
    const vol: HostVolume = {
      namespace,
      id: existing?.id ?? randomUUID(),
      name: input.name as string,
      pluginId: op === 'create' ? input.pluginId || existing?.pluginId || DEFAULT_PLUGIN : (input.pluginId ?? existing?.pluginId ?? ''),
      nodeId,
      nodePool: existing?.nodePool ?? input.nodePool ?? (nodeId ? NODE_POOL : ''),
      constraints: existing?.constraints ?? constraints,
      requestedCapacityMinBytes: min,
      requestedCapacityMaxBytes: max,
      capacityBytes: op === 'register' ? (input.capacityBytes ?? 0) : (existing?.capacityBytes ?? 0),
      requestedCapabilities: capabilities.length ? capabilities : [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }],
      parameters: { ...input.parameters },
      hostPath: op === 'register' ? (input.hostPath as string) : (existing?.hostPath ?? ''),
      state: 'pending',
      createTime: existing?.createTime ?? now,
      modifyTime: now,
      createIndex: existing?.createIndex ?? 0,
      modifyIndex: existing?.modifyIndex ?? 0,
    };
    requireNamespace(snap, namespace, unknownNamespace(vol));
    return { vol, existing };
  }

  /** Picks the volume's node (Nomad's placeHostVolume); sets nodeId and nodePool. Rejects with INVALID naming why no node fits. */
  async #place(vol: HostVolume, snap: StateReader): Promise<void> {
    const rules = [{ attribute: `\${attr.${hostVolumePluginAttribute(vol.pluginId)}}`, operator: 'is_set', value: '' }, ...vol.constraints].map(compileRule);
    const feasible = (n: Node): boolean => n.status === 'ready' && rules.every((r) => r(n));
    if (vol.nodeId) {
      const node = snap.get('nodes', rowKey(vol.nodeId));
      if (!node) throw new HostVolumeError('NOT_FOUND', `could not place volume "${vol.name}": no such node ${vol.nodeId}`);
      if (!feasible(node)) throw new HostVolumeError('INVALID', `could not place volume "${vol.name}": node ${vol.nodeId} is not feasible for volume`);
      vol.nodePool = NODE_POOL;
      return;
    }
    let existing = 0;
    let infeasible = 0;
    for (const node of snap.list('nodes')) {
      if (node.hostVolumes?.[vol.name] || snap.list('hostVolumes', { filter: (v) => v.nodeId === node.id && v.name === vol.name }).length) {
        existing++;
        continue;
      }
      if (!feasible(node)) {
        infeasible++;
        continue;
      }
      vol.nodeId = node.id;
      vol.nodePool = NODE_POOL;
      return;
    }
    throw new HostVolumeError(
      'INVALID',
      `could not place volume "${vol.name}": no node meets constraints: ${existing} nodes had existing volume, 0 nodes filtered by node pool governance, ${infeasible} nodes were infeasible`,
    );
  }

  /** Writes the volume (pending), waits a little for its node to report it, then writes it ready. */
  async #record(vol: HostVolume): Promise<HostVolumeView> {
    const key = rowKey(vol.namespace, vol.id);
    await this.#store.write((txn) => {
      // Checked again in the write: a namespace deleted meanwhile keeps the row out.
      requireNamespace(txn, vol.namespace, unknownNamespace(vol));
      txn.put('hostVolumes', { ...vol, state: 'pending' });
    });
    const deadline = this.#clock.now() + (this.#o.readyWaitMs ?? READY_WAIT_MS);
    let index = 0;
    for (;;) {
      const snap = this.#store.snapshot();
      const row = snap.get('hostVolumes', key);
      if (!row) break;
      if (hostVolumeState(row, snap.get('nodes', rowKey(row.nodeId))) === 'ready') {
        await this.#store.write((txn) => {
          const now = txn.get('hostVolumes', key);
          if (now && now.state !== 'ready') txn.put('hostVolumes', { ...now, state: 'ready' });
        });
        break;
      }
      const left = deadline - this.#clock.now();
      if (left <= 0) break;
      index = await this.#store.blockUntil(['nodes'], Math.max(index, snap.tableIndex('nodes')), { timeoutMs: left });
    }
    const out = this.get(vol.namespace, vol.id);
    if (!out) throw new HostVolumeError('NOT_FOUND', `no such volume: ${vol.id}`);
    return out;
  }

  /** Calls the node; its failures become HostVolumeErrors in its own words. */
  async #call<M extends NodeRpcMethod>(nodeId: string, method: M, params: NodeRpcParams<M>): Promise<NodeRpcResult<M>> {
    if (!this.#o.connected(nodeId)) throw new HostVolumeError('UNAVAILABLE', `node ${nodeId} is not connected to this server`);
    try {
      return await this.#o.callNode(nodeId, method, params, { timeoutMs: this.#o.callTimeoutMs ?? 60_000 });
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (typeof code === 'string' && code.startsWith('NODE_')) throw new HostVolumeError('UNAVAILABLE', `node ${nodeId}: ${describeError(err)}`, { cause: err });
      throw new HostVolumeError('CONFLICT', describeError(err), { cause: err });
    }
  }

  /** Runs `fn` once no other operation runs on volume `id` (Nomad's serializeCall). */
  async #serialized<T>(id: string, fn: () => Promise<T>): Promise<T> {
    for (;;) {
      const running = this.#busy.get(id);
      if (!running) break;
      await running.catch(() => undefined);
    }
    const p = fn();
    this.#busy.set(id, p);
    try {
      return await p;
    } finally {
      if (this.#busy.get(id) === p) this.#busy.delete(id);
    }
  }
}

/** The allocations (not client-terminal) on the volume's node whose group asks for it. */
function usedBy(vol: HostVolume, snap: StateReader): Allocation[] {
  return snap.list('allocations', {
    filter: (a) => {
      if (a.nodeId !== vol.nodeId || a.namespace !== vol.namespace || isClientTerminal(a.clientStatus)) return false;
      const group = snap.get('jobs', rowKey(a.namespace, a.jobId))?.groups.find((g) => g.name === a.taskGroup);
      return Object.values(group?.volumes ?? {}).some((v) => v.type === 'host' && v.source === vol.name);
    },
  });
}

function view(vol: HostVolume, snap: StateReader): HostVolumeView {
  return { ...vol, state: hostVolumeState(vol, snap.get('nodes', rowKey(vol.nodeId))), allocations: usedBy(vol, snap) };
}
