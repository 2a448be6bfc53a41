// Images: pulled when missing (or always with force_pull), with progress as
// task events and Nomad's pull_activity_timeout (a pull that shows no
// progress for that long is cancelled); and collected as Nomad's `gc`
// block says: an image no task of this driver uses any more is removed
// image_delay later, unless a task took it up again meanwhile.

import type Dockerode from 'dockerode';
import { AbortedError, type Clock, type Logger } from '../../../lib/index.js';
import { DriverError } from '../driver-error.js';

/** `repo[:tag]` with docker's default tag (`latest`) when none is given; digests stay as written. */
export function imageReference(image: string): string {
  if (image.includes('@')) return image;
  const lastSlash = image.lastIndexOf('/');
  return image.slice(lastSlash + 1).includes(':') ? image : `${image}:latest`;
}

export interface PullOptions {
  auth?: { username?: string; password?: string; email?: string; server_address?: string };
  forcePull: boolean;
  activityTimeoutMs: number;
  /** Progress in words, for task events: the start, then at most every progressEveryMs. */
  onProgress?: (message: string) => void;
  progressEveryMs?: number;
  signal?: AbortSignal;
}

interface ProgressEvent {
  status?: string;
  id?: string;
  error?: string;
  errorDetail?: { message?: string };
  progressDetail?: { current?: number; total?: number };
}

/**
 * The image's id, pulling it first when it is not present (or forcePull).
 * Throws DriverError DRIVER_START_FAILED with docker's words when the pull
 * fails (not recoverable when the image or tag does not exist), or
 * AbortedError.
 */
export async function ensureImage(docker: Dockerode, image: string, clock: Clock, opts: PullOptions): Promise<string> {
  const ref = imageReference(image);
  if (!opts.forcePull) {
    const present = await inspectImage(docker, ref);
    if (present) return present;
  }
  opts.onProgress?.(`Downloading image ${ref}`);
  await pull(docker, ref, clock, opts);
  const id = await inspectImage(docker, ref);
  if (!id) throw new DriverError('DRIVER_START_FAILED', `image ${ref} was pulled but docker does not list it`);
  return id;
}

async function inspectImage(docker: Dockerode, ref: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(ref).inspect()).Id;
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return undefined;
    throw new DriverError('DRIVER_START_FAILED', `cannot inspect image ${ref}: ${(err as Error).message}`, { cause: err });
  }
}

async function pull(docker: Dockerode, ref: string, clock: Clock, opts: PullOptions): Promise<void> {
  const authconfig = opts.auth?.username || opts.auth?.password ? { username: opts.auth.username ?? '', password: opts.auth.password ?? '', ...(opts.auth.email ? { email: opts.auth.email } : {}), serveraddress: opts.auth.server_address ?? registryOf(ref) } : undefined;
  let stream: NodeJS.ReadableStream;
  try {
    stream = (await docker.pull(ref, { ...(authconfig ? { authconfig } : {}), ...(opts.signal ? { abortSignal: opts.signal } : {}) })) as NodeJS.ReadableStream;
  } catch (err) {
    throw pullError(ref, err);
  }
  const layers = new Map<string, { current: number; total: number; done: boolean }>();
  let lastReport = clock.now();
  const every = opts.progressEveryMs ?? 10_000;
  await new Promise<void>((resolve, reject) => {
    let idle: NodeJS.Timeout | undefined;
    const finish = (err?: unknown): void => {
      clearTimeout(idle);
      opts.signal?.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve();
    };
    // The activity timeout: a registry that stops answering mid-pull is given up on, not waited for forever.
    const arm = (): void => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        (stream as unknown as { destroy?: () => void }).destroy?.();
        finish(new DriverError('DRIVER_START_FAILED', `image ${ref}: pull made no progress for ${Math.round(opts.activityTimeoutMs / 1000)} s (pull_activity_timeout); cancelled`));
      }, opts.activityTimeoutMs);
    };
    const onAbort = (): void => {
      (stream as unknown as { destroy?: () => void }).destroy?.();
      finish(new AbortedError(`pull of ${ref} aborted`, { cause: opts.signal?.reason }));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    arm();
    docker.modem.followProgress(
      stream,
      (err: Error | null) => finish(err ? pullError(ref, err) : undefined),
      (ev: ProgressEvent) => {
        arm();
        if (ev.error) return;
        if (ev.id && ev.progressDetail?.total) layers.set(ev.id, { current: ev.progressDetail.current ?? 0, total: ev.progressDetail.total, done: false });
        if (ev.id && /complete|already exists/i.test(ev.status ?? '')) layers.set(ev.id, { ...(layers.get(ev.id) ?? { current: 0, total: 0 }), done: true });
        if (clock.now() - lastReport >= every && layers.size) {
          lastReport = clock.now();
          const done = [...layers.values()].filter((l) => l.done).length;
          const bytes = [...layers.values()].reduce((a, l) => a + (l.done ? l.total : l.current), 0);
          const total = [...layers.values()].reduce((a, l) => a + l.total, 0);
          opts.onProgress?.(`Image ${ref} pull progress: pulled ${done}/${layers.size} layers (${mib(bytes)}/${mib(total)} MiB)`);
        }
      },
    );
  });
}

