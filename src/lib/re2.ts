// Regular expressions with Go's meaning (RE2): what Nomad's `regexp`
// constraints and affinities and go-bexpr's `matches` run. JavaScript's own
// engine differs both ways: it refuses RE2's `(?i)` flag groups and takes
// lookaround and backreferences, which RE2 refuses. re2js is a port of RE2
// (linear time, no backtracking), so a pattern a user wrote for Nomad means
// here what it means there.

import { RE2JS } from 're2js';

/** A compiled RE2 pattern. */
export interface Re2 {
  /** True when the pattern matches anywhere in `s` (Go's MatchString). */
  test(s: string): boolean;
}

/** Thrown by compileRe2: RE2's own words for what is wrong. */
export class Re2SyntaxError extends Error {
  override readonly name = 'Re2SyntaxError';
}

/** Compiles `pattern` as Go's regexp.Compile does. Throws Re2SyntaxError. */
export function compileRe2(pattern: string): Re2 {
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(pattern);
  } catch (err) {
    throw new Re2SyntaxError((err as Error).message.replace(/^error parsing regexp: /, ''));
  }
  return { test: (s) => compiled.matcher(s).find() };
}
