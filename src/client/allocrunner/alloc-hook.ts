// Allocation hooks (Nomad's allocrunner hooks): small named objects run in
// order before the tasks start (prerun), in reverse after they all ended
// (postrun), and when the allocation is removed from the node (destroy).

import { BerthError, type Logger } from '../../lib/index.js';
import type { Allocation, Job, TaskGroup } from '../../structs/index.js';
import type { AllocRunnerRecord } from './alloc-records.js';

/** A group volume made available on the node: the host path tasks mount. */
export interface ResolvedVolume {
  source: string;
  readOnly: boolean;
}

export interface AllocHookContext {
  readonly alloc: Allocation;
  readonly job: Job;
  readonly group: TaskGroup;
  /** Fires when the allocation is stopped, destroyed or the agent shuts down. */
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** The runner's durable record; call save() after changing it. */
  readonly record: AllocRunnerRecord;
  save(): void;
  /** Records an event on every task of the allocation. No secrets in it. */
  event(type: string, message: string, details?: Record<string, string>): void;
  /** Group volumes by name, as prerun hooks resolve them. */
  readonly volumes: Map<string, ResolvedVolume>;
}

/**
 * One allocation hook. prerun throws AllocRunnerError (or any error) to fail
 * the allocation; postrun and destroy must be safe to repeat, and run even
 * when prerun failed half-way (they undo what the record says was done).
 * restore re-reads the record after an agent restart and must not act.
 */
export interface AllocHook {
  readonly name: string;
  prerun?(ctx: AllocHookContext): Promise<void>;
  postrun?(ctx: AllocHookContext): Promise<void>;
  destroy?(ctx: AllocHookContext): Promise<void>;
  restore?(ctx: AllocHookContext): void;
}

export type AllocRunnerErrorCode =
  | 'ALLOC_NETWORK_UNSUPPORTED'
  | 'ALLOC_HOST_VOLUME_MISSING'
  | 'ALLOC_VOLUME_CLAIM_FAILED'
  | 'ALLOC_VOLUME_MOUNT_FAILED'
  | 'ALLOC_VOLUME_UNMOUNT_FAILED'
  | 'ALLOC_DRIVER_MISSING'
  | 'ALLOC_BAD_SPEC'
  | 'ALLOC_PLUGIN_SOCKET';

/** Why an allocation could not be set up or torn down. Never carries a secret. */
export class AllocRunnerError extends BerthError<AllocRunnerErrorCode> {}
