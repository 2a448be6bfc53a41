// constraint, affinity and spread blocks in job files: Nomad's HCL shorthands and
// JSON forms read into one canonical shape; mistakes reported at their line.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobFile, SpecFileError } from './index.js';

async function problems(file: string, text: string): Promise<string[]> {
  try {
    await parseJobFile(file, text);
  } catch (err) {
    if (err instanceof SpecFileError) return err.problems.map((p) => `${p.line}:${p.column} ${p.field}: ${p.message}`);
    throw err;
  }
  return [];
}

const HCL = `job "web" {
  constraint {
    attribute = "\${attr.kernel.version}"
    version   = ">= 4.0, < 7"
  }
  constraint {
    distinct_hosts = true
  }
  spread {
    attribute = "\${meta.rack}"
    weight    = 80
    target "r1" { percent = 60 }
    target "r2" { percent = 40 }
  }
  group "g" {
    count = 3
    affinity {
      attribute = "\${node.class}"
      value     = "fast"
      weight    = -30
    }
    task "t" {
      driver = "exec"
      config { command = "/bin/true" }
      constraint {
        attribute = "\${meta.tags}"
        set_contains_any = "ssd,nvme"
      }
    }
  }
}
`;

describe('placement rules in job files', () => {
  it("reads Nomad's HCL blocks and shorthands into attribute/operator/value", async () => {
    const { job } = await parseJobFile('web.hcl', HCL);
    assert.deepEqual(job.constraints, [
      { attribute: '${attr.kernel.version}', operator: 'version', value: '>= 4.0, < 7' },
      { attribute: '', operator: 'distinct_hosts', value: '' },
    ]);
    assert.deepEqual(job.spreads, [{ attribute: '${meta.rack}', weight: 80, targets: [{ value: 'r1', percent: 60 }, { value: 'r2', percent: 40 }] }]);
    assert.deepEqual(job.groups[0]?.affinities, [{ attribute: '${node.class}', operator: '=', value: 'fast', weight: -30 }]);
    assert.deepEqual(job.groups[0]?.tasks[0]?.constraints, [{ attribute: '${meta.tags}', operator: 'set_contains_any', value: 'ssd,nvme' }]);
  });

  it("reads Nomad's JSON (LTarget/Operand/RTarget, SpreadTarget)", async () => {
    const text = JSON.stringify({
      Job: {
        ID: 'web',
        Constraints: [{ LTarget: '${meta.rack}', RTarget: 'r1', Operand: '=' }],
        Spreads: [{ Attribute: '${node.datacenter}', Weight: 50, SpreadTarget: [{ Value: 'dc1', Percent: 100 }] }],
        TaskGroups: [{ Name: 'g', Affinities: [{ LTarget: '${node.class}', RTarget: 'fast', Operand: '=', Weight: 50 }], Tasks: [{ Name: 't', Driver: 'exec', Config: { command: '/bin/true' } }] }],
      },
    });
    const { job } = await parseJobFile('web.json', text);
    assert.deepEqual(job.constraints, [{ attribute: '${meta.rack}', operator: '=', value: 'r1' }]);
    assert.deepEqual(job.spreads, [{ attribute: '${node.datacenter}', weight: 50, targets: [{ value: 'dc1', percent: 100 }] }]);
    assert.equal(job.groups[0]?.affinities?.[0]?.weight, 50);
  });

  it('reports a bad operator, regexp and version constraint at the line the user wrote them', async () => {
    const bad = HCL.replace('version   = ">= 4.0, < 7"', 'version   = ">= four"')
      .replace('set_contains_any = "ssd,nvme"', 'operator = "~="\n        value = "x"')
      .replace('value     = "fast"', 'operator = "regexp"\n      value     = "(fast"');
    const found = await problems('web.hcl', bad);
    assert.equal(found.length, 3, found.join('\n'));
    assert.match(found.find((p) => p.includes('version'))!, /^4:\d+ constraint\.version: the version constraint ">= four" has "four", which is not a version/);
    assert.match(found.find((p) => p.includes('regular'))!, /^20:\d+ \S*affinity\.value: is not a valid regular expression/);
    assert.match(found.find((p) => p.includes('operator'))!, /^28:\d+ \S*constraint\.operator: unknown operator "~="/);
  });

  it('registers a rule on a target no node has, with a note at its line (Nomad leaves such a job blocked)', async () => {
    const text = HCL.replace('attribute = "${attr.kernel.version}"', 'attribute = "${atr.kernel.version}"');
    const { notes } = await parseJobFile('web.hcl', text);
    assert.equal(notes.length, 1, notes.join('\n'));
    assert.match(notes[0]!, /^web\.hcl:3:5: constraint\.attribute: "\$\{atr\.kernel\.version\}" is no node attribute .*the job stays blocked until it is fixed, as in Nomad$/);
  });
});
