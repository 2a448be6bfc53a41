// Nomad's native service discovery on the server: registrations follow the
// allocations' reports (registrations.ts), a leader loop removes those of
// allocations that stopped (service-reaper.ts), and reads filter by health
// and tags (service-queries.ts).
export { syncAllocServices, allocMayRegister, allocRegistrations } from './registrations.js';
export { ServiceReaper, type ServiceReaperOptions } from './service-reaper.js';
export { listServices, serviceInstances, type ServiceSummary, type InstanceQuery } from './service-queries.js';
