// The fake CSI plugin (test/support/csi-fake, a real gRPC server) run as a
// plugin task of a Berth job, for the scenarios that kill the leader in the
// middle of a claim or a release. The first ControllerPublishVolume hangs
// (until the caller cancels: the node does when its connection to the dying
// leader closes); later ones answer. Once the file <stateFile>.hang-unpublish
// exists, the next ControllerUnpublishVolume hangs the same way.
// After every call the plugin writes its state to <stateFile> (calls per
// RPC, which volumes are controller-published to which node), which the
// test reads to know the instant has come and what the plugin holds.
//
//   node --import tsx _gated-plugin.ts <unix endpoint> <node id> <zone> <state file>

import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { FakePlugin } from '../support/csi-fake/index.js';

const [endpoint, nodeId, zone, stateFile] = process.argv.slice(2) as [string, string, string, string];

const fake = new FakePlugin({
  socketPath: endpoint.replace(/^unix:\/\//, ''),
  nodeId,
  topology: { 'topology.fake.csi.berth.dev/zone': zone },
});
fake.hangNext('ControllerPublishVolume');
// The fake keeps its model in memory and creates nothing; the node bind-mounts the target path a
// plugin publishes, so each NodePublish answers only after dump() (every 100 ms, an earlier timer)
// made its target directory.
fake.delayNext('NodePublishVolume', 300, 1_000);
let unpublishArmed = false;

function dump(): void {
  for (const call of fake.callsTo('NodePublishVolume')) {
    const target = call.request['targetPath'];
    if (typeof target === 'string' && !existsSync(target)) mkdirSync(target, { recursive: true });
  }
  if (!unpublishArmed && existsSync(`${stateFile}.hang-unpublish`)) {
    fake.hangNext('ControllerUnpublishVolume');
    unpublishArmed = true;
  }
  const calls: Record<string, number> = {};
  for (const rpc of ['ControllerPublishVolume', 'ControllerUnpublishVolume', 'NodeStageVolume', 'NodePublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume', 'CreateVolume'] as const) {
    calls[rpc] = fake.callsTo(rpc).length;
  }
  const controllerPublished = Object.fromEntries([...fake.controllerPublished].map(([v, nodes]) => [v, [...nodes]]));
  writeFileSync(`${stateFile}.tmp`, JSON.stringify({ calls, controllerPublished, volumes: [...fake.volumes.keys()], unpublishArmed }));
  renameSync(`${stateFile}.tmp`, stateFile);
}

await fake.start();
dump();
// The fake records a call before it answers (or hangs): dump on every change the test may wait for.
const timer = setInterval(dump, 100);
const stop = (): void => {
  clearInterval(timer);
  void fake.stop().then(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
