// `service` and `check` blocks in job files, HCL and Nomad's JSON: what a
// user writes becomes the canonical services, and what Berth cannot do is
// refused by name at its line.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobFile, SpecFileError, type FileProblem } from './spec-file.js';

async function problemsOf(p: Promise<unknown>): Promise<string[]> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof SpecFileError, `expected SpecFileError, got ${String(err)}`);
    return err.problems.map((q: FileProblem) => `${q.line} ${q.field}: ${q.message}`);
  }
  assert.fail('the file was accepted');
}

const job = (group: string, task = ''): string => `job "web" {
  group "app" {
${group}
    task "srv" {
      driver = "raw_exec"
      config { command = "/bin/true" }
${task}
    }
  }
}
`;

describe('service blocks', () => {
  it('reads a group service with its checks and check_restart, durations in milliseconds', async () => {
    const { job: j } = await parseJobFile(
      'web.hcl',
      job(`    service {
      name = "\${NOMAD_JOB_NAME}-api"
      port = 18081
      tags = ["v1", "api"]
      meta { zone = "a" }
      check {
        type = "http"
        path = "/health"
        interval = "2s"
        timeout = "500ms"
        header { X-Probe = ["berth"] }
        check_restart {
          limit = 3
          grace = "10s"
        }
      }
      check {
        name = "socket"
        type = "tcp"
        interval = "5s"
        timeout = "1s"
      }
    }`),
    );
    const [svc] = j.groups[0]?.services ?? [];
    assert.ok(svc);
    assert.equal(svc.name, '${NOMAD_JOB_NAME}-api');
    assert.equal(svc.port, '18081');
    assert.equal(svc.provider, 'nomad');
    assert.deepEqual(svc.tags, ['v1', 'api']);
    assert.deepEqual(svc.meta, { zone: 'a' });
    const [http, tcp] = svc.checks;
    assert.equal(http?.intervalMs, 2000);
    assert.equal(http?.timeoutMs, 500);
    assert.deepEqual(http?.header, { 'X-Probe': ['berth'] });
    assert.deepEqual(http?.checkRestart, { limit: 3, graceMs: 10_000, ignoreWarnings: false });
    assert.equal(tcp?.name, 'socket');
    assert.equal(tcp?.intervalMs, 5000);
  });

  it('takes a task service, and a service-level check_restart applies to its checks', async () => {
    const { job: j } = await parseJobFile(
      'web.hcl',
      job('', `      service {
        port = "9000"
        check_restart { limit = 2 }
        check {
          type = "tcp"
          interval = "1s"
          timeout = "1s"
        }
      }`),
    );
    const svc = j.groups[0]?.tasks[0]?.services?.[0];
    assert.equal(svc?.checks[0]?.checkRestart?.limit, 2);
    assert.equal(svc?.checks[0]?.checkRestart?.graceMs, 1000);
  });

  it('refuses Consul, script checks, a missing path and an unknown port label, each at its line', async () => {
    const problems = await problemsOf(
      parseJobFile(
        'web.hcl',
        job(`    service {
      provider = "consul"
      port = "http"
      check {
        type = "script"
        command = "/bin/true"
        interval = "5s"
        timeout = "1s"
      }
      check {
        type = "http"
        interval = "500ms"
        timeout = "1s"
      }
    }`),
      ),
    );
    const text = problems.join('\n');
    assert.match(text, /^4 service\.provider: Berth has no Consul/m);
    assert.match(text, /^5 service\.port: port "http" is not a port label of group "app"'s network block/m);
    assert.match(text, /^7 service\.check\.type: a check of type "script" needs Consul/m);
    assert.match(text, /service\.check\[1\]\.path: an http check needs a path/);
    assert.match(text, /service\.check\[1\]\.interval: interval must be at least "1s"/);
  });

  it('reads Nomad JSON Services with nanosecond durations', async () => {
    const text = JSON.stringify({
      Job: {
        ID: 'web',
        TaskGroups: [
          {
            Name: 'app',
            Services: [
              {
                Name: 'api',
                PortLabel: '8080',
                Tags: ['a'],
                Provider: 'nomad',
                Checks: [{ Name: 'alive', Type: 'http', Path: '/', Interval: 10_000_000_000, Timeout: 2_000_000_000, CheckRestart: { Limit: 1, Grace: 5_000_000_000, IgnoreWarnings: true } }],
              },
            ],
            Tasks: [{ Name: 'srv', Driver: 'raw_exec', Config: { command: '/bin/true' } }],
          },
        ],
      },
    });
    const { job: j } = await parseJobFile('web.json', text);
    const c = j.groups[0]?.services?.[0]?.checks[0];
    assert.equal(c?.intervalMs, 10_000);
    assert.equal(c?.timeoutMs, 2000);
    assert.deepEqual(c?.checkRestart, { limit: 1, graceMs: 5000, ignoreWarnings: true });
  });
});
