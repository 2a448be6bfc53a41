// Reading namespaces from a store view, and the check a registration runs in
// its own write. Pure functions of the view they are given.

import { DEFAULT_NAMESPACE, DEFAULT_NAMESPACE_ROW, type Namespace } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';
import { NamespaceError } from './errors.js';

/**
 * The namespace `name` as of `snap`, or undefined when there is none.
 * `default` always exists: as stored once changed, else as Nomad creates
 * it; it keeps Nomad's create index 1 either way.
 */
export function namespaceIn(snap: StateReader, name: string): Namespace | undefined {
  const row = snap.get('namespaces', rowKey(name));
  if (name !== DEFAULT_NAMESPACE) return row;
  return row ? { ...row, createIndex: DEFAULT_NAMESPACE_ROW.createIndex } : DEFAULT_NAMESPACE_ROW;
}

/** Whether `name` exists as of `snap` (`default` always does). Copies no row: every registration asks it. */
export function namespaceExists(snap: StateReader, name: string): boolean {
  return name === DEFAULT_NAMESPACE || snap.get('namespaces', rowKey(name)) !== undefined;
}

/** Every namespace whose name starts with `prefix`, sorted by name (as Nomad's index orders them: byte order). */
export function namespacesIn(snap: StateReader, prefix = ''): Namespace[] {
  const rows = snap.list('namespaces').filter((n) => n.name !== DEFAULT_NAMESPACE);
  const def = namespaceIn(snap, DEFAULT_NAMESPACE) as Namespace;
  return [def, ...rows].filter((n) => n.name.startsWith(prefix)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Throws NamespaceError INVALID with `refusal` (Nomad's words for the object
 * refused, e.g. `job "web" is in nonexistent namespace "nope"`) unless
 * `name` exists as of `view`. Run it inside the write that registers the
 * object: a namespace deleted meanwhile then fails one of the two writes.
 */
export function requireNamespace(view: StateReader, name: string, refusal: string): void {
  if (!namespaceExists(view, name)) throw new NamespaceError('INVALID', refusal);
}
