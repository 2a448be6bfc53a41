// The client layer: the node agent's parts. Other layers import only this door.
export * from './state/index.js';
export * from './dynamicplugins/index.js';
export * from './volumes/index.js';
export * from './csimanager/index.js';
export * from './allocdir/index.js';
export * from './taskrunner/index.js';
export * from './allocrunner/index.js';
export * from './drivers/index.js';
export * from './network/index.js';
export * from './logs/index.js';
export * from './cgroups/index.js';
// Both taskrunner's port and the drivers' contract name the same mount shape.
export type { TaskMount } from './drivers/index.js';
export * from './serverconn/index.js';
export { Client, ClientError, type ClientOptions, type ClientState, type AllocRunnerHandle } from './client.js';
