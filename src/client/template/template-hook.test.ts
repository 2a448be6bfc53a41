// The template hook under a real task runner (real processes through the test
// kit's ProcessDriver, a real SQLite client state) and a manual clock for
// the watch interval and the splay.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import { parseJobSpec, type Allocation, type ServiceRegistration, type TaskTemplate } from '../../structs/index.js';
import { AllocDir } from '../allocdir/index.js';
import { SqliteClientStateStore } from '../state/index.js';
import { TaskRunner } from '../taskrunner/index.js';
import { ProcessDriver } from '../../../test/support/process-driver.js';
import { eventually } from '../../../test/support/eventually.js';
import { loadTemplateEngine, TemplateHook } from './index.js';
import { ServiceCatalog } from './service-catalog.js';

interface Setup {
  dir: string;
  runner: TaskRunner;
  /** A second runner of the same task, as an agent restarted on the same state would build. */
  again: () => TaskRunner;
  clock: ManualClock;
  source: string;
  dest: string;
  events: () => string[];
}

async function setup(t: TestContext, command: string[], templates: (source: string) => Record<string, unknown>[], firstSource = '', fileRoots?: string[], services?: ServiceCatalog): Promise<Setup> {
  const dir = mkdtempSync(path.join(tmpdir(), 'btpl-'));
  const source = path.join(dir, 'app.tpl');
  writeFileSync(source, firstSource);
  const store = SqliteClientStateStore.open(path.join(dir, 'client.db'));
  const job = parseJobSpec({ id: 'web', groups: [{ name: 'g', tasks: [{ name: 'main', driver: 'raw_exec', config: { command: command[0], args: command.slice(1) }, templates: templates(source) }] }] });
  const task = job.groups[0]!.tasks[0]!;
  const alloc = { id: `a${Math.random().toString(16).slice(2, 10)}`, jobId: 'web', taskGroup: 'g', index: 0, nodeId: 'node-7' } as Allocation;
  const allocDir = new AllocDir({ root: path.join(dir, 'allocs'), allocId: alloc.id });
  await allocDir.build(['main']);
  const driver = new ProcessDriver();
  const clock = new ManualClock(Date.UTC(2024, 0, 1));
  const taskDir = allocDir.task('main');
  const make = (): TaskRunner => {
    const hook = new TemplateHook({ templates: task.templates as TaskTemplate[], taskDir, allocDir: allocDir.dir, fileRoots, clock, splayPick: (max) => max / 2, services, namespace: 'default' });
    return new TaskRunner({
      alloc, task, jobType: job.type, restartPolicy: job.groups[0]!.restart, driver, taskDir, allocDir: allocDir.dir, store,
      hooks: [hook], onChange: () => undefined, killTimeoutMs: 2_000, clock,
    });
  };
  const runners = [make()];
  const runner = runners[0]!;
  t.after(async () => {
    for (const r of runners) await r.kill('test over');
    driver.killAll();
    store.close();
    await allocDir.destroy();
    rmSync(dir, { recursive: true, force: true });
  });
  const events = (): string[] => runner.state().events.map((e) => `${e.type}: ${e.message}`);
  const again = (): TaskRunner => {
    runners.push(make());
    return runners.at(-1)!;
  };
  return { dir, runner, again, clock, source, dest: path.join(taskDir.localDir, 'app.conf'), events };
}

const ALLOC_ID_TEMPLATE = 'alloc={{ env "NOMAD_ALLOC_ID" }} v=1\n';

