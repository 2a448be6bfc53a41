// Berth's stored allocations in Nomad's shapes (src/api/allocations.ts):
// the full Allocation and the AllocationListStub of every list. What Nomad
// keeps on the allocation and Berth keeps elsewhere is looked up in the same
// snapshot: the node's name, the job at the version the allocation runs (its
// type, groups and resources; the Job itself in full), the allocation that
// replaced this one (NextAllocation) and the chain this one replaces
// (RescheduleTracker).

import * as api from '../../api/index.js';
import { jobToNomad, type Allocation, type CheckResult, type Job, type Node, type TaskGroup, type TaskState } from '../../structs/index.js';
import { rowKey, type StateReader } from '../state/index.js';
import { allocMetricOut } from './alloc-metric-shapes.js';

/** Milliseconds since the epoch as Go's time.Time encodes (0: the zero time). */
export function goTime(ms: number | undefined): string {
  return ms ? new Date(ms).toISOString() : api.GO_ZERO_TIME;
}

/** Milliseconds (since the epoch, or a duration) as Go's nanoseconds. */
export function nanos(ms: number | undefined): number {
  return Math.round((ms ?? 0) * 1_000_000);
}

/** Which optional parts a list carries (Nomad's `resources` and `task_states` query parameters). */
export interface StubFields {
  resources: boolean;
  taskStates: boolean;
}

export const DEFAULT_STUB_FIELDS: StubFields = { resources: false, taskStates: true };

/** Per store, which allocation replaced which (previousAllocation read backwards) at one index: one scan shared by every answer at that index. */
const nextAt = new WeakMap<object, { index: number; next: Map<string, string> }>();

/**
 * Converts allocations read from one snapshot, looking up nodes and jobs
 * once each. `store` keys the memo of replacements (any object standing for
 * the store the snapshot is of; the snapshot itself by default). Never throws.
 */
export class AllocShaper {
  readonly #snap: StateReader;
  readonly #memoKey: object;
  readonly #nodes = new Map<string, Node | undefined>();
  readonly #jobs = new Map<string, { job: Job; stable: boolean } | undefined>();
  readonly #nomadJobs = new Map<string, api.Job | null>();

  constructor(snap: StateReader, store?: object) {
    this.#snap = snap;
    this.#memoKey = store ?? snap;
  }

