import { BerthError } from '../lib/index.js';

/**
 * The command line itself is wrong (malformed size, bad key=value, missing
 * flag): nothing was sent to any plugin. The CLI exits 2 on it. The message
 * is shown to the user as is and must never quote a secret value.
 */
export class UsageError extends BerthError {
  constructor(message: string) {
    super('CLI_USAGE', message);
  }
}
