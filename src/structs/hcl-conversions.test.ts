// go-cty's conversions between primitives, the ones Nomad's job parser
// applies: which strings are numbers and bools, how numbers are written.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { convertPrimitive } from './hcl-conversions.js';

describe('convertPrimitive', () => {
  it('follows cty for each primitive', () => {
    assert.equal(convertPrimitive('-1.5e3', 'number'), -1500);
    assert.equal(convertPrimitive('+7', 'number'), 7);
    for (const s of [' 7', '0x10', '1_000', '', 'Infinity', 'NaN']) assert.equal(typeof convertPrimitive(s, 'number'), 'symbol', `${JSON.stringify(s)} is no number`);
    assert.equal(convertPrimitive('1', 'boolean'), true);
    assert.equal(convertPrimitive('0', 'boolean'), false);
    assert.equal(typeof convertPrimitive('TRUE', 'boolean'), 'symbol');
    assert.equal(convertPrimitive(1e21, 'string'), '1000000000000000000000', 'never in exponent form');
    assert.equal(convertPrimitive(1e-7, 'string'), '0.0000001');
    assert.equal(convertPrimitive(false, 'string'), 'false');
    assert.equal(typeof convertPrimitive('3.5', 'int'), 'symbol', 'a fraction is no integer');
    });
});
