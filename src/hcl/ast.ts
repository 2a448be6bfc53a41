// The syntax tree of HCL's native syntax (hclsyntax): bodies of attributes
// and blocks, and expressions, every node with its source range. A value of
// plain data: a test can print it.

import type { Range } from './diagnostics.js';

export interface Body {
  attributes: Attribute[];
  blocks: Block[];
  range: Range;
}

export interface Attribute {
  name: string;
  nameRange: Range;
  expr: Expr;
  range: Range;
}

export interface Block {
  type: string;
  typeRange: Range;
  labels: { value: string; range: Range }[];
  body: Body;
  /** From the type to the opening brace. */
  defRange: Range;
}

/** One step of a traversal after its root: `.name` or `[key]`. */
export type Expr =
  | { kind: 'literal'; value: null | boolean | number | string; range: Range }
  | { kind: 'template'; parts: TemplatePart[]; range: Range; heredoc?: boolean }
  /** `"${x}"`: the value of x itself, unconverted. */
  | { kind: 'wrap'; expr: Expr; range: Range }
  | { kind: 'variable'; name: string; range: Range }
  | { kind: 'getattr'; object: Expr; name: string; range: Range; nameRange: Range }
  | { kind: 'index'; collection: Expr; key: Expr; range: Range; keyRange: Range }
  /** The element inside a splat's `each`. */
  | { kind: 'splatItem'; range: Range }
  | { kind: 'splat'; source: Expr; each: Expr; range: Range }
  | { kind: 'call'; name: string; nameRange: Range; args: Expr[]; expandFinal: boolean; range: Range }
  | { kind: 'tuple'; items: Expr[]; range: Range }
  | { kind: 'object'; items: { key: Expr; value: Expr; identKey: boolean }[]; range: Range }
  | { kind: 'unary'; op: '!' | '-'; operand: Expr; range: Range }
  | { kind: 'binary'; op: string; left: Expr; right: Expr; range: Range; opRange: Range }
  | { kind: 'conditional'; condition: Expr; then: Expr; else: Expr; range: Range }
  | {
      kind: 'for';
      keyVar?: string;
      valueVar: string;
      collection: Expr;
      keyExpr?: Expr;
      valueExpr: Expr;
      condition?: Expr;
      group: boolean;
      range: Range;
    }
  | { kind: 'paren'; expr: Expr; range: Range };

export type TemplatePart =
  | Expr
  | { kind: 'tif'; condition: Expr; then: TemplatePart[]; else: TemplatePart[]; range: Range }
  | { kind: 'tfor'; keyVar?: string; valueVar: string; collection: Expr; body: TemplatePart[]; range: Range };
