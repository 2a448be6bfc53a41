// The web UI's files at /ui, on every listener that serves the API (dev and
// server agents). The files are built at install time (scripts/build.mjs
// builds ui/ into dist/ui, with a .gz beside each); nothing is fetched or
// built at run time. Deep links (/ui/volumes/x) get index.html, whose script
// routes them. The files hold no cluster data, so they need no token
// (access 'public'); the page asks for one before it reads the API. The file
// server (@fastify/static, with its send and mime modules) loads on the first
// request under /ui, not at the agent's start: an agent that is never browsed
// never parses it.

import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { NO_SCHEMA_COMPILERS } from '../server/index.js';

/**
 * Where the built UI is: dist/ui next to the running bundle, or the
 * repository's dist/ui when Berth runs from its sources (tsx). Undefined
 * when the UI was never built.
 */
export function builtUiDir(): string | undefined {
  const candidates = [fileURLToPath(new URL('./ui/', import.meta.url)), fileURLToPath(new URL('../../dist/ui/', import.meta.url))];
  return candidates.find((dir) => existsSync(path.join(dir, 'index.html')));
}

/** A file the request names, relative to `root`, when it is a regular file inside it. */
function fileUnder(root: string, rel: string): string | undefined {
  if (!rel || rel.includes('\0')) return undefined;
  const full = path.resolve(root, rel);
  if (!full.startsWith(root + path.sep)) return undefined;
  try {
    return statSync(full).isFile() ? path.relative(root, full) : undefined;
  } catch {
    return undefined;
  }
}

function sendIndex(reply: FastifyReply): FastifyReply {
  // Never cached: it names the current build's hashed assets.
  return reply.header('Cache-Control', 'no-cache').sendFile('index.html', { cacheControl: false });
}

/**
 * Registers GET /ui, /ui/ and /ui/* (and `/` redirecting to /ui/). Assets
 * (content-hashed names) are cached for a year; an unknown path under /ui
 * answers index.html. Without a built UI (no index.html in `opts.dir`, by
 * default builtUiDir()), /ui answers 404 with how to build it. Safe to call
 * once per app.
 */
export async function registerUiRoutes(app: FastifyInstance, opts: { dir?: string } = {}): Promise<void> {
  const dir = opts.dir === undefined ? builtUiDir() : existsSync(path.join(opts.dir, 'index.html')) ? opts.dir : undefined;
  const publicRoute = { config: { access: 'public' as const } };
  app.get('/', publicRoute, async (_req, reply) => reply.redirect('/ui/', 302));
  app.get('/ui', publicRoute, async (_req, reply) => reply.redirect('/ui/', 301));
  if (!dir) {
    app.get('/ui/*', publicRoute, async (_req, reply) =>
      reply.status(404).send({ code: 'NOT_FOUND', message: 'the web UI is not built: run `npm run build` in the Berth checkout', details: {} }),
    );
    return;
  }
  const root = path.resolve(dir);
  let files: Promise<FastifyInstance> | undefined;
  app.addHook('onClose', async () => void (await files?.catch(() => undefined))?.close());
  app.get('/ui/*', publicRoute, async (req, reply) => {
    files ??= fileServer(root);
    const server = await files.catch((err: unknown) => {
      files = undefined; // the next request tries again
      throw err;
    });
    // Answered by the file server's own routing, on the same request and response.
    reply.hijack();
    server.routing(req.raw, reply.raw);
  });
}

/**
 * The /ui/* file server, built at the first request under /ui: its own
 * fastify instance (never listening) with @fastify/static, loaded then.
 */
async function fileServer(root: string): Promise<FastifyInstance> {
  const { default: fastifyStatic } = await import('@fastify/static');
  const server = Fastify({ logger: false, schemaController: NO_SCHEMA_COMPILERS });
  await server.register(fastifyStatic, { root, serve: false, preCompressed: true, dotfiles: 'deny' });
  server.get<{ Params: { '*': string } }>('/ui/*', async (req, reply) => {
    const file = fileUnder(root, req.params['*']);
    if (!file || file === 'index.html') return sendIndex(reply);
    return reply.sendFile(file, { maxAge: 365 * 24 * 3600 * 1000, immutable: true });
  });
  await server.ready();
  return server;
}
