// The event stream as an operator's list of changes: each meaningful change
// in words ("allocation 1a2b3c4d of job web failed", "volume data released by
// allocation ..."), routine ones left out and counted (drift checks, a
// plugin's or an allocation's update that changed nothing one reads, garbage
// collection), repeats folded into one row. Pure functions over events.

import type { StreamEvent } from './api';

/** One change in words, with what it is about. */
export interface Change {
  /** The newest index of the change (of its last repeat). */
  index: number;
  words: string;
  /** The object, as an operator names it (`namespace/key`, or its key), and where it leads in the UI. */
  object: string;
  href: string | undefined;
  tone: 'bad' | 'good' | 'neutral';
  /** How many events in a row said the same. */
  times: number;
}

export interface Changes {
  changes: Change[];
  /** Events left out, by why: "drift checks", "routine updates". */
  hidden: Record<string, number>;
}

const short = (id: string): string => id.slice(0, 8);
const rec = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : '');

/** Where an event's object leads in the UI. */
export function eventLink(ev: StreamEvent): string | undefined {
  const ns = encodeURIComponent(ev.Namespace || 'default');
  const key = encodeURIComponent(ev.Key);
  switch (ev.Topic) {
    case 'Node':
    case 'NodeDrain':
      return `/ui/nodes/${key}`;
    case 'CSIPlugin':
      return `/ui/plugins/${key}`;
    case 'CSIVolume':
    case 'volume-condition':
      return `/ui/volumes/${ns}/${key}`;
    case 'claim':
      return `/ui/volumes/${ns}/${encodeURIComponent(ev.Key.split('/')[0] ?? '')}`;
    case 'Job':
      return `/ui/jobs/${ns}/${key}`;
    case 'Allocation':
      return `/ui/allocations/${key}`;
    case 'drift':
      return '/ui/volumes/doctor';
    default:
      return undefined;
  }
}

/** The object an event is about, as an operator names it: `namespace/key` for a namespaced object, its key otherwise (nodes, plugins). */
export function eventObject(ev: StreamEvent): string {
  // An allocation's UUID shortened to its first 8 characters, as the pages show it.
  const key = ev.Key.split('/').map((k) => (/^[0-9a-f]{8}-[0-9a-f-]{27}$/.test(k) ? k.slice(0, 8) : k)).join('/');
  return ev.Namespace ? `${ev.Namespace}/${key}` : key;
}

type Said = { words: string; tone: Change['tone'] } | { hidden: string } | undefined;

/**
 * Reads events oldest first, remembering what each object last said so a
 * repeat of the same state says nothing. Not pure across calls: one per list.
 */
class Reader {
  readonly #last = new Map<string, string>();

  /** `words` when `state` is new for `key`, else hidden as a routine update. */
  #onChange(key: string, state: string, words: string, tone: Change['tone']): Said {
    if (this.#last.get(key) === state) return { hidden: 'routine updates' };
    this.#last.set(key, state);
    return { words, tone };
  }

