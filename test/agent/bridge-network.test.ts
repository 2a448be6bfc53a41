// Group network mode "bridge" on a real dev agent with the real CNI plugins:
// two allocations of one job each listen on port 80 (`port "http" { to = 80 }`)
// in their own namespace; each answers at its own address on the agent's
// bridge (shown by `alloc status`, and in its NOMAD_ALLOC_IP_http) and, through
// the CNI portmap, at its scheduler-given host port on loopback; its
// address_mode = "alloc" service is registered at its own address and port
// 80, its host-mode one at the host port. After `job stop`, and after kill -9 of the agent, a
// restart (the running allocations' networks re-adopted, still answering)
// and `job stop`, no veth, no iptables rule, no IPAM lease and no bridge is
// left. The bridge's name and subnet are this test's own. Traffic goes only
// to the namespaces the agent made for this test.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Allocation, AllocationListStub, PortMapping, ServiceRegistration } from '../../src/api/index.js';
import { cleanupUnder, until } from '../support/runtime-cluster.js';
import { AgentUnderTest, tempDir, type Result } from './_agent.js';

const tag = (process.pid % 100000).toString(36);
const BRIDGE = `bbt${tag}`;
const octet = (): number => 16 + Math.floor(Math.random() * 200);
const NET = `10.${octet()}.${octet()}`;

// Answers with what its environment says of it.
const SERVER = `const e = process.env; require('http').createServer((q, s) => s.end(JSON.stringify({ id: e.NOMAD_ALLOC_ID, ip: e.NOMAD_ALLOC_IP_http, addr: e.NOMAD_ALLOC_ADDR_http, port: e.NOMAD_ALLOC_PORT_http, hostPort: e.NOMAD_HOST_PORT_http }))).listen(80, '0.0.0.0')`;
const JOB = `
job "web" {
  group "web" {
    count = 2
    network {
      mode = "bridge"
      port "http" {
        to = 80
      }
    }
    service {
      name         = "web-inside"
      port         = "http"
      address_mode = "alloc"
    }
    service {
      name = "web-host"
      port = "http"
    }
    task "server" {
      driver = "raw_exec"
      config {
        command = ${JSON.stringify(process.execPath)}
        args    = ["-e", ${JSON.stringify(SERVER)}]
      }
    }
  }
}
`;

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

function sh(file: string, args: string[]): string {
  return execFileSync(file, args, { encoding: 'utf8' });
}

/** The host ends of the veths on this test's bridge. */
function bridgeVeths(): string[] {
  try {
    return sh('ip', ['-o', 'link', 'show', 'master', BRIDGE])
      .split('\n')
      .filter(Boolean)
      .map((l) => (l.split(': ')[1] ?? '').split('@')[0] as string);
  } catch {
    return [];
  }
}

/** What is still on the host of this test's network and allocations (empty once torn down). */
function leftovers(allocIds: string[], veths: string[]): string[] {
  const out: string[] = [];
  for (const rule of sh('iptables-save', []).split('\n')) {
    if ([`${NET}.`, BRIDGE.toUpperCase(), BRIDGE, ...allocIds].some((n) => rule.includes(n))) out.push(`iptables: ${rule}`);
  }
  const links = sh('ip', ['-o', 'link']);
  for (const name of [BRIDGE, ...veths]) if (new RegExp(`^\\d+: ${name}[@:]`, 'm').test(links)) out.push(`link ${name}`);
  const ipam = `/var/lib/cni/networks/${BRIDGE}`;
  if (existsSync(ipam)) out.push(`IPAM dir with ${readdirSync(ipam).join(', ')}`);
  return out;
}

