// Runs a CNI network configuration list against a network namespace, as the
// CNI spec (SPEC.md, "Execution protocol" and "Network configuration lists")
// asks of a runtime: each plugin is an executable found on CNI_PATH, called
// with CNI_COMMAND/CNI_CONTAINERID/CNI_NETNS/CNI_IFNAME/CNI_ARGS/CNI_PATH in
// its environment and its own configuration (plus name, cniVersion,
// runtimeConfig for the capabilities it declares, and the previous plugin's
// result) on stdin. ADD chains the plugins in order, DEL runs them in reverse
// and CHECK in order, both with the ADD result as prevResult.

import { spawn } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import path from 'node:path';
import { BerthError } from '../../lib/index.js';

export type CniErrorCode = 'NETWORK_CNI_PLUGIN_NOT_FOUND' | 'NETWORK_CNI_PLUGIN_FAILED' | 'NETWORK_CNI_BAD_CONFIG';

/** A CNI plugin failed or could not be run; `message` carries the plugin's own error (msg, details). */
export class CniError extends BerthError {
  declare readonly code: CniErrorCode;
  /** The CNI error code the plugin returned (SPEC.md "Error"), when it returned one. */
  readonly cniCode: number | undefined;
  constructor(code: CniErrorCode, message: string, options?: { cause?: unknown; cniCode?: number }) {
    super(code, message, options);
    this.cniCode = options?.cniCode;
  }
}

/** One plugin of a configuration list: `type` names the executable; the rest is the plugin's. */
export interface CniPluginConf {
  type: string;
  capabilities?: Record<string, boolean>;
  [key: string]: unknown;
}

/** A network configuration list (a .conflist file). */
export interface CniConfList {
  cniVersion: string;
  name: string;
  disableCheck?: boolean;
  plugins: CniPluginConf[];
}

/** The attachment: which namespace, interface and container a call is about. */
export interface CniAttachment {
  containerId: string;
  netnsPath: string;
  ifName: string;
  /** CNI_ARGS pairs. */
  args?: Record<string, string>;
  /** Runtime values for capabilities (e.g. portMappings); given to each plugin declaring the capability. */
  capabilityArgs?: Record<string, unknown>;
}

/** The parts of a CNI result (0.4.0 / 1.0.0) Berth reads. */
export interface CniResult {
  cniVersion: string;
  interfaces?: Array<{ name: string; mac?: string; sandbox?: string }>;
  ips?: Array<{ address: string; gateway?: string; interface?: number; version?: string }>;
  routes?: Array<{ dst: string; gw?: string }>;
  dns?: unknown;
  [key: string]: unknown;
}

export interface CniRunnerOptions {
  /** Directories searched for plugin executables, in order (CNI_PATH). */
  binDirs: readonly string[];
}

/**
 * Calls CNI plugins. Stateless: the caller keeps the ADD result and hands it
 * back to check() and del(). Each call blocks until every plugin it runs has
 * exited; `signal` aborts the call (the running plugin is killed).
 */
export class CniRunner {
  readonly #binDirs: readonly string[];

  constructor(opts: CniRunnerOptions) {
    this.#binDirs = opts.binDirs;
  }

  /**
   * ADD: attaches the namespace to the network, plugin by plugin, each given
   * the previous one's result. Returns the last result. Throws CniError; what
   * the plugins before a failure made is left for the caller's del(), with
   * the result so far, which `onStep` is given after each plugin (and
   * awaited before the next one runs: a caller writes it down there).
   */
  async add(conf: CniConfList, att: CniAttachment, opts: { signal?: AbortSignal; onStep?: (resultSoFar: CniResult) => Promise<void> } = {}): Promise<CniResult> {
    let prev: CniResult | undefined;
    for (const plugin of conf.plugins) {
      const out = await this.#exec('ADD', conf, plugin, att, prev, opts.signal);
      if (!out) throw new CniError('NETWORK_CNI_PLUGIN_FAILED', `CNI plugin ${plugin.type} (network ${conf.name}) returned no result for ADD`);
      prev = out;
      await opts.onStep?.(out);
    }
    if (!prev) throw new CniError('NETWORK_CNI_BAD_CONFIG', `CNI network ${conf.name} has no plugins`);
    return prev;
  }

  /**
   * DEL: detaches, plugins in reverse order. Safe to repeat and on an
   * attachment half made or whose namespace is gone: every plugin runs even
   * when one fails, and the first failure is thrown (CniError) at the end. A
   * plugin that is not installed made nothing to undo: skipped, no failure.
   */
  async del(conf: CniConfList, att: CniAttachment, prevResult: CniResult | undefined, opts: { signal?: AbortSignal } = {}): Promise<void> {
    let first: unknown;
    for (const plugin of [...conf.plugins].reverse()) {
      try {
        await this.#exec('DEL', conf, plugin, att, prevResult, opts.signal);
      } catch (err) {
        if (err instanceof CniError && err.code === 'NETWORK_CNI_PLUGIN_NOT_FOUND') continue;
        first ??= err;
      }
    }
    if (first) throw first;
  }

