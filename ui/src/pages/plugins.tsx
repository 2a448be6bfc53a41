// CSI plugins, and a plugin: controllers and nodes healthy against expected,
// capabilities, each instance with its health reason, its allocations and volumes.

import { useRoute } from 'preact-iso';
import { api, type Plugin, type PluginInstance } from '../api';
import { Badge, Facts, Healthy, Loading, Section, Table, ago, short } from '../components';
import { useLive } from '../live';

function pluginHealthy(p: Plugin): boolean {
  return p.controllersHealthy >= p.controllersExpected && p.nodesHealthy >= p.nodesExpected && p.nodesExpected > 0;
}

export function PluginsPage() {
  const { data, error } = useLive('plugins', ['CSIPlugin', 'CSIVolume'], async () => {
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
          <a href={`/ui/plugins/${encodeURIComponent(p.id)}`}>{p.id}</a>,
          `${p.provider} ${p.version}`,
          <Healthy healthy={pluginHealthy(p)} />,
          p.controllerRequired ? `${p.controllersHealthy}/${p.controllersExpected}` : 'not required',
          `${p.nodesHealthy}/${p.nodesExpected}`,
          String(data.volumes.filter((v) => v.pluginId === p.id).length),
        ])}
      />
    </main>
  );
}

function Instances({ kind, instances }: { kind: string; instances: Record<string, PluginInstance> }) {
  return (
    <Table
      label={`${kind} instances`}
      head={['Node', 'Health', 'Reason', 'Allocation', 'Max volumes', 'Topology', 'Updated']}
      empty={`No ${kind} instance.`}
      rows={Object.values(instances ?? {}).map((i) => [
        <a href={`/ui/nodes/${i.nodeId}`}>{short(i.nodeId)}</a>,
        <Healthy healthy={i.healthy} />,
        <span data-health-reason>{i.healthReason}</span>,
        i.allocId ? <a href={`/ui/allocations/${i.allocId}`}>{short(i.allocId)}</a> : '-',
        i.maxVolumes ? String(i.maxVolumes) : '-',
        Object.entries(i.topology ?? {})
          .map(([k, v]) => `${k}=${short(v)}`)
          .join(', ') || '-',
        ago(i.updatedAt),
      ])}
    />
  );
}

export function PluginPage() {
  const { params } = useRoute();
  const id = params['id'] ?? '';
  const { data, error } = useLive(`plugin/${id}`, ['CSIPlugin', 'CSIVolume', 'claim', 'Allocation'], async () => {
    const [plugin, volumes] = await Promise.all([api.plugin(id), api.volumes()]);
    return { plugin, volumes: volumes.filter((v) => v.pluginId === id) };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { plugin: p, volumes } = data;
  return (
    <main id="main">
      <h1>
        CSI plugin {p.id} <Healthy healthy={pluginHealthy(p)} />
      </h1>
      <Facts
        items={[
          ['Provider', `${p.provider} ${p.version}`],
          ['Controllers healthy', <span data-fact="controllers">{p.controllerRequired ? `${p.controllersHealthy}/${p.controllersExpected}` : 'not required'}</span>],
          ['Nodes healthy', <span data-fact="nodes">{`${p.nodesHealthy}/${p.nodesExpected}`}</span>],
        ]}
      />
      <Section title="Capabilities" id="capabilities">
        <h3>Controller</h3>
        <ul class="caps">{p.controllerCapabilities.length ? p.controllerCapabilities.map((c) => <li>{c}</li>) : <li class="muted">none</li>}</ul>
        <h3>Node</h3>
        <ul class="caps">{p.nodeCapabilities.length ? p.nodeCapabilities.map((c) => <li>{c}</li>) : <li class="muted">none</li>}</ul>
      </Section>
      <Section title="Controller instances" id="controllers">
        <Instances kind="controller" instances={p.controllers} />
      </Section>
      <Section title="Node instances" id="node-instances">
        <Instances kind="node" instances={p.nodes} />
      </Section>
      <Section title="Allocations" id="allocations">
        <Table
          label="plugin allocations"
          head={['Allocation', 'Job', 'Node', 'Type', 'Desired', 'Status']}
          empty="No allocation runs this plugin."
          rows={p.allocations.map((a) => [
            <a href={`/ui/allocations/${a.allocId}`}>{short(a.allocId)}</a>,
            <a href={`/ui/jobs/${encodeURIComponent(a.namespace)}/${encodeURIComponent(a.jobId)}`}>{a.jobId}</a>,
            <a href={`/ui/nodes/${a.nodeId}`}>{short(a.nodeId)}</a>,
            a.type,
            a.desiredStatus,
            <Badge value={a.clientStatus} />,
          ])}
        />
      </Section>
      <Section title="Volumes" id="volumes">
        <Table
          label="volumes of the plugin"
          head={['Volume', 'Namespace', 'Schedulable', 'Claims']}
          empty="No volume uses this plugin."
          rows={volumes.map((v) => [
            <a href={`/ui/volumes/${encodeURIComponent(v.namespace)}/${encodeURIComponent(v.id)}`}>{v.id}</a>,
            v.namespace,
            v.schedulable ? 'yes' : 'no',
            String(v.claims.length),
          ])}
        />
      </Section>
    </main>
  );
}
