// Berth's deployments in Nomad's shape (src/api Deployment). The job's
// indexes and priority at the version deployed come from the kept version.

import type { Deployment, DeploymentState, DeploymentUpdateResponse } from '../../api/index.js';
import type { Deployment as BerthDeployment, DeploymentGroupState, JobVersion } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';
import { goTime, nanos } from './evaluation-shapes.js';

function stateOut(g: DeploymentGroupState): DeploymentState {
  return {
    PlacedCanaries: [...g.placedCanaries],
    AutoRevert: g.autoRevert,
    AutoPromote: g.autoPromote,
    ProgressDeadline: nanos(g.progressDeadlineMs),
    RequireProgressBy: goTime(g.requireProgressBy),
    Promoted: g.promoted,
    DesiredCanaries: g.desiredCanaries,
    DesiredTotal: g.desiredTotal,
    PlacedAllocs: g.placedAllocs,
    HealthyAllocs: g.healthyAllocs,
    UnhealthyAllocs: g.unhealthyAllocs,
  };
}

/** The kept version a deployment rolls out, if it is still kept. */
export function deployedVersion(snap: StateReader, d: BerthDeployment): JobVersion | undefined {
  return snap.get('jobVersions', rowKey(d.namespace, d.jobId, String(d.jobVersion).padStart(10, '0')));
}

/** A deployment in Nomad's shape; `version` is the job version it rolls out (deployedVersion). Pure. */
export function deploymentOut(d: BerthDeployment, version: JobVersion | undefined): Deployment {
  const job = version?.job;
  return {
    ID: d.id,
    Namespace: d.namespace,
    JobID: d.jobId,
    JobVersion: d.jobVersion,
    JobModifyIndex: job?.modifyIndex ?? 0,
    JobSpecModifyIndex: job?.submitIndex ?? job?.modifyIndex ?? 0,
    JobCreateIndex: d.jobCreateIndex,
    IsMultiregion: false,
    TaskGroups: Object.fromEntries(Object.entries(d.taskGroups).map(([name, g]) => [name, stateOut(g)])),
    Status: d.status,
    StatusDescription: d.statusDescription,
    EvalPriority: job?.priority ?? 50,
    CreateIndex: d.createIndex,
    ModifyIndex: d.modifyIndex,
    CreateTime: nanos(d.createTime),
    ModifyTime: nanos(d.modifyTime),
  };
}

/** The answer to a deployment write: the evaluation it made, the index it wrote at, the version an auto-revert registered. */
export function deploymentUpdateOut(out: { deployment: BerthDeployment; index: number; evalId?: string; evalIndex?: number; revertedTo?: number }): DeploymentUpdateResponse {
  return {
    EvalID: out.evalId ?? '',
    EvalCreateIndex: out.evalIndex ?? 0,
    DeploymentModifyIndex: out.deployment.modifyIndex,
    RevertedJobVersion: out.revertedTo ?? null,
    Index: out.index,
  };
}
