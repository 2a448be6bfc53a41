// The step engine of the volume manager: the four node steps (stage,
// publish, unpublish, unstage) as one table, and one runner that takes any
// of them through the same skeleton:
//
//   skip when not needed -> record `pending` -> call the plugin (with
//   retries) -> on success record `done` or remove the record; on failure
//   record `uncertain`, remove it, or restore what was there
//
// A step is recorded durably before it is sent, so after a crash the records
// alone say what may be mounted and what negation call is owed (docs: the
// CSI rules on uncertain steps and recovery). The table says what differs
// per step; `stepOutcome` says, for every step, what its result leaves.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { CsiError, CsiRequestError, type CallOptions, type CsiClient } from '../../csi/index.js';
import {
  AbortedError,
  BerthError,
  describeError,
  retry,
  throwIfAborted,
  type BackoffPolicy,
  type Clock,
  type Logger,
} from '../../lib/index.js';
import { sourceVanished, unmountEveryLayer, type AgentUnmount, type AgentUnmountReason, type Takeover } from './agent-unmount.js';
import { removeEmptyDirs } from './empty-dirs.js';
import type { MountPaths } from './mount-paths.js';
import type { PublishSpec, StepSpec } from './step-spec.js';
import { ClientVolumeError } from './client-volume-error.js';
import type { PublishRecord, StageRecord, VolumeRecords } from './volume-records.js';

export type StepOp = 'stage' | 'publish' | 'unpublish' | 'unstage';

/** How a plugin call ended, after its retries. `final`: a code that proves the plugin did not act. */
export type StepResult = 'ok' | 'final' | 'uncertain';

/**
 * What a step's result leaves in its record: `done` (kept, done), `removed`
 * (the record and the empty directory go), `restored` (the record as it was
 * before the step), `uncertain` (kept, marked so: its negation is owed).
 */
export type StepOutcome = 'done' | 'removed' | 'restored' | 'uncertain';

/**
 * The one rule of all steps, pure. A step that does (stage, publish) is
 * done on success; when it may have happened, or an earlier attempt of it
 * was recorded, it stays uncertain; only a final refusal of a first attempt
 * removes it. A step that undoes (unpublish, unstage) removes its record on
 * success; a final refusal changed nothing (restore); anything else may
 * have half happened (uncertain).
 */
export function stepOutcome(undoes: boolean, result: StepResult, hadRecord: boolean): StepOutcome {
  if (result === 'ok') return undoes ? 'removed' : 'done';
  if (result === 'uncertain') return 'uncertain';
  if (undoes) return 'restored';
  return hadRecord ? 'uncertain' : 'removed';
}

/** The records of one bucket, as a step reads and writes them. */
interface RecordSlot<R> {
  get(key: string): R | undefined;
  put(key: string, rec: R): void;
  delete(key: string): void;
}

/** What one step is: the table's row. */
export interface StepRow<R extends StageRecord | PublishRecord> {
  op: R['op'];
  /** True for the negation steps (unpublish, unstage). */
  undoes: boolean;
  /** The bucket of its records. */
  records: 'stages' | 'publications';
  /** The error code of a step refused with a final code, and of one that may have happened (uncertain). */
  failedCode: 'CLIENT_VOLUME_MOUNT_FAILED' | 'CLIENT_VOLUME_UNMOUNT_FAILED';
  uncertainCode: 'CLIENT_VOLUME_MOUNT_UNCERTAIN' | 'CLIENT_VOLUME_UNMOUNT_FAILED';
  /** Logged once the step is done. */
  doneMessage: string;
  /** The log field of the step's path. */
  pathField: 'stagingPath' | 'targetPath';
  /** The host path of the step's directory. */
  path(rec: R): string;
  /** Where clean-up of empty parents stops. */
  root(paths: MountPaths): string;
  /** The step in words, for errors: "staging volume v1". */
  subject(rec: R): string;
  /** False when there is nothing to do: done already, or nothing to undo. */
  needed(prev: R | undefined, usersOf: () => number): boolean;
  /** Makes what the CO owns before a call (the staging directory, the target's parent). */
  prepare?(spec: PublishSpec): Promise<void>;
  /**
   * The record a do-step writes before its call, from the spec's record
   * fields (`base`). Negation steps have none: they write the record they
   * undo, with their op, as pending.
   */
  pending?(spec: PublishSpec, base: RecordBase): R;
  call(client: CsiClient, rec: R, spec: PublishSpec | undefined, opts: CallOptions): Promise<unknown>;
}

