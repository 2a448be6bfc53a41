// Nomad's Job JSON both ways, as a Nomad client sees it: what Berth does not
// support is refused by name at its Nomad path (as the job's own checks
// are), a stored job answers as Nomad's server answers (every field of
// Nomad's shape, no more, no less), and its list row and summary count what
// the job runs.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseJobFile } from '../spec-files/index.js';
import { Job as NomadJob, JobListStub, JobSummary } from '../api/index.js';
import type { Allocation } from './allocation.js';
import { parseJobSpec, JobValidationError } from './job-parse.js';
import { publicJob, specOfJob, type Job } from './stored-job.js';
import { nomadJobToSpec, readNomadJobQuick, specToNomadJob } from './nomad-job.js';
import { jobListStub, jobSummary, jobToNomad } from './nomad-job-stored.js';
import { atNomadPaths, fromNomadPaths } from './nomad-table.js';

const SPEC = parseJobSpec({
  id: 'web',
  meta: { team: 'a' },
  groups: [
    {
      name: 'app',
      count: 2,
      network: { ports: [{ label: 'http' }] },
      services: [{ name: 'web', port: 'http', checks: [{ type: 'http', path: '/', interval: '10s', timeout: '2s' }] }],
      volumes: { data: { type: 'csi', source: 'db', mountOptions: { fsType: 'ext4', mountFlags: ['password=hunter2'] } } },
      tasks: [{ name: 'server', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['60'] }, volumeMounts: [{ volume: 'data', destination: '/data' }] }],
    },
  ],
});

/** The job as Nomad's JSON, for tests to add to. */
function nomadJob(): NomadJob {
  return specToNomadJob(SPEC, { canonicalize: true });
}
/** Part of a Nomad block, as a hand-written body gives it. */
const part = <T>(fields: NoInfer<Partial<T>>): T => fields as T;

const STORED: Job = {
  ...SPEC,
  stop: false,
  status: 'running',
  version: 3,
  groupVersions: { app: 3 },
  submitTime: 1_700_000_000_123,
  submitIndex: 40,
  createIndex: 10,
  modifyIndex: 42,
};

