// Runs every test file (unit tests beside the code in src/, scenarios in
// test/) through node:test. Builds dist/ first (about a second): every Berth
// process the tests start (bin/berth.js: agents, plugin tasks, the CLI) runs
// the compiled build. Then transpiles the TypeScript of src/ and test/ to
// .tmp/test-js/ (scripts/transpile-tests.mjs, about two seconds, only what
// changed on a later run) and runs the test processes under
// scripts/test-loader.mjs, which loads those copies under the sources' own
// paths: tsx, the way to run one file by hand, spent about twice the CPU
// starting each test process. Node 20's test runner does not expand
// globs itself, so the files are found here. Extra arguments are passed on
// (e.g. `npm run test:unit -- --test-name-pattern=probe`). The state store
// tests start real etcd processes: scripts/ensure-etcd.mjs installs Debian's
// etcd-server first when etcd is missing (as root, with apt-get); the web UI
// tests drive a real headless browser: scripts/ensure-chromium.mjs installs
// Debian's chromium the same way, scripts/ensure-shells.mjs zsh and fish
// for the shell-completion tests, and scripts/ensure-cni.mjs the CNI plugins
// and iptables for the bridge network tests.
import { spawnSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { findFiles, transpileAll } from './transpile-tests.mjs';

const root = new URL('..', import.meta.url).pathname;

/** The test files below `dir`, relative to the repository. */
const find = (dir) => findFiles(dir, (name) => name.endsWith('.test.ts')).map((p) => relative(root, p));

const etcd = spawnSync(process.execPath, [join(root, 'scripts', 'ensure-etcd.mjs')], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
if (etcd.status !== 0) process.exit(etcd.status ?? 1);

for (const script of ['ensure-chromium.mjs', 'ensure-shells.mjs', 'ensure-cni.mjs']) {
  const ensured = spawnSync(process.execPath, [join(root, 'scripts', script)], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
  if (ensured.status !== 0) process.exit(ensured.status ?? 1);
}

const build = spawnSync(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

// The test files and what they import, transpiled once for every test process (see
// scripts/test-loader.mjs: tsx spent seconds of CPU in each one).
await transpileAll();
const loader = pathToFileURL(join(root, 'scripts', 'test-loader.mjs')).href;

// Two files at once. Files run in their own processes and pick free ports, their own temp
// dirs, bridge names, subnets and netns prefixes, so more can share the machine, and the
// scenarios mostly wait; but at four on two cores three scenarios (a rolling update's
// revert, a leader SIGKILL mid-release, a partition) missed their deadlines in one run
// out of one. BERTH_TEST_CONCURRENCY overrides the number (4 is faster on an idle
// machine; 1 to debug). Without extra arguments scripts/test-runner.mjs runs the files,
// longest first; with them (a name pattern, a reporter...) Node's own runner does, in
// name order.
const concurrency = Number(process.env['BERTH_TEST_CONCURRENCY'] ?? 2);
const files = [...find(join(root, 'src')), ...find(join(root, 'test'))].sort();
const extra = process.argv.slice(2);
const args = extra.length === 0
  ? ['--import', loader, join(root, 'scripts', 'test-runner.mjs'), ...files]
  : ['--import', loader, '--test', `--test-concurrency=${concurrency}`, ...extra, ...files];
const run = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
process.exit(run.status ?? 1);
