// One collection of shared records (the controller's volumes or snapshots) kept
// in step with a file that other instances write too. The in-memory map is a
// cache of the file plus this instance's changes not yet written: a record is
// "dirty" when its JSON differs from what this instance last read or wrote.
// Reading the file takes what others changed (records this instance did not
// change); writing it lays this instance's dirty records over what the file
// holds now. Records are updated in place, so a call that holds a record while
// the file is re-read keeps working on the live one.

export interface SharedRecord {
  readonly id: string;
  readonly seq: number;
}

export class SyncedRecords<T extends SharedRecord> {
  /** The records; callers mutate them and the map, then persist. */
  readonly map = new Map<string, T>();
  /** Each record's JSON as last read from or written to the file. */
  readonly #synced = new Map<string, string>();
  readonly #copy: (r: T) => T;

  /** `copy`: a deep enough copy of a record (arrays it holds duplicated). */
  constructor(copy: (r: T) => T) {
    this.#copy = copy;
  }

  #dirty(id: string): boolean {
    const mem = this.map.get(id);
    return (mem === undefined ? undefined : JSON.stringify(mem)) !== this.#synced.get(id);
  }

  /** The JSON of every record now, to tell later changes made while a write runs. */
  snapshot(): Map<string, string> {
    return new Map([...this.map].map(([id, r]) => [id, JSON.stringify(r)]));
  }

  /**
   * Takes the file's records for every record this instance has not changed:
   * new ones are added, changed ones updated in place, removed ones dropped.
   * `unchangedSince`: only records whose JSON still equals it (a write's
   * snapshot) are touched; the rest changed during the write and stay dirty.
   */
  adopt(onFile: readonly T[], unchangedSince?: Map<string, string>): void {
    const fileIds = new Set<string>();
    for (const f of onFile) {
      fileIds.add(f.id);
      const mem = this.map.get(f.id);
      const untouched = unchangedSince ? (mem === undefined ? !unchangedSince.has(f.id) : JSON.stringify(mem) === unchangedSince.get(f.id)) : !this.#dirty(f.id);
      if (untouched) {
        if (mem) {
          for (const k of Object.keys(mem)) if (!(k in f)) delete (mem as Record<string, unknown>)[k];
          Object.assign(mem, this.#copy(f));
        } else this.map.set(f.id, this.#copy(f));
      }
      const now = this.map.get(f.id);
      // What the file says is the baseline; a record changed meanwhile stays dirty against it.
      this.#synced.set(f.id, untouched && now ? JSON.stringify(now) : JSON.stringify(f));
    }
    for (const id of [...this.map.keys(), ...this.#synced.keys()]) {
      if (fileIds.has(id)) continue;
      const mem = this.map.get(id);
      const untouched = unchangedSince ? (mem !== undefined && JSON.stringify(mem) === unchangedSince.get(id)) || (mem === undefined && !unchangedSince.has(id)) : !this.#dirty(id);
      if (untouched) this.map.delete(id);
      this.#synced.delete(id);
    }
  }

  /**
   * The file's records with this instance's dirty ones laid over (deleted
   * ones removed). A new record whose sequence number another instance used
   * meanwhile gets the next free one (`takeSeq`). Pure but for that renumbering.
   */
  merge(onFile: readonly T[], takeSeq: () => number): T[] {
    const merged = new Map(onFile.map((f) => [f.id, f]));
    for (const id of new Set([...this.map.keys(), ...this.#synced.keys()])) {
      if (!this.#dirty(id)) continue;
      const mem = this.map.get(id);
      if (mem === undefined) {
        merged.delete(id);
        continue;
      }
      const isNew = !this.#synced.has(id) && !merged.has(id);
      if (isNew && [...merged.values()].some((o) => o.seq === mem.seq)) {
        (mem as { seq: number }).seq = takeSeq();
      }
      merged.set(id, this.#copy(mem));
    }
    return [...merged.values()].sort((a, b) => a.seq - b.seq);
  }
}
