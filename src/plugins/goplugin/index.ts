// goplugin: hashicorp/go-plugin's process protocol, host side and serve side.
export { GoPluginError, type GoPluginErrorCode } from './errors.js';
export { NOMAD_HANDSHAKE, CORE_PROTOCOL_VERSION, NOT_A_PLUGIN_MESSAGE, formatHandshakeLine, handshakeEnv, type Handshake, type HandshakeLine } from './handshake.js';
export { launchPlugin, checkHandshake, PluginProcess, type LaunchOptions, type PluginExit } from './host.js';
export { loadNiceGrpc, niceGrpc, loadedNiceGrpc } from './grpc-module.js';
export { servePlugin, type PluginServer, type ServeOptions } from './serve.js';
