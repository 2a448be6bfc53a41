import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeConfig, decodeMsgpack, encodeConfig, encodeMsgpack, hclspec, HclSpecError } from './index.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex').replace(/(..)(?!$)/g, '$1 ');

// The schema Nomad's exec/raw_exec-style drivers give: two bools, `no_cgroups` defaulting to false.
const twoBools = hclspec.object({
  enabled: hclspec.attr('enabled', 'bool', false),
  no_cgroups: hclspec.withDefault(hclspec.attr('no_cgroups', 'bool', false), hclspec.literal('false')),
});

describe('plugin config msgpack (the bytes SetConfig carries)', () => {
  it('encodes {enabled = true} with the default applied as the issue gives it', () => {
    // go-cty marshals the decoded object {enabled: true, no_cgroups: false} as a
    // msgpack map with its attribute names sorted (sort.Strings):
    //   82                            fixmap, 2 entries (0x80 | 2)
    //   a7 65 6e 61 62 6c 65 64       fixstr len 7 (0xa0 | 7) "enabled"
    //   c3                            true
    //   aa 6e 6f 5f 63 67 72 6f 75 70 73  fixstr len 10 (0xa0 | 10) "no_cgroups"
    //   c2                            false (the Literal default)
    const bytes = encodeConfig(twoBools, { enabled: true });
    assert.equal(hex(bytes), '82 a7 65 6e 61 62 6c 65 64 c3 aa 6e 6f 5f 63 67 72 6f 75 70 73 c2');
  });

  it('encodes a task config as StartTask carries it (msgpack_driver_config)', () => {
    // raw_exec-style task schema; {command = "/bin/sleep", args = ["10"]} decodes to
    // {args: ["10"], command: "/bin/sleep"} and marshals with sorted keys:
    //   82                                  fixmap, 2 entries
    //   a4 61 72 67 73                      "args"
    //   91 a2 31 30                         fixarray of 1: "10"
    //   a7 63 6f 6d 6d 61 6e 64             "command"
    //   aa 2f 62 69 6e 2f 73 6c 65 65 70    "/bin/sleep" (10 bytes)
    const task = hclspec.object({ command: hclspec.attr('command', 'string', true), args: hclspec.attr('args', 'list(string)') });
    assert.equal(hex(encodeConfig(task, { command: '/bin/sleep', args: ['10'] })), '82 a4 61 72 67 73 91 a2 31 30 a7 63 6f 6d 6d 61 6e 64 aa 2f 62 69 6e 2f 73 6c 65 65 70');
    // A block list, a set of numbers and a map, as hcl2json hands them over:
    //   {mount: [{target: "/data"}], ports: set(number) [443, 80, 443] -> [80, 443] (cty orders number sets
    //   numerically and drops duplicates), labels: map(string) {b: "2", a: "1"} -> keys sorted}
    //   83 a6 6c 61 62 65 6c 73 82 a1 61 a1 31 a1 62 a1 32      "labels" {a: "1", b: "2"}
    //      a5 6d 6f 75 6e 74 91 81 a6 74 61 72 67 65 74 a5 2f 64 61 74 61   "mount" [{target: "/data"}]
    //      a5 70 6f 72 74 73 92 50 cd 01 bb                      "ports" [80, 443 = uint16 01 bb]
    const rich = hclspec.object({
      mount: hclspec.blockList('mount', hclspec.object({ target: hclspec.attr('target', 'string', true) })),
      ports: hclspec.attr('ports', 'set(number)'),
      labels: hclspec.attr('labels', 'map(string)'),
    });
    assert.equal(
      hex(encodeConfig(rich, { mount: [{ target: '/data' }], ports: [443, 80, 443], labels: { b: 2, a: '1' } })),
      '83 a6 6c 61 62 65 6c 73 82 a1 61 a1 31 a1 62 a1 32 a5 6d 6f 75 6e 74 91 81 a6 74 61 72 67 65 74 a5 2f 64 61 74 61 a5 70 6f 72 74 73 92 50 cd 01 bb',
    );
  });

  it('sends an omitted optional attribute as nil and an empty block as its defaults', () => {
    // {} -> {enabled: null, no_cgroups: false}: 82, "enabled", c0 (nil), "no_cgroups", c2.
    assert.equal(hex(encodeConfig(twoBools, {})), '82 a7 65 6e 61 62 6c 65 64 c0 aa 6e 6f 5f 63 67 72 6f 75 70 73 c2');
  });

  it('uses the smallest integer encodings (vmihailenco EncodeInt with compact ints)', () => {
    // 0 and 127: positive fixint (the byte itself); 128: uint8 cc 80; 255: cc ff;
    // 256: uint16 cd 01 00; 65536: uint32 ce 00 01 00 00; 2^32: uint64 cf 00 00 00 01 00 00 00 00;
    // -1: negative fixint ff; -32: e0; -33: int8 d0 df; -129: int16 d1 ff 7f;
    // -32769: int32 d2 ff ff 7f ff; -2^31-1: int64 d3 ff ff ff ff 7f ff ff ff.
    const cases: [number, string][] = [
      [0, '00'],
      [127, '7f'],
      [128, 'cc 80'],
      [255, 'cc ff'],
      [256, 'cd 01 00'],
      [65536, 'ce 00 01 00 00'],
      [2 ** 32, 'cf 00 00 00 01 00 00 00 00'],
      [-1, 'ff'],
      [-32, 'e0'],
      [-33, 'd0 df'],
      [-129, 'd1 ff 7f'],
      [-32769, 'd2 ff ff 7f ff'],
      [-(2 ** 31) - 1, 'd3 ff ff ff ff 7f ff ff ff'],
    ];
    for (const [n, want] of cases) assert.equal(hex(encodeMsgpack(n)), want, String(n));
  });

  it('sends non-integers as float64 only when the decimal is exact, else as text (cty numbers are 512-bit)', () => {
    // 1.5 = 3/2 is exactly a float64: cb + IEEE 754 big-endian 3f f8 00 00 00 00 00 00.
    assert.equal(hex(encodeMsgpack(1.5)), 'cb 3f f8 00 00 00 00 00 00');
    // 0.1 is not a float64 exactly, so cty's big.Float (parsed from "0.1" at 512 bits)
    // fails Float64()==Exact and marshal.go writes bf.Text('f', -1) = "0.1": a3 30 2e 31.
    assert.equal(hex(encodeMsgpack(0.1)), 'a3 30 2e 31');
    // 1e-7: the same rule, in plain 'f' notation "0.0000001" (fixstr len 9).
    assert.equal(hex(encodeMsgpack(1e-7)), `a9 ${hex(Buffer.from('0.0000001'))}`);
    // 1e20 is an integer beyond int64: written as its digits (fixstr len 21).
    assert.equal(hex(encodeMsgpack(1e20)), `b5 ${hex(Buffer.from('100000000000000000000'))}`);
  });

  it('encodes strings by UTF-8 length and maps with bytewise-sorted keys', () => {
    // 31 bytes fit a fixstr (bf), 32 need str8 (d9 20).
    assert.equal(hex(encodeMsgpack('a'.repeat(31))).slice(0, 2), 'bf');
    assert.equal(hex(encodeMsgpack('a'.repeat(32))).slice(0, 5), 'd9 20');
    // "é" is 2 UTF-8 bytes: a2 c3 a9.
    assert.equal(hex(encodeMsgpack('é')), 'a2 c3 a9');
    // Keys "b", "a", "B" sort as Go does: "B" (0x42) < "a" < "b"; values 1, 2, 3.
    assert.equal(hex(encodeMsgpack({ b: 1, a: 2, B: 3 })), '83 a1 42 03 a1 61 02 a1 62 01');
    // A 16-element array needs array16 (dc 00 10).
    assert.equal(hex(encodeMsgpack(new Array(16).fill(true))).slice(0, 8), 'dc 00 10');
  });

  it('decodes what it encodes (the serve side reads plugin and task configs)', () => {
    const v = { a: [1, -200, 70000, 1.5, '0.1'], b: { c: null, d: true }, e: 'x'.repeat(300), f: -(2 ** 40) };
    assert.deepEqual(decodeMsgpack(encodeMsgpack(v)), v);
    assert.equal(decodeMsgpack(new Uint8Array()), null);
    assert.throws(() => decodeMsgpack(new Uint8Array([0x92, 0x01])), (e: unknown) => e instanceof HclSpecError && e.code === 'HCLSPEC_MSGPACK');
  });
});

