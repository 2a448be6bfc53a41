// The HCL engine checked against what hashicorp/hcl's specification suite
// (specsuite/tests) expects, case by case (our own inputs, written after
// reading each case; the case is named in each test), and against the
// expressions Nomad job files use.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { evaluateConfig, formatDiagnostic, toJsonShape } from './index.js';

/** The file's attributes and blocks as plain JSON, or its first diagnostic as text. */
function run(text: string, opts: Parameters<typeof evaluateConfig>[2] = {}): Record<string, unknown> {
  const r = evaluateConfig('t.hcl', text, opts);
  if (r.diagnostics.length) assert.fail(r.diagnostics.map(formatDiagnostic).join('\n'));
  return toJsonShape(r.body);
}
function problems(text: string, opts: Parameters<typeof evaluateConfig>[2] = {}): string[] {
  const r = evaluateConfig('t.hcl', text, opts);
  assert.ok(r.diagnostics.length, 'the file was accepted');
  return r.diagnostics.map(formatDiagnostic);
}
const value = (expr: string): unknown => run(`v = ${expr}\n`)['v'];

describe('specsuite: expressions', () => {
  it('primitive_literals: numbers, strings (NFC-normalised), bools and null', () => {
    assert.deepEqual(run('whole = 5\nfrac = 3.2\nascii = "hello"\nbmp = "ЖЖ"\nastral = "👩‍👩‍👧‍👦"\nnonnorm = "an\u0303os"\nt = true\nf = false\nn = null\n'), {
      whole: 5,
      frac: 3.2,
      ascii: 'hello',
      bmp: 'ЖЖ',
      astral: '👩‍👩‍👧‍👦',
      nonnorm: 'años',
      t: true,
      f: false,
      n: null,
    });
  });

  it('operators: equality never converts types, comparisons, arithmetic, logic, conditional', () => {
    assert.deepEqual(
      [value('"a" == "a"'), value('"a" == "b"'), value('"1" == 1'), value('"true" == true'), value('"1" != 1'), value('[1, "a"] == [1, "a"]')],
      [true, false, false, false, true, true],
    );
    assert.deepEqual([value('1 < 2'), value('2 < 1'), value('1 <= 1'), value('2 > 1'), value('1 >= 2')], [true, false, true, true, false]);
    assert.deepEqual([value('2 + 3.5'), value('3.5 - 2'), value('2 - 3.5'), value('2 * 4.5'), value('1 / 10'), value('11 % 5')], [5.5, 1.5, -1.5, 9, 0.1, 1]);
    assert.deepEqual([value('true && false'), value('false || true'), value('!true'), value('!false')], [false, true, false, true]);
    assert.deepEqual([value('true ? "a" : "b"'), value('false ? "a" : "b"')], ['a', 'b']);
  });

  it('operators: precedence as the spec orders it (* over +, comparison over &&, && over ||), unary minus', () => {
    assert.equal(value('1 + 2 * 3'), 7);
    assert.equal(value('(1 + 2) * 3'), 9);
    assert.equal(value('1 + 2 > 2 && 3 < 4 || false'), true);
    assert.equal(value('false && true || true'), true);
    assert.equal(value('-2 * -3'), 6);
    assert.equal(value('10 - 4 - 3'), 3, 'left associative');
    assert.equal(value('"5" + 1'), 6, 'a numeric string converts for arithmetic');
  });

  it('heredoc (normal): text kept as written, closing marker may be indented', () => {
    const text = 'basic = <<EOT\nFoo\nBar\nEOT\nindented = <<EOT\n    Foo\n      Bar\n  EOT\nsuffix = <<EOT\n    NOT EOT\n  EOT\ngaps = <<EOT\nFoo\n\nBar\nEOT\n';
    assert.deepEqual(run(text), { basic: 'Foo\nBar\n', indented: '    Foo\n      Bar\n', suffix: '    NOT EOT\n', gaps: 'Foo\n\nBar\n' });
  });

  it('heredoc (flush): the least indentation is removed, interpolations count as content, tabs count as one', () => {
    const text = [
      'indented = <<-EOT',
      '    Foo',
      '    Bar',
      '  EOT',
      'more = <<-EOT',
      '    Foo',
      '      Bar',
      '    Baz',
      '  EOT',
      'less = <<-EOT',
      '    Foo',
      '  Bar',
      '  EOT',
      'interp = <<-EOT',
      '    Foo',
      '      ${x}',
      '  EOT',
      'interp_less = <<-EOT',
      '    Foo',
      '  ${y}',
      '  EOT',
      'tabs = <<-EOT',
      '\tFoo',
      '  Bar',
      '  EOT',
      'gaps = <<-EOT',
      '    Foo',
      '',
      '    Bar',
      '  EOT',
      '',
    ].join('\n');
    const out = run(`locals {\n  x = "Bar"\n  y = "  Bar"\n}\n${text.replaceAll('${x}', '${local.x}').replaceAll('${y}', '${local.y}')}`, { variables: true });
    assert.deepEqual(
      out,
      { indented: 'Foo\nBar\n', more: 'Foo\n  Bar\nBaz\n', less: '  Foo\nBar\n', interp: 'Foo\n  Bar\n', interp_less: '  Foo\n  Bar\n', tabs: 'Foo\n Bar\n', gaps: 'Foo\n\nBar\n' },
    );
  });

  it('comments: hash, slash and multi-line comments are ignored (hash_comment, slash_comment, multiline_comment)', () => {
    assert.deepEqual(run('# one\na = 1 # two\n// three\nb = 2 // four\n/* five\n six */\nc = /* seven */ 3\n'), { a: 1, b: 2, c: 3 });
  });

  it('empty: an empty file is an empty body', () => {
    assert.deepEqual(run(''), {});
  });
});

