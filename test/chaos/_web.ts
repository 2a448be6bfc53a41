// The chaos kit's second workload (issue 38): the parts that came after the
// storage core. A service job "chaos-web" rolls out with an `update` block
// (one at a time, healthy by its checks); its group "web" runs two
// allocations on a bridge network of the run's own (a port mapped to 8080),
// each registering a service with an HTTP check and rendering a template of
// the service's instances that must follow them; with a dockerd at hand a
// group "box" runs a container on the same bridge. A cycle may bump the job's
// meta so that a SIGKILL lands mid-roll.
//
// After each settled cycle and after the final stop, what the network and the
// containers must not leak: a namespace, a veth, an iptables rule, an IPAM
// lease or a running container of an allocation that is not running.
// Private to test/chaos (see _harness.ts).

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Allocation, AllocationListStub, Deployment, ServiceRegistration } from '../../src/api/index.js';
import { adminChainName, sweepAllocation } from '../../src/client/network/index.js';
import { ALLOC_LABEL, dockerApi, dockerRig, dockerSkip, PAUSE_IMAGE, testImage, type TestDocker } from '../support/docker.js';

export const WEB_JOB = 'chaos-web';
export const WEB_SERVICE = 'chaos-web';
const WEB_COUNT = 2;

/** What the web workload needs of the machine, or why it cannot run here. */
export function webSkip(): string | undefined {
  const cni = ['/opt/cni/bin', '/usr/lib/cni'].find((d) => existsSync(path.join(d, 'bridge')) && existsSync(path.join(d, 'portmap')));
  return cni ? undefined : 'no CNI plugins (bridge, portmap) in /opt/cni/bin or /usr/lib/cni';
}

/** The workload's settings for one cluster: its bridge, its subnet and (when dockerd is at hand) the container's image. */
export class WebPart {
  readonly bridge: string;
  /** The first three octets of the bridge's /24. */
  readonly net: string;
  readonly docker: TestDocker | undefined;
  readonly image: string | undefined;
  gen = 0;
  /** Every allocation of the web job seen during the run: the leak checks look for their traces. */
  readonly seen = new Set<string>();

  private constructor(tag: string, docker: TestDocker | undefined, image: string | undefined) {
    this.bridge = `bch${tag}`;
    const octet = (): number => 16 + Math.floor(Math.random() * 200);
    this.net = `10.${octet()}.${octet()}`;
    this.docker = docker;
    this.image = image;
  }

  static async open(tag: string): Promise<WebPart> {
    if (dockerSkip()) return new WebPart(tag, undefined, undefined);
    const rig = await dockerRig();
    // The group network's pause container: built here, or dockerd would try to pull Nomad's infra_image from outside.
    await testImage(rig, 'pause');
    return new WebPart(tag, rig, await testImage(rig, 'busybox'));
  }

  get groups(): number {
    return this.docker ? 2 : 1;
  }

  /** The agent (client) config this workload needs, as HCL. */
  agentConfig(): string {
    const docker = this.docker
      ? `plugin "docker" {\n  config {\n    endpoint    = "${this.docker.host}"\n    infra_image = "${PAUSE_IMAGE}"\n  }\n}\n`
      : '';
    return `client {\n  bridge_network_name   = "${this.bridge}"\n  bridge_network_subnet = "${this.net}.0/24"\n}\n${docker}`;
  }

  /** The same for a JSON config file. */
  agentConfigJson(): Record<string, unknown> {
    return {
      client: { bridge_network_name: this.bridge, bridge_network_subnet: `${this.net}.0/24` },
      ...(this.docker ? { plugin: { docker: { config: { endpoint: this.docker.host, infra_image: PAUSE_IMAGE } } } } : {}),
    };
  }

