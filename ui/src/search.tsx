// The header's search box: what the typed text names (Nomad's fuzzy search:
// jobs with their groups, tasks, services and commands, nodes, allocations,
// plugins, volumes; and IDs by prefix for allocations and nodes), listed by
// kind; a choice opens its page. Keyboard: arrow keys move, Enter opens,
// Escape closes (a combobox with a listbox, as ARIA's pattern).

import { useEffect, useRef, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso/router';
import { fuzzySearch, prefixSearch, type FuzzySearchResponse, type SearchResponse } from './api-editor';
import './search.css';

/** One result: what it is, its name, where it leads and what holds it. */
export interface Hit {
  kind: string;
  label: string;
  href: string;
  detail: string;
}

const enc = encodeURIComponent;
const KINDS: Record<string, string> = {
  jobs: 'Job',
  groups: 'Group',
  tasks: 'Task',
  services: 'Service',
  commands: 'Command',
  images: 'Image',
  nodes: 'Node',
  allocs: 'Allocation',
  plugins: 'CSI plugin',
  volumes: 'Volume',
};
/** Contexts in the order they are listed. */
const ORDER = Object.keys(KINDS);
const PER_KIND = 6;

/** The page a match leads to, and what holds it; undefined for a match no page shows. Pure. */
export function hitOf(ctx: string, id: string, scope: readonly string[] = []): Hit | undefined {
  const kind = KINDS[ctx];
  if (!kind) return undefined;
  const [a = '', b = ''] = scope;
  switch (ctx) {
    case 'nodes':
      return { kind, label: id, href: `/ui/nodes/${enc(a || id)}`, detail: (a || id).slice(0, 8) };
    case 'allocs':
      return { kind, label: id, href: `/ui/allocations/${enc(b || id)}`, detail: `${a} · ${(b || id).slice(0, 8)}` };
    case 'plugins':
      return { kind, label: id, href: `/ui/plugins/${enc(id)}`, detail: '' };
    case 'volumes':
      return { kind, label: id, href: `/ui/volumes/${enc(a || 'default')}/${enc(id)}`, detail: a };
    case 'jobs':
      return { kind, label: id, href: `/ui/jobs/${enc(a)}/${enc(b || id)}`, detail: a };
    default:
      // A part of a job: its page is the job's.
      return { kind, label: id, href: `/ui/jobs/${enc(a)}/${enc(b)}`, detail: scope.slice(1).join(' › ') };
  }
}

/** The hits of a fuzzy answer and a prefix answer, by kind, each kind at most PER_KIND, without repeats. Pure. */
export function hitsOf(fuzzy: FuzzySearchResponse, prefix?: SearchResponse): Hit[] {
  const out: Hit[] = [];
  const seen = new Set<string>();
  for (const ctx of ORDER) {
    const found: Hit[] = [];
    for (const m of fuzzy.Matches?.[ctx] ?? []) {
      const h = hitOf(ctx, m.ID, m.Scope ?? []);
      if (h) found.push(h);
    }
    // An ID typed: the node or allocation it starts.
    for (const id of ctx === 'nodes' || ctx === 'allocs' ? (prefix?.Matches?.[ctx] ?? []) : []) {
      found.push({ kind: KINDS[ctx] as string, label: id.slice(0, 8), href: ctx === 'nodes' ? `/ui/nodes/${enc(id)}` : `/ui/allocations/${enc(id)}`, detail: id });
    }
    for (const h of found.slice(0, PER_KIND)) {
      const key = `${h.kind}\u0000${h.href}\u0000${h.label}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(h);
    }
  }
  return out;
}

export function SearchBox() {
  const { route } = useLocation();
  const [text, setText] = useState('');
  const [hits, setHits] = useState<Hit[]>([]);
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const [note, setNote] = useState('');
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    const q = text.trim();
    if (q.length < 2) {
      setHits([]);
      setNote(q ? 'Type at least 2 characters' : '');
      return;
    }
    const abort = new AbortController();
    const timer = setTimeout(() => {
      const ids = /^[0-9a-f-]+$/i.test(q) ? prefixSearch(q.toLowerCase(), abort.signal).catch(() => undefined) : Promise.resolve(undefined);
      Promise.all([fuzzySearch(q, abort.signal), ids]).then(
        ([fuzzy, prefix]) => {
          const found = hitsOf(fuzzy, prefix);
          setHits(found);
          setActive(found.length ? 0 : -1);
          setNote(found.length ? '' : `Nothing matches "${q}"`);
        },
        (err: Error) => {
          if (!abort.signal.aborted) setNote(`Search failed: ${err.message}`);
        },
      );
    }, 120);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [text]);

  const go = (h: Hit | undefined): void => {
    if (!h) return;
    setOpen(false);
    setText('');
    input.current?.blur();
    route(h.href);
  };

  const onKeyDown = (e: KeyboardEvent): void => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      setOpen(true);
      if (!hits.length) return;
      const step = e.key === 'ArrowDown' ? 1 : -1;
      setActive((i) => (i + step + hits.length) % hits.length);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      go(hits[active] ?? hits[0]);
    } else if (e.key === 'Escape') {
      if (open && text) {
        e.preventDefault();
        setOpen(false);
      } else {
        setText('');
      }
    }
  };

  const show = open && (hits.length > 0 || note !== '');
  return (
    <div class="search" role="search">
      <label for="search-input" class="sr-only">
        Search jobs, nodes, allocations, volumes
      </label>
      <input
        id="search-input"
        ref={input}
        type="search"
        placeholder="Search…"
        autocomplete="off"
        spellcheck={false}
        role="combobox"
        list={undefined}
        aria-expanded={show}
        aria-controls="search-results"
        aria-autocomplete="list"
        aria-activedescendant={show && active >= 0 ? `search-hit-${active}` : undefined}
        value={text}
        onInput={(e) => {
          setText((e.currentTarget as HTMLInputElement).value);
          setOpen(true);
        }}
        onFocus={() => setOpen(true)}
        // Closed a moment after the focus leaves (a click on a hit lands first), unless it came back meanwhile.
        onBlur={() => setTimeout(() => document.activeElement !== input.current && setOpen(false), 150)}
        onKeyDown={onKeyDown}
      />
      {show ? (
        <ul id="search-results" role="listbox" aria-label="Search results" class="search-results">
          {hits.map((h, i) => (
            <li
              id={`search-hit-${i}`}
              role="option"
              aria-selected={i === active}
              data-hit={h.kind}
              class={i === active ? 'active' : ''}
              onMouseDown={(e) => {
                e.preventDefault();
                go(h);
              }}
              onMouseEnter={() => setActive(i)}
            >
              <span class="kind">{h.kind}</span> <span class="label">{h.label}</span>
              {h.detail ? <span class="detail">{h.detail}</span> : null}
            </li>
          ))}
          {note ? (
            <li class="note" role="option" aria-disabled="true" aria-selected={false}>
              {note}
            </li>
          ) : null}
        </ul>
      ) : null}
    </div>
  );
}
