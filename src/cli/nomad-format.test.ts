// Nomad's CLI layouts as Nomad prints them (columnize with `<none>`, go-humanize's IBytes, prettyTimeDiff).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatKV, formatList, formatTime, iBytes, prettyTimeDiff } from './nomad-format.js';

describe("Nomad's CLI layouts", () => {
  it('aligns `key = value` and table columns, an empty cell shown as <none>', () => {
    assert.deepEqual(formatKV([['ID', 'abc'], ['Node Class', '']]), ['ID         = abc', 'Node Class = <none>']);
    assert.deepEqual(formatList(['ID', 'Class', 'Status'], [['a1', '', 'ready'], ['b22', 'gpu', 'down']]), ['ID   Class   Status', 'a1   <none>  ready', 'b22  gpu     down']);
    // Colour codes take no room.
    assert.deepEqual(formatList(['A', 'B'], [['\x1b[32mok\x1b[0m', 'x']]), ['A   B', '\x1b[32mok\x1b[0m  x']);
  });

  it('writes sizes as go-humanize IBytes', () => {
    assert.deepEqual([0, 9, 100, 1024, 1536, 256 * 1024 * 1024, 4096 * 1024 * 1024].map(iBytes), ['0 B', '9 B', '100 B', '1.0 KiB', '1.5 KiB', '256 MiB', '4.0 GiB']);
  });

  it('words times as Nomad does: two largest non-zero units, Go zero time as nothing', () => {
    const now = 1_700_000_000_000;
    assert.equal(prettyTimeDiff(now - 190_000, now), '3m10s ago');
    assert.equal(prettyTimeDiff(now - 3_600_000, now), '1h ago');
    assert.equal(prettyTimeDiff(now - (2 * 86400 + 4 * 3600 + 5) * 1000, now), '2d4h ago');
    assert.equal(prettyTimeDiff(now, now), '0s ago');
    assert.equal(prettyTimeDiff(now + 60_000, now), '1m from now');
    assert.equal(formatTime('0001-01-01T00:00:00Z'), '');
    assert.equal(formatTime('2026-01-02T03:04:05.123456789Z'), '2026-01-02T03:04:05Z');
  });
});
