// Dynamic host volumes on the server (Nomad 1.10): the volume rows, their
// placement on a node and the node calls that make, record and delete them,
// and what the scheduler needs of them (feasibility, sticky claims).
export { HostVolumeService, type HostVolumeServiceOptions, type HostVolumeView, type HostVolumeListFilter, type HostVolumeInput, type NodeCaller } from './host-volume-service.js';
export { HostVolumeError, type HostVolumeErrorCode } from './errors.js';
export { hostVolumeCheckerFor, recordStickyClaims } from './scheduling.js';
