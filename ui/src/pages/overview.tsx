// The cluster at a glance: nodes, jobs, allocations by state, plugins,
// volumes, and the latest changes from the event stream.

import { api, getIndexed, volumeCondition, type StreamEvent } from '../api';
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
  const ns = encodeURIComponent(ev.Namespace || 'default');
  const key = encodeURIComponent(ev.Key);
  switch (ev.Topic) {
    case 'Node':
    case 'NodeDrain':
      return `/ui/nodes/${key}`;
    case 'CSIPlugin':
      return `/ui/plugins/${key}`;
    case 'CSIVolume':
      return `/ui/volumes/${ns}/${key}`;
    case 'Job':
      return `/ui/jobs/${ns}/${key}`;
    case 'Allocation':
      return `/ui/allocations/${key}`;
    default:
      return undefined;
  }
}

/** The object an event is about, as an operator names it: `namespace/key` for a namespaced object, its key otherwise (nodes, plugins). */
export function eventObject(ev: StreamEvent): string {
  return ev.Namespace ? `${ev.Namespace}/${ev.Key}` : ev.Key;
}

export function EventTable({ events, label }: { events: readonly StreamEvent[]; label: string }) {
  return (
    <Table
      label={label}
      head={['Index', 'Topic', 'Change', 'Object']}
      empty="No changes yet."
      rows={events.map((ev) => {
        const href = eventLink(ev);
        const name = eventObject(ev);
        return [String(ev.Index), ev.Topic, ev.Type, href ? <a href={href}>{name}</a> : name];
      })}
    />
  );
}

export function Overview() {
  const { data, error } = useLive('overview', ['node', 'job', 'allocation', 'plugin', 'volume', 'claim', 'volume-condition'], async () => {
    const [nodes, jobs, allocs, plugins, volumes] = await Promise.all([
      getIndexed<Awaited<ReturnType<typeof api.nodes>>>('/v1/nodes'),
      getIndexed<Awaited<ReturnType<typeof api.jobs>>>('/v1/jobs?namespace=*'),
      getIndexed<Awaited<ReturnType<typeof api.allocations>>>('/v1/allocations?namespace=*'),
      getIndexed<Awaited<ReturnType<typeof api.plugins>>>('/v1/plugins?type=csi'),
      getIndexed<Awaited<ReturnType<typeof api.volumes>>>('/v1/volumes?type=csi&namespace=*'),
    ]);
    // The recent history: the last changes up to now (from the latest index these reads saw), then what the live stream adds.
    const latest = Math.max(nodes.index, jobs.index, allocs.index, plugins.index, volumes.index);
    const history = await api.history(['*'], Math.max(0, latest - 20));
    const seen = new Set(history.map((e) => `${e.Index}/${e.Topic}/${e.Key}`));
    const recent = [...hub.recent.filter((e) => !seen.has(`${e.Index}/${e.Topic}/${e.Key}`)), ...history.reverse()].slice(0, 20);
    // Nomad's list rows carry no condition: the abnormal count reads each volume.
    const abnormal = (await api.volumesInFull(volumes.body)).filter((v) => volumeCondition(v)?.Abnormal).length;
    return { nodes: nodes.body, jobs: jobs.body, allocs: allocs.body, plugins: plugins.body, volumes: volumes.body, abnormal, recent };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { nodes, jobs, allocs, plugins, volumes, abnormal, recent } = data;
  const claimed = volumes.filter((v) => v.CurrentReaders + v.CurrentWriters > 0).length;
  return (
    <main id="main">
      <h1>Cluster overview</h1>
      <div class="grid">
        <Section title={`Nodes (${nodes.length})`} id="nodes">
          <Counts counts={countBy(nodes, (n) => n.Status)} testid="nodes" />
          <a href="/ui/nodes">All nodes</a>
        </Section>
        <Section title={`Jobs (${jobs.length})`} id="jobs">
          <Counts counts={countBy(jobs, (j) => j.Status)} testid="jobs" />
          <a href="/ui/jobs">All jobs</a>
        </Section>
        <Section title={`Allocations (${allocs.length})`} id="allocations">
          <Counts counts={countBy(allocs, (a) => a.ClientStatus)} testid="allocations" />
        </Section>
        <Section title={`CSI plugins (${plugins.length})`} id="plugins">
          <ul class="counts">
            {plugins.map((p) => (
              <li>
                <a href={`/ui/plugins/${encodeURIComponent(p.ID)}`}>{p.ID}</a>{' '}
                <Badge value={p.ControllersHealthy >= p.ControllersExpected && p.NodesHealthy >= p.NodesExpected ? 'healthy' : 'unhealthy'} />{' '}
                <span class="muted">
                  nodes {p.NodesHealthy}/{p.NodesExpected}
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
