// The rows a snapshot holds stay as they were while the store writes on: a
// fork shares the buckets and copies one at its first change.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ForkableMap } from './_forkable-map.js';

describe('ForkableMap', () => {
  it('a fork sees the rows as they were; changes to it do not reach the map it came from', () => {
    const rows = new ForkableMap<number>(Array.from({ length: 2000 }, (_, i) => [`node-${i}`, i] as const));
    const next = rows.fork();
    next.set('node-5', -5);
    next.set('node-new', 1);
    next.delete('node-7');
    assert.equal(rows.get('node-5'), 5);
    assert.equal(rows.get('node-7'), 7);
    assert.equal(rows.has('node-new'), false);
    assert.equal(rows.size, 2000);
    assert.equal(next.get('node-5'), -5);
    assert.equal(next.has('node-7'), false);
    assert.equal(next.size, 2000);
    assert.deepEqual([...next.keys()].sort(), [...rows.keys()].filter((k) => k !== 'node-7').concat('node-new').sort());
    assert.equal(next.delete('node-7'), false, 'deleting what is gone changes nothing');
    assert.equal(next.size, 2000);
  });
});
