// Where a process's resident memory lives, for the memory figures of the
// benchmarks: /proc/<pid>/smaps read mapping by mapping and sorted into
// glibc malloc's main arena ([heap]), its other arenas (64 MiB-aligned
// anonymous regions), thread stacks, files (code and data of node and its
// libraries) and the remaining anonymous mappings (V8's heap pages, code
// space and large malloc blocks); the agent's V8 figures come from its
// /v1/metrics?format=prometheus (prom-client's Node.js gauges).

import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { round } from './_stats.js';

/** Resident KiB by kind of mapping. */
export interface RssBreakdown {
  mallocMain: number;
  mallocArenas: number;
  stacks: number;
  files: number;
  otherAnon: number;
  total: number;
}

interface Mapping {
  start: bigint;
  end: bigint;
  perms: string;
  name: string;
  rssKiB: number;
}

const ARENA = 64n << 20n; // glibc's HEAP_MAX_SIZE on 64-bit: each non-main arena is one such aligned region

function mappings(pid: number): Mapping[] {
  const out: Mapping[] = [];
  let cur: Mapping | undefined;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      cur = { start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), perms: head[3]!, name: head[4]!.trim(), rssKiB: 0 };
      out.push(cur);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && cur) cur.rssKiB = Number(rss[1]);
  }
  return out;
}

/** Sorts the resident memory of `pid` by kind of mapping (KiB). Throws when the process is gone. */
export function rssBreakdown(pid: number): RssBreakdown {
  const maps = mappings(pid);
  const b: RssBreakdown = { mallocMain: 0, mallocArenas: 0, stacks: 0, files: 0, otherAnon: 0, total: 0 };
  for (const [i, m] of maps.entries()) {
    b.total += m.rssKiB;
    if (m.name === '[heap]') b.mallocMain += m.rssKiB;
    else if (m.name === '[stack]') b.stacks += m.rssKiB;
    else if (m.name.startsWith('/')) b.files += m.rssKiB;
    else if (m.name !== '') b.otherAnon += m.rssKiB;
    else if (m.start % ARENA === 0n && (m.end - m.start === ARENA || (maps[i + 1]?.perms.startsWith('---') && maps[i + 1]!.end - m.start === ARENA))) b.mallocArenas += m.rssKiB;
    // a thread stack: 8 MiB (the default RLIMIT_STACK) read-write after a guard page
    else if (m.end - m.start >= 8n << 20n && m.end - m.start <= (8n << 20n) + 4096n && maps[i - 1]?.perms.startsWith('---') && maps[i - 1]!.end === m.start) b.stacks += m.rssKiB;
    else b.otherAnon += m.rssKiB;
  }
  return b;
}

export function formatBreakdown(b: RssBreakdown): string {
  const mib = (k: number): number => round(k / 1024);
  return `malloc main ${mib(b.mallocMain)}, malloc arenas ${mib(b.mallocArenas)}, other anon (V8 heap, code, big mallocs) ${mib(b.otherAnon)}, stacks ${mib(b.stacks)}, files ${mib(b.files)} MiB`;
}

/** The V8 figures (MiB) of an agent's /v1/metrics?format=prometheus text. */
export function v8Figures(metrics: string): Record<string, number> {
  const at = (re: RegExp): number => round(Number(re.exec(metrics)?.[1] ?? NaN) / 2 ** 20);
  const out: Record<string, number> = {
    heapTotal: at(/^nodejs_heap_size_total_bytes (\S+)$/m),
    heapUsed: at(/^nodejs_heap_size_used_bytes (\S+)$/m),
    external: at(/^nodejs_external_memory_bytes (\S+)$/m),
  };
  for (const m of metrics.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\} (\S+)$/gm)) out[`${m[1]}Committed`] = round(Number(m[2]) / 2 ** 20);
  return out;
}

/**
 * Asks the process's glibc (through gdb, which must be installed) how much
 * of its malloc memory is free but still held, then has it hand that back
 * (`malloc_trim(0)`). Returns the free bytes malloc held (MiB) and the RSS
 * after the trim (MiB). A diagnostic only: it stops the process for a moment.
 */
export function mallocProbe(pid: number, scratch: string): { freeHeldMiB: number; arenas: number; rssAfterTrimMiB: number } {
  const file = `${scratch}/malloc-info-${pid}.xml`;
  execFileSync('gdb', ['-p', String(pid), '-batch', '-nx',
    '-ex', `call (void*)fopen("${file}", "w")`,
    '-ex', 'call (int)malloc_info(0, $1)',
    '-ex', 'call (int)fclose($1)',
    '-ex', 'call (int)malloc_trim(0)'], { stdio: 'ignore', timeout: 60_000 });
  const xml = readFileSync(file, 'utf8');
  rmSync(file, { force: true });
  // The closing totals: <total type="fast"|"rest" count=".." size=".."/> after the last </heap>.
  const tail = xml.slice(xml.lastIndexOf('</heap>'));
  const free = [...tail.matchAll(/<total type="(?:fast|rest)" count="\d+" size="(\d+)"\/>/g)].reduce((a, m) => a + Number(m[1]), 0);
  const arenas = (xml.match(/<heap nr=/g) ?? []).length;
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  return { freeHeldMiB: round(free / 2 ** 20), arenas, rssAfterTrimMiB: round(rss / 1024) };
}

/** How many of the process's file descriptors are sockets (0 once gone). */
export function openSockets(pid: number): number {
  let n = 0;
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')) n++;
      } catch {
        // closed meanwhile
      }
    }
  } catch {
    return 0;
  }
  return n;
}
