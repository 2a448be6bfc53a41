// Requests of Nomad's CSI API built from Berth's volume spec (camelCase, as
// volume files are read), the way `berth volume create|register` builds
// them: for tests and benchmarks that create volumes over the HTTP API.

import type { CSIVolumeCreateRequest } from '../../src/api/index.js';
import { volumeSubmission } from '../../src/cli/index.js';
import { parseVolumeSpec } from '../../src/structs/index.js';

/**
 * `{"Volumes": [CSIVolume]}` for `PUT /v1/volume/csi/:id/create` (or, with
 * `register`, `PUT /v1/volume/csi/:id`) of the volume `id` described by
 * `spec` (pluginId, name, capabilities, capacityMin, secrets, ...). Throws
 * VolumeSpecValidationError for a spec volume files would refuse.
 */
export function volumeRequest(id: string, spec: Record<string, unknown>, purpose: 'create' | 'register' = 'create'): CSIVolumeCreateRequest {
  return { Volumes: [volumeSubmission(parseVolumeSpec({ ...spec, id }, purpose))] };
}

/** The path of a volume's create (or, with `register`, register) route. */
export function volumePath(id: string, purpose: 'create' | 'register' = 'create'): string {
  return `/v1/volume/csi/${encodeURIComponent(id)}${purpose === 'create' ? '/create' : ''}`;
}
