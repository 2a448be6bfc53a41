// CSI plugins, and a plugin: controllers and nodes healthy against expected,
// capabilities, each instance with its health reason, its allocations and volumes.

import { useRoute } from 'preact-iso/router';
import { api, fromGoTime, fromNs, type HealthReport, type PluginStub } from '../api';
import { Badge, Facts, Healthy, Loading, Section, Table, ago, short } from '../components';
import { useLive } from '../live';

function pluginHealthy(p: PluginStub): boolean {
  return p.ControllersHealthy >= p.ControllersExpected && p.NodesHealthy >= p.NodesExpected && p.NodesExpected > 0;
}

/**
 * CSI's names of the capabilities Nomad's CSIControllerInfo and CSINodeInfo
 * fields stand for (the names a plugin advertises and the CSI spec uses).
 */
const CSI_CAPABILITY: Record<'controller' | 'node', Record<string, string>> = {
  controller: {
    SupportsCreateDelete: 'CREATE_DELETE_VOLUME',
    SupportsAttachDetach: 'PUBLISH_UNPUBLISH_VOLUME',
    SupportsListVolumes: 'LIST_VOLUMES',
    SupportsGetCapacity: 'GET_CAPACITY',
    SupportsCreateDeleteSnapshot: 'CREATE_DELETE_SNAPSHOT',
    SupportsListSnapshots: 'LIST_SNAPSHOTS',
    SupportsClone: 'CLONE_VOLUME',
    SupportsReadOnlyAttach: 'PUBLISH_READONLY',
    SupportsExpand: 'EXPAND_VOLUME',
    SupportsListVolumesAttachedNodes: 'LIST_VOLUMES_PUBLISHED_NODES',
    SupportsCondition: 'VOLUME_CONDITION',
    SupportsGet: 'GET_VOLUME',
  },
  node: {
    RequiresNodeStageVolume: 'STAGE_UNSTAGE_VOLUME',
    SupportsStats: 'GET_VOLUME_STATS',
    SupportsExpand: 'EXPAND_VOLUME',
    SupportsCondition: 'VOLUME_CONDITION',
  },
};

/** The capabilities the plugin's instances report, by CSI's names (a field CSI has no name for: in words). */
function capabilities(instances: Record<string, HealthReport> | null, kind: 'controller' | 'node'): string[] {
  const words = new Set<string>();
  for (const i of Object.values(instances ?? {})) {
    const info = (kind === 'controller' ? i.ControllerInfo : i.NodeInfo) as Record<string, unknown> | null;
    for (const [k, v] of Object.entries(info ?? {})) {
      if (v !== true || !/^(Supports|Requires)/.test(k)) continue;
      words.add(CSI_CAPABILITY[kind][k] ?? k.replace(/^Supports/, '').replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase());
    }
  }
  return [...words].sort();
}

