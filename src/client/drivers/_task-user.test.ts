// A task's `user` resolves as `id` resolves it on this host (now read from
// /etc/passwd without forking the agent), and an unknown user is refused.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { runAsUser } from './_task-user.js';
import { DriverError } from './driver-error.js';

const id = (flag: string, user: string): string => execFileSync('id', [flag, user], { encoding: 'utf8' }).trim();

describe('a task user', () => {
  it('runs the command through setpriv with the uid and gid id(1) gives, by name or by uid', () => {
    const byName = runAsUser('nobody', '/bin/true', ['x'], 't', []);
    assert.deepEqual(byName.args.slice(0, 2), [`--reuid=${id('-u', 'nobody')}`, `--regid=${id('-g', 'nobody')}`]);
    assert.deepEqual(byName.args.slice(-3), ['--', '/bin/true', 'x']);
    const byUid = runAsUser('0', '/bin/true', [], 't', []);
    assert.deepEqual(byUid.args.slice(0, 3), ['--reuid=0', `--regid=${id('-g', '0')}`, '--clear-groups']);
  });

  it('refuses a user the node does not have, naming it', () => {
    assert.throws(() => runAsUser('no-such-berth-user', '/bin/true', [], 'web', []), (err: unknown) => err instanceof DriverError && /user "no-such-berth-user" does not exist/.test(err.message));
  });
});
