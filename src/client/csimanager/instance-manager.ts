// One running instance of a CSI plugin: one allocation's socket, seen as one
// plugin type. It connects (the socket may appear late), fingerprints, then
// probes on an interval, and tells its owner of every change of health or
// fingerprint (Nomad's csimanager instanceManager).

import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { CsiError, type CsiClient, type PluginFingerprint } from '../../csi/index.js';
import {
  AbortedError,
  BerthError,
  backoffDelay,
  describeError,
  Lifecycle,
  type BackoffPolicy,
  type Clock,
  type LifecycleState,
  type Logger,
} from '../../lib/index.js';
import type { CsiPluginType } from '../../structs/index.js';
import type { RegisteredPlugin } from '../dynamicplugins/index.js';

/** What changed in an instance; its owner reads the new state from the instance. */
export type InstanceChange =
  /** The fingerprint is new or different. */
  | 'fingerprint'
  /** Healthy became unhealthy or the other way round. */
  | 'health'
  /** Same health, another reason (e.g. "starting" became "probe failed"). */
  | 'reason'
  /** Unhealthy for longer than the health timeout (reported once per unhealthy spell). */
  | 'health-timeout';

/** Where an instance is in its life (a lib Lifecycle's state). */
export type InstanceState = LifecycleState;

export interface InstanceManagerOptions {
  plugin: RegisteredPlugin;
  /** The type this instance serves as (a monolith has one instance per type). */
  type: CsiPluginType;
  /**
   * Makes the client of the plugin's socket; called once, lazily, and again
   * after it threw. The instance closes the client when it stops.
   */
  dial: (plugin: RegisteredPlugin) => CsiClient;
  clock: Clock;
  logger: Logger;
  /** Between probes of a healthy plugin. */
  probeIntervalMs: number;
  /** How long an instance may stay unhealthy before 'health-timeout' is reported. */
  healthTimeoutMs: number;
  /** Deadline of each identity/probe call. */
  callTimeoutMs: number;
  /** Waits between failed connects/fingerprints; probes of an unhealthy plugin wait at most probeIntervalMs. */
  retryBackoff: BackoffPolicy;
  /** Called synchronously on every change, in order; must not throw. */
  onChange: (instance: InstanceManager, change: InstanceChange) => void;
  random?: () => number;
}

const NOT_FINGERPRINTED = 'not fingerprinted yet';
export const READY_REASON = 'probe answered ready';
const STARTING_REASON = 'plugin is starting (probe answered ready=false)';

/**
 * Manages one plugin instance. `start()` returns at once and the instance
 * runs in the background until `stop()`; nothing it meets (a missing socket,
 * a failing probe, a plugin answering out of spec) makes it throw or crash:
 * it reports the reason and retries with backoff.
 */
export class InstanceManager {
  readonly plugin: RegisteredPlugin;
  readonly type: CsiPluginType;
  #client: CsiClient | undefined;
  readonly #opts: InstanceManagerOptions;
  readonly #logger: Logger;
  readonly #life: Lifecycle;
  #healthy = false;
  #healthReason = NOT_FINGERPRINTED;
  #fingerprint: PluginFingerprint | undefined;
  #fingerprintJson = '';
  #unhealthySince: number;
  #timeoutReported = false;
  #everHealthy = false;
  /** Wakes the current wait early (the socket file changed). */
  #wake: AbortController | undefined;
  #watcher: FSWatcher | undefined;
  /** Identity of the socket file the fingerprint was taken through. */
  #socketId: string | undefined;

