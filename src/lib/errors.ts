/**
 * The root of every error Berth throws. `code` is stable and meant for
 * programs (HTTP status and CLI exit code are derived from it at the edges);
 * `message` is meant for people and never carries a secret.
 *
 * One way to make a typed error: a class per area that extends
 * `BerthError<Code>` with the union of its codes, so a wrong code is a type
 * error and `err.code` narrows in a `switch`:
 *
 *     export type ClientVolumeErrorCode = 'CLIENT_VOLUME_NOT_MOUNTED' | ...;
 *     export class ClientVolumeError extends BerthError<ClientVolumeErrorCode> {}
 *
 * Codes carry the prefix of the area that throws them
 * (test/error-codes.test.ts checks every code in src/ against this table):
 *
 * | prefix              | area (classes)                                                  |
 * |---------------------|-----------------------------------------------------------------|
 * | `ABORTED`           | any wait whose AbortSignal fired (AbortedError)                 |
 * | `LIFECYCLE_`        | a component used outside its lifecycle (LifecycleError)         |
 * | `CSI_`              | CSI calls and plugins (CsiError `CSI_<GRPC_CODE>`,              |
 * |                     | CsiRequestError, CsiProtocolError, CsiEndpointError) and the    |
 * |                     | client's CSI manager (CsiManagerError `CSI_PLUGIN_*`)           |
 * | `FAKE_CSI_`         | the fake CSI plugin of the tests                                |
 * | `HOSTPATH_`         | the hostpath CSI plugin Berth ships                             |
 * | `CLIENT_VOLUME_`    | the client's volume manager (ClientVolumeError)                 |
 * | `CLIENT_`           | the client's composition root (ClientError)                     |
 * | `STATE_`            | the client's state file (ClientStateError)                      |
 * | `PLUGIN_`           | the client's dynamic plugin registry (PluginRegistryError)      |
 * | `ALLOC_`            | alloc runner, alloc dirs (AllocRunnerError, AllocDirError)      |
 * | `TASK_`             | task runner and the client's task routes (TaskRunnerError)      |
 * | `DRIVER_`           | task drivers (DriverError) and driver plugin calls              |
 * |                     | (DriverPluginError `DRIVER_PLUGIN_*`)                           |
 * | `GOPLUGIN_`         | launching and serving go-plugin processes (GoPluginError)       |
 * | `HCLSPEC_`          | plugin config schemas and their msgpack (HclSpecError)          |
 * | `CGROUP_`           | task cgroups on the node (CgroupError)                          |
 * | `NETWORK_`          | allocation networks (NetworkError)                              |
 * | `LOGS_`             | task logs (LogsError)                                           |
 * | `LOGMON_`           | the node's log monitor behind task output FIFOs (LogMonitorError) |
 * | `SERVER_`           | the server's composition root (ServerError) and the client's    |
 * |                     | connection to the server (ServerConnError)                      |
 * | `STORE_`            | the server's state store (StateStoreError)                      |
 * | `NODE_`             | server-to-node calls (NodeRpcCallError)                         |
 * | `AGENT_`, `CONFIG_` | the agent and its config file (AgentError, AgentConfigError)    |
 * | `FILE_`             | job and volume files (SpecFileError)                            |
 * | `HCL_`              | HCL sources that cannot be evaluated (HclError)                 |
 * | `API_`, `CLI_`, `JOB_` | the CLI: its API client, its own checks, `job run` outcomes  |
 *
 * Errno codes (`ENOENT`...) a CLI command meets are shown as they are.
 *
 * The HTTP API's outcome codes are the exception, unprefixed because they
 * are the wire contract the CLI and scripts match on and name the HTTP
 * status (server/http/api-error.ts): `NOT_FOUND` 404, `INVALID` 400,
 * `CONFLICT` / `IN_USE` 409, `EXHAUSTED` / `UNAVAILABLE` 503,
 * `UNAUTHENTICATED` 401, `FORBIDDEN` 403, `TOO_LARGE` 413, `INTERNAL` 500.
 * The server's request-facing classes (ApiError, JobError, NodeError, the
 * server's VolumeError) throw only these; the class tells the area. The
 * client's volume manager throws ClientVolumeError (`CLIENT_VOLUME_`), a
 * different class with a different scheme. Prefixing them would change
 * every API answer and `--json` error that scripts already match on.
 */
export class BerthError<C extends string = string> extends Error {
  readonly code: C;

  constructor(code: C, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** The HTTP API's outcome codes: unprefixed, each names its HTTP status (see the table above). */
export type ApiOutcomeCode = 'INVALID' | 'UNAUTHENTICATED' | 'FORBIDDEN' | 'NOT_FOUND' | 'CONFLICT' | 'IN_USE' | 'EXHAUSTED' | 'UNAVAILABLE' | 'TOO_LARGE' | 'INTERNAL';

/** Thrown by operations whose AbortSignal fired. `cause` is the signal's reason. */
export class AbortedError extends BerthError<'ABORTED'> {
  constructor(message = 'operation aborted', options?: { cause?: unknown }) {
    super('ABORTED', message, options);
  }
}

/** Rejects with an AbortedError when `signal` has fired; returns otherwise. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError(abortMessage(signal), { cause: signal.reason });
}

function abortMessage(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'TimeoutError') return 'operation timed out';
  if (reason instanceof Error && reason.message) return `operation aborted: ${reason.message}`;
  return 'operation aborted';
}

/** A one-line description of any thrown value, for logs and CLI output. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
