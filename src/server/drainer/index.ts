// Node drains and eligibility (Nomad's nomad/drainer): the requests an
// operator makes, the pure decisions of a drain, and the leader loop that
// applies them.
export { NodeDrainer, type NodeDrainerOptions, type DrainEvaluator } from './node-drainer.js';
export { decideDrain, deadlineReached, healthyAt, migrateStrategyOf, type DrainInput, type DrainDecision } from './drain-decisions.js';
export { startDrain, cancelDrain, setEligibility, DrainError, type DrainSpec } from './drain-requests.js';
