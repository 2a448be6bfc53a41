// A stand-in agent for the crash test: a process that runs a volume manager
// over a client state file and mounts what it is told, until the test kills
// it with SIGKILL. Usage: node --import tsx _mount-child.ts <state file> <mount root> <endpoint> <volume:alloc>...

import { CsiClient } from '../../src/csi/index.js';
import { SqliteClientStateStore } from '../../src/client/state/index.js';
import { VolumeManager } from '../../src/client/volumes/index.js';

const [statePath, mountRoot, endpoint, ...pairs] = process.argv.slice(2);
if (!statePath || !mountRoot || !endpoint) throw new Error('usage: _mount-child.ts <state file> <mount root> <endpoint> <volume:alloc>...');

const store = SqliteClientStateStore.open(statePath);
const client = new CsiClient({ endpoint });
const vm = new VolumeManager({
  pluginId: 'fake',
  getClient: () => client,
  store,
  mountRoot,
  getCapabilities: () => ['STAGE_UNSTAGE_VOLUME'],
});
await vm.start();
for (const pair of pairs) {
  const [volumeId, allocId] = pair.split(':') as [string, string];
  await vm.mountVolume({ id: volumeId }, allocId, { readOnly: false, attachmentMode: 'file-system', accessMode: 'multi-node-multi-writer' });
  process.stdout.write(`mounted ${pair}\n`);
}
