import { isClientTerminal, type CsiPlugin, type CsiPluginInstance, type CsiPluginReport, type Job, type Node } from '../../structs/index.js';
import { rowKey, type StateReader, type WriteTxn } from '../state/index.js';

type PluginDraft = Omit<CsiPlugin, 'createIndex' | 'modifyIndex'>;

/** A task's csi_plugin block, as the job JSON carries it. */
type PluginTask = { csiPlugin?: { id: string; type: 'controller' | 'node' | 'monolith' } };

function instanceOf(node: Node, rep: CsiPluginReport, kind: 'controller' | 'node'): CsiPluginInstance {
  const nodeDown = node.status === 'down';
  const info = rep.fingerprint?.node?.info;
  return {
    nodeId: node.id,
    allocId: rep.allocId,
    healthy: rep.healthy && !nodeDown,
    healthReason: nodeDown ? `node ${node.id} is down` : rep.healthReason,
    provider: rep.provider,
    version: rep.version,
    externalNodeId: kind === 'node' ? (info?.nodeId ?? '') : '',
    maxVolumes: kind === 'node' ? (info?.maxVolumesPerNode ?? 0) : 0,
    ...(kind === 'node' && info?.accessibleTopology ? { topology: info.accessibleTopology } : {}),
    updatedAt: rep.updatedAt,
  };
}

function sameContent(a: object, b: object): boolean {
  const strip = (r: object): string => {
    const { createIndex: _c, modifyIndex: _m, ...rest } = r as Record<string, unknown>;
    return JSON.stringify(rest);
  };
  return strip(a) === strip(b);
}

/**
 * Computes every plugin row from what the nodes report and from the jobs and
 * allocations that run plugins. Pure over `state`; `exhaustedNodes` is
 * carried over from the current rows, except for nodes in `clearExhausted`.
 */
export function computePlugins(state: StateReader, opts: { clearExhausted?: readonly string[] } = {}): Map<string, PluginDraft> {
  const nodes = state.list('nodes');
  const jobs = new Map(state.list('jobs').map((j) => [rowKey(j.namespace, j.id), j]));
  const out = new Map<string, PluginDraft>();
  const clear = new Set(opts.clearExhausted ?? []);
  const draft = (id: string): PluginDraft => {
    let p = out.get(id);
    if (!p) {
      const existing = state.get('plugins', rowKey(id));
      const exhausted = Object.fromEntries(Object.entries(existing?.exhaustedNodes ?? {}).filter(([n]) => !clear.has(n)));
      p = {
        id,
        provider: '',
        version: '',
        controllerRequired: false,
        controllerCapabilities: [],
        nodeCapabilities: [],
        controllers: {},
        nodes: {},
        controllersHealthy: 0,
        controllersExpected: 0,
        nodesHealthy: 0,
        nodesExpected: 0,
        allocations: [],
        exhaustedNodes: exhausted,
      };
      out.set(id, p);
    }
    return p;
  };

  for (const node of [...nodes].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    for (const [kind, reports] of [
      ['controller', node.csiControllerPlugins],
      ['node', node.csiNodePlugins],
    ] as const) {
      for (const [pluginId, rep] of Object.entries(reports)) {
        const p = draft(pluginId);
        const inst = instanceOf(node, rep, kind);
        if (kind === 'controller') p.controllers[node.id] = inst;
        else p.nodes[node.id] = inst;
        if (rep.provider && (!p.provider || inst.healthy)) {
          p.provider = rep.provider;
          p.version = rep.version;
        }
        const fp = rep.fingerprint;
        if (kind === 'controller') {
          for (const c of fp?.controller?.capabilities ?? []) if (!p.controllerCapabilities.includes(c)) p.controllerCapabilities.push(c);
        } else {
          for (const c of fp?.node?.capabilities ?? []) if (!p.nodeCapabilities.includes(c)) p.nodeCapabilities.push(c);
        }
      }
    }
  }

  // Only the allocations of jobs that run a plugin task matter here: one pass that keeps those (a cluster
  // may hold ten thousand others, and a node going down recomputes this).
  const pluginJobIds = new Set<string>();
  for (const job of jobs.values()) if (job.groups.some((g) => (g.tasks as PluginTask[]).some((t) => t.csiPlugin))) pluginJobIds.add(job.id);
  const pluginAllocs = state.list('allocations', { filter: (a) => pluginJobIds.has(a.jobId) });
  // Expected counts from the jobs that run plugins; system jobs count their live allocations.
  const liveAllocs = pluginAllocs.filter((a) => a.desiredStatus === 'run' && !isClientTerminal(a.clientStatus));
  for (const job of jobs.values()) {
    if ((job as Job).stop) continue;
    for (const group of job.groups) {
      const types = new Map<string, 'controller' | 'node' | 'monolith'>();
      for (const task of group.tasks as PluginTask[]) if (task.csiPlugin) types.set(task.csiPlugin.id, task.csiPlugin.type);
      if (types.size === 0) continue;
      const count =
        job.type === 'system'
          ? liveAllocs.filter((a) => a.jobId === job.id && a.namespace === job.namespace && a.taskGroup === group.name).length
          : group.count;
      for (const [pluginId, type] of types) {
        const p = draft(pluginId);
        if (type !== 'node') p.controllersExpected += count;
        if (type !== 'controller') p.nodesExpected += count;
      }
    }
  }

  for (const alloc of pluginAllocs) {
    if (alloc.desiredStatus !== 'run' && isClientTerminal(alloc.clientStatus)) continue;
    const job = jobs.get(rowKey(alloc.namespace, alloc.jobId));
    const group = job?.groups.find((g) => g.name === alloc.taskGroup);
    for (const task of (group?.tasks ?? []) as PluginTask[]) {
      if (!task.csiPlugin) continue;
      draft(task.csiPlugin.id).allocations.push({
        allocId: alloc.id,
        nodeId: alloc.nodeId,
        jobId: alloc.jobId,
        namespace: alloc.namespace,
        type: task.csiPlugin.type,
        desiredStatus: alloc.desiredStatus,
        clientStatus: alloc.clientStatus,
      });
    }
  }

  for (const p of out.values()) {
    const controllers = Object.values(p.controllers);
    p.controllersHealthy = controllers.filter((c) => c.healthy).length;
    p.nodesHealthy = Object.values(p.nodes).filter((n) => n.healthy).length;
    p.controllerRequired = p.controllerCapabilities.includes('PUBLISH_UNPUBLISH_VOLUME');
    p.controllerCapabilities.sort();
    p.nodeCapabilities.sort();
    // Exhaustion only matters while the node still runs the plugin.
    for (const n of Object.keys(p.exhaustedNodes)) if (!p.nodes[n]) delete p.exhaustedNodes[n];
  }
  return out;
}

