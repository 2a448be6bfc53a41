// The docker driver's agent config: an agent without a `plugin "docker"`
// block (a dev agent) gets the defaults written out in
// defaultDockerPluginConfig, not by running the schema; they must be what the
// schema makes of an empty block.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { defaultDockerPluginConfig, DOCKER_PLUGIN_CONFIG_SCHEMA } from '../../../structs/index.js';
import { DockerDriver } from './docker-driver.js';

test('a docker driver with no plugin config has the config an empty `plugin "docker"` block parses to', () => {
  assert.deepStrictEqual(defaultDockerPluginConfig(), DOCKER_PLUGIN_CONFIG_SCHEMA.parse({}));
  const work = mkdtempSync(path.join(tmpdir(), 'berth-docker-config-'));
  try {
    const none = new DockerDriver({ stateDir: path.join(work, 'a') });
    const empty = new DockerDriver({ stateDir: path.join(work, 'b'), pluginConfig: {} });
    assert.deepStrictEqual(none.config, empty.config);
    assert.equal(none.endpoint, empty.endpoint);
    // Each driver its own object: changing one driver's config never reaches another's.
    assert.notEqual(defaultDockerPluginConfig().allowCaps, defaultDockerPluginConfig().allowCaps);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
});
