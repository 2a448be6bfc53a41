// Raw CSI clients and small helpers for the conformance suite. Raw on
// purpose: the suite judges a plugin by what it says on the wire, not by
// what Berth's own client makes of it.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ClientError, createChannel, createClient, Status, type Channel } from 'nice-grpc';
import {
  ControllerDefinition,
  ControllerServiceCapability_RPC_Type as ControllerRpc,
  IdentityDefinition,
  NodeDefinition,
  NodeServiceCapability_RPC_Type as NodeRpc,
  PluginCapability_Service_Type as ServiceType,
  PluginCapability_VolumeExpansion_Type as ExpansionType,
  VolumeCapability_AccessMode_Mode as AccessMode,
  type ControllerClient,
  type DeepPartial,
  type IdentityClient,
  type NodeClient,
  type VolumeCapability,
} from '../../src/gen/csi/v1/csi.js';

export { AccessMode, ControllerRpc, NodeRpc, ServiceType, Status };

export interface CsiClients {
  readonly channel: Channel;
  readonly identity: IdentityClient;
  readonly controller: ControllerClient;
  readonly node: NodeClient;
  close(): void;
}

/** Opens one channel to `endpoint` ('unix:///...') with clients for every service. */
export function connect(endpoint: string): CsiClients {
  const channel = createChannel(endpoint);
  return {
    channel,
    identity: createClient(IdentityDefinition, channel),
    controller: createClient(ControllerDefinition, channel),
    node: createClient(NodeDefinition, channel),
    close: () => channel.close(),
  };
}

/** What a plugin advertises, read once. */
export interface Advertised {
  readonly plugin: ReadonlySet<ServiceType>;
  readonly controller: ReadonlySet<ControllerRpc>;
  readonly node: ReadonlySet<NodeRpc>;
  readonly onlineExpansion: boolean;
  readonly offlineExpansion: boolean;
}

export async function readAdvertised(c: CsiClients): Promise<Advertised> {
  const plugin = await c.identity.getPluginCapabilities({});
  const services = new Set(plugin.capabilities.flatMap((cap) => (cap.service ? [cap.service.type] : [])));
  const expansion = new Set(plugin.capabilities.flatMap((cap) => (cap.volumeExpansion ? [cap.volumeExpansion.type] : [])));
  const controller = services.has(ServiceType.CONTROLLER_SERVICE)
    ? new Set((await c.controller.controllerGetCapabilities({})).capabilities.flatMap((cap) => (cap.rpc ? [cap.rpc.type] : [])))
    : new Set<ControllerRpc>();
  const node = await c.node.nodeGetCapabilities({}).then(
    (r) => new Set(r.capabilities.flatMap((cap) => (cap.rpc ? [cap.rpc.type] : []))),
    // A controller-only plugin has no Node service.
    (err: unknown) => {
      if (err instanceof ClientError && err.code === Status.UNIMPLEMENTED) return new Set<NodeRpc>();
      throw err;
    },
  );
  return { plugin: services, controller, node, onlineExpansion: expansion.has(ExpansionType.ONLINE), offlineExpansion: expansion.has(ExpansionType.OFFLINE) };
}

/** A mount capability with the given access mode (SINGLE_NODE_WRITER by default). */
export function mountCapability(mode: AccessMode = AccessMode.SINGLE_NODE_WRITER, mountFlags: string[] = []): DeepPartial<VolumeCapability> {
  return { mount: { fsType: '', mountFlags }, accessMode: { mode } };
}

export function blockCapability(mode: AccessMode = AccessMode.SINGLE_NODE_WRITER): DeepPartial<VolumeCapability> {
  return { block: {}, accessMode: { mode } };
}

let counter = 0;
/** A name no other test has used: `<prefix>-<n>-<random>`, at most `length` bytes when given. */
export function uniqueName(prefix: string, length?: number): string {
  const base = `${prefix}-${++counter}-${randomBytes(4).toString('hex')}`;
  if (length === undefined) return base;
  return (base + 'x'.repeat(Math.max(0, length - base.length))).slice(0, length);
}

/**
 * Awaits `call` and asserts it failed with gRPC status `code`. Returns the
 * error for further checks. Fails the test when the call succeeded.
 */
export async function expectCode(call: Promise<unknown>, code: Status, what: string): Promise<ClientError> {
  let result: unknown;
  try {
    result = await call;
  } catch (err) {
    if (!(err instanceof ClientError)) throw err;
    assert.equal(err.code, code, `${what}: expected ${Status[code]}, got ${Status[err.code]} (${err.details})`);
    return err;
  }
  assert.fail(`${what}: expected ${Status[code]}, but the call succeeded with ${JSON.stringify(result, bigintJson)}`);
}

/** Awaits `call` and returns its gRPC status: OK when it succeeded. Non-gRPC failures are thrown. */
export async function codeOf(call: Promise<unknown>): Promise<Status> {
  try {
    await call;
    return Status.OK;
  } catch (err) {
    if (err instanceof ClientError) return err.code;
    throw err;
  }
}

function bigintJson(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