/**
 * Recomputes the plugin rows inside `txn`: puts the ones whose content
 * changed, deletes the ones with nothing left (no instance, no expected
 * count, no allocation). Call it in every write that changes nodes, jobs or
 * allocations. Synchronous; safe to repeat (a second call changes nothing).
 */
export function updatePlugins(txn: WriteTxn, opts: { clearExhausted?: readonly string[] } = {}): void {
  const next = computePlugins(txn, opts);
  for (const [id, p] of next) {
    const empty =
      Object.keys(p.controllers).length === 0 &&
      Object.keys(p.nodes).length === 0 &&
      p.allocations.length === 0 &&
      p.controllersExpected === 0 &&
      p.nodesExpected === 0;
    const existing = txn.get('plugins', rowKey(id));
    if (empty) {
      if (existing) txn.delete('plugins', rowKey(id));
      continue;
    }
    if (!existing || !sameContent(existing, p)) txn.put('plugins', p);
  }
  for (const existing of txn.list('plugins')) if (!next.has(existing.id)) txn.delete('plugins', rowKey(existing.id));
}

/**
 * Records that ControllerPublish to `nodeId` failed with RESOURCE_EXHAUSTED:
 * placement must stop putting the plugin's volumes there (docs/csi-rules.md scenario 10).
 */
export function markNodeExhausted(txn: WriteTxn, pluginId: string, nodeId: string, reason: string, at: number): void {
  const p = txn.get('plugins', rowKey(pluginId));
  if (!p || p.exhaustedNodes[nodeId]) return;
  txn.put('plugins', { ...p, exhaustedNodes: { ...p.exhaustedNodes, [nodeId]: { at, reason } } });
}

/** Forgets the exhaustion of `nodeId` (a claim there was released: a slot may be free). */
export function clearNodeExhausted(txn: WriteTxn, pluginId: string, nodeId: string): void {
  const p = txn.get('plugins', rowKey(pluginId));
  if (!p || !p.exhaustedNodes[nodeId]) return;
  const { [nodeId]: _gone, ...rest } = p.exhaustedNodes;
  txn.put('plugins', { ...p, exhaustedNodes: rest });
}
