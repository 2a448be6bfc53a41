// `identity` blocks in job files, as a Nomad user writes them: HCL and
// Nomad's JSON (`Identity` for the default, `Identities` for named ones)
// read into the same job, and each mistake reported at the field as
// written, with its line (HCL) or its Nomad path (JSON), in Nomad's words.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseJobFile } from './spec-file.js';

const job = (blocks: string): string => `job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
${blocks}
    }
  }
}
`;

/** The whole error text of parsing `text` as `name`. */
async function errorOf(name: string, text: string): Promise<string> {
  try {
    await parseJobFile(name, text);
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail(`${name} parsed`);
}

describe('identity blocks in job files', () => {
  it('reads the default and named identities of the corpus file and of Nomad JSON into the same job', async () => {
    const corpus = fileURLToPath(new URL('../../test/nomad-corpus/identity.hcl', import.meta.url));
    const hcl = await parseJobFile(corpus, readFileSync(corpus, 'utf8'));
    const ids = hcl.job.groups[0]?.tasks[0]?.identities;
    assert.deepEqual(ids, [
      { name: 'vault', aud: ['vault.io'], env: true, file: true, ttl: '1h', changeMode: 'signal', changeSignal: 'SIGHUP' },
      { name: 'default', aud: ['nomadproject.io'], env: true, file: true },
    ]);
    const json = await parseJobFile(
      'j.json',
      JSON.stringify({
        Job: {
          ID: 'j',
          TaskGroups: [
            {
              Name: 'g',
              Tasks: [
                {
                  Name: 't',
                  Driver: 'raw_exec',
                  Config: { command: '/bin/true' },
                  Identity: { Name: 'default', Audience: ['nomadproject.io'], Env: true, File: true, TTL: 0 },
                  Identities: [{ Name: 'vault', Audience: ['vault.io'], Env: true, File: true, TTL: 3_600_000_000_000, ChangeMode: 'signal', ChangeSignal: 'SIGHUP' }],
                },
              ],
            },
          ],
        },
      }),
    );
    assert.deepEqual(json.job.groups[0]?.tasks[0]?.identities, ids);
  });

  it('drops a default identity that asks for neither env nor file (every task has one in Nomad)', async () => {
    const { job: spec } = await parseJobFile('j.hcl', job('      identity {}'));
    assert.deepEqual(spec.groups[0]?.tasks[0]?.identities, []);
  });

  const cases: Array<[string, string, string]> = [
    ['a name Nomad refuses', '      identity {\n        name = "a b"\n      }', "j.hcl:9:9: identity.name: name must be 1-128 letters, digits, '_' or '-'"],
    ['a ttl on the default identity', '      identity {\n        env = true\n        ttl = "1h"\n      }', 'j.hcl:10:9: identity.ttl: ttl for the default identity is not supported (as in Nomad): give the identity a name'],
    ['change_signal without change_mode "signal"', '      identity {\n        name = "a"\n        change_signal = "SIGHUP"\n      }', 'j.hcl:10:9: identity.change_signal: can only use change_signal = "SIGHUP" with change_mode = "signal"'],
    ['filepath without file', '      identity {\n        name = "a"\n        filepath = "local/a.jwt"\n      }', 'j.hcl:10:9: identity.filepath: file must be true in order to specify filepath'],
    ['two identities of one name', '      identity {\n        name = "a"\n      }\n      identity {\n        name = "a"\n      }', 'j.hcl:12:9: identity[1].name: duplicate identity name "a"'],
    ['an empty audience', '      identity {\n        name = "a"\n        aud = [""]\n      }', 'j.hcl:10:9: identity.aud[0]: an empty string is not a valid audience'],
  ];
  for (const [what, blocks, expected] of cases) {
    it(`refuses ${what} at its line`, async () => {
      assert.equal(await errorOf('j.hcl', job(blocks)), expected);
    });
  }

  it("points a bad Nomad JSON identity at its line, as the job file's other schema errors", async () => {
    const text = JSON.stringify(
      { Job: { ID: 'j', TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/true' }, Identities: [{ Name: 'a', ChangeMode: 'signal' }] }] }] } },
      null,
      2,
    );
    // 1-based, the line before `"Name": "a"`: the identity's opening brace.
    const line = text.split('\n').findIndex((l) => l.includes('"Name": "a"'));
    const message = await errorOf('j.json', text);
    assert.ok(message.startsWith(`j.json:${line}:`), message);
    assert.match(message, /: groups\[0\]\.tasks\[0\]\.identities\[0\]\.changeSignal: change_signal must be specified when using change_mode "signal"$/);
  });
});
