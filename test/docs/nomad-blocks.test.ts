// The README's "Coming from Nomad" says, block by block, which of Nomad's job
// file blocks Berth runs and which it refuses. That table is read here and
// held against the parser's own block table (spec-files' JOB_BODY), so that a
// block that gains meaning, or loses it, cannot leave the README behind:
//
// - every block the parser takes at a level is in the "runs" cell of that
//   level's row, and every name there is one the parser takes;
// - every block the parser refuses by name is in the "refused" cell, and no
//   name there is one the parser takes; `x { a, b }` there means x's blocks
//   a and b are refused;
// - `x { a, b }` in the "runs" cell names blocks the parser takes inside x.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { JOB_BODY, type SpecBody, type SpecField } from '../../src/spec-files/index.js';
import { REPO } from '../support/agent-run.js';

interface Named {
  name: string;
  inner: string[];
}

/** The names of a cell: `` `spread { target }`, `vault` `` -> spread (target), vault. Words after a name, "(on a job)", are not names. */
function names(cell: string): Named[] {
  return [...cell.matchAll(/`([a-z_]+)(?: \{ ([^}`]*(?:\{[^}]*\}[^}`]*)*) \})?`/g)].map((m) => ({
    name: m[1] ?? '',
    inner: (m[2] ?? '')
      .replace(/\{[^}]*\}/g, '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  }));
}

const isBlock = (f: SpecField): f is Exclude<SpecField, { t: 'attr' | 'map' }> => f.t !== 'attr' && f.t !== 'map';
const refused = (f: SpecField): boolean => isBlock(f) && Object.keys(f.body).length === 0;
const bodyOf = (f: SpecField | undefined): SpecBody => (f && isBlock(f) ? f.body : {});

/** The rows of the README's block table: level -> its two cells. */
function blockTable(): Map<string, { runs: Named[]; refused: Named[] }> {
  const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Coming from Nomad'));
  const rows = new Map<string, { runs: Named[]; refused: Named[] }>();
  for (const line of section.split('\n')) {
    const m = /^\| `(job|group|task)` \| (.*) \| (.*) \|$/.exec(line);
    if (m) rows.set(m[1] ?? '', { runs: names(m[2] ?? ''), refused: names(m[3] ?? '') });
  }
  return rows;
}

const GROUP = bodyOf(JOB_BODY.group);
const LEVELS: Record<string, SpecBody> = { job: JOB_BODY, group: GROUP, task: bodyOf(GROUP.task) };

describe("README's Coming from Nomad, block by block", () => {
  const rows = blockTable();

  it('has a row for the job, the group and the task', () => {
    assert.deepEqual([...rows.keys()].sort(), ['group', 'job', 'task']);
  });

  for (const [level, body] of Object.entries(LEVELS)) {
    it(`the ${level} row names every block the parser takes there, and only those`, () => {
      const row = rows.get(level);
      assert.ok(row, `no \`${level}\` row`);
      const listed = new Set(row.runs.map((n) => n.name));
      const taken = Object.keys(body).filter((k) => isBlock(body[k] as SpecField) && !refused(body[k] as SpecField));
      assert.deepEqual(
        taken.filter((k) => !listed.has(k)),
        [],
        `README's \`${level}\` row leaves out blocks the parser takes`,
      );
      for (const n of row.runs) {
        const field = body[n.name];
        assert.ok(field && !refused(field), `README says \`${level}\` runs \`${n.name}\`, which the parser does not take there`);
        for (const inner of n.inner) {
          const f = bodyOf(field)[inner];
          assert.ok(f && !refused(f), `README says \`${n.name}\` in a ${level} holds \`${inner}\`, which the parser does not take there`);
        }
      }
    });

    it(`the ${level} row's refused cell holds every block the parser refuses there, and none it takes`, () => {
      const row = rows.get(level);
      assert.ok(row, `no \`${level}\` row`);
      const listed = new Set(row.refused.filter((n) => n.inner.length === 0).map((n) => n.name));
      const refusedThere = Object.keys(body).filter((k) => refused(body[k] as SpecField));
      assert.deepEqual(
        refusedThere.filter((k) => !listed.has(k)),
        [],
        `README's \`${level}\` row does not say these are refused`,
      );
      for (const n of row.refused) {
        const field = body[n.name];
        if (n.inner.length === 0) {
          assert.ok(!field || refused(field), `README says \`${level}\` refuses \`${n.name}\`, which the parser takes there`);
          continue;
        }
        for (const inner of n.inner) {
          const f = bodyOf(field)[inner];
          assert.ok(f && refused(f), `README says \`${n.name}\` in a ${level} refuses \`${inner}\`, which the parser does not refuse by name`);
        }
      }
    });
  }
});
