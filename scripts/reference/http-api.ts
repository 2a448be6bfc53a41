// docs/reference/http-api.md: every route of the HTTP API, as the API
// registers them. The server's API (buildApi) and the agent's own routes
// (the web UI, a node agent's /v1/client/...) are built on throwaway fastify
// instances, never listening, with services that are never called; fastify's
// `fastify.initialization` diagnostics channel hands over each instance as
// it is made, so its onRoute hook sees every route. What each route takes
// and returns is what its module's comments and types say (route-notes.ts).

import { channel } from 'node:diagnostics_channel';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { Registry } from 'prom-client';
import { registerClientRoutes, registerUiRoutes } from '../../src/agent/index.js';
import { silentLogger } from '../../src/lib/index.js';
import { buildApi, type ApiDeps } from '../../src/server/index.js';
import { anchor, cell, code, generatedNote, table } from './markdown.js';
import { routeNotes, type RouteNote } from './route-notes.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Routes Nomad's API does not have (checked against Nomad's API docs and
 * command/agent/http.go): Berth's node protocol and its volume health,
 * drift and claim routes. Every other /v1 route is Nomad's path. An entry
 * that matches no route fails the generator, so the list cannot go stale.
 */
const BERTH_ADDITIONS: readonly RegExp[] = [
  /^\/v1\/client\/self$/,
  /^\/v1\/internal\//,
  /^\/v1\/node\/register$/,
  /^\/v1\/node\/connect$/,
  /^\/v1\/node\/:id\/(heartbeat|allocation-indexes|allocations\/pull|volume-stats)$/,
  /^\/v1\/volume\/csi\/:id\/(claim|claim\/:alloc|release|expand|usage|drift)$/,
  /^\/v1\/volumes\/(csi\/claims|drift|doctor)$/,
];

interface Route {
  methods: string[];
  url: string;
  access: string;
  websocket: boolean;
}

/** Who may call a route, in the words of the token roles (src/server/http/auth.ts). */
const ACCESS_WORDS: Record<string, string> = {
  public: 'anyone',
  read: 'read',
  write: 'management',
  node: 'node',
  'node-read': 'read, node',
};

/** Builds the API and the agent's routes without serving them, and lists what they registered (HEAD beside GET left out). */
async function registeredRoutes(): Promise<Route[]> {
  const seen: { method: string; url: string; access: string; websocket: boolean }[] = [];
  const onInit = (message: unknown): void => {
    const app = (message as { fastify: FastifyInstance }).fastify;
    app.addHook('onRoute', (r: RouteOptions & { websocket?: boolean }) => {
      const access = (r.config as { access?: string } | undefined)?.access ?? '';
      for (const method of [r.method].flat()) seen.push({ method: String(method), url: r.url, access, websocket: r.websocket === true });
    });
  };
  const init = channel('fastify.initialization');
  init.subscribe(onInit);
  try {
    // Services the routes would call at a request; none is called while routes are registered.
    const never = {} as never;
    const logger = silentLogger();
    const deps: ApiDeps = {
      logger,
      tokens: [],
      store: never,
      jobs: never,
      nodes: never,
      volumes: never,
      connections: never,
      deployments: never,
      gc: never,
      hostVolumes: never,
      health: never,
      doctor: never,
      metrics: { registry: new Registry() } as never,
      // As a dev agent: its own client routes below (a server agent declares the same paths to forward them).
      localClient: { nodeId: () => undefined },
      extraRoutes: async (app) => {
        await registerUiRoutes(app);
        registerClientRoutes(app, { client: () => undefined, drivers: new Map(), logger });
      },
    };
    const app = await buildApi(deps);
    await app.close();
  } finally {
    init.unsubscribe(onInit);
  }
  const byUrl = new Map<string, Route>();
  for (const r of seen) {
    if (r.method === 'HEAD') continue;
    const k = `${r.url}\0${r.access}`;
    const route = byUrl.get(k) ?? { methods: [], url: r.url, access: r.access, websocket: false };
    if (!route.methods.includes(r.method)) route.methods.push(r.method);
    route.websocket ||= r.websocket;
    byUrl.set(k, route);
  }
  const routes = [...byUrl.values()];
  for (const r of routes) r.methods.sort(byMethod);
  return routes.sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : byMethod(a.methods[0] ?? '', b.methods[0] ?? '')));
}

const METHOD_ORDER = ['GET', 'PUT', 'POST', 'DELETE'];
const byMethod = (a: string, b: string): number => METHOD_ORDER.indexOf(a) - METHOD_ORDER.indexOf(b);

type Group = 'nomad' | 'berth' | 'ui';

/** `src/server/http/job-routes.ts` -> `job-routes`. */
const moduleName = (file: string): string => (file.split('/').pop() ?? file).replace(/\.ts$/, '');