  /** The job file; `gen` in its meta makes a new version (a roll) when it changes. */
  jobFile(): string {
    const box = this.image
      ? `
  group "box" {
    network {
      mode = "bridge"
      port "http" {
        to = 8080
      }
    }
    restart {
      attempts = 10
      interval = "1m"
      delay    = "200ms"
      mode     = "delay"
    }
    task "box" {
      driver = "docker"
      config {
        image   = "${this.image}"
        command = "httpd"
        args    = ["-f", "-p", "8080", "-h", "/local"]
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }`
      : '';
    return `job "${WEB_JOB}" {
  type = "service"
  meta {
    gen = "${this.gen}"
  }
  update {
    max_parallel      = 1
    health_check      = "checks"
    min_healthy_time  = "500ms"
    # Generous, as Nomad's defaults are (5m, 10m): on a loaded machine a slow start must not fail the rollout for
    # good (a failed deployment is not retried by a resubmit); a stuck one still fails to settle in the harness's time.
    healthy_deadline  = "3m"
    progress_deadline = "5m"
  }
  group "web" {
    count = ${WEB_COUNT}
    network {
      mode = "bridge"
      port "http" {
        to = 8080
      }
    }
    restart {
      attempts = 10
      interval = "1m"
      delay    = "200ms"
      mode     = "delay"
    }
    service {
      name = "${WEB_SERVICE}"
      port = "http"
      check {
        type     = "http"
        path     = "/"
        interval = "1s"
        timeout  = "1s"
      }
    }
    task "serve" {
      driver = "raw_exec"
      config {
        command = "/bin/busybox"
        args    = ["httpd", "-f", "-p", "8080", "-h", "local"]
      }
      template {
        data        = "ok\\n"
        destination = "local/index.html"
      }
      template {
        data        = "{{ range nomadService \\"${WEB_SERVICE}\\" }}{{ .Address }}:{{ .Port }}\\n{{ end }}"
        destination = "local/peers.txt"
        change_mode = "noop"
      }
      resources {
        cpu    = 20
        memory = 32
      }
    }
  }${box}
}
`;
  }
}

type Get = <T>(p: string) => Promise<T | undefined>;

/**
 * Why the web job has not converged yet (undefined once it has). Stopped
 * (`wanted` false): no live allocation, no service instance. Running: every group's allocations running at that version, its
 * latest deployment successful, the service's instances exactly the running
 * web allocations, and each one's template listing them.
 */
export async function webUnsettled(part: WebPart, wanted: boolean, get: Get, allocs: AllocationListStub[], nodeDir: string): Promise<string | undefined> {
  for (const a of allocs) if (a.JobID === WEB_JOB) part.seen.add(a.ID);
  const live = allocs.filter((a) => a.JobID === WEB_JOB && (a.ClientStatus === 'running' || a.ClientStatus === 'pending'));
  if (!wanted) {
    const regs = (await get<ServiceRegistration[]>(`/v1/service/${WEB_SERVICE}`)) ?? [];
    if (live.length) return `${live.length} live web allocations after its job was stopped`;
    return regs.length ? `service ${WEB_SERVICE} keeps ${regs.length} instances after its job was stopped` : undefined;
  }
  const job = await get<{ Version: number; Status: string }>(`/v1/job/${WEB_JOB}`);
  if (!job) return 'the web job is gone';
  const want = WEB_COUNT + (part.image ? 1 : 0);
  if (live.length !== want) return `${live.length} live web allocations (want ${want})`;
  const stale = live.find((a) => a.JobVersion !== job.Version);
  if (stale) return `web allocation ${stale.ID.slice(0, 8)} is at version ${stale.JobVersion}, its job at ${job.Version}`;
  const dep = await get<Deployment>(`/v1/job/${WEB_JOB}/deployment`);
  if (!dep || dep.JobVersion !== job.Version) return `no deployment of the web job's version ${job.Version} yet`;
  if (dep.Status !== 'successful') return `the web deployment is ${dep.Status}: ${dep.StatusDescription}`;
  const web = live.filter((a) => a.TaskGroup === 'web');
  const regs = (await get<ServiceRegistration[]>(`/v1/service/${WEB_SERVICE}`)) ?? [];
  const regAllocs = regs.map((r) => r.AllocID.slice(0, 8)).sort();
  const webAllocs = web.map((a) => a.ID.slice(0, 8)).sort();
  if (regAllocs.join(',') !== webAllocs.join(',')) return `service ${WEB_SERVICE} has instances of [${regAllocs.join(', ')}], the running web allocations are [${webAllocs.join(', ')}]`;
  const peers = regs.map((r) => `${r.Address}:${r.Port}`).sort();
  for (const a of web) {
    const file = path.join(nodeDir, 'client', 'alloc', a.ID, 'serve', 'local', 'peers.txt');
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      return `web allocation ${a.ID.slice(0, 8)} has no rendered peers.txt yet`;
    }
    const listed = text.split('\n').filter(Boolean).sort();
    if (listed.join(',') !== peers.join(',')) return `web allocation ${a.ID.slice(0, 8)}'s template lists [${listed.join(', ')}], the service has [${peers.join(', ')}]`;
  }
  return undefined;
}

