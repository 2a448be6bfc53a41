// Network namespaces for group network mode `none`, made with real iproute2:
// only loopback, up; nothing else to reach; removed safely twice.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, it } from 'node:test';
import { NetworkManager } from './network-manager.js';

function inNs(name: string, args: string[]): string {
  return execFileSync('ip', ['netns', 'exec', name, ...args], { encoding: 'utf8' });
}

describe('NetworkManager', () => {
  const network = new NetworkManager({ prefix: 'r1nm-' });
  const allocs = [`a-${process.pid}-1`, `a-${process.pid}-2`];
  afterEach(async () => {
    for (const a of allocs) await network.destroy(a);
  });

  it('makes a namespace per allocation with only loopback, up, and no route out', async () => {
    const [a] = allocs as [string];
    assert.equal(network.exists(a), false);
    const { path, mode } = await network.create(a);
    assert.equal(mode, 'none');
    assert.equal(path, network.pathFor(a));
    assert.ok(existsSync(path));
    assert.equal(network.exists(a), true);
    const name = network.nameFor(a);
    const links = inNs(name, ['ip', '-o', 'link', 'show']).trim().split('\n');
    assert.equal(links.length, 1);
    assert.match(links[0] as string, /^1: lo: <LOOPBACK,UP,LOWER_UP>/);
    assert.equal(inNs(name, ['ip', '-4', 'route', 'show']).trim(), '');
    assert.equal(inNs(name, ['ip', '-6', 'route', 'show']).split('\n').filter((l) => l && !l.includes('dev lo')).length, 0);
    // Loopback answers inside the namespace.
    const pong = inNs(name, [
      process.execPath,
      '-e',
      `const net=require('net');const s=net.createServer(c=>c.end('pong')).listen(0,'127.0.0.1',()=>{net.connect(s.address().port,'127.0.0.1').on('data',d=>{process.stdout.write(d);process.exit(0)})})`,
    ]);
    assert.equal(pong, 'pong');
    // Creating again reuses it.
    assert.deepEqual(await network.create(a), { path, mode: 'none' });
  });

  it('keeps allocations apart and removes a namespace safely twice', async () => {
    const [a, b] = allocs as [string, string];
    const [pa, pb] = await Promise.all([network.create(a), network.create(b)]);
    assert.notEqual(pa.path, pb.path);
    await network.destroy(a);
    await network.destroy(a);
    assert.equal(network.exists(a), false);
    assert.equal(network.exists(b), true);
    await network.destroy('never-made');
  });

  it('a bridge network whose CNI plugins are missing fails and leaves no namespace, now nor after destroy', async () => {
    const empty = mkdtempSync(path.join(tmpdir(), 'r1nm-cni-'));
    const stateDir = mkdtempSync(path.join(tmpdir(), 'r1nm-state-'));
    const noCni = new NetworkManager({ prefix: 'r1nx-', cniPath: [empty], stateDir, bridge: { name: `r1nx${process.pid % 10000}`, subnet: '10.231.7.0/24' } });
    const a = `a-${process.pid}-nocni`;
    try {
      await assert.rejects(noCni.create(a, { mode: 'bridge' }), (e: Error & { code?: string }) => e.code === 'NETWORK_CREATE_FAILED' && /CNI plugin "\w+" not found/.test(e.message));
      assert.equal(existsSync(noCni.pathFor(a)), false, 'the namespace of the failed set-up is gone at once');
      assert.deepEqual(readdirSync(stateDir), [], 'and so is its record');
      assert.ok(!execFileSync('iptables-save', [], { encoding: 'utf8' }).includes(noCni.bridge.name), 'and the bridge forwarding rule made before ADD');
      await noCni.destroy(a);
      assert.equal(existsSync(noCni.pathFor(a)), false);
    } finally {
      if (existsSync(noCni.pathFor(a))) execFileSync('ip', ['netns', 'delete', noCni.nameFor(a)]);
      rmSync(empty, { recursive: true, force: true });
      rmSync(stateDir, { recursive: true, force: true });
    }
  });
});
