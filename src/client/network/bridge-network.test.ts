// Bridge and CNI networks made with the real CNI plugins (Debian's
// containernetworking-plugins) and real iptables: an allocation answers on
// port 80 inside its namespace, at its own address and through its mapped
// host port on 127.0.0.1; after destroy, and after a "crashed" manager's
// successor restores (adopting the live allocation, detaching the gone
// one), no veth, iptables rule, IPAM lease or bridge is left.
// Traffic goes only to 127.0.0.1 and to the namespaces this test made.

import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { eventually } from '../../../test/support/eventually.js';
import { adminChainName, NetworkManager, type AllocPort } from './index.js';

const tag = (process.pid % 100000).toString(36);
const BRIDGE = `bnt${tag}`;
const octet = () => 16 + Math.floor(Math.random() * 200);
const NET = `10.${octet()}.${octet()}`;
const SUBNET = `${NET}.0/24`;
const PTP_NET = `10.${octet()}.${octet()}`;

function sh(file: string, args: string[]): string {
  return execFileSync(file, args, { encoding: 'utf8' });
}

/** A tiny HTTP server inside the namespace on port 80, answering `name`. */
function serveIn(netnsPath: string, name: string): ChildProcess {
  const code = `require('http').createServer((q,s)=>s.end(${JSON.stringify(name)})).listen(80,'0.0.0.0',()=>console.log('up'))`;
  const child = spawn('nsenter', [`--net=${netnsPath}`, process.execPath, '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  return child;
}

async function listening(child: ChildProcess): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', () => resolve());
    child.on('exit', (c) => reject(new Error(`server exited ${c}`)));
  });
}

