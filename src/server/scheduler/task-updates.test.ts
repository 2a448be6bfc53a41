import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobSpec, type JobSpec } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { groupChange, NodeFit } from './task-updates.js';

type Edit = (spec: Record<string, unknown>, group: Record<string, unknown>, task: Record<string, unknown>) => void;

/** A two-group job (web, api), then the same job with `edit` applied to web (and to its first task). */
function pair(edit: Edit): { before: JobSpec; after: JobSpec } {
  const raw = (): Record<string, unknown> => ({
    id: 'shop',
    meta: { team: 'a' },
    groups: [
      { name: 'web', count: 2, meta: { tier: 'front' }, tasks: [{ name: 't', driver: 'exec', config: { command: '/bin/sleep' }, env: { A: '1' }, resources: { cpuMhz: 100, memoryMb: 64 } }] },
      { name: 'api', count: 1, tasks: [{ name: 'u', driver: 'exec' }] },
    ],
  });
  const after = raw();
  const groups = after['groups'] as Array<Record<string, unknown>>;
  edit(after, groups[0]!, (groups[0]!['tasks'] as Array<Record<string, unknown>>)[0]!);
  return { before: parseJobSpec(raw()), after: parseJobSpec(after) };
}

describe('groupChange (Nomad\'s tasksUpdated)', () => {
  const cases: Array<[string, Edit, 'same' | 'resources' | 'destructive']> = [
    ['count', (_s, g) => (g['count'] = 5), 'same'],
    ['group constraints', (_s, g) => (g['constraints'] = [{ attribute: '${attr.kernel.name}', value: 'linux' }]), 'same'],
    ['job constraints and datacenters', (s) => Object.assign(s, { constraints: [{ attribute: '${node.class}', value: 'x' }], datacenters: ['dc2'] }), 'same'],
    ['group affinities and spreads', (_s, g) => Object.assign(g, { affinities: [{ attribute: '${node.datacenter}', value: 'dc1' }], spreads: [{ attribute: '${node.datacenter}' }] }), 'same'],
    ['task constraints', (_s, _g, t) => (t['constraints'] = [{ attribute: '${attr.kernel.name}', value: 'linux' }]), 'same'],
    ['update block', (_s, g) => (g['update'] = { maxParallel: 2 }), 'same'],
    ['reschedule and migrate', (_s, g) => Object.assign(g, { reschedule: { attempts: 5, interval: '1h', unlimited: false }, migrate: { maxParallel: 2 } }), 'same'],
    ['priority', (s) => (s['priority'] = 80), 'same'],
    ['the meta of another group', (s) => ((s['groups'] as Array<Record<string, unknown>>)[1]!['meta'] = { x: '1' }), 'same'],
    ['group meta its task overrides', (_s, g, t) => Object.assign(g, { meta: { tier: 'back' } }, void (t['meta'] = { tier: 'front' })), 'same'],
    ['task memory and cpu', (_s, _g, t) => (t['resources'] = { cpuMhz: 200, memoryMb: 128 }), 'resources'],
    ['task env', (_s, _g, t) => (t['env'] = { A: '2' }), 'destructive'],
    ['task config', (_s, _g, t) => (t['config'] = { command: '/bin/true' }), 'destructive'],
    ['task driver', (_s, _g, t) => (t['driver'] = 'raw_exec'), 'destructive'],
    ['the group\'s meta', (_s, g) => (g['meta'] = { tier: 'back' }), 'destructive'],
    ['the job\'s meta', (s) => (s['meta'] = { team: 'b' }), 'destructive'],
    ['a task added', (_s, g) => (g['tasks'] = [...(g['tasks'] as unknown[]), { name: 'side', driver: 'exec' }]), 'destructive'],
    ['the group network', (_s, g) => (g['network'] = { ports: [{ label: 'http' }] }), 'destructive'],
    ['the restart policy (the client gives it to the running tasks)', (_s, g) => (g['restart'] = { attempts: 9 }), 'same'],
  ];
  for (const [what, edit, expected] of cases) {
    it(`a change of ${what} is ${expected === 'same' ? 'an in-place update' : expected === 'resources' ? 'a resource update in place' : 'destructive'}`, () => {
      const { before, after } = pair(edit);
      assert.equal(groupChange(before, after, 'web'), expected);
      // The other group sees nothing of a change to web alone.
      if (!what.includes('job') && !what.includes('another')) assert.equal(groupChange(before, after, 'api'), 'same');
      if (what.includes('another')) assert.equal(groupChange(before, after, 'api'), 'destructive');
    });
  }

  it('compares the spec whatever the order of its keys, and a group missing on either side is destructive', () => {
    const { before } = pair(() => {});
    const reversed = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).reverse()) as T;
    const reordered = { ...before, groups: before.groups.map((g) => reversed({ ...g, tasks: g.tasks.map((t) => reversed({ ...t, config: reversed(t.config) })) })) };
    assert.equal(groupChange(before, reordered, 'web'), 'same');
    assert.equal(groupChange(before, { ...before, groups: [before.groups[1]!] }, 'web'), 'destructive');
  });
});

describe('NodeFit', () => {
  it('says why a node no longer satisfies the job: its datacenter, a job, group or task constraint', () => {
    const spec = parseJobSpec({
      id: 'shop',
      datacenters: ['dc1', 'eu-*'],
      constraints: [{ attribute: '${attr.kernel.name}', value: 'linux' }],
      groups: [{ name: 'web', tasks: [{ name: 't', driver: 'exec', constraints: [{ attribute: '${meta.rack}', operator: '!=', value: 'r9' }] }] }],
    });
    const fit = new NodeFit(spec, spec.groups[0]!);
    const linux = { 'kernel.name': 'linux' };
    assert.equal(fit.misfit(testNode('n1', { attributes: linux })), undefined);
    assert.equal(fit.misfit(testNode('n2', { datacenter: 'eu-west', attributes: linux })), undefined);
    assert.match(fit.misfit(testNode('n3', { datacenter: 'us-east', attributes: linux })) ?? '', /datacenter "us-east" is not among the job's \(dc1, eu-\*\)/);
    assert.match(fit.misfit(testNode('n4', { attributes: { 'kernel.name': 'darwin' } })) ?? '', /no longer satisfies constraint "\$\{attr.kernel.name\} = linux"/);
    assert.match(fit.misfit(testNode('n5', { attributes: linux, meta: { rack: 'r9' } })) ?? '', /constraint "\$\{meta.rack\} != r9"/);
  });
});
