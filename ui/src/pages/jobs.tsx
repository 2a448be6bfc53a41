// The jobs pages' door: the list (job-list.tsx), a job (job-page.tsx) and its
// versions (job-versions.tsx); and the allocation table other pages share.

import { fromNs, type AllocStub } from '../api';
import { Badge, Table, ago, short } from '../components';

export { JobsPage } from './job-list';
export { JobPage } from './job-page';
export { JobVersionsPage } from './job-versions';
export { explainPlacement } from './job-evals';

export function AllocationTable({ allocs, label }: { allocs: Array<Pick<AllocStub, 'ID' | 'JobID' | 'TaskGroup' | 'NodeID' | 'DesiredStatus' | 'ClientStatus' | 'CreateTime' | 'ModifyTime'>>; label: string }) {
  return (
    <Table
      label={label}
      head={['Allocation', 'Job', 'Group', 'Node', 'Desired', 'Status', 'Modified']}
      empty="No allocations."
      rows={[...allocs]
        .sort((a, b) => b.CreateTime - a.CreateTime)
        .map((a) => [
          <a href={`/ui/allocations/${a.ID}`}>{short(a.ID)}</a>,
          a.JobID,
          a.TaskGroup,
          <a href={`/ui/nodes/${a.NodeID}`}>{short(a.NodeID)}</a>,
          a.DesiredStatus,
          <Badge value={a.ClientStatus} />,
          ago(fromNs(a.ModifyTime)),
        ])}
    />
  );
}
