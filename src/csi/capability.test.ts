import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { describe, it } from 'node:test';
import { capabilityFromRequest, checkValidation, includesCapability, VolumeCapability } from './capability.js';
import { CsiRequestError } from './errors.js';
import { createLogger } from '../lib/index.js';

describe('VolumeCapability', () => {
  it('compares by value, not by identity', () => {
    const a = VolumeCapability.mount('single-node-writer', { fsType: 'ext4', mountFlags: ['noatime'] });
    const b = VolumeCapability.mount('single-node-writer', { fsType: 'ext4', mountFlags: ['noatime'] });
    assert.notEqual(a, b);
    assert.ok(a.equals(b));
    assert.ok(includesCapability([b], a));
    assert.ok(!a.equals(VolumeCapability.mount('single-node-writer', { fsType: 'xfs', mountFlags: ['noatime'] })));
    assert.ok(!a.equals(a.withAccessMode('multi-node-reader-only')));
    assert.ok(!a.equals(VolumeCapability.block('single-node-writer')));
    assert.ok(!a.equals(VolumeCapability.mount('single-node-writer', { fsType: 'ext4' })));
  });

  it('never prints its mount flags', () => {
    const cap = VolumeCapability.mount('single-node-writer', { mountFlags: ['username=admin', 'password=hunter2'] });
    for (const printed of [String(cap), `${cap}`, inspect(cap), JSON.stringify(cap), JSON.stringify({ caps: [cap] }), inspect({ deep: { cap } })]) {
      assert.ok(!printed.includes('hunter2'), printed);
      assert.ok(!printed.includes('admin'), printed);
    }
    assert.deepEqual(cap.revealMountFlags(), ['username=admin', 'password=hunter2']);
  });

  it('never puts its mount flags in a log line', () => {
    const cap = VolumeCapability.mount('single-node-writer', { mountFlags: ['password=hunter2'] });
    let logged = '';
    const sink = new Writable({
      write(chunk, _enc, cb) {
        logged += String(chunk);
        cb();
      },
    });
    createLogger({ destination: sink }).info({ volume: { capability: cap, capabilities: [cap] } }, 'staging volume');
    assert.match(logged, /staging volume/);
    assert.match(logged, /REDACTED/);
    assert.ok(!logged.includes('hunter2'), logged);
  });

  it('cannot be changed after it is made', () => {
    const cap = VolumeCapability.mount('single-node-writer', { fsType: 'ext4' });
    assert.throws(() => {
      (cap as unknown as { fsType: string }).fsType = 'xfs';
    }, TypeError);
  });
});

describe('capabilityFromRequest', () => {
  it('builds a mount capability from what a user wrote', () => {
    const cap = capabilityFromRequest({ accessMode: 'multi-node-reader-only', attachmentMode: 'file-system', fsType: 'ext4', mountFlags: ['ro'] });
    assert.ok(cap.equals(VolumeCapability.mount('multi-node-reader-only', { fsType: 'ext4', mountFlags: ['ro'] })));
  });

  it('names the bad field for unknown modes and block devices with mount options', () => {
    assert.throws(() => capabilityFromRequest({ accessMode: 'writer', attachmentMode: 'file-system' }), (e: unknown) => e instanceof CsiRequestError && e.field === 'access_mode' && /unknown access mode "writer"/.test(e.message));
    assert.throws(() => capabilityFromRequest({ accessMode: 'single-node-writer', attachmentMode: 'disk' }), (e: unknown) => e instanceof CsiRequestError && e.field === 'attachment_mode');
    assert.throws(() => capabilityFromRequest({ accessMode: 'single-node-writer', attachmentMode: 'block-device', fsType: 'ext4' }), (e: unknown) => e instanceof CsiRequestError && e.field === 'access_type');
  });

  it('refuses single-node multi-writer modes for a plugin that does not advertise them', () => {
    const req = { accessMode: 'single-node-multi-writer', attachmentMode: 'file-system' };
    assert.throws(() => capabilityFromRequest(req, { pluginSupportsSingleNodeMultiWriter: false }), /SINGLE_NODE_MULTI_WRITER/);
    assert.equal(capabilityFromRequest(req, { pluginSupportsSingleNodeMultiWriter: true }).accessMode, 'single-node-multi-writer');
  });
});

describe('checkValidation (ValidateVolumeCapabilities by the spec)', () => {
  const cap = VolumeCapability.mount('single-node-writer', { fsType: 'ext4' });
  const requested = { volumeCapabilities: [cap], parameters: { tier: 'fast' } };
  const confirmed = { volumeContext: {}, volumeCapabilities: [cap], parameters: { tier: 'fast' }, mutableParameters: {} };

  it('an unset confirmed is "not validated", carrying the plugin message', () => {
    const v = checkValidation(requested, { message: 'fs ext4 not supported' });
    assert.deepEqual(v, { validated: false, reason: 'plugin did not confirm: fs ext4 not supported' });
  });

  it('a confirmed that echoes what was asked validates', () => {
    assert.deepEqual(checkValidation(requested, { message: '', confirmed }), { validated: true });
  });

  it('a confirmed missing a requested capability, or one the plugin altered, does not validate', () => {
    const dropped = { ...confirmed, volumeCapabilities: [VolumeCapability.mount('single-node-writer')] };
    const v = checkValidation(requested, { message: '', confirmed: dropped });
    assert.equal(v.validated, false);
    assert.match((v as { reason: string }).reason, /requested but not confirmed/);
    const changed = { ...confirmed, parameters: { tier: 'slow' } };
    assert.equal(checkValidation(requested, { message: '', confirmed: changed }).validated, false);
  });

  it('a missing optional map in confirmed is not a failure', () => {
    assert.deepEqual(checkValidation(requested, { message: '', confirmed: { ...confirmed, parameters: {} } }), { validated: true });
  });
});
