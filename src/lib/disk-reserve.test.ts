// The reserve file beside a state file: made whole or not at all, in the
// background as the stores begin it at open, and spent to free its room.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DiskReserve } from './disk-reserve.js';

describe('DiskReserve', () => {
  it('made in the background: whole once the promise resolves, one making at a time, restore() meanwhile writes nothing', async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'berth-reserve-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const reserve = new DiskReserve(path.join(dir, 'state.db.reserve'), 3 * 1024 * 1024 + 5);
    const making = reserve.restoreInBackground({ spareFactor: 2 });
    assert.equal(reserve.restoreInBackground(), making, 'a second call joins the first');
    assert.equal(reserve.restore(), false, 'not in place while it is being made');
    assert.equal(await making, true);
    assert.equal(reserve.inPlace, true);
    assert.equal(statSync(reserve.path).size, 3 * 1024 * 1024 + 5, 'every byte of it');
    assert.deepEqual(readdirSync(dir), ['state.db.reserve'], 'no half-written file left');
    assert.equal(await reserve.restoreInBackground(), true, 'in place already');
    // Spent to let a freeing write land, then made again.
    assert.equal(reserve.spend(), true);
    assert.equal(existsSync(reserve.path), false);
    assert.equal(reserve.restore(), true);
    assert.equal(statSync(reserve.path).size, 3 * 1024 * 1024 + 5);
  });

  it('not made when the disk lacks room for spareFactor reserves, nor where it cannot be written; never rejects', async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'berth-reserve-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const huge = new DiskReserve(path.join(dir, 'huge.reserve'), Number.MAX_SAFE_INTEGER / 4);
    assert.equal(await huge.restoreInBackground({ spareFactor: 2 }), false);
    assert.equal(huge.inPlace, false);
    const nowhere = new DiskReserve(path.join(dir, 'missing-dir', 'x.reserve'), 1024);
    assert.equal(await nowhere.restoreInBackground(), false);
    assert.deepEqual(readdirSync(dir), [], 'nothing left behind');
  });

  it('abandoned while being made (its store closes): its directory can be removed at once, and nothing appears in it after', async (t) => {
    for (const when of ['before a byte is written', 'after some are written', 'before the disk is looked at']) {
      const dir = mkdtempSync(path.join(tmpdir(), 'berth-reserve-'));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const reserve = new DiskReserve(path.join(dir, 'state.db.reserve'), 64 * 1024 * 1024);
      const making = reserve.restoreInBackground(when === 'before the disk is looked at' ? { spareFactor: 1 } : {});
      if (when === 'after some are written') await new Promise((resolve) => setImmediate(resolve));
      reserve.abandon();
      assert.deepEqual(readdirSync(dir), [], when);
      rmSync(dir, { recursive: true });
      assert.equal(await making, false, when);
      assert.equal(existsSync(dir), false, `${when}: nothing made the directory again`);
      assert.equal(reserve.restore(), false, `${when}: an abandoned reserve is never made again`);
      assert.equal(existsSync(dir), false);
    }
  });
});