describe('specsuite: structure', () => {
  it('attributes/singleline_bad: two arguments on one line are refused at the comma', () => {
    assert.deepEqual(problems('a = "a value", b = "b value"\n'), ['t.hcl:1:14: Missing newline after argument; An argument definition must end with a newline; found ",".']);
  });

  it('attributes/unexpected: a block body where an argument was expected is refused', () => {
    assert.match(problems('a = {\n  b = 1\n} c\n')[0] as string, /^t\.hcl:3:3: Missing newline after argument/);
  });

  it('blocks/single_oneline and single_empty_oneline: `a { b = "foo" }` and `a {}` are blocks', () => {
    assert.deepEqual(run('a { b = "foo" }\nc {}\n'), { a: [{ b: 'foo' }], c: [{}] });
  });

  it('blocks/single_oneline_invalid: two arguments, a brace on the next line, or a nested block on one line are refused', () => {
    assert.deepEqual(problems('a { b = "foo", c = "bar" }\n'), ['t.hcl:1:14: Invalid single-argument block definition; A single-line block definition must end with a closing brace immediately after its single argument definition.']);
    assert.match(problems('a { b = "foo"\n}\n')[0] as string, /^t\.hcl:1:14: Invalid single-argument block definition/);
    assert.match(problems('a { d {} }\n')[0] as string, /^t\.hcl:1:5: Invalid single-argument block definition/);
  });

  it('blocks/single_unclosed: a block without its closing brace is refused at the end', () => {
    assert.match(problems('a {\n  b = 1\n')[0] as string, /^t\.hcl:3:1: Unclosed configuration block/);
  });

  it('HCL v1 leniency (volume specs, as Nomad reads them): nested one-line blocks and quoted names', () => {
    assert.deepEqual(run('topology { segments { rack = "R1", "zone" = "z" } }\n', { lenient: true }), { topology: [{ segments: [{ rack: 'R1', zone: 'z' }] }] });
  });

  it('labelled blocks nest by label, repeated blocks make a list', () => {
    assert.deepEqual(run('job "a" {\n  group "g" {\n    x = 1\n  }\n  group "g" {\n    x = 2\n  }\n}\n'), { job: { a: [{ group: { g: [{ x: 1 }, { x: 2 }] } }] } });
  });

  it('an argument set twice is refused at the second', () => {
    assert.deepEqual(problems('a = 1\na = 2\n'), ['t.hcl:2:1: Attribute redefined; The argument "a" was already set at t.hcl:1:1. Each argument may be set only once.']);
  });
});

