import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gitRepo } from '../../../test/support/git-repo.js';
import { fetchRemote, readArtifactSource, type ArtifactError } from './index.js';

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
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const tree = (root: string): string[] => readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => !f.startsWith('.git/') && f !== '.git').sort();
  const fresh = (name: string): string => path.join(dir, 'out', name);
  const scratchDir = (): string => path.join(dir, 'scratch');
  async function fetchInto(dest: string, source: string, options: Record<string, string> = {}, extra: { mode?: 'any' | 'file' | 'dir'; headers?: Record<string, string> } = {}): Promise<void> {
    const plan = readArtifactSource(source, options, dir);
    assert.ok(plan.kind === 'http' || plan.kind === 'git', plan.kind);
    await fetchRemote(plan, dest, { mode: extra.mode ?? 'any', label: source, headers: extra.headers ?? {}, scratchDir: scratchDir() });
  }

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

    it('says what git said for a missing repository or ref, and refuses mode "file"', async () => {
      const dest = fresh('git-bad');
      await assert.rejects(fetchInto(dest, `git::file://${dir}/nothing-here`), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && /: git clone failed: fatal: .*nothing-here.* does not appear to be a git repository/.test(e.message));
      await assert.rejects(fetchInto(dest, `git::file://${repo}`, { ref: 'no-such-ref' }), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && /: git checkout failed: .*no-such-ref/.test(e.message));
      await assert.rejects(fetchInto(dest, `git::file://${repo}`, {}, { mode: 'file' }), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_UNSUPPORTED' && /a git repository is a directory; mode "file" cannot hold it$/.test(e.message));
      assert.equal(existsSync(dest), false);
    });
  });
});
