// `npm run bench`: every section `bench/*.bench.ts` in turn, figures printed
// and written to bench/results.json. `BENCH_ONLY=csi,client` runs only the
// named sections (the file name without `.bench.ts`); the sections not run
// keep their previous figures in the JSON file.
//
// A section's default export takes a fresh temporary directory, prints its
// figures as it goes and returns them as a JSON-friendly object.

import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { round } from './_stats.js';

type Section = (dir: string) => Promise<Record<string, unknown>>;

async function main(): Promise<void> {
  const only = process.env['BENCH_ONLY']?.split(',').filter(Boolean);
  const names = readdirSync(import.meta.dirname)
    .filter((f) => f.endsWith('.bench.ts'))
    .map((f) => f.slice(0, -'.bench.ts'.length))
    .filter((n) => !only || only.includes(n))
    .sort();
  const file = join(import.meta.dirname, 'results.json');
  const previous = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>) : {};
  const sections = (previous['sections'] as Record<string, unknown> | undefined) ?? {};
  console.log(`Berth benchmarks (node ${process.version}): ${names.join(', ')}`);
  for (const name of names) {
    const mod = (await import(`./${name}.bench.ts`)) as { default: Section };
    const dir = mkdtempSync(join(tmpdir(), `bb-${name}-`));
    console.log(`\n== ${name}`);
    try {
      sections[name] = { date: new Date().toISOString(), ...(await mod.default(dir)) };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const mem = process.memoryUsage();
  const memory = { rssMiB: round(mem.rss / 2 ** 20), heapUsedMiB: round(mem.heapUsed / 2 ** 20) };
  console.log(`\nbench process memory: rss ${memory.rssMiB} MiB, heap used ${memory.heapUsedMiB} MiB`);
  writeFileSync(file, JSON.stringify({ date: new Date().toISOString(), node: process.version, sections, memory }, null, 2) + '\n');
  console.log(`figures written to ${file}`);
}

await main();
