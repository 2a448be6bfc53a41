import { createRequire } from 'node:module';
import type * as PinoModule from 'pino';
import type { DestinationStream, Logger, LoggerOptions } from 'pino';
import { REDACTED } from './redact.js';

let loaded: typeof PinoModule.pino | undefined;

/**
 * pino, loaded on the first logger: a CLI command that logs nothing (most
 * of them) starts without it. `require` is the bundler's in the compiled
 * build (which bundles pino and runs it only here); under tsx, where an ES
 * module has none, one is made.
 */
function pino(options: LoggerOptions, destination?: DestinationStream): Logger {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  loaded ??= (typeof require === 'function' ? (require('pino') as typeof PinoModule) : (createRequire(import.meta.url)('pino') as typeof PinoModule)).pino;
  return (destination ? loaded(options, destination) : loaded(options)) as Logger;
}

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
  return pino(options, config.destination);
}

/** A logger that drops everything; the default where no logger is passed. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
