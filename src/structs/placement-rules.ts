// Placement rules a job, group or task carries: `constraint` (where it may
// run), `affinity` (where it prefers to run, weighted) and `spread` (how its
// allocations spread over a node attribute), in Nomad's shapes
// (LTarget/Operand/RTarget). The schema accepts Nomad's HCL shorthands
// (`version = ">= 1.2"`, `distinct_hosts = true`, `distinct_property =
// "${meta.rack}"`, ...) and turns them into the one canonical form; it checks
// operators, regular expressions and version constraints so that a mistake is
// reported at the user's line instead of filtering every node.

import { z } from 'zod';
import { compileRe2, parseVersionConstraint } from '../lib/index.js';
import { lazySchema } from '../api/index.js';

/** Every operator Nomad's constraint and affinity blocks take (with its aliases). */
export const CONSTRAINT_OPERATORS = [
  '=',
  '==',
  'is',
  '!=',
  'not',
  '>',
  '>=',
  '<',
  '<=',
  'regexp',
  'set_contains',
  'set_contains_all',
  'set_contains_any',
  'version',
  'semver',
  'is_set',
  'is_not_set',
  'distinct_hosts',
  'distinct_property',
] as const;

/** A placement constraint: `attribute` (Nomad's LTarget) `operator` `value` (RTarget). */
export interface Constraint {
  attribute: string;
  operator: string;
  value: string;
}
export interface Affinity extends Constraint {
  /** -100..100, not 0; negative means "avoid". */
  weight: number;
}
export interface Spread {
  attribute: string;
  /** 1..100: its share when several spreads score a node. */
  weight: number;
  /** Desired shares by attribute value; empty means "spread evenly". */
  targets: Array<{ value: string; percent: number }>;
}

/** Operators that compare against nothing on the right. */
const NO_VALUE = new Set(['is_set', 'is_not_set', 'distinct_hosts']);
/** Shorthand keys (camelCased, as the HCL converter gives them) that name the operator and carry the value. */
const SHORTHANDS = ['version', 'semver', 'regexp', 'setContains', 'setContainsAll', 'setContainsAny', 'distinctHosts', 'distinctProperty'] as const;
const SHORTHAND_OPERATOR: Record<(typeof SHORTHANDS)[number], string> = {
  version: 'version',
  semver: 'semver',
  regexp: 'regexp',
  setContains: 'set_contains',
  setContainsAll: 'set_contains_all',
  setContainsAny: 'set_contains_any',
  distinctHosts: 'distinct_hosts',
  distinctProperty: 'distinct_property',
};

/** Targets a rule may interpolate: node fields, `attr.*` and `meta.*`. */
const TARGET = /^\$\{(node\.(unique\.id|unique\.name|datacenter|class|region|pool)|attr\..+|meta\..+)\}$/;

/**
 * The `${...}` target of a rule's attribute or value that names nothing a
 * node has (a typo such as `${nod.class}`), or undefined. Pure.
 */
export function unknownTarget(raw: { attribute?: unknown; value?: unknown }): string | undefined {
  for (const t of [raw.attribute, raw.value]) if (typeof t === 'string' && t.startsWith('${') && !TARGET.test(t)) return t;
  return undefined;
}

const scalar = lazySchema(() => z.union([z.string(), z.number(), z.boolean()]).transform(String));

const ruleFields = () => ({
  attribute: z.string().optional(),
  operator: z.string().optional(),
  value: scalar.optional(),
  ...Object.fromEntries(SHORTHANDS.map((k) => [k, scalar.optional()])),
}) as Record<string, z.ZodType<string | undefined>>;

type RawRule = Record<string, string | undefined>;

/**
 * Checks one raw rule and reports each problem at the field the user wrote.
 * `affinity` rules may not use distinct_* (Nomad refuses them too).
 */
function checkRule(raw: RawRule, ctx: z.RefinementCtx, affinity: boolean): void {
  const shorthand = SHORTHANDS.filter((k) => raw[k] !== undefined);
  if (shorthand.length > 1 || (shorthand.length === 1 && raw['operator'] !== undefined)) {
    ctx.addIssue({ code: 'custom', path: [shorthand[shorthand.length - 1] as string], message: 'a rule takes one operator: either operator = "..." or one shorthand such as version = "..."' });
    return;
  }
  const { operator, value, field } = canonicalParts(raw);
  if (!(CONSTRAINT_OPERATORS as readonly string[]).includes(operator)) {
    ctx.addIssue({ code: 'custom', path: ['operator'], message: `unknown operator "${operator}"; use one of ${CONSTRAINT_OPERATORS.join(', ')}` });
    return;
  }
  if (affinity && operator.startsWith('distinct_')) {
    ctx.addIssue({ code: 'custom', path: [field], message: `operator "${operator}" is for constraints only, not affinities` });
    return;
  }
  const attribute = operator === 'distinct_property' && raw['distinctProperty'] !== undefined ? raw['distinctProperty'] : raw['attribute'];
  if (operator !== 'distinct_hosts' && !attribute) {
    ctx.addIssue({ code: 'custom', path: ['attribute'], message: `operator "${operator}" needs an attribute such as "\${meta.rack}"` });
  }
  // An unknown target (`${nod.class}`) is no error, as in Nomad: no node has it, so the rule holds nowhere and the job stays blocked. Job files note it (unknownTarget).
  if (NO_VALUE.has(operator) || operator === 'distinct_property') {
    if (operator === 'distinct_property' && value !== '' && !/^[1-9]\d*$/.test(value)) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: 'distinct_property takes as value how many allocations may share a value (a positive integer)' });
    }
    return;
  }
  if (value === '') {
    ctx.addIssue({ code: 'custom', path: [field], message: `operator "${operator}" needs a value` });
    return;
  }
  if (operator === 'regexp') {
    try {
      compileRe2(value);
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: [field], message: `is not a valid regular expression (RE2, as Nomad's): ${(err as Error).message}` });
    }
  }
  if (operator === 'version' || operator === 'semver') {
    const parsed = parseVersionConstraint(value, operator);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', path: [field], message: `the ${operator} constraint "${value}" ${parsed}` });
  }
}

