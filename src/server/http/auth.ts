// API tokens and roles. A caller sends its token as Nomad's clients do
// (`X-Nomad-Token`) or as a bearer token (`Authorization: Bearer`). Three roles: `management` may do everything,
// `read-only` may read (GETs), `node` may use the node agent's own endpoints
// (register, heartbeat, its allocations, claims, the node connection). A
// missing or unknown token is 401; a known token without the role is 403.

import { createHash, timingSafeEqual } from 'node:crypto';
import { ApiError } from './api-error.js';

export type Role = 'management' | 'read-only' | 'node';
export const ROLES: readonly Role[] = ['management', 'read-only', 'node'];

/** One accepted token. `secret` is write-only: never logged or returned. */
export interface ApiToken {
  /** A name for logs ("ops", "agent-7"); never the secret. */
  name: string;
  secret: string;
  role: Role;
}

/** What a route needs: `read` (GETs of users), `write` (changes), `node` (agent endpoints), `node-read` (both readers and nodes). */
export type Access = 'read' | 'write' | 'node' | 'node-read';

const ALLOWED: Record<Access, readonly Role[]> = {
  read: ['management', 'read-only'],
  write: ['management'],
  node: ['management', 'node'],
  'node-read': ['management', 'read-only', 'node'],
};

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

/**
 * The token table: looks tokens up in constant time per entry. A secret found
 * once is remembered (the table is fixed at construction: tokens come from
 * the configuration and are never revoked while it lives), so a known caller
 * costs a map lookup instead of a SHA-256 and a comparison per entry. Only
 * known secrets are kept, so the memory is bounded by the table; an unknown
 * one always takes the digest path. A hit answers sooner than a miss, which
 * tells a caller only what the answer's status already does.
 */
export class TokenTable {
  readonly #entries: Array<{ digest: Buffer; name: string; role: Role }>;
  readonly #known = new Map<string, Readonly<{ name: string; role: Role }>>();

  constructor(tokens: readonly ApiToken[]) {
    for (const t of tokens) {
      if (!ROLES.includes(t.role)) throw new ApiError('INVALID', `token "${t.name}" has unknown role "${String(t.role)}"`);
      if (t.secret.length < 8) throw new ApiError('INVALID', `token "${t.name}" is too short (at least 8 characters)`);
    }
    this.#entries = tokens.map((t) => ({ digest: digest(t.secret), name: t.name, role: t.role }));
  }

  /** The token's name and role, or undefined for an unknown secret. */
  lookup(secret: string): Readonly<{ name: string; role: Role }> | undefined {
    const known = this.#known.get(secret);
    if (known) return known;
    const d = digest(secret);
    let found: Readonly<{ name: string; role: Role }> | undefined;
    for (const e of this.#entries) if (timingSafeEqual(e.digest, d)) found = Object.freeze({ name: e.name, role: e.role });
    if (found) this.#known.set(secret, found);
    return found;
  }

  /**
   * Checks a caller's token for `access`: Nomad's `X-Nomad-Token` header
   * when given, else an `Authorization: Bearer` header value. Returns the caller;
   * throws ApiError UNAUTHENTICATED (401) for a missing/unknown token,
   * FORBIDDEN (403) for a known token whose role lacks the access.
   */
  authorize(header: string | undefined, access: Access, nomadToken?: string): Readonly<{ name: string; role: Role }> {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    const secret = nomadToken?.trim() || m?.[1];
    if (!secret) throw new ApiError('UNAUTHENTICATED', 'a token is required (X-Nomad-Token: <token>, or Authorization: Bearer <token>)');
    const who = this.lookup(secret);
    if (!who) throw new ApiError('UNAUTHENTICATED', 'unknown token');
    if (!ALLOWED[access].includes(who.role)) {
      throw new ApiError('FORBIDDEN', `role "${who.role}" may not ${access === 'read' ? 'read this' : access === 'write' ? 'change this' : 'use node endpoints'}`, {
        role: who.role,
        needs: ALLOWED[access],
      });
    }
    return who;
  }
}
