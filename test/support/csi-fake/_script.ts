// What a test told the fake to do with the next calls to an RPC.

import { BerthError } from '../../../src/lib/index.js';
import type { GrpcCodeName } from '../../../src/csi/index.js';
import type { CsiRpc } from '../../../src/csi/index.js';

export type ScriptStep =
  | { kind: 'fail'; code: GrpcCodeName; message: string }
  | { kind: 'delay'; ms: number }
  | { kind: 'hang' }
  | { kind: 'answer'; response: unknown }
  | { kind: 'crash' };

interface Entry {
  step: ScriptStep;
  remaining: number;
}

/**
 * Per-RPC queues of scripted steps, consumed in order. A step given
 * `times: Infinity` stays at the head of its queue until `clear()`.
 */
export class CallScript {
  readonly #queues = new Map<CsiRpc, Entry[]>();

  /** Appends `step` for the next `times` calls to `rpc`. Throws BerthError on a bad count. */
  push(rpc: CsiRpc, step: ScriptStep, times: number): void {
    if (!(times === Infinity || (Number.isInteger(times) && times >= 0))) {
      throw new BerthError('FAKE_CSI_BAD_SCRIPT', `times must be a non-negative integer or Infinity, got ${times}`);
    }
    if (times === 0) return;
    const queue = this.#queues.get(rpc);
    if (queue) queue.push({ step, remaining: times });
    else this.#queues.set(rpc, [{ step, remaining: times }]);
  }

  /** The step that applies to the call to `rpc` arriving now, if any; consumes it. */
  take(rpc: CsiRpc): ScriptStep | undefined {
    if (this.#queues.size === 0) return undefined;
    const queue = this.#queues.get(rpc);
    const head = queue?.[0];
    if (!queue || !head) return undefined;
    head.remaining -= 1;
    if (head.remaining <= 0) {
      queue.shift();
      if (queue.length === 0) this.#queues.delete(rpc);
    }
    return head.step;
  }

  clear(): void {
    this.#queues.clear();
  }
}
