import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Channel } from 'nice-grpc';
import { AbortedError, anySignal, silentLogger, type Logger } from '../../lib/index.js';
import { HealthDefinition, HealthCheckResponse_ServingStatus, type HealthCheckResponse, type HealthClient } from '../../gen/grpc/health/v1/health.js';
import { GRPCControllerDefinition } from '../../gen/goplugin/internal/plugin/grpc_controller.js';
import { GRPCStdioDefinition, StdioData_Channel } from '../../gen/goplugin/internal/plugin/grpc_stdio.js';
import { GoPluginError } from './errors.js';
import { loadNiceGrpc, niceGrpc } from './grpc-module.js';
import { CORE_PROTOCOL_VERSION, handshakeEnv, type Handshake, type HandshakeLine } from './handshake.js';

/** How a plugin process ended. */
export interface PluginExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface LaunchOptions {
  /** The plugin executable. */
  readonly path: string;
  readonly args?: readonly string[];
  /** Added to the agent's environment (the handshake variables win). */
  readonly env?: Readonly<Record<string, string>>;
  readonly handshake: Handshake;
  /** The agent's logger; the plugin's stderr lines are logged through a child of it. */
  readonly logger?: Logger;
  /** Ends the launch (handshake, connection, health check); the process is then killed. */
  readonly signal?: AbortSignal;
  /** How long the plugin has to print its handshake line and answer the health check. Default 10 s. */
  readonly startTimeoutMs?: number;
  /** The loopback port range (matters only to plugins that listen on TCP). */
  readonly ports?: { readonly min: number; readonly max: number };
  /** What the plugin's code writes to its stdout/stderr (GRPCStdio). Default: logged at debug. */
  readonly onStdio?: (channel: 'stdout' | 'stderr', data: Uint8Array) => void;
}

/**
 * Starts a go-plugin process and connects to it, as go-plugin's client
 * Start does: runs `path` with the handshake environment, reads the first
 * stdout line (`1|APP|unix|ADDR|grpc`), checks it, dials the unix socket
 * (plaintext), checks gRPC health of service "plugin", then streams its
 * GRPCStdio output and logs its stderr lines (hclog JSON or plain) into the
 * logger. Resolves once the plugin is healthy. Rejects with GoPluginError
 * naming the plugin (GOPLUGIN_BAD_HANDSHAKE, _COOKIE_REJECTED,
 * _VERSION_UNSUPPORTED, _NETWORK_UNSUPPORTED, _HANDSHAKE_TIMEOUT, _EXITED,
 * _START_FAILED, _UNHEALTHY) or AbortedError; the process is killed and
 * reaped before it rejects. Never throws on what the plugin prints later.
 */
