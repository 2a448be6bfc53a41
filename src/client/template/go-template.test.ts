import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FunctionEnv } from './index.js';
import { GoTemplate } from './go-template.js';

// Go's text/template semantics, as a consul-template user writes templates.

const ENV: FunctionEnv = {
  env: { NOMAD_ALLOC_ID: '5f0c', NOMAD_TASK_NAME: 'web', LIST: 'a,b,c' },
  readFile: (p) => {
    if (p === 'local/seed.txt') return 'seed\n';
    throw new Error(`open ${p}: no such file`);
  },
  now: () => Date.UTC(2024, 0, 2, 3, 4, 5),
};

const render = (src: string, data: unknown = undefined, opts: { errorOnMissingKey?: boolean; leftDelimiter?: string; rightDelimiter?: string } = {}): string =>
  GoTemplate.parse(src, { name: 'local/app.conf', ...opts }).render(ENV, data);
const fails = (src: string, message: string, data: unknown = undefined, opts: { errorOnMissingKey?: boolean } = {}): void =>
  assert.throws(() => render(src, data, opts), (err: Error) => {
    assert.equal(err.message, message);
    return true;
  });

describe('Go templates as consul-template renders them', () => {
  it('reads the task environment with env', () => {
    assert.equal(render('alloc={{ env "NOMAD_ALLOC_ID" }} task={{ env "NOMAD_TASK_NAME" }} none={{ env "UNSET" }}.'), 'alloc=5f0c task=web none=.');
    assert.equal(render('{{ envOrDefault "UNSET" "dflt" }}'), 'dflt');
    fails('{{ mustEnv "UNSET" }}', 'template: local/app.conf:1:4: executing at <mustEnv "UNSET">: error calling mustEnv: environment variable UNSET is not set');
  });

  it('trims whitespace around {{- and -}} and drops comments', () => {
    assert.equal(render('a  \n {{- "b" -}} \n\t c'), 'abc');
    assert.equal(render('x {{- /* a comment */ -}} y'), 'xy');
    assert.equal(render('x {{/* kept spaces */}} y'), 'x  y');
    // A dash without a space is a negative number, not a trim marker.
    assert.equal(render('a {{-3}} b'), 'a -3 b');
  });

  it('ranges over maps in sorted key order, over lists with their index, and over integers', () => {
    const data = { m: { zeta: 1, alpha: 2, mid: 3 }, l: ['x', 'y'] };
    assert.equal(render('{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}', data), 'alpha=2;mid=3;zeta=1;');
    assert.equal(render('{{ range .m }}{{ . }}{{ end }}', data), '231');
    assert.equal(render('{{ range $i, $e := .l }}{{ $i }}:{{ $e }} {{ end }}', data), '0:x 1:y ');
    assert.equal(render('{{ range $i := 3 }}{{ if eq $i 1 }}{{ continue }}{{ end }}{{ $i }}{{ end }}'), '02');
    assert.equal(render('{{ range .l }}{{ if eq . "y" }}{{ break }}{{ end }}{{ . }}{{ end }}', data), 'x');
    assert.equal(render('{{ range .none }}x{{ else }}empty{{ end }}', data), 'empty');
    assert.equal(render('{{ range split "," (env "LIST") }}[{{ . }}]{{ end }}'), '[a][b][c]');
  });

  it('chains else if and else with', () => {
    const t = '{{ if eq .n 1 }}one{{ else if eq .n 2 }}two{{ else if eq .n 3 }}three{{ else }}many{{ end }}';
    assert.deepEqual([1, 2, 3, 9].map((n) => render(t, { n })), ['one', 'two', 'three', 'many']);
    assert.equal(render('{{ with .a }}a={{ . }}{{ else with .b }}b={{ . }}{{ else }}none{{ end }}', { b: 'B' }), 'b=B');
  });

  it('scopes variables to their control structure and lets = assign an outer one', () => {
    assert.equal(render('{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ $y := 3 }}{{ $y }}{{ end }}{{ $x }}'), '32');
    fails('{{ if true }}{{ $y := 3 }}{{ end }}{{ $y }}', 'template: local/app.conf:1:39: undefined variable "$y"');
    assert.equal(render('{{ range $i, $e := .l }}{{ end }}{{ $ }}', { l: [1] }), 'map[l:[1]]');
  });

  it('prints "<no value>" for a missing key, or fails with error_on_missing_key', () => {
    assert.equal(render('[{{ .a.b }}] [{{ index .a "b" }}] [{{ print .zz }}]', { a: {} }), '[<no value>] [<nil>] [<nil>]');
    fails('{{ .a.b }}', 'template: local/app.conf:1:4: executing at <.a.b>: map has no entry for key "b"', { a: {} }, { errorOnMissingKey: true });
  });

  it('defines, calls and overrides named templates', () => {
    assert.equal(render('{{ define "item" }}<{{ . }}>{{ end }}{{ template "item" "a" }}{{ template "item" 2 }}'), '<a><2>');
    assert.equal(render('{{ block "b" "x" }}[{{ . }}]{{ end }}'), '[x]');
    assert.equal(render('{{ define "t" }}{{ .n }}{{ end }}{{ executeTemplate "t" (parseJSON `{"n":7}`) }}'), '7');
    // Without a pipeline the named template gets no data, as dot does at the top.
    assert.equal(render('{{ . }}|{{ define "x" }}[{{ . }}]{{ end }}{{ template "x" }}'), '<no value>|[<no value>]');
    const fact = '{{ define "fact" }}{{ if gt . 0 }}{{ . }} {{ template "fact" (subtract 1 .) }}{{ end }}{{ end }}{{ template "fact" 3 }}';
    assert.equal(render(fact), '3 2 1 ');
    fails('{{ define "loop" }}{{ template "loop" }}{{ end }}{{ template "loop" }}', 'template: local/app.conf:1:23: executing at <template "loop">: exceeded maximum template depth (1000)');
    fails('{{ template "nope" }}', 'template: local/app.conf:1:4: executing at <template "nope">: no such template "nope"');
  });

  it('has Go comparison, logic and formatting builtins', () => {
    assert.equal(render('{{ and 1 0 2 }} {{ or 0 "" "z" }} {{ not 0 }} {{ ne 1 2 }} {{ lt 1 2 }} {{ ge "b" "a" }} {{ eq 2 1 2 }}'), '0 z true true true true true');
    assert.equal(render('{{ len "héllo" }} {{ len .l }} {{ index .l 1 }} {{ slice "hello" 1 3 }} {{ slice .l 1 }}', { l: [1, 2, 3] }), '6 3 2 el [2 3]');
    assert.equal(render('{{ printf "%05.2f|%-4d|%q|%x|%v|%t|%5s" 3.14159 42 "s" "hi" 1.5 true "r" }}'), '03.14|42  |"s"|6869|1.5|true|    r');
    assert.equal(render('{{ print 1 2 "a" 3 }}{{ println "x" 1 }}'), '1 2a3x 1\n');
    assert.equal(render('{{ printf "%d" "s" }} {{ printf "%s" }}'), '%!d(string=s) %!s(MISSING)');
    fails('{{ eq 1 "1" }}', 'template: local/app.conf:1:4: executing at <eq 1 "1">: error calling eq: incompatible types for comparison');
    fails('{{ index .l 5 }}', 'template: local/app.conf:1:4: executing at <index .l 5>: error calling index: index out of range: 5', { l: [1] });
  });

  it('pipes the previous value as the last argument, as consul-template functions expect', () => {
    assert.equal(render('{{ "a.b" | replaceAll "." "_" | toUpper }}'), 'A_B');
    assert.equal(render('{{ subtract 2 5 }} {{ 10 | divide 3 }} {{ add 1 2 }} {{ multiply 2 3 }} {{ modulo 2 5 }}'), '3 3 3 6 1');
    assert.equal(render('{{ split "," "a,b" | join ";" }} {{ "  x " | trimSpace }} {{ "xxhixx" | trim "x" }} {{ "a-b" | trimPrefix "a-" }}'), 'a;b x hi b');
    assert.equal(render('{{ if "a,b" | contains "b" }}yes{{ end }} {{ "foo bar" | toTitle }} {{ "hi" | base64Encode }} {{ "aGk=" | base64Decode }}'), 'yes Foo Bar aGk= hi');
    assert.equal(render('{{ indent 2 "a\\nb\\n\\nc" }}'), '  a\n  b\n\n  c');
    assert.equal(render('{{ range loop 2 4 }}{{ . }}{{ end }} {{ "x" | sha256Hex | printf "%.8s" }}'), '23 2d711642');
  });

  it('encodes and decodes JSON and YAML as Go does (sorted keys, escaped HTML)', () => {
    assert.equal(render('{{ toJSON (parseJSON `{"b":"<x>","a":[1,2.5]}`) }}'), '{"a":[1,2.5],"b":"\\u003cx\\u003e"}');
    assert.equal(render('{{ toJSONPretty (parseJSON `{"b":1,"a":2}`) }}'), '{\n  "a": 2,\n  "b": 1\n}');
    assert.equal(render('{{ toYAML (parseJSON `{"b":1,"a":[2,3]}`) }}'), 'a:\n- 2\n- 3\nb: 1');
    assert.equal(render('{{ (parseYAML "k: v").k }}'), 'v');
  });

  it('formats timestamps with Go layouts from the given clock', () => {
    assert.equal(render('{{ timestamp }}|{{ timestamp "unix" }}|{{ timestamp "Mon Jan _2 15:04:05 2006" }}'), '2024-01-02T03:04:05Z|1704164645|Tue Jan  2 03:04:05 2024');
  });

  it('reads files through the sandbox it is given', () => {
    assert.equal(render('{{ file "local/seed.txt" | trimSpace }}'), 'seed');
    fails('{{ file "/etc/shadow" }}', 'template: local/app.conf:1:4: executing at <file "/etc/shadow">: error calling file: open /etc/shadow: no such file');
  });

  it('takes other delimiters', () => {
    assert.equal(render('[[ env "NOMAD_TASK_NAME" ]] {{ kept }}', null, { leftDelimiter: '[[', rightDelimiter: ']]' }), 'web {{ kept }}');
  });

  it('refuses what it cannot render, with the line and column', () => {
    fails('line one\n{{ key "service/config" }}', 'template: local/app.conf:2:4: function "key" reads from Consul, which Berth does not have');
    fails('{{ secret "kv/x" }}', 'template: local/app.conf:1:4: function "secret" reads from Vault, which Berth does not have');
    fails('{{ nosuch 1 }}', 'template: local/app.conf:1:4: function "nosuch" not defined');
    fails('{{ if .x }}open', 'template: local/app.conf:1:16: unexpected EOF: {{if}} has no {{end}}');
    fails('{{ end }}', 'template: local/app.conf:1:4: unexpected {{end}}');
    fails('{{ "unterminated }}', 'template: local/app.conf:1:4: unterminated quoted string');
    fails('{{ .x', 'template: local/app.conf:1:3: unclosed action');
    fails('{{ break }}', 'template: local/app.conf:1:4: {{break}} outside {{range}}');
    fails('{{ nil }}', 'template: local/app.conf:1:4: nil is not a command');
    fails('{{ range 1000000000000 }}{{ end }}', 'template: local/app.conf:1:4: executing at <range 1000000000000>: template runs too long: more than 10000000 steps');
    fails('{{ 3 | printf "%d" | 4 }}', 'template: local/app.conf:1:22: non executable command in pipeline stage 3');
  });
});
