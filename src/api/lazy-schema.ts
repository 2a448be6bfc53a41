// Zod schemas built on first use. Building a zod schema is not free (each
// node runs zod's constructors), and Berth's API and structs define several
// hundred at module level: building them all when the modules load was about
// a third of the module work of `berth agent`'s start (issue 40), though a
// start parses a handful of them. A schema defined as `lazySchema(() => z....)`
// is built the first time anything reads it, so a start builds only the webs it
// parses; the rest is built by the first request that needs it (or by a dev
// agent's idle warm-up, src/agent/job-path-warmup.ts).
//
// The stand-in is a Proxy over a placeholder: every read, `in`, key listing and
// prototype question goes to the built schema, so it is typed, parses, and
// answers `instanceof` as the schema does. A parent built from it keeps the
// stand-in in its shape; zod reaches the child through one more trap per read,
// which left a job registration's parse as it was (docs/architecture.md,
// section 15, "Built on first use"). Identity differs: the stand-in and
// the schema it builds are two objects, so nothing may key a WeakMap or a zod
// registry by one and look it up by the other; Berth attaches no zod metadata
// (`.describe()`, `.meta()`, registries) to its schemas.
//
// Before the first build, zod's cycle memoizer is set aside (noCycleMemoizer).

import { z } from 'zod';

/**
 * zod's memoizer (installed by default since zod 4.5, read when a schema is
 * built) lets a parse follow reference cycles in its input: at its first
 * parse each container schema walks its whole tree looking for a cycle, and
 * drops its wrapper once it found none. Berth parses JSON bodies, HCL values
 * and stored rows, which hold no cycle, and its schemas have none: that walk
 * was a third of a dev agent's first job registration (its first parse 37 ->
 * 25 ms of CPU, 4 starts each, issue 40). Without it, zod builds and parses
 * as it did before 4.5: an object reached twice in the input is parsed twice,
 * into two objects. The no-op keeps that seam filled (a memoizer left unset is
 * replaced by the default one at the next construction).
 */
const noCycleMemoizer: z.core.$ZodMemoizer = {
  attach: () => undefined,
  guard: () => undefined,
  alloc: (_inst, _payload, empty) => empty,
};

let buildCount = 0;

/** How many lazy schemas this process has built so far (a test checks that loading Berth's modules builds none). */
export function lazySchemasBuilt(): number {
  return buildCount;
}

/**
 * A stand-in for the schema `build` returns, built the first time it is read.
 * Never blocks; `build` runs once (again only if it threw, the error going to
 * the reader that forced it). A top-level `const` of a module should not read
 * the stand-in (`.shape`, `.extend()`, a spread), or it is built at load again.
 */
export function lazySchema<T extends object>(build: () => T): T {
  let built: T | undefined;
  const schema = (): T => {
    if (built) return built;
    if (buildCount++ === 0) z.config({ memoizer: noCycleMemoizer });
    return (built = build());
  };
  return new Proxy({} as T, {
    get: (_, key) => Reflect.get(schema(), key),
    has: (_, key) => Reflect.has(schema(), key),
    ownKeys: () => Reflect.ownKeys(schema()),
    // Reported configurable: a Proxy may not report a non-configurable property its placeholder lacks.
    getOwnPropertyDescriptor: (_, key) => {
      const d = Reflect.getOwnPropertyDescriptor(schema(), key);
      return d && { ...d, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(schema()),
    set: (_, key, value) => Reflect.set(schema(), key, value),
    defineProperty: (_, key, d) => Reflect.defineProperty(schema(), key, d),
    deleteProperty: (_, key) => Reflect.deleteProperty(schema(), key),
  });
}
