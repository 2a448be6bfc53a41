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
export { encodeMsgpack, decodeMsgpack, type CtyValue } from './msgpack.js';
export { decodeConfig, encodeConfig, type ConfigStep, type DecodeOptions } from './decode.js';
// For the other parts of src/plugins only (the layer door does not re-export them).
export { specFromProto, specToProto } from './proto-spec.js';
