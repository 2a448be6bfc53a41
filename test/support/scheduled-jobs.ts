// A job registration followed by the scheduling pass it asks for, for tests
// of placement that drive JobService without an evaluation worker (or beside
// one): `register` answers with a pending evaluation; the scheduler runs it
// after, as the evaluation worker does. Test and benchmark use only.

import type { Evaluation } from '../../src/structs/index.js';
import type { JobService, RegisterResult } from '../../src/server/jobs/index.js';
import { rowKey, type StateStore } from '../../src/server/state/index.js';

/**
 * Registers `spec`, then runs the pending evaluations (the worker's pass:
 * `JobService.evaluatePending`) and answers the registration with its
 * evaluation as the scheduler left it (complete or blocked). Throws what
 * `register` throws. When an evaluation worker runs beside it and took the
 * evaluation first, its outcome is read back all the same.
 */
export async function registerScheduled(jobs: JobService, store: StateStore, spec: unknown, opts: { checkIndex?: number } = {}): Promise<RegisterResult> {
  const registered = await jobs.register(spec, opts);
  const pass = await jobs.evaluatePending({ max: 1000 });
  const snap = store.snapshot();
  const evaluation = snap.get('evaluations', rowKey(registered.evaluation.id)) as Evaluation | undefined;
  if (evaluation?.status === 'pending' || !evaluation) throw new Error(`evaluation ${registered.evaluation.id} was not run: ${evaluation?.status ?? 'gone'}`);
  return { job: snap.get('jobs', rowKey(registered.job.namespace, registered.job.id)) ?? registered.job, evaluation, index: Math.max(pass.index, registered.index) };
}
