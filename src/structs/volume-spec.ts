// A volume specification: what a user writes to register an existing CSI
// volume or to create one through the plugin's controller, in its canonical
// JSON form (HCL volume files are converted into this same shape). The zod
// schema is the one place its shape and field rules live; the server and the
// CLI both validate with it.

import { z } from 'zod';
import { ACCESS_MODES, ATTACHMENT_MODES, type Topology } from '../csi/index.js';
import { BerthError } from '../lib/index.js';
import { formatPath, type JobProblem } from './job-parse.js';
import { VOLUME_ID, VOLUME_ID_RULE } from './job.js';
import { parseWithHclConversions } from './hcl-conversions.js';
import { lazySchema } from '../api/index.js';

const SIZE = /^\s*(\d+)(?:\.(\d+))?\s*([a-z]*)\s*$/i;
const SIZE_UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  k: 1e3,
  kb: 1e3,
  ki: 1024,
  kib: 1024,
  m: 1e6,
  mb: 1e6,
  mi: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1e9,
  gb: 1e9,
  gi: 1024 ** 3,
  gib: 1024 ** 3,
  t: 1e12,
  tb: 1e12,
  ti: 1024 ** 4,
  tib: 1024 ** 4,
};

/**
 * Bytes in a size such as "1GiB", "500MiB", "10GB" or "1048576" (decimal
 * units are powers of 1000, binary ones of 1024, as in Nomad's volume files).
 * Returns undefined for anything else. Pure.
 */
export function parseSizeBytes(text: string): number | undefined {
  const m = SIZE.exec(text);
  const unit = m ? SIZE_UNITS[(m[3] ?? '').toLowerCase()] : undefined;
  if (!m || unit === undefined) return undefined;
  const bytes = Math.ceil(Number(`${m[1]}.${m[2] ?? '0'}`) * unit);
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

const size = lazySchema(() => z.union([
  z.number().int().min(0),
  z.string().refine((s) => parseSizeBytes(s) !== undefined, 'must be a size such as "1GiB", "500MiB" or "10GB"'),
]));
const stringMap = lazySchema(() => z.record(z.string(), z.string()));
const topology = lazySchema(() => z.record(z.string(), z.string()));

const capabilitySchema = lazySchema(() => z.strictObject({
  accessMode: z.enum(ACCESS_MODES),
  attachmentMode: z.enum(ATTACHMENT_MODES),
}));

/** The volume spec as users submit it; unknown fields are rejected so that typos surface. */
export const volumeSpecSchema = lazySchema(() => z
  .strictObject({
    id: z.string().min(1, 'id must be set').max(136, 'id is at most 128 characters').regex(VOLUME_ID, `id ${VOLUME_ID_RULE}`),
    name: z.string().min(1).max(128).optional(),
    namespace: z.string().min(1).regex(VOLUME_ID, `namespace ${VOLUME_ID_RULE}`).optional(),
    type: z.literal('csi', 'type must be "csi"').default('csi'),
    pluginId: z.string().min(1, 'pluginId must be set'),
    /** The plugin's own volume ID: required to register, absent when creating. */
    externalId: z.string().min(1).optional(),
    capacityMin: size.optional(),
    capacityMax: size.optional(),
    capacityMinBytes: z.number().int().min(0).optional(),
    capacityMaxBytes: z.number().int().min(0).optional(),
    capabilities: z.array(capabilitySchema).optional(),
    /** Nomad's legacy single capability, at the top level: added to `capabilities`. */
    accessMode: z.enum(ACCESS_MODES).optional(),
    attachmentMode: z.enum(ATTACHMENT_MODES).optional(),
    mountOptions: z
      .strictObject({
        fsType: z.string().optional(),
        /** May carry credentials: write-only. */
        mountFlags: z.array(z.string().min(1, 'mount flags must not be empty')).optional(),
      })
      .optional(),
    /** Write-only: never in reads, events, logs or errors. */
    secrets: stringMap.optional(),
    parameters: stringMap.optional(),
    context: stringMap.optional(),
    topologyRequest: z
      .strictObject({
        required: z.array(topology).optional(),
        preferred: z.array(topology).optional(),
      })
      .optional(),
    /** Create only: the snapshot or volume (plugin IDs) to create from. */
    snapshotId: z.string().min(1).optional(),
    cloneId: z.string().min(1).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.capacityMin !== undefined && v.capacityMinBytes !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['capacityMinBytes'], message: 'give capacityMin or capacityMinBytes, not both' });
    }
    if (v.capacityMax !== undefined && v.capacityMaxBytes !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['capacityMaxBytes'], message: 'give capacityMax or capacityMaxBytes, not both' });
    }
    if ((v.accessMode === undefined) !== (v.attachmentMode === undefined)) {
      const [given, missing] = v.accessMode === undefined ? ['attachmentMode', 'accessMode'] : ['accessMode', 'attachmentMode'];
      ctx.addIssue({ code: 'custom', path: [given], message: `the top-level ${given} needs ${missing} beside it (the pair is one capability), or use capability blocks` });
    } else if (!v.capabilities?.length && v.accessMode === undefined) {
      ctx.addIssue({ code: 'custom', path: ['capabilities'], message: 'at least one capability (access mode and attachment mode) is required' });
    }
    if (v.snapshotId && v.cloneId) ctx.addIssue({ code: 'custom', path: ['cloneId'], message: 'give snapshotId or cloneId, not both' });
    const min = bytesOf(v.capacityMin) ?? v.capacityMinBytes ?? 0;
    const max = bytesOf(v.capacityMax) ?? v.capacityMaxBytes ?? 0;
    if (max > 0 && min > max) ctx.addIssue({ code: 'custom', path: [v.capacityMin !== undefined ? 'capacityMin' : 'capacityMinBytes'], message: 'the minimum capacity exceeds the maximum' });
    if (v.mountOptions && capabilitiesOf(v).every((c) => c.attachmentMode === 'block-device')) {
      ctx.addIssue({ code: 'custom', path: ['mountOptions'], message: 'mount options apply to file-system volumes only' });
    }
  }));

