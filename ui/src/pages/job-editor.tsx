// The job editor (/ui/jobs/new, /ui/jobs/:ns/:id/edit): a job file in HCL
// or JSON with its HCL variables; Plan parses it through the API and shows
// what `job plan` shows (the diff, the scheduler's dry run, the Job Modify
// Index); Run registers the planned job only if it is still at that index
// (`job run -check-index`), then opens the job's page. Writers only: a
// read-only token gets no editor (and the API refuses it anyway).

import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso/router';
import { ApiError, type Job } from '../api';
import { detectFormat, loadJobSource, parseJob, planJob, runJob, type JobFormat, type JobPlanResponse, type JobSource } from '../api-editor';
import { Loading, Section } from '../components';
import { useCanWrite } from '../session';
import { DryRun, JobDiffView } from './job-plan-view';
import './job-editor.css';

/** What a new job starts from. */
const TEMPLATE = `job "example" {
  type = "service"

  group "app" {
    count = 1

    task "server" {
      driver = "raw_exec"

      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }

      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`;

const INDENT = '  ';

/** One problem of a parse, in the user's words: where (file's line, column) and what. */
export interface Problem {
  where?: { file: 'job' | 'variables'; line: number; column: number };
  message: string;
}

/**
 * The parse API's message ("Failed to parse job: input.hcl:3:13: malformed
 * HCL: ...; variables.hcl:1:5: ...") as problems with their lines. Pure.
 */
export function problemsOf(message: string): Problem[] {
  const body = message.replace(/^Failed to parse job: /, '');
  const parts = body.split(/;\s+(?=(?:input|variables)\.hcl:\d+:\d+: )/);
  return parts.map((p) => {
    const m = /^(input|variables)\.hcl:(\d+):(\d+): ([\s\S]*)$/.exec(p);
    if (!m) return { message: p };
    return { where: { file: m[1] === 'input' ? 'job' : 'variables', line: Number(m[2]), column: Number(m[3]) }, message: m[4] ?? '' };
  });
}

/** Selects line `line` (from 1) of a text area and scrolls it into view. */
function goToLine(area: HTMLTextAreaElement | null, line: number): void {
  if (!area) return;
  const lines = area.value.split('\n');
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  const end = start + (lines[line - 1]?.length ?? 0);
  area.focus();
  area.setSelectionRange(start, end);
  const lineHeight = area.scrollHeight / Math.max(1, lines.length);
  area.scrollTop = Math.max(0, (line - 3) * lineHeight);
}

/**
 * Tab and Shift+Tab indent and outdent with spaces; Escape hands Tab back to
 * the page for one press, so the keyboard can leave the text area.
 */
function useTabIndent(): { ref: preact.RefObject<HTMLTextAreaElement | null>; onKeyDown: (e: KeyboardEvent) => void } {
  const ref = useRef<HTMLTextAreaElement>(null);
  const released = useRef(false);
  const onKeyDown = (e: KeyboardEvent): void => {
    const area = e.currentTarget as HTMLTextAreaElement;
    if (e.key === 'Escape') {
      released.current = true;
      return;
    }
    if (e.key !== 'Tab' || e.ctrlKey || e.altKey || e.metaKey) {
      released.current = false;
      return;
    }
    if (released.current) {
      released.current = false;
      return;
    }
    e.preventDefault();
    const { selectionStart: s, selectionEnd: end, value } = area;
    const lineStart = value.lastIndexOf('\n', s - 1) + 1;
    if (e.shiftKey) {
      if (value.startsWith(INDENT, lineStart)) area.setRangeText('', lineStart, lineStart + INDENT.length, 'preserve');
    } else if (s === end) {
      area.setRangeText(INDENT, s, end, 'end');
    } else {
      // Indent every selected line.
      const block = value.slice(lineStart, end);
      area.setRangeText(block.replace(/^/gm, INDENT), lineStart, end, 'select');
    }
    area.dispatchEvent(new Event('input', { bubbles: true }));
  };
  return { ref, onKeyDown };
}

interface Planned {
  plan: JobPlanResponse;
  job: Job;
  /** The text the plan was made from: Run needs the same. */
  from: JobSource;
}

