// A worker's own copy of the API's listening socket. Every worker accepts
// on the socket main listens on, but a worker must not listen on main's fd
// itself: a thread's handles are closed when it ends, and closing main's fd
// under main's listener crashes the process (libuv asserts) or, once the
// number is reused, closes someone else's file. A duplicate fd is a socket
// of its own to close. Node has no dup(), so a throwaway child process is
// given the fd (its stdio entry 4) and sends it back over its IPC channel:
// the kernel (SCM_RIGHTS) installs a new fd for it here. The child never
// accepts (it wraps the fd in a handle that never listens), so no
// connection can land in it.

import { spawn } from 'node:child_process';
import type { Server } from 'node:net';

/** The child: wraps fd 4 in a TCP handle (never polled) and sends it to its parent. */
const CHILD = `const { TCP, constants } = process.binding('tcp_wrap');
const h = new TCP(constants.SERVER);
const err = h.open(4);
if (err) { process.stderr.write('cannot open the listening socket (' + err + ')'); process.exit(3); }
process.send('listening-socket', h, () => process.disconnect());`;

/** A TCP handle (Node's tcp_wrap) as this code uses it: a listening socket's fd, polled once `listen` is called. */
export interface TcpHandle {
  readonly fd: number;
  listen(backlog: number): number;
  close(callback?: () => void): void;
  onconnection?: unknown;
}

/** Listens `server` on a duplicate of `fd` (a listening TCP socket of this process). */
export async function listenOnDuplicate(server: Server, fd: number, timeoutMs = 30_000): Promise<void> {
  const handle = await duplicateListener(fd, timeoutMs);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(handle, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * A duplicate of `fd` (a listening TCP socket of this process) as a handle
 * of its own, not polled: nothing lands in it until its `listen` is called.
 * The caller closes it.
 */
export function duplicateListener(fd: number, timeoutMs = 30_000): Promise<TcpHandle> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-deprecation', '-e', CHILD], { stdio: ['ignore', 'ignore', 'pipe', 'ipc', fd], env: {} });
    let stderr = '';
    let settled = false;
    const done = (err: Error | undefined, handle?: TcpHandle): void => {
      if (settled) {
        handle?.close();
        return;
      }
      settled = true;
      clearTimeout(timer);
      if (err || !handle) {
        child.kill('SIGKILL');
        reject(err ?? new Error('the listening socket did not come back'));
      } else resolve(handle);
    };
    const timer = setTimeout(() => done(new Error(`no copy of the listening socket within ${timeoutMs} ms`)), timeoutMs);
    child.stderr?.on('data', (b: Buffer) => {
      stderr += b.toString();
    });
    child.once('message', (_msg, handle) => done(undefined, handle as TcpHandle | undefined));
    child.once('error', (err) => done(err));
    child.once('exit', (code) => {
      if (code) done(new Error(`the helper that copies the listening socket exited ${code}: ${stderr.trim()}`));
    });
  });
}
