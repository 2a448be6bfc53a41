// The hostpath plugin over storage every node of a test cluster reaches:
// one data dir and one plugin node ID for all its instances (so a volume can
// move between nodes, with ControllerPublish/Unpublish), each node keeping
// its own records (--node-state-dir), told apart by its allocation
// directory (`.../<name>/...`). Used by the drain test and bench.

import { existsSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { BERTH } from './agent-run.js';

/** The plugin job's HCL for client data dirs named `names` under `dir`; bump `generation` to run it again. */
export function sharedHostpathPluginHcl(dir: string, names: readonly string[], generation: number): string {
  const cases = names.map((n) => `*/${n}/*) n=${n} ;;`).join(' ');
  const nodeOf = `case "$BERTH_ALLOC_DIR" in ${cases} *) echo "unknown node: $BERTH_ALLOC_DIR" >&2; exit 1 ;; esac; `;
  const args = ['plugin', 'hostpath', '--endpoint', '"$CSI_ENDPOINT"', '--node-id', 'shared', '--data-dir', path.join(dir, 'hp'), '--node-state-dir', `"${dir}/hp-node-$n"`];
  return `job "hostpath-plugin" {\n  type = "system"\n  group "plugin" {\n    task "plugin" {\n      driver = "raw_exec"\n      env {\n        GENERATION = "${generation}"\n      }\n      config {\n        command = "/bin/sh"\n        args    = ["-c", ${JSON.stringify(`${nodeOf}exec ${process.execPath} ${BERTH} ${args.join(' ')}`)}]\n      }\n      csi_plugin {\n        id        = "hostpath"\n        type      = "monolith"\n        mount_dir = "/csi"\n      }\n    }\n  }\n}\n`;
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
