// Helpers for the volume scenario tests: the real hostpath plugin with real
// bind mounts, a CSI client that notes which node calls it sent (the
// hostpath plugin keeps no call log), the kernel's mount table, and cleanup
// that unmounts everything even when a test fails.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CsiClient, VolumeCapability, type CallOptions, type NodePublishRequest, type NodeStageRequest, type TeardownResult } from '../../src/csi/index.js';
import { HostpathPlugin } from '../../src/csi-plugins/index.js';
import { SqliteClientStateStore } from '../../src/client/state/index.js';
import { VolumeManager, type VolumeManagerOptions, type VolumeUsage } from '../../src/client/volumes/index.js';

export const SHARED: VolumeUsage = { readOnly: false, attachmentMode: 'file-system', accessMode: 'multi-node-multi-writer' };

/** A node call as the manager sent it. */
export interface SentCall {
  rpc: 'NodeStageVolume' | 'NodeUnstageVolume' | 'NodePublishVolume' | 'NodeUnpublishVolume';
  volumeId: string;
  path: string;
}

/**
 * Berth's real CSI client, noting each node volume call before sending it
 * and letting a test act right after a call returned (`after`). Every call
 * still goes to the real plugin over its socket.
 */
export class RecordingCsiClient extends CsiClient {
  readonly sent: SentCall[] = [];
  after: ((call: SentCall) => void) | undefined;

  override async nodeStageVolume(req: NodeStageRequest, opts?: CallOptions): Promise<void> {
    const call: SentCall = { rpc: 'NodeStageVolume', volumeId: req.volumeId, path: req.stagingTargetPath };
    this.sent.push(call);
    await super.nodeStageVolume(req, opts);
    this.after?.(call);
  }

  override async nodePublishVolume(req: NodePublishRequest, opts?: CallOptions): Promise<void> {
    const call: SentCall = { rpc: 'NodePublishVolume', volumeId: req.volumeId, path: req.targetPath };
    this.sent.push(call);
    await super.nodePublishVolume(req, opts);
    this.after?.(call);
  }

  override async nodeUnpublishVolume(volumeId: string, targetPath: string, opts?: CallOptions): Promise<TeardownResult> {
    const call: SentCall = { rpc: 'NodeUnpublishVolume', volumeId, path: targetPath };
    this.sent.push(call);
    const res = await super.nodeUnpublishVolume(volumeId, targetPath, opts);
    this.after?.(call);
    return res;
  }

  override async nodeUnstageVolume(volumeId: string, stagingTargetPath: string, opts?: CallOptions): Promise<TeardownResult> {
    const call: SentCall = { rpc: 'NodeUnstageVolume', volumeId, path: stagingTargetPath };
    this.sent.push(call);
    const res = await super.nodeUnstageVolume(volumeId, stagingTargetPath, opts);
    this.after?.(call);
    return res;
  }
}

const unescapeMount = (s: string): string => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));

/** Mount points at or below `root`, read from the kernel. */
export function mountsUnder(root: string): string[] {
  const real = realpathSync(root);
  return allMountPoints().filter((p) => p === real || p.startsWith(`${real}/`));
}

function allMountPoints(): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => unescapeMount(l.split(' ')[4] ?? ''));
}

/** True when `p` (a resolved path) is a mount point. */
export function isMounted(p: string): boolean {
  return allMountPoints().includes(p);
}

/** Entries of a directory, [] when it does not exist. */
export function entriesOf(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Lazily unmounts everything at or below `root`, deepest first. Never throws. */
export function unmountAll(root: string): void {
  for (let round = 0; round < 4096; round++) {
    let left: string[];
    try {
      left = mountsUnder(root).sort((a, b) => b.length - a.length);
    } catch {
      return;
    }
    const first = left[0];
    if (!first) return;
    try {
      execFileSync('umount', ['-l', first], { stdio: 'ignore' });
    } catch {
      // Gone meanwhile: the next round sees.
    }
  }
}

/**
 * A node with the hostpath plugin: a data dir for the plugin, a separate
 * mount root for Berth, a client state file. `close()` unmounts and removes
 * everything, whatever state the test left.
 */
export class HostpathNode {
  readonly dir: string;
  readonly mountRoot: string;
  readonly statePath: string;
  readonly plugin: HostpathPlugin;
  readonly client: RecordingCsiClient;
  store: SqliteClientStateStore;
  readonly #managers: VolumeManager[] = [];

  constructor() {
    this.dir = realpathSync(mkdtempSync(path.join(tmpdir(), 'bh-')));
    this.mountRoot = path.join(this.dir, 'mnt');
    this.statePath = path.join(this.dir, 'state', 'client.db');
    const endpoint = `unix://${path.join(this.dir, 'csi.sock')}`;
    this.plugin = new HostpathPlugin({ endpoint, nodeId: 'node-1', dataDir: path.join(this.dir, 'data') });
    this.client = new RecordingCsiClient({ endpoint });
    this.store = SqliteClientStateStore.open(this.statePath);
  }

  async start(): Promise<void> {
    await this.plugin.start();
  }

  /** Creates a hostpath volume; resolves with its plugin volume ID. */
  async createVolume(name: string): Promise<string> {
    const v = await this.client.createVolume({ name, volumeCapabilities: [VolumeCapability.mount('multi-node-multi-writer')] });
    return v.volumeId;
  }

  async manager(opts: Partial<VolumeManagerOptions> = {}): Promise<VolumeManager> {
    const vm = new VolumeManager({
      pluginId: 'hostpath',
      getClient: () => this.client,
      store: this.store,
      mountRoot: this.mountRoot,
      getCapabilities: () => ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME'],
      ...opts,
    });
    this.#managers.push(vm);
    await vm.start();
    return vm;
  }

  /** Closes and reopens the state file, as a restarted agent would. */
  reopenStore(): void {
    this.store.close();
    this.store = SqliteClientStateStore.open(this.statePath);
  }

  async close(): Promise<void> {
    for (const vm of this.#managers) await vm.stop().catch(() => undefined);
    await this.client.close();
    await this.plugin.stop().catch(() => undefined);
    this.store.close();
    unmountAll(this.dir);
    // Removing a tree with mounts in it would delete through them into the plugin's data.
    const left = mountsUnder(this.dir);
    if (left.length > 0) throw new Error(`mounts remain under ${this.dir}: ${left.join(', ')}`);
    await rm(this.dir, { recursive: true, force: true });
  }
}
