// hclspec: Nomad's plugin schema tree, decoding a config block against it, and go-cty msgpack.
export * as hclspec from './spec.js';
export type {
  Spec,
  ObjectSpec,
  ArraySpec,
  AttrSpec,
  BlockSpec,
  BlockAttrsSpec,
  BlockListSpec,
  BlockSetSpec,
  BlockMapSpec,
  DefaultSpec,
  LiteralSpec,
} from './spec.js';
export { HclSpecError, type HclSpecErrorCode } from './errors.js';
