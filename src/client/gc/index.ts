// Client garbage collection: finished allocations leave the node within limits.
export { AllocGarbageCollector, DEFAULT_GC_LIMITS, overLimits, type AllocGarbageCollectorOptions, type GcCandidate, type GcLimits } from './alloc-gc.js';
