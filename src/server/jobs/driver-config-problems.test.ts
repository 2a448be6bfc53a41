import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hclspec } from '../../plugins/index.js';
import { parseJobSpec, type Node } from '../../structs/index.js';
import { driverConfigProblems } from './driver-config-problems.js';

const schema = hclspec.object({ command: hclspec.attr('command', 'string', true), args: hclspec.attr('args', 'list(string)') });

function node(status: Node['status'] = 'ready'): Node {
  return {
    id: 'n1',
    name: 'n1',
    datacenter: 'dc1',
    httpAddr: '',
    status,
    statusDescription: '',
    lastHeartbeat: 0,
    drivers: { 'my-driver': { detected: true, healthy: true, healthReason: 'Healthy', networkModes: ['host'], external: true, taskConfigSchema: schema as unknown as Record<string, unknown> } },
    resources: { cpuMhz: 1000, memoryMb: 1000 },
    attributes: {},
    csiControllerPlugins: {},
    csiNodePlugins: {},
  } as unknown as Node;
}

const job = (config: Record<string, unknown>) =>
  parseJobSpec({ id: 'j', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'my-driver', config }] }] });

describe('task config against an external driver schema', () => {
  it('a job whose task config does not fit the driver schema is refused, naming the field', () => {
    const problems = driverConfigProblems(job({ args: 'not-a-list' }), [node()]);
    assert.ok(problems.length >= 1, JSON.stringify(problems));
    assert.ok(problems.some((p) => p.path.startsWith('groups[0].tasks[0].config')), JSON.stringify(problems));
    assert.match(problems.map((p) => p.message).join('\n'), /my-driver/);
  });

  it('a fitting config, or a driver no node reports a schema for, passes', () => {
    assert.deepEqual(driverConfigProblems(job({ command: '/bin/true', args: ['a'] }), [node()]), []);
    assert.deepEqual(driverConfigProblems(job({ anything: 1 }), [node('down')]), []);
  });
});
