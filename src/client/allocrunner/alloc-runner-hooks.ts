// The allocation runner's hooks, wired (Nomad's alloc_runner_hooks.go): for
// each task its task hooks, in Nomad's order, and its TaskRunner; for the
// allocation the prerun stages (drivers present; then the allocation
// directory, network and host volumes beside the CSI volumes), and the
// postrun and destroy hooks. AllocRunner runs them; this file says which.

import type { BackoffPolicy, Clock, Logger } from '../../lib/index.js';
import { durationMs, type Task, type TaskGroup } from '../../structs/index.js';
import type { AllocDir, TaskDir } from '../allocdir/index.js';
import { ArtifactHook } from '../artifact/index.js';
import { TemplateHook } from '../template/index.js';
import { taskUserIds } from '../drivers/index.js';
import { IdentityError, IdentityHook, PluginSupervisorHook, TaskRunner, type TaskHook } from '../taskrunner/index.js';
import { AllocRunnerError, type AllocHook, type ResolvedVolume } from './alloc-hook.js';
import type { AllocRunnerRecord } from './alloc-records.js';
import type { AllocRunnerOptions } from './alloc-runner-options.js';
import { CsiHook } from './csi-hook.js';
import { DispatchPayloadHook } from './dispatch-payload-hook.js';
import { HostVolumeHook } from './host-volume-hook.js';
import { NetworkHook } from './network-hook.js';
import type { PrerunStage } from './prerun-stages.js';
import { singleWriterVolumes } from './single-writer.js';
import { TaskDirHook } from './task-dir-hook.js';
import { isEphemeral } from './task-lifecycle.js';
import { missingDriver, taskEnvBuilder, taskPorts } from './task-setup.js';
import { VolumeBindsHook, VolumeMountsTaskHook } from './volume-mounts-hook.js';

/** What the wiring reads of its allocation runner. */
interface Wiring {
  opts: AllocRunnerOptions;
  group: TaskGroup;
  allocDir: AllocDir;
  /** The runner's durable record (the same object for the runner's life). */
  record: AllocRunnerRecord;
  clock: Clock;
  logger: Logger;
  backoff: BackoffPolicy;
}

/** The retry policy of the runner's prerun and postrun steps (a plugin supervisor's is shorter). */
export function allocRunnerBackoff(opts: AllocRunnerOptions): BackoffPolicy {
  return {
    maxAttempts: Infinity,
    initialDelayMs: opts.retry?.initialDelayMs ?? 500,
    maxDelayMs: opts.retry?.maxDelayMs ?? 15_000,
    multiplier: 2,
    jitter: 0.2,
  };
}

