import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import { CsiClient } from '../../csi/index.js';
import { AbortedError } from '../../lib/index.js';
import { PluginRegistry, type PluginEvent } from '../dynamicplugins/index.js';
import { SqliteClientStateStore } from '../state/index.js';
import { eventually, nextTurn } from '../../../test/support/eventually.js';
import { ManagerHarness } from '../../../test/support/client-csimanager.js';
import { CsiManagerError, type PluginSource } from './index.js';

const isNotHealthy = (re: RegExp) => (err: unknown) => err instanceof CsiManagerError && err.code === 'CSI_PLUGIN_UNHEALTHY' && re.test(err.message);
const VOLUME_RPCS = new Set(['NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume', 'NodeGetVolumeStats', 'NodeExpandVolume']);

describe('CsiManager: finding and fingerprinting plugins', () => {
  it('a plugin whose socket appears after the agent started is detected, fingerprinted and healthy (scenario 1)', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const fake = h.fake('late', {
      name: 'late.csi.example.com',
      vendorVersion: '3.1.4',
      nodeId: 'plugin-node-7',
      maxVolumesPerNode: 12,
      topology: { 'topology.example.com/zone': 'z9' },
    });
    await h.manager.start();
    h.register('a1', fake.socketPath);
    await h.until(() => /to appear/.test(h.report('fake')?.healthReason ?? ''), 'the missing socket is reported');
    const waiting = h.report('fake')!;
    assert.equal(waiting.healthy, false);
    assert.equal(waiting.allocId, 'a1');
    assert.equal(waiting.fingerprint, undefined);
    assert.throws(() => h.manager.volumeManagerFor('fake'), isNotHealthy(/is not healthy: waiting for the plugin socket .*late\.sock to appear/));

    await fake.start();
    await h.until(() => h.report('fake')?.healthy === true, 'the plugin is healthy');
    const report = h.report('fake')!;
    assert.equal(report.provider, 'late.csi.example.com');
    assert.equal(report.version, '3.1.4');
    assert.equal(report.healthReason, 'probe answered ready');
    assert.deepEqual(report.fingerprint?.node?.info, { nodeId: 'plugin-node-7', maxVolumesPerNode: 12, accessibleTopology: { 'topology.example.com/zone': 'z9' } });
    assert.deepEqual(report.fingerprint?.node?.capabilities, ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME']);
    assert.deepEqual(report.fingerprint?.capabilities.services, ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS']);
    const messages = h.messages();
    assert.ok(messages.includes('CSI csi-node plugin "fake" registered by allocation a1'), messages.join('\n'));
    assert.ok(messages.some((m) => /is unhealthy: waiting for the plugin socket/.test(m)));
    assert.ok(messages.includes('CSI csi-node plugin "fake" fingerprinted: late.csi.example.com version 3.1.4'));
    assert.ok(messages.includes('CSI csi-node plugin "fake" is healthy'));
    const healthy = h.events.find((e) => e.message.endsWith('is healthy'))!;
    assert.deepEqual(
      { subsystem: healthy.subsystem, plugin: healthy.details['plugin'], allocId: healthy.details['allocId'], provider: healthy.details['provider'] },
      { subsystem: 'csi', plugin: 'fake', allocId: 'a1', provider: 'late.csi.example.com' },
    );
    // The mounter is handed out now (once its volume manager has loaded its records).
    await h.until(() => h.mountable('fake'), 'mountable');
  });

  it('probe ready=false is "starting", not an error; the plugin turns healthy when ready', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const fake = h.fake('p');
    fake.probeNotReady(3);
    await fake.start();
    h.register('a1', fake.socketPath);
    await h.manager.start();
    await h.until(() => h.report('fake')?.healthReason === 'plugin is starting (probe answered ready=false)', 'starting is reported', 10);
    assert.equal(h.report('fake')?.healthy, false);
    assert.ok(h.report('fake')?.fingerprint, 'fingerprinted while starting');
    await h.until(() => h.report('fake')?.healthy === true, 'healthy once ready');
    assert.equal(fake.callsTo('Probe').length, 4);
    assert.equal(h.healthTimeouts.length, 0);
  });

  it('a monolith registers as controller and node: two reports, each with its own capabilities', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const fake = h.fake('mono');
    await fake.start();
    h.register('a1', fake.socketPath, { type: 'csi-controller' });
    h.register('a1', fake.socketPath, { type: 'csi-node' });
    await h.manager.start();
    await h.until(() => h.report('fake', 'csi-node')?.healthy === true && h.report('fake', 'csi-controller')?.healthy === true, 'both healthy');
    const controller = h.report('fake', 'csi-controller')!;
    assert.ok(controller.fingerprint?.controller?.capabilities.includes('PUBLISH_UNPUBLISH_VOLUME'));
    assert.equal(controller.fingerprint?.node, undefined, 'the controller instance does not ask for node info');
    assert.equal(h.report('fake', 'csi-node')!.fingerprint?.node?.info.nodeId, 'fake-node-1');
    const reports = h.manager.pluginReports();
    assert.deepEqual(Object.keys(reports.controller), ['fake']);
    assert.deepEqual(Object.keys(reports.node), ['fake']);
    // A controller plugin has no mounter.
    h.registry.deregister('csi-node', 'fake', 'a1');
    await h.until(() => h.report('fake', 'csi-node') === null, 'node report withdrawn');
    assert.throws(() => h.manager.volumeManagerFor('fake'), (e: unknown) => e instanceof CsiManagerError && e.code === 'CSI_PLUGIN_NOT_FOUND');
  });

  it('a plugin registered with the wrong type is reported and retried, never trusted', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const fake = h.fake('nocontroller', { pluginCapabilities: [] });
    await fake.start();
    h.register('a1', fake.socketPath, { type: 'csi-controller' });
    await h.manager.start();
    await h.until(() => /does not advertise CONTROLLER_SERVICE/.test(h.report('fake', 'csi-controller')?.healthReason ?? ''), 'wrong type reported');
    const before = fake.callsTo('GetPluginInfo').length;
    await h.until(() => fake.callsTo('GetPluginInfo').length > before + 1, 'retried');
    assert.equal(h.report('fake', 'csi-controller')?.healthy, false);
  });
});

