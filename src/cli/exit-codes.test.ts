import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CommanderError } from 'commander';
import { CsiEndpointError, CsiError, CsiProtocolError, CsiRequestError, GRPC_CODES } from '../csi/index.js';
import { AbortedError } from '../lib/index.js';
import { describeFailure, EXIT } from './exit-codes.js';
import { UsageError } from './usage-error.js';

const endpoint = 'unix:///run/x.sock';

describe('what each failure means for the exit code', () => {
  it('exits 1 with the RPC and gRPC code when the plugin answered with an error', () => {
    const f = describeFailure(new CsiError('NodeStageVolume', GRPC_CODES.NOT_FOUND, 'no such volume'), { endpoint });
    assert.equal(f.exitCode, EXIT.FAILED);
    assert.deepEqual(f.lines, ['error: NodeStageVolume failed: NOT_FOUND: no such volume']);
    assert.equal(f.json.error.code, 'CSI_NOT_FOUND');
    assert.equal(f.json.error.grpcCode, 'NOT_FOUND');
    assert.equal(f.json.error.rpc, 'NodeStageVolume');
  });

  it('exits 3 and asks about the plugin when it cannot be reached or does not answer', () => {
    for (const code of [GRPC_CODES.UNAVAILABLE, GRPC_CODES.DEADLINE_EXCEEDED]) {
      const f = describeFailure(new CsiError('Probe', code, ''), { endpoint, timeout: '30s' });
      assert.equal(f.exitCode, EXIT.UNREACHABLE);
      assert.match(f.lines.join('\n'), /is the plugin running at unix:\/\/\/run\/x\.sock\?/);
    }
    const cancelledByTimeout = describeFailure(new CsiError('Probe', GRPC_CODES.CANCELLED, 'call cancelled by caller'), { endpoint, timedOut: true, timeout: '2s' });
    assert.equal(cancelledByTimeout.exitCode, EXIT.UNREACHABLE);
    assert.match(cancelledByTimeout.lines[1] ?? '', /no answer within 2s/);
    assert.equal(describeFailure(new AbortedError('sleep aborted'), { timedOut: true }).exitCode, EXIT.UNREACHABLE);
  });

  it('exits 2 for anything refused before it was sent', () => {
    for (const err of [
      new UsageError('bad'),
      new CsiRequestError('name is required', 'name'),
      new CsiEndpointError('not unix'),
      new CommanderError(1, 'commander.unknownOption', "error: unknown option '--x'"),
    ]) {
      assert.equal(describeFailure(err).exitCode, EXIT.USAGE, err.message);
    }
    assert.equal(describeFailure(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)')).exitCode, EXIT.OK);
  });

  it('exits 4 when the plugin answered out of spec', () => {
    const f = describeFailure(new CsiProtocolError('NodeGetInfo', 'node_id is empty'));
    assert.equal(f.exitCode, EXIT.OUT_OF_SPEC);
    assert.equal(f.json.error.rpc, 'NodeGetInfo');
  });

  it('exits 130 when interrupted', () => {
    assert.equal(describeFailure(new CsiError('Probe', GRPC_CODES.CANCELLED, ''), { interrupted: true }).exitCode, EXIT.INTERRUPTED);
    assert.equal(describeFailure(new AbortedError()).exitCode, EXIT.INTERRUPTED);
  });
});
