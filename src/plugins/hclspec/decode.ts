import { type Spec } from './spec.js';
import { HclSpecError } from './errors.js';
import { type CtyValue, encodeMsgpack } from './msgpack.js';
import { ConvertError, convert, parseType, toSet, type CtyType } from './_types.js';
import { evalLiteral } from './_literal.js';

/** One step into an HCL body: the n-th block or attribute `name` (with its first label). Same shape as spec-files' HclStep. */
export interface ConfigStep {
  readonly name: string;
  readonly label?: string;
  readonly nth: number;
}

export interface DecodeOptions {
  /** How the block is named in messages (`plugin "x" config`, `task "web" config`); default `config`. */
  readonly path?: string;
  /** Where a step path starts in the user's file, when the input came from a file. */
  readonly locate?: (steps: readonly ConfigStep[]) => { line: number; column: number } | undefined;
}

/**
 * Decodes a config block against a plugin's schema as Nomad's hcldec does
 * (helper/pluginutils/hclutils ParseHclInterface): `body` is the block in
 * the JSON form hcl2json gives (every nested block a list of bodies,
 * labelled blocks keyed by label) or plain JSON (a single block as an
 * object). Applies defaults and literals, converts attributes to their types,
 * checks required attributes and blocks, block counts, and refuses arguments
 * the schema does not know. An absent schema accepts only an empty block
 * (and yields null). Pure; throws HclSpecError `HCLSPEC_INVALID_CONFIG`
 * (message: path, position when `locate` knows it, and the problem) or
 * `HCLSPEC_INVALID_SPEC`.
 */
export function decodeConfig(spec: Spec | undefined, body: unknown, opts: DecodeOptions = {}): CtyValue {
  const d = new Decoder(opts);
  const root = asBody(body ?? {}, () => d.fail([], [], 'the block must be an object'));
  if (!spec) {
    const extra = Object.keys(root);
    if (extra.length > 0) d.fail([{ name: extra[0] as string, nth: 0 }], [extra[0] as string], 'this plugin takes no configuration');
    return null;
  }
  return d.body(spec, root, [], []);
}

/** decodeConfig then encodeMsgpack: the bytes SetConfig / a TaskConfig carries. Throws as both. */
export function encodeConfig(spec: Spec | undefined, body: unknown, opts: DecodeOptions = {}): Uint8Array {
  return encodeMsgpack(decodeConfig(spec, body, opts));
}

type Body = Record<string, unknown>;
type Words = (string | number)[];

function asBody(v: unknown, bad: () => never): Body {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return bad();
  return v as Body;
}

class Decoder {
  private readonly types = new Map<string, CtyType>();
  constructor(private readonly opts: DecodeOptions) {}

  fail(steps: readonly ConfigStep[], words: Words, why: string): never {
    let where = this.opts.path ?? 'config';
    for (const w of words) where += typeof w === 'number' ? `[${w}]` : /^[A-Za-z_][A-Za-z0-9_-]*$/.test(w) ? `.${w}` : `[${JSON.stringify(w)}]`;
    const at = this.opts.locate?.(steps);
    const pos = at ? ` (line ${at.line}, column ${at.column})` : '';
    throw new HclSpecError('HCLSPEC_INVALID_CONFIG', `${where}${pos}: ${why}`, { path: where });
  }

  private type(text: string): CtyType {
    let t = this.types.get(text);
    if (!t) this.types.set(text, (t = parseType(text)));
    return t;
  }

  /** Decodes one body with `spec` and refuses what the spec did not use. */
  body(spec: Spec, body: Body, steps: ConfigStep[], words: Words): CtyValue {
    const used = new Set<string>();
    const v = this.spec(spec, body, steps, words, used, undefined);
    for (const k of Object.keys(body)) {
      if (!used.has(k)) {
        const kind = Array.isArray(body[k]) && (body[k] as unknown[]).every((x) => typeof x === 'object' && x !== null && !Array.isArray(x)) && (body[k] as unknown[]).length > 0 ? 'block type' : 'argument';
        this.fail([...steps, { name: k, nth: 0 }], [...words, k], `unsupported ${kind} "${k}": no ${kind} of that name is expected here`);
      }
    }
    return v;
  }

