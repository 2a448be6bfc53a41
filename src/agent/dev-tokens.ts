// A dev agent's own tokens (its management and node token), kept in its data
// dir so that an agent restarted on the same data dir keeps them: the web UI
// and a shell's BERTH_TOKEN stay logged in across restarts.

import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The dev agent's management and node token. */
export interface DevTokens {
  management: string;
  node: string;
}

const FILE = 'dev-tokens.json';

/** A new random token secret. */
export function tokenSecret(): string {
  return randomBytes(18).toString('base64url');
}

/**
 * The tokens kept in `dataDir`, or new ones written there (mode 0600,
 * through a rename, so a crash leaves the old file or the new one). A file
 * that cannot be read as tokens is replaced. Blocks (small sync I/O); safe to
 * repeat; throws only when the data dir cannot be written.
 */
export function devTokens(dataDir: string): DevTokens {
  const file = path.join(dataDir, FILE);
  try {
    const kept = JSON.parse(readFileSync(file, 'utf8')) as Partial<DevTokens>;
    if (isSecret(kept.management) && isSecret(kept.node)) return { management: kept.management, node: kept.node };
  } catch {
    // none kept yet, or unreadable: new ones below
  }
  const tokens: DevTokens = { management: tokenSecret(), node: tokenSecret() };
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(`${file}.tmp`, JSON.stringify(tokens), { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
  return tokens;
}

function isSecret(s: unknown): s is string {
  return typeof s === 'string' && s.length >= 16 && /^[A-Za-z0-9_-]+$/.test(s);
}
