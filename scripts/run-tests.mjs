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
// and iptables for the bridge network tests. The container tests need Docker:
// scripts/ensure-docker.mjs installs Debian's docker.io, docker-registry and
// busybox-static, and this script starts ONE private dockerd and registry
// (scripts/docker-rig.mjs, under .tmp/) for the whole run, exports it to the
// test processes (BERTH_TEST_DOCKER_HOST, _REGISTRY, _SHARED_DIR; see
// test/support/docker.ts) and stops it at the end, also when the tests fail or
// are interrupted. Where a private dockerd cannot run (not root) the container
// tests skip and say why.
import { spawnSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { mkdtempSync, mkdirSync } from 'node:fs';
import { findFiles, transpileAll } from './transpile-tests.mjs';
import { dockerUnavailable, startDockerRig } from './docker-rig.mjs';

const root = new URL('..', import.meta.url).pathname;

/** The test files below `dir`, relative to the repository. */
const find = (dir) => findFiles(dir, (name) => name.endsWith('.test.ts')).map((p) => relative(root, p));

const etcd = spawnSync(process.execPath, [join(root, 'scripts', 'ensure-etcd.mjs')], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
if (etcd.status !== 0) process.exit(etcd.status ?? 1);

for (const script of ['ensure-chromium.mjs', 'ensure-shells.mjs', 'ensure-cni.mjs', 'ensure-docker.mjs']) {
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
// longest first, and the unit tests known as short in a lane of their own beside those two
// (BERTH_TEST_LIGHT_CONCURRENCY, 1; see that file); with them (a name pattern, a
// reporter...) Node's own runner does, in name order.
const concurrency = Number(process.env['BERTH_TEST_CONCURRENCY'] ?? 2);
const files = [...find(join(root, 'src')), ...find(join(root, 'test'))].sort();
const extra = process.argv.slice(2);
const args = extra.length === 0
  ? ['--import', loader, join(root, 'scripts', 'test-runner.mjs'), ...files]
  : ['--import', loader, '--test', `--test-concurrency=${concurrency}`, ...extra, ...files];

// The suite's one docker rig. A Ctrl-C reaches the test processes (same process
// group) and ends the run; this process ignores it so that it still stops the rig.
let rig;
const noDocker = dockerUnavailable();
if (noDocker) {
  console.error(`run-tests: the container tests will skip: ${noDocker}`);
} else {
  mkdirSync(join(root, '.tmp'), { recursive: true });
  rig = await startDockerRig({ dir: mkdtempSync(join(root, '.tmp', 'docker-rig-')) });
  rig.unref();
}
const env = rig
  ? { ...process.env, BERTH_TEST_DOCKER_HOST: rig.host, BERTH_TEST_DOCKER_REGISTRY: rig.registry, BERTH_TEST_DOCKER_SHARED_DIR: rig.sharedDir }
  : process.env;
const ignore = () => {};
process.on('SIGINT', ignore);
process.on('SIGTERM', ignore);
let status = 1;
try {
  const run = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit', env });
  status = run.status ?? 1;
} finally {
  await rig?.stop();
}
process.exit(status);
