import { BerthError } from '../../lib/index.js';

export type CgroupErrorCode = 'CGROUP_CREATE_FAILED' | 'CGROUP_LIMIT_FAILED' | 'CGROUP_KILL_FAILED' | 'CGROUP_REMOVE_FAILED';

/** A cgroup operation the kernel refused; `message` names the group, `cause` holds the errno. */
export class CgroupError extends BerthError {
  declare readonly code: CgroupErrorCode;

  constructor(code: CgroupErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}
