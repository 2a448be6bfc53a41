// Children of periodic and parameterized jobs. Such a job runs nothing
// itself: each launch (its cron schedule, `job periodic force`, `job
// dispatch`) writes a child job, a copy of its spec without the periodic or
// parameterized block, named `<parent>/periodic-<unix>` or
// `<parent>/dispatch-<unix>-<8 hex>` as Nomad names them, and evaluates it.

import { randomBytes } from 'node:crypto';
import {
  DISPATCH_LAUNCH_SUFFIX,
  MAX_DISPATCH_PAYLOAD_BYTES,
  PERIODIC_LAUNCH_SUFFIX,
  type EvalTrigger,
  type Evaluation,
  type Job,
} from '../../structs/index.js';
import { rowKey, type WriteTxn } from '../state/index.js';
import { evaluateJob } from './evaluate.js';
import { JobError } from './job-errors.js';

/** What a dispatch asks for. */
export interface DispatchRequest {
  /** The payload's bytes (at most 16 KiB). */
  payload?: Buffer;
  meta?: Record<string, string>;
  /** Put into the child's ID: `<parent>/dispatch-<template>-<unix>-<8 hex>` (Nomad's -id-prefix-template). */
  idPrefixTemplate?: string;
}

/** The launch time (epoch ms) in a periodic child's ID, or undefined for any other job. */
export function periodicLaunchOf(childId: string, parentId: string): number | undefined {
  const prefix = `${parentId}${PERIODIC_LAUNCH_SUFFIX}`;
  if (!childId.startsWith(prefix)) return undefined;
  const unix = Number(childId.slice(prefix.length));
  return Number.isSafeInteger(unix) ? unix * 1000 : undefined;
}

/** The children of `parent` that still run (not stopped, not dead). */
export function liveChildren(txn: WriteTxn, parent: Job): Job[] {
  return txn.list('jobs', { filter: (j) => j.namespace === parent.namespace && j.parentId === parent.id && !j.stop && j.status !== 'dead' });
}

/**
 * Writes the child `childId` of `parent` and evaluates it, inside `txn`.
 * Returns the stored child and its evaluation. Throws JobError CONFLICT when
 * a job with that ID exists.
 */
export function putChildJob(
  txn: WriteTxn,
  parent: Job,
  child: { id: string; meta?: Record<string, string>; payload?: Buffer; dispatched?: boolean },
  now: number,
  trigger: EvalTrigger,
): { job: Job; evaluation: Evaluation } {
  if (txn.get('jobs', rowKey(parent.namespace, child.id))) throw new JobError('CONFLICT', `job "${child.id}" already exists`);
  const {
    periodic: _p,
    parameterized: _z,
    stop: _s,
    status: _st,
    version: _v,
    groupVersions: _g,
    groupResourceVersions: _r,
    submitTime: _t,
    submitIndex: _si,
    createIndex: _c,
    modifyIndex: _m,
    parentId: _pi,
    dispatched: _d,
    payload: _pl,
    meta,
    ...spec
  } = parent;
  const zeros = Object.fromEntries(spec.groups.map((g) => [g.name, 0]));
  const merged = { ...meta, ...child.meta };
  txn.put('jobs', {
    ...spec,
    id: child.id,
    ...(Object.keys(merged).length ? { meta: merged } : {}),
    parentId: parent.id,
    ...(child.dispatched ? { dispatched: true } : {}),
    ...(child.payload?.length ? { payload: child.payload.toString('base64') } : {}),
    stop: false,
    status: 'pending',
    version: 0,
    groupVersions: zeros,
    groupResourceVersions: { ...zeros },
    submitTime: now,
    submitIndex: txn.writeIndex,
  });
  const outcome = evaluateJob(txn, parent.namespace, child.id, { trigger, now, always: true });
  return { job: txn.get('jobs', rowKey(parent.namespace, child.id)) as Job, evaluation: outcome.evaluation as Evaluation };
}

/** The child ID of a periodic launch at `launchMs`. */
export function periodicChildId(parentId: string, launchMs: number): string {
  return `${parentId}${PERIODIC_LAUNCH_SUFFIX}${Math.floor(launchMs / 1000)}`;
}

/** The child ID of a dispatch at `now`: `<parent>/dispatch-[<template>-]<unix>-<8 hex>`. */
export function dispatchChildId(parentId: string, now: number, template?: string): string {
  const middle = template ? `${template}-` : '';
  return `${parentId}${DISPATCH_LAUNCH_SUFFIX}${middle}${Math.floor(now / 1000)}-${randomBytes(4).toString('hex')}`;
}

/**
 * What is wrong with dispatching `req` to `parent` (Nomad's rules): the job
 * must be parameterized and running; the payload within 16 KiB and present
 * or absent as `payload` says; every required meta key given, and no key
 * outside the required and optional ones. Throws JobError INVALID (CONFLICT
 * for a stopped job). Pure.
 */
export function checkDispatch(parent: Job, req: DispatchRequest): void {
  const spec = parent.parameterized;
  if (!spec) throw new JobError('INVALID', `job "${parent.id}" is not parameterized; only a job with a parameterized block can be dispatched`);
  if (parent.stop) throw new JobError('CONFLICT', `job "${parent.id}" is stopped; run it again before dispatching`);
  if (req.idPrefixTemplate !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(req.idPrefixTemplate)) {
    throw new JobError('INVALID', 'the ID prefix template must be 1-64 letters, digits, ".", "_" or "-"');
  }
  const size = req.payload?.length ?? 0;
  if (size > MAX_DISPATCH_PAYLOAD_BYTES) throw new JobError('INVALID', `the payload is ${size} bytes; a dispatch payload is at most ${MAX_DISPATCH_PAYLOAD_BYTES} bytes (16 KiB)`);
  if (spec.payload === 'required' && size === 0) throw new JobError('INVALID', `job "${parent.id}" requires a payload (parameterized { payload = "required" })`);
  if (spec.payload === 'forbidden' && size > 0) throw new JobError('INVALID', `job "${parent.id}" takes no payload (parameterized { payload = "forbidden" })`);
  const given = Object.keys(req.meta ?? {});
  const missing = spec.metaRequired.filter((k) => !given.includes(k));
  if (missing.length) throw new JobError('INVALID', `missing required meta: ${missing.join(', ')} (give -meta ${missing[0]}=...)`);
  const allowed = new Set([...spec.metaRequired, ...spec.metaOptional]);
  const unknown = given.filter((k) => !allowed.has(k));
  if (unknown.length) {
    const known = [...allowed];
    throw new JobError('INVALID', `meta ${unknown.map((k) => `"${k}"`).join(', ')} not allowed by job "${parent.id}"${known.length ? ` (it takes ${known.join(', ')})` : ' (it takes no meta)'}`);
  }
}
