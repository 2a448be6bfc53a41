// Berth's additions to Nomad's CSI API: the shapes of what Nomad does not
// show or has no route for, in Nomad's style (PascalCase, every field
// present, times as RFC 3339 strings like Go's time.Time).
//
// On Nomad's shapes (csi.ts), named `Berth...` as every Berth field on a
// Nomad shape is: a volume's `BerthClaims` (VolumeClaimState),
// `BerthSecretNames`, `BerthUsage` (NodeVolumeUsage) and `BerthCondition`
// (VolumeCondition); a plugin's `BerthExhaustedNodes`.
//
// Berth's own routes, under paths Nomad does not use:
//   GET    /v1/volume/csi/:id/usage          VolumeUsageHistory
//   GET    /v1/volume/csi/:id/drift          VolumeDrift
//   GET    /v1/volumes/drift                 DriftReport (the drift loop's latest)
//   GET    /v1/volumes/doctor                DriftReport (compare now)
//   POST   /v1/volumes/doctor                DriftReport (compare and repair what is safe)
//   GET    /v1/volumes/csi/claims            VolumeClaimListStub[]
//   DELETE /v1/volume/csi/:id/claim/:alloc   VolumeClaimDeleteResponse
//   POST   /v1/volume/csi/:id/expand         CSIVolumeExpandRequest -> CSIVolume
// and Nomad's `DELETE /v1/volume/csi/:id/detach` answers CSIVolumeDetachResponse
// (Nomad answers it with an empty body, which its clients ignore).
// On the event stream (events.ts EVENT_PAYLOADS): the `claim` topic carries a
// VolumeClaimListStub, `volume-condition` a VolumeConditionEvent and `drift`
// a DriftReport.

import { z } from 'zod';
import { lazySchema } from './lazy-schema.js';

const int = lazySchema(() => z.number().int());

/** Used, available and total figures of one unit (bytes or inodes), as NodeGetVolumeStats gives them. */
export const UsageFigures = lazySchema(() => z.strictObject({
  Available: int.nonnegative(),
  Total: int.nonnegative(),
  Used: int.nonnegative(),
}));
export type UsageFigures = z.infer<typeof UsageFigures>;

/** The latest usage of a volume on one node. `Bytes`/`Inodes` are null when the plugin did not report them. */
export const NodeVolumeUsage = lazySchema(() => z.strictObject({
  NodeID: z.string(),
  Bytes: UsageFigures.nullable(),
  Inodes: UsageFigures.nullable(),
  /** The node's clock, RFC 3339. */
  ReportedAt: z.string(),
}));
export type NodeVolumeUsage = z.infer<typeof NodeVolumeUsage>;

/** One source's last word on a volume's condition. */
export const SourcedCondition = lazySchema(() => z.strictObject({
  Source: z.enum(['node', 'controller']),
  /** The node that reported it (for a controller, the node that runs the controller instance). */
  NodeID: z.string(),
  Abnormal: z.boolean(),
  Message: z.string(),
  ReportedAt: z.string(),
}));
export type SourcedCondition = z.infer<typeof SourcedCondition>;

/** A volume's condition: abnormal when any source says so; `Message` is the first abnormal source's. */
export const VolumeCondition = lazySchema(() => z.strictObject({
  Abnormal: z.boolean(),
  Message: z.string(),
  Sources: z.array(SourcedCondition),
}));
export type VolumeCondition = z.infer<typeof VolumeCondition>;

/**
 * A volume's condition with the volume it is of: the payload of the
 * `volume-condition` event topic (the condition as a volume's
 * `BerthCondition` shows it, and which volume and plugin it is about).
 */
export const VolumeConditionEvent = lazySchema(() => z.strictObject({
  Namespace: z.string(),
  VolumeID: z.string(),
  PluginID: z.string(),
  ...VolumeCondition.shape,
  CreateIndex: int.nonnegative(),
  ModifyIndex: int.nonnegative(),
}));
export type VolumeConditionEvent = z.infer<typeof VolumeConditionEvent>;

/**
 * One allocation's claim on a volume and where its release stands. States:
 * `taken` while the allocation may use the volume, then `unpublishing`,
 * `node-detached`, `controller-detached`; the claim is gone once free.
 */
export const VolumeClaimState = lazySchema(() => z.strictObject({
  AllocationID: z.string(),
  NodeID: z.string(),
  /** The plugin's ID of the node (what ControllerPublish was sent). */
  ExternalNodeID: z.string(),
  Mode: z.enum(['read', 'write']),
  AccessMode: z.string(),
  AttachmentMode: z.string(),
  State: z.enum(['taken', 'unpublishing', 'node-detached', 'controller-detached', 'free']),
  /** `none`, `pending`, `published` or `uncertain`. */
  ControllerPublish: z.enum(['none', 'pending', 'published', 'uncertain']),
  /** Why the release started ("" while taken). */
  ReleaseReason: z.string(),
  ReleaseAttempts: int.nonnegative(),
  LastError: z.string(),
  /** When the claim was taken (server clock, RFC 3339). */
  ClaimTime: z.string(),
  /**
   * Set while the claim is fenced: its node went silent and may still run
   * the writer, so the claim is held until then (RFC 3339) unless the node
   * confirms its allocation ended or an operator detaches. Null otherwise.
   */
  FencedUntil: z.string().nullable(),
  FenceReason: z.string(),
  /** True once an operator forced the release (`volume detach -force`): the node unmounts what its plugin refuses to. */
  BerthReleaseForced: z.boolean(),
  /** What the node unmounted itself in the plugin's place during the release ("" when nothing). */
  BerthReleaseOverride: z.string(),
  CreateIndex: int.nonnegative(),
  ModifyIndex: int.nonnegative(),
}));
export type VolumeClaimState = z.infer<typeof VolumeClaimState>;

