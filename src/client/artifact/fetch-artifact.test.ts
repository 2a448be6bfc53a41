import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fetchArtifact, readArtifactSource, type ArtifactError } from './index.js';

// Artifacts from the node's filesystem, as a job's `artifact` blocks fetch them.

describe('artifacts from local paths', () => {
  let dir = '';
  let content = '';
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'bart-'));
    content = path.join(dir, 'content');
    mkdirSync(path.join(content, 'conf'), { recursive: true });
    writeFileSync(path.join(content, 'conf', 'a.txt'), 'A\n');
    writeFileSync(path.join(content, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    execFileSync('tar', ['cf', path.join(dir, 'b.tar'), '-C', content, '.']);
    execFileSync('tar', ['czf', path.join(dir, 'b.tgz'), '-C', content, '.']);
    execFileSync('python3', ['-c', `
import zipfile, sys
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    z.write(sys.argv[2] + '/conf/a.txt', 'conf/a.txt')
    i = zipfile.ZipInfo('run.sh'); i.external_attr = 0o755 << 16; z.writestr(i, '#!/bin/sh\\n')
with zipfile.ZipFile(sys.argv[3], 'w') as z:
    z.writestr('../escaped.txt', 'x')
`, path.join(dir, 'b.zip'), content, path.join(dir, 'evil.zip')]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const tree = (root: string): string[] => readdirSync(root, { recursive: true, encoding: 'utf8' }).sort();
  const fresh = (name: string): string => path.join(dir, 'out', name);

  for (const archive of ['b.tar', 'b.tgz', 'b.zip']) {
    it(`unpacks ${archive} into the destination, keeping modes`, async () => {
      const dest = fresh(archive);
      await fetchArtifact(path.join(dir, archive), dest, { mode: 'any', archive: undefined, label: archive });
      assert.deepEqual(tree(dest), ['conf', 'conf/a.txt', 'run.sh']);
      assert.equal(readFileSync(path.join(dest, 'conf', 'a.txt'), 'utf8'), 'A\n');
      assert.equal(statSync(path.join(dest, 'run.sh')).mode & 0o111, 0o111);
    });
  }

  it('copies an archive as it is with options { archive = false }, and a plain file under its name', async () => {
    const dest = fresh('noarchive');
    await fetchArtifact(path.join(dir, 'b.tgz'), dest, { mode: 'any', archive: false, label: 'b.tgz' });
    await fetchArtifact(path.join(content, 'run.sh'), dest, { mode: 'any', archive: undefined, label: 'run.sh' });
    assert.deepEqual(tree(dest), ['b.tgz', 'run.sh']);
  });

  it('copies a directory\'s contents (mode any or dir) and writes mode "file" to the destination path', async () => {
    const d = fresh('dir');
    await fetchArtifact(content, d, { mode: 'dir', archive: undefined, label: 'content' });
    assert.deepEqual(tree(d), ['conf', 'conf/a.txt', 'run.sh']);
    const f = fresh('file/renamed.txt');
    await fetchArtifact(path.join(content, 'conf', 'a.txt'), f, { mode: 'file', archive: undefined, label: 'a.txt' });
    assert.equal(readFileSync(f, 'utf8'), 'A\n');
  });

  it('says what is wrong with a missing source or a mode that does not fit', async () => {
    const fails = (p: Promise<void>, message: string): Promise<void> => assert.rejects(p, (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && e.message === message);
    await fails(fetchArtifact(path.join(dir, 'nope.tgz'), fresh('x'), { mode: 'any', archive: undefined, label: '/srv/nope.tgz' }), `artifact source /srv/nope.tgz: no such file or directory (${path.join(dir, 'nope.tgz')})`);
    await fails(fetchArtifact(content, fresh('y'), { mode: 'file', archive: undefined, label: 'content' }), 'artifact source content: mode "file" but the source is a directory');
    await fails(fetchArtifact(path.join(content, 'run.sh'), fresh('z'), { mode: 'dir', archive: undefined, label: 'run.sh' }), 'artifact source run.sh: mode "dir" but the source is a file and not an archive');
  });

  it('never writes outside the destination for a zip entry naming ../', async () => {
    const dest = fresh('evil');
    await assert.rejects(fetchArtifact(path.join(dir, 'evil.zip'), dest, { mode: 'any', archive: undefined, label: 'evil.zip' }), /cannot unpack/);
    assert.throws(() => statSync(path.join(dir, 'out', 'escaped.txt')));
  });

  it('reads paths, file:// URLs, http(s) URLs and git sources as go-getter does, and refuses the getters Berth lacks', () => {
    const local = (source: string, options = {}): unknown => {
      const r = readArtifactSource(source, options, '/task');
      return r.kind === 'local' ? r.path : r.kind;
    };
    assert.equal(local('/srv/app.tgz'), '/srv/app.tgz');
    assert.equal(local('local/app.tgz'), '/task/local/app.tgz');
    assert.equal(local('file:///srv/a%20b.tgz'), '/srv/a b.tgz');
    const http = readArtifactSource('https://example.com/a/b.bin?x=1&archive=false', { checksum: 'sha256:' + 'ab'.repeat(32), filename: 'c.bin' }, '/task');
    assert.equal(http.kind, 'http');
    if (http.kind === 'http') {
      // go-getter's own options leave the URL; the others stay in its query.
      assert.equal(http.url.href, 'https://example.com/a/b.bin?x=1');
      assert.deepEqual([http.archive, http.checksum, http.filename], [false, { algorithm: 'sha256', hex: 'ab'.repeat(32) }, 'c.bin']);
    }
    assert.deepEqual(readArtifactSource('git::https://example.com/x/y.git?ref=v1', { depth: '1' }, '/t'), { kind: 'git', url: 'https://example.com/x/y.git', ref: 'v1', depth: 1, sshKey: undefined });
    assert.deepEqual(readArtifactSource('github.com/x/y', {}, '/t'), { kind: 'git', url: 'https://github.com/x/y.git', ref: undefined, depth: undefined, sshKey: undefined });
    assert.deepEqual(readArtifactSource('git@github.com:x/y.git', {}, '/t'), { kind: 'git', url: 'git@github.com:x/y.git', ref: undefined, depth: undefined, sshKey: undefined });
    // A bare digest's type comes from its length; a checksum file is read before the download.
    const md5 = readArtifactSource('/a', { checksum: 'd41d8cd98f00b204e9800998ecf8427e' }, '/t');
    assert.deepEqual(md5.kind === 'local' && md5.checksum, { algorithm: 'md5', hex: 'd41d8cd98f00b204e9800998ecf8427e' });
    const sums = readArtifactSource('https://example.com/a.tgz', { checksum: 'file:https://example.com/SHA256SUMS' }, '/t');
    assert.deepEqual(sums.kind === 'http' && sums.checksum, { file: 'https://example.com/SHA256SUMS' });
    const refused: [string, Record<string, string>, string][] = [
      ['s3::https://s3.amazonaws.com/b/k', {}, 'Berth does not fetch from s3; fetch it with an http(s) URL, git or a local path'],
      ['gcs::https://x/y', {}, 'Berth does not fetch from gcs; fetch it with an http(s) URL, git or a local path'],
      ['ftp://example.com/a', {}, 'Berth does not fetch ftp:// URLs; use http(s), git or a local path'],
      ['git::https://example.com/x.git', { sshkey: 'not base64!' }, 'option sshkey: not base64 (give the private key base64-encoded, e.g. the output of `base64 -w0 ~/.ssh/id_ed25519`)'],
      ['git::https://example.com/x.git', { sshkey: 'a2V5' }, 'option sshkey: the decoded text is not a private key (it should start with "-----BEGIN ... PRIVATE KEY-----")'],
      ['git::https://example.com/x.git', { depth: 'two' }, 'option depth: "two" is not a whole number'],
      ['git::https://example.com/x.git', { checksum: 'md5:00' }, 'option checksum: not an option of a git source (ref, depth, sshkey)'],
      ['https://example.com/a.tgz', { archive: 'rar' }, 'option archive: Berth unpacks tar, tar.gz, tgz, tar.bz2, tbz2, tar.xz, txz, tar.zst, tzst, zip, gz, bz2, xz, zst, not "rar"'],
      ['https://example.com/a.tgz', { checksum: 'crc32:abcd' }, 'option checksum: unknown checksum type (md5, sha1, sha256 or sha512) in "crc32:abcd"'],
      ['https://example.com/a.tgz', { checksum: 'file:SHA256SUMS' }, 'option checksum: "file:SHA256SUMS": a checksum file is an http(s):// or file:// URL or an absolute path'],
    ];
    for (const [source, options, message] of refused) {
      assert.throws(() => readArtifactSource(source, options, '/task'), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_UNSUPPORTED' && e.message === `artifact source ${source}: ${message}`, source);
    }
  });

  it('checks a checksum before writing anything', async () => {
    const file = path.join(content, 'conf', 'a.txt');
    const good = readArtifactSource(file, { checksum: `sha256:${createHash('sha256').update('A\n').digest('hex')}` }, '/');
    const bad = readArtifactSource(file, { checksum: 'sha1:' + '0'.repeat(40) }, '/');
    assert.ok(good.kind === 'local' && bad.kind === 'local' && good.checksum && !('file' in good.checksum) && bad.checksum && !('file' in bad.checksum));
    const dest = fresh('sum');
    await fetchArtifact(file, dest, { mode: 'any', archive: undefined, checksum: good.checksum, label: 'a.txt' });
    assert.deepEqual(tree(dest), ['a.txt']);
    const other = fresh('badsum');
    await assert.rejects(fetchArtifact(file, other, { mode: 'any', archive: undefined, checksum: bad.checksum, label: 'a.txt' }), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && /^artifact source a\.txt: checksums did not match: expected sha1:0{40}, got sha1:[0-9a-f]{40}$/.test(e.message));
    assert.equal(existsSync(other), false);
  });
});
