// Makes sure what group network modes `bridge` and `cni/<name>` run is
// installed for the tests that attach real networks (src/client/network,
// test/agent/bridge-network): Debian's `containernetworking-plugins` (the
// CNI reference plugins in /usr/lib/cni: bridge, host-local, portmap,
// firewall, loopback, ptp) and `iptables`, installed with apt-get when
// missing, as scripts/ensure-etcd.mjs does for etcd. Safe to repeat.
//
// Usage: node scripts/ensure-cni.mjs   (run by scripts/run-tests.mjs)
import { ensureDebianTool, runAsScript } from './_debian-tool.mjs';

export function ensureCni() {
  const why = 'bridge and CNI network modes attach allocations with the CNI plugins and iptables';
  return [
    ensureDebianTool({ bin: '/usr/lib/cni/bridge', pkg: 'containernetworking-plugins', overrideVar: 'BERTH_TEST_CNI', why }),
    ensureDebianTool({ bin: 'iptables', pkg: 'iptables', overrideVar: 'BERTH_TEST_IPTABLES', why }),
  ].join('; ');
}

runAsScript(import.meta.url, 'ensure-cni', ensureCni);
