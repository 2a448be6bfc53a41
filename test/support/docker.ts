// The Docker the container tests use: a private dockerd and registry
// (scripts/docker-rig.mjs). scripts/run-tests.mjs starts ONE for the whole
// suite and exports BERTH_TEST_DOCKER_HOST, BERTH_TEST_DOCKER_REGISTRY and
// BERTH_TEST_DOCKER_SHARED_DIR; a test file run by hand
// (`node --test --import tsx test/docker/x.test.ts`) starts its own on first
// use and stops it when the process is done. Tests talk to dockerd through
// the Engine API (dockerApi) as a user's tools would, and find the images a
// job file names in the registry (testImage pushes them once per rig).
//
//   const skip = dockerSkip();                 // a reason, when docker cannot run here
//   test('…', { skip }, async () => {
//     const rig = await dockerRig();
//     const image = await testImage(rig, 'busybox');   // '127.0.0.1:PORT/busybox:1.35'
//     const info = await dockerApi<{ ServerVersion: string }>(rig, 'GET', '/info');
//   });

import { request } from 'node:http';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import {
  buildBusyboxImage, buildPauseImage, buildPluginImage, dockerUnavailable, PAUSE_IMAGE, startDockerRig, tagAndPush,
} from '../../scripts/docker-rig.mjs';
import { REPO } from './agent-run.js';

export { PAUSE_IMAGE };

export interface TestDocker {
  /** `unix:///…/docker.sock`: DOCKER_HOST, or `endpoint` in `plugin "docker" { config {} }`. */
  host: string;
  socketPath: string;
  /** `127.0.0.1:PORT`, the registry images are pulled from by name. */
  registry: string;
  /** An rshared mount point: data dirs whose mounts must propagate (CSI `/csi` binds) go under it. */
  sharedDir: string;
}

/** Why the docker tests cannot run on this host, or undefined. */
export function dockerSkip(): string | undefined {
  if (process.env['BERTH_TEST_DOCKER_HOST']) return undefined;
  const why = dockerUnavailable();
  return why ? `docker cannot run here: ${why}` : undefined;
}

let rigPromise: Promise<TestDocker> | undefined;
/** Stops the rig this process started (none when it uses the suite's). */
let stopOwnRig: (() => Promise<void>) | undefined;

/**
 * Stops the rig this process started, if any; safe twice. For a script that
 * ends with process.exit(), which skips the beforeExit that stops it
 * otherwise (`npm run chaos` left a dockerd and its registry behind each run).
 */
export async function closeDockerRig(): Promise<void> {
  await stopOwnRig?.();
}

/** The suite's rig (from the environment), or one started for this process on first call and stopped when it is done. */
export function dockerRig(): Promise<TestDocker> {
  rigPromise ??= openRig();
  return rigPromise;
}

async function openRig(): Promise<TestDocker> {
  const host = process.env['BERTH_TEST_DOCKER_HOST'];
  const registry = process.env['BERTH_TEST_DOCKER_REGISTRY'];
  const sharedDir = process.env['BERTH_TEST_DOCKER_SHARED_DIR'];
  if (host && registry && sharedDir) return { host, socketPath: host.replace(/^unix:\/\//, ''), registry, sharedDir };
  const why = dockerSkip();
  if (why) throw new Error(why);
  mkdirSync(join(REPO, '.tmp'), { recursive: true });
  const rig = await startDockerRig({ dir: mkdtempSync(join(REPO, '.tmp', 'docker-rig-')) });
  // Let the test process end when its tests are done, then stop the rig
  // (beforeExit may fire again after stop's own work: once is enough).
  rig.unref();
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => (stopping ??= rig.stop());
  stopOwnRig = stop;
  process.on('beforeExit', () => void stop());
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => void stop().finally(() => process.exit(130)));
  }
  return { host: rig.host, socketPath: rig.socketPath, registry: rig.registry, sharedDir: rig.sharedDir };
}

export interface DockerResponse<T> {
  status: number;
  body: T;
}

