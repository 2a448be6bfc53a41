import type { Client } from 'nice-grpc';
import { BasePluginDefinition, PluginType as PbPluginType } from '../../gen/nomad/plugins/base/proto/base.js';
import { niceGrpc } from '../goplugin/index.js';
import { type Spec, specFromProto } from '../hclspec/index.js';
import { type BasePlugin, type CallOptions, type PluginConfig, type PluginInfo, type PluginType } from './base-plugin.js';
import { type PluginConnection } from './connection.js';

const TYPES: Record<number, PluginType> = { [PbPluginType.DRIVER]: 'driver', [PbPluginType.DEVICE]: 'device' };

/**
 * The base plugin service of a plugin process, over its connection
 * (Nomad plugins/base/client.go). Calls throw DriverPluginError
 * (`DRIVER_PLUGIN_SHUTDOWN` once the plugin is gone) or AbortedError.
 */
export class BasePluginClient implements BasePlugin {
  readonly #conn: PluginConnection;
  readonly #client: Client<typeof BasePluginDefinition>;

  constructor(conn: PluginConnection) {
    this.#conn = conn;
    // A connection exists only once its plugin was launched, which loaded nice-grpc.
    this.#client = niceGrpc().createClient(BasePluginDefinition, conn.channel);
  }

  async pluginInfo(opts?: CallOptions): Promise<PluginInfo> {
    const res = await this.#conn.unary('PluginInfo', (o) => this.#client.pluginInfo({}, o), opts);
    return { type: TYPES[res.type] ?? 'unknown', pluginApiVersions: [...res.pluginApiVersions], pluginVersion: res.pluginVersion, name: res.name };
  }

  async configSchema(opts?: CallOptions): Promise<Spec | undefined> {
    const res = await this.#conn.unary('ConfigSchema', (o) => this.#client.configSchema({}, o), opts);
    return res.spec ? specFromProto(res.spec) : undefined;
  }

  async setConfig(config: PluginConfig, opts?: CallOptions): Promise<void> {
    const driver = config.agentConfig?.driver;
    await this.#conn.unary(
      'SetConfig',
      (o) =>
        this.#client.setConfig(
          {
            msgpackConfig: Buffer.from(config.pluginConfig),
            pluginApiVersion: config.apiVersion,
            nomadConfig: driver ? { driver: { ClientMinPort: driver.clientMinPort, ClientMaxPort: driver.clientMaxPort } } : undefined,
          },
          o,
        ),
      opts,
    );
  }
}
