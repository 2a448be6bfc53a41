// Claim admission as a pure decision: each row is the state a claim meets
// and what the allocation asking for it gets (the error an operator or the
// node agent sees, or the claim that would be recorded). No store, no
// plugin, no clock.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { VolumeClaim } from '../../structs/index.js';
import { admitClaim, type AdmissionState, type ClaimRequest } from './claim-admission.js';
import { testAllocation as alloc, testClaim as claim, testPlugin as plugin, testVolume as volume } from '../../../test/support/server-rows.js';

const NOW = 1_700_000_000_000;

/** Allocation `a1` on node n1 asks for volume `data`, single-node-writer, node-only plugin; nothing else claims it. */
function state(extra: Partial<AdmissionState> = {}): AdmissionState {
  return { volume: volume(), allocation: alloc('a1', 'n1'), plugin: plugin(), volumeClaims: [], pluginClaimsOnNode: [], now: NOW, ...extra };
}

const write: ClaimRequest = { volumeId: 'data', allocId: 'a1', mode: 'write' };
const read: ClaimRequest = { ...write, mode: 'read' };

interface Refused {
  name: string;
  state: AdmissionState;
  req?: ClaimRequest;
  code: string;
  message: RegExp;
  retryable?: boolean;
  field?: string;
}

const refused: Refused[] = [
  { name: 'an unknown volume', state: state({ volume: undefined }), code: 'NOT_FOUND', message: /^volume data does not exist in namespace default$/ },
  { name: 'a mode other than read or write', state: state(), req: { ...write, mode: 'rw' as never }, code: 'INVALID', message: /mode must be read or write/, field: 'mode' },
  { name: 'an unknown allocation', state: state({ allocation: undefined }), code: 'NOT_FOUND', message: /allocation a1 does not exist/ },
  {
    name: 'an allocation that finished',
    state: state({ allocation: alloc('a1', 'n1', { clientStatus: 'complete' }) }),
    code: 'INVALID',
    message: /allocation a1 is not running \(run\/complete\); it cannot claim volumes/,
  },
  {
    name: 'an allocation told to stop',
    state: state({ allocation: alloc('a1', 'n1', { desiredStatus: 'stop' }) }),
    code: 'INVALID',
    message: /is not running \(stop\/running\)/,
  },
  {
    name: "the allocation's own claim in the other mode",
    state: state({ volume: volume('multi-node-multi-writer'), volumeClaims: [claim('a1', 'n1', { mode: 'read', accessMode: 'multi-node-multi-writer' })] }),
    code: 'CONFLICT',
    message: /allocation a1 already has a read claim on volume data \(taken\)/,
    retryable: false,
  },
  {
    name: "the allocation's own claim still being released",
    state: state({ volumeClaims: [claim('a1', 'n1', { state: 'unpublishing' })] }),
    code: 'CONFLICT',
    message: /already has a write claim on volume data \(unpublishing\)/,
    retryable: true,
  },
  {
    name: "the allocation's own claim whose ControllerPublish has not finished (a leader lost its lead mid-publish): retried once it is released",
    state: state({ plugin: plugin({ controller: true }), volumeClaims: [claim('a1', 'n1', { controllerPublish: 'pending' })] }),
    code: 'CONFLICT',
    message: /already has a write claim on volume data \(taken, its ControllerPublish unfinished\)/,
    retryable: true,
  },
  {
    name: 'an access mode the volume does not offer',
    state: state(),
    req: { ...write, accessMode: 'multi-node-multi-writer' },
    code: 'INVALID',
    message: /volume data does not offer multi-node-multi-writer with any attachment mode/,
    field: 'accessMode',
  },
  {
    name: 'an attachment mode the volume does not offer',
    state: state(),
    req: { ...write, attachmentMode: 'block-device' },
    code: 'INVALID',
    message: /does not offer any access mode with block-device/,
    field: 'accessMode',
  },
  {
    name: 'a write on a single-node-reader-only volume',
    state: state({ volume: volume('single-node-reader-only') }),
    code: 'INVALID',
    message: /volume data is single-node-reader-only: it takes no write claims/,
    field: 'mode',
  },
  {
    name: 'a write on a multi-node-reader-only volume',
    state: state({ volume: volume('multi-node-reader-only') }),
    code: 'INVALID',
    message: /takes no write claims/,
    field: 'mode',
  },
  {
    name: 'a plugin no node runs',
    state: state({ plugin: undefined }),
    code: 'UNAVAILABLE',
    message: /volume data is not schedulable: plugin fake has no healthy node plugin/,
    retryable: true,
  },
  {
    name: 'a plugin that needs ControllerPublish but has no healthy controller',
    state: state({ plugin: plugin({ controller: true, extra: { controllersHealthy: 0 } }) }),
    code: 'UNAVAILABLE',
    message: /plugin fake has no healthy controller/,
    retryable: true,
  },
  {
    name: "a node whose plugin instance is unhealthy (though another node's is healthy)",
    state: state({ plugin: plugin({ nodes: { n1: { healthy: false }, n2: {} } }) }),
    code: 'UNAVAILABLE',
    message: /node n1 has no healthy node plugin fake/,
    retryable: true,
  },
  {
    name: 'a node that does not run the plugin',
    state: state({ plugin: plugin({ nodes: { n2: {} } }) }),
    code: 'UNAVAILABLE',
    message: /node n1 has no healthy node plugin fake/,
    retryable: true,
  },
  {
    name: 'a volume in use in another mode',
    state: state({
      volume: volume('single-node-writer', 'file-system', {
        capabilities: [
          { accessMode: 'single-node-writer', attachmentMode: 'file-system' },
          { accessMode: 'multi-node-multi-writer', attachmentMode: 'file-system' },
        ],
      }),
      volumeClaims: [claim('a9', 'n1', { accessMode: 'multi-node-multi-writer' })],
    }),
    code: 'CONFLICT',
    message: /volume data is in use as multi-node-multi-writer\/file-system/,
    retryable: true,
  },
  {
    name: 'a single-node volume claimed on another node',
    state: state({ volumeClaims: [claim('b1', 'n2', { mode: 'read' })] }),
    req: read,
    code: 'CONFLICT',
    message: /volume data is single-node-writer and claimed on node n2/,
    retryable: true,
  },
  {
    name: 'a single-node volume still being detached from another node',
    state: state({ volumeClaims: [claim('b1', 'n2', { state: 'node-detached' })] }),
    code: 'CONFLICT',
    message: /single-node-writer and still being detached on node n2/,
    retryable: true,
  },
  {
    name: 'a second writer on a single-node-writer volume',
    state: state({ volumeClaims: [claim('a2', 'n1')] }),
    code: 'CONFLICT',
    message: /volume data already has a writer \(allocation a2, taken\)/,
    retryable: true,
  },
  {
    name: 'a second writer on a multi-node-single-writer volume, even while the first is releasing',
    state: state({
      volume: volume('multi-node-single-writer'),
      volumeClaims: [claim('b1', 'n2', { accessMode: 'multi-node-single-writer', state: 'unpublishing' })],
    }),
    code: 'CONFLICT',
    message: /already has a writer \(allocation b1, unpublishing\)/,
    retryable: true,
  },
  {
    name: 'a node marked exhausted for the plugin',
    state: state({ plugin: plugin({ extra: { exhaustedNodes: { n1: { at: 0, reason: 'too many volumes attached' } } } }) }),
    code: 'EXHAUSTED',
    message: /node n1 can take no more volumes of plugin fake: too many volumes attached/,
    retryable: true,
  },
  {
    name: "a node at its plugin's volume limit",
    state: state({
      plugin: plugin({ nodes: { n1: { maxVolumes: 2 }, n2: {} } }),
      pluginClaimsOnNode: [claim('x1', 'n1', { volumeId: 'other-1' }), claim('x2', 'n1', { volumeId: 'other-2' }), claim('x3', 'n1', { volumeId: 'other-2' })],
    }),
    code: 'EXHAUSTED',
    message: /node n1 has 2 volumes of plugin fake, its maximum/,
    retryable: true,
  },
];

