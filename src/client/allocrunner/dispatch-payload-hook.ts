// A dispatched job's payload, written where its task asked for it
// (`dispatch_payload { file = "input.txt" }` -> `<task dir>/local/input.txt`)
// before the task starts, as Nomad's dispatch hook does. Rewritten on every
// start, so a restarted task finds the same bytes.

import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { TaskDir } from '../allocdir/index.js';
import type { TaskHook } from '../taskrunner/index.js';
import { AllocRunnerError } from './alloc-hook.js';

/** Writes `payload` (base64) to `local/<file>` of the task. Throws AllocRunnerError ALLOC_BAD_SPEC for a file outside local/. */
export class DispatchPayloadHook implements TaskHook {
  readonly name = 'dispatch-payload';
  readonly #file: string;
  readonly #payload: Buffer;
  readonly #taskDir: TaskDir;

  constructor(opts: { file: string; payload: string; taskDir: TaskDir }) {
    this.#file = opts.file;
    this.#payload = Buffer.from(opts.payload, 'base64');
    this.#taskDir = opts.taskDir;
  }

  async prestart(): Promise<void> {
    const target = path.join(this.#taskDir.localDir, path.normalize(`/${this.#file}`));
    if (!target.startsWith(this.#taskDir.localDir + path.sep)) {
      throw new AllocRunnerError('ALLOC_BAD_SPEC', `dispatch_payload file "${this.#file}" is outside the task's local/ directory`);
    }
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, this.#payload, { mode: 0o644 });
  }
}
