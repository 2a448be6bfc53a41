// The allocation directory: shared alloc/, per task local/, secrets/ (tmpfs), tmp/.
export { AllocDir, AllocDirError, type AllocDirErrorCode, type TaskDir } from './alloc-dir.js';
export { resolveTaskPath, mayReadHostPath, outsideRootsMessage, reallyInside } from './task-path.js';
export { mountPointsUnder, isMountPoint, unmountAllUnder, mount } from './mounts.js';
