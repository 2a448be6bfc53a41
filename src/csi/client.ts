import { IdentityDefinition } from '../gen/csi/v1/csi.js';
import { NodeCalls } from './_node-calls.js';
import { CsiError, CsiProtocolError } from './errors.js';
import type { NodeCapability, NodeInfo, PluginCapabilities, PluginFingerprint, PluginInfo, ProbeResult } from './types.js';
import type { CallOptions } from './_call-engine.js';
import * as conv from './_convert.js';

export { parseEndpoint, type CallOptions, type CsiClientOptions, type CsiCallObserver, type TeardownResult } from './_call-engine.js';

const I = IdentityDefinition.methods;

/**
 * Berth's typed client for one CSI plugin socket. Methods take and return
 * Berth's types (never protobuf objects), check requests against the spec
 * before sending, send each attempt with a gRPC deadline, retry by the RPC's
 * policy, and throw CsiError (classified final/uncertain, retryable) when the
 * plugin fails, CsiRequestError when Berth refused to send, CsiProtocolError
 * when the plugin answered out of spec, AbortedError when `signal` fired
 * before anything was sent. A call cancelled in flight throws CsiError
 * CANCELLED: uncertain, since the plugin may have acted.
 *
 * The connection is made lazily on the first call and remade after an
 * UNAVAILABLE answer, so a plugin that restarts on a new socket at the same
 * path is reached again without the caller doing anything. Calls never block
 * each other: a hung call waits only for its own deadline.
 *
 * Built in layers, one file per part so each stays readable:
 * _call-engine.ts (connection, deadlines, retries) <- _controller-calls.ts
 * <- _group-controller-calls.ts <- _node-calls.ts <- this file (Identity and
 * the fingerprint). The order of the service layers means nothing: each uses
 * only the engine's `call` and `callDone`.
 */
export class CsiClient extends NodeCalls {
  // ---- Identity -----------------------------------------------------------

  /** GetPluginInfo. Throws CsiProtocolError when the name or version is missing or malformed. */
  async getPluginInfo(opts: CallOptions = {}): Promise<PluginInfo> {
    const res = await this.call(IdentityDefinition, I.getPluginInfo, {}, opts);
    if (!res.name) throw new CsiProtocolError('GetPluginInfo', 'name is empty');
    if (res.name.length > 63) throw new CsiProtocolError('GetPluginInfo', `name "${res.name.slice(0, 70)}…" is longer than 63 characters`);
    if (!res.vendorVersion) throw new CsiProtocolError('GetPluginInfo', 'vendor_version is empty');
    return { name: res.name, vendorVersion: res.vendorVersion, manifest: { ...res.manifest } };
  }

  /** GetPluginCapabilities. Unknown capability values are dropped. */
  async getPluginCapabilities(opts: CallOptions = {}): Promise<PluginCapabilities> {
    const res = await this.call(IdentityDefinition, I.getPluginCapabilities, {}, opts);
    return conv.pluginCapabilitiesFromWire(res.capabilities);
  }

  /** Probe. An unset `ready` means ready; an error means unhealthy (thrown). Not retried. */
  async probe(opts: CallOptions = {}): Promise<ProbeResult> {
    const res = await this.call(IdentityDefinition, I.probe, {}, opts);
    return { ready: res.ready ?? true };
  }

  // ---- Fingerprint --------------------------------------------------------

  /**
   * Everything Berth needs to know about the plugin: info, plugin
   * capabilities, and for each service it runs its capabilities and node
   * info. Controller is asked only when advertised; Node unless `node` is
   * false, and a plugin that answers UNIMPLEMENTED there serves no Node.
   */
  async fingerprint(opts: CallOptions & { node?: boolean } = {}): Promise<PluginFingerprint> {
    const [info, capabilities] = await Promise.all([this.getPluginInfo(opts), this.getPluginCapabilities(opts)]);
    const fp: PluginFingerprint = { info, capabilities };
    const wantController = capabilities.services.includes('CONTROLLER_SERVICE');
    const [controller, node] = await Promise.all([
      wantController ? this.controllerGetCapabilities(opts) : undefined,
      opts.node === false ? undefined : this.#nodeFingerprint(opts),
    ]);
    if (controller) fp.controller = { capabilities: controller };
    if (node) fp.node = { capabilities: node[0], info: node[1] };
    return fp;
  }

  // Node service is not advertised in plugin capabilities: a controller-only
  // plugin says so by answering UNIMPLEMENTED.
  async #nodeFingerprint(opts: CallOptions): Promise<[NodeCapability[], NodeInfo] | undefined> {
    try {
      return await Promise.all([this.nodeGetCapabilities(opts), this.nodeGetInfo(opts)]);
    } catch (err) {
      if (err instanceof CsiError && err.grpcCodeName === 'UNIMPLEMENTED') return undefined;
      throw err;
    }
  }
}
