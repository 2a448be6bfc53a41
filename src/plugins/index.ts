// The plugins layer: external plugins speaking Nomad's plugin protocols over
// hashicorp/go-plugin (gRPC on a unix socket). Sits on lib and structs; used by
// client, agent and cli. Protobuf types stay inside this layer.
//
// What is here:
//   hclspec:  the Spec tree (+ builders), decodeConfig / encodeConfig (a config
//             block -> go-cty msgpack, the bytes SetConfig and TaskConfig carry),
//             encodeMsgpack / decodeMsgpack
//   goplugin: launchPlugin -> PluginProcess (host side), servePlugin (plugin side),
//             NOMAD_HANDSHAKE
//   base:     BasePlugin, BasePluginClient
//   drivers:  DriverPlugin and its types, DriverPluginClient, launchDriverPlugin,
//             serveDriverPlugin (what `berth driver serve` runs), DriverPluginError
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
export {
  DRIVER_API_VERSION,
  BasePluginClient,
  type AgentConfig,
  type BasePlugin,
  type CallOptions,
  type PluginConfig,
  type PluginInfo,
  type PluginType,
} from './base/index.js';
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