/** The capability blocks and the legacy top-level pair, together. */
function capabilitiesOf(v: { capabilities?: VolumeSpec['capabilities'] | undefined; accessMode?: VolumeSpec['capabilities'][number]['accessMode'] | undefined; attachmentMode?: VolumeSpec['capabilities'][number]['attachmentMode'] | undefined }): VolumeSpec['capabilities'] {
  const legacy = v.accessMode && v.attachmentMode ? [{ accessMode: v.accessMode, attachmentMode: v.attachmentMode }] : [];
  return [...(v.capabilities ?? []), ...legacy];
}

function bytesOf(s: string | number | undefined): number | undefined {
  if (s === undefined) return undefined;
  return typeof s === 'number' ? s : parseSizeBytes(s);
}

export type VolumeSpecInput = z.input<typeof volumeSpecSchema>;

/**
 * A checked volume spec in the shape the server's volume service takes
 * (sizes in bytes, content source resolved). `externalId` is set for
 * registration, absent for creation.
 */
export interface VolumeSpec {
  id: string;
  namespace?: string;
  name?: string;
  pluginId: string;
  externalId?: string;
  capacityMinBytes?: number;
  capacityMaxBytes?: number;
  capabilities: Array<{ accessMode: (typeof ACCESS_MODES)[number]; attachmentMode: (typeof ATTACHMENT_MODES)[number] }>;
  mountOptions?: { fsType?: string; mountFlags?: string[] };
  secrets?: Record<string, string>;
  parameters?: Record<string, string>;
  context?: Record<string, string>;
  topologyRequest?: { required?: Topology[]; preferred?: Topology[] };
  contentSource?: { snapshotId: string } | { volumeId: string };
}

