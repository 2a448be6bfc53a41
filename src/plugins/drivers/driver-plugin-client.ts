import type { Channel, Client } from 'nice-grpc';
import { DriverDefinition, StartTaskResponse_Result, type ExecTaskStreamingRequest } from '../../gen/nomad/plugins/drivers/proto/driver.js';
import { silentLogger, type Logger } from '../../lib/index.js';
import { BasePluginClient, DRIVER_API_VERSION, DriverPluginError, PluginConnection, type CallOptions, type PluginConfig, type PluginInfo } from '../base/index.js';
import { launchPlugin, niceGrpc, NOMAD_HANDSHAKE, type LaunchOptions, type PluginProcess } from '../goplugin/index.js';
import { type Spec, specFromProto } from '../hclspec/index.js';
import * as c from './_convert.js';
import { AsyncQueue } from './_queue.js';
import type * as t from './driver-plugin.js';

export interface DriverPluginClientOptions {
  readonly channel: Channel;
  /** How errors name the plugin (its executable's file name). */
  readonly plugin: string;
  /** Resolves when the plugin process is gone: every call then fails with DRIVER_PLUGIN_SHUTDOWN. */
  readonly exited?: Promise<unknown>;
}

/**
 * A driver plugin process seen as a DriverPlugin (Nomad
 * plugins/drivers/client.go): each method is one RPC on the plugin's
 * channel, protobuf converted at this edge. Every method throws
 * DriverPluginError — `DRIVER_PLUGIN_SHUTDOWN` at once when the plugin has
 * exited (streams included, which then throw instead of hanging) — or
 * AbortedError when the caller's signal fired (streams end quietly instead).
 */
export class DriverPluginClient implements t.DriverPlugin {
  readonly plugin: string;
  readonly #conn: PluginConnection;
  readonly #base: BasePluginClient;
  readonly #client: Client<typeof DriverDefinition>;

  constructor(opts: DriverPluginClientOptions) {
    this.plugin = opts.plugin;
    this.#conn = new PluginConnection({ channel: opts.channel, plugin: opts.plugin, exited: opts.exited });
    this.#base = new BasePluginClient(this.#conn);
    // A channel exists only once its plugin was launched, which loaded nice-grpc.
    this.#client = niceGrpc().createClient(DriverDefinition, opts.channel);
  }

  /** True once the plugin is known to be gone. */
  get shutDown(): boolean {
    return this.#conn.shutDown;
  }

  /** Marks the plugin gone (calls fail with DRIVER_PLUGIN_SHUTDOWN). Does not stop the process. Safe twice. */
  close(): void {
    this.#conn.close();
  }

  pluginInfo(opts?: CallOptions): Promise<PluginInfo> {
    return this.#base.pluginInfo(opts);
  }
  configSchema(opts?: CallOptions): Promise<Spec | undefined> {
    return this.#base.configSchema(opts);
  }
  setConfig(config: PluginConfig, opts?: CallOptions): Promise<void> {
    return this.#base.setConfig(config, opts);
  }

  async taskConfigSchema(opts?: CallOptions): Promise<Spec | undefined> {
    const res = await this.#conn.unary('TaskConfigSchema', (o) => this.#client.taskConfigSchema({}, o), opts);
    return res.spec ? specFromProto(res.spec) : undefined;
  }

  async capabilities(opts?: CallOptions): Promise<t.Capabilities> {
    const res = await this.#conn.unary('Capabilities', (o) => this.#client.capabilities({}, o), opts);
    return c.capabilitiesFromProto(res.capabilities);
  }