  /** The stub a list shows. */
  stub(a: Allocation, fields: StubFields = DEFAULT_STUB_FIELDS): api.AllocationListStub {
    const job = this.#job(a);
    return {
      ID: a.id,
      EvalID: a.evalId ?? '',
      Name: allocName(a),
      Namespace: a.namespace,
      NodeID: a.nodeId,
      NodeName: this.#node(a.nodeId)?.name ?? '',
      JobID: a.jobId,
      JobType: job?.job.type ?? '',
      JobVersion: a.jobVersion,
      TaskGroup: a.taskGroup,
      // Go omits it when nil: only a list asked for resources carries it.
      ...(fields.resources ? { AllocatedResources: allocatedResources(a, this.#group(a)) } : {}),
      DesiredStatus: a.desiredStatus,
      DesiredDescription: a.desiredDescription,
      ClientStatus: a.clientStatus,
      ClientDescription: a.clientDescription,
      DesiredTransition: desiredTransition(a),
      TaskStates: fields.taskStates ? taskStates(a.taskStates) : null,
      DeploymentStatus: deploymentStatus(a),
      FollowupEvalID: '',
      NextAllocation: this.#next(a.id),
      RescheduleTracker: this.#rescheduleTracker(a),
      PreemptedAllocations: null,
      PreemptedByAllocation: '',
      CreateIndex: a.createIndex,
      ModifyIndex: a.modifyIndex,
      CreateTime: nanos(a.createTime),
      ModifyTime: nanos(a.modifyTime),
    };
  }

  /** The allocation in full. */
  full(a: Allocation): api.Allocation {
    const group = this.#group(a);
    return {
      ID: a.id,
      Namespace: a.namespace,
      EvalID: a.evalId ?? '',
      Name: allocName(a),
      NodeID: a.nodeId,
      NodeName: this.#node(a.nodeId)?.name ?? '',
      JobID: a.jobId,
      Job: this.#nomadJob(a),
      TaskGroup: a.taskGroup,
      Resources: groupResources(a, group),
      TaskResources: group ? Object.fromEntries(group.tasks.map((t) => [t.name, taskResources(t.resources)])) : null,
      AllocatedResources: allocatedResources(a, group),
      Services: null,
      Metrics: a.metrics ? allocMetricOut(a.metrics) : null,
      DesiredStatus: a.desiredStatus,
      DesiredDescription: a.desiredDescription,
      DesiredTransition: desiredTransition(a),
      ClientStatus: a.clientStatus,
      ClientDescription: a.clientDescription,
      TaskStates: taskStates(a.taskStates),
      DeploymentID: a.deploymentId ?? '',
      DeploymentStatus: deploymentStatus(a),
      FollowupEvalID: '',
      PreviousAllocation: a.previousAllocation ?? '',
      NextAllocation: this.#next(a.id),
      RescheduleTracker: this.#rescheduleTracker(a),
      NetworkStatus: a.network?.address ? { InterfaceName: a.network.interface ?? '', Address: a.network.address, AddressIPv6: '', DNS: null } : null,
      PreemptedAllocations: null,
      PreemptedByAllocation: '',
      CreateIndex: a.createIndex,
      ModifyIndex: a.modifyIndex,
      AllocModifyIndex: a.modifyIndex,
      CreateTime: nanos(a.createTime),
      ModifyTime: nanos(a.modifyTime),
      CSIVolumes: a.csiVolumes?.length ? a.csiVolumes.map((v) => ({ VolumeID: v.volumeId, PluginID: v.pluginId, ReadOnly: v.readOnly })) : null,
    };
  }

  /**
   * The job at the version the allocation runs: that version as kept
   * (jobVersions), else the job as stored when it is at that version;
   * undefined once neither is.
   */
  #job(a: Allocation): { job: Job; stable: boolean } | undefined {
    const key = rowKey(a.namespace, a.jobId, String(a.jobVersion).padStart(10, '0'));
    if (!this.#jobs.has(key)) {
      const kept = this.#snap.get('jobVersions', key);
      const current = kept ? undefined : this.#snap.get('jobs', rowKey(a.namespace, a.jobId));
      this.#jobs.set(key, kept ? { job: kept.job, stable: kept.stable } : current && current.version === a.jobVersion ? { job: current, stable: false } : undefined);
    }
    return this.#jobs.get(key);
  }

  /** The Job in Nomad's shape, made once per job version. */
  #nomadJob(a: Allocation): api.Job | null {
    const key = rowKey(a.namespace, a.jobId, String(a.jobVersion));
    if (!this.#nomadJobs.has(key)) {
      const found = this.#job(a);
      this.#nomadJobs.set(key, found ? jobToNomad(found.job, { stable: found.stable }) : null);
    }
    return this.#nomadJobs.get(key) ?? null;
  }

  #node(id: string): Node | undefined {
    if (!this.#nodes.has(id)) this.#nodes.set(id, id ? this.#snap.get('nodes', rowKey(id)) : undefined);
    return this.#nodes.get(id);
  }

  #group(a: Allocation): TaskGroup | undefined {
    return this.#job(a)?.job.groups.find((g) => g.name === a.taskGroup);
  }

  #next(id: string): string {
    const snap = this.#snap;
    const index = snap.tableIndex('allocations');
    let memo = nextAt.get(this.#memoKey);
    if (memo?.index !== index) {
      const next = new Map<string, string>();
      snap.list('allocations', {
        filter: (a) => {
          if (a.previousAllocation) next.set(a.previousAllocation, a.id);
          return false;
        },
      });
      nextAt.set(this.#memoKey, (memo = { index, next }));
    }
    return memo.next.get(id) ?? '';
  }

  /**
   * The allocations this one replaces, oldest first, as far back as they are
   * still stored (at most `rescheduleAttempts`): each with its node and the
   * time its replacement was made.
   */
  #rescheduleTracker(a: Allocation): api.RescheduleTracker | null {
    if (!a.previousAllocation || !a.rescheduleAttempts) return null;
    const events: api.RescheduleEvent[] = [];
    let cur: Allocation | undefined = a;
    while (cur?.previousAllocation && events.length < a.rescheduleAttempts) {
      const prev: Allocation | undefined = this.#snap.get('allocations', rowKey(cur.previousAllocation));
      events.unshift({ RescheduleTime: nanos(cur.createTime), PrevAllocID: cur.previousAllocation, PrevNodeID: prev?.nodeId ?? '' });
      cur = prev;
    }
    return { Events: events, LastReschedule: '' };
  }
}

