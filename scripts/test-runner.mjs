// The test runner proper, started by scripts/run-tests.mjs as
// `node --import scripts/test-loader.mjs scripts/test-runner.mjs FILE...` (the
// files each run in their own process, which inherits the `--import`). Node's own
// `node --test FILE...` sorts the files by name, so a long scenario that sorts
// late started last and ran alone at the end; here the files start longest
// first (the times in scripts/test-times.json; a file not listed there is taken
// as a middling scenario in test/, as short in src/), which keeps every lane busy
// to the end. BERTH_TEST_TIMES_UPDATE=1 writes this run's times back to that file: each
// file's whole time in its process, from start to exit.
//
// Two kinds of lanes. The scenarios (test/) start agents, etcd, plugins and
// browsers and mostly wait on them; they run BERTH_TEST_CONCURRENCY (2) at a
// time, as before. The unit tests beside the code (src/) that test-times.json
// knows as short (LIGHT_MAX_S or less) hold few processes or none, and end in a
// second or three: they run in a lane of their own beside the scenarios
// (BERTH_TEST_LIGHT_CONCURRENCY, 1; 0 puts them back in the scenarios' lanes),
// so that ninety short files no longer queue behind the scenarios for a lane.
// That lane adds at most one short CPU-bound process to the machine at a time:
// unlike a third scenario lane (at four scenario lanes, three scenarios missed
// their deadlines on two cores), it starts nothing that competes for long. A
// unit test that grows past LIGHT_MAX_S moves back to the scenarios' lanes at the
// next BERTH_TEST_TIMES_UPDATE=1 run; a file not yet timed stays there.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { PassThrough } from 'node:stream';
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

/** A unit test known short (seconds in test-times.json) runs in the light lane; BERTH_TEST_LIGHT_MAX_S to try another bound. */
const LIGHT_MAX_S = Number(process.env['BERTH_TEST_LIGHT_MAX_S'] ?? 3);
const lightConcurrency = Number(process.env['BERTH_TEST_LIGHT_CONCURRENCY'] ?? 1);

const known = readTimes();
// A scenario not timed yet (a new file in test/) is taken as a middling one, so that it does
// not start last and hold a lane alone at the end; a new unit test as short.
const scenarioTimes = Object.entries(known).filter(([f]) => f.startsWith('test/')).map(([, s]) => s).sort((a, b) => a - b);
const middling = scenarioTimes[Math.floor(scenarioTimes.length / 2)] ?? 0;
const expected = (f) => known[f] ?? (f.startsWith('test/') ? middling : 0);
const order = [...files].sort((a, b) => expected(b) - expected(a) || a.localeCompare(b));
const isLight = (f) => lightConcurrency > 0 && f.startsWith('src/') && known[f] !== undefined && known[f] <= LIGHT_MAX_S;
const lanes = [
  { files: order.filter((f) => !isLight(f)), concurrency },
  { files: order.filter(isLight), concurrency: lightConcurrency },
]
  .filter((lane) => lane.files.length > 0)
  .map((lane) => run({ files: lane.files.map((f) => join(root, f)), concurrency: lane.concurrency }));

// One stream of events for the reporter, from both kinds of lanes (each event is
// one object, so their lines interleave whole); it ends when every lane has. Each
// lane closes with its counts ("tests 120", "fail 0"...): they are added up into
// one summary for the whole run (the duration is the longest lane's).
const stream = new PassThrough({ objectMode: true });
const totals = new Map();
const COUNT = /^(tests|suites|pass|fail|cancelled|skipped|todo|duration_ms) (\d+(?:\.\d+)?)$/;
let open = lanes.length;
for (const lane of lanes) {
  lane.on('data', (event) => {
    const count = event.type === 'test:diagnostic' && event.data.nesting === 0 ? COUNT.exec(event.data.message) : null;
    if (!count) return stream.write(event);
    const [, name, value] = count;
    totals.set(name, name === 'duration_ms' ? Math.max(totals.get(name) ?? 0, Number(value)) : (totals.get(name) ?? 0) + Number(value));
  });
  lane.on('end', () => {
    open -= 1;
    if (open > 0) return;
    for (const [name, value] of totals) stream.write({ type: 'test:diagnostic', data: { nesting: 0, message: `${name} ${value}` } });
    stream.end();
  });
}
let failed = false;
const seconds = {};
// Every failure once more at the very end, so the last lines of a long run (all
// a CI log may keep) name what failed and where.
const failures = [];
const onEach = (type, listener) => {
  for (const lane of lanes) lane.on(type, listener);
};
onEach('test:fail', (data) => {
  failed = true;
  if (data.details?.error?.failureType === 'subtestsFailed') return;
  const cause = data.details?.error?.cause ?? data.details?.error;
  const message = String(cause?.message ?? cause ?? '').split('\n').slice(0, 6).join('\n#     ');
  failures.push(`# ${data.file ? relative(root, data.file) : '?'}: ${data.name}\n#     ${message}`);
});
// A file's own completion (its name is its path) times the whole file: its process's start,
// top-level hooks (a cluster's start and stop) and tests, which is what it holds a lane for.
onEach('test:complete', (data) => {
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