  async *fingerprint(opts?: t.StreamOptions): AsyncIterable<t.Fingerprint> {
    for await (const f of this.#conn.stream('Fingerprint', (o) => this.#client.fingerprint({}, o), opts)) yield c.fingerprintFromProto(f);
  }

  async recoverTask(handle: t.TaskHandle, opts?: CallOptions): Promise<void> {
    await this.#conn.unary('RecoverTask', (o) => this.#client.recoverTask({ taskId: handle.config.id, handle: c.taskHandleToProto(handle) }, o), opts);
  }

  async startTask(config: t.TaskConfig, opts?: CallOptions): Promise<t.StartTaskResult> {
    const res = await this.#conn.unary('StartTask', (o) => this.#client.startTask({ task: c.taskConfigToProto(config) }, o), opts);
    // The pre-status form of failure (still in the protocol): a result code and a message.
    if (res.result === StartTaskResponse_Result.RETRY || res.result === StartTaskResponse_Result.FATAL) {
      throw new DriverPluginError('DRIVER_PLUGIN_FAILED', `plugin ${this.plugin}: StartTask: ${res.driverErrorMsg || 'failed'}`, { recoverable: res.result === StartTaskResponse_Result.RETRY });
    }
    const network = c.driverNetworkFromProto(res.networkOverride);
    return { handle: c.taskHandleFromProto(res.handle), ...(network ? { network } : {}) };
  }

  async waitTask(taskId: string, opts?: CallOptions): Promise<t.ExitResult> {
    const res = await this.#conn.unary('WaitTask', (o) => this.#client.waitTask({ taskId }, o), opts);
    return c.exitFromProto(res.result, res.err);
  }

  async stopTask(taskId: string, timeoutMs: number, signal: string, opts?: CallOptions): Promise<void> {
    await this.#conn.unary('StopTask', (o) => this.#client.stopTask({ taskId, timeout: c.durationToProto(timeoutMs), signal }, o), opts);
  }

  async destroyTask(taskId: string, force: boolean, opts?: CallOptions): Promise<void> {
    await this.#conn.unary('DestroyTask', (o) => this.#client.destroyTask({ taskId, force }, o), opts);
  }

  async inspectTask(taskId: string, opts?: CallOptions): Promise<t.TaskStatus> {
    const res = await this.#conn.unary('InspectTask', (o) => this.#client.inspectTask({ taskId }, o), opts);
    return c.taskStatusFromProto(res);
  }

  async *taskStats(taskId: string, intervalMs: number, opts?: t.StreamOptions): AsyncIterable<t.TaskResourceUsage> {
    const req = { taskId, collectionInterval: c.durationToProto(intervalMs) };
    for await (const s of this.#conn.stream('TaskStats', (o) => this.#client.taskStats(req, o), opts)) yield c.statsFromProto(s);
  }

  async *taskEvents(opts?: t.StreamOptions): AsyncIterable<t.TaskEvent> {
    for await (const e of this.#conn.stream('TaskEvents', (o) => this.#client.taskEvents({}, o), opts)) yield c.eventFromProto(e);
  }

  async signalTask(taskId: string, signal: string, opts?: CallOptions): Promise<void> {
    await this.#conn.unary('SignalTask', (o) => this.#client.signalTask({ taskId, signal }, o), opts);
  }

  async execTask(taskId: string, command: readonly string[], timeoutMs: number, opts?: CallOptions): Promise<t.ExecTaskResult> {
    const res = await this.#conn.unary('ExecTask', (o) => this.#client.execTask({ taskId, command: [...command], timeout: c.durationToProto(timeoutMs) }, o), opts);
    return { stdout: new Uint8Array(res.stdout), stderr: new Uint8Array(res.stderr), exitResult: c.exitFromProto(res.result) };
  }

  /**
   * One bidirectional ExecTaskStreaming call: sends the setup, then stdin
   * (a `close` once it ends) and terminal sizes as they come; hands stdout
   * and stderr to the callbacks; resolves with the exit. Throws
   * DRIVER_PLUGIN_SHUTDOWN if the plugin dies meanwhile, DRIVER_PLUGIN_FAILED
   * if the stream ends without an exit.
   */
  async execTaskStreaming(taskId: string, exec: t.ExecOptions, opts?: CallOptions): Promise<t.ExitResult> {
    const requests = new AsyncQueue<Partial<ExecTaskStreamingRequest>>();
    requests.push({ setup: { taskId, command: [...exec.command], tty: exec.tty } });
    const pumps: Promise<void>[] = [];
    if (exec.stdin) {
      const stdin = exec.stdin;
      pumps.push(
        (async () => {
          for await (const data of stdin) {
            if (requests.ended) return;
            requests.push({ stdin: { data: Buffer.from(data), close: false } });
          }
          requests.push({ stdin: { data: Buffer.alloc(0), close: true } });
        })(),
      );
    }
    if (exec.resize) {
      const resize = exec.resize;
      pumps.push(
        (async () => {
          for await (const size of resize) {
            if (requests.ended) return;
            requests.push({ ttySize: { height: size.height, width: size.width } });
          }
        })(),
      );
    }
    for (const p of pumps) p.catch(() => requests.end());
    try {
      return await this.#conn.unary(
        'ExecTaskStreaming',
        async (o) => {
          for await (const res of this.#client.execTaskStreaming(requests as AsyncIterable<ExecTaskStreamingRequest>, o)) {
            if (res.stdout?.data.length) exec.stdout(new Uint8Array(res.stdout.data));
            if (res.stderr?.data.length) exec.stderr(new Uint8Array(res.stderr.data));
            if (res.exited) return c.exitFromProto(res.result);
          }
          throw new DriverPluginError('DRIVER_PLUGIN_FAILED', `plugin ${this.plugin}: ExecTaskStreaming ended without an exit result`);
        },
        opts,
      );
    } finally {
      requests.end();
    }
  }

  async createNetwork(allocId: string, request: t.NetworkCreateRequest, opts?: CallOptions): Promise<t.CreateNetworkResult> {
    const res = await this.#conn.unary('CreateNetwork', (o) => this.#client.createNetwork({ allocId, hostname: request.hostname }, o), opts);
    const spec = c.netSpecFromProto(res.isolationSpec);
    if (!spec) throw new DriverPluginError('DRIVER_PLUGIN_INVALID', `plugin ${this.plugin}: CreateNetwork answered no isolation spec`);
    return { spec, created: res.created };
  }

  async destroyNetwork(allocId: string, spec: t.NetworkIsolationSpec | undefined, opts?: CallOptions): Promise<void> {
    await this.#conn.unary('DestroyNetwork', (o) => this.#client.destroyNetwork({ allocId, isolationSpec: c.netSpecToProto(spec) }, o), opts);
  }
}

/** A launched driver plugin: its client, its process and what it said it is. */
export interface LaunchedDriverPlugin {
  readonly driver: DriverPluginClient;
  readonly process: PluginProcess;
  readonly info: PluginInfo;
}

/**
 * Launches a driver plugin binary (go-plugin with Nomad's handshake) and
 * checks with PluginInfo that it is a driver speaking API v0.1.0. Does not
 * send SetConfig (the caller decodes the config against `configSchema()`
 * first). Throws GoPluginError from the launch, DriverPluginError
 * `DRIVER_PLUGIN_INVALID` for a non-driver (the process is then stopped).
 */
export async function launchDriverPlugin(opts: Omit<LaunchOptions, 'handshake'> & { logger?: Logger }): Promise<LaunchedDriverPlugin> {
  const plugin = await launchPlugin({ ...opts, handshake: NOMAD_HANDSHAKE, logger: opts.logger ?? silentLogger() });
  const driver = new DriverPluginClient({ channel: plugin.channel, plugin: plugin.name, exited: plugin.exited });
  try {
    const info = await driver.pluginInfo({ signal: opts.signal });
    if (info.type !== 'driver') throw new DriverPluginError('DRIVER_PLUGIN_INVALID', `plugin ${opts.path} is a ${info.type} plugin, not a driver`);
    if (!info.pluginApiVersions.includes(DRIVER_API_VERSION)) {
      throw new DriverPluginError('DRIVER_PLUGIN_INVALID', `plugin ${opts.path} speaks driver API ${info.pluginApiVersions.join(', ') || 'none'}; Berth speaks ${DRIVER_API_VERSION}`);
    }
    return { driver, process: plugin, info };
  } catch (err) {
    driver.close();
    await plugin.shutdown();
    throw err;
  }
}
