// Berth's servers and tokens in Nomad's shapes (src/api): what
// the cluster routes answer. Pure functions.

import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { ACLToken, AgentMember, AgentVersion } from '../../api/index.js';
import type { ServerMember } from '../leader/index.js';
import type { AgentInfo } from './route-context.js';

/** Berth has one region. */
export const REGION = 'global';
export const DEFAULT_DATACENTER = 'dc1';
/** Go's zero time.Time as its JSON encoder writes it. */
export const ZERO_TIME = '0001-01-01T00:00:00Z';

/** A server's address split as Nomad's members carry it: the IP (no brackets), the port, and `host:port` (brackets kept) as /v1/status/leader answers it. */
export function serverAddress(url: string): { addr: string; port: number; hostPort: string } {
  try {
    const u = new URL(url);
    const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    return { addr: u.hostname.replace(/^\[|\]$/g, ''), port, hostPort: `${u.hostname}:${port}` };
  } catch {
    return { addr: url, port: 0, hostPort: url };
  }
}

/** The agent's name, datacenter and version as its info gives them, with a bare server's defaults. */
export function agentFacts(info: AgentInfo | undefined): { name: string; datacenter: string; version: string } {
  return { name: info?.nodeName ?? hostname(), datacenter: info?.datacenter ?? DEFAULT_DATACENTER, version: info?.version ?? 'unknown' };
}

/** Nomad's version block for Berth's release `version` (`0.1.0-rc.1+abc`: version, prerelease, metadata). */
export function versionInfo(version: string): AgentVersion {
  const m = /^([^-+]*)(?:-([^+]*))?(?:\+(.*))?$/.exec(version);
  return { BuildDate: ZERO_TIME, Revision: '', Version: m?.[1] ?? version, VersionPrerelease: m?.[2] ?? '', VersionMetadata: m?.[3] ?? '' };
}

/**
 * One server as Nomad's AgentMember. Every server is assumed in the
 * answering agent's datacenter (Berth's servers name none of their own).
 */
export function memberShape(m: ServerMember, facts: { datacenter: string; version: string }): AgentMember {
  const { addr, port } = serverAddress(m.address);
  return {
    Name: m.id,
    Addr: addr,
    Port: port,
    Tags: { role: 'nomad', region: REGION, dc: facts.datacenter, port: String(port), build: facts.version, id: m.id, rpc_addr: addr, vsn: '1' },
    Status: m.status,
    ProtocolMin: 1,
    ProtocolMax: 5,
    ProtocolCur: 2,
    DelegateMin: 2,
    DelegateMax: 5,
    DelegateCur: 4,
    Leader: m.leader,
    StartedAt: m.startedAt,
    ...(m.failedAt !== undefined ? { FailedAt: m.failedAt } : {}),
  };
}

/** A stable UUID-shaped accessor ID for a configured token's name (the secret never enters it). */
export function accessorIdOf(name: string): string {
  const h = createHash('sha256').update(`berth-token-accessor:${name}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** The caller's token as Nomad's ACLToken, without its secret. */
export function tokenShape(caller: { name: string; role: string }): ACLToken {
  const management = caller.role === 'management';
  return {
    AccessorID: accessorIdOf(caller.name),
    SecretID: '',
    Name: caller.name,
    Type: management ? 'management' : 'client',
    Policies: management ? null : [caller.role],
    Roles: null,
    Global: false,
    CreateTime: ZERO_TIME,
    CreateIndex: 0,
    ModifyIndex: 0,
  };
}
