// The plugin supervisor hook (Nomad's csi_plugin_supervisor_hook): for a task
// with a `csiPlugin` block, gives the allocation its own socket directory and
// the plugin its mount root, sets CSI_ENDPOINT, waits for the socket and a
// healthy Probe, then registers the plugin. Ongoing health is the CSI
// manager's (it already probes): the allocation runner forwards its health
// events and its health-timeout to this hook.

import { existsSync, watch, type FSWatcher } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { CsiClient } from '../../csi/index.js';
import { AbortedError, backoffDelay, describeError, type BackoffPolicy, type Clock, type Logger } from '../../lib/index.js';
import { durationMs, type Allocation, type CsiPluginType, type Task } from '../../structs/index.js';
import { isMountPoint, mount } from '../allocdir/index.js';
import { safeName } from '../csimanager/index.js';
import type { PluginRegistration, PluginRegistry } from '../dynamicplugins/index.js';
import type { RunnerDriver, TaskMount } from './driver-port.js';
import { TASK_EVENTS } from './task-events.js';
import type { PrestartRequest, TaskHook, TaskHookContext, TaskLifecycle } from './task-hook.js';

/** Longest path a unix socket may have (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;

/** Adds `m` unless the same mount is already there (Nomad's ensureMountpointInserted). */
function insertMount(mounts: TaskMount[], m: TaskMount): void {
  const same = (o: TaskMount): boolean => o.source === m.source && o.destination === m.destination && o.readOnly === m.readOnly && o.propagation === m.propagation;
  if (!mounts.some(same)) mounts.push(m);
}

/** Where a plugin allocation's socket and the plugin's mount root live on the host. */
export function pluginPaths(pluginDirRoot: string, pluginId: string, allocId: string): { socketDir: string; socketPath: string; mountRoot: string } {
  const pluginDir = path.join(pluginDirRoot, safeName(pluginId));
  const socketDir = path.join(pluginDir, safeName(allocId));
  return { socketDir, socketPath: path.join(socketDir, 'csi.sock'), mountRoot: path.join(pluginDir, 'mounts') };
}

export interface PluginSupervisorHookOptions {
  alloc: Allocation;
  task: Task & { csiPlugin: NonNullable<Task['csiPlugin']> };
  driver: RunnerDriver;
  registry: PluginRegistry;
  pluginDirRoot: string;
  clock: Clock;
  logger: Logger;
  /** Backoff between probes while waiting for the plugin to come up. */
  backoff: BackoffPolicy;
  /** Deadline of one Probe. Default 5 s. */
  probeTimeoutMs?: number;
  /** Makes the client of the socket; default a CsiClient. */
  dial?: (socketPath: string) => CsiClient;
}


export class PluginSupervisorHook implements TaskHook {
  readonly name = 'plugin-supervisor';
  readonly pluginId: string;
  readonly socketPath: string;
  readonly mountRoot: string;
  readonly #o: PluginSupervisorHookOptions;
  readonly #socketDir: string;
  readonly #types: CsiPluginType[];
  readonly #healthTimeoutMs: number;
  /** The plugin runs in its own file system (exec's chroot, a container): it gets binds and sees its own paths. */
  readonly #isolated: boolean;
  readonly #image: boolean;
  #lastHealthy: boolean | undefined;

  constructor(opts: PluginSupervisorHookOptions) {
    this.#o = opts;
    const p = opts.task.csiPlugin;
    this.pluginId = p.id;
    const paths = pluginPaths(opts.pluginDirRoot, p.id, opts.alloc.id);
    this.#socketDir = paths.socketDir;
    this.socketPath = paths.socketPath;
    this.mountRoot = paths.mountRoot;
    this.#types = p.type === 'monolith' ? ['csi-controller', 'csi-node'] : p.type === 'node' ? ['csi-node'] : ['csi-controller'];
    this.#healthTimeoutMs = durationMs(p.healthTimeout);
    this.#isolated = opts.driver.capabilities.fsIsolation !== 'none';
    this.#image = opts.driver.capabilities.fsIsolation === 'image';
  }

