// What `job init` and `volume init` write parses as the job and volume they
// describe, in each of their forms (test/cli/nomad-habits.test.ts runs them).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobFile, parseVolumeFile } from '../spec-files/index.js';
import { exampleJob, exampleVolume } from './init-command.js';

describe('the example files', () => {
  it("job init's HCL, short HCL and Nomad JSON are the same job", async () => {
    const hcl = await parseJobFile('example.nomad.hcl', exampleJob({}));
    const json = await parseJobFile('example.nomad.json', exampleJob({ json: true }));
    const short = await parseJobFile('short.hcl', exampleJob({ short: true }));
    assert.equal(json.format, 'json');
    assert.deepEqual(json.notes, []);
    assert.deepEqual(json.job, hcl.job);
    assert.deepEqual(short.job.groups[0]?.tasks[0]?.config, hcl.job.groups[0]?.tasks[0]?.config);
  });

  it("volume init's HCL and JSON are the same volume, made for create", async () => {
    const hcl = await parseVolumeFile('volume.hcl', exampleVolume({}), 'create');
    const json = await parseVolumeFile('volume.json', exampleVolume({ json: true }), 'create');
    assert.deepEqual(json.volume, hcl.volume);
    assert.equal(hcl.volume.pluginId, 'hostpath');
    assert.deepEqual(hcl.volume.context, { owner: 'example' });
    assert.equal(hcl.volume.contentSource, undefined);
  });
});
