import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';

// The boundaries of STYLE.md (layers, doors, generated code, test kits, no
// cycles) are checked by eslint.config.js (eslint-plugin-boundaries and our
// berth/no-cycle, scripts/lint-no-cycle.mjs), which `npm test` runs. This plants violations in a copy
// of the tree and shows the checker fails on each, so a config change cannot
// silently switch a rule off.
const REPO = fileURLToPath(new URL('..', import.meta.url));

/** Planted files, path -> source; the ones named `bad-*` must fail, `ok-*` must pass. */
const PLANTED: Record<string, string> = {
  // Layers point one way.
  'src/lib/bad-upward.ts': "import { Agent } from '../agent/index.js';\nexport const x = Agent;\n",
  'src/client/bad-server.ts': "import { Server } from '../server/index.js';\nexport const x = Server;\n",
  // Another layer enters a folder only through its door...
  'src/cli/bad-behind-door.ts': "import { parseEndpoint } from '../csi/client.js';\nexport const x = parseEndpoint;\n",
  // ...and a part's index.ts is a door for its own layer only.
  'src/agent/bad-nested-door.ts': "import { VolumeManager } from '../client/volumes/index.js';\nexport const x = VolumeManager;\n",
  'src/client/allocrunner/ok-sibling-door.ts': "import { VolumeManager } from '../volumes/index.js';\nexport const x = VolumeManager;\n",
  'src/client/allocrunner/bad-sibling-file.ts': "import { VolumeManager } from '../volumes/volume-manager.js';\nexport const x = VolumeManager;\n",
  // A part never imports its layer's top files (the layer's files compose the parts).
  'src/client/volumes/bad-parent.ts': "import { Client } from '../client.js';\nexport const x = Client;\n",
  // server/plugins (a part of server) is not src/csi-plugins.
  'src/server/volumes/ok-server-plugins.ts': "import { computePlugins } from '../plugins/index.js';\nexport const x = computePlugins;\n",
  'src/server/volumes/bad-csi-plugins.ts': "import { HostpathPlugin } from '../../csi-plugins/index.js';\nexport const x = HostpathPlugin;\n",
  // Generated code only through csi and the plugin servers.
  'src/cli/bad-gen.ts': "import { ProbeRequest } from '../gen/csi/v1/csi.js';\nexport const x = ProbeRequest;\n",
  'src/csi-plugins/hostpath/ok-gen.ts': "import { ProbeRequest } from '../../gen/csi/v1/csi.js';\nexport const x = ProbeRequest;\n",
  // The plugins layer sits below client and reaches the generated code; client enters it through its door.
  'src/plugins/bad-upward.ts': "import { Client } from '../client/index.js';\nexport const x = Client;\n",
  'src/plugins/drivers/ok-gen.ts': "import { ProbeRequest } from '../../gen/csi/v1/csi.js';\nexport const x = ProbeRequest;\n",
  'src/client/ok-plugins.ts': "import { DriverPluginError } from '../plugins/index.js';\nexport const x = DriverPluginError;\n",
  'src/client/bad-plugins-behind-door.ts': "import { DriverPluginError } from '../plugins/base/errors.js';\nexport const x = DriverPluginError;\n",
  // Production code never imports a test kit; tests beside the code may.
  'src/client/volumes/bad-test-kit.ts': "import { FakePlugin } from '../../../test/support/csi-fake/index.js';\nexport const x = FakePlugin;\n",
  'src/client/volumes/ok-kit.test.ts': "import { FakePlugin } from '../../../test/support/csi-fake/index.js';\nexport const x = FakePlugin;\n",
  // .mjs files are checked too.
  'src/lib/bad-upward.mjs': "import { Agent } from '../agent/index.js';\nexport const x = Agent;\n",
  // Test kits are entered through their doors; bench never borrows test/ files.
  'test/bad-kit-internals.ts': "import { FakeModel } from './support/csi-fake/_model.js';\nexport const x = FakeModel;\n",
  'bench/bad-test-internals.ts': "import { startAgent } from '../test/agent/_agent.js';\nexport const x = startAgent;\n",
  'bench/ok-kit.ts': "import { Cluster } from '../test/support/server-cluster.js';\nexport const x = Cluster;\n",
  // The web UI is a client of the HTTP API: it imports only itself, never src/.
  'ui/src/bad-server.ts': "import { ApiError } from '../../src/server/index.js';\nexport const x = ApiError;\n",
  'ui/src/ok-own.ts': "import { ApiError } from './api';\nexport const x = ApiError;\n",
  // No cycles...
  'src/lib/bad-cycle-a.ts': "import { b } from './bad-cycle-b.js';\nexport const a = (): number => b() + 1;\n",
  'src/lib/bad-cycle-b.ts': "import { a } from './bad-cycle-a.js';\nexport const b = (): number => (a.length > 9 ? a() : 0);\n",
  // ...type-only imports included (eslint-plugin-import's no-cycle let these through)...
  'src/lib/bad-type-cycle-a.ts': "import type { B } from './bad-type-cycle-b.js';\nexport interface A { b?: B }\n",
  'src/lib/bad-type-cycle-b.ts': "import type { A } from './bad-type-cycle-a.js';\nexport interface B { a?: A }\n",
  // ...inline `type` specifiers and type re-exports, round three files...
  'src/lib/bad-inline-cycle-a.ts': "import { type B } from './bad-inline-cycle-b.js';\nexport interface A { b?: B }\n",
  'src/lib/bad-inline-cycle-b.ts': "export type { C as B } from './bad-inline-cycle-c.js';\n",
  'src/lib/bad-inline-cycle-c.ts': "import type { A } from './bad-inline-cycle-a.js';\nexport interface C { a?: A }\n",
  // ...and a one-way type import is no circle.
  'src/lib/ok-type-one-way.ts': "import type { A } from './bad-type-cycle-a.js';\nexport const x = (a: A): boolean => a.b === undefined;\n",
};

