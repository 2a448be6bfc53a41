// What the CSI routes read from a request as Nomad's agent reads it: a
// boolean query parameter (Go's strconv.ParseBool), the CSI secrets header
// (`X-Nomad-CSI-Secrets: key=value,key=value`), the namespace of a write,
// and the one volume of a register or create body.

import type { FastifyRequest } from 'fastify';
import { isNomadVolumeJson, nomadVolumeToSpec, VolumeSpecValidationError } from '../../structs/index.js';
import { ApiError } from './api-error.js';
import { objectBody } from './route-context.js';

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** A boolean query parameter as Go's ParseBool reads it; absent or "": false. Throws ApiError INVALID ("invalid force value") otherwise. */
export function boolQuery(query: Record<string, unknown>, name: string): boolean {
  const raw = query[name];
  if (raw === undefined || raw === '') return false;
  if (typeof raw === 'string' && TRUE.has(raw)) return true;
  if (typeof raw === 'string' && FALSE.has(raw)) return false;
  throw new ApiError('INVALID', `invalid ${name} value`, { field: name });
}

/** The secrets of `X-Nomad-CSI-Secrets` (pairs without `=` ignored, as Nomad does); undefined when none. */
export function csiSecretsOf(req: FastifyRequest): Record<string, string> | undefined {
  const header = req.headers['x-nomad-csi-secrets'];
  if (typeof header !== 'string' || header === '') return undefined;
  const secrets: Record<string, string> = {};
  for (const pair of header.split(',')) {
    const at = pair.indexOf('=');
    if (at >= 0) secrets[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return Object.keys(secrets).length ? secrets : undefined;
}

/** A write's namespace: `?namespace=`, else the body's WriteRequest `Namespace`, else `default`. */
export function writeNamespace(query: Record<string, unknown>, body?: Record<string, unknown>): string {
  const q = query['namespace'];
  if (typeof q === 'string' && q !== '') return q;
  const b = body?.['Namespace'];
  return typeof b === 'string' && b !== '' ? b : 'default';
}

/**
 * The volume of a register or create body, Nomad's `{"Volumes": [CSIVolume]}`
 * (exactly one volume), as Berth's volume spec input; a Nomad field Berth
 * does not support is refused by name. The volume's own `Namespace` wins
 * over the request's; `pathId` (the route's) must be the volume's ID when
 * the volume names one. Throws VolumeSpecValidationError or ApiError INVALID.
 */
export function submittedVolume(raw: unknown, query: Record<string, unknown>, pathId?: string): Record<string, unknown> {
  const body = objectBody(raw);
  if (!isNomadVolumeJson(body) || !Array.isArray(body['Volumes'])) {
    throw new ApiError('INVALID', 'the body must be Nomad\'s volume request: {"Volumes": [ {"ID": ..., "PluginID": ..., ...} ]}', { field: 'Volumes' });
  }
  const t = nomadVolumeToSpec(body);
  if (t.problems.length) throw new VolumeSpecValidationError(t.problems);
  const spec = t.input;
  if (pathId !== undefined && spec['id'] !== undefined && spec['id'] !== pathId) {
    throw new ApiError('INVALID', `the volume's ID must match the path ("${pathId}")`, { field: 'Volumes[0].ID' });
  }
  return { namespace: writeNamespace(query, body), ...spec, ...(pathId !== undefined ? { id: pathId } : {}) };
}