  private spec(spec: Spec, body: Body, steps: ConfigStep[], words: Words, used: Set<string>, defaultName: string | undefined): CtyValue {
    switch (spec.kind) {
      case 'object': {
        const out: Record<string, CtyValue> = {};
        for (const [k, s] of Object.entries(spec.attributes)) out[k] = this.spec(s, body, steps, words, used, k);
        return out;
      }
      case 'array':
        return spec.values.map((s) => this.spec(s, body, steps, words, used, undefined));
      case 'literal':
        return evalLiteral(spec.value);
      case 'default': {
        const v = this.spec(spec.primary, body, steps, words, used, defaultName);
        return v !== null ? v : this.spec(spec.default, body, steps, words, used, defaultName);
      }
      case 'attr': {
        const name = this.nameOf(spec.name, defaultName, 'Attr');
        used.add(name);
        const type = this.type(spec.type || 'any');
        const here = [...steps, { name, nth: 0 }];
        const raw = body[name];
        if (raw === undefined || raw === null) {
          if (spec.required) this.fail(here, [...words, name], `the argument "${name}" is required, but no definition was found`);
          return null;
        }
        try {
          return convert(raw, type);
        } catch (err) {
          if (err instanceof ConvertError) this.fail(here, [...words, name, ...err.path], `inappropriate value for attribute "${name}": ${err.message}`);
          throw err;
        }
      }
      case 'block_attrs': {
        const name = this.nameOf(spec.name, defaultName, 'BlockAttrs');
        used.add(name);
        const blocks = this.blocks(body[name], [...steps], [...words, name]);
        if (blocks.length === 0) {
          if (spec.required) this.fail(steps, words, `a "${name}" block is required`);
          return null;
        }
        if (blocks.length > 1) this.fail([...steps, { name, nth: 1 }], [...words, name], `only one "${name}" block is allowed`);
        const el = this.type(spec.type || 'any');
        const out: Record<string, CtyValue> = {};
        for (const [k, v] of Object.entries(blocks[0] as Body)) {
          try {
            out[k] = convert(v, el);
          } catch (err) {
            if (err instanceof ConvertError) this.fail([...steps, { name, nth: 0 }, { name: k, nth: 0 }], [...words, name, k, ...err.path], err.message);
            throw err;
          }
        }
        return out;
      }
      case 'block': {
        const name = this.nameOf(spec.name, defaultName, 'Block');
        used.add(name);
        const blocks = this.blocks(body[name], steps, [...words, name]);
        if (blocks.length === 0) {
          if (spec.required) this.fail(steps, words, `a "${name}" block is required`);
          return null;
        }
        if (blocks.length > 1) this.fail([...steps, { name, nth: 1 }], [...words, name], `only one "${name}" block is allowed`);
        if (!spec.nested) return {};
        return this.body(spec.nested, blocks[0] as Body, [...steps, { name, nth: 0 }], [...words, name]);
      }
      case 'block_list':
      case 'block_set': {
        const name = this.nameOf(spec.name, defaultName, spec.kind === 'block_list' ? 'BlockList' : 'BlockSet');
        used.add(name);
        const blocks = this.blocks(body[name], steps, [...words, name]);
        if (spec.minItems > 0 && blocks.length < spec.minItems) this.fail(steps, words, `at least ${spec.minItems} "${name}" block(s) are required, found ${blocks.length}`);
        if (spec.maxItems > 0 && blocks.length > spec.maxItems) this.fail([...steps, { name, nth: spec.maxItems }], [...words, name], `at most ${spec.maxItems} "${name}" block(s) are allowed, found ${blocks.length}`);
        const items = blocks.map((b, nth) => (spec.nested ? this.body(spec.nested, b, [...steps, { name, nth }], [...words, name, nth]) : {}));
        return spec.kind === 'block_list' ? items : toSet(items);
      }
      case 'block_map': {
        const name = this.nameOf(spec.name, defaultName, 'BlockMap');
        used.add(name);
        if (spec.labels.length === 0) throw new HclSpecError('HCLSPEC_INVALID_SPEC', `BlockMap "${name}" has no labels`);
        const raw = body[name];
        if (raw === undefined || raw === null) return {};
        return this.labelled(spec.nested, raw, spec.labels.length, name, steps, [...words, name]);
      }
    }
  }

  /** A BlockMap level: `{label: ...}` per remaining label, bodies at the bottom. */
  private labelled(nested: Spec | undefined, raw: unknown, depth: number, name: string, steps: ConfigStep[], words: Words): CtyValue {
    // hcl2json wraps each level in a list of one object; accept both forms.
    const levels = Array.isArray(raw) ? raw : [raw];
    const out: Record<string, CtyValue> = {};
    for (const level of levels) {
      const obj = asBody(level, () => this.fail(steps, words, `a "${name}" block needs ${depth} label(s)`));
      for (const [label, inner] of Object.entries(obj)) {
        if (label in out) this.fail(steps, [...words, label], `duplicate "${name}" block "${label}"`);
        const here = depth === 1 ? [...steps, { name, label, nth: 0 }] : steps;
        if (depth > 1) {
          out[label] = this.labelled(nested, inner, depth - 1, name, steps, [...words, label]);
          continue;
        }
        const blocks = this.blocks(inner, steps, [...words, label]);
        if (blocks.length !== 1) this.fail(here, [...words, label], `duplicate "${name}" block "${label}"`);
        out[label] = nested ? this.body(nested, blocks[0] as Body, here, [...words, label]) : {};
      }
    }
    return out;
  }

  /** The bodies of a nested block: a list of objects (hcl2json) or one object (plain JSON). */
  private blocks(raw: unknown, steps: ConfigStep[], words: Words): Body[] {
    if (raw === undefined || raw === null) return [];
    const list = Array.isArray(raw) ? raw : [raw];
    return list.map((b, i) => asBody(b, () => this.fail(steps, [...words, i], 'a block is required here, not an argument value')));
  }

  private nameOf(name: string, defaultName: string | undefined, kind: string): string {
    const n = name || defaultName;
    if (!n) throw new HclSpecError('HCLSPEC_INVALID_SPEC', `${kind} spec without a name outside an Object`);
    return n;
  }
}
