// The network of each allocation whose group asks for one of its own: an
// `ip netns` namespace per allocation (or the one a driver that must
// initiate the network made), joined by every task of the group
// (TaskConfig.networkNamespacePath), and for `bridge` and `cni/<name>`
// attached with real CNI plugins. Made in the alloc's prerun, undone in its
// postrun. What was attached is written down per allocation (stateDir), so
// that after a crash of the agent the attachment of an allocation that is
// gone can still be detached (CNI DEL with the same configuration and ADD
// result) and the one of a running allocation re-adopted.

import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { BerthError, describeError, type Logger, silentLogger } from '../../lib/index.js';
import { bridgeConfList, DEFAULT_BRIDGE, loadUserConfList, portMappings, validateBridgeSettings, type AllocPort, type BridgeSettings } from './cni-config.js';
import { CniRunner, type CniConfList, type CniResult } from './cni-runner.js';
import { ensureForwardingRule, hasLeases, run, sweepAllocation, sweepBridge } from './_host.js';

/** Where iproute2 keeps named network namespaces. */
export const NETNS_RUN_DIR = '/var/run/netns';

/** Nomad's default cni_path, then where Debian's containernetworking-plugins installs them. */
export const DEFAULT_CNI_PATH: readonly string[] = ['/opt/cni/bin', '/usr/lib/cni'];
/** Nomad's default cni_config_dir. */
export const DEFAULT_CNI_CONFIG_DIR = '/opt/cni/config';

/** The interface the allocation sees inside its namespace (Nomad's `eth` + 0). */
export const ALLOC_IFNAME = 'eth0';

export type NetworkErrorCode = 'NETWORK_CREATE_FAILED' | 'NETWORK_DESTROY_FAILED' | 'NETWORK_MODE_UNSUPPORTED';