function mib(n: number): string {
  return (n / (1024 * 1024)).toFixed(1);
}

/** The registry host of a reference (docker.io when it names none). */
function registryOf(ref: string): string {
  const first = ref.split('/')[0] ?? '';
  return ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost') ? first : 'https://index.docker.io/v1/';
}

function pullError(ref: string, err: unknown): DriverError {
  const msg = ((err as { json?: { message?: string } }).json?.message ?? (err as Error).message ?? String(err)).trim();
  // A name or tag that does not exist will not appear by retrying; a registry that is down might.
  const missing = /not found|manifest unknown|does not exist|repository .* not found|pull access denied/i.test(msg);
  return new DriverError('DRIVER_START_FAILED', `failed to pull image ${ref}: ${msg}`, { cause: err, recoverable: !missing });
}

/**
 * Nomad's image garbage collection: counts the tasks using each image and
 * removes an image image_delay after its last task let go. Removal failures
 * (another container still uses it) are logged, not raised.
 */
export class ImageCollector {
  readonly #users = new Map<string, Set<string>>();
  readonly #pending = new Map<string, AbortController>();
  readonly #docker: () => Promise<Dockerode>;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #enabled: boolean;
  readonly #delayMs: number;

  constructor(o: { docker: () => Promise<Dockerode>; clock: Clock; logger: Logger; enabled: boolean; delayMs: number }) {
    this.#docker = o.docker;
    this.#clock = o.clock;
    this.#log = o.logger;
    this.#enabled = o.enabled;
    this.#delayMs = o.delayMs;
  }

  /** A task uses the image: a removal scheduled for it is called off. Idempotent. */
  acquire(imageId: string, taskId: string): void {
    this.#pending.get(imageId)?.abort();
    this.#pending.delete(imageId);
    const users = this.#users.get(imageId) ?? new Set<string>();
    users.add(taskId);
    this.#users.set(imageId, users);
  }

  /** The task no longer uses it; the last user's release schedules the removal. Idempotent. */
  release(imageId: string, taskId: string): void {
    const users = this.#users.get(imageId);
    if (!users?.delete(taskId) || users.size > 0) return;
    this.#users.delete(imageId);
    if (!this.#enabled) return;
    const cancel = new AbortController();
    this.#pending.set(imageId, cancel);
    this.#clock.sleep(this.#delayMs, cancel.signal).then(
      async () => {
        this.#pending.delete(imageId);
        try {
          await (await this.#docker()).getImage(imageId).remove();
          this.#log.info({ image: imageId }, 'unused image removed (gc.image)');
        } catch (err) {
          this.#log.debug({ image: imageId, err: (err as Error).message }, 'unused image not removed');
        }
      },
      () => undefined,
    );
  }

  /** Calls off every scheduled removal (the driver shuts down; a new agent will count again). */
  stop(): void {
    for (const c of this.#pending.values()) c.abort();
    this.#pending.clear();
  }
}
