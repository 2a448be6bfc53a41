// Namespaces as the server stores them (one row of the `namespaces` table per
// namespace), with Nomad's rules for their names (nomad/structs Namespace).

/** The namespace every object is in unless it names another; it always exists and cannot be deleted. */
export const DEFAULT_NAMESPACE = 'default';
/** Nomad's description of the default namespace. */
export const DEFAULT_NAMESPACE_DESCRIPTION = 'Default shared namespace';
/** What a list query names to read every namespace (Nomad's AllNamespacesSentinel). */
export const ALL_NAMESPACES = '*';

/** Nomad's validNamespaceName. */
export const NAMESPACE_NAME_PATTERN = /^[a-zA-Z0-9-]{1,128}$/;
/** Nomad's maxNamespaceDescriptionLength. */
export const MAX_NAMESPACE_DESCRIPTION = 256;

export interface Namespace {
  name: string;
  description: string;
  /** Free-form key/value pairs (Nomad's Namespace.Meta). */
  meta: Record<string, string>;
  createIndex: number;
  modifyIndex: number;
}

/** The default namespace as it is before anyone changes it (Nomad creates it at index 1). */
export const DEFAULT_NAMESPACE_ROW: Readonly<Namespace> = Object.freeze({
  name: DEFAULT_NAMESPACE,
  description: DEFAULT_NAMESPACE_DESCRIPTION,
  meta: Object.freeze({}) as Record<string, string>,
  createIndex: 1,
  modifyIndex: 1,
});

/**
 * What is wrong with a namespace's name and description, in Nomad's words
 * (`Namespace.Validate`); empty when nothing is. Pure.
 */
export function namespaceProblems(ns: { name: string; description: string }): string[] {
  const problems: string[] = [];
  if (!NAMESPACE_NAME_PATTERN.test(ns.name)) problems.push(`invalid name ${JSON.stringify(ns.name)}. Must match regex ${NAMESPACE_NAME_PATTERN.source}`);
  if (ns.description.length > MAX_NAMESPACE_DESCRIPTION) problems.push(`description longer than ${MAX_NAMESPACE_DESCRIPTION}`);
  return problems;
}
