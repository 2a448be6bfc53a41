// The scheduler: pure decisions over plain inputs. `reconcile` says what a
// job's allocations must become; `placeGroup` picks nodes for new ones.
export {
  placeGroup,
  groupResources,
  emptyUsage,
  fitsInPlace,
  INELIGIBLE_REASON,
  type PlacementVolume,
  type NodeUsage,
  type PlaceGroupInput,
  type PlaceGroupResult,
  type Placement,
} from './placement.js';
export { assignPorts, portsReason, holdPorts, releasePorts, DYNAMIC_PORT_FAILURE, type PortUsage } from './ports.js';
export {
  reconcile,
  reconcileSystem,
  isLive,
  isReplaceableTerminal,
  MIGRATE_DESCRIPTION,
  UPDATED_DESCRIPTION,
  type StopDecision,
  type PlaceRequest,
  type ReconcileResult,
  type ReconcileOptions,
  type InPlaceUpdate,
} from './reconcile.js';
export { groupChange, NodeFit, type GroupChange, type GroupSource } from './task-updates.js';
export { rolloutBudget, type RolloutBudget } from './rollout.js';
export { HostVolumeChecker, HOST_VOLUMES_REASON, type HostVolumeUse, type HostVolumeCheckerInput } from './host-volumes.js';
export { compileRule } from './constraints.js';
