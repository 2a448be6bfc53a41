// The task environment (section `taskenv` of `npm run bench`): what a task
// start pays for client/taskenv, which builds the environment and expands
// run-time `${...}` on every start (before each prestart hook and once for
// the driver config). A task with 20 env values, 20 meta keys at three
// levels, a node of 60 attributes, and a driver config of 50 strings that
// reference NOMAD_*, node and attribute values: p50/p99 of one build, of
// one interpolation of the config, and of both as a start does them.

import { TaskEnvBuilder, taskEnvDirs } from '../src/client/taskenv/index.js';
import { summarize, timeNs } from './_stats.js';

export default async function taskenv(): Promise<Record<string, unknown>> {
  const env: Record<string, string> = {};
  const meta: Record<string, string> = {};
  const attributes: Record<string, string> = {};
  for (let i = 0; i < 20; i++) env[`VAR_${i}`] = i % 2 ? `${'${NOMAD_ALLOC_DIR}'}/v${i}` : `plain-${i}`;
  for (let i = 0; i < 20; i++) meta[`key-${i}`] = `value-${i}`;
  for (let i = 0; i < 60; i++) attributes[`attr.${i}.name`] = `a${i}`;
  const builder = new TaskEnvBuilder({
    alloc: { id: '5b1f0c6e-1111-2222-3333-444455556666', jobId: 'bench', taskGroup: 'g', index: 3 },
    job: { id: 'bench', meta },
    group: { name: 'g', meta },
    task: { name: 't', env, meta, resources: { cpuMhz: 100, memoryMb: 300 } },
    node: { id: 'node-1', name: 'box', datacenter: 'dc1', attributes, meta: { rack: 'r1' } },
    ...taskEnvDirs({ sharedDir: '/a/alloc', localDir: '/a/t/local', secretsDir: '/a/t/secrets' }, 'chroot'),
  });
  const config = {
    command: '${NOMAD_TASK_DIR}/run',
    args: Array.from({ length: 49 }, (_, i) => `--x${i}=${'${NOMAD_ALLOC_ID}'}/${'${node.unique.id}'}/${'${attr.7.name}'}`),
  };
  const figures: Record<string, unknown> = {};
  const measure = async (name: string, fn: () => unknown): Promise<void> => {
    for (let i = 0; i < 200; i++) fn();
    const samples: bigint[] = [];
    for (let i = 0; i < 2000; i++) samples.push(await timeNs(async () => fn()));
    const s = summarize(samples);
    figures[name] = { p50Us: s.p50Us, p99Us: s.p99Us };
    console.log(`  ${name.padEnd(28)} p50 ${s.p50Us} us  p99 ${s.p99Us} us`);
  };
  const built = builder.build({ CSI_ENDPOINT: 'unix:///csi/csi.sock' });
  await measure('build', () => builder.build({ CSI_ENDPOINT: 'unix:///csi/csi.sock' }));
  await measure('interpolate config (50)', () => built.interpolateAll(config));
  await measure('start (2 builds + config)', () => {
    builder.build();
    builder.build({ CSI_ENDPOINT: 'unix:///csi/csi.sock' }).interpolateAll(config);
  });
  return figures;
}
