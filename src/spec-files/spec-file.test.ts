// Job and volume files as users write them: every example parses into the
// same spec as its JSON form, and every mistake is shown at its file, line
// and column with the field it concerns, never with a secret value.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseJobFile, parseVolumeFile, SpecFileError, type FileProblem } from './spec-file.js';

const example = (name: string): { file: string; text: string } => {
  const file = fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));
  return { file, text: readFileSync(file, 'utf8') };
};

async function problemsOf(p: Promise<unknown>): Promise<FileProblem[]> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof SpecFileError, `expected SpecFileError, got ${String(err)}`);
    return err.problems;
  }
  assert.fail('the file was accepted');
}

describe('examples/', () => {
  it('the hostpath plugin job is a system job with a monolith csi_plugin run by raw_exec', async () => {
    const { file, text } = example('hostpath-plugin.hcl');
    const { job, format } = await parseJobFile(file, text);
    assert.equal(format, 'hcl');
    assert.equal(job.type, 'system');
    const task = job.groups[0]!.tasks[0]!;
    assert.equal(task.driver, 'raw_exec');
    assert.deepEqual(task.csiPlugin, { id: 'hostpath', type: 'monolith', mountDir: '/csi', healthTimeout: '30s' });
    assert.equal(task.config['command'], 'berth');
    // As Nomad's plugin jobs: run-time references stay for the agent to fill in when the task starts.
    assert.deepEqual(task.config['args'], ['plugin', 'hostpath', '--endpoint=${CSI_ENDPOINT}', '--node-id=${node.unique.id}', '--data-dir=/var/lib/berth/hostpath/${node.unique.id}']);
    assert.deepEqual(task.resources, { cpuMhz: 100, memoryMb: 256 });
    assert.deepEqual(job.groups[0]!.restart, { attempts: 5, interval: '5m', delay: '2s', mode: 'delay' });
  });

  it('the writer and reader jobs mount the volume the volume file creates', async () => {
    const volume = await parseVolumeFile(example('volume.hcl').file, example('volume.hcl').text, 'create');
    const writer = (await parseJobFile(example('writer.hcl').file, example('writer.hcl').text)).job;
    const reader = (await parseJobFile(example('reader.hcl').file, example('reader.hcl').text)).job;
    assert.equal(writer.groups[0]!.volumes['data']!.source, volume.volume.id);
    assert.equal(reader.groups[0]!.volumes['data']!.source, volume.volume.id);
    assert.equal(reader.groups[0]!.volumes['data']!.readOnly, true);
    assert.deepEqual(writer.groups[0]!.tasks[0]!.volumeMounts, [{ volume: 'data', destination: '/data', readOnly: false, propagationMode: 'private' }]);
    assert.equal(volume.volume.pluginId, 'hostpath');
    assert.equal(volume.volume.capacityMinBytes, 10 * 1024 * 1024);
    assert.equal(volume.volume.capacityMaxBytes, 1024 ** 3);
    assert.equal(volume.volume.capabilities.length, 2);
  });
});