  /** CHECK: asks each plugin whether the attachment is still as ADD made it. Throws CniError at the first that says no. */
  async check(conf: CniConfList, att: CniAttachment, prevResult: CniResult, opts: { signal?: AbortSignal } = {}): Promise<void> {
    if (conf.disableCheck) return;
    for (const plugin of conf.plugins) await this.#exec('CHECK', conf, plugin, att, prevResult, opts.signal);
  }

  async #find(type: string): Promise<string> {
    if (!/^[A-Za-z0-9._-]+$/.test(type)) throw new CniError('NETWORK_CNI_BAD_CONFIG', `CNI plugin type "${type}" is not a plugin name`);
    for (const dir of this.#binDirs) {
      const file = path.join(dir, type);
      try {
        await access(file, constants.X_OK);
        return file;
      } catch {
        // next directory
      }
    }
    throw new CniError('NETWORK_CNI_PLUGIN_NOT_FOUND', `CNI plugin "${type}" not found in ${this.#binDirs.join(':')} (Debian: apt-get install containernetworking-plugins; or set the client's cni_path)`);
  }

  async #exec(command: 'ADD' | 'DEL' | 'CHECK', conf: CniConfList, plugin: CniPluginConf, att: CniAttachment, prev: CniResult | undefined, signal?: AbortSignal): Promise<CniResult | undefined> {
    const file = await this.#find(plugin.type);
    const stdin = JSON.stringify(pluginInput(conf, plugin, att, prev));
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      CNI_COMMAND: command,
      CNI_CONTAINERID: att.containerId,
      CNI_NETNS: att.netnsPath,
      CNI_IFNAME: att.ifName,
      CNI_ARGS: Object.entries(att.args ?? {}).map(([k, v]) => `${k}=${v}`).join(';'),
      CNI_PATH: this.#binDirs.join(':'),
    };
    const { code, stdout, stderr } = await runPlugin(file, env, stdin, signal);
    if (code !== 0) {
      const e = parseError(stdout);
      const why = e ? `${e.msg}${e.details ? `: ${e.details}` : ''}` : (stderr.trim() || stdout.trim() || `exit code ${code}`);
      throw new CniError('NETWORK_CNI_PLUGIN_FAILED', `CNI plugin ${plugin.type} failed ${command} on network ${conf.name}: ${why}`, e?.code !== undefined ? { cniCode: e.code } : {});
    }
    if (command !== 'ADD') return undefined;
    try {
      return JSON.parse(stdout) as CniResult;
    } catch (err) {
      throw new CniError('NETWORK_CNI_PLUGIN_FAILED', `CNI plugin ${plugin.type} printed no JSON result for ADD`, { cause: err });
    }
  }
}

/** What a plugin reads on stdin: its own conf, the list's name and version, runtimeConfig for its capabilities, prevResult. */
export function pluginInput(conf: CniConfList, plugin: CniPluginConf, att: CniAttachment, prev: CniResult | undefined): Record<string, unknown> {
  const input: Record<string, unknown> = { ...plugin, name: conf.name, cniVersion: conf.cniVersion };
  const runtime: Record<string, unknown> = {};
  for (const [cap, on] of Object.entries(plugin.capabilities ?? {})) {
    if (on && att.capabilityArgs && cap in att.capabilityArgs) runtime[cap] = att.capabilityArgs[cap];
  }
  if (Object.keys(runtime).length) input['runtimeConfig'] = runtime;
  if (prev) input['prevResult'] = prev;
  return input;
}

function parseError(stdout: string): { code?: number; msg: string; details?: string } | undefined {
  try {
    const e = JSON.parse(stdout) as { code?: number; msg?: string; details?: string };
    return typeof e.msg === 'string' ? { msg: e.msg, ...(e.code !== undefined ? { code: e.code } : {}), ...(e.details ? { details: e.details } : {}) } : undefined;
  } catch {
    return undefined;
  }
}

function runPlugin(file: string, env: Record<string, string>, stdin: string, signal?: AbortSignal): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, [], { env, stdio: ['pipe', 'pipe', 'pipe'], ...(signal ? { signal } : {}) });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (err) => reject(new CniError('NETWORK_CNI_PLUGIN_FAILED', `cannot run CNI plugin ${file}: ${err.message}`, { cause: err })));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    child.stdin.on('error', () => undefined);
    child.stdin.end(stdin);
  });
}