function allocName(a: Allocation): string {
  return a.name ?? `${a.jobId}.${a.taskGroup}[${a.index ?? 0}]`;
}

function desiredTransition(a: Allocation): api.DesiredTransition {
  const t = a.desiredTransition;
  return { Migrate: t?.migrate ?? null, Reschedule: t?.reschedule ?? null, ForceReschedule: t?.forceReschedule ?? null, NoShutdownDelay: null, MigrateDisablePlacement: null };
}

function deploymentStatus(a: Allocation): api.AllocDeploymentStatus | null {
  const d = a.deploymentStatus;
  if (!d) return null;
  return { Healthy: d.healthy ?? null, Timestamp: goTime(d.timestamp), Canary: d.canary, ModifyIndex: a.modifyIndex };
}

/** Nomad's task state; `LastRestart` is the time of the latest restart event. */
export function taskStates(states: Record<string, TaskState>): Record<string, api.TaskState> {
  const out: Record<string, api.TaskState> = {};
  for (const [name, st] of Object.entries(states)) {
    const lastRestart = [...st.events].reverse().find((e) => e.type === 'Restarting')?.at;
    out[name] = {
      State: st.state,
      Failed: st.failed,
      Restarts: st.restarts,
      LastRestart: goTime(st.restarts ? lastRestart : 0),
      StartedAt: goTime(st.startedAt),
      FinishedAt: goTime(st.finishedAt),
      Events: st.events.map(taskEvent),
    };
  }
  return out;
}

const SIGNALS: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGUSR1: 10, SIGSEGV: 11, SIGUSR2: 12, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15 };

/** A signal name or number as Nomad's TaskEvent.Signal (a number; 0 for none). */
function signalNumber(s: string | undefined): number {
  if (!s) return 0;
  if (/^\d+$/.test(s)) return Number(s);
  return SIGNALS[s.toUpperCase().startsWith('SIG') ? s.toUpperCase() : `SIG${s.toUpperCase()}`] ?? 0;
}

/** camelCase detail keys as Nomad's snake_case ones (exitCode -> exit_code). */
function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** One task event in Nomad's shape: the message is also the display message; the deprecated fields Berth knows are filled. */
export function taskEvent(e: TaskState['events'][number]): api.TaskEvent {
  const d = e.details;
  const details = Object.fromEntries(Object.entries(d).map(([k, v]) => [snake(k), v]));
  return {
    Type: e.type,
    Time: nanos(e.at),
    DisplayMessage: e.message,
    Details: details,
    Message: e.message,
    FailsTask: d['failsTask'] === 'true',
    RestartReason: e.type === 'Restarting' ? e.message : '',
    SetupError: e.type === 'Setup Failure' ? e.message : '',
    DriverError: e.type === 'Driver Failure' ? e.message : '',
    DriverMessage: '',
    ExitCode: Number(d['exitCode'] ?? 0) || 0,
    Signal: e.type === 'Signaling' ? 0 : signalNumber(d['signal']),
    KillReason: e.type === 'Killing' ? e.message : '',
    KillTimeout: 0,
    KillError: '',
    StartDelay: 0,
    DownloadError: '',
    ValidationError: '',
    DiskLimit: 0,
    DiskSize: 0,
    FailedSibling: '',
    VaultError: '',
    TaskSignalReason: e.type === 'Signaling' ? e.message : '',
    TaskSignal: e.type === 'Signaling' ? (d['signal'] ?? '') : '',
    GenericSource: '',
  };
}

/** A task's resources as Nomad's (deprecated) Resources; Berth's fractional `cores` round up to whole cores. */
function taskResources(r: TaskGroup['tasks'][number]['resources']): api.Resources {
  return {
    CPU: r.cpuMhz,
    Cores: r.cores === undefined ? 0 : Math.ceil(r.cores),
    MemoryMB: r.memoryMb,
    MemoryMaxMB: r.memoryMaxMb ?? 0,
    DiskMB: 0,
    Networks: null,
    Devices: null,
    NUMA: null,
    SecretsMB: 0,
    IOPS: 0,
  };
}

