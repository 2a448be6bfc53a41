// The node's network modes from what is on its disk: bridge only with every
// CNI plugin it runs in cni_path, cni/<name> for each network configured.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { BRIDGE_CNI_PLUGINS, networkModesOf } from './cni-fingerprint.js';

describe('networkModesOf', () => {
  it('bridge with the plugins it needs, cni/<name> per configured network; without plugins, host and none only', (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bcnifp-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const conf = path.join(dir, 'conf');
    assert.deepEqual(networkModesOf({ cniPath: [path.join(dir, 'nowhere')], cniConfigDir: path.join(dir, 'nowhere') }), ['host', 'none']);
    // The real plugins (Debian's containernetworking-plugins) have them all.
    assert.deepEqual(networkModesOf({ cniPath: ['/usr/lib/cni'], cniConfigDir: path.join(dir, 'nowhere') }), ['host', 'none', 'bridge']);
    assert.ok(['bridge', 'host-local', 'loopback', 'firewall', 'portmap'].every((p) => BRIDGE_CNI_PLUGINS.includes(p)));
    // One plugin short: no bridge.
    const some = path.join(dir, 'some');
    mkdirSync(some);
    for (const p of BRIDGE_CNI_PLUGINS.slice(1)) writeFileSync(path.join(some, p), '#!/bin/sh\n', { mode: 0o755 });
    assert.deepEqual(networkModesOf({ cniPath: [some], cniConfigDir: path.join(dir, 'nowhere') }), ['host', 'none']);
    mkdirSync(conf);
    writeFileSync(path.join(conf, '10-a.conflist'), JSON.stringify({ cniVersion: '0.4.0', name: 'mynet', plugins: [{ type: 'ptp' }] }));
    writeFileSync(path.join(conf, '20-b.conf'), JSON.stringify({ cniVersion: '0.4.0', name: 'other', type: 'ptp' }));
    writeFileSync(path.join(conf, '30-bad.conf'), '{not json');
    assert.deepEqual(networkModesOf({ cniPath: ['/usr/lib/cni'], cniConfigDir: conf }), ['host', 'none', 'bridge', 'cni/mynet', 'cni/other']);
  });
});
