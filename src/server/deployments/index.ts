// Deployments: rolling updates of service jobs (Nomad's deploymentwatcher).
// The evaluation records a rollout (deployment-plan); the leader's watcher
// judges allocation health, promotes canaries, fails on deadlines and
// reverts; the service answers the API (promote, fail, pause, resume, job
// versions, revert, scale).
export { currentDeployment, recordRollout, revertsToStable, sameSpec, recordJobVersion, jobVersions, jobDeployments, getDeployment } from './deployment-plan.js';
export { DeploymentWatcher, advanceDeployment, type DeploymentJobs, type DeploymentWatcherOptions, type JobRegistration } from './deployment-watcher.js';
export { judgeHealth, type HealthVerdict } from './alloc-health.js';
export { DeploymentService, DeploymentError, type DeploymentChange, type DeploymentErrorCode, type DeploymentServiceOptions } from './deployment-service.js';
