// The volume inputs the server's registry takes: a bad input is reported as
// one sentence naming the field, which is what the HTTP API (400 INVALID
// with details.field) and the CLI show.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as inputs from './volume-input.js';

const { checkVolumeInput } = inputs;

const fs = { accessMode: 'single-node-writer', attachmentMode: 'file-system' };
const registration = { id: 'data', externalId: 'ext-data', pluginId: 'hostpath', capabilities: [fs] };
const { externalId: _unused, ...creation } = registration;

interface Row {
  name: string;
  schema: Parameters<typeof checkVolumeInput>[0];
  input: unknown;
  field: string | undefined;
  message: string;
}

const rows: Row[] = [
  { name: 'a spec that is not an object', schema: inputs.volumeRegistrationSchema, input: [registration], field: undefined, message: 'a volume spec must be an object' },
  { name: 'no external ID to register', schema: inputs.volumeRegistrationSchema, input: { ...registration, externalId: undefined }, field: 'externalId', message: 'externalId is required' },
  { name: 'an empty id', schema: inputs.volumeRegistrationSchema, input: { ...registration, id: '' }, field: 'id', message: 'id is required' },
  {
    name: 'an id that climbs out of the paths it becomes part of',
    schema: inputs.volumeCreationSchema,
    input: { ...creation, id: '../../etc' },
    field: 'id',
    message: "id must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit (optionally with a per_alloc [index] suffix)",
  },
  {
    name: 'a namespace with a slash',
    schema: inputs.volumeRegistrationSchema,
    input: { ...registration, namespace: 'a/b' },
    field: 'namespace',
    message: "namespace must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit (optionally with a per_alloc [index] suffix)",
  },
  { name: 'no plugin', schema: inputs.volumeCreationSchema, input: { ...creation, pluginId: undefined }, field: 'pluginId', message: 'pluginId is required' },
  {
    name: 'no capabilities',
    schema: inputs.volumeCreationSchema,
    input: { ...creation, capabilities: [] },
    field: 'capabilities',
    message: 'capabilities must list at least one access mode and attachment mode',
  },
  { name: 'a capability that is not an object', schema: inputs.volumeCreationSchema, input: { ...creation, capabilities: ['rw'] }, field: 'capabilities[0]', message: 'capabilities[0] must be an object' },
  {
    name: 'an unknown access mode',
    schema: inputs.volumeRegistrationSchema,
    input: { ...registration, capabilities: [fs, { accessMode: 'sometimes', attachmentMode: 'file-system' }] },
    field: 'capabilities[1].accessMode',
    message:
      'capabilities[1].accessMode "sometimes" is not one of single-node-writer, single-node-reader-only, multi-node-reader-only, multi-node-single-writer, multi-node-multi-writer, single-node-single-writer, single-node-multi-writer',
  },
  {
    name: 'an unknown attachment mode',
    schema: inputs.volumeRegistrationSchema,
    input: { ...registration, capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'tape' }] },
    field: 'capabilities[0].attachmentMode',
    message: 'capabilities[0].attachmentMode "tape" is not one of block-device, file-system',
  },
  {
    name: 'an empty mount flag',
    schema: inputs.volumeRegistrationSchema,
    input: { ...registration, mountOptions: { mountFlags: ['noatime', ''] } },
    field: 'mountOptions.mountFlags',
    message: 'mountOptions.mountFlags must be non-empty strings',
  },
  {
    name: 'mount options on a block-device volume',
    schema: inputs.volumeRegistrationSchema,
    input: { ...registration, capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'block-device' }], mountOptions: { fsType: 'ext4' } },
    field: 'mountOptions',
    message: 'mountOptions apply to file-system volumes only',
  },
  {
    name: 'a fractional capacity',
    schema: inputs.volumeCreationSchema,
    input: { ...creation, capacityMinBytes: 1.5 },
    field: 'capacityMinBytes',
    message: 'capacityMinBytes must be a whole number of bytes',
  },
  {
    name: 'a capacity given as text',
    schema: inputs.volumeCreationSchema,
    input: { ...creation, capacityMaxBytes: '1GiB' },
    field: 'capacityMaxBytes',
    message: 'capacityMaxBytes must be a whole number of bytes',
  },
  {
    name: 'a minimum above the maximum',
    schema: inputs.volumeCreationSchema,
    input: { ...creation, capacityMinBytes: 2048, capacityMaxBytes: 1024 },
    field: 'capacityMinBytes',
    message: 'capacityMinBytes exceeds capacityMaxBytes',
  },
  {
    name: 'a secret that is not a string (its value is never quoted)',
    schema: inputs.volumeRegistrationSchema,
    input: { ...registration, secrets: { password: 12345 } },
    field: 'secrets',
    message: 'secrets must map strings to strings',
  },
  { name: 'parameters that are not a map', schema: inputs.volumeCreationSchema, input: { ...creation, parameters: ['a=b'] }, field: 'parameters', message: 'parameters must map strings to strings' },
  { name: 'a context that is not a map', schema: inputs.volumeRegistrationSchema, input: { ...registration, context: 'zone=a' }, field: 'context', message: 'context must map strings to strings' },
  {
    name: 'a content source naming nothing',
    schema: inputs.volumeCreationSchema,
    input: { ...creation, contentSource: {} },
    field: 'contentSource',
    message: 'contentSource must name a snapshotId or a volumeId',
  },
  { name: 'an expansion without a size', schema: inputs.volumeExpansionSchema, input: {}, field: 'requiredBytes', message: 'requiredBytes must be positive' },
  { name: 'an expansion to zero bytes', schema: inputs.volumeExpansionSchema, input: { requiredBytes: 0 }, field: 'requiredBytes', message: 'requiredBytes must be positive' },
  {
    name: 'an expansion by a negative size',
    schema: inputs.volumeExpansionSchema,
    input: { requiredBytes: -1 },
    field: 'requiredBytes',
    message: 'requiredBytes must be a whole number of bytes',
  },
  {
    name: 'an expansion limit given as text',
    schema: inputs.volumeExpansionSchema,
    input: { requiredBytes: 1024, limitBytes: '2GiB' },
    field: 'limitBytes',
    message: 'limitBytes must be a whole number of bytes',
  },
  { name: 'a snapshot without a name', schema: inputs.snapshotCreationSchema, input: { name: '' }, field: 'name', message: 'name is required' },
  {
    name: 'snapshot parameters that are not strings',
    schema: inputs.snapshotCreationSchema,
    input: { name: 's1', parameters: { retain: true } },
    field: 'parameters',
    message: 'parameters must map strings to strings',
  },
  { name: 'a snapshot deletion without an ID', schema: inputs.snapshotDeletionSchema, input: { snapshotId: undefined }, field: 'snapshotId', message: 'snapshotId is required' },
  { name: 'snapshot deletion secrets that are not a map', schema: inputs.snapshotDeletionSchema, input: { snapshotId: 's', secrets: 'x' }, field: 'secrets', message: 'secrets must map strings to strings' },
  { name: 'listing secrets that are not a map', schema: inputs.snapshotListingSchema, input: { secrets: [1] }, field: 'secrets', message: 'secrets must map strings to strings' },
];

