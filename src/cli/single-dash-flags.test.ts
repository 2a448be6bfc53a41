import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildProgram } from './program.js';
import { normalizeFlags } from './single-dash-flags.js';
import { UsageError } from './usage-error.js';

describe("Nomad's one-dash flags reach commander as --flags", () => {
  const norm = async (argv: string[]): Promise<string[]> => normalizeFlags(await buildProgram({}, { only: argv[0] === 'run' || argv[0] === 'status' ? argv[0] : (argv[0] ?? '') }), argv);

  it('rewrites long options anywhere on the line, with = or a separate value', async () => {
    assert.deepEqual(await norm(['job', 'run', '-detach', 'a.hcl', '-address=http://h:1', '-token', 'T', '-json']), [
      'job', 'run', '--detach', 'a.hcl', '--address=http://h:1', '--token', 'T', '--json',
    ]);
    assert.deepEqual(await norm(['run', '-detach', 'a.hcl']), ['run', '--detach', 'a.hcl']);
    assert.deepEqual(await norm(['job', 'stop', '-purge', 'web']), ['job', 'stop', '--purge', 'web']);
  });

  it('leaves short flags, their values, negative numbers and --flags alone', async () => {
    assert.deepEqual(await norm(['job', 'status', '-n', 'prod', '--json']), ['job', 'status', '-n', 'prod', '--json']);
    assert.deepEqual(await norm(['alloc', 'logs', '-f', '-tail', '5', 'abc']), ['alloc', 'logs', '-f', '--tail', '5', 'abc']);
    // The value of a value-taking option is never read as a flag.
    assert.deepEqual(await norm(['job', 'status', '-token', '-secret-', 'x']), ['job', 'status', '--token', '-secret-', 'x']);
  });

  it('reads the flags before a leading variadic argument (node meta apply -node-id N -unset K k=v)', async () => {
    assert.deepEqual(await norm(['node', 'meta', 'apply', '-node-id', 'n1', '-unset', 'a,b', 'rack=r2']), ['node', 'meta', 'apply', '--node-id', 'n1', '--unset', 'a,b', 'rack=r2']);
  });

  it("stops at the remote command of alloc exec and after --", async () => {
    assert.deepEqual(await norm(['alloc', 'exec', '-task', 'w', 'abc', 'ls', '-la']), ['alloc', 'exec', '--task', 'w', 'abc', 'ls', '-la']);
    assert.deepEqual(await norm(['job', 'run', '--', '-odd-file.hcl']), ['job', 'run', '--', '-odd-file.hcl']);
  });

  it('refuses an unknown one-dash word by name, listing the command\'s options', async () => {
    assert.deepEqual(await norm(['job', 'run', '-check-index', '5', 'a.hcl']), ['job', 'run', '--check-index', '5', 'a.hcl']);
    await assert.rejects(norm(['job', 'run', '-frobnicate', '5', 'a.hcl']), (err: unknown) => {
      assert.ok(err instanceof UsageError);
      assert.equal(
        err.message,
        'unknown option "-frobnicate" for "berth job run"; its options (with one dash or two): -detach, -check-index, -output, -var, -var-file, -address, -retry-for, -client-timeout, -token, -json, -namespace, -json-output, -template (see berth job run --help)',
      );
      return true;
    });
  });
});
