// Job files written the way Nomad users write them (HCL2 with variables,
// locals, functions and dynamic blocks) give the job they describe, with
// -var, -var-file and NOMAD_VAR_*/BERTH_VAR_* values; references to what is
// not declared are refused at their line.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { formatFileProblem, parseJobFile, parseVolumeFile, SpecFileError, type JobFileOptions } from './spec-file.js';

async function errorsOf(text: string, opts: JobFileOptions = {}, file = 'web.hcl'): Promise<string[]> {
  try {
    await parseJobFile(file, text, opts);
  } catch (err) {
    assert.ok(err instanceof SpecFileError, String(err));
    return err.problems.map(formatFileProblem);
  }
  return assert.fail('the file was accepted');
}

const WEB = `
variable "datacenters" {
  type    = list(string)
  default = ["dc1"]
}

variable "replicas" {
  type        = number
  default     = 2
  description = "how many copies"
  validation {
    condition     = var.replicas >= 1 && var.replicas <= 5
    error_message = "replicas must be between 1 and 5."
  }
}

variable "mounts" {
  type = map(object({
    destination = string
    read_only   = optional(bool, false)
  }))
  default = {
    data = { destination = "/srv/data" }
    logs = { destination = "/srv/logs", read_only = true }
  }
}

variable "log_level" {
  default = "info"
}

locals {
  name    = "web-\${var.replicas}"
  command = "/bin/sh"
  script  = join("; ", [for m in keys(var.mounts) : "ls \${var.mounts[m].destination}"])
  memory  = var.replicas > 1 ? 256 : 128
}

job "web" {
  datacenters = var.datacenters
  type        = "service"

  group "app" {
    count = var.replicas

    dynamic "volume" {
      for_each = var.mounts
      labels   = [volume.key]
      content {
        type            = "csi"
        source          = "vol-\${volume.key}"
        access_mode     = "multi-node-multi-writer"
        attachment_mode = "file-system"
        read_only       = volume.value.read_only
      }
    }

    task "server" {
      driver = "raw_exec"
      config {
        command = local.command
        args    = ["-c", "\${local.script}; echo \${NOMAD_ALLOC_DIR} \${node.unique.id}"]
      }
      env {
        LOG_LEVEL = upper(var.log_level)
        NAME      = local.name
        SETTINGS  = jsonencode({ level = var.log_level, replicas = var.replicas })
      }
      dynamic "volume_mount" {
        for_each = var.mounts
        iterator = m
        content {
          volume      = m.key
          destination = m.value.destination
          read_only   = m.value.read_only
        }
      }
      resources {
        cpu    = 100 * var.replicas
        memory = local.memory
      }
    }
  }
}
`;