/**
 * A volume spec that cannot be accepted: every problem with its field path,
 * never a submitted value (the spec may carry secrets). Code INVALID.
 */
export class VolumeSpecValidationError extends BerthError {
  readonly problems: JobProblem[];

  constructor(problems: JobProblem[]) {
    super('INVALID', `volume is invalid: ${problems.map((p) => (p.path ? `${p.path}: ${p.message}` : p.message)).join('; ')}`);
    this.problems = problems;
  }
}

export interface ParseVolumeOptions {
  /** Primitives convert as HCL converts them (a volume file's `parameters { size = 10 }`); Nomad's API decodes JSON strictly. */
  hclConversions?: boolean;
}

/**
 * Parses and checks a volume spec. `purpose` `register` needs `externalId`
 * and ignores a content source (snapshotId, cloneId), as Nomad does;
 * `create` refuses `externalId`. Pure; throws
 * VolumeSpecValidationError listing every problem (paths, no values).
 */
export function parseVolumeSpec(input: unknown, purpose: 'register', opts?: ParseVolumeOptions): VolumeSpec & { externalId: string };
export function parseVolumeSpec(input: unknown, purpose: 'create', opts?: ParseVolumeOptions): VolumeSpec;
export function parseVolumeSpec(input: unknown, purpose: 'register' | 'create', opts?: ParseVolumeOptions): VolumeSpec;
export function parseVolumeSpec(input: unknown, purpose: 'register' | 'create', opts: ParseVolumeOptions = {}): VolumeSpec {
  const result = opts.hclConversions ? parseWithHclConversions(volumeSpecSchema, input).result : volumeSpecSchema.safeParse(input);
  if (!result.success) {
    throw new VolumeSpecValidationError(result.error.issues.map((issue) => ({ path: formatPath(issue.path), message: describeIssue(issue) })));
  }
  const v = result.data;
  const problems: JobProblem[] = [];
  if (purpose === 'register' && !v.externalId) problems.push({ path: 'externalId', message: 'externalId (the plugin\'s volume ID) is required to register a volume' });
  if (purpose === 'create' && v.externalId) problems.push({ path: 'externalId', message: 'a created volume gets its external ID from the plugin; use volume register for an existing one' });
  if (problems.length) throw new VolumeSpecValidationError(problems);

  const spec: VolumeSpec = { id: v.id, pluginId: v.pluginId, capabilities: capabilitiesOf(v) };
  if (v.namespace !== undefined) spec.namespace = v.namespace;
  if (v.name !== undefined) spec.name = v.name;
  if (v.externalId !== undefined) spec.externalId = v.externalId;
  const min = bytesOf(v.capacityMin) ?? v.capacityMinBytes;
  const max = bytesOf(v.capacityMax) ?? v.capacityMaxBytes;
  if (min !== undefined) spec.capacityMinBytes = min;
  if (max !== undefined) spec.capacityMaxBytes = max;
  if (v.mountOptions) spec.mountOptions = v.mountOptions;
  if (v.secrets) spec.secrets = v.secrets;
  if (v.parameters) spec.parameters = v.parameters;
  if (v.context) spec.context = v.context;
  if (v.topologyRequest) spec.topologyRequest = v.topologyRequest;
  // Register ignores the content source, as Nomad's does: `volume init` output registers unchanged.
  if (purpose === 'create' && v.snapshotId) spec.contentSource = { snapshotId: v.snapshotId };
  if (purpose === 'create' && v.cloneId) spec.contentSource = { volumeId: v.cloneId };
  return spec;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  // zod's default messages can quote the submitted input (perhaps a secret); keep field names only.
  if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  if (issue.code === 'invalid_value') return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  if (issue.code === 'invalid_type') return `expected ${issue.expected}`;
  if (issue.code === 'invalid_union') return 'must be a size such as "1GiB" or a number of bytes';
  return issue.message;
}
