import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gitRepo } from '../../../test/support/git-repo.js';
import { DEFAULT_ARTIFACT_LIMITS, digestFor, fetchRemote, gitEnv, readArtifactSource, type ArtifactError, type ArtifactLimits } from './index.js';

// Artifacts over a network as go-getter fetches them: http(s) from a server on
// loopback, git from a repository on this machine's disk.

describe('artifacts over http and git', () => {
  let dir = '';
  let server: Server;
  let base = '';
  const seen: { url: string; headers: IncomingHttpHeaders }[] = [];
  let tgz: Buffer;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'bartr-'));
    const content = path.join(dir, 'content');
    mkdirSync(path.join(content, 'conf'), { recursive: true });
    writeFileSync(path.join(content, 'conf', 'a.txt'), 'A\n');
    execFileSync('tar', ['czf', path.join(dir, 'b.tgz'), '-C', content, '.']);
    tgz = readFileSync(path.join(dir, 'b.tgz'));
    server = createServer((req, res) => {
      seen.push({ url: req.url ?? '', headers: req.headers });
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/private/notes.txt' && req.headers['x-token'] !== 'secret') return void res.writeHead(403).end();
      if (url.pathname === '/moved.tgz') return void res.writeHead(302, { location: '/app.tgz' }).end();
      if (url.pathname === '/app.tgz' || url.pathname === '/download') return void res.writeHead(200).end(tgz);
      if (url.pathname === '/notes.txt' || url.pathname === '/private/notes.txt') return void res.writeHead(200).end('notes\n');
      if (url.pathname === '/notes.txt.gz') return void res.writeHead(200).end(gzipSync('notes\n'));
      const sha = createHash('sha256').update(tgz).digest('hex');
      if (url.pathname === '/rel/SHA256SUMS') return void res.writeHead(200).end(`${'0'.repeat(64)}  other.tgz\n\n${sha} *app.tgz\n`);
      if (url.pathname === '/rel/BSD.sums') return void res.writeHead(200).end(`SHA256 (other.tgz) = ${'1'.repeat(64)}\nSHA256 (app.tgz) = ${'2'.repeat(64)}\n`);
      if (url.pathname === '/big.bin') return void res.writeHead(200).end(Buffer.alloc(1 << 20));
      if (url.pathname === '/stall.bin') return void res.writeHead(200).write('x');
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server?.closeAllConnections();
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const tree = (root: string): string[] => readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => !f.startsWith('.git/') && f !== '.git').sort();
  const fresh = (name: string): string => path.join(dir, 'out', name);
  const scratchDir = (): string => path.join(dir, 'scratch');
  type Extra = { mode?: 'any' | 'file' | 'dir'; headers?: Record<string, string>; limits?: Partial<ArtifactLimits>; env?: NodeJS.ProcessEnv };
  async function fetchInto(dest: string, source: string, options: Record<string, string> = {}, extra: Extra = {}): Promise<void> {
    const plan = readArtifactSource(source, options, dir);
    assert.ok(plan.kind === 'http' || plan.kind === 'git', plan.kind);
    const limits = { ...DEFAULT_ARTIFACT_LIMITS, ...extra.limits };
    await fetchRemote(plan, dest, { mode: extra.mode ?? 'any', label: source, headers: extra.headers ?? {}, scratchDir: scratchDir(), limits, env: extra.env });
  }
  const failsWith = (re: RegExp) => (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && re.test(e.message);

  it("checks a download against its line in a checksum file (checksum = \"file:URL\"), GNU or BSD style, as go-getter reads one", async () => {
    const dest = fresh('sums');
    await fetchInto(dest, `${base}/app.tgz`, { checksum: `file:${base}/rel/SHA256SUMS` });
    assert.deepEqual(tree(dest), ['conf', 'conf/a.txt']);
    await assert.rejects(fetchInto(fresh('sums-bad'), `${base}/app.tgz`, { checksum: `file:${base}/rel/BSD.sums` }), failsWith(/: checksums did not match: expected sha256:2{64}, got sha256:/));
    await assert.rejects(fetchInto(fresh('sums-none'), `${base}/notes.txt`, { checksum: `file:${base}/rel/BSD.sums` }), failsWith(/: no checksum found in: http:\/\/127\.0\.0\.1:\d+\/rel\/BSD\.sums$/));
    await assert.rejects(fetchInto(fresh('sums-404'), `${base}/app.tgz`, { checksum: `file:${base}/rel/MISSING` }), failsWith(/: Error downloading checksum file: bad response code: 404$/));
    assert.equal(existsSync(fresh('sums-bad')), false);
    // The lines go-getter matches: the name, *name, ?name, the path relative to the sums file, ./ that, the absolute path.
    const d = (n: string) => `${n.repeat(64)}`;
    const sums = [`${d('a')}  x.tgz`, `${d('b')} *y.tgz`, `${d('c')}  ./sub/z.tgz`, `MD5 (w.tgz) = ${'d'.repeat(32)}`, 'garbage line here and more', `${d('e')}  /abs/v.tgz`].join('\n');
    assert.deepEqual(
      ['/r/x.tgz', '/r/y.tgz', '/r/sub/z.tgz', '/r/w.tgz', '/abs/v.tgz', '/r/none.tgz'].map((p) => digestFor(sums, p, '/r/SUMS')?.hex.slice(0, 1)),
      ['a', 'b', 'c', 'd', 'e', undefined],
    );
    assert.equal(digestFor(`${d('f')}\n`, '/any/name', '/r/SUMS')?.hex, d('f'), 'a bare digest matches any file');
  });

  it("writes a single compressed download decompressed in mode file", async () => {
    const file = path.join(fresh('gz'), 'notes.txt');
    await fetchInto(file, `${base}/notes.txt.gz`, {}, { mode: 'file' });
    assert.equal(readFileSync(file, 'utf8'), 'notes\n');
  });

  it("enforces the client's http_max_size and http_read_timeout", async () => {
    await assert.rejects(fetchInto(fresh('big'), `${base}/big.bin`, {}, { limits: { httpMaxBytes: 1000 } }), failsWith(/^artifact source http:\/\/127\.0\.0\.1:\d+\/big\.bin: the response body is larger than the client's http_max_size \(1000 bytes\)$/));
    await fetchInto(fresh('big-ok'), `${base}/big.bin`, {}, { limits: { httpMaxBytes: 1 << 20 } });
    await assert.rejects(fetchInto(fresh('stall'), `${base}/stall.bin`, {}, { limits: { httpReadTimeoutMs: 200 } }), failsWith(/: download did not finish within the client's http_read_timeout \(0\.2 s\)$/));
    assert.equal(existsSync(fresh('big')), false);
  });

  it('downloads an archive and unpacks it, following a redirect, and a plain file under its name', async () => {
    const dest = fresh('http');
    await fetchInto(dest, `${base}/moved.tgz`);
    await fetchInto(dest, `${base}/notes.txt`);
    assert.deepEqual(tree(dest), ['conf', 'conf/a.txt', 'notes.txt']);
    assert.equal(readFileSync(path.join(dest, 'conf', 'a.txt'), 'utf8'), 'A\n');
    // Nothing of the download is left behind.
    assert.deepEqual(readdirSync(scratchDir()), []);
  });

  it('sends the artifact headers, takes archive and filename options off the URL, and keeps the others', async () => {
    const dest = fresh('opts');
    await fetchInto(dest, `${base}/private/notes.txt`, {}, { headers: { 'X-Token': 'secret' } });
    await fetchInto(dest, `${base}/download?v=2`, { archive: 'tgz', checksum: `sha256:${createHash('sha256').update(tgz).digest('hex')}` });
    await fetchInto(dest, `${base}/app.tgz`, { archive: 'false', filename: 'kept.tgz' });
    assert.deepEqual(tree(dest), ['conf', 'conf/a.txt', 'kept.tgz', 'notes.txt']);
    assert.ok(seen.some((s) => s.url === '/download?v=2'), JSON.stringify(seen.map((s) => s.url)));
    const mode = fresh('file/renamed.txt');
    await fetchInto(mode, `${base}/notes.txt`, {}, { mode: 'file' });
    assert.equal(readFileSync(mode, 'utf8'), 'notes\n');
  });

  it('fails with the server\'s answer, a wrong checksum, a refused connection or a URL naming no file, writing nothing', async () => {
    const dest = fresh('bad');
    const fails = async (source: string, options: Record<string, string>, message: RegExp, extra = {}): Promise<void> => {
      await assert.rejects(fetchInto(dest, source, options, extra), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && message.test(e.message), source);
    };
    await fails(`${base}/missing.tgz`, {}, /^artifact source http:\/\/127\.0\.0\.1:\d+\/missing\.tgz: bad response code: 404$/);
    await fails(`${base}/private/notes.txt`, {}, /: bad response code: 403$/);
    await fails(`${base}/app.tgz`, { checksum: 'md5:' + '0'.repeat(32) }, /: checksums did not match: expected md5:0{32}, got md5:[0-9a-f]{32}$/);
    await fails(`${base}/`, {}, /: the URL names no file \(it ends with "\/"\); name one, or set options \{ filename = "\.\.\." \}$/);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await fails(`http://127.0.0.1:${port}/a.tgz`, {}, /: download failed: .*ECONNREFUSED/);
    assert.equal(existsSync(dest), false);
  });

  describe('git', () => {
    let repo = '';
    before(() => {
      repo = path.join(dir, 'repo');
      gitRepo(repo, [{ files: { version: 'v1\n' }, tag: 'v1' }, { files: { version: 'v2\n', added: 'x\n' } }]);
    });

    it('clones the default branch, a ref, and a shallow ref', async () => {
      const head = fresh('git-head');
      await fetchInto(head, `git::file://${repo}`);
      assert.deepEqual(tree(head), ['added', 'version']);
      assert.equal(readFileSync(path.join(head, 'version'), 'utf8'), 'v2\n');
      const tagged = fresh('git-tag');
      await fetchInto(tagged, `git::${repo}`, { ref: 'v1' });
      assert.equal(readFileSync(path.join(tagged, 'version'), 'utf8'), 'v1\n');
      assert.deepEqual(tree(tagged), ['version']);
      const shallow = fresh('git-shallow');
      await fetchInto(shallow, `git::file://${repo}?ref=v1&depth=1`);
      assert.equal(readFileSync(path.join(shallow, 'version'), 'utf8'), 'v1\n');
      assert.equal(execFileSync('git', ['-C', shallow, 'rev-list', '--count', 'HEAD'], { encoding: 'utf8' }).trim(), '1');
    });

    it('clones over ssh with the job\'s sshkey: a private key file for ssh -i, removed after (GIT_SSH_COMMAND as go-getter sets it)', async () => {
      // A stand-in for ssh: records how it was called and the key it was given, then runs git's remote command here.
      const log = path.join(dir, 'ssh.log');
      const fakeSsh = path.join(dir, 'fake-ssh');
      writeFileSync(
        fakeSsh,
        ['#!/bin/sh', 'key=""', 'while [ $# -gt 0 ]; do case "$1" in -i) key="$2"; shift 2;; -o|-p) shift 2;; -*) shift;; *) break;; esac; done', 'host="$1"; shift', `{ echo "host=$host mode=$(stat -c %a "$key")"; cat "$key"; echo "$key"; } >> '${log}'`, 'exec sh -c "$*"', ''].join('\n'),
        { mode: 0o755 },
      );
      const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n';
      const env = { ...process.env, GIT_SSH_COMMAND: fakeSsh, GIT_SSH_VARIANT: 'ssh' };
      const dest = fresh('git-ssh');
      await fetchInto(dest, `git::ssh://git@127.0.0.1${repo}`, { sshkey: Buffer.from(key).toString('base64'), ref: 'v1' }, { env });
      assert.equal(readFileSync(path.join(dest, 'version'), 'utf8'), 'v1\n');
      const lines = readFileSync(log, 'utf8').split('\n');
      assert.equal(lines[0], 'host=git@127.0.0.1 mode=600');
      assert.equal(lines.slice(1, 4).join('\n') + '\n', key);
      assert.equal(existsSync(lines[4]!), false, 'the key file is removed after the clone');
      // The command line: the user's own GIT_SSH_COMMAND (or ssh) with -i and the key file.
      assert.equal(gitEnv({ GIT_SSH_COMMAND: 'ssh -o StrictHostKeyChecking=no' }, '/tmp/k')['GIT_SSH_COMMAND'], "ssh -o StrictHostKeyChecking=no -i '/tmp/k'");
      assert.equal(gitEnv({}, "/tmp/it's")['GIT_SSH_COMMAND'], "ssh -i '/tmp/it'\\''s'");
      assert.equal(gitEnv({ PATH: '/bin' }, undefined)['GIT_SSH_COMMAND'], undefined);
    });

    it("stops git at the client's git_timeout", async () => {
      const slowSsh = path.join(dir, 'slow-ssh');
      writeFileSync(slowSsh, '#!/bin/sh\nexec sleep 5\n', { mode: 0o755 });
      const env = { ...process.env, GIT_SSH_COMMAND: slowSsh, GIT_SSH_VARIANT: 'ssh' };
      await assert.rejects(fetchInto(fresh('git-slow'), `git::ssh://git@127.0.0.1${repo}`, {}, { env, limits: { gitTimeoutMs: 300 } }), failsWith(/: git clone did not finish within the client's git_timeout \(0\.3 s\)$/));
    });

    it('says what git said for a missing repository or ref, and refuses mode "file"', async () => {
      const dest = fresh('git-bad');
      await assert.rejects(fetchInto(dest, `git::file://${dir}/nothing-here`), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && /: git clone failed: fatal: .*nothing-here.* does not appear to be a git repository/.test(e.message));
      await assert.rejects(fetchInto(dest, `git::file://${repo}`, { ref: 'no-such-ref' }), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && /: git checkout failed: .*no-such-ref/.test(e.message));
      await assert.rejects(fetchInto(dest, `git::file://${repo}`, {}, { mode: 'file' }), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_UNSUPPORTED' && /a git repository is a directory; mode "file" cannot hold it$/.test(e.message));
      assert.equal(existsSync(dest), false);
    });
  });
});
