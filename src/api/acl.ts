// ACL tokens, as Nomad's `api` package reads them (api/acl.go): Berth's
// tokens come from the agents' config, each with a name and a role; `GET
// /v1/acl/token/self` tells a caller which token it sent, never its secret.

import { z } from 'zod';
import { lazySchema } from './lazy-schema.js';

/** api.ACLTokenRoleLink. */
export const ACLTokenRoleLink = lazySchema(() => z.object({ ID: z.string(), Name: z.string() }));
export type ACLTokenRoleLink = z.infer<typeof ACLTokenRoleLink>;

/**
 * api.ACLToken, as Berth answers it for one of its configured tokens:
 * `AccessorID` is a UUID derived from the token's name (stable across
 * restarts), `SecretID` is always empty (Berth never sends a secret back),
 * `Type` is `management` for a management token and `client` otherwise,
 * with the Berth role (`read-only` or `node`) as its one policy. Times are
 * RFC 3339; a configured token has no creation time (Go's zero time).
 */
export const ACLToken = lazySchema(() => z.object({
  AccessorID: z.string(),
  SecretID: z.string(),
  Name: z.string(),
  Type: z.enum(['client', 'management']),
  Policies: z.array(z.string()).nullable(),
  Roles: z.array(ACLTokenRoleLink).nullable(),
  Global: z.boolean(),
  CreateTime: z.string(),
  ExpirationTime: z.string().optional(),
  ExpirationTTL: z.number().optional(),
  CreateIndex: z.number().int(),
  ModifyIndex: z.number().int(),
}));
export type ACLToken = z.infer<typeof ACLToken>;
