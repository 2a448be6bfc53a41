// `template` and `artifact` blocks as a Nomad user meets them through
// `berth agent --dev`: a template rendered before the task starts (and the
// task reading it), an `env = true` template reaching the task's environment,
// a changed source rendered again and the task restarted or signalled, a
// local tar.gz unpacked into local/, an http download (from a server on
// loopback, with a header and a checksum) and a git clone (of a repository on
// this machine), a getter Berth lacks and a template error failing the task
// with a message that names them.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Allocation, AllocationListStub } from '../../src/api/index.js';
import { gitRepo } from '../support/git-repo.js';
import { until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

describe('templates and artifacts through the dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;

  before(async () => {
    dir = await tempDir('btpl-');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).ready(true);
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  async function run(name: string, hcl: string): Promise<void> {
    const file = path.join(dir, `${name}.hcl`);
    writeFileSync(file, hcl);
    const res = await agent.cli(['job', 'run', '--detach', file]);
    assert.equal(res.code, 0, res.stderr);
  }

  async function allocOf(job: string, ok: (a: Allocation) => boolean, what: string): Promise<Allocation> {
    return until(what, async () => {
      const [a] = await agent.get<AllocationListStub[]>(`/v1/job/${job}/allocations`);
      if (!a) return undefined;
      const full = await agent.get<Allocation>(`/v1/allocation/${a.ID}`);
      return ok(full) ? full : undefined;
    }, 60_000);
  }

  async function logs(allocId: string, task: string): Promise<string> {
    const res = await agent.cli(['alloc', 'logs', allocId, task]);
    assert.equal(res.code, 0, res.stderr);
    return res.stdout;
  }

  /** A service job whose task "web" runs `script` with a template from `source` rendered to local/app.conf. */
  const watchedJob = (id: string, script: string, source: string, change: string): string => `
job "${id}" {
  group "g" {
    task "web" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "${script}"]
      }
      template {
        source      = "${source}"
        destination = "local/app.conf"
        ${change}
      }
    }
  }
}
`;

  const events = (a: Allocation, task: string): string => (a.TaskStates?.[task]?.Events ?? []).map((e) => `${e.Type}: ${e.Message}`).join('\n');

  /** A batch job of one raw_exec task, `show`, running `sh -c script` (`script` as HCL writes it) with the `blocks` (templates, artifacts) before it starts. */
  const showJob = (id: string, script: string, blocks: string): string => `
job "${id}" {
  type = "batch"
  group "g" {
    task "show" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "${script}"]
      }
${blocks}
    }
  }
}
`;

  /** Runs `showJob`, waits for it to finish, fails unless it completed; resolves with its allocation and what `show` printed. */
  async function showOutput(id: string, script: string, blocks: string): Promise<{ alloc: Allocation; output: string }> {
    await run(id, showJob(id, script, blocks));
    const alloc = await allocOf(id, (x) => x.ClientStatus === 'complete' || x.ClientStatus === 'failed', `the ${id} job to finish`);
    assert.equal(alloc.ClientStatus, 'complete', events(alloc, 'show'));
    return { alloc, output: await logs(alloc.ID, 'show') };
  }

  it('renders a template before the task starts, with NOMAD_* values, where the task reads it as local/app.conf, and an env = true template reaches the task env', async () => {
    // As a Nomad job writes it: the task runs in its task directory.
    const { alloc: a, output } = await showOutput('render', 'cat local/app.conf; echo \\"greeting=$GREETING\\"', `
      template {
        data        = <<EOH
alloc={{ env "NOMAD_ALLOC_ID" }}
{{- range $i, $w := split "," "a,b" }} w{{ $i }}={{ $w }}{{ end }}
EOH
        destination = "local/app.conf"
        perms       = "600"
      }
      template {
        data        = "GREETING=hello-{{ env \\"NOMAD_TASK_NAME\\" | toUpper }}"
        destination = "secrets/app.env"
        env         = true
      }`);
    assert.equal(output, `alloc=${a.ID} w0=a w1=b\ngreeting=hello-SHOW\n`);
  });

  it('renders a changed source again and restarts the task (change_mode restart)', async () => {
    const src = path.join(dir, 'restart.tpl');
    writeFileSync(src, 'version=1 task={{ env "NOMAD_TASK_NAME" }}\n');
    await run('tplrestart', watchedJob('tplrestart', 'cat \\"$BERTH_TASK_DIR/app.conf\\"; exec sleep 1000', src, 'change_mode = "restart"\n        splay       = "100ms"'));
    const first = await allocOf('tplrestart', (x) => x.ClientStatus === 'running', 'the task to run');
    assert.equal(await logs(first.ID, 'web'), 'version=1 task=web\n');
    writeFileSync(src, 'version=2 task={{ env "NOMAD_TASK_NAME" }}\n');
    const restarted = await allocOf('tplrestart', (x) => x.TaskStates?.['web']?.Restarts === 1 && x.TaskStates['web'].State === 'running', 'the task to restart');
    assert.match(events(restarted, 'web'), /Template Rendered: Template "local\/app.conf" rendered again/);
    assert.match(events(restarted, 'web'), /Restart Signaled: Restart requested: template "local\/app.conf" changed/);
    await until('the restarted task to print the new rendering', async () => ((await logs(first.ID, 'web')).includes('version=2') ? true : undefined), 30_000);
    assert.equal(await logs(first.ID, 'web'), 'version=1 task=web\nversion=2 task=web\n');
    assert.equal((await agent.cli(['job', 'stop', 'tplrestart'])).code, 0);
  });

  it('renders a changed source again and signals the task (change_mode signal)', async () => {
    const src = path.join(dir, 'signal.tpl');
    const marker = path.join(dir, 'hup-seen');
    writeFileSync(src, 'level=info\n');
    await run(
      'tplsignal',
      watchedJob('tplsignal', `trap 'cp \\"$BERTH_TASK_DIR/app.conf\\" ${marker}' HUP; echo ready; while :; do sleep 0.2; done`, src, 'change_mode   = "signal"\n        change_signal = "SIGHUP"\n        splay         = "0s"'),
    );
    const a = await allocOf('tplsignal', (x) => x.ClientStatus === 'running', 'the task to run');
    await until('the task to set its trap', async () => ((await logs(a.ID, 'web')).includes('ready') ? true : undefined), 30_000);
    writeFileSync(src, 'level=debug\n');
    await until('the task to see SIGHUP', () => (existsSync(marker) && readFileSync(marker, 'utf8') === 'level=debug\n' ? true : undefined), 30_000);
    const after = await allocOf('tplsignal', (x) => /Signaling/.test(events(x, 'web')), 'the Signaling event');
    assert.equal(after.TaskStates?.['web']?.Restarts, 0, 'signalled, not restarted');
    assert.match(events(after, 'web'), /Signaling: Task being sent SIGHUP: template "local\/app.conf" changed/);
    assert.equal((await agent.cli(['job', 'stop', 'tplsignal'])).code, 0);
  });

  it('unpacks a local tar.gz artifact into local/ before the task starts', async () => {
    const content = path.join(dir, 'bundle');
    mkdirSync(path.join(content, 'conf'), { recursive: true });
    writeFileSync(path.join(content, 'conf', 'settings.txt'), 'answer=42\n');
    const archive = path.join(dir, 'bundle.tar.gz');
    execFileSync('tar', ['czf', archive, '-C', content, 'conf']);
    const { output } = await showOutput('artifact', `cat \\"$BERTH_TASK_DIR/conf/settings.txt\\" \\"$BERTH_TASK_DIR/plain/settings.copy\\"`, `
      artifact {
        source = "${archive}"
      }
      artifact {
        source      = "file://${path.join(content, 'conf', 'settings.txt')}"
        destination = "local/plain/settings.copy"
        mode        = "file"
      }`);
    assert.equal(output, 'answer=42\nanswer=42\n');
  });

  // The unpackers' libraries (node-tar, yauzl, unbzip2-stream, xz-decompress, fzstd) are loaded with the first
  // archive, from the agent bundle's side file in the built agent: each of them unpacks here.
  it('unpacks tar.bz2, tar.xz, tar.zst, zip and zstd-compressed artifacts before the task starts', async () => {
    const content = path.join(dir, 'packed');
    mkdirSync(content, { recursive: true });
    writeFileSync(path.join(content, 'word.txt'), 'packed\n');
    for (const [file, flag] of [['p.tar.bz2', '--bzip2'], ['p.tar.xz', '--xz'], ['p.tar.zst', '--zstd']] as const) {
      execFileSync('tar', [flag, '-cf', path.join(dir, file), '-C', content, 'word.txt']);
    }
    execFileSync('python3', ['-c', 'import zipfile, sys\nwith zipfile.ZipFile(sys.argv[1], "w") as z: z.write(sys.argv[2], "word.txt")', path.join(dir, 'p.zip'), path.join(content, 'word.txt')]);
    writeFileSync(path.join(dir, 'single.txt.zst'), execFileSync('zstd', ['-c', path.join(content, 'word.txt')]));
    const unpacked = ['bz2', 'xz', 'zst', 'zip'];
    const { output } = await showOutput('unpackers', `cd \\"$BERTH_TASK_DIR\\" && cat ${unpacked.map((d) => `${d}/word.txt`).join(' ')} single.txt`, `
${['p.tar.bz2', 'p.tar.xz', 'p.tar.zst', 'p.zip'].map((f, i) => `      artifact {\n        source      = "${path.join(dir, f)}"\n        destination = "local/${unpacked[i]}"\n      }`).join('\n')}
      artifact {
        source      = "${path.join(dir, 'single.txt.zst')}"
        destination = "local/single.txt"
        mode        = "file"
      }`);
    assert.equal(output, 'packed\n'.repeat(5));
  });

  it('downloads over http with the job\'s headers and checksum, and clones a git repository at a ref', async () => {
    const archive = path.join(dir, 'site.tar.gz');
    mkdirSync(path.join(dir, 'site'), { recursive: true });
    writeFileSync(path.join(dir, 'site', 'index.html'), 'hello from http\n');
    execFileSync('tar', ['czf', archive, '-C', path.join(dir, 'site'), 'index.html']);
    const body = readFileSync(archive);
    const asked: string[] = [];
    const server = createServer((req, res) => {
      asked.push(`${req.url} ${req.headers['x-alloc'] ?? ''}`);
      if (req.url === '/site.tar.gz' && req.headers['x-alloc']) res.writeHead(200).end(body);
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const repo = path.join(dir, 'repo');
    gitRepo(repo, [{ files: { release: 'one\n' }, tag: 'v1' }, { files: { release: 'two\n' } }]);
    try {
      const { alloc: a, output } = await showOutput('remote', `cat \\"$BERTH_TASK_DIR/index.html\\" \\"$BERTH_TASK_DIR/repo/release\\"`, `
      artifact {
        source = "http://127.0.0.1:${(server.address() as AddressInfo).port}/site.tar.gz"
        options {
          checksum = "sha256:${createHash('sha256').update(body).digest('hex')}"
        }
        headers {
          X-Alloc = "\${NOMAD_ALLOC_ID}"
        }
      }
      artifact {
        source      = "git::file://${repo}"
        destination = "local/repo"
        options {
          ref = "v1"
        }
      }`);
      assert.equal(output, 'hello from http\none\n');
      // The header carried the allocation's own ID, interpolated as Nomad does.
      assert.deepEqual(asked, [`/site.tar.gz ${a.ID}`]);
    } finally {
      server.close();
    }
  });

  it('refuses a getter Berth lacks and a template it cannot render, naming them, and does not start the task', async () => {
    // One job each: in one allocation the first task to fail would kill its sibling (as Nomad does) before it says why.
    const job = (id: string, block: string): string => `
job "${id}" {
  type = "batch"
  group "g" {
    task "${id}" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
        args    = ["started"]
      }
${block}
    }
  }
}
`;
    await run('remotefetch', job('remotefetch', '      artifact {\n        source = "s3::https://s3.amazonaws.com/bucket/app.tar.gz"\n      }'));
    await run('badtpl', job('badtpl', '      template {\n        data        = "line one\\n{{ key \\"service/config\\" }}"\n        destination = "local/bad.conf"\n      }'));
    const fetch = await allocOf('remotefetch', (x) => x.TaskStates?.['remotefetch']?.State === 'dead', 'the artifact task to fail');
    const render = await allocOf('badtpl', (x) => x.TaskStates?.['badtpl']?.State === 'dead', 'the template task to fail');
    assert.match(events(fetch, 'remotefetch'), /artifact source s3::https:\/\/s3\.amazonaws\.com\/bucket\/app\.tar\.gz: Berth does not fetch from s3; fetch it with an http\(s\) URL, git or a local path/);
    assert.match(events(render, 'badtpl'), /template "local\/bad\.conf": template: local\/bad\.conf:2:4: function "key" reads from Consul, which Berth does not have/);
    for (const [a, task] of [[fetch, 'remotefetch'], [render, 'badtpl']] as const) {
      assert.equal(a.TaskStates?.[task]?.Failed, true);
      assert.doesNotMatch(events(a, task), /^Started:/m, `${task} never started`);
    }
  });
});
