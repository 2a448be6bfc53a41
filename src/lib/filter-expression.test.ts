import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileFilter, FilterSyntaxError } from './filter-expression.js';

// Rows shaped as Nomad's API answers them: what a user filters on with `?filter=`.
const nodes = [
  { ID: 'a1', Name: 'web-1', Status: 'ready', Drain: false, Meta: { zone: 'east', rack: '7' }, Drivers: ['exec', 'docker'], CPU: 4000, Attributes: { 'os.name': 'debian' } },
  { ID: 'b2', Name: 'web-2', Status: 'down', Drain: true, Meta: { zone: 'west' }, Drivers: ['exec'], CPU: 2000, Attributes: {} },
  { ID: 'c3', Name: 'db-1', Status: 'ready', Drain: false, Meta: {}, Drivers: [], CPU: 8000, Attributes: { 'os.name': 'ubuntu' } },
];
const names = (expr: string): string[] => nodes.filter(compileFilter(expr)).map((n) => n.Name);

describe('filter expressions (Nomad ?filter=)', () => {
  it('compares strings, numbers and bools by the field type', () => {
    assert.deepEqual(names('Status == "ready"'), ['web-1', 'db-1']);
    assert.deepEqual(names('Status != ready'), ['web-2']);
    assert.deepEqual(names('CPU == 2000'), ['web-2']);
    assert.deepEqual(names('Drain == true'), ['web-2']);
  });
  it('combines with and, or, not and parentheses', () => {
    assert.deepEqual(names('Status == ready and not (Name matches "^db")'), ['web-1']);
    assert.deepEqual(names('Drain == true or CPU == 8000'), ['web-2', 'db-1']);
  });
  it('looks into lists, map keys and strings with in and contains', () => {
    assert.deepEqual(names('"docker" in Drivers'), ['web-1']);
    assert.deepEqual(names('exec not in Drivers'), ['db-1']);
    assert.deepEqual(names('Meta contains "rack"'), ['web-1']);
    assert.deepEqual(names('Name contains "web"'), ['web-1', 'web-2']);
  });
  it('reaches map keys with dots and brackets, and a missing key matches nothing', () => {
    assert.deepEqual(names('Meta.zone == east'), ['web-1']);
    assert.deepEqual(names('Attributes["os.name"] == "ubuntu"'), ['db-1']);
    assert.deepEqual(names('Meta.zone != east'), ['web-2', 'db-1']);
    assert.deepEqual(names('Meta.zone is empty'), ['db-1']);
    assert.deepEqual(names('Drivers is not empty'), ['web-1', 'web-2']);
  });
  it('refuses what does not parse, saying where', () => {
    assert.throws(() => compileFilter('Status =='), (e: unknown) => e instanceof FilterSyntaxError && /expected a value at the end/.test(e.message));
    assert.throws(() => compileFilter('Status = ready'), (e: unknown) => e instanceof FilterSyntaxError && /column 8/.test(e.message));
    assert.throws(() => compileFilter('(Status == ready'), /expected "\)"/);
    assert.throws(() => compileFilter('Name matches "["'), /invalid regular expression/);
    assert.throws(() => compileFilter(''), /empty/);
  });
});
