// What the server's volume registry takes from its callers (the HTTP routes,
// tests, benchmarks): a volume to register or create, an expansion, a
// snapshot to take, delete or list. The zod schemas are the one place these
// inputs' shapes and field rules live. They differ from `volumeSpecSchema`
// (what users write in a volume file) in taking sizes in bytes only, a
// resolved content source, and ignoring unknown fields.
//
// Each issue's message is worded to follow its field's path, so that the
// first problem reads as one sentence naming the field
// ("capacityMinBytes must be a whole number of bytes").

import { z } from 'zod';
import { ACCESS_MODES, ATTACHMENT_MODES, MAX_MAP_BYTES, MAX_REPEATED_STRING_BYTES, MAX_STRING_BYTES } from '../csi/index.js';
import { formatPath } from './job-parse.js';
import { VOLUME_ID, VOLUME_ID_RULE } from './job.js';
import { lazySchema } from '../api/index.js';

function isPlainObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

const requiredString = lazySchema(() => z.string({ error: 'is required' }).min(1, { error: 'is required' }));

/**
 * A string the plugin receives as a CSI string field: the spec bounds those
 * at 128 bytes, and a longer one would be refused by the node's CSI client
 * (once seen as a 503) instead of here, as the bad input it is.
 */
const csiString = lazySchema(() => requiredString.refine((s) => utf8Bytes(s) <= MAX_STRING_BYTES, {
  error: (iss) => `is ${utf8Bytes(String(iss.input))} bytes; the CSI limit is ${MAX_STRING_BYTES}`,
}));
const optionalCsiString = lazySchema(() => z
  .string({ error: 'must be a string' })
  .refine((s) => utf8Bytes(s) <= MAX_STRING_BYTES, { error: (iss) => `is ${utf8Bytes(String(iss.input))} bytes; the CSI limit is ${MAX_STRING_BYTES}` })
  .optional());
const optionalString = lazySchema(() => z.string({ error: 'must be a string' }).optional());

/** A whole, non-negative number of bytes; absent means 0 ("no opinion"). */
const bytes = lazySchema(() => z
  .number({ error: 'must be a whole number of bytes' })
  .int({ error: 'must be a whole number of bytes' })
  .min(0, { error: 'must be a whole number of bytes' }));

const mapBytes = (m: Record<string, string>): number => Object.entries(m).reduce((n, [k, v]) => n + utf8Bytes(k) + utf8Bytes(v), 0);

/**
 * A map of strings to strings, checked as a whole (the field is named,
 * never a key or a value), within the CSI spec's 4 KiB for a map field.
 */
const stringMap = lazySchema(() => z
  .custom<Record<string, string>>((x) => isPlainObject(x) && Object.values(x).every((v) => typeof v === 'string'), {
    error: 'must map strings to strings',
  })
  .refine((m) => mapBytes(m) <= MAX_MAP_BYTES, {
    error: (iss) => `hold ${mapBytes(iss.input as Record<string, string>)} bytes; the CSI limit is ${MAX_MAP_BYTES}`,
  }));

const topology = lazySchema(() => z.record(z.string(), z.string(), { error: 'must map topology keys to values' }));

const capability = lazySchema(() => z.object(
  {
    accessMode: z.enum(ACCESS_MODES, { error: (iss) => `"${String(iss.input)}" is not one of ${ACCESS_MODES.join(', ')}` }),
    attachmentMode: z.enum(ATTACHMENT_MODES, { error: (iss) => `"${String(iss.input)}" is not one of ${ATTACHMENT_MODES.join(', ')}` }),
  },
  { error: 'must be an object' },
));

const CAPABILITIES_REQUIRED = 'must list at least one access mode and attachment mode';

/** Fields shared by registration and creation, in the order they are checked. */
const volumeFields = () => ({
  id: requiredString.regex(VOLUME_ID, { error: VOLUME_ID_RULE }),
  pluginId: requiredString,
  namespace: optionalString.refine((s) => s === undefined || VOLUME_ID.test(s), { error: VOLUME_ID_RULE }),
  /** CreateVolume's name. */
  name: optionalCsiString,
  capabilities: z.array(capability, { error: CAPABILITIES_REQUIRED }).min(1, { error: CAPABILITIES_REQUIRED }),
  mountOptions: z
    .object(
      {
        fsType: optionalString,
        /** May carry credentials. */
        mountFlags: z
          .custom<string[]>((x) => Array.isArray(x) && x.every((f) => typeof f === 'string' && f !== ''), { error: 'must be non-empty strings' })
          .refine((flags) => flags.reduce((n, f) => n + utf8Bytes(f), 0) <= MAX_REPEATED_STRING_BYTES, {
            error: `hold more bytes than the CSI limit of ${MAX_REPEATED_STRING_BYTES}`,
          })
          .optional(),
      },
      { error: 'must be an object' },
    )
    .optional(),
  capacityMinBytes: bytes.optional(),
  capacityMaxBytes: bytes.optional(),
  /** Write-only: never in reads, events, logs or errors. */
  secrets: stringMap.optional(),
  parameters: stringMap.optional(),
  context: stringMap.optional(),
  topologyRequest: z
    .object({ required: z.array(topology).optional(), preferred: z.array(topology).optional() }, { error: 'must be an object' })
    .optional(),
});

