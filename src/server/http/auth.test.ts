import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { VolumeError } from '../volumes/index.js';
import { JobValidationError } from '../../structs/index.js';
import { ApiError, toErrorResponse } from './api-error.js';
import { TokenTable, type Access, type Role } from './auth.js';
import { parseBlockingQuery } from './blocking.js';

const table = new TokenTable([
  { name: 'ops', secret: 'management-secret', role: 'management' },
  { name: 'viewer', secret: 'read-only-secret', role: 'read-only' },
  { name: 'agent', secret: 'node-secret-value', role: 'node' },
]);

function outcome(secret: string | undefined, access: Access): number {
  try {
    table.authorize(secret === undefined ? undefined : `Bearer ${secret}`, access);
    return 200;
  } catch (err) {
    return toErrorResponse(err).status;
  }
}

describe('token roles', () => {
  it('grants each role exactly its access', () => {
    const grid: Record<Role, Record<Access, number>> = {
      management: { read: 200, write: 200, node: 200, 'node-read': 200 },
      'read-only': { read: 200, write: 403, node: 403, 'node-read': 200 },
      node: { read: 403, write: 403, node: 200, 'node-read': 200 },
    };
    const secrets: Record<Role, string> = { management: 'management-secret', 'read-only': 'read-only-secret', node: 'node-secret-value' };
    for (const role of Object.keys(grid) as Role[]) {
      for (const access of Object.keys(grid[role]) as Access[]) {
        assert.equal(outcome(secrets[role], access), grid[role][access], `${role} -> ${access}`);
      }
    }
  });

  it('answers 401 for a missing, malformed or unknown token, never echoing it', () => {
    assert.equal(outcome(undefined, 'read'), 401);
    assert.equal(outcome('not-a-token', 'read'), 401);
    try {
      table.authorize('Bearer guessed-secret-123', 'read');
    } catch (err) {
      assert.doesNotMatch(JSON.stringify(toErrorResponse(err).body), /guessed-secret/);
    }
  });

  it('answers a token used again as the first time (each role its own access), and a near miss of a known one stays 401', () => {
    const t = new TokenTable([
      { name: 'ops', secret: 'management-secret', role: 'management' },
      { name: 'viewer', secret: 'read-only-secret', role: 'read-only' },
    ]);
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(t.authorize('Bearer management-secret', 'write'), { name: 'ops', role: 'management' });
      assert.deepEqual(t.authorize(undefined, 'read', 'read-only-secret'), { name: 'viewer', role: 'read-only' });
      assert.throws(() => t.authorize('Bearer read-only-secret', 'write'), (err) => toErrorResponse(err).status === 403);
      for (const near of ['management-secreT', 'management-secret-', 'management-secre', 'read-only-secret ']) {
        assert.throws(() => t.authorize(undefined, 'read', near.endsWith(' ') ? `${near}x` : near), (err) => toErrorResponse(err).status === 401, near);
      }
    }
  });

  it('refuses short tokens and unknown roles at configuration', () => {
    assert.throws(() => new TokenTable([{ name: 'x', secret: 'short', role: 'management' }]), /too short/);
    assert.throws(() => new TokenTable([{ name: 'x', secret: 'long-enough-secret', role: 'root' as Role }]), /unknown role/);
  });
});

describe('error envelope', () => {
  it('maps codes to statuses and keeps only helpful details', () => {
    assert.equal(toErrorResponse(new VolumeError('CONFLICT', 'claimed elsewhere')).status, 409);
    assert.equal(toErrorResponse(new VolumeError('NOT_FOUND', 'no volume')).status, 404);
    assert.equal(toErrorResponse(new VolumeError('UNAVAILABLE', 'no controller')).status, 503);
    assert.equal(toErrorResponse(new ApiError('NODE_UNREACHABLE', 'gone')).status, 503);
    const v = toErrorResponse(new JobValidationError([{ path: 'groups[0].count', message: 'too small' }]));
    assert.equal(v.status, 400);
    assert.deepEqual(v.body.details['problems'], [{ path: 'groups[0].count', message: 'too small' }]);
    const unknown = toErrorResponse(new Error('db password=hunter2 leaked in a stack'));
    assert.equal(unknown.status, 500);
    assert.deepEqual(unknown.body, { code: 'INTERNAL', message: 'internal server error', details: {} });
  });

  it('parses blocking query parameters', () => {
    assert.deepEqual(parseBlockingQuery({ index: '12', wait: '30s' }), { index: 12, waitMs: 30_000 });
    assert.deepEqual(parseBlockingQuery({}), { waitMs: 300_000 });
    assert.equal(parseBlockingQuery({ index: '1', wait: '1h' }).waitMs, 600_000, 'capped');
    assert.throws(() => parseBlockingQuery({ index: 'x' }), { code: 'INVALID' });
    assert.throws(() => parseBlockingQuery({ wait: 'soon' }), { code: 'INVALID' });
  });
});
