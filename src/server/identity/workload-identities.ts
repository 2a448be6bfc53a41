// Signing a node's workload identities (Nomad's Alloc.SignIdentities RPC and
// the widmgr's requests): the node names an allocation it runs and, per
// task, the identities it needs; the server checks each against the job the
// allocation runs, builds Nomad's claims and signs them with the keyring.
// What it cannot sign is answered as a rejection with Nomad's reason. Also
// what the /.well-known endpoints serve.

import { randomUUID } from 'node:crypto';
import { systemClock, type Clock, type Logger } from '../../lib/index.js';
import type { Allocation, IdentityRejection, IdentityRequest, IdentitySignAnswer, Job, SignedIdentity } from '../../structs/index.js';
import { rowKey, type StateReader, type StateStore } from '../state/index.js';
import { workloadClaims } from './claims.js';
import { Keyring, type KeyMaker, type PublicJwk } from './keyring.js';

/** Nomad's reasons (WIRejectionReason...). */
export const REJECTED = { alloc: 'allocation not found', task: 'task not found', identity: 'identity not found' } as const;

export interface WorkloadIdentitiesOptions {
  store: StateStore;
  clock?: Clock;
  /** The server's `oidc_issuer`: the tokens' `iss`, and what /.well-known/openid-configuration serves (404 without it, as Nomad). */
  issuer?: string | undefined;
  makeKey?: KeyMaker;
  logger?: Logger;
}

/** Nomad's OIDC discovery document (structs.OIDCDiscoveryConfig). */
export interface OidcDiscovery {
  issuer: string;
  jwks_uri: string;
  id_token_signing_alg_values_supported: string[];
  response_types_supported: string[];
  subject_types_supported: string[];
}

/** The server's workload identity service. No timers; nothing to stop. */
export class WorkloadIdentities {
  readonly #o: WorkloadIdentitiesOptions;
  readonly #clock: Clock;
  readonly keyring: Keyring;

  constructor(opts: WorkloadIdentitiesOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.keyring = new Keyring({
      store: opts.store,
      now: () => this.#clock.now(),
      ...(opts.makeKey ? { makeKey: opts.makeKey } : {}),
      ...(opts.logger ? { logger: opts.logger } : {}),
    });
  }

  /**
   * Signs identities of tasks of allocation `allocId`, which must be on
   * `nodeId`; each request is signed or rejected on its own. Makes the
   * signing key first when there is none (leader only: see
   * Keyring.ensureKey). Safe to repeat: each call gives fresh tokens.
   */
  async sign(nodeId: string, allocId: string, requests: readonly IdentityRequest[]): Promise<IdentitySignAnswer> {
    const snap = this.#o.store.snapshot();
    const alloc = snap.get('allocations', rowKey(allocId));
    const job = alloc && alloc.nodeId === nodeId ? jobOfAlloc(snap, alloc) : undefined;
    const answer: IdentitySignAnswer = { signed: [], rejections: [] };
    const reject = (r: IdentityRequest, reason: string): void => void answer.rejections.push({ task: r.task, identity: r.identity, reason } satisfies IdentityRejection);
    for (const r of requests) {
      if (!alloc || !job) {
        reject(r, REJECTED.alloc);
        continue;
      }
      const task = job.groups.find((g) => g.name === alloc.taskGroup)?.tasks.find((t) => t.name === r.task);
      if (!task) {
        reject(r, REJECTED.task);
        continue;
      }
      const identity = task.identities.find((i) => i.name === r.identity);
      if (!identity) {
        reject(r, REJECTED.identity);
        continue;
      }
      const now = this.#clock.now();
      const claims = workloadClaims({ job, alloc, task: task.name, identity, now, jti: randomUUID(), issuer: this.#o.issuer });
      const signed: SignedIdentity = { task: r.task, identity: r.identity, jwt: await this.keyring.sign({ ...claims }) };
      if (claims.exp !== undefined) signed.expiresAt = claims.exp * 1000;
      answer.signed.push(signed);
    }
    return answer;
  }

  /** The JWKS document (`{ keys: [...] }`) as of `snap`. */
  jwks(snap: StateReader): { keys: PublicJwk[] } {
    return { keys: Keyring.publicKeys(snap) };
  }

  /** The OIDC discovery document; undefined when the server has no issuer (Nomad then answers 404). */
  oidcDiscovery(): OidcDiscovery | undefined {
    const issuer = this.#o.issuer;
    if (!issuer) return undefined;
    return {
      issuer,
      jwks_uri: `${issuer.replace(/\/+$/, '')}/.well-known/jwks.json`,
      // Nomad advertises EdDSA too, for keys made before 1.7; Berth only ever made RS256 keys.
      id_token_signing_alg_values_supported: ['RS256', 'EdDSA'],
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
    };
  }
}

/** The job version `alloc` runs: the job itself, or the kept version it was placed with. */
function jobOfAlloc(snap: StateReader, alloc: Allocation): Job | undefined {
  const job = snap.get('jobs', rowKey(alloc.namespace, alloc.jobId));
  if (job && job.version === alloc.jobVersion) return job;
  return snap.get('jobVersions', rowKey(alloc.namespace, alloc.jobId, String(alloc.jobVersion).padStart(10, '0')))?.job ?? job;
}