describe('decoding a config block against a plugin schema', () => {
  const schema = hclspec.object({
    image: hclspec.attr('image', 'string', true),
    args: hclspec.attr('args', 'list(string)'),
    labels: hclspec.attr('labels', 'map(string)'),
    count: hclspec.withDefault(hclspec.attr('count', 'number'), hclspec.literal('3')),
    tags: hclspec.attr('tags', 'set(string)'),
    auth: hclspec.block('auth', false, hclspec.object({ user: hclspec.attr('user', 'string', true), pass: hclspec.attr('pass', 'string') })),
    volume: hclspec.blockList('volume', hclspec.object({ src: hclspec.attr('src', 'string', true) }), 0, 2),
    port: hclspec.blockMap('port', ['name'], hclspec.object({ to: hclspec.attr('to', 'number') })),
    sysctl: hclspec.blockAttrs('sysctl', 'string'),
  });

  it('applies defaults, converts types and reads the blocks of hcl2json form', () => {
    const v = decodeConfig(schema, {
      image: 'redis',
      args: ['-v', 1],
      labels: { a: 'b' },
      tags: ['z', 'a', 'z'],
      auth: [{ user: 'u' }],
      volume: [{ src: '/a' }, { src: '/b' }],
      port: { http: [{ to: 80 }] },
      sysctl: [{ 'net.core.somaxconn': 16384 }],
    });
    assert.deepEqual(v, {
      image: 'redis',
      args: ['-v', '1'],
      labels: { a: 'b' },
      count: 3,
      tags: ['a', 'z'],
      auth: { user: 'u', pass: null },
      volume: [{ src: '/a' }, { src: '/b' }],
      port: { http: { to: 80 } },
      sysctl: { 'net.core.somaxconn': '16384' },
    });
  });

  it('sends absent blocks as cty does: a null block, empty lists and maps', () => {
    assert.deepEqual(decodeConfig(schema, { image: 'x' }), {
      image: 'x', args: null, labels: null, count: 3, tags: null, auth: null, volume: [], port: {}, sysctl: null,
    });
  });

  const fails = (body: unknown, pattern: RegExp, locate?: (steps: readonly { name: string; nth: number }[]) => { line: number; column: number } | undefined): void => {
    assert.throws(
      () => decodeConfig(schema, body, { path: 'task "web" config', locate }),
      (e: unknown) => e instanceof HclSpecError && e.code === 'HCLSPEC_INVALID_CONFIG' && pattern.test(e.message),
    );
  };

  it('names the attribute path and the position in its errors', () => {
    fails({}, /^task "web" config\.image: the argument "image" is required/);
    fails({ image: 'x', count: 'many' }, /config\.count: inappropriate value for attribute "count": a number is required, not a string/);
    fails({ image: 'x', args: 'a' }, /config\.args: .*a list of string is required, not a string/);
    fails({ image: 'x', volume: [{ src: '/a' }, {}] }, /config\.volume\[1\]\.src: the argument "src" is required/);
    fails({ image: 'x', volume: [{ src: '/a' }, { src: '/b' }, { src: '/c' }] }, /at most 2 "volume" block\(s\)/);
    fails({ image: 'x', auth: [{ user: 'u' }, { user: 'v' }] }, /only one "auth" block is allowed/);
    fails({ image: 'x', imgae: 'typo' }, /config\.imgae: unsupported argument "imgae"/);
    fails({ image: 'x', auth: [{ user: 'u', token: 't' }] }, /config\.auth\.token: unsupported argument/);
    const locate = (steps: readonly { name: string; nth: number }[]): { line: number; column: number } => ({ line: 10 + steps.length, column: steps[steps.length - 1]?.nth ?? 0 });
    fails({ image: 'x', volume: [{ src: '/a' }, { src: 5, extra: 1 }] }, /config\.volume\[1\]\.extra \(line 12, column 0\): unsupported argument/, locate);
  });

  it('accepts only an empty block for a plugin without a schema', () => {
    assert.equal(decodeConfig(undefined, {}), null);
    assert.throws(() => decodeConfig(undefined, { a: 1 }), /takes no configuration/);
  });

  it('reads literals, objects, tuples and any-typed values', () => {
    const s = hclspec.object({
      opts: hclspec.withDefault(hclspec.attr('opts', 'object({a = string, b = list(number)})'), hclspec.literal('{ a = "x", b = [1, 2.5] }')),
      extra: hclspec.attr('extra', 'any'),
      pair: hclspec.attr('pair', 'tuple([string, bool])'),
    });
    assert.deepEqual(decodeConfig(s, { extra: { k: [1, 'a'] }, pair: ['p', 'true'] }), { opts: { a: 'x', b: [1, 2.5] }, extra: { k: [1, 'a'] }, pair: ['p', true] });
    // cty's object conversion drops attributes the type lacks and fills optional() ones with null.
    const o = hclspec.object({ o: hclspec.attr('o', 'object({a = string, b = optional(number)})') });
    assert.deepEqual(decodeConfig(o, { o: { a: 'x', extra: 1 } }), { o: { a: 'x', b: null } });
    assert.throws(() => decodeConfig(o, { o: { b: 1 } }), /config\.o: .*attribute "a" is required/);
    assert.throws(() => decodeConfig(hclspec.object({ x: hclspec.attr('x', 'lisst(string)') }), { x: [] }), (e: unknown) => e instanceof HclSpecError && e.code === 'HCLSPEC_INVALID_SPEC');
  });
});