describe('reading Nomad job JSON', () => {
  it('refuses each field Nomad has and Berth does not, by name at its Nomad path', () => {
    const job = nomadJob();
    const group = job.TaskGroups![0]!;
    const task = group.Tasks![0]!;
    job.Multiregion = part({ Strategy: { MaxParallel: 1, OnFailure: '' }, Regions: [] });
    job.NodePool = 'gpu';
    group.Services![0]!.Connect = part({ Native: true });
    group.Services![0]!.Checks![0]!.GRPCService = 'health';
    task.Vault = part({ Policies: ['db'] });
    task.Resources!.Devices = [part({ Name: 'nvidia/gpu', Count: 1 })];
    task.RestartPolicy = { ...group.RestartPolicy!, Attempts: 9 };
    Object.assign(task, { Frobnicate: 1 });
    const { problems } = nomadJobToSpec({ Job: job });
    assert.deepEqual(
      problems.map((p) => `${p.path}: ${p.message}`).sort(),
      [
        'Job.Multiregion: Berth does not support multiregion jobs; remove "Multiregion"',
        'Job.NodePool: Berth has no node pools; leave NodePool out (or "default")',
        'Job.TaskGroups[0].Services[0].Checks[0].GRPCService: Berth does not support grpc checks; remove "GRPCService"',
        'Job.TaskGroups[0].Services[0].Connect: Berth does not support Consul Connect; remove "Connect"',
        'Job.TaskGroups[0].Tasks[0].Frobnicate: unknown field "Frobnicate" (not part of Nomad\'s job or volume JSON that Berth reads)',
        'Job.TaskGroups[0].Tasks[0].Resources.Devices: Berth does not support devices; remove "Devices"',
        'Job.TaskGroups[0].Tasks[0].RestartPolicy: Berth does not support a restart block on a task (give it to the group); remove "RestartPolicy"',
        'Job.TaskGroups[0].Tasks[0].Vault: Berth does not support Vault; remove "Vault"',
      ],
    );
  });

  it("reads the job's Reschedule block under each group's, and reports an ambiguous one at its Nomad path", () => {
    const job = nomadJob();
    job.Type = 'batch';
    job.Reschedule = part({ Attempts: 4, Delay: 10_000_000_000 });
    job.TaskGroups![0]!.ReschedulePolicy = null;
    const read = nomadJobToSpec({ Job: job });
    assert.deepEqual(read.problems, []);
    assert.deepEqual(parseJobSpec(read.input).groups[0]!.reschedule, { attempts: 4, interval: '24h', delay: '10s', unlimited: false, delayFunction: 'constant', maxDelay: '0s' });
    job.Reschedule = part({ Attempts: 4, Unlimited: true });
    const ambiguous = nomadJobToSpec({ Job: job });
    const err = (() => {
      try {
        parseJobSpec(ambiguous.input);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    assert.ok(err instanceof JobValidationError);
    assert.deepEqual(atNomadPaths(ambiguous, err.problems).map((p) => p.path), ['Job.Reschedule.Unlimited']);
  });

  it("reports the job's own checks at the Nomad path of the field that failed", () => {
    const job = nomadJob();
    const group = job.TaskGroups![0]!;
    group.Services![0]!.Provider = 'consul';
    group.Count = -1;
    group.Tasks![0]!.Config = { args: ['x'] };
    const t = nomadJobToSpec({ Job: job });
    assert.deepEqual(t.problems, []);
    const err = (() => {
      try {
        parseJobSpec(t.input);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    assert.ok(err instanceof JobValidationError);
    assert.deepEqual(atNomadPaths(t, err.problems).map((p) => p.path).sort(), ['Job.TaskGroups[0].Count', 'Job.TaskGroups[0].Services[0].Provider']);
    assert.deepEqual(atNomadPaths(t, [{ path: 'groups[0].tasks[0].config.command', message: 'is required' }]), [{ path: 'Job.TaskGroups[0].Tasks[0].Config.command', message: 'is required' }]);
    // And back: a server's problem at a Nomad path, at the canonical path a job file locates.
    assert.deepEqual(fromNomadPaths(t, [{ path: 'Job.TaskGroups[0].Tasks[0].VolumeMounts[0].Volume', message: 'x' }]), [{ path: 'groups[0].tasks[0].volumeMounts[0].volume', message: 'x' }]);
    assert.deepEqual(atNomadPaths(nomadJobToSpec(job as unknown as Record<string, unknown>), [{ path: 'groups[0].count', message: 'x' }]), [{ path: 'TaskGroups[0].Count', message: 'x' }], 'a bare job object has bare paths');
  });

  it('takes what a Nomad client leaves out (a hand-written body) as unset', () => {
    const t = nomadJobToSpec({ Job: { ID: 'tiny', TaskGroups: [{ Name: 'g', Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/true' } }] }] } });
    assert.deepEqual(t.problems, []);
    assert.deepEqual(t.input, { id: 'tiny', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }] });
  });
});

describe('the quick read of a registration', () => {
  /** A translation as plain data, its origins in their order. */
  const plain = (t: ReturnType<typeof nomadJobToSpec>): unknown => ({ ...t, origins: [...t.origins] });

  /** Jobs of every shape: the examples and the CLI's corpus as Nomad writes them, and ones Berth refuses. */
  async function bodies(): Promise<Array<{ what: string; doc: Record<string, unknown> }>> {
    const out: Array<{ what: string; doc: Record<string, unknown> }> = [];
    for (const dir of ['../../examples/', '../../examples/docker/', '../../test/nomad-corpus/'].map((d) => new URL(d, import.meta.url))) {
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.hcl')).sort()) {
        try {
          const { job } = await parseJobFile(file, readFileSync(join(dir.pathname, file), 'utf8'), { vars: [], varFiles: [], env: {}, allowFS: false });
          out.push({ what: file, doc: { Job: specToNomadJob(job) } }, { what: `${file}, canonical`, doc: { Job: specToNomadJob(job, { canonicalize: true }) } });
        } catch {
          // A volume file, or a job that needs variables or files.
        }
      }
    }
    const ports = nomadJob();
    ports.TaskGroups![0]!.Networks = [part({ Mode: 'bridge', ReservedPorts: [part({ Label: 'a', Value: 8080 })], DynamicPorts: [part({ Label: 'b' }), part({ Label: 'c', To: 9 })] })];
    out.push({ what: 'static and dynamic ports', doc: { Job: ports } });
    const refused = nomadJob();
    refused.Multiregion = part({ Strategy: { MaxParallel: 1, OnFailure: '' }, Regions: [] });
    refused.TaskGroups![0]!.Networks = [part({ Mode: 'host' }), part({ Mode: 'bridge' })];
    Object.assign(refused.TaskGroups![0]!.Tasks![0]!, { Frobnicate: 1, Identities: [{ Name: 'vault', Audience: ['v'], Shape: 2 }] });
    out.push({ what: 'refused fields', doc: { Job: refused } });
    // Clearing the defaults twice would drop this task's restart block (equal to its group's once the group's RenderTemplates is cleared).
    const restart = nomadJob();
    restart.TaskGroups![0]!.RestartPolicy = { ...restart.TaskGroups![0]!.RestartPolicy!, RenderTemplates: false };
    restart.TaskGroups![0]!.Tasks![0]!.RestartPolicy = { ...restart.TaskGroups![0]!.RestartPolicy!, RenderTemplates: null as unknown as boolean };
    out.push({ what: "a task's restart block", doc: { Job: restart } });
    out.push({ what: 'a bare job object', doc: nomadJob() as unknown as Record<string, unknown> });
    return out;
  }

  it('reads the same job as nomadJobToSpec, and reads it again with the same paths and problems, from the body it consumed', async () => {
    const cases = await bodies();
    assert.ok(cases.length > 20, `${cases.length} jobs`);
    for (const { what, doc } of cases) {
      const full = nomadJobToSpec(structuredClone(doc));
      const quick = readNomadJobQuick(structuredClone(doc));
      const consumed = readNomadJobQuick(structuredClone(doc), { consume: true });
      for (const q of [quick, consumed]) {
        assert.deepEqual(q.input, full.input, what);
        assert.equal(q.clean, full.problems.length === 0, what);
        assert.deepEqual(plain(q.full()), plain(full), what);
        assert.equal(q.full(), q.full(), 'read again once');
      }
    }
    const refusals = (what: string): string[] => nomadJobToSpec(structuredClone(cases.find((c) => c.what === what)!.doc)).problems.map((p) => p.path);
    assert.deepEqual(refusals("a task's restart block"), ['Job.TaskGroups[0].Tasks[0].RestartPolicy']);
    assert.deepEqual(refusals('refused fields').sort(), ['Job.Multiregion', 'Job.TaskGroups[0].Networks[1]', 'Job.TaskGroups[0].Tasks[0].Frobnicate', 'Job.TaskGroups[0].Tasks[0].Identities[0].Shape']);
  });
});

describe('a stored job as Nomad answers it', () => {
  it("is Nomad's Job, canonical, with the server's fields and the mount flags redacted", () => {
    const answer = jobToNomad(STORED, { stable: true });
    NomadJob.parse(answer);
    assert.deepEqual(
      { Status: answer.Status, Stop: answer.Stop, Stable: answer.Stable, Version: answer.Version, SubmitTime: answer.SubmitTime },
      { Status: 'running', Stop: false, Stable: true, Version: 3, SubmitTime: 1_700_000_000_123_000_000 },
    );
    assert.deepEqual({ CreateIndex: answer.CreateIndex, ModifyIndex: answer.ModifyIndex, JobModifyIndex: answer.JobModifyIndex }, { CreateIndex: 10, ModifyIndex: 42, JobModifyIndex: 40 });
    assert.equal(answer.Name, 'web');
    assert.deepEqual(answer.TaskGroups![0]!.Volumes!['data']!.MountOptions, { FSType: 'ext4', MountFlags: ['[REDACTED]'] });
  });

  it('reads back as its own spec (a canonical answer sent back is the same job)', () => {
    const t = nomadJobToSpec({ Job: jobToNomad(STORED) });
    assert.deepEqual(t.problems, []);
    assert.deepEqual(t.ignored, []);
    // Mount flags come back redacted: an answer never carries them.
    assert.deepEqual(parseJobSpec(t.input), publicJob(specOfJob(STORED)));
  });

  it('lists as a JobListStub, with its summary and, when asked, its meta', () => {
    const alloc = (clientStatus: Allocation['clientStatus'], taskGroup = 'app'): Allocation => ({ id: clientStatus, namespace: 'default', jobId: 'web', taskGroup, clientStatus }) as Allocation;
    const summary = jobSummary(STORED, [alloc('running'), alloc('running'), alloc('pending'), alloc('failed'), alloc('lost'), alloc('complete'), alloc('running', 'gone')], { queued: { app: 1 } });
    JobSummary.parse(summary);
    assert.deepEqual(summary.Summary, { app: { Queued: 1, Complete: 1, Failed: 1, Running: 2, Starting: 1, Lost: 1, Unknown: 0 } });
    assert.deepEqual(summary.Children, { Pending: 0, Running: 0, Dead: 0 });
    const stub = jobListStub(STORED, { summary, meta: true });
    JobListStub.parse(stub);
    assert.deepEqual(stub.Meta, { team: 'a' });
    assert.equal(stub.JobModifyIndex, 40);
    const plain = jobListStub(STORED);
    JobListStub.parse(plain);
    assert.equal(plain.JobSummary, null);
    assert.ok(!('Meta' in plain), 'Meta only with ?meta=true');
  });
});
