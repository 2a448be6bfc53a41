import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';

// Each case in a fresh Node process (what V8 does with its young generation is per process), which holds the
// young generation, makes ~300,000 objects that live on, lets it go, and makes as many again.
const child = (nodeArgs: string[] = [], env: Record<string, string> = {}): { before: number; held: number; released: number; wasHeld: boolean } => {
  const script = `
import { getHeapSpaceStatistics } from 'node:v8';
import { holdYoungGeneration, releaseYoungGeneration, youngGenerationHeld } from ${JSON.stringify(new URL('./young-generation.ts', import.meta.url).href)};
const newSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
const keep = [];
const make = () => { for (let i = 0; i < 300000; i++) keep.push({ i, s: 'x' + i }); };
holdYoungGeneration();
holdYoungGeneration();
const wasHeld = youngGenerationHeld();
const before = newSpace();
make();
const held = newSpace();
releaseYoungGeneration();
releaseYoungGeneration();
make();
console.log(JSON.stringify({ before, held, released: newSpace(), wasHeld }));
`;
  const out = execFileSync(process.execPath, [...nodeArgs, '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, ...env } });
  return JSON.parse(out) as { before: number; held: number; released: number; wasHeld: boolean };
};

describe('the young generation held during a start', () => {
  it('does not grow while held, however much lives on, and grows again once let go', () => {
    const r = child();
    assert.equal(r.wasHeld, true);
    assert.equal(r.held, r.before, 'held: the young generation kept its size');
    assert.ok(r.released > r.held, `let go: it grew again (${r.held} -> ${r.released} bytes)`);
  });

  it('leaves a young generation sized by flags given to Node alone', () => {
    for (const r of [child(['--max-semi-space-size=2']), child([], { NODE_OPTIONS: '--max-semi-space-size=4' })]) assert.equal(r.wasHeld, false);
  });
});
