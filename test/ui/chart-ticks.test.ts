// The UI chart's time axis (ui/src/chart-scale.ts): whatever the span of the
// points and the width of the box, a reader gets at least two labelled times
// to read the axis by, at round seconds, minutes or hours.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { timeTicks } from '../../ui/src/chart-scale.js';

const at = (hms: string): number => Date.parse(`2026-11-30T${hms}Z`);
const iso = (ts: number[]): string[] => ts.map((t) => new Date(t).toISOString().slice(11, 19));

describe('the chart time axis', () => {
  it('gives two ticks or more where the step the width asks for would leave one', () => {
    // Six seconds on a narrow chart: a 5 s step lands once (:45); 2 s steps land three times.
    assert.deepEqual(iso(timeTicks(at('03:34:41'), at('03:34:47'), 2)), ['03:34:42', '03:34:44', '03:34:46']);
    // Two reports 1.8 s apart: each whole second between them.
    assert.deepEqual(iso(timeTicks(at('03:34:40.700'), at('03:34:42.500'), 5)), ['03:34:41', '03:34:42']);
  });

  it('keeps about as many ticks as asked for, at round times', () => {
    const ticks = timeTicks(at('03:00:00'), at('04:00:00'), 5);
    assert.deepEqual(iso(ticks), ['03:00:00', '03:15:00', '03:30:00', '03:45:00', '04:00:00']);
    assert.equal(timeTicks(at('03:34:41'), at('03:34:47'), 6).length, 7, 'a wide chart gets a tick a second');
  });
});
