// Namespaces, as Nomad's `api` package reads them (api/namespace.go):
// `GET /v1/namespaces` and `GET /v1/namespace/:name`. Berth has no namespace
// objects: a namespace exists while a job, volume or service is in it, and
// `default` always does; the blocks Nomad Enterprise configures are null.

import { z } from 'zod';

/** api.NamespaceCapabilities (always null in Berth's answers). */
export const NamespaceCapabilities = z.object({
  EnabledTaskDrivers: z.array(z.string()).nullable(),
  DisabledTaskDrivers: z.array(z.string()).nullable(),
  EnabledNetworkModes: z.array(z.string()).nullable(),
  DisabledNetworkModes: z.array(z.string()).nullable(),
});
export type NamespaceCapabilities = z.infer<typeof NamespaceCapabilities>;

/** api.NamespaceNodePoolConfiguration, api.NamespaceVaultConfiguration, api.NamespaceConsulConfiguration (always null in Berth's answers). */
export const NamespaceClusterConfiguration = z.object({
  Default: z.string(),
  Allowed: z.array(z.string()).nullable(),
  Denied: z.array(z.string()).nullable(),
});
export type NamespaceClusterConfiguration = z.infer<typeof NamespaceClusterConfiguration>;

/**
 * api.Namespace. `CreateIndex` and `ModifyIndex` are the index at which the
 * first object of the namespace was created (1 for `default`).
 */
export const Namespace = z.object({
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
});
export type Namespace = z.infer<typeof Namespace>;
