// The keys the servers sign workload identities with (Nomad's root keys, as
// its keyring keeps them in the replicated state): one row per key of the
// `rootKeys` table, by key ID (the JWT header's `kid`). The private half
// never leaves the servers: events, the HTTP API and logs see publicRootKey.

/** The algorithm of every key Berth makes (Nomad's choice since 1.7: RS256, what OIDC requires). */
export const ROOT_KEY_ALGORITHM = 'RS256';

/** A JSON Web Key (RFC 7517) as jose exports it: `kty` and the key's own members. */
export type Jwk = { kty: string } & Record<string, unknown>;

export interface RootKey {
  /** The key ID (a UUID), the `kid` of every JWT it signs. */
  id: string;
  algorithm: typeof ROOT_KEY_ALGORITHM;
  /** Only `active` keys sign; Berth does not rotate keys yet, so the first key stays active. */
  state: 'active';
  /** When the key was made, ms since the epoch. */
  createTime: number;
  /** The public half, as served at /.well-known/jwks.json. */
  publicJwk: Jwk;
  /** The private half. Secret: never in an event, an answer or a log. */
  privateJwk: Jwk;
  createIndex: number;
  modifyIndex: number;
}

/** A root key without its private half (what events carry). Pure. */
export function publicRootKey<T extends Partial<RootKey>>(key: T): Omit<T, 'privateJwk'> {
  const { privateJwk: _secret, ...rest } = key;
  return rest;
}
