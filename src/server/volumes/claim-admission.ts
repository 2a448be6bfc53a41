import {
  claimConflicts,
  isClientTerminal,
  modeAllows,
  pluginSchedulable,
  type Allocation,
  type ClaimMode,
  type CsiPlugin,
  type Volume,
  type VolumeClaim,
} from '../../structs/index.js';
import { rowKey, type RowInput } from '../state/index.js';
import { VolumeError, type VolumeErrorCode } from './errors.js';

/** An allocation asking to use a volume. */
export interface ClaimRequest {
  namespace?: string;
  volumeId: string;
  allocId: string;
  mode: ClaimMode;
  /** Default: the volume's first capability (of a matching attachment mode, when given). */
  accessMode?: string;
  attachmentMode?: string;
}

/**
 * The rows a claim decision reads, all from one consistent view of the
 * state (in the server: the write transaction that records the claim).
 */
export interface AdmissionState {
  /** The requested volume, if it exists. */
  volume: Volume | undefined;
  /** The claiming allocation, if it exists. */
  allocation: Allocation | undefined;
  /** The volume's plugin, if any node runs it; its `nodes` hold at most the allocation's node. */
  plugin: CsiPlugin | undefined;
  /** Every claim of the volume not yet free (being released counts), the allocation's own included. */
  volumeClaims: readonly VolumeClaim[];
  /**
   * Every claim on the allocation's node of a volume of the same plugin.
   * Read only when that node's plugin has a volume limit (else empty).
   */
  pluginClaimsOnNode: readonly VolumeClaim[];
  /** The server clock (ms since the epoch), stamped as the new claim's `claimTime`. */
  now: number;
}

/**
 * What to do with a claim request: hand back the allocation's own claim
 * (a repeated request), record a new claim, or refuse with the error the
 * caller sees.
 */
export type AdmissionDecision =
  | { outcome: 'existing'; claim: VolumeClaim }
  | { outcome: 'admit'; claim: RowInput<'claims'> }
  /** `releasing`: the claim whose release, still in progress, is all that stands in the way. */
  | { outcome: 'refuse'; error: VolumeError; releasing?: VolumeClaim };


/** For a claim held by a silent node's writer: until when it is held. */
function fenceNote(c: VolumeClaim): string {
  return c.fencedUntil && c.state === 'taken' ? ` (its node is silent: held until ${new Date(c.fencedUntil).toISOString()})` : '';
}

function refuse(code: VolumeErrorCode, message: string, opts: { retryable?: boolean; field?: string; releasing?: VolumeClaim | undefined } = {}): AdmissionDecision {
  const { releasing, ...rest } = opts;
  return { outcome: 'refuse', error: new VolumeError(code, message, rest), ...(releasing ? { releasing } : {}) };
}

/**
 * Decides a claim from the state alone: pure, no I/O, no clock of its own.
 * Enforces the access mode against every claim not yet free (claims still
 * being released count: the old node may still have the volume attached):
 * single-node-*: one node; *-reader-only: readers only; single-writer
 * modes: one writer; multi-node-multi-writer: any. A new claim sits on the
 * allocation's node with `controllerPublish` `pending` when the plugin needs
 * ControllerPublish, unless another taken claim of the volume on that node
 * already holds the attachment (then `published`, sharing its publish
 * context), and `none` when it does not.
 *
 * Refusals carry the codes the HTTP API and CLI show: NOT_FOUND (volume,
 * allocation), INVALID (bad mode, a mode the volume does not offer, a write
 * on a read-only mode, an allocation not running), UNAVAILABLE retryable
 * (no healthy plugin or controller), CONFLICT (another claim holds the
 * volume; the allocation's own claim in another mode or still releasing),
 * EXHAUSTED retryable (the node is at its volume limit for the plugin).
 */
