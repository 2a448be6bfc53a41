// The claims of a workload identity JWT, as Nomad's
// WorkloadIdentityClaimsBuilder.Build makes them (nomad/structs/workload_id.go
// and identity.go): Nomad's own claims (nomad_namespace, nomad_job_id,
// nomad_allocation_id, nomad_task) and the registered ones (sub, aud, iat,
// nbf, exp when the identity has a ttl, jti, iss when the server has an
// issuer). Pure: the time and the token ID are given.

import { durationMs, type Allocation, type Job, type TaskIdentity } from '../../structs/index.js';

/** A workload identity's JWT claims (the payload the server signs). */
export interface WorkloadClaims {
  nomad_namespace: string;
  nomad_job_id: string;
  nomad_allocation_id: string;
  nomad_task: string;
  /** `<region>:<namespace>:<job>:<group>:<task>:<identity>`, Nomad's workload subject. */
  sub: string;
  /** Omitted when the identity names no audience (as Nomad's go-jose omits an empty one). */
  aud?: string[];
  /** Seconds since the epoch. */
  iat: number;
  nbf: number;
  exp?: number;
  /** A fresh ID per token: two signings never give the same JWT. */
  jti: string;
  iss?: string;
}

export interface ClaimsInput {
  job: Pick<Job, 'id' | 'namespace' | 'region' | 'parentId'>;
  alloc: Pick<Allocation, 'id' | 'namespace' | 'taskGroup'>;
  task: string;
  identity: Pick<TaskIdentity, 'name' | 'aud' | 'ttl'>;
  /** Signing time, ms since the epoch. */
  now: number;
  jti: string;
  /** The server's `oidc_issuer`, when set. */
  issuer?: string | undefined;
}

/**
 * The claims of identity `identity` of task `task` of `alloc`. A dispatched
 * or periodic child job is identified by its parent (Nomad's
 * GetIDforWorkloadIdentity), so a policy written for the job covers its
 * children. Pure.
 */
export function workloadClaims(c: ClaimsInput): WorkloadClaims {
  const jobId = c.job.parentId || c.job.id;
  const seconds = Math.floor(c.now / 1000);
  const claims: WorkloadClaims = {
    nomad_namespace: c.alloc.namespace,
    nomad_job_id: jobId,
    nomad_allocation_id: c.alloc.id,
    nomad_task: c.task,
    sub: [c.job.region, c.job.namespace, jobId, c.alloc.taskGroup, c.task, c.identity.name].join(':'),
    iat: seconds,
    nbf: seconds,
    jti: c.jti,
  };
  if (c.identity.aud.length) claims.aud = [...c.identity.aud];
  const ttlMs = c.identity.ttl ? durationMs(c.identity.ttl) : 0;
  if (ttlMs > 0) claims.exp = Math.floor((c.now + ttlMs) / 1000);
  if (c.issuer) claims.iss = c.issuer;
  return claims;
}
