// A fake CSI plugin for tests and benchmarks: a real gRPC server on a real
// unix socket serving Identity, Controller, Node and GroupController from an
// in-memory model. It records every call, and can be told what to answer
// next or which fault to inject (STYLE.md: fakes, not mocks).
// One thing past 500 lines: the plugin's server (its lifecycle, the scripting
// API tests call, one short handler per RPC over the model); the call log is
// _call-log.ts, the script _script.ts, the storage model _model.ts.

import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { ServerInterceptingCall, type ServerInterceptor } from '@grpc/grpc-js';
import { createServer, type CallContext, type Server } from 'nice-grpc';
import { BerthError, systemClock, type Clock } from '../../../src/lib/index.js';
import type { CsiRpc, GrpcCodeName } from '../../../src/csi/index.js';
import {
  ControllerDefinition,
  ControllerServiceCapability_RPC_Type,
  GroupControllerDefinition,
  IdentityDefinition,
  NodeDefinition,
  NodeServiceCapability_RPC_Type,
  PluginCapability_Service_Type,
  PluginCapability_VolumeExpansion_Type,
  type ControllerServiceImplementation,
  type GroupControllerServiceImplementation,
  type IdentityServiceImplementation,
  type NodeServiceImplementation,
} from '../../../src/gen/csi/v1/csi.js';
import { CallLog } from './_call-log.js';
import { FakeModel, grpcError, type FakeSnapshot, type FakeVolume } from './_model.js';
import { recordedCallToJson, redactRequest } from './_record.js';
import { CallScript, type ScriptStep } from './_script.js';
import {
  DEFAULTS,
  FLUSH_MS,
  MAX_SOCKET_PATH_BYTES,
  REQUIREMENTS,
  STOP_GRACE_MS,
  type FakePluginOptions,
  type RecordedCall,
  type Requirement,
  type WaitForCallOptions,
} from './_options.js';
import { acceptsConnections, untilAborted, within } from './_wait.js';

export type { FakeSnapshot, FakeVolume } from './_model.js';
export type { FakePluginOptions, RecordedCall, WaitForCallOptions } from './_options.js';

/**
 * A CSI plugin that lives in this process. Lifecycle: `start()` listens,
 * `stop()` shuts down gracefully, `crash()` at once; either can be followed by
 * another `start()` on the same socket path, with the in-memory state kept
 * (a plugin restart). `reset()` forgets everything.
 *
 * Every call is recorded on arrival, then the next scripted step for its RPC
 * (if any) is applied, then the RPC is refused with UNIMPLEMENTED if its
 * capability is not advertised, then the in-memory model answers.
 */
export class FakePlugin {
  readonly socketPath: string;
  readonly endpoint: string;

  readonly #opts: Required<Omit<FakePluginOptions, 'socketPath'>>;
  readonly #clock: Clock;
  readonly #model: FakeModel;
  readonly #unimplemented: ReadonlySet<CsiRpc>;
  readonly #script = new CallScript();
  #probeNotReady = 0;

  readonly #log = new CallLog();
  readonly #inFlight = new Map<string, number>();
  readonly #maxInFlight = new Map<string, number>();
  /** Deadline (epoch ms) of each request message, noted by the interceptor before the handler runs. */
  readonly #deadlines = new WeakMap<object, number>();

  #server: Server | undefined;
  /** Aborted when the running server goes down: ends hung and delayed calls. */
  #lifecycle = new AbortController();
  /** Scripted steps that are taking time (delays, hangs, crashes), by kind. */
  readonly #pending = new Map<Promise<void>, ScriptStep['kind']>();
  #callsInFlight = 0;
  #idleWaiters: (() => void)[] = [];
  #transition: Promise<void> = Promise.resolve();

