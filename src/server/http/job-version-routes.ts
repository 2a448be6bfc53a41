// A job's versions and the writes that make a new one from an old one,
// Nomad's routes: GET /v1/job/:id/versions (`diffs`), PUT/POST
// /v1/job/:id/revert, PUT/POST /v1/job/:id/scale and GET /v1/job/:id/scale
// (the scale status). Reverts and scales register the job again, so they
// answer with a JobRegisterResponse.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type * as api from '../../api/index.js';
import { isClientTerminal, jobModifyIndex, jobToNomad, publicJob, specOfJob, specToNomadJob } from '../../structs/index.js';
import { jobVersions, type JobRegistration } from '../deployments/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { boolParam, queryMeta } from './job-params.js';
import { nomadJobDiff } from './job-plan-shapes.js';
import { nomadRead, queryOptions, setIndexHeaders } from './nomad-read.js';
import { objectBody, type RouteContext } from './route-context.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** A write that registered the job again, as Nomad's JobRegisterResponse. */
function registered(out: JobRegistration): api.JobRegisterResponse {
  return { EvalID: out.evaluation.id, EvalCreateIndex: out.evaluation.createIndex, JobModifyIndex: jobModifyIndex(out.job), Warnings: '', ...queryMeta(out.index) };
}

export function registerJobVersionRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps } = ctx;
  const { store } = deps;
  const service = (): NonNullable<typeof deps.deployments> => {
    if (!deps.deployments) throw new ApiError('UNAVAILABLE', 'job versions are not served here');
    return deps.deployments;
  };

  // The kept versions, newest first; with `diffs`, each version's diff against the one before it.
  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/versions', { config: { access: 'read' } }, async (req, reply): Promise<api.JobVersionsResponse> => {
    const diffs = boolParam(req.query, 'diffs') ?? false;
    let index = 0;
    const versions = await nomadRead(ctx, req, reply, ['jobs', 'jobVersions'], (snap, opts) => {
      index = Math.max(snap.tableIndex('jobs'), snap.tableIndex('jobVersions'));
      return jobVersions(snap, opts.namespace, req.params.id);
    });
    if (versions.length === 0) throw new ApiError('NOT_FOUND', 'job versions not found');
    let diffList: api.JobDiff[] | null = null;
    if (diffs) {
      const specs = versions.map((v) => specToNomadJob(publicJob(specOfJob(v.job)), { canonicalize: true }));
      diffList = specs.slice(0, -1).map((now, i) => nomadJobDiff(specs[i + 1], now));
    }
    return { Versions: versions.map((v) => jobToNomad(v.job, { stable: v.stable })), Diffs: diffList, ...queryMeta(index) };
  });

  // Register a kept version again, as a new version (Nomad's JobRevertRequest).
  const revert = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply): Promise<api.JobRegisterResponse> => {
    const body = objectBody(req.body);
    if (typeof body['JobID'] !== 'string' || body['JobID'] === '') throw new ApiError('INVALID', 'JobID must be specified', { field: 'JobID' });
    if (body['JobID'] !== req.params.id) throw new ApiError('INVALID', 'Job ID does not match', { field: 'JobID' });
    const version = body['JobVersion'] ?? 0;
    if (typeof version !== 'number' || !Number.isSafeInteger(version) || version < 0) throw new ApiError('INVALID', 'JobVersion must be a job version number', { field: 'JobVersion' });
    const ns = queryOptions(req.query as Query).namespace;
    const snap = store.snapshot();
    const current = snap.get('jobs', rowKey(ns, req.params.id));
    if (!current) throw new ApiError('NOT_FOUND', `job "${req.params.id}" not found`);
    if (version === current.version) throw new ApiError('INVALID', "can't revert to current version", { field: 'JobVersion' });
    if (!jobVersions(snap, ns, req.params.id).some((v) => v.version === version)) {
      throw new ApiError('NOT_FOUND', `job "${req.params.id}" in namespace "${ns}" at version ${version} not found`);
    }
    const prior = body['EnforcePriorVersion'];
    if (typeof prior === 'number' && prior !== current.version) {
      throw new ApiError('CONFLICT', `Current job has version ${current.version}; enforcing version ${prior}`, { field: 'EnforcePriorVersion' });
    }
    const out = await service().revert(ns, req.params.id, version);
    setIndexHeaders(ctx, reply, out.index);
    return registered(out);
  };
  app.put<{ Params: Params }>('/v1/job/:id/revert', { config: { access: 'write' } }, revert);
  app.post<{ Params: Params }>('/v1/job/:id/revert', { config: { access: 'write' } }, revert);

  // Set one group's count (Nomad's ScalingRequest: Count, Target {Job, Group, Namespace}, Message, Error, Meta).
  const scale = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply): Promise<api.JobRegisterResponse> => {
    const body = objectBody(req.body);
    const target = isObj(body['Target']) ? body['Target'] : {};
    const ns = queryOptions(req.query as Query).namespace;
    if (typeof target['Namespace'] === 'string' && target['Namespace'] !== '' && target['Namespace'] !== ns) {
      throw new ApiError('INVALID', 'namespace in payload did not match header', { field: 'Target.Namespace' });
    }
    if (typeof target['Job'] === 'string' && target['Job'] !== '' && target['Job'] !== req.params.id) {
      throw new ApiError('INVALID', 'job ID in payload did not match URL', { field: 'Target.Job' });
    }
    const group = target['Group'];
    if (typeof group !== 'string' || group === '') throw new ApiError('INVALID', 'missing task group name for scaling action', { field: 'Target.Group' });
    const count = body['Count'];
    if (count !== undefined && count !== null) {
      if (typeof count !== 'number' || !Number.isSafeInteger(count)) throw new ApiError('INVALID', 'Count must be a whole number', { field: 'Count' });
      if (count < 0) throw new ApiError('INVALID', "scaling action count can't be negative", { field: 'Count' });
      if (body['Error'] === true) throw new ApiError('INVALID', 'scaling action should not contain count if error is true', { field: 'Count' });
    }
    const job = store.snapshot().get('jobs', rowKey(ns, req.params.id));
    if (!job) throw new ApiError('NOT_FOUND', `job "${req.params.id}" not found`);
    if (!job.groups.some((g) => g.name === group)) throw new ApiError('INVALID', `task group "${group}" specified for scaling does not exist in job`, { field: 'Target.Group' });
    // No count: Nomad records a scaling event only; Berth keeps no scaling events, so nothing changes.
    if (typeof count !== 'number') {
      const index = store.snapshot().index;
      setIndexHeaders(ctx, reply, index);
      return { EvalID: '', EvalCreateIndex: 0, JobModifyIndex: jobModifyIndex(job), Warnings: '', ...queryMeta(index) };
    }
    const out = await service().scale(ns, req.params.id, group, count);
    setIndexHeaders(ctx, reply, out.index);
    return registered(out);
  };
  app.put<{ Params: Params }>('/v1/job/:id/scale', { config: { access: 'write' } }, scale);
  app.post<{ Params: Params }>('/v1/job/:id/scale', { config: { access: 'write' } }, scale);

  // Each group's count and what of it is placed, running and healthy (Nomad's JobScaleStatus).
  app.get<{ Params: Params; Querystring: Query }>('/v1/job/:id/scale', { config: { access: 'read' } }, async (req, reply): Promise<api.JobScaleStatusResponse> => {
    const found = await nomadRead(ctx, req, reply, ['jobs', 'allocations'], (snap, opts): api.JobScaleStatusResponse | undefined => {
      const job = snap.get('jobs', rowKey(opts.namespace, req.params.id));
      if (!job) return undefined;
      const groups: Record<string, api.TaskGroupScaleStatus> = {};
      for (const g of job.groups) groups[g.name] = { Desired: g.count, Placed: 0, Running: 0, Healthy: 0, Unhealthy: 0, Events: null };
      const allocs = snap.list('allocations', { filter: (a) => a.jobId === job.id && a.namespace === job.namespace });
      for (const a of allocs) {
        const g = groups[a.taskGroup];
        // Canaries are left out, as Nomad leaves them out; so are allocations that stopped or are told to.
        if (!g || a.deploymentStatus?.canary || a.desiredStatus !== 'run' || isClientTerminal(a.clientStatus)) continue;
        g.Placed++;
        if (a.clientStatus === 'running') g.Running++;
        if (a.deploymentStatus?.healthy === true) g.Healthy++;
        if (a.deploymentStatus?.healthy === false) g.Unhealthy++;
      }
      return { JobID: job.id, Namespace: job.namespace, JobCreateIndex: job.createIndex, JobModifyIndex: jobModifyIndex(job), JobStopped: job.stop, TaskGroups: groups };
    });
    if (!found) throw new ApiError('NOT_FOUND', 'job not found');
    return found;
  });
}