describe('claim admission', () => {
  describe('refuses', () => {
    for (const row of refused) {
      it(row.name, () => {
        const decision = admitClaim(row.state, row.req ?? write);
        assert.equal(decision.outcome, 'refuse', `expected a refusal, got ${JSON.stringify(decision)}`);
        if (decision.outcome !== 'refuse') return;
        assert.equal(decision.error.code, row.code, decision.error.message);
        assert.match(decision.error.message, row.message);
        if (row.retryable !== undefined) assert.equal(decision.error.retryable, row.retryable);
        assert.equal(decision.error.field, row.field);
      });
    }
  });

  it('records a new claim on the allocation\'s node, with what its release needs copied from the volume and the node', () => {
    const decision = admitClaim(state(), write);
    const { createIndex: _c, modifyIndex: _m, ...expected } = claim('a1', 'n1', { claimTime: NOW });
    assert.deepEqual(decision, { outcome: 'admit', claim: expected });
    assert.equal(expected.externalVolumeId, 'ext-data');
    assert.equal(expected.externalNodeId, 'ext-n1');
  });

  it('hands a repeated claim back as it is', () => {
    const mine = claim('a1', 'n1');
    assert.deepEqual(admitClaim(state({ volumeClaims: [mine] }), write), { outcome: 'existing', claim: mine });
  });

  interface Admitted {
    name: string;
    state: AdmissionState;
    req: ClaimRequest;
    controllerPublish: VolumeClaim['controllerPublish'];
    publishContext?: Record<string, string>;
  }

  const admitted: Admitted[] = [
    {
      name: 'a reader beside a writer on the same node (single-node-writer)',
      state: state({ volumeClaims: [claim('a2', 'n1')] }),
      req: read,
      controllerPublish: 'none',
    },
    {
      name: 'readers on another node of a multi-node-single-writer volume',
      state: state({ volume: volume('multi-node-single-writer'), volumeClaims: [claim('b1', 'n2', { accessMode: 'multi-node-single-writer' })] }),
      req: read,
      controllerPublish: 'none',
    },
    {
      name: 'writers on every node of a multi-node-multi-writer volume',
      state: state({ volume: volume('multi-node-multi-writer'), volumeClaims: [claim('b1', 'n2', { accessMode: 'multi-node-multi-writer' })] }),
      req: write,
      controllerPublish: 'none',
    },
    {
      name: 'a volume already on a node at its limit (it takes no new attachment)',
      state: state({
        volume: volume('multi-node-multi-writer'),
        plugin: plugin({ nodes: { n1: { maxVolumes: 1 } } }),
        volumeClaims: [claim('a2', 'n1', { accessMode: 'multi-node-multi-writer' })],
        pluginClaimsOnNode: [claim('a2', 'n1', { accessMode: 'multi-node-multi-writer' })],
      }),
      req: write,
      controllerPublish: 'none',
    },
    {
      name: 'a first claim through a plugin that needs ControllerPublish: pending until published',
      state: state({ plugin: plugin({ controller: true }) }),
      req: write,
      controllerPublish: 'pending',
    },
    {
      name: "a claim on a node that already has the volume published: it shares that attachment's publish context",
      state: state({
        plugin: plugin({ controller: true }),
        volumeClaims: [claim('a2', 'n1', { mode: 'read', controllerPublish: 'published', publishContext: { devicePath: '/dev/fake/1' } })],
      }),
      req: write,
      controllerPublish: 'published',
      publishContext: { devicePath: '/dev/fake/1' },
    },
    {
      name: 'a claim beside one whose publish is still pending on the node: it needs its own publish',
      state: state({
        volume: volume('multi-node-multi-writer'),
        plugin: plugin({ controller: true }),
        volumeClaims: [claim('a2', 'n1', { accessMode: 'multi-node-multi-writer', controllerPublish: 'pending' })],
      }),
      req: write,
      controllerPublish: 'pending',
    },
  ];

  describe('admits', () => {
    for (const row of admitted) {
      it(row.name, () => {
        const decision = admitClaim(row.state, row.req);
        assert.equal(decision.outcome, 'admit', JSON.stringify(decision));
        if (decision.outcome !== 'admit') return;
        assert.equal(decision.claim.nodeId, 'n1');
        assert.equal(decision.claim.mode, row.req.mode);
        assert.equal(decision.claim.controllerPublish, row.controllerPublish);
        assert.deepEqual(decision.claim.publishContext, row.publishContext ?? {});
      });
    }
  });

  it('never changes the state it is given', () => {
    const s = state({ plugin: plugin({ controller: true }), volumeClaims: [claim('a2', 'n1', { mode: 'read', controllerPublish: 'published', publishContext: { k: 'v' } })] });
    const before = structuredClone(s);
    const decision = admitClaim(s, write);
    assert.equal(decision.outcome, 'admit');
    if (decision.outcome === 'admit') decision.claim.publishContext['k'] = 'changed';
    assert.deepEqual(s, before);
  });
});