describe('CsiManager: health', () => {
  it('a probe failing past the health timeout: unhealthy at once, no volume calls meanwhile, timeout raised once, healthy again after (scenario 5)', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const fake = h.fake('sick');
    await fake.start();
    h.register('a1', fake.socketPath);
    await h.manager.start();
    await h.until(() => h.mountable('fake'), 'healthy and mountable');
    const mounter = h.manager.volumeManagerFor('fake');

    fake.failNext('Probe', 'FAILED_PRECONDITION', 'disk controller offline', 1_000);
    await h.until(() => h.report('fake')?.healthy === false, 'unhealthy', 100);
    assert.equal(h.report('fake')?.healthReason, 'probe failed: FAILED_PRECONDITION: disk controller offline');
    assert.throws(() => h.manager.volumeManagerFor('fake'), isNotHealthy(/^CSI plugin "fake" is not healthy: probe failed: FAILED_PRECONDITION: disk controller offline$/));
    // A volume manager handed out before sends nothing to the unhealthy plugin either.
    let mountFailed: unknown;
    void mounter
      .mountVolume({ id: 'v1' }, 'alloc-1', { readOnly: false, attachmentMode: 'file-system', accessMode: 'single-node-writer' })
      .catch((err: unknown) => (mountFailed = err));
    await h.until(() => mountFailed !== undefined, 'the mount gives up', 200);
    assert.match((mountFailed as Error).message, /^staging volume v1 failed: CSI plugin "fake" is not healthy: probe failed: FAILED_PRECONDITION/);
    assert.deepEqual(fake.calls.filter((c) => VOLUME_RPCS.has(c.rpc)), []);
    await h.until(() => h.healthTimeouts.length > 0, 'the health timeout is reached', 200);
    assert.deepEqual(h.healthTimeouts, ['csi-node/fake/a1']);
    assert.ok(h.messages().some((m) => /has been unhealthy for longer than its health timeout \(5000 ms\): probe failed/.test(m)));
    // Still failing much later: the timeout is raised once per unhealthy spell, and nothing was sent but identity calls.
    await h.advanceUntilParked(20_000);
    assert.equal(h.healthTimeouts.length, 1);
    assert.deepEqual(fake.calls.filter((c) => VOLUME_RPCS.has(c.rpc)), []);

    const infoCalls = fake.callsTo('GetPluginInfo').length;
    fake.clearScript();
    await h.until(() => h.report('fake')?.healthy === true, 'healthy again', 200);
    // It was fingerprinted again before being trusted.
    assert.ok(fake.callsTo('GetPluginInfo').length > infoCalls);
    assert.equal(h.manager.volumeManagerFor('fake'), mounter, 'the same volume manager serves');
  });

  it('a registration whose socket never appears, or whose first probe errors, is reported and retried with backoff; nothing crashes (scenario 20)', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const dials: string[] = [];
    h.manager = h.newManager({
      dial: (p) => {
        dials.push(p.allocId);
        return new CsiClient({ endpoint: `unix://${p.socketPath}` });
      },
    });
    const bad = h.fake('never');
    const probing = h.fake('probefail');
    probing.failNext('Probe', 'INTERNAL', 'cannot reach backend', 3);
    await probing.start();
    h.register('never-alloc', bad.socketPath, { name: 'never' });
    h.register('probe-alloc', probing.socketPath, { name: 'probefail' });
    // A socket path no unix socket can have: reported, retried, never a crash.
    h.register('long-alloc', `/${'x'.repeat(150)}/csi.sock`, { name: 'longpath' });
    await h.manager.start();
    await h.until(() => /^cannot connect to the plugin: CSI socket path is 160 bytes/.test(h.report('longpath')?.healthReason ?? ''), 'the unusable path reported');

    await h.until(() => /to appear/.test(h.report('never')?.healthReason ?? ''), 'the missing socket reported');
    await h.until(() => /probe failed: INTERNAL: cannot reach backend/.test(h.report('probefail')?.healthReason ?? ''), 'the probe error reported');
    // The failing probe is retried with backoff until it passes.
    await h.until(() => h.report('probefail')?.healthy === true, 'the probing plugin heals', 100);
    assert.equal(probing.callsTo('Probe').length, 4);
    // The missing socket: still reported, still retried, and the manager runs on.
    await h.advanceUntilParked(30_000);
    assert.equal(h.report('never')?.healthy, false);
    assert.match(h.report('never')?.healthReason ?? '', /waiting for the plugin socket .*never\.sock to appear/);
    assert.equal(h.manager.state, 'running');
    assert.ok(h.healthTimeouts.includes('csi-node/never/never-alloc'));
    // One client for the instance's whole life: it reconnects by itself when the socket appears.
    assert.equal(dials.filter((d) => d === 'never-alloc').length, 1);
    // Eventually it appears and is picked up.
    await bad.start();
    await h.until(() => h.report('never')?.healthy === true, 'the late plugin heals', 500);
  });
});