describe('volume inputs', () => {
  for (const row of rows) {
    it(`names the field of ${row.name}`, () => {
      const checked = checkVolumeInput(row.schema, row.input);
      assert.equal(checked.ok, false, 'expected a problem');
      if (checked.ok) return;
      assert.equal(checked.problem.field, row.field);
      assert.equal(checked.problem.message, row.message);
    });
  }

  it('never quotes a secret value in a problem', () => {
    const checked = checkVolumeInput(inputs.volumeRegistrationSchema, { ...registration, secrets: { password: ['hunter2'] } });
    assert.equal(checked.ok, false);
    assert.ok(!JSON.stringify(checked).includes('hunter2'));
  });

  it('accepts a full registration and keeps every field it knows', () => {
    const input = {
      ...registration,
      namespace: 'prod',
      name: 'Data',
      capacityMinBytes: 1024,
      capacityMaxBytes: 4096,
      mountOptions: { fsType: 'ext4', mountFlags: ['noatime'] },
      secrets: { password: 'pw' },
      parameters: { tier: 'fast' },
      context: { zone: 'a' },
      topologyRequest: { required: [{ zone: 'a' }] },
    };
    assert.deepEqual(checkVolumeInput(inputs.volumeRegistrationSchema, input), { ok: true, value: input });
  });

  it('accepts a creation from a snapshot, and an expansion without a limit', () => {
    const fromSnapshot = { ...creation, contentSource: { snapshotId: 'snap-1' } };
    assert.deepEqual(checkVolumeInput(inputs.volumeCreationSchema, fromSnapshot), { ok: true, value: fromSnapshot });
    assert.deepEqual(checkVolumeInput(inputs.volumeExpansionSchema, { requiredBytes: 1 << 20, limitBytes: null }), { ok: true, value: { requiredBytes: 1 << 20, limitBytes: null } });
  });
});
