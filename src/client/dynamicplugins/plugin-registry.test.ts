import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { AbortedError, ManualClock } from '../../lib/index.js';
import { SqliteClientStateStore } from '../state/index.js';
import { nextTurn } from '../../../test/support/eventually.js';
import { PluginRegistry, PluginRegistryError, type PluginEvent, type PluginRegistration } from './index.js';

const root = mkdtempSync(join(tmpdir(), 'berth-registry-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const freshPath = (): string => join(root, `r${n++}`, 'client.db');

function open(path = freshPath(), clock = new ManualClock(1_000)): { registry: PluginRegistry; store: SqliteClientStateStore; path: string; clock: ManualClock } {
  const store = SqliteClientStateStore.open(path);
  return { registry: new PluginRegistry({ store, clock }), store, path, clock };
}

const reg = (allocId: string, over: Partial<PluginRegistration> = {}): PluginRegistration => ({
  type: 'csi-node',
  name: 'hostpath',
  version: '1.0.0',
  socketPath: `/run/berth/${allocId}/csi.sock`,
  allocId,
  options: { provider: 'hostpath.csi.berth.dev', mountRoot: `/var/lib/berth/csi/node/hostpath` },
  ...over,
});

/**
 * Reads exactly `count` events, or fails if they are not there. Every change in
 * these tests is a synchronous call that has returned before take() runs, so an
 * event that is not queued by the next turn of the event loop never comes: no
 * wall-clock race, and a missing event fails at once.
 */
async function take(it: AsyncIterator<PluginEvent>, count: number): Promise<PluginEvent[]> {
  const out: PluginEvent[] = [];
  while (out.length < count) {
    const r = await Promise.race([it.next(), nextTurn().then(() => 'stuck' as const)]);
    if (r === 'stuck') assert.fail(`expected ${count} events, got ${out.length}`);
    if (r.done) assert.fail(`iteration ended after ${out.length} of ${count} events`);
    out.push(r.value);
  }
  return out;
}

describe('PluginRegistry', () => {
  it('the most recent allocation serves; when it goes, the next most recent serves again', async () => {
    const { registry, store } = open();
    const ac = new AbortController();
    const events = registry.subscribe({ signal: ac.signal });
    registry.register(reg('a1'));
    registry.register(reg('a2'));
    registry.register(reg('a3'));
    assert.equal(registry.serving('csi-node', 'hostpath')?.allocId, 'a3');
    assert.deepEqual(registry.registrations('csi-node', 'hostpath').map((p) => p.allocId), ['a3', 'a2', 'a1']);

    assert.equal(registry.deregister('csi-node', 'hostpath', 'a3'), true);
    assert.equal(registry.serving('csi-node', 'hostpath')?.allocId, 'a2');
    // An older one going away changes nothing about who serves.
    registry.deregister('csi-node', 'hostpath', 'a1');
    assert.equal(registry.serving('csi-node', 'hostpath')?.allocId, 'a2');
    registry.deregister('csi-node', 'hostpath', 'a2');
    assert.equal(registry.serving('csi-node', 'hostpath'), undefined);

    const got = await take(events, 6);
    assert.deepEqual(
      got.map((e) => [e.kind, e.plugin.allocId, e.serving?.allocId ?? null]),
      [
        ['registered', 'a1', 'a1'],
        ['registered', 'a2', 'a2'],
        ['registered', 'a3', 'a3'],
        ['deregistered', 'a3', 'a2'],
        ['deregistered', 'a1', 'a2'],
        ['deregistered', 'a2', null],
      ],
    );
    ac.abort();
    store.close();
  });

  it('registering the same allocation twice is a no-op: no event, still one registration', async () => {
    const { registry, store } = open();
    const ac = new AbortController();
    const events = registry.subscribe({ signal: ac.signal });
    assert.equal(registry.register(reg('a1')), true);
    registry.register(reg('a2'));
    assert.equal(registry.register(reg('a1')), false);
    // a2 still serves: the repeat did not make a1 the most recent.
    assert.equal(registry.serving('csi-node', 'hostpath')?.allocId, 'a2');
    assert.equal(registry.registrations().length, 2);
    // A changed registration of the same allocation replaces it and becomes the most recent.
    assert.equal(registry.register(reg('a1', { socketPath: '/run/berth/a1/csi-2.sock' })), true);
    assert.equal(registry.serving('csi-node', 'hostpath')?.socketPath, '/run/berth/a1/csi-2.sock');
    assert.equal(registry.registrations().length, 2);
    const got = await take(events, 3);
    assert.deepEqual(got.map((e) => e.plugin.allocId), ['a1', 'a2', 'a1']);
    ac.abort();
    assert.deepEqual(await events.next(), { value: undefined, done: true });
    store.close();
  });

  it('deregistering an allocation that never registered is harmless: no event, no error (scenario 4)', async () => {
    const { registry, store } = open();
    const ac = new AbortController();
    const events = registry.subscribe({ signal: ac.signal });
    assert.equal(registry.deregister('csi-node', 'hostpath', 'crashed-fast'), false);
    assert.equal(registry.deregisterAlloc('crashed-fast'), 0);
    registry.register(reg('a1'));
    assert.equal(registry.deregister('csi-node', 'hostpath', 'crashed-fast'), false);
    assert.equal(registry.deregister('csi-controller', 'hostpath', 'a1'), false);
    // The only event is the real registration.
    const [only] = await take(events, 1);
    assert.equal(only?.kind, 'registered');
    const next = events.next();
    ac.abort();
    assert.deepEqual(await next, { value: undefined, done: true });
    store.close();
  });

  it('a subscriber that reads late still gets every event in order; the iteration ends on its signal', async () => {
    const { registry, store } = open(freshPath());
    const ac = new AbortController();
    const slow = registry.subscribe({ signal: ac.signal });
    const nodeOnly = registry.subscribe({ signal: ac.signal, type: 'csi-node' });
    const count = 2_000;
    store.transaction(() => {
      for (let i = 0; i < count; i++) {
        registry.register(reg(`a${i}`, { name: `p${i % 7}`, type: i % 2 ? 'csi-node' : 'csi-controller' }));
      }
    });
    for (let i = 0; i < count; i += 3) registry.deregister(i % 2 ? 'csi-node' : 'csi-controller', `p${i % 7}`, `a${i}`);
    const expected = count + Math.ceil(count / 3);
    const got = await take(slow, expected);
    assert.deepEqual(got.slice(0, count).map((e) => e.plugin.allocId), Array.from({ length: count }, (_, i) => `a${i}`));
    assert.ok(got.slice(count).every((e) => e.kind === 'deregistered'));
    const nodeEvents = await take(nodeOnly, got.filter((e) => e.plugin.type === 'csi-node').length);
    assert.ok(nodeEvents.every((e) => e.plugin.type === 'csi-node'));
    assert.equal(registry.subscriberCount, 2);
    ac.abort();
    let rest = 0;
    for await (const _ of slow) rest++;
    assert.equal(rest, 0);
    assert.equal(registry.subscriberCount, 0);
    store.close();
  });

  it('breaking out of a for-await loop ends the subscription', async () => {
    const { registry, store } = open();
    registry.register(reg('a0'));
    const seen: string[] = [];
    const loop = (async () => {
      for await (const e of registry.subscribe()) {
        seen.push(e.plugin.allocId);
        if (seen.length === 2) break;
      }
    })();
    registry.register(reg('a1'));
    registry.register(reg('a2'));
    registry.register(reg('a3'));
    await loop;
    assert.deepEqual(seen, ['a1', 'a2']);
    assert.equal(registry.subscriberCount, 0);
    store.close();
  });

  it('a new registry over the same store file comes back with the same registrations and the same serving order', () => {
    const first = open();
    first.registry.register(reg('old'));
    first.registry.register(reg('new'));
    first.registry.register(reg('c1', { type: 'csi-controller', name: 'ebs', options: {} }));
    first.registry.register(reg('gone', { name: 'gone' }));
    first.registry.deregister('csi-node', 'gone', 'gone');
    const before = first.registry.registrations();
    first.store.close();

    const second = open(first.path);
    assert.deepEqual(second.registry.registrations(), before);
    assert.equal(second.registry.serving('csi-node', 'hostpath')?.allocId, 'new');
    assert.deepEqual(second.registry.servingPlugins().map((p) => `${p.type}/${p.name}/${p.allocId}`), ['csi-controller/ebs/c1', 'csi-node/hostpath/new']);
    // Registering after the restart is still "more recent" than what was loaded.
    second.registry.register(reg('newer'));
    second.registry.deregister('csi-node', 'hostpath', 'newer');
    assert.equal(second.registry.serving('csi-node', 'hostpath')?.allocId, 'new');
    second.registry.register(reg('newest'));
    assert.equal(second.registry.serving('csi-node', 'hostpath')?.allocId, 'newest');
    second.store.close();
  });

  it('refuses malformed registrations with a clear error', () => {
    const { registry, store } = open();
    const refused = (r: PluginRegistration, re: RegExp): void =>
      assert.throws(() => registry.register(r), (err: unknown) => err instanceof PluginRegistryError && err.code === 'PLUGIN_BAD_REGISTRATION' && re.test(err.message));
    refused(reg('a', { type: 'csi-monolith' as never }), /unknown type/);
    refused(reg('a', { name: '' }), /name is empty/);
    refused(reg(''), /allocation ID is empty/);
    refused(reg('a', { socketPath: 'relative.sock' }), /socket path must be absolute/);
    refused(reg('a', { options: { mountRoot: 'rel' } }), /mountRoot must be absolute/);
    assert.equal(registry.registrations().length, 0);
    store.close();
  });
});

describe('PluginRegistry.waitForPlugin (scenario 14)', () => {
  it('resolves as soon as the plugin registers, and at once when it already is', async () => {
    const { registry, store, clock } = open();
    const waiting = registry.waitForPlugin('csi-node', 'hostpath', { timeout: 60_000 });
    // Nothing polls: no time passes, and the other type/name do not wake it.
    registry.register(reg('c', { type: 'csi-controller' }));
    registry.register(reg('x', { name: 'other' }));
    registry.register(reg('a1'));
    assert.equal((await waiting).allocId, 'a1');
    assert.equal(clock.now(), 1_000);
    assert.equal((await registry.waitForPlugin('csi-node', 'hostpath')).allocId, 'a1');
    // Its timer is gone once it resolved.
    assert.equal(clock.pending, 0);
    store.close();
  });

  it('rejects with a clear error when the timeout passes first', async () => {
    const { registry, store, clock } = open();
    const waiting = registry.waitForPlugin('csi-node', 'hostpath', { timeout: 30_000 });
    await clock.advance(29_999);
    registry.register(reg('a1', { name: 'other' }));
    const outcome = assert.rejects(waiting, (err: unknown) => {
      assert.ok(err instanceof PluginRegistryError);
      assert.equal(err.code, 'PLUGIN_WAIT_TIMEOUT');
      assert.equal(err.message, 'csi-node plugin "hostpath" did not register within 30000 ms');
      return true;
    });
    await clock.advance(1);
    await outcome;
    store.close();
  });

  it('rejects with AbortedError when its signal fires, and on close', async () => {
    const { registry, store, clock } = open();
    const ac = new AbortController();
    const a = registry.waitForPlugin('csi-node', 'hostpath', { signal: ac.signal, timeout: 1_000 });
    const b = registry.waitForPlugin('csi-controller', 'hostpath');
    ac.abort();
    await assert.rejects(a, AbortedError);
    assert.equal(clock.pending, 0);
    registry.close();
    await assert.rejects(b, (err: unknown) => err instanceof PluginRegistryError && err.code === 'PLUGIN_REGISTRY_CLOSED');
    assert.throws(() => registry.register(reg('a1')), /closed/);
    registry.close();
    store.close();
  });
});
