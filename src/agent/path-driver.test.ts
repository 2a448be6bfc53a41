import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import type { AnyTaskHandle, TaskConfig, TaskDriver } from '../client/index.js';
import { withPathDirs, writeBerthShim } from './path-driver.js';

/** A driver that records what reaches it; only the members the test calls do anything. */
class RecordingDriver {
  readonly name = 'recording';
  readonly cgroups = 'none' as const;
  readonly started: TaskConfig[] = [];
  readonly expected: number[] = [];
  readonly networks: string[] = [];
  #shutdowns = 0;
  startTask(cfg: TaskConfig): Promise<AnyTaskHandle> {
    this.started.push(cfg);
    return Promise.resolve({ taskId: cfg.id } as unknown as AnyTaskHandle);
  }
  expectStarts(count: number): void {
    this.expected.push(count);
  }
  createNetwork(allocId: string): Promise<{ path: string }> {
    this.networks.push(allocId);
    return Promise.resolve({ path: `/var/run/netns/${allocId}` });
  }
  shutdown(): Promise<void> {
    this.#shutdowns++;
    return Promise.resolve();
  }
  get shutdowns(): number {
    return this.#shutdowns;
  }
}

function task(env: Record<string, string>): TaskConfig {
  return { id: 'a1.web', env } as unknown as TaskConfig;
}

test('withPathDirs puts its dirs in front of PATH, and leaves a PATH the task set', async () => {
  const inner = new RecordingDriver();
  const driver = withPathDirs(inner as unknown as TaskDriver, ['/opt/a', '/opt/b']);
  await driver.startTask(task({ HOME: '/x' }));
  await driver.startTask(task({ PATH: '/mine' }));
  assert.match(inner.started[0]!.env['PATH']!, /^\/opt\/a:\/opt\/b:\/usr\/local\/sbin:/);
  assert.equal(inner.started[0]!.env['HOME'], '/x');
  assert.equal(inner.started[1]!.env['PATH'], '/mine');
});

test('withPathDirs passes on every other member, optional ones and private state included', async () => {
  const inner = new RecordingDriver();
  const driver = withPathDirs(inner as unknown as TaskDriver, ['/opt/a']);
  assert.equal(driver.name, 'recording');
  driver.expectStarts?.(7);
  assert.deepEqual(inner.expected, [7]);
  assert.deepEqual(await driver.createNetwork?.('a1', 'host'), { path: '/var/run/netns/a1' });
  assert.deepEqual(inner.networks, ['a1']);
  // A method the inner driver lacks stays absent, so `?.` callers skip it.
  assert.equal(driver.renewLeases, undefined);
  await driver.shutdown();
  assert.equal(inner.shutdowns, 1);
});

test('writeBerthShim writes a script that runs the given file with this node', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-shim-'));
  try {
    const script = path.join(dir, 'say.js');
    writeFileSync(script, 'console.log(process.argv.slice(2).join(" "));\n');
    const shimDir = writeBerthShim(path.join(dir, 'bin'), script);
    assert.match(readFileSync(path.join(shimDir, 'berth'), 'utf8'), /^#!\/bin\/sh\n/);
    assert.equal(execFileSync(path.join(shimDir, 'berth'), ["it's", 'here']).toString(), "it's here\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