type VolumeFieldsOutput = z.output<z.ZodObject<ReturnType<typeof volumeFields>>>;

/** Rules across fields, once every field has the right shape. */
function crossFieldRules(v: VolumeFieldsOutput, ctx: z.RefinementCtx): void {
  const mountOptionsSet = Boolean(v.mountOptions?.fsType) || (v.mountOptions?.mountFlags?.length ?? 0) > 0;
  if (mountOptionsSet && v.capabilities.every((c) => c.attachmentMode === 'block-device')) {
    ctx.addIssue({ code: 'custom', path: ['mountOptions'], message: 'apply to file-system volumes only' });
  }
  const max = v.capacityMaxBytes ?? 0;
  if (max > 0 && (v.capacityMinBytes ?? 0) > max) {
    ctx.addIssue({ code: 'custom', path: ['capacityMinBytes'], message: 'exceeds capacityMaxBytes' });
  }
}

const NOT_AN_OBJECT = { error: 'a volume spec must be an object' };

/** An existing volume to register: the plugin's own volume ID is required. */
export const volumeRegistrationSchema = lazySchema(() => z
  .object({ externalId: csiString, ...volumeFields() }, NOT_AN_OBJECT)
  .superRefine(crossFieldRules));

/** A volume to create through the plugin's controller, optionally from a snapshot or another volume. */
export const volumeCreationSchema = lazySchema(() => z
  .object(
    {
      ...volumeFields(),
      contentSource: z
        .union([z.object({ snapshotId: requiredString }), z.object({ volumeId: requiredString })], {
          error: 'must name a snapshotId or a volumeId',
        })
        .optional(),
    },
    NOT_AN_OBJECT,
  )
  .superRefine(crossFieldRules));

/** A volume as users hand it to `register`. */
export type VolumeRegistration = z.input<typeof volumeRegistrationSchema>;
/** A volume as users hand it to `create`. */
export type VolumeCreation = z.input<typeof volumeCreationSchema>;

/** The capacity a volume is to grow to. `limitBytes` 0, null or absent means no limit. */
export const volumeExpansionSchema = lazySchema(() => z.object(
  {
    requiredBytes: bytes.default(0).refine((n) => n > 0, { error: 'must be positive' }),
    limitBytes: bytes.nullish(),
  },
  { error: 'an expansion must be an object' },
));

/** CreateSnapshot of a registered volume. */
export const snapshotCreationSchema = lazySchema(() => z.object({ name: csiString, parameters: stringMap.optional() }));

/** DeleteSnapshot by the plugin's snapshot ID. */
export const snapshotDeletionSchema = lazySchema(() => z.object({ snapshotId: csiString, secrets: stringMap.optional() }));

/** The secrets a plugin-wide ListSnapshots sends (a volume's own are used for its snapshots). */
export const snapshotListingSchema = lazySchema(() => z.object({ secrets: stringMap.optional() }));

/** The first problem of an input: the field's path (absent for the input as a whole) and a sentence naming it. */
export interface VolumeInputProblem {
  field?: string;
  message: string;
}

/**
 * Checks `input` against one of the schemas above. Pure; never throws for a
 * bad input: returns the parsed value, or the first problem (in the order
 * of the schema's fields, cross-field rules last). Messages never quote a
 * map's values, which may be secrets.
 */
export function checkVolumeInput<S extends z.ZodType>(
  schema: S,
  input: unknown,
): { ok: true; value: z.output<S> } | { ok: false; problem: VolumeInputProblem } {
  const result = schema.safeParse(input);
  if (result.success) return { ok: true, value: result.data };
  const [issue] = result.error.issues;
  if (!issue) return { ok: false, problem: { message: 'the input is invalid' } }; // zod reports at least one issue
  const field = formatPath(issue.path);
  return { ok: false, problem: field ? { field, message: `${field} ${issue.message}` } : { message: issue.message } };
}
