// A string-keyed map whose copy is cheap: the rows of a table that snapshots
// share. Private to src/server/state.

/** Buckets of a new map; the count grows with the rows (see MAX_PER_BUCKET). */
const MIN_BUCKETS = 256;
/**
 * Rows a bucket holds on average before the map splits its buckets in four:
 * a write's first change to a bucket copies the bucket, so a table of 10,000
 * allocations in 256 buckets (40 rows each) had a write of 600 of them copy
 * nearly every bucket, the whole table, on every server, for every write.
 */
const MAX_PER_BUCKET = 8;

/** The constructor's argument when fork() makes the copy. */
const FORKING = Symbol('forking');

function hashOf(key: string): number {
  // FNV-1a over the UTF-16 code units: spreads row keys (UUIDs, names) evenly.
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * A Map split into buckets by key hash (256, four times more each time the
 * rows pass MAX_PER_BUCKET a bucket). `fork()` returns a copy that shares
 * every bucket with this one (a copy of the bucket references, not of the
 * entries); the copy's first change to a bucket copies that bucket alone.
 * So a store that hands its rows to snapshots, then writes one row, pays for
 * one bucket (a few entries), not for the whole table: with 5,000 nodes
 * each heartbeat's snapshot made the next node write copy all 5,000 rows.
 * A fork must not be changed once forked from (the store changes only its
 * newest fork). Iteration order is by bucket, not insertion: readers sort.
 */
export class ForkableMap<V> implements ReadonlyMap<string, V> {
  #buckets: Array<Map<string, V>>;
  /** Which buckets this map may change in place (not shared with a fork). */
  #owned: boolean[];
  #size: number;

  constructor(entries?: Iterable<readonly [string, V]> | typeof FORKING) {
    if (entries === FORKING) {
      // fork() fills it in: no empty buckets made only to be replaced.
      this.#buckets = [];
      this.#owned = [];
      this.#size = 0;
      return;
    }
    this.#buckets = Array.from({ length: MIN_BUCKETS }, () => new Map<string, V>());
    this.#owned = new Array<boolean>(MIN_BUCKETS).fill(true);
    this.#size = 0;
    if (entries) for (const [k, v] of entries) this.set(k, v);
  }

  /** A copy sharing every bucket with this map; O(buckets). */
  fork(): ForkableMap<V> {
    const copy = new ForkableMap<V>(FORKING);
    copy.#buckets = [...this.#buckets];
    copy.#owned = new Array<boolean>(this.#buckets.length).fill(false);
    copy.#size = this.#size;
    this.#owned.fill(false);
    return copy;
  }

  #bucketOf(key: string): number {
    // The count is a power of two.
    return hashOf(key) & (this.#buckets.length - 1);
  }

  #writable(key: string): Map<string, V> {
    const b = this.#bucketOf(key);
    if (!this.#owned[b]) {
      // Copied with forEach: `new Map(bucket)` goes through the iterator, an entry array and a result object per row.
      const copy = new Map<string, V>();
      this.#buckets[b]!.forEach((v, k) => copy.set(k, v));
      this.#buckets[b] = copy;
      this.#owned[b] = true;
    }
    return this.#buckets[b]!;
  }

  /** Four times the buckets, every entry moved into new ones (none shared with a fork any more): once per 4x growth. */
  #split(): void {
    const count = this.#buckets.length * 4;
    const buckets = Array.from({ length: count }, () => new Map<string, V>());
    for (const b of this.#buckets) for (const [k, v] of b) buckets[hashOf(k) & (count - 1)]!.set(k, v);
    this.#buckets = buckets;
    this.#owned = new Array<boolean>(count).fill(true);
  }

  get size(): number {
    return this.#size;
  }

  /** How many buckets the rows are split into (a change copies one): grows with the rows. */
  get bucketCount(): number {
    return this.#buckets.length;
  }

  get(key: string): V | undefined {
    return this.#buckets[this.#bucketOf(key)]!.get(key);
  }

  has(key: string): boolean {
    return this.#buckets[this.#bucketOf(key)]!.has(key);
  }

  set(key: string, value: V): this {
    const bucket = this.#writable(key);
    if (!bucket.has(key)) this.#size++;
    bucket.set(key, value);
    if (this.#size > this.#buckets.length * MAX_PER_BUCKET) this.#split();
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

  /** Every entry, as entries() orders them, without an iterator's objects for each (lists read whole tables this way). */
  forEach(fn: (value: V, key: string, map: ReadonlyMap<string, V>) => void): void {
    if (this.#size === 0) return;
    const each = (v: V, k: string): void => fn(v, k, this);
    for (const b of this.#buckets) if (b.size > 0) b.forEach(each);
  }
}
