import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { REDACTED } from './redact.js';

export type { Logger } from 'pino';

/**
 * Field paths pino censors whatever code logs them. A second line of defence:
 * values Berth carries as SecretMap or VolumeCapability already print
 * redacted, and code should not log secrets to begin with.
 */
export const REDACT_PATHS = [
  'secrets',
  '*.secrets',
  '*.*.secrets',
  'mountFlags',
  '*.mountFlags',
  '*.*.mountFlags',
  '*.*.*.mountFlags',
  'mount_flags',
  '*.mount_flags',
  '*.*.mount_flags',
  'password',
  '*.password',
  'token',
  '*.token',
];

export interface LoggerConfig {
  level?: string;
  /** Where lines go; stdout when unset. Tests pass a stream to capture them. */
  destination?: DestinationStream;
  /** Base fields on every line. */
  base?: Record<string, unknown>;
}

/**
 * Builds Berth's root logger: JSON lines, secrets redacted by path. Each
 * subsystem should take a child: `logger.child({ component: 'csi' })`.
 */
export function createLogger(config: LoggerConfig = {}): Logger {
  const options: LoggerOptions = {
    level: config.level ?? process.env['BERTH_LOG_LEVEL'] ?? 'info',
    base: config.base ?? { pid: process.pid },
    redact: { paths: REDACT_PATHS, censor: REDACTED },
  };
  return config.destination ? pino(options, config.destination) : pino(options);
}

/** A logger that drops everything; the default where no logger is passed. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
