import { dirname } from 'node:path';
import type { DriverInfo } from '../../structs/index.js';
import { ExecutorDriver, isRoot } from './executor-driver.js';
import { GROUP_NETWORK_MODES, type DriverCapabilities, type TaskHandle } from './task-driver.js';

/**
 * raw_exec: the task is a plain process with no isolation, started in its
 * local/ directory (inside the group's network namespace when one is given).
 * Takes no volume mounts (DRIVER_MOUNTS_UNSUPPORTED).
 */
export class RawExecDriver extends ExecutorDriver {
  readonly name = 'raw_exec' as const;
  readonly capabilities: DriverCapabilities = {
    sendSignals: true,
    exec: true,
    fsIsolation: 'none',
    networkModes: isRoot() ? ['host', ...GROUP_NETWORK_MODES] : ['host'],
    mustInitiateNetwork: false,
    mountConfigs: 'none',
  };

  async fingerprint(): Promise<DriverInfo> {
    this.warmExecutors();
    return { detected: true, healthy: true, healthReason: 'ready', networkModes: [...this.capabilities.networkModes], cgroups: this.cgroups };
  }

  protected execTarget(handle: TaskHandle, command: string[], _tty: boolean): { argv: string[]; env: Record<string, string>; cwd: string } {
    const nsenter = handle.networkNamespacePath ? ['nsenter', `--net=${handle.networkNamespacePath}`, '--'] : [];
    return { argv: [...nsenter, ...command], env: this.taskEnv(handle.taskPid), cwd: dirname(handle.taskDir) };
  }
}
