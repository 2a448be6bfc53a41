// Test harness of the CSI manager's tests: a real SQLite client state file, a
// real plugin registry, fake plugins on real unix sockets, a manual clock, and
// the node updates and events the manager pushes, recorded.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventually } from './eventually.js';
import { FakePlugin, type FakePluginOptions } from './csi-fake/index.js';
import { ManualClock } from '../../src/lib/index.js';
import type { CsiPluginReport, CsiPluginType, NodeEvent } from '../../src/structs/index.js';
import { PluginRegistry, type PluginRegistration } from '../../src/client/dynamicplugins/index.js';
import { SqliteClientStateStore } from '../../src/client/state/index.js';
import type { VolumeManager } from '../../src/client/volumes/index.js';
import { CsiManager, type CsiManagerOptions, type ManagedVolumeManager } from '../../src/client/csimanager/index.js';

export interface RecordedUpdate {
  type: CsiPluginType;
  pluginId: string;
  report: CsiPluginReport | null;
}

export const TEST_TIMING = {
  resyncIntervalMs: 60_000,
  probeIntervalMs: 1_000,
  healthTimeoutMs: 5_000,
  callTimeoutMs: 2_000,
  retryBackoff: { maxAttempts: Infinity, initialDelayMs: 100, maxDelayMs: 1_000, multiplier: 2, jitter: 0 },
};

export class ManagerHarness<VM extends ManagedVolumeManager = VolumeManager> {
  readonly dir: string;
  readonly clock = new ManualClock(1_000_000);
  readonly store: SqliteClientStateStore;
  readonly registry: PluginRegistry;
  readonly updates: RecordedUpdate[] = [];
  readonly events: NodeEvent[] = [];
  readonly healthTimeouts: string[] = [];
  readonly fakes: FakePlugin[] = [];
  manager: CsiManager<VM>;

  constructor(opts: Partial<CsiManagerOptions<VM>> = {}) {
    // Short: a unix socket path must fit in 107 bytes.
    this.dir = mkdtempSync(path.join(tmpdir(), 'bcm-'));
    this.store = SqliteClientStateStore.open(path.join(this.dir, 'state', 'client.db'));
    this.registry = new PluginRegistry({ store: this.store, clock: this.clock });
    this.manager = this.newManager(opts);
  }

  newManager(opts: Partial<CsiManagerOptions<VM>> = {}): CsiManager<VM> {
    return new CsiManager<VM>({
      registry: this.registry,
      store: this.store,
      clock: this.clock,
      updateNodePlugin: (type, pluginId, report) => this.updates.push({ type, pluginId, report }),
      emitNodeEvent: (event) => this.events.push(event),
      onHealthTimeout: (plugin, type) => this.healthTimeouts.push(`${type}/${plugin.name}/${plugin.allocId}`),
      csiRoot: path.join(this.dir, 'csi'),
      ...TEST_TIMING,
      ...opts,
    } as CsiManagerOptions<VM>);
  }

  /** A fake plugin on `<dir>/<name>.sock`, not started. */
  fake(name: string, opts: Omit<FakePluginOptions, 'socketPath'> = {}): FakePlugin {
    const f = new FakePlugin({ ...opts, socketPath: this.socket(name) });
    this.fakes.push(f);
    return f;
  }

  socket(name: string): string {
    return path.join(this.dir, 'sockets', `${name}.sock`);
  }

  register(allocId: string, socketPath: string, over: Partial<PluginRegistration> = {}): void {
    this.registry.register({ type: 'csi-node', name: 'fake', version: '1.0.0', socketPath, allocId, options: {}, ...over });
  }

  /** The last report pushed for (type, id): undefined if none, null if withdrawn. */
  report(id: string, type: CsiPluginType = 'csi-node'): CsiPluginReport | null | undefined {
    return this.updates.filter((u) => u.type === type && u.pluginId === id).at(-1)?.report;
  }

  /**
   * Moves the manual clock `stepMs` at a time, letting real I/O run in
   * between, until `pred` holds. Fails with what was seen after 30 s of
   * real time. Tests use it for "eventually", never to measure time.
   */
  async until(pred: () => boolean, what: string, stepMs = 50): Promise<void> {
    try {
      await eventually(what, pred, { intervalMs: 2, between: () => this.clock.advance(stepMs) });
    } catch (err) {
      const seen = this.events.map((e) => e.message).join('\n  ');
      throw new Error(`${(err as Error).message}; events:\n  ${seen}`, { cause: err });
    }
  }

  /**
   * Moves the clock `ms`, then waits until every loop of the manager is
   * parked on the clock again (its resync loop and one per instance): all
   * the work that this much time could set off, real I/O included, has
   * run. What a test asserts did NOT happen then cannot come later.
   */
  async advanceUntilParked(ms: number): Promise<void> {
    await this.clock.advance(ms);
    const loops = (): number => (this.manager.state === 'running' ? this.manager.instances().length + 1 : 0);
    await eventually('every loop of the CSI manager parked on the clock (resync + one per instance)', () => this.clock.pending >= loops(), { intervalMs: 2 });
  }

  /** Whether volumeManagerFor(id) hands out a volume manager now. */
  mountable(id: string): boolean {
    try {
      this.manager.volumeManagerFor(id);
      return true;
    } catch {
      return false;
    }
  }

  messages(): string[] {
    return this.events.map((e) => e.message);
  }

  async close(): Promise<void> {
    await this.manager.stop();
    await Promise.all(this.fakes.map((f) => f.stop()));
    this.registry.close();
    this.store.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
