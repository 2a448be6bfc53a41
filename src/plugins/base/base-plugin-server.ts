import type { Metadata } from 'nice-grpc';
import { PluginType as PbPluginType, type BasePluginServiceImplementation } from '../../gen/nomad/plugins/base/proto/base.js';
import { specToProto } from '../hclspec/index.js';
import { type BasePlugin, type PluginType } from './base-plugin.js';
import { toServerError } from './_status.js';

const TYPES: Record<PluginType, PbPluginType> = { driver: PbPluginType.DRIVER, device: PbPluginType.DEVICE, unknown: PbPluginType.UNKNOWN };

/** Runs `fn` and turns what it throws into the gRPC status a host reads. */
export async function served<T>(trailer: Metadata, fn: () => Promise<T>, opts?: { recoverableDetail?: boolean }): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw toServerError(err, trailer, opts);
  }
}

/** The BasePlugin gRPC service over any BasePlugin implementation. */
export function basePluginService(impl: BasePlugin): BasePluginServiceImplementation {
  return {
    pluginInfo: (_req, ctx) =>
      served(ctx.trailer, async () => {
        const info = await impl.pluginInfo({ signal: ctx.signal });
        return { type: TYPES[info.type], pluginApiVersions: [...info.pluginApiVersions], pluginVersion: info.pluginVersion, name: info.name };
      }),
    configSchema: (_req, ctx) =>
      served(ctx.trailer, async () => {
        const spec = await impl.configSchema({ signal: ctx.signal });
        return { spec: spec ? specToProto(spec) : undefined };
      }),
    setConfig: (req, ctx) =>
      served(ctx.trailer, async () => {
        const d = req.nomadConfig?.driver;
        await impl.setConfig(
          {
            apiVersion: req.pluginApiVersion,
            pluginConfig: new Uint8Array(req.msgpackConfig),
            ...(d ? { agentConfig: { driver: { clientMinPort: d.ClientMinPort, clientMaxPort: d.ClientMaxPort } } } : {}),
          },
          { signal: ctx.signal },
        );
        return {};
      }),
  };
}
