// What the berth executable does, once its code is loaded: the only place
// that touches process signals and the exit code. SIGINT/SIGTERM abort the
// running command (a plugin stops serving and exits 0, a CSI call is
// cancelled, an agent stops its parts in reverse order); the abort reason
// carries the signal's name (`reason.signal`). A second signal exits at once.
//
// Two entries run it: main.ts (the ESM build every command loads) and
// agent-bundle.ts (the one-file CommonJS build `berth agent` loads through a
// V8 code cache, src/warm-start/).

import { EXIT, runCli, type WarmStart } from './cli/index.js';

/**
 * Runs the command line `argv` (the process's own arguments by default) and
 * sets process.exitCode. Once per process: it owns SIGINT/SIGTERM while the
 * command runs. Never throws for a command's failure (the CLI reports it).
 */
export async function runMain(argv: readonly string[] = process.argv.slice(2), opts: { warmStart?: WarmStart } = {}): Promise<void> {
  const interrupt = new AbortController();
  let signals = 0;

  function onSignal(signal: NodeJS.Signals): void {
    signals += 1;
    if (signals > 1) process.exit(EXIT.INTERRUPTED);
    interrupt.abort(Object.assign(new Error(`received ${signal}`), { signal }));
  }

  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // `berth ... | head`: the reader went away. Not worth a stack trace; the
  // command stops as if interrupted (an agent stops its parts cleanly).
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
      if (!interrupt.signal.aborted) interrupt.abort(Object.assign(new Error('output closed'), { signal: 'SIGPIPE' }));
    });
  }

  try {
    process.exitCode = await runCli(argv, { signal: interrupt.signal, ...(opts.warmStart ? { warmStart: opts.warmStart } : {}) });
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  // A library handle left open (a half-closed socket, a library's retry timer)
  // must not keep a finished command alive; this timer itself never holds the
  // process. Reaching it is a bug, so it says so (test/cluster/degraded-cluster
  // checks that a server on etcd never gets here).
  setTimeout(() => {
    process.stderr.write('berth: exiting 5 s after the command ended: something was left open (a bug)\n');
    process.exit();
  }, 5_000).unref();
}
