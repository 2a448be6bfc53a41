// The node's meta: the static `meta {}` of the client config merged with the
// dynamic meta set by `berth node meta apply` (Nomad 1.3+'s dynamic node
// metadata). Dynamic values are kept in the client state store, so they
// survive an agent restart; a dynamic key set to null removes a static one
// from the merged view until it is unset. Private to src/client.

import type { Bucket } from './state/index.js';

export const NODE_META_BUCKET = 'node-meta';
const DYNAMIC_KEY = 'dynamic';

/** The three views `node meta read` shows. */
export interface NodeMetaView {
  meta: Record<string, string>;
  dynamic: Record<string, string | null>;
  static: Record<string, string>;
}

/** Dynamic node meta over the configured static meta. */
export class NodeMeta {
  readonly #static: Readonly<Record<string, string>>;
  #bucket: Bucket<Record<string, string | null>> | undefined;
  #dynamic: Record<string, string | null> = {};

  constructor(staticMeta: Readonly<Record<string, string>> = {}) {
    this.#static = staticMeta;
  }

  /** Loads the dynamic meta kept in the client state. Call once the store is open. */
  load(bucket: Bucket<Record<string, string | null>>): void {
    this.#bucket = bucket;
    this.#dynamic = { ...(bucket.get(DYNAMIC_KEY) ?? {}) };
  }

  /** What constraints read as `${meta.<key>}`: static, then dynamic over it (null removes). */
  merged(): Record<string, string> {
    const out: Record<string, string> = { ...this.#static };
    for (const [k, v] of Object.entries(this.#dynamic)) {
      if (v === null) delete out[k];
      else out[k] = v;
    }
    return out;
  }

  view(): NodeMetaView {
    return { meta: this.merged(), dynamic: { ...this.#dynamic }, static: { ...this.#static } };
  }

  /**
   * Sets `set` (a null value hides a static key) and forgets `unset`
   * (dynamic keys return to their static value, if any), then saves. Durable
   * before it returns; safe to repeat. Throws when the store cannot write.
   */
  apply(set: Readonly<Record<string, string | null>>, unset: readonly string[]): NodeMetaView {
    const next = { ...this.#dynamic, ...set };
    // As Nomad keeps it: a null is remembered only where it hides a static key.
    for (const [k, v] of Object.entries(set)) if (v === null && !Object.hasOwn(this.#static, k)) delete next[k];
    for (const k of unset) delete next[k];
    this.#bucket?.put(DYNAMIC_KEY, next);
    this.#dynamic = next;
    return this.view();
  }
}
