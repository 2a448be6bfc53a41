// A task's workload identities (Nomad's `identity` blocks, Nomad 1.7+): the
// JWTs the server signs for a task and the client hands it in its secrets
// directory and environment. The block without a name (or named "default")
// is Nomad's default identity: its audience is always Nomad's, it never
// expires. Named identities carry their own audience and ttl and are renewed
// while the task runs. Rules as Nomad's WorkloadIdentity.Validate.

import { z } from 'zod';
import { DURATION } from './duration.js';
import { killSignalSchema } from './job-blocks.js';
import { lazySchema } from '../api/index.js';

/** The default identity's name (Nomad's WorkloadIdentityDefaultName). */
export const DEFAULT_IDENTITY_NAME = 'default';
/** The default identity's audience (Nomad's IdentityDefaultAud). */
export const DEFAULT_IDENTITY_AUD = 'nomadproject.io';
/** Where a task finds its default identity, relative to its directory (Nomad's secrets/nomad_token). */
export const DEFAULT_IDENTITY_FILE = 'secrets/nomad_token';
/** The env variable of the default identity; a named one's is `NOMAD_TOKEN_<name>`. */
export const IDENTITY_ENV = 'NOMAD_TOKEN';

const IDENTITY_NAME = /^[a-zA-Z0-9_-]{1,128}$/;

/** The file a task finds identity `name` in, relative to its directory, when the block asks for one. */
export function identityFile(id: { name: string; filepath?: string | undefined }): string {
  if (id.filepath) return id.filepath;
  return id.name === DEFAULT_IDENTITY_NAME ? DEFAULT_IDENTITY_FILE : `secrets/nomad_${id.name}.jwt`;
}

/** The env variable a task finds identity `name` in, when the block asks for it. */
export function identityEnv(name: string): string {
  return name === DEFAULT_IDENTITY_NAME ? IDENTITY_ENV : `${IDENTITY_ENV}_${name}`;
}

/** One `identity` block of a task. */
export const workloadIdentitySchema = lazySchema(() => z
  .strictObject({
    name: z.string().regex(IDENTITY_NAME, "name must be 1-128 letters, digits, '_' or '-'").default(DEFAULT_IDENTITY_NAME),
    /** The JWT's `aud`; the default identity's is always Nomad's ("nomadproject.io"), as Nomad's Canonicalize sets it. */
    aud: z.array(z.string().min(1, 'an empty string is not a valid audience')).default([]),
    /** Put the JWT in the task's env (NOMAD_TOKEN, or NOMAD_TOKEN_<name>). */
    env: z.boolean().default(false),
    /** Write the JWT to the task's secrets dir (secrets/nomad_token, or secrets/nomad_<name>.jwt). */
    file: z.boolean().default(false),
    /** Where to write it instead, relative to the task directory (needs file = true). */
    filepath: z
      .string()
      .min(1)
      .refine((p) => !p.startsWith('/') && !p.split('/').includes('..'), 'filepath must be a relative path inside the task directory (no leading "/", no "..")')
      .optional(),
    /** The JWT expires this long after it is signed (its `exp`) and is renewed before; absent: it never expires. */
    ttl: z.string().regex(DURATION, 'must be a duration such as "30s", "5m" or "1h"').optional(),
    /** What a renewed token does to the running task: nothing, a restart, or a signal. */
    changeMode: z.enum(['noop', 'restart', 'signal']).optional(),
    changeSignal: killSignalSchema.optional(),
    /** Claims the namespace may add (Nomad's extra_claims); Berth's namespaces define none, so none is added. */
    extraClaims: z.array(z.string().min(1)).optional(),
    serviceName: z
      .unknown()
      .optional()
      .superRefine((v, ctx) => {
        if (v !== undefined) ctx.addIssue({ code: 'custom', message: 'Berth does not support `service_name` on an identity: it binds the identity to a Consul service, and Berth has no Consul integration' });
      })
      .transform(() => undefined),
  })
  .transform((id) => (id.name === DEFAULT_IDENTITY_NAME ? { ...id, aud: [DEFAULT_IDENTITY_AUD] } : id))
  .superRefine((id, ctx) => {
    if (id.changeMode === 'signal' && !id.changeSignal) ctx.addIssue({ code: 'custom', path: ['changeSignal'], message: 'change_signal must be specified when using change_mode "signal"' });
    if (id.changeSignal && id.changeMode !== 'signal') ctx.addIssue({ code: 'custom', path: ['changeSignal'], message: `can only use change_signal = "${id.changeSignal}" with change_mode = "signal"` });
    if (id.ttl !== undefined && id.name === DEFAULT_IDENTITY_NAME) ctx.addIssue({ code: 'custom', path: ['ttl'], message: 'ttl for the default identity is not supported (as in Nomad): give the identity a name' });
    if (id.filepath !== undefined && !id.file) ctx.addIssue({ code: 'custom', path: ['filepath'], message: 'file must be true in order to specify filepath' });
  }));
export type WorkloadIdentitySpec = z.output<typeof workloadIdentitySchema>;

/**
 * A task's `identity` blocks: names unique (one default at most). The
 * default identity goes last (where Nomad's JSON reading puts it), and is
 * dropped when it asks for neither env nor file: Nomad gives every task one
 * anyway, so the block means nothing then.
 */
export const workloadIdentitiesSchema = lazySchema(() => z
  .array(workloadIdentitySchema)
  .default([])
  .superRefine((ids, ctx) => {
    const seen = new Set<string>();
    ids.forEach((id, i) => {
      if (seen.has(id.name)) {
        ctx.addIssue({
          code: 'custom',
          path: [i, 'name'],
          message: id.name === DEFAULT_IDENTITY_NAME ? 'a task has at most one default identity (an identity block without a name)' : `duplicate identity name "${id.name}"`,
        });
      }
      seen.add(id.name);
    });
  })
  .transform((ids) => {
    const named = ids.filter((id) => id.name !== DEFAULT_IDENTITY_NAME);
    const byDefault = ids.find((id) => id.name === DEFAULT_IDENTITY_NAME && (id.env || id.file));
    return byDefault ? [...named, byDefault] : named;
  }));

/**
 * What the client asks the server to sign (Nomad's WorkloadIdentityRequest):
 * identity `identity` of task `task` of allocation `allocId`.
 */
export interface IdentityRequest {
  task: string;
  identity: string;
}

/** One signed identity (Nomad's SignedWorkloadIdentity): the JWT and when it expires (ms since the epoch; absent: never). */
export interface SignedIdentity extends IdentityRequest {
  jwt: string;
  expiresAt?: number;
}

/** A request the server refused (Nomad's WorkloadIdentityRejection): "allocation not found", "task not found", "identity not found". */
export interface IdentityRejection extends IdentityRequest {
  reason: string;
}

/** The answer of POST /v1/node/:id/identities. */
export interface IdentitySignAnswer {
  signed: SignedIdentity[];
  rejections: IdentityRejection[];
}
