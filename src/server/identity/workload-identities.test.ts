// The server's workload identities: the JWT of a placed task's identity
// carries Nomad's claims (with the manual clock's time, exp only with a
// ttl), verifies against the JWKS with jose as a user's service would, the
// signing key is made once and kept in the state store (the same after a
// restart, and for a second server on the same store), and what cannot be
// signed is rejected with Nomad's reasons.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { ManualClock, silentLogger } from '../../lib/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { JobService } from '../jobs/index.js';
import { SqliteStateStore } from '../state/index.js';
import { makeRsaKey, type KeyMaker } from './keyring.js';
import { REJECTED, WorkloadIdentities } from './workload-identities.js';

let dir: string;
let store: SqliteStateStore;
let clock: ManualClock;
let made = 0;
/** One real RSA key for the whole file (making one takes a while); counts how often a key was asked for. */
const pair = makeRsaKey();
const makeKey: KeyMaker = () => {
  made++;
  return pair;
};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-wid-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  clock = new ManualClock(1_800_000_000_000);
  made = 0;
  const jobs = new JobService({ store, clock, logger: silentLogger() });
  await store.write((txn) => void txn.put('nodes', testNode('n1')));
  await jobs.register({
    id: 'web',
    groups: [
      {
        name: 'g',
        tasks: [
          {
            name: 't',
            driver: 'exec',
            resources: { cpuMhz: 5, memoryMb: 10 },
            identities: [{ env: true }, { name: 'vault', aud: ['vault.io'], ttl: '1h', file: true }],
          },
        ],
      },
    ],
  });
  await jobs.evaluatePending();
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const allocOf = (): { id: string; nodeId: string } => {
  const [a] = store.snapshot().list('allocations');
  assert.ok(a, 'the job was placed');
  return a;
};

describe('workload identities signed by the server', () => {
  it("signs Nomad's claims, verifiable against the JWKS; exp only with a ttl", async () => {
    const ids = new WorkloadIdentities({ store, clock, makeKey, issuer: 'https://berth.example' });
    const alloc = allocOf();
    const answer = await ids.sign('n1', alloc.id, [
      { task: 't', identity: 'default' },
      { task: 't', identity: 'vault' },
    ]);
    assert.deepEqual(answer.rejections, []);
    const [byDefault, vault] = answer.signed;
    assert.ok(byDefault && vault);
    const jwks = createLocalJWKSet(ids.jwks(store.snapshot()));
    const at = new Date(clock.now());
    const d = await jwtVerify(byDefault.jwt, jwks, { audience: 'nomadproject.io', issuer: 'https://berth.example', currentDate: at });
    const now = Math.floor(clock.now() / 1000);
    assert.deepEqual(
      { ...d.payload, jti: typeof d.payload.jti },
      {
        nomad_namespace: 'default',
        nomad_job_id: 'web',
        nomad_allocation_id: alloc.id,
        nomad_task: 't',
        sub: 'global:default:web:g:t:default',
        aud: ['nomadproject.io'],
        iat: now,
        nbf: now,
        jti: 'string',
        iss: 'https://berth.example',
      },
    );
    assert.equal(byDefault.expiresAt, undefined, 'the default identity never expires');
    const header = decodeProtectedHeader(byDefault.jwt);
    assert.equal(header.alg, 'RS256');
    assert.equal(header.typ, 'JWT');
    assert.equal(header.kid, store.snapshot().list('rootKeys')[0]?.id);

    const v = await jwtVerify(vault.jwt, jwks, { audience: 'vault.io', currentDate: at });
    assert.equal(v.payload.sub, 'global:default:web:g:t:vault');
    assert.equal(v.payload.exp, now + 3600);
    assert.equal(vault.expiresAt, (now + 3600) * 1000);
    await assert.rejects(jwtVerify(vault.jwt, jwks, { currentDate: new Date(clock.now() + 3601_000) }), /"exp" claim timestamp check failed|expired/);
    await assert.rejects(jwtVerify(vault.jwt, jwks, { audience: 'nomadproject.io', currentDate: at }), /unexpected "aud" claim value/);
    const again = await ids.sign('n1', alloc.id, [{ task: 't', identity: 'vault' }]);
    assert.notEqual(again.signed[0]?.jwt, vault.jwt, 'each signing is a new token (its own jti)');
  });

  it('makes the key once and keeps it in the state store: the same after a restart and for another server', async () => {
    const first = new WorkloadIdentities({ store, clock, makeKey });
    assert.deepEqual(first.jwks(store.snapshot()).keys, [], 'no key before the first signing');
    const alloc = allocOf();
    await Promise.all([first.sign('n1', alloc.id, [{ task: 't', identity: 'default' }]), first.sign('n1', alloc.id, [{ task: 't', identity: 'vault' }])]);
    const keys = first.jwks(store.snapshot()).keys;
    assert.equal(keys.length, 1);
    assert.equal(made, 1, 'two signings at once made one key');
    assert.equal(keys[0]?.use, 'sig');
    assert.equal(keys[0]?.alg, 'RS256');
    assert.equal(keys[0]?.['d'], undefined, 'the JWKS has no private part');
    const events = store.snapshot().events(0, { topics: ['rootKeys'] });
    assert.equal(events.length, 1, 'the key was written once');
    assert.equal(JSON.stringify(events).includes('"d"'), false, 'events carry no private part');

    store.close();
    store = SqliteStateStore.open(join(dir, 'state.db'));
    const other = new WorkloadIdentities({ store, clock, makeKey });
    const signed = await other.sign('n1', alloc.id, [{ task: 't', identity: 'default' }]);
    assert.equal(made, 1, 'no new key after the restart');
    assert.deepEqual(other.jwks(store.snapshot()).keys, keys);
    const verified = await jwtVerify(signed.signed[0]?.jwt ?? '', createLocalJWKSet({ keys }), { currentDate: new Date(clock.now()) });
    assert.equal(verified.payload.nomad_task, 't');
  });

  it("rejects with Nomad's reasons: an allocation of another node or none, a task or identity the job does not have", async () => {
    const ids = new WorkloadIdentities({ store, clock, makeKey });
    const alloc = allocOf();
    const answer = await ids.sign('n1', alloc.id, [
      { task: 'nope', identity: 'default' },
      { task: 't', identity: 'consul' },
    ]);
    assert.deepEqual(answer, {
      signed: [],
      rejections: [
        { task: 'nope', identity: 'default', reason: REJECTED.task },
        { task: 't', identity: 'consul', reason: REJECTED.identity },
      ],
    });
    assert.deepEqual((await ids.sign('n2', alloc.id, [{ task: 't', identity: 'default' }])).rejections[0]?.reason, REJECTED.alloc);
    assert.deepEqual((await ids.sign('n1', 'missing', [{ task: 't', identity: 'default' }])).rejections[0]?.reason, REJECTED.alloc);
    assert.equal(made, 0, 'nothing signed, no key made');
  });

  it('serves OIDC discovery only with an issuer, as Nomad', () => {
    assert.equal(new WorkloadIdentities({ store, clock }).oidcDiscovery(), undefined);
    assert.deepEqual(new WorkloadIdentities({ store, clock, issuer: 'https://berth.example/' }).oidcDiscovery(), {
      issuer: 'https://berth.example/',
      jwks_uri: 'https://berth.example/.well-known/jwks.json',
      id_token_signing_alg_values_supported: ['RS256', 'EdDSA'],
      response_types_supported: ['code'],
      subject_types_supported: ['public'],
    });
  });
});
