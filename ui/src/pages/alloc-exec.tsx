// Exec into a task in the browser, as Nomad's UI does: a command (default
// /bin/sh) run in the task over the exec WebSocket
// (GET /v1/client/allocation/:id/exec, tty=true, ws_handshake=true: the tab's
// token in the first message), its terminal an xterm.js widget loaded on
// demand (its own chunk of the bundle). Keys go as stdin frames, the
// terminal's size as tty_size frames (again on every resize), stdout/stderr
// frames are written to it; when the command ends its exit code is shown.
// Management tokens only: others see why, and the API refuses them anyway.

import '@xterm/xterm/css/xterm.css';
import { useEffect, useRef, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso/router';
import type { Allocation } from '../api';
import { execFrames, execHandshake, execUrl } from '../api-alloc-tools';
import { Loading } from '../components';
import { useCanWrite } from '../session';
import { TaskChooser, ToolsNav, useAllocation, useChosenTask } from './alloc-tools-nav';

/** How often an idle session sends Nomad's heartbeat frame. */
const HEARTBEAT_MS = 10_000;

type SessionState =
  | { phase: 'loading' | 'connecting' | 'open' }
  | { phase: 'exited'; exitCode: number }
  | { phase: 'closed'; reason: string };

/** The words of a command line, split on white space (no shell quoting: run `/bin/sh -c` for that). Pure. */
export function commandWords(line: string): string[] {
  return line.trim().split(/\s+/).filter(Boolean);
}

function describe(state: SessionState, command: string): string {
  switch (state.phase) {
    case 'loading':
      return 'Loading the terminal…';
    case 'connecting':
      return `Connecting to run ${command}…`;
    case 'open':
      return `Running ${command}.`;
    case 'exited':
      return `${command} exited with code ${state.exitCode}.`;
    case 'closed':
      return `The session ended: ${state.reason}`;
  }
}

/** One exec session: the terminal, the socket, and their lifetime (ends when unmounted). */
function TerminalSession({ allocId, task, command, cli, onState }: { allocId: string; task: string; command: string[]; cli: string; onState: (s: SessionState) => void }) {
  const box = useRef<HTMLDivElement>(null);
  const report = useRef(onState);
  report.current = onState;

  useEffect(() => {
    let disposed = false;
    const cleanups: Array<() => void> = [];
    report.current({ phase: 'loading' });
    void (async () => {
      const [{ Terminal }, { FitAddon }] = await Promise.all([import('@xterm/xterm'), import('@xterm/addon-fit')]);
      if (disposed || !box.current) return;
      const term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 2000, theme: { background: '#0f1419' } });
      const fit = new FitAddon();
      term.loadAddon(fit);
      term.open(box.current);
      fit.fit();
      cleanups.push(() => term.dispose());
      const ws = new WebSocket(execUrl(allocId, task, command));
      cleanups.push(() => ws.close(1000));
      let exitCode: number | undefined;
      report.current({ phase: 'connecting' });
      let opened = false;
      ws.onopen = () => {
        opened = true;
        ws.send(execHandshake());
        ws.send(execFrames.resize(term.cols, term.rows));
        report.current({ phase: 'open' });
        term.focus();
      };
      ws.onmessage = (e: MessageEvent<string>) => {
        const frame = execFrames.parse(e.data);
        if (frame.out) term.write(frame.out);
        if (frame.exitCode !== undefined) exitCode = frame.exitCode;
      };
      // Nomad's UI sends an empty frame every 10 s so that nothing between drops an idle session.
      const heartbeat = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send('{}'), HEARTBEAT_MS);
      cleanups.push(() => clearInterval(heartbeat));
      ws.onclose = (e) => {
        clearInterval(heartbeat);
        if (disposed) return;
        term.options.disableStdin = true;
        // The agent relays the session to the allocation's node; when it cannot reach it, its reason names the node.
        // A socket refused before it opened has no reason (the browser hides the answer).
        const reason = /^node .* runs this allocation, but /.test(e.reason)
          ? `${e.reason}. From a shell that reaches the node: ${cli}`
          : e.reason || (opened ? `the connection closed (code ${e.code})` : 'the agent did not open the session (is it reachable?)');
        const end: SessionState = exitCode !== undefined ? { phase: 'exited', exitCode } : { phase: 'closed', reason };
        term.write(`\r\n\x1b[90m${end.phase === 'exited' ? `exited with code ${end.exitCode}` : end.reason}; the connection has closed.\x1b[0m\r\n`);
        report.current(end);
      };
      const send = (frame: string): void => {
        if (ws.readyState === WebSocket.OPEN) ws.send(frame);
      };
      const input = term.onData((d) => send(execFrames.stdin(d)));
      const resized = term.onResize(({ cols, rows }) => send(execFrames.resize(cols, rows)));
      cleanups.push(() => {
        input.dispose();
        resized.dispose();
      });
      const observer = new ResizeObserver(() => fit.fit());
      observer.observe(box.current);
      cleanups.push(() => observer.disconnect());
    })().catch((err: unknown) => !disposed && report.current({ phase: 'closed', reason: err instanceof Error ? err.message : String(err) }));
    return () => {
      disposed = true;
      for (const c of cleanups.reverse()) c();
    };
  }, [allocId, task, command, cli]);

  return <div class="terminal-box" ref={box} data-terminal={task} />;
}

