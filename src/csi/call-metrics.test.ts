// The call observer and its Prometheus wiring, against the fake plugin on a
// real socket: every attempt is counted by RPC and code, including failures
// and retries, and a throwing observer never fails a call.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { Clock } from '../lib/index.js';
import { csiCallMetrics } from './call-metrics.js';
import { CsiClient } from './client.js';
import { CsiError } from './errors.js';
import { FakePlugin } from '../../test/support/csi-fake/index.js';

const instantClock: Clock = { now: () => 0, sleep: async () => {} };

describe('CSI call metrics', () => {
  let dir: string;
  let fake: FakePlugin;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bcm-'));
    fake = new FakePlugin({ socketPath: join(dir, 'csi.sock') });
    await fake.start();
  });
  after(async () => {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('counts each attempt by plugin, RPC and code, with latencies', async () => {
    const registry = new Registry();
    const metrics = csiCallMetrics(registry);
    const client = new CsiClient({ endpoint: join(dir, 'csi.sock'), clock: instantClock, observer: metrics.observer('fake') });
    try {
      await client.probe();
      await client.getPluginInfo();
      fake.failNext('NodeGetInfo', 'UNAVAILABLE', 'not yet', 2);
      await client.nodeGetInfo({ retry: { maxAttempts: 3 } });
      fake.failNext('GetPluginInfo', 'INVALID_ARGUMENT', 'no');
      await assert.rejects(client.getPluginInfo(), CsiError);
    } finally {
      await client.close();
    }
    const calls = await registry.getSingleMetric('berth_csi_calls_total')!.get();
    const count = (rpc: string, code: string): number =>
      calls.values.find((v) => v.labels['rpc'] === rpc && v.labels['code'] === code && v.labels['plugin'] === 'fake')?.value ?? 0;
    assert.equal(count('Probe', 'OK'), 1);
    assert.equal(count('GetPluginInfo', 'OK'), 1);
    assert.equal(count('GetPluginInfo', 'INVALID_ARGUMENT'), 1);
    assert.equal(count('NodeGetInfo', 'UNAVAILABLE'), 2, 'every retried attempt counts');
    assert.equal(count('NodeGetInfo', 'OK'), 1);
    const text = await registry.metrics();
    assert.match(text, /berth_csi_call_duration_seconds_count\{plugin="fake",rpc="Probe",code="OK"\} 1/);
  });

  it('a throwing observer never fails a call', async () => {
    const client = new CsiClient({ endpoint: join(dir, 'csi.sock'), observer: { onCall: () => { throw new Error('broken observer'); } } });
    try {
      assert.deepEqual(await client.probe(), { ready: true });
    } finally {
      await client.close();
    }
  });
});