describe('job files', () => {
  const hcl = `job "web" {
  type        = "service"
  datacenters = ["dc1"]

  group "zeta" {
    count = 2
    task "srv" {
      driver = "exec"
      config {
        command = "/bin/sleep"
        args    = ["1000"]
      }
      env {
        LOG_LEVEL = "debug"
      }
      logs {
        max_files     = 3
        max_file_size = 5
      }
    }
    network {
      mode = "none"
    }
    reschedule {
      attempts  = 1
      interval  = "1h"
      unlimited = false
    }
  }

  group "alpha" {
    volume "data" {
      type            = "csi"
      source          = "vol"
      access_mode     = "multi-node-reader-only"
      attachment_mode = "file-system"
      read_only       = true
      per_alloc       = true
      mount_options {
        fs_type     = "ext4"
        mount_flags = ["noatime"]
      }
    }
    task "a" {
      driver = "exec"
      config {
        command = "/bin/true"
      }
      volume_mount {
        volume           = "data"
        destination      = "/srv"
        read_only        = true
      }
    }
  }
}
`;

  it('HCL and the equivalent JSON give the same spec, groups in the order written', async () => {
    const fromHcl = await parseJobFile('web.hcl', hcl);
    assert.deepEqual(
      fromHcl.job.groups.map((g) => g.name),
      ['zeta', 'alpha'],
    );
    const fromJson = await parseJobFile('web.json', JSON.stringify({ job: fromHcl.input }, null, 2));
    assert.deepEqual(fromJson.job, fromHcl.job);
    const zeta = fromHcl.job.groups[0]!;
    assert.equal(zeta.count, 2);
    assert.deepEqual(zeta.tasks[0]!.env, { LOG_LEVEL: 'debug' }, 'env keys are kept as written');
    assert.deepEqual(zeta.tasks[0]!.logs, { disabled: false, maxFiles: 3, maxFileSizeMb: 5 });
    assert.equal(zeta.network.mode, 'none');
    const vol = fromHcl.job.groups[1]!.volumes['data']!;
    assert.deepEqual(vol.mountOptions, { fsType: 'ext4', mountFlags: ['noatime'] });
    assert.equal(vol.perAlloc, true);
  });

  it('a file without an extension is read as JSON when it starts with {', async () => {
    const { format, job } = await parseJobFile('jobspec', '{"id": "x", "groups": [{"name": "g", "tasks": [{"name": "t", "driver": "exec", "config": {"command": "/bin/true"}}]}]}');
    assert.equal(format, 'json');
    assert.equal(job.id, 'x');
  });

  it('malformed HCL names the file, line and column', async () => {
    const problems = await problemsOf(parseJobFile('bad.hcl', 'job "x" {\n  group "g" {\n    count = \n  }\n}\n'));
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.file, 'bad.hcl');
    assert.equal(problems[0]!.line, 3);
    assert.ok(problems[0]!.column > 0);
    assert.equal(problems[0]!.message, 'malformed HCL: Invalid expression: Expected the start of an expression, but found a newline.');
  });

  it("a service job's reschedule block with attempts alone is refused as Nomad refuses it, at its line; with unlimited = false and an interval it is taken", async () => {
    const file = (body: string) =>
      ['job "x" {', '  group "g" {', '    reschedule {', body, '    }', '    task "t" {', '      driver = "raw_exec"', '      config {', '        command = "/bin/true"', '      }', '    }', '  }', '}'].join('\n');
    const problems = await problemsOf(parseJobFile('x.hcl', file('      attempts = 3')));
    assert.deepEqual(
      problems.map((p) => `${p.line}: ${p.field}: ${p.message}`),
      [
        '4: reschedule.attempts: Interval must be a non zero value if Attempts > 0',
        '4: reschedule.attempts: Reschedule Policy with Attempts = 3, Interval = 0s, and Unlimited = true is ambiguous; If Attempts >0, Unlimited cannot also be set to true (set unlimited = false with attempts and an interval, or leave attempts out)',
      ],
    );
    const taken = await parseJobFile('x.hcl', file('      attempts  = 3\n      interval  = "1h"\n      unlimited = false'));
    assert.deepEqual(taken.job.groups[0]!.reschedule, { attempts: 3, interval: '1h', delay: '30s', unlimited: false, delayFunction: 'exponential', maxDelay: '1h' });
  });

  it('a schema violation in HCL points at the offending attribute, block or unknown field', async () => {
    const text = [
      'job "x" {', //                     1
      '  group "g" {', //                 2
      '    count = "two"', //             3
      '    task "t" {', //                4
      '      driver = "exec"', //         5
      '      volume_mount {', //          6
      '        volume      = "nope"', //  7
      '        destination = "rel"', //   8
      '      }', //                       9
      '      colour = "blue"', //         10
      '    }', //                         11
      '  }', //                           12
      '}', //                             13
    ].join('\n');
    const problems = await problemsOf(parseJobFile('x.hcl', text));
    const at = (field: string): FileProblem | undefined => problems.find((p) => p.field === field);
    assert.deepEqual([at('count')?.line, at('count')?.column], [3, 5]);
    assert.equal(at('volume_mount.destination')?.line, 8);
    // Cross-field rules run once the shapes are right: fix the count and the mount's volume is named.
    const later = await problemsOf(parseJobFile('x.hcl', text.replace('"two"', '2').replace('destination = "rel"', 'destination = "/srv"').replace('colour = "blue"', '')));
    assert.deepEqual(
      later.map((p) => [p.field, p.line]),
      [
        ['config.command', 4],
        ['volume_mount.volume', 7],
      ],
    );
    const unknown = problems.find((p) => /unsupported argument "colour"/.test(p.message));
    assert.equal(unknown?.line, 10);
    assert.equal(unknown?.column, 7);
    assert.match(new SpecFileError(problems).message, /^x\.hcl:3:5: count: expected a number$/m);
  });

  it('a block given twice where one is allowed, and a duplicate group, are refused at the second one', async () => {
    const problems = await problemsOf(
      parseJobFile('d.hcl', 'job "x" {\n  group "g" {\n    restart {\n      attempts = 1\n    }\n    restart {\n      attempts = 2\n    }\n    task "t" {\n      driver = "exec"\n    }\n  }\n}\n'),
    );
    assert.equal(problems[0]!.line, 6);
    assert.match(problems[0]!.message, /may appear only once/);
  });

  it('malformed JSON and schema violations in JSON name the line and column', async () => {
    const syntax = await problemsOf(parseJobFile('bad.json', '{\n  "id": "x",\n  "groups": [\n    {"name": "g" "count": 1}\n  ]\n}'));
    assert.deepEqual([syntax[0]!.line, syntax[0]!.column], [4, 18]);
    assert.match(syntax[0]!.message, /malformed JSON/);
    const schema = await problemsOf(parseJobFile('bad.json', '{\n  "id": "x",\n  "groups": [\n    {\n      "name": "g",\n      "count": -1,\n      "tasks": [{"name": "t", "driver": "exec"}]\n    }\n  ]\n}'));
    assert.equal(schema[0]!.field, 'groups[0].count');
    assert.deepEqual([schema[0]!.line, schema[0]!.column], [6, 7]);
  });

  it('comments, heredocs, templates with braces and one-line blocks do not throw the positions off', async () => {
    const text = [
      '# a comment { with a brace', //                       1
      'job "x" { /* inline } */', //                        2
      '  group "g" {', //                                   3
      '    network { mode = "host" }', //                   4
      '    task "t" {', //                                  5
      '      driver = "exec"', //                           6
      '      config {', //                                  7
      '        script = <<EOF', //                          8
      'echo "}" ${HOME} {', //                              9
      'EOF', //                                             10
      '        args = ["-c", "echo ${jsonencode({a = 1})}"]', // 11
      '      }', //                                         12
      '      // count = 1', //                              13
      '      bogus = { a = "}" }', //                       14
      '    }', //                                           15
      '  }', //                                             16
      '}', //                                               17
    ].join('\n');
    const problems = await problemsOf(parseJobFile('c.hcl', text));
    // The driver's config and the schema are checked together: both problems at once.
    assert.deepEqual(
      problems.map((p) => [p.field, p.message, p.line, p.column]),
      [
        ['config.command', 'is required: the program to run (a path, or a name found on PATH) (driver exec)', 7, 7],
        ['task "t"', 'unsupported argument "bogus"', 14, 7],
      ],
    );
  });

  it('a file with two jobs, or none, is refused', async () => {
    assert.match((await problemsOf(parseJobFile('two.hcl', 'job "a" {\n}\njob "b" {\n}\n')))[0]!.message, /exactly one job/);
    assert.match((await problemsOf(parseJobFile('none.hcl', 'id = "x"\n')))[0]!.message, /outside the job block/);
  });
});

