// The allocation directory as Nomad's client builds it: shared alloc/, per
// task local/, secrets/ (tmpfs), tmp/, and the chroot for chroot drivers;
// where a path the agent writes for a task lands.
export { AllocDir, AllocDirError, type AllocDirErrorCode, type FsIsolation, type TaskDir } from './alloc-dir.js';
export { ChrootCache, DEFAULT_CHROOT_ENV, bindAll, type BindMount, type ChrootEntry } from './chroot.js';
export { resolveTaskPath, mayReadHostPath, outsideRootsMessage, reallyInside } from './task-path.js';
export { mountPointsUnder, isMountPoint, unmountAllUnder, unmountUnder, mount } from './mounts.js';
export { MountHelper, MountHelperError, mountHelper, MOUNT_HELPER_PATH, type MountHelperErrorCode } from './mount-helper.js';
