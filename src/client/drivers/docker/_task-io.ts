// What a running container gives back besides its log: resource usage from
// docker's stats (cgroup figures under both hierarchies), and commands run
// inside it through the exec API, with a TTY and its resizes.

import type Dockerode from 'dockerode';
import { AbortedError } from '../../../lib/index.js';
import type { ExecOptions, TaskResourceUsage } from '../task-driver.js';

/** A stats sample's cumulative CPU time, to compute the next sample's percent. */
export interface CpuMark {
  totalMs: number;
  at: number;
}

interface DockerStats {
  read?: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number; usage_in_usermode?: number; usage_in_kernelmode?: number }; throttling_data?: { throttled_periods?: number; throttled_time?: number } };
  memory_stats?: { usage?: number; max_usage?: number; stats?: Record<string, number | undefined> };
}

/** The container's usage now; percent is against `prev` (0 without one). Throws docker's error. */
export async function containerStats(docker: Dockerode, containerId: string, now: number, prev?: CpuMark): Promise<{ usage: TaskResourceUsage; mark: CpuMark }> {
  // one-shot: no second sample taken by dockerd (which would cost a second per call).
  const s = (await docker.getContainer(containerId).stats({ stream: false, 'one-shot': true } as { stream: false })) as unknown as DockerStats;
  const cpu = s.cpu_stats?.cpu_usage ?? {};
  const ns = (n: number | undefined): number => (n ?? 0) / 1e6;
  const totalMs = ns(cpu.total_usage);
  const percent = prev && now > prev.at ? Math.max(0, ((totalMs - prev.totalMs) / (now - prev.at)) * 100) : 0;
  const m = s.memory_stats ?? {};
  const st = m.stats ?? {};
  // cgroup v1 names rss/cache; v2 anon/file.
  const rss = st['rss'] ?? st['anon'] ?? 0;
  const cache = st['cache'] ?? st['file'] ?? 0;
  return {
    mark: { totalMs, at: now },
    usage: {
      timestamp: now,
      source: 'cgroup',
      cpu: {
        userMs: ns(cpu.usage_in_usermode),
        systemMs: ns(cpu.usage_in_kernelmode),
        totalMs,
        percent,
        throttledPeriods: s.cpu_stats?.throttling_data?.throttled_periods ?? 0,
        throttledMs: ns(s.cpu_stats?.throttling_data?.throttled_time),
      },
      memory: { rssBytes: rss, cacheBytes: cache, usageBytes: m.usage ?? 0, maxUsageBytes: m.max_usage ?? m.usage ?? 0 },
      pids: [],
    },
  };
}

/**
 * Runs a command in the container (`alloc exec`), resolving with its exit
 * code once it ended and its output was delivered. Aborting detaches from it
 * and rejects with AbortedError (docker cannot kill an exec; the command
 * ends with its stdin). Throws docker's error when the exec cannot start.
 */
export async function execInContainer(docker: Dockerode, containerId: string, opts: ExecOptions): Promise<{ exitCode: number }> {
  if (opts.signal?.aborted) throw new AbortedError('exec aborted', { cause: opts.signal.reason });
  const tty = opts.tty ?? false;
  const exec = await docker.getContainer(containerId).exec({ Cmd: opts.command, AttachStdin: true, AttachStdout: true, AttachStderr: !tty, Tty: tty });
  const stream = (await exec.start({ hijack: true, stdin: true, Tty: tty })) as NodeJS.ReadWriteStream & { destroy(): void };
  // Listeners first: the hijacked stream flows at once, and a short command's output and end may come before any await returns.
  const ended = new Promise<void>((resolve) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
  if (tty) stream.on('data', (c: Buffer) => opts.stdout.write(c));
  else docker.modem.demuxStream(stream, opts.stdout, opts.stderr ?? opts.stdout);
  const size = opts.size ?? { cols: 80, rows: 24 };
  if (tty) await exec.resize({ h: size.rows, w: size.cols }).catch(() => undefined);
  const feeding = (async (): Promise<void> => {
    try {
      for await (const chunk of opts.stdin ?? []) stream.write(typeof chunk === 'string' ? chunk : Buffer.from(chunk));
      // The end of stdin: half-close, so that `cat` and shells see EOF. Not
      // with a TTY: dockerd then closes the terminal's output too, and what the
      // command has yet to print is lost. A terminal's end of input is Ctrl-D,
      // sent when the caller's stdin ended; with no stdin at all, nothing.
      if (!tty) (stream as unknown as { end(): void }).end();
      else if (opts.stdin) stream.write('\x04');
    } catch {
      // The session went away.
    }
  })();
  const resizing = (async (): Promise<void> => {
    if (!tty || !opts.resize) return;
    for await (const s of opts.resize) await exec.resize({ h: s.rows, w: s.cols }).catch(() => undefined);
  })();
  void resizing.catch(() => undefined);
  void feeding;
  await new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      stream.destroy();
      reject(new AbortedError('exec aborted', { cause: opts.signal?.reason }));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    void ended.then(() => {
      opts.signal?.removeEventListener('abort', onAbort);
      resolve();
    });
  });
  // dockerd may close the stream a moment before it records the exit: asked until it has.
  for (let i = 0; ; i++) {
    const info = await exec.inspect();
    if (!info.Running && info.ExitCode !== null && info.ExitCode !== undefined) return { exitCode: info.ExitCode };
    if (i >= 250) return { exitCode: -1 };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
