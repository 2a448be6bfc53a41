// The berth executable's entry point (dist/main.js): every command but a
// warm-started `berth agent` (src/warm-start/) comes in here.

import { runMain } from './main-run.js';

await runMain();
