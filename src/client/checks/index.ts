// Service checks on the node (Nomad's native checks): which services and
// checks an allocation has now (alloc-services.ts), one schedule that runs
// them all (check-runner.ts), and what each result means (check-state.ts).
export { CheckRunner, type CheckRunnerOptions, type CheckTarget } from './check-runner.js';
export { allocServices, resolveEndpoint, type AllocServices, type AllocServicesInput } from './alloc-services.js';
export { initialCheckState, nextCheckState, type CheckState } from './check-state.js';
export { runProbe, httpStatusResult, type Probe, type ProbeResult, type ProbeTarget } from './_probe.js';
