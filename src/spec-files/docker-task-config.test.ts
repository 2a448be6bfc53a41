// A docker job file is checked at submit against Nomad's docker task config:
// written as Nomad's docs write it, it is accepted whatever the block shapes;
// a key Berth's driver does not implement, an unknown key or a wrong value is
// refused at its line, all of them at once.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DOCKER_TASK_CONFIG_SCHEMA } from '../structs/index.js';
import { parseJobFile, SpecFileError } from './index.js';

const job = (config: string): string => `job "web" {
  group "web" {
    task "server" {
      driver = "docker"
      config {
${config}
      }
    }
  }
}
`;

describe('docker task config at submit', () => {
  it('accepts a config written as Nomad documents it, blocks and maps in either form', async () => {
    const file = await parseJobFile(
      'web.hcl',
      job(`        image = "registry.example:5000/web:1.2"
        ports = ["http"]
        args = ["-p", "8080"]
        labels {
          team = "storage"
        }
        mount {
          type   = "bind"
          source = "local/conf"
          target = "/etc/web"
          bind_options {
            propagation = "rshared"
          }
        }
        mount {
          type   = "tmpfs"
          target = "/scratch"
        }
        ulimit {
          nofile = "1024:2048"
        }
        auth {
          username = "u"
          password = "p"
        }
        volumes = ["local/data:/data"]
        privileged = true
        cap_add = ["net_admin"]`),
    );
    const c = DOCKER_TASK_CONFIG_SCHEMA.parse(file.job.groups[0]?.tasks[0]?.config);
    assert.deepEqual(c.labels, { team: 'storage' });
    assert.deepEqual(c.ulimit, { nofile: '1024:2048' });
    assert.equal(c.auth?.username, 'u');
    assert.deepEqual(
      c.mount?.map((m) => [m.type, m.target, m.bind_options?.propagation]),
      [
        ['bind', '/etc/web', 'rshared'],
        ['tmpfs', '/scratch', undefined],
      ],
    );
  });

  it('refuses what the driver does not implement, unknown keys and wrong values at their lines, together', async () => {
    const err = await parseJobFile(
      'web.hcl',
      job(`        image = "web:1"
        port_map {
          http = 8080
        }
        colour = "blue"
        mount {
          source = 3
          target = "/x"
        }`),
    ).catch((e: unknown) => e);
    assert.ok(err instanceof SpecFileError);
    assert.deepEqual(
      err.problems.map((p) => `${p.line}: ${p.field}: ${p.message}`),
      [
        "7: config.port_map: is not supported by Berth's docker driver: use `ports` with the group network's `port \"label\" { to = N }` (driver docker)",
        '10: config.colour: is not a docker task config field (driver docker)',
        '11: config.mount.0.source: must be a string (driver docker)',
      ],
    );
  });

  it('requires the image', async () => {
    const err = await parseJobFile('web.hcl', job('        command = "sh"')).catch((e: unknown) => e);
    assert.ok(err instanceof SpecFileError);
    assert.match(err.problems[0]?.message ?? '', /^config\.image|is required: the image to run/);
  });
});
