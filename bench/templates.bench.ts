// Templates (section `templates` of `npm run bench`):
//
// 1. Parsing and rendering a 27-line consul-template style template (env,
//    range over a parsed JSON map, if/else, printf, toJSON): parse alone,
//    render alone, p50/p99 over many runs.
// 2. A re-render cycle as the template hook does it when a source changes:
//    read the source, parse, render, compare, write the destination
//    atomically (tmp + rename). Detecting the change adds at most the hook's
//    poll interval (1 s by default), not measured here.

import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadTemplateEngine, TemplateHook } from '../src/client/template/index.js';
import { TaskEnvBuilder, taskEnvDirs } from '../src/client/taskenv/index.js';
import { summarize, timeNs } from './_stats.js';

const TEMPLATE = `# app.conf for {{ env "NOMAD_TASK_NAME" }} ({{ env "NOMAD_ALLOC_ID" }})
{{- $cfg := parseJSON (env "APP_CONFIG") }}
[server]
listen = "{{ envOrDefault "LISTEN" "0.0.0.0:8080" }}"
workers = {{ $cfg.workers }}
{{- if gt $cfg.workers 4.0 }}
mode = "large"
{{- else if gt $cfg.workers 1.0 }}
mode = "medium"
{{- else }}
mode = "small"
{{- end }}

[upstreams]
{{- range $name, $u := $cfg.upstreams }}
{{ $name }} = {{ printf "%q" $u.addr }} # weight {{ $u.weight }}
{{- end }}

[features]
{{- range $i, $f := split "," (env "FEATURES") }}
feature_{{ $i }} = "{{ $f | trimSpace | toUpper }}"
{{- end }}

[raw]
json = {{ toJSON $cfg.upstreams }}
generated = "{{ timestamp "2006-01-02" }}"
`;

const ALLOC_ID = '5f0c1d2e-0000-4000-8000-000000000000';
const TASK_ENV = {
  APP_CONFIG: JSON.stringify({ workers: 3, upstreams: Object.fromEntries(Array.from({ length: 10 }, (_x, i) => [`svc${i}`, { addr: `10.0.0.${i}:80`, weight: i }])) }),
  FEATURES: 'alpha, beta, gamma',
};
const ENV = { NOMAD_TASK_NAME: 'web', NOMAD_ALLOC_ID: ALLOC_ID, ...TASK_ENV };

export default async function templates(dir: string): Promise<Record<string, unknown>> {
  const { GoTemplate } = await loadTemplateEngine();
  const fenv = { env: ENV, readFile: () => '', now: () => Date.now() };
  for (let i = 0; i < 200; i++) GoTemplate.parse(TEMPLATE, { name: 'app.conf' }).render(fenv);
  const parseSamples: bigint[] = [];
  const renderSamples: bigint[] = [];
  const tmpl = GoTemplate.parse(TEMPLATE, { name: 'app.conf' });
  for (let i = 0; i < 2000; i++) {
    parseSamples.push(await timeNs(async () => GoTemplate.parse(TEMPLATE, { name: 'app.conf' })));
    renderSamples.push(await timeNs(async () => tmpl.render(fenv)));
  }
  const parse = summarize(parseSamples);
  const render = summarize(renderSamples);
  const bytes = tmpl.render(fenv).length;
  console.log(`  parse a ${TEMPLATE.split('\n').length}-line template   p50 ${parse.p50Us} us  p99 ${parse.p99Us} us`);
  console.log(`  render it (${bytes} bytes)         p50 ${render.p50Us} us  p99 ${render.p99Us} us`);

  // The hook's cycle: source changed -> destination rewritten.
  const allocDir = path.join(dir, 'alloc1');
  const taskDir = { dir: path.join(allocDir, 'web'), localDir: path.join(allocDir, 'web', 'local'), secretsDir: path.join(allocDir, 'web', 'secrets'), tmpDir: path.join(allocDir, 'web', 'tmp'), sharedDir: path.join(allocDir, 'alloc'), sharedTaskDir: path.join(allocDir, 'web', 'alloc'), logsDir: path.join(allocDir, 'alloc', 'logs') };
  mkdirSync(taskDir.localDir, { recursive: true });
  const source = path.join(dir, 'app.tpl');
  const hook = new TemplateHook({
    templates: [{ source, destination: 'local/app.conf', changeMode: 'noop', splay: '0s', perms: '644', leftDelimiter: '{{', rightDelimiter: '}}', env: false, errorOnMissingKey: false }],
    taskDir,
    allocDir,
  });
  // The task's environment as the task runner builds it (client/taskenv).
  const taskEnv = new TaskEnvBuilder({
    alloc: { id: ALLOC_ID, jobId: 'bench', taskGroup: 'g' },
    job: { id: 'bench' },
    group: { name: 'g' },
    task: { name: 'web', env: TASK_ENV, meta: {}, resources: { cpuMhz: 100, memoryMb: 64 } },
    node: { id: 'node1', name: 'node1', datacenter: 'dc1', attributes: {}, meta: {} },
    ...taskEnvDirs(taskDir, 'none'),
  }).build();
  const cycles: bigint[] = [];
  for (let i = 0; i < 500; i++) {
    writeFileSync(source, `${TEMPLATE}# revision ${i}\n`);
    cycles.push(await timeNs(() => hook.prestart({ env: {}, mounts: [], taskEnv })));
  }
  const cycle = summarize(cycles.slice(50));
  console.log(`  re-render cycle (read, parse, render, write)  p50 ${cycle.p50Us} us  p99 ${cycle.p99Us} us`);
  return {
    parse: { p50Us: parse.p50Us, p99Us: parse.p99Us },
    render: { p50Us: render.p50Us, p99Us: render.p99Us, bytes },
    rerenderCycle: { p50Us: cycle.p50Us, p99Us: cycle.p99Us },
    templateLines: TEMPLATE.split('\n').length,
  };
}