/** One row of `GET /v1/volumes/csi/claims` (`?job=`, `?volume=`, `namespace`): a claim, its volume, and its allocation's job and status. */
export const VolumeClaimListStub = lazySchema(() => VolumeClaimState.extend({
  Namespace: z.string(),
  VolumeID: z.string(),
  PluginID: z.string(),
  /** "" when the allocation is gone. */
  JobID: z.string(),
  /** "gone" when the allocation is gone. */
  AllocClientStatus: z.string(),
  AllocDesiredStatus: z.string(),
}));
export type VolumeClaimListStub = z.infer<typeof VolumeClaimListStub>;

/** `DELETE /v1/volume/csi/:id/claim/:alloc` (`?force=true` stops a running allocation first). */
export const VolumeClaimDeleteResponse = lazySchema(() => z.strictObject({
  VolumeID: z.string(),
  AllocationID: z.string(),
  NodeID: z.string(),
  /** The allocation stopped first (with force), "" when none was. */
  StoppedAllocation: z.string(),
}));
export type VolumeClaimDeleteResponse = z.infer<typeof VolumeClaimDeleteResponse>;

/** The answer to `DELETE /v1/volume/csi/:id/detach?node=` (`force=true` stops the allocations that use it there first). */
export const CSIVolumeDetachResponse = lazySchema(() => z.strictObject({
  /** The allocations stopped before the detach (with force). */
  StoppedAllocations: z.array(z.string()),
  /** Non-fatal messages ("" when none), e.g. a fenced writer's claim released early. */
  Warnings: z.string(),
}));
export type CSIVolumeDetachResponse = z.infer<typeof CSIVolumeDetachResponse>;

/** `POST /v1/volume/csi/:id/expand`: grow a volume through its controller; answers the volume (CSIVolume). */
export const CSIVolumeExpandRequest = lazySchema(() => z.object({
  RequiredBytes: int.positive(),
  /** 0 or absent: no limit beyond the volume's RequestedCapacityMax. */
  LimitBytes: int.nonnegative().optional(),
}));
export type CSIVolumeExpandRequest = z.infer<typeof CSIVolumeExpandRequest>;

/** One point of a volume's usage history. Figures the node did not report are null. */
export const VolumeUsageSample = lazySchema(() => z.strictObject({
  At: z.string(),
  NodeID: z.string(),
  BytesUsed: int.nullable(),
  BytesTotal: int.nullable(),
  InodesUsed: int.nullable(),
  InodesTotal: int.nullable(),
}));
export type VolumeUsageSample = z.infer<typeof VolumeUsageSample>;

/** `GET /v1/volume/csi/:id/usage`. */
export const VolumeUsageHistory = lazySchema(() => z.strictObject({
  Namespace: z.string(),
  VolumeID: z.string(),
  Latest: z.array(NodeVolumeUsage),
  Samples: z.array(VolumeUsageSample),
}));
export type VolumeUsageHistory = z.infer<typeof VolumeUsageHistory>;

/** The kinds of difference between Berth's books and what plugins and kernels say. */
export const DriftKind = lazySchema(() => z.enum(['claim-without-allocation', 'stale-controller-publication', 'mount-without-record', 'record-without-mount', 'unknown-plugin-volume', 'plugin-not-checked']));
export type DriftKind = z.infer<typeof DriftKind>;

/** One difference. IDs that do not apply are "". */
export const DriftFinding = lazySchema(() => z.strictObject({
  Kind: DriftKind,
  PluginID: z.string(),
  Namespace: z.string(),
  /** Berth's volume ID, when the difference is about a known volume. */
  VolumeID: z.string(),
  ExternalVolumeID: z.string(),
  NodeID: z.string(),
  ExternalNodeID: z.string(),
  AllocID: z.string(),
  /** A host path on the node (a mount or a record). */
  Path: z.string(),
  Message: z.string(),
  /** The command that repairs it. */
  Repair: z.string(),
  /** Whether the doctor's repair (`volume doctor --fix`) does it. */
  Fixable: z.boolean(),
}));
export type DriftFinding = z.infer<typeof DriftFinding>;

/** What one comparison found, and with a repair what it fixed. */
export const DriftReport = lazySchema(() => z.strictObject({
  /** Server clock; zero time when the drift loop has not run yet. */
  CheckedAt: z.string(),
  /** The volume when the comparison was of one ("" otherwise). */
  Namespace: z.string(),
  VolumeID: z.string(),
  Findings: z.array(DriftFinding),
  /** The sources that could not be asked (`plugin <id>`, `node <id>`). */
  Errors: z.array(z.strictObject({ Source: z.string(), Message: z.string() })),
  /** After a repair: the findings fixed, and those whose repair failed. */
  Fixed: z.array(DriftFinding),
  FixFailed: z.array(z.strictObject({ Finding: DriftFinding, Error: z.string() })),
}));
export type DriftReport = z.infer<typeof DriftReport>;

/** `GET /v1/volume/csi/:id/drift`: the drift loop's latest differences about one volume. */
export const VolumeDrift = lazySchema(() => z.strictObject({
  Namespace: z.string(),
  VolumeID: z.string(),
  CheckedAt: z.string(),
  Differences: z.array(DriftFinding),
}));
export type VolumeDrift = z.infer<typeof VolumeDrift>;