export function admitClaim(state: AdmissionState, req: ClaimRequest): AdmissionDecision {
  const namespace = req.namespace ?? 'default';
  const v = state.volume;
  if (!v) return refuse('NOT_FOUND', `volume ${req.volumeId} does not exist in namespace ${namespace}`);
  if (req.mode !== 'read' && req.mode !== 'write') return refuse('INVALID', 'mode must be read or write', { field: 'mode' });
  const alloc = state.allocation;
  if (!alloc) return refuse('NOT_FOUND', `allocation ${req.allocId} does not exist`);
  if (isClientTerminal(alloc.clientStatus) || alloc.desiredStatus !== 'run') {
    return refuse('INVALID', `allocation ${req.allocId} is not running (${alloc.desiredStatus}/${alloc.clientStatus}); it cannot claim volumes`);
  }
  const nodeId = alloc.nodeId;
  const mine = state.volumeClaims.find((c) => c.allocId === req.allocId);
  if (mine) {
    if (mine.state === 'taken' && mine.mode === req.mode && mine.controllerPublish !== 'pending') return { outcome: 'existing', claim: mine };
    // Its own claim being released, or taken with a ControllerPublish no process of this server
    // is waiting for (a leader that published it lost its lead: the claim watcher releases it as
    // interrupted): once that release ends, the same claim may be made again.
    const ends = mine.state !== 'taken' || (mine.mode === req.mode && mine.controllerPublish === 'pending');
    return refuse('CONFLICT', `allocation ${req.allocId} already has a ${mine.mode} claim on volume ${req.volumeId} (${mine.state}${mine.controllerPublish === 'pending' ? ', its ControllerPublish unfinished' : ''})`, {
      retryable: ends,
      releasing: ends ? mine : undefined,
    });
  }
  const cap = v.capabilities.find(
    (c) => (!req.accessMode || c.accessMode === req.accessMode) && (!req.attachmentMode || c.attachmentMode === req.attachmentMode),
  );
  if (!cap) {
    return refuse('INVALID', `volume ${req.volumeId} does not offer ${req.accessMode ?? 'any access mode'} with ${req.attachmentMode ?? 'any attachment mode'}`, {
      field: 'accessMode',
    });
  }
  if (!modeAllows(cap.accessMode, req.mode)) {
    return refuse('INVALID', `volume ${req.volumeId} is ${cap.accessMode}: it takes no write claims`, { field: 'mode' });
  }
  const plugin = state.plugin;
  if (!plugin || !pluginSchedulable(plugin)) {
    return refuse('UNAVAILABLE', `volume ${req.volumeId} is not schedulable: plugin ${v.pluginId} has no healthy ${plugin && plugin.nodesHealthy > 0 ? 'controller' : 'node plugin'}`, {
      retryable: true,
    });
  }
  const nodePlugin = plugin.nodes[nodeId];
  if (!nodePlugin?.healthy) return refuse('UNAVAILABLE', `node ${nodeId} has no healthy node plugin ${v.pluginId}`, { retryable: true });

  const others = state.volumeClaims;
  const [conflict] = claimConflicts(others, { nodeId, mode: req.mode, accessMode: cap.accessMode, attachmentMode: cap.attachmentMode });
  if (conflict) {
    const { holder } = conflict;
    const message =
      conflict.kind === 'mode-in-use'
        ? `volume ${req.volumeId} is in use as ${holder.accessMode}/${holder.attachmentMode}`
        : conflict.kind === 'other-node'
          ? `volume ${req.volumeId} is ${cap.accessMode} and ${holder.state === 'taken' ? 'claimed' : 'still being detached'} on node ${holder.nodeId}${fenceNote(holder)}`
          : `volume ${req.volumeId} already has a writer (allocation ${holder.allocId}, ${holder.state})${fenceNote(holder)}`;
    return refuse('CONFLICT', message, { retryable: true, releasing: holder.state === 'taken' ? undefined : holder });
  }
  const onNode = others.filter((c) => c.nodeId === nodeId);
  if (onNode.length === 0) {
    // A first claim of this volume on the node attaches one more volume there.
    const exhausted = plugin.exhaustedNodes[nodeId];
    if (exhausted) return refuse('EXHAUSTED', `node ${nodeId} can take no more volumes of plugin ${v.pluginId}: ${exhausted.reason}`, { retryable: true });
    if (nodePlugin.maxVolumes > 0) {
      const used = new Set(state.pluginClaimsOnNode.map((c) => rowKey(c.namespace, c.volumeId)));
      if (used.size >= nodePlugin.maxVolumes) {
        return refuse('EXHAUSTED', `node ${nodeId} has ${used.size} volumes of plugin ${v.pluginId}, its maximum`, { retryable: true });
      }
    }
  }
  // Another claim of this volume on the same node shares its attachment.
  const shared = onNode.find((c) => c.state === 'taken' && c.controllerPublish === 'published');
  return {
    outcome: 'admit',
    claim: {
      namespace,
      volumeId: req.volumeId,
      allocId: req.allocId,
      pluginId: v.pluginId,
      externalVolumeId: v.externalId,
      nodeId,
      externalNodeId: nodePlugin.externalNodeId,
      mode: req.mode,
      accessMode: cap.accessMode,
      attachmentMode: cap.attachmentMode,
      state: 'taken',
      controllerPublish: !plugin.controllerRequired ? 'none' : shared ? 'published' : 'pending',
      publishContext: shared ? { ...shared.publishContext } : {},
      releaseReason: '',
      releaseAttempts: 0,
      lastError: '',
      claimTime: state.now,
    },
  };
}