describe('job files with variables, locals, functions and dynamic blocks', () => {
  it('evaluate to the job they describe, with defaults', async () => {
    const { job } = await parseJobFile('web.hcl', WEB);
    const group = job.groups[0]!;
    const task = group.tasks[0]!;
    assert.equal(group.count, 2);
    assert.deepEqual(job.datacenters, ['dc1']);
    assert.deepEqual(Object.keys(group.volumes).sort(), ['data', 'logs']);
    assert.equal(group.volumes['logs']!.readOnly, true);
    assert.equal(group.volumes['data']!.source, 'vol-data');
    assert.deepEqual(
      task.volumeMounts.map((m) => [m.volume, m.destination, m.readOnly]),
      [
        ['data', '/srv/data', false],
        ['logs', '/srv/logs', true],
      ],
    );
    assert.deepEqual(task.config['args'], ['-c', 'ls /srv/data; ls /srv/logs; echo ${NOMAD_ALLOC_DIR} ${node.unique.id}'], 'run-time references are left for the client');
    assert.deepEqual(task.env, { LOG_LEVEL: 'INFO', NAME: 'web-2', SETTINGS: '{"level":"info","replicas":2}' });
    assert.deepEqual(task.resources, { cpuMhz: 200, memoryMb: 256 });
  });

  it('-var beats -var-file beats BERTH_VAR_* beats NOMAD_VAR_* beats the default; complex types parse as HCL', async () => {
    const varFile = { file: 'prod.hcl', text: 'replicas = 4\nlog_level = "warn"\n' };
    const env = { NOMAD_VAR_replicas: '3', BERTH_VAR_log_level: 'debug', NOMAD_VAR_log_level: 'error', NOMAD_VAR_undeclared: 'ignored' };
    const fromEnv = await parseJobFile('web.hcl', WEB, { env });
    assert.equal(fromEnv.job.groups[0]!.count, 3);
    assert.equal(fromEnv.job.groups[0]!.tasks[0]!.env['LOG_LEVEL'], 'DEBUG');
    const fromFile = await parseJobFile('web.hcl', WEB, { env, varFiles: [varFile] });
    assert.equal(fromFile.job.groups[0]!.count, 4);
    const fromFlag = await parseJobFile('web.hcl', WEB, { env, varFiles: [varFile], vars: ['replicas=5', 'datacenters=["east", "west"]'] });
    assert.equal(fromFlag.job.groups[0]!.count, 5);
    assert.deepEqual(fromFlag.job.datacenters, ['east', 'west']);
    const json = await parseJobFile('web.hcl', WEB, { varFiles: [{ file: 'vars.json', text: '{"replicas": 1, "mounts": {}}' }] });
    assert.equal(json.job.groups[0]!.count, 1);
    assert.deepEqual(json.job.groups[0]!.tasks[0]!.volumeMounts, [], 'an empty for_each generates no blocks');
    assert.deepEqual(json.job.groups[0]!.tasks[0]!.resources, { cpuMhz: 100, memoryMb: 128 });
  });

  it('a value its validation refuses, a wrong type, an unset variable and an unknown -var are each reported', async () => {
    assert.deepEqual(await errorsOf(WEB, { vars: ['replicas=9'] }), [
      'web.hcl:7:1: Invalid value for variable: replicas must be between 1 and 5. (variable "replicas", from -var replicas, validation rule at line 12)',
    ]);
    assert.deepEqual(await errorsOf(WEB, { varFiles: [{ file: 'prod.hcl', text: '\nreplicas = "many"\n' }] }), [
      'prod.hcl:2:1: Invalid value for variable: The value of variable "replicas" is not a number: a number is required, not the string "many".',
    ]);
    assert.deepEqual(await errorsOf('variable "image" {}\njob "x" {\n}\n'), [
      'web.hcl:1:1: Unset variable "image": A used variable must be set or have a default value; give it with -var image=..., a -var-file, or NOMAD_VAR_image.',
    ]);
    assert.deepEqual(await errorsOf(WEB, { vars: ['replica=2'] }), [
      'web.hcl: Undefined -var variable: A "replica" variable was passed in but was not found in known variables. To declare variable "replica", place this block in your job file: variable "replica" {}',
    ]);
  });

  it('a reference to an undeclared variable or local is refused at its line and column', async () => {
    const text = WEB.replace('count = var.replicas', 'count = var.replica').replace('memory = local.memory', 'memory = local.mem');
    assert.deepEqual(await errorsOf(text), [
      'web.hcl:44:13: Reference to undeclared input variable: An input variable with the name "replica" has not been declared. Declare it with a variable "replica" {} block.',
      'web.hcl:80:18: Reference to undeclared local value: A local value with the name "mem" has not been declared in a locals block.',
    ]);
  });

  it('locals that refer to each other in a cycle are refused, naming the cycle', async () => {
    assert.deepEqual(await errorsOf('locals {\n  a = local.b\n  b = "${local.a}x"\n}\njob "x" {\n}\n'), [
      'web.hcl:2:3: Circular reference between local values: The local values refer to each other in a cycle: local.a -> local.b -> local.a.',
    ]);
  });

  it('one bad expression is one error: locals built on a failed local, and a failed variable, say nothing more', async () => {
    const text = 'variable "n" {\n  type    = number\n  default = "many"\n}\nlocals {\n  a = lowercase("X")\n  b = "${local.a}-${var.n}"\n  c = [local.b]\n}\njob "x" {\n}\n';
    assert.deepEqual(await errorsOf(text), [
      'web.hcl:3:13: Invalid value for variable: The value of variable "n" is not a number: a number is required, not the string "many".',
      'web.hcl:6:7: Call to unknown function: There is no function named "lowercase" (see "Coming from Nomad" in the README for the functions Berth provides).',
    ]);
  });

  it('locals are evaluated in dependency order, whatever order they are written in', async () => {
    const text = 'locals {\n  c = "${local.b}!"\n}\nlocals {\n  b = upper(local.a)\n  a = "cmd"\n}\njob "x" {\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = local.c\n      }\n    }\n  }\n}\n';
    const { job } = await parseJobFile('x.hcl', text);
    assert.equal(job.groups[0]!.tasks[0]!.config['command'], 'CMD!');
  });
});

describe('file functions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-jobfile-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('file, fileexists, fileset and templatefile read beside the job file when the caller allows it', async () => {
    writeFileSync(join(dir, 'run.sh'), 'echo hello\n');
    writeFileSync(join(dir, 'app.tpl'), 'port=${port}\n%{ for n in names ~}\n${n};\n%{~ endfor }\n');
    const text = `job "x" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", file("run.sh"), templatefile("app.tpl", { port = 8080, names = ["a", "b"] }), tostring(fileexists("nope.txt")), join(",", fileset(".", "*.{sh,tpl}"))]
      }
    }
  }
}
`;
    const file = join(dir, 'job.hcl');
    const { job } = await parseJobFile(file, text, { allowFS: true });
    assert.deepEqual(job.groups[0]!.tasks[0]!.config['args'], ['-c', 'echo hello\n', 'port=8080\na;b;\n', 'false', 'app.tpl,run.sh']);
    const refused = await errorsOf(text, {}, file);
    assert.match(refused[0] as string, /job\.hcl:7:26: Error in function call: Call to function "file" failed: file functions are turned off here/);
  });
});

describe('volume files read as Nomad reads them (HCL v1 leniency)', () => {
  it('one-line nested topology blocks and quoted keys are taken', async () => {
    const text = `id = "db"
name = "db"
type = "csi"
plugin_id = "hostpath"
capability {
  access_mode = "single-node-writer"
  attachment_mode = "file-system"
}
topology_request {
  required {
    topology { segments { rack = "R1", "zone" = "z1" } }
  }
}
parameters {
  "skuname" = "fast"
}
`;
    const { volume } = await parseVolumeFile('db.hcl', text, 'create');
    assert.deepEqual(volume.topologyRequest?.required, [{ rack: 'R1', zone: 'z1' }]);
    assert.deepEqual(volume.parameters, { skuname: 'fast' });
  });
});