/** One Engine API call on the rig's socket; resolves with the status and the JSON (or text) body. */
export function dockerCall<T = unknown>(rig: TestDocker, method: string, path: string, body?: unknown): Promise<DockerResponse<T>> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request({
      socketPath: rig.socketPath, method, path: `/v1.41${path}`,
      headers: payload ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } : {},
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        if ((res.headers['content-type'] ?? '').includes('json') && text.trim() !== '') {
          try { parsed = JSON.parse(text); } catch { parsed = text; }
        }
        resolve({ status: res.statusCode ?? 0, body: parsed as T });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/** An Engine API call that must succeed (2xx); rejects with dockerd's message otherwise. */
export async function dockerApi<T = unknown>(rig: TestDocker, method: string, path: string, body?: unknown): Promise<T> {
  const res = await dockerCall<T>(rig, method, path, body);
  if (res.status < 200 || res.status >= 300) throw new Error(`docker ${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Splits a non-TTY container log stream (8-byte frame headers) into stdout and stderr text. */
export function demuxLogs(raw: Buffer): { stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  for (let at = 0; at + 8 <= raw.length;) {
    const size = raw.readUInt32BE(at + 4);
    const text = raw.subarray(at + 8, at + 8 + size).toString('utf8');
    if (raw[at] === 2) stderr += text; else stdout += text;
    at += 8 + size;
  }
  return { stdout, stderr };
}

/** A container's output so far (GET /containers/{id}/logs, non-TTY). */
export function containerLogs(rig: TestDocker, id: string): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: rig.socketPath, path: `/v1.41/containers/${id}/logs?stdout=1&stderr=1` }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(demuxLogs(Buffer.concat(chunks))));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

export interface ContainerSummary {
  Id: string;
  Names: string[];
  Image: string;
  State: string;
  Labels: Record<string, string>;
}

/** The containers dockerd has (running or not), optionally only those with label `label` (`key` or `key=value`). */
export function listContainers(rig: TestDocker, label?: string): Promise<ContainerSummary[]> {
  const filters = label ? `&filters=${encodeURIComponent(JSON.stringify({ label: [label] }))}` : '';
  return dockerApi<ContainerSummary[]>(rig, 'GET', `/containers/json?all=1${filters}`);
}

/**
 * Containers whose name contains `name` (dockerd's name filter matches a
 * substring): Nomad names a task's container `<task>-<alloc ID>` and the
 * pause container of a group network `nomad_init_<alloc ID>`.
 */
export function containersNamed(rig: TestDocker, name: string): Promise<ContainerSummary[]> {
  return dockerApi<ContainerSummary[]>(rig, 'GET', `/containers/json?all=1&filters=${encodeURIComponent(JSON.stringify({ name: [name] }))}`);
}

/** Containers Nomad's docker driver (and Berth's) labels with the allocation they belong to. */
export const ALLOC_LABEL = 'com.hashicorp.nomad.alloc_id';

export type TestImage = 'busybox' | 'pause' | 'plugin';

const imagePromises = new Map<string, Promise<string>>();

/**
 * The registry name of a test image, built and pushed once per rig and
 * process (a later call, or another test file on the same rig, finds it):
 * `busybox` -> `REGISTRY/busybox:1.35`, `plugin` -> `REGISTRY/berth/hostpath-plugin:dev`
 * (needs dist/: node scripts/build.mjs), `pause` -> Nomad's infra_image name,
 * tagged locally (Nomad pulls it only when missing).
 */
export function testImage(rig: TestDocker, which: TestImage): Promise<string> {
  const key = `${rig.host} ${which}`;
  let p = imagePromises.get(key);
  if (!p) {
    p = makeImage(rig, which);
    imagePromises.set(key, p);
  }
  return p;
}

async function makeImage(rig: TestDocker, which: TestImage): Promise<string> {
  if (which === 'pause') {
    if ((await dockerCall(rig, 'GET', `/images/${PAUSE_IMAGE}/json`)).status !== 200) await buildPauseImage(rig.host);
    return PAUSE_IMAGE;
  }
  const [local, remote] = which === 'busybox'
    ? ['busybox:1.35', `${rig.registry}/busybox:1.35`]
    : ['berth-hostpath:dev', `${rig.registry}/berth/hostpath-plugin:dev`];
  // The plugin image holds this checkout's build: remade once per process so a test never runs a stale one.
  if (which === 'plugin') await buildPluginImage(rig.host, local, { root: REPO });
  else if ((await dockerCall(rig, 'GET', `/images/${local}/json`)).status !== 200) await buildBusyboxImage(rig.host, local);
  await tagAndPush(rig.host, local, remote);
  return remote;
}

/** Removes the local copy of a registry image so the next container start must pull it. */
export async function forgetLocalImage(rig: TestDocker, ref: string): Promise<void> {
  const res = await dockerCall(rig, 'DELETE', `/images/${encodeURIComponent(ref)}?noprune=1`);
  if (res.status !== 200 && res.status !== 404) throw new Error(`docker rmi ${ref}: ${res.status} ${JSON.stringify(res.body)}`);
}

/**
 * Follows a container's output (GET /logs?follow=1) until it matches `re`;
 * rejects with what it printed when the container exits first or `timeoutMs` passes.
 */
export function waitForContainerOutput(rig: TestDocker, id: string, re: RegExp, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const text = (): string => { const d = demuxLogs(Buffer.concat(chunks)); return d.stdout + d.stderr; };
    const req = request({ socketPath: rig.socketPath, path: `/v1.41/containers/${id}/logs?follow=1&stdout=1&stderr=1` }, (res) => {
      res.on('data', (c: Buffer) => {
        chunks.push(c);
        const out = text();
        if (re.test(out)) finish(undefined, out);
      });
      res.on('end', () => finish(new Error(`container ${id.slice(0, 12)} ended before printing ${re}: ${text()}`)));
    });
    const timer = setTimeout(() => finish(new Error(`container ${id.slice(0, 12)} did not print ${re} within ${timeoutMs} ms: ${text()}`)), timeoutMs);
    let done = false;
    function finish(err: Error | undefined, out = ''): void {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      if (err) reject(err); else resolve(out);
    }
    req.on('error', (err) => finish(err));
    req.end();
  });
}
