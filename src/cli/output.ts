// Everything the CLI writes goes through Output: human text (aligned fields,
// simple tables) or one JSON document, with a last scrub of every secret value
// the user typed, so that even a plugin echoing a credential in its error
// details cannot make berth print it.

import { REDACTED } from '../lib/index.js';
import { renderTemplate } from './go-template.js';

/** Where the CLI writes. Tests and main pass their own. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** The process's own stdout and stderr. */
export const processIo: CliIo = {
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

// Shorter values would scrub ordinary words out of every message; such
// values are still never printed by berth itself, only not scrubbed.
const MIN_SCRUB_LENGTH = 4;

// Flags whose values are credentials. Mount flags may be (`password=...`).
const SECRET_FLAGS = new Set(['--secret', '--mount-flag', '--token']);

/**
 * Replaces known secret values with [REDACTED] in any text. Built from the
 * raw argv before parsing, so even a usage error about a secret flag is scrubbed.
 */
export class Redactor {
  readonly #needles: string[];

  constructor(values: Iterable<string>) {
    const unique = new Set([...values].filter((v) => v.length >= MIN_SCRUB_LENGTH));
    this.#needles = [...unique].sort((a, b) => b.length - a.length);
  }

  /**
   * The values of every `--secret k=v`, `--mount-flag F` and `--token T` in
   * `argv` (both whole and after `=`), plus `extra` (e.g. BERTH_TOKEN).
   */
  static fromArgv(argv: readonly string[], extra: readonly string[] = []): Redactor {
    const values: string[] = [...extra];
    const add = (raw: string): void => {
      values.push(raw);
      const eq = raw.indexOf('=');
      if (eq >= 0) values.push(raw.slice(eq + 1));
    };
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i] ?? '';
      if (arg === '--') break;
      const eq = arg.indexOf('=');
      // Nomad's one-dash spelling (-token=...) is a secret flag too.
      const flag = (name: string): boolean => SECRET_FLAGS.has(name) || SECRET_FLAGS.has(`-${name}`);
      if (eq > 0 && flag(arg.slice(0, eq))) add(arg.slice(eq + 1));
      else if (flag(arg) && i + 1 < argv.length) add(argv[++i] ?? '');
    }
    return new Redactor(values);
  }

  apply(text: string): string {
    let out = text;
    for (const needle of this.#needles) out = out.split(needle).join(REDACTED);
    return out;
  }
}

// eslint-disable-next-line no-control-regex -- matching the terminal's colour codes is the point
const ANSI_SGR = /\x1b\[[0-9;]*m/g;

type FieldValue = string | number | boolean | readonly string[] | undefined;

/** Human or JSON output for one command run. */
export class Output {
  readonly json: boolean;
  readonly #io: CliIo;
  readonly #redactor: Redactor;

  readonly #template: string | undefined;

  /** With `template` (Nomad's `-t`), a document is printed through that Go template instead of as JSON. */
  constructor(io: CliIo, redactor: Redactor, json: boolean, template?: string) {
    this.#io = io;
    this.#redactor = redactor;
    this.json = json || template !== undefined;
    this.#template = template;
  }

  /** One line of human text on stdout. */
  line(text = ''): void {
    this.#io.stdout(this.#redactor.apply(`${text}\n`));
  }

  /** One line on stderr (errors, hints). */
  warn(text: string): void {
    this.#io.stderr(this.#redactor.apply(`${text}\n`));
  }

  /** One JSON document on stdout. SecretMap and VolumeCapability redact themselves. */
  document(value: unknown): void {
    if (this.#template !== undefined) {
      // The template sees the document as JSON has it (SecretMap and VolumeCapability redacted).
      this.line(renderTemplate(this.#template, JSON.parse(JSON.stringify(value)) as unknown));
      return;
    }
    this.#io.stdout(this.#redactor.apply(`${JSON.stringify(value, null, 2)}\n`));
  }

  /**
   * Aligned `key  value` lines. A list value prints one item a line under
   * the first; an empty list prints `(none)`; an undefined value skips the row.
   */
  fields(rows: ReadonlyArray<readonly [string, FieldValue]>, indent = ''): void {
    const shown = rows.filter((r): r is readonly [string, Exclude<FieldValue, undefined>] => r[1] !== undefined);
    const width = Math.max(0, ...shown.map(([k]) => k.length));
    for (const [key, value] of shown) {
      const items = Array.isArray(value) ? (value.length ? value : ['(none)']) : [String(value)];
      items.forEach((item, i) => this.line(`${indent}${(i === 0 ? key : '').padEnd(width)}  ${item}`));
    }
  }

  /** A table with a header row; `(none)` when there are no rows. */
  table(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): void {
    if (!rows.length) {
      this.line('(none)');
      return;
    }
    // Cells may carry ANSI colour (on a terminal): align by what is visible.
    const width = (c: string): number => c.replace(ANSI_SGR, '').length;
    const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => width(r[i] ?? ''))));
    const format = (cells: readonly string[]): string =>
      cells
        .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat(Math.max(0, (widths[i] ?? 0) - width(c)))))
        .join('  ')
        .trimEnd();
    this.line(format(headers));
    for (const row of rows) this.line(format(row));
  }
}

/** `k=v` lines of a string map, for `fields`. */
export function mapLines(map: Record<string, string> | undefined): string[] {
  return Object.entries(map ?? {}).map(([k, v]) => `${k}=${v}`);
}