/** Builds a TaskRunner with its hooks for each task of the group, into `tasks` (and the plugin supervisors into `supervisors`). Starts nothing. */
export function wireTaskRunners(w: Wiring & {
  volumes: Map<string, ResolvedVolume>;
  save: () => void;
  taskChanged: () => void;
  /** A task was handed to its driver (TaskRunnerOptions.onHandedOff). */
  handedOff: () => void;
  tasks: Map<string, TaskRunner>;
  supervisors: Map<string, PluginSupervisorHook>;
}): void {
  const { opts, group, allocDir, record, clock, logger, backoff, volumes, save, taskChanged, handedOff, tasks, supervisors } = w;
  const fenceAfterMs = opts.stopAfterServerDisconnectMs && singleWriterVolumes(group, opts.alloc.index ?? 0).length > 0 ? opts.stopAfterServerDisconnectMs : undefined;
  for (const task of group.tasks) {
    const driver = opts.drivers.get(task.driver) ?? missingDriver(task.driver);
    const taskDir = allocDir.task(task.name);
    const env = taskEnvBuilder(opts, group, task, taskDir, driver, () => record.network);
    const hooks: TaskHook[] = [
      new TaskDirHook({ allocDir: allocDir, task: task.name, driver, logger: logger }),
      // Nomad's order: the tokens are in secrets/ and the env before artifacts and templates run.
      ...(task.identities.length ? [identityHook(opts, task, taskDir, clock, logger)] : []),
      // Nomad's order: the payload is in local/ before volumes, artifacts and templates.
      ...(task.dispatchPayload && opts.job.payload ? [new DispatchPayloadHook({ file: task.dispatchPayload.file, payload: opts.job.payload, taskDir })] : []),
      new VolumeMountsTaskHook({ task, driver, taskDir, volumes: volumes, record: record, save: () => save() }),
      // Artifacts before templates: a template's source may be a fetched file.
      new ArtifactHook({ artifacts: task.artifacts, taskDir, allocDir: allocDir.dir, fileRoots: opts.fileRoots, limits: opts.artifactLimits }),
      new TemplateHook({ templates: task.templates, taskDir, allocDir: allocDir.dir, fileRoots: opts.fileRoots, clock: clock, logger: logger.child({ task: task.name }), services: opts.serviceCatalog, namespace: opts.alloc.namespace }),
    ];
    const shutdownDelay = task.shutdownDelay ?? group.shutdownDelay;
    if (task.csiPlugin) {
      const supervisor = new PluginSupervisorHook({
        alloc: opts.alloc,
        // Its fields may use run-time `${...}` (the node's ID in a mount dir, say).
        task: { ...task, csiPlugin: env.build().interpolateAll(task.csiPlugin) },
        driver,
        registry: opts.registry,
        pluginDirRoot: opts.pluginDirRoot,
        clock: clock,
        logger: logger.child({ task: task.name, plugin: task.csiPlugin.id }),
        backoff: { ...backoff, initialDelayMs: Math.min(backoff.initialDelayMs, 100), maxDelayMs: Math.min(backoff.maxDelayMs, 2_000) },
      });
      supervisors.set(task.name, supervisor);
      hooks.push(supervisor);
    }
    tasks.set(
      task.name,
      new TaskRunner({
        alloc: opts.alloc,
        task,
        jobType: opts.job.type,
        restartPolicy: group.restart,
        driver,
        taskDir,
        allocDir: allocDir.dir,
        store: opts.store,
        hooks,
        onChange: () => taskChanged(),
        onHandedOff: handedOff,
        killTimeoutMs: opts.killTimeoutMs ?? 5_000,
        taskEnv: env,
        ephemeral: isEphemeral(task),
        ...(shutdownDelay ? { shutdownDelayMs: durationMs(shutdownDelay) } : {}),
        ...(fenceAfterMs ? { fenceAfterMs } : {}),
        namespace: opts.job.namespace,
        network: () => record.network,
        networkMode: group.network.mode,
        ports: () => taskPorts(record.alloc, group, driver),
        logger: logger,
        clock: clock,
      }),
    );
  }
}

/** The identity hook of a task with `identity` blocks; without a signer (no server), its start fails saying so. */
function identityHook(opts: AllocRunnerOptions, task: Task, taskDir: TaskDir, clock: Clock, logger: Logger): IdentityHook {
  const user = task.user;
  return new IdentityHook({
    task: task.name,
    identities: task.identities,
    taskDir,
    sign: opts.signIdentities ?? (() => Promise.reject(new IdentityError('TASK_IDENTITY_FAILED', 'this node has no server to sign workload identities'))),
    ...(user ? { owner: () => taskUserIds(user) } : {}),
    clock,
    logger: logger.child({ task: task.name }),
  });
}

/** The allocation's hooks: prerun stages, postrun and destroy hooks, and the CSI hook among them. */
export function allocHooks(w: Wiring): { csiHook: CsiHook; prerunStages: PrerunStage[]; postrunHooks: AllocHook[]; destroyHooks: AllocHook[] } {
  const { opts, group, allocDir, clock, logger, backoff } = w;
  const drivers: AllocHook = {
    name: 'task-drivers',
    prerun: async () => {
      for (const task of group.tasks) {
        if (!opts.drivers.has(task.driver)) {
          throw new AllocRunnerError('ALLOC_DRIVER_MISSING', `task "${task.name}": task driver "${task.driver}" is not available on this node`);
        }
      }
    },
  };
  const allocDirHook: AllocHook = {
    name: 'alloc-dir',
    prerun: () => allocDir.build(group.tasks.map((t) => t.name)),
    destroy: () => allocDir.destroy(),
  };
  const csiHook = new CsiHook({ csiManager: opts.csiManager, claimer: opts.claimer, clock: clock, logger: logger, backoff });
  const network = new NetworkHook(opts.network, opts.drivers);
  const hostVolumes = new HostVolumeHook(opts.hostVolumes ?? {});
  return {
    csiHook,
    prerunStages: [[[drivers]], [[allocDirHook, network, hostVolumes], [csiHook]]],
    postrunHooks: [new VolumeBindsHook(logger), csiHook, hostVolumes, network],
    destroyHooks: [allocDirHook],
  };
}