  /** Validates the options; throws BerthError (FAKE_CSI_BAD_SOCKET) for an unusable socket path. Does not listen. */
  constructor(opts: FakePluginOptions) {
    if (!path.isAbsolute(opts.socketPath)) {
      throw new BerthError('FAKE_CSI_BAD_SOCKET', `socketPath must be absolute: ${opts.socketPath}`);
    }
    if (Buffer.byteLength(opts.socketPath) > MAX_SOCKET_PATH_BYTES) {
      throw new BerthError('FAKE_CSI_BAD_SOCKET', `socketPath is longer than ${MAX_SOCKET_PATH_BYTES} bytes`);
    }
    this.socketPath = opts.socketPath;
    this.endpoint = `unix://${opts.socketPath}`;
    this.#opts = {
      name: opts.name ?? DEFAULTS.name,
      vendorVersion: opts.vendorVersion ?? DEFAULTS.vendorVersion,
      manifest: { ...opts.manifest },
      pluginCapabilities: [...(opts.pluginCapabilities ?? DEFAULTS.pluginCapabilities)],
      controllerCapabilities: [...(opts.controllerCapabilities ?? DEFAULTS.controllerCapabilities)],
      nodeCapabilities: [...(opts.nodeCapabilities ?? DEFAULTS.nodeCapabilities)],
      expansion: [...(opts.expansion ?? DEFAULTS.expansion)],
      nodeId: opts.nodeId ?? DEFAULTS.nodeId,
      acceptsNode: opts.acceptsNode ?? ((id) => id === (opts.nodeId ?? DEFAULTS.nodeId)),
      maxVolumesPerNode: opts.maxVolumesPerNode ?? 0,
      topology: { ...(opts.topology ?? DEFAULTS.topology) },
      clock: opts.clock ?? systemClock,
    };
    this.#clock = this.#opts.clock;
    const plugin = new Set(this.#opts.pluginCapabilities);
    const controller = new Set(this.#opts.controllerCapabilities);
    const node = new Set(this.#opts.nodeCapabilities);
    this.#model = new FakeModel({
      nodeId: this.#opts.nodeId,
      acceptsNode: this.#opts.acceptsNode,
      maxVolumesPerNode: this.#opts.maxVolumesPerNode,
      topology: this.#opts.topology,
      plugin,
      controller,
      node,
      expansion: new Set(this.#opts.expansion),
      clock: this.#clock,
    });
    const unimplemented = new Set<CsiRpc>();
    for (const [rpc, needs] of Object.entries(REQUIREMENTS) as [CsiRpc, Requirement[]][]) {
      const met = needs.every(
        (n) =>
          !n.never &&
          (!n.plugin || plugin.has(n.plugin)) &&
          (!n.controller || controller.has(n.controller)) &&
          (!n.node || node.has(n.node)),
      );
      if (!met) unimplemented.add(rpc);
    }
    this.#unimplemented = unimplemented;
  }

  // ---- lifecycle ----------------------------------------------------------

  /** True between a successful start() and the next stop()/crash(). */
  get running(): boolean {
    return this.#server !== undefined;
  }

  /**
   * Listens on the socket; resolves once the socket file exists and accepts
   * connections. A no-op when already running; safe after stop()/crash().
   * Creates the socket's parent directory if missing. Throws BerthError
   * (FAKE_CSI_LISTEN) when the socket cannot be bound.
   */
  start(): Promise<void> {
    return this.#serialize(async () => {
      if (this.#server) return;
      await mkdir(path.dirname(this.socketPath), { recursive: true });
      await rm(this.socketPath, { force: true });
      const server = createServer({ interceptors: [this.#deadlineInterceptor] });
      server.add(IdentityDefinition, this.#identity);
      server.add(ControllerDefinition, this.#controller);
      server.add(GroupControllerDefinition, this.#groupController);
      server.add(NodeDefinition, this.#node);
      try {
        await server.listen(this.endpoint);
        await acceptsConnections(this.socketPath);
      } catch (err) {
        server.forceShutdown();
        throw new BerthError('FAKE_CSI_LISTEN', `fake plugin cannot listen on ${this.socketPath}`, { cause: err });
      }
      this.#lifecycle = new AbortController();
      this.#server = server;
    });
  }

  /**
   * Graceful shutdown: stops accepting calls, lets delayed calls finish for
   * up to 500 ms, then ends the rest (hung calls end here at once; their
   * clients see UNAVAILABLE) and closes every connection. Removes the socket
   * file. Safe to call twice; never throws.
   */
  stop(): Promise<void> {
    return this.#serialize(() => this.#goDown(STOP_GRACE_MS));
  }

  /**
   * Dies at once, like a killed process: no new call is accepted, every call
   * in flight fails on the client side with UNAVAILABLE (a delayed call does
   * not reach the model), connections are closed and the socket file is
   * removed. State is kept. Safe to call twice; never throws.
   */
  crash(): Promise<void> {
    return this.#serialize(() => this.#goDown(0));
  }

  async #goDown(graceMs: number): Promise<void> {
    const server = this.#server;
    if (server) {
      this.#server = undefined;
      // Closes the listener and tells clients to go away; calls in flight go on.
      const closed = server.shutdown().then(
        () => true,
        () => false,
      );
      // Delayed calls get to finish; hung ones never would, so nobody waits for them.
      const finishing = [...this.#pending].filter(([, kind]) => kind === 'delay').map(([played]) => played);
      if (graceMs > 0 && finishing.length > 0) await within(Promise.allSettled(finishing), graceMs);
      // Ends hung and delayed calls with UNAVAILABLE. Sessions are forced
      // down only once those answers have been written, so that clients see
      // UNAVAILABLE rather than the CANCELLED a forced shutdown gives.
      this.#lifecycle.abort();
      await Promise.allSettled(this.#pending.keys());
      await within(closed, FLUSH_MS);
      server.forceShutdown();
    }
    await rm(this.socketPath, { force: true });
  }

  #serialize(op: () => Promise<void>): Promise<void> {
    const next = this.#transition.then(op, op);
    this.#transition = next.catch(() => undefined);
    return next;
  }

  // ---- recorded calls -------------------------------------------------------

  /** Every call since the last clearCalls()/reset(), in arrival order. A live view: do not modify. */
  get calls(): readonly RecordedCall[] {
    return this.#log.calls;
  }

  /** The calls to `rpc`, in arrival order (a copy). */
  callsTo(rpc: CsiRpc): RecordedCall[] {
    return this.#log.callsTo(rpc);
  }

  /** Forgets recorded calls; waitForCall counts start again from zero. */
  clearCalls(): void {
    this.#log.clear();
  }

  /**
   * Resolves with the `count`-th call to `rpc` as soon as it has arrived (at
   * once if it already has), before the fake answers it. Rejects with
   * BerthError FAKE_CSI_WAIT_TIMEOUT after `timeoutMs` (default 5000) or
   * FAKE_CSI_WAIT_ABORTED when `signal` fires.
   */
  waitForCall(rpc: CsiRpc, opts: WaitForCallOptions = {}): Promise<RecordedCall> {
    return this.#log.waitFor(rpc, opts);
  }

  #record(rpc: CsiRpc, request: object): void {
    const call: RecordedCall = { rpc, request: redactRequest(request), at: this.#clock.now() };
    const deadline = this.#deadlines.get(request);
    if (deadline !== undefined) call.deadline = deadline - Date.now();
    Object.defineProperty(call, 'toJSON', { value: recordedCallToJson, enumerable: false });
    this.#log.add(call);
  }

  // ---- scripting ----------------------------------------------------------

  /** The next `times` calls to `rpc` fail with `code` (and `message`), before reaching the model. */
  failNext(rpc: CsiRpc, code: GrpcCodeName, message?: string, times = 1): void {
    this.#script.push(rpc, { kind: 'fail', code, message: message ?? `fake plugin: scripted ${code}` }, times);
  }

  /** The next `times` calls to `rpc` wait `ms` (real time), then answer normally; a cancelled call stops waiting. */
  delayNext(rpc: CsiRpc, ms: number, times = 1): void {
    this.#script.push(rpc, { kind: 'delay', ms }, times);
  }

  /** The next `times` calls to `rpc` never answer; each ends when the client cancels, its deadline passes or the server goes down. */
  hangNext(rpc: CsiRpc, times = 1): void {
    this.#script.push(rpc, { kind: 'hang' }, times);
  }

  /** The next `times` calls to `rpc` answer exactly `response` (a DeepPartial of the generated response type). */
  answerNext(rpc: CsiRpc, response: unknown, times = 1): void {
    this.#script.push(rpc, { kind: 'answer', response }, times);
  }

  /** The next call to `rpc` crashes the whole server (see crash()) before it is answered. */
  crashOn(rpc: CsiRpc): void {
    this.#script.push(rpc, { kind: 'crash' }, 1);
  }

  /** The next `count` Probe calls that reach the model answer ready=false. */
  probeNotReady(count: number): void {
    if (!Number.isInteger(count) || count < 0) {
      throw new BerthError('FAKE_CSI_BAD_SCRIPT', `count must be a non-negative integer, got ${count}`);
    }
    this.#probeNotReady = count;
  }

  /** Forgets every scripted step and probeNotReady. Calls already hanging keep hanging. */
  clearScript(): void {
    this.#script.clear();
    this.#probeNotReady = 0;
  }

  // ---- in-memory model -----------------------------------------------------

  get volumes(): ReadonlyMap<string, FakeVolume> {
    return this.#model.volumes;
  }

  get snapshots(): ReadonlyMap<string, FakeSnapshot> {
    return this.#model.snapshots;
  }

  /** volumeId -> staging path. */
  get staged(): ReadonlyMap<string, string> {
    return this.#model.staged;
  }

  /** volumeId -> target paths. */
  get published(): ReadonlyMap<string, Set<string>> {
    return this.#model.published;
  }

  /** volumeId -> node ids. */
  get controllerPublished(): ReadonlyMap<string, Set<string>> {
    return this.#model.controllerPublished;
  }

  /**
   * Makes NodeGetVolumeStats, ListVolumes and ControllerGetVolume report this
   * condition for the volume (when the fake advertises VOLUME_CONDITION);
   * `undefined` goes back to healthy. A fault to inject: a volume the
   * storage system calls abnormal.
   */
  setVolumeCondition(volumeId: string, condition: { abnormal: boolean; message: string } | undefined): void {
    if (condition) this.#model.conditions.set(volumeId, { ...condition });
    else this.#model.conditions.delete(volumeId);
  }

  /** How many calls the fake is handling right now (hung and delayed ones, mostly). */
  get inFlight(): number {
    return this.#callsInFlight;
  }

  /**
   * Resolves once the fake handles no call at all: every hung or delayed call
   * has ended (answered, cancelled by its client, past its deadline, or ended
   * by stop()/crash()). At once when nothing is in flight. Never rejects.
   */
  whenIdle(): Promise<void> {
    if (this.#callsInFlight === 0) return Promise.resolve();
    return new Promise<void>((resolve) => this.#idleWaiters.push(resolve));
  }

  /**
   * Largest number of calls that were in flight at the same time for one
   * volume_id (calls whose request has a non-empty `volumeId` field, from
   * arrival until the fake answered or gave up). 0 for a volume never called.
   */
  maxConcurrentPerVolume(volumeId: string): number {
    return this.#maxInFlight.get(volumeId) ?? 0;
  }

  /** Forgets volumes, snapshots, mounts, script, recorded calls and concurrency figures. Keeps running. */
  reset(): void {
    this.#model.reset();
    this.clearScript();
    this.clearCalls();
    this.#maxInFlight.clear();
  }

  // ---- serving --------------------------------------------------------------

  readonly #deadlineInterceptor: ServerInterceptor = (_method, call) =>
    new ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMessage: (message: unknown, nextMessage) => {
            const deadline = call.getDeadline();
            const ms = deadline instanceof Date ? deadline.getTime() : deadline;
            if (typeof message === 'object' && message !== null && Number.isFinite(ms)) {
              this.#deadlines.set(message, ms);
            }
            nextMessage(message);
          },
        }),
    });

  /** Records, applies the script, checks capabilities, then asks `model`. */
  async #serve<Req extends object, Res>(
    rpc: CsiRpc,
    request: Req,
    context: CallContext,
    model: (request: Req) => Res,
  ): Promise<Res> {
    this.#record(rpc, request);
    this.#callsInFlight += 1;
    const volumeId = (request as { volumeId?: unknown }).volumeId;
    const tracked = typeof volumeId === 'string' && volumeId !== '' ? volumeId : undefined;
    if (tracked !== undefined) this.#enter(tracked);
    try {
      const step = this.#script.take(rpc);
      if (step?.kind === 'fail') throw grpcError(step.code, step.message);
      if (step?.kind === 'answer') return step.response as Res;
      if (step) {
        const played = this.#play(step, request, context);
        this.#pending.set(played, step.kind);
        try {
          await played;
        } finally {
          this.#pending.delete(played);
        }
      }
      if (this.#unimplemented.has(rpc)) throw grpcError('UNIMPLEMENTED', `${rpc} is not advertised by this plugin`);
      return model(request);
    } finally {
      if (tracked !== undefined) this.#leave(tracked);
      this.#callsInFlight -= 1;
      if (this.#callsInFlight === 0 && this.#idleWaiters.length > 0) {
        const waiters = this.#idleWaiters;
        this.#idleWaiters = [];
        for (const wake of waiters) wake();
      }
    }
  }

  /**
   * Plays a step that takes time. Resolves when the call should go on to the
   * model (a delay that ran out); otherwise rejects with the error the call
   * ends with: UNAVAILABLE when the server went down, CANCELLED when the
   * client cancelled, DEADLINE_EXCEEDED when its deadline passed.
   */
  async #play(step: ScriptStep, request: object, context: CallContext): Promise<void> {
    const lifecycle = this.#lifecycle.signal;
    const deadline = this.#deadlines.get(request);
    const signals = [context.signal, lifecycle];
    if (deadline !== undefined) signals.push(AbortSignal.timeout(Math.max(0, deadline - Date.now())));
    const ended = AbortSignal.any(signals);
    if (step.kind === 'crash') void this.crash();
    const ranOut = await untilAborted(ended, step.kind === 'delay' ? step.ms : undefined);
    if (ranOut) return;
    if (lifecycle.aborted) throw grpcError('UNAVAILABLE', 'fake plugin went down');
    if (context.signal.aborted) throw grpcError('CANCELLED', 'call cancelled by the client');
    throw grpcError('DEADLINE_EXCEEDED', 'deadline exceeded');
  }

  #enter(volumeId: string): void {
    const n = (this.#inFlight.get(volumeId) ?? 0) + 1;
    this.#inFlight.set(volumeId, n);
    if (n > (this.#maxInFlight.get(volumeId) ?? 0)) this.#maxInFlight.set(volumeId, n);
  }

  #leave(volumeId: string): void {
    const n = (this.#inFlight.get(volumeId) ?? 1) - 1;
    if (n <= 0) this.#inFlight.delete(volumeId);
    else this.#inFlight.set(volumeId, n);
  }

  readonly #identity: IdentityServiceImplementation = {
    getPluginInfo: (req, ctx) =>
      this.#serve('GetPluginInfo', req, ctx, () => ({
        name: this.#opts.name,
        vendorVersion: this.#opts.vendorVersion,
        manifest: this.#opts.manifest,
      })),
    getPluginCapabilities: (req, ctx) =>
      this.#serve('GetPluginCapabilities', req, ctx, () => ({
        capabilities: [
          ...this.#opts.pluginCapabilities.map((c) => ({ service: { type: PluginCapability_Service_Type[c] } })),
          ...this.#opts.expansion.map((c) => ({ volumeExpansion: { type: PluginCapability_VolumeExpansion_Type[c] } })),
        ],
      })),
    probe: (req, ctx) =>
      this.#serve('Probe', req, ctx, () => {
        if (this.#probeNotReady > 0) {
          this.#probeNotReady -= 1;
          return { ready: false };
        }
        return { ready: true };
      }),
  };

  readonly #controller: ControllerServiceImplementation = {
    createVolume: (req, ctx) => this.#serve('CreateVolume', req, ctx, (r) => this.#model.createVolume(r)),
    deleteVolume: (req, ctx) => this.#serve('DeleteVolume', req, ctx, (r) => this.#model.deleteVolume(r)),
    controllerPublishVolume: (req, ctx) =>
      this.#serve('ControllerPublishVolume', req, ctx, (r) => this.#model.controllerPublishVolume(r)),
    controllerUnpublishVolume: (req, ctx) =>
      this.#serve('ControllerUnpublishVolume', req, ctx, (r) => this.#model.controllerUnpublishVolume(r)),
    validateVolumeCapabilities: (req, ctx) =>
      this.#serve('ValidateVolumeCapabilities', req, ctx, (r) => this.#model.validateVolumeCapabilities(r)),
    listVolumes: (req, ctx) => this.#serve('ListVolumes', req, ctx, (r) => this.#model.listVolumes(r)),
    getCapacity: (req, ctx) => this.#serve('GetCapacity', req, ctx, () => this.#model.getCapacity()),
    controllerGetCapabilities: (req, ctx) =>
      this.#serve('ControllerGetCapabilities', req, ctx, () => ({
        capabilities: this.#opts.controllerCapabilities.map((c) => ({
          rpc: { type: ControllerServiceCapability_RPC_Type[c] },
        })),
      })),
    createSnapshot: (req, ctx) => this.#serve('CreateSnapshot', req, ctx, (r) => this.#model.createSnapshot(r)),
    deleteSnapshot: (req, ctx) => this.#serve('DeleteSnapshot', req, ctx, (r) => this.#model.deleteSnapshot(r)),
    listSnapshots: (req, ctx) => this.#serve('ListSnapshots', req, ctx, (r) => this.#model.listSnapshots(r)),
    getSnapshot: (req, ctx) => this.#serve('GetSnapshot', req, ctx, (r) => this.#model.getSnapshot(r)),
    controllerExpandVolume: (req, ctx) =>
      this.#serve('ControllerExpandVolume', req, ctx, (r) => this.#model.controllerExpandVolume(r)),
    controllerGetVolume: (req, ctx) =>
      this.#serve('ControllerGetVolume', req, ctx, (r) => this.#model.controllerGetVolume(r)),
    controllerModifyVolume: (req, ctx) =>
      this.#serve('ControllerModifyVolume', req, ctx, (r) => this.#model.controllerModifyVolume(r)),
  };

  // The fake advertises no group snapshot RPCs; the service answers its
  // capabilities (none) when GROUP_CONTROLLER_SERVICE is advertised.
  readonly #groupController: GroupControllerServiceImplementation = {
    groupControllerGetCapabilities: (req, ctx) =>
      this.#serve('GroupControllerGetCapabilities', req, ctx, () => ({ capabilities: [] })),
    createVolumeGroupSnapshot: (req, ctx) => this.#serve('CreateVolumeGroupSnapshot', req, ctx, unreachable),
    deleteVolumeGroupSnapshot: (req, ctx) => this.#serve('DeleteVolumeGroupSnapshot', req, ctx, unreachable),
    getVolumeGroupSnapshot: (req, ctx) => this.#serve('GetVolumeGroupSnapshot', req, ctx, unreachable),
  };

  readonly #node: NodeServiceImplementation = {
    nodeStageVolume: (req, ctx) => this.#serve('NodeStageVolume', req, ctx, (r) => this.#model.nodeStageVolume(r)),
    nodeUnstageVolume: (req, ctx) =>
      this.#serve('NodeUnstageVolume', req, ctx, (r) => this.#model.nodeUnstageVolume(r)),
    nodePublishVolume: (req, ctx) =>
      this.#serve('NodePublishVolume', req, ctx, (r) => this.#model.nodePublishVolume(r)),
    nodeUnpublishVolume: (req, ctx) =>
      this.#serve('NodeUnpublishVolume', req, ctx, (r) => this.#model.nodeUnpublishVolume(r)),
    nodeGetVolumeStats: (req, ctx) =>
      this.#serve('NodeGetVolumeStats', req, ctx, (r) => this.#model.nodeGetVolumeStats(r)),
    nodeExpandVolume: (req, ctx) => this.#serve('NodeExpandVolume', req, ctx, (r) => this.#model.nodeExpandVolume(r)),
    nodeGetCapabilities: (req, ctx) =>
      this.#serve('NodeGetCapabilities', req, ctx, () => ({
        capabilities: this.#opts.nodeCapabilities.map((c) => ({ rpc: { type: NodeServiceCapability_RPC_Type[c] } })),
      })),
    nodeGetInfo: (req, ctx) =>
      this.#serve('NodeGetInfo', req, ctx, () => ({
        nodeId: this.#opts.nodeId,
        maxVolumesPerNode: BigInt(this.#opts.maxVolumesPerNode),
        accessibleTopology: this.#opts.pluginCapabilities.includes('VOLUME_ACCESSIBILITY_CONSTRAINTS')
          ? { segments: { ...this.#opts.topology } }
          : undefined,
      })),
  };
}

function unreachable(): never {
  throw grpcError('UNIMPLEMENTED', 'the fake plugin has no group snapshots');
}

