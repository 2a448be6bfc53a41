// Version constraints as Nomad's `version` and `semver` constraint operators
// read them. `version` follows hashicorp/go-version: lenient versions ("v1.2",
// "3.10.0-1-amd64", any number of segments, padded to three), operators
// = != > >= < <= ~> joined by commas, and a pre-release version matching an
// ordering operator only when the constraint names a pre-release of the same
// release. `semver` is strict Semantic Versioning 2.0: MAJOR.MINOR.PATCH with
// optional pre-release and build metadata, operators = != > >= < <=, and
// pre-releases ordered by the SemVer rules with no extra restriction.

export interface ParsedVersion {
  /** Numeric segments, at least three (missing ones are 0). */
  segments: number[];
  /** How many segments were written. */
  written: number;
  /** Dot-separated pre-release identifiers; empty for a release. */
  pre: string[];
}

const LENIENT = /^v?(\d+(?:\.\d+)*)(?:-?([0-9A-Za-z~-]+(?:\.[0-9A-Za-z~-]+)*))?(?:\+[0-9A-Za-z~-]+(?:\.[0-9A-Za-z~-]+)*)?$/;
const STRICT =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

/** Parses a go-version version ("1.2", "v3.10.0-beta.1+meta"); undefined when it is not one. Pure. */
export function parseLenientVersion(text: string): ParsedVersion | undefined {
  const m = LENIENT.exec(text.trim());
  if (!m) return undefined;
  const written = (m[1] as string).split('.').map(Number);
  if (written.some((n) => !Number.isSafeInteger(n))) return undefined;
  const segments = [...written];
  while (segments.length < 3) segments.push(0);
  return { segments, written: written.length, pre: m[2] ? m[2].split('.') : [] };
}

/** Parses a strict SemVer 2.0 version ("1.2.3-rc.1+build"); undefined when it is not one. Pure. */
export function parseStrictVersion(text: string): ParsedVersion | undefined {
  const m = STRICT.exec(text.trim());
  if (!m) return undefined;
  const segments = [Number(m[1]), Number(m[2]), Number(m[3])];
  return { segments, written: 3, pre: m[4] ? m[4].split('.') : [] };
}

function comparePre(a: readonly string[], b: readonly string[]): number {
  // A release sorts after every pre-release of it.
  if (a.length === 0 || b.length === 0) return a.length === b.length ? 0 : a.length === 0 ? 1 : -1;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i];
    const y = b[i];
    if (x === undefined) return -1;
    if (y === undefined) return 1;
    const xn = /^\d+$/.test(x);
    const yn = /^\d+$/.test(y);
    if (xn && yn) {
      const d = Number(x) - Number(y);
      if (d !== 0) return Math.sign(d);
    } else if (xn !== yn) return xn ? -1 : 1;
    else if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** -1, 0 or 1 as `a` sorts before, with or after `b`. Build metadata never counts. Pure. */
export function compareVersions(a: ParsedVersion, b: ParsedVersion): number {
  const n = Math.max(a.segments.length, b.segments.length);
  for (let i = 0; i < n; i++) {
    const d = (a.segments[i] ?? 0) - (b.segments[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return comparePre(a.pre, b.pre);
}

type Operator = '=' | '!=' | '>' | '>=' | '<' | '<=' | '~>';

interface Clause {
  op: Operator;
  version: ParsedVersion;
}

/** A parsed constraint: every clause must hold. */
export interface VersionConstraint {
  kind: 'version' | 'semver';
  clauses: Clause[];
}

const CLAUSE = /^(~>|>=|<=|!=|=|>|<)?\s*(\S+)$/;

/**
 * Parses a constraint such as ">= 1.2, < 2.0" (`version`, go-version syntax,
 * with "~>") or ">= 1.2.3, < 2.0.0" (`semver`, strict versions, no "~>").
 * Returns the constraint, or a message naming the clause that is wrong. Pure.
 */
export function parseVersionConstraint(text: string, kind: 'version' | 'semver'): VersionConstraint | string {
  const clauses: Clause[] = [];
  const parts = text.split(',').map((p) => p.trim());
  if (parts.every((p) => p === '')) return 'is empty; write a constraint such as ">= 1.2, < 2.0"';
  for (const part of parts) {
    const m = CLAUSE.exec(part);
    if (!m) return `has a malformed clause "${part}"`;
    const op = (m[1] ?? '=') as Operator;
    if (kind === 'semver' && op === '~>') return `uses "~>", which semver constraints do not take (use the version operator)`;
    const version = kind === 'semver' ? parseStrictVersion(m[2] as string) : parseLenientVersion(m[2] as string);
    if (!version) return `has "${m[2]}", which is not a ${kind === 'semver' ? 'semantic version such as 1.2.3' : 'version such as 1.2.3'}`;
    clauses.push({ op, version });
  }
  return { kind, clauses };
}

/** go-version's rule: an ordering operator matches a pre-release only against a pre-release of the same release. */
function prereleaseAllowed(v: ParsedVersion, c: ParsedVersion): boolean {
  const vPre = v.pre.length > 0;
  const cPre = c.pre.length > 0;
  if (cPre && vPre) return v.segments.length === c.segments.length && v.segments.every((s, i) => s === c.segments[i]);
  return !(vPre && !cPre);
}

function pessimistic(v: ParsedVersion, c: ParsedVersion): boolean {
  if (!prereleaseAllowed(v, c) || (c.pre.length > 0 && v.pre.length === 0)) return false;
  if (compareVersions(v, c) < 0) return false;
  for (let i = 0; i < c.written - 1; i++) if (v.segments[i] !== c.segments[i]) return false;
  return (c.segments[c.written - 1] ?? 0) <= (v.segments[c.written - 1] ?? 0);
}

function clauseHolds(kind: VersionConstraint['kind'], v: ParsedVersion, { op, version: c }: Clause): boolean {
  const cmp = compareVersions(v, c);
  if (op === '=') return cmp === 0;
  if (op === '!=') return cmp !== 0;
  if (op === '~>') return pessimistic(v, c);
  if (kind === 'version' && !prereleaseAllowed(v, c)) return false;
  if (op === '>') return cmp > 0;
  if (op === '>=') return cmp >= 0;
  if (op === '<') return cmp < 0;
  return cmp <= 0;
}

/** Whether `versionText` satisfies `constraint`; false when it does not parse as a version of the constraint's kind. Pure. */
export function versionSatisfies(constraint: VersionConstraint, versionText: string): boolean {
  const v = constraint.kind === 'semver' ? parseStrictVersion(versionText) : parseLenientVersion(versionText);
  if (!v) return false;
  return constraint.clauses.every((c) => clauseHolds(constraint.kind, v, c));
}
