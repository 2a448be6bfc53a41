import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Server } from 'nice-grpc';
import { silentLogger, type Logger } from '../../lib/index.js';
import { HealthDefinition, HealthCheckResponse_ServingStatus, type HealthServiceImplementation } from '../../gen/grpc/health/v1/health.js';
import { GRPCControllerDefinition } from '../../gen/goplugin/internal/plugin/grpc_controller.js';
import { GRPCStdioDefinition, StdioData_Channel, type StdioData } from '../../gen/goplugin/internal/plugin/grpc_stdio.js';
import { GRPCBrokerDefinition } from '../../gen/goplugin/internal/plugin/grpc_broker.js';
import { GoPluginError } from './errors.js';
import { loadNiceGrpc } from './grpc-module.js';
import { formatHandshakeLine, NOT_A_PLUGIN_MESSAGE, type Handshake } from './handshake.js';

export interface ServeOptions {
  readonly handshake: Handshake;
  /** Adds the plugin's own services (base, driver...) to the gRPC server. */
  readonly register: (server: Server) => void;
  readonly logger?: Logger;
  /** The environment the host gave (default process.env): cookie, PLUGIN_PROTOCOL_VERSIONS, PLUGIN_UNIX_SOCKET_DIR. */
  readonly env?: NodeJS.ProcessEnv;
  /** Where the handshake line goes (default process.stdout). */
  readonly writeHandshake?: (line: string) => void;
  /** Ignore SIGINT while serving, as go-plugin's Serve does (default true): the host's terminal Ctrl-C reaches the plugin too, and the host decides when it stops. */
  readonly ignoreSigint?: boolean;
  /** Called once when the host asks the plugin to exit (GRPCController.Shutdown), before the server stops. */
  readonly onShutdown?: () => Promise<void> | void;
}

/** A plugin being served; `stopped` resolves once it no longer serves (the caller then exits). */
export interface PluginServer {
  readonly socketPath: string;
  readonly appVersion: number;
  readonly stopped: Promise<void>;
  /** Forwards output to the host over GRPCStdio (what go-plugin does with os.Stdout/os.Stderr). */
  writeStdio(channel: 'stdout' | 'stderr', data: Uint8Array): void;
  /** Stops serving (in-flight calls are cancelled) and removes the socket. Safe twice. */
  stop(): Promise<void>;
}

/**
 * The plugin side of go-plugin (go-plugin server.go Serve): checks the
 * magic cookie (GoPluginError `GOPLUGIN_NOT_A_PLUGIN` with go-plugin's
 * message, for the caller to print to stderr and exit 1), picks the app
 * protocol version from PLUGIN_PROTOCOL_VERSIONS, listens on a unix socket
 * in a fresh temp dir, serves grpc.health.v1 ("plugin" SERVING),
 * GRPCController (Shutdown stops the server), GRPCStdio and GRPCBroker plus
 * what `register` adds, then prints the handshake line. Resolves once the
 * line is printed.
 */
export async function servePlugin(opts: ServeOptions): Promise<PluginServer> {
  const env = opts.env ?? process.env;
  const logger = (opts.logger ?? silentLogger()).child({ component: 'go-plugin-serve' });
  if (env[opts.handshake.cookieKey] !== opts.handshake.cookieValue) {
    throw new GoPluginError('GOPLUGIN_NOT_A_PLUGIN', NOT_A_PLUGIN_MESSAGE.trimEnd());
  }
  const offered = (env.PLUGIN_PROTOCOL_VERSIONS ?? '').split(',').filter(Boolean).map(Number);
  const common = opts.handshake.appVersions.filter((v) => offered.includes(v));
  const appVersion = common.length > 0 ? Math.max(...common) : (opts.handshake.appVersions[opts.handshake.appVersions.length - 1] ?? 1);

  const dir = mkdtempSync(path.join(env.PLUGIN_UNIX_SOCKET_DIR || tmpdir(), 'plugin'));
  const socketPath = path.join(dir, 'plugin.sock');
  const { createServer, ServerError, Status } = await loadNiceGrpc();
  const server = createServer();
  const stdioSubscribers = new Set<(d: StdioData) => void>();
  const stopping = new AbortController();
  let stopPromise: Promise<void> | undefined;
  let resolveStopped!: () => void;
  const stopped = new Promise<void>((r) => (resolveStopped = r));
  const sigint = (): void => logger.debug('plugin received SIGINT; ignoring (the host stops plugins through GRPCController)');
  const ignoreSigint = opts.ignoreSigint ?? true;

  const stop = (): Promise<void> => {
    stopPromise ??= (async () => {
      stopping.abort();
      server.forceShutdown();
      rmSync(dir, { recursive: true, force: true });
      if (ignoreSigint) process.off('SIGINT', sigint);
      resolveStopped();
    })();
    return stopPromise;
  };

  const health: HealthServiceImplementation = {
    async check(req) {
      if (req.service === '' || req.service === 'plugin') return { status: HealthCheckResponse_ServingStatus.SERVING };
      throw new ServerError(Status.NOT_FOUND, 'unknown service');
    },
    async *watch(req, ctx) {
      yield { status: req.service === '' || req.service === 'plugin' ? HealthCheckResponse_ServingStatus.SERVING : HealthCheckResponse_ServingStatus.SERVICE_UNKNOWN };
      await untilAborted(AbortSignal.any([ctx.signal, stopping.signal]));
    },
  };
  server.add(HealthDefinition, health);
  server.add(GRPCControllerDefinition, {
    async shutdown() {
      logger.debug('host asked the plugin to shut down');
      try {
        await opts.onShutdown?.();
      } finally {
        // Answer first where possible; the host reads UNAVAILABLE as success too.
        setImmediate(() => void stop());
      }
      return {};
    },
  });
  server.add(GRPCStdioDefinition, {
    async *streamStdio(_req, ctx) {
      const queue: StdioData[] = [];
      let wake: (() => void) | undefined;
      const sub = (d: StdioData): void => {
        queue.push(d);
        wake?.();
      };
      stdioSubscribers.add(sub);
      const done = AbortSignal.any([ctx.signal, stopping.signal]);
      done.addEventListener('abort', () => wake?.(), { once: true });
      try {
        while (!done.aborted) {
          const next = queue.shift();
          if (next) yield next;
          else await new Promise<void>((r) => (wake = r));
        }
      } finally {
        stdioSubscribers.delete(sub);
      }
    },
  });
  server.add(GRPCBrokerDefinition, {
    // Nomad's driver protocol opens no brokered connections: keep the stream open, answer nothing.
    // eslint-disable-next-line require-yield
    async *startStream(requests, ctx) {
      const done = AbortSignal.any([ctx.signal, stopping.signal]);
      void (async () => {
        try {
          for await (const _ of requests) if (done.aborted) break;
        } catch {
          // the host went away
        }
      })();
      await untilAborted(done);
    },
  });
  opts.register(server);
  await server.listen(`unix://${socketPath}`);
  if (ignoreSigint) process.on('SIGINT', sigint);
  const line = formatHandshakeLine(appVersion, socketPath);
  (opts.writeHandshake ?? ((l: string) => process.stdout.write(`${l}\n`)))(line);
  logger.debug({ socketPath, appVersion }, 'plugin serving');
  return {
    socketPath,
    appVersion,
    stopped,
    stop,
    writeStdio(channel, data) {
      const d: StdioData = { channel: channel === 'stdout' ? StdioData_Channel.STDOUT : StdioData_Channel.STDERR, data: Buffer.from(data) };
      for (const sub of stdioSubscribers) sub(d);
    },
  };
}

function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
