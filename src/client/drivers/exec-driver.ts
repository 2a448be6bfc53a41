import type { DriverInfo } from '../../structs/index.js';
import { DriverError } from './driver-error.js';
import { ExecutorDriver, isRoot, missingTools } from './executor-driver.js';
import { childrenOf } from './_proc.js';
import { GROUP_NETWORK_MODES, type DriverCapabilities, type TaskHandle } from './task-driver.js';

const TOOLS = ['unshare', 'nsenter', 'chroot', 'mount', 'findmnt', 'mountpoint'];

/**
 * exec: the task runs in its own mount and PID namespaces (it is pid 1
 * there), chrooted into a private root holding the host's /bin /sbin /lib
 * /lib64 /usr /etc read-only, /proc, a minimal /dev, a tmpfs /tmp, its
 * local/ at /local (its working directory), the allocation's shared alloc/
 * at /alloc, secrets/ at /secrets, and each volume at its destination with
 * the requested propagation. A source of a host-to-task or bidirectional
 * mount is made a shared mount point on the host (bound onto itself when it
 * is a plain directory; that bind stays, as mounts may live under it).
 * Pid 1 there is Berth's init (a few lines of sh): it runs the task as its
 * child, forwards signals to it and reaps orphans, so a shell loop stops on
 * SIGTERM at once. `alloc exec -t` gets a terminal of the task's own devpts
 * (/dev/pts, /dev/ptmx, /dev/tty exist inside the root).
 */
export class ExecDriver extends ExecutorDriver {
  readonly name = 'exec' as const;
  readonly capabilities: DriverCapabilities = {
    sendSignals: true,
    exec: true,
    fsIsolation: 'chroot',
    networkModes: ['host', ...GROUP_NETWORK_MODES],
    mustInitiateNetwork: false,
    mountConfigs: 'any',
  };

  async fingerprint(): Promise<DriverInfo> {
    const base = { networkModes: [...this.capabilities.networkModes], cgroups: this.cgroups };
    if (process.platform !== 'linux') return { ...base, detected: false, healthy: false, healthReason: 'exec needs Linux namespaces' };
    if (!isRoot()) return { ...base, detected: true, healthy: false, healthReason: 'exec needs to run as root' };
    const missing = missingTools(TOOLS);
    if (missing.length) return { ...base, detected: true, healthy: false, healthReason: `missing tools: ${missing.join(', ')}` };
    this.warmExecutors();
    return { ...base, detected: true, healthy: true, healthReason: 'ready' };
  }

  protected execTarget(handle: TaskHandle, command: string[], tty: boolean): { argv: string[]; env: Record<string, string>; cwd: string } {
    const init = namespaceInit(handle);
    // With a tty, script(1) opens a terminal of the task's own devpts (so `tty`
    // names a /dev/pts entry that exists inside the root and job control has a
    // controlling terminal there) and relays it to the agent's pty; -e hands
    // back the command's exit code.
    const inner = tty ? ['script', '-qfec', command.map(shellQuote).join(' '), '/dev/null'] : command;
    // nsenter resolves --wd before entering the root, hence the shell's cd inside it (to the task directory, `/`).
    const argv = ['nsenter', '-t', String(init), '-m', '-p', '-n', '-r', '-w', '--', '/bin/sh', '-c', 'cd /; exec "$@"', 'sh', ...inner];
    const env = this.taskEnv(init);
    return { argv, env: tty ? { ...env, SHELL: '/bin/sh' } : env, cwd: '/' };
  }
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Pid 1 of an exec task's namespaces (the child of its unshare). */
function namespaceInit(handle: TaskHandle): number {
  const [init] = childrenOf(handle.taskPid);
  if (!init) throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${handle.taskName} has no running process to enter`);
  return init;
}
