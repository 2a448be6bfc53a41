// The allocation directory as Nomad's client builds it: shared alloc/, per
// task local/, secrets/ (tmpfs), tmp/, and the chroot for chroot drivers.
export { AllocDir, AllocDirError, type AllocDirErrorCode, type FsIsolation, type TaskDir } from './alloc-dir.js';
export { ChrootCache, DEFAULT_CHROOT_ENV, bindAll, type BindMount, type ChrootEntry } from './chroot.js';
export { mountPointsUnder, isMountPoint, unmountAllUnder, mount } from './mounts.js';