export class NetworkError extends BerthError {
  declare readonly code: NetworkErrorCode;
  constructor(code: NetworkErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

/** What the group asks for: its network mode and the ports the scheduler gave the allocation (Allocation.ports). */
export interface NetworkRequest {
  mode: string;
  ports?: readonly AllocPort[];
}

/** The allocation's network as it reports it (Allocation.network) and its namespace. */
export interface NetworkStatus {
  path: string;
  mode: string;
  /** Its own IPv4 address (bridge, cni). */
  address?: string;
  /** The interface holding it inside the namespace. */
  interface?: string;
}

export interface NetworkManagerOptions {
  logger?: Logger;
  /** Prefix of namespace names, default 'berth-'; tests pass their own to keep apart. */
  prefix?: string;
  /** Where attachments are written down to survive an agent crash (the client's `<data_dir>/network`). Default: kept in memory only. */
  stateDir?: string;
  /** Client `bridge_network_name` / `bridge_network_subnet`. */
  bridge?: Partial<BridgeSettings>;
  /** Client `cni_path`: directories searched for CNI plugins. */
  cniPath?: readonly string[];
  /** Client `cni_config_dir`: where `cni/<name>` networks are looked up. */
  cniConfigDir?: string;
}

/** One allocation's network as written down. */
interface Attachment {
  allocId: string;
  path: string;
  /** False when a driver made the namespace (it removes it). */
  ownNetns: boolean;
  mode: string;
  conf?: CniConfList;
  bridge?: BridgeSettings;
  capabilityArgs?: Record<string, unknown>;
  /** The ADD result, once ADD succeeded. */
  result?: CniResult;
  /**
   * The result of the last plugin of ADD that finished, written down before
   * the next one runs: a crash in the middle of ADD (an agent SIGKILLed in
   * portmap) leaves what the plugins before made, and DEL needs their result
   * (the address IPAM gave, which the firewall plugin's rules name) to undo it.
   */
  partial?: CniResult;
}

/** Creates and removes per-allocation networks. Needs root and iproute2 (and for bridge/cni: iptables and the CNI plugins). */
export class NetworkManager {
  readonly #logger: Logger;
  readonly #prefix: string;
  readonly #stateDir: string | undefined;
  readonly #bridge: BridgeSettings;
  readonly #cni: CniRunner;
  readonly #cniConfigDir: string;
  readonly #attachments = new Map<string, Attachment>();
  readonly #locks = new Map<string, Promise<unknown>>();
  /** Bridges whose forwarding rule this manager made since their last sweep (saves three iptables runs per start). */
  readonly #forwarding = new Set<string>();

  constructor(opts: NetworkManagerOptions = {}) {
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'network' });
    this.#prefix = opts.prefix ?? 'berth-';
    this.#stateDir = opts.stateDir;
    this.#bridge = { ...DEFAULT_BRIDGE, ...opts.bridge };
    validateBridgeSettings(this.#bridge);
    this.#cni = new CniRunner({ binDirs: opts.cniPath?.length ? opts.cniPath : DEFAULT_CNI_PATH });
    this.#cniConfigDir = opts.cniConfigDir ?? DEFAULT_CNI_CONFIG_DIR;
  }

  /** The bridge network's settings in force. */
  get bridge(): BridgeSettings {
    return { ...this.#bridge };
  }

  /** The namespace name for an allocation (short and stable: a hash of the alloc id). */
  nameFor(allocId: string): string {
    return this.#prefix + createHash('sha256').update(allocId).digest('hex').slice(0, 16);
  }

  /** The bind-mounted namespace file that nsenter / setns take. */
  pathFor(allocId: string): string {
    return `${NETNS_RUN_DIR}/${this.nameFor(allocId)}`;
  }

  /**
   * Makes the allocation's network: its namespace (or `netnsPath`, made by a
   * driver) with loopback up, attached to the bridge or the user's CNI
   * network for those modes (the ports mapped from the host), and returns
   * its status. Blocks until every plugin ran. Safe to repeat: an
   * allocation already attached gets its status back. On failure, what was
   * made is undone and NetworkError NETWORK_CREATE_FAILED is thrown.
   */
  create(allocId: string, req: NetworkRequest = { mode: 'none' }, opts: { netnsPath?: string } = {}): Promise<NetworkStatus> {
    return this.#serial(allocId, async () => {
      const known = this.#attachments.get(allocId) ?? (await this.#load(allocId));
      if (known?.result || (known && !known.conf && existsSync(known.path))) return statusOf(known);
      if (known) await this.#detach(known);
      const att: Attachment = { allocId, path: opts.netnsPath ?? this.pathFor(allocId), ownNetns: !opts.netnsPath, mode: req.mode };
      try {
        // Written down before anything is made: a crash from here on is undone by restore().
        await this.#save(att);
        if (att.ownNetns && !existsSync(att.path)) await run('ip', ['netns', 'add', this.nameFor(allocId)]);
        if (att.ownNetns) await run('ip', ['-n', this.nameFor(allocId), 'link', 'set', 'lo', 'up']);
        else await run('nsenter', [`--net=${att.path}`, 'ip', 'link', 'set', 'lo', 'up']);
        if (req.mode !== 'none') await this.#attach(att, req);
      } catch (err) {
        await this.#detach(att).catch((undo: unknown) => this.#logger.warn({ allocId, err: describeError(undo) }, 'cannot undo a half-made network'));
        throw new NetworkError('NETWORK_CREATE_FAILED', `cannot set up the ${req.mode} network of allocation ${allocId}: ${stderrOf(err)}`, { cause: err });
      }
      this.#logger.info({ allocId, mode: att.mode, netns: att.path, address: statusOf(att).address }, 'allocation network created');
      return statusOf(att);
    });
  }

