// The fake plugin's log of calls: every call in arrival order and by RPC,
// and waits for the n-th call to an RPC (resolved on arrival, before the
// fake answers). Private to the csi-fake kit (FakePlugin records into it).

import { BerthError } from '../../../src/lib/index.js';
import type { CsiRpc } from '../../../src/csi/index.js';
import type { RecordedCall, WaitForCallOptions } from './_options.js';

interface Waiter {
  count: number;
  resolve: (call: RecordedCall) => void;
}

export class CallLog {
  #calls: RecordedCall[] = [];
  #callsByRpc = new Map<CsiRpc, RecordedCall[]>();
  readonly #waiters = new Map<CsiRpc, Set<Waiter>>();

  /** Every call since the last clear(), in arrival order. A live view: do not modify. */
  get calls(): readonly RecordedCall[] {
    return this.#calls;
  }

  /** The calls to `rpc`, in arrival order (a copy). */
  callsTo(rpc: CsiRpc): RecordedCall[] {
    return [...(this.#callsByRpc.get(rpc) ?? [])];
  }

  /** Forgets recorded calls; waitFor counts start again from zero. */
  clear(): void {
    this.#calls = [];
    this.#callsByRpc = new Map();
  }

  /**
   * Resolves with the `count`-th call to `rpc` as soon as it has arrived (at
   * once if it already has), before the fake answers it. Rejects with
   * BerthError FAKE_CSI_WAIT_TIMEOUT after `timeoutMs` (default 5000) or
   * FAKE_CSI_WAIT_ABORTED when `signal` fires.
   */
  waitFor(rpc: CsiRpc, opts: WaitForCallOptions = {}): Promise<RecordedCall> {
    const count = opts.count ?? 1;
    const timeoutMs = opts.timeoutMs ?? 5000;
    if (!Number.isInteger(count) || count < 1) {
      return Promise.reject(new BerthError('FAKE_CSI_BAD_WAIT', `count must be a positive integer, got ${count}`));
    }
    const seen = this.#callsByRpc.get(rpc);
    const already = seen?.[count - 1];
    if (already) return Promise.resolve(already);
    const { signal } = opts;
    if (signal?.aborted) {
      return Promise.reject(new BerthError('FAKE_CSI_WAIT_ABORTED', `waiting for ${rpc} was aborted`, { cause: signal.reason }));
    }
    return new Promise<RecordedCall>((resolve, reject) => {
      let waiters = this.#waiters.get(rpc);
      if (!waiters) this.#waiters.set(rpc, (waiters = new Set()));
      const set = waiters;
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        set.delete(waiter);
        if (set.size === 0 && this.#waiters.get(rpc) === set) this.#waiters.delete(rpc);
      };
      const waiter: Waiter = {
        count,
        resolve: (call) => {
          done();
          resolve(call);
        },
      };
      const timer = setTimeout(() => {
        const have = this.#callsByRpc.get(rpc)?.length ?? 0;
        done();
        reject(new BerthError('FAKE_CSI_WAIT_TIMEOUT', `call ${count} to ${rpc} did not arrive within ${timeoutMs} ms (saw ${have})`));
      }, timeoutMs);
      const onAbort = (): void => {
        done();
        reject(new BerthError('FAKE_CSI_WAIT_ABORTED', `waiting for ${rpc} was aborted`, { cause: signal?.reason }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      set.add(waiter);
    });
  }

  /** Records `call` (made by the plugin on arrival) and resolves the waiters it completes. */
  add(call: RecordedCall): void {
    const { rpc } = call;
    this.#calls.push(call);
    const forRpc = this.#callsByRpc.get(rpc);
    if (forRpc) forRpc.push(call);
    else this.#callsByRpc.set(rpc, [call]);
    const waiters = this.#waiters.get(rpc);
    if (waiters) {
      const n = forRpc?.length ?? 1;
      for (const w of [...waiters]) if (w.count === n) w.resolve(call);
    }
  }
}
