// PLACEHOLDER until the allocations family (branch api-allocs) lands its
// converter of an allocation to Nomad's AllocationListStub; replaced by
// theirs at merge. Nested structs are left empty here.

import type { CSIVolume } from '../../api/index.js';
import type { Allocation } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';

type AllocationListStub = NonNullable<CSIVolume['Allocations']>[number];

/** An allocation row -> Nomad's AllocationListStub. */
export function allocationListStub(a: Allocation, snap: StateReader): AllocationListStub {
  const node = snap.get('nodes', rowKey(a.nodeId));
  const job = snap.get('jobs', rowKey(a.namespace, a.jobId));
  return {
    ID: a.id,
    EvalID: '',
    Name: a.name ?? '',
    Namespace: a.namespace,
    NodeID: a.nodeId,
    NodeName: node?.name ?? '',
    JobID: a.jobId,
    JobType: job?.type ?? '',
    JobVersion: a.jobVersion,
    TaskGroup: a.taskGroup,
    DesiredStatus: a.desiredStatus,
    DesiredDescription: a.desiredDescription,
    ClientStatus: a.clientStatus,
    ClientDescription: a.clientDescription,
    TaskStates: null,
    DeploymentStatus: null,
    FollowupEvalID: '',
    NextAllocation: '',
    RescheduleTracker: null,
    PreemptedAllocations: null,
    PreemptedByAllocation: '',
    CreateIndex: a.createIndex,
    ModifyIndex: a.modifyIndex,
    CreateTime: a.createTime * 1_000_000,
    ModifyTime: a.modifyTime * 1_000_000,
  };
}
