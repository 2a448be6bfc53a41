// The README's quick start, run as a user runs it (`bash scripts/demo.sh`,
// what `npm run demo` does), asserted step by step from its output: a dev
// agent, the hostpath plugin as a system job that becomes healthy, a volume
// created through the controller, a writer, a reader that reads back exactly
// what the writer wrote, plugin and volume status with the claim history,
// and a SIGINT stop that leaves nothing mounted and nothing running.
//
// The example plugin job keeps its volumes under
// /var/lib/berth/hostpath/<node ID>; a dev agent's node ID is new on every
// run, so the demo's volumes never meet another run's.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { cleanEnv, freePort, mountsUnder, REPO } from '../support/agent-run.js';
import { pidsWith } from '../support/procs.js';

let hostpathDir = '';

interface Run {
  code: number | null;
  out: string;
}
let run: Run;
let sections: Map<string, string>;
let workDir = '';

/** The demo's output split at its `==> heading` lines: heading -> body. */
function split(out: string): Map<string, string> {
  const map = new Map<string, string>();
  let heading = '';
  for (const line of out.split('\n')) {
    const m = /^==> (.*)$/.exec(line);
    if (m && !/^==> \d{4}-|^==> Evaluation|^==> \d+ allocation|^==> (Volume|Job) "/.test(line)) {
      heading = m[1] as string;
      map.set(heading, '');
    } else if (heading) map.set(heading, `${map.get(heading)}${line}\n`);
  }
  return map;
}

function section(prefix: string): string {
  for (const [h, body] of sections) if (h.startsWith(prefix)) return body;
  assert.fail(`the demo printed no "${prefix}" step; output:\n${run.out}`);
}

