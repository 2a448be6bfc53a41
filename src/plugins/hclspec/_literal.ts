import { HclSpecError } from './errors.js';
import { type CtyValue } from './msgpack.js';

/**
 * Evaluates a Literal spec's value: an HCL expression made of literals only
 * (numbers, "strings" with HCL escapes, true/false/null, [tuples] and
 * {objects} with `=` or `:`), which is what plugins put there in practice
 * (`false`, `"5s"`, `[]`, `{}`). Functions and references are refused with
 * HCLSPEC_INVALID_SPEC.
 */
export function evalLiteral(text: string): CtyValue {
  let i = 0;
  const fail = (why: string): never => {
    throw new HclSpecError('HCLSPEC_INVALID_SPEC', `invalid literal ${JSON.stringify(text)}: ${why}`);
  };
  const ws = (): void => {
    while (i < text.length && /\s/.test(text[i] as string)) i++;
  };
  const str = (): string => {
    i++; // opening quote
    let out = '';
    while (i < text.length && text[i] !== '"') {
      const c = text[i] as string;
      if (c === '\\') {
        const e = text[i + 1];
        const simple: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' };
        if (e !== undefined && e in simple) {
          out += simple[e];
          i += 2;
        } else if (e === 'u' || e === 'U') {
          const len = e === 'u' ? 4 : 8;
          out += String.fromCodePoint(parseInt(text.slice(i + 2, i + 2 + len), 16));
          i += 2 + len;
        } else fail(`bad escape at offset ${i}`);
      } else {
        out += c;
        i++;
      }
    }
    if (text[i] !== '"') fail('unterminated string');
    i++;
    return out;
  };
  const value = (): CtyValue => {
    ws();
    const c = text[i];
    if (c === '"') return str();
    if (c === '[') {
      i++;
      const items: CtyValue[] = [];
      for (;;) {
        ws();
        if (text[i] === ',') i++;
        ws();
        if (text[i] === ']') break;
        if (i >= text.length) fail('unterminated tuple');
        items.push(value());
      }
      i++;
      return items;
    }
    if (c === '{') {
      i++;
      const obj: Record<string, CtyValue> = {};
      for (;;) {
        ws();
        if (text[i] === ',') i++;
        ws();
        if (text[i] === '}') break;
        if (i >= text.length) fail('unterminated object');
        let key: string;
        if (text[i] === '"') key = str();
        else {
          const m = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(text.slice(i));
          if (!m) return fail(`expected a key at offset ${i}`);
          key = m[0];
          i += key.length;
        }
        ws();
        if (text[i] !== '=' && text[i] !== ':') fail(`expected "=" at offset ${i}`);
        i++;
        obj[key] = value();
      }
      i++;
      return obj;
    }
    const m = /^(?:-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i));
    if (!m) return fail(`unsupported expression at offset ${i} (only literal values)`);
    i += m[0].length;
    if (m[0] === 'true') return true;
    if (m[0] === 'false') return false;
    if (m[0] === 'null') return null;
    return Number(m[0]);
  };
  const v = value();
  ws();
  if (i !== text.length) fail(`unexpected "${text.slice(i)}"`);
  return v;
}
