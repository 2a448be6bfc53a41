// The configuration Berth hands the CNI plugins: Nomad's bridge network with
// our names, the ports mapped as Nomad maps them, the user's networks found
// by name, what each plugin reads on stdin, and bad client settings refused
// in the user's words.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { splitRule } from './_host.js';
import { adminChainName, bridgeConfList, DEFAULT_BRIDGE, loadUserConfList, portMappings, validateBridgeSettings } from './cni-config.js';
import { pluginInput } from './cni-runner.js';

describe('CNI configuration', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'bcc-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("is Nomad's bridge network by default: bridge berth on 172.26.64.0/20, hairpin, masquerade, firewall admin chain, portmap with SNAT", () => {
    const conf = bridgeConfList(DEFAULT_BRIDGE);
    assert.equal(conf.name, 'berth');
    assert.deepEqual(
      conf.plugins.map((p) => p.type),
      ['loopback', 'bridge', 'firewall', 'portmap'],
    );
    const bridge = conf.plugins[1] as Record<string, unknown>;
    assert.equal(bridge['bridge'], 'berth');
    assert.equal(bridge['hairpinMode'], true);
    assert.equal(bridge['ipMasq'], true);
    assert.equal(bridge['isGateway'], true);
    assert.deepEqual((bridge['ipam'] as { ranges: unknown }).ranges, [[{ subnet: '172.26.64.0/20' }]]);
    assert.equal((conf.plugins[2] as Record<string, unknown>)['iptablesAdminChainName'], 'BERTH-ADMIN');
    assert.deepEqual(conf.plugins[3], { type: 'portmap', capabilities: { portMappings: true }, snat: true });
    assert.equal(adminChainName('web1'), 'BERTH-ADMIN-WEB1');
    assert.ok(adminChainName('a-fifteen-chars').length <= 28);
  });

  it('maps each port for tcp and udp from its host port to its `to` port (the host port when unset), bound to its host IP unless a wildcard', () => {
    assert.deepEqual(portMappings([{ label: 'http', value: 25000, to: 80, hostIp: '127.0.0.1' }]), [
      { hostPort: 25000, containerPort: 80, protocol: 'tcp', hostIP: '127.0.0.1' },
      { hostPort: 25000, containerPort: 80, protocol: 'udp', hostIP: '127.0.0.1' },
    ]);
    assert.deepEqual(portMappings([{ label: 'db', value: 5432, to: 0, hostIp: '0.0.0.0' }])[0], { hostPort: 5432, containerPort: 5432, protocol: 'tcp' });
    assert.deepEqual(portMappings([]), []);
  });

  it('gives each plugin its conf with the list name and version, runtimeConfig only for its capabilities, and the previous result', () => {
    const conf = bridgeConfList(DEFAULT_BRIDGE);
    const att = { containerId: 'c', netnsPath: '/n', ifName: 'eth0', capabilityArgs: { portMappings: [{ hostPort: 1, containerPort: 2, protocol: 'tcp' }] } };
    const prev = { cniVersion: '0.4.0', ips: [{ address: '10.0.0.2/24' }] };
    const portmap = pluginInput(conf, conf.plugins[3]!, att, prev);
    assert.deepEqual(portmap['runtimeConfig'], { portMappings: att.capabilityArgs.portMappings });
    assert.deepEqual(portmap['prevResult'], prev);
    assert.equal(portmap['name'], 'berth');
    assert.equal(portmap['cniVersion'], '0.4.0');
    const loopback = pluginInput(conf, conf.plugins[0]!, att, undefined);
    assert.deepEqual(loopback, { type: 'loopback', name: 'berth', cniVersion: '0.4.0' });
  });

  it("finds the user's network by name in a .conflist or a single-plugin .conf, and names the networks it found when one is missing", async () => {
    writeFileSync(path.join(dir, '10-a.conflist'), JSON.stringify({ cniVersion: '1.0.0', name: 'alpha', plugins: [{ type: 'ptp' }, { type: 'portmap', capabilities: { portMappings: true } }] }));
    writeFileSync(path.join(dir, '20-b.conf'), JSON.stringify({ cniVersion: '0.4.0', name: 'beta', type: 'bridge', bridge: 'br9' }));
    const alpha = await loadUserConfList(dir, 'alpha');
    assert.deepEqual(alpha.plugins.map((p) => p.type), ['ptp', 'portmap']);
    assert.equal(alpha.cniVersion, '1.0.0');
    assert.deepEqual(await loadUserConfList(dir, 'beta'), { cniVersion: '0.4.0', name: 'beta', plugins: [{ type: 'bridge', bridge: 'br9' }] });
    await assert.rejects(loadUserConfList(dir, 'gamma'), /network mode "cni\/gamma": no CNI network named "gamma" in .* \(found: alpha, beta\)/);
    await assert.rejects(loadUserConfList(path.join(dir, 'nope'), 'alpha'), /cannot read cni_config_dir/);
  });

  it('refuses a bridge name that cannot be an interface and a subnet that is not an IPv4 CIDR', () => {
    assert.throws(() => validateBridgeSettings({ name: 'a-name-far-too-long', subnet: '10.1.0.0/24' }), /bridge_network_name "a-name-far-too-long" must be 1-15/);
    assert.throws(() => validateBridgeSettings({ name: 'br0', subnet: '10.1.0.0' }), /bridge_network_subnet "10.1.0.0" must be an IPv4 CIDR/);
    assert.throws(() => validateBridgeSettings({ name: 'br0', subnet: '300.1.0.0/24' }), /must be an IPv4 CIDR/);
    validateBridgeSettings({ name: 'br0', subnet: '10.1.0.0/24' });
  });

  it('reads iptables -S rules back into arguments, quoted comments whole', () => {
    assert.deepEqual(splitRule('-D CNI-FORWARD -m comment --comment "CNI firewall plugin admin overrides" -j BERTH-ADMIN'), [
      '-D',
      'CNI-FORWARD',
      '-m',
      'comment',
      '--comment',
      'CNI firewall plugin admin overrides',
      '-j',
      'BERTH-ADMIN',
    ]);
  });
});
