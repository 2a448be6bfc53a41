// A string-keyed map whose copy is cheap: the rows of a table that snapshots
// share. Private to src/server/state.

const BUCKETS = 256;

function bucketOf(key: string): number {
  // FNV-1a over the UTF-16 code units: spreads row keys (UUIDs, names) evenly.
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % BUCKETS;
}

/**
 * A Map split into 256 buckets by key hash. `fork()` returns a copy that
 * shares every bucket with this one (a copy of 256 references, not of the
 * entries); the copy's first change to a bucket copies that bucket alone.
 * So a store that hands its rows to snapshots, then writes one row, pays for
 * one bucket (n / 256 entries), not for the whole table: with 5,000 nodes
 * each heartbeat's snapshot made the next node write copy all 5,000 rows.
 * A fork must not be changed once forked from (the store changes only its
 * newest fork). Iteration order is by bucket, not insertion: readers sort.
 */
export class ForkableMap<V> implements ReadonlyMap<string, V> {
  #buckets: Array<Map<string, V>>;
  /** Which buckets this map may change in place (not shared with a fork). */
  #owned: boolean[];
  #size: number;

  constructor(entries?: Iterable<readonly [string, V]>) {
    this.#buckets = Array.from({ length: BUCKETS }, () => new Map<string, V>());
    this.#owned = new Array<boolean>(BUCKETS).fill(true);
    this.#size = 0;
    if (entries) for (const [k, v] of entries) this.set(k, v);
  }

  /** A copy sharing every bucket with this map; O(256). */
  fork(): ForkableMap<V> {
    const copy = new ForkableMap<V>();
    copy.#buckets = [...this.#buckets];
    copy.#owned.fill(false);
    copy.#size = this.#size;
    this.#owned.fill(false);
    return copy;
  }

  #writable(key: string): Map<string, V> {
    const b = bucketOf(key);
    if (!this.#owned[b]) {
      this.#buckets[b] = new Map(this.#buckets[b]);
      this.#owned[b] = true;
    }
    return this.#buckets[b]!;
  }

  get size(): number {
    return this.#size;
  }

  get(key: string): V | undefined {
    return this.#buckets[bucketOf(key)]!.get(key);
  }

  has(key: string): boolean {
    return this.#buckets[bucketOf(key)]!.has(key);
  }

  set(key: string, value: V): this {
    const bucket = this.#writable(key);
    if (!bucket.has(key)) this.#size++;
    bucket.set(key, value);
    return this;
  }

  delete(key: string): boolean {
    if (!this.has(key)) return false;
    this.#writable(key).delete(key);
    this.#size--;
    return true;
  }

  *entries(): MapIterator<[string, V]> {
    // An empty table (no jobs, no allocations in a cluster of idle nodes) is listed at every node change: skip its 256 buckets.
    if (this.#size === 0) return;
    for (const b of this.#buckets) if (b.size > 0) yield* b.entries();
  }

  *keys(): MapIterator<string> {
    for (const b of this.#buckets) yield* b.keys();
  }

  *values(): MapIterator<V> {
    for (const b of this.#buckets) yield* b.values();
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.entries();
  }

  forEach(fn: (value: V, key: string, map: ReadonlyMap<string, V>) => void): void {
    for (const [k, v] of this.entries()) fn(v, k, this);
  }
}
