// When a periodic job launches: its cron expressions read as Nomad reads
// them (gorhill/cronexpr: five fields, or six with a year at the end, or
// seven with seconds first and a year at the end; @hourly, @daily...), in
// its time zone (UTC by default). Pure functions over epoch milliseconds.

import { Cron } from 'croner';

/** Child jobs of a periodic job are named `<parent>/periodic-<unix seconds>`, as Nomad names them. */
export const PERIODIC_LAUNCH_SUFFIX = '/periodic-';
/** Child jobs of a parameterized job are named `<parent>/dispatch-<unix seconds>-<8 hex>`. */
export const DISPATCH_LAUNCH_SUFFIX = '/dispatch-';

/** The largest payload a dispatch may carry, as Nomad's limit: 16 KiB. */
export const MAX_DISPATCH_PAYLOAD_BYTES = 16 * 1024;

/** A cron expression in croner's words (seconds first; a year last when seven fields). */
function cronerPattern(expr: string): string {
  const text = expr.trim();
  if (text.startsWith('@')) return text;
  const fields = text.split(/\s+/);
  // cronexpr: six fields are minute..day-of-week and a year; croner's six start with seconds.
  if (fields.length === 6) return `0 ${text}`;
  return text;
}

function cronOf(expr: string, timeZone: string): Cron {
  return new Cron(cronerPattern(expr), { paused: true, ...(timeZone && timeZone !== 'UTC' ? { timezone: timeZone } : { utcOffset: 0 }) });
}

/**
 * What is wrong with a cron expression in a time zone, in a user's words, or
 * undefined when it is fine. Pure.
 */
export function cronProblem(expr: string, timeZone = 'UTC'): string | undefined {
  try {
    cronOf(expr, timeZone).nextRun(new Date(0));
    return undefined;
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    if (/timezone/i.test(text)) return `time zone "${timeZone}" is not an IANA time zone (such as "UTC" or "Europe/Berlin")`;
    return `"${expr}" is not a cron expression (five fields: minute hour day-of-month month day-of-week, e.g. "*/15 * * * *")`;
  }
}

/**
 * The first launch strictly after `afterMs` of any of `crons` in `timeZone`,
 * in epoch milliseconds; undefined when none will ever come (a past year).
 * Throws on an expression cronProblem refuses.
 */
export function nextLaunch(crons: readonly string[], timeZone: string, afterMs: number): number | undefined {
  let best: number | undefined;
  for (const expr of crons) {
    const next = cronOf(expr, timeZone).nextRun(new Date(afterMs))?.getTime();
    if (next !== undefined && next > afterMs && (best === undefined || next < best)) best = next;
  }
  return best;
}

/** A periodic or parameterized job: it launches child jobs and places nothing itself. Pure. */
export function launchesChildren(job: { periodic?: unknown; parameterized?: unknown }): boolean {
  return job.periodic !== undefined || job.parameterized !== undefined;
}