describe('boundary checker', () => {
  let root = '';
  const problems = new Map<string, string[]>();

  before(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'berth-layering-'));
    for (const p of ['src', 'test/support', 'test/agent', 'ui/src', 'ui/tsconfig.json', 'eslint.config.js', 'scripts/lint-no-cycle.mjs', 'tsconfig.json', 'package.json']) {
      cpSync(path.join(REPO, p), path.join(root, p), { recursive: true });
    }
    mkdirSync(path.join(root, 'bench'), { recursive: true });
    symlinkSync(path.join(REPO, 'node_modules'), path.join(root, 'node_modules'));
    for (const [file, text] of Object.entries(PLANTED)) writeFileSync(path.join(root, file), text);
    // berth/no-cycle reads the import graph once per run (TypeScript's reading of imports), so every
    // rule runs on every planted file.
    const results = await new ESLint({ cwd: root }).lintFiles(Object.keys(PLANTED));
    for (const result of results) {
      const rel = path.relative(root, result.filePath);
      problems.set(rel, result.messages.filter((m) => m.ruleId?.startsWith('boundaries/') || m.ruleId === 'berth/no-cycle' || m.fatal).map((m) => `${m.ruleId}: ${m.message}`));
    }
  });

  after(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  for (const file of Object.keys(PLANTED)) {
    const bad = path.basename(file).startsWith('bad-');
    it(`${bad ? 'fails' : 'passes'} ${file}`, () => {
      const found = problems.get(file);
      assert.ok(found, `${file} was not linted`);
      if (bad) assert.ok(found.length > 0, `${file} should break a boundary`);
      else assert.deepEqual(found, []);
    });
  }

  it('names a cycle as a cycle, with its way round', () => {
    assert.match((problems.get('src/lib/bad-cycle-a.ts') ?? []).join('\n'), /berth\/no-cycle: Import circle: src\/lib\/bad-cycle-a\.ts -> src\/lib\/bad-cycle-b\.ts -> src\/lib\/bad-cycle-a\.ts/);
    assert.match((problems.get('src/lib/bad-type-cycle-b.ts') ?? []).join('\n'), /berth\/no-cycle: Import circle: src\/lib\/bad-type-cycle-b\.ts -> src\/lib\/bad-type-cycle-a\.ts -> src\/lib\/bad-type-cycle-b\.ts/);
    assert.match(
      (problems.get('src/lib/bad-inline-cycle-a.ts') ?? []).join('\n'),
      /berth\/no-cycle: Import circle: src\/lib\/bad-inline-cycle-a\.ts -> src\/lib\/bad-inline-cycle-b\.ts -> src\/lib\/bad-inline-cycle-c\.ts -> src\/lib\/bad-inline-cycle-a\.ts/,
    );
  });
});
