import { HclSpecError } from './errors.js';

/**
 * A value as Berth holds a decoded config: what go-cty would hold, in plain
 * JavaScript. Objects and maps are plain objects, lists, sets and tuples are
 * arrays (sets already deduplicated and in cty's order), null is a null of
 * any type.
 */
export type CtyValue = null | string | number | boolean | readonly CtyValue[] | { readonly [key: string]: CtyValue };

const INT64_MIN = -(2 ** 63);
const INT64_MAX = 2 ** 63; // exclusive: 2^63 itself is not an int64

/**
 * Encodes `value` exactly as go-cty's `msgpack.Marshal(val, val.Type())` does
 * (cty/msgpack/marshal.go with vmihailenco/msgpack v5, compact ints on,
 * compact floats off), which is what Nomad sends in SetConfig and in a
 * TaskConfig's msgpack_driver_config:
 * - null -> nil (c0); bools -> c2/c3;
 * - strings -> fixstr / str8 / str16 / str32 by UTF-8 byte length;
 * - numbers that are integers in int64 range -> the smallest int encoding
 *   (positive fixint, uint8..uint64 for >= 0; negative fixint, int8..int64 below);
 * - other integers -> their decimal digits as a string (cty's big.Float 'f' text);
 * - non-integers whose decimal (as written in HCL, i.e. JS's shortest form) is
 *   exactly a float64 -> float64 (cb); the rest (0.1: not exact at cty's 512-bit
 *   precision) -> the decimal as a string, in plain 'f' notation; +-Infinity -> float64;
 * - arrays -> array; objects -> map with keys in Go's sort.Strings order (bytewise UTF-8).
 * Uint8Array -> bin, bigint -> int (not cty values; for the plugin serve side).
 * cty's other rules do not arise here: Nomad marshals with the value's own
 * type, so no `any`-typed attribute gets the dynamic wrapper ([type JSON,
 * value]) — a null `any` is plain nil — and decoded config holds no unknown
 * values (cty's d4 00 00 extension).
 * Pure; throws HclSpecError (`HCLSPEC_MSGPACK`) on NaN or an unsupported value.
 */
export function encodeMsgpack(value: CtyValue | Uint8Array | bigint | undefined): Uint8Array {
  const out = new Writer();
  encodeInto(out, value);
  return out.bytes();
}

class Writer {
  private buf = Buffer.alloc(64);
  private len = 0;

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }
  byte(b: number): void {
    this.room(1);
    this.buf[this.len++] = b;
  }
  u8(code: number, n: number): void {
    this.room(2);
    this.buf[this.len++] = code;
    this.buf.writeUInt8(n, this.len);
    this.len += 1;
  }
  u16(code: number, n: number): void {
    this.room(3);
    this.buf[this.len++] = code;
    this.buf.writeUInt16BE(n, this.len);
    this.len += 2;
  }
  u32(code: number, n: number): void {
    this.room(5);
    this.buf[this.len++] = code;
    this.buf.writeUInt32BE(n, this.len);
    this.len += 4;
  }
  big64(code: number, n: bigint, signed: boolean): void {
    this.room(9);
    this.buf[this.len++] = code;
    if (signed) this.buf.writeBigInt64BE(n, this.len);
    else this.buf.writeBigUInt64BE(n, this.len);
    this.len += 8;
  }
  f64(n: number): void {
    this.room(9);
    this.buf[this.len++] = 0xcb;
    this.buf.writeDoubleBE(n, this.len);
    this.len += 8;
  }
  raw(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.len);
    this.len += b.length;
  }
  bytes(): Uint8Array {
    return new Uint8Array(this.buf.subarray(0, this.len));
  }
}

