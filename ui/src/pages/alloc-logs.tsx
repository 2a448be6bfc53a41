// A task's logs, followed live: stdout and stderr as two labelled tabs, the
// stream read as Nomad's framed logs (GET /v1/client/fs/logs/:id with
// follow=true, from the end). Pause stops appending; what arrives meanwhile
// is kept and shown on Resume. The pane keeps following the end while the
// reader is at the bottom (scrolling up stops that; "Scroll to bottom"
// resumes it), and keeps only the last MAX_CHARS of output in the page.

import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { useLocation, useRoute } from 'preact-iso/router';
import { ApiError, type Allocation } from '../api';
import { followLogs, type LogType } from '../api-alloc-tools';
import { Loading } from '../components';
import { TaskChooser, toolError, ToolsNav, useAllocation, useChosenTask } from './alloc-tools-nav';

/** How much output the page keeps (the last of it), in characters. */
export const MAX_CHARS = 256 * 1024;
/** How much of the log's end the page first reads, in bytes. */
const TAIL_BYTES = 64 * 1024;

/** `text` cut to its last `max` characters, from a line's start when it was cut. Pure. */
export function keepLast(text: string, max: number): string {
  if (text.length <= max) return text;
  const tail = text.slice(text.length - max);
  const nl = tail.indexOf('\n');
  return nl >= 0 && nl < tail.length - 1 ? tail.slice(nl + 1) : tail;
}

type StreamStatus = 'connecting' | 'following' | 'ended' | 'refused';

/** The output of one log stream, followed while mounted. Paused: kept aside, shown on resume. */
function useFollowedLog(allocId: string, task: string, type: LogType, paused: boolean, describeError: (err: Error) => string) {
  const [text, setText] = useState('');
  const [status, setStatus] = useState<StreamStatus>('connecting');
  const [error, setError] = useState<string | undefined>();
  const [attempt, setAttempt] = useState(0);
  const held = useRef('');
  const pausedNow = useRef(paused);
  pausedNow.current = paused;

  useEffect(() => {
    if (!paused && held.current) {
      const more = held.current;
      held.current = '';
      setText((t) => keepLast(t + more, MAX_CHARS));
    }
  }, [paused]);

  useEffect(() => {
    const stop = new AbortController();
    setText('');
    held.current = '';
    setStatus('connecting');
    setError(undefined);
    const add = (chunk: string): void => {
      if (pausedNow.current) held.current = keepLast(held.current + chunk, MAX_CHARS);
      else setText((t) => keepLast(t + chunk, MAX_CHARS));
    };
    followLogs(allocId, task, type, {
      tailBytes: TAIL_BYTES,
      signal: stop.signal,
      onOpen: () => setStatus('following'),
      onText: add,
      onEvent: (ev) => add(`\n[${ev}]\n`),
    }).then(
      () => !stop.signal.aborted && setStatus('ended'),
      (err: unknown) => {
        if (stop.signal.aborted) return;
        setStatus(err instanceof ApiError ? 'refused' : 'ended');
        setError(err instanceof Error ? describeError(err) : String(err));
      },
    );
    return () => stop.abort();
  }, [allocId, task, type, attempt]);

  return { text, status, error, retry: () => setAttempt((n) => n + 1) };
}

