// Berth's volume health, drift and claim rows -> the shapes of Berth's
// additions to Nomad's CSI API (src/api/csi-berth.ts). Pure.

import {
  GO_ZERO_TIME,
  type DriftFinding as ApiDriftFinding,
  type DriftReport as ApiDriftReport,
  type NodeVolumeUsage as ApiNodeVolumeUsage,
  type UsageFigures as ApiUsageFigures,
  type VolumeCondition,
  type VolumeUsageSample as ApiVolumeUsageSample,
} from '../../api/index.js';
import type { DriftFinding, DriftReport, NodeVolumeUsage, SourcedCondition, UsageFigures, VolumeUsageSample } from '../../structs/index.js';

/** Milliseconds since the epoch -> a Go time's JSON (RFC 3339); 0 or less -> Go's zero time. */
export function goTime(ms: number | undefined): string {
  return ms !== undefined && ms > 0 && Number.isFinite(ms) ? new Date(ms).toISOString() : GO_ZERO_TIME;
}

function figures(f: UsageFigures | undefined): ApiUsageFigures | null {
  return f ? { Available: f.available, Total: f.total, Used: f.used } : null;
}

export function nodeVolumeUsage(u: NodeVolumeUsage): ApiNodeVolumeUsage {
  return { NodeID: u.nodeId, Bytes: figures(u.bytes), Inodes: figures(u.inodes), ReportedAt: goTime(u.reportedAt) };
}

export function volumeCondition(c: { abnormal: boolean; message: string; sources: SourcedCondition[] }): VolumeCondition {
  return {
    Abnormal: c.abnormal,
    Message: c.message,
    Sources: c.sources.map((s) => ({ Source: s.source, NodeID: s.nodeId, Abnormal: s.abnormal, Message: s.message, ReportedAt: goTime(s.reportedAt) })),
  };
}

export function volumeUsageSample(s: VolumeUsageSample): ApiVolumeUsageSample {
  return {
    At: goTime(s.at),
    NodeID: s.nodeId,
    BytesUsed: s.bytesUsed ?? null,
    BytesTotal: s.bytesTotal ?? null,
    InodesUsed: s.inodesUsed ?? null,
    InodesTotal: s.inodesTotal ?? null,
  };
}

export function driftFinding(f: DriftFinding): ApiDriftFinding {
  return {
    Kind: f.kind,
    PluginID: f.pluginId,
    Namespace: f.namespace ?? '',
    VolumeID: f.volumeId ?? '',
    ExternalVolumeID: f.externalVolumeId ?? '',
    NodeID: f.nodeId ?? '',
    ExternalNodeID: f.externalNodeId ?? '',
    AllocID: f.allocId ?? '',
    Path: f.path ?? '',
    Message: f.message,
    Repair: f.repair,
    Fixable: f.fixable,
  };
}

/** A doctor run or the drift loop's latest report -> Berth's DriftReport (`checkedAt` 0: the zero time). */
export function driftReport(r: DriftReport): ApiDriftReport {
  return {
    CheckedAt: goTime(r.checkedAt),
    Namespace: r.namespace ?? '',
    VolumeID: r.volumeId ?? '',
    Findings: r.findings.map(driftFinding),
    Errors: r.errors.map((e) => ({ Source: e.source, Message: e.message })),
    Fixed: (r.fixed ?? []).map(driftFinding),
    FixFailed: (r.fixFailed ?? []).map((x) => ({ Finding: driftFinding(x.finding), Error: x.error })),
  };
}
