import type { Metadata } from 'nice-grpc';
import { BasePluginDefinition } from '../../gen/nomad/plugins/base/proto/base.js';
import { DriverDefinition, type DriverServiceImplementation, type ExecTaskStreamingResponse } from '../../gen/nomad/plugins/drivers/proto/driver.js';
import { silentLogger, type Logger } from '../../lib/index.js';
import { basePluginService, served } from '../base/index.js';
import { NOMAD_HANDSHAKE, servePlugin, type PluginServer } from '../goplugin/index.js';
import { specToProto } from '../hclspec/index.js';
import * as c from './_convert.js';
import { AsyncQueue } from './_queue.js';
import type * as t from './driver-plugin.js';

/** What a driver may add to be served: a hook for the host's Shutdown. */
export interface ServableDriver extends t.DriverPlugin {
  /** Called when the host shuts the plugin down (Driver.Shutdown or GRPCController.Shutdown); best effort. */
  shutdown?(): Promise<void> | void;
}

export interface ServeDriverOptions {
  readonly logger?: Logger;
  /** The environment the host gave (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
  /** Where the handshake line goes (default stdout). */
  readonly writeHandshake?: (line: string) => void;
}

/**
 * Serves `impl` as a Nomad driver plugin: go-plugin's handshake and services
 * (servePlugin) plus BasePlugin and Driver over it. This is what a plugin
 * process runs (`berth driver serve raw_exec`); resolves once serving, and
 * the returned server's `stopped` resolves when the host has shut it down
 * (the process should then exit). Throws GoPluginError
 * `GOPLUGIN_NOT_A_PLUGIN` when not started by a host (print its message to
 * stderr and exit 1, as go-plugin does). Stdout carries the handshake line:
 * the process must log to stderr (the host logs those lines, hclog JSON or
 * plain), never to stdout.
 */
export function serveDriverPlugin(impl: ServableDriver, opts: ServeDriverOptions = {}): Promise<PluginServer> {
  const logger = opts.logger ?? silentLogger();
  return servePlugin({
    handshake: NOMAD_HANDSHAKE,
    logger,
    env: opts.env,
    writeHandshake: opts.writeHandshake,
    onShutdown: () => impl.shutdown?.(),
    register: (server) => {
      server.add(BasePluginDefinition, basePluginService(impl));
      server.add(DriverDefinition, driverService(impl, logger));
    },
  });
}

/** Turns errors of a server stream into gRPC statuses. */
async function* servedStream<T>(trailer: Metadata, source: () => AsyncIterable<T>, opts?: { recoverableDetail?: boolean }): AsyncGenerator<T, void, undefined> {
  try {
    yield* source();
  } catch (err) {
    await served(trailer, () => Promise.reject(err), opts);
  }
}

