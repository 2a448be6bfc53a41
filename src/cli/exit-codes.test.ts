import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CommanderError } from 'commander';
import { CsiEndpointError, CsiError, CsiProtocolError, CsiRequestError, GRPC_CODES } from '../csi/index.js';
import { AbortedError } from '../lib/index.js';
import { SpecFileError } from '../spec-files/index.js';
import { ApiClientError } from './api-client.js';
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

  it('agent answers: 3 unreachable, 5 token, 6 not found, 2 ambiguous prefix (listing the matches), 1 refused', () => {
    const code = (err: ApiClientError): number => describeFailure(err).exitCode;
    assert.equal(code(new ApiClientError('API_UNREACHABLE', 'cannot reach the Berth agent at http://h:1 (ECONNREFUSED)', 0)), EXIT.UNREACHABLE);
    assert.equal(code(new ApiClientError('UNAUTHENTICATED', 'unknown token', 401)), EXIT.AUTH);
    assert.equal(code(new ApiClientError('FORBIDDEN', 'role "read-only" may not change this', 403)), EXIT.AUTH);
    assert.equal(code(new ApiClientError('NOT_FOUND', 'no job with ID or prefix "x"', 404)), EXIT.NOT_FOUND);
    assert.equal(code(new ApiClientError('INVALID', 'job is invalid: groups[0].count: expected number', 400)), EXIT.FAILED);
    const ambiguous = describeFailure(new ApiClientError('CLI_AMBIGUOUS_PREFIX', 'prefix "a" matches 2 jobs', 0, { matches: ['ab', 'ac'] }));
    assert.equal(ambiguous.exitCode, EXIT.USAGE);
    assert.deepEqual(ambiguous.lines, ['error: prefix "a" matches 2 jobs', '  ab', '  ac']);
    assert.equal(ambiguous.json.error.code, 'CLI_AMBIGUOUS_PREFIX');
    assert.equal(code(new ApiClientError('CLI_NOT_PLACED', 'allocation a is not placed on a node', 0)), EXIT.FAILED);
    const unreachable = describeFailure(new ApiClientError('API_UNREACHABLE', 'cannot reach the Berth agent at http://h:1 (ECONNREFUSED)', 0));
    assert.equal(unreachable.lines.length, 1, 'one line');
  });

  it('a server whose etcd lost its quorum: exit 7, a message saying nothing was saved', () => {
    const f = describeFailure(new ApiClientError('STORE_UNAVAILABLE', 'the state store (etcd) is unavailable: committing a write failed: deadline exceeded', 503));
    assert.equal(f.exitCode, EXIT.STORE_UNAVAILABLE);
    assert.equal(f.json.error.code, 'STORE_UNAVAILABLE');
    assert.match(f.lines[0]!, /^error: the server could not save the change: the state store \(etcd\) is unavailable/);
  });

  it('a bad job or volume file exits 2 with one file:line:col line per problem', () => {
    const f = describeFailure(
      new SpecFileError([
        { file: 'a.hcl', line: 3, column: 5, field: 'groups[0].count', message: 'expected number' },
        { file: 'a.hcl', line: 9, column: 7, field: 'groups[0].tasks[0]', message: 'unknown field "x"' },
      ]),
    );
    assert.equal(f.exitCode, EXIT.USAGE);
    assert.deepEqual(f.lines, ['error: a.hcl:3:5: groups[0].count: expected number', 'error: a.hcl:9:7: groups[0].tasks[0]: unknown field "x"']);
  });
});
