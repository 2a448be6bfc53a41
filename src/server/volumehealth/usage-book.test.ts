import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VolumeStatsReport } from '../../structs/index.js';
import { VolumeUsageBook } from './usage-book.js';

const report = (extra: Partial<VolumeStatsReport>): VolumeStatsReport => ({ namespace: 'default', volumeId: 'data', pluginId: 'hostpath', allocIds: ['a1'], reportedAt: 1, ...extra });

describe('volume usage book', () => {
  it('a report with no figures (a vanished volume: only its abnormal condition) clears that node\'s last figures; the history stays', () => {
    const book = new VolumeUsageBook();
    book.record('n1', report({ bytes: { used: 6, total: 10, available: 4 } }));
    book.record('n2', report({ bytes: { used: 1, total: 10, available: 9 } }));
    assert.equal(book.latest('default', 'data').length, 2);
    book.record('n1', report({ reportedAt: 2, condition: { abnormal: true, message: 'the volume directory has vanished' } }));
    assert.deepEqual(book.latest('default', 'data').map((u) => u.nodeId), ['n2'], "n1's stale figures are gone, n2's stay");
    const [entry] = [...book.entries()];
    assert.deepEqual(entry?.usage.map((u) => u.bytes?.used), [1], 'the gauges read only what is still true');
    assert.equal(book.history('default', 'data').length, 2);
  });
});
