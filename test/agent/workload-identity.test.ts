// Workload identities on a dev agent, as a Nomad user meets them: a raw_exec
// task of test/nomad-corpus/identity.hcl copies the tokens it was given
// (secrets/nomad_token, secrets/nomad_vault.jwt, NOMAD_TOKEN,
// NOMAD_TOKEN_vault) into its allocation directory, and the test verifies
// them with jose against the agent's public /.well-known/jwks.json, as a
// user's service would, with Nomad's claims. A token with a short ttl is
// renewed while its task runs and the task gets its change_signal; the
// signing key survives an agent restart; OIDC discovery names the issuer.

import assert from 'node:assert/strict';
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload, type JWTVerifyResult } from 'jose';
import type { Allocation, AllocationListStub } from '../../src/api/index.js';
import { killProcessesUnder } from '../support/agent-run.js';
import { until } from '../support/runtime-cluster.js';
import { REPO, startAgent, tempDir, type AgentUnderTest } from './_agent.js';

const ISSUER = 'https://berth.test';

describe('workload identities on a dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;
  const dataDir = (): string => path.join(dir, 'a');
  const start = async (): Promise<AgentUnderTest> => {
    agent = await startAgent(['--dev', '--data-dir', dataDir(), '--port', '0', '--config', path.join(dir, 'agent.hcl')]).ready(true);
    return agent;
  };

  before(async () => {
    dir = await tempDir('bwid-');
    writeFileSync(path.join(dir, 'agent.hcl'), `server {\n  oidc_issuer = "${ISSUER}"\n}\n`);
    await start();
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    killProcessesUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(file: string): Promise<void> {
    const r = await agent.cli(['job', 'run', '--detach', file]);
    assert.equal(r.code, 0, `job run ${file}: ${r.stderr}${r.stdout}`);
  }

  async function allocOf(job: string, want: (a: Allocation) => boolean, what: string): Promise<Allocation> {
    return until(what, async () => {
      for (const a of await agent.get<AllocationListStub[]>(`/v1/job/${job}/allocations`)) {
        const full = await agent.get<Allocation>(`/v1/allocation/${a.ID}`);
        if (want(full)) return full;
      }
      return undefined;
    }, 90_000);
  }

  const shared = (allocId: string, file: string): string => path.join(dataDir(), 'client', 'alloc', allocId, 'alloc', file);
  /** The JWKS as a service fetches it: over HTTP, without a token. */
  const jwks = (): ReturnType<typeof createRemoteJWKSet> => createRemoteJWKSet(new URL(`${agent.addr}/.well-known/jwks.json`));

  it("hands a task its default and named identities in secrets/ and its env, verifiable against the JWKS with Nomad's claims", async () => {
    await run(path.join(REPO, 'test', 'nomad-corpus', 'identity.hcl'));
    const alloc = await allocOf('whoami', (a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed', 'the identity job to finish');
    assert.equal(alloc.ClientStatus, 'complete', JSON.stringify(alloc.TaskStates));
    const read = (f: string): string => readFileSync(shared(alloc.ID, f), 'utf8');
    const [file, env, vaultFile, vaultEnv] = ['file.jwt', 'env.jwt', 'vault.jwt', 'vault-env.jwt'].map(read);
    assert.ok(file && vaultFile, 'the task read its token files');
    assert.equal(env, file, 'NOMAD_TOKEN is the token of secrets/nomad_token');
    assert.equal(vaultEnv, vaultFile, 'NOMAD_TOKEN_vault is the token of secrets/nomad_vault.jwt');

    const byDefault = await jwtVerify(file, jwks(), { audience: 'nomadproject.io', issuer: ISSUER });
    const common: JWTPayload = { nomad_namespace: 'default', nomad_job_id: 'whoami', nomad_allocation_id: alloc.ID, nomad_task: 'id', iss: ISSUER };
    assert.deepEqual(pick(byDefault.payload, Object.keys(common)), common);
    assert.equal(byDefault.payload.sub, 'global:default:whoami:g:id:default');
    assert.equal(byDefault.payload.exp, undefined, 'the default identity does not expire');
    assert.equal(byDefault.protectedHeader.alg, 'RS256');
    assert.ok(byDefault.protectedHeader.kid, 'the header names its key');

    const vault = await jwtVerify(vaultFile, jwks(), { audience: 'vault.io', issuer: ISSUER });
    assert.equal(vault.payload.sub, 'global:default:whoami:g:id:vault');
    assert.equal((vault.payload.exp ?? 0) - (vault.payload.iat ?? 0), 3600, 'exp is iat + ttl');
    await assert.rejects(jwtVerify(vaultFile, jwks(), { audience: 'nomadproject.io' }), /aud/, 'a token for vault.io is not one for Nomad');

    const discovery = (await (await fetch(`${agent.addr}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    assert.equal(discovery['issuer'], ISSUER);
    assert.equal(discovery['jwks_uri'], `${ISSUER}/.well-known/jwks.json`);
  });

  it('renews a token with a ttl while its task runs, signals the task, and keeps the key across an agent restart', async () => {
    const job = path.join(dir, 'renew.hcl');
    writeFileSync(
      job,
      `job "renew" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "trap 'cat secrets/nomad_short.jwt >> \${NOMAD_ALLOC_DIR}/seen; echo >> \${NOMAD_ALLOC_DIR}/seen' HUP; cat secrets/nomad_short.jwt > \${NOMAD_ALLOC_DIR}/seen; echo >> \${NOMAD_ALLOC_DIR}/seen; while true; do sleep 0.2; done"]
      }
      identity {
        name          = "short"
        aud           = ["svc"]
        ttl           = "4s"
        file          = true
        change_mode   = "signal"
        change_signal = "SIGHUP"
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`,
    );
    await run(job);
    const alloc = await allocOf('renew', (a) => a.ClientStatus === 'running', 'the renewing task to run');
    const seen = (allocId = alloc.ID): string[] => {
      try {
        return readFileSync(shared(allocId, 'seen'), 'utf8').split('\n').filter(Boolean);
      } catch {
        return [];
      }
    };
    const tokens = await until('the task to be signalled with a renewed token', () => (new Set(seen()).size >= 2 ? seen() : undefined), 60_000);
    const [first, second] = [...new Set(tokens)];
    const a = await verifyAtIssue(first ?? '', jwks());
    const b = await verifyAtIssue(second ?? '', jwks());
    assert.ok((b.payload.iat ?? 0) >= (a.payload.iat ?? 0), 'the second token was signed after the first');
    assert.ok((b.payload.exp ?? 0) > (b.payload.iat ?? 0), 'the renewed token expires too');
    const mode = statSync(path.join(dataDir(), 'client', 'alloc', alloc.ID, 't', 'secrets', 'nomad_short.jwt')).mode & 0o777;
    assert.equal(mode, 0o600, 'the token file is readable by its owner only');
    const kid = decodeProtectedHeader(second ?? '').kid;

    await agent.stop('SIGINT');
    const restartedAt = Math.floor(Date.now() / 1000);
    await start();
    // The task keeps running, or (a dev agent) its allocation is replaced: either way its token is signed anew.
    const after = await until(
      'a token signed after the agent restart',
      async () => {
        for (const a of await agent.get<AllocationListStub[]>('/v1/job/renew/allocations')) {
          const found = seen(a.ID).find((t) => (decodeJwt(t).iat ?? 0) >= restartedAt);
          if (found) return found;
        }
        return undefined;
      },
      60_000,
    );
    const v = await jwtVerify(after, jwks(), { audience: 'svc' });
    assert.equal(v.protectedHeader.kid, kid, 'the same key signs after the restart');
    assert.equal(v.payload.nomad_job_id, 'renew');
    const r = await agent.cli(['job', 'stop', '-purge', 'renew']);
    assert.equal(r.code, 0, r.stderr);
  });
});

/** Verifies `token` as of the time it was signed (a short-lived one may have expired since). */
function verifyAtIssue(token: string, keys: ReturnType<typeof createRemoteJWKSet>): Promise<JWTVerifyResult> {
  return jwtVerify(token, keys, { audience: 'svc', currentDate: new Date((decodeJwt(token).iat ?? 0) * 1000) });
}

function pick(o: JWTPayload, keys: string[]): JWTPayload {
  return Object.fromEntries(keys.map((k) => [k, o[k]]));
}