before(async () => {
  const port = await freePort();
  const child = spawn('bash', ['scripts/demo.sh'], {
    cwd: REPO,
    env: cleanEnv({ BERTH_DEMO_PORT: String(port) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const timer = setTimeout(() => child.kill('SIGTERM'), 170_000);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  run = { code, out };
  sections = split(out);
  workDir = /data in (\/\S+)\/agent$/m.exec(out)?.[1] ?? '';
  const nodeId = /topology\.hostpath\.csi\.berth\.dev\/node=([0-9a-f-]{36})$/m.exec(out)?.[1];
  if (nodeId) hostpathDir = `/var/lib/berth/hostpath/${nodeId}`;
});

after(() => {
  // The demo cleans up after itself; this is the safety net if it did not.
  if (workDir) {
    for (const pid of pidsWith(workDir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    for (const m of mountsUnder(workDir).reverse()) spawn('umount', ['-l', m]);
    rmSync(workDir, { recursive: true, force: true });
  }
  if (hostpathDir) rmSync(hostpathDir, { recursive: true, force: true });
});

describe('quick start (npm run demo)', { timeout: 200_000 }, () => {
  it('runs to the end and exits 0', () => {
    assert.equal(run.code, 0, `the demo failed:\n${run.out}`);
    assert.match(run.out, /==> Done: the quick start ran end to end/);
  });

  it('starts a dev agent that prints its address and keeps the token out of the output', () => {
    const body = section('Start a dev agent');
    assert.match(body, /BERTH_ADDR=http:\/\/127\.0\.0\.1:\d+/);
    assert.match(body, /BERTH_TOKEN=<management token/);
    assert.ok(workDir, 'the demo names the agent data dir');
  });

  it('runs the hostpath plugin as a system job and shows it healthy', () => {
    assert.match(section('Run the hostpath CSI plugin'), /allocation running/);
    const healthy = section('Wait until the plugin is healthy');
    assert.match(healthy, /Provider\s+hostpath\.csi\.berth\.dev/);
    assert.match(healthy, /Controllers Healthy\s+1\n/);
    assert.match(healthy, /Nodes Healthy\s+1\n/);
    assert.match(healthy, /controller\s+\w+\s+true\s+probe answered ready/);
  });

  it('creates the volume through the controller', () => {
    assert.match(section('Create a volume'), /Volume "shared-data" created \(external ID \S+, plugin hostpath\)/);
  });

  it('the reader reads back exactly what the writer wrote', () => {
    const writer = section('Run a job that writes');
    const writerAlloc = /Allocation "([0-9a-f]{8})" created/.exec(writer)?.[1];
    assert.ok(writerAlloc, `no writer allocation in:\n${writer}`);
    assert.match(writer, new RegExp(`${writerAlloc}\\s+\\S+\\s+writer\\s+0\\s+run\\s+complete`));
    assert.match(section('Stop the writer'), /Job "writer" stopped/);
    const reader = section('Run a job that reads');
    const readerAlloc = /Allocation "([0-9a-f]{8})" created/.exec(reader)?.[1];
    assert.ok(readerAlloc && readerAlloc !== writerAlloc);
    // writer.hcl writes `date` and "written by $BERTH_ALLOC_ID": only that allocation knows its own full ID.
    const logs = reader.slice(reader.indexOf(`$ berth alloc logs ${readerAlloc} read`));
    const writtenBy = /^written by ([0-9a-f-]{36})$/m.exec(logs)?.[1];
    assert.ok(writtenBy, `alloc logs shows no "written by" line:\n${reader}`);
    assert.ok(writtenBy.startsWith(writerAlloc), `read back "${writtenBy}", written by ${writerAlloc}`);
    const dateLine = logs.split('\n')[1] ?? '';
    assert.ok(!Number.isNaN(Date.parse(dateLine)), `the first line read back is the writer's date, got "${dateLine}"`);
    assert.match(reader, new RegExp(`the reader read what writer allocation ${writerAlloc} wrote`));
  });

  it('prints plugin status and volume status with the claim history, no claim left', () => {
    assert.match(section('Plugin status'), /hostpath\s+hostpath\.csi\.berth\.dev\s+1\/1\s+1\/1/);
    const volumes = section('Volume status');
    assert.match(volumes, /shared-data\s+shared-data\s+hostpath\s+true\s+0\s/);
    assert.match(volumes, /Secrets\s+example_token \(hidden\)/);
    assert.doesNotMatch(volumes, /change-me/);
    assert.match(volumes, /Claims\n\(none\)/);
    // The history is the whole stream up to now, not what a timer let through.
    assert.match(volumes, /\$ berth event stream --topic claim:shared-data --index 0 --until-now --json/);
    const writerAlloc = /Allocation "([0-9a-f]{8})" created/.exec(section('Run a job that writes'))?.[1] as string;
    const readerAlloc = /Allocation "([0-9a-f]{8})" created/.exec(section('Run a job that reads'))?.[1] as string;
    // Each claim was taken, then released (a delete), in that order.
    for (const [alloc, mode] of [
      [writerAlloc, 'write'],
      [readerAlloc, 'read'],
    ] as const) {
      const taken = volumes.search(new RegExp(`put\\s+${alloc}\\s+${mode}\\s+taken`));
      const released = volumes.search(new RegExp(`delete\\s+${alloc}\\s+${mode}\\s+released`));
      assert.ok(taken >= 0 && released > taken, `claim history of ${alloc} (${mode}) in:\n${volumes}`);
    }
  });

  it('stops the agent with SIGINT, exit 0, leaving nothing mounted or running', () => {
    const body = section('Stop the agent');
    assert.match(body, /agent stopped \(exit 0\)/);
    assert.match(body, /nothing mounted under/);
    assert.deepEqual(mountsUnder(workDir), []);
    assert.deepEqual(pidsWith(workDir), [], 'no process of the demo is left running');
    assert.equal(existsSync(workDir), false, 'the demo removed its directory');
    // The demo deleted its volume, then the plugin's directory for its one-off node.
    assert.ok(hostpathDir, 'the volume status names the node in its topology');
    assert.match(body, /removed the plugin's empty data dir/);
    assert.equal(existsSync(hostpathDir), false);
  });
});
