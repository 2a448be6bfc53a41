// V8's young generation held at its first size while the agent starts (issue 40).
//
// A start allocates ~20 MB of objects that live on (modules, schemas, routes,
// the server's and the client's parts), and V8's scavenger grows the young
// generation whenever most of what it holds survives, as at a start: its
// semi-spaces go from 1 MB to 8-16 MB, memory the process touches for the first
// time and then holds only briefly. On the VMs measured a fresh 4 KB page costs
// 16-35 us at its first touch, so that growth cost a start ~1,400 page faults
// by its first answer and ~2,800 by its first job running; held at its first
// size, the young generation copies what lives on to the old generation as
// before, in more but smaller scavenges over the same pages. Once the agent is
// first idle the growth comes back (a burst of requests then has the young
// generation it had before).
//
// A runtime flag: Node reads `--semi-space-growth-factor` from its command line
// too late for it to matter (checked: the young generation still grows), while
// set here it acts at the next scavenge. V8 hashes its flags into a code cache
// and refuses a cache made under other flags, so code-cache.ts holds the
// young generation only once V8 has taken the cache, and lets it go before
// writing one: both at V8's default.

import { setFlagsFromString } from 'node:v8';

/** How much the young generation grows at a time: 1 holds it; V8's default is 2. */
const HELD = '--semi-space-growth-factor=1';
const V8_DEFAULT = '--semi-space-growth-factor=2';

let held = false;

/**
 * Holds the young generation at its size now, unless Node was given flags of its own for the young
 * generation's size (then they stand). Does not block; safe to repeat.
 */
export function holdYoungGeneration(): void {
  if (held || /semi[-_]space/.test([...process.execArgv, process.env['NODE_OPTIONS'] ?? ''].join(' '))) return;
  setFlagsFromString(HELD);
  held = true;
}

/** Lets the young generation grow again as V8's default has it. Does not block; safe to repeat; nothing unless held. */
export function releaseYoungGeneration(): void {
  if (!held) return;
  setFlagsFromString(V8_DEFAULT);
  held = false;
}

/** Whether the young generation is held now (for tests and the agent's log). Pure. */
export function youngGenerationHeld(): boolean {
  return held;
}
