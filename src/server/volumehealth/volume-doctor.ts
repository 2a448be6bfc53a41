// `berth volume doctor`: gathers what the controllers list (ListVolumes,
// with published nodes where the plugin reports them) and what each node
// says of its records and mounts (node call `csi.node.inventory`), compares
// it with Berth's books (compareBooks) and, with `fix`, repairs what is
// safe: releases claims whose allocation is gone, sends
// ControllerUnpublishVolume for a publication no claim stands behind, and
// unmounts a mount no record of its node names. It never touches a volume
// an allocation uses.

import type { ListedVolume } from '../../csi/index.js';
import { describeError, silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import type { DriftCheckError, DriftFinding, DriftReport, NodeMountInventory, NodeRpcMethod, NodeRpcParams, NodeRpcResult } from '../../structs/index.js';
import { rowKey, type StateStore } from '../state/index.js';
import { compareBooks, type BooksInput } from './drift-compare.js';

/** What the doctor needs of the volume service (VolumeService has it). */
export interface DoctorVolumes {
  listPluginVolumes(pluginId: string, opts?: { signal?: AbortSignal }): Promise<ListedVolume[]>;
  releaseByKey(key: string, reason: string, signal?: AbortSignal): Promise<void>;
  releasing(key: string): boolean;
}

/** What the doctor needs of the node connections and the controller router. */
export interface DoctorCalls {
  connected(nodeId: string): boolean;
  callNode<M extends NodeRpcMethod>(nodeId: string, method: M, params: NodeRpcParams<M>, opts: { signal?: AbortSignal }): Promise<NodeRpcResult<M>>;
  callController<M extends NodeRpcMethod>(pluginId: string, method: M, params: NodeRpcParams<M>, opts: { signal?: AbortSignal }): Promise<NodeRpcResult<M>>;
}

export interface VolumeDoctorOptions {
  store: StateStore;
  volumes: DoctorVolumes;
  calls: DoctorCalls;
  clock?: Clock;
  logger?: Logger;
}

export interface DoctorRunOptions {
  /** Only this volume. */
  scope?: { namespace: string; volumeId: string };
  /** Repair what is safe to repair. */
  fix?: boolean;
  signal?: AbortSignal;
}

/**
 * Runs the comparison on demand. `check` only reads (it calls controllers'
 * ListVolumes and nodes' inventories); with `fix` it repairs each fixable
 * finding and reports what it repaired and what failed. Never throws for a
 * plugin or node that cannot answer: that goes to the report's `errors`.
 * Rejects only with AbortedError when `signal` fires. Safe to run
 * concurrently with everything else (each repair is idempotent).
 */
export class VolumeDoctor {
  readonly #o: VolumeDoctorOptions;
  readonly #clock: Clock;
  readonly #log: Logger;

  constructor(opts: VolumeDoctorOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'volume-doctor' });
  }

  async run(opts: DoctorRunOptions = {}): Promise<DriftReport> {
    const errors: DriftCheckError[] = [];
    const snap = this.#o.store.snapshot();
    const scope = opts.scope;
    const signalOpt = opts.signal ? { signal: opts.signal } : {};
    const scopedPlugin = scope ? snap.get('volumes', rowKey(scope.namespace, scope.volumeId))?.pluginId : undefined;

    const listed = new Map<string, ListedVolume[]>();
    for (const p of snap.list('plugins')) {
      if (scope && p.id !== scopedPlugin) continue;
      if (!p.controllerCapabilities.includes('LIST_VOLUMES') || Object.keys(p.controllers).length === 0) continue;
      try {
        listed.set(p.id, await this.#o.volumes.listPluginVolumes(p.id, signalOpt));
      } catch (err) {
        opts.signal?.throwIfAborted();
        errors.push({ source: `plugin ${p.id}`, message: `ListVolumes failed: ${describeError(err)}` });
      }
    }

    const unchecked: NonNullable<BooksInput['unchecked']>[number][] = [];
    // The plugins whose volumes are in question, and the nodes that hold claims of each.
    const volumesOf = new Map<string, number>();
    for (const v of snap.list('volumes')) {
      if (scope && (v.namespace !== scope.namespace || v.id !== scope.volumeId)) continue;
      volumesOf.set(v.pluginId, (volumesOf.get(v.pluginId) ?? 0) + 1);
    }
    const claimedOn = new Map<string, Set<string>>();
    for (const c of snap.list('claims')) {
      if (scope && (c.namespace !== scope.namespace || c.volumeId !== scope.volumeId)) continue;
      const nodes = claimedOn.get(c.nodeId) ?? new Set<string>();
      nodes.add(c.pluginId);
      claimedOn.set(c.nodeId, nodes);
    }
    for (const [pluginId] of volumesOf) {
      const p = snap.get('plugins', rowKey(pluginId));
      if (!p) {
        unchecked.push({ pluginId, message: `plugin ${pluginId} is not running anywhere: its volumes were not checked`, repair: `run plugin ${pluginId}'s job, then berth volume doctor again` });
      } else if (p.controllerRequired && Object.keys(p.controllers).length === 0) {
        unchecked.push({
          pluginId,
          message: `plugin ${pluginId} has no running controller: its volumes' publications were not checked`,
          repair: `run plugin ${pluginId}'s controller, then berth volume doctor again`,
        });
      }
    }

    const inventories = new Map<string, NodeMountInventory>();
    for (const n of snap.list('nodes')) {
      const claimed = claimedOn.get(n.id) ?? new Set<string>();
      if (n.status === 'down' || (Object.keys(n.csiNodePlugins).length === 0 && claimed.size === 0)) continue;
      if (scopedPlugin && !(scopedPlugin in n.csiNodePlugins) && !claimed.has(scopedPlugin)) continue;
      if (!this.#o.calls.connected(n.id)) {
        errors.push({ source: `node ${n.id}`, message: 'not connected to this server; its mounts were not checked' });
        continue;
      }
      try {
        const inv = await this.#o.calls.callNode(n.id, 'csi.node.inventory', {}, signalOpt);
        inventories.set(n.id, inv);
        // A plugin the node holds claims or records of, but does not run healthy: nobody asked it.
        const held = new Set([...claimed, ...inv.records.filter((r) => !scope || (r.namespace === scope.namespace && r.volumeId === scope.volumeId)).map((r) => r.pluginId)]);
        for (const pluginId of [...held].sort()) {
          if (scopedPlugin && pluginId !== scopedPlugin) continue;
          if (n.csiNodePlugins[pluginId]?.healthy) continue;
          unchecked.push({
            pluginId,
            nodeId: n.id,
            message: `plugin ${pluginId} not running on node ${n.id}: not checked (the node holds its volumes, and their mounts there were not compared with the plugin)`,
            repair: `start plugin ${pluginId} on node ${n.id} (its plugin job), then berth volume doctor again`,
          });
        }
      } catch (err) {
        opts.signal?.throwIfAborted();
        errors.push({ source: `node ${n.id}`, message: `could not report its mounts: ${describeError(err)}` });
      }
    }

    // Compare with the books as they are now: a claim released meanwhile is not drift.
    const findings = compareBooks({
      snap: this.#o.store.snapshot(),
      ...(scope ? { scope } : {}),
      listed,
      inventories,
      releasing: (key) => this.#o.volumes.releasing(key),
      unchecked,
    });
    const report: DriftReport = { checkedAt: this.#clock.now(), ...(scope ? scope : {}), findings, errors };
    if (!opts.fix) return report;

    report.fixed = [];
    report.fixFailed = [];
    for (const f of findings.filter((x) => x.fixable)) {
      try {
        await this.#repair(f, opts.signal);
        report.fixed.push(f);
        this.#log.info({ kind: f.kind, volumeId: f.volumeId, nodeId: f.nodeId, path: f.path }, 'drift repaired');
      } catch (err) {
        opts.signal?.throwIfAborted();
        report.fixFailed.push({ finding: f, error: describeError(err) });
        this.#log.warn({ kind: f.kind, volumeId: f.volumeId, nodeId: f.nodeId, err: describeError(err) }, 'drift repair failed');
      }
    }
    return report;
  }

  async #repair(f: DriftFinding, signal: AbortSignal | undefined): Promise<void> {
    const signalOpt = signal ? { signal } : {};
    switch (f.kind) {
      case 'claim-without-allocation':
        return this.#o.volumes.releaseByKey(rowKey(f.namespace as string, f.volumeId as string, f.allocId as string), 'volume doctor: allocation gone', signal);
      case 'stale-controller-publication': {
        const v = this.#o.store.snapshot().get('volumes', rowKey(f.namespace as string, f.volumeId as string));
        const params = { pluginId: f.pluginId, volumeId: f.externalVolumeId as string, nodeId: f.externalNodeId as string, secrets: { ...(v?.secrets ?? {}) } };
        await this.#o.calls.callController(f.pluginId, 'csi.controller.unpublish', params, signalOpt);
        return;
      }
      case 'mount-without-record':
        await this.#o.calls.callNode(f.nodeId as string, 'csi.node.unmountStray', { path: f.path as string }, signalOpt);
        return;
      default:
        throw new Error(`${f.kind} is not repaired automatically`);
    }
  }
}
