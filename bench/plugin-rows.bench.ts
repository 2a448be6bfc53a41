// CPU per node registration, and the size of the plugin row, when every node
// reports one CSI node plugin, at growing node counts (PLUGIN_ROWS_NODES,
// default 1000,2000,4000), on SQLite: the registration's own work, without
// etcd or HTTP. Flat with the node count since the plugin row stopped listing
// its node instances (issue 40; before: 15 / 37 / 84 ms and 187 / 379 / 762 KiB).
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../src/lib/index.js';
import type { NodeFingerprint } from '../src/structs/index.js';
import { NodeService } from '../src/server/nodes/index.js';
import { rowKey, SqliteStateStore } from '../src/server/state/index.js';
import { testFingerprint } from '../test/support/server-rows.js';

const rep = (id: string) => ({
  pluginId: 'simcsi', type: 'csi-node', allocId: `a-${id}`, healthy: true, healthReason: 'healthy', provider: 'sim.csi', version: '1', updatedAt: 0,
  fingerprint: { info: { name: 'sim.csi', vendorVersion: '1' }, capabilities: { services: [] }, node: { capabilities: ['STAGE_UNSTAGE_VOLUME'], info: { nodeId: `ext-${id}`, maxVolumesPerNode: 0 } } },
});
export default async function pluginRowsBench(): Promise<Record<string, unknown>> {
 const out: Record<string, unknown> = {};
 for (const n of (process.env['PLUGIN_ROWS_NODES'] ?? '1000,2000,4000').split(',').map(Number)) {
  const dir = mkdtempSync(join(tmpdir(), 'n5k-probe-'));
  const store = SqliteStateStore.open(join(dir, 'state.db'));
  const nodes = new NodeService({ store, clock: new ManualClock(1) });
  const last = 200;
  let cpu0 = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    if (i === n - last) cpu0 = process.cpuUsage();
    const id = `node-${i}`;
    await nodes.register(testFingerprint(id, { csiNodePlugins: { simcsi: rep(id) } }) as unknown as NodeFingerprint, { id });
  }
  const cpu = process.cpuUsage(cpu0);
  const bytes = JSON.stringify(store.snapshot().get('plugins', rowKey('simcsi'))).length;
  out[`cpuMsPerRegistrationAt${n}`] = Number(((cpu.user + cpu.system) / 1000 / last).toFixed(3));
  out[`pluginRowKiBAt${n}`] = Number((bytes / 1024).toFixed(1));
  console.log(`  ${n} nodes: CPU per registration (last ${last}) ${((cpu.user + cpu.system) / 1000 / last).toFixed(3)} ms; plugin row ${(bytes / 1024).toFixed(1)} KiB; load ${loadavg().map((l) => l.toFixed(1)).join('/')}`);
  store.close();
  rmSync(dir, { recursive: true, force: true });
}
 return out;
}
