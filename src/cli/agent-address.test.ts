import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressSetting, clientTimeoutSetting, namespaceSetting, normalizeAddress, tokenSetting } from './agent-address.js';

describe('the agent address, token and namespace, as a Nomad user sets them', () => {
  it('takes the flag, then BERTH_*, then NOMAD_*, then the default', () => {
    assert.deepEqual(addressSetting('http://a:1', { BERTH_ADDR: 'b:2', NOMAD_ADDR: 'c:3' }), { value: 'http://a:1', source: '--address' });
    assert.deepEqual(addressSetting(undefined, { BERTH_ADDR: 'b:2', NOMAD_ADDR: 'c:3' }), { value: 'b:2', source: 'BERTH_ADDR' });
    assert.deepEqual(addressSetting(undefined, { BERTH_ADDR: '', NOMAD_ADDR: 'c:3' }), { value: 'c:3', source: 'NOMAD_ADDR' });
    assert.deepEqual(addressSetting(undefined, {}), { value: 'http://127.0.0.1:4646', source: 'default' });
    assert.equal(tokenSetting(undefined, { NOMAD_TOKEN: 'n' }), 'n');
    assert.equal(tokenSetting(undefined, { BERTH_TOKEN: 'b', NOMAD_TOKEN: 'n' }), 'b');
    assert.equal(namespaceSetting(undefined, { NOMAD_NAMESPACE: 'prod' }), 'prod');
    assert.equal(namespaceSetting('dev', { NOMAD_NAMESPACE: 'prod' }), 'dev');
    assert.equal(namespaceSetting(undefined, {}), 'default');
  });

  it('takes an address without its scheme, and a host without its port', () => {
    assert.equal(normalizeAddress('127.0.0.1:4646', 'BERTH_ADDR'), 'http://127.0.0.1:4646');
    assert.equal(normalizeAddress('nomad.internal', 'NOMAD_ADDR'), 'http://nomad.internal:4646');
    assert.equal(normalizeAddress('[::1]:8080', 'NOMAD_ADDR'), 'http://[::1]:8080');
    assert.equal(normalizeAddress('https://berth.example:8443/', '--address'), 'https://berth.example:8443');
    assert.equal(normalizeAddress('http://h', '--address'), 'http://h');
  });

  it('names the value and where it came from when it is not an address', () => {
    assert.throws(() => normalizeAddress('ftp://h:1', 'BERTH_ADDR'), {
      code: 'CLI_USAGE',
      message: 'invalid agent address "ftp://h:1" (from BERTH_ADDR): the scheme must be http or https, not ftp; give http://host:port, https://host:port or host:port',
    });
    assert.throws(() => normalizeAddress('http://h:99999', 'NOMAD_ADDR'), /invalid agent address "http:\/\/h:99999" \(from NOMAD_ADDR\): not a URL/);
    assert.throws(() => normalizeAddress(' ', '--address'), /\(from --address\): it is empty/);
    assert.throws(() => normalizeAddress('http://u:p@h:1', '--address'), /credentials do not belong in the address/);
  });

  it('takes the answer timeout from --client-timeout, else BERTH_CLIENT_TIMEOUT, and names a bad one with its source', () => {
    assert.equal(clientTimeoutSetting(undefined, {}), undefined);
    assert.equal(clientTimeoutSetting(undefined, { BERTH_CLIENT_TIMEOUT: '2s' }), 2_000);
    assert.equal(clientTimeoutSetting('500ms', { BERTH_CLIENT_TIMEOUT: '2s' }), 500);
    assert.equal(clientTimeoutSetting(undefined, { BERTH_CLIENT_TIMEOUT: '' }), undefined);
    assert.throws(() => clientTimeoutSetting(undefined, { BERTH_CLIENT_TIMEOUT: '10' }), {
      code: 'CLI_USAGE',
      message: 'invalid client timeout "10" (from BERTH_CLIENT_TIMEOUT): Expected a duration such as 30s, 2m or 500ms.',
    });
    assert.throws(() => clientTimeoutSetting('0s', {}), /invalid client timeout "0s" \(from --client-timeout\): Duration must be above 0/);
  });
});
