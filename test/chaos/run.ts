// `npm run chaos`: the long chaos run (test/chaos/_harness.ts says what it
// does). CHAOS_SEED replays a run, CHAOS_CYCLES sets the number of cycles
// (default 100), CHAOS_CLUSTERS picks dev, pair or both (default dev,pair).
// Prints every cycle, then the figures and the violations; exits 1 on any
// violation.

import { closeDockerRig } from '../support/docker.js';
import { formatReport, runChaos, type ClusterKind } from './_harness.js';

const seed = process.env['CHAOS_SEED'] ? Number(process.env['CHAOS_SEED']) : Math.floor(Math.random() * 2 ** 31);
const cycles = Number(process.env['CHAOS_CYCLES'] ?? 100);
const clusters = (process.env['CHAOS_CLUSTERS'] ?? 'dev,pair').split(',').filter(Boolean) as ClusterKind[];
if (!Number.isInteger(seed) || !Number.isInteger(cycles) || cycles < 1 || clusters.some((c) => c !== 'dev' && c !== 'pair')) {
  process.stderr.write('usage: CHAOS_SEED=<integer> CHAOS_CYCLES=<n >= 1> CHAOS_CLUSTERS=dev,pair npm run chaos\n');
  process.exit(2);
}
const report = await runChaos({ seed, cycles, clusters });
process.stdout.write(`\n${formatReport(report)}\n`);
await closeDockerRig();
process.exit(report.violations.length ? 1 : 0);
