// Types of ui/build.mjs for the TypeScript that imports it (bench/ui.bench.ts).
import type { Metafile } from 'esbuild';

/** Builds the UI into `outDir` (emptied first); resolves with the files written, relative to it. */
export function buildUi(outDir: string, opts?: { onMetafile?: (meta: Metafile) => void }): Promise<string[]>;
