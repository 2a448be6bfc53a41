// Where the CLI finds the agent and what it tells it: the address, token and
// namespace from the flags, then BERTH_*, then Nomad's NOMAD_* variables (a
// Nomad user's shell keeps working), then the defaults; how long it waits for
// an answer (--client-timeout, BERTH_CLIENT_TIMEOUT). An address may omit
// its scheme (`127.0.0.1:4646`, as NOMAD_ADDR often does); one that still is
// not an http(s) URL is refused with where it came from.

import { DEFAULT_ADDRESS } from './api-client.js';
import { UsageError } from './usage-error.js';
import { parseDuration } from './values.js';

/** Where a setting came from, for messages: `--address`, `BERTH_ADDR`, `NOMAD_ADDR` or `default`. */
export type SettingSource = string;

/** A setting and where it came from. */
export interface Sourced {
  value: string;
  source: SettingSource;
}

type Env = Readonly<Record<string, string | undefined>>;

/** The first of the flag, BERTH_<NAME>, NOMAD_<NAME> that is set (non-empty), with its source. */
function pick(flag: string | undefined, flagName: string, name: string, env: Env): Sourced | undefined {
  if (flag !== undefined) return { value: flag, source: flagName };
  for (const key of [`BERTH_${name}`, `NOMAD_${name}`]) {
    const v = env[key];
    if (v !== undefined && v !== '') return { value: v, source: key };
  }
  return undefined;
}

/**
 * The agent address setting the CLI uses: `--address` (repeatable), else
 * BERTH_ADDR, else NOMAD_ADDR, else the `address` of the CLI config file
 * (`configured`, read only when nothing before it is set), else
 * DEFAULT_ADDRESS. Not normalized (see addressList).
 */
export function addressSetting(
  flag: string | readonly string[] | undefined,
  env: Env = process.env,
  configured: () => string | readonly string[] | undefined = () => undefined,
): Sourced {
  const given = typeof flag === 'string' ? flag : flag?.length ? flag.join(',') : undefined;
  const picked = pick(given, '--address', 'ADDR', env);
  if (picked) return picked;
  const fromFile = configured();
  if (fromFile !== undefined) return { value: typeof fromFile === 'string' ? fromFile : fromFile.join(','), source: 'the CLI config file' };
  return { value: DEFAULT_ADDRESS, source: 'default' };
}

/**
 * An address setting as the list of servers the client tries in turn: split
 * on commas, each entry normalized (normalizeAddress). Throws UsageError
 * (exit 2) naming the entry and where it came from when one is not an
 * http(s) address, or when the list is empty.
 */
export function addressList(setting: Sourced): string[] {
  const entries = setting.value.split(',').filter((e) => e.trim() !== '');
  if (!entries.length) throw new UsageError(`no agent address given (from ${setting.source})`);
  return entries.map((e) => normalizeAddress(e, setting.source));
}

/** The token: `--token`, else BERTH_TOKEN, else NOMAD_TOKEN; undefined when none is set. */
export function tokenSetting(flag: string | undefined, env: Env = process.env): string | undefined {
  return pick(flag, '--token', 'TOKEN', env)?.value;
}

/**
 * The namespace: `--namespace` when given on the command line, else
 * BERTH_NAMESPACE, else NOMAD_NAMESPACE, else "default". `fromFlag` is
 * undefined when the flag was left at its default.
 */
export function namespaceSetting(fromFlag: string | undefined, env: Env = process.env): string {
  return pick(fromFlag, '--namespace', 'NAMESPACE', env)?.value ?? 'default';
}

/**
 * How long a server may take to start answering a request, in ms (the
 * ApiClient's answerTimeoutMs): `--client-timeout`, else BERTH_CLIENT_TIMEOUT,
 * else undefined (the client's default, 10 s). Throws UsageError (exit 2)
 * naming the value and where it came from when it is not a duration.
 */
export function clientTimeoutSetting(flag: string | undefined, env: Env = process.env): number | undefined {
  const fromEnv = env['BERTH_CLIENT_TIMEOUT'];
  const picked = flag !== undefined ? { value: flag, source: '--client-timeout' } : fromEnv ? { value: fromEnv, source: 'BERTH_CLIENT_TIMEOUT' } : undefined;
  if (!picked) return undefined;
  try {
    return parseDuration(picked.value);
  } catch (err) {
    throw new UsageError(`invalid client timeout "${picked.value}" (from ${picked.source}): ${(err as Error).message}`);
  }
}

/**
 * One agent address as a base URL (`http://host:port`, no trailing slash):
 * `host:port` and `host` get `http://`, and `host` alone gets port 4646.
 * Throws UsageError naming the value and `source` (`--address`,
 * `BERTH_ADDR`, ...) when it is not an http or https address. Pure: call it
 * once per address of a list.
 */
export function normalizeAddress(value: string, source: SettingSource): string {
  const text = value.trim();
  const fail = (why: string): never => {
    throw new UsageError(`invalid agent address "${value}" (from ${source}): ${why}; give http://host:port, https://host:port or host:port`);
  };
  if (!text) fail('it is empty');
  const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text);
  const schemed = hasScheme ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(schemed);
  } catch {
    return fail('not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(`the scheme must be http or https, not ${url.protocol.replace(/:$/, '')}`);
  if (!url.hostname) fail('it names no host');
  if (url.username || url.password) fail('credentials do not belong in the address; use --token');
  if (url.search || url.hash) fail('it must not carry a query or a fragment');
  // `host` alone means Nomad's (and Berth's) port; `host:80` keeps its explicit port.
  if (!hasScheme && !/^(\[[^\]]*\]|[^:/]*):\d+/.test(text)) url.port = '4646';
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;
}
