import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fetchArtifact, localArtifactPath, type ArtifactError } from './index.js';

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
      await fetchArtifact(path.join(dir, archive), dest, { mode: 'any', unpack: true, label: archive });
      assert.deepEqual(tree(dest), ['conf', 'conf/a.txt', 'run.sh']);
      assert.equal(readFileSync(path.join(dest, 'conf', 'a.txt'), 'utf8'), 'A\n');
      assert.equal(statSync(path.join(dest, 'run.sh')).mode & 0o111, 0o111);
    });
  }

  it('copies an archive as it is with options { archive = false }, and a plain file under its name', async () => {
    const dest = fresh('noarchive');
    await fetchArtifact(path.join(dir, 'b.tgz'), dest, { mode: 'any', unpack: false, label: 'b.tgz' });
    await fetchArtifact(path.join(content, 'run.sh'), dest, { mode: 'any', unpack: true, label: 'run.sh' });
    assert.deepEqual(tree(dest), ['b.tgz', 'run.sh']);
  });

  it('copies a directory\'s contents (mode any or dir) and writes mode "file" to the destination path', async () => {
    const d = fresh('dir');
    await fetchArtifact(content, d, { mode: 'dir', unpack: true, label: 'content' });
    assert.deepEqual(tree(d), ['conf', 'conf/a.txt', 'run.sh']);
    const f = fresh('file/renamed.txt');
    await fetchArtifact(path.join(content, 'conf', 'a.txt'), f, { mode: 'file', unpack: true, label: 'a.txt' });
    assert.equal(readFileSync(f, 'utf8'), 'A\n');
  });

  it('says what is wrong with a missing source or a mode that does not fit', async () => {
    const fails = (p: Promise<void>, message: string): Promise<void> => assert.rejects(p, (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && e.message === message);
    await fails(fetchArtifact(path.join(dir, 'nope.tgz'), fresh('x'), { mode: 'any', unpack: true, label: '/srv/nope.tgz' }), `artifact source /srv/nope.tgz: no such file or directory (${path.join(dir, 'nope.tgz')})`);
    await fails(fetchArtifact(content, fresh('y'), { mode: 'file', unpack: true, label: 'content' }), 'artifact source content: mode "file" but the source is a directory');
    await fails(fetchArtifact(path.join(content, 'run.sh'), fresh('z'), { mode: 'dir', unpack: true, label: 'run.sh' }), 'artifact source run.sh: mode "dir" but the source is a file and not an archive');
  });

  it('never writes outside the destination for a zip entry naming ../', async () => {
    const dest = fresh('evil');
    await assert.rejects(fetchArtifact(path.join(dir, 'evil.zip'), dest, { mode: 'any', unpack: true, label: 'evil.zip' }), /cannot unpack/);
    assert.throws(() => statSync(path.join(dir, 'out', 'escaped.txt')));
  });

  it('takes paths and file:// URLs, and refuses every remote source with the same message', () => {
    assert.equal(localArtifactPath('/srv/app.tgz', '/task'), '/srv/app.tgz');
    assert.equal(localArtifactPath('local/app.tgz', '/task'), '/task/local/app.tgz');
    assert.equal(localArtifactPath('file:///srv/a%20b.tgz', '/task'), '/srv/a b.tgz');
    for (const source of ['https://example.com/a.tgz', 'http://example.com/a', 'git::https://github.com/x/y', 's3::https://s3.amazonaws.com/b/k', 'gcs::https://x/y', 'git@github.com:x/y.git']) {
      assert.throws(() => localArtifactPath(source, '/task'), (e: ArtifactError) => e.code === 'TASK_ARTIFACT_UNSUPPORTED' && e.message === `artifact source ${source}: Berth fetches artifacts only from local paths and file:// URLs`);
    }
  });
});