type RecordBase = Omit<StageRecord, 'op' | 'state' | 'stagingPath' | 'pluginStagingPath'>;

/** The spec a do-step needs; the runner only calls these with one. */
function need(spec: PublishSpec | undefined): PublishSpec {
  if (!spec) throw new Error('internal: this step needs a spec');
  return spec;
}

/** The row fields that follow from which records a step works on. */
function onRecords<R extends StageRecord | PublishRecord, F extends 'stagingPath' | 'targetPath'>(
  records: 'stages' | 'publications',
  pathField: F & keyof R,
  root: 'stagingRoot' | 'perAllocRoot',
): Pick<StepRow<R>, 'records' | 'pathField' | 'path' | 'root'> {
  return { records, pathField, path: (rec) => String(rec[pathField]), root: (paths) => paths[root] };
}

const ON_STAGINGS = onRecords<StageRecord, 'stagingPath'>('stages', 'stagingPath', 'stagingRoot');
const ON_PUBLICATIONS = onRecords<PublishRecord, 'targetPath'>('publications', 'targetPath', 'perAllocRoot');

const DOES = { undoes: false, failedCode: 'CLIENT_VOLUME_MOUNT_FAILED', uncertainCode: 'CLIENT_VOLUME_MOUNT_UNCERTAIN' } as const;
const UNDOES = { undoes: true, failedCode: 'CLIENT_VOLUME_UNMOUNT_FAILED', uncertainCode: 'CLIENT_VOLUME_UNMOUNT_FAILED' } as const;

/** What NodeStage and NodePublish both send. */
function volumeRequest(spec: PublishSpec) {
  return {
    volumeId: spec.externalId,
    publishContext: spec.publishContext,
    volumeCapability: spec.capability,
    volumeContext: spec.volumeContext,
    ...(spec.secrets ? { secrets: spec.secrets } : {}),
  };
}

/** The four steps. */
export const STEP_TABLE: { stage: StepRow<StageRecord>; publish: StepRow<PublishRecord>; unpublish: StepRow<PublishRecord>; unstage: StepRow<StageRecord> } = {
  stage: {
    ...ON_STAGINGS,
    ...DOES,
    op: 'stage',
    doneMessage: 'volume staged',
    subject: (rec) => `staging volume ${rec.volumeId}`,
    needed: (prev) => !(prev?.state === 'done' && prev.op === 'stage'),
    prepare: async (spec) => {
      await mkdir(spec.staging.host, { recursive: true, mode: 0o750 });
    },
    pending: (spec, base) => ({ ...base, op: 'stage', state: 'pending', stagingPath: spec.staging.host, pluginStagingPath: spec.staging.plugin }),
    call: (client, _rec, spec, opts) => client.nodeStageVolume({ ...volumeRequest(need(spec)), stagingTargetPath: need(spec).staging.plugin }, opts),
  },
  publish: {
    ...ON_PUBLICATIONS,
    ...DOES,
    op: 'publish',
    doneMessage: 'volume published',
    subject: (rec) => `publishing volume ${rec.volumeId} to allocation ${rec.allocId}`,
    needed: (prev) => !(prev?.state === 'done' && prev.op === 'publish'),
    // The CO makes the parent; the plugin makes the target itself.
    prepare: async (spec) => {
      await mkdir(path.dirname(spec.target.host), { recursive: true, mode: 0o750 });
    },
    pending: (spec, base) => ({
      ...base,
      op: 'publish',
      state: 'pending',
      allocId: spec.allocId,
      targetPath: spec.target.host,
      pluginTargetPath: spec.target.plugin,
      ...(spec.staged ? { stageKey: spec.stageKey } : {}),
    }),
    call: (client, _rec, s, opts) => {
      const spec = need(s);
      return client.nodePublishVolume(
        {
          ...volumeRequest(spec),
          ...(spec.staged ? { stagingTargetPath: spec.staging.plugin } : {}),
          targetPath: spec.target.plugin,
          readonly: spec.readOnly,
        },
        opts,
      );
    },
  },
  unpublish: {
    ...ON_PUBLICATIONS,
    ...UNDOES,
    op: 'unpublish',
    doneMessage: 'volume unpublished',
    subject: (rec) => `unpublishing volume ${rec.volumeId} from allocation ${rec.allocId}`,
    needed: (prev) => prev !== undefined,
    call: (client, rec, _spec, opts) => client.nodeUnpublishVolume(rec.externalId, rec.pluginTargetPath, opts),
  },
  unstage: {
    ...ON_STAGINGS,
    ...UNDOES,
    op: 'unstage',
    doneMessage: 'volume unstaged',
    subject: (rec) => `unstaging volume ${rec.volumeId}`,
    // Reference counting: a staging goes only once no publication uses it.
    needed: (prev, usersOf) => prev !== undefined && usersOf() === 0,
    call: (client, rec, _spec, opts) => client.nodeUnstageVolume(rec.externalId, rec.pluginStagingPath, opts),
  },
};

