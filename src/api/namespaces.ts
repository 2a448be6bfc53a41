// Namespaces, as Nomad's `api` package reads and writes them (api/namespace.go):
// `GET /v1/namespaces`, `GET /v1/namespace/:name`, `PUT`/`POST
// /v1/namespace[/:name]` and `DELETE /v1/namespace/:name`. `default` always
// exists; the blocks Nomad Enterprise configures (quotas, capabilities,
// node pool, Vault and Consul configuration) are null.

import { z } from 'zod';
import { lazySchema } from './lazy-schema.js';

/** api.NamespaceCapabilities (always null in Berth's answers). */
export const NamespaceCapabilities = lazySchema(() => z.object({
  EnabledTaskDrivers: z.array(z.string()).nullable(),
  DisabledTaskDrivers: z.array(z.string()).nullable(),
  EnabledNetworkModes: z.array(z.string()).nullable(),
  DisabledNetworkModes: z.array(z.string()).nullable(),
}));
export type NamespaceCapabilities = z.infer<typeof NamespaceCapabilities>;

/** api.NamespaceNodePoolConfiguration, api.NamespaceVaultConfiguration, api.NamespaceConsulConfiguration (always null in Berth's answers). */
export const NamespaceClusterConfiguration = lazySchema(() => z.object({
  Default: z.string(),
  Allowed: z.array(z.string()).nullable(),
  Denied: z.array(z.string()).nullable(),
}));
export type NamespaceClusterConfiguration = z.infer<typeof NamespaceClusterConfiguration>;

/** api.Namespace. `default` has `CreateIndex` 1, as Nomad creates it at its first index. `Meta` is null when empty. */
export const Namespace = lazySchema(() => z.object({
  Name: z.string(),
  Description: z.string(),
  Quota: z.string(),
  Capabilities: NamespaceCapabilities.nullable(),
  NodePoolConfiguration: NamespaceClusterConfiguration.nullable(),
  VaultConfiguration: NamespaceClusterConfiguration.nullable(),
  ConsulConfiguration: NamespaceClusterConfiguration.nullable(),
  Meta: z.record(z.string(), z.string()).nullable(),
  CreateIndex: z.number().int(),
  ModifyIndex: z.number().int(),
}));
export type Namespace = z.infer<typeof Namespace>;

/**
 * The body of `PUT`/`POST /v1/namespace[/:name]`: api.Namespace as a client
 * sends it. Its `Name` must be the path's when the path names one. `Quota`
 * other than '' and Enterprise blocks other than null are refused; the
 * indexes and Nomad's `Hash` a client may send back are ignored.
 */
export const NamespaceWriteRequest = lazySchema(() => z.object({
  Name: z.string().optional(),
  Description: z.string().optional(),
  Quota: z.string().optional(),
  Meta: z.record(z.string(), z.string()).nullable().optional(),
  Capabilities: NamespaceCapabilities.nullable().optional(),
  NodePoolConfiguration: NamespaceClusterConfiguration.nullable().optional(),
  VaultConfiguration: NamespaceClusterConfiguration.nullable().optional(),
  ConsulConfiguration: NamespaceClusterConfiguration.nullable().optional(),
}));
export type NamespaceWriteRequest = z.infer<typeof NamespaceWriteRequest>;