function diskMb(group: TaskGroup | undefined): number {
  return group?.ephemeralDisk?.size ?? 300;
}

/** The group's resources summed (what the scheduler counts), with its disk. */
function groupResources(a: Allocation, group: TaskGroup | undefined): api.Resources {
  return {
    CPU: a.resources?.cpuMhz ?? 0,
    Cores: 0,
    MemoryMB: a.resources?.memoryMb ?? 0,
    MemoryMaxMB: 0,
    DiskMB: diskMb(group),
    Networks: groupNetworks(a, group),
    Devices: null,
    NUMA: null,
    SecretsMB: 0,
    IOPS: 0,
  };
}

/**
 * A port's To as Nomad reports it: the `to` the job wrote (-1: the host
 * port; none: 0), in every network mode. Berth's own record says where the
 * task listens (the host port in host mode, for drivers without a port map),
 * which is not what Nomad's API says.
 */
function nomadTo(p: NonNullable<Allocation['ports']>[number], group: TaskGroup | undefined): number {
  if (!group) return p.to;
  const to = group.network.ports.find((q) => q.label === p.label)?.to;
  return to === undefined ? 0 : to === -1 ? p.value : to;
}

/** The group network with the allocation's ports: static ones as reserved, the others as dynamic. */
function groupNetworks(a: Allocation, group: TaskGroup | undefined): api.NetworkResource[] | null {
  const mode = group?.network.mode ?? a.network?.mode;
  if (!mode && !a.ports?.length) return null;
  const statics = new Set((group?.network.ports ?? []).filter((p) => p.static !== undefined).map((p) => p.label));
  const hostNetworks = new Map((group?.network.ports ?? []).map((p) => [p.label, p.hostNetwork ?? 'default']));
  const port = (p: NonNullable<Allocation['ports']>[number]): api.Port => ({ Label: p.label, Value: p.value, To: nomadTo(p, group), HostNetwork: hostNetworks.get(p.label) ?? 'default', IgnoreCollision: false });
  const dns = group?.network.dns;
  return [
    {
      Mode: mode ?? 'host',
      Device: '',
      CIDR: '',
      IP: a.ports?.[0]?.hostIp ?? '',
      DNS: dns ? { Servers: dns.servers, Searches: dns.searches, Options: dns.options } : null,
      ReservedPorts: (a.ports ?? []).filter((p) => statics.has(p.label)).map(port),
      DynamicPorts: (a.ports ?? []).filter((p) => !statics.has(p.label)).map(port),
      Hostname: '',
      MBits: 0,
      CNI: null,
    },
  ];
}

function allocatedResources(a: Allocation, group: TaskGroup | undefined): api.AllocatedResources {
  return {
    Tasks: group
      ? Object.fromEntries(
          group.tasks.map((t) => [
            t.name,
            { Cpu: { CpuShares: t.resources.cpuMhz }, Memory: { MemoryMB: t.resources.memoryMb, MemoryMaxMB: t.resources.memoryMaxMb ?? 0 }, Networks: null, Devices: null },
          ]),
        )
      : null,
    Shared: {
      DiskMB: diskMb(group),
      Networks: groupNetworks(a, group),
      Ports: a.ports?.length ? a.ports.map((p) => ({ Label: p.label, Value: p.value, To: nomadTo(p, group), HostIP: p.hostIp })) : null,
    },
  };
}

const CHECK_STATUS: Record<string, string> = { passing: 'success', critical: 'failure' };

/**
 * An allocation's latest check results (`checks`, by check ID) as Nomad's
 * AllocCheckStatuses; `group` is the allocation's task group. Berth's
 * `warning` keeps its name (Nomad has none). Pure.
 */
export function checkStatuses(checks: Readonly<Record<string, CheckResult>> | undefined, group: string): api.AllocCheckStatuses {
  const out: api.AllocCheckStatuses = {};
  for (const [id, c] of Object.entries(checks ?? {})) {
    out[id] = {
      ID: id,
      Check: c.name,
      Group: group,
      Mode: 'healthiness',
      Output: c.output,
      Service: c.service,
      Task: c.task ?? '',
      Status: CHECK_STATUS[c.status] ?? c.status,
      StatusCode: 0,
      Timestamp: Math.floor(c.at / 1000),
    };
  }
  return out;
}
