// Types of mount-table.mjs (plain ESM shared with the mount helper process).

/** Mount points (as the kernel names them) at or under `root`, deepest first. */
export function mountPointsUnder(root: string): string[];

/** Whether `dir` holds a file system other than its parent's; false when it is missing. */
export function hasOwnFileSystem(dir: string): boolean;