describe('volume files', () => {
  const volume = `id          = "db"
name        = "database"
type        = "csi"
plugin_id   = "hostpath"
external_id = "vol-0123"
capacity_min = "1GiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

capability {
  access_mode     = "multi-node-reader-only"
  attachment_mode = "file-system"
}

mount_options {
  fs_type     = "ext4"
  mount_flags = ["password=hunter2hunter2"]
}

secrets {
  api_token = "s3cr3t-value-000"
}

parameters {
  tier = "fast"
}

context {
  share = "a"
}

topology_request {
  required {
    topology {
      segments {
        rack = "r1"
      }
    }
    topology {
      segments {
        rack = "r2"
      }
    }
  }
  preferred {
    topology {
      segments {
        zone = "z1"
      }
    }
  }
}
`;

  it('repeated capability blocks, mount options, secrets, parameters, context and topology become the canonical spec', async () => {
    const { volume: v, input } = await parseVolumeFile('db.hcl', volume, 'register');
    assert.equal(v.externalId, 'vol-0123');
    assert.equal(v.capacityMinBytes, 1024 ** 3);
    assert.deepEqual(v.capabilities, [
      { accessMode: 'single-node-writer', attachmentMode: 'file-system' },
      { accessMode: 'multi-node-reader-only', attachmentMode: 'file-system' },
    ]);
    assert.deepEqual(v.mountOptions, { fsType: 'ext4', mountFlags: ['password=hunter2hunter2'] });
    assert.deepEqual(v.secrets, { api_token: 's3cr3t-value-000' });
    assert.deepEqual(v.parameters, { tier: 'fast' });
    assert.deepEqual(v.context, { share: 'a' });
    assert.deepEqual(v.topologyRequest, { required: [{ rack: 'r1' }, { rack: 'r2' }], preferred: [{ zone: 'z1' }] });
    const again = await parseVolumeFile('db.json', JSON.stringify(input), 'register');
    assert.deepEqual(again.volume, v, 'the JSON form of the same spec is accepted as is');
  });

  it('register needs external_id and create refuses it', async () => {
    const noExternal = volume.replace('external_id = "vol-0123"\n', '');
    assert.equal((await problemsOf(parseVolumeFile('db.hcl', noExternal, 'register')))[0]!.field, 'external_id');
    const p = await problemsOf(parseVolumeFile('db.hcl', volume, 'create'));
    assert.deepEqual([p[0]!.field, p[0]!.line], ['external_id', 5]);
  });

  it('errors point at the right capability block and never quote a secret', async () => {
    const bad = volume.replace('"multi-node-reader-only"', '"every-node"').replace('capacity_min = "1GiB"', 'capacity_min = "lots"');
    const problems = await problemsOf(parseVolumeFile('db.hcl', bad, 'register'));
    const mode = problems.find((p) => p.field === 'capability[1].access_mode');
    assert.deepEqual([mode?.line, mode?.column], [14, 3]);
    const cap = problems.find((p) => p.field === 'capacity_min');
    assert.equal(cap?.line, 6);
    const message = new SpecFileError(problems).message;
    assert.doesNotMatch(message, /s3cr3t|hunter2/);
    const unknownSecret = await problemsOf(parseVolumeFile('db.hcl', volume.replace('api_token = "s3cr3t-value-000"', 'api_token = ["s3cr3t-value-000"]'), 'register'));
    assert.doesNotMatch(new SpecFileError(unknownSecret).message, /s3cr3t/);
    assert.equal(unknownSecret[0]!.line, 24);
  });
});

