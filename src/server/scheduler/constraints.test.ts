import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobSpec, type Node } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { compileRule, resolveTarget } from './constraints.js';

const node = (extra: Partial<Node> = {}): Node =>
  testNode('n1', {
    name: 'web-1',
    datacenter: 'east',
    nodeClass: 'fast',
    meta: { rack: 'r1', tags: 'ssd, gpu,nvme', count: '10' },
    attributes: { 'kernel.name': 'linux', 'kernel.version': '6.1.0', 'os.version': '12', 'nomad.version': '1.7.2-beta.1' },
    ...extra,
  });

const holds = (attribute: string, operator: string, value: string, n: Node = node()): boolean => compileRule({ attribute, operator, value })(n);

describe('constraint targets', () => {
  it('resolves node fields, attributes and meta; literals stay as written', () => {
    const n = node();
    assert.equal(resolveTarget('${node.unique.id}', n), 'n1');
    assert.equal(resolveTarget('${node.unique.name}', n), 'web-1');
    assert.equal(resolveTarget('${node.datacenter}', n), 'east');
    assert.equal(resolveTarget('${node.class}', n), 'fast');
    assert.equal(resolveTarget('${node.region}', n), 'global');
    assert.equal(resolveTarget('${attr.kernel.name}', n), 'linux');
    assert.equal(resolveTarget('${meta.rack}', n), 'r1');
    assert.equal(resolveTarget('${meta.missing}', n), undefined);
    assert.equal(resolveTarget('linux', n), 'linux');
  });
});

describe('constraint operators (Nomad feasible.go)', () => {
  it('= and != compare strings; a missing attribute is never equal and always unequal', () => {
    assert.equal(holds('${meta.rack}', '=', 'r1'), true);
    assert.equal(holds('${meta.rack}', '=', 'r2'), false);
    assert.equal(holds('${meta.nope}', '=', 'r1'), false);
    assert.equal(holds('${meta.rack}', '!=', 'r2'), true);
    assert.equal(holds('${meta.nope}', '!=', 'r1'), true);
  });

  it('orders numbers numerically and other strings lexically', () => {
    assert.equal(holds('${meta.count}', '>', '9'), true, '10 > 9 as numbers');
    assert.equal(holds('${meta.count}', '<', '9'), false);
    assert.equal(holds('${meta.count}', '>=', '10'), true);
    assert.equal(holds('${meta.count}', '<=', '10'), true);
    assert.equal(holds('${meta.rack}', '<', 'r2'), true, 'lexical');
    assert.equal(holds('${meta.nope}', '<', 'z'), false);
  });

  it('a rule on a target no node has holds nowhere (the job stays blocked, as in Nomad)', () => {
    assert.equal(holds('${nod.class}', '=', 'fast'), false);
    assert.equal(holds('${attr.no.such}', '=', 'x'), false);
    assert.equal(holds('${attr.no.such}', 'is_not_set', ''), true);
  });

  it('regexp matches anywhere in the value (Go regexp.MatchString)', () => {
    assert.equal(holds('${attr.kernel.version}', 'regexp', '^6\\.'), true);
    assert.equal(holds('${attr.kernel.version}', 'regexp', '^5\\.'), false);
    assert.equal(holds('${node.unique.name}', 'regexp', 'b-'), true);
  });

  it('regexp means what RE2 means, as in Nomad: flag groups and \\A work', () => {
    assert.equal(holds('${node.unique.name}', 'regexp', '(?i)^WEB-'), true, 'RE2 flag group');
    assert.equal(holds('${node.unique.name}', 'regexp', '\\Aweb-'), true, 'RE2 \\A anchor');
  });

  it('set_contains(_all) needs every listed value, set_contains_any one of them', () => {
    assert.equal(holds('${meta.tags}', 'set_contains', 'ssd,gpu'), true);
    assert.equal(holds('${meta.tags}', 'set_contains_all', 'ssd, nvme'), true);
    assert.equal(holds('${meta.tags}', 'set_contains', 'ssd,tpu'), false);
    assert.equal(holds('${meta.tags}', 'set_contains_any', 'tpu,gpu'), true);
    assert.equal(holds('${meta.tags}', 'set_contains_any', 'tpu,fpga'), false);
  });

  it('version takes go-version constraints and semver strict ones', () => {
    assert.equal(holds('${attr.kernel.version}', 'version', '>= 5.10, < 7'), true);
    assert.equal(holds('${attr.os.version}', 'version', '~> 11.0'), false);
    assert.equal(holds('${attr.os.version}', 'semver', '>= 11.0.0'), false, '"12" is not strict semver');
    assert.equal(holds('${attr.nomad.version}', 'semver', '>= 1.7.0-alpha, < 1.8.0'), true);
    assert.equal(holds('${attr.nomad.version}', 'version', '>= 1.7.0'), false, 'go-version keeps pre-releases out of plain ranges');
  });

  it('is_set and is_not_set look only at presence', () => {
    assert.equal(holds('${meta.rack}', 'is_set', ''), true);
    assert.equal(holds('${meta.nope}', 'is_set', ''), false);
    assert.equal(holds('${meta.nope}', 'is_not_set', ''), true);
    assert.equal(holds('${meta.rack}', 'is_not_set', ''), false);
  });
});