function sameSource(a: JobSource, b: JobSource): boolean {
  return a.source === b.source && a.format === b.format && (a.format === 'json' || a.variables === b.variables);
}

function errorText(err: unknown): string {
  return err instanceof ApiError ? err.message : (err as Error).message;
}

function Editor({ initial, editing }: { initial: JobSource; editing?: { ns: string; id: string } }) {
  const { route } = useLocation();
  const [source, setSource] = useState(initial.source);
  const [variables, setVariables] = useState(initial.variables);
  const [formatChoice, setFormatChoice] = useState<'auto' | JobFormat>('auto');
  const [busy, setBusy] = useState<'' | 'plan' | 'run'>('');
  const [problems, setProblems] = useState<Problem[]>([]);
  const [planned, setPlanned] = useState<Planned | undefined>();
  const [verbose, setVerbose] = useState(false);
  const job = useTabIndent();
  const vars = useTabIndent();
  const format: JobFormat = formatChoice === 'auto' ? detectFormat(source) : formatChoice;
  const current: JobSource = { source, format, variables };
  const stale = planned !== undefined && !sameSource(planned.from, current);

  const plan = async (): Promise<void> => {
    setBusy('plan');
    setProblems([]);
    setPlanned(undefined);
    try {
      const parsed = await parseJob(current);
      if (editing && (parsed.ID !== editing.id || (parsed.Namespace || 'default') !== editing.ns)) {
        throw new ApiError(400, 'INVALID', `This page edits job "${editing.id}" in namespace "${editing.ns}"; the file describes "${parsed.ID ?? ''}" in "${parsed.Namespace || 'default'}". Use Run a job for a new one.`);
      }
      setPlanned({ plan: await planJob(parsed), job: parsed, from: current });
    } catch (err) {
      setProblems(problemsOf(errorText(err)));
    } finally {
      setBusy('');
    }
  };

  const run = async (): Promise<void> => {
    if (!planned) return;
    setBusy('run');
    setProblems([]);
    try {
      await runJob(planned.job, planned.plan.JobModifyIndex, planned.from);
      route(`/ui/jobs/${encodeURIComponent(planned.job.Namespace || 'default')}/${encodeURIComponent(planned.job.ID ?? '')}`);
    } catch (err) {
      const msg = errorText(err);
      // EnforceIndex refused: someone changed the job since the plan.
      setProblems([{ message: /modify index|enforce/i.test(msg) ? `${msg}. The job changed since this plan: plan again.` : msg }]);
      setBusy('');
    }
  };

  return (
    <>
      <form
        class="editor card"
        onSubmit={(e) => {
          e.preventDefault();
          void plan();
        }}
      >
        <div class="editor-bar">
          <label>
            Format{' '}
            <select value={formatChoice} onChange={(e) => setFormatChoice((e.currentTarget as HTMLSelectElement).value as 'auto' | JobFormat)}>
              <option value="auto">Detect ({detectFormat(source).toUpperCase()})</option>
              <option value="hcl">HCL</option>
              <option value="json">JSON</option>
            </select>
          </label>
          <span class="hint" id="editor-keys">
            Tab indents; press Escape, then Tab, to leave the text.
          </span>
        </div>
        <label for="job-source">Job file ({format.toUpperCase()})</label>
        <textarea
          id="job-source"
          ref={job.ref}
          class="code"
          spellcheck={false}
          autocapitalize="off"
          autocomplete="off"
          aria-describedby="editor-keys"
          rows={Math.min(30, Math.max(12, source.split('\n').length + 1))}
          value={source}
          onInput={(e) => setSource((e.currentTarget as HTMLTextAreaElement).value)}
          onKeyDown={job.onKeyDown}
        />
        {format === 'hcl' ? (
          <>
            <label for="job-variables">Variables (one `name = value` a line, as a var-file)</label>
            <textarea
              id="job-variables"
              ref={vars.ref}
              class="code"
              spellcheck={false}
              autocapitalize="off"
              rows={3}
              placeholder={'count = 2\nimage = "nginx:1.27"'}
              value={variables}
              onInput={(e) => setVariables((e.currentTarget as HTMLTextAreaElement).value)}
              onKeyDown={vars.onKeyDown}
            />
          </>
        ) : null}
        <div class="editor-actions">
          <button type="submit" disabled={busy !== ''} aria-busy={busy === 'plan'}>
            {busy === 'plan' ? 'Planning…' : 'Plan'}
          </button>
          <button
            type="button"
            disabled={busy !== '' || !planned || stale}
            aria-busy={busy === 'run'}
            title={!planned ? 'Plan first: Run registers what the plan showed' : stale ? 'The file changed since the plan: plan again' : undefined}
            onClick={() => void run()}
          >
            {busy === 'run' ? 'Running…' : 'Run'}
          </button>
          {stale ? <span class="hint" role="status">The file changed since this plan: plan again before Run.</span> : null}
        </div>
        {problems.length ? (
          <div class="problems" role="alert">
            <p class="error">{problems.length === 1 ? 'The job cannot be planned:' : `The job cannot be planned (${problems.length} problems):`}</p>
            <ul>
              {problems.map((p) => (
                <li class="error" data-problem-line={p.where?.line}>
                  {p.where ? (
                    <>
                      <button type="button" class="link" onClick={() => goToLine(p.where?.file === 'variables' ? vars.ref.current : job.ref.current, p.where?.line ?? 1)}>
                        {p.where.file === 'variables' ? 'Variables, line' : 'Line'} {p.where.line}, column {p.where.column}
                      </button>
                      : {p.message}
                    </>
                  ) : (
                    p.message
                  )}
                </li>
              ))}
            </ul>
          </div>
        ) : null}
      </form>
      {planned ? (
        <Section title="Plan" id="plan">
          <div data-plan-index={planned.plan.JobModifyIndex} class={stale ? 'stale' : ''}>
            {planned.plan.Diff ? (
              <>
                <label class="verbose">
                  <input type="checkbox" checked={verbose} onChange={(e) => setVerbose((e.currentTarget as HTMLInputElement).checked)} /> Show every field of added and removed groups and tasks
                </label>
                <JobDiffView diff={planned.plan.Diff} verbose={verbose} />
              </>
            ) : null}
            <h3>Scheduler dry-run</h3>
            <DryRun plan={planned.plan} jobType={planned.job.Type ?? 'service'} />
            <p>
              Job Modify Index: <strong data-job-modify-index>{planned.plan.JobModifyIndex}</strong>. Run registers the job only if it is still at this index (as{' '}
              <code>berth job run -check-index {planned.plan.JobModifyIndex}</code>); if someone changed it meanwhile, plan again.
            </p>
          </div>
        </Section>
      ) : null}
    </>
  );
}

