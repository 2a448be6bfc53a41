// Types of scripts/docker-rig.mjs (plain ESM so run-tests, the bench and the demo use it without a build).
export { buildBusyboxImage, buildPauseImage, buildPluginImage, tagAndPush, docker, PAUSE_IMAGE } from './docker-images.mjs';

export const DOCKERD: string;
export const REGISTRY_BIN: string;
export const RUNC: string;

export interface DockerRigInfo {
  dir: string;
  /** dockerd's unix socket. */
  socketPath: string;
  /** `unix://<socketPath>`: DOCKER_HOST, or the docker plugin's `endpoint`. */
  host: string;
  /** `127.0.0.1:PORT` of the registry (plain HTTP; dockerd trusts 127.0.0.0/8 without TLS). */
  registry: string;
  /** A directory that is an rshared mount point: bind sources for `:rshared` propagation live under it. */
  sharedDir: string;
  /** The rig's bridge (its own; never docker0) and its 10.251.X.0/24 subnet. */
  bridge: string;
  subnet: string;
  dockerdPid: number;
  registryPid: number;
  /** Capabilities the runc wrapper removes from every spec (those the host's bounding set lacks). */
  droppedCapabilities: string[];
}

export interface DockerRig extends DockerRigInfo {
  /** Removes every container, stops dockerd and the registry, unmounts and removes `dir` and the bridge. */
  stop(): Promise<void>;
  /** Lets this process exit while the rig runs (stop() must still be called, e.g. from beforeExit). */
  unref(): void;
}

/** Why a private dockerd cannot run on this host (not root, programs missing), or undefined. */
export function dockerUnavailable(): string | undefined;
/** The CAP_ names the process's capability bounding set lacks. */
export function missingCapabilities(): string[];
/** GET /_ping on a dockerd socket; resolves with the body ('OK'). */
export function pingDocker(socketPath: string): Promise<string>;
/**
 * Starts a private dockerd and registry under `dir`. `detached: true` leaves them running after
 * this process exits (stop with stopDockerRigAt(dir) or `node scripts/docker-rig.mjs stop DIR`).
 */
export function startDockerRig(opts: { dir: string; detached?: boolean; timeoutMs?: number }): Promise<DockerRig>;
/** Stops a rig started (detached) by another process, from the rig.json in `dir`. */
export function stopDockerRigAt(dir: string): Promise<void>;
