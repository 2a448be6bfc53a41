import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ServerError, Status } from 'nice-grpc';
import { KeyedLocks, LockBusyError } from './_lock.js';
import { capabilityRecord, checkCapability, checkRange, page, requireAbsolutePath, sameCapability } from './_wire.js';

const code = (fn: () => unknown): Status => {
  try {
    fn();
  } catch (err) {
    if (err instanceof ServerError) return err.code;
    throw err;
  }
  return Status.OK;
};

describe('paging', () => {
  const items = [1, 2, 3, 5, 8].map((seq) => ({ seq }));

  it('hands out pages of max_entries with the last seq as token, and everything when max_entries is 0', () => {
    const first = page(items, 2, '', 8);
    assert.deepEqual(first, { entries: [{ seq: 1 }, { seq: 2 }], nextToken: '2' });
    const second = page(items, 2, first.nextToken, 8);
    assert.deepEqual(second, { entries: [{ seq: 3 }, { seq: 5 }], nextToken: '5' });
    assert.deepEqual(page(items, 2, second.nextToken, 8), { entries: [{ seq: 8 }], nextToken: '' });
    assert.equal(page(items, 0, '', 8).entries.length, 5);
  });

  it('keeps a token valid when the entry it points at is deleted', () => {
    assert.deepEqual(page(items.filter((i) => i.seq !== 2), 0, '2', 8).entries, [{ seq: 3 }, { seq: 5 }, { seq: 8 }]);
  });

  it('answers ABORTED for tokens it could not have issued, INVALID_ARGUMENT for negative max_entries', () => {
    for (const token of ['x', '0', '-1', '9', '1.5', '1e3', '٣']) assert.equal(code(() => page(items, 0, token, 8)), Status.ABORTED, token);
    assert.equal(code(() => page(items, -1, '', 8)), Status.INVALID_ARGUMENT);
  });
});

describe('request checks', () => {
  it('keeps mount flags only as a digest, so they never reach a log or a state file', () => {
    const rec = capabilityRecord({ mount: { fsType: 'ext4', mountFlags: ['password=hunter2'], volumeMountGroup: '' }, accessMode: { mode: 1 } });
    assert.doesNotMatch(JSON.stringify(rec), /hunter2/);
    const same = capabilityRecord({ mount: { fsType: 'ext4', mountFlags: ['password=hunter2'], volumeMountGroup: '' }, accessMode: { mode: 1 } });
    const other = capabilityRecord({ mount: { fsType: 'ext4', mountFlags: ['password=other'], volumeMountGroup: '' }, accessMode: { mode: 1 } });
    assert.ok(sameCapability(rec, same));
    assert.ok(!sameCapability(rec, other));
  });

  it('refuses block, unknown modes, SINGLE_NODE_MULTI_WRITER and volume_mount_group as INVALID_ARGUMENT', () => {
    const mount = { fsType: '', mountFlags: [], volumeMountGroup: '' };
    assert.equal(code(() => checkCapability({ block: {}, accessMode: { mode: 1 } }, 'c')), Status.INVALID_ARGUMENT);
    assert.equal(code(() => checkCapability({ mount, accessMode: { mode: 7 } }, 'c')), Status.INVALID_ARGUMENT);
    assert.equal(code(() => checkCapability({ mount, accessMode: undefined }, 'c')), Status.INVALID_ARGUMENT);
    assert.equal(code(() => checkCapability({ mount: { ...mount, volumeMountGroup: '1000' }, accessMode: { mode: 1 } }, 'c')), Status.INVALID_ARGUMENT);
    assert.equal(code(() => checkCapability({ mount, accessMode: { mode: 5 } }, 'c')), Status.OK);
  });

  it('checks capacity ranges and paths', () => {
    assert.deepEqual(checkRange({ requiredBytes: 10n, limitBytes: 0n }, 'r'), { required: 10, limit: 0 });
    assert.equal(code(() => checkRange({ requiredBytes: 10n, limitBytes: 5n }, 'r')), Status.INVALID_ARGUMENT);
    assert.equal(code(() => checkRange({ requiredBytes: -1n, limitBytes: 0n }, 'r')), Status.INVALID_ARGUMENT);
    assert.equal(code(() => checkRange({ requiredBytes: 2n ** 60n, limitBytes: 0n }, 'r')), Status.OUT_OF_RANGE);
    assert.equal(requireAbsolutePath('/a/b/../c/', 'p'), '/a/c');
    for (const bad of ['', 'rel', '/a\0b']) assert.equal(code(() => requireAbsolutePath(bad, 'p')), Status.INVALID_ARGUMENT, bad);
  });
});

describe('per-volume locks', () => {
  it('takes all keys or none, refuses a held key without waiting, and releases once', () => {
    const locks = new KeyedLocks();
    const release = locks.tryAcquire('volume:a', 'volume-name:x');
    assert.throws(() => locks.tryAcquire('volume:b', 'volume:a'), LockBusyError);
    assert.equal(locks.size, 2, 'the failed attempt took nothing');
    release();
    release();
    assert.equal(locks.size, 0);
    locks.tryAcquire('volume:b', 'volume:a')();
  });
});
