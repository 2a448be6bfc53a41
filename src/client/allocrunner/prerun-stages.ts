// The order of an allocation's prerun hooks, as stages of lanes: stages run
// one after the other; inside a stage, lanes run side by side; inside a
// lane, hooks run one after the other. A hook that needs nothing of another
// goes in its own lane: the CSI volumes (a claim round trip to the server,
// then NodeStage and NodePublish) need nothing of the alloc dir, the network
// or the host volumes, and are claimed and mounted while those are made.
// The CSI rules are about the order of calls for one volume (claim, then
// ControllerPublish, NodeStage, NodePublish) and hold inside the CSI hook;
// no task starts before every lane is done.

import { AbortedError } from '../../lib/index.js';
import type { AllocHook, AllocHookContext } from './alloc-hook.js';

/** A stage: its lanes run side by side, each lane's hooks in order. */
export type PrerunStage = ReadonlyArray<readonly AllocHook[]>;

/** How prerun ended: every hook done, aborted (the allocation was stopped), or the first hook that failed. */
export type PrerunOutcome = { kind: 'done' } | { kind: 'aborted' } | { kind: 'failed'; hook: AllocHook; err: unknown };

/**
 * Runs the prerun hooks of `stages` with `ctx`, whose signal must include
 * `failFast`'s. The first hook that fails aborts `failFast`, so that the
 * other lanes stop waiting (on a plugin, on a claim) and give up; its
 * outcome is returned once every lane has settled, so that postrun never
 * runs beside a hook still in flight. An AbortedError, or any error once
 * `ctx.signal` fired for another reason, means the allocation was stopped:
 * 'aborted'. Never throws.
 */
export async function runPrerunStages(stages: readonly PrerunStage[], ctx: AllocHookContext, failFast: AbortController): Promise<PrerunOutcome> {
  let outcome: PrerunOutcome = { kind: 'done' };
  const lane = async (hooks: readonly AllocHook[]): Promise<void> => {
    for (const hook of hooks) {
      if (outcome.kind !== 'done') return;
      try {
        await hook.prerun?.(ctx);
      } catch (err) {
        // A lane aborted because another failed first, or the allocation was stopped.
        if (outcome.kind !== 'done') return;
        outcome = err instanceof AbortedError || ctx.signal.aborted ? { kind: 'aborted' } : { kind: 'failed', hook, err };
        failFast.abort();
        return;
      }
    }
  };
  for (const stage of stages) {
    await Promise.all(stage.map(lane));
    if (outcome.kind !== 'done') break;
  }
  return outcome;
}
