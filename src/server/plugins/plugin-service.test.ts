// The plugin service's watcher skips writes that concern no plugin job; these
// tests hold it to the rows a user reads at /v1/plugin/csi: a plugin job's
// changes still show, after unrelated registrations and after the job stops
// running a plugin task.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import { eventually } from '../../../test/support/eventually.js';
import { JobService } from '../jobs/index.js';
import { SqliteStateStore } from '../state/index.js';
import { PluginService } from './plugin-service.js';

let dir: string;
let store: SqliteStateStore;
let jobs: JobService;
let plugins: PluginService;

const task = { name: 't', driver: 'exec', resources: { cpuMhz: 5, memoryMb: 10 } };
const pluginJob = (count: number, withPlugin = true): Record<string, unknown> => ({
  id: 'hp',
  groups: [{ name: 'g', count, tasks: [{ ...task, ...(withPlugin ? { csiPlugin: { id: 'hostpath', type: 'node', mountDir: '/csi' } } : {}) }] }],
});
const plainJob = (id: string): Record<string, unknown> => ({ id, groups: [{ name: 'g', tasks: [task] }] });

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-plugins-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
  plugins = new PluginService({ store });
  await plugins.start();
});
afterEach(async () => {
  await plugins.stop();
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('plugin rows follow the jobs that run plugins', () => {
  it('a plugin job changed after unrelated registrations still changes its plugin row', async () => {
    await jobs.register(pluginJob(2));
    await eventually('the plugin expects 2 node instances', () => plugins.get('hostpath')?.nodesExpected === 2 || undefined);
    for (let i = 0; i < 5; i++) await jobs.register(plainJob(`web-${i}`));
    await jobs.register(pluginJob(3));
    await eventually('the plugin expects 3 node instances', () => plugins.get('hostpath')?.nodesExpected === 3 || undefined);
  });

  it('a job that stops running its plugin task takes the plugin row with it', async () => {
    await jobs.register(pluginJob(1));
    await eventually('the plugin row exists', () => plugins.get('hostpath'));
    await jobs.register(pluginJob(1, false));
    await eventually('the plugin row is gone', () => (plugins.get('hostpath') === undefined ? true : undefined));
  });
});
