// Where each block and attribute of an HCL file is (the outline the HCL
// engine gives of an evaluated body, dynamic blocks expanded), so that a
// problem found after conversion (a schema issue on `groups[0].count`) can
// be shown at its line and column.

import type { OutlineNode } from '../hcl/index.js';

export type HclOutlineNode = OutlineNode;

/** One step from a body to a block or attribute inside it: the nth of that name (and label). */
export interface HclStep {
  name: string;
  label?: string;
  nth: number;
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
