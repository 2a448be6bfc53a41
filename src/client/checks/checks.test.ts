// Service checks on the node: what a result means (thresholds,
// check_restart), one schedule for every check (fixed cadence on a manual
// clock, a real HTTP server on loopback for the probe), and where a service
// is reachable (ports by label, literal ports, address modes).

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import { parseJobSpec, type Allocation, type CheckResult, type Job } from '../../structs/index.js';
import { allocServices, CheckRunner, httpStatusResult, initialCheckState, nextCheckState, runProbe, type ProbeResult } from './index.js';

const check = parseJobSpec({
  id: 'j',
  groups: [{ name: 'g', services: [{ port: '80', checks: [{ type: 'tcp', interval: '1s', timeout: '1s' }] }], tasks: [{ name: 't', driver: 'raw_exec' }] }],
}).groups[0]?.services?.[0]?.checks[0] as NonNullable<ReturnType<typeof parseJobSpec>['groups'][number]['services']>[number]['checks'][number];
const pass: ProbeResult = { status: 'passing', output: 'ok' };
const fail: ProbeResult = { status: 'critical', output: 'down' };
const warn: ProbeResult = { status: 'warning', output: '429' };

describe('check results', () => {
  it("reads HTTP statuses as Nomad does: 2xx passing, 429 warning, else critical; expected_status overrides", () => {
    assert.equal(httpStatusResult(204), 'passing');
    assert.equal(httpStatusResult(429), 'warning');
    assert.equal(httpStatusResult(503), 'critical');
    assert.equal(httpStatusResult(503, [503]), 'passing');
    assert.equal(httpStatusResult(200, [204]), 'critical');
  });

  it('waits for success_before_passing passes, and stays passing until failures_before_critical failures', () => {
    const c = { ...check, successBeforePassing: 2, failuresBeforeCritical: 2 };
    let s = initialCheckState(c, 0);
    assert.equal(s.status, 'pending');
    s = nextCheckState(s, c, pass, 1).state;
    assert.equal(s.status, 'pending');
    s = nextCheckState(s, c, pass, 2).state;
    assert.equal(s.status, 'passing');
    s = nextCheckState(s, c, fail, 3).state;
    assert.equal(s.status, 'passing', 'one failure is tolerated');
    s = nextCheckState(s, c, fail, 4).state;
    assert.equal(s.status, 'critical');
  });

  it('asks for a restart after check_restart.limit unhealthy results past the grace, warnings counted unless ignored', () => {
    const c = { ...check, checkRestart: { limit: 2, graceMs: 10, ignoreWarnings: false } };
    let s = initialCheckState(c, 0);
    let r = nextCheckState(s, c, fail, 5);
    assert.equal(r.restart, false);
    assert.equal(r.state.unhealthy, 0, 'inside the grace nothing counts');
    s = r.state;
    r = nextCheckState(s, c, warn, 11);
    assert.equal(r.state.unhealthy, 1);
    r = nextCheckState(r.state, c, fail, 12);
    assert.equal(r.restart, true);
    assert.equal(r.state.graceUntil, 22, 'a new grace starts');
    const ignoring = { ...check, checkRestart: { limit: 1, graceMs: 0, ignoreWarnings: true } };
    assert.equal(nextCheckState(initialCheckState(ignoring, 0), ignoring, warn, 1).restart, false);
  });
});

