// Host volume feasibility (Nomad's HostVolumeChecker, scheduler/feasible):
// a group's `volume { type = "host" source = "<name>" }` lands only on a
// node that reports a host volume of that name. For a dynamic host volume
// the volume must be ready in the job's namespace, offer the requested
// access and attachment mode, and its access mode must allow this
// allocation beside what else runs on the node (single-node-single-writer:
// one writer); `sticky` keeps the group on the volume its earlier
// allocations used. A static host volume takes no sticky request. Pure.

import {
  hostVolumeState,
  requestedHostAccess,
  type HostVolume,
  type Node,
  type TaskGroup,
} from '../../structs/index.js';

/** Nomad's FilterConstraintHostVolumes: the reason a node without the group's host volumes is filtered. */
export const HOST_VOLUMES_REASON = 'missing compatible host volumes';

/** Another allocation's use of a host volume on a node (for single-node-single-writer). */
export interface HostVolumeUse {
  nodeId: string;
  /** The host volume name its group asks for. */
  source: string;
  readOnly: boolean;
}

export interface HostVolumeCheckerInput {
  group: TaskGroup;
  /** Dynamic host volumes of the job's namespace, by ID. */
  volumes: ReadonlyMap<string, HostVolume>;
  /** Nodes by ID, for the volumes' state. */
  nodes: ReadonlyMap<string, Node>;
  /** Host volume uses of the allocations that stay (not stopped by this evaluation), on every node. */
  uses: readonly HostVolumeUse[];
  /**
   * Volume IDs this group's sticky claims bind it to and that no allocation
   * of the group that stays holds now (Nomad's unmet claims).
   */
  unmetStickyVolumes: ReadonlySet<string>;
}

/** See the file comment. `placed` records a placement so that the next ones of the same evaluation see it. */
export class HostVolumeChecker {
  readonly #in: HostVolumeCheckerInput;
  readonly #requests: TaskGroup['volumes'][string][];
  readonly #uses: HostVolumeUse[];
  readonly #unmet: Set<string>;

  constructor(input: HostVolumeCheckerInput) {
    this.#in = input;
    this.#requests = Object.values(input.group.volumes).filter((v) => v.type === 'host');
    this.#uses = [...input.uses];
    this.#unmet = new Set(input.unmetStickyVolumes);
  }

  /** True when the group asks for no host volume (nothing to check). */
  get empty(): boolean {
    return this.#requests.length === 0;
  }

  /** HOST_VOLUMES_REASON when `node` cannot take the group's host volumes; undefined when it can. */
  reason(node: Node): string | undefined {
    for (const req of this.#requests) {
      if (!this.#feasible(node, req)) return HOST_VOLUMES_REASON;
    }
    return undefined;
  }

  /** Counts an allocation of the group placed on `nodeId`. */
  placed(nodeId: string, node: Node | undefined): void {
    for (const req of this.#requests) {
      this.#uses.push({ nodeId, source: req.source, readOnly: req.readOnly });
      const id = node?.hostVolumes?.[req.source]?.id;
      if (req.sticky && id) this.#unmet.delete(id);
    }
  }

  #feasible(node: Node, req: TaskGroup['volumes'][string]): boolean {
    // A node of an older agent reports no host volumes: only its dynamic ones are known (from the state).
    const reported = node.hostVolumes?.[req.source];
    if (!node.hostVolumes) return !req.sticky && !this.#dynamicOn(node.id, req.source);
    if (!reported) return false;
    if (!reported.id) {
      // A static host volume: sticky is for dynamic ones only; a read-only one takes only read-only requests.
      return !req.sticky && (req.readOnly || !reported.readOnly);
    }
    const vol = this.#in.volumes.get(reported.id);
    if (!vol) return false; // another namespace's, or deleted while the node still reports it
    if (!this.#available(vol, node, req)) return false;
    if (req.sticky && this.#unmet.size > 0) return this.#unmet.has(vol.id);
    return true;
  }

  #dynamicOn(nodeId: string, name: string): boolean {
    for (const v of this.#in.volumes.values()) if (v.nodeId === nodeId && v.name === name) return true;
    return false;
  }

  #available(vol: HostVolume, node: Node, req: TaskGroup['volumes'][string]): boolean {
    if (hostVolumeState(vol, this.#in.nodes.get(vol.nodeId) ?? node) !== 'ready') return false;
    const access = requestedHostAccess(req.accessMode, req.readOnly);
    const attach = req.attachmentMode || 'file-system';
    if (!vol.requestedCapabilities.some((c) => c.accessMode === access && c.attachmentMode === attach)) return false;
    switch (access) {
      case 'single-node-reader-only':
        return req.readOnly;
      case 'single-node-writer':
        return !req.readOnly;
      case 'single-node-single-writer':
        // No other allocation on the node may write to it (Nomad checks every proposed allocation there).
        return !this.#uses.some((u) => u.nodeId === vol.nodeId && u.source === vol.name && !u.readOnly);
      default:
        return true;
    }
  }
}
