// `berth plugin status`: the cluster's CSI plugins, read from Nomad's
// `/v1/plugins?type=csi` and `/v1/plugin/csi/:id` (src/api/csi.ts), as
// tables for people and the API's JSON for scripts.

import type { Command } from 'commander';
import type { CSIInfo, CSIPlugin, CSIPluginListStub } from '../api/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';

/** Adds `status` to `berth plugin` (which also runs the shipped plugins). */
export function addPluginStatus(plugin: Command, ctx: CommandContext): void {
  apiCommand(
    plugin
      .command('status')
      .description('List CSI plugins with healthy/expected controllers and nodes, or show one with its instances and allocations')
      .argument('[id]', 'plugin ID or a unique prefix'),
    ['plugin status', 'plugin status hostpath', 'plugin status host --json'],
  ).action(apiAction(ctx, pluginStatus));
}

/** A Go time as the CLI prints times ("-" for Go's zero time). */
export function goTimestamp(t: string | null | undefined): string {
  const ms = t ? Date.parse(t) : NaN;
  return Number.isFinite(ms) && ms > 0 ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z') : '-';
}

/** The names of the `Supports*` flags that are set ("CreateDelete", "AttachDetach", ...). */
function supported(info: object | undefined): string[] {
  return Object.entries(info ?? {})
    .filter(([k, v]) => k.startsWith('Supports') && v === true)
    .map(([k]) => k.slice('Supports'.length));
}

async function pluginStatus(s: ApiSession, [idArg]: string[]): Promise<void> {
  if (!idArg) {
    const { body: plugins } = await s.api.get<CSIPluginListStub[]>(KINDS.plugin.listPath);
    if (s.out.json) return s.out.document(plugins);
    s.out.table(
      ['ID', 'Provider', 'Controllers Healthy/Expected', 'Nodes Healthy/Expected'],
      plugins.map((p) => [p.ID, p.Provider || '-', `${p.ControllersHealthy}/${p.ControllersExpected}`, `${p.NodesHealthy}/${p.NodesExpected}`]),
    );
    return;
  }
  const id = await s.api.resolve(KINDS.plugin, idArg);
  const { body: p } = await s.api.get<CSIPlugin>(KINDS.plugin.getPath(id));
  if (s.out.json) return s.out.document(p);
  const controllers = Object.entries(p.Controllers ?? {});
  const nodes = Object.entries(p.Nodes ?? {});
  s.out.fields([
    ['ID', p.ID],
    ['Provider', p.Provider || '-'],
    ['Version', p.Version || '-'],
    ['Controllers Required', String(p.ControllerRequired)],
    ['Controllers Healthy', p.ControllersHealthy],
    ['Controllers Expected', p.ControllersExpected],
    ['Nodes Healthy', p.NodesHealthy],
    ['Nodes Expected', p.NodesExpected],
    ['Controller Capabilities', controllers.length ? supported(controllers[0]?.[1].ControllerInfo) : undefined],
    ['Node Capabilities', nodes.length ? supported(nodes[0]?.[1].NodeInfo) : undefined],
  ]);
  const exhausted = Object.entries(p.BerthExhaustedNodes);
  if (exhausted.length) {
    s.out.line();
    s.out.line(s.style.bold('Nodes at their volume limit'));
    s.out.table(['Node ID', 'Since', 'Reason'], exhausted.map(([node, e]) => [shortId(node), goTimestamp(e.Since), e.Reason]));
  }
  const typeOf = (allocId: string): string => {
    const c = controllers.some(([, i]) => i.AllocID === allocId);
    const n = nodes.some(([, i]) => i.AllocID === allocId);
    return c && n ? 'monolith' : c ? 'controller' : n ? 'node' : '-';
  };
  s.out.line();
  s.out.line(s.style.bold('Allocations'));
  s.out.table(
    ['ID', 'Node ID', 'Job ID', 'Type', 'Desired', 'Status'],
    (p.Allocations ?? []).map((a) => [shortId(a.ID), shortId(a.NodeID), a.JobID, typeOf(a.ID), a.DesiredStatus, s.style.status(a.ClientStatus)]),
  );
  const instances: Array<[string, string, CSIInfo]> = [...controllers.map(([n, i]) => [n, 'controller', i] as [string, string, CSIInfo]), ...nodes.map(([n, i]) => [n, 'node', i] as [string, string, CSIInfo])];
  s.out.line();
  s.out.line(s.style.bold('Instances'));
  s.out.table(
    ['Node ID', 'Type', 'Alloc ID', 'Healthy', 'Reason'],
    instances.map(([nodeId, kind, i]) => [shortId(nodeId), kind, shortId(i.AllocID) || '-', s.style.status(String(i.Healthy)), i.HealthDescription]),
  );
}
