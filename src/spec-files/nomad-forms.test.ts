// Nomad's JSON forms as Nomad writes them: the API's job JSON (`{"Job":
// {...}}`, PascalCase, nanosecond durations, defaults filled in, as `nomad
// job inspect` prints it), the API's volume and the JSON volume spec. What
// Berth has no setting for is ignored with a note when Nomad fills it in, and
// refused by name at its line otherwise.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_UPDATE } from '../structs/index.js';
import { parseJobFile, parseVolumeFile, SpecFileError, type FileProblem } from './spec-file.js';

async function problemsOf(p: Promise<unknown>): Promise<string[]> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof SpecFileError, `expected SpecFileError, got ${String(err)}`);
    return err.problems.map((q: FileProblem) => `${q.line}:${q.column} ${q.field}: ${q.message}`);
  }
  assert.fail('the file was accepted');
}

// What `nomad job inspect` prints for a small job (trimmed of nothing that matters here).
const INSPECTED = JSON.stringify(
  {
    Job: {
      Region: 'global',
      Namespace: 'default',
      ID: 'web',
      Name: 'web',
      Type: 'service',
      Priority: 50,
      AllAtOnce: false,
      Datacenters: ['dc1'],
      NodePool: 'default',
      Constraints: null,
      Affinities: null,
      Spreads: null,
      TaskGroups: [
        {
          Name: 'app',
          Count: 2,
          Update: { Stagger: 30000000000, MaxParallel: 1, HealthCheck: 'checks' },
          Migrate: { MaxParallel: 1, HealthCheck: 'checks' },
          Constraints: null,
          RestartPolicy: { Attempts: 2, Interval: 1800000000000, Delay: 15000000000, Mode: 'fail', RenderTemplates: false },
          ReschedulePolicy: { Attempts: 0, Interval: 0, Delay: 30000000000, Unlimited: true },
          EphemeralDisk: { Sticky: false, SizeMB: 300, Migrate: false },
          Networks: [{ Mode: 'host', ReservedPorts: null, DynamicPorts: null, MBits: 0 }],
          Volumes: {
            data: {
              Name: 'data',
              Type: 'csi',
              Source: 'shared',
              ReadOnly: false,
              AccessMode: 'single-node-writer',
              AttachmentMode: 'file-system',
              MountOptions: { FSType: 'ext4', MountFlags: null },
              PerAlloc: false,
            },
          },
          Tasks: [
            {
              Name: 'server',
              Driver: 'raw_exec',
              User: '',
              Config: { command: '/bin/sleep', args: ['3600'] },
              Env: { MODE: 'prod' },
              Services: null,
              Vault: null,
              Templates: null,
              Constraints: null,
              Resources: { CPU: 200, Cores: 0, MemoryMB: 128, MemoryMaxMB: 0, DiskMB: 0, IOPS: 0, Networks: null, Devices: null },
              VolumeMounts: [{ Volume: 'data', Destination: '/data', ReadOnly: false, PropagationMode: 'private' }],
              LogConfig: { MaxFiles: 3, MaxFileSizeMB: 5, Disabled: false },
              Artifacts: null,
              Leader: false,
              KillTimeout: 5000000000,
              ShutdownDelay: 0,
              KillSignal: '',
              Meta: null,
              Kind: '',
            },
          ],
        },
      ],
      Update: { Stagger: 30000000000, MaxParallel: 1 },
      Periodic: null,
      ParameterizedJob: null,
      Payload: null,
      Meta: null,
      Stop: false,
      Status: 'running',
      Stable: true,
      Version: 3,
      SubmitTime: 1700000000000000000,
      CreateIndex: 10,
      ModifyIndex: 40,
      JobModifyIndex: 40,
    },
  },
  null,
  2,
);

