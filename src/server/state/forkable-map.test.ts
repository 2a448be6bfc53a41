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

  it('keeps every fork as it was while the map grows past ten thousand rows, and splits its buckets as it grows (a change copies a few rows, not a fortieth of the table)', () => {
    let map = new ForkableMap<number>();
    const reference = new Map<string, number>();
    const forks: Array<[ForkableMap<number>, Map<string, number>]> = [];
    for (let i = 0; i < 12_000; i++) {
      map.set(`alloc-${i}`, i);
      reference.set(`alloc-${i}`, i);
      if (i % 7 === 0 && i > 0) {
        map.delete(`alloc-${i - 3}`);
        reference.delete(`alloc-${i - 3}`);
      }
      if (i % 997 === 0) {
        // A snapshot holds this version; the store writes on in a fork of it.
        forks.push([map, new Map(reference)]);
        map = map.fork();
      }
    }
    for (const [held, expected] of [...forks, [map, reference] as const]) {
      assert.equal(held.size, expected.size);
      assert.deepEqual(new Map(held.entries()), expected);
      // forEach (how lists read a table) gives the same entries in the same order.
      const each: Array<[string, number]> = [];
      held.forEach((v, k, m) => {
        assert.equal(m, held);
        each.push([k, v]);
      });
      assert.deepEqual(each, [...held.entries()]);
      for (const k of ['alloc-0', 'alloc-5000', 'alloc-11999', 'alloc-4']) assert.equal(held.get(k), expected.get(k), k);
    }
    assert.ok(map.bucketCount >= 12_000 / 8, `12,000 rows in ${map.bucketCount} buckets`);
    assert.equal(forks[0]![0].bucketCount, 256, 'a small fork kept its buckets');
  });
});
