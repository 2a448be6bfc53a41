// The allocation's ports as a task sees them: a container driver in host
// mode publishes host port -> the group's `to` on its own bridge (as
// Nomad's docker driver does), so its task gets `to`; a task on the host's
// network keeps the host port; bridge mode is the scheduler's mapping.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobSpec, type AllocatedPort } from '../../structs/index.js';
import type { RunnerDriver } from '../taskrunner/index.js';
import { missingDriver, taskPorts } from './task-setup.js';

const driver = (fsIsolation: 'none' | 'chroot' | 'image'): RunnerDriver => ({ ...missingDriver('d'), capabilities: { fsIsolation, networkModes: ['host', 'bridge'], mountConfigs: 'any' } });

function group(mode: 'host' | 'bridge') {
  return parseJobSpec({
    id: 'web',
    groups: [{ name: 'g', network: { mode, ports: [{ label: 'http', to: 8080 }, { label: 'admin' }] }, tasks: [{ name: 't', driver: 'docker', config: { image: 'x' } }] }],
  }).groups[0]!;
}

// What the scheduler gives: in host mode `to` is the host port.
const hostPorts: AllocatedPort[] = [
  { label: 'http', value: 24913, to: 24913, hostIp: '127.0.0.1' },
  { label: 'admin', value: 24914, to: 24914, hostIp: '127.0.0.1' },
];

describe('taskPorts', () => {
  it('gives a container task in host mode the group’s `to`, where it has one', () => {
    assert.deepEqual(taskPorts({ ports: hostPorts }, group('host'), driver('image')), [
      { label: 'http', value: 24913, to: 8080, hostIp: '127.0.0.1' },
      { label: 'admin', value: 24914, to: 24914, hostIp: '127.0.0.1' },
    ]);
  });

  it('leaves the ports of a task on the host’s network, and of any task in bridge mode, as the scheduler gave them', () => {
    assert.deepEqual(taskPorts({ ports: hostPorts }, group('host'), driver('chroot')), hostPorts);
    const bridged = [{ label: 'http', value: 27544, to: 8080, hostIp: '127.0.0.1' }];
    assert.deepEqual(taskPorts({ ports: bridged }, group('bridge'), driver('image')), bridged);
    assert.deepEqual(taskPorts({}, group('host'), driver('image')), []);
  });
});
