// The dynamic plugin registry: plugins run by allocations on this node.
export {
  PluginRegistry,
  PluginRegistryError,
  REGISTRATIONS_BUCKET,
  PLUGIN_TYPES,
  type PluginRegistryErrorCode,
  type PluginRegistryOptions,
  type PluginRegistration,
  type PluginOptions,
  type RegisteredPlugin,
  type PluginEvent,
  type SubscribeOptions,
  type WaitForPluginOptions,
} from './plugin-registry.js';