describe('the check runner', () => {
  it('runs every check on one fixed cadence, reports changes only, and hands check_restart verdicts on', async () => {
    const clock = new ManualClock(1_000_000);
    const runs: number[] = [];
    const answers: ProbeResult[] = [pass, pass, fail, fail, fail];
    const changes: Array<Record<string, CheckResult>> = [];
    const restarts: string[] = [];
    const runner = new CheckRunner({
      clock,
      probe: async () => {
        runs.push(clock.now());
        return answers.shift() ?? pass;
      },
      onChange: (_a, r) => changes.push(r),
      onRestart: (_a, task, why) => restarts.push(`${task}: ${why}`),
    });
    await runner.start();
    runner.set('a1', [{ id: 'c1', service: 'web', name: 'alive', restartTask: 't', check: { ...check, checkRestart: { limit: 2, graceMs: 0, ignoreWarnings: false } }, address: '127.0.0.1', port: 1 }]);
    assert.equal(changes.length, 1, 'a new check is reported pending');
    assert.equal(changes[0]?.['c1']?.status, 'pending');
    for (let i = 0; i < 5; i++) await clock.advance(1000);
    assert.equal(runs.length, 5);
    const first = runs[0] as number;
    assert.deepEqual(runs.map((t) => t - first), [0, 1000, 2000, 3000, 4000], 'no drift');
    assert.deepEqual(changes.map((c) => c['c1']?.status), ['pending', 'passing', 'critical']);
    assert.equal(restarts.length, 1);
    assert.match(restarts[0] as string, /^t: check "alive" was unhealthy 2 times in a row: down/);
    runner.remove('a1');
    await clock.advance(5000);
    assert.equal(runs.length, 5, 'a removed allocation is no longer checked');
    await runner.stop();
  });

  it('probes a real HTTP server on loopback (no keep-alive) and a closed port', async () => {
    const srv = http.createServer((req, res) => {
      res.writeHead(req.url === '/ok' ? 200 : 429, { connection: req.headers.connection ?? '' });
      res.end();
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as AddressInfo).port;
    try {
      assert.equal((await runProbe({ address: '127.0.0.1', port, check: { ...check, type: 'http', path: '/ok' } })).status, 'passing');
      assert.equal((await runProbe({ address: '127.0.0.1', port, check: { ...check, type: 'http', path: '/busy' } })).status, 'warning');
      assert.equal((await runProbe({ address: '127.0.0.1', port, check })).status, 'passing');
    } finally {
      await new Promise((r) => srv.close(r));
    }
    const closed = await runProbe({ address: '127.0.0.1', port, check });
    assert.equal(closed.status, 'critical');
    assert.match(closed.output, /ECONNREFUSED/);
  });
});

describe('an allocation\'s services', () => {
  const job = parseJobSpec({
    id: 'shop',
    groups: [
      {
        name: 'api',
        network: { mode: 'bridge', ports: [{ label: 'http', to: 8080 }] },
        services: [
          { name: '${NOMAD_JOB_NAME}-http', port: 'http', tags: ['v1'], checks: [{ type: 'http', path: '/h', interval: '1s', timeout: '1s', checkRestart: { limit: 3 } }] },
          { name: 'inside', port: 'http', addressMode: 'alloc' },
        ],
        tasks: [{ name: 'srv', driver: 'raw_exec', services: [{ port: '9100' }] }],
      },
    ],
  }) as unknown as Job; // parsed, without the fields registration adds
  // A bridge allocation: the scheduler's host port 23456 maps to 8080 in its namespace; the client reports its address.
  const alloc = { id: 'a1', namespace: 'default', jobId: 'shop', taskGroup: 'api', ports: [{ label: 'http', value: 23456, to: 8080, hostIp: '10.0.0.5' }], network: { mode: 'bridge', address: '172.26.64.9' } } as unknown as Allocation;
  const interpolate = (text: string): string => text.replace('${NOMAD_JOB_NAME}', 'shop');

  it('resolves port labels through the allocation\'s ports by address mode, literal ports on the node, default names', () => {
    const r = allocServices({ alloc, job, nodeAddress: '10.0.0.1', runningTasks: new Set(['srv']), interpolate });
    assert.deepEqual(r.problems, []);
    assert.deepEqual(
      r.reports.map((s) => [s.serviceName, s.address, s.port]),
      [
        ['shop-http', '10.0.0.5', 23456],
        ['inside', '172.26.64.9', 8080],
        ['shop-api-srv', '10.0.0.1', 9100],
      ],
    );
    assert.equal(r.checks.length, 1);
    assert.equal(r.checks[0]?.restartTask, 'srv');
    assert.equal(r.checks[0]?.port, 23456);
  });

  it('registers nothing while no task runs, and names a missing port label', () => {
    assert.equal(allocServices({ alloc, job, nodeAddress: '10.0.0.1', runningTasks: new Set(), interpolate }).reports.length, 0);
    const bare = { ...alloc, ports: [] } as unknown as Allocation;
    const r = allocServices({ alloc: bare, job, nodeAddress: '10.0.0.1', runningTasks: new Set(['srv']), interpolate });
    assert.match(r.problems[0] as string, /port label "http" is not among the allocation's ports/);
  });

  it('registers the host address and host port in host mode, where the allocation has no address of its own', () => {
    const host = { ...alloc, ports: [{ label: 'http', value: 23456, to: 23456, hostIp: '10.0.0.5' }], network: { mode: 'host' } } as unknown as Allocation;
    const r = allocServices({ alloc: host, job, nodeAddress: '10.0.0.1', runningTasks: new Set(['srv']), interpolate });
    assert.deepEqual(
      r.reports.map((s) => [s.serviceName, s.address, s.port]),
      [
        ['shop-http', '10.0.0.5', 23456],
        ['inside', '10.0.0.1', 23456],
        ['shop-api-srv', '10.0.0.1', 9100],
      ],
    );
  });
});
