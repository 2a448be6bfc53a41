// An allocation: its tasks and their events, the tail of their logs, and the
// CSI volumes it uses with the state of each claim and mount.

import { useRoute } from 'preact-iso';
import { api, ApiError, type Allocation, type Volume } from '../api';
import { Badge, Facts, Loading, Section, Table, short, time } from '../components';
import { useLive } from '../live';
import { useCanWrite } from '../session';

/** The mount state of a volume in an allocation, from its claim and the tasks' volume events. */
function mountState(alloc: Allocation, vol: Volume | undefined, volumeId: string): { state: string; detail: string } {
  if (!vol) return { state: 'unknown', detail: `volume ${volumeId} is not registered` };
  const claim = vol.claims.find((c) => c.allocId === alloc.id);
  const events = Object.values(alloc.taskStates).flatMap((t) => t.events.filter((e) => e.details['volume'] === volumeId));
  const last = events.sort((a, b) => b.at - a.at)[0];
  if (!claim) return { state: 'released', detail: last ? `${last.message} (${time(last.at)})` : 'no claim held' };
  if (claim.state !== 'taken') return { state: claim.state, detail: claim.releaseReason || claim.lastError || 'releasing the claim' };
  const mounted = last?.type === 'Volume Mounted';
  return { state: mounted ? 'mounted' : 'claimed', detail: `${claim.mode} claim, controller ${claim.controllerPublish}${last ? `; ${last.message}` : ''}` };
}

function LogTail({ allocId, task }: { allocId: string; task: string }) {
  const { data, error } = useLive(`logs/${allocId}/${task}`, ['Allocation'], async () => {
    const [stdout, stderr] = await Promise.all([api.logTail(allocId, task, 'stdout'), api.logTail(allocId, task, 'stderr').catch(() => '')]);
    return { stdout, stderr };
  });
  if (error && !data) {
    const why =
      error instanceof ApiError && error.status === 404
        ? `this agent does not run the allocation; read its logs with: berth alloc logs ${short(allocId)} ${task}`
        : error.message;
    return <p class="muted">Logs unavailable: {why}</p>;
  }
  if (!data) return <p class="loading">Loading logs…</p>;
  return (
    <>
      <pre class="logs" tabIndex={0} aria-label={`stdout of ${task}`} data-logs={`${task}/stdout`}>
        {data.stdout || '(no output)'}
      </pre>
      {data.stderr ? (
        <pre class="logs err" tabIndex={0} aria-label={`stderr of ${task}`}>
          {data.stderr}
        </pre>
      ) : null}
    </>
  );
}

export function AllocationPage() {
  const { params } = useRoute();
  const id = params['id'] ?? '';
  const canReadLogs = useCanWrite();
  const { data, error } = useLive(`alloc/${id}`, ['Allocation', 'claim', 'CSIVolume'], async () => {
    const alloc = await api.allocation(id);
    const volumes = await Promise.all((alloc.csiVolumes ?? []).map((v) => api.volume(alloc.namespace, v.volumeId).catch(() => undefined)));
    return { alloc, volumes };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { alloc, volumes } = data;
  return (
    <main id="main">
      <h1>
        Allocation {short(alloc.id)} <Badge value={alloc.clientStatus} />
      </h1>
      <Facts
        items={[
          ['ID', <code>{alloc.id}</code>],
          ['Name', alloc.name ?? '-'],
          ['Job', <a href={`/ui/jobs/${encodeURIComponent(alloc.namespace)}/${encodeURIComponent(alloc.jobId)}`}>{alloc.jobId}</a>],
          ['Group', alloc.taskGroup],
          ['Node', <a href={`/ui/nodes/${alloc.nodeId}`}>{short(alloc.nodeId)}</a>],
          ['Desired', `${alloc.desiredStatus}${alloc.desiredDescription ? ` (${alloc.desiredDescription})` : ''}`],
          ['Client status', `${alloc.clientStatus}${alloc.clientDescription ? ` (${alloc.clientDescription})` : ''}`],
          ['Created', time(alloc.createTime)],
        ]}
      />
      <Section title="Volumes" id="volumes">
        <Table
          label="volumes of the allocation"
          head={['Volume', 'Plugin', 'Access', 'State', 'Detail']}
          empty="This allocation uses no CSI volume."
          rows={(alloc.csiVolumes ?? []).map((v, i) => {
            const m = mountState(alloc, volumes[i], v.volumeId);
            return [
              <a href={`/ui/volumes/${encodeURIComponent(alloc.namespace)}/${encodeURIComponent(v.volumeId)}`}>{v.volumeId}</a>,
              <a href={`/ui/plugins/${encodeURIComponent(v.pluginId)}`}>{v.pluginId}</a>,
              v.readOnly ? 'read-only' : 'read/write',
              <Badge value={m.state} />,
              m.detail,
            ];
          })}
        />
      </Section>
      {Object.entries(alloc.taskStates).map(([name, t]) => (
        <Section title={`Task ${name}`} id={`task-${name}`}>
          <Facts
            items={[
              ['State', <Badge value={t.failed ? 'failed' : t.state} label={`${t.state}${t.failed ? ' (failed)' : ''}`} />],
              ['Restarts', String(t.restarts)],
              ['Started', time(t.startedAt)],
              ['Finished', time(t.finishedAt)],
            ]}
          />
          <h3>Events</h3>
          <Table
            label={`events of task ${name}`}
            head={['Time', 'Type', 'Message']}
            empty="No events."
            rows={[...t.events].reverse().map((e) => [time(e.at), e.type, e.message])}
          />
          <h3>Logs (last 50 lines)</h3>
          {canReadLogs ? <LogTail allocId={alloc.id} task={name} /> : <p class="muted">Logs need a management token.</p>}
        </Section>
      ))}
    </main>
  );
}
