import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { archiveKind, fetchArtifact, parseBytes, type ArtifactError } from './index.js';

// Archives and compressed files as go-getter's decompressors unpack them,
// made here with the system's tar, gzip, bzip2, xz and zstd.

describe('compressed artifacts', () => {
  let dir = '';
  let content = '';
  before(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'bdec-'));
    content = path.join(dir, 'content');
    mkdirSync(path.join(content, 'conf'), { recursive: true });
    writeFileSync(path.join(content, 'conf', 'a.txt'), 'A\n');
    writeFileSync(path.join(content, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    const tarFrom = (file: string, ...flags: string[]): void => void execFileSync('tar', [...flags, '-cf', path.join(dir, file), '-C', content, '.']);
    tarFrom('b.tar.bz2', '--bzip2');
    tarFrom('b.tbz2', '--bzip2');
    tarFrom('b.tar.xz', '--xz');
    tarFrom('b.txz', '--xz');
    tarFrom('b.tar.zst', '--zstd');
    writeFileSync(path.join(dir, 'notes.txt'), 'notes\n'.repeat(1000));
    for (const [tool, ext] of [['gzip', 'gz'], ['bzip2', 'bz2'], ['xz', 'xz'], ['zstd', 'zst']] as const) {
      writeFileSync(path.join(dir, `notes.txt.${ext}`), execFileSync(tool, ['-c', path.join(dir, 'notes.txt')]));
    }
    // Ten files for the count limit.
    const many = path.join(dir, 'many');
    mkdirSync(many);
    for (let i = 0; i < 10; i++) writeFileSync(path.join(many, `f${i}`), 'x');
    execFileSync('tar', ['--xz', '-cf', path.join(dir, 'many.tar.xz'), '-C', many, '.']);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const tree = (root: string): string[] => readdirSync(root, { recursive: true, encoding: 'utf8' }).sort();
  const fresh = (name: string): string => path.join(dir, 'out', name);
  const failedWith = (re: RegExp) => (e: ArtifactError) => e.code === 'TASK_ARTIFACT_FAILED' && re.test(e.message);

  it("names an archive by its longest extension among go-getter's decompressors", () => {
    assert.deepEqual(
      ['a.tar.gz', 'a.TGZ', 'a.tar.bz2', 'a.tbz2', 'a.tar.xz', 'a.txz', 'a.tar.zst', 'a.tzst', 'a.gz', 'a.bz2', 'a.xz', 'a.zst', 'a.zip', 'a.tar', 'a.txt'].map(archiveKind),
      ['tgz', 'tgz', 'tbz2', 'tbz2', 'txz', 'txz', 'tzst', 'tzst', 'gz', 'bz2', 'xz', 'zst', 'zip', 'tar', undefined],
    );
  });

  for (const archive of ['b.tar.bz2', 'b.tbz2', 'b.tar.xz', 'b.txz', 'b.tar.zst']) {
    it(`unpacks ${archive} into the destination, keeping modes`, async () => {
      const dest = fresh(archive);
      await fetchArtifact(path.join(dir, archive), dest, { mode: 'any', archive: undefined, label: archive });
      assert.deepEqual(tree(dest), ['conf', 'conf/a.txt', 'run.sh']);
      assert.equal(readFileSync(path.join(dest, 'conf', 'a.txt'), 'utf8'), 'A\n');
      assert.equal(statSync(path.join(dest, 'run.sh')).mode & 0o777, 0o755);
    });
  }

  for (const ext of ['gz', 'bz2', 'xz', 'zst']) {
    it(`writes a .${ext} file decompressed in mode file, and refuses it in mode any as go-getter does`, async () => {
      const src = path.join(dir, `notes.txt.${ext}`);
      const dest = path.join(fresh(`single-${ext}`), 'notes.txt');
      await fetchArtifact(src, dest, { mode: 'file', archive: undefined, label: `notes.txt.${ext}` });
      assert.equal(readFileSync(dest, 'utf8'), 'notes\n'.repeat(1000));
      await assert.rejects(fetchArtifact(src, fresh(`any-${ext}`), { mode: 'any', archive: undefined, label: 'n' }), failedWith(/-compressed files can only unarchive to a single file \(set mode = "file"/));
      // archive = false keeps it compressed, under its own name.
      await fetchArtifact(src, fresh(`kept-${ext}`), { mode: 'any', archive: false, label: 'n' });
      assert.deepEqual(tree(fresh(`kept-${ext}`)), [`notes.txt.${ext}`]);
    });
  }

  it("refuses what would unpack past the client's decompression limits, leaving no partial file", async () => {
    const src = path.join(dir, 'notes.txt.xz');
    const dest = path.join(fresh('too-big'), 'notes.txt');
    await assert.rejects(fetchArtifact(src, dest, { mode: 'file', archive: undefined, label: 'n', limits: { sizeLimit: 1000, fileCountLimit: 0 } }), failedWith(/cannot unpack: decompressed file larger than limit: 1000$/));
    assert.equal(existsSync(dest), false);
    const tarLimits = (sizeLimit: number, fileCountLimit: number) => ({ mode: 'any' as const, archive: undefined, label: 'many', limits: { sizeLimit, fileCountLimit } });
    await assert.rejects(fetchArtifact(path.join(dir, 'many.tar.xz'), fresh('many'), tarLimits(0, 5)), failedWith(/tar archive contains too many files: 6 > 5$/));
    await assert.rejects(fetchArtifact(path.join(dir, 'many.tar.xz'), fresh('many-big'), tarLimits(5, 0)), failedWith(/tar archive larger than limit: 5$/));
    await fetchArtifact(path.join(dir, 'many.tar.xz'), fresh('many-ok'), tarLimits(10, 11));
    assert.equal(tree(fresh('many-ok')).length, 10);
  });

  it('refuses a corrupt compressed file', async () => {
    const bad = path.join(dir, 'bad.tar.bz2');
    writeFileSync(bad, 'BZh9 this is not bzip2 data at all');
    await assert.rejects(fetchArtifact(bad, fresh('bad'), { mode: 'any', archive: undefined, label: 'bad.tar.bz2' }), failedWith(/^artifact source bad\.tar\.bz2: cannot unpack: /));
  });

  it('reads sizes as go-humanize does', () => {
    assert.deepEqual(['100GB', '1.5 MiB', '4096', '2kb', '3 GiB', 'lots'].map(parseBytes), [100e9, 1572864, 4096, 2000, 3 * 2 ** 30, undefined]);
  });
});
