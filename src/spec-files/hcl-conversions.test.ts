// HCL converts a primitive to the type the schema wants (go-cty's rules, as
// Nomad's job parser applies them): job files from Nomad's own end-to-end
// suite write `cpu = "500"`, `unlimited = "true"` and ports from string
// variables, and Nomad runs them. What does not convert is refused at its line.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatFileProblem, parseJobFile, parseVolumeFile, SpecFileError } from './spec-file.js';

const JOB = `
variable "http_port" {
  type    = string
  default = "8080"
}

job "web" {
  group "g" {
    count = "3"
    reschedule {
      unlimited = "true"
      attempts  = "0"
    }
    network {
      port "http" {
        to = var.http_port
      }
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/echo"
        args    = [1, true, 2.5]
      }
      kill_timeout = "5s"
      resources {
        cpu    = "500"
        memory = "128"
      }
      meta {
        build = 42
      }
    }
  }
}
`;

async function problemsOf(text: string): Promise<string[]> {
  try {
    await parseJobFile('web.hcl', text);
  } catch (err) {
    assert.ok(err instanceof SpecFileError, String(err));
    return err.problems.map(formatFileProblem);
  }
  return assert.fail('the file was accepted');
}

describe('HCL type conversions', () => {
  it('turns strings into the numbers and bools the job wants, and numbers and bools into strings', async () => {
    const { job } = await parseJobFile('web.hcl', JOB);
    const group = job.groups[0]!;
    const task = group.tasks[0]!;
    assert.equal(group.count, 3);
    assert.equal(group.reschedule?.unlimited, true);
    assert.equal(group.reschedule?.attempts, 0);
    assert.equal(group.network.ports[0]?.to, 8080, 'a port from a string variable');
    assert.equal(task.resources.cpuMhz, 500);
    assert.equal(task.resources.memoryMb, 128);
    assert.deepEqual(task.config['args'], ['1', 'true', '2.5'], 'a list of strings from numbers and bools, each converted');
    assert.equal(task.meta?.['build'], '42');
  });

  it('refuses what does not convert, at the line the user wrote', async () => {
    const text = 'job "web" {\n  group "g" {\n    count = "three"\n    reschedule {\n      unlimited = "True"\n    }\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/true"\n      }\n      resources {\n        cpu = "5 hundred"\n      }\n    }\n  }\n}\n';
    assert.deepEqual(await problemsOf(text), [
      'web.hcl:3:5: count: expected a number',
      'web.hcl:5:7: reschedule.unlimited: expected true or false',
      'web.hcl:13:9: resources.cpu: expected a number',
    ]);
  });

  it('converts in a volume file too', async () => {
    const text = 'id = "data"\nname = "data"\ntype = "csi"\nplugin_id = "hostpath"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\nparameters {\n  size = 10\n  thin = true\n}\n';
    const { volume } = await parseVolumeFile('data.hcl', text, 'create');
    assert.deepEqual(volume.parameters, { size: '10', thin: 'true' });
  });
});
