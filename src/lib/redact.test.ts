import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { inspect } from 'node:util';
import { describe, it } from 'node:test';
import { createLogger } from './logger.js';
import { SecretMap } from './redact.js';

describe('SecretMap', () => {
  const secrets = new SecretMap({ password: 'hunter2', token: 's3cr3t-token' });

  it('never prints its values, in any printed form', () => {
    for (const printed of [String(secrets), inspect(secrets), JSON.stringify(secrets), `${secrets}`, inspect({ nested: { secrets } })]) {
      assert.ok(!printed.includes('hunter2'), printed);
      assert.ok(!printed.includes('s3cr3t-token'), printed);
    }
    assert.match(JSON.stringify(secrets), /"password":"\[REDACTED\]"/);
  });

  it('gives the values back only when revealed', () => {
    assert.deepEqual(secrets.reveal(), { password: 'hunter2', token: 's3cr3t-token' });
  });

  it('stays redacted in log lines, and plain secret fields are censored by path', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const logger = createLogger({ destination: sink, level: 'info' });
    logger.info({ stageSecrets: secrets }, 'wrapped');
    logger.info({ req: { secrets: { password: 'hunter2' }, mountFlags: ['pass=hunter2'] } }, 'plain');
    const all = lines.join('');
    assert.equal(lines.length, 2);
    assert.ok(!all.includes('hunter2'), all);
    // The wrapped map still tells which secrets were there.
    assert.deepEqual(JSON.parse(lines[0]!).stageSecrets, { password: '[REDACTED]', token: '[REDACTED]' });
  });
});