describe('CsiManager: instances follow the registry', () => {
  it('plugin restarted on the same socket with a new version: re-fingerprinted, the node learns the new version (scenario 2)', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const v1 = h.fake('restart', { vendorVersion: '1.0.0' });
    await v1.start();
    h.register('a1', v1.socketPath);
    await h.manager.start();
    await h.until(() => h.mountable('fake'), 'healthy and mountable');
    const vm = h.manager.volumeManagerFor('fake');
    await v1.stop();
    const v2 = h.fake('restart', { vendorVersion: '2.0.0' });
    await v2.start();
    await h.until(() => h.report('fake')?.version === '2.0.0' && h.report('fake')?.healthy === true, 'the new version is reported', 200);
    assert.ok(h.messages().includes('CSI csi-node plugin "fake" fingerprinted: fake.csi.berth.dev version 2.0.0'));
    assert.equal(h.manager.volumeManagerFor('fake'), vm, 'the volume manager (and its mount state) is kept');
    assert.deepEqual(v2.calls.filter((c) => VOLUME_RPCS.has(c.rpc)), []);
  });

  it('two allocations of one plugin at once: the newer serves once healthy, the older keeps working until it stops; their sockets never collide (scenario 3)', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const old = h.fake('alloc-old', { vendorVersion: '1.0.0' });
    const neu = h.fake('alloc-new', { vendorVersion: '1.1.0' });
    await old.start();
    h.register('old', old.socketPath);
    await h.manager.start();
    await h.until(() => h.mountable('fake'), 'old healthy and mountable');
    const vm = h.manager.volumeManagerFor('fake');

    // The new allocation registers before its plugin listens: the old one serves meanwhile.
    h.register('new', neu.socketPath);
    await h.until(() => h.messages().some((m) => m.includes('is now served by allocation new (was old)')), 'replacement noticed');
    assert.equal(h.report('fake')?.allocId, 'old');
    assert.equal(h.manager.volumeManagerFor('fake'), vm, 'still mountable through the old instance');
    assert.equal(h.manager.instances().length, 2);

    await neu.start();
    await h.until(() => h.report('fake')?.allocId === 'new' && h.report('fake')?.healthy === true, 'the new one serves');
    assert.equal(h.report('fake')?.version, '1.1.0');
    assert.equal(h.manager.instances().length, 1, 'the old instance was handed over');
    assert.notEqual(old.socketPath, neu.socketPath);
    assert.ok(existsSync(old.socketPath) && existsSync(neu.socketPath), 'both sockets live side by side');
    // The old plugin keeps working (Berth does not touch it) until its allocation stops.
    const direct = new CsiClient({ endpoint: old.endpoint });
    t.after(() => direct.close());
    assert.deepEqual(await direct.probe(), { ready: true });
    const oldProbes = old.callsTo('Probe').length;
    await h.advanceUntilParked(5_000);
    assert.equal(old.callsTo('Probe').length, oldProbes, 'Berth no longer probes the old instance');

    // The new allocation stops first: the older serves again.
    h.registry.deregister('csi-node', 'fake', 'new');
    await h.until(() => h.report('fake')?.allocId === 'old' && h.report('fake')?.healthy === true, 'the old one serves again');
    assert.equal(h.manager.volumeManagerFor('fake'), vm);
    h.registry.deregister('csi-node', 'fake', 'old');
    await h.until(() => h.report('fake') === null, 'gone');
    assert.ok(h.messages().includes('CSI csi-node plugin "fake" is gone: no allocation on this node runs it any more'));
    assert.throws(() => h.manager.volumeManagerFor('fake'), (e: unknown) => e instanceof CsiManagerError && e.code === 'CSI_PLUGIN_NOT_FOUND' && /^CSI plugin "fake" not found/.test(e.message));
    assert.equal(h.manager.instances().length, 0);
  });

  it('a plugin that deregisters before it ever registered (crashed fast) changes nothing (scenario 4)', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    await h.manager.start();
    assert.equal(h.registry.deregister('csi-node', 'fake', 'crashed'), false);
    await h.advanceUntilParked(120_000);
    assert.deepEqual(h.updates, []);
    assert.deepEqual(h.events, []);
    assert.equal(h.manager.state, 'running');
    const fake = h.fake('after');
    await fake.start();
    h.register('a2', fake.socketPath);
    await h.until(() => h.report('fake')?.healthy === true, 'a later registration works');
  });

  it('resyncs with the registry on an interval, so a missed event heals', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    // A registry feed that loses every event: only the resync can see changes.
    let dropped = 0;
    const lost = (_event: PluginEvent): boolean => ++dropped > 0;
    const deaf: PluginSource = {
      servingPlugins: () => h.registry.servingPlugins(),
      registrations: (type, name) => h.registry.registrations(type, name),
      subscribe: ({ signal }) =>
        (async function* (): AsyncGenerator<PluginEvent> {
          for await (const event of h.registry.subscribe({ ...(signal ? { signal } : {}) })) {
            if (!lost(event)) yield event;
          }
        })(),
    };
    h.manager = h.newManager({ registry: deaf });
    const fake = h.fake('p');
    await fake.start();
    await h.manager.start();
    h.register('a1', fake.socketPath);
    // The window closes when the feed has dropped the registration and every loop is parked
    // short of the resync: nothing else could have brought the plugin in.
    await eventually('the feed to drop the registration event', () => dropped > 0);
    await h.advanceUntilParked(59_000);
    assert.equal(h.report('fake'), undefined, 'the event was missed');
    await h.until(() => h.report('fake')?.healthy === true, 'the resync found it', 500);
    h.registry.deregister('csi-node', 'fake', 'a1');
    await h.until(() => h.report('fake') === null, 'the resync found it gone', 1_000);
  });

  it('after an agent restart, the plugins registered before are found again from the client state file', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const fake = h.fake('p');
    await fake.start();
    h.register('a1', fake.socketPath, { name: 'kept' });
    await h.manager.start();
    await h.until(() => h.report('kept')?.healthy === true, 'healthy');
    await h.manager.stop();

    // A new agent process: a new store handle on the same file, a new registry, a new manager.
    const store = SqliteClientStateStore.open(h.store.path);
    const registry = new PluginRegistry({ store, clock: h.clock });
    const manager = h.newManager({ registry, store });
    t.after(async () => {
      await manager.stop();
      registry.close();
      store.close();
    });
    const before = h.updates.length;
    await manager.start();
    const instance = await manager.managerForPlugin('kept', { signal: AbortSignal.timeout(10_000) });
    assert.equal(instance.plugin.allocId, 'a1');
    await h.until(() => h.updates.slice(before).some((u) => u.pluginId === 'kept' && u.report?.healthy === true), 'healthy after the restart');
  });

  it('managerForPlugin waits for the first fingerprint, even of a plugin not registered yet', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    await h.manager.start();
    const ac = new AbortController();
    const abandoned = h.manager.managerForPlugin('nobody', { signal: ac.signal });
    const waiting = h.manager.managerForPlugin('fake');
    let settled = false;
    void waiting.then(() => (settled = true));
    const fake = h.fake('p', { vendorVersion: '9.9.9' });
    h.register('a1', fake.socketPath);
    // The window closes when the instance has tried its plugin and reported the socket missing:
    // a fingerprint could only have come from that try.
    await h.until(() => /to appear/.test(h.report('fake')?.healthReason ?? ''), 'the missing socket reported');
    await nextTurn();
    assert.equal(settled, false, 'not before a fingerprint');
    await fake.start();
    await h.until(() => settled, 'fingerprinted');
    const instance = await waiting;
    assert.equal(instance.fingerprint?.info.vendorVersion, '9.9.9');
    assert.equal(instance.plugin.allocId, 'a1');
    ac.abort();
    await assert.rejects(abandoned, AbortedError);
  });

  it('waitForPlugin says when it has to wait, and only then: not for a plugin that serves already', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    await h.manager.start();
    const told: string[] = [];
    const waiting = h.manager.waitForPlugin('fake', { onWaiting: () => told.push('waiting') });
    assert.deepEqual(told, ['waiting'], 'told at once, before anything else runs');
    let served = false;
    void waiting.then(() => (served = true));
    const fake = h.fake('p');
    h.register('a1', fake.socketPath);
    await fake.start();
    await h.until(() => served, 'fingerprinted');
    assert.deepEqual(told, ['waiting'], 'told once');
    await h.manager.waitForPlugin('fake', { onWaiting: () => told.push('again') });
    assert.deepEqual(told, ['waiting'], 'not told for a plugin that serves');
  });

  it('stop() shuts every instance down in parallel and returns when they are done; safe twice', async (t) => {
    const h = new ManagerHarness();
    t.after(() => h.close());
    const fakes = await Promise.all(['a', 'b', 'c'].map(async (n) => {
      const f = h.fake(n);
      await f.start();
      h.register(`alloc-${n}`, f.socketPath, { name: n });
      return f;
    }));
    // One plugin hangs its probes: stop must not wait for its deadline.
    await h.manager.start();
    await h.until(() => ['a', 'b', 'c'].every((n) => h.report(n)?.healthy === true), 'all healthy');
    fakes[0]!.hangNext('Probe', 100);
    await h.clock.advance(1_000);
    await fakes[0]!.waitForCall('Probe', { count: 2 });
    const waiting = h.manager.managerForPlugin('nobody');
    waiting.catch(() => undefined); // rejects during stop(), before assert.rejects below attaches: not unhandled
    const instances = h.manager.instances();
    await Promise.all([h.manager.stop(), h.manager.stop()]);
    assert.equal(h.manager.state, 'stopped');
    assert.ok(instances.every((i) => i.state === 'stopped'));
    assert.ok(instances.every((i) => i.client?.open === false));
    await assert.rejects(waiting, (e: unknown) => e instanceof CsiManagerError && e.code === 'CSI_MANAGER_STOPPED');
    const probes = fakes.map((f) => f.callsTo('Probe').length);
    await h.advanceUntilParked(10_000);
    assert.deepEqual(fakes.map((f) => f.callsTo('Probe').length), probes, 'no probe after stop');
    await assert.rejects(h.manager.start(), (e: unknown) => e instanceof CsiManagerError && e.code === 'CSI_MANAGER_STOPPED');
  });
});