describe('template and artifact blocks', () => {
  it('map as Nomad writes them, with defaults', async () => {
    const text = `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
      artifact {
        source = "/srv/app.tar.gz"
        options {
          archive = false
        }
        headers {
          X-Token = "abc"
        }
      }
      template {
        data          = <<EOH
port={{ env "NOMAD_PORT_http" }}
EOH
        destination   = "local/app.conf"
        change_mode   = "signal"
        change_signal = "SIGHUP"
        perms         = "0600"
        env           = true
        left_delimiter = "[["
        right_delimiter = "]]"
        error_on_missing_key = true
      }
    }
  }
}
`;
    const { job } = await parseJobFile('web.hcl', text);
    const task = job.groups[0]!.tasks[0]!;
    assert.deepEqual(task.artifacts, [{ source: '/srv/app.tar.gz', destination: 'local/', mode: 'any', options: { archive: 'false' }, headers: { 'X-Token': 'abc' } }]);
    assert.deepEqual(task.templates, [
      {
        data: 'port={{ env "NOMAD_PORT_http" }}\n',
        destination: 'local/app.conf',
        changeMode: 'signal',
        changeSignal: 'SIGHUP',
        splay: '5s',
        perms: '0600',
        env: true,
        leftDelimiter: '[[',
        rightDelimiter: ']]',
        errorOnMissingKey: true,
      },
    ]);
  });

  it('refuses a template without data or source, and change_mode "signal" without a signal, at their line', async () => {
    const text = `job "web" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      template {
        destination = "local/a"
      }
      template {
        data        = "x"
        destination = "local/b"
        change_mode = "signal"
      }
    }
  }
}
`;
    const problems = await problemsOf(parseJobFile('web.hcl', text));
    const shown = problems.map((p) => `${p.line}: ${p.message}`);
    assert.ok(shown.some((s) => /^5: .*a template needs data \(inline\) or source \(a file\)/.test(s)), shown.join('\n'));
    assert.ok(shown.some((s) => /^8: .*change_mode "signal" needs change_signal, e.g. "SIGHUP"/.test(s)), shown.join('\n'));
  });
});