  read(ev: StreamEvent): Said {
    const p = ev.Payload;
    const deleted = /Deleted$|Deregistration$/.test(ev.Type);
    switch (ev.Topic) {
      case 'Job': {
        const j = rec(p['Job']);
        if (p['Deleted']) return { words: `job ${ev.Key} purged`, tone: 'neutral' };
        if (j['Stop']) return this.#onChange(`job/${ev.Namespace}/${ev.Key}`, 'stop', `job ${ev.Key} stopped`, 'neutral');
        return this.#onChange(`job/${ev.Namespace}/${ev.Key}`, `v${str(j['Version'])}`, `job ${ev.Key} registered (version ${str(j['Version']) || '0'})`, 'neutral');
      }
      case 'Allocation': {
        if (deleted) return { hidden: 'garbage collection' };
        const a = rec(p['Allocation']);
        const status = str(a['ClientStatus']);
        const job = str(a['JobID']);
        const tone = status === 'failed' || status === 'lost' ? 'bad' : status === 'running' ? 'good' : 'neutral';
        const what = ev.Type === 'PlanResult' && status === 'pending' ? `placed${a['NodeID'] ? ` on node ${short(str(a['NodeID']))}` : ''}` : status;
        return this.#onChange(`alloc/${ev.Key}`, status, `allocation ${short(ev.Key)} of job ${job} ${what}`, tone);
      }
      case 'Evaluation': {
        if (deleted) return { hidden: 'garbage collection' };
        const e = rec(p['Evaluation']);
        const status = str(e['Status']);
        if (status !== 'blocked' && status !== 'failed') return { hidden: 'routine updates' };
        return this.#onChange(`eval/${ev.Key}`, status, `evaluation ${short(ev.Key)} of job ${str(e['JobID'])} ${status}${e['StatusDescription'] ? `: ${str(e['StatusDescription'])}` : ''}`, 'bad');
      }
      case 'Deployment': {
        if (deleted) return { hidden: 'garbage collection' };
        const d = rec(p['Deployment']);
        const status = str(d['Status']);
        const tone = status === 'failed' ? 'bad' : status === 'successful' ? 'good' : 'neutral';
        return this.#onChange(`deploy/${ev.Key}`, status, `deployment ${short(ev.Key)} of job ${str(d['JobID'])} ${status}`, tone);
      }
      case 'Node': {
        const n = rec(p['Node']);
        if (deleted) return { words: `node ${str(n['Name']) || short(ev.Key)} deregistered`, tone: 'neutral' };
        const status = str(n['Status']);
        const drain = n['DrainStrategy'] ? 'draining' : str(n['SchedulingEligibility']);
        const words = `node ${str(n['Name']) || short(ev.Key)} ${status}${drain === 'draining' ? ', draining' : drain === 'ineligible' ? ', ineligible' : ''}`;
        return this.#onChange(`node/${ev.Key}`, `${status}/${drain}`, words, status === 'down' ? 'bad' : status === 'ready' ? 'good' : 'neutral');
      }
      case 'CSIPlugin': {
        if (deleted) return { words: `plugin ${ev.Key} gone`, tone: 'neutral' };
        const pl = rec(p['Plugin']);
        const state = `${str(pl['ControllersHealthy'])}/${str(pl['ControllersExpected'])} ${str(pl['NodesHealthy'])}/${str(pl['NodesExpected'])}`;
        const healthy = Number(pl['ControllersHealthy']) >= Number(pl['ControllersExpected']) && Number(pl['NodesHealthy']) >= Number(pl['NodesExpected']);
        const words = `plugin ${ev.Key} ${healthy ? 'healthy' : 'unhealthy'}: controllers ${str(pl['ControllersHealthy'])}/${str(pl['ControllersExpected'])}, nodes ${str(pl['NodesHealthy'])}/${str(pl['NodesExpected'])}`;
        return this.#onChange(`plugin/${ev.Key}`, state, words, healthy ? 'good' : 'bad');
      }
      case 'CSIVolume':
        if (deleted) return { words: `volume ${ev.Key} deregistered`, tone: 'neutral' };
        return this.#onChange(`volume/${ev.Namespace}/${ev.Key}`, 'registered', `volume ${ev.Key} registered`, 'neutral');
      case 'claim': {
        const c = rec(p['Claim']);
        const [volume = '', alloc = str(c['AllocationID'])] = ev.Key.split('/');
        if (deleted) return this.#onChange(`claim/${ev.Namespace}/${ev.Key}`, 'released', `volume ${volume} released by allocation ${short(alloc)}${c['ReleaseReason'] ? ` (${str(c['ReleaseReason'])})` : ''}`, 'neutral');
        if (c['State'] !== 'taken') return { hidden: 'routine updates' };
        return this.#onChange(`claim/${ev.Namespace}/${ev.Key}`, 'taken', `volume ${volume} claimed for ${str(c['Mode']) === 'read' ? 'reading' : 'writing'} by allocation ${short(alloc)}`, 'neutral');
      }
      case 'volume-condition': {
        if (deleted) return { hidden: 'routine updates' };
        const c = rec(p['VolumeCondition']);
        const abnormal = c['Abnormal'] === true;
        // A volume first seen normal is not news; its turning abnormal (or back) is.
        const key = `cond/${ev.Namespace}/${ev.Key}`;
        if (!abnormal && !this.#last.has(key)) {
          this.#last.set(key, 'normal');
          return { hidden: 'routine updates' };
        }
        return this.#onChange(key, abnormal ? 'abnormal' : 'normal', abnormal ? `volume ${ev.Key} abnormal: ${str(c['Message'])}` : `volume ${ev.Key} normal again`, abnormal ? 'bad' : 'good');
      }
      case 'drift':
        return { hidden: 'drift checks' };
      case 'Service':
        return { hidden: 'service registrations' };
      default:
        return { hidden: 'routine updates' };
    }
  }
}

/**
 * The meaningful changes among `events` (any order; read oldest first),
 * newest first, at most `max`; repeats of the same words in a row folded
 * into one with `times`.
 */
export function meaningfulChanges(events: readonly StreamEvent[], max = 15): Changes {
  const reader = new Reader();
  const hidden: Record<string, number> = {};
  const out: Change[] = [];
  for (const ev of [...events].sort((a, b) => a.Index - b.Index)) {
    const said = reader.read(ev);
    if (!said) continue;
    if ('hidden' in said) {
      hidden[said.hidden] = (hidden[said.hidden] ?? 0) + 1;
      continue;
    }
    const prev = out[out.length - 1];
    if (prev && prev.words === said.words) {
      prev.times++;
      prev.index = ev.Index;
      continue;
    }
    out.push({ index: ev.Index, words: said.words, tone: said.tone, object: eventObject(ev), href: eventLink(ev), times: 1 });
  }
  return { changes: out.reverse().slice(0, max), hidden };
}
