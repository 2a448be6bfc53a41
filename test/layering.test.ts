import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';

// The layering of STYLE.md is enforced by eslint.config.js; this proves the
// rule bites, so a config change cannot silently switch it off.
describe('layering rule', () => {
  const eslint = new ESLint({ cwd: new URL('..', import.meta.url).pathname });
  const lint = async (filePath: string, code: string): Promise<string[]> => {
    const [result] = await eslint.lintText(code, { filePath });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
  };

  it('forbids a lower layer importing a higher one', async () => {
    const messages = await lint('src/lib/example.ts', "import { CsiClient } from '../csi/index.js';\nexport const x = CsiClient;\n");
    assert.match(messages.join('\n'), /layers point one way/);
  });

  it('forbids entering a folder other than through its index.js', async () => {
    const messages = await lint('src/cli/example.ts', "import { parseEndpoint } from '../csi/client.js';\nexport const x = parseEndpoint;\n");
    assert.match(messages.join('\n'), /one door/);
  });

  it('forbids generated code outside csi and plugins', async () => {
    const messages = await lint('src/cli/example.ts', "import { ProbeRequest } from '../gen/csi/v1/csi.js';\nexport const x = ProbeRequest;\n");
    assert.match(messages.join('\n'), /must not import/);
  });

  it('allows the layering as designed', async () => {
    assert.deepEqual(await lint('src/cli/example.ts', "import { CsiClient } from '../csi/index.js';\nexport const x = CsiClient;\n"), []);
    assert.deepEqual(await lint('src/csi/example.ts', "import { retry } from '../lib/index.js';\nexport const x = retry;\n"), []);
  });
});
