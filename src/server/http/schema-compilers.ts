// Fastify's schema compilers, replaced: Berth's routes validate their input
// with zod (src/structs, src/api) and declare no fastify schema, so fastify's
// own compilers (ajv with its formats, fast-json-stringify: about a megabyte
// of JavaScript that fastify loads at every start, the largest part of
// building the API) are never loaded. The build leaves them out of dist/
// (scripts/build.mjs). A route that declares a body, query, params, headers
// or response schema anyway fails when the server starts, naming it.

import type { FastifyServerOptions } from 'fastify';

/** A compiler factory whose compiler refuses every route schema (fastify calls it with the route's method, url and part). */
const refuse =
  (what: string) =>
  () =>
  (route: unknown): never => {
    const { url, method, httpPart } = route as { url: string; method: string; httpPart?: string };
    throw new Error(`${method} ${url} declares a fastify ${what} schema${httpPart ? ` (${httpPart})` : ''}; Berth's routes validate with zod instead`);
  };
type Factories = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;

/** Fastify's `schemaController` option for a Berth listener: no ajv, no fast-json-stringify. */
export const NO_SCHEMA_COMPILERS: NonNullable<FastifyServerOptions['schemaController']> = {
  compilersFactory: { buildValidator: refuse('validation') as Factories['buildValidator'], buildSerializer: refuse('response') as Factories['buildSerializer'] },
};
