// An allocation: what it is, a writer's actions on it (stop, restart,
// signal), its ports and network, its services with their checks' latest
// results, the live CPU and memory of its tasks, the CSI volumes it uses
// with the state of each claim and mount, and each task with its lifecycle,
// events, tools (logs, files, exec) and the end of its logs.

import { useRoute } from 'preact-iso/router';
import { api, fromNs, type Allocation } from '../api';
import { Badge, Facts, Loading, short, time } from '../components';
import { useLive } from '../live';
import { useCanWrite } from '../session';
import { AllocActions } from './alloc-actions';
import { AllocNetwork, AllocServices } from './alloc-network';
import { AllocStats } from './alloc-stats';
import { TaskSection, taskOrder } from './alloc-tasks';
import { AllocVolumes } from './alloc-volumes';
import './allocation.css';

function Summary({ alloc }: { alloc: Allocation }) {
  const link = (id: string) => <a href={`/ui/allocations/${encodeURIComponent(id)}`}>{short(id)}</a>;
  return (
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
        ...(alloc.PreviousAllocation ? ([['Replaces', link(alloc.PreviousAllocation)]] as Array<[string, preact.JSX.Element]>) : []),
        ...(alloc.NextAllocation ? ([['Replaced by', link(alloc.NextAllocation)]] as Array<[string, preact.JSX.Element]>) : []),
      ]}
    />
  );
}

export function AllocationPage() {
  const { params } = useRoute();
  const id = params['id'] ?? '';
  const canWrite = useCanWrite();
  const { data, error } = useLive(`alloc/${id}`, ['allocation', 'claim', 'volume', 'volume-condition'], async () => {
    const alloc = await api.allocation(id);
    const volumes = await Promise.all((alloc.CSIVolumes ?? []).map((v) => api.volume(alloc.Namespace, v.VolumeID).catch(() => undefined)));
    return { alloc, volumes };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { alloc, volumes } = data;
  const group = alloc.Job?.TaskGroups?.find((g) => g.Name === alloc.TaskGroup);
  const specs = Object.fromEntries((group?.Tasks ?? []).map((t) => [t.Name, t]));
  const names = Object.keys(alloc.TaskStates ?? {}).sort(taskOrder(specs));
  return (
    <main id="main" class="alloc-page">
      <h1>
        Allocation {short(alloc.ID)} <Badge value={alloc.ClientStatus} />
      </h1>
      <Summary alloc={alloc} />
      {canWrite ? <AllocActions alloc={alloc} /> : null}
      <AllocNetwork alloc={alloc} />
      <AllocServices alloc={alloc} />
      <AllocStats alloc={alloc} />
      <AllocVolumes alloc={alloc} volumes={volumes} />
      {names.map((name) => (
        <TaskSection alloc={alloc} name={name} spec={specs[name]} canWrite={canWrite} />
      ))}
    </main>
  );
}
