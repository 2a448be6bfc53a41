// Types of scripts/docker-images.mjs (plain ESM so the demo and scripts run it without a build).

/** Nomad 1.1's default `infra_image`: `gcr.io/google_containers/pause-amd64:3.1`. */
export const PAUSE_IMAGE: string;
/** Runs Docker 20.10's CLI (/usr/bin/docker) against `host` (DOCKER_HOST form); resolves with its trimmed stdout. */
export function docker(host: string, args: readonly string[], opts?: { timeout?: number }): Promise<string>;
/** Builds a busybox image (default tag `busybox:1.35`) with PATH and CMD ["sh"]; resolves with the image ID. */
export function buildBusyboxImage(host: string, ref?: string): Promise<string>;
/** Builds the pause image (default tag PAUSE_IMAGE): PID 1 that sleeps and exits on SIGTERM. */
export function buildPauseImage(host: string, ref?: string): Promise<string>;
/**
 * Builds the image of Berth's hostpath CSI plugin (default tag `berth-hostpath:dev`): node, Berth's dist/,
 * bin/berth.js, runtime node_modules; entrypoint `node /opt/berth/bin/berth.js plugin hostpath`.
 */
export function buildPluginImage(host: string, ref?: string, opts?: { root?: string; node?: string }): Promise<string>;
/** Tags `ref` as `remote` and pushes it; `dropLocal` removes the local `remote` tag so a later start pulls. */
export function tagAndPush(host: string, ref: string, remote: string, opts?: { dropLocal?: boolean }): Promise<string>;