export function PluginsPage() {
  const { data, error } = useLive('plugins', ['plugin', 'volume'], async () => {
    const [plugins, volumes] = await Promise.all([api.plugins(), api.volumes()]);
    return { plugins, volumes };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  return (
    <main id="main">
      <h1>CSI plugins</h1>
      <Table
        label="CSI plugins"
        head={['Plugin', 'Provider', 'Health', 'Controllers healthy', 'Nodes healthy', 'Volumes']}
        empty="No CSI plugin registered. Run one as a job with a csi_plugin block."
        rows={data.plugins.map((p) => [
          <a href={`/ui/plugins/${encodeURIComponent(p.ID)}`}>{p.ID}</a>,
          p.Provider,
          <Healthy healthy={pluginHealthy(p)} />,
          p.ControllerRequired ? `${p.ControllersHealthy}/${p.ControllersExpected}` : 'not required',
          `${p.NodesHealthy}/${p.NodesExpected}`,
          String(data.volumes.filter((v) => v.PluginID === p.ID).length),
        ])}
      />
    </main>
  );
}

function Instances({ kind, instances }: { kind: string; instances: Record<string, HealthReport> | null }) {
  return (
    <Table
      label={`${kind} instances`}
      head={['Node', 'Health', 'Reason', 'Allocation', 'Max volumes', 'Topology', 'Updated']}
      empty={`No ${kind} instance.`}
      rows={Object.entries(instances ?? {}).map(([nodeId, i]) => [
        <a href={`/ui/nodes/${nodeId}`}>{short(nodeId)}</a>,
        <Healthy healthy={i.Healthy} />,
        <span data-health-reason>{i.HealthDescription}</span>,
        i.AllocID ? <a href={`/ui/allocations/${i.AllocID}`}>{short(i.AllocID)}</a> : '-',
        i.NodeInfo?.MaxVolumes ? String(i.NodeInfo.MaxVolumes) : '-',
        Object.entries(i.NodeInfo?.AccessibleTopology?.Segments ?? {})
          .map(([k, v]) => `${k}=${short(v)}`)
          .join(', ') || '-',
        ago(fromGoTime(i.UpdateTime)),
      ])}
    />
  );
}

export function PluginPage() {
  const { params } = useRoute();
  const id = params['id'] ?? '';
  const { data, error } = useLive(`plugin/${id}`, ['plugin', 'volume', 'claim', 'allocation'], async () => {
    const [plugin, volumes] = await Promise.all([api.plugin(id), api.volumes()]);
    return { plugin, volumes: volumes.filter((v) => v.PluginID === id) };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { plugin: p, volumes } = data;
  const controllerCaps = capabilities(p.Controllers, 'controller');
  const nodeCaps = capabilities(p.Nodes, 'node');
  return (
    <main id="main">
      <h1>
        CSI plugin {p.ID} <Healthy healthy={pluginHealthy(p)} />
      </h1>
      <Facts
        items={[
          ['Provider', `${p.Provider} ${p.Version}`],
          ['Controllers healthy', <span data-fact="controllers">{p.ControllerRequired ? `${p.ControllersHealthy}/${p.ControllersExpected}` : 'not required'}</span>],
          ['Nodes healthy', <span data-fact="nodes">{`${p.NodesHealthy}/${p.NodesExpected}`}</span>],
        ]}
      />
      <Section title="Capabilities" id="capabilities">
        <h3>Controller</h3>
        <ul class="caps">{controllerCaps.length ? controllerCaps.map((c) => <li>{c}</li>) : <li class="muted">none</li>}</ul>
        <h3>Node</h3>
        <ul class="caps">{nodeCaps.length ? nodeCaps.map((c) => <li>{c}</li>) : <li class="muted">none</li>}</ul>
      </Section>
      <Section title="Controller instances" id="controllers">
        <Instances kind="controller" instances={p.Controllers} />
      </Section>
      <Section title="Node instances" id="node-instances">
        <Instances kind="node" instances={p.Nodes} />
      </Section>
      <Section title="Allocations" id="allocations">
        <Table
          label="plugin allocations"
          head={['Allocation', 'Job', 'Node', 'Desired', 'Status', 'Modified']}
          empty="No allocation runs this plugin."
          rows={(p.Allocations ?? []).map((a) => [
            <a href={`/ui/allocations/${a.ID}`}>{short(a.ID)}</a>,
            <a href={`/ui/jobs/${encodeURIComponent(a.Namespace)}/${encodeURIComponent(a.JobID)}`}>{a.JobID}</a>,
            <a href={`/ui/nodes/${a.NodeID}`}>{short(a.NodeID)}</a>,
            a.DesiredStatus,
            <Badge value={a.ClientStatus} />,
            ago(fromNs(a.ModifyTime)),
          ])}
        />
      </Section>
      <Section title="Volumes" id="volumes">
        <Table
          label="volumes of the plugin"
          head={['Volume', 'Namespace', 'Schedulable', 'Claims']}
          empty="No volume uses this plugin."
          rows={volumes.map((v) => [
            <a href={`/ui/volumes/${encodeURIComponent(v.Namespace)}/${encodeURIComponent(v.ID)}`}>{v.ID}</a>,
            v.Namespace,
            v.Schedulable ? 'yes' : 'no',
            String(v.CurrentReaders + v.CurrentWriters),
          ])}
        />
      </Section>
    </main>
  );
}
