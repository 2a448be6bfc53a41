// How the client reads errors from a driver plugin: a plugin that went away
// (any call fails with "plugin shut down"), and StartTask's recoverable flag
// (Nomad's RecoverableError detail decides whether the restart policy retries).

import { BerthError, describeError } from '../../lib/index.js';
import { DriverError } from '../drivers/index.js';

/** Codes that mean the plugin process is gone or its connection closed. */
const SHUT_DOWN_CODES = new Set(['DRIVER_SHUT_DOWN', 'DRIVER_PLUGIN_SHUTDOWN']);

/** Whether `err` says the plugin is gone (DRIVER_SHUT_DOWN and its kin, gRPC UNAVAILABLE/CANCELLED from a closed channel). */
export function isPluginShutDown(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && SHUT_DOWN_CODES.has(code)) return true;
    // A bare grpc-js status: 14 UNAVAILABLE.
    if (code === 14) return true;
  }
  return false;
}

/** What a failed StartTask said: its message and whether retrying may help. */
export function startErrorOf(err: unknown): { message: string; recoverable: boolean } {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const r = (e as { recoverable?: unknown }).recoverable;
    if (typeof r === 'boolean') return { message: describeError(err), recoverable: r };
  }
  // Without the detail Nomad treats a start error as not recoverable.
  return { message: describeError(err), recoverable: false };
}

/**
 * StartTask failed. `recoverable` false fails the task at once (the restart
 * policy does not retry it); true lets the restart policy retry.
 */
export class PluginStartError extends DriverError {
  constructor(message: string, recoverable: boolean, options?: { cause?: unknown }) {
    super('DRIVER_START_FAILED', message, { ...options, recoverable });
  }
}

/** Driver plugin manager failures; the message names the plugin. */
export type DriverManagerErrorCode = 'DRIVER_MANAGER_LAUNCH_FAILED' | 'DRIVER_MANAGER_NOT_A_DRIVER' | 'DRIVER_MANAGER_CONFIG_INVALID' | 'DRIVER_MANAGER_STOPPED';

export class DriverManagerError extends BerthError<DriverManagerErrorCode> {}
