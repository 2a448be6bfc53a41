import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CsiVolumeRecord } from './alloc-records.js';
import { CSI_VOLUME_TRANSITIONS, csiVolumeTransition, CsiVolumeTransitionError, type CsiVolumeEvent } from './csi-volume-state.js';
import type { ClaimedVolume } from './volume-claimer.js';

const claimed: ClaimedVolume = {
  id: 'vol-1',
  externalId: 'ext-1',
  pluginId: 'hostpath',
  namespace: 'default',
  context: { zone: 'z1', password: 'hunter2' },
  accessMode: 'single-node-writer',
  attachmentMode: 'file-system',
  mountOptions: { fsType: 'ext4', mountFlags: ['noatime'] },
};

const events: Record<CsiVolumeEvent['type'], CsiVolumeEvent> = {
  claiming: { type: 'claiming', volumeId: 'vol-1', namespace: 'default', readOnly: false },
  claimed: { type: 'claimed', volume: claimed, publishContext: { device: '/dev/x' } },
  mounted: { type: 'mounted', source: '/mnt/per-alloc/a1/vol-1/rw' },
  unmounted: { type: 'unmounted' },
  released: { type: 'released' },
};

/** Runs events from no record, as the CSI hook would. */
function run(...types: Array<CsiVolumeEvent['type']>): CsiVolumeRecord | undefined {
  let rec: CsiVolumeRecord | undefined;
  for (const t of types) rec = csiVolumeTransition(rec, events[t]);
  return rec;
}

describe('the life of a CSI volume of an allocation', () => {
  it('goes claiming -> claimed -> mounted -> claimed -> released', () => {
    const states: Array<string | undefined> = [];
    let rec: CsiVolumeRecord | undefined;
    for (const t of ['claiming', 'claimed', 'mounted', 'unmounted', 'released'] as const) {
      rec = csiVolumeTransition(rec, events[t]);
      states.push(rec?.state);
    }
    assert.deepEqual(states, ['claiming', 'claimed', 'mounted', 'claimed', undefined]);
  });

  it('writes down what the claim gave, without credential-looking context values or mount flags', () => {
    const rec = run('claiming', 'claimed');
    assert.deepEqual(rec, {
      volumeId: 'vol-1',
      namespace: 'default',
      state: 'claimed',
      readOnly: false,
      pluginId: 'hostpath',
      externalId: 'ext-1',
      context: { zone: 'z1', password: '[REDACTED]' },
      publishContext: { device: '/dev/x' },
      accessMode: 'single-node-writer',
      attachmentMode: 'file-system',
      fsType: 'ext4',
    });
    assert.doesNotMatch(JSON.stringify(rec), /noatime|hunter2/);
  });

  it("takes the job's file-system type when the volume names none", () => {
    const volume = { ...claimed, mountOptions: {} };
    const rec = csiVolumeTransition(run('claiming'), { type: 'claimed', volume, publishContext: {}, groupFsType: 'xfs' });
    assert.equal(rec?.fsType, 'xfs');
  });

  it('stays mounted when a mounted volume is claimed again (a retry, a restart)', () => {
    const rec = csiVolumeTransition(run('claiming', 'claimed', 'mounted'), events.claimed);
    assert.equal(rec?.state, 'mounted');
    assert.equal(rec?.source, '/mnt/per-alloc/a1/vol-1/rw');
  });

  it('forgets the source once unmounted', () => {
    const rec = run('claiming', 'claimed', 'mounted', 'unmounted');
    assert.equal(rec?.state, 'claimed');
    assert.ok(!('source' in (rec as object)));
  });

  it('never changes the record it is given', () => {
    const before = run('claiming', 'claimed', 'mounted') as CsiVolumeRecord;
    const copy = structuredClone(before);
    for (const t of ['claimed', 'mounted', 'unmounted', 'released'] as const) csiVolumeTransition(before, events[t]);
    assert.deepEqual(before, copy);
  });

  it('refuses events that cannot happen in a state: no mount before a claim, no second claiming', () => {
    const from: Record<string, CsiVolumeRecord | undefined> = {
      none: undefined,
      claiming: run('claiming'),
      claimed: run('claiming', 'claimed'),
      mounted: run('claiming', 'claimed', 'mounted'),
    };
    for (const [type, allowed] of Object.entries(CSI_VOLUME_TRANSITIONS)) {
      for (const [state, rec] of Object.entries(from)) {
        const apply = (): unknown => csiVolumeTransition(rec, events[type as CsiVolumeEvent['type']]);
        if (allowed.includes(state as never)) assert.doesNotThrow(apply, `${type} from ${state}`);
        else assert.throws(apply, CsiVolumeTransitionError, `${type} from ${state}`);
      }
    }
    assert.deepEqual(CSI_VOLUME_TRANSITIONS, {
      claiming: ['none'],
      claimed: ['claiming', 'claimed', 'mounted'],
      mounted: ['claimed', 'mounted'],
      unmounted: ['claimed', 'mounted'],
      released: ['claiming', 'claimed', 'mounted'],
    });
  });
});