export async function launchPlugin(opts: LaunchOptions): Promise<PluginProcess> {
  const name = path.basename(opts.path);
  const logger = (opts.logger ?? silentLogger()).child({ component: 'go-plugin', plugin: name });
  const env = { ...process.env, ...opts.env, ...handshakeEnv(opts.handshake, opts.ports) };
  let child: ChildProcess;
  try {
    child = spawn(opts.path, [...(opts.args ?? [])], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    throw new GoPluginError('GOPLUGIN_START_FAILED', `plugin ${opts.path}: cannot start: ${(err as Error).message}`, { cause: err });
  }
  const proc = new PluginProcess(name, opts.path, child, logger);
  const timeoutMs = opts.startTimeoutMs ?? 10_000;
  const deadline = anySignal([AbortSignal.timeout(timeoutMs), ...(opts.signal ? [opts.signal] : [])]);
  try {
    const line = await proc.readHandshake(deadline, opts.signal, timeoutMs);
    const parsed = checkHandshake(opts.path, line, opts.handshake);
    await proc.connect(parsed, deadline, opts.signal, timeoutMs, opts.onStdio);
    logger.debug({ pid: child.pid, address: parsed.address, appVersion: parsed.appVersion }, 'plugin started');
    return proc;
  } catch (err) {
    proc.kill();
    await proc.exited;
    proc.closeChannel();
    throw err;
  }
}

/** Checks a handshake line as go-plugin's client does. Throws GoPluginError naming the plugin. */
export function checkHandshake(pluginPath: string, line: string, h: Handshake): HandshakeLine {
  const parts = line.trim().split('|');
  if (parts.length < 4 || parts.some((p, i) => i < 4 && p === '')) {
    throw new GoPluginError('GOPLUGIN_BAD_HANDSHAKE', `plugin ${pluginPath}: unrecognized handshake line ${JSON.stringify(line.trim().slice(0, 200))} (expected CORE|APP|NETWORK|ADDR|PROTOCOL)`);
  }
  const [core, app, network, address] = parts as [string, string, string, string];
  if (!/^\d+$/.test(core) || !/^\d+$/.test(app)) {
    throw new GoPluginError('GOPLUGIN_BAD_HANDSHAKE', `plugin ${pluginPath}: unrecognized handshake line ${JSON.stringify(line.trim().slice(0, 200))} (versions are not numbers)`);
  }
  if (Number(core) !== CORE_PROTOCOL_VERSION) {
    throw new GoPluginError('GOPLUGIN_VERSION_UNSUPPORTED', `plugin ${pluginPath}: incompatible core protocol version ${core} (Berth speaks ${CORE_PROTOCOL_VERSION})`);
  }
  if (!h.appVersions.includes(Number(app))) {
    throw new GoPluginError('GOPLUGIN_VERSION_UNSUPPORTED', `plugin ${pluginPath}: unsupported plugin protocol version ${app} (Berth speaks ${h.appVersions.join(', ')})`);
  }
  if (network !== 'unix') {
    throw new GoPluginError('GOPLUGIN_NETWORK_UNSUPPORTED', `plugin ${pluginPath}: listens on ${network} ${address}; Berth connects to plugins over unix sockets only`);
  }
  const protocol = parts[4] || 'netrpc';
  if (protocol !== 'grpc') {
    throw new GoPluginError('GOPLUGIN_VERSION_UNSUPPORTED', `plugin ${pluginPath}: speaks ${protocol}; Berth speaks grpc only`);
  }
  if ((parts[5] ?? '').length > 50) {
    throw new GoPluginError('GOPLUGIN_VERSION_UNSUPPORTED', `plugin ${pluginPath}: sent a TLS certificate (AutoMTLS), which Berth does not use`);
  }
  return { coreVersion: Number(core), appVersion: Number(app), network, address, protocol };
}

const HCLOG_LEVELS: Record<string, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  trace: 'trace',
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  error: 'error',
};

/**
 * A running go-plugin process and its gRPC channel. Lifecycle: made by
 * launchPlugin (running), ended by `shutdown()` (safe twice) or by the
 * process dying on its own; `exited` tells when, and never rejects.
 */
export class PluginProcess {
  /** The executable's file name (how the agent config names the plugin). */
  readonly name: string;
  readonly path: string;
  /** Resolves when the process has exited (and is reaped). */
  readonly exited: Promise<PluginExit>;
  #exit: PluginExit | undefined;
  #channel: Channel | undefined;
  #appVersion = 0;
  #shutdown: Promise<void> | undefined;
  readonly #child: ChildProcess;
  readonly #logger: Logger;
  readonly #stderrTail: string[] = [];
  #stdoutLines: ((line: string, eof: boolean) => void) | undefined;
  #spawnError: Error | undefined;
  #drained: Promise<void>;

