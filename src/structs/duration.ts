// Duration strings as job specs write them ("500ms", "30s", "1h30m").

import { BerthError } from '../lib/index.js';

export const DURATION = /^(\d+(\.\d+)?(ms|s|m|h))+$/;

/** Milliseconds in a duration string such as "1h30m" or "500ms". Throws on a malformed string. */
export function durationMs(text: string): number {
  if (!DURATION.test(text)) throw new BerthError('INVALID', `"${text}" is not a duration`);
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(m[1]) * (units[m[2] as string] as number);
  return Math.round(total);
}

