import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { renderTemplate, sprintf } from './go-template.js';

describe('Go templates (-t)', () => {
  const jobs = [
    { ID: 'web', Status: 'running', JobSummary: { Summary: { web: { Running: 2 } } }, Datacenters: ['dc1', 'dc2'] },
    { ID: 'batch', Status: 'dead', JobSummary: { Summary: {} }, Datacenters: ['dc1'] },
  ];

  it('ranges over a list with fields, pipes, printf and trimming', () => {
    const out = renderTemplate('{{range .}}{{.ID}} {{.Status | printf "%-8s"}}|{{ len .Datacenters }}\n{{- "\\n" }}{{end}}', jobs);
    assert.equal(out, 'web running |2\nbatch dead    |1\n');
  });

  it('takes variables, index, if/else if/else and maps in key order', () => {
    const tpl = '{{range $i, $j := .}}{{if eq $j.ID "web"}}W{{else if eq $j.Status "dead"}}D{{else}}?{{end}}{{$i}}{{end}} {{index . 0 "ID"}} {{range $k, $v := (index . 0).JobSummary.Summary}}{{$k}}={{$v.Running}}{{end}}';
    assert.equal(renderTemplate(tpl, jobs), 'W0D1 web web=2');
  });

  it('prints values as Go does and refuses an unknown function by name', () => {
    assert.equal(renderTemplate('{{.}}', { a: [1, 'x'], b: null }), 'map[a:[1 x] b:<no value>]');
    assert.equal(renderTemplate('{{with .Missing}}x{{else}}none{{end}}', {}), 'none');
    assert.throws(() => renderTemplate('{{json .}}', {}), /function "json" not defined/);
    assert.throws(() => renderTemplate('{{if .}}x', {}), /missing \{\{end\}\}/);
    assert.equal(sprintf('%05d %q %.2f %5s|', [42, 'a', 1.5, 'ab']), '00042 "a" 1.50    ab|');
  });
});
