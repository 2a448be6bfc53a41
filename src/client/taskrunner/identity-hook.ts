// The identity hook (Nomad's taskrunner identity_hook.go and its widmgr):
// before the task starts, gets the task's workload identities signed by the
// server and hands them over as each `identity` block asks: in a file of the
// task's secrets dir (secrets/nomad_token, secrets/nomad_<name>.jwt, or the
// block's filepath), mode 0600 and owned by the task's user, and in its env
// (NOMAD_TOKEN, NOMAD_TOKEN_<name>). Every start fetches fresh tokens. While
// the task runs, an identity with a ttl is renewed halfway to its expiry
// (Nomad's ExpiryToRenewTime): its file is rewritten and its change_mode
// applied (restart, signal, or nothing; the env only changes with a restart).

import { chown, mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AbortedError, BerthError, describeError, retry, silentLogger, systemClock, type BackoffPolicy, type Clock, type Logger } from '../../lib/index.js';
import { identityEnv, identityFile, type IdentityRequest, type IdentitySignAnswer, type SignedIdentity, type TaskIdentity } from '../../structs/index.js';
import type { TaskDir } from '../allocdir/index.js';
import type { PrestartRequest, TaskHook, TaskHookContext } from './task-hook.js';

/** Why a task's identities could not be had: the server unreachable past the retries, or a rejection (with Nomad's reason). */
export class IdentityError extends BerthError<'TASK_IDENTITY_FAILED'> {}

/** Asks the server to sign identities of this hook's allocation. Rejects when the server cannot be reached. */
export type IdentitySigner = (requests: IdentityRequest[], signal: AbortSignal) => Promise<IdentitySignAnswer>;

export interface IdentityHookOptions {
  task: string;
  identities: readonly TaskIdentity[];
  taskDir: Pick<TaskDir, 'dir' | 'secretsDir'>;
  sign: IdentitySigner;
  /** The uid and gid of the task's `user`, who owns the token files; undefined: the agent's (root). */
  owner?: () => { uid: number; gid: number } | undefined;
  clock?: Clock;
  logger?: Logger;
  /** Retries of a signing the server did not answer; default 250 ms doubling to 5 s, for about a minute (Nomad waits a minute). */
  backoff?: BackoffPolicy;
  /** The wait before a failed renewal is tried again; default 10 s. */
  retryMs?: number;
}

const DEFAULT_BACKOFF: BackoffPolicy = { maxAttempts: 15, initialDelayMs: 250, maxDelayMs: 5_000, multiplier: 2, jitter: 0.2 };

/**
 * How long to wait before renewing a token that expires at `expiresAt`:
 * halfway from `now` (Nomad's ExpiryToRenewTime, without its jitter), at
 * least half a second; `retryMs` once it has expired. Pure.
 */
export function renewDelayMs(expiresAt: number, now: number, retryMs: number): number {
  const left = expiresAt - now;
  return left > 0 ? Math.max(Math.floor(left / 2), Math.min(500, left)) : retryMs;
}

/** One per task. The task runner calls it in order; not reentrant per run. */
export class IdentityHook implements TaskHook {
  readonly name = 'identity';
  readonly #o: IdentityHookOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** When the soonest token of this run expires (ms since the epoch); undefined when none does. */
  #soonest: number | undefined;