  /**
   * The mount root as the plugin sees it: its own path inside a chroot or a
   * container (`stage_publish_base_dir`, default `<mount_dir>/mounts`), the
   * host path otherwise. The CSI manager maps staging and publish paths
   * between the two.
   */
  get pluginMountRoot(): string {
    const p = this.#o.task.csiPlugin;
    return this.#isolated ? (p.stagePublishBaseDir ?? path.join(p.mountDir, 'mounts')) : this.mountRoot;
  }

  /**
   * Makes the socket directory and the mount root (a shared mount, so the
   * plugin's mounts propagate out of its task), removes a stale socket, binds
   * both into an isolated task (chroot or container: the socket directory at
   * `mount_dir`, the mount root with bidirectional propagation; a container
   * also gets the host's /dev, as Nomad gives node plugins, which mount
   * devices), and sets CSI_ENDPOINT as the plugin sees it. Throws when the
   * socket path is too long.
   */
  async prestart(req: PrestartRequest): Promise<void> {
    if (Buffer.byteLength(this.socketPath) > MAX_SOCKET_PATH) {
      throw new Error(`the plugin socket path ${this.socketPath} is longer than ${MAX_SOCKET_PATH} bytes; use a shorter plugin dir`);
    }
    await mkdir(this.#socketDir, { recursive: true, mode: 0o750 });
    await mkdir(this.mountRoot, { recursive: true, mode: 0o750 });
    if (!isMountPoint(this.mountRoot)) await mount(['--bind', this.mountRoot, this.mountRoot]);
    await mount(['--make-rshared', this.mountRoot]);
    await rm(this.socketPath, { force: true });
    const p = this.#o.task.csiPlugin;
    if (this.#isolated) {
      insertMount(req.mounts, { source: this.#socketDir, destination: p.mountDir, readOnly: false, propagation: 'private' });
      insertMount(req.mounts, { source: this.mountRoot, destination: this.pluginMountRoot, readOnly: false, propagation: 'bidirectional' });
      // exec's chroot has its own /dev; a container has a minimal one without the block devices a node plugin mounts.
      if (this.#image && p.type !== 'controller') insertMount(req.mounts, { source: '/dev', destination: '/dev', readOnly: false, propagation: 'private' });
      req.env['CSI_ENDPOINT'] = `unix://${path.join(p.mountDir, 'csi.sock')}`;
    } else {
      req.env['CSI_ENDPOINT'] = `unix://${this.socketPath}`;
    }
  }

  /** Waits for the plugin in the background (until this run of the task ends), then registers it. */
  async poststart(ctx: TaskHookContext & { recovered: boolean }): Promise<void> {
    void this.#supervise(ctx.runner, ctx.signal, ctx.recovered).catch((err: unknown) => {
      if (!(err instanceof AbortedError)) this.#o.logger.error({ err: describeError(err) }, 'plugin supervisor failed');
    });
  }

  /** The plugin process is gone: withdraw its registration until it is healthy again. */
  async exited(_exit: unknown, ctx: TaskHookContext): Promise<void> {
    this.#deregister(ctx.runner, 'the plugin task exited');
  }

  async stop(ctx: TaskHookContext): Promise<void> {
    this.#deregister(ctx.runner, 'the plugin task stopped');
  }

  /** Records a health change the CSI manager observed, once per change. */
  noteHealth(runner: TaskLifecycle, healthy: boolean, reason: string): void {
    if (this.#lastHealthy === healthy) return;
    this.#lastHealthy = healthy;
    if (healthy) runner.event(TASK_EVENTS.pluginHealthy, `CSI plugin "${this.pluginId}" is healthy`, { plugin: this.pluginId });
    else runner.event(TASK_EVENTS.pluginUnhealthy, `CSI plugin "${this.pluginId}" is unhealthy: ${reason}`, { plugin: this.pluginId });
  }

  /**
   * Waits `ms` between attempts, or less: a change in the socket directory
   * (the plugin creating its socket) ends the wait at once, so the plugin is
   * registered as soon as it listens rather than at the next backoff step.
   * The backoff stays the bound (a watch can miss events). Rejects with
   * AbortedError when `signal` fires.
   */
  async #pause(ms: number, signal: AbortSignal, socketMissing: boolean): Promise<void> {
    const changed = new AbortController();
    let watcher: FSWatcher | undefined;
    try {
      watcher = watch(path.dirname(this.socketPath), { persistent: false }, () => changed.abort());
      watcher.on('error', () => undefined);
    } catch {
      // No watch (the directory is gone, or no inotify): the backoff alone paces the attempts.
    }
    try {
      // The socket may have appeared between the last look and the watch.
      if (socketMissing && existsSync(this.socketPath)) return;
      await this.#o.clock.sleep(ms, AbortSignal.any([signal, changed.signal]));
    } catch (err) {
      if (signal.aborted || !changed.signal.aborted) throw err;
    } finally {
      watcher?.close();
    }
  }

  async #supervise(runner: TaskLifecycle, signal: AbortSignal, recovered: boolean): Promise<void> {
    const client = this.#o.dial ? this.#o.dial(this.socketPath) : new CsiClient({ endpoint: `unix://${this.socketPath}`, logger: this.#o.logger, clock: this.#o.clock });
    const began = this.#o.clock.now();
    let reported = false;
    try {
      for (let attempt = 1; ; attempt++) {
        if (signal.aborted) return;
        let reason: string;
        if (!existsSync(this.socketPath)) reason = `its socket ${this.socketPath} does not exist yet`;
        else {
          try {
            const res = await client.probe({ signal, deadlineMs: this.#o.probeTimeoutMs ?? 5_000, retry: false });
            if (res.ready) break;
            reason = 'Probe answered not ready';
          } catch (err) {
            if (signal.aborted) return;
            reason = `Probe failed: ${describeError(err)}`;
          }
        }
        if (!reported) {
          reported = true;
          runner.event(TASK_EVENTS.pluginUnhealthy, `Waiting for CSI plugin "${this.pluginId}": ${reason}`, { plugin: this.pluginId });
        }
        if (this.#o.clock.now() - began >= this.#healthTimeoutMs) {
          await runner.restart(`CSI plugin "${this.pluginId}" did not become healthy within its health timeout: ${reason}`);
          return;
        }
        await this.#pause(backoffDelay(this.#o.backoff, attempt), signal, !existsSync(this.socketPath));
      }
    } finally {
      await client.close();
    }
    if (signal.aborted) return;
    this.#lastHealthy = true;
    let registeredNew = false;
    for (const type of this.#types) {
      const reg: PluginRegistration = {
        type,
        name: this.pluginId,
        version: String(this.#o.task.config['version'] ?? ''),
        socketPath: this.socketPath,
        allocId: this.#o.alloc.id,
      };
      if (type === 'csi-node') reg.options = { mountRoot: this.mountRoot, pluginMountRoot: this.pluginMountRoot };
      if (this.#o.registry.register(reg)) registeredNew = true;
    }
    if (registeredNew) {
      runner.event(TASK_EVENTS.pluginRegistered, `CSI plugin "${this.pluginId}" is healthy and registered (${this.#types.join(', ')})`, { plugin: this.pluginId });
    } else if (recovered) {
      runner.event(TASK_EVENTS.pluginHealthy, `CSI plugin "${this.pluginId}" re-adopted after the agent restarted; its registration was kept`, { plugin: this.pluginId });
    }
  }

  #deregister(runner: TaskLifecycle, why: string): void {
    let n = 0;
    for (const type of this.#types) if (this.#o.registry.deregister(type, this.pluginId, this.#o.alloc.id)) n += 1;
    this.#lastHealthy = undefined;
    if (n) runner.event(TASK_EVENTS.pluginDeregistered, `CSI plugin "${this.pluginId}" deregistered: ${why}`, { plugin: this.pluginId });
  }
}
