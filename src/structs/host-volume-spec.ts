// A dynamic host volume specification (`type = "host"`, Nomad 1.10's volume
// files for `volume create` and `volume register`), in its canonical JSON
// form (HCL files are converted into it). The zod schema is where its
// fields and rules live; the CLI checks files with it, the server checks
// the API's HostVolume the same way (src/server/hostvolumes).

import { z } from 'zod';
import { formatPath, type JobProblem } from './job-parse.js';
import { HOST_VOLUME_ACCESS_MODES, HOST_VOLUME_ATTACHMENT_MODES, type HostVolumeCapability, type HostVolumeConstraint } from './host-volume.js';
import { parseWithHclConversions } from './hcl-conversions.js';
import { constraintsSchema } from './placement-rules.js';
import { parseSizeBytes, VolumeSpecValidationError } from './volume-spec.js';
import { lazySchema } from '../api/index.js';

const size = lazySchema(() => z.union([
  z.number().int().min(0),
  z.string().refine((s) => parseSizeBytes(s) !== undefined, 'must be a size such as "1GiB", "500MiB" or "10GB"'),
]));

/** The spec as users write it; unknown fields are refused so that typos surface. */
export const hostVolumeSpecSchema = lazySchema(() => z.strictObject({
  id: z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'id must be a volume ID Nomad gave (a UUID); leave it out to create a new volume').optional(),
  name: z.string({ error: 'name must be set' }).min(1, 'name must be set').max(128),
  namespace: z.string().min(1).optional(),
  type: z.literal('host'),
  pluginId: z.string().min(1).optional(),
  nodeId: z.string().min(1).optional(),
  nodePool: z.string().min(1).optional(),
  hostPath: z.string().startsWith('/', 'host_path must be an absolute path').optional(),
  capacity: size.optional(),
  capacityMin: size.optional(),
  capacityMax: size.optional(),
  capabilities: z
    .array(
      z.strictObject({
        accessMode: z.enum(HOST_VOLUME_ACCESS_MODES, { error: `access_mode must be one of ${HOST_VOLUME_ACCESS_MODES.join(', ')}` }),
        attachmentMode: z.enum(HOST_VOLUME_ATTACHMENT_MODES, { error: `attachment_mode must be one of ${HOST_VOLUME_ATTACHMENT_MODES.join(', ')}` }),
      }),
    )
    .optional(),
  constraints: constraintsSchema,
  parameters: z.record(z.string(), z.string()).optional(),
}));

/** A checked host volume spec. */
export interface HostVolumeSpec {
  id?: string;
  name: string;
  namespace?: string;
  pluginId?: string;
  nodeId?: string;
  nodePool?: string;
  hostPath?: string;
  capacityBytes?: number;
  capacityMinBytes?: number;
  capacityMaxBytes?: number;
  capabilities: HostVolumeCapability[];
  constraints: HostVolumeConstraint[];
  parameters?: Record<string, string>;
}

/**
 * Checks a host volume spec for `volume create` or `volume register` (which
 * needs node_id and host_path). Throws VolumeSpecValidationError with every
 * problem at its canonical path. Pure.
 */
export function parseHostVolumeSpec(input: unknown, purpose: 'register' | 'create', opts: { hclConversions?: boolean } = {}): HostVolumeSpec {
  const result = opts.hclConversions ? parseWithHclConversions(hostVolumeSpecSchema, input).result : hostVolumeSpecSchema.safeParse(input);
  if (!result.success) throw new VolumeSpecValidationError(result.error.issues.map((i) => ({ path: formatPath(i.path), message: i.message })));
  const v = result.data;
  const problems: JobProblem[] = [];
  const bytes = (s: string | number | undefined): number | undefined => (s === undefined ? undefined : typeof s === 'number' ? s : parseSizeBytes(s));
  const min = bytes(v.capacityMin);
  const max = bytes(v.capacityMax);
  if (min !== undefined && max !== undefined && max < min) problems.push({ path: 'capacityMax', message: `capacity_max (${max}) must be larger than capacity_min (${min})` });
  for (const c of v.constraints ?? []) {
    if (c.operator === 'distinct_hosts' || c.operator === 'distinct_property') {
      problems.push({ path: 'constraints', message: `invalid constraint ${c.operator}: host volumes of the same name are always on distinct hosts` });
    }
  }
  if (purpose === 'register' && !v.nodeId) problems.push({ path: 'nodeId', message: 'Node ID is required for registering' });
  if (purpose === 'register' && !v.hostPath) problems.push({ path: 'hostPath', message: 'host_path is required for registering' });
  if (problems.length) throw new VolumeSpecValidationError(problems);
  const spec: HostVolumeSpec = { name: v.name, capabilities: v.capabilities ?? [], constraints: v.constraints ?? [] };
  if (v.id) spec.id = v.id;
  if (v.namespace) spec.namespace = v.namespace;
  if (v.pluginId) spec.pluginId = v.pluginId;
  if (v.nodeId) spec.nodeId = v.nodeId;
  if (v.nodePool) spec.nodePool = v.nodePool;
  if (v.hostPath) spec.hostPath = v.hostPath;
  const cap = bytes(v.capacity);
  if (cap !== undefined) spec.capacityBytes = cap;
  if (min !== undefined) spec.capacityMinBytes = min;
  if (max !== undefined) spec.capacityMaxBytes = max;
  if (v.parameters) spec.parameters = v.parameters;
  return spec;
}
