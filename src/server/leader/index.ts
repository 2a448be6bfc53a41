// Leadership: which server runs the cluster's loops (evaluations, claims,
// node TTLs, controller calls). One server on SQLite always leads; several
// servers on etcd elect one, fenced by the election key's revision.
export {
  SoloLeadership,
  LeaderError,
  type Leadership,
  type LeaderErrorCode,
  type LeaderInfo,
  type ServerMember,
  type Fence,
} from './leadership.js';
export type { EtcdLeadership, EtcdLeadershipOptions } from './etcd-leadership.js';
export { createEtcdLeadership } from './open-etcd-leadership.js';