function LogPane({ alloc, task, type, paused }: { alloc: Allocation; task: string; type: LogType; paused: boolean }) {
  const describeError = (err: Error): string => toolError(err, `berth alloc logs -f${type === 'stderr' ? ' -stderr' : ''} ${alloc.ID} ${task}`);
  const { text, status, error, retry } = useFollowedLog(alloc.ID, task, type, paused, describeError);
  const pre = useRef<HTMLPreElement>(null);
  const [atBottom, setAtBottom] = useState(true);

  // Where the pane last put itself at the bottom: a reader who scrolled up from
  // there before the scroll event arrived is not pulled back down by new text.
  const placed = useRef({ top: 0, height: 0 });
  const place = (el: HTMLPreElement): void => {
    el.scrollTop = el.scrollHeight;
    placed.current = { top: el.scrollTop, height: el.scrollHeight };
  };

  useLayoutEffect(() => {
    const el = pre.current;
    if (!el || !atBottom) return;
    const movedUp = el.scrollTop < placed.current.top - 8 && el.scrollHeight >= placed.current.height;
    if (movedUp) setAtBottom(false);
    else place(el);
  }, [text, atBottom]);

  const onScroll = (): void => {
    const el = pre.current;
    if (!el) return;
    const bottom = el.scrollHeight - el.scrollTop - el.clientHeight < 8;
    if (bottom) placed.current = { top: el.scrollTop, height: el.scrollHeight };
    setAtBottom(bottom);
  };
  const toBottom = (): void => {
    const el = pre.current;
    if (el) place(el);
    setAtBottom(true);
  };

  return (
    <div id={`pane-${type}`} role="tabpanel" aria-labelledby={`tab-${type}`} class="log-pane">
      <p class="log-status" data-log-status={status} aria-live="polite">
        {status === 'connecting' && 'Connecting…'}
        {status === 'following' && (paused ? `Paused: new ${type} is held until you resume.` : `Following ${type} live.`)}
        {status === 'ended' && (
          <>
            The {type} stream ended{error ? ` (${error})` : ''}.{' '}
            <button type="button" class="link" onClick={retry}>
              Follow again
            </button>
          </>
        )}
        {status === 'refused' && <span class="error" role="alert">Logs unavailable: {error}</span>}
      </p>
      <pre
        hidden={status === 'refused'}
        ref={pre}
        class={`logs log-view${type === 'stderr' ? ' err' : ''}`}
        tabIndex={0}
        aria-label={`${type} of ${task}`}
        data-logs={`${task}/${type}`}
        onScroll={onScroll}
      >
        {text || (status === 'following' ? `(no ${type} yet)` : '')}
      </pre>
      {!atBottom ? (
        <button type="button" class="to-bottom" onClick={toBottom}>
          Scroll to bottom
        </button>
      ) : null}
    </div>
  );
}

export function AllocLogsPage() {
  const { params } = useRoute();
  const { query } = useLocation();
  const id = params['id'] ?? '';
  const { data: alloc, error } = useAllocation(id);
  const [type, setType] = useState<LogType>(query['type'] === 'stderr' ? 'stderr' : 'stdout');
  const [paused, setPaused] = useState(false);
  if (!alloc) return <main id="main"><Loading error={error} /></main>;
  return <LogsView alloc={alloc} type={type} setType={setType} paused={paused} setPaused={setPaused} />;
}

function LogsView({ alloc, type, setType, paused, setPaused }: {
  alloc: Allocation;
  type: LogType;
  setType: (t: LogType) => void;
  paused: boolean;
  setPaused: (p: boolean) => void;
}) {
  const task = useChosenTask(alloc);
  const types: LogType[] = ['stdout', 'stderr'];
  const onTabKey = (e: KeyboardEvent): void => {
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    const next = type === 'stdout' ? 'stderr' : 'stdout';
    setType(next);
    document.getElementById(`tab-${next}`)?.focus();
  };
  return (
    <main id="main" class="alloc-tool">
      <ToolsNav alloc={alloc} tool="logs" task={task} />
      <h1>Logs of task {task}</h1>
      <div class="tool-bar">
        <TaskChooser alloc={alloc} tool="logs" task={task} />
        <div role="tablist" aria-label="Log stream" class="log-tabs" onKeyDown={onTabKey}>
          {types.map((t) => (
            <button
              type="button"
              role="tab"
              id={`tab-${t}`}
              aria-selected={t === type}
              aria-controls={`pane-${t}`}
              tabIndex={t === type ? 0 : -1}
              class={t === type ? 'tab current' : 'tab'}
              onClick={() => setType(t)}
            >
              {t}
            </button>
          ))}
        </div>
        <button type="button" aria-pressed={paused} onClick={() => setPaused(!paused)}>
          {paused ? 'Resume' : 'Pause'}
        </button>
      </div>
      {task ? <LogPane key={`${task}/${type}`} alloc={alloc} task={task} type={type} paused={paused} /> : <p class="empty">This allocation has no task.</p>}
    </main>
  );
}
