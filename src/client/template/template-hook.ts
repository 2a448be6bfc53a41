// The template hook (Nomad's taskrunner template hook): renders every
// `template` block of a task before it starts (the task does not start until
// all rendered), adds `env = true` templates to its environment, then watches
// the templates' sources and files while the task runs and, when a rendering
// changes, writes it and applies its change_mode (restart, signal or noop)
// after a random splay.

import { readFileSync, realpathSync } from 'node:fs';
import { chown, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AbortedError, describeError, silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import { durationMs, type TaskTemplate } from '../../structs/index.js';
import { mayReadHostPath, outsideRootsMessage, reallyInside, resolveTaskPath, type TaskDir } from '../allocdir/index.js';
import type { TaskEnv } from '../taskenv/index.js';
import { TaskRunnerError, TASK_EVENTS, type PrestartRequest, type TaskHook, type TaskHookContext } from '../taskrunner/index.js';
import { TemplateError } from './_errors.js';
import type * as EngineModule from './_engine.js';
import type { GoTemplate } from './go-template.js';
import type { ServiceCatalog } from './service-catalog.js';

export interface TemplateHookOptions {
  templates: readonly TaskTemplate[];
  taskDir: TaskDir;
  /** The allocation directory root: no destination or `file` read may leave it. */
  allocDir: string;
  /** Host directories a `source` may be read from besides the allocation's (undefined: any). */
  fileRoots?: readonly string[] | undefined;
  clock?: Clock;
  logger?: Logger;
  /** How often sources are checked for changes while the task runs; default 1 s. */
  watchIntervalMs?: number;
  /** Picks the splay delay in [0, max); default uniform random. */
  splayPick?: (maxMs: number) => number;
  /** The node's service catalog, for nomadService/nomadServices; absent: those functions fail. */
  services?: ServiceCatalog | undefined;
  /** The allocation's namespace (the services a template sees). */
  namespace?: string;
}

/** The template language (GoTemplate, parseEnvFile, supportedFunctions): ./_engine.js. */
export type TemplateEngine = typeof EngineModule;

let engine: Promise<TemplateEngine> | undefined;

/**
 * The template language, evaluated at the first call (the same module for every later one): a start
 * does not pay for it (~12 ms of CPU) unless a task has templates. Does not block; safe to repeat;
 * rejects only if the module cannot be loaded (a broken install).
 */
export function loadTemplateEngine(): Promise<TemplateEngine> {
  engine ??= import('./_engine.js');
  return engine;
}

/** A service version no catalog answers: the first check after an agent restart renders again. */
const STALE = '\0stale';

/** One template, resolved for a run of the task. */
interface Prepared {
  spec: TaskTemplate;
  /** The destination as the user wrote it, for messages. */
  label: string;
  dest: string;
  source: string | undefined;
  /** The last text written to `dest`. */
  last: string | undefined;
  /** What the last rendering read (the source, `file` calls): path -> content. Nothing else makes it change. */
  inputs: Map<string, string | undefined>;
  /** The services the last rendering read: catalog key -> version seen. */
  services: Map<string, string | undefined>;
}

/** Renders a task's templates; one per task. Not reentrant per task run (the task runner calls it in order). */
export class TemplateHook implements TaskHook {
  readonly name = 'template';
  readonly #o: TemplateHookOptions;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #prepared: Prepared[] = [];

  constructor(opts: TemplateHookOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'template-hook' });
  }

  /**
   * Renders every template. Throws TaskRunnerError TASK_BAD_CONFIG (not
   * recoverable) for a template that can never render (bad syntax, a
   * destination outside the allocation), TemplateError TASK_TEMPLATE_FAILED
   * for one that failed this time (a missing source file, a failing function).
   */
  async prestart(req: PrestartRequest, ctx?: TaskHookContext): Promise<void> {
    this.#prepared = this.#o.templates.map((spec) => this.#prepare(spec, req.taskEnv));
    for (const t of this.#prepared) {
      const text = await this.#render(t, req.taskEnv, ctx?.signal);
      await this.#write(t, text);
      if (t.spec.env) Object.assign(req.env, await this.#envOf(t, text));
    }
  }

  async poststart(ctx: TaskHookContext & { recovered: boolean }): Promise<void> {
    if (ctx.recovered || this.#prepared.length === 0) {
      // Reattached after an agent restart: what is on disk is what the task has.
      this.#prepared = this.#o.templates.map((spec) => this.#prepare(spec, ctx.taskEnv));
      for (const t of this.#prepared) {
        t.last = await readFile(t.dest, 'utf8').catch(() => undefined);
        // The inputs are unknown: render once to learn them. A source or a service that changed while
        // the agent was down renders differently: its inputs are marked stale so that the first check acts on it.
        const text = await this.#render(t, ctx.taskEnv, ctx.signal).catch(() => undefined);
        if (text !== undefined && text !== t.last) {
          for (const file of t.inputs.keys()) t.inputs.set(file, undefined);
          for (const key of t.services.keys()) t.services.set(key, STALE);
        }
      }
    }
    if (this.#prepared.some((t) => t.inputs.size > 0 || t.services.size > 0)) void this.#watch(ctx);
  }

  #prepare(spec: TaskTemplate, env: TaskEnv): Prepared {
    const label = spec.destination;
    const { path: dest, escapes } = env.clientPath(spec.destination);
    if (escapes) throw new TaskRunnerError('TASK_BAD_CONFIG', `template "${label}": destination escapes the allocation directory`, { recoverable: false });
    const source = spec.source === undefined ? undefined : env.clientPath(spec.source, false).path;
    return { spec, label, dest, source, last: undefined, inputs: new Map(), services: new Map() };
  }

  async #render(t: Prepared, env: TaskEnv, signal?: AbortSignal): Promise<string> {
    let text: string;
    // What this rendering read, kept even when it fails: a broken source is tried again only once it changes.
    const inputs = new Map<string, string | undefined>();
    t.inputs = inputs;
    if (t.source !== undefined) {
      if (!(await mayReadHostPath(t.source, this.#o.allocDir, this.#o.fileRoots))) {
        throw new TaskRunnerError('TASK_BAD_CONFIG', `template "${t.label}": source ${t.spec.source} is ${outsideRootsMessage(this.#o.fileRoots ?? [])}`, { recoverable: false });
      }
      try {
        text = await readFile(t.source, 'utf8');
        inputs.set(t.source, text);
      } catch (err) {
        inputs.set(t.source, undefined);
        throw new TemplateError('TASK_TEMPLATE_FAILED', `template "${t.label}": cannot read source ${t.spec.source}: ${describeError(err)}`, { cause: err });
      }
    } else text = t.spec.data ?? '';
    const { GoTemplate } = await loadTemplateEngine();
    let tmpl: GoTemplate;
    try {
      tmpl = GoTemplate.parse(text, { name: t.label, leftDelimiter: t.spec.leftDelimiter, rightDelimiter: t.spec.rightDelimiter, errorOnMissingKey: t.spec.errorOnMissingKey });
    } catch (err) {
      throw new TaskRunnerError('TASK_BAD_CONFIG', `template "${t.label}": ${describeError(err)}`, { cause: err, recoverable: false });
    }
    const catalog = this.#o.services;
    // A service not fetched yet renders as none; it is fetched and the template rendered again, so
    // that the file never holds a list that is empty only because the catalog had not answered.
    for (let attempt = 0; ; attempt++) {
      const lookup = catalog?.lookup(this.#o.namespace ?? 'default');
      let out: string;
      try {
        out = tmpl.render({ env: env.env, readFile: (p) => this.#readSandboxed(p, inputs), now: () => this.#clock.now(), ...(lookup ? { services: lookup } : {}) });
      } catch (err) {
        throw new TemplateError('TASK_TEMPLATE_FAILED', `template "${t.label}": ${describeError(err)}`, { cause: err });
      }
      t.services = lookup?.read ?? new Map();
      if (!catalog || !lookup?.missing.size || attempt >= 3) return out;
      await catalog.ensure(lookup.missing, signal ?? new AbortController().signal);
    }
  }

  /** `file` reads: relative to the task directory, inside the allocation directory only. */
  #readSandboxed(p: string, inputs: Map<string, string | undefined>): string {
    const full = resolveTaskPath(this.#o.taskDir, this.#o.allocDir, p);
    if (!full) throw new Error(`${p} is outside the allocation directory`);
    inputs.set(full, undefined);
    // A symlink the task made (local/x -> /etc/shadow) must not let it read the node's files.
    const real = realpathSync(full);
    const realAlloc = realpathSync(this.#o.allocDir);
    if (real !== realAlloc && !real.startsWith(realAlloc + path.sep)) throw new Error(`${p} is outside the allocation directory`);
    const text = readFileSync(real, 'utf8');
    inputs.set(full, text);
    return text;
  }

  /** True when a file the last rendering read has changed (or is gone). */
  async #inputsChanged(t: Prepared): Promise<boolean> {
    for (const [key, was] of t.services) if (this.#o.services?.version(key) !== was) return true;
    for (const [file, was] of t.inputs) {
      const now = await readFile(file, 'utf8').catch(() => undefined);
      if (now !== was) return true;
    }
    return false;
  }

  async #write(t: Prepared, text: string): Promise<void> {
    if (t.last === text) return;
    const dir = path.dirname(t.dest);
    // A directory the task made may be a symlink out of the allocation: check where it really is, before and after creating it.
    const escapes = new TaskRunnerError('TASK_BAD_CONFIG', `template "${t.label}": destination escapes the allocation directory`, { recoverable: false });
    if (!(await reallyInside(dir, this.#o.allocDir))) throw escapes;
    await mkdir(dir, { recursive: true });
    if (!(await reallyInside(dir, this.#o.allocDir))) throw escapes;
    const tmp = path.join(dir, `.${path.basename(t.dest)}.berth-tmp`);
    await writeFile(tmp, text, { mode: parseInt(t.spec.perms, 8) });
    if (t.spec.uid !== undefined || t.spec.gid !== undefined) await chown(tmp, t.spec.uid ?? -1, t.spec.gid ?? -1);
    await rename(tmp, t.dest);
    t.last = text;
  }

  async #envOf(t: Prepared, text: string): Promise<Record<string, string>> {
    const { parseEnvFile } = await loadTemplateEngine();
    try {
      return parseEnvFile(text);
    } catch (err) {
      throw new TemplateError('TASK_TEMPLATE_FAILED', `template "${t.label}" (env = true): ${describeError(err)}`, { cause: err });
    }
  }

  /** Re-renders on every tick until the run ends; a change is written and its change_mode applied. */
  async #watch(ctx: TaskHookContext): Promise<void> {
    const interval = this.#o.watchIntervalMs ?? 1000;
    const prepared = this.#prepared;
    for (;;) {
      try {
        await this.#clock.sleep(interval, ctx.signal);
        const changed: Prepared[] = [];
        for (const t of prepared) {
          // As consul-template: only a changed input renders again (a `timestamp` alone never does).
          if (!(await this.#inputsChanged(t))) continue;
          const text = await this.#render(t, ctx.taskEnv, ctx.signal);
          if (text === t.last) continue;
          await this.#write(t, text);
          changed.push(t);
          ctx.runner.event(TASK_EVENTS.templateRendered, `Template "${t.label}" rendered again: ${t.services.size ? 'its sources or services changed' : 'its source changed'}`);
        }
        if (changed.length > 0) await this.#applyChange(changed, ctx);
      } catch (err) {
        if (err instanceof AbortedError || ctx.signal.aborted) return;
        // A failed re-render leaves the last good file in place, as consul-template does.
        this.#logger.warn({ err: describeError(err) }, 'template re-render failed');
        ctx.runner.event(TASK_EVENTS.setupFailure, describeError(err));
      }
    }
  }

  async #applyChange(changed: Prepared[], ctx: TaskHookContext): Promise<void> {
    const restart = changed.filter((t) => t.spec.changeMode === 'restart');
    const signals = [...new Set(changed.filter((t) => t.spec.changeMode === 'signal').map((t) => t.spec.changeSignal as string))];
    if (restart.length === 0 && signals.length === 0) return;
    const splay = Math.max(...changed.map((t) => durationMs(t.spec.splay)));
    const pick = this.#o.splayPick ?? ((max: number) => Math.floor(Math.random() * max));
    if (splay > 0) await this.#clock.sleep(pick(splay), ctx.signal);
    const names = (ts: Prepared[]): string => ts.map((t) => `"${t.label}"`).join(', ');
    // A restart renders everything again and so covers the signals too.
    if (restart.length > 0) {
      await ctx.runner.restart(`template ${names(restart)} changed`);
      return;
    }
    for (const sig of signals) {
      await ctx.runner.signal(sig, `template ${names(changed.filter((t) => t.spec.changeSignal === sig))} changed`);
    }
  }
}
