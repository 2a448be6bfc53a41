import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { DriverError } from '../src/client/drivers/index.js';
import { ClientVolumeError } from '../src/client/volumes/index.js';
import { ServerError } from '../src/server/index.js';
import { StateStoreError } from '../src/server/state/index.js';
import { statusForCode } from '../src/server/http/index.js';

// The error scheme of src/lib/errors.ts: every code Berth throws carries the
// prefix of its area, except the HTTP API's outcome codes. This reads every
// code literal handed to an error class in src/ and checks it against the table.

const root = new URL('..', import.meta.url).pathname;

/** Prefixes of the table in src/lib/errors.ts. */
const AREA_PREFIXES = [
  'LIFECYCLE_',
  'CSI_',
  'FAKE_CSI_',
  'HOSTPATH_',
  'CLIENT_VOLUME_',
  'CLIENT_',
  'STATE_',
  'STORE_',
  'ALLOC_',
  'TASK_',
  'DRIVER_',
  'GOPLUGIN_',
  'HCLSPEC_',
  'HCL_',
  'LOGMON_',
  'CGROUP_',
  'NETWORK_',
  'LOGS_',
  'LOGMON_',
  'PLUGIN_',
  'SERVER_',
  'NODE_',
  'AGENT_',
  'CONFIG_',
  'FILE_',
  'HCL_',
  'JOB_',
  'API_',
  'CLI_',
];
/** The HTTP API's outcome codes (lib ApiOutcomeCode) and AbortedError's code: unprefixed by design. */
const UNPREFIXED = new Set(['ABORTED', 'INVALID', 'UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'IN_USE', 'EXHAUSTED', 'UNAVAILABLE', 'TOO_LARGE', 'INTERNAL']);
/** Classes whose first argument is not a Berth code: gRPC statuses the CSI plugins answer with, and nice-grpc's own errors. */
const NOT_BERTH_CODES = new Set(['grpcError', 'ServerError', 'Status']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'gen' ? [] : sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

describe('error codes', () => {
  it('every code thrown in src/ carries its area prefix, or is one of the HTTP outcome codes', () => {
    const bad: string[] = [];
    let seen = 0;
    for (const file of sourceFiles(join(root, 'src'))) {
      const text = readFileSync(file, 'utf8');
      const server = /from 'nice-grpc'/.test(text) ? new Set(['ServerError']) : new Set<string>();
      for (const m of text.matchAll(/\b(?:new\s+)?([A-Za-z]*Error|grpcError|super)\(\s*'([A-Z][A-Z0-9_]*)'/g)) {
        const [, cls = '', code = ''] = m;
        if (NOT_BERTH_CODES.has(cls) && (cls !== 'ServerError' || server.has(cls))) continue;
        seen++;
        if (UNPREFIXED.has(code) || AREA_PREFIXES.some((p) => code.startsWith(p))) continue;
        bad.push(`${relative(root, file)}: ${cls}('${code}')`);
      }
    }
    assert.ok(seen > 100, `found only ${seen} codes; the pattern no longer matches how errors are made`);
    assert.deepEqual(bad, []);
  });

  // The CLI side (CLI_AMBIGUOUS_PREFIX, CLI_NOT_PLACED) is pinned in src/cli/exit-codes.test.ts.
  it('renamed codes keep the HTTP status they had', () => {
    // SERVER_INVALID was INVALID; DRIVER_TASK_NOT_FOUND was TASK_NOT_FOUND, DRIVER_TASK_EXISTS was TASK_EXISTS.
    assert.equal(statusForCode(new ServerError('SERVER_INVALID', 'no tokens').code), 400);
    assert.equal(statusForCode(new DriverError('DRIVER_TASK_NOT_FOUND', 'no task').code), 404);
    assert.equal(statusForCode(new DriverError('DRIVER_TASK_EXISTS', 'started').code), 409);
    assert.equal(statusForCode(new DriverError('DRIVER_START_FAILED', 'no netns').code), 500);
    assert.equal(statusForCode(new ClientVolumeError('CLIENT_VOLUME_MOUNT_FAILED', 'refused').code), 500);
    assert.equal(statusForCode('EXHAUSTED'), 503);
  });

  it('a state store that cannot commit answers 503 (retry later), a lost write race 409', () => {
    assert.equal(statusForCode(new StateStoreError('STORE_UNAVAILABLE', 'no quorum').code), 503);
    assert.equal(statusForCode(new StateStoreError('STORE_FENCED', 'not the leader').code), 503);
    assert.equal(statusForCode(new StateStoreError('STORE_CONFLICT', 'kept losing').code), 409);
  });
});
