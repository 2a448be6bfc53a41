// What an operator opens in the morning: what is wrong first (nodes down,
// failed allocations, unhealthy plugins, abnormal volumes, drift, blocked
// evaluations), each linking to its page, or "all clear"; then the counts;
// then the meaningful recent changes in words (drift checks and routine
// updates left out and counted).

import { api, getIndexed, type AllocStub, type Evaluation, type JobStub, type NodeStub, type PluginStub } from '../api';
import { storageApi, type DoctorReport, type VolumeRow } from '../api-storage';
import { Badge, Loading, Section, short } from '../components';
import { meaningfulChanges, type Changes } from '../event-words';
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

/** One kind of trouble: a heading with how many, and each item linking to its page (the first few, then how many more). */
interface Trouble {
  kind: string;
  title: string;
  items: Array<{ href: string; text: string }>;
  /** Where to see all of them. */
  more?: { href: string; text: string };
}

const SHOWN_PER_KIND = 8;

function pluginHealthy(p: PluginStub): boolean {
  return p.ControllersHealthy >= p.ControllersExpected && p.NodesHealthy >= p.NodesExpected;
}

/**
 * What is wrong now, worst first. A failed allocation counts while nothing
 * replaced it and its job is not stopped (a failure already rescheduled, or
 * of a job stopped since, is history).
 */
export function troubles(d: { nodes: NodeStub[]; jobs: JobStub[]; allocs: AllocStub[]; plugins: PluginStub[]; volumes: VolumeRow[]; blocked: Evaluation[]; drift: DoctorReport }): Trouble[] {
  const stopped = new Set(d.jobs.filter((j) => j.Stop).map((j) => `${j.Namespace}/${j.ID}`));
  const failed = d.allocs.filter((a) => (a.ClientStatus === 'failed' || a.ClientStatus === 'lost') && !a.NextAllocation && !stopped.has(`${a.Namespace}/${a.JobID}`));
  const volumeHref = (ns: string, id: string): string => `/ui/volumes/${encodeURIComponent(ns || 'default')}/${encodeURIComponent(id)}`;
  const driftVolumes = d.volumes.filter((v) => v.BerthDriftFindings > 0);
  const out: Trouble[] = [
    {
      kind: 'nodes-down',
      title: 'Nodes down',
      items: d.nodes.filter((n) => n.Status === 'down').map((n) => ({ href: `/ui/nodes/${encodeURIComponent(n.ID)}`, text: `node ${n.Name || short(n.ID)} is down` })),
      more: { href: '/ui/nodes', text: 'All nodes' },
    },
    {
      kind: 'failed-allocations',
      title: 'Failed allocations',
      items: failed.map((a) => ({ href: `/ui/allocations/${encodeURIComponent(a.ID)}`, text: `allocation ${short(a.ID)} of job ${a.JobID} (group ${a.TaskGroup}) ${a.ClientStatus}${a.ClientDescription ? `: ${a.ClientDescription}` : ''}` })),
      more: { href: '/ui/jobs', text: 'All jobs' },
    },
    {
      kind: 'unhealthy-plugins',
      title: 'Unhealthy CSI plugins',
      items: d.plugins.filter((p) => !pluginHealthy(p)).map((p) => ({
        href: `/ui/plugins/${encodeURIComponent(p.ID)}`,
        text: `plugin ${p.ID}: controllers ${p.ControllersHealthy}/${p.ControllersExpected} healthy, nodes ${p.NodesHealthy}/${p.NodesExpected} healthy`,
      })),
      more: { href: '/ui/plugins', text: 'All plugins' },
    },
    {
      kind: 'abnormal-volumes',
      title: 'Abnormal volumes',
      items: d.volumes.filter((v) => v.BerthCondition?.Abnormal).map((v) => ({ href: volumeHref(v.Namespace, v.ID), text: `volume ${v.ID}: ${v.BerthCondition!.Message}` })),
      more: { href: '/ui/volumes', text: 'All volumes' },
    },
    {
      kind: 'drift',
      title: 'Drifting claims and mounts',
      items: [
        ...driftVolumes.map((v) => ({ href: volumeHref(v.Namespace, v.ID), text: `volume ${v.ID}: ${v.BerthDriftFindings} difference${v.BerthDriftFindings === 1 ? '' : 's'} between Berth's books and the plugin or node` })),
        ...d.drift.Findings.filter((f) => !f.VolumeID).map((f) => ({ href: '/ui/volumes/doctor', text: f.Message })),
      ],
      more: { href: '/ui/volumes/doctor', text: 'Open the volume doctor' },
    },
    {
      kind: 'blocked-evaluations',
      title: 'Blocked evaluations',
      items: d.blocked.map((e) => ({
        href: `/ui/jobs/${encodeURIComponent(e.Namespace || 'default')}/${encodeURIComponent(e.JobID)}`,
        text: `job ${e.JobID} waits for room (evaluation ${short(e.ID)})${e.StatusDescription ? `: ${e.StatusDescription}` : ''}`,
      })),
    },
  ];
  return out.filter((t) => t.items.length > 0);
}