describe("Nomad's API job JSON", () => {
  it("reads what nomad job inspect prints: fields renamed, durations from nanoseconds, Nomad's defaults that Berth means by leaving a field out read as unset", async () => {
    const parsed = await parseJobFile('web.json', INSPECTED);
    assert.equal(parsed.job.id, 'web');
    assert.deepEqual(parsed.job.datacenters, ['dc1']);
    const group = parsed.job.groups[0]!;
    assert.equal(group.count, 2);
    assert.deepEqual(group.restart, { attempts: 2, interval: '30m', delay: '15s', mode: 'fail' });
    assert.equal(group.network.mode, 'host');
    assert.deepEqual(group.volumes['data'], {
      type: 'csi',
      source: 'shared',
      readOnly: false,
      accessMode: 'single-node-writer',
      attachmentMode: 'file-system',
      mountOptions: { fsType: 'ext4', mountFlags: [] },
      perAlloc: false,
    });
    const task = group.tasks[0]!;
    assert.deepEqual(task.config, { command: '/bin/sleep', args: ['3600'] });
    assert.deepEqual(task.resources, { cpuMhz: 200, memoryMb: 128 });
    assert.deepEqual(task.volumeMounts, [{ volume: 'data', destination: '/data', readOnly: false, propagationMode: 'private' }]);
    assert.deepEqual(task.logs, { disabled: false, maxFiles: 3, maxFileSizeMb: 5 });
    // Update: durations from nanoseconds, the job's block merged under the group's, Nomad's defaults for the rest.
    assert.deepEqual(group.update, { ...DEFAULT_UPDATE, maxParallel: 1, healthCheck: 'checks', staggerMs: 30_000 });
    assert.deepEqual(group.migrate, { maxParallel: 1, healthCheck: 'checks', minHealthyTimeMs: 10_000, healthyDeadlineMs: 300_000 }, 'Migrate is read, its unset durations defaulted');
    // Name (the ID), EphemeralDisk (300 MB) and KillTimeout (5s) are Nomad's Canonicalize at work: the same job without them.
    assert.equal(parsed.job.name, undefined);
    assert.equal(group.ephemeralDisk, undefined);
    assert.equal(task.killTimeout, undefined);
    assert.deepEqual(parsed.notes, []);
  });

  it('refuses what Berth does not support by name, at its line, sorted', async () => {
    const text = `{
  "Job": {
    "ID": "web",
    "NodePool": "gpu",
    "TaskGroups": [{
      "Name": "app",
      "Constraints": [{"LTarget": "\${attr.kernel.name}", "RTarget": "linux", "Operand": "="}],
      "Tasks": [{
        "Name": "server",
        "Driver": "raw_exec",
        "Vault": {"Policies": ["x"]},
        "Frobnicate": 1
      }]
    }]
  }
}`;
    assert.deepEqual(await problemsOf(parseJobFile('web.json', text)), [
      '4:5 Job.NodePool: Berth has no node pools; leave NodePool out (or "default")',
      '11:9 Job.TaskGroups[0].Tasks[0].Vault: Berth does not support Vault; remove "Vault"',
      '12:9 Job.TaskGroups[0].Tasks[0].Frobnicate: unknown field "Frobnicate" (not part of Nomad\'s job or volume JSON that Berth reads)',
    ]);
  });

  it("points schema errors at the Nomad field's line", async () => {
    const text = '{"Job": {\n  "ID": "web",\n  "TaskGroups": [{\n    "Name": "app",\n    "Count": -1,\n    "Tasks": [{"Name": "t", "Driver": "raw_exec"}]\n  }]\n}}';
    assert.deepEqual(await problemsOf(parseJobFile('web.json', text)), [
      '5:5 groups[0].count: must be at least 0',
      '6:15 groups[0].tasks[0].config.command: is required: the program to run (a path, or a name found on PATH) (driver raw_exec)',
    ]);
  });

  it('reads periodic, parameterized and dispatch_payload', async () => {
    const text = JSON.stringify({
      Job: {
        ID: 'enc',
        Type: 'batch',
        ParameterizedJob: { Payload: 'required', MetaRequired: ['who'], MetaOptional: null },
        TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/cat' }, DispatchPayload: { File: 'in.txt' } }] }],
      },
    });
    const { job } = await parseJobFile('enc.json', text);
    assert.deepEqual(job.parameterized, { payload: 'required', metaRequired: ['who'], metaOptional: [] });
    assert.deepEqual(job.groups[0]!.tasks[0]!.dispatchPayload, { file: 'in.txt' });
    const cron = await parseJobFile('p.json', JSON.stringify({ Job: { ID: 'p', Type: 'batch', Periodic: { Enabled: true, Spec: '*/5 * * * *', SpecType: 'cron', ProhibitOverlap: true, TimeZone: 'UTC' }, TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/true' } }] }] } }));
    assert.deepEqual(cron.job.periodic, { cron: '*/5 * * * *', prohibitOverlap: true, timeZone: 'UTC', enabled: true });
  });

  it("reads a task's run-time fields under the schema's names: user, meta, kill and shutdown, lifecycle, templates, artifacts, reschedule's delay function", async () => {
    const doc = JSON.parse(INSPECTED) as { Job: { TaskGroups: Array<Record<string, unknown> & { Tasks: Array<Record<string, unknown>> }> } };
    const group = doc.Job.TaskGroups[0]!;
    group['ReschedulePolicy'] = { Attempts: 1, Interval: 3600000000000, Delay: 30000000000, DelayFunction: 'exponential', MaxDelay: 600000000000, Unlimited: false };
    group['ShutdownDelay'] = 2000000000;
    const main = group.Tasks[0]!;
    Object.assign(main, {
      User: 'nobody',
      Meta: { tier: 'web' },
      KillTimeout: 10000000000,
      KillSignal: 'SIGINT',
      ShutdownDelay: 1000000000,
      Templates: [{ SourcePath: '', DestPath: 'local/app.conf', EmbeddedTmpl: 'port={{ env "NOMAD_TASK_NAME" }}', ChangeMode: 'restart', ChangeSignal: '', Splay: 5000000000, Perms: '0644', Envvars: false, LeftDelim: '{{', RightDelim: '}}', Uid: null, Gid: null, ErrMissingKey: false, Once: false }],
      Artifacts: [{ GetterSource: '/srv/app.tgz', RelativeDest: 'local/', GetterOptions: null, GetterMode: 'any', GetterHeaders: null, GetterInsecure: false }],
    });
    group.Tasks.push({ Name: 'setup', Driver: 'raw_exec', Config: { command: '/bin/true' }, Lifecycle: { Hook: 'prestart', Sidecar: false } });
    const parsed = await parseJobFile('web.json', JSON.stringify(doc, null, 2));
    const g = parsed.job.groups[0]!;
    assert.equal(g.reschedule?.delayFunction, 'exponential');
    assert.equal(g.reschedule?.maxDelay, '10m');
    assert.equal(g.shutdownDelay, '2s');
    const [server, setup] = g.tasks;
    assert.equal(server!.user, 'nobody');
    assert.deepEqual(server!.meta, { tier: 'web' });
    assert.equal(server!.killTimeout, '10s');
    assert.equal(server!.killSignal, 'SIGINT');
    assert.equal(server!.shutdownDelay, '1s');
    assert.equal(server!.templates.length, 1);
    assert.equal(server!.templates[0]!.destination, 'local/app.conf');
    assert.equal(server!.templates[0]!.splay, '5s');
    assert.deepEqual(server!.artifacts, [{ source: '/srv/app.tgz', destination: 'local/', mode: 'any', options: {}, headers: {} }]);
    assert.deepEqual(setup!.lifecycle, { hook: 'prestart', sidecar: false });
  });
});

describe("Nomad's volume forms", () => {
  it("reads the API's CSIVolume ({\"Volumes\": [...]})", async () => {
    const text = JSON.stringify({
      Volumes: [
        {
          ID: 'db',
          Name: 'db',
          PluginID: 'ebs',
          ExternalID: 'vol-1',
          RequestedCapabilities: [{ AccessMode: 'single-node-writer', AttachmentMode: 'file-system' }],
          RequestedTopologies: { Required: [{ Segments: { rack: 'R1' } }] },
          Secrets: { token: 'x' },
          Schedulable: true,
          CreateIndex: 4,
        },
      ],
    });
    const { volume } = await parseVolumeFile('db.json', text, 'register');
    assert.deepEqual(volume, {
      id: 'db',
      name: 'db',
      pluginId: 'ebs',
      externalId: 'vol-1',
      capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }],
      secrets: { token: 'x' },
      topologyRequest: { required: [{ rack: 'R1' }] },
    });
  });

  it('reads the JSON volume spec (the HCL in JSON syntax), with errors at their line', async () => {
    const json = '{"id": "v", "plugin_id": "p", "capacity_min": "1MiB", "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}], "context": {"owner": "me"}}';
    const hclText = 'id = "v"\nplugin_id = "p"\ncapacity_min = "1MiB"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\ncontext {\n  owner = "me"\n}\n';
    const { volume } = await parseVolumeFile('volume.json', json, 'create');
    assert.deepEqual(volume, (await parseVolumeFile('volume.hcl', hclText, 'create')).volume);
    assert.deepEqual(volume.context, { owner: 'me' });
    const bad = '{\n  "id": "v",\n  "plugin_id": "p",\n  "capability": [\n    {"access_mode": "single-node-writer", "attachment_mode": "file-system"},\n    {"access_mode": "sometimes", "attachment_mode": "file-system"}\n  ]\n}';
    const problems = await problemsOf(parseVolumeFile('v.json', bad, 'create'));
    assert.equal(problems.length, 1);
    assert.match(problems[0] as string, /^6:6 capabilities\[1\]\.accessMode: must be one of "single-node-writer", /);
  });

  it("reads topology lists as `volume init -json` writes them (one required block per topology)", async () => {
    const json = JSON.stringify({
      id: 'v',
      plugin_id: 'p',
      capability: [{ access_mode: 'single-node-writer', attachment_mode: 'file-system' }],
      topology_request: {
        preferred: [{ topology: { segments: { rack: 'R1' } } }],
        required: [{ topology: { segments: { rack: 'R1' } } }, { topology: { segments: { rack: 'R2', zone: 'us-east-1a' } } }],
      },
    }, null, 2);
    const { volume } = await parseVolumeFile('volume.json', json, 'create');
    assert.deepEqual(volume.topologyRequest, { required: [{ rack: 'R1' }, { rack: 'R2', zone: 'us-east-1a' }], preferred: [{ rack: 'R1' }] });
  });

  it('accepts a task\'s deprecated resources { disk } and drops it with a note, as Nomad does', async () => {
    const text = 'job "web" {\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/true"\n      }\n      resources {\n        cpu  = 100\n        disk = 300\n      }\n    }\n  }\n}\n';
    const { job, notes } = await parseJobFile('web.hcl', text);
    assert.equal(JSON.stringify(job.groups[0]!.tasks[0]!.resources).includes('disk'), false, 'not stored');
    assert.deepEqual(notes, ["web.hcl:10:9: resources.disk: deprecated and ignored, as Nomad does (the group's ephemeral_disk sizes the disk)"]);
  });

  it('takes the legacy top-level access_mode and attachment_mode', async () => {
    const text = 'id = "v"\nplugin_id = "p"\naccess_mode = "multi-node-reader-only"\nattachment_mode = "file-system"\n';
    const { volume } = await parseVolumeFile('v.hcl', text, 'create');
    assert.deepEqual(volume.capabilities, [{ accessMode: 'multi-node-reader-only', attachmentMode: 'file-system' }]);
    assert.deepEqual(await problemsOf(parseVolumeFile('v.hcl', 'id = "v"\nplugin_id = "p"\naccess_mode = "single-node-writer"\n', 'create')), [
      '3:1 access_mode: the top-level access_mode needs attachment_mode beside it (the pair is one capability), or use capability blocks',
    ]);
  });

  it("register ignores snapshot_id and clone_id with a note (Nomad's volume init output registers); create sends them", async () => {
    const text = 'id = "v"\nplugin_id = "p"\nexternal_id = "e"\nsnapshot_id = "snap-12345"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n';
    const reg = await parseVolumeFile('v.hcl', text, 'register');
    assert.equal(reg.volume.contentSource, undefined);
    assert.deepEqual(reg.notes, ['v.hcl:4:1: snapshot_id: ignored by volume register, as Nomad does (it applies to volume create)']);
    const created = await parseVolumeFile('v.hcl', text.replace('external_id = "e"\n', ''), 'create');
    assert.deepEqual(created.volume.contentSource, { snapshotId: 'snap-12345' });
  });
});