describe('TemplateHook', () => {
  it('loads the template language at first use, once: every later call gets the same module', async () => {
    const first = loadTemplateEngine();
    assert.equal(loadTemplateEngine(), first);
    const { GoTemplate, parseEnvFile } = await first;
    assert.equal(GoTemplate.parse('port={{ env "PORT" }}', { name: 'app.conf' }).render({ env: { PORT: '8080' }, readFile: () => '', now: () => 0 }), 'port=8080');
    assert.deepEqual(parseEnvFile('A=1\n'), { A: '1' });
  });

  it('renders before the task starts; a changed source is rendered again and, after the splay, restarts the task', async (t) => {
    const s = await setup(t, ['sleep', '1000'], (source) => [{ source, destination: 'local/app.conf', splay: '2s', perms: '640' }], ALLOC_ID_TEMPLATE);
    await s.runner.start();
    assert.equal(s.runner.state().state, 'running');
    assert.match(readFileSync(s.dest, 'utf8'), /^alloc=a[0-9a-f]+ v=1\n$/);
    assert.equal(statSync(s.dest).mode & 0o777, 0o640);

    writeFileSync(s.source, 'alloc={{ env "NOMAD_ALLOC_ID" }} v=2\n');
    s.clock.advance(1000);
    await eventually('the template rendered again', () => s.events().some((e) => e.startsWith('Template Rendered: Template "local/app.conf"')));
    assert.match(readFileSync(s.dest, 'utf8'), / v=2\n$/);
    assert.equal(s.runner.state().restarts, 0, 'not restarted before the splay ran out');
    s.clock.advance(1000);
    await eventually('the restart', () => s.runner.state().restarts === 1 && s.runner.state().state === 'running');
    assert.ok(s.events().includes('Restart Signaled: Restart requested: template "local/app.conf" changed'), s.events().join('\n'));
  });

  it('signals the task with change_signal, and leaves it alone with noop', async (t) => {
    const marker = path.join(tmpdir(), `btpl-hup-${process.pid}-${Date.now()}`);
    t.after(() => rmSync(marker, { force: true }));
    const s = await setup(
      t,
      ['sh', '-c', `trap 'cp app.conf ${marker}' HUP; touch ready; while :; do sleep 0.1; done`],
      (source) => [
        { source, destination: 'local/app.conf', changeMode: 'signal', changeSignal: 'SIGHUP', splay: '0s' },
        { data: 'static', destination: 'local/static.conf', changeMode: 'noop', splay: '0s' },
      ],
      'level=info\n',
    );
    await s.runner.start();
    await eventually('the trap set', () => existsSync(path.join(path.dirname(s.dest), 'ready')));
    writeFileSync(s.source, 'level=debug\n');
    s.clock.advance(1000);
    await eventually('the task to see SIGHUP with the new file', () => existsSync(marker) && readFileSync(marker, 'utf8') === 'level=debug\n');
    assert.equal(s.runner.state().restarts, 0);
    assert.ok(s.events().includes('Signaling: Task being sent SIGHUP: template "local/app.conf" changed'), s.events().join('\n'));
  });

  it('renders again only when a file it read changes, never for the clock alone', async (t) => {
    const s = await setup(t, ['sleep', '1000'], () => [{ data: '{{ file "local/seed.txt" | trimSpace }} at {{ timestamp "15:04:05" }}', destination: 'local/app.conf', changeMode: 'noop' }]);
    const seed = path.join(path.dirname(s.dest), 'seed.txt');
    writeFileSync(seed, 'one\n');
    await s.runner.start();
    assert.equal(readFileSync(s.dest, 'utf8'), 'one at 00:00:00');
    await s.clock.waitForSleepers(1);
    for (let i = 0; i < 3; i++) {
      await s.clock.advance(1000);
      // The watch loop sleeps again once it has checked this tick.
      await s.clock.waitForSleepers(1);
    }
    assert.equal(readFileSync(s.dest, 'utf8'), 'one at 00:00:00', 'the timestamp alone does not render it again');
    writeFileSync(seed, 'two\n');
    s.clock.advance(1000);
    await eventually('the new seed rendered', () => readFileSync(s.dest, 'utf8') === 'two at 00:00:04');
    assert.equal(s.runner.state().restarts, 0, 'noop');
  });

  it('keeps the last good file when a re-render fails, and says why', async (t) => {
    const s = await setup(t, ['sleep', '1000'], (source) => [{ source, destination: 'local/app.conf', splay: '0s' }], 'good\n');
    await s.runner.start();
    writeFileSync(s.source, 'line one\n{{ if }}');
    s.clock.advance(1000);
    await eventually('the failure event', () => s.events().some((e) => e.startsWith('Setup Failure: template "local/app.conf"')));
    assert.ok(s.events().includes('Setup Failure: template "local/app.conf": template: local/app.conf:2:7: missing value for if'), s.events().join('\n'));
    assert.equal(readFileSync(s.dest, 'utf8'), 'good\n');
    assert.equal(s.runner.state().restarts, 0);
  });

  it('fails the task without starting it, and without retrying, for a template that can never render', async (t) => {
    const s = await setup(t, ['sleep', '1000'], () => [
      { data: 'x', destination: 'local/ok.conf' },
      { data: 'y', destination: '../../../../etc/berth-escape.conf' },
    ]);
    await s.runner.start();
    await eventually('the task to fail', () => s.runner.state().state === 'dead');
    assert.equal(s.runner.state().failed, true);
    assert.ok(s.events().some((e) => e === 'Setup Failure: template "../../../../etc/berth-escape.conf": destination escapes the allocation directory'), s.events().join('\n'));
    assert.ok(!s.events().some((e) => e.startsWith('Started')), 'never started');
    assert.ok(!existsSync('/etc/berth-escape.conf'));
  });

  it('reads a source only inside the allocation or the node\'s file roots', async (t) => {
    const s = await setup(t, ['sleep', '1000'], (source) => [{ source, destination: 'local/app.conf' }], 'secret\n', ['/srv/releases']);
    await s.runner.start();
    await eventually('the task to fail', () => s.runner.state().state === 'dead');
    const why = `Setup Failure: template "local/app.conf": source ${s.source} is outside the directories this node lets jobs read (client.file_roots in the agent config: /srv/releases)`;
    assert.ok(s.events().includes(why), s.events().join('\n'));
    assert.ok(!existsSync(s.dest));
  });

  it('never lets file follow a symlink out of the allocation', async (t) => {
    const s = await setup(t, ['sleep', '1000'], () => [{ data: '{{ file "local/link" }}', destination: 'local/app.conf' }]);
    symlinkSync('/etc/hostname', path.join(path.dirname(s.dest), 'link'));
    await s.runner.start();
    await eventually('the render to fail', () => s.events().some((e) => e.includes('local/link is outside the allocation directory')));
    assert.ok(!existsSync(s.dest));
  });

  it('after an agent restart, acts on a source that changed while the agent was down', async (t) => {
    const s = await setup(t, ['sleep', '1000'], (source) => [{ source, destination: 'local/app.conf', splay: '0s' }], 'v=1\n');
    await s.runner.start();
    s.runner.detach();
    writeFileSync(s.source, 'v=2\n');
    const back = s.again();
    assert.equal(await back.restore(), 'running');
    back.resume();
    await s.clock.waitForSleepers(1);
    await s.clock.advance(1000);
    await eventually('the restart', () => back.state().restarts === 1 && back.state().state === 'running');
    assert.equal(readFileSync(s.dest, 'utf8'), 'v=2\n');
  });

  it("after an agent restart, acts on a service's instances that changed while the agent was down", async (t) => {
    // The server's side of GET /v1/service/:name: its instances, and a blocking read that answers once they change.
    let index = 1;
    let ports = [8001];
    let changed = (): void => undefined;
    const registration = (port: number): ServiceRegistration => ({
      id: `r${port}`, serviceName: 'api', namespace: 'default', nodeId: 'node-7', datacenter: 'dc1', jobId: 'api', allocId: `a${port}`,
      tags: [], meta: {}, address: '127.0.0.1', port, createIndex: 1, modifyIndex: index,
    });
    const catalog = new ServiceCatalog({
      fetchInstances: async (_name, q) => {
        if (q.index !== undefined && q.index >= index) {
          await new Promise<void>((resolve) => {
            changed = resolve;
            q.signal.addEventListener('abort', () => resolve(), { once: true });
          });
        }
        return { index, instances: ports.map(registration) };
      },
      fetchNames: async () => ({ index: 1, services: [] }),
    });
    t.after(() => catalog.stop());
    const s = await setup(t, ['sleep', '1000'], () => [{ data: '{{ range nomadService "api" }}{{ .Port }} {{ end }}', destination: 'local/app.conf', changeMode: 'noop' }], '', undefined, catalog);
    await s.runner.start();
    assert.equal(readFileSync(s.dest, 'utf8'), '8001 ');
    s.runner.detach();
    ports = [8001, 8002];
    index = 2;
    changed();
    await eventually('the catalog to see the change', () => catalog.version('default\0api\0')?.includes('8002') === true);
    const back = s.again();
    assert.equal(await back.restore(), 'running');
    back.resume();
    await s.clock.waitForSleepers(1);
    await s.clock.advance(1000);
    await eventually('the template rendered again', () => readFileSync(s.dest, 'utf8') === '8001 8002 ');
  });
});
