// The fake CSI plugin, for tests and benchmarks. Never used in production code.
export {
  FakePlugin,
  type FakePluginOptions,
  type FakeSnapshot,
  type FakeVolume,
  type RecordedCall,
  type WaitForCallOptions,
} from './fake-plugin.js';
