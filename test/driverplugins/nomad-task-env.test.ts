// What a Nomad task-driver plugin finds when Berth is its host, end to end
// through the CLI: a client agent whose plugin_dir holds the test kit's
// chroot driver (test/support/recording-driver-plugin.ts: FSIsolation =
// chroot, it chroots into the task directory Berth built, records every
// TaskConfig) and `berth driver serve exec` (Berth's own exec over the same
// protocol). On it: the hostpath CSI plugin (built-in raw_exec) and a volume;
// a task on the chroot driver whose `ls /` shows the chroot, whose writes to
// local/, alloc/data and secrets/ land where Nomad puts them, with the CSI
// volume mounted, its output through the FIFOs into the log files, and the
// TaskConfig it received checked field by field; a task of the served exec
// whose output reaches `alloc logs`; a kill -9 of the agent half-way through
// building a chroot, and the restart that finishes it (nothing mounted
// twice, nothing left mounted once the tasks stop); a plugin config its
// schema refuses stops the agent at start with the file, line and field.

import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import { tsPlugin } from '../support/plugin-fixtures.js';
import { cleanupUnder, mountsUnder, until } from '../support/runtime-cluster.js';
import { AgentUnderTest, BERTH, EXAMPLES, REPO, startAgent, tempDir, type Result } from '../agent/_agent.js';

const MGMT = 'nte-mgmt-token-0123456789';
const NODE = 'nte-node-token-0123456789';
const MARKER = `nte-task-${process.pid}`;

