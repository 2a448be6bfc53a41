// `berth job init` and `berth volume init`: write an example job or volume
// file into the current directory, as Nomad's `job init` and `volume init`
// do. Each example runs on a dev agent as written (`berth agent --dev`, then
// `berth job run example.nomad.hcl`; the volume once the hostpath plugin job
// runs: `berth job run <package>/examples/hostpath-plugin.hcl`).

import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { CommandContext } from './command-context.js';
import { UsageError } from './usage-error.js';

const JOB_HCL = `# An example Berth job, written by \`berth job init\`. Run it on an agent:
#   berth job run example.nomad.hcl
# Berth reads Nomad's job language; see the README's "Coming from Nomad".
job "example" {
  # service jobs run until stopped; batch jobs run to completion.
  type = "service"

  # Any datacenter ("*"), or a list such as ["dc1"].
  datacenters = ["*"]

  group "cache" {
    # How many allocations of this group run.
    count = 1

    # What a node does when a task fails: restart it in place (delay), or
    # give up and fail the allocation (fail) once attempts are used up.
    restart {
      attempts = 2
      interval = "30m"
      delay    = "15s"
      mode     = "fail"
    }

    task "clock" {
      # raw_exec runs the command as a process of the node; exec adds a
      # chroot and namespaces (Linux, root).
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do date; sleep 10; done"]
      }

      env {
        GREETING = "hello from berth"
      }

      resources {
        cpu    = 100 # relative CPU weight
        memory = 64  # MB
      }
    }
  }
}
`;

const JOB_HCL_SHORT = `job "example" {
  group "cache" {
    task "clock" {
      driver = "raw_exec"

      config {
        command = "/bin/sh"
        args    = ["-c", "while true; do date; sleep 10; done"]
      }

      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`;

// Nomad's API job JSON (what \`nomad job run -json\` and \`job inspect\` use); Berth reads it as Nomad writes it.
const JOB_JSON = `${JSON.stringify(
  {
    Job: {
      ID: 'example',
      Name: 'example',
      Type: 'service',
      Datacenters: ['*'],
      TaskGroups: [
        {
          Name: 'cache',
          Count: 1,
          RestartPolicy: { Attempts: 2, Interval: 1_800_000_000_000, Delay: 15_000_000_000, Mode: 'fail' },
          Tasks: [
            {
              Name: 'clock',
              Driver: 'raw_exec',
              Config: { command: '/bin/sh', args: ['-c', 'while true; do date; sleep 10; done'] },
              Env: { GREETING: 'hello from berth' },
              Resources: { CPU: 100, MemoryMB: 64 },
            },
          ],
        },
      ],
    },
  },
  null,
  2,
)}\n`;

const VOLUME_HCL = `# An example CSI volume, written by \`berth volume init\`. Create it through
# the hostpath plugin's controller (the plugin job must run first):
#   berth volume create volume.hcl
id        = "example-volume"
name      = "example-volume"
type      = "csi"
plugin_id = "hostpath"

# For \`berth volume register\` (a volume the storage already has), give the
# plugin's own volume ID; \`volume create\` gets it from the plugin instead.
# external_id = "vol-23452345"

# For \`berth volume create\`: start from a snapshot or from another volume
# (one of the two; plugin IDs). \`volume register\` ignores them.
# snapshot_id = "snap-12345"
# clone_id    = "vol-abcdef"

# Optional: the size to ask the plugin for.
capacity_min = "10MiB"
capacity_max = "1GiB"

# Each way the volume may be used; a job's volume block picks one.
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "single-node-reader-only"
  attachment_mode = "file-system"
}

# Optional: sent to the plugin as they are. Secrets are never shown by a read.
parameters {
  tier = "local"
}

# secrets {
#   token = "..."
# }

# Optional: the plugin's volume context; merged with what the plugin returns on create.
context {
  owner = "example"
}
`;

// Nomad's JSON volume spec: the same file in JSON syntax.
const VOLUME_JSON = `${JSON.stringify(
  {
    id: 'example-volume',
    name: 'example-volume',
    type: 'csi',
    plugin_id: 'hostpath',
    capacity_min: '10MiB',
    capacity_max: '1GiB',
    capability: [
      { access_mode: 'single-node-writer', attachment_mode: 'file-system' },
      { access_mode: 'single-node-reader-only', attachment_mode: 'file-system' },
    ],
    parameters: { tier: 'local' },
    context: { owner: 'example' },
  },
  null,
  2,
)}\n`;

/** The text `job init` writes for these flags. */
export function exampleJob(opts: { short?: boolean; json?: boolean }): string {
  return opts.json ? JOB_JSON : opts.short ? JOB_HCL_SHORT : JOB_HCL;
}

/** The text `volume init` writes for these flags. */
export function exampleVolume(opts: { json?: boolean }): string {
  return opts.json ? VOLUME_JSON : VOLUME_HCL;
}

/** Writes `text` to `file` unless it exists (then a usage error; nothing is changed). */
async function writeNew(ctx: CommandContext, file: string, text: string, what: string): Promise<void> {
  try {
    await writeFile(file, text, { flag: 'wx', mode: 0o644 });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'EEXIST') throw new UsageError(`${file} already exists; remove it or give another file name`);
    throw new UsageError(`cannot write ${file}: ${code ?? String(err)}`);
  }
  ctx.io.stdout(`Example ${what} file written to ${file}\n`);
}

/** Adds `init` to `berth job`. */
export function addJobInit(job: Command, ctx: CommandContext): void {
  job
    .command('init')
    .description('Write an example job file (example.nomad.hcl) that runs on a dev agent as written')
    .argument('[file]', 'where to write it (default example.nomad.hcl, or example.nomad.json with --json)')
    .option('--short', 'the job without its explanatory comments')
    .option('--json', "Nomad's API JSON form ({\"Job\": {...}}) instead of HCL")
    .addHelpText('after', '\nExamples:\n  $ berth job init\n  $ berth job init --short\n  $ berth job init --json job.json\n  $ berth job run example.nomad.hcl')
    .action(async (file: string | undefined, opts: { short?: boolean; json?: boolean }) => {
      await writeNew(ctx, file ?? (opts.json ? 'example.nomad.json' : 'example.nomad.hcl'), exampleJob(opts), 'job');
    });
}

/** Adds `init` to `berth volume`. */
export function addVolumeInit(volume: Command, ctx: CommandContext): void {
  volume
    .command('init')
    .description('Write an example volume file (volume.hcl) that `volume create` takes with the hostpath plugin')
    .argument('[file]', 'where to write it (default volume.hcl, or volume.json with --json)')
    .option('--json', "Nomad's JSON volume spec instead of HCL")
    .addHelpText('after', '\nExamples:\n  $ berth volume init\n  $ berth volume init --json\n  $ berth volume create volume.hcl')
    .action(async (file: string | undefined, opts: { json?: boolean }) => {
      await writeNew(ctx, file ?? (opts.json ? 'volume.json' : 'volume.hcl'), exampleVolume(opts), 'volume');
    });
}
