// The node's view of Nomad's service catalog for templates: each service a
// template reads is watched with the server's blocking query (one watch per
// service, shared by every template of the node) and cached, so that
// rendering stays synchronous; a template learns of a change by the
// service's version, on its hook's next check.

import { AbortedError, describeError, Lifecycle, silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import type { ServiceRegistration } from '../../structs/index.js';
import type { ServiceInstance, ServiceLookup } from './_nomad-funcs.js';

export interface ServiceCatalogOptions {
  /** GET /v1/service/:name, blocking when `index` is given. */
  fetchInstances(name: string, q: { namespace: string; tag?: string; index?: number; waitMs: number; signal: AbortSignal }): Promise<{ index: number; instances: ServiceRegistration[] }>;
  /** GET /v1/services, blocking when `index` is given. */
  fetchNames(q: { namespace: string; index?: number; waitMs: number; signal: AbortSignal }): Promise<{ index: number; services: Array<{ serviceName: string; tags: string[] }> }>;
  clock?: Clock;
  logger?: Logger;
  /** How long one blocking query waits; default 5 min. */
  waitMs?: number;
  /** The wait after a failed query; default 1 s. */
  retryMs?: number;
}

interface Watch {
  value: unknown[] | undefined;
  version: string | undefined;
  ready: Promise<void>;
}

/** A lookup bound to a namespace that records what a rendering read and what it lacked. */
export interface TrackingLookup extends ServiceLookup {
  /** Keys read, with the version seen. */
  readonly read: Map<string, string | undefined>;
  /** Keys not fetched yet. */
  readonly missing: Set<string>;
}

/** Lifecycle: watches start on first use; stop() ends them all (safe twice). */
export class ServiceCatalog {
  readonly #o: ServiceCatalogOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #life: Lifecycle;
  readonly #watches = new Map<string, Watch>();

  constructor(opts: ServiceCatalogOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'service-catalog' });
    this.#life = new Lifecycle({ logger: this.#log });
    void this.#life.start();
  }

  stop(): Promise<void> {
    return this.#life.stop();
  }

  /** A lookup for one rendering in `namespace`. */
  lookup(namespace: string): TrackingLookup {
    const read = new Map<string, string | undefined>();
    const missing = new Set<string>();
    const get = (key: string): unknown[] | undefined => {
      const w = this.#watches.get(key);
      read.set(key, w?.version);
      if (!w || w.value === undefined) missing.add(key);
      return w?.value;
    };
    return {
      read,
      missing,
      instances: (name, tag) => get(instanceKey(namespace, name, tag)) as ServiceInstance[] | undefined,
      names: () => get(namesKey(namespace)) as Array<{ Name: string; Tags: string[] }> | undefined,
    };
  }

  /** The current version of a key (undefined before its first answer). */
  version(key: string): string | undefined {
    return this.#watches.get(key)?.version;
  }

  /** Starts watching the keys not watched yet and resolves once each has an answer. Rejects with AbortedError on `signal`. */
  async ensure(keys: Iterable<string>, signal: AbortSignal): Promise<void> {
    const waits = [...keys].map((k) => this.#watch(k).ready);
    await new Promise<void>((resolve, reject) => {
      const onAbort = (): void => reject(new AbortedError('waiting for services aborted'));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      void Promise.all(waits).then(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      });
    });
  }

  #watch(key: string): Watch {
    const known = this.#watches.get(key);
    if (known) return known;
    let markReady = (): void => undefined;
    const w: Watch = { value: undefined, version: undefined, ready: new Promise((r) => (markReady = r)) };
    this.#watches.set(key, w);
    const signal = this.#life.signal;
    void this.#life.track(
      (async () => {
        let index: number | undefined;
        const waitMs = this.#o.waitMs ?? 300_000;
        while (!signal.aborted) {
          try {
            const { index: next, value } = await this.#fetch(key, index, waitMs, signal);
            index = next;
            const version = JSON.stringify(value);
            if (version !== w.version) {
              w.value = value;
              w.version = version;
            }
            markReady();
          } catch (err) {
            if (signal.aborted) return;
            this.#log.warn({ key: key.replaceAll('\0', '/'), err: describeError(err) }, 'reading a service failed; retrying');
            index = undefined;
            await this.#clock.sleep(this.#o.retryMs ?? 1000, signal).catch(() => undefined);
          }
        }
      })(),
    );
    return w;
  }

  async #fetch(key: string, index: number | undefined, waitMs: number, signal: AbortSignal): Promise<{ index: number; value: unknown[] }> {
    const [namespace, name, tag] = key.split('\0') as [string, string, string | undefined];
    const at = index === undefined ? {} : { index };
    if (name === '*names') {
      const r = await this.#o.fetchNames({ namespace, waitMs, signal, ...at });
      return { index: r.index, value: r.services.map((s) => ({ Name: s.serviceName, Tags: s.tags })) };
    }
    const r = await this.#o.fetchInstances(name, { namespace, waitMs, signal, ...at, ...(tag ? { tag } : {}) });
    return { index: r.index, value: r.instances.map(toInstance) };
  }
}

function toInstance(r: ServiceRegistration): ServiceInstance {
  return {
    ID: r.id,
    Name: r.serviceName,
    ServiceName: r.serviceName,
    Namespace: r.namespace,
    NodeID: r.nodeId,
    Datacenter: r.datacenter,
    JobID: r.jobId,
    AllocID: r.allocId,
    Tags: r.tags,
    Address: r.address,
    Port: r.port,
  };
}

const instanceKey = (ns: string, name: string, tag: string | undefined): string => `${ns}\0${name}\0${tag ?? ''}`;
const namesKey = (ns: string): string => `${ns}\0*names`;