function ok(r: Result, what: string, logs?: () => string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}${r.code === 0 || !logs ? '' : logs()}`);
  return r;
}

/** The last `lines` lines of each agent log in `files`, for a failure's message (the logs go with the test's directory). */
function logTails(files: Record<string, string>, lines = 60): string {
  return Object.entries(files)
    .map(([name, file]) => {
      const text = existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n') : '(no log)';
      return `\n--- ${name} (${file}), last ${lines} lines:\n${text}`;
    })
    .join('');
}

function hostpathJob(dataRoot: string): string {
  return readFileSync(path.join(EXAMPLES, 'hostpath-plugin.hcl'), 'utf8')
    .replace('exec berth plugin', `exec '${process.execPath}' '${BERTH}' plugin`)
    .replace('/var/lib/berth/hostpath/', `${dataRoot}/`);
}

const PROBE = `job "probe" {
  type = "batch"
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "shared-data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "probe" {
      driver = "chrootrec"
      user   = "root"
      env {
        GREETING = "hello"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "cat /local/greeting.txt > /local/seen.txt; ls / > /local/root.txt; echo local > /local/l.txt; echo data > /alloc/data/d.txt; echo secret > /secrets/s.txt; echo vol > /data/v.txt; echo to-stdout; echo to-stderr >&2"]
      }
      template {
        data        = "{{ env \\"GREETING\\" }} from {{ env \\"NOMAD_TASK_NAME\\" }}"
        destination = "local/greeting.txt"
      }
      volume_mount {
        volume           = "data"
        destination      = "/data"
        propagation_mode = "host-to-task"
      }
      resources {
        cpu    = 200
        memory = 96
      }
      logs {
        max_files     = 3
        max_file_size = 1
      }
    }
  }
}
`;

const jobOn = (name: string, driver: string, script: string): string => `job "${name}" {
  group "g" {
    task "${name}" {
      driver = "${driver}"
      config {
        command = "/bin/sh"
        args    = ["-c", ${JSON.stringify(script)}]
      }
      resources {
        memory = 64
      }
    }
  }
}
`;

/** Files named `name` under `dir`, recursively. */
function findFiles(dir: string, name: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...findFiles(p, name));
    else if (e.name === name) out.push(p);
  }
  return out;
}

describe('a Nomad chroot driver plugin under Berth: the task directory, the chroot and the whole TaskConfig', { timeout: 420_000 }, () => {
  let dir = '';
  let server: AgentUnderTest;
  let client: AgentUnderTest;
  let clientConfig = '';
  let clientData = '';
  let records = '';

  const startClient = async (env: Record<string, string> = {}): Promise<AgentUnderTest> => {
    const c = new AgentUnderTest(['agent', '--client', '--server-address', server.addr, '--config', clientConfig], { env });
    if (Object.keys(env).length) return c;
    await c.ready(false);
    c.token = MGMT;
    return c;
  };
  const allocOf = async (job: string): Promise<Api.AllocationListStub> =>
    until(`an allocation of ${job}`, async () => (await server.get<Api.AllocationListStub[]>(`/v1/job/${job}/allocations`)).find((a) => a.DesiredStatus === 'run'));
  const allocDirOf = (id: string): string => path.join(clientData, 'client', 'alloc', id);
  // An agent prints its address once registered, before its plugin drivers are launched and
  // fingerprinted; a job run before that finds no healthy driver (seen on a loaded machine).
  const driverHealthy = (name: string): Promise<Api.NodeListStub> =>
    until(
      `the ${name} driver healthy on the node`,
      async () => (await server.get<Api.NodeListStub[]>('/v1/nodes')).find((n) => n.Name === 'nte-client' && n.Status === 'ready' && n.Drivers?.[name]?.Healthy),
      120_000,
    );

  before(async () => {
    dir = await tempDir('nte-');
    clientData = path.join(dir, 'c1');
    records = path.join(dir, 'records');
    const pluginDir = path.join(dir, 'plugins');
    mkdirSync(pluginDir);
    const exec = path.join(pluginDir, 'exec');
    writeFileSync(exec, `#!/bin/sh\nexec '${process.execPath}' '${BERTH}' driver serve exec --state-dir '${path.join(dir, 'drv')}' "$@"\n`);
    chmodSync(exec, 0o755);
    const kit = pathToFileURL(path.join(REPO, 'test', 'support', 'recording-driver-plugin.ts')).href;
    tsPlugin(pluginDir, 'chrootrec', `import { serveRecordingDriver } from '${kit}';\nawait serveRecordingDriver();\n`);
    writeFileSync(path.join(dir, 'server.json'), JSON.stringify({ data_dir: path.join(dir, 'server-data'), ports: { http: 0 }, tokens: { management: [MGMT], node: [NODE] } }));
    server = await startAgent(['--server', '--config', path.join(dir, 'server.json')]).ready(false);
    server.token = MGMT;
    clientConfig = path.join(dir, 'client.json');
    writeFileSync(
      clientConfig,
      JSON.stringify({
        data_dir: clientData,
        ports: { http: 0 },
        plugin_dir: pluginDir,
        plugin: { chrootrec: { config: { record_dir: records } }, exec: { config: {} } },
        client: { node_name: 'nte-client', token: NODE, options: { 'driver.raw_exec.enable': true } },
        csi: { probe_interval: '1s' },
      }),
    );
    client = await startClient();
    await driverHealthy('chrootrec');
    await driverHealthy('exec');
  });

  after(async () => {
    for (const job of ['probe', 'served', 'halfway', 'hostpath-plugin']) await server?.cli(['job', 'stop', '-purge', job]).catch(() => undefined);
    await server?.cli(['volume', 'delete', 'shared-data']).catch(() => undefined);
    await client?.stop('SIGINT').catch(() => undefined);
    await server?.stop('SIGINT').catch(() => undefined);
    // The chroot driver's tasks name their task directory (under dir) on their command line.
    cleanupUnder(dir);
  });

  it('a chroot task sees the chroot; local/, alloc/data, secrets/ and the CSI volume land where Nomad puts them; its output goes through the FIFOs', async () => {
    const hostpathData = path.join(dir, 'hostpath-data');
    writeFileSync(path.join(dir, 'hostpath.hcl'), hostpathJob(hostpathData));
    // Once in ~8 clean-clone CI runs this run has waited 55-60 s for the plugin's allocation to run: the agents' logs say where.
    const agentLogs = (): string => logTails({ server: path.join(dir, 'server-data', 'agent.log'), client: path.join(clientData, 'agent.log') });
    ok(await server.cli(['job', 'run', path.join(dir, 'hostpath.hcl')]), 'job run hostpath', agentLogs);
    await until('the hostpath plugin to be healthy', async () => /Nodes Healthy\s+1\n/.test((await server.cli(['plugin', 'status', 'hostpath'])).stdout), 120_000);
    ok(await server.cli(['volume', 'create', path.join(EXAMPLES, 'volume.hcl')]), 'volume create');
    writeFileSync(path.join(dir, 'probe.hcl'), PROBE);
    ok(await server.cli(['job', 'run', path.join(dir, 'probe.hcl')]), 'job run probe');
    const alloc = await allocOf('probe');
    const done = await until('the probe to complete', async () => {
      const a = await server.get<Api.Allocation>(`/v1/allocation/${alloc.ID}`);
      if (a.ClientStatus === 'failed') throw new Error(`the probe failed: ${JSON.stringify(a.TaskStates)}`);
      return a.ClientStatus === 'complete' ? a : undefined;
    }, 120_000);
    assert.equal(done.ClientStatus, 'complete');

    const allocDir = allocDirOf(alloc.ID);
    const taskDir = path.join(allocDir, 'probe');
    const root = readFileSync(path.join(taskDir, 'local', 'root.txt'), 'utf8').split('\n');
    for (const d of ['alloc', 'bin', 'data', 'etc', 'local', 'proc', 'secrets', 'tmp', 'usr']) assert.ok(root.includes(d), `/${d} inside the chroot (ls / gave ${root.join(' ')})`);
    assert.ok(!root.includes('home') && !root.includes('root') && !root.includes('work'), 'only the chroot, not the host’s /');
    assert.equal(readFileSync(path.join(taskDir, 'local', 'l.txt'), 'utf8'), 'local\n', 'local/ is <alloc>/<task>/local');
    assert.equal(readFileSync(path.join(taskDir, 'local', 'seen.txt'), 'utf8'), 'hello from probe', 'the template was rendered into the task directory before the chroot task started, and the task read it');
    assert.equal(readFileSync(path.join(allocDir, 'alloc', 'data', 'd.txt'), 'utf8'), 'data\n', 'alloc/data is the shared <alloc>/alloc/data');
    assert.equal(readFileSync(path.join(taskDir, 'secrets', 's.txt'), 'utf8'), 'secret\n', 'secrets/ is <alloc>/<task>/secrets');
    const [vol] = findFiles(hostpathData, 'v.txt');
    assert.ok(vol, 'the write to the CSI volume landed in the plugin’s volume');
    assert.equal(readFileSync(vol, 'utf8'), 'vol\n');
    // Output: written by the driver into the host's FIFOs, rotated into the log files by the host's log monitor.
    assert.ok(lstatSync(path.join(allocDir, 'alloc', 'logs', '.probe.stdout.fifo')).isFIFO(), 'StdoutPath is a FIFO');
    const logs = await until('alloc logs to show the output', async () => {
      const r = await server.cli(['alloc', 'logs', alloc.ID, 'probe']);
      return r.stdout.includes('to-stdout') ? r.stdout : undefined;
    });
    assert.match(logs, /to-stdout/);
    assert.equal(readFileSync(path.join(allocDir, 'alloc', 'logs', 'probe.stderr.0'), 'utf8'), 'to-stderr\n');
    // The task is dead: its chroot binds are gone, its files stay until the allocation is collected.
    await until('the chroot binds to be released', () => mountsUnder(taskDir).every((m) => m.startsWith(path.join(taskDir, 'secrets')) || m.startsWith(path.join(taskDir, 'local'))));
  });

  it('the driver got every field of Nomad’s TaskConfig, as a Nomad client fills it', async () => {
    const alloc = await allocOf('probe');
    const node = (await server.get<Api.NodeListStub[]>('/v1/nodes')).find((n) => n.Name === 'nte-client') as Api.NodeListStub;
    const rec = JSON.parse(readFileSync(path.join(records, 'probe.0.json'), 'utf8')) as Record<string, unknown> & {
      env: Record<string, string>;
      resources: { allocated: Record<string, unknown>; linux: Record<string, unknown> };
      mounts: Array<Record<string, unknown>>;
    };
    const allocDir = allocDirOf(alloc.ID);
    assert.equal(rec['id'], `${alloc.ID}.probe.1`, 'ID');
    assert.equal(rec['allocId'], alloc.ID, 'AllocID');
    assert.equal(rec['jobName'], 'probe', 'JobName');
    assert.equal(rec['jobId'], 'probe', 'JobID');
    assert.equal(rec['taskGroupName'], 'g', 'TaskGroupName');
    assert.equal(rec['name'], 'probe', 'Name');
    assert.equal(rec['namespace'], 'default', 'Namespace');
    assert.equal(rec['parentJobId'], '', 'ParentJobID (no parent)');
    assert.equal(rec['nodeName'], 'nte-client', 'NodeName');
    assert.equal(rec['nodeId'], node.ID, 'NodeID');
    assert.equal(rec['user'], 'root', 'User');
    assert.equal(rec['allocDir'], allocDir, 'AllocDir');
    assert.equal(rec['stdoutPath'], path.join(allocDir, 'alloc', 'logs', '.probe.stdout.fifo'), 'StdoutPath');
    assert.equal(rec['stderrPath'], path.join(allocDir, 'alloc', 'logs', '.probe.stderr.fifo'), 'StderrPath');
    assert.equal(rec.env['GREETING'], 'hello', 'Env: the task’s env');
    assert.equal(rec.env['BERTH_ALLOC_ID'], alloc.ID, 'Env: the runtime variables');
    assert.equal(rec.env['BERTH_TASK_DIR'], '/local', 'Env: paths inside the chroot');
    assert.deepEqual(rec['deviceEnv'], {}, 'DeviceEnv (no device reserved)');
    assert.deepEqual(rec['devices'], [], 'Devices (no device reserved)');
    assert.deepEqual(rec['driverConfig'], { command: '/bin/sh', args: (rec['driverConfig'] as { args: string[] }).args }, 'the task config, decoded');
    assert.equal(rec.resources.allocated['cpuShares'], 200, 'NomadResources cpu');
    assert.equal(rec.resources.allocated['memoryMb'], 96, 'NomadResources memory');
    assert.equal(rec.resources.linux['cpuShares'], 200, 'LinuxResources cpu shares');
    assert.equal(rec.resources.linux['memoryLimitBytes'], 96 * 1024 * 1024, 'LinuxResources memory limit');
    assert.ok((rec.resources.linux['percentTicks'] as number) > 0, 'LinuxResources percent ticks');
    const cgroup = rec.resources.linux['cpusetCgroupPath'] as string;
    assert.ok(cgroup.endsWith(`${alloc.ID}.probe`), `the cgroup Berth made for the task (${cgroup})`);
    assert.equal(rec['cgroupJoined'], cgroup, 'the driver’s executor joined it');
    assert.equal(rec.mounts.length, 1, 'Mounts');
    const [m] = rec.mounts;
    assert.equal(m?.['taskPath'], '/data');
    assert.equal(m?.['readonly'], false);
    assert.equal(m?.['propagationMode'], 'host-to-task');
    assert.equal(m?.['requestName'], 'data');
    assert.ok(String(m?.['hostPath']).startsWith(clientData), 'the CSI volume’s publish path on this node');
  });

  it('a task of Berth’s exec served as a plugin writes its output into the host’s FIFOs; alloc logs shows it', async () => {
    writeFileSync(path.join(dir, 'served.hcl'), jobOn('served', 'exec', `echo served-says-hi; echo "$BERTH_TASK_DIR"; while true; do sleep 1; done # ${MARKER}`));
    ok(await server.cli(['job', 'run', path.join(dir, 'served.hcl')]), 'job run served');
    const alloc = await allocOf('served');
    const logs = await until('alloc logs of the served exec task', async () => {
      const r = await server.cli(['alloc', 'logs', alloc.ID, 'served']);
      return r.stdout.includes('served-says-hi') ? r.stdout : undefined;
    }, 120_000);
    assert.match(logs, /served-says-hi\n\/local\n/);
    assert.ok(lstatSync(path.join(allocDirOf(alloc.ID), 'alloc', 'logs', '.served.stdout.fifo')).isFIFO());
    ok(await server.cli(['job', 'stop', 'served']), 'job stop served');
  });

  it('an agent killed (-9) while it builds a chroot: the restart finishes it, nothing mounted twice; stopped, nothing of it stays mounted', async () => {
    // SIGTERM: the agent stops without draining the node (SIGINT would drain it, and the server move its work away).
    await client.stop('SIGTERM');
    const dying = await startClient({ BERTH_TEST_KILL_IN_CHROOT_BUILD: 'halfway' });
    const up = await until('the dying agent to register', () => (/^BERTH_ADDR=/m.test(dying.stdout) ? true : !dying.running ? true : undefined), 60_000);
    assert.ok(up);
    await driverHealthy('chrootrec');
    writeFileSync(path.join(dir, 'halfway.hcl'), jobOn('halfway', 'chrootrec', `ls / > /local/root.txt; while true; do sleep 1; done # ${MARKER}`));
    // `job run` follows the allocation until it runs; that takes the restart below, so it is
    // awaited at the end. Awaited here, it would return only when the server gave up on the
    // dead node (the heartbeat TTL, half a minute), and the restart would always build anew.
    const submitted = server.cli(['job', 'run', path.join(dir, 'halfway.hcl')]);
    const killed = await dying.exited;
    assert.equal(killed.signal, 'SIGKILL', 'the agent killed itself half-way through the chroot');
    const [first] = await server.get<Api.AllocationListStub[]>('/v1/job/halfway/allocations');
    assert.ok(first, 'the allocation the agent was building');
    const firstDir = path.join(allocDirOf(first.ID), 'halfway');
    const half = mountsUnder(firstDir);
    assert.ok(half.includes(path.join(firstDir, 'alloc')), `alloc/ was bound: ${half.join(' ')}`);
    assert.ok(!half.includes(path.join(firstDir, 'usr')), 'the chroot was not finished');
    client = await startClient();
    // The restarted agent finishes that chroot (the allocation restored), or, if the server gave up on the node meanwhile, builds a new one.
    const running = await until('a halfway task to run in a finished chroot', async () => {
      for (const a of await server.get<Api.AllocationListStub[]>('/v1/job/halfway/allocations')) {
        const f = path.join(allocDirOf(a.ID), 'halfway', 'local', 'root.txt');
        if (a.ClientStatus === 'running' && existsSync(f) && readFileSync(f, 'utf8').includes('usr')) return a;
      }
      return undefined;
    }, 120_000);
    const taskDir = path.join(allocDirOf(running.ID), 'halfway');
    assert.match(readFileSync(path.join(taskDir, 'local', 'root.txt'), 'utf8'), /^bin$/m);
    const full = mountsUnder(taskDir);
    assert.equal(new Set(full).size, full.length, `nothing mounted twice: ${full.join(' ')}`);
    assert.ok(full.includes(path.join(taskDir, 'usr')));
    ok(await submitted, 'job run halfway');
    ok(await server.cli(['job', 'stop', 'halfway']), 'job stop halfway');
    for (const d of new Set([taskDir, firstDir])) {
      await until(`the chroot binds under ${d} to be released`, () => mountsUnder(d).every((m) => m.startsWith(path.join(d, 'secrets'))), 60_000);
    }
  });

  it('a plugin config its schema refuses stops the agent at start, naming the file, line and field', async () => {
    const bad = path.join(dir, 'bad-client.hcl');
    writeFileSync(
      bad,
      `data_dir = "${path.join(dir, 'c-bad')}"\nports {\n  http = 0\n}\nplugin_dir = "${path.join(dir, 'plugins')}"\nplugin "chrootrec" {\n  config {\n    record_dir = "${records}"\n    bogus      = true\n  }\n}\nclient {\n  node_name = "nte-bad"\n  token     = "${NODE}"\n}\n`,
    );
    const agent = new AgentUnderTest(['agent', '--client', '--server-address', server.addr, '--config', bad]);
    const r = await agent.exited;
    assert.notEqual(r.code, 0, 'the agent does not start');
    assert.match(r.stderr + r.stdout, /bad-client\.hcl:\d+:\d+: plugin "chrootrec" config: .*bogus/);
  });
});
