// The plugins layer: external plugins speaking Nomad's plugin protocols over
// hashicorp/go-plugin (gRPC on a unix socket). Sits on lib and structs; used by
// client, agent and cli. Protobuf types stay inside this layer.
//
// Planned (landing in this order; shapes fixed here so callers can code against them):
//   hclspec:  decodeConfig(spec, jsonBody, { path, positions }) -> CtyValue,
//             encodeMsgpack(value) -> Uint8Array, decodeMsgpack(bytes) -> unknown,
//             encodeConfig(spec, jsonBody) = decode + encode (SetConfig / TaskConfig bytes)
//   goplugin: launchPlugin({ path, handshake, logger, signal }) -> PluginProcess
//             { name, pid, channel, exited, shutdown({ signal }), kill() },
//             NOMAD_HANDSHAKE (magic cookie + versions), servePlugin(...) for the plugin side
//   base:     BasePluginClient (pluginInfo, configSchema, setConfig)
//   drivers:  DriverPluginClient implements DriverPlugin,
//             launchDriverPlugin(path, { logger, signal }) -> { driver, process },
//             serveDriverPlugin(impl: DriverPlugin, { logger }) (what `berth driver serve` runs)
export {
  hclspec,
  HclSpecError,
  decodeConfig,
  encodeConfig,
  encodeMsgpack,
  decodeMsgpack,
  type HclSpecErrorCode,
  type CtyValue,
  type ConfigStep,
  type DecodeOptions,
  type Spec,
  type ObjectSpec,
  type ArraySpec,
  type AttrSpec,
  type BlockSpec,
  type BlockAttrsSpec,
  type BlockListSpec,
  type BlockSetSpec,
  type BlockMapSpec,
  type DefaultSpec,
  type LiteralSpec,
} from './hclspec/index.js';
export * from './base/index.js';
export * from './drivers/index.js';
export {
  GoPluginError,
  NOMAD_HANDSHAKE,
  launchPlugin,
  servePlugin,
  PluginProcess,
  type GoPluginErrorCode,
  type Handshake,
  type LaunchOptions,
  type PluginExit,
  type PluginServer,
  type ServeOptions,
} from './goplugin/index.js';