  constructor(opts: InstanceManagerOptions) {
    this.plugin = opts.plugin;
    this.type = opts.type;
    this.#opts = opts;
    this.#logger = opts.logger.child({ component: 'csi-instance', type: opts.type, plugin: opts.plugin.name, allocId: opts.plugin.allocId });
    this.#unhealthySince = opts.clock.now();
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get state(): InstanceState {
    return this.#life.state;
  }

  /** True when the last probe answered ready and the fingerprint is current. */
  get healthy(): boolean {
    return this.#healthy;
  }

  /** Why the instance is (un)healthy, for people. Never carries a secret. */
  get healthReason(): string {
    return this.#healthReason;
  }

  /** The client of the plugin's socket; undefined until dialled (always set once fingerprinted). */
  get client(): CsiClient | undefined {
    return this.#client;
  }

  /** The last successful fingerprint; undefined before the first. */
  get fingerprint(): PluginFingerprint | undefined {
    return this.#fingerprint;
  }

  /** Starts connecting and probing in the background. Returns at once; a second call does nothing. */
  start(): void {
    if (this.#life.state !== 'new') return;
    void this.#life.start((signal) => {
      void this.#life.track(
        this.#run(signal).catch((err: unknown) => {
          // #run handles every failure it can meet; this is a bug, not a plugin fault.
          this.#logger.error({ err: describeError(err) }, 'instance manager loop failed');
        }),
      );
    });
  }

  /**
   * Stops probing, waits for the loop to end and closes the client (calls in
   * flight on it end with CANCELLED). Safe twice; never throws.
   */
  stop(): Promise<void> {
    return this.#life.stop(async () => {
      this.#closeWatcher();
      await this.#life.drained();
      await this.#client?.close();
    });
  }

  async #run(signal: AbortSignal): Promise<void> {
    let needFingerprint = true;
    let failures = 0;
    while (!signal.aborted) {
      this.#ensureWatcher();
      if (needFingerprint) {
        let client: CsiClient;
        try {
          client = this.#dial();
        } catch (err) {
          failures += 1;
          this.#setHealth(false, `cannot connect to the plugin: ${describeError(err)}`);
          await this.#wait(backoffDelay(this.#opts.retryBackoff, failures, this.#opts.random), signal);
          continue;
        }
        try {
          await this.#takeFingerprint(client, signal);
          needFingerprint = false;
          failures = 0;
        } catch (err) {
          if (signal.aborted) return;
          failures += 1;
          this.#setHealth(false, await this.#fingerprintFailure(err));
          await this.#wait(backoffDelay(this.#opts.retryBackoff, failures, this.#opts.random), signal);
          continue;
        }
      }
      let waitMs = this.#opts.probeIntervalMs;
      const client = this.#client;
      if (!client) continue;
      try {
        const { ready } = await client.probe({ signal, deadlineMs: this.#opts.callTimeoutMs, retry: false });
        if (signal.aborted) return;
        if (await this.#socketReplaced()) {
          // A new process behind the same path: learn who it is before trusting it.
          this.#logger.info('plugin socket was replaced; fingerprinting again');
          needFingerprint = true;
          continue;
        }
        if (ready) {
          failures = 0;
          this.#setHealth(true, READY_REASON);
        } else {
          failures += 1;
          this.#setHealth(false, STARTING_REASON);
          waitMs = this.#unhealthyDelay(failures);
        }
      } catch (err) {
        if (signal.aborted) return;
        failures += 1;
        this.#setHealth(false, `probe failed: ${err instanceof CsiError ? `${err.grpcCodeName}${err.details ? `: ${err.details}` : ''}` : describeError(err)}`);
        // The plugin may come back as another process: fingerprint it again first.
        needFingerprint = true;
        waitMs = this.#unhealthyDelay(failures);
      }
      await this.#wait(waitMs, signal);
    }
  }

  #dial(): CsiClient {
    this.#client ??= this.#opts.dial(this.plugin);
    return this.#client;
  }

  async #takeFingerprint(client: CsiClient, signal: AbortSignal): Promise<void> {
    const socketId = await this.#socketIdentity();
    const fp = await client.fingerprint({
      signal,
      deadlineMs: this.#opts.callTimeoutMs,
      retry: false,
      node: this.type === 'csi-node',
    });
    if (this.type === 'csi-node' && !fp.node) {
      throw new BerthError('CSI_PLUGIN_WRONG_TYPE', 'the plugin is registered as csi-node but serves no Node service');
    }
    if (this.type === 'csi-controller' && !fp.capabilities.services.includes('CONTROLLER_SERVICE')) {
      throw new BerthError('CSI_PLUGIN_WRONG_TYPE', 'the plugin is registered as csi-controller but does not advertise CONTROLLER_SERVICE');
    }
    this.#socketId = socketId;
    const json = JSON.stringify(fp);
    if (json === this.#fingerprintJson) return;
    const first = this.#fingerprint === undefined;
    this.#fingerprint = fp;
    this.#fingerprintJson = json;
    this.#logger.info({ provider: fp.info.name, version: fp.info.vendorVersion, first }, 'plugin fingerprinted');
    if (!this.#healthy) this.#healthReason = 'fingerprinted; probing';
    this.#opts.onChange(this, 'fingerprint');
  }

  async #fingerprintFailure(err: unknown): Promise<string> {
    try {
      await stat(this.plugin.socketPath);
    } catch {
      return `waiting for the plugin socket ${this.plugin.socketPath} to appear`;
    }
    return `fingerprint failed: ${describeError(err)}`;
  }

  #unhealthyDelay(failures: number): number {
    const policy = { ...this.#opts.retryBackoff, maxDelayMs: Math.min(this.#opts.retryBackoff.maxDelayMs, this.#opts.probeIntervalMs) };
    return backoffDelay(policy, failures, this.#opts.random);
  }

  #setHealth(healthy: boolean, reason: string): void {
    const now = this.#opts.clock.now();
    const healthChanged = healthy !== this.#healthy;
    const reasonChanged = reason !== this.#healthReason;
    this.#healthy = healthy;
    this.#healthReason = reason;
    if (healthy) {
      this.#everHealthy = true;
      this.#timeoutReported = false;
    } else if (healthChanged) {
      this.#unhealthySince = now;
    }
    if (healthChanged) {
      this.#logger.info({ healthy, reason }, healthy ? 'plugin is healthy' : 'plugin is unhealthy');
      this.#opts.onChange(this, 'health');
    } else if (reasonChanged) {
      this.#opts.onChange(this, 'reason');
    }
    if (!healthy && !this.#timeoutReported && now - this.#unhealthySince >= this.#opts.healthTimeoutMs) {
      this.#timeoutReported = true;
      this.#logger.warn({ reason, everHealthy: this.#everHealthy }, 'plugin unhealthy for longer than its health timeout');
      this.#opts.onChange(this, 'health-timeout');
    }
  }

  /** When unhealthy, for how long it has been; undefined when healthy. */
  unhealthyForMs(): number | undefined {
    return this.#healthy ? undefined : this.#opts.clock.now() - this.#unhealthySince;
  }

  /** Sleeps `ms` on the clock, or less when the socket file changes or the health timeout comes due. */
  async #wait(ms: number, signal: AbortSignal): Promise<void> {
    if (!this.#healthy && !this.#timeoutReported) {
      const dueIn = this.#unhealthySince + this.#opts.healthTimeoutMs - this.#opts.clock.now();
      ms = Math.max(0, Math.min(ms, dueIn));
    }
    const wake = new AbortController();
    this.#wake = wake;
    try {
      await this.#opts.clock.sleep(ms, AbortSignal.any([signal, wake.signal]));
    } catch (err) {
      if (!(err instanceof AbortedError)) throw err;
    } finally {
      if (this.#wake === wake) this.#wake = undefined;
    }
    if (!this.#healthy && !this.#timeoutReported && !signal.aborted) {
      // The timeout may have come due while waiting, with nothing else to report.
      this.#setHealth(false, this.#healthReason);
    }
  }

  // The socket's directory is watched so that a plugin whose socket appears
  // late, or comes back after a restart, is noticed at once rather than at
  // the end of a backoff. The clock-driven retries remain the safety net.
  #ensureWatcher(): void {
    if (this.#watcher || this.#life.stopRequested) return;
    const dir = path.dirname(this.plugin.socketPath);
    const base = path.basename(this.plugin.socketPath);
    try {
      const watcher = watch(dir, { persistent: false }, (_event, filename) => {
        if (filename === null || filename === base) this.#wake?.abort();
      });
      watcher.on('error', () => {
        watcher.close();
        if (this.#watcher === watcher) this.#watcher = undefined;
      });
      this.#watcher = watcher;
    } catch {
      // The directory does not exist yet; try again on the next round.
    }
  }

  #closeWatcher(): void {
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  async #socketIdentity(): Promise<string | undefined> {
    try {
      const s = await stat(this.plugin.socketPath, { bigint: true });
      return `${s.dev}:${s.ino}:${s.ctimeNs}`;
    } catch {
      return undefined;
    }
  }

  async #socketReplaced(): Promise<boolean> {
    const now = await this.#socketIdentity();
    return now !== undefined && this.#socketId !== undefined && now !== this.#socketId;
  }
}
