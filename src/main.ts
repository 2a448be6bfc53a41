// The berth executable's entry point. The only place that touches process
// signals and the exit code: SIGINT/SIGTERM abort the running command (a
// plugin stops serving and exits 0, a CSI call is cancelled, an agent stops
// its parts in reverse order); the abort reason carries the signal's name
// (`reason.signal`). A second signal exits at once.

import { EXIT, runCli } from './cli/index.js';

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
  process.exitCode = await runCli(process.argv.slice(2), { signal: interrupt.signal });
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