/** A GET on a connection of its own: a kept-alive one would ride its conntrack entry past a removed DNAT rule. */
function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { agent: false, timeout: 20_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body)).on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer in 20 s`))).on('error', reject);
  });
}

/** Everything on the host that still names this test's network or allocations. */
function leftovers(allocIds: string[], veths: string[]): string[] {
  const out: string[] = [];
  const rules = sh('iptables-save', []).split('\n');
  for (const needle of [NET + '.', BRIDGE, adminChainName(BRIDGE), ...allocIds]) {
    for (const r of rules) if (r.includes(needle)) out.push(`iptables: ${r}`);
  }
  const links = sh('ip', ['-o', 'link']);
  for (const name of [BRIDGE, ...veths]) if (new RegExp(`^\\d+: ${name}[@:]`, 'm').test(links)) out.push(`link ${name}`);
  for (const dir of [BRIDGE, 'bntptp' + tag]) {
    const ipam = `/var/lib/cni/networks/${dir}`;
    if (existsSync(ipam)) out.push(...readdirSync(ipam).filter((f) => f.includes('.')).map((f) => `lease ${dir}/${f}`));
  }
  if (existsSync(`/var/lib/cni/networks/${BRIDGE}`)) out.push(`ipam dir ${BRIDGE}`);
  return out;
}

describe('bridge networks on real CNI plugins', () => {
  let dir = '';
  const servers: ChildProcess[] = [];
  const allocs = [`bnt-${process.pid}-a`, `bnt-${process.pid}-b`, `bnt-${process.pid}-c`];
  const veths: string[] = [];
  const port = (i: number): AllocPort => ({ label: 'http', value: 20000 + ((process.pid * 3 + i) % 9000), to: 80, hostIp: '127.0.0.1' });
  let manager: NetworkManager;

  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'bnt-'));
    manager = newManager();
  });
  const newManager = (): NetworkManager =>
    new NetworkManager({ prefix: 'bnt-', stateDir: path.join(dir, 'state'), bridge: { name: BRIDGE, subnet: SUBNET }, cniConfigDir: path.join(dir, 'cni') });
  after(async () => {
    for (const s of servers) s.kill('SIGKILL');
    for (const a of allocs) await manager.destroy(a).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives each allocation an address on the bridge, its ports mapped from the host, and leaves nothing after destroy', async () => {
    const [a, b] = allocs as [string, string];
    const [na, nb] = await Promise.all([manager.create(a, { mode: 'bridge', ports: [port(0)] }), manager.create(b, { mode: 'bridge', ports: [port(1)] })]);
    assert.equal(na.mode, 'bridge');
    assert.equal(na.interface, 'eth0');
    assert.match(na.address ?? '', new RegExp(`^${NET.replace(/\./g, '\\.')}\\.\\d+$`));
    assert.notEqual(na.address, nb.address);
    // Safe to repeat: the same attachment comes back.
    assert.deepEqual(await manager.create(a, { mode: 'bridge', ports: [port(0)] }), na);
    veths.push(...sh('ip', ['-o', 'link', 'show', 'master', BRIDGE]).split('\n').filter(Boolean).map((l) => (l.split(': ')[1] ?? '').split('@')[0] as string));
    assert.equal(veths.length, 2, 'one veth per allocation on the bridge');

    const sa = serveIn(na.path, 'alloc a');
    const sb = serveIn(nb.path, 'alloc b');
    servers.push(sa, sb);
    await Promise.all([listening(sa), listening(sb)]);
    assert.equal(await get(`http://${na.address}:80/`), 'alloc a');
    assert.equal(await get(`http://${nb.address}:80/`), 'alloc b');
    assert.equal(await get(`http://127.0.0.1:${port(0).value}/`), 'alloc a');
    assert.equal(await get(`http://127.0.0.1:${port(1).value}/`), 'alloc b');

    sa.kill('SIGKILL');
    sb.kill('SIGKILL');
    await manager.destroy(a);
    assert.ok(existsSync(`/var/lib/cni/networks/${BRIDGE}`), 'b still holds its lease');
    await manager.destroy(b);
    await manager.destroy(b);
    assert.deepEqual(leftovers([a, b], veths), []);
    assert.equal(manager.exists(a) || manager.exists(b), false);
  });

  /** The real plugins, but `plugin` behind a wrapper that blocks on a fifo during ADD while the fifo exists: the fault injector. */
  const blockingPlugin = (plugin: string) => {
    const bin = path.join(dir, `cni-bin-${plugin}`);
    const fifo = path.join(dir, `${plugin}.block`);
    const started = path.join(dir, `${plugin}.started`);
    execFileSync('mkdir', ['-p', bin]);
    for (const f of readdirSync('/usr/lib/cni')) if (f !== plugin) symlinkSync(path.join('/usr/lib/cni', f), path.join(bin, f));
    writeFileSync(
      path.join(bin, plugin),
      `#!/bin/sh\nif [ "$CNI_COMMAND" = ADD ] && [ -p ${fifo} ]; then echo $$ > ${started}.tmp; mv ${started}.tmp ${started}; cat ${fifo} > /dev/null; fi\nexec /usr/lib/cni/${plugin}\n`,
      { mode: 0o755 },
    );
    execFileSync('mkfifo', [fifo]);
    const opts = { prefix: 'bnt-', stateDir: path.join(dir, 'state'), bridge: { name: BRIDGE, subnet: SUBNET }, cniConfigDir: path.join(dir, 'cni'), cniPath: [bin] };
    return { opts, fifo, started };
  };
  /** An "agent": another process whose network manager sets up `allocId`'s bridge network, to be SIGKILLed part way. */
  const agentCreating = (opts: object, allocId: string, p: AllocPort): ChildProcess =>
    spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--input-type=module',
        '-e',
        `import { NetworkManager } from ${JSON.stringify(path.resolve('src/client/network/index.ts'))};\n` +
          `await new NetworkManager(${JSON.stringify(opts)}).create(${JSON.stringify(allocId)}, { mode: 'bridge', ports: [${JSON.stringify(p)}] });`,
      ],
      { stdio: 'ignore' },
    );

  it("after a crash, a new manager re-adopts a live allocation's network and detaches a gone one's", async () => {
    const [a, b] = allocs as [string, string];
    const [na, nb] = await Promise.all([manager.create(a, { mode: 'bridge', ports: [port(0)] }), manager.create(b, { mode: 'bridge', ports: [port(1)] })]);
    const hostVeths = sh('ip', ['-o', 'link', 'show', 'master', BRIDGE]).split('\n').filter(Boolean).map((l) => (l.split(': ')[1] ?? '').split('@')[0] as string);
    // The old manager is dropped without any cleanup, as a kill -9 would leave it.
    manager = newManager();
    const restored = await manager.restore(new Set([a]));
    assert.deepEqual(restored, { adopted: [a], removed: [b] });
    assert.equal(manager.exists(b), false);
    assert.ok(!iptablesMentions(b), 'the gone allocation has no rule left');
    assert.ok(!iptablesMentions(nb.address as string));
    const sa = serveIn(na.path, 'alloc a again');
    servers.push(sa);
    await listening(sa);
    assert.equal(await get(`http://127.0.0.1:${port(0).value}/`), 'alloc a again', 'the adopted allocation still gets its port');
    assert.deepEqual(await manager.create(a, { mode: 'bridge', ports: [port(0)] }), na);
    sa.kill('SIGKILL');
    await manager.destroy(a);
    assert.deepEqual(leftovers([a, b], hostVeths), []);
  });

  it('an agent SIGKILLed while portmap runs its ADD: the successor sets the network up again, and after destroy nothing of the first address is left', { timeout: 60_000 }, async () => {
    const [a, b] = allocs as [string, string];
    const { opts, fifo, started } = blockingPlugin('portmap');
    const agent = agentCreating(opts, a, port(0));
    const wrapperPid = await eventually('portmap to be running its ADD', () => (existsSync(started) ? Number(readFileSync(started, 'utf8')) : undefined), 30_000);
    const firstAddress = (sh('ls', [`/var/lib/cni/networks/${BRIDGE}`]).split('\n').find((f) => f.startsWith(NET)) as string).trim();
    assert.ok(iptablesMentions(firstAddress), 'the firewall plugin made its rules for the first address');
    agent.kill('SIGKILL');
    // The plugin outlives the agent, as a real plugin process does, and finishes its ADD on its own.
    writeFileSync(fifo, 'go');
    await eventually('the orphaned portmap to finish', () => {
      try {
        process.kill(wrapperPid, 0);
        return false;
      } catch {
        return true;
      }
    });
    rmSync(fifo);
    // The restarted agent: the allocation is live, its network is set up again.
    manager = new NetworkManager(opts);
    await manager.restore(new Set([a, b]));
    // Another allocation started meanwhile: the address after the first is taken, so the set-up again gets a new one.
    await manager.create(b, { mode: 'bridge', ports: [port(1)] });
    const again = await manager.create(a, { mode: 'bridge', ports: [port(0)] });
    assert.notEqual(again.address, firstAddress);
    await manager.destroy(a);
    await manager.destroy(b);
    assert.ok(!iptablesMentions(`${firstAddress}/32`), `no rule names the first address ${firstAddress}: ${sh('iptables-save', []).split('\n').filter((l) => l.includes(firstAddress)).join('\n')}`);
    assert.deepEqual(leftovers([a, b], []), []);
  });

  it("an agent SIGKILLed right after the loopback plugin's ADD: setting the network up again leaves the other allocations' mapped ports working", { timeout: 60_000 }, async () => {
    const [a, b] = allocs as [string, string];
    const nb = await manager.create(b, { mode: 'bridge', ports: [port(1)] });
    const sb = serveIn(nb.path, 'alloc b');
    servers.push(sb);
    await listening(sb);
    assert.equal(await get(`http://127.0.0.1:${port(1).value}/`), 'alloc b');
    // The agent dies with the bridge plugin it was running (the plugin never gets past its start):
    // all a's record holds of the plugins' results is loopback's, whose address is 127.0.0.1.
    const { opts, fifo, started } = blockingPlugin('bridge');
    const agent = agentCreating(opts, a, port(0));
    const wrapperPid = await eventually('bridge to be running its ADD', () => (existsSync(started) ? Number(readFileSync(started, 'utf8')) : undefined), 30_000);
    agent.kill('SIGKILL');
    process.kill(wrapperPid, 'SIGKILL');
    writeFileSync(fifo, 'go');
    rmSync(fifo);
    const record = readdirSync(opts.stateDir).map((f) => readFileSync(path.join(opts.stateDir, f), 'utf8')).find((t) => t.includes(a)) ?? '';
    assert.match(record, /127\.0\.0\.1/, "the dead agent's record holds loopback's result");
    manager = new NetworkManager(opts);
    await manager.restore(new Set([a, b]));
    const na = await manager.create(a, { mode: 'bridge', ports: [port(0)] });
    const sa = serveIn(na.path, 'alloc a');
    servers.push(sa);
    await listening(sa);
    assert.equal(await get(`http://127.0.0.1:${port(0).value}/`), 'alloc a');
    assert.equal(await get(`http://127.0.0.1:${port(1).value}/`).catch((err: Error) => err.message), 'alloc b', "b's port mapping outlives a's second set-up");
    sa.kill('SIGKILL');
    sb.kill('SIGKILL');
    await manager.destroy(a);
    await manager.destroy(b);
    assert.deepEqual(leftovers([a, b], []), []);
  });

  it('after a restart, what CNI DEL leaves of a gone allocation (a stray rule for its address, a lease in its name) is found and removed; the live one keeps its own', async () => {
    const [a, b] = allocs as [string, string];
    const [na, nb] = await Promise.all([manager.create(a, { mode: 'bridge', ports: [port(0)] }), manager.create(b, { mode: 'bridge', ports: [port(1)] })]);
    const ip = nb.address as string;
    // Leftovers DEL does not know of: a second forwarding rule for b's address (the firewall plugin removes one),
    // and a lease host-local holds for b on another address (as a cut ADD, retried elsewhere, leaves one).
    sh('iptables', ['-w', '-t', 'filter', '-A', 'CNI-FORWARD', '-d', `${ip}/32`, '-m', 'conntrack', '--ctstate', 'RELATED,ESTABLISHED', '-j', 'ACCEPT']);
    const stray = `${NET}.250`;
    writeFileSync(`/var/lib/cni/networks/${BRIDGE}/${stray}`, `${b}\neth0`);
    manager = newManager();
    assert.deepEqual(await manager.restore(new Set([a])), { adopted: [a], removed: [b] });
    assert.ok(!iptablesMentions(`${ip}/32`), `no rule for the gone allocation's address: ${sh('iptables-save', []).split('\n').filter((r) => r.includes(ip)).join('; ')}`);
    assert.ok(!existsSync(`/var/lib/cni/networks/${BRIDGE}/${stray}`), "the lease in the gone allocation's name is removed");
    assert.ok(iptablesMentions(`${na.address as string}/32`), 'the live allocation keeps its rules');
    await manager.destroy(a);
    assert.deepEqual(leftovers([a, b], []), []);
  });

  it('attaches a user network from cni_config_dir with mode cni/<name>, and says which names exist when one is missing', async () => {
    const c = allocs[2] as string;
    const cniDir = path.join(dir, 'cni');
    execFileSync('mkdir', ['-p', cniDir]);
    const name = `bntptp${tag}`;
    writeFileSync(
      path.join(cniDir, '10-ptp.conflist'),
      JSON.stringify({ cniVersion: '0.4.0', name, plugins: [{ type: 'ptp', ipMasq: false, ipam: { type: 'host-local', subnet: `${PTP_NET}.0/24` } }] }),
    );
    const nc = await manager.create(c, { mode: `cni/${name}` });
    assert.match(nc.address ?? '', new RegExp(`^${PTP_NET.replace(/\./g, '\\.')}\\.`));
    const sc = serveIn(nc.path, 'alloc c');
    servers.push(sc);
    await listening(sc);
    assert.equal(await get(`http://${nc.address}:80/`), 'alloc c');
    sc.kill('SIGKILL');
    await manager.destroy(c);
    assert.equal(manager.exists(c), false);
    assert.deepEqual(readdirSync(`/var/lib/cni/networks/${name}`).filter((f) => f.startsWith(PTP_NET)), [], 'the lease is released');
    rmSync(`/var/lib/cni/networks/${name}`, { recursive: true, force: true });

    await assert.rejects(manager.create(c, { mode: 'cni/nosuch' }), (err: Error) => {
      assert.match(err.message, /no CNI network named "nosuch" in .*\(found: bntptp/);
      return true;
    });
    assert.equal(manager.exists(c), false, 'a failed create leaves no namespace');
  });
});

function iptablesMentions(needle: string): boolean {
  return sh('iptables-save', []).includes(needle);
}
