// On one node a single-writer volume never has two live writers: a new
// allocation waits for the ones on this node that write its volume or are
// leaving it (stopped, or their tasks ended) until they cleaned up; readers
// that stay, other volumes and multi-writer volumes do not hold it up.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AccessMode } from '../../csi/index.js';
import { makeAlloc, makeJob } from '../../../test/support/client-allocrunner.js';
import { singleWriterHolders, singleWriterVolumes } from './single-writer.js';

function using(id: string, source: string, accessMode: AccessMode, readOnly = false) {
  const job = makeJob({
    id,
    groups: [
      {
        name: 'g',
        volumes: { data: { type: 'csi', source, accessMode, attachmentMode: 'file-system', readOnly } },
        tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }],
      },
    ],
  });
  return { job, alloc: makeAlloc(job) };
}

describe('single-writer volumes on one node', () => {
  it('names the writable CSI volumes that allow one writer', () => {
    const g = (a: ReturnType<typeof using>) => a.job.groups[0]!;
    assert.deepEqual(singleWriterVolumes(g(using('w', 'v', 'single-node-writer')), 0), ['v']);
    assert.deepEqual(singleWriterVolumes(g(using('w', 'v', 'multi-node-single-writer')), 0), ['v']);
    assert.deepEqual(singleWriterVolumes(g(using('r', 'v', 'single-node-reader-only', true)), 0), []);
    assert.deepEqual(singleWriterVolumes(g(using('m', 'v', 'multi-node-multi-writer')), 0), []);
  });

  it('a replacement writer waits for the writer it replaces, and for a leaving reader, not for a staying reader', () => {
    const fresh = using('new', 'vol', 'single-node-writer');
    const oldWriter = { ...using('old', 'vol', 'single-node-writer'), leaving: true };
    const stayingReader = { ...using('reader', 'vol', 'multi-node-single-writer', true), leaving: false };
    const leavingReader = { ...using('reader2', 'vol', 'multi-node-single-writer', true), leaving: true };
    const elsewhere = { ...using('other', 'other-vol', 'single-node-writer'), leaving: true };
    const holders = singleWriterHolders(fresh, [oldWriter, stayingReader, leavingReader, elsewhere, { ...fresh, leaving: false }]);
    assert.deepEqual(
      holders.map((h) => h.job.id),
      ['old', 'reader2'],
    );
    const liveWriter = { ...using('live', 'vol', 'single-node-writer'), leaving: false };
    assert.deepEqual(
      singleWriterHolders(fresh, [liveWriter]).map((h) => h.job.id),
      ['live'],
      'a second writer never runs beside a live one',
    );
    assert.deepEqual(singleWriterHolders(using('ro', 'vol', 'single-node-reader-only', true), [oldWriter]), [], 'a reader does not wait');
  });
});
