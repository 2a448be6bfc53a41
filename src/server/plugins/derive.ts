import { csiInstanceOf as instanceOf, isClientTerminal, type CsiPluginInstance, type CsiPluginRow, type Job, type Node } from '../../structs/index.js';
import { rowKey, type StateReader, type WriteTxn } from '../state/index.js';

type PluginDraft = Omit<CsiPluginRow, 'createIndex' | 'modifyIndex'>;

/** A task's csi_plugin block, as the job JSON carries it. */
type PluginTask = { csiPlugin?: { id: string; type: 'controller' | 'node' | 'monolith' } };

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
  return derivePlugins(state, opts).plugins;
}

/** computePlugins, with the nodes that run each plugin as a node plugin (what updatePlugins needs to drop an empty row). */
function derivePlugins(state: StateReader, opts: { clearExhausted?: readonly string[] }): { plugins: Map<string, PluginDraft>; running: Map<string, Set<string>> } {
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

  // Nodes that run each plugin (its node instances are not stored: they are read from the node rows).
  const running = new Map<string, Set<string>>();
  for (const node of [...nodes].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    for (const [kind, reports] of [
      ['controller', node.csiControllerPlugins],
      ['node', node.csiNodePlugins],
    ] as const) {
      for (const [pluginId, rep] of Object.entries(reports)) {
        const p = draft(pluginId);
        const inst = instanceOf(node, rep, kind);
        if (kind === 'controller') p.controllers[node.id] = inst;
        else {
          if (inst.healthy) p.nodesHealthy++;
          let set = running.get(pluginId);
          if (!set) running.set(pluginId, (set = new Set()));
          set.add(node.id);
        }
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
    p.controllerRequired = p.controllerCapabilities.includes('PUBLISH_UNPUBLISH_VOLUME');
    p.controllerCapabilities.sort();
    p.nodeCapabilities.sort();
    // Exhaustion only matters while the node still runs the plugin.
    const on = running.get(p.id);
    for (const n of Object.keys(p.exhaustedNodes)) if (!on?.has(n)) delete p.exhaustedNodes[n];
  }
  return { plugins: out, running };
}

/**
 * Recomputes the plugin rows inside `txn`: puts the ones whose content
 * changed, deletes the ones with nothing left (no instance, no expected
 * count, no allocation). Call it in every write that changes nodes, jobs or
 * allocations. Synchronous; safe to repeat (a second call changes nothing).
 */
export function updatePlugins(txn: WriteTxn, opts: { clearExhausted?: readonly string[] } = {}): void {
  const { plugins: next, running } = derivePlugins(txn, opts);
  for (const [id, p] of next) {
    const empty =
      Object.keys(p.controllers).length === 0 &&
      !running.has(id) &&
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
 * Brings the plugin rows up to date after one node's write (`prev` -> `next`;
 * undefined: absent), in the same transaction. The common case (a node
 * registering, heartbeating or going down with plugins the row already
 * knows) adjusts only the counts of the plugins that node runs: no pass over
 * the other nodes, and a row of constant size written. Anything the counts
 * cannot follow (a controller, a new plugin, a node that stops running one,
 * capabilities or a provider the row does not show) recomputes every plugin
 * (updatePlugins). `clearExhausted`: forget the node's volume exhaustion
 * (it registered again). Synchronous; safe to repeat.
 */
export function updatePluginsForNode(txn: WriteTxn, prev: Node | undefined, next: Node | undefined, opts: { clearExhausted?: boolean } = {}): void {
  const node = next ?? prev;
  if (!node) return;
  const clear = opts.clearExhausted === true;
  const full = (): void => updatePlugins(txn, clear ? { clearExhausted: [node.id] } : {});
  const ctl = (n: Node | undefined): string => (n && Object.keys(n.csiControllerPlugins).length > 0 ? JSON.stringify([n.status === 'down', n.csiControllerPlugins]) : '');
  if (ctl(prev) !== ctl(next)) return full();
  const ids = new Set([...Object.keys(prev?.csiNodePlugins ?? {}), ...Object.keys(next?.csiNodePlugins ?? {})]);
  const updates: CsiPluginRow[] = [];
  for (const id of ids) {
    const before = prev?.csiNodePlugins[id] && instanceOf(prev, prev.csiNodePlugins[id], 'node');
    const after = next?.csiNodePlugins[id] && instanceOf(next, next.csiNodePlugins[id], 'node');
    const row = txn.get('plugins', rowKey(id));
    if (!row || !after) return full();
    const beforeCaps = prev?.csiNodePlugins[id]?.fingerprint?.node?.capabilities ?? [];
    const afterCaps = next?.csiNodePlugins[id]?.fingerprint?.node?.capabilities ?? [];
    // A capability only this node had may leave the union; a provider other than the row's may change which one shows.
    if (beforeCaps.some((c) => !afterCaps.includes(c))) return full();
    const sameProvider = (i: CsiPluginInstance | undefined): boolean => !i?.provider || (i.provider === row.provider && i.version === row.version);
    if (!sameProvider(before) || !sameProvider(after) || (!row.provider && after.provider)) return full();
    const nodeCapabilities = [...row.nodeCapabilities];
    for (const c of afterCaps) if (!nodeCapabilities.includes(c)) nodeCapabilities.push(c);
    nodeCapabilities.sort();
    const { [node.id]: _gone, ...otherExhausted } = row.exhaustedNodes;
    updates.push({
      ...row,
      nodeCapabilities,
      nodesHealthy: row.nodesHealthy + (after.healthy ? 1 : 0) - (before?.healthy ? 1 : 0),
      exhaustedNodes: clear ? otherExhausted : row.exhaustedNodes,
    });
  }
  for (const u of updates) if (!sameContent(txn.get('plugins', rowKey(u.id))!, u)) txn.put('plugins', u);
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
