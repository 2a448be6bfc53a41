// The hostpath plugin over storage every node of a test cluster reaches:
// one data dir and one plugin node ID for all its instances (so a volume can
// move between nodes, with ControllerPublish/Unpublish), each node keeping
// its own records (--node-state-dir), told apart by its allocation
// directory (`.../<name>/...`). Used by the drain test and bench.

import { existsSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import type { AllocationListStub, CSIPlugin } from '../../src/api/index.js';
import { BERTH, until } from './agent-run.js';

/**
 * The plugin job's HCL for client data dirs named `names` under `dir`; bump
 * `generation` to run it again. `extraArgs` go to `berth plugin hostpath`
 * (e.g. --no-publish-unpublish).
 */
export function sharedHostpathPluginHcl(dir: string, names: readonly string[], generation: number, extraArgs: readonly string[] = []): string {
  const cases = names.map((n) => `*/${n}/*) n=${n} ;;`).join(' ');
  const nodeOf = `case "$BERTH_ALLOC_DIR" in ${cases} *) echo "unknown node: $BERTH_ALLOC_DIR" >&2; exit 1 ;; esac; `;
  const args = ['plugin', 'hostpath', '--endpoint', '"$CSI_ENDPOINT"', '--node-id', 'shared', '--data-dir', path.join(dir, 'hp'), '--node-state-dir', `"${dir}/hp-node-$n"`, ...extraArgs];
  return `job "hostpath-plugin" {\n  type = "system"\n  group "plugin" {\n    task "plugin" {\n      driver = "raw_exec"\n      env {\n        GENERATION = "${generation}"\n      }\n      config {\n        command = "/bin/sh"\n        args    = ["-c", ${JSON.stringify(`${nodeOf}exec ${process.execPath} ${BERTH} ${args.join(' ')}`)}]\n      }\n      csi_plugin {\n        id        = "hostpath"\n        type      = "monolith"\n        mount_dir = "/csi"\n      }\n    }\n  }\n}\n`;
}

/**
 * Waits (up to 90 s) until the plugin job's current version runs on all
 * `nodes` nodes, each serving as node and controller and healthy, and no
 * allocation of an earlier version runs or starts: an old instance still
 * serving would not know a volume created since. `read` GETs the API as JSON.
 */
export async function sharedPluginHealthy(read: <T>(p: string) => Promise<T>, nodes: number, generation: number): Promise<void> {
  await until(
    `the plugin (generation ${generation}) healthy on ${nodes} nodes`,
    async () => {
      const p = await read<CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined);
      const allocs = await read<AllocationListStub[]>('/v1/job/hostpath-plugin/allocations');
      const { Version: version } = await read<{ Version: number }>('/v1/job/hostpath-plugin');
      const current = allocs.filter((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running' && a.JobVersion === version);
      const old = allocs.filter((a) => a.JobVersion !== version && (a.ClientStatus === 'running' || a.ClientStatus === 'pending'));
      // The instances in service must be this version's (an older one may still be registered and healthy for a moment).
      const ids = new Set(current.map((a) => a.ID));
      const served = p ? [...Object.values(p.Nodes ?? {}), ...Object.values(p.Controllers ?? {})] : [];
      return p !== undefined && p.NodesHealthy === nodes && p.ControllersHealthy === nodes && current.length === nodes && old.length === 0 && served.every((i) => i.Healthy && ids.has(i.AllocID));
    },
    90_000,
  );
}

/** A single-node-writer hostpath volume file. */
export function singleWriterVolumeHcl(id: string): string {
  return `id = "${id}"\nname = "${id}"\ntype = "csi"\nplugin_id = "hostpath"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`;
}

/** A shell writer appending "<ns since epoch> <alloc id>" to `log` in its volume every 100 ms; `graceS` more seconds after SIGTERM. */
export function volumeWriterScript(graceS: number): string {
  return (
    'cd "$BERTH_TASK_DIR/data" || exit 1; ' +
    'line() { echo "$(date +%s%N) $BERTH_ALLOC_ID" >> log; }; ' +
    `trap 'end=$(( $(date +%s) + ${graceS} )); while [ $(date +%s) -lt $end ]; do line; sleep 0.1; done; exit 0' TERM; ` +
    'while :; do line; sleep 0.1; done'
  );
}

/** Every "<ns> <alloc>" line of the writers' log files under `root` (the hostpath volumes' directories), with its file. */
export function writerLines(root: string): Array<{ at: number; alloc: string; file: string }> {
  if (!existsSync(root)) return [];
  const found = spawnSync('find', [root, '-name', 'log', '-type', 'f'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  return found.flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [at, alloc] = l.split(' ');
        return { at: Number(at), alloc: alloc ?? '', file };
      }),
  );
}
