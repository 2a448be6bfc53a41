// consul-template's Nomad service functions: `nomadService "name"` (or
// "tag.name"; or `nomadService 2 "key" "name"` for two instances chosen by
// rendezvous hashing on key) and `nomadServices`. They read a ServiceLookup
// the template hook fills from the server's blocking queries; an unknown
// service answers undefined, the hook fetches it and renders again.

import { createHash } from 'node:crypto';
import { fn, int, str, type TemplateFunction } from './_values.js';

/** One instance as templates see it (consul-template's NomadService fields). */
export interface ServiceInstance {
  ID: string;
  Name: string;
  ServiceName: string;
  Namespace: string;
  NodeID: string;
  Datacenter: string;
  JobID: string;
  AllocID: string;
  Tags: string[];
  Address: string;
  Port: number;
}

/** Where the functions read services from. Synchronous: the hook fetches ahead. */
export interface ServiceLookup {
  /** Healthy instances of `name` carrying `tag` (when given), or undefined when not fetched yet. */
  instances(name: string, tag: string | undefined): ServiceInstance[] | undefined;
  /** The service names with healthy instances, or undefined when not fetched yet. */
  names(): Array<{ Name: string; Tags: string[] }> | undefined;
}

const QUERY = /^(?:([\w\-.]+)\.)?([\w\-/]+)(?:@([\w.-]+))?$/;

/** `tag.name@region` -> its parts; throws for a malformed query. */
export function parseServiceQuery(q: string): { name: string; tag: string | undefined } {
  const m = QUERY.exec(q);
  if (!m) throw new Error(`nomadService: "${q}" is not a service query ("name" or "tag.name")`);
  return { name: m[2] as string, tag: m[1] };
}

function choose(list: ServiceInstance[], count: number, key: string): ServiceInstance[] {
  const score = (s: ServiceInstance): string => createHash('sha256').update(`${key}\0${s.ID}`).digest('hex');
  return list
    .map((s) => ({ s, h: score(s) }))
    .sort((a, b) => (a.h < b.h ? -1 : a.h > b.h ? 1 : 0))
    .slice(0, count)
    .map((x) => x.s);
}

/** The functions, reading `lookup` (absent: they fail with a clear message). */
export function nomadServiceFunctions(lookup: ServiceLookup | undefined): Map<string, TemplateFunction> {
  const need = (): ServiceLookup => {
    if (!lookup) throw new Error('nomadService needs the agent\'s connection to the servers, which this rendering has not');
    return lookup;
  };
  return new Map<string, TemplateFunction>([
    [
      'nomadService',
      fn(1, 3, (args) => {
        if (args.length === 2) throw new Error('nomadService takes a service query, or a count, a key and a query');
        const q = parseServiceQuery(str(args[args.length - 1]));
        const found = need().instances(q.name, q.tag) ?? [];
        return args.length === 3 ? choose(found, int(args[0]), String(args[1])) : found;
      }),
    ],
    ['nomadServices', fn(0, 0, () => need().names() ?? [])],
  ]);
}