/** The canonical operator and value of a raw rule, and the field that carried the value. */
function canonicalParts(raw: RawRule): { operator: string; value: string; field: string } {
  for (const k of SHORTHANDS) {
    const v = raw[k];
    if (v === undefined) continue;
    if (k === 'distinctHosts') return { operator: 'distinct_hosts', value: '', field: k };
    if (k === 'distinctProperty') return { operator: 'distinct_property', value: raw['value'] ?? '', field: 'value' };
    return { operator: SHORTHAND_OPERATOR[k], value: v, field: k };
  }
  return { operator: raw['operator'] || '=', value: raw['value'] ?? '', field: 'value' };
}

function toConstraint(raw: RawRule): Constraint {
  const { operator, value } = canonicalParts(raw);
  const canonical = operator === '==' || operator === 'is' ? '=' : operator === 'not' ? '!=' : operator;
  const attribute = canonical === 'distinct_property' && raw['distinctProperty'] !== undefined ? raw['distinctProperty'] : (raw['attribute'] ?? '');
  return { attribute, operator: canonical, value: NO_VALUE.has(canonical) ? '' : value };
}

/** A `constraint` block. distinct_hosts = false is no constraint: it is dropped by `rulesList`. */
export const constraintSchema = lazySchema(() => z
  .strictObject(ruleFields())
  .superRefine((raw, ctx) => checkRule(raw as RawRule, ctx, false))
  .transform((raw) => ({ ...toConstraint(raw as RawRule), off: (raw as RawRule)['distinctHosts'] === 'false' })));

export const affinitySchema = lazySchema(() => z
  .strictObject({ ...ruleFields(), weight: z.number().int().min(-100, 'weight must be between -100 and 100').max(100, 'weight must be between -100 and 100').default(50) })
  .superRefine((raw, ctx) => {
    if (raw.weight === 0) ctx.addIssue({ code: 'custom', path: ['weight'], message: 'weight must not be 0 (between -100 and 100)' });
    checkRule(raw as unknown as RawRule, ctx, true);
  })
  .transform((raw): Affinity => ({ ...toConstraint(raw as unknown as RawRule), weight: raw.weight })));

export const spreadSchema = lazySchema(() => z
  .strictObject({
    attribute: z.string().min(1, 'spread needs an attribute such as "${node.datacenter}"'),
    weight: z.number().int().min(1, 'weight must be between 1 and 100').max(100, 'weight must be between 1 and 100').default(50),
    targets: z
      .array(z.strictObject({ value: scalar, percent: z.number().int().min(0, 'percent must be between 0 and 100').max(100, 'percent must be between 0 and 100') }))
      .default([]),
  })
  .superRefine((s, ctx) => {
    if (s.attribute.startsWith('${') && !TARGET.test(s.attribute)) {
      ctx.addIssue({ code: 'custom', path: ['attribute'], message: `"${s.attribute}" is not a node attribute; use \${attr.<name>}, \${meta.<key>} or \${node.datacenter}` });
    }
    const total = s.targets.reduce((n, t) => n + t.percent, 0);
    if (total > 100) ctx.addIssue({ code: 'custom', path: ['targets'], message: `the targets' percentages add up to ${total}; at most 100` });
    const seen = new Set<string>();
    s.targets.forEach((t, i) => {
      if (seen.has(t.value)) ctx.addIssue({ code: 'custom', path: ['targets', i, 'value'], message: `duplicate target "${t.value}"` });
      seen.add(t.value);
    });
  }));

/** A list of constraints, without the ones switched off (distinct_hosts = false). */
export const constraintsSchema = lazySchema(() => z
  .array(constraintSchema)
  .transform((list): Constraint[] => list.filter((c) => !c.off).map(({ off: _off, ...c }) => c))
  .optional());
export const affinitiesSchema = lazySchema(() => z.array(affinitySchema).optional());
export const spreadsSchema = lazySchema(() => z.array(spreadSchema).optional());

/** "${meta.rack} = r1", as Nomad prints a constraint. */
export function describeConstraint(c: Constraint): string {
  if (c.operator === 'distinct_hosts') return 'distinct_hosts';
  if (c.operator === 'is_set' || c.operator === 'is_not_set') return `${c.attribute} ${c.operator}`;
  return `${c.attribute} ${c.operator} ${c.value}`.trim();
}

/**
 * Nomad's AllocMetric: what placement looked at for one allocation. Kept on
 * the allocation (and on a failed placement) so `alloc status --verbose`
 * explains the choice.
 */
export interface AllocMetric {
  nodesEvaluated: number;
  nodesFiltered: number;
  /** Datacenter -> nodes in it that were ready and in the job's datacenters. */
  nodesAvailable: Record<string, number>;
  classFiltered: Record<string, number>;
  /** Constraint text -> nodes it filtered. */
  constraintFiltered: Record<string, number>;
  nodesExhausted: number;
  /** Dimension -> nodes out of it ("memory", "cpu", ...). */
  dimensionExhausted: Record<string, number>;
  /** The best-scored nodes (at most five), best first: each score by name and the normalized total. */
  scoreMetaData: Array<{ nodeId: string; scores: Record<string, number>; normScore: number }>;
}
