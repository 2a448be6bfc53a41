// A deployment: the rolling out of one version of a service job whose groups
// have an `update` block, as Nomad's structs.Deployment. The scheduler
// creates it and places allocations under it a few at a time; the leader's
// deployment watcher (src/server/deployments) judges their health, promotes
// canaries, fails it on a deadline and reverts the job when asked to.

import type { Job } from './stored-job.js';

export const DEPLOYMENT_STATUSES = ['running', 'paused', 'failed', 'successful', 'cancelled'] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

/** One group's progress within a deployment (Nomad's DeploymentState). */
export interface DeploymentGroupState {
  autoRevert: boolean;
  autoPromote: boolean;
  /** Canaries wait for promotion; true once promoted (or when the group has none). */
  promoted: boolean;
  /** The canaries placed so far, by allocation ID. */
  placedCanaries: string[];
  desiredCanaries: number;
  /** The allocations the group runs at this version once done (its count). */
  desiredTotal: number;
  /** Allocations placed by this deployment so far. */
  placedAllocs: number;
  healthyAllocs: number;
  unhealthyAllocs: number;
  progressDeadlineMs: number;
  /** When (ms since the epoch) the group must have made progress by; 0 without a deadline. */
  requireProgressBy: number;
}

export interface Deployment {
  id: string;
  namespace: string;
  jobId: string;
  jobVersion: number;
  /** The job's createIndex: a purged and re-created job's old deployments do not apply. */
  jobCreateIndex: number;
  status: DeploymentStatus;
  statusDescription: string;
  /** Group name -> its progress. Only groups with an update block that rolls. */
  taskGroups: Record<string, DeploymentGroupState>;
  /** Milliseconds since the epoch. */
  createTime: number;
  modifyTime: number;
  createIndex: number;
  modifyIndex: number;
}

/** True while the deployment may still place and judge allocations. */
export function isActiveDeployment(d: Pick<Deployment, 'status'>): boolean {
  return d.status === 'running' || d.status === 'paused';
}

/** A past version of a job, kept for `job history` and `job revert`. */
export interface JobVersion {
  namespace: string;
  jobId: string;
  version: number;
  /** True once a deployment of this version succeeded (or it needed none): auto-revert goes back to it. */
  stable: boolean;
  /** The job as it was registered at this version. */
  job: Job;
  submitTime: number;
  createIndex: number;
  modifyIndex: number;
}
