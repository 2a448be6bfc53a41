import { type Spec as PbSpec } from '../../gen/nomad/plugins/shared/hclspec/hcl_spec.js';
import { type Spec } from './spec.js';
import { HclSpecError } from './errors.js';

/** The wire Spec -> Berth's Spec. Throws HCLSPEC_INVALID_SPEC on an empty node. Used inside src/plugins only. */
export function specFromProto(pb: PbSpec): Spec {
  const nested = (s: PbSpec | undefined): Spec | undefined => (s ? specFromProto(s) : undefined);
  if (pb.object) return { kind: 'object', attributes: Object.fromEntries(Object.entries(pb.object.attributes).map(([k, v]) => [k, specFromProto(v)])) };
  if (pb.array) return { kind: 'array', values: pb.array.values.map(specFromProto) };
  if (pb.Attr) return { kind: 'attr', name: pb.Attr.name, type: pb.Attr.type, required: pb.Attr.required };
  if (pb.blockValue) return { kind: 'block', name: pb.blockValue.name, required: pb.blockValue.required, nested: nested(pb.blockValue.nested) };
  if (pb.blockAttrs) return { kind: 'block_attrs', name: pb.blockAttrs.name, type: pb.blockAttrs.type, required: pb.blockAttrs.required };
  if (pb.blockList) return { kind: 'block_list', name: pb.blockList.name, minItems: Number(pb.blockList.minItems), maxItems: Number(pb.blockList.maxItems), nested: nested(pb.blockList.nested) };
  if (pb.blockSet) return { kind: 'block_set', name: pb.blockSet.name, minItems: Number(pb.blockSet.minItems), maxItems: Number(pb.blockSet.maxItems), nested: nested(pb.blockSet.nested) };
  if (pb.blockMap) return { kind: 'block_map', name: pb.blockMap.name, labels: [...pb.blockMap.labels], nested: nested(pb.blockMap.nested) };
  if (pb.default) {
    if (!pb.default.primary || !pb.default.default) throw new HclSpecError('HCLSPEC_INVALID_SPEC', 'Default spec without primary or default');
    return { kind: 'default', primary: specFromProto(pb.default.primary), default: specFromProto(pb.default.default) };
  }
  if (pb.literal) return { kind: 'literal', value: pb.literal.value };
  throw new HclSpecError('HCLSPEC_INVALID_SPEC', 'empty Spec node');
}

/** Berth's Spec -> the wire Spec. Pure. */
export function specToProto(s: Spec): PbSpec {
  const n = (x: Spec | undefined): PbSpec | undefined => (x ? specToProto(x) : undefined);
  switch (s.kind) {
    case 'object':
      return { object: { attributes: Object.fromEntries(Object.entries(s.attributes).map(([k, v]) => [k, specToProto(v)])) } };
    case 'array':
      return { array: { values: s.values.map(specToProto) } };
    case 'attr':
      return { Attr: { name: s.name, type: s.type, required: s.required } };
    case 'block':
      return { blockValue: { name: s.name, required: s.required, nested: n(s.nested) } };
    case 'block_attrs':
      return { blockAttrs: { name: s.name, type: s.type, required: s.required } };
    case 'block_list':
      return { blockList: { name: s.name, minItems: BigInt(s.minItems), maxItems: BigInt(s.maxItems), nested: n(s.nested) } };
    case 'block_set':
      return { blockSet: { name: s.name, minItems: BigInt(s.minItems), maxItems: BigInt(s.maxItems), nested: n(s.nested) } };
    case 'block_map':
      return { blockMap: { name: s.name, labels: [...s.labels], nested: n(s.nested) } };
    case 'default':
      return { default: { primary: specToProto(s.primary), default: specToProto(s.default) } };
    case 'literal':
      return { literal: { value: s.value } };
  }
}