function encodeInto(out: Writer, value: unknown): void {
  if (value === null || value === undefined) return out.byte(0xc0);
  if (typeof value === 'boolean') return out.byte(value ? 0xc3 : 0xc2);
  if (typeof value === 'string') return encodeString(out, value);
  if (typeof value === 'bigint') return encodeInt(out, value);
  if (typeof value === 'number') return encodeNumber(out, value);
  if (value instanceof Uint8Array) {
    if (value.length < 256) out.u8(0xc4, value.length);
    else if (value.length <= 0xffff) out.u16(0xc5, value.length);
    else out.u32(0xc6, value.length);
    return out.raw(value);
  }
  if (Array.isArray(value)) {
    header(out, value.length, 0x90, 0xdc, 0xdd);
    for (const item of value) encodeInto(out, item);
    return;
  }
  if (typeof value === 'object') {
    const keys = sortedKeys(Object.keys(value));
    header(out, keys.length, 0x80, 0xde, 0xdf);
    for (const k of keys) {
      encodeString(out, k);
      encodeInto(out, (value as Record<string, unknown>)[k]);
    }
    return;
  }
  throw new HclSpecError('HCLSPEC_MSGPACK', `cannot msgpack-encode a ${typeof value}`);
}

/** Go's sort.Strings order: bytewise on UTF-8 (JS's default sort compares UTF-16 units). */
export function sortedKeys(keys: string[]): string[] {
  return keys.sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

function header(out: Writer, n: number, fix: number, c16: number, c32: number): void {
  if (n < 16) out.byte(fix | n);
  else if (n <= 0xffff) out.u16(c16, n);
  else out.u32(c32, n);
}

function encodeString(out: Writer, s: string): void {
  const b = Buffer.from(s, 'utf8');
  if (b.length < 32) out.byte(0xa0 | b.length);
  else if (b.length < 256) out.u8(0xd9, b.length);
  else if (b.length <= 0xffff) out.u16(0xda, b.length);
  else out.u32(0xdb, b.length);
  out.raw(b);
}

/** vmihailenco's EncodeInt with compact ints: the smallest encoding that holds n. */
function encodeInt(out: Writer, n: bigint): void {
  if (n >= 0n) {
    if (n <= 0x7fn) return out.byte(Number(n));
    if (n <= 0xffn) return out.u8(0xcc, Number(n));
    if (n <= 0xffffn) return out.u16(0xcd, Number(n));
    if (n <= 0xffffffffn) return out.u32(0xce, Number(n));
    return out.big64(0xcf, n, false);
  }
  if (n >= -32n) return out.byte(Number(n) & 0xff);
  if (n >= -128n) return out.u8(0xd0, Number(n) & 0xff);
  if (n >= -32768n) return out.u16(0xd1, Number(n) & 0xffff);
  if (n >= -2147483648n) return out.u32(0xd2, Number(n) >>> 0);
  return out.big64(0xd3, n, true);
}

function encodeNumber(out: Writer, n: number): void {
  if (Number.isNaN(n)) throw new HclSpecError('HCLSPEC_MSGPACK', 'cannot msgpack-encode NaN: cty numbers are never NaN');
  if (!Number.isFinite(n)) return out.f64(n);
  if (Number.isInteger(n)) {
    if (n >= INT64_MIN && n < INT64_MAX) return encodeInt(out, BigInt(n));
    return encodeString(out, BigInt(n).toString());
  }
  const text = plainDecimal(n);
  if (decimalIsExactDouble(text)) return out.f64(n);
  encodeString(out, text);
}

/** JS's shortest round-trip decimal of n, without exponent (Go's Text('f', -1) form). */
export function plainDecimal(n: number): string {
  const s = String(n);
  const m = /^(-?)(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(s);
  if (!m) return s;
  const [, sign, int, frac = '', expText] = m as unknown as [string, string, string, string | undefined, string];
  const exp = Number(expText);
  const digits = int + frac;
  const point = int.length + exp;
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`.replace(/\.?0+$/, '');
  if (point >= digits.length) return sign + digits + '0'.repeat(point - digits.length);
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/**
 * Whether a plain decimal equals a float64 exactly. d = N / 10^k is a
 * dyadic rational iff 5^k divides N; then d = M / 2^k and it is a float64
 * when M's odd part fits 53 bits (the exponent range is never the limit for
 * a value JS parsed from the same text, since it rounded to this double).
 */
function decimalIsExactDouble(text: string): boolean {
  const neg = text.startsWith('-');
  const [int, frac = ''] = (neg ? text.slice(1) : text).split('.') as [string, string | undefined];
  const k = BigInt(frac.length);
  let n = BigInt(int + frac);
  const five = 5n ** k;
  if (n % five !== 0n) return false;
  n /= five;
  while (n > 0n && n % 2n === 0n) n /= 2n;
  return n < 2n ** 53n;
}

/**
 * Decodes one msgpack value into plain JavaScript: maps -> objects, arrays ->
 * arrays, str -> string, bin -> Uint8Array, integers -> number (bigint beyond
 * 2^53), floats -> number, nil -> null. Extension values (cty's unknown) ->
 * undefined. Pure; throws HclSpecError (`HCLSPEC_MSGPACK`) on truncated or
 * trailing bytes.
 */
export function decodeMsgpack(bytes: Uint8Array): unknown {
  if (bytes.length === 0) return null;
  const r = new Reader(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  const v = r.value();
  if (r.pos !== bytes.length) throw new HclSpecError('HCLSPEC_MSGPACK', `msgpack: ${bytes.length - r.pos} trailing bytes`);
  return v;
}

class Reader {
  pos = 0;
  constructor(private readonly b: Buffer) {}

  private need(n: number): void {
    if (this.pos + n > this.b.length) throw new HclSpecError('HCLSPEC_MSGPACK', 'msgpack: truncated input');
  }
  private u8(): number {
    this.need(1);
    return this.b.readUInt8(this.pos++);
  }
  private take(n: number): Buffer {
    this.need(n);
    const s = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
  private int(n: bigint): number | bigint {
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
  }
  private str(n: number): string {
    return this.take(n).toString('utf8');
  }
  private arr(n: number): unknown[] {
    const a: unknown[] = [];
    for (let i = 0; i < n; i++) a.push(this.value());
    return a;
  }
  private map(n: number): Record<string, unknown> {
    const o: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) {
      const k = this.value();
      o[typeof k === 'string' ? k : String(k)] = this.value();
    }
    return o;
  }

  value(): unknown {
    const c = this.u8();
    if (c <= 0x7f) return c;
    if (c >= 0xe0) return c - 0x100;
    if ((c & 0xe0) === 0xa0) return this.str(c & 0x1f);
    if ((c & 0xf0) === 0x90) return this.arr(c & 0x0f);
    if ((c & 0xf0) === 0x80) return this.map(c & 0x0f);
    const b = this.b;
    const at = (n: number): number => {
      this.need(n);
      const p = this.pos;
      this.pos += n;
      return p;
    };
    switch (c) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return new Uint8Array(this.take(this.u8()));
      case 0xc5: return new Uint8Array(this.take(b.readUInt16BE(at(2))));
      case 0xc6: return new Uint8Array(this.take(b.readUInt32BE(at(4))));
      case 0xca: return b.readFloatBE(at(4));
      case 0xcb: return b.readDoubleBE(at(8));
      case 0xcc: return this.u8();
      case 0xcd: return b.readUInt16BE(at(2));
      case 0xce: return b.readUInt32BE(at(4));
      case 0xcf: return this.int(b.readBigUInt64BE(at(8)));
      case 0xd0: return b.readInt8(at(1));
      case 0xd1: return b.readInt16BE(at(2));
      case 0xd2: return b.readInt32BE(at(4));
      case 0xd3: return this.int(b.readBigInt64BE(at(8)));
      case 0xd9: return this.str(this.u8());
      case 0xda: return this.str(b.readUInt16BE(at(2)));
      case 0xdb: return this.str(b.readUInt32BE(at(4)));
      case 0xdc: return this.arr(b.readUInt16BE(at(2)));
      case 0xdd: return this.arr(b.readUInt32BE(at(4)));
      case 0xde: return this.map(b.readUInt16BE(at(2)));
      case 0xdf: return this.map(b.readUInt32BE(at(4)));
      // Extensions (cty's unknown value is fixext1 type 0): skipped.
      case 0xd4: this.take(2); return undefined;
      case 0xd5: this.take(3); return undefined;
      case 0xd6: this.take(5); return undefined;
      case 0xd7: this.take(9); return undefined;
      case 0xd8: this.take(17); return undefined;
      case 0xc7: { const n = this.u8(); this.take(1 + n); return undefined; }
      case 0xc8: { const n = b.readUInt16BE(at(2)); this.take(1 + n); return undefined; }
      case 0xc9: { const n = b.readUInt32BE(at(4)); this.take(1 + n); return undefined; }
      default: throw new HclSpecError('HCLSPEC_MSGPACK', `msgpack: unknown type byte 0x${c.toString(16)}`);
    }
  }
}
