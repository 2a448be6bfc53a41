/**
 * go-plugin's handshake: what a host puts in a plugin's environment and what
 * the plugin prints on its first stdout line (hashicorp/go-plugin client.go
 * and server.go).
 */

/** The core protocol version go-plugin speaks (go-plugin CoreProtocolVersion). */
export const CORE_PROTOCOL_VERSION = 1;

/** Who may run a plugin: the magic cookie a host sets and the app protocol versions it speaks. */
export interface Handshake {
  readonly cookieKey: string;
  readonly cookieValue: string;
  /** App protocol versions, best last (PLUGIN_PROTOCOL_VERSIONS). */
  readonly appVersions: readonly number[];
}

/** Nomad's plugin handshake (plugins/base/plugin.go Handshake): protocol 2, gRPC. */
export const NOMAD_HANDSHAKE: Handshake = {
  cookieKey: 'NOMAD_PLUGIN_MAGIC_COOKIE',
  cookieValue: 'e4327c2e01eabfd75a8a67adb114fb34a757d57eee7728d857a8cec6e91a7255',
  appVersions: [2],
};

/** What go-plugin's Serve prints when the cookie is wrong (the host recognises it on stderr). */
export const NOT_A_PLUGIN_MESSAGE =
  'This binary is a plugin. These are not meant to be executed directly.\n' +
  'Please execute the program that consumes these plugins, which will\n' +
  'load any plugins automatically\n';

/** The parsed handshake line `CORE|APP|NETWORK|ADDR|PROTOCOL[|CERT[|MUX]]`. */
export interface HandshakeLine {
  readonly coreVersion: number;
  readonly appVersion: number;
  readonly network: string;
  readonly address: string;
  readonly protocol: string;
}

/** The handshake line a serving plugin prints (6 fields; the certificate field empty: no AutoMTLS). */
export function formatHandshakeLine(appVersion: number, socketPath: string): string {
  return `${CORE_PROTOCOL_VERSION}|${appVersion}|unix|${socketPath}|grpc|`;
}

/** The environment a host gives a plugin process (go-plugin client.go Start). */
export function handshakeEnv(h: Handshake, ports: { min: number; max: number } = { min: 10000, max: 25000 }): Record<string, string> {
  return {
    [h.cookieKey]: h.cookieValue,
    PLUGIN_MIN_PORT: String(ports.min),
    PLUGIN_MAX_PORT: String(ports.max),
    PLUGIN_PROTOCOL_VERSIONS: h.appVersions.join(','),
  };
}
