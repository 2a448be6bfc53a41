// The node's addresses for ports, from the machine's interfaces as Node
// reports them: the configured interface, the default route's, host
// networks by CIDR or interface.

import assert from 'node:assert/strict';
import type os from 'node:os';
import { describe, it } from 'node:test';
import { defaultRouteInterface, hostNetworkAddress, networkFingerprint, nodeAddress } from './_network-fingerprint.js';

const v4 = (address: string, internal = false): os.NetworkInterfaceInfo => ({ address, family: 'IPv4', internal, netmask: '255.255.255.0', mac: '00:00:00:00:00:00', cidr: `${address}/24` });
const v6 = (address: string): os.NetworkInterfaceInfo => ({ address, family: 'IPv6', internal: false, netmask: 'ffff:ffff:ffff:ffff::', mac: '00:00:00:00:00:00', cidr: `${address}/64`, scopeid: 0 });
const IFACES = { lo: [v4('127.0.0.1', true)], eth0: [v4('10.1.2.3'), v6('fd00::3')], eth1: [v4('192.0.2.7')] };

describe('network fingerprint', () => {
  it('finds the default route interface in /proc/net/route', () => {
    const table = 'Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\tMTU\tWindow\tIRTT\neth1\t0002000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\neth0\t00000000\t0102000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n';
    assert.equal(defaultRouteInterface(table), 'eth0');
    assert.equal(defaultRouteInterface('Iface\tDestination\n'), undefined);
  });

  it('takes the configured interface, else the default route, else the first outside loopback', () => {
    assert.equal(nodeAddress(IFACES, 'lo', 'eth0'), '127.0.0.1');
    assert.equal(nodeAddress(IFACES, undefined, 'eth1'), '192.0.2.7');
    assert.equal(nodeAddress(IFACES, undefined, undefined), '10.1.2.3');
    assert.equal(nodeAddress(IFACES, 'nope', undefined), '', 'a configured interface that does not exist gives no address');
  });

  it('finds a host network by CIDR (IPv4 or IPv6) or by interface, and reports none when nothing matches', () => {
    assert.equal(hostNetworkAddress(IFACES, { cidr: '192.0.2.0/24' }), '192.0.2.7');
    assert.equal(hostNetworkAddress(IFACES, { cidr: 'fd00::/8' }), 'fd00::3');
    assert.equal(hostNetworkAddress(IFACES, { interface: 'eth0' }), '10.1.2.3');
    assert.equal(hostNetworkAddress(IFACES, { cidr: '198.51.100.0/24' }), '');
    const fp = networkFingerprint({ interface: 'lo', reservedPorts: [22], hostNetworks: { public: { cidr: '192.0.2.0/24', reservedPorts: [443] } } }, IFACES);
    assert.deepEqual(fp, {
      networkAddress: '127.0.0.1',
      reservedPorts: [22],
      minDynamicPort: 20000,
      maxDynamicPort: 32000,
      hostNetworks: { public: { cidr: '192.0.2.0/24', address: '192.0.2.7', reservedPorts: [443] } },
    });
  });
});
