// Volume health and drift: the usage and condition nodes and controllers
// report (VolumeHealthService, the ControllerConditions leader loop), and
// the comparison of Berth's books with the plugins and the nodes' kernels
// (VolumeDoctor, run on demand and by the DriftWatcher leader loop).
export { VolumeHealthService, type VolumeHealthServiceOptions, type VolumeHealthView } from './volume-health-service.js';
export { VolumeUsageBook, DEFAULT_USAGE_HISTORY } from './usage-book.js';
export { ControllerConditions, type ControllerConditionsOptions, type ControllerGetVolumeRouter } from './controller-conditions.js';
export { compareBooks, type BooksInput } from './drift-compare.js';
export { VolumeDoctor, type VolumeDoctorOptions, type DoctorRunOptions, type DoctorVolumes, type DoctorCalls } from './volume-doctor.js';
export { DriftWatcher, DRIFT_ROW_ID, type DriftWatcherOptions } from './drift-watcher.js';
