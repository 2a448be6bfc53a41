// Placement rules as Nomad's API writes them (api/constraint.go, and
// Affinity, Spread in api/tasks.go): on jobs, groups, tasks and devices.

import { z } from 'zod';
import { int, list, ptr, uint } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/** A constraint: `LTarget Operand RTarget` (`${attr.kernel.name} = linux`). */
export const Constraint = lazySchema(() => z.strictObject({
  LTarget: z.string(),
  RTarget: z.string(),
  Operand: z.string(),
}));
export type Constraint = z.infer<typeof Constraint>;

/** An affinity: a constraint with a weight (-100..100; 50 when unset, Nomad's Canonicalize). */
export const Affinity = lazySchema(() => z.strictObject({
  LTarget: z.string(),
  RTarget: z.string(),
  Operand: z.string(),
  Weight: ptr(int),
}));
export type Affinity = z.infer<typeof Affinity>;

export const SpreadTarget = lazySchema(() => z.strictObject({
  Value: z.string(),
  Percent: uint,
}));
export type SpreadTarget = z.infer<typeof SpreadTarget>;

/** A spread over a node attribute (weight 50 when unset). */
export const Spread = lazySchema(() => z.strictObject({
  Attribute: z.string(),
  Weight: ptr(int),
  SpreadTarget: list(SpreadTarget),
}));
export type Spread = z.infer<typeof Spread>;