describe('constraint blocks in a job', () => {
  const spec = (constraint: Record<string, unknown>) => () =>
    parseJobSpec({ id: 'j', constraints: [constraint], groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });

  it('turns Nomad shorthands into attribute/operator/value', () => {
    const job = parseJobSpec({
      id: 'j',
      constraints: [{ attribute: '${attr.kernel.version}', version: '>= 4' }, { distinctHosts: true }, { distinctProperty: '${meta.rack}', value: '2' }, { distinctHosts: false }],
      groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }],
    });
    assert.deepEqual(job.constraints, [
      { attribute: '${attr.kernel.version}', operator: 'version', value: '>= 4' },
      { attribute: '', operator: 'distinct_hosts', value: '' },
      { attribute: '${meta.rack}', operator: 'distinct_property', value: '2' },
    ]);
  });

  it('refuses an unknown operator, a bad regexp (lookaround and backreferences too, as RE2 does), a bad version and an unknown target, at the field', () => {
    assert.throws(spec({ attribute: '${meta.a}', operator: '~=', value: 'x' }), /constraints\[0\]\.operator: unknown operator "~="/);
    assert.throws(spec({ attribute: '${meta.a}', operator: 'regexp', value: '(' }), /constraints\[0\]\.value: is not a valid regular expression/);
    assert.throws(spec({ attribute: '${meta.a}', operator: 'regexp', value: 'a(?=b)' }), /constraints\[0\]\.value: is not a valid regular expression \(RE2, as Nomad's\): invalid or unsupported Perl syntax: `\(\?=`/);
    assert.throws(spec({ attribute: '${meta.a}', operator: 'regexp', value: '(a)\\1' }), /is not a valid regular expression/);
    assert.throws(spec({ attribute: '${meta.a}', version: '>= x.y' }), /constraints\[0\]\.version: the version constraint ">= x.y" has "x.y"/);
    assert.throws(spec({ attribute: '${meta.a}', semver: '>= 1.2' }), /not a semantic version/);
    assert.doesNotThrow(spec({ attribute: '${nod.class}', value: 'x' }), 'an unknown target is registered, as Nomad does');
    assert.throws(spec({ attribute: '${meta.a}', operator: '=' }), /needs a value/);
  });

  it('refuses spreads over 100 percent and zero-weight affinities', () => {
    const base = { id: 'j', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] };
    assert.throws(
      () => parseJobSpec({ ...base, spreads: [{ attribute: '${meta.rack}', targets: [{ value: 'a', percent: 70 }, { value: 'b', percent: 40 }] }] }),
      /spreads\[0\]\.targets: the targets' percentages add up to 110/,
    );
    assert.throws(() => parseJobSpec({ ...base, affinities: [{ attribute: '${meta.rack}', value: 'a', weight: 0 }] }), /weight must not be 0/);
    assert.throws(() => parseJobSpec({ ...base, affinities: [{ attribute: '${meta.rack}', value: 'a', weight: 120 }] }), /between -100 and 100/);
    assert.throws(() => parseJobSpec({ ...base, affinities: [{ distinctHosts: true }] }), /constraints only/);
  });
});
