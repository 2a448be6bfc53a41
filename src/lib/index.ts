// The lib layer: helpers with no knowledge of CSI, nodes or servers.
export { BerthError, AbortedError, throwIfAborted, describeError, type ApiOutcomeCode } from './errors.js';
export { systemClock, ManualClock, type Clock } from './clock.js';
export { DiskReserve } from './disk-reserve.js';
export { helperProcessEnv, helperScript, helperWarmStart, type HelperWarmStart } from './helper-env.js';
export { retry, backoffDelay, defaultBackoff, BACKOFF, type BackoffPolicy, type RetryOptions } from './retry.js';
export { anySignal, linkSignals, SignalFanout, WAIT_ENDED, type LinkedSignal } from './linked-signal.js';
export { IntervalLoop, type IntervalLoopOptions } from './interval-loop.js';
export { Lifecycle, LifecycleError, type LifecycleErrorCode, type LifecycleOptions, type LifecycleState } from './lifecycle.js';
export { SecretMap, SecretList, REDACTED, looksSecret, redactSecretLookingValues } from './redact.js';
export { createLogger, silentLogger, REDACT_PATHS, type Logger, type LoggerConfig } from './logger.js';
export {
  parseVersionConstraint,
  versionSatisfies,
  parseLenientVersion,
  parseStrictVersion,
  compareVersions,
  type VersionConstraint,
  type ParsedVersion,
} from './version-constraint.js';
export { compileFilter, FilterSyntaxError, type RowFilter } from './filter-expression.js';
export { MemoryReclaimer, fullGc, lowMemoryGc, processSampler, type LoadSample, type MemoryReclaimerOptions } from './memory-reclaimer.js';
export { jsonObjects } from './json-values.js';
export { compileRe2, Re2SyntaxError, type Re2 } from './re2.js';
