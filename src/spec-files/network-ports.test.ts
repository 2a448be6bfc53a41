// A group's network ports as users write them: Nomad's HCL, Berth's JSON and
// Nomad's API JSON (ReservedPorts and DynamicPorts) all give the same ports;
// a bad port in Nomad's JSON is reported at its Nomad path.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobFile, SpecFileError } from './spec-file.js';

const HCL = `job "web" {
  group "g" {
    network {
      port "http" {
        static = 8080
        to     = 80
      }
      port "metrics" {}
      port "public" {
        host_network = "public"
      }
      dns {
        servers = ["127.0.0.53"]
      }
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo \${NOMAD_PORT_http}"]
      }
    }
  }
}
`;

const PORTS = [
  { label: 'http', static: 8080, to: 80 },
  { label: 'metrics' },
  { label: 'public', hostNetwork: 'public' },
];

describe('group network ports', () => {
  it('reads port blocks from HCL in the order written, with dns', async () => {
    const { job } = await parseJobFile('web.hcl', HCL);
    const net = job.groups[0]!.network;
    assert.equal(net.mode, 'host');
    assert.deepEqual(net.ports, PORTS);
    assert.deepEqual(net.dns, { servers: ['127.0.0.53'], searches: [], options: [] });
    assert.deepEqual(job.groups[0]!.tasks[0]!.config['args'], ['-c', 'echo ${NOMAD_PORT_http}'], 'run-time ports stay for the client to expand');
  });

  it('reads the same ports from Berth JSON and from Nomad API JSON (ReservedPorts and DynamicPorts)', async () => {
    const berth = await parseJobFile('web.json', JSON.stringify({ id: 'web', groups: [{ name: 'g', network: { ports: PORTS }, tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }] }));
    assert.deepEqual(berth.job.groups[0]!.network.ports, PORTS);
    const nomad = {
      Job: {
        ID: 'web',
        TaskGroups: [
          {
            Name: 'g',
            Networks: [
              {
                Mode: 'host',
                ReservedPorts: [{ Label: 'http', Value: 8080, To: 80, HostNetwork: 'default' }],
                DynamicPorts: [
                  { Label: 'metrics', Value: 0, To: 0, HostNetwork: '' },
                  { Label: 'public', Value: 0, To: 0, HostNetwork: 'public' },
                ],
                DNS: { Servers: ['127.0.0.53'], Searches: null, Options: null },
                MBits: 0,
              },
            ],
            Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/true' } }],
          },
        ],
      },
    };
    const fromNomad = await parseJobFile('web.json', JSON.stringify(nomad, null, 2));
    assert.deepEqual(fromNomad.job.groups[0]!.network.ports, [{ label: 'http', static: 8080, to: 80, hostNetwork: 'default' }, PORTS[1], PORTS[2]]);
    assert.deepEqual(fromNomad.job.groups[0]!.network.dns?.servers, ['127.0.0.53']);

    nomad.Job.TaskGroups[0]!.Networks[0]!.DynamicPorts[1]!.Label = 'metrics';
    const err = await parseJobFile('web.json', JSON.stringify(nomad, null, 2)).then(
      () => assert.fail('accepted a label twice'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof SpecFileError);
    const lines = JSON.stringify(nomad, null, 2).split('\n');
    const at = lines.map((l, n) => (l.includes('"Label": "metrics"') ? n + 1 : 0)).filter(Boolean)[1];
    assert.match(err.message, new RegExp(`^web\\.json:${at}:\\d+: .*port label "metrics" is already used in this network$`), 'at the second label\'s line');
  });

  it('refuses ports in a group whose network mode is "none"', async () => {
    const text = 'job "web" {\n  group "g" {\n    network {\n      mode = "none"\n      port "http" {}\n    }\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/true"\n      }\n    }\n  }\n}\n';
    await assert.rejects(parseJobFile('web.hcl', text), /^SpecFileError: web\.hcl:5:7: network\.port: mode "none" gives the group no network to put ports on/);
  });
});
