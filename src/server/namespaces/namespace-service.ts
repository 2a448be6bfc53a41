// Creating, changing and deleting namespaces (Nomad's Namespace.UpsertNamespaces
// and Namespace.DeleteNamespaces), each in one store write.

import type { Logger } from '../../lib/index.js';
import { DEFAULT_NAMESPACE, isClientTerminal, namespaceProblems } from '../../structs/index.js';
import { rowKey, type StateStore, type WriteTxn } from '../state/index.js';
import { namespaceExists } from './namespace-reads.js';
import { NamespaceError } from './errors.js';

/** Berth has one region; Nomad's refusals name the regions that hold objects. */
const REGIONS = '[global]';

export interface NamespaceServiceOptions {
  store: StateStore;
  logger: Logger;
}

/** A namespace as it is applied (Nomad's api.Namespace, its open-source fields). */
export interface NamespaceInput {
  name: string;
  description?: string;
  meta?: Record<string, string> | null;
  /** Berth has no quotas: anything but '' is refused, as Nomad refuses a quota it does not know. */
  quota?: string;
}

export class NamespaceService {
  readonly #store: StateStore;
  readonly #log: Logger;

  constructor(opts: NamespaceServiceOptions) {
    this.#store = opts.store;
    this.#log = opts.logger.child({ component: 'namespaces' });
  }

  /**
   * Creates the namespace or replaces its description and meta (its create
   * index stays). Resolves once durable with the write's index. Throws NamespaceError INVALID, in Nomad's words, for a
   * name or description Nomad refuses or a quota. Safe to repeat.
   */
  async apply(input: NamespaceInput): Promise<{ index: number }> {
    const description = input.description ?? '';
    const problems = namespaceProblems({ name: input.name, description });
    if (problems.length) throw new NamespaceError('INVALID', `Invalid namespace ${JSON.stringify(input.name)}: ${problems.join('; ')}`);
    if (input.quota) throw new NamespaceError('INVALID', `namespace ${JSON.stringify(input.name)} using non-existent quota ${JSON.stringify(input.quota)}`);
    const { index } = await this.#store.write((txn) => void txn.put('namespaces', { name: input.name, description, meta: { ...(input.meta ?? {}) } }));
    this.#log.info({ namespace: input.name, index }, 'namespace applied');
    return { index };
  }

  /**
   * Deletes the namespace, in the same write that checks it is empty: no
   * job that is not dead, no allocation still running, no CSI or host volume
   * (Nomad's refusals, all of them at once). Resolves with the write's
   * index. Throws NamespaceError INVALID for `default`, NOT_FOUND when there
   * is no such namespace, IN_USE when it is not empty.
   */
  async delete(name: string): Promise<{ index: number }> {
    if (name === DEFAULT_NAMESPACE) throw new NamespaceError('INVALID', 'can not delete default namespace');
    const { index } = await this.#store.write((txn) => {
      if (!txn.get('namespaces', rowKey(name))) throw new NamespaceError('NOT_FOUND', 'namespace not found');
      const held = holdings(txn, name);
      if (held.length) throw new NamespaceError('IN_USE', held.join('; '));
      txn.delete('namespaces', rowKey(name));
    });
    this.#log.info({ namespace: name }, 'namespace deleted');
    return { index };
  }

  /**
   * On a state written by a Berth that had no namespace objects (it took
   * any namespace: the namespaces table was never written), creates in one
   * write the namespaces its jobs, volumes or services are in, so that what
   * it ran stays listed, deletable and registrable as in any other
   * namespace. Once the table was written, does nothing: a namespace deleted
   * with dead jobs left in it stays deleted. Resolves with the names
   * created. Safe to repeat, and to run on several servers.
   */
  async adoptInUse(): Promise<string[]> {
    const { result } = await this.#store.write((txn) => {
      if (txn.tableIndex('namespaces') > 0) return [];
      const missing = new Set<string>();
      for (const table of NAMESPACED) for (const row of txn.list(table)) if (!namespaceExists(txn, row.namespace)) missing.add(row.namespace);
      for (const name of missing) txn.put('namespaces', { name, description: '', meta: {} });
      return [...missing].sort();
    });
    if (result.length) this.#log.info({ namespaces: result }, 'namespaces in use made objects');
    return result;
  }
}

/** The tables whose rows name a namespace that a state written before namespaces were objects may hold. */
const NAMESPACED = ['jobs', 'volumes', 'hostVolumes', 'services'] as const;

/** What keeps the namespace from being deleted, one refusal per kind of object, in Nomad's words (empty: nothing). */
function holdings(txn: WriteTxn, name: string): string[] {
  const ns = JSON.stringify(name);
  const out: string[] = [];
  const mine = { filter: (r: { namespace: string }) => r.namespace === name };
  if (txn.list('jobs', mine).some((j) => j.status !== 'dead')) out.push(`namespace ${ns} has non-terminal jobs in regions: ${REGIONS}`);
  if (txn.list('allocations', mine).some((a) => !isClientTerminal(a.clientStatus))) out.push(`namespace ${ns} has non-terminal allocations in regions: ${REGIONS}`);
  if (txn.list('volumes', mine).length > 0 || txn.list('hostVolumes', mine).length > 0) out.push(`namespace ${ns} has volumes associated with it in regions: ${REGIONS}`);
  return out;
}
