// Who is logged in, for every page: the caller's token name and type (Nomad's ACL token: management, or client with Berth's role as its policy). Action
// buttons show for management tokens only (the API refuses others anyway).

import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { canWrite, type Caller } from './api';

export const SessionContext = createContext<Caller | undefined>(undefined);

/** True when the logged-in token may make changes (stop a job, detach a volume). */
export function useCanWrite(): boolean {
  return canWrite(useContext(SessionContext));
}
