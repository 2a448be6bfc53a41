// A sealed code cache comes back byte for byte, and any damage to the file
// (a flipped bit anywhere, a torn tail, a foreign header) is refused before V8
// would see it (a corrupt cache crashes V8's deserializer). A cache sealed by an
// older Berth (SHA-256) is still read.

import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { seal, unseal } from './cache-file.js';

const data = randomBytes(64 * 1024);

describe('code cache seal', () => {
  it('gives back exactly the sealed bytes', () => {
    const out = unseal(seal(data));
    assert.ok('data' in out, JSON.stringify(out));
    assert.ok(out.data.equals(data));
  });

  it('refuses a file with one bit flipped, wherever it is', () => {
    const sealed = seal(data);
    for (const at of [8, 11, 12, 15, 16, 17, 1000, sealed.length - 1]) {
      for (const bit of [0x01, 0x80]) {
        const bad = Buffer.from(sealed);
        bad[at] = (bad[at] as number) ^ bit;
        const out = unseal(bad);
        assert.ok('problem' in out, `byte ${at} bit ${bit}: taken`);
        assert.match(out.problem, /mismatch \(torn or corrupt\)/);
      }
    }
  });

  it('refuses a torn file (any shorter length)', () => {
    const sealed = seal(data);
    for (const len of [sealed.length - 1, sealed.length >> 1, 20, 17]) {
      const out = unseal(sealed.subarray(0, len));
      assert.ok('problem' in out, `length ${len}: taken`);
      assert.match(out.problem, /mismatch \(torn or corrupt\)/);
    }
    for (const len of [0, 8, 16]) assert.deepEqual(unseal(sealed.subarray(0, len)), { problem: 'not a Berth code cache (bad header)' });
  });

  it('refuses a file that is not a sealed cache', () => {
    assert.deepEqual(unseal(data), { problem: 'not a Berth code cache (bad header)' });
  });

  it('reads a cache an older Berth sealed with SHA-256', () => {
    const old = Buffer.concat([Buffer.from('BERTHCC1'), createHash('sha256').update(data).digest(), data]);
    const out = unseal(old);
    assert.ok('data' in out && out.data.equals(data));
    old[old.length - 1] = (old[old.length - 1] as number) ^ 1;
    assert.deepEqual(unseal(old), { problem: 'checksum mismatch (torn or corrupt)' });
  });
});
