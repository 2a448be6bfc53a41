// One entry of an allocation directory as `alloc fs` shows it (Nomad's
// AllocFileInfo): what the node agent answers and the CLI prints.

export interface AllocFileInfo {
  name: string;
  isDir: boolean;
  size: number;
  /** `ls -l` style: `drwxr-xr-x`, `-rw-r--r--`, `L...` for a symlink. */
  fileMode: string;
  /** ISO 8601. */
  modTime: string;
  /** For a symlink: where it points (not followed). */
  linkTarget?: string;
}
