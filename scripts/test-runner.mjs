// The test runner proper, started by scripts/run-tests.mjs as
// `node --import scripts/test-loader.mjs scripts/test-runner.mjs FILE...` (the
// files each run in their own process, which inherits the `--import`). Node's own
// `node --test FILE...` sorts the files by name, so a long scenario that sorts
// late started last and ran alone at the end; here the files start longest
// first (the times in scripts/test-times.json; a file not listed there is taken
// as short and runs after the listed ones), which keeps every lane busy to the
// end. BERTH_TEST_TIMES_UPDATE=1 writes this run's times back to that file: each
// file's whole time in its process, from start to exit.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';

const root = new URL('..', import.meta.url).pathname;
const timesFile = join(root, 'scripts', 'test-times.json');
const concurrency = Number(process.env['BERTH_TEST_CONCURRENCY'] ?? 2);
const files = process.argv.slice(2);

function readTimes() {
  try {
    return JSON.parse(readFileSync(timesFile, 'utf8'));
  } catch {
    return {};
  }
}

const known = readTimes();
const order = [...files].sort((a, b) => (known[b] ?? 0) - (known[a] ?? 0) || a.localeCompare(b));

const stream = run({ files: order.map((f) => join(root, f)), concurrency });
let failed = false;
const seconds = {};
// Every failure once more at the very end, so the last lines of a long run (all
// a CI log may keep) name what failed and where.
const failures = [];
stream.on('test:fail', (data) => {
  failed = true;
  if (data.details?.error?.failureType === 'subtestsFailed') return;
  const cause = data.details?.error?.cause ?? data.details?.error;
  const message = String(cause?.message ?? cause ?? '').split('\n').slice(0, 6).join('\n#     ');
  failures.push(`# ${data.file ? relative(root, data.file) : '?'}: ${data.name}\n#     ${message}`);
});
// A file's own completion (its name is its path) times the whole file: its process's start,
// top-level hooks (a cluster's start and stop) and tests, which is what it holds a lane for.
stream.on('test:complete', (data) => {
  if (data.nesting !== 0 || !data.file || data.name !== data.file) return;
  seconds[relative(root, data.file)] = data.details.duration_ms / 1000;
});
stream.on('end', () => {
  if (process.env['BERTH_TEST_TIMES_UPDATE'] === '1') {
    const merged = { ...known };
    for (const [f, s] of Object.entries(seconds)) merged[f] = Math.round(s * 10) / 10;
    const sorted = Object.fromEntries(Object.entries(merged).filter(([f]) => files.includes(f)).sort((a, b) => b[1] - a[1]));
    writeFileSync(timesFile, `${JSON.stringify(sorted, null, 1)}\n`);
  }
  process.exitCode = failed ? 1 : 0;
});
const reporter = process.stdout.isTTY ? new spec() : tap;
const out = stream.compose(reporter);
out.pipe(process.stdout, { end: false });
out.on('end', () => {
  if (failures.length === 0) return;
  process.stdout.write(`# ${failures.length} failed:\n${failures.join('\n')}\n`);
});