  /** @internal made by launchPlugin. */
  constructor(name: string, pluginPath: string, child: ChildProcess, logger: Logger) {
    this.name = name;
    this.path = pluginPath;
    this.#child = child;
    this.#logger = logger;
    this.exited = new Promise<PluginExit>((resolve) => {
      const done = (code: number | null, signal: NodeJS.Signals | null): void => {
        if (this.#exit) return;
        this.#exit = { code, signal };
        resolve(this.#exit);
      };
      child.once('error', (err) => {
        this.#spawnError = err;
        if (child.pid === undefined) done(null, null);
      });
      // 'exit', not 'close': a task the plugin started may hold its stdio pipes open.
      child.once('exit', done);
    });
    this.#drained = new Promise<void>((resolve) => {
      child.once('close', () => resolve());
      child.once('error', () => child.pid === undefined && resolve());
    });
    void this.exited.then((exit) => {
      // Before shutdown() and after a successful launch, an exit is a crash the agent should hear of.
      if (this.#shutdown || !this.#channel) logger.debug({ code: exit.code, signal: exit.signal }, 'plugin exited');
      else logger.warn({ code: exit.code, signal: exit.signal }, 'plugin exited unexpectedly');
    });
    lines(child.stdout, (line, eof) => {
      if (this.#stdoutLines) this.#stdoutLines(line, eof);
      else if (line) logger.debug({ stream: 'stdout' }, line);
    });
    lines(child.stderr, (line) => {
      if (!line) return;
      this.#stderrTail.push(line);
      if (this.#stderrTail.length > 20) this.#stderrTail.shift();
      this.#logStderr(line);
    });
  }

  /** The process id (undefined if it never started). */
  get pid(): number | undefined {
    return this.#child.pid;
  }
  /** The negotiated app protocol version. */
  get appVersion(): number {
    return this.#appVersion;
  }
  /** True until the process has exited. */
  get running(): boolean {
    return this.#exit === undefined;
  }
  /** The gRPC channel to the plugin (for the service clients). Throws once the process has exited and the channel closed. */
  get channel(): Channel {
    if (!this.#channel) throw new GoPluginError('GOPLUGIN_EXITED', `plugin ${this.path} is not connected`);
    return this.#channel;
  }
  /** The last lines the plugin wrote to stderr (for error messages). */
  get stderrTail(): readonly string[] {
    return this.#stderrTail;
  }

  #logStderr(line: string): void {
    if (line.startsWith('{')) {
      try {
        const rec = JSON.parse(line) as Record<string, unknown>;
        const { '@level': lvl, '@message': msg, '@timestamp': _ts, '@module': mod, ...fields } = rec;
        const level = HCLOG_LEVELS[String(lvl)] ?? 'debug';
        this.#logger[level]({ ...fields, ...(mod ? { module: mod } : {}) }, typeof msg === 'string' ? msg : line);
        return;
      } catch {
        // not hclog JSON: a plain line
      }
    }
    this.#logger.debug({ stream: 'stderr' }, line);
  }

  /** @internal the first stdout line, or a GoPluginError. */
  readHandshake(deadline: AbortSignal, signal: AbortSignal | undefined, timeoutMs: number): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      let partial = '';
      const finish = (fn: () => void): void => {
        this.#stdoutLines = undefined;
        deadline.removeEventListener('abort', onAbort);
        fn();
      };
      const onAbort = (): void =>
        finish(() => reject(signal?.aborted ? new AbortedError(`launch of plugin ${this.path} aborted`, { cause: signal.reason }) : new GoPluginError('GOPLUGIN_HANDSHAKE_TIMEOUT', `plugin ${this.path}: no handshake line within ${timeoutMs} ms`)));
      if (deadline.aborted) return onAbort();
      deadline.addEventListener('abort', onAbort, { once: true });
      this.#stdoutLines = (line, eof) => {
        if (!eof) return finish(() => resolve(line));
        partial = line;
        // stdout closed without a full line: wait for the exit to tell the story.
        void this.#afterDrain().then(() => finish(() => reject(this.#exitedError('before its handshake', partial))));
      };
      // On exit, let what it printed arrive first: its handshake line may still be in the pipe.
      void this.#afterDrain().then(() => {
        if (this.#stdoutLines) finish(() => reject(this.#exitedError('before its handshake', partial)));
      });
    });
  }

  /** Resolves once the process exited and its output arrived (or 500 ms after the exit, if a child holds the pipes). */
  async #afterDrain(): Promise<void> {
    await this.exited;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#drained, new Promise<void>((r) => (timer = setTimeout(r, 500)))]);
    clearTimeout(timer);
  }

  #exitedError(when: string, partial: string): GoPluginError {
    const tail = this.#stderrTail.join('\n');
    if (this.#spawnError) return new GoPluginError('GOPLUGIN_START_FAILED', `plugin ${this.path}: cannot start: ${this.#spawnError.message}`, { cause: this.#spawnError });
    if (tail.includes('This binary is a plugin')) {
      return new GoPluginError('GOPLUGIN_COOKIE_REJECTED', `plugin ${this.path}: refused to run: the magic cookie did not match (it is not a plugin for this host's protocol)`);
    }
    if (partial) return new GoPluginError('GOPLUGIN_BAD_HANDSHAKE', `plugin ${this.path}: unrecognized handshake line ${JSON.stringify(partial.slice(0, 200))} (truncated: the plugin exited)`);
    const how = this.#exit?.signal ? `signal ${this.#exit.signal}` : `code ${this.#exit?.code}`;
    return new GoPluginError('GOPLUGIN_EXITED', `plugin ${this.path}: exited ${when} (${how})${tail ? `: ${tail.split('\n').slice(-3).join(' | ')}` : ''}`);
  }

  /** @internal dials the socket and checks health; starts the stdio stream. */
  async connect(hs: HandshakeLine, deadline: AbortSignal, signal: AbortSignal | undefined, timeoutMs: number, onStdio: LaunchOptions['onStdio']): Promise<void> {
    this.#appVersion = hs.appVersion;
    const { createChannel, createClient } = await loadNiceGrpc();
    this.#channel = createChannel(`unix://${hs.address}`, undefined, { 'grpc.max_receive_message_length': 16 * 1024 * 1024, 'grpc.enable_retries': 0 });
    const health = createClient(HealthDefinition, this.#channel);
    const exitedEarly = this.#afterDrain().then(() => {
      throw this.#exitedError('after its handshake', '');
    });
    try {
      const res = await Promise.race([this.#checkUntilReachable(health, deadline), exitedEarly]);
      if (res.status !== HealthCheckResponse_ServingStatus.SERVING) {
        throw new GoPluginError('GOPLUGIN_UNHEALTHY', `plugin ${this.path}: health check of service "plugin" answered ${HealthCheckResponse_ServingStatus[res.status] ?? res.status}`);
      }
    } catch (err) {
      if (err instanceof GoPluginError) throw err;
      if (!this.running) {
        await this.#afterDrain();
        throw this.#exitedError('after its handshake', '');
      }
      if (signal?.aborted) throw new AbortedError(`launch of plugin ${this.path} aborted`, { cause: signal.reason });
      if (deadline.aborted) throw new GoPluginError('GOPLUGIN_HANDSHAKE_TIMEOUT', `plugin ${this.path}: no health answer within ${timeoutMs} ms`);
      throw new GoPluginError('GOPLUGIN_UNHEALTHY', `plugin ${this.path}: health check failed: ${(err as Error).message}`, { cause: err });
    } finally {
      exitedEarly.catch(() => undefined);
    }
    void this.#streamStdio(onStdio);
  }

  // go-plugin dials with grpc.WithBlock: the socket may not accept yet. Retry
  // UNAVAILABLE while the process runs and the deadline allows.
  async #checkUntilReachable(health: HealthClient, deadline: AbortSignal): Promise<HealthCheckResponse> {
    for (let delayMs = 10; ; delayMs = Math.min(delayMs * 2, 200)) {
      try {
        return await health.check({ service: 'plugin' }, { signal: deadline });
      } catch (err) {
        const { ClientError, Status } = niceGrpc();
        if (!(err instanceof ClientError && err.code === Status.UNAVAILABLE) || !this.running || deadline.aborted) throw err;
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delayMs);
        void this.exited.then(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }

  async #streamStdio(onStdio: LaunchOptions['onStdio']): Promise<void> {
    const { createClient, ClientError, Status } = niceGrpc();
    const stdio = createClient(GRPCStdioDefinition, this.channel);
    const stop = new AbortController();
    void this.exited.then(() => stop.abort());
    const sink =
      onStdio ??
      ((ch: 'stdout' | 'stderr', data: Uint8Array): void => {
        for (const line of Buffer.from(data).toString('utf8').split('\n')) if (line) this.#logger.debug({ stream: ch, via: 'stdio' }, line);
      });
    try {
      for await (const chunk of stdio.streamStdio({}, { signal: stop.signal })) {
        if (chunk.channel === StdioData_Channel.STDOUT) sink('stdout', chunk.data);
        else if (chunk.channel === StdioData_Channel.STDERR) sink('stderr', chunk.data);
      }
    } catch (err) {
      // UNIMPLEMENTED: a plugin without GRPCStdio (as go-plugin tolerates). Anything else: the plugin is going away.
      if (err instanceof ClientError && err.code === Status.UNIMPLEMENTED) this.#logger.debug('plugin does not serve GRPCStdio');
    }
  }

  /**
   * Asks the plugin to exit through GRPCController.Shutdown (an UNAVAILABLE
   * or CANCELLED answer, the plugin closing first, is success), waits up to
   * `graceMs` (default 2 s) for the process to exit, then kills it
   * (SIGKILL: a plugin ignores SIGINT by design). Resolves once the process
   * is reaped and the channel closed. Safe to call twice and after the
   * process died on its own. Never rejects.
   */
  shutdown(opts: { graceMs?: number } = {}): Promise<void> {
    this.#shutdown ??= this.#doShutdown(opts.graceMs ?? 2_000);
    return this.#shutdown;
  }

  async #doShutdown(graceMs: number): Promise<void> {
    if (this.running && this.#channel) {
      const { createClient, ClientError, Status } = niceGrpc();
      const controller = createClient(GRPCControllerDefinition, this.#channel);
      const grace = AbortSignal.timeout(graceMs);
      try {
        await Promise.race([controller.shutdown({}, { signal: grace }), this.exited]);
      } catch (err) {
        const code = err instanceof ClientError ? err.code : undefined;
        if (code !== Status.UNAVAILABLE && code !== Status.CANCELLED) this.#logger.debug({ err: (err as Error).message }, 'plugin shutdown call failed; killing it');
      }
      const timer = new Promise<'timeout'>((resolve) => {
        const t = setTimeout(() => resolve('timeout'), graceMs);
        void this.exited.then(() => clearTimeout(t));
      });
      if ((await Promise.race([this.exited, timer])) === 'timeout') {
        this.#logger.warn({ graceMs }, 'plugin did not exit after shutdown; killing it');
        this.kill();
      }
    } else if (this.running) {
      this.kill();
    }
    await this.exited;
    this.closeChannel();
  }

  /** SIGKILLs the process now (no-op once it exited). Does not wait: await `exited`. */
  kill(): void {
    if (this.running && this.#child.pid !== undefined) this.#child.kill('SIGKILL');
  }

  /** @internal */
  closeChannel(): void {
    this.#channel?.close();
  }
}

/** Calls `onLine` per line of `stream`; on end, once more with the unterminated rest and eof=true. */
function lines(stream: NodeJS.ReadableStream | null, onLine: (line: string, eof: boolean) => void): void {
  if (!stream) return;
  let buf = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    buf += chunk;
    // A line without end (garbage on stdout) is cut rather than held without bound.
    if (buf.length > 64 * 1024 && !buf.includes('\n')) {
      onLine(buf, false);
      buf = '';
      return;
    }
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).replace(/\r$/, '');
      buf = buf.slice(nl + 1);
      onLine(line, false);
    }
  });
  stream.on('end', () => onLine(buf, true));
}
