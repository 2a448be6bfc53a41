import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgumentError } from 'commander';
import { humanDuration, humanSize, parseCount, parseDuration, parsePairs, parseSecrets, parseSize } from './values.js';
import { UsageError } from './usage-error.js';

describe('sizes on the command line', () => {
  it('reads binary, decimal and plain byte sizes', () => {
    assert.equal(parseSize('1GiB'), 1024 ** 3);
    assert.equal(parseSize('500MiB'), 500 * 1024 ** 2);
    assert.equal(parseSize('10G'), 10 * 1000 ** 3);
    assert.equal(parseSize('10gb'), 10 * 1000 ** 3);
    assert.equal(parseSize('1048576'), 1048576);
    assert.equal(parseSize('1.5KiB'), 1536);
    assert.equal(parseSize('1.1G'), 1_100_000_000);
    assert.equal(parseSize('0.1KiB'), 103, 'a fraction of a byte rounds up');
  });

  it('refuses what is not a size', () => {
    for (const bad of ['', 'GiB', '1XB', '-1GiB', '1 2', '1e9', '99999999PiB']) {
      assert.throws(() => parseSize(bad), InvalidArgumentError, bad);
    }
  });

  it('prints sizes for people', () => {
    assert.equal(humanSize(1024 ** 3), '1.0 GiB (1073741824 bytes)');
    assert.equal(humanSize(100 * 1024 ** 2), '100.0 MiB (104857600 bytes)');
    assert.equal(humanSize(512), '512 bytes');
  });
});

describe('durations on the command line', () => {
  it('reads ms, s, m, h and combinations', () => {
    assert.equal(parseDuration('30s'), 30_000);
    assert.equal(parseDuration('2m'), 120_000);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('1m30s'), 90_000);
    assert.equal(parseDuration('1.5s'), 1500);
  });

  it('refuses a bare number, zero and junk', () => {
    for (const bad of ['30', '0s', 's', '30 s', '30sx', '', '25d', '1000h']) {
      assert.throws(() => parseDuration(bad), InvalidArgumentError, bad);
    }
  });

  it('prints the shortest exact form', () => {
    assert.equal(humanDuration(30_000), '30s');
    assert.equal(humanDuration(120_000), '2m');
    assert.equal(humanDuration(300), '300ms');
  });
});

describe('counts and key=value flags', () => {
  it('reads whole numbers only', () => {
    assert.equal(parseCount('8'), 8);
    for (const bad of ['-1', '1.5', 'x', '']) assert.throws(() => parseCount(bad), InvalidArgumentError, bad);
  });

  it('splits at the first "=" and refuses missing "=", empty and repeated keys', () => {
    assert.deepEqual(parsePairs('--param', ['a=1', 'b=x=y', 'c=']), { a: '1', b: 'x=y', c: '' });
    assert.throws(() => parsePairs('--param', ['a']), UsageError);
    assert.throws(() => parsePairs('--param', ['=1']), UsageError);
    assert.throws(() => parsePairs('--param', ['a=1', 'a=2']), /names key "a" twice/);
  });

  it('keeps secret values out of its errors and its printed form', () => {
    assert.throws(
      () => parseSecrets(['hunter2']),
      (err: Error) => err instanceof UsageError && !err.message.includes('hunter2'),
    );
    const secrets = parseSecrets(['password=hunter2']);
    assert.equal(secrets?.reveal()['password'], 'hunter2');
    assert.ok(!JSON.stringify(secrets).includes('hunter2'));
    assert.equal(parseSecrets(undefined), undefined);
  });
});