export interface StepRunnerOptions {
  pluginId: string;
  records: VolumeRecords;
  /** The client of the instance serving now, asked for every attempt; may throw (that attempt is not sent). */
  getClient: () => CsiClient;
  /** The mount layout; throws before the manager started. */
  paths: () => MountPaths;
  clock: Clock;
  logger: Logger;
  backoff: BackoffPolicy;
  random: () => number;
  /** Deadline of one attempt; default the RPC's own. */
  callDeadlineMs?: number;
}

/** The outcome of a plugin call that failed, after its retries. */
class StepFailure extends Error {
  override readonly cause: unknown;
  /** True when the step may have happened. */
  readonly uncertain: boolean;

  constructor(cause: unknown, uncertain: boolean) {
    super(describeError(cause), { cause });
    this.cause = cause;
    this.uncertain = uncertain;
  }
}

/** Thrown by getClient failures: that attempt was never sent. */
class NotSent extends Error {}

/**
 * Runs the steps of STEP_TABLE for one plugin. Callers hold the volume's
 * lock around every step (the runner does not serialize). Every method
 * throws ClientVolumeError with the row's codes (AbortedError when the signal
 * fired before anything was sent), after writing the outcome down.
 */
export class StepRunner {
  readonly #o: StepRunnerOptions;
  readonly #slots: { stages: RecordSlot<StageRecord>; publications: RecordSlot<PublishRecord> };