/** The Driver gRPC service over any DriverPlugin (Nomad plugins/drivers/server.go). */
export function driverService(impl: ServableDriver, logger: Logger): DriverServiceImplementation {
  return {
    init: async () => ({}),
    taskConfigSchema: (_req, ctx) =>
      served(ctx.trailer, async () => {
        const spec = await impl.taskConfigSchema({ signal: ctx.signal });
        return { spec: spec ? specToProto(spec) : undefined };
      }),
    capabilities: (_req, ctx) => served(ctx.trailer, async () => ({ capabilities: c.capabilitiesToProto(await impl.capabilities({ signal: ctx.signal })) })),
    fingerprint: (_req, ctx) =>
      servedStream(ctx.trailer, async function* () {
        for await (const f of impl.fingerprint({ signal: ctx.signal })) yield c.fingerprintToProto(f);
      }),
    recoverTask: (req, ctx) =>
      served(ctx.trailer, async () => {
        await impl.recoverTask(c.taskHandleFromProto(req.handle), { signal: ctx.signal });
        return {};
      }),
    startTask: (req, ctx) =>
      served(
        ctx.trailer,
        async () => {
          const { handle, network } = await impl.startTask(c.taskConfigFromProto(req.task), { signal: ctx.signal });
          return { handle: c.taskHandleToProto(handle), networkOverride: c.driverNetworkToProto(network) };
        },
        { recoverableDetail: true },
      ),
    waitTask: (req, ctx) =>
      served(ctx.trailer, async () => {
        const res = await impl.waitTask(req.taskId, { signal: ctx.signal });
        return { result: c.exitToProto(res), err: res.err ?? '' };
      }),
    stopTask: (req, ctx) =>
      served(ctx.trailer, async () => {
        await impl.stopTask(req.taskId, c.durationFromProto(req.timeout), req.signal, { signal: ctx.signal });
        return {};
      }),
    destroyTask: (req, ctx) =>
      served(ctx.trailer, async () => {
        await impl.destroyTask(req.taskId, req.force, { signal: ctx.signal });
        return {};
      }),
    inspectTask: (req, ctx) => served(ctx.trailer, async () => c.taskStatusToProto(await impl.inspectTask(req.taskId, { signal: ctx.signal }))),
    taskStats: (req, ctx) =>
      servedStream(
        ctx.trailer,
        async function* () {
          for await (const s of impl.taskStats(req.taskId, c.durationFromProto(req.collectionInterval), { signal: ctx.signal })) yield c.statsToProto(s);
        },
        { recoverableDetail: true },
      ),
    taskEvents: (_req, ctx) =>
      servedStream(ctx.trailer, async function* () {
        for await (const e of impl.taskEvents({ signal: ctx.signal })) yield c.eventToProto(e);
      }),
    shutdown: (_req, ctx) =>
      served(ctx.trailer, async () => {
        await impl.shutdown?.();
        return {};
      }),
    signalTask: (req, ctx) =>
      served(ctx.trailer, async () => {
        await impl.signalTask(req.taskId, req.signal, { signal: ctx.signal });
        return {};
      }),
    execTask: (req, ctx) =>
      served(ctx.trailer, async () => {
        const res = await impl.execTask(req.taskId, req.command, c.durationFromProto(req.timeout), { signal: ctx.signal });
        return { stdout: Buffer.from(res.stdout), stderr: Buffer.from(res.stderr), result: c.exitToProto(res.exitResult) };
      }),
    execTaskStreaming: (requests, ctx) =>
      servedStream(ctx.trailer, async function* () {
        const iter = requests[Symbol.asyncIterator]();
        const first = await iter.next();
        if (first.done || !first.value.setup) throw new Error('first message should always be setup');
        const setup = first.value.setup;
        const stdin = new AsyncQueue<Uint8Array>();
        const resize = new AsyncQueue<t.TerminalSize>();
        const out = new AsyncQueue<Partial<ExecTaskStreamingResponse>>();
        // Demultiplex the rest of the request stream into stdin and terminal sizes.
        void (async () => {
          try {
            for (let next = await iter.next(); !next.done; next = await iter.next()) {
              const m = next.value;
              if (m.ttySize) resize.push({ height: m.ttySize.height, width: m.ttySize.width });
              if (m.stdin?.data.length) stdin.push(new Uint8Array(m.stdin.data));
              if (m.stdin?.close) stdin.end();
            }
          } catch {
            // the host cancelled the call
          } finally {
            stdin.end();
            resize.end();
          }
        })();
        const running = impl
          .execTaskStreaming(
            setup.taskId,
            {
              command: setup.command,
              tty: setup.tty,
              stdin,
              resize,
              stdout: (data) => out.push({ stdout: { data: Buffer.from(data), close: false } }),
              stderr: (data) => out.push({ stderr: { data: Buffer.from(data), close: false } }),
            },
            { signal: ctx.signal },
          )
          .then(
            (result) => {
              out.push({ exited: true, result: c.exitToProto(result) });
              out.end();
            },
            (err: unknown) => out.fail(err),
          );
        try {
          for await (const res of out) yield res as ExecTaskStreamingResponse;
        } finally {
          stdin.end();
          resize.end();
          await running.catch((err: unknown) => logger.debug({ err: String(err) }, 'exec stream ended with an error'));
        }
      }),
    createNetwork: (req, ctx) =>
      served(ctx.trailer, async () => {
        const res = await impl.createNetwork(req.allocId, { hostname: req.hostname }, { signal: ctx.signal });
        return { isolationSpec: c.netSpecToProto(res.spec), created: res.created };
      }),
    destroyNetwork: (req, ctx) =>
      served(ctx.trailer, async () => {
        await impl.destroyNetwork(req.allocId, c.netSpecFromProto(req.isolationSpec), { signal: ctx.signal });
        return {};
      }),
  };
}
