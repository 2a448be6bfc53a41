// Constraint feasibility as Nomad's scheduler decides it (scheduler/feasible.go):
// resolve a rule's targets against a node (`${attr.*}`, `${meta.*}`,
// `${node.class}`, ...), then apply its operator. Per-node rules are checked
// once per node; distinct_hosts and distinct_property depend on what is
// already placed, so they are checked for every placement against counts the
// caller keeps up to date. Pure functions over plain inputs.

import { compileRe2, parseVersionConstraint, versionSatisfies, type Re2, type VersionConstraint } from '../../lib/index.js';
import { describeConstraint, type Affinity, type Constraint, type JobSpec, type Node, type Spread, type TaskGroup } from '../../structs/index.js';

/** The rules that apply to one task group: the job's, the group's and its tasks'. */
export interface PlacementRules {
  /** Constraints checked per node (all but distinct_*), with their text for failure reasons. */
  nodeConstraints: Array<{ constraint: Constraint; text: string; check: (node: Node) => boolean }>;
  /** distinct_hosts: at most one allocation of the job (scope 'job') or of the group per node. */
  distinctHosts: Array<{ scope: 'job' | 'group'; text: string }>;
  /** distinct_property: at most `limit` allocations (of the job or the group) per value of the attribute. */
  distinctProperties: Array<{ scope: 'job' | 'group'; attribute: string; limit: number; text: string }>;
  affinities: Affinity[];
  spreads: Spread[];
}

/**
 * The value of `target` on `node`: `${...}` targets are looked up (undefined
 * when the node has no such attribute), anything else is a literal. Pure.
 */
export function resolveTarget(target: string, node: Node): string | undefined {
  if (!target.startsWith('${')) return target;
  const name = target.slice(2, -1);
  switch (name) {
    case 'node.unique.id':
      return node.id;
    case 'node.unique.name':
      return node.name;
    case 'node.datacenter':
      return node.datacenter;
    case 'node.class':
      return node.nodeClass ?? '';
    case 'node.region':
      return 'global';
    case 'node.pool':
      return 'default';
  }
  if (name.startsWith('attr.')) return node.attributes[name.slice(5)];
  if (name.startsWith('meta.')) return node.meta?.[name.slice(5)];
  return undefined;
}

const NUMBER = /^-?\d+(\.\d+)?$/;

/** Ordering: numerically when both sides are numbers, else lexically (Nomad's attribute comparison). */
function ordered(op: string, l: string, r: string): boolean {
  const cmp = NUMBER.test(l) && NUMBER.test(r) ? Math.sign(Number(l) - Number(r)) : l < r ? -1 : l > r ? 1 : 0;
  if (op === '<') return cmp < 0;
  if (op === '<=') return cmp <= 0;
  if (op === '>') return cmp > 0;
  return cmp >= 0;
}

const setOf = (s: string): string[] => s.split(',').map((v) => v.trim());

/**
 * A checker for one constraint's operator, with its regular expression or
 * version constraint compiled once. The rule was validated with the job, so
 * a malformed one (never stored) matches nothing. Pure.
 */
export function compileRule(c: Constraint): (node: Node) => boolean {
  const { operator: op } = c;
  let regexp: Re2 | undefined;
  let version: VersionConstraint | undefined;
  if (op === 'regexp') {
    try {
      regexp = compileRe2(c.value);
    } catch {
      return () => false;
    }
  }
  if (op === 'version' || op === 'semver') {
    const parsed = parseVersionConstraint(c.value, op);
    if (typeof parsed === 'string') return () => false;
    version = parsed;
  }
  return (node) => {
    const l = resolveTarget(c.attribute, node);
    const r = resolveTarget(c.value, node);
    switch (op) {
      case 'distinct_hosts':
      case 'distinct_property':
        return true;
      case 'is_set':
        return l !== undefined;
      case 'is_not_set':
        return l === undefined;
      case '=':
        return l !== undefined && r !== undefined && l === r;
      case '!=':
        return l !== r;
    }
    if (l === undefined || r === undefined) return false;
    switch (op) {
      case '<':
      case '<=':
      case '>':
      case '>=':
        return ordered(op, l, r);
      case 'regexp':
        return (regexp as Re2).test(l);
      case 'version':
      case 'semver':
        return versionSatisfies(version as VersionConstraint, l);
      case 'set_contains':
      case 'set_contains_all': {
        const have = new Set(setOf(l));
        return setOf(r).every((v) => have.has(v));
      }
      case 'set_contains_any': {
        const have = new Set(setOf(l));
        return setOf(r).some((v) => have.has(v));
      }
    }
    return false;
  };
}

type RuleSource = Pick<JobSpec, 'constraints' | 'affinities' | 'spreads'>;