function sh(file: string, args: string[]): string {
  try {
    return execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
}

/** The network namespace Berth's network manager names after an allocation. */
function netnsOf(allocId: string): string {
  return `berth-${createHash('sha256').update(allocId).digest('hex').slice(0, 16)}`;
}

/**
 * What the network and the containers keep of allocations that do not run:
 * namespaces, veths on the run's bridge beyond the running allocations',
 * iptables rules and IPAM leases naming another address or allocation, and
 * running containers. `running` holds the running allocations in full (their
 * addresses); an empty list after the final stop means nothing may be left.
 */
export async function webLeaks(part: WebPart, running: Allocation[]): Promise<string[]> {
  const leaks: string[] = [];
  const live = new Set(running.map((a) => a.ID));
  const bridged = running.filter((a) => a.JobID === WEB_JOB);
  const addresses = new Set(bridged.map((a) => a.NetworkStatus?.Address).filter((x): x is string => !!x));
  const namespaces = new Set(existsSync('/var/run/netns') ? readdirSync('/var/run/netns') : []);
  for (const id of part.seen) if (!live.has(id) && namespaces.has(netnsOf(id))) leaks.push(`network namespace ${netnsOf(id)} of allocation ${id.slice(0, 8)}, which does not run`);

  const veths = sh('ip', ['-o', 'link', 'show', 'master', part.bridge]).split('\n').filter(Boolean);
  if (veths.length > bridged.length) leaks.push(`${veths.length} veths on ${part.bridge} for ${bridged.length} running bridge allocations`);

  const dead = [...part.seen].filter((id) => !live.has(id));
  for (const rule of sh('iptables-save', []).split('\n')) {
    const addr = new RegExp(`\\b${part.net.replace(/\./g, '\\.')}\\.(\\d+)\\b`).exec(rule);
    const mine = addr && addr[1] !== '0' && addr[1] !== '1' && !rule.includes(`${part.net}.0/24`);
    if (mine && !addresses.has(`${part.net}.${addr[1]}`)) leaks.push(`iptables rule for ${part.net}.${addr[1]}, no running allocation's address: ${rule.trim()}`);
    else if (dead.some((id) => rule.includes(id))) leaks.push(`iptables rule naming an allocation that does not run: ${rule.trim()}`);
  }

  const ipam = `/var/lib/cni/networks/${part.bridge}`;
  for (const f of existsSync(ipam) ? readdirSync(ipam) : []) {
    if (!/^\d+\.\d+\.\d+\.\d+$/.test(f)) continue;
    const owner = (readFileSync(path.join(ipam, f), 'utf8').split('\n')[0] ?? '').trim();
    if (!live.has(owner)) leaks.push(`IPAM lease ${f} held for ${owner.slice(0, 8) || 'nobody'}, which does not run`);
  }

  if (part.docker) {
    const containers = await dockerApi<Array<{ Id: string; State: string; Labels: Record<string, string> }>>(part.docker, 'GET', '/containers/json?all=1').catch(() => []);
    for (const c of containers) {
      const alloc = c.Labels[ALLOC_LABEL];
      if (alloc && part.seen.has(alloc) && !live.has(alloc) && c.State === 'running') leaks.push(`container ${c.Id.slice(0, 12)} of allocation ${alloc.slice(0, 8)} runs; the allocation does not`);
    }
  }
  return leaks;
}

/**
 * Removes what a broken run (agents SIGKILLed, no teardown) may have left of
 * the workload's network: each allocation's rules, chains and leases (the
 * agent's own sweep), namespaces, the admin chain, the bridge, its leases.
 */
export async function webCleanUp(part: WebPart): Promise<void> {
  for (const id of part.seen) {
    await sweepAllocation(part.bridge, id, []);
    sh('ip', ['netns', 'delete', netnsOf(id)]);
  }
  const admin = adminChainName(part.bridge);
  sh('iptables', ['-w', '-t', 'filter', '-D', 'CNI-FORWARD', '-m', 'comment', '--comment', 'CNI firewall plugin admin overrides', '-j', admin]);
  sh('iptables', ['-w', '-t', 'filter', '-F', admin]);
  sh('iptables', ['-w', '-t', 'filter', '-X', admin]);
  sh('ip', ['link', 'delete', part.bridge]);
  sh('rm', ['-rf', `/var/lib/cni/networks/${part.bridge}`]);
}
