/**
 * HEAD beside every GET route of the API, registered as one route for both methods.
 *
 * fastify's `exposeHeadRoutes` registers a second route (its "HEAD twin") for each GET: a
 * second pass through its route registration, a second route context, a second set of
 * lifecycle hooks bound at ready. The API has ~70 of them, 10-20 ms of CPU at every
 * agent's start. With `exposeHeadRoutes: false` on the instance and this onRoute hook, a GET
 * route is registered for ['GET', 'HEAD'] with the HEAD twin's last onSend hook, which acts
 * on HEAD requests only: a HEAD is answered as before (the GET's status and headers, the
 * length of the GET's body, no body; a stream resumed and dropped).
 *
 * What differs: `request.routeOptions.method` (and fastify's diagnostics channels' route
 * method) reads ['GET', 'HEAD'] instead of 'GET' or 'HEAD'; nothing in Berth reads it.
 * WebSocket routes keep fastify's twin (its HEAD answers an empty 404 and never upgrades):
 * they must declare `exposeHeadRoute: true`, and registering one that does not throws.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';

/**
 * Adds the hook to `app`; call it on an instance built with `exposeHeadRoutes: false`, before
 * any route is registered. Routes declared afterwards on it and its children are affected.
 * Throws (at registration) for a WebSocket route without `exposeHeadRoute: true`.
 */
export function answerHeadWithGet(app: FastifyInstance): void {
  app.addHook('onRoute', (opts: RouteOptions & { websocket?: boolean; wsHandler?: unknown }) => {
    if (opts.method !== 'GET' || opts.exposeHeadRoute === false) return;
    if (opts.websocket === true || opts.wsHandler !== undefined) {
      if (opts.exposeHeadRoute !== true) throw new Error(`WebSocket route ${opts.url} must declare exposeHeadRoute: true (it keeps fastify's HEAD route)`);
      return;
    }
    opts.method = ['GET', 'HEAD'];
    const own = opts.onSend;
    // Last, as fastify places its HEAD twin's hook after the route's own.
    opts.onSend = own === undefined ? [headOnSend] : [...[own].flat(), headOnSend];
  });
}

/** fastify's HEAD-twin onSend hook (fastify/lib/head-route.js), for the HEAD of a GET+HEAD route. */
function headOnSend(req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, payload?: unknown) => void): void {
  if (req.method !== 'HEAD') {
    done(null, payload);
    return;
  }
  if (payload === undefined) {
    void reply.header('content-length', '0');
    done(null, null);
    return;
  }
  const p = payload as { resume?: unknown; getReader?: unknown; on: (e: string, f: (err: Error) => void) => void; cancel: (reason: string) => Promise<void> };
  if (typeof p.resume === 'function') {
    p.on('error', (err) => reply.log.error({ err }, 'Error on Stream found for HEAD route'));
    (p.resume as () => void).call(p);
    done(null, null);
    return;
  }
  if (typeof p.getReader === 'function') {
    p.cancel('Stream cancelled by HEAD route').catch((err: unknown) => reply.log.error({ err }, 'Error on Stream found for HEAD route'));
    done(null, null);
    return;
  }
  void reply.header('content-length', '' + Buffer.byteLength(payload as string | Buffer));
  done(null, null);
}
