// Hostile and mistaken job and volume files: each is refused with a clear
// problem at its place, and nothing about it exhausts the stack or memory.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobFile, parseVolumeFile, SpecFileError, type FileProblem } from './spec-file.js';

async function problemsOf(p: Promise<unknown>): Promise<FileProblem[]> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof SpecFileError, `expected SpecFileError, got ${String(err)}`);
    return err.problems;
  }
  assert.fail('the file was accepted');
}

const job = (group: Record<string, unknown>): string =>
  JSON.stringify({ id: 'web', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }], ...group }] });

describe('hostile job and volume files', () => {
  it('10,000-deep JSON is refused with the place it goes too deep, not a stack overflow', async () => {
    const text = `{"id": "web", "x": ${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
    const [p] = await problemsOf(parseJobFile('deep.json', text));
    assert.equal(p?.line, 1);
    assert.match(p?.message ?? '', /^nesting deeper than 64 at line 1 col \d+$/);
  });

  it('10,000-deep HCL is refused with its line and column', async () => {
    const text = `job "web" {\n  x = ${'['.repeat(10_000)}${']'.repeat(10_000)}\n}\n`;
    const [p] = await problemsOf(parseJobFile('deep.hcl', text));
    assert.equal(p?.line, 2);
    assert.match(p?.message ?? '', /^nesting deeper than 64 at line 2 col \d+$/);
  });

  it('a count of 1000000000000 or 10000000 is refused naming the limit', async () => {
    for (const count of [1_000_000_000_000, 10_000_000]) {
      const p = (await problemsOf(parseJobFile('big.json', job({ count })))).find((x) => x.field === 'groups[0].count');
      assert.match(p?.message ?? '', /count is at most 1000 per group/);
    }
    const groups = Array.from({ length: 11 }, (_, i) => ({ name: `g${i}`, count: 1000, tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }));
    const [p] = await problemsOf(parseJobFile('many.json', JSON.stringify({ id: 'web', groups })));
    assert.match(p?.message ?? '', /add up to 11000; a job runs at most 10000 allocations/);
  });

  it('an unlabelled job block is refused, not read as job "0"', async () => {
    const [p] = await problemsOf(parseJobFile('nolabel.hcl', 'job {\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n    }\n  }\n}\n'));
    assert.equal(p?.line, 1);
    assert.match(p?.message ?? '', /job block needs its ID as a label/);
  });

  it('a __proto__ key is refused like any unknown field, in JSON and HCL, job and volume files', async () => {
    const protoOf = (ps: FileProblem[]): FileProblem | undefined => ps.find((p) => /unknown field "__proto__"/.test(p.message));
    const j = protoOf(await problemsOf(parseJobFile('proto.json', '{"id": "web", "__proto__": {"x": 1}, "groups": []}')));
    assert.equal(j?.line, 1);
    const g = protoOf(await problemsOf(parseJobFile('proto.json', job({}).replace('"name":"g",', '"name":"g","__proto__":{"count":2},'))));
    assert.equal(g?.field, 'groups[0]');
    const vol = '{"id": "v", "pluginId": "hostpath", "__proto__": {"externalId": "x"}, "capabilities": [{"accessMode": "single-node-writer", "attachmentMode": "file-system"}]}';
    assert.ok(protoOf(await problemsOf(parseVolumeFile('proto.json', vol, 'create'))));
    const h = (await problemsOf(parseJobFile('proto.hcl', 'job "web" {\n  __proto__ = 1\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n    }\n  }\n}\n'))).find((p) => /unsupported argument "__proto__"/.test(p.message));
    assert.equal(h?.line, 2);
  });
});

describe('driver config checked at validation', () => {
  it('a raw_exec or exec task with no command is refused at its line, naming config.command', async () => {
    for (const driver of ['raw_exec', 'exec']) {
      const text = `job "web" {\n  group "g" {\n    task "t" {\n      driver = "${driver}"\n      config {\n        args = ["-c", "true"]\n      }\n    }\n  }\n}\n`;
      const [p] = await problemsOf(parseJobFile('nocmd.hcl', text));
      assert.equal(p?.field, 'config.command', 'named as the file writes it');
      assert.equal(p?.line, 5);
      assert.match(p?.message ?? '', new RegExp(`^is required: the program to run .*\\(driver ${driver}\\)$`));
    }
    const [a] = await problemsOf(parseJobFile('args.json', job({}).replace('"command":"/bin/true"', '"command":"/bin/true","args":"-x"')));
    assert.equal(a?.field, 'groups[0].tasks[0].config.args');
  });

  it('a driver without a known schema is left to placement', async () => {
    const { job: parsed } = await parseJobFile('docker.json', job({}).replace('"driver":"raw_exec","config":{"command":"/bin/true"}', '"driver":"docker","config":{"image":"x"}'));
    assert.equal(parsed.groups[0]!.tasks[0]!.driver, 'docker');
  });
});