  /**
   * Undoes create(): CNI DEL, the namespace removed (unless a driver made
   * it), the record dropped, and the bridge and its chains removed when no
   * allocation on this host uses the network any more. Safe twice, on one
   * never made, and after a crash. Throws NETWORK_DESTROY_FAILED.
   */
  destroy(allocId: string): Promise<void> {
    return this.#serial(allocId, async () => {
      const att = this.#attachments.get(allocId) ?? (await this.#load(allocId)) ?? { allocId, path: this.pathFor(allocId), ownNetns: true, mode: 'none' };
      try {
        await this.#detach(att);
      } catch (err) {
        throw new NetworkError('NETWORK_DESTROY_FAILED', `cannot remove the network of allocation ${allocId}: ${stderrOf(err)}`, { cause: err });
      }
    });
  }

  /** Whether the allocation's namespace exists. Never blocks. */
  exists(allocId: string): boolean {
    return existsSync(this.#attachments.get(allocId)?.path ?? this.pathFor(allocId));
  }

  /**
   * After an agent restart: re-adopts the networks of the allocations in
   * `live` and removes every other network this manager wrote down in
   * stateDir (namespaces it did not write down are left alone: they may be
   * another agent's on the same host). Safe to repeat; logs and goes on
   * where one cannot be removed.
   */
  async restore(live: ReadonlySet<string>): Promise<{ adopted: string[]; removed: string[] }> {
    const adopted: string[] = [];
    const removed: string[] = [];
    for (const att of await this.#loadAll()) {
      if (live.has(att.allocId)) {
        // Under the allocation's lock, and only what no create() has taken up since the listing:
        // a runner may already be setting the network up again, and a stale copy here would
        // later be detached with the addresses of an attachment that is gone.
        await this.#serial(att.allocId, async () => {
          if (this.#attachments.has(att.allocId)) return;
          const now = await this.#load(att.allocId);
          if (now) this.#attachments.set(att.allocId, now);
        });
        adopted.push(att.allocId);
        continue;
      }
      try {
        await this.destroy(att.allocId);
        removed.push(att.allocId);
      } catch (err) {
        this.#logger.warn({ allocId: att.allocId, err: describeError(err) }, 'cannot remove the network of a gone allocation');
      }
    }
    if (adopted.length || removed.length) this.#logger.info({ adopted: adopted.length, removed: removed.length }, 'allocation networks restored');
    return { adopted, removed };
  }

  async #attach(att: Attachment, req: NetworkRequest): Promise<void> {
    const mappings = portMappings(req.ports ?? []);
    if (req.mode === 'bridge') {
      att.bridge = { ...this.#bridge };
      const conf = bridgeConfList(att.bridge);
      // portmap costs most of an attachment (its DEL more); with no port to map it has nothing to do.
      att.conf = mappings.length ? conf : { ...conf, plugins: conf.plugins.filter((p) => p.type !== 'portmap') };
    } else if (req.mode.startsWith('cni/')) {
      att.conf = await loadUserConfList(this.#cniConfigDir, req.mode.slice(4));
    } else {
      throw new NetworkError('NETWORK_MODE_UNSUPPORTED', `network mode "${req.mode}" is not one of host, none, bridge, cni/<name>`);
    }
    att.capabilityArgs = { portMappings: mappings };
    // Written down before ADD: a crash half-way is undone by DEL on restore.
    await this.#save(att);
    const conf = att.conf;
    const add = async (): Promise<void> => {
      if (att.bridge && !this.#forwarding.has(att.bridge.name)) {
        await ensureForwardingRule(att.bridge);
        this.#forwarding.add(att.bridge.name);
      }
      att.result = await this.#cni.add(conf, this.#cniAttachment(att), {
        onStep: async (result) => {
          att.partial = result;
          await this.#save(att);
        },
      });
      delete att.partial;
    };
    if (att.bridge) await this.#serial(`net:${att.bridge.name}`, add);
    else await add();
    await this.#save(att);
  }

  async #detach(att: Attachment): Promise<void> {
    // The namespace goes even when DEL fails: its record stays, and DEL is tried again with it
    // (by destroy, or restore after a restart), as the spec lets DEL run on a namespace that is gone.
    let delFailed: unknown;
    if (att.conf) {
      const conf = att.conf;
      const del = async (): Promise<void> => {
        const prev = att.result ?? att.partial;
        await this.#cni.del(conf, this.#cniAttachment(att), prev);
        // What DEL left of this allocation (a plugin cut by a crash, a result never recorded): found by its ID and addresses.
        const addresses = (prev?.ips ?? []).map((ip) => ip.address.split('/')[0] as string);
        const left = await sweepAllocation(conf.name, att.allocId, addresses);
        if (left.length) this.#logger.warn({ allocId: att.allocId, removed: left }, 'removed what CNI DEL left of the allocation');
        if (att.bridge && !(await hasLeases(att.bridge.name))) {
          this.#forwarding.delete(att.bridge.name);
          await sweepBridge(att.bridge);
        }
      };
      try {
        if (att.bridge) await this.#serial(`net:${att.bridge.name}`, del);
        else await del();
      } catch (err) {
        delFailed = err;
      }
    }
    if (att.ownNetns && existsSync(att.path)) {
      try {
        await run('ip', ['netns', 'delete', path.basename(att.path)]);
      } catch (err) {
        if (existsSync(att.path)) throw err;
      }
    }
    if (delFailed) throw delFailed;
    this.#attachments.delete(att.allocId);
    if (this.#stateDir) await rm(this.#fileFor(att.allocId), { force: true });
    if (att.conf || att.ownNetns) this.#logger.info({ allocId: att.allocId, mode: att.mode }, 'allocation network removed');
  }

  #cniAttachment(att: Attachment): { containerId: string; netnsPath: string; ifName: string; args: Record<string, string>; capabilityArgs: Record<string, unknown> } {
    return { containerId: att.allocId, netnsPath: att.path, ifName: ALLOC_IFNAME, args: { IgnoreUnknown: 'true' }, capabilityArgs: att.capabilityArgs ?? {} };
  }

  #fileFor(allocId: string): string {
    return path.join(this.#stateDir as string, `${this.nameFor(allocId)}.json`);
  }

  async #save(att: Attachment): Promise<void> {
    this.#attachments.set(att.allocId, att);
    if (!this.#stateDir) return;
    await mkdir(this.#stateDir, { recursive: true });
    const file = this.#fileFor(att.allocId);
    await writeFile(`${file}.tmp`, JSON.stringify(att));
    await rename(`${file}.tmp`, file);
  }

  async #load(allocId: string): Promise<Attachment | undefined> {
    if (!this.#stateDir) return undefined;
    try {
      return JSON.parse(await readFile(this.#fileFor(allocId), 'utf8')) as Attachment;
    } catch {
      return undefined;
    }
  }

  async #loadAll(): Promise<Attachment[]> {
    if (!this.#stateDir) return [...this.#attachments.values()];
    let files: string[];
    try {
      files = (await readdir(this.#stateDir)).filter((f) => f.startsWith(this.#prefix) && f.endsWith('.json'));
    } catch {
      return [];
    }
    const out: Attachment[] = [];
    for (const f of files) {
      try {
        out.push(JSON.parse(await readFile(path.join(this.#stateDir, f), 'utf8')) as Attachment);
      } catch (err) {
        this.#logger.warn({ file: f, err: describeError(err) }, 'unreadable network record');
      }
    }
    return out;
  }

  #serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#locks.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.#locks.set(key, tail);
    void tail.then(() => {
      if (this.#locks.get(key) === tail) this.#locks.delete(key);
    });
    return next;
  }
}

function statusOf(att: Attachment): NetworkStatus {
  const ip = att.result?.ips?.[0]?.address;
  return { path: att.path, mode: att.mode, ...(ip ? { address: ip.split('/')[0] as string, interface: ALLOC_IFNAME } : {}) };
}

function stderrOf(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return e.stderr || e.message || String(err);
}
