// The servers' signing keys (Nomad's keyring and encrypter, for workload
// identities): an RS256 key made once, by the first leader that needs it,
// and kept in the replicated state store, so that every server of a cluster
// signs with it and serves it, and it survives restarts. Signing and the
// JWKS read the store; a key's imported form is cached per key ID.

import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey, type JWK } from 'jose';
import { silentLogger, type Logger } from '../../lib/index.js';
import { ROOT_KEY_ALGORITHM, type Jwk, type RootKey } from '../../structs/index.js';
import { rowKey, type StateReader, type StateStore } from '../state/index.js';

/** A public key as /.well-known/jwks.json serves it (RFC 7517, with Nomad's `kid`, `alg` and `use`). */
export type PublicJwk = Jwk & { kid: string; alg: string; use: 'sig' };

/** Makes a key pair; injectable so tests need not wait for RSA key generation more than once. */
export type KeyMaker = () => Promise<{ publicJwk: Jwk; privateJwk: Jwk }>;

/** A fresh 2048-bit RSA key pair (Nomad's size), exported as JWKs. */
export const makeRsaKey: KeyMaker = async () => {
  const { publicKey, privateKey } = await generateKeyPair(ROOT_KEY_ALGORITHM, { modulusLength: 2048, extractable: true });
  return { publicJwk: (await exportJWK(publicKey)) as Jwk, privateJwk: (await exportJWK(privateKey)) as Jwk };
};

export interface KeyringOptions {
  store: StateStore;
  /** Milliseconds since the epoch; a key's createTime. */
  now: () => number;
  makeKey?: KeyMaker;
  logger?: Logger;
}

/** The keyring. Safe to use concurrently; holds no timers (nothing to stop). */
export class Keyring {
  readonly #o: KeyringOptions;
  readonly #log: Logger;
  readonly #imported = new Map<string, Promise<CryptoKey>>();
  #making: Promise<RootKey> | undefined;

  constructor(opts: KeyringOptions) {
    this.#o = opts;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'keyring' });
  }

  /** The key that signs now, as of `snap`; undefined before the first was made. */
  static activeKey(snap: StateReader): RootKey | undefined {
    return snap.list('rootKeys').filter((k) => k.state === 'active').sort((a, b) => a.createTime - b.createTime)[0];
  }

  /** The public half of every key that may have signed a live token, for the JWKS. */
  static publicKeys(snap: StateReader): PublicJwk[] {
    return snap.list('rootKeys').map((k) => ({ ...k.publicJwk, kid: k.id, alg: k.algorithm, use: 'sig' as const }));
  }

  /**
   * The active key, made and stored first when there is none. Only the
   * leader can make one (a follower's write is refused by the store's
   * fence, with its StateStoreError); two callers at once share one key.
   * Safe to repeat.
   */
  async ensureKey(): Promise<RootKey> {
    const found = Keyring.activeKey(this.#o.store.snapshot());
    if (found) return found;
    this.#making ??= this.#make().finally(() => {
      this.#making = undefined;
    });
    return this.#making;
  }

  async #make(): Promise<RootKey> {
    const pair = await (this.#o.makeKey ?? makeRsaKey)();
    const id = randomUUID();
    const { result } = await this.#o.store.write((txn) => {
      // Another server (or an earlier call) may have made one meanwhile: the first stays.
      const existing = Keyring.activeKey(txn);
      if (existing) return existing.id;
      txn.put('rootKeys', { id, algorithm: ROOT_KEY_ALGORITHM, state: 'active', createTime: this.#o.now(), ...pair });
      return id;
    });
    const key = this.#o.store.snapshot().get('rootKeys', rowKey(result));
    if (!key) throw new Error(`root key ${result} vanished after it was written`);
    if (result === id) this.#log.info({ keyId: id }, 'made the workload identity signing key');
    return key;
  }

  /** Signs `claims` with the active key (made first when there is none): a compact JWT with `kid` and `typ` in its header. */
  async sign(claims: Record<string, unknown>): Promise<string> {
    const key = await this.ensureKey();
    let imported = this.#imported.get(key.id);
    if (!imported) {
      imported = importJWK(key.privateJwk as JWK, key.algorithm) as Promise<CryptoKey>;
      this.#imported.set(key.id, imported);
    }
    return new SignJWT(claims).setProtectedHeader({ alg: key.algorithm, kid: key.id, typ: 'JWT' }).sign(await imported);
  }
}
