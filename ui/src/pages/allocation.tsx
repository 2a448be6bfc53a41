// An allocation: its tasks and their events, the tail of their logs, and the
// CSI volumes it uses with the state of each claim and mount.

import { useRoute } from 'preact-iso';
import { api, ApiError, fromGoTime, fromNs, type Allocation, type Volume } from '../api';
import { Badge, Facts, Loading, Section, Table, short, time } from '../components';
import { useLive } from '../live';
import { useCanWrite } from '../session';

/** The mount state of a volume in an allocation, from its claim and the tasks' volume events. */
function mountState(alloc: Allocation, vol: Volume | undefined, volumeId: string): { state: string; detail: string } {
  if (!vol) return { state: 'unknown', detail: `volume ${volumeId} is not registered` };
  const claim = vol.BerthClaims.find((c) => c.AllocationID === alloc.ID);
  const events = Object.values(alloc.TaskStates ?? {}).flatMap((t) => (t.Events ?? []).filter((e) => e.Details?.['volume'] === volumeId));
  const last = events.sort((a, b) => b.Time - a.Time)[0];
  if (!claim) return { state: 'released', detail: last ? `${last.Message} (${time(fromNs(last.Time))})` : 'no claim held' };
  if (claim.State !== 'taken') return { state: claim.State, detail: claim.ReleaseReason || claim.LastError || 'releasing the claim' };
  const mounted = last?.Type === 'Volume Mounted';
  return { state: mounted ? 'mounted' : 'claimed', detail: `${claim.Mode} claim, controller ${claim.ControllerPublish}${last ? `; ${last.Message}` : ''}` };
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
    const volumes = await Promise.all((alloc.CSIVolumes ?? []).map((v) => api.volume(alloc.Namespace, v.VolumeID).catch(() => undefined)));
    return { alloc, volumes };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { alloc, volumes } = data;
  return (
    <main id="main">
      <h1>
        Allocation {short(alloc.ID)} <Badge value={alloc.ClientStatus} />
      </h1>
      <Facts
        items={[
          ['ID', <code>{alloc.ID}</code>],
          ['Name', alloc.Name || '-'],
          ['Job', <a href={`/ui/jobs/${encodeURIComponent(alloc.Namespace)}/${encodeURIComponent(alloc.JobID)}`}>{alloc.JobID}</a>],
          ['Group', alloc.TaskGroup],
          ['Node', <a href={`/ui/nodes/${alloc.NodeID}`}>{alloc.NodeName || short(alloc.NodeID)}</a>],
          ['Desired', `${alloc.DesiredStatus}${alloc.DesiredDescription ? ` (${alloc.DesiredDescription})` : ''}`],
          ['Client status', `${alloc.ClientStatus}${alloc.ClientDescription ? ` (${alloc.ClientDescription})` : ''}`],
          ['Created', time(fromNs(alloc.CreateTime))],
        ]}
      />
      <Section title="Volumes" id="volumes">
        <Table
          label="volumes of the allocation"
          head={['Volume', 'Plugin', 'Access', 'State', 'Detail']}
          empty="This allocation uses no CSI volume."
          rows={(alloc.CSIVolumes ?? []).map((v, i) => {
            const m = mountState(alloc, volumes[i], v.VolumeID);
            return [
              <a href={`/ui/volumes/${encodeURIComponent(alloc.Namespace)}/${encodeURIComponent(v.VolumeID)}`}>{v.VolumeID}</a>,
              <a href={`/ui/plugins/${encodeURIComponent(v.PluginID)}`}>{v.PluginID}</a>,
              v.ReadOnly ? 'read-only' : 'read/write',
              <Badge value={m.state} />,
              m.detail,
            ];
          })}
        />
      </Section>
      {Object.entries(alloc.TaskStates ?? {}).map(([name, t]) => (
        <Section title={`Task ${name}`} id={`task-${name}`}>
          <Facts
            items={[
              ['State', <Badge value={t.Failed ? 'failed' : t.State} label={`${t.State}${t.Failed ? ' (failed)' : ''}`} />],
              ['Restarts', String(t.Restarts)],
              ['Started', time(fromGoTime(t.StartedAt))],
              ['Finished', time(fromGoTime(t.FinishedAt))],
            ]}
          />
          <h3>Events</h3>
          <Table
            label={`events of task ${name}`}
            head={['Time', 'Type', 'Message']}
            empty="No events."
            rows={[...(t.Events ?? [])].reverse().map((e) => [time(fromNs(e.Time)), e.Type, e.DisplayMessage || e.Message])}
          />
          <h3>Logs (the end of each)</h3>
          {canReadLogs ? <LogTail allocId={alloc.ID} task={name} /> : <p class="muted">Logs need a management token.</p>}
        </Section>
      ))}
    </main>
  );
}
