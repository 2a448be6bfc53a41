// The cluster at a glance: nodes, jobs, allocations by state, plugins,
// volumes, and the latest changes from the event stream.

import { api, volumeCondition, type StreamEvent } from '../api';
import { Badge, Loading, Section, Table } from '../components';
import { hub, useLive } from '../live';

function countBy<T>(rows: T[], key: (r: T) => string): Array<[string, number]> {
  const m = new Map<string, number>();
  for (const r of rows) m.set(key(r), (m.get(key(r)) ?? 0) + 1);
  return [...m.entries()].sort((a, b) => b[1] - a[1]);
}

function Counts({ counts, testid }: { counts: Array<[string, number]>; testid: string }) {
  if (counts.length === 0) return <p class="empty">none</p>;
  return (
    <ul class="counts" data-counts={testid}>
      {counts.map(([k, n]) => (
        <li>
          <Badge value={k} /> <strong data-count={k}>{n}</strong>
        </li>
      ))}
    </ul>
  );
}

/** Where an event's object leads in the UI. */
export function eventLink(ev: StreamEvent): string | undefined {
  const enc = encodeURIComponent;
  switch (ev.Topic) {
    case 'Node':
      return `/ui/nodes/${enc(ev.Key)}`;
    case 'CSIPlugin':
      return `/ui/plugins/${enc(ev.Key)}`;
    case 'CSIVolume':
      return `/ui/volumes/${enc(ev.Namespace)}/${enc(ev.Key)}`;
    case 'claim':
      return ev.FilterKeys?.[0] ? `/ui/volumes/${enc(ev.Namespace)}/${enc(ev.FilterKeys[0])}` : undefined;
    case 'Job':
      return `/ui/jobs/${enc(ev.Namespace)}/${enc(ev.Key)}`;
    case 'Allocation':
      return `/ui/allocations/${enc(ev.Key)}`;
    default:
      return undefined;
  }
}

export function EventTable({ events, label }: { events: readonly StreamEvent[]; label: string }) {
  return (
    <Table
      label={label}
      head={['Index', 'Topic', 'Change', 'Object']}
      empty="No changes yet."
      rows={events.map((ev) => {
        const href = eventLink(ev);
        const name = ev.Namespace ? `${ev.Namespace}/${ev.Key}` : ev.Key;
        return [String(ev.Index), ev.Topic, ev.Type, href ? <a href={href}>{name}</a> : name];
      })}
    />
  );
}

export function Overview() {
  const { data, error } = useLive('overview', ['Node', 'Job', 'Allocation', 'CSIPlugin', 'CSIVolume', 'claim'], async () => {
    const [nodes, jobs, allocs, plugins, volumes, latest] = await Promise.all([
      api.nodes(),
      api.jobs(),
      api.allocations(),
      api.plugins(),
      api.volumes(),
      api.latestIndex(),
    ]);
    // The recent history: the last changes up to now, then what the live stream adds.
    const history = await api.history(['*'], Math.max(0, latest - 20));
    const seen = new Set(history.map((e) => e.Index));
    const recent = [...hub.recent.filter((e) => !seen.has(e.Index)), ...history.reverse()].slice(0, 20);
    return { nodes, jobs, allocs, plugins, volumes, recent };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { nodes, jobs, allocs, plugins, volumes, recent } = data;
  const claimed = volumes.filter((v) => v.claims.length > 0).length;
  const abnormal = volumes.filter((v) => volumeCondition(v)?.abnormal).length;
  return (
    <main id="main">
      <h1>Cluster overview</h1>
      <div class="grid">
        <Section title={`Nodes (${nodes.length})`} id="nodes">
          <Counts counts={countBy(nodes, (n) => n.status)} testid="nodes" />
          <a href="/ui/nodes">All nodes</a>
        </Section>
        <Section title={`Jobs (${jobs.length})`} id="jobs">
          <Counts counts={countBy(jobs, (j) => j.status)} testid="jobs" />
          <a href="/ui/jobs">All jobs</a>
        </Section>
        <Section title={`Allocations (${allocs.length})`} id="allocations">
          <Counts counts={countBy(allocs, (a) => a.clientStatus)} testid="allocations" />
        </Section>
        <Section title={`CSI plugins (${plugins.length})`} id="plugins">
          <ul class="counts">
            {plugins.map((p) => (
              <li>
                <a href={`/ui/plugins/${encodeURIComponent(p.id)}`}>{p.id}</a>{' '}
                <Badge value={p.controllersHealthy >= p.controllersExpected && p.nodesHealthy >= p.nodesExpected ? 'healthy' : 'unhealthy'} />{' '}
                <span class="muted">
                  nodes {p.nodesHealthy}/{p.nodesExpected}
                </span>
              </li>
            ))}
          </ul>
          {plugins.length === 0 ? <p class="empty">No CSI plugin registered.</p> : null}
        </Section>
        <Section title={`Volumes (${volumes.length})`} id="volumes">
          <p>
            <strong data-count="claimed">{claimed}</strong> claimed, <strong>{volumes.length - claimed}</strong> free
            {abnormal ? (
              <>
                , <Badge value="abnormal" label={`${abnormal} abnormal`} />
              </>
            ) : null}
          </p>
          <a href="/ui/volumes">All volumes</a>
        </Section>
      </div>
      <Section title="Recent changes" id="events">
        <EventTable events={recent} label="recent changes" />
        <p class="muted">Newest first{recent[0] ? `; latest at index ${recent[0].Index}` : ''}.</p>
      </Section>
    </main>
  );
}
