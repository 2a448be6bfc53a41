// The allocation's CSI volumes with the state of each claim and mount; a
// volume the plugin reports abnormal says so, with the plugin's message,
// whatever the mount events said.

import { fromNs, volumeCondition, type Allocation, type Volume } from '../api';
import { Badge, Section, Table, time } from '../components';

/** The mount state of a volume in an allocation, from its condition, its claim and the tasks' volume events. Pure. */
export function mountState(alloc: Allocation, vol: Volume | undefined, volumeId: string): { state: string; detail: string } {
  if (!vol) return { state: 'unknown', detail: `volume ${volumeId} is not registered` };
  const claim = vol.BerthClaims.find((c) => c.AllocationID === alloc.ID);
  const events = Object.values(alloc.TaskStates ?? {}).flatMap((t) => (t.Events ?? []).filter((e) => e.Details?.['volume'] === volumeId));
  const last = events.sort((a, b) => b.Time - a.Time)[0];
  if (!claim) return { state: 'released', detail: last ? `${last.Message} (${time(fromNs(last.Time))})` : 'no claim held' };
  if (claim.State !== 'taken') return { state: claim.State, detail: claim.ReleaseReason || claim.LastError || 'releasing the claim' };
  const condition = volumeCondition(vol);
  if (condition?.Abnormal) return { state: 'abnormal', detail: `the plugin reports: ${condition.Message || 'abnormal, without a message'}` };
  const mounted = last?.Type === 'Volume Mounted';
  return { state: mounted ? 'mounted' : 'claimed', detail: `${claim.Mode} claim, controller ${claim.ControllerPublish}${last ? `; ${last.Message}` : ''}` };
}

export function AllocVolumes({ alloc, volumes }: { alloc: Allocation; volumes: Array<Volume | undefined> }) {
  return (
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
            <span data-mount={v.VolumeID} data-mount-state={m.state}>
              <Badge value={m.state} />
            </span>,
            m.detail,
          ];
        })}
      />
    </Section>
  );
}
