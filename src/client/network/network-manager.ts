// Network namespaces for group network mode `none`: one `ip netns` namespace
// per allocation with only loopback, up. Made in the alloc's prerun, joined by
// every task of the group (TaskConfig.networkNamespacePath), removed in postrun.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { BerthError, type Logger, silentLogger } from '../../lib/index.js';

/** Where iproute2 keeps named network namespaces. */
export const NETNS_RUN_DIR = '/var/run/netns';

export type NetworkErrorCode = 'NETWORK_CREATE_FAILED' | 'NETWORK_DESTROY_FAILED';

export class NetworkError extends BerthError {
  declare readonly code: NetworkErrorCode;
  constructor(code: NetworkErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

export interface NetworkManagerOptions {
  logger?: Logger;
  /** Prefix of namespace names, default 'berth-'; tests pass their own to keep apart. */
  prefix?: string;
}

function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr: String(stderr).trim() }));
      else resolve(stdout);
    });
  });
}

/** Creates and removes per-allocation network namespaces. Needs root and iproute2. */
export class NetworkManager {
  readonly #logger: Logger;
  readonly #prefix: string;
  readonly #locks = new Map<string, Promise<unknown>>();

  constructor(opts: NetworkManagerOptions = {}) {
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'network' });
    this.#prefix = opts.prefix ?? 'berth-';
  }

  /** The namespace name for an allocation (short and stable: a hash of the alloc id). */
  nameFor(allocId: string): string {
    return this.#prefix + createHash('sha256').update(allocId).digest('hex').slice(0, 16);
  }

  /** The bind-mounted namespace file that nsenter / setns take. */
  pathFor(allocId: string): string {
    return `${NETNS_RUN_DIR}/${this.nameFor(allocId)}`;
  }

  /**
   * Makes the allocation's namespace with loopback up and nothing else, and
   * returns its path. Safe to repeat (an existing namespace is reused and its
   * loopback brought up again). Throws NetworkError NETWORK_CREATE_FAILED.
   */
  create(allocId: string): Promise<{ path: string }> {
    return this.#serial(allocId, async () => {
      const name = this.nameFor(allocId);
      try {
        if (!existsSync(this.pathFor(allocId))) await run('ip', ['netns', 'add', name]);
        await run('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
      } catch (err) {
        throw new NetworkError('NETWORK_CREATE_FAILED', `cannot create the network namespace of allocation ${allocId}: ${stderrOf(err)}`, { cause: err });
      }
      this.#logger.info({ allocId, netns: name }, 'network namespace created');
      return { path: this.pathFor(allocId) };
    });
  }

  /** Removes the allocation's namespace. Safe twice and on one never made. Throws NETWORK_DESTROY_FAILED. */
  destroy(allocId: string): Promise<void> {
    return this.#serial(allocId, async () => {
      const name = this.nameFor(allocId);
      if (!existsSync(this.pathFor(allocId))) return;
      try {
        await run('ip', ['netns', 'delete', name]);
      } catch (err) {
        if (!existsSync(this.pathFor(allocId))) return;
        throw new NetworkError('NETWORK_DESTROY_FAILED', `cannot remove the network namespace of allocation ${allocId}: ${stderrOf(err)}`, { cause: err });
      }
      this.#logger.info({ allocId, netns: name }, 'network namespace removed');
    });
  }

  /** Whether the allocation's namespace exists. Never blocks. */
  exists(allocId: string): boolean {
    return existsSync(this.pathFor(allocId));
  }

  #serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#locks.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.#locks.set(key, tail);
    void tail.then(() => {
      if (this.#locks.get(key) === tail) this.#locks.delete(key);
    });
    return next;
  }
}

function stderrOf(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return e.stderr || e.message || String(err);
}
