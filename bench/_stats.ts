// Small helpers for benchmarks: timing samples and percentiles.

export interface Summary {
  n: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  meanUs: number;
}

/** Summarises samples given in nanoseconds as microsecond percentiles. */
export function summarize(samplesNs: readonly bigint[]): Summary {
  const us = samplesNs.map((n) => Number(n) / 1000).sort((a, b) => a - b);
  const at = (q: number): number => round(us[Math.min(us.length - 1, Math.floor(q * us.length))] ?? 0);
  return {
    n: us.length,
    p50Us: at(0.5),
    p90Us: at(0.9),
    p99Us: at(0.99),
    meanUs: round(us.reduce((a, b) => a + b, 0) / Math.max(1, us.length)),
  };
}

export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Times one async call in nanoseconds. */
export async function timeNs(fn: () => Promise<unknown>): Promise<bigint> {
  const start = process.hrtime.bigint();
  await fn();
  return process.hrtime.bigint() - start;
}
