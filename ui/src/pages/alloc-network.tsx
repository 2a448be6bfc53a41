// The allocation's network as Nomad's UI shows it: the mode, its address,
// and each port the scheduler gave it (label, host address, the port it maps
// to inside the allocation's network, static or dynamic); then the services
// the allocation registers with their checks' latest results.

import { ApiError, getJson, type Allocation } from '../api';
import { allocApi, type CheckStatuses } from '../api-alloc';
import { Badge, Facts, Section, Table, time } from '../components';
import { useLive } from '../live';

/** `host:port`, with IPv6 hosts in brackets. */
function hostPort(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip || '-'}:${port}`;
}

/** The group the allocation runs, from the job it carries. */
function groupOf(alloc: Allocation) {
  return alloc.Job?.TaskGroups?.find((g) => g.Name === alloc.TaskGroup);
}

export function AllocNetwork({ alloc }: { alloc: Allocation }) {
  const shared = alloc.AllocatedResources?.Shared;
  const net = shared?.Networks?.[0];
  const asked = groupOf(alloc)?.Networks?.[0];
  const statics = new Set((asked?.ReservedPorts ?? []).map((p) => p.Label));
  const mode = net?.Mode || asked?.Mode || 'host';
  const address = alloc.NetworkStatus?.Address || net?.IP || '';
  return (
    <Section title="Ports and network" id="network">
      <Facts
        items={[
          ['Network mode', <span data-network-mode={mode}>{mode}</span>],
          ['Address', address || '-'],
          ...(alloc.NetworkStatus?.InterfaceName ? ([['Interface', alloc.NetworkStatus.InterfaceName]] as Array<[string, string]>) : []),
        ]}
      />
      <Table
        label="ports of the allocation"
        head={['Label', 'Host address', 'Mapped to', 'Kind']}
        empty="This allocation has no port."
        rows={(shared?.Ports ?? []).map((p) => [
          <span data-port={p.Label}>{p.Label}</span>,
          hostPort(p.HostIP, p.Value),
          p.To > 0 ? String(p.To) : p.To === -1 ? String(p.Value) : '-',
          statics.has(p.Label) ? 'static' : 'dynamic',
        ])}
      />
    </Section>
  );
}

/** Nomad's check statuses in the UI's tones: success is healthy, failure unhealthy. */
function checkTone(status: string): string {
  return status === 'success' ? 'healthy' : status === 'failure' ? 'unhealthy' : status;
}

/**
 * The latest check results: from the agent that runs the allocation (Nomad's
 * client route); from what its node reported to the servers when this agent
 * does not run it.
 */
async function loadChecks(id: string): Promise<CheckStatuses> {
  try {
    return await allocApi.checks(id);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return getJson<CheckStatuses>(`/v1/allocation/${encodeURIComponent(id)}/checks`);
    throw err;
  }
}

export function AllocServices({ alloc }: { alloc: Allocation }) {
  const group = groupOf(alloc);
  const services = [
    ...(group?.Services ?? []).map((s) => ({ s, task: '' })),
    ...(group?.Tasks ?? []).flatMap((t) => (t.Services ?? []).map((s) => ({ s, task: t.Name }))),
  ];
  const live = alloc.ClientStatus === 'running' || alloc.ClientStatus === 'pending';
  const { data: checks, error } = useLive(`alloc-checks/${alloc.ID}`, ['allocation'], () => loadChecks(alloc.ID), live && services.length ? { everyMs: 5000 } : {});
  if (services.length === 0) return null;
  const results = Object.values(checks ?? {}).sort((a, b) => (a.Service + a.Check).localeCompare(b.Service + b.Check));
  return (
    <Section title="Services and checks" id="services">
      <Table
        label="services of the allocation"
        head={['Service', 'Provider', 'Port', 'Task', 'Checks']}
        empty="No service."
        rows={services.map(({ s, task }) => [
          <a href={`/ui/services/${encodeURIComponent(alloc.Namespace)}/${encodeURIComponent(s.Name)}`}>{s.Name}</a>,
          s.Provider || 'consul',
          s.PortLabel || '-',
          task || s.TaskName || '(group)',
          String((s.Checks ?? []).length),
        ])}
      />
      <h3>Check results</h3>
      {error && !checks ? <p class="muted">Check results unavailable: {error.message}</p> : null}
      <Table
        label="check results of the allocation"
        head={['Service', 'Check', 'Status', 'Output', 'Checked']}
        empty={checks ? 'No check has run yet.' : 'Loading…'}
        rows={results.map((c) => [
          c.Service,
          c.Check,
          <span data-check={c.Check} data-check-status={c.Status}>
            <Badge value={checkTone(c.Status)} label={c.Status} />
          </span>,
          <code class="check-output">{c.Output.trim() || '(none)'}</code>,
          time(c.Timestamp * 1000),
        ])}
      />
    </Section>
  );
}
