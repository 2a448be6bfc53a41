// The structs layer: plain types shared by the client and the server, which
// never import each other and talk over the wire.
export type { CsiPluginType, CsiPluginReport, NodeEvent } from './csi-plugin-report.js';
export type { NodeStatus, DriverInfo, Resources, NodeFingerprint, Node } from './node.js';
export {
  isClientTerminal,
  type AllocDesiredStatus,
  type AllocClientStatus,
  type TaskState,
  type Allocation,
} from './allocation.js';
export {
  jobSpecSchema,
  parseJobSpec,
  durationMs,
  formatPath,
  volumeIsReadOnly,
  volumeIdFor,
  JobValidationError,
  SERVER_JOB_FIELDS,
  type JobSpec,
  type JobSpecInput,
  type Job,
  type JobStatus,
  type JobType,
  type JobProblem,
  type TaskGroup,
  type Task,
  type GroupVolume,
  type VolumeMount,
  type RestartPolicy,
  type ReschedulePolicy,
} from './job.js';
export {
  describePlacementFailure,
  type Evaluation,
  type EvalStatus,
  type EvalTrigger,
  type PlacementFailure,
} from './evaluation.js';