function WhatIsWrong({ list }: { list: Trouble[] }) {
  if (list.length === 0) {
    return (
      <section class="card all-clear" data-section="wrong" aria-labelledby="wrong-h">
        <h2 id="wrong-h">What is wrong</h2>
        <p class="ok" data-all-clear>
          All clear: every node up, no failed allocation, plugins healthy, volumes normal, no drift, no blocked evaluation.
        </p>
      </section>
    );
  }
  return (
    <section class="card wrong" data-section="wrong" aria-labelledby="wrong-h">
      <h2 id="wrong-h">What is wrong</h2>
      {list.map((t) => (
        <div class="trouble-kind" data-trouble={t.kind}>
          <h3>
            {t.title} <Badge value="failed" label={String(t.items.length)} />
          </h3>
          <ul class="trouble">
            {t.items.slice(0, SHOWN_PER_KIND).map((i) => (
              <li>
                <a href={i.href}>{i.text}</a>
              </li>
            ))}
          </ul>
          {t.items.length > SHOWN_PER_KIND || t.more ? (
            <p class="more">
              {t.items.length > SHOWN_PER_KIND ? `and ${t.items.length - SHOWN_PER_KIND} more. ` : ''}
              {t.more ? <a href={t.more.href}>{t.more.text}</a> : null}
            </p>
          ) : null}
        </div>
      ))}
    </section>
  );
}

function RecentChanges({ recent }: { recent: Changes }) {
  const hidden = Object.entries(recent.hidden).filter(([, n]) => n > 0);
  return (
    <Section title="Recent changes" id="events">
      {recent.changes.length === 0 ? (
        <p class="empty">No changes yet.</p>
      ) : (
        <ol class="changes" aria-label="recent changes">
          {recent.changes.map((c) => (
            <li class={`change ${c.tone}`} data-index={c.index}>
              <span class="what">
                {c.words}
                {c.times > 1 ? <span class="muted"> (×{c.times})</span> : null}
              </span>{' '}
              {c.href ? <a href={c.href}>{c.object}</a> : <span class="muted">{c.object}</span>}
            </li>
          ))}
        </ol>
      )}
      <p class="muted" data-hidden-changes>
        Newest first{recent.changes[0] ? `; latest at index ${recent.changes[0].index}` : ''}.
        {hidden.length ? ` Not shown: ${hidden.map(([why, n]) => `${n} ${why}`).join(', ')}.` : ''}
      </p>
    </Section>
  );
}

/** How many store indexes back the recent changes look (drift checks and routine updates are read, then left out). */
const HISTORY_WINDOW = 150;

export function Overview() {
  const { data, error } = useLive('overview', ['node', 'job', 'allocation', 'evaluation', 'plugin', 'volume', 'claim', 'volume-condition', 'drift'], async () => {
    const [nodes, jobs, allocs, plugins, volumes, blocked, drift] = await Promise.all([
      getIndexed<NodeStub[]>('/v1/nodes'),
      getIndexed<JobStub[]>('/v1/jobs?namespace=*'),
      getIndexed<AllocStub[]>('/v1/allocations?namespace=*'),
      getIndexed<PluginStub[]>('/v1/plugins?type=csi'),
      storageApi.volumeList(),
      storageApi.blockedEvaluations(),
      storageApi.driftReport(),
    ]);
    // The recent history: the changes up to now (from the latest index these reads saw), then what the live stream adds.
    const latest = Math.max(nodes.index, jobs.index, allocs.index, plugins.index, volumes.index);
    const history = await api.history(['*'], Math.max(0, latest - HISTORY_WINDOW));
    const seen = new Set(history.map((e) => `${e.Index}/${e.Topic}/${e.Key}`));
    const events = [...history, ...hub.recent.filter((e) => !seen.has(`${e.Index}/${e.Topic}/${e.Key}`))];
    return { nodes: nodes.body, jobs: jobs.body, allocs: allocs.body, plugins: plugins.body, volumes: volumes.body, blocked, drift, recent: meaningfulChanges(events) };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { nodes, jobs, allocs, plugins, volumes, recent } = data;
  const claimed = volumes.filter((v) => v.CurrentReaders + v.CurrentWriters > 0).length;
  const abnormal = volumes.filter((v) => v.BerthCondition?.Abnormal).length;
  const drifting = volumes.filter((v) => v.BerthDriftFindings > 0).length;
  return (
    <main id="main">
      <h1>Cluster overview</h1>
      <WhatIsWrong list={troubles(data)} />
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
                <a href={`/ui/plugins/${encodeURIComponent(p.ID)}`}>{p.ID}</a> <Badge value={pluginHealthy(p) ? 'healthy' : 'unhealthy'} />{' '}
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
            {drifting ? (
              <>
                , <Badge value="drift" label={`${drifting} drifting`} />
              </>
            ) : null}
          </p>
          <a href="/ui/volumes">All volumes</a>
        </Section>
      </div>
      <RecentChanges recent={recent} />
    </main>
  );
}