/** Gathers the rules of `group` of `job` (job, group, tasks), compiled. Pure. */
export function placementRules(job: RuleSource | undefined, group: TaskGroup): PlacementRules {
  const rules: PlacementRules = { nodeConstraints: [], distinctHosts: [], distinctProperties: [], affinities: [], spreads: [] };
  const add = (list: readonly Constraint[] | undefined, scope: 'job' | 'group'): void => {
    for (const c of list ?? []) {
      const text = describeConstraint(c);
      if (c.operator === 'distinct_hosts') rules.distinctHosts.push({ scope, text });
      else if (c.operator === 'distinct_property') rules.distinctProperties.push({ scope, attribute: c.attribute, limit: Number(c.value) || 1, text });
      else rules.nodeConstraints.push({ constraint: c, text, check: compileRule(c) });
    }
  };
  add(job?.constraints, 'job');
  add(group.constraints, 'group');
  for (const t of group.tasks) add(t.constraints, 'group');
  rules.affinities = [...(job?.affinities ?? []), ...(group.affinities ?? []), ...group.tasks.flatMap((t) => t.affinities ?? [])];
  rules.spreads = [...(job?.spreads ?? []), ...(group.spreads ?? [])];
  return rules;
}

/** True when the rules hold anything beyond per-node constraints (placement then tracks counts). */
export function hasCountingRules(rules: PlacementRules): boolean {
  return rules.distinctHosts.length > 0 || rules.distinctProperties.length > 0 || rules.spreads.length > 0;
}

/** The first per-node constraint `node` fails, as its text; undefined when it passes them all. Pure. */
export function failedConstraint(rules: PlacementRules, node: Node): string | undefined {
  for (const c of rules.nodeConstraints) if (!c.check(node)) return c.text;
  return undefined;
}

/**
 * Where the allocations of a job are, for distinct_* and spread: per node and
 * per attribute value, for the job and for each group. Updated by placement
 * as it places.
 */
export class PlacementCounts {
  readonly #byNode = new Map<string, { job: number; groups: Map<string, number> }>();
  readonly #nodes: ReadonlyMap<string, Node>;
  /** `scope\0group\0attribute` -> value -> allocations, kept up to date by `add` once asked for. */
  readonly #byValue = new Map<string, { attribute: string; scope: 'job' | 'group'; group: string; counts: Map<string, number> }>();

  constructor(nodes: ReadonlyMap<string, Node>, existing: ReadonlyArray<{ nodeId: string; group: string }>) {
    this.#nodes = nodes;
    for (const a of existing) this.add(a.nodeId, a.group);
  }

  add(nodeId: string, group: string): void {
    let n = this.#byNode.get(nodeId);
    if (!n) this.#byNode.set(nodeId, (n = { job: 0, groups: new Map() }));
    n.job++;
    n.groups.set(group, (n.groups.get(group) ?? 0) + 1);
    const node = this.#nodes.get(nodeId);
    for (const v of this.#byValue.values()) {
      if (v.scope === 'group' && v.group !== group) continue;
      const value = node ? resolveTarget(v.attribute, node) : undefined;
      if (value !== undefined) v.counts.set(value, (v.counts.get(value) ?? 0) + 1);
    }
  }

  /** Allocations on the node, of the job or of `group`. */
  onNode(nodeId: string, scope: 'job' | 'group', group: string): number {
    const n = this.#byNode.get(nodeId);
    if (!n) return 0;
    return scope === 'job' ? n.job : (n.groups.get(group) ?? 0);
  }

  /** Value of `attribute` -> allocations on nodes with that value (nodes without it are left out). Live: read, never change. */
  byValue(attribute: string, scope: 'job' | 'group', group: string): ReadonlyMap<string, number> {
    const key = `${scope}\0${scope === 'group' ? group : ''}\0${attribute}`;
    let v = this.#byValue.get(key);
    if (!v) {
      const counts = new Map<string, number>();
      for (const [nodeId, n] of this.#byNode) {
        const node = this.#nodes.get(nodeId);
        const value = node ? resolveTarget(attribute, node) : undefined;
        if (value === undefined) continue;
        const count = scope === 'job' ? n.job : (n.groups.get(group) ?? 0);
        if (count > 0) counts.set(value, (counts.get(value) ?? 0) + count);
      }
      this.#byValue.set(key, (v = { attribute, scope, group, counts }));
    }
    return v.counts;
  }
}

/**
 * The distinct_* constraint `node` would break by taking one more allocation
 * of `group`, as its text; undefined when none. `valueCounts` caches
 * PlacementCounts.byValue per distinct_property for this placement. Pure.
 */
export function failedDistinct(
  rules: PlacementRules,
  node: Node,
  group: string,
  counts: PlacementCounts,
  valueCounts: (i: number) => ReadonlyMap<string, number>,
): string | undefined {
  for (const d of rules.distinctHosts) if (counts.onNode(node.id, d.scope, group) > 0) return d.text;
  for (let i = 0; i < rules.distinctProperties.length; i++) {
    const d = rules.distinctProperties[i] as PlacementRules['distinctProperties'][number];
    const value = resolveTarget(d.attribute, node);
    // Nomad: a node without the property cannot satisfy distinct_property.
    if (value === undefined) return d.text;
    if ((valueCounts(i).get(value) ?? 0) >= d.limit) return d.text;
  }
  return undefined;
}
