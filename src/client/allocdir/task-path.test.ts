import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { AllocDir, mayReadHostPath, reallyInside, resolveTaskPath } from './index.js';

// Where a job's template and artifact paths land, and what they may read.

describe('task paths', () => {
  const root = mkdtempSync(path.join(tmpdir(), 'btp-'));
  after(() => rmSync(root, { recursive: true, force: true }));
  const alloc = new AllocDir({ root, allocId: 'a1' });
  const td = alloc.task('web');

  it('takes relative and chroot-style paths under the task directory and keeps host paths already inside the allocation', () => {
    assert.equal(resolveTaskPath(td, alloc.dir, 'local/app.conf'), path.join(td.dir, 'local/app.conf'));
    assert.equal(resolveTaskPath(td, alloc.dir, '/local/app.conf'), path.join(td.dir, 'local/app.conf'));
    assert.equal(resolveTaskPath(td, alloc.dir, path.join(td.localDir, 'app.conf')), path.join(td.localDir, 'app.conf'));
    assert.equal(resolveTaskPath(td, alloc.dir, '../alloc/data/x'), path.join(alloc.dir, 'alloc/data/x'));
    assert.equal(resolveTaskPath(td, alloc.dir, '../../other/x'), undefined);
    assert.equal(resolveTaskPath(td, alloc.dir, 'local/../../../etc/passwd'), undefined);
  });

  it('sees through a symlink a task made out of the allocation', async () => {
    mkdirSync(td.localDir, { recursive: true });
    symlinkSync('/etc', path.join(td.localDir, 'etc-link'));
    assert.equal(await reallyInside(path.join(td.localDir, 'new/deeper/file'), alloc.dir), true);
    assert.equal(await reallyInside(path.join(td.localDir, 'etc-link/cron.d'), alloc.dir), false);
    assert.equal(await mayReadHostPath(path.join(td.localDir, 'etc-link/hostname'), alloc.dir, []), false);
  });

  it('reads host files only inside the allocation and the file roots', async () => {
    const releases = path.join(root, 'releases');
    mkdirSync(releases);
    writeFileSync(path.join(releases, 'app.tgz'), '');
    symlinkSync('/etc/hostname', path.join(releases, 'sneaky'));
    assert.equal(await mayReadHostPath(path.join(releases, 'app.tgz'), alloc.dir, [releases]), true);
    assert.equal(await mayReadHostPath(path.join(releases, 'sneaky'), alloc.dir, [releases]), false);
    assert.equal(await mayReadHostPath('/etc/hostname', alloc.dir, []), false);
    assert.equal(await mayReadHostPath('/etc/hostname', alloc.dir, ['/']), true);
    assert.equal(await mayReadHostPath('/etc/hostname', alloc.dir, undefined), true);
    assert.equal(await mayReadHostPath(path.join(td.localDir, 'mine.tpl'), alloc.dir, []), true);
  });
});
