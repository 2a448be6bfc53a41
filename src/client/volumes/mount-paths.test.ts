import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { MountPaths, pathKey, usageKey } from './mount-paths.js';
import { ClientVolumeError } from './client-volume-error.js';

const HOSTILE_IDS = [
  '..',
  '.',
  '../../etc',
  '../',
  'a/../../b',
  '/abs/path',
  'nul\0byte',
  'x'.repeat(300),
  'ü'.repeat(150),
  '.hidden',
  'spaces and\ttabs\n',
  '%2E%2E',
  '%h' + 'a'.repeat(64),
];

describe('pathKey', () => {
  it('keeps readable IDs readable', () => {
    assert.equal(pathKey('vol-1'), 'vol-1');
    assert.equal(pathKey('my_volume.v2'), 'my_volume.v2');
    assert.equal(pathKey('a/b'), 'a%2Fb');
  });

  it('turns any ID into one safe directory name (scenario 17)', () => {
    for (const id of HOSTILE_IDS) {
      const key = pathKey(id);
      assert.ok(!key.includes('/'), `${JSON.stringify(id)} -> ${key}`);
      assert.ok(!key.includes('\0'));
      assert.ok(key !== '.' && key !== '..' && !key.startsWith('.'));
      assert.ok(Buffer.byteLength(key) <= 255, 'fits NAME_MAX');
      assert.match(key, /^[A-Za-z0-9_.%-]+$/);
    }
    assert.match(pathKey('x'.repeat(300)), /^%h[0-9a-f]{64}$/);
  });

  it('gives different keys to different IDs, including IDs that look like escapes or hashes', () => {
    const ids = [...HOSTILE_IDS, '%', '%25', 'x'.repeat(299), 'x'.repeat(301), 'A', 'a'];
    const keys = ids.map((id) => pathKey(id));
    assert.equal(new Set(keys).size, ids.length);
  });

  it('refuses an empty ID', () => {
    assert.throws(() => pathKey(''), (err) => err instanceof ClientVolumeError && err.code === 'CLIENT_VOLUME_BAD_REQUEST');
  });
});

describe('usageKey', () => {
  it('names the mode and access, and never the mount flags', () => {
    const base = { readOnly: true, attachmentMode: 'file-system', accessMode: 'multi-node-reader-only' } as const;
    assert.equal(usageKey(base), 'ro-file-system-multi-node-reader-only');
    const withFlags = usageKey({ ...base, mountOptions: { mountFlags: ['password=hunter2'] } });
    assert.equal(withFlags, usageKey(base));
    assert.notEqual(usageKey({ ...base, mountOptions: { fsType: 'xfs' } }), usageKey({ ...base, mountOptions: { fsType: 'ext4' } }));
  });
});

describe('MountPaths', () => {
  it('lays out staging and per-allocation paths, and nothing climbs out of the mount root (scenario 17)', () => {
    const paths = new MountPaths('/var/lib/berth/csi/p1');
    for (const id of HOSTILE_IDS) {
      for (const p of [paths.staging(id, id, 'rw-file-system-single-node-writer'), paths.target(id, id, 'rw-file-system-single-node-writer')]) {
        const resolved = path.resolve(p.host);
        assert.equal(resolved, p.host, 'already normal: no . or .. components');
        assert.ok(resolved.startsWith('/var/lib/berth/csi/p1/'), `${JSON.stringify(id)} escaped: ${resolved}`);
        assert.equal(path.relative('/var/lib/berth/csi/p1', resolved).split('/').length, 4);
      }
    }
    assert.equal(paths.staging('default', 'vol-1', 'u').host, '/var/lib/berth/csi/p1/staging/default/vol-1/u');
    assert.equal(paths.target('alloc-1', 'vol-1', 'u').host, '/var/lib/berth/csi/p1/per-alloc/alloc-1/vol-1/u');
  });

  it('translates host paths to the paths the plugin sees, and back', () => {
    const paths = new MountPaths('/var/lib/berth/csi/p1', '/csi');
    const t = paths.target('alloc-1', 'vol-1', 'u');
    assert.equal(t.plugin, '/csi/per-alloc/alloc-1/vol-1/u');
    assert.equal(paths.toHost(t.plugin), t.host);
    assert.equal(paths.toPlugin(t.host), t.plugin);
    assert.throws(() => paths.toPlugin('/etc/passwd'), ClientVolumeError);
    assert.throws(() => paths.toHost('/csi/../etc'), ClientVolumeError);
  });

  it('refuses relative roots', () => {
    assert.throws(() => new MountPaths('relative/root'), ClientVolumeError);
    assert.throws(() => new MountPaths('/ok', 'relative'), ClientVolumeError);
  });
});