describe('templates', () => {
  it('interpolation converts numbers and bools; a template of one interpolation keeps its type', () => {
    assert.deepEqual(run('locals {\n  n = 3\n}\na = "x${local.n}-${true}"\nb = "${local.n}"\nc = "${[1, 2]}"\n', { variables: true }), { a: 'x3-true', b: 3, c: [1, 2] });
  });

  it('escapes: $${ and %%{ are literal, backslash escapes and \\u are decoded', () => {
    assert.equal(value('"$${HOME} %%{x} \\t\\"\\u00e9\\U0001F600"'), '${HOME} %{x} \t"é😀');
  });

  it('%{if}/%{else}/%{endif} and %{for} directives, with ~ strip markers', () => {
    assert.equal(value('"%{ if 1 > 2 }yes%{ else }no%{ endif }"'), 'no');
    assert.equal(value('"%{ for i, v in ["a", "b"] }${i}=${v};%{ endfor }"'), '0=a;1=b;');
    assert.equal(run('v = <<EOT\n%{ for x in [1, 2] ~}\n  [${x}]\n%{~ endfor ~}\n\nEnd\nEOT\n')['v'], '[1][2]End\n');
  });

  it('a null or a list inside a string template is one clear error', () => {
    assert.deepEqual(problems('v = "a${null}"\n'), ['t.hcl:1:9: Invalid template interpolation value; The expression result is null. Cannot include a null value in a string template.']);
    assert.match(problems('v = "a${[1]}"\n')[0] as string, /string required, not a list/);
  });
});

describe('collections, for expressions and splats', () => {
  it('tuples, objects with identifier, quoted and computed keys, nested access', () => {
    assert.deepEqual(value('{ a = 1, "b-c" = [10, 20], (upper("k")) = { d = true } }'), { a: 1, 'b-c': [10, 20], K: { d: true } });
    assert.equal(value('{ a = [{ b = "x" }] }.a[0].b'), 'x');
    assert.equal(value('[10, 20, 30][1]'), 20);
    assert.equal(value('{ a = 1 }["a"]'), 1);
    assert.equal(value('[[1, 2], [3]].1.0'), 3, 'legacy index syntax');
  });

  it('for expressions: lists, objects, if filters, grouping with ...', () => {
    assert.deepEqual(value('[for x in [1, 2, 3] : x * 10 if x != 2]'), [10, 30]);
    assert.deepEqual(value('{ for k, v in { b = 2, a = 1 } : upper(k) => v }'), { A: 1, B: 2 });
    assert.deepEqual(value('[for k, v in { b = 2, a = 1 } : k]'), ['a', 'b'], 'object keys in cty order');
    assert.deepEqual(value('{ for s in ["ax", "ay", "bz"] : substr(s, 0, 1) => s... }'), { a: ['ax', 'ay'], b: ['bz'] });
    assert.match(problems('v = { for s in ["a", "a"] : s => 1 }\n')[0] as string, /^t\.hcl:1:29: Duplicate object key/);
  });

  it('splats: [*] and .* take attributes (and indexes) of each element; null gives [], one value a list of one', () => {
    assert.deepEqual(value('[{ a = { b = 1 } }, { a = { b = 2 } }][*].a.b'), [1, 2]);
    assert.deepEqual(value('[{ a = 1 }, { a = 2 }].*.a'), [1, 2]);
    assert.deepEqual(value('[{ a = [5, 6] }][*].a[1]'), [6]);
    assert.deepEqual(value('null[*]'), []);
    assert.deepEqual(value('{ a = 1 }[*].a'), [1]);
  });

  it('missing attributes and indexes are errors at their position', () => {
    assert.deepEqual(problems('v = { a = 1 }.b\n'), ['t.hcl:1:15: Unsupported attribute; This object does not have an attribute named "b".']);
    assert.deepEqual(problems('v = [1, 2][5]\n'), ['t.hcl:1:12: Invalid index; The given key does not identify an element in this collection value: the list has 2 elements.']);
  });
});

