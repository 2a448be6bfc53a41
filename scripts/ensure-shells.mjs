// Makes sure the shells whose completion scripts `berth completion` writes
// are installed for the tests that parse and run them (test/cli/nomad-habits):
// Debian's `zsh` and `fish`, installed with apt-get when missing, as
// scripts/ensure-etcd.mjs does for etcd. Safe to repeat.
//
// Usage: node scripts/ensure-shells.mjs   (run by scripts/run-tests.mjs)
import { ensureDebianTool, runAsScript } from './_debian-tool.mjs';

export function ensureShells() {
  const why = 'the shell-completion tests parse and run the completion scripts berth writes';
  return [
    ensureDebianTool({ bin: 'zsh', pkg: 'zsh', overrideVar: 'BERTH_TEST_ZSH', why }),
    ensureDebianTool({ bin: 'fish', pkg: 'fish', overrideVar: 'BERTH_TEST_FISH', why }),
  ].join('; ');
}

runAsScript(import.meta.url, 'ensure-shells', ensureShells);
