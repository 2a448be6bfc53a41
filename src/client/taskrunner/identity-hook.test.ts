// The identity hook with a signer standing in for the server and the manual
// clock: the tokens land in the files and env the blocks ask for (0600), a
// token with a ttl is renewed halfway to its expiry with the block's
// change_mode applied, nothing is renewed after the run ends, a rejection
// fails the start with Nomad's reason, and an unreachable server is retried.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import type { IdentityRequest, IdentitySignAnswer, TaskIdentity } from '../../structs/index.js';
import { IdentityError, IdentityHook, renewDelayMs } from './identity-hook.js';
import type { PrestartRequest, TaskHookContext, TaskLifecycle } from './task-hook.js';

let dir: string;
let clock: ManualClock;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'berth-idhook-'));
  mkdirSync(path.join(dir, 'secrets'));
  clock = new ManualClock(1_000_000);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const id = (o: Partial<TaskIdentity> & { name: string }): TaskIdentity => ({ aud: [], env: false, file: false, serviceName: undefined, ...o });

/** A signer that numbers its tokens (`<identity>#<n>`), expiring `ttlMs` after the clock's now when the identity has one. */
function signer(ttlMs: Record<string, number>): { sign: (r: IdentityRequest[], s: AbortSignal) => Promise<IdentitySignAnswer>; calls: IdentityRequest[][] } {
  let n = 0;
  const calls: IdentityRequest[][] = [];
  return {
    calls,
    sign: async (requests) => {
      calls.push(requests);
      return {
        signed: requests.map((r) => {
          const ttl = ttlMs[r.identity];
          return { ...r, jwt: `${r.identity}#${++n}`, ...(ttl ? { expiresAt: clock.now() + ttl } : {}) };
        }),
        rejections: [],
      };
    },
  };
}

function lifecycle(): TaskLifecycle & { restarts: string[]; signals: string[] } {
  const restarts: string[] = [];
  const signals: string[] = [];
  return {
    restarts,
    signals,
    restart: async (reason) => void restarts.push(reason),
    signal: async (sig) => void signals.push(sig),
    event: () => undefined,
  };
}

const request = (): PrestartRequest => ({ env: {}, mounts: [], taskEnv: undefined as never });
const read = (f: string): string => readFileSync(path.join(dir, f), 'utf8');

describe('the identity hook', () => {
  it('writes each token where its block asks, 0600, and adds NOMAD_TOKEN / NOMAD_TOKEN_<name> to the env', async () => {
    const s = signer({});
    const hook = new IdentityHook({
      task: 'web',
      identities: [id({ name: 'vault', env: true, file: true }), id({ name: 'other', file: true, filepath: 'local/o.jwt' }), id({ name: 'default', env: true, file: true })],
      taskDir: { dir, secretsDir: path.join(dir, 'secrets') },
      sign: s.sign,
      clock,
    });
    const req = request();
    await hook.prestart(req);
    assert.deepEqual(s.calls, [[{ task: 'web', identity: 'vault' }, { task: 'web', identity: 'other' }, { task: 'web', identity: 'default' }]]);
    assert.deepEqual(req.env, { NOMAD_TOKEN_vault: 'vault#1', NOMAD_TOKEN: 'default#3' });
    assert.equal(read('secrets/nomad_token'), 'default#3');
    assert.equal(read('secrets/nomad_vault.jwt'), 'vault#1');
    assert.equal(read('local/o.jwt'), 'other#2');
    assert.equal(statSync(path.join(dir, 'secrets/nomad_token')).mode & 0o777, 0o600);
  });

  it('renews a token halfway to its expiry, rewrites its file and applies change_mode, until the run ends', async () => {
    const s = signer({ short: 60_000 });
    const hook = new IdentityHook({
      task: 'web',
      identities: [id({ name: 'short', file: true, ttl: '1m', changeMode: 'signal', changeSignal: 'SIGHUP' })],
      taskDir: { dir, secretsDir: path.join(dir, 'secrets') },
      sign: s.sign,
      clock,
    });
    const runner = lifecycle();
    const run = new AbortController();
    const ctx: TaskHookContext & { recovered: boolean } = { runner, signal: run.signal, taskEnv: undefined as never, recovered: false };
    await hook.prestart(request(), ctx);
    await hook.poststart(ctx);
    await clock.waitForSleepers();
    await clock.advance(29_999);
    assert.equal(read('secrets/nomad_short.jwt'), 'short#1', 'not renewed before half its life');
    assert.deepEqual(runner.signals, []);
    await clock.advance(1);
    await until(() => runner.signals.length === 1);
    assert.equal(read('secrets/nomad_short.jwt'), 'short#2');
    assert.deepEqual(runner.signals, ['SIGHUP']);
    await clock.waitForSleepers();
    run.abort();
    await clock.advance(120_000);
    assert.equal(s.calls.length, 2, 'nothing renewed once the run ended');
  });

  it('restarts the task for change_mode "restart"', async () => {
    const s = signer({ r: 10_000 });
    const hook = new IdentityHook({ task: 'web', identities: [id({ name: 'r', env: true, ttl: '10s', changeMode: 'restart' })], taskDir: { dir, secretsDir: dir }, sign: s.sign, clock });
    const runner = lifecycle();
    const ctx = { runner, signal: new AbortController().signal, taskEnv: undefined as never, recovered: false };
    await hook.prestart(request(), ctx);
    await hook.poststart(ctx);
    await clock.waitForSleepers();
    await clock.advance(5_000);
    await until(() => runner.restarts.length === 1);
    assert.match(runner.restarts[0] ?? '', /Identity\[r\]: new token acquired/);
  });

  it("fails the start with the server's reason for a rejection", async () => {
    const hook = new IdentityHook({
      task: 'web',
      identities: [id({ name: 'default', env: true })],
      taskDir: { dir, secretsDir: dir },
      sign: async (r) => ({ signed: [], rejections: r.map((x) => ({ ...x, reason: 'allocation not found' })) }),
      clock,
    });
    await assert.rejects(hook.prestart(request()), (err: unknown) => err instanceof IdentityError && /identity "default": allocation not found/.test(err.message));
  });

  it('retries a server that cannot be reached, then gives up saying so', async () => {
    let calls = 0;
    const unreachable = Object.assign(new Error('server unreachable'), { retryable: true });
    const hook = new IdentityHook({
      task: 'web',
      identities: [id({ name: 'default', file: true })],
      taskDir: { dir, secretsDir: path.join(dir, 'secrets') },
      sign: async () => {
        calls++;
        throw unreachable;
      },
      clock,
      backoff: { maxAttempts: 3, initialDelayMs: 100, maxDelayMs: 100, multiplier: 1, jitter: 0 },
    });
    const started = hook.prestart(request());
    const failed = assert.rejects(started, /failed to get the task's workload identities from the server: .*server unreachable/);
    for (let i = 0; i < 2; i++) {
      await clock.waitForSleepers();
      await clock.advance(100);
    }
    await failed;
    assert.equal(calls, 3);
  });

  it('renews halfway, at least half a second ahead, and retries an expired one later', () => {
    assert.equal(renewDelayMs(61_000, 1_000, 10_000), 30_000);
    assert.equal(renewDelayMs(1_600, 1_000, 10_000), 500);
    assert.equal(renewDelayMs(1_200, 1_000, 10_000), 200);
    assert.equal(renewDelayMs(900, 1_000, 10_000), 10_000);
  });
});

/** Waits (real time, briefly) for background work the manual clock released. */
async function until(cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met');
    await new Promise((r) => setImmediate(r));
  }
}