/** The CLI command that runs the same session from a shell (offered when the node's agent cannot be reached through this one). */
function execCommandLine(alloc: Allocation, task: string, command: string[]): string {
  return `berth alloc exec -task ${task} ${alloc.ID} ${command.join(' ')}`;
}

function ExecView({ alloc }: { alloc: Allocation }) {
  const task = useChosenTask(alloc);
  const [line, setLine] = useState('/bin/sh');
  const [session, setSession] = useState<{ command: string[]; n: number } | undefined>();
  const [state, setState] = useState<SessionState | undefined>();
  const running = !!session && (state?.phase === 'loading' || state?.phase === 'connecting' || state?.phase === 'open');
  const start = (e: Event): void => {
    e.preventDefault();
    const command = commandWords(line);
    if (!command.length) return;
    setState(undefined);
    setSession({ command, n: (session?.n ?? 0) + 1 });
  };
  const taskState = alloc.TaskStates?.[task]?.State;
  return (
    <main id="main" class="alloc-tool">
      <ToolsNav alloc={alloc} tool="exec" task={task} />
      <h1>Exec into task {task}</h1>
      <form class="exec-form" onSubmit={start}>
        <TaskChooser alloc={alloc} tool="exec" task={task} disabled={running} />
        <label>
          Command
          <input value={line} onInput={(e) => setLine((e.target as HTMLInputElement).value)} disabled={running} spellcheck={false} autocapitalize="off" />
        </label>
        {running ? (
          <button type="button" class="danger" onClick={() => setSession(undefined)}>
            Disconnect
          </button>
        ) : (
          <button type="submit" disabled={!task}>
            {session ? 'Run again' : 'Connect'}
          </button>
        )}
      </form>
      {taskState !== 'running' ? <p class="hint">The task is {taskState ?? 'not started'}: exec needs it running.</p> : null}
      {state && session ? (
        <p class={`exec-status${state.phase === 'closed' ? ' error' : ''}`} role="status" data-exec-phase={state.phase} data-exit-code={state.phase === 'exited' ? state.exitCode : undefined}>
          {describe(state, session.command.join(' '))}
        </p>
      ) : null}
      {session ? <TerminalSession key={session.n} allocId={alloc.ID} task={task} command={session.command} cli={execCommandLine(alloc, task, session.command)} onState={setState} /> : null}
    </main>
  );
}

export function AllocExecPage() {
  const { params } = useRoute();
  const id = params['id'] ?? '';
  const canWrite = useCanWrite();
  const { data: alloc, error } = useAllocation(id);
  if (!alloc) return <main id="main"><Loading error={error} /></main>;
  if (!canWrite) {
    return (
      <main id="main" class="alloc-tool">
        <ToolsNav alloc={alloc} tool="exec" task="" />
        <h1>Exec</h1>
        <p class="muted">Exec needs a management token: this token may only read.</p>
      </main>
    );
  }
  return <ExecView alloc={alloc} />;
}
