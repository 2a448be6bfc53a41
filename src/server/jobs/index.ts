// Jobs, allocations and evaluations: registration, stop/purge, allocation
// status from nodes, and the worker that re-evaluates jobs as nodes, claims
// and allocations change.
export { JobService, JobError, type JobServiceOptions, type AllocationUpdate, type RegisterResult, type LaunchResult } from './job-service.js';
export { PeriodicDispatcher, type PeriodicDispatcherOptions } from './periodic-dispatcher.js';
export type { DispatchRequest } from './child-jobs.js';
export { EvalWorker, type EvalWorkerOptions } from './eval-worker.js';
export { problemsAgainstState } from './validate-job.js';
export { jobStatusOf } from './evaluate.js';
export { jobSummaryIn, jobSummariesIn, queuedAllocations } from './job-summary.js';
export {
  GarbageCollector,
  collectGarbage,
  isCollectable,
  DEFAULT_GC_LIMITS,
  type GarbageCollectorOptions,
  type GcLimits,
  type GcResult,
} from './garbage-collector.js';