function groupOf(url: string): Group {
  if (!url.startsWith('/v1/')) return 'ui';
  return BERTH_ADDITIONS.some((p) => p.test(url.replace(/:[A-Za-z_]+/g, (m) => (m === ':alloc' ? m : ':id')))) ? 'berth' : 'nomad';
}

/** The Markdown of docs/reference/http-api.md. */
export async function httpApiReference(): Promise<string> {
  const routes = await registeredRoutes();
  const sources = routeNotes(root, ['src/server/http', 'src/agent']);
  for (const p of BERTH_ADDITIONS) {
    if (!routes.some((r) => groupOf(r.url) === 'berth' && p.test(r.url.replace(/:[A-Za-z_]+/g, (m) => (m === ':alloc' ? m : ':id'))))) {
      throw new Error(`gen-reference: BERTH_ADDITIONS entry ${p} matches no route; remove it`);
    }
  }
  // One row per path, token and what the sources say: methods that share all three share a row.
  const rows = (group: Group): string[][] =>
    routes
      .filter((r) => groupOf(r.url) === group)
      .flatMap((r) => {
        const byNote = new Map<string, { methods: string[]; note: RouteNote }>();
        // What the sources say of every method at this path, whatever its token.
        const said = routes.filter((o) => o.url === r.url).flatMap((o) => o.methods.map((m) => sources.note(m, o.url)));
        for (const m of r.methods) {
          let note = sources.note(m, r.url);
          // A method the sources do not describe shares the words of one that says it takes that method too ("POST too").
          const sibling = note.description ? undefined : said.find((n) => n.description && new RegExp(`\\b${m}\\b`).test(n.description));
          if (sibling?.description) note = { ...note, description: sibling.description };
          const k = JSON.stringify(note);
          const entry = byNote.get(k) ?? { methods: [], note };
          entry.methods.push(m);
          byNote.set(k, entry);
        }
        return [...byNote.values()].map(({ methods, note }) => [
          methods.join(', ') + (r.websocket ? ' (WebSocket)' : ''),
          code(r.url),
          ACCESS_WORDS[r.access] ?? r.access,
          cell(note.description ?? ''),
          note.takes ? code(note.takes) : '',
          note.returns ? code(note.returns) : '',
          note.module ? `[${moduleName(note.module)}](#${anchor(moduleName(note.module))})` : '',
        ]);
      });
  const headers = ['method', 'path', 'token', 'what it does', 'takes (query, body)', 'returns', 'module'];
  const modules = [...sources.headers].filter(([file]) => routes.some((r) => r.methods.some((m) => sources.note(m, r.url).module === file)));
  const count = (g: Group): number => routes.filter((r) => groupOf(r.url) === g).length;
  return [
    generatedNote('the routes the API registers (src/server/http, src/agent) and their modules\' comments and types'),
    '# HTTP API reference\n',
    "Every route Berth's agent serves, as its API registers them. Berth's API is Nomad's `/v1` HTTP API (its paths, methods and PascalCase shapes, src/api); [docs/nomad-api.md](../nomad-api.md) says how that is checked with Nomad's own CLI. Shapes named `Berth...` and the routes under [Berth additions](#berth-additions) are Berth's own.\n",
    '- A GET also answers HEAD. Reads take Nomad\'s blocking-query (`index`, `wait`), `namespace`, `prefix`, `filter`, `per_page` and `next_token` parameters where Nomad\'s do.',
    '- **token**: the role a token needs (`X-Nomad-Token: <secret>` or `Authorization: Bearer <secret>`): `read` is a read-only or management token, `management` a management token, `node` a client node\'s token; `anyone` needs none.',
    '- **what it does**, **takes** and **returns** are the route module\'s own comment and declared types (`api.X` is the shape `X` of src/api); an empty cell means the module says nothing of that route alone: its **module**\'s header, under [Route modules](#route-modules), says what its routes share.',
    '- Errors answer Nomad\'s plain text, or `{ code, message, details }` to a caller that accepts JSON.\n',
    `## Nomad's API\n`,
    `${count('nomad')} routes at Nomad's paths.\n`,
    table(headers, rows('nomad')),
    '## Berth additions\n',
    `${count('berth')} routes Nomad's API does not have: the node agent's protocol with the servers, and volume claims, usage, drift and repair.\n`,
    table(headers, rows('berth')),
    '## Web UI\n',
    table(headers, rows('ui')),
    '## Route modules\n',
    "What each module that registers routes says of them as a whole (its header comment): the query parameters, bodies and answers its routes share.\n",
    ...modules.flatMap(([file, text]) => [`### ${moduleName(file)}\n`, `${code(file)}:\n`, '```text\n' + text + '\n```\n']),
  ].join('\n');
}
