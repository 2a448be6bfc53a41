// Makes sure what the container tests run is installed (scripts/docker-rig.mjs
// starts a private dockerd and registry from it; test/docker, the docker
// driver's tests, the container benchmarks and demo use that rig): Debian's
// `docker.io` (dockerd 20.10, containerd, runc), `docker-registry` (the
// Distribution registry, 2.8) and `busybox-static` (the root filesystem of
// the test images), installed with apt-get when missing, as
// scripts/ensure-etcd.mjs does for etcd. Never starts or enables the system
// services: the rig runs its own dockerd on its own socket, and a system one
// on /var/run/docker.sock would be the user's, not ours. Safe to repeat.
//
// Usage: node scripts/ensure-docker.mjs   (run by scripts/run-tests.mjs)
import { spawnSync } from 'node:child_process';
import { ensureDebianTool, runAsScript } from './_debian-tool.mjs';

const why = 'the container tests run a private dockerd, a local registry and busybox images';
// invoke-rc.d honours RUNLEVEL=1: the packages' services are not started by the install.
const aptEnv = { RUNLEVEL: '1' };
/** Where systemd runs, the packages enable their services: turn them off again (the rig never uses them). */
const disable = (...units) => () => spawnSync('systemctl', ['disable', '--now', ...units], { stdio: 'ignore' });

export function ensureDocker() {
  return [
    ensureDebianTool({ bin: process.env.BERTH_TEST_DOCKERD ?? '/usr/sbin/dockerd', pkg: 'docker.io', overrideVar: 'BERTH_TEST_DOCKERD', why, aptEnv,
      afterInstall: disable('docker.service', 'docker.socket', 'containerd.service') }),
    ensureDebianTool({ bin: process.env.BERTH_TEST_DOCKER_REGISTRY_BIN ?? '/usr/bin/docker-registry', pkg: 'docker-registry', overrideVar: 'BERTH_TEST_DOCKER_REGISTRY_BIN', why, aptEnv,
      afterInstall: disable('docker-registry.service') }),
    ensureDebianTool({ bin: process.env.BERTH_TEST_BUSYBOX ?? '/bin/busybox', pkg: 'busybox-static', overrideVar: 'BERTH_TEST_BUSYBOX', why, versionArgs: ['--help'] }),
  ].join('; ');
}

runAsScript(import.meta.url, 'ensure-docker', ensureDocker);
