// gRPC statuses <-> Berth's plugin call errors, including the
// RecoverableError detail Nomad's drivers put in `grpc-status-details-bin`.
import type { Metadata, ServerError } from 'nice-grpc';
import { Status as RpcStatus } from '../../gen/google/rpc/status.js';
import { RecoverableError } from '../../gen/nomad/plugins/shared/structs/proto/recoverable_error.js';
import { AbortedError } from '../../lib/index.js';
import { loadedNiceGrpc, niceGrpc } from '../goplugin/index.js';
import { DriverPluginError } from './errors.js';

const DETAILS = 'grpc-status-details-bin';
const RECOVERABLE_TYPE = 'type.googleapis.com/hashicorp.nomad.plugins.shared.structs.RecoverableError';

/** The recoverable flag of a failed call's trailer, if the plugin sent one. */
export function recoverableFromTrailer(trailer: Metadata | undefined): boolean | undefined {
  const raw = trailer?.get(DETAILS);
  if (raw === undefined) return undefined;
  try {
    const st = RpcStatus.decode(typeof raw === 'string' ? Buffer.from(raw, 'base64') : raw);
    const d = st.details.find((x) => x.typeUrl === RECOVERABLE_TYPE || x.typeUrl.endsWith('/hashicorp.nomad.plugins.shared.structs.RecoverableError'));
    return d ? RecoverableError.decode(d.value).recoverable : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A failed call -> DriverPluginError (or AbortedError when the caller's
 * signal fired). `shutDown` says the plugin is known to be gone.
 */
export function callError(plugin: string, rpc: string, err: unknown, ctx: { shutDown: boolean; callerSignal?: AbortSignal; trailer?: Metadata }): Error {
  if (err instanceof DriverPluginError || err instanceof AbortedError) return err;
  if (ctx.shutDown) return shutdownError(plugin, rpc, err);
  if (ctx.callerSignal?.aborted) return new AbortedError(`${rpc} on plugin ${plugin} aborted`, { cause: ctx.callerSignal.reason });
  // A ClientError exists only once nice-grpc was loaded (by the launch of a plugin).
  const grpc = loadedNiceGrpc();
  if (!grpc || !(err instanceof grpc.ClientError)) return new DriverPluginError('DRIVER_PLUGIN_FAILED', `plugin ${plugin}: ${rpc}: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  const recoverable = recoverableFromTrailer(ctx.trailer);
  const opts = { cause: err, ...(recoverable !== undefined ? { recoverable } : {}) };
  const { Status } = grpc;
  switch (err.code) {
    case Status.UNAVAILABLE:
      return shutdownError(plugin, rpc, err);
    case Status.NOT_FOUND:
      return new DriverPluginError('DRIVER_PLUGIN_TASK_NOT_FOUND', `plugin ${plugin}: ${rpc}: ${err.details}`, opts);
    case Status.UNIMPLEMENTED:
      return new DriverPluginError('DRIVER_PLUGIN_UNSUPPORTED', `plugin ${plugin}: ${rpc} is not supported by this plugin${err.details ? `: ${err.details}` : ''}`, opts);
    case Status.INVALID_ARGUMENT:
      return new DriverPluginError('DRIVER_PLUGIN_INVALID', `plugin ${plugin}: ${rpc}: ${err.details}`, opts);
    default:
      // Go plugins return plain errors (UNKNOWN); Nomad's "task not found for given id" among them.
      if (/task not found for given id/.test(err.details)) return new DriverPluginError('DRIVER_PLUGIN_TASK_NOT_FOUND', `plugin ${plugin}: ${rpc}: ${err.details}`, opts);
      return new DriverPluginError('DRIVER_PLUGIN_FAILED', `plugin ${plugin}: ${rpc}: ${err.details}`, opts);
  }
}

export function shutdownError(plugin: string, rpc: string, cause?: unknown): DriverPluginError {
  return new DriverPluginError('DRIVER_PLUGIN_SHUTDOWN', `plugin ${plugin}: ${rpc}: plugin shut down`, { cause });
}

/**
 * An error thrown by a served implementation -> the gRPC status a host
 * reads: task-not-found -> NOT_FOUND, unsupported -> UNIMPLEMENTED, invalid
 * -> INVALID_ARGUMENT; with `recoverableDetail` (StartTask, TaskStats) an
 * error carrying a boolean `recoverable` -> FAILED_PRECONDITION with a
 * RecoverableError detail in the trailer (as Nomad's driver server does);
 * the rest -> UNKNOWN with the message.
 */
export function toServerError(err: unknown, trailer: Metadata, opts: { recoverableDetail?: boolean } = {}): ServerError {
  // Runs in served implementations: servePlugin loaded nice-grpc.
  const { ServerError: GrpcServerError, Status } = niceGrpc();
  if (err instanceof GrpcServerError) return err;
  const e = err as { code?: unknown; message?: unknown; recoverable?: unknown };
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const code = typeof e?.code === 'string' ? e.code : '';
  if (code === 'ABORTED') return new GrpcServerError(Status.CANCELLED, message);
  if (code.endsWith('TASK_NOT_FOUND')) return new GrpcServerError(Status.NOT_FOUND, message);
  if (code.endsWith('UNSUPPORTED')) return new GrpcServerError(Status.UNIMPLEMENTED, message);
  if (code.endsWith('INVALID')) return new GrpcServerError(Status.INVALID_ARGUMENT, message);
  if (opts.recoverableDetail && typeof e?.recoverable === 'boolean') {
    const detail = RpcStatus.encode({
      code: Status.FAILED_PRECONDITION,
      message,
      details: [{ typeUrl: RECOVERABLE_TYPE, value: Buffer.from(RecoverableError.encode({ recoverable: e.recoverable }).finish()) }],
    }).finish();
    trailer.set(DETAILS, Buffer.from(detail));
    return new GrpcServerError(Status.FAILED_PRECONDITION, message);
  }
  return new GrpcServerError(Status.UNKNOWN, message);
}
