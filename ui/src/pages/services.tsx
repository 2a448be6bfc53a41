// The service catalog (Nomad's native service discovery): every service
// with its healthy and unhealthy instances, and a service's instances with
// their allocation, node, address and port, tags and their checks' latest
// results. Healthy is what the API serves by default (Berth leaves out an
// instance whose checks are critical or pending); `include_unhealthy` adds the rest.

import { useRoute } from 'preact-iso/router';
import { servicesApi, type CheckStatus, type ServiceInstance } from '../api-nodes';
import { Badge, Facts, Loading, Section, Table, ago, short } from '../components';
import { useLive } from '../live';
import './nodes.css';

const TOPICS = ['service', 'allocation'];

interface Counted {
  namespace: string;
  name: string;
  tags: string[];
  healthy: number;
  total: number;
}

/** The service's instances (all) and the IDs of those the API serves as healthy. */
async function instancesOf(ns: string, name: string): Promise<{ all: ServiceInstance[]; healthy: Set<string> }> {
  const [all, healthy] = await Promise.all([servicesApi.instances(ns, name, true), servicesApi.instances(ns, name, false)]);
  return { all, healthy: new Set(healthy.map((i) => i.ID)) };
}

const servicePath = (ns: string, name: string): string => `/ui/services/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`;

export function ServicesPage() {
  const { data, error } = useLive('services', TOPICS, async () => {
    const lists = await servicesApi.list();
    const rows = lists.flatMap((l) => l.Services.map((s) => ({ namespace: l.Namespace, name: s.ServiceName, tags: s.Tags })));
    return Promise.all(
      rows.map(async (r): Promise<Counted> => {
        const { all, healthy } = await instancesOf(r.namespace, r.name);
        return { ...r, healthy: healthy.size, total: all.length };
      }),
    );
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  return (
    <main id="main">
      <h1>Services</h1>
      <Table
        label="services"
        head={['Service', 'Namespace', 'Tags', 'Healthy', 'Unhealthy']}
        empty="No service is registered. A group's service block with provider = &quot;nomad&quot; registers one."
        rows={data.map((s) => [
          <a href={servicePath(s.namespace, s.name)} data-service={s.name}>{s.name}</a>,
          s.namespace,
          s.tags.join(', ') || '-',
          <span data-healthy={s.healthy}><Badge value={s.healthy > 0 ? 'healthy' : 'neutral'} label={String(s.healthy)} /></span>,
          <span data-unhealthy={s.total - s.healthy}><Badge value={s.total - s.healthy > 0 ? 'unhealthy' : 'neutral'} label={String(s.total - s.healthy)} /></span>,
        ])}
      />
    </main>
  );
}

/** A check's result in Nomad's words (success, failure, pending), with its output on hover. */
function CheckList({ checks }: { checks: CheckStatus[] }) {
  if (checks.length === 0) return <span class="muted">no checks</span>;
  return (
    <ul class="checks">
      {checks.map((c) => (
        <li data-check={c.Check} data-check-status={c.Status}>
          <Badge value={c.Status === 'success' ? 'healthy' : c.Status === 'failure' ? 'unhealthy' : 'neutral'} label={c.Status} /> {c.Check}
          {c.Output ? <span class="check-output" title={c.Output}> {c.Output.length > 80 ? `${c.Output.slice(0, 80)}…` : c.Output}</span> : null}
          {c.Timestamp ? <span class="muted"> {ago(c.Timestamp * 1000)}</span> : null}
        </li>
      ))}
    </ul>
  );
}

export function ServicePage() {
  const { params } = useRoute();
  const ns = params['ns'] ?? 'default';
  const name = params['name'] ?? '';
  const { data, error } = useLive(`service/${ns}/${name}`, TOPICS, async () => {
    const { all, healthy } = await instancesOf(ns, name);
    const allocs = [...new Set(all.map((i) => i.AllocID))];
    const checks = new Map<string, CheckStatus[]>();
    await Promise.all(
      allocs.map(async (id) => {
        const byId = await servicesApi.checks(id).catch(() => ({}));
        checks.set(id, Object.values(byId).filter((c) => c.Service === name));
      }),
    );
    return { all, healthy, checks };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { all, healthy, checks } = data;
  return (
    <main id="main">
      <h1>Service {name}</h1>
      <Facts
        items={[
          ['Namespace', ns],
          ['Healthy instances', <span data-fact="healthy">{String(healthy.size)}</span>],
          ['Unhealthy instances', <span data-fact="unhealthy">{String(all.length - healthy.size)}</span>],
          ['Jobs', [...new Set(all.map((i) => i.JobID))].map((j) => <a href={`/ui/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(j)}`}>{j} </a>)],
        ]}
      />
      <Section title="Instances" id="instances">
        <Table
          label="service instances"
          head={['Health', 'Allocation', 'Node', 'Address', 'Tags', 'Checks']}
          empty="No instance is registered."
          rows={all.map((i) => [
            <span data-instance={i.ID} data-instance-health={healthy.has(i.ID) ? 'healthy' : 'unhealthy'}>
              <Badge value={healthy.has(i.ID) ? 'healthy' : 'unhealthy'} />
            </span>,
            <a href={`/ui/allocations/${i.AllocID}`}>{short(i.AllocID)}</a>,
            <a href={`/ui/nodes/${i.NodeID}`}>{short(i.NodeID)}</a>,
            <code>{`${i.Address}:${i.Port}`}</code>,
            i.Tags.join(', ') || '-',
            <CheckList checks={checks.get(i.AllocID) ?? []} />,
          ])}
        />
      </Section>
    </main>
  );
}
