/**
 * A plain-TypeScript mirror of Nomad's hclspec `Spec` tree
 * (plugins/shared/hclspec/hcl_spec.proto): the schema a plugin gives for its
 * plugin config (`ConfigSchema`) and its task config (`TaskConfigSchema`).
 * Protobuf types never leave src/plugins; these do.
 *
 * `type` strings are HCL type expressions as the protocol carries them:
 * `string`, `number`, `bool`, `any`, `list(T)`, `set(T)`, `map(T)`,
 * `object({a = T, b = T})`, `tuple([T, T])`.
 */
export type Spec =
  | ObjectSpec
  | ArraySpec
  | AttrSpec
  | BlockSpec
  | BlockAttrsSpec
  | BlockListSpec
  | BlockSetSpec
  | BlockMapSpec
  | DefaultSpec
  | LiteralSpec;

/** An object whose properties are the results of the nested specs (the usual root). */
export interface ObjectSpec {
  readonly kind: 'object';
  readonly attributes: Readonly<Record<string, Spec>>;
}
/** A tuple of the nested specs' results. */
export interface ArraySpec {
  readonly kind: 'array';
  readonly values: readonly Spec[];
}
/** One attribute of the body, converted to `type`. */
export interface AttrSpec {
  readonly kind: 'attr';
  readonly name: string;
  readonly type: string;
  readonly required: boolean;
}
/** Zero or one block (exactly one when required) decoded by `nested`. */
export interface BlockSpec {
  readonly kind: 'block';
  readonly name: string;
  readonly required: boolean;
  readonly nested?: Spec;
}
/** A block whose attributes form a map of `type`. */
export interface BlockAttrsSpec {
  readonly kind: 'block_attrs';
  readonly name: string;
  readonly type: string;
  readonly required: boolean;
}
/** Zero or more blocks as a list (0 = no bound). */
export interface BlockListSpec {
  readonly kind: 'block_list';
  readonly name: string;
  readonly minItems: number;
  readonly maxItems: number;
  readonly nested?: Spec;
}
/** Zero or more blocks as a set (0 = no bound). */
export interface BlockSetSpec {
  readonly kind: 'block_set';
  readonly name: string;
  readonly minItems: number;
  readonly maxItems: number;
  readonly nested?: Spec;
}
/** Labelled blocks as (nested) maps, one level per label. */
export interface BlockMapSpec {
  readonly kind: 'block_map';
  readonly name: string;
  readonly labels: readonly string[];
  readonly nested?: Spec;
}
/** `primary`, or `default` when `primary` yields null. */
export interface DefaultSpec {
  readonly kind: 'default';
  readonly primary: Spec;
  readonly default: Spec;
}
/** A fixed value, written as an HCL expression (`false`, `"x"`, `["a"]`, `{}`). */
export interface LiteralSpec {
  readonly kind: 'literal';
  readonly value: string;
}

// Builders, as Nomad's hclspec.New* helpers: what a driver author writes.
export const object = (attributes: Record<string, Spec>): ObjectSpec => ({ kind: 'object', attributes });
export const array = (values: Spec[]): ArraySpec => ({ kind: 'array', values });
export const attr = (name: string, type: string, required = false): AttrSpec => ({ kind: 'attr', name, type, required });
export const block = (name: string, required: boolean, nested?: Spec): BlockSpec => ({ kind: 'block', name, required, nested });
export const blockAttrs = (name: string, type: string, required = false): BlockAttrsSpec => ({ kind: 'block_attrs', name, type, required });
export const blockList = (name: string, nested?: Spec, minItems = 0, maxItems = 0): BlockListSpec => ({ kind: 'block_list', name, minItems, maxItems, nested });
export const blockSet = (name: string, nested?: Spec, minItems = 0, maxItems = 0): BlockSetSpec => ({ kind: 'block_set', name, minItems, maxItems, nested });
export const blockMap = (name: string, labels: string[], nested?: Spec): BlockMapSpec => ({ kind: 'block_map', name, labels, nested });
export const withDefault = (primary: Spec, fallback: Spec): DefaultSpec => ({ kind: 'default', primary, default: fallback });
export const literal = (value: string): LiteralSpec => ({ kind: 'literal', value });
