// The allocation tools' calls on the public API (Nomad's client routes):
// a task's logs followed as Nomad's framed stream (GET /v1/client/fs/logs),
// the allocation directory listed and read (fs/ls, fs/stat, fs/readat,
// fs/cat) and the exec WebSocket's URL and frames
// (/v1/client/allocation/:id/exec, api/allocations_exec.go's protocol).

import type { AllocFileInfo, ExecStreamingOutput } from '../../src/api/index.js';
import { fail, getJson, headers, savedToken } from './api';

const enc = encodeURIComponent;

export type FileInfo = AllocFileInfo;
export type LogType = 'stdout' | 'stderr';

/** One frame of Nomad's StreamFrame stream: base64 `Data`, `Offset` after it, a `FileEvent`; `{}` is a heartbeat. */
interface Frame {
  Data?: string;
  Offset?: number;
  File?: string;
  FileEvent?: string;
}

/** Base64 to bytes. */
export function fromBase64(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Bytes (or UTF-8 text) to base64. */
export function toBase64(data: Uint8Array | string): string {
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : data;
  let bin = '';
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

/**
 * Follows a task's stdout or stderr from its last `tailBytes` (Nomad's
 * `origin=end&offset=N&follow=true`, framed): `onText` gets the text of each
 * frame, decoded as UTF-8 across frames; `onEvent` a frame's FileEvent
 * ("file truncated"...); `onOpen` when the agent accepted. Resolves when the stream ends (the task's logs
 * closed, or `signal` fired); rejects with ApiError when refused.
 */
export async function followLogs(
  allocId: string,
  task: string,
  type: LogType,
  opts: { tailBytes: number; signal: AbortSignal; onOpen?: () => void; onText: (text: string) => void; onEvent?: (event: string) => void },
): Promise<void> {
  const q = `task=${enc(task)}&type=${type}&follow=true&origin=end&offset=${opts.tailBytes}`;
  const res = await fetch(`/v1/client/fs/logs/${enc(allocId)}?${q}`, { headers: headers(), signal: opts.signal, cache: 'no-store' });
  if (!res.ok) return fail(res);
  opts.onOpen?.();
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const utf8 = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let cut: number;
      while ((cut = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, cut).trim();
        buf = buf.slice(cut + 1);
        if (!line) continue;
        const frame = JSON.parse(line) as Frame;
        if (frame.FileEvent) opts.onEvent?.(frame.FileEvent);
        if (frame.Data) opts.onText(utf8.decode(fromBase64(frame.Data), { stream: true }));
      }
    }
  } catch (err) {
    if (opts.signal.aborted) return;
    throw err;
  }
}

/** The entries of a directory of the allocation (`path` from its root, `/` the root). */
export function listDir(allocId: string, path: string): Promise<FileInfo[]> {
  return getJson<FileInfo[]>(`/v1/client/fs/ls/${enc(allocId)}?path=${enc(path)}`);
}

/** One entry of the allocation directory, with its ContentType. */
export function statPath(allocId: string, path: string): Promise<FileInfo> {
  return getJson<FileInfo>(`/v1/client/fs/stat/${enc(allocId)}?path=${enc(path)}`);
}

/** The API path that answers a whole file's bytes (Nomad's fs/cat). */
export function catPath(allocId: string, path: string): string {
  return `/v1/client/fs/cat/${enc(allocId)}?path=${enc(path)}`;
}

/** The first `limit` bytes of a file (Nomad's fs/readat). */
export async function readHead(allocId: string, path: string, limit: number): Promise<Uint8Array> {
  const res = await fetch(`/v1/client/fs/readat/${enc(allocId)}?path=${enc(path)}&offset=0&limit=${limit}`, { headers: headers() });
  if (!res.ok) return fail(res);
  return new Uint8Array(await res.arrayBuffer());
}

/** A whole file as a Blob (fs/cat with the token), for a download. */
export async function fetchFile(allocId: string, path: string): Promise<Blob> {
  const res = await fetch(catPath(allocId, path), { headers: headers() });
  if (!res.ok) return fail(res);
  return res.blob();
}

/** The exec WebSocket's URL for `command` in `task`, with Nomad's browser handshake (the token in the first message). */
export function execUrl(allocId: string, task: string, command: string[], tty = true): string {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const q = `task=${enc(task)}&command=${enc(JSON.stringify(command))}&tty=${tty}&ws_handshake=true`;
  return `${proto}//${location.host}/v1/client/allocation/${enc(allocId)}/exec?${q}`;
}

/** The first message of the exec socket: Nomad's handshake with the tab's token. */
export function execHandshake(): string {
  return JSON.stringify({ version: 1, auth_token: savedToken() });
}

export const execFrames = {
  stdin: (data: string): string => JSON.stringify({ stdin: { data: toBase64(data) } }),
  resize: (cols: number, rows: number): string => JSON.stringify({ tty_size: { width: cols, height: rows } }),
  /** An output frame read: its bytes, or the exit code when the command ended. */
  parse: (raw: string): { out?: Uint8Array; exitCode?: number } => {
    const f = JSON.parse(raw) as ExecStreamingOutput;
    const data = f.stdout?.data ?? f.stderr?.data;
    if (data) return { out: fromBase64(data) };
    if (f.exited) return { exitCode: f.result?.exit_code ?? 0 };
    return {};
  },
};

/**
 * Whether bytes look like text: no NUL and valid UTF-8 (a cut at the end of
 * a head read is allowed). Pure.
 */
export function looksLikeText(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: true });
    return true;
  } catch {
    return false;
  }
}