  constructor(opts: StepRunnerOptions) {
    this.#o = opts;
    const r = opts.records;
    this.#slots = {
      stages: { get: (k) => r.getStage(k), put: (k, v) => r.putStage(k, v), delete: (k) => r.deleteStage(k) },
      publications: { get: (k) => r.getPublication(k), put: (k, v) => r.putPublication(k, v), delete: (k) => r.deletePublication(k) },
    };
  }

  /** NodeStage unless the staging is recorded done. */
  async stage(spec: PublishSpec, signal: AbortSignal, log: Logger): Promise<void> {
    await this.#run(STEP_TABLE.stage, this.#slots.stages, spec.stageKey, spec, signal, log);
  }

  /** NodePublish unless the publication is recorded done. */
  async publish(spec: PublishSpec, signal: AbortSignal, log: Logger): Promise<void> {
    await this.#run(STEP_TABLE.publish, this.#slots.publications, spec.publishKey, spec, signal, log);
  }

  /**
   * NodeUnpublish of a recorded publication, if any. When the plugin refuses
   * and the target's source has vanished (or `takeover.force`), the agent
   * unmounts it itself and the step is done (see takeOver).
   */
  async unpublish(key: string, signal: AbortSignal, log: Logger, takeover?: Takeover): Promise<void> {
    await this.#run(STEP_TABLE.unpublish, this.#slots.publications, key, undefined, signal, log, takeover);
  }

  /** NodeUnstage of a recorded staging that no publication uses, as `unpublish`. Resolves true when it unstaged. */
  unstageIfUnused(key: string, signal: AbortSignal, log: Logger, takeover?: Takeover): Promise<boolean> {
    return this.#run(STEP_TABLE.unstage, this.#slots.stages, key, undefined, signal, log, takeover);
  }

  /** The skeleton every step shares. Resolves false when the step was not needed. */
  async #run<R extends StageRecord | PublishRecord>(
    row: StepRow<R>,
    slot: RecordSlot<R>,
    key: string,
    spec: PublishSpec | undefined,
    signal: AbortSignal,
    log: Logger,
    takeover?: Takeover,
  ): Promise<boolean> {
    const prev = slot.get(key);
    if (!row.needed(prev, () => this.#o.records.usersOf(key))) return false;
    throwIfAborted(signal);
    if (spec && row.prepare) await row.prepare(spec);
    const rec: R = row.pending
      ? row.pending(need(spec), this.#recordBase(need(spec)))
      : { ...(prev as R), op: row.op, state: 'pending', updatedAt: this.#o.clock.now() };
    slot.put(key, rec);
    let failure: StepFailure | undefined;
    // Forced, with no instance serving: nothing to retry for; the agent takes over at once.
    if (takeover?.force) {
      try {
        this.#o.getClient();
      } catch (err) {
        failure = new StepFailure(err, false);
      }
    }
    if (!failure) {
      try {
        await this.#call(signal, (client, callOpts) => row.call(client, rec, spec, callOpts));
      } catch (err) {
        failure = asFailure(err);
      }
    }
    // A release always ends: a negation the plugin will not do, the agent does when nothing
    // the plugin could do would bring the mount back (its source vanished) or an operator forces it.
    const taken = failure && row.undoes && !signal.aborted ? await this.#takeOver(row.op as 'unpublish' | 'unstage', row.path(rec), failure, takeover, log) : undefined;
    if (taken) failure = undefined;
    const result: StepResult = !failure ? 'ok' : failure.uncertain ? 'uncertain' : 'final';
    const outcome = stepOutcome(row.undoes, result, prev !== undefined);
    const where = { [row.pathField]: row.path(rec) };
    switch (outcome) {
      case 'done':
        slot.put(key, { ...rec, state: 'done', updatedAt: this.#o.clock.now() });
        break;
      case 'uncertain':
        slot.put(key, { ...rec, state: 'uncertain', updatedAt: this.#o.clock.now() });
        break;
      case 'restored':
        slot.put(key, prev as R);
        break;
      case 'removed':
        slot.delete(key);
        await removeEmptyDirs(row.path(rec), row.root(this.#o.paths()));
        break;
    }
    if (!failure) {
      log.info(where, row.doneMessage);
      return true;
    }
    // A negation step that may have half happened is reported as failed: its record says uncertain.
    const mayHaveHappened = !row.undoes && outcome === 'uncertain';
    log.warn({ ...where, err: describeError(failure.cause) }, mayHaveHappened ? `volume ${row.op} is uncertain` : `volume ${row.op} failed`);
    const code = outcome === 'uncertain' ? row.uncertainCode : row.failedCode;
    throw stepError(code, `${row.subject(rec)} ${mayHaveHappened ? 'may or may not have happened' : 'failed'}`, failure.cause);
  }

  /**
   * Unmounts `hostPath` in the agent after the plugin refused its negation
   * step, when its source vanished or `takeover.force`; resolves with what
   * it did (also pushed to `takeover.done`), or undefined when the refusal
   * stands. A failing umount leaves the refusal standing (logged).
   */
  async #takeOver(op: 'unpublish' | 'unstage', hostPath: string, failure: StepFailure, takeover: Takeover | undefined, log: Logger): Promise<AgentUnmount | undefined> {
    let reason: AgentUnmountReason | undefined;
    try {
      if (await sourceVanished(hostPath)) reason = 'source-vanished';
      else if (takeover?.force) reason = 'forced';
      if (!reason) return undefined;
      const layers = await unmountEveryLayer(hostPath);
      const done: AgentUnmount = { op, path: hostPath, reason, pluginError: describeError(failure.cause), layers };
      takeover?.done.push(done);
      log.warn(
        { path: hostPath, reason, layers, pluginError: done.pluginError },
        reason === 'forced' ? `plugin refused to ${op}; unmounted by the agent (forced by an operator)` : `plugin refused to ${op} a volume whose source vanished; unmounted by the agent`,
      );
      return done;
    } catch (err) {
      log.warn({ path: hostPath, reason, err: describeError(err) }, `the agent could not unmount after the plugin refused to ${op}`);
      return undefined;
    }
  }

  /**
   * One plugin call with this manager's retries, each attempt on the client
   * serving at that moment. Rejects with StepFailure, which says whether
   * any attempt may have reached the plugin and acted.
   */
  async #call<T>(signal: AbortSignal, fn: (client: CsiClient, opts: CallOptions) => Promise<T>): Promise<T> {
    let uncertain = false;
    const o = this.#o;
    const callOpts: CallOptions = { signal, retry: false, ...(o.callDeadlineMs ? { deadlineMs: o.callDeadlineMs } : {}) };
    try {
      return await retry(
        async () => {
          let client: CsiClient;
          try {
            client = o.getClient();
          } catch (err) {
            throw new NotSent(describeError(err), { cause: err });
          }
          try {
            return await fn(client, callOpts);
          } catch (err) {
            if (!isFinal(err)) uncertain = true;
            throw err;
          }
        },
        {
          policy: o.backoff,
          clock: o.clock,
          random: o.random,
          signal,
          shouldRetry: (err) => (err instanceof CsiError && err.retryable) || err instanceof NotSent,
          onRetry: ({ err, attempt, delayMs }) =>
            o.logger.debug({ attempt, delayMs, code: err instanceof BerthError ? err.code : undefined }, 'retrying volume step'),
        },
      );
    } catch (err) {
      throw new StepFailure(err instanceof NotSent ? err.cause : err, uncertain);
    }
  }

  #recordBase(spec: StepSpec): RecordBase {
    return {
      pluginId: this.#o.pluginId,
      namespace: spec.namespace,
      volumeId: spec.volumeId,
      externalId: spec.externalId,
      usageKey: spec.usageKey,
      readOnly: spec.readOnly,
      capability: spec.recorded,
      publishContext: spec.publishContext,
      volumeContext: spec.recordContext,
      replayable: spec.replayable,
      updatedAt: this.#o.clock.now(),
    };
  }
}

/** True when an attempt's error proves the plugin did not act. */
function isFinal(err: unknown): boolean {
  if (err instanceof CsiError) return err.final;
  // Refused before sending, or aborted before sending: nothing reached the plugin.
  return err instanceof CsiRequestError || err instanceof AbortedError || err instanceof NotSent;
}

function asFailure(err: unknown): StepFailure {
  if (err instanceof StepFailure) return err;
  return new StepFailure(err, !isFinal(err));
}

function stepError(code: 'CLIENT_VOLUME_MOUNT_FAILED' | 'CLIENT_VOLUME_MOUNT_UNCERTAIN' | 'CLIENT_VOLUME_UNMOUNT_FAILED', what: string, cause: unknown): BerthError {
  // An abort before anything was sent stays an AbortedError: the caller asked for it.
  if (cause instanceof AbortedError && code !== 'CLIENT_VOLUME_MOUNT_UNCERTAIN') return cause;
  return new ClientVolumeError(code, `${what}: ${describeError(cause)}`, { cause });
}