describe('bridge networking on a dev agent', () => {
  let dir = '';
  let dataDir = '';
  let agent: AgentUnderTest | undefined;

  const start = async (): Promise<AgentUnderTest> =>
    new AgentUnderTest(['agent', '--dev', '--data-dir', dataDir, '--port', '0', '--config', path.join(dir, 'agent.hcl')]).ready(true);

  /** An allocation's own address (on the bridge). */
  const address = (a: Allocation): string | undefined => a.NetworkStatus?.Address;
  /** The allocation's port "http" as the scheduler gave it. */
  const httpPort = (a: Allocation): PortMapping | undefined => a.AllocatedResources?.Shared.Ports?.find((p) => p.Label === 'http');

  /** The job's allocations (in full) once both run and report their addresses. */
  const running = (): Promise<Allocation[]> =>
    until(
      'both allocations to run with a bridge address',
      async () => {
        const stubs = (await agent!.get<AllocationListStub[]>('/v1/job/web/allocations').catch(() => [])).filter((a) => a.DesiredStatus === 'run');
        const list = await Promise.all(stubs.map((a) => agent!.get<Allocation>(`/v1/allocation/${a.ID}`)));
        return list.length === 2 && list.every((a) => a.ClientStatus === 'running' && address(a)) ? list : undefined;
      },
      120_000,
    );

  /** What an allocation's server says of itself. */
  type Said = { id: string; ip: string; addr: string; port: string; hostPort: string };
  const ask = (what: string, url: string): Promise<Said> =>
    until(what, async () => {
      const res = await fetch(url, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
      return res?.ok ? ((await res.json()) as Said) : undefined;
    });

  /** Each allocation answers at its own address on port 80 and through its mapped host port on loopback, its environment naming its address. */
  const answers = async (allocs: Allocation[]): Promise<void> => {
    for (const a of allocs) {
      const own = address(a) as string;
      const http = httpPort(a);
      assert.ok(http && http.To === 80 && http.Value > 0 && http.Value !== 80, `the scheduler gave ${a.ID} a host port mapped to 80: ${JSON.stringify(a.AllocatedResources?.Shared.Ports)}`);
      assert.equal(http.HostIP, '127.0.0.1', "a dev agent's node address is loopback, so portmap's DNAT is bound to it");
      const inside = await ask(`allocation ${a.ID} to answer at ${own}:80`, `http://${own}:80/`);
      assert.deepEqual(inside, { id: a.ID, ip: own, addr: `${own}:80`, port: '80', hostPort: String(http.Value) }, 'each allocation answers from its own namespace, its env naming its own address');
      const mapped = await ask(`allocation ${a.ID} to answer at its host port 127.0.0.1:${http.Value}`, `http://127.0.0.1:${http.Value}/`);
      assert.equal(mapped.id, a.ID, 'the host port reaches port 80 in the allocation\'s namespace');
    }
  };

  /** The alloc-mode service at each allocation's own address and port 80; the host-mode one at its host address and port. */
  const registered = async (allocs: Allocation[]): Promise<void> => {
    const want = (f: (a: Allocation) => [string, number]) => allocs.map((a) => [a.ID, ...f(a)]).sort();
    const have = (regs: ServiceRegistration[]) => regs.map((r) => [r.AllocID, r.Address, r.Port]).sort();
    const hostPort = (a: Allocation) => httpPort(a) as PortMapping;
    const inside = want((a) => [address(a) as string, 80]);
    const host = want((a) => [hostPort(a).HostIP, hostPort(a).Value]);
    await until('both services of both allocations to be registered', async () => {
      const [i, h] = await Promise.all([agent!.get<ServiceRegistration[]>('/v1/service/web-inside'), agent!.get<ServiceRegistration[]>('/v1/service/web-host')]).catch(() => [[], []]);
      return i.length === 2 && h.length === 2 ? true : undefined;
    });
    assert.deepEqual(have(await agent!.get<ServiceRegistration[]>('/v1/service/web-inside')), inside, 'address_mode = "alloc": the allocation\'s address and its `to` port');
    assert.deepEqual(have(await agent!.get<ServiceRegistration[]>('/v1/service/web-host')), host, 'host mode: the host address and the host port');
  };

  /** The agent's records of allocation networks (dropped last, after the bridge is swept). */
  const records = (): string[] => readdirSync(path.join(dataDir, 'client', 'network')).filter((f) => f.endsWith('.json'));

  const stopAndCheckClean = async (allocs: Allocation[], veths: string[]): Promise<void> => {
    ok(await agent!.cli(['job', 'stop', 'web']), 'job stop');
    const ids = allocs.map((a) => a.ID);
    await until(
      'the allocations to finish and their networks to be torn down',
      async () => {
        const list = await agent!.get<AllocationListStub[]>('/v1/job/web/allocations');
        return list.every((a) => a.ClientStatus !== 'running' && a.ClientStatus !== 'pending') && leftovers(ids, veths).length === 0 && records().length === 0;
      },
      120_000,
    ).catch((err: unknown) => {
      assert.deepEqual(leftovers(ids, veths), [], String(err));
    });
    assert.deepEqual(leftovers(ids, veths), []);
    assert.deepEqual(records(), [], 'no network record left');
  };

  before(async () => {
    dir = await tempDir('bbt-');
    dataDir = path.join(dir, 'data');
    writeFileSync(path.join(dir, 'agent.hcl'), `client {\n  bridge_network_name   = "${BRIDGE}"\n  bridge_network_subnet = "${NET}.0/24"\n}\n`);
    writeFileSync(path.join(dir, 'web.hcl'), JOB);
    agent = await start();
  });
  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    cleanupUnder(dir);
  });

  it('gives each allocation its own address on the bridge, shown by alloc status, and leaves nothing after job stop', async () => {
    ok(await agent!.cli(['job', 'run', '--detach', path.join(dir, 'web.hcl')]), 'job run');
    const allocs = await running();
    const [a, b] = allocs as [Allocation, Allocation];
    assert.notEqual(address(a), address(b));
    for (const x of allocs) {
      assert.equal(x.AllocatedResources?.Shared.Networks?.[0]?.Mode, 'bridge');
      assert.equal(x.NetworkStatus?.InterfaceName, 'eth0');
      assert.ok(address(x)?.startsWith(`${NET}.`), `${address(x)} is in the test's subnet`);
    }
    const status = ok(await agent!.cli(['alloc', 'status', a.ID]), 'alloc status').stdout;
    assert.match(status, new RegExp(`Network\\s+bridge, address ${address(a)?.replace(/\./g, '\\.')} \\(eth0\\)`));
    await answers(allocs);
    await registered(allocs);
    const veths = bridgeVeths();
    assert.equal(veths.length, 2, 'one veth per allocation on the bridge');
    await stopAndCheckClean(allocs, veths);
  });

  it('after kill -9 and a restart, the running allocations keep their networks, and job stop leaves nothing', async () => {
    ok(await agent!.cli(['job', 'run', '--detach', path.join(dir, 'web.hcl')]), 'job run');
    const allocs = await running();
    await answers(allocs);
    const veths = bridgeVeths();
    agent!.child.kill('SIGKILL');
    await agent!.exited;
    agent = await start();
    const again = await running();
    assert.deepEqual(
      again.map((a) => [a.ID, address(a)]).sort(),
      allocs.map((a) => [a.ID, address(a)]).sort(),
      'the same allocations, at the same addresses',
    );
    await answers(again);
    assert.deepEqual(bridgeVeths().sort(), veths.sort(), 'the same veths: nothing was attached twice');
    await stopAndCheckClean(allocs, veths);
  });
});
