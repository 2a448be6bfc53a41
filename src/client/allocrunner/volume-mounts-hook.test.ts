// A volume bound into a raw_exec task's directory (real binds; tests run as
// root): bound once however often the task starts, bound again when a start
// made the directory and died before the bind, and undone by postrun.

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { silentLogger } from '../../lib/index.js';
import { mountHelper, type TaskDir } from '../allocdir/index.js';
import type { PrestartRequest, RunnerDriver } from '../taskrunner/index.js';
import type { AllocHookContext } from './alloc-hook.js';
import type { AllocRunnerRecord } from './alloc-records.js';
import { VolumeBindsHook, VolumeMountsTaskHook } from './volume-mounts-hook.js';

const root = mkdtempSync(path.join(tmpdir(), 'berth-volbind-'));
after(async () => {
  await mountHelper().request({ op: 'unmount', root });
  rmSync(root, { recursive: true, force: true });
});

const mountsAt = (dir: string): number => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.split(' ')[4] === dir).length;

function taskDir(name: string): TaskDir {
  const dir = path.join(root, name, 'task');
  mkdirSync(path.join(dir, 'local'), { recursive: true });
  return {
    dir,
    localDir: path.join(dir, 'local'),
    secretsDir: path.join(dir, 'secrets'),
    tmpDir: path.join(dir, 'tmp'),
    sharedDir: path.join(root, name, 'alloc'),
    logsDir: path.join(root, name, 'alloc', 'logs'),
    sharedTaskDir: path.join(dir, 'alloc'),
  };
}

describe('volume binds of a driver without mounts (raw_exec)', () => {
  it('binds the volume at local/<destination> once across starts, again after a start died between mkdir and bind, and postrun undoes it', async () => {
    const source = path.join(root, 'volume');
    mkdirSync(source);
    writeFileSync(path.join(source, 'data.txt'), 'kept');
    const td = taskDir('a1');
    const record = { binds: [] as string[] } as AllocRunnerRecord;
    const hook = new VolumeMountsTaskHook({
      task: { name: 'main', volumeMounts: [{ volume: 'data', destination: '/data', readOnly: false }] } as never,
      driver: { capabilities: { mountConfigs: 'none' } } as RunnerDriver,
      taskDir: td,
      volumes: new Map([['data', { source, readOnly: false }]]),
      record,
      save: () => undefined,
    });
    const req = (): PrestartRequest => ({ env: {}, mounts: [], taskEnv: { interpolate: (s: string) => s } as never });
    const target = path.join(td.localDir, 'data');

    await hook.prestart(req());
    assert.equal(readFileSync(path.join(target, 'data.txt'), 'utf8'), 'kept', 'the task sees the volume');
    await hook.prestart(req());
    assert.equal(mountsAt(target), 1, 'a second start does not stack a second bind');

    const ctx = { record, save: () => undefined } as unknown as AllocHookContext;
    await new VolumeBindsHook(silentLogger()).postrun(ctx);
    assert.equal(mountsAt(target), 0);
    assert.deepEqual(record.binds, []);

    // A start that made the directory and died before binding: the next start binds.
    mkdirSync(target);
    await hook.prestart(req());
    assert.equal(readFileSync(path.join(target, 'data.txt'), 'utf8'), 'kept');
    await new VolumeBindsHook(silentLogger()).postrun(ctx);
  });
});
