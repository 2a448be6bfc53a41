// The agent and the cluster's servers, as Nomad's `api` package reads them:
// `GET /v1/agent/self` (AgentSelf), `GET /v1/agent/members` (ServerMembers),
// `GET /v1/agent/health` (AgentHealthResponse), `GET /v1/status/leader`,
// `GET /v1/status/peers`, `GET /v1/regions` (api/agent.go, api/status.go,
// api/regions.go).

import { z } from 'zod';
import { lazySchema } from './lazy-schema.js';

/**
 * One server of the cluster (api.AgentMember). Nomad fills it from serf;
 * Berth from its servers' membership: `Addr`/`Port` are the server's
 * advertised HTTP address (Berth's servers and nodes speak HTTP on it), and
 * `Tags` carry what Nomad's CLI reads (`region`, `dc`, `port`, `build`,
 * `role`, `id`). Status is serf's word: `alive`, `left` or `failed`.
 */
export const AgentMember = lazySchema(() => z.object({
  Name: z.string(),
  Addr: z.string(),
  Port: z.number().int(),
  Tags: z.record(z.string(), z.string()),
  Status: z.string(),
  ProtocolMin: z.number().int(),
  ProtocolMax: z.number().int(),
  ProtocolCur: z.number().int(),
  DelegateMin: z.number().int(),
  DelegateMax: z.number().int(),
  DelegateCur: z.number().int(),
  /** Berth's: whether this server leads now (Nomad's CLI asks /v1/status/leader instead). */
  Leader: z.boolean(),
  /** Berth's: when the server started, ms since the epoch (0 when unknown). */
  StartedAt: z.number().int(),
  /** Berth's: for a `failed` server, when a server saw its lease end (ms since the epoch); absent otherwise or when none saw it. */
  FailedAt: z.number().int().optional(),
}));
export type AgentMember = z.infer<typeof AgentMember>;

/** `GET /v1/agent/members` (api.ServerMembers): the answering server's name, region and datacenter, and every server. */
export const ServerMembers = lazySchema(() => z.object({
  ServerName: z.string(),
  ServerRegion: z.string(),
  ServerDC: z.string(),
  Members: z.array(AgentMember),
  /** Berth's: set when the member list could not be read (etcd unreachable); `Members` then holds the answering server only. */
  Warning: z.string().optional(),
}));
export type ServerMembers = z.infer<typeof ServerMembers>;

/** Nomad's version block (version.VersionInfo) in the agent's config. */
export const AgentVersion = lazySchema(() => z.object({
  /** RFC 3339; the zero time when unknown. */
  BuildDate: z.string(),
  Revision: z.string(),
  Version: z.string(),
  VersionPrerelease: z.string(),
  VersionMetadata: z.string(),
}));
export type AgentVersion = z.infer<typeof AgentVersion>;

const AddressTriple = lazySchema(() => z.object({ HTTP: z.string(), RPC: z.string(), Serf: z.string() }));

/**
 * The part of Nomad's agent config (command/agent/config.go, encoded as Go
 * does) that Berth answers in `AgentSelf.config`: what Nomad's CLI and tools
 * read (Region, Datacenter, NodeName, Version, ACL.Enabled, UI.ShowCLIHints,
 * Server/Client.Enabled, the ports). Nomad's api types it as a
 * `map[string]any`, so a field absent here reads as its zero value.
 */
export const AgentConfig = lazySchema(() => z.object({
  Region: z.string(),
  Datacenter: z.string(),
  NodeName: z.string(),
  DataDir: z.string(),
  BindAddr: z.string(),
  DevMode: z.boolean(),
  /** Berth serves the API, the nodes' protocol and the web UI on one HTTP port: RPC names it too; no serf. */
  Ports: z.object({ HTTP: z.number().int(), RPC: z.number().int(), Serf: z.number().int() }),
  Addresses: AddressTriple,
  AdvertiseAddrs: AddressTriple,
  Server: z.object({ Enabled: z.boolean() }),
  Client: z.object({ Enabled: z.boolean() }),
  /** Berth always checks tokens: ACLs are always on. */
  ACL: z.object({ Enabled: z.boolean() }),
  /** ShowCLIHints is off: Nomad's CLI hints link to Nomad's web UI paths, not Berth's. */
  UI: z.object({ Enabled: z.boolean(), ShowCLIHints: z.boolean() }),
  Version: AgentVersion,
}));
export type AgentConfig = z.infer<typeof AgentConfig>;

/**
 * `GET /v1/agent/self` (api.AgentSelf): the agent's config, its member entry
 * and its stats (sections of string values: `runtime`, `nomad`, `raft` on a
 * server, `client` when the agent runs a client; Berth's own section
 * `berth` holds `connected_nodes`, the node connections this server holds).
 */
export const AgentSelf = lazySchema(() => z.object({
  config: AgentConfig,
  member: AgentMember,
  stats: z.record(z.string(), z.record(z.string(), z.string())),
}));
export type AgentSelf = z.infer<typeof AgentSelf>;

/** One part's health (api.AgentHealth); Nomad omits an empty message. */
export const AgentHealth = lazySchema(() => z.object({ ok: z.boolean(), message: z.string().optional() }));
export type AgentHealth = z.infer<typeof AgentHealth>;

/**
 * `GET /v1/agent/health` (api.AgentHealthResponse): `server` on a server
 * agent, `client` on an agent that runs a client; the answer is 500 (with
 * this body) when a part asked for is not ok.
 */
export const AgentHealthResponse = lazySchema(() => z.object({ client: AgentHealth.optional(), server: AgentHealth.optional() }));
export type AgentHealthResponse = z.infer<typeof AgentHealthResponse>;

/** `GET /v1/status/leader`: the leader's `host:port`, `""` while none is known. */
export const StatusLeader = lazySchema(() => z.string());
export type StatusLeader = z.infer<typeof StatusLeader>;

/** `GET /v1/status/peers`: each server's `host:port` (alive and failed ones; not those that left). */
export const StatusPeers = lazySchema(() => z.array(z.string()));
export type StatusPeers = z.infer<typeof StatusPeers>;

/** `GET /v1/regions`: the regions known; Berth has one, `global`. */
export const Regions = lazySchema(() => z.array(z.string()));
export type Regions = z.infer<typeof Regions>;
