import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyGrpcCode, CsiError, GRPC_CODES, type GrpcCodeName } from './errors.js';
import { RPC_POLICIES, type CsiRpc } from './policy.js';

describe('gRPC code classification (docs/csi-rules.md)', () => {
  const expected: Record<Exclude<GrpcCodeName, 'OK'>, { final: boolean; retryable: boolean }> = {
    CANCELLED: { final: false, retryable: true },
    UNKNOWN: { final: true, retryable: false },
    INVALID_ARGUMENT: { final: true, retryable: false },
    DEADLINE_EXCEEDED: { final: false, retryable: true },
    NOT_FOUND: { final: true, retryable: false },
    ALREADY_EXISTS: { final: true, retryable: false },
    PERMISSION_DENIED: { final: true, retryable: false },
    RESOURCE_EXHAUSTED: { final: false, retryable: true },
    FAILED_PRECONDITION: { final: true, retryable: false },
    ABORTED: { final: false, retryable: true },
    OUT_OF_RANGE: { final: true, retryable: false },
    UNIMPLEMENTED: { final: true, retryable: false },
    INTERNAL: { final: true, retryable: false },
    UNAVAILABLE: { final: false, retryable: true },
    DATA_LOSS: { final: true, retryable: false },
    UNAUTHENTICATED: { final: true, retryable: false },
  };

  for (const [code, want] of Object.entries(expected)) {
    it(`${code} is ${want.final ? 'final' : 'uncertain'} and ${want.retryable ? '' : 'not '}retryable`, () => {
      const err = new CsiError('NodeStageVolume', GRPC_CODES[code as GrpcCodeName], 'details');
      assert.equal(err.final, want.final);
      assert.equal(err.uncertain, !want.final);
      assert.equal(err.retryable, want.retryable);
      assert.equal(err.code, `CSI_${code}`);
      assert.equal(err.message, `NodeStageVolume failed: ${code}: details`);
    });
  }

  it('NOT_FOUND on a teardown call means already done, elsewhere it does not', () => {
    for (const rpc of ['NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume', 'DeleteVolume', 'DeleteSnapshot']) {
      assert.equal(classifyGrpcCode('NOT_FOUND', rpc).alreadyDone, true, rpc);
    }
    for (const rpc of ['NodeStageVolume', 'NodePublishVolume', 'ControllerPublishVolume', 'CreateVolume']) {
      assert.equal(classifyGrpcCode('NOT_FOUND', rpc).alreadyDone, false, rpc);
    }
  });

  it('no RPC policy ever retries UNIMPLEMENTED, INVALID_ARGUMENT or FAILED_PRECONDITION', () => {
    for (const [rpc, policy] of Object.entries(RPC_POLICIES) as Array<[CsiRpc, (typeof RPC_POLICIES)[CsiRpc]]>) {
      for (const code of ['UNIMPLEMENTED', 'INVALID_ARGUMENT', 'FAILED_PRECONDITION', 'NOT_FOUND', 'ALREADY_EXISTS'] as const) {
        assert.ok(!policy.retryOn.has(code), `${rpc} retries ${code}`);
      }
    }
  });

  it('paged lists do not retry ABORTED (a stale token must restart the listing)', () => {
    assert.ok(!RPC_POLICIES.ListVolumes.retryOn.has('ABORTED'));
    assert.ok(!RPC_POLICIES.ListSnapshots.retryOn.has('ABORTED'));
    assert.ok(RPC_POLICIES.NodeStageVolume.retryOn.has('ABORTED'));
  });
});