  constructor(opts: IdentityHookOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'identity-hook', task: opts.task });
  }

  /** Fetches every identity of the task, writes the files and adds the env. Throws IdentityError (this start fails; the restart policy decides). */
  async prestart(req: PrestartRequest, ctx?: TaskHookContext): Promise<void> {
    this.#soonest = undefined;
    if (!this.#o.identities.length) return;
    const signed = await this.#fetch(this.#o.identities, ctx?.signal);
    for (const id of this.#o.identities) {
      const token = signed.get(id.name) as SignedIdentity;
      if (id.env) req.env[identityEnv(id.name)] = token.jwt;
      if (id.file) await this.#write(id, token.jwt);
    }
    this.#soonest = soonestExpiry(signed);
  }

  /**
   * Renews the identities that expire, in the background until this run of
   * the task ends. After an agent restart (the task reattached), first
   * rewrites every token file: they may have expired while it was down.
   */
  async poststart(ctx: TaskHookContext & { recovered: boolean }): Promise<void> {
    const expiring = this.#o.identities.filter((id) => id.ttl !== undefined);
    if (!expiring.length && !ctx.recovered) return;
    void this.#renewLoop(expiring, ctx).catch((err: unknown) => {
      if (!(err instanceof AbortedError)) this.#log.error({ err: describeError(err) }, 'identity renewal stopped');
    });
  }

  async #renewLoop(expiring: readonly TaskIdentity[], ctx: TaskHookContext & { recovered: boolean }): Promise<void> {
    const retryMs = this.#o.retryMs ?? 10_000;
    if (ctx.recovered) {
      const files = this.#o.identities.filter((id) => id.file);
      try {
        const signed = await this.#fetch(files, ctx.signal);
        for (const id of files) await this.#write(id, (signed.get(id.name) as SignedIdentity).jwt);
        this.#soonest = soonestExpiry(signed);
      } catch (err) {
        if (ctx.signal.aborted) return;
        this.#log.warn({ err: describeError(err) }, 'refreshing the identity files after an agent restart failed; renewing later');
        this.#soonest = this.#clock.now();
      }
    }
    while (expiring.length && this.#soonest !== undefined) {
      await this.#clock.sleep(renewDelayMs(this.#soonest, this.#clock.now(), retryMs), ctx.signal);
      let signed: Map<string, SignedIdentity>;
      try {
        signed = await this.#fetch(expiring, ctx.signal);
      } catch (err) {
        if (ctx.signal.aborted) return;
        this.#log.warn({ err: describeError(err) }, 'identity renewal failed; trying again');
        this.#soonest = this.#clock.now();
        continue;
      }
      for (const id of expiring) if (id.file) await this.#write(id, (signed.get(id.name) as SignedIdentity).jwt);
      this.#soonest = soonestExpiry(signed);
      await this.#applyChangeModes(expiring, ctx);
    }
  }

  async #applyChangeModes(renewed: readonly TaskIdentity[], ctx: TaskHookContext): Promise<void> {
    const restart = renewed.filter((id) => id.changeMode === 'restart');
    if (restart.length) {
      await ctx.runner.restart(`Identity[${restart.map((id) => id.name).join(', ')}]: new token acquired`);
      return;
    }
    for (const id of renewed) {
      if (id.changeMode !== 'signal' || !id.changeSignal) continue;
      await ctx.runner.signal(id.changeSignal, `Identity[${id.name}]: new Identity token acquired`).catch((err: unknown) => {
        this.#log.error({ identity: id.name, signal: id.changeSignal, err: describeError(err) }, 'failed to send signal');
      });
    }
  }

  /** Signs `ids`, retrying while the server cannot be reached. Throws IdentityError naming a rejection and its reason. */
  async #fetch(ids: readonly TaskIdentity[], signal: AbortSignal | undefined): Promise<Map<string, SignedIdentity>> {
    const requests = ids.map((id) => ({ task: this.#o.task, identity: id.name }));
    const live = signal ?? new AbortController().signal;
    let answer: IdentitySignAnswer;
    try {
      answer = await retry(() => this.#o.sign(requests, live), {
        policy: this.#o.backoff ?? DEFAULT_BACKOFF,
        // A server that could not be reached (ServerConnError's retryable); a refusal is not retried.
        shouldRetry: (err) => err instanceof Error && 'retryable' in err && err.retryable === true,
        signal: live,
        clock: this.#clock,
      });
    } catch (err) {
      if (err instanceof AbortedError) throw err;
      throw new IdentityError('TASK_IDENTITY_FAILED', `failed to get the task's workload identities from the server: ${describeError(err)}`, { cause: err });
    }
    const rejected = answer.rejections[0];
    if (rejected) throw new IdentityError('TASK_IDENTITY_FAILED', `the server refused to sign identity "${rejected.identity}": ${rejected.reason}`);
    const signed = new Map(answer.signed.filter((s) => s.task === this.#o.task).map((s) => [s.identity, s]));
    const missing = ids.find((id) => !signed.has(id.name));
    if (missing) throw new IdentityError('TASK_IDENTITY_FAILED', `the server did not sign identity "${missing.name}"`);
    return signed;
  }

  /** Writes a token file atomically, 0600 and owned by the task's user. */
  async #write(id: TaskIdentity, jwt: string): Promise<void> {
    const target = path.join(this.#o.taskDir.dir, identityFile(id));
    await mkdir(path.dirname(target), { recursive: true });
    const tmp = `${target}.${process.pid}.tmp`;
    await writeFile(tmp, jwt, { mode: 0o600 });
    const owner = this.#o.owner?.();
    if (owner) await chown(tmp, owner.uid, owner.gid);
    await rename(tmp, target);
  }
}

/** The soonest expiry among `signed`; undefined when none expires. */
function soonestExpiry(signed: ReadonlyMap<string, SignedIdentity>): number | undefined {
  const times = [...signed.values()].flatMap((s) => (s.expiresAt === undefined ? [] : [s.expiresAt]));
  return times.length ? Math.min(...times) : undefined;
}
