// The environment Berth's own helper processes start with (the executors,
// the mount helper, the log monitor): PATH and nothing else. They are Berth's
// code, not the user's, so nothing of the agent's environment is theirs:
// a detached helper that outlives the agent must not keep its tokens, and
// Node reads some variables at every process start before any of our code
// runs. NODE_EXTRA_CA_CERTS (set on many hosts, this sandbox among them) has
// Node parse the named bundle and build its root store at start: 40-50 ms of
// CPU per process measured here, for helpers that make no TLS connection.
// A task's own environment is built apart (src/client/taskenv) and is not this.

const DEFAULT_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

/** `{ PATH }`: the agent's PATH, or the usual system one when it has none. */
export function helperProcessEnv(): Record<string, string> {
  return { PATH: process.env['PATH'] ?? DEFAULT_PATH };
}