function ReadOnly() {
  return (
    <p class="hint" data-no-editor>
      Your token may not change jobs (it is read-only): the editor is for tokens that may write.
    </p>
  );
}

/** /ui/jobs/new: a new job. */
export function NewJobPage() {
  const canWrite = useCanWrite();
  return (
    <main id="main" class="job-editor">
      <h1>Run a job</h1>
      {canWrite ? <Editor initial={{ source: TEMPLATE, format: 'hcl', variables: '' }} /> : <ReadOnly />}
    </main>
  );
}

/** /ui/jobs/:ns/:id/edit: an existing job, from its submitted source, else its JSON. */
export function EditJobPage() {
  const { params } = useRoute();
  const ns = params['ns'] ?? 'default';
  const id = params['id'] ?? '';
  const canWrite = useCanWrite();
  const [loaded, setLoaded] = useState<{ source?: JobSource; error?: Error }>({});
  useEffect(() => {
    if (!canWrite) return;
    let live = true;
    loadJobSource(ns, id).then(
      (source) => live && setLoaded({ source }),
      (error: Error) => live && setLoaded({ error }),
    );
    return () => {
      live = false;
    };
  }, [ns, id, canWrite]);
  return (
    <main id="main" class="job-editor">
      <h1>
        Edit job <a href={`/ui/jobs/${encodeURIComponent(ns)}/${encodeURIComponent(id)}`}>{id}</a>
      </h1>
      {!canWrite ? <ReadOnly /> : loaded.source ? <Editor initial={loaded.source} editing={{ ns, id }} /> : <Loading error={loaded.error} />}
    </main>
  );
}