describe('functions', () => {
  it('calls with ... expansion; unknown functions and wrong arity are refused', () => {
    assert.equal(value('max([3, 9, 2]...)'), 9);
    assert.equal(value('format("%s-%03d", "web", 7)'), 'web-007');
    assert.deepEqual(problems('v = nope(1)\n'), ['t.hcl:1:5: Call to unknown function; There is no function named "nope" (see "Coming from Nomad" in the README for the functions Berth provides).']);
    assert.match(problems('v = upper()\n')[0] as string, /^t\.hcl:1:5: Not enough function arguments; Function "upper" expects 1 argument\(s\); missing: str\.$/);
    assert.match(problems('v = upper(1, 2)\n')[0] as string, /^t\.hcl:1:14: Too many function arguments/);
  });

  it('string functions', () => {
    assert.deepEqual(
      [value('upper("ab")'), value('title("hello world")'), value('trimspace("  x ")'), value('replace("a-b-c", "-", "+")'), value('replace("a1b22", "/[0-9]+/", "#")'), value('split(",", "a,b")'), value('join("-", ["a"], ["b", "c"])')],
      ['AB', 'Hello World', 'x', 'a+b+c', 'a#b#', ['a', 'b'], 'a-b-c'],
    );
    assert.deepEqual([value('substr("hello", 1, 3)'), value('strlen("héllo")'), value('indent(2, "a\\nb")'), value('chomp("x\\n\\n")'), value('trimprefix("v1.2", "v")')], ['ell', 5, 'a\n  b', 'x', '1.2']);
    assert.deepEqual(value('regex("(?P<major>\\\\d+)\\\\.(\\\\d+)", "v1.22")'), { major: '1' });
    assert.deepEqual(value('regexall("[a-z]+", "ab 12 cd")'), ['ab', 'cd']);
    assert.deepEqual(value('formatlist("%s=%d", ["a", "b"], [1, 2])'), ['a=1', 'b=2']);
  });

  it('collection and numeric functions', () => {
    assert.deepEqual(value('concat([1], [2, 3])'), [1, 2, 3]);
    assert.deepEqual(value('merge({ a = 1 }, { b = 2, a = 3 })'), { a: 3, b: 2 });
    assert.deepEqual([value('lookup({ a = 1 }, "b", 7)'), value('contains(["x"], "x")'), value('length({ a = 1, b = 2 })'), value('element(["a", "b"], 3)')], [7, true, 2, 'b']);
    assert.deepEqual([value('keys({ b = 1, a = 2 })'), value('values({ b = 1, a = 2 })'), value('range(3)'), value('range(1, 7, 2)')], [['a', 'b'], [2, 1], [0, 1, 2], [1, 3, 5]]);
    assert.deepEqual([value('flatten([[1, [2]], 3])'), value('distinct([1, 1, 2])'), value('sort(["b", "a"])'), value('zipmap(["a"], [1])'), value('chunklist([1, 2, 3], 2)')], [[1, 2, 3], [1, 2], ['a', 'b'], { a: 1 }, [[1, 2], [3]]]);
    assert.deepEqual([value('ceil(1.2)'), value('floor(1.8)'), value('abs(-3)'), value('pow(2, 10)'), value('parseint("ff", 16)'), value('signum(-4)'), value('min(3, 1)')], [2, 1, 3, 1024, 255, -1, 1]);
    assert.deepEqual([value('coalesce("", "b")'), value('compact(["a", "", null])'), value('setproduct(["a"], [1, 2])'), value('slice([1, 2, 3], 1, 3)'), value('reverse([1, 2])')], ['b', ['a'], [['a', 1], ['a', 2]], [2, 3], [2, 1]]);
  });

  it('encoding: json, yaml, base64, csv, url', () => {
    assert.equal(value('jsonencode({ b = [1, true], a = null })'), '{"a":null,"b":[1,true]}');
    assert.deepEqual(value('jsondecode("{\\"a\\": [1, \\"x\\"]}")'), { a: [1, 'x'] });
    assert.equal(value('yamlencode({ a = [1, "x"] })'), 'a:\n  - 1\n  - x\n');
    assert.deepEqual(value('yamldecode("a: 1\\nb: [x]")'), { a: 1, b: ['x'] });
    assert.deepEqual([value('base64encode("hi")'), value('base64decode("aGk=")'), value('urlencode("a b&c")')], ['aGk=', 'hi', 'a+b%26c']);
    assert.deepEqual(value('csvdecode("a,b\\n1,\\"x,y\\"\\n")'), [{ a: '1', b: 'x,y' }]);
  });

  it('hashes, UUIDs, network and dates', () => {
    assert.equal(value('sha256("abc")'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    assert.equal(value('md5("abc")'), '900150983cd24fb0d6963f7d28e17f72');
    assert.equal(value('uuidv5("dns", "www.example.com")'), '2ed6657d-e927-568b-95e1-2665a8aea6a2');
    assert.match(String(value('uuidv4()')), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual([value('cidrhost("10.12.112.0/20", 16)'), value('cidrhost("10.12.112.0/20", -2)'), value('cidrnetmask("172.16.0.0/12")'), value('cidrsubnet("172.16.0.0/12", 4, 2)'), value('cidrsubnet("fd00:fd12:3456:7890::/56", 16, 162)')], [
      '10.12.112.16',
      '10.12.127.254',
      '255.240.0.0',
      '172.18.0.0/16',
      'fd00:fd12:3456:7800:a200::/72',
    ]);
    assert.deepEqual(value('cidrsubnets("10.1.0.0/16", 4, 4, 8, 4)'), ['10.1.0.0/20', '10.1.16.0/20', '10.1.32.0/24', '10.1.48.0/20']);
    assert.equal(value('formatdate("DD MMM YYYY hh:mm ZZZ", "2018-01-02T23:12:01Z")'), '02 Jan 2018 23:12 UTC');
    assert.equal(value('formatdate("EEEE, h:mmaa", "2018-01-02T23:12:01-08:00")'), 'Tuesday, 23:12pm');
    assert.equal(value('timeadd("2017-11-22T00:00:00Z", "10m")'), '2017-11-22T00:10:00Z');
    assert.equal(value('timeadd("2017-11-22T00:00:00+01:00", "-1h30m")'), '2017-11-21T22:30:00+01:00');
  });

  it('try, can and convert', () => {
    assert.equal(value('try({ a = 1 }.b, "fallback")'), 'fallback');
    assert.deepEqual([value('can([1][3])'), value('can([1][0])')], [false, true]);
    assert.deepEqual(value('convert(["1", "2"], list(number))'), [1, 2]);
  });

  it('a function that refuses its argument names the parameter and points at the argument', () => {
    assert.deepEqual(problems('v = cidrhost("nonsense", 1)\n'), ['t.hcl:1:14: Invalid function argument; Invalid value for "prefix" parameter: invalid CIDR address: nonsense.']);
  });
});

describe('run-time references stay as Nomad leaves them', () => {
  it('node, attr, meta, env, NOMAD_*, BERTH_* and CSI_ENDPOINT references are kept as ${...} text', () => {
    const out = run('a = "${node.unique.id}-${attr.kernel.name}"\nb = "--endpoint=${CSI_ENDPOINT}"\nc = "${env["HOME"]}/${NOMAD_ALLOC_DIR}"\nd = "${meta.rack}${BERTH_NODE_ID}"\n');
    assert.deepEqual(out, { a: '${node.unique.id}-${attr.kernel.name}', b: '--endpoint=${CSI_ENDPOINT}', c: '${env["HOME"]}/${NOMAD_ALLOC_DIR}', d: '${meta.rack}${BERTH_NODE_ID}' });
  });
});

describe('syntax errors', () => {
  it('one diagnostic, at the first mistake, saying what was expected', () => {
    assert.deepEqual(problems('a = \n'), ['t.hcl:1:5: Invalid expression; Expected the start of an expression, but found a newline.']);
    assert.deepEqual(problems('a = "abc\n'), ['t.hcl:1:5: Unterminated template string; No closing marker was found for the string.']);
    assert.deepEqual(problems('a = [1, 2\n'), ['t.hcl:2:1: Missing item separator; Expected a comma to mark the beginning of the next item.']);
    assert.deepEqual(problems('a = "\\q"\n'), ['t.hcl:1:6: Invalid escape sequence; The symbol "q" is not a valid escape sequence selector.']);
    assert.deepEqual(problems('a = <<EOT\nno end\n'), ['t.hcl:3:1: Unterminated template string; No closing marker "EOT" was found for this heredoc.']);
    assert.deepEqual(problems('block "x" "y\n'), ['t.hcl:1:11: Unterminated template string; No closing marker was found for the string.']);
  });
});

describe('the README', () => {
  it('lists exactly the functions the engine provides', async () => {
    const { readFileSync } = await import('node:fs');
    const { FUNCTION_NAMES } = await import('./index.js');
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const line = /^- \*\*Functions\*\*[^\n]*\n((?: {2}[^\n]*\n)+)/m.exec(readme);
    assert.ok(line, 'the Functions item of "The job language"');
    const listed = [...(line[1] as string).matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1]);
    assert.deepEqual(listed, [...FUNCTION_NAMES]);
  });
});

describe('the pipeline stages', () => {
  it('each stage is a value a test can print: tokens, then a tree whose nodes carry their ranges', async () => {
    const { scan, parseConfig } = await import('./index.js');
    assert.deepEqual(
      scan('t.hcl', 'a = "x${b}"\n').tokens.map((t) => t.kind),
      ['ident', '=', 'oquote', 'lit', 'interp', 'ident', '}', 'cquote', 'newline', 'eof'],
    );
    const { body } = parseConfig('t.hcl', 'port = 80 + 1\n');
    const expr = body.attributes[0]!.expr;
    assert.equal(expr.kind, 'binary');
    assert.deepEqual(expr.kind === 'binary' ? [expr.op, expr.opRange.start.column, expr.right.range.start.column, expr.range.end.column] : [], ['+', 11, 13, 14]);
  });
});
