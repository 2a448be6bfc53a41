// The client's port settings in the agent config: Nomad's names, the
// reserved port list syntax, host networks; bad values named at their line.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SpecFileError } from '../spec-files/index.js';
import { parseAgentConfig } from './agent-config.js';

describe('agent config: ports', () => {
  it('reads the dynamic range, reserved ports and host networks, in HCL and JSON', async () => {
    const hcl = `client {
  network_interface = "eth0"
  min_dynamic_port  = 30000
  max_dynamic_port  = 30100
  reserved {
    reserved_ports = "22,80,8500-8502"
  }
  host_network "public" {
    cidr           = "192.0.2.0/24"
    reserved_ports = "443"
  }
}
`;
    const want = {
      interface: 'eth0',
      minDynamicPort: 30000,
      maxDynamicPort: 30100,
      reservedPorts: [22, 80, 8500, 8501, 8502],
      hostNetworks: { public: { cidr: '192.0.2.0/24', reservedPorts: [443] } },
    };
    assert.deepEqual((await parseAgentConfig('a.hcl', hcl)).client.network, want);
    const json = {
      client: {
        network_interface: 'eth0',
        min_dynamic_port: 30000,
        max_dynamic_port: 30100,
        reserved: { reserved_ports: '22,80,8500-8502' },
        host_network: { public: { cidr: '192.0.2.0/24', reserved_ports: '443' } },
      },
    };
    assert.deepEqual((await parseAgentConfig('a.json', JSON.stringify(json))).client.network, want);
  });

  it('refuses a malformed port list, an inverted range and a port out of range at their lines', async () => {
    const problem = async (text: string): Promise<string> => {
      const err = await parseAgentConfig('a.hcl', text).then(
        () => assert.fail('accepted'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof SpecFileError, String(err));
      return err.message;
    };
    assert.equal(
      await problem('client {\n  reserved {\n    reserved_ports = "22,http"\n  }\n}\n'),
      'a.hcl:3:5: client.reserved.reserved_ports: "http" is not a port or a range of ports such as "8500-8600"; write ports and ranges such as "22,80,8500-8600"',
    );
    assert.match(await problem('client {\n  reserved {\n    reserved_ports = "8600-8500"\n  }\n}\n'), /^a\.hcl:3:5: .*"8600-8500" is an empty range/);
    assert.match(await problem('client {\n  min_dynamic_port = 31000\n  max_dynamic_port = 30000\n}\n'), /^a\.hcl:2:3: .*min_dynamic_port must not be above max_dynamic_port/);
    assert.match(await problem('client {\n  max_dynamic_port = 70000\n}\n'), /^a\.hcl:2:3: .*must be a port between 1 and 65535/);
  });
});
