// The agent's task-driver plugins: the executables of plugin_dir and, when
// the config asks for it, Berth's own drivers run out of process
// (`berth driver serve <name>`), handed to the client's driver manager with
// the wire launcher and the config encoder of src/plugins.

import { describeError, type Logger } from '../lib/index.js';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { detectCgroups, discoverDriverPlugins, DriverManager, type DriverPluginEntry, type DriverPluginLauncher } from '../client/index.js';
import { encodeConfig, launchDriverPlugin } from '../plugins/index.js';
import type { AgentConfig } from './agent-config.js';

export interface AgentDriverPluginsOptions {
  config: AgentConfig;
  /** Where `berth driver serve` keeps the executor state of Berth's drivers run out of process. */
  stateDir: string;
  /** bin/berth.js, to run Berth's own drivers as plugins. */
  berthBin?: string;
  nodeName: string;
  /** Directories put in front of the PATH of tasks that set none (the dev agent's `berth` shim). */
  pathDirs?: readonly string[];
  logger: Logger;
  onChange: () => void;
}

/** Built-in drivers configured by a `plugin "<name>"` block of their own (Nomad's docker driver is configured so). */
const BUILTIN_CONFIGURED: readonly string[] = ['docker'];

/** The wire launcher: go-plugin handshake, health, then Nomad's base and driver services. */
export const launchOverGrpc: DriverPluginLauncher = async (entry, opts) => {
  const { driver, process: proc } = await launchDriverPlugin({ path: entry.file, args: entry.args, logger: opts.logger, signal: opts.signal });
  return {
    driver,
    ...(proc.pid !== undefined ? { pid: proc.pid } : {}),
    exited: proc.exited,
    stop: async () => {
      await proc.shutdown();
      driver.close();
    },
  };
};

/**
 * The plugins this agent runs, or undefined when there are none. A plugin
 * block naming no executable of plugin_dir is logged. Throws nothing.
 */
export function agentDriverPlugins(o: AgentDriverPluginsOptions, launch: DriverPluginLauncher = launchOverGrpc): DriverManager | undefined {
  const log = o.logger.child({ component: 'driver-plugins' });
  const entries: DriverPluginEntry[] = [];
  const blocks = o.config.plugins ?? {};
  if (o.config.pluginDir) {
    const found = discoverDriverPlugins(o.config.pluginDir, blocks, o.config.locatePlugin);
    if (found.error) log.error({ pluginDir: o.config.pluginDir, err: found.error }, 'plugin_dir cannot be read; no driver plugins from it');
    // `plugin "docker"` configures the built-in docker driver when no executable of that name replaces it.
    for (const name of found.unmatched) if (!BUILTIN_CONFIGURED.includes(name)) log.warn({ plugin: name, pluginDir: o.config.pluginDir }, 'a plugin block names no executable of plugin_dir');
    entries.push(...found.entries);
  } else {
    for (const name of Object.keys(blocks)) if (!BUILTIN_CONFIGURED.includes(name)) log.warn({ plugin: name }, 'a plugin block without plugin_dir is ignored');
  }
  for (const [name, mode] of Object.entries(o.config.client.driverModes ?? {})) {
    if (mode !== 'external') continue;
    if (!o.berthBin) {
      log.error({ driver: name }, 'cannot run a built-in driver out of process: the berth executable is unknown');
      continue;
    }
    const block = blocks[name];
    entries.push({
      name: `berth-${name}`,
      file: process.execPath,
      args: [o.berthBin, 'driver', 'serve', name, '--state-dir', o.stateDir],
      // The built-in's own `plugin "<name>" { config {} }` (docker's endpoint, allow_privileged, ...) goes with it out of process.
      ...(block?.config ? { config: block.config } : {}),
      ...(block?.config && o.config.locatePlugin ? { locate: (p: string) => o.config.locatePlugin?.(name, p) } : {}),
    });
  }
  if (entries.length === 0) return undefined;
  return new DriverManager({
    plugins: entries,
    launch,
    encodeConfig: (schema, body) => encodeConfig(schema, body, { path: 'config' }),
    logger: o.logger,
    node: { name: o.nodeName },
    logmonSocket: path.join(o.stateDir, 'logmon.sock'),
    // The tasks' cgroups the drivers are told to use, under a parent of their own (the built-ins' is `berth/<hash>`).
    cgroups: detectCgroups({ parent: `berth/${createHash('sha256').update(o.stateDir).digest('hex').slice(0, 12)}-plugins` }),
    ...(o.pathDirs?.length ? { defaultTaskPath: `${o.pathDirs.join(':')}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin` } : {}),
    onChange: () => {
      try {
        o.onChange();
      } catch (err) {
        log.warn({ err: describeError(err) }, 'driver change listener failed');
      }
    },
  });
}
