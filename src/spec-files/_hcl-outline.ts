// An outline of an HCL file: where each block and attribute starts, so that a
// problem found after conversion (a zod issue on `groups[0].count`) can be
// shown at its line and column. Run only on text hcl2json already accepted,
// so it may be lenient: it skips expressions without evaluating them.

export interface HclOutlineNode {
  kind: 'block' | 'attr';
  name: string;
  labels: string[];
  /** 1-based. */
  line: number;
  column: number;
  children: HclOutlineNode[];
}

/** One step from a body to a block or attribute inside it: the nth of that name (and label). */
export interface HclStep {
  name: string;
  label?: string;
  nth: number;
}

const IDENT_START = /[A-Za-z_]/;
const IDENT = /[A-Za-z0-9_-]/;

/** Builds the outline of `text`. Pure; never throws. */
export function outlineHcl(text: string): HclOutlineNode[] {
  const lineStarts = [0];
  for (let k = 0; k < text.length; k++) if (text[k] === '\n') lineStarts.push(k + 1);
  const position = (offset: number): { line: number; column: number } => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((lineStarts[mid] as number) <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - (lineStarts[lo] as number) + 1 };
  };
  let i = 0;

  const skipLineComment = (): void => {
    while (i < text.length && text[i] !== '\n') i++;
  };
  const skipBlockComment = (): void => {
    const end = text.indexOf('*/', i + 2);
    i = end < 0 ? text.length : end + 2;
  };
  // Whitespace and comments; newlines too when `newlines`.
  const skipSpace = (newlines: boolean): void => {
    while (i < text.length) {
      const c = text[i] as string;
      if (c === ' ' || c === '\t' || c === '\r' || (newlines && c === '\n')) i++;
      else if (c === '#' || (c === '/' && text[i + 1] === '/')) skipLineComment();
      else if (c === '/' && text[i + 1] === '*') skipBlockComment();
      else break;
    }
  };
  const skipString = (): string => {
    const start = ++i;
    while (i < text.length) {
      const c = text[i];
      if (c === '\\') i += 2;
      else if (c === '"') break;
      else if ((c === '$' || c === '%') && text[i + 1] === '{') {
        i += 2;
        skipTemplate();
      } else i++;
    }
    const value = text.slice(start, i);
    i++;
    return value;
  };
  // Inside `${ ... }`: up to and past the matching brace.
  const skipTemplate = (): void => {
    let depth = 1;
    while (i < text.length && depth > 0) {
      const c = text[i];
      if (c === '"') skipString();
      else {
        if (c === '{') depth++;
        else if (c === '}') depth--;
        i++;
      }
    }
  };
  const skipHeredoc = (): void => {
    const m = /^<<-?([A-Za-z_][A-Za-z0-9_]*)\r?\n/.exec(text.slice(i, i + 200));
    if (!m) {
      i += 2;
      return;
    }
    const marker = m[1] as string;
    i += m[0].length;
    while (i < text.length) {
      const end = text.indexOf('\n', i);
      const line = text.slice(i, end < 0 ? text.length : end);
      i = end < 0 ? text.length : end + 1;
      if (line.trim() === marker) return;
    }
  };
  // An attribute's expression: up to a newline (or the enclosing block's `}`) outside brackets.
  const skipExpression = (): void => {
    let depth = 0;
    while (i < text.length) {
      const c = text[i] as string;
      if (c === '"') skipString();
      else if (c === '<' && text[i + 1] === '<') skipHeredoc();
      else if (c === '#' || (c === '/' && text[i + 1] === '/')) skipLineComment();
      else if (c === '/' && text[i + 1] === '*') skipBlockComment();
      else if (c === '(' || c === '[' || c === '{') {
        depth++;
        i++;
      } else if (c === ')' || c === ']' || c === '}') {
        if (depth === 0) return;
        depth--;
        i++;
      } else if (c === '\n' && depth === 0) return;
      else i++;
    }
  };
  const readIdent = (): string => {
    const start = i;
    while (i < text.length && IDENT.test(text[i] as string)) i++;
    return text.slice(start, i);
  };

  const body = (nested: boolean): HclOutlineNode[] => {
    const nodes: HclOutlineNode[] = [];
    while (i < text.length) {
      skipSpace(true);
      if (i >= text.length) break;
      const c = text[i] as string;
      if (c === '}') {
        i++;
        if (nested) return nodes;
        continue;
      }
      if (!IDENT_START.test(c)) {
        i++;
        continue;
      }
      const at = position(i);
      const name = readIdent();
      skipSpace(false);
      if (text[i] === '=' && text[i + 1] !== '=') {
        i++;
        skipExpression();
        nodes.push({ kind: 'attr', name, labels: [], ...at, children: [] });
        continue;
      }
      const labels: string[] = [];
      while (i < text.length) {
        if (text[i] === '"') labels.push(skipString());
        else if (IDENT_START.test(text[i] as string)) labels.push(readIdent());
        else break;
        skipSpace(false);
      }
      if (text[i] === '{') {
        i++;
        nodes.push({ kind: 'block', name, labels, ...at, children: body(true) });
      }
    }
    return nodes;
  };
  return body(false);
}

/**
 * The line and column of the block or attribute that `steps` lead to, or of
 * the deepest one found on the way; undefined when not even the first exists.
 */
export function locateHcl(outline: readonly HclOutlineNode[], steps: readonly HclStep[]): { line: number; column: number } | undefined {
  let nodes = outline;
  let found: HclOutlineNode | undefined;
  for (const step of steps) {
    const matches = nodes.filter((n) => n.name === step.name && (step.label === undefined || n.labels[0] === step.label));
    const next = matches[step.nth] ?? matches[0];
    if (!next) break;
    found = next;
    nodes = next.children;
  }
  return found ? { line: found.line, column: found.column } : undefined;
}

/** The labels of the `name` blocks directly inside the body `steps` lead to, in source order. */
export function labelsInOrder(outline: readonly HclOutlineNode[], steps: readonly HclStep[], name: string): string[] {
  let nodes = outline;
  for (const step of steps) {
    const matches = nodes.filter((n) => n.name === step.name && (step.label === undefined || n.labels[0] === step.label));
    const next = matches[step.nth] ?? matches[0];
    if (!next) return [];
    nodes = next.children;
  }
  return nodes.filter((n) => n.kind === 'block' && n.name === name).map((n) => n.labels[0] ?? '');
}
