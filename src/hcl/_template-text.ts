// The literal text of a template before it becomes a tree: `<<-`
// indentation stripping and `~` strip markers, applied to the flat sequence
// of literals, interpolations and directives the parser reads.

import type { Expr } from './ast.js';
import { spanning, type Range } from './diagnostics.js';

/** One item of a template, in source order. */
export type Flat =
  | { t: 'lit'; value: string; range: Range; lineStart: boolean }
  | { t: 'interp'; expr: Expr; stripL: boolean; stripR: boolean; range: Range }
  | { t: 'ctl'; word: 'if' | 'else' | 'endif' | 'for' | 'endfor'; expr?: Expr; keyVar?: string; valueVar?: string; stripL: boolean; stripR: boolean; range: Range };

// `<<-`: the smallest indentation of the lines that have content is cut from every line.
export function flushIndent(flat: Flat[]): void {
  let min = Infinity;
  for (const f of flat) {
    if (f.t !== 'lit' || !f.lineStart) continue;
    const m = /^[ \t]*/.exec(f.value) as RegExpExecArray;
    if (m[0].length === f.value.replace(/\r?\n$/, '').length && /\n$/.test(f.value)) continue;
    min = Math.min(min, m[0].length);
  }
  if (!Number.isFinite(min) || min === 0) return;
  for (const f of flat) if (f.t === 'lit' && f.lineStart) f.value = f.value.replace(new RegExp(`^[ \\t]{0,${min}}`), '');
}

// `${~ x ~}`: whitespace (newlines too) beside the marker is dropped from the neighbouring literal.
export function applyStrips(flat: Flat[]): void {
  // Heredoc text comes a line at a time: join neighbouring literals first, so a strip reaches across lines.
  for (let k = flat.length - 1; k > 0; k--) {
    const [a, b] = [flat[k - 1] as Flat, flat[k] as Flat];
    if (a.t === 'lit' && b.t === 'lit') {
      a.value += b.value;
      a.range = spanning(a.range, b.range);
      flat.splice(k, 1);
    }
  }
  for (let k = 0; k < flat.length; k++) {
    const f = flat[k] as Flat;
    if (f.t === 'lit') continue;
    const prev = flat[k - 1];
    const next = flat[k + 1];
    if (f.stripL && prev?.t === 'lit') prev.value = prev.value.replace(/\s+$/, '');
    if (f.stripR && next?.t === 'lit') next.value = next.value.replace(/^\s+/, '');
  }
}
