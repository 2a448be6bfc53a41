import { inspect } from 'node:util';

/** What a redacted value prints as, everywhere. */
export const REDACTED = '[REDACTED]';

/**
 * A string map whose values must never be printed: CSI secrets, and any
 * other credential Berth carries. The keys stay visible (they help an
 * operator see which secret is missing); the values show as [REDACTED] in
 * `String()`, `util.inspect`, `JSON.stringify` and therefore in pino logs.
 * `reveal()` is the one way to the values, for the wire.
 */
export class SecretMap {
  /**
   * The secret names, never the values. The printed forms read only this
   * public field: pino's redaction clones logged objects with their prototype
   * but without private fields.
   */
  readonly names: readonly string[];
  readonly #values: ReadonlyMap<string, string>;

  constructor(values: Record<string, string> | ReadonlyMap<string, string> = {}) {
    this.#values = new Map(values instanceof Map ? values : Object.entries(values));
    this.names = Object.freeze([...this.#values.keys()]);
  }

  static from(values: SecretMap | Record<string, string> | undefined): SecretMap {
    if (values instanceof SecretMap) return values;
    return new SecretMap(values ?? {});
  }

  get size(): number {
    return this.names.length;
  }

  keys(): string[] {
    return [...this.names];
  }

  has(key: string): boolean {
    return this.#values.has(key);
  }

  /** The plain values, for putting on the wire. Never log the result. */
  reveal(): Record<string, string> {
    return Object.fromEntries(this.#values);
  }

  toJSON(): Record<string, string> {
    return Object.fromEntries(this.keys().map((k) => [k, REDACTED]));
  }

  toString(): string {
    return `SecretMap(${this.keys().join(', ')})`;
  }

  [inspect.custom](): string {
    return `SecretMap ${inspect(this.toJSON())}`;
  }
}

const SECRET_KEY_PATTERN = /(secret|token|password|passwd|credential|private[-_]?key|api[-_]?key|auth)/i;

/** True when a map key looks like it names a credential. */
export function looksSecret(key: string): boolean {
  return SECRET_KEY_PATTERN.test(key);
}

/** A copy of `map` with the values of credential-looking keys replaced by [REDACTED]. */
export function redactSecretLookingValues(map: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(map).map(([k, v]) => [k, looksSecret(k) ? REDACTED : v]));
}

/**
 * A list of strings that must never be printed (mount flags may carry
 * `password=...`). Prints as one [REDACTED] per entry; `reveal()` gives the values.
 */
export class SecretList {
  /** How many values there are; public so that clones print right (see SecretMap.names). */
  readonly length: number;
  readonly #values: readonly string[];

  constructor(values: readonly string[] = []) {
    this.#values = Object.freeze([...values]);
    this.length = this.#values.length;
  }

  /** The values in clear text, for the wire. Never log the result. */
  reveal(): readonly string[] {
    return this.#values;
  }

  toJSON(): string[] {
    return Array<string>(this.length).fill(REDACTED);
  }

  toString(): string {
    return `SecretList(${this.length})`;
  }

  [inspect.custom](): string {
    return `SecretList ${inspect(this.toJSON())}`;
  }
}
