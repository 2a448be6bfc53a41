// The allocation directory, browsed as `berth alloc fs` does: a directory's
// entries (GET /v1/client/fs/ls/:id) with size, mode and modification time,
// breadcrumbs back up; a file's facts (fs/stat) and its first HEAD_BYTES as
// text (fs/readat), or a note that it is binary; the whole file downloads
// from fs/cat with the tab's token.

import { useState } from 'preact/hooks';
import { useRoute } from 'preact-iso/router';
import { catPath, fetchFile, listDir, looksLikeText, readHead, statPath, type FileInfo } from '../api-alloc-tools';
import { bytes, Facts, Loading, Table, time } from '../components';
import { useLive } from '../live';
import { toolError, ToolsNav, useAllocation } from './alloc-tools-nav';

/** How much of a file the page shows. */
export const HEAD_BYTES = 64 * 1024;

const enc = encodeURIComponent;

/** The segments of an allocation path (`/alloc/logs` -> ['alloc', 'logs']). Pure. */
export function segmentsOf(path: string): string[] {
  return path.split('/').filter((s) => s && s !== '.' && s !== '..');
}

/** The UI path of an allocation path. Pure. */
export function fsHref(allocId: string, segments: string[]): string {
  return `/ui/allocations/${enc(allocId)}/fs${segments.length ? `/${segments.map(enc).join('/')}` : ''}`;
}

/** Directories first, then by name. Pure. */
export function sortEntries(entries: FileInfo[]): FileInfo[] {
  return [...entries].sort((a, b) => (a.IsDir === b.IsDir ? a.Name.localeCompare(b.Name) : a.IsDir ? -1 : 1));
}

function Breadcrumbs({ allocId, segments }: { allocId: string; segments: string[] }) {
  return (
    <nav aria-label="Path">
      <ol class="breadcrumbs">
        <li>
          {segments.length ? <a href={fsHref(allocId, [])}>allocation directory</a> : <span aria-current="page">allocation directory</span>}
        </li>
        {segments.map((s, i) => (
          <li>{i === segments.length - 1 ? <span aria-current="page">{s}</span> : <a href={fsHref(allocId, segments.slice(0, i + 1))}>{s}</a>}</li>
        ))}
      </ol>
    </nav>
  );
}

function Listing({ allocId, segments, entries }: { allocId: string; segments: string[]; entries: FileInfo[] }) {
  return (
    <Table
      label="entries of the directory"
      head={['Name', 'Size', 'Mode', 'Modified']}
      empty="This directory is empty."
      rows={sortEntries(entries).map((e) => [
        <>
          <a href={fsHref(allocId, [...segments, e.Name])} data-entry={e.Name}>
            {e.Name}
            {e.IsDir ? '/' : ''}
          </a>
          {e.LinkTarget ? <span class="muted"> → {e.LinkTarget}</span> : null}
        </>,
        e.IsDir ? '-' : <span data-size={e.Size}>{bytes(e.Size)}</span>,
        <code>{e.FileMode}</code>,
        time(Date.parse(e.ModTime) || undefined),
      ])}
    />
  );
}

function Download({ allocId, path, name }: { allocId: string; path: string; name: string }) {
  const [error, setError] = useState<string | undefined>();
  // The link is the API's; the click fetches it with the tab's token (a plain link cannot send it).
  const onClick = (e: MouseEvent): void => {
    e.preventDefault();
    setError(undefined);
    fetchFile(allocId, path).then(
      (blob) => {
        const url = URL.createObjectURL(blob);
        const a = document.createElement('a');
        a.href = url;
        a.download = name;
        a.click();
        setTimeout(() => URL.revokeObjectURL(url), 60_000);
      },
      (err: unknown) => setError(err instanceof Error ? err.message : String(err)),
    );
  };
  return (
    <p>
      <a href={catPath(allocId, path)} download={name} onClick={onClick}>
        Download {name}
      </a>
      {error ? <span class="error" role="alert"> {error}</span> : null}
    </p>
  );
}

function FileView({ allocId, path, info, head }: { allocId: string; path: string; info: FileInfo; head: Uint8Array }) {
  const text = looksLikeText(head);
  const cut = info.Size > head.length;
  return (
    <>
      <Facts
        items={[
          ['Size', <span data-size={info.Size}>{bytes(info.Size)}</span>],
          ['Mode', <code>{info.FileMode}</code>],
          ['Modified', time(Date.parse(info.ModTime) || undefined)],
          ['Content type', info.ContentType || '-'],
        ]}
      />
      <Download allocId={allocId} path={path} name={info.Name} />
      {text ? (
        <>
          {cut ? <p class="hint">The first {bytes(head.length)} of {bytes(info.Size)}; download the file for the rest.</p> : null}
          <pre class="logs file-view" tabIndex={0} aria-label={`content of ${info.Name}`} data-file={path}>
            {new TextDecoder().decode(head)}
          </pre>
        </>
      ) : (
        <p class="hint">A binary file: download it to read it.</p>
      )}
    </>
  );
}

type Loaded = { kind: 'dir'; entries: FileInfo[] } | { kind: 'file'; info: FileInfo; head: Uint8Array };

async function load(allocId: string, path: string): Promise<Loaded> {
  if (path === '/') return { kind: 'dir', entries: await listDir(allocId, path) };
  const info = await statPath(allocId, path);
  if (info.IsDir) return { kind: 'dir', entries: await listDir(allocId, path) };
  return { kind: 'file', info, head: await readHead(allocId, path, HEAD_BYTES) };
}

export function AllocFilesPage() {
  const { params } = useRoute();
  const id = params['id'] ?? '';
  const segments = segmentsOf(params['path'] ?? '');
  const path = `/${segments.join('/')}`;
  const { data: alloc, error: allocError } = useAllocation(id);
  // Files change without events: read again every few seconds.
  const { data, error } = useLive(`alloc-fs/${id}${path}`, ['Allocation'], () => load(id, path), { everyMs: 5000 });
  if (!alloc) return <main id="main"><Loading error={allocError} /></main>;
  return (
    <main id="main" class="alloc-tool">
      <ToolsNav alloc={alloc} tool="fs" task="" />
      <h1>Files {path}</h1>
      <Breadcrumbs allocId={id} segments={segments} />
      {!data ? (
        error ? <p class="error" role="alert">Files unavailable: {toolError(error, `berth alloc fs ${alloc.ID} ${path}`)}</p> : <p class="loading">Loading…</p>
      ) : data.kind === 'dir' ? (
        <Listing allocId={id} segments={segments} entries={data.entries} />
      ) : (
        <FileView allocId={id} path={path} info={data.info} head={data.head} />
      )}
    </main>
  );
}
