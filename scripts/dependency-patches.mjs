// Edits the build makes to a few bundled dependencies (scripts/build.mjs), for
// the agent's start (issue 40): each one leaves what the code does as it was
// and only changes when work is done. Two kinds:
//
//   - work that a code cache cannot hold: find-my-way compiles a function with
//     `new Function` for every static node of the route tree and two for every
//     route (about 940 compiles at a dev agent's start). Closures that do the
//     same are compiled once, into the agent's V8 code cache (src/warm-start/).
//   - Node built-ins loaded at a module's top level for a use the agent makes
//     rarely or never (TLS, HTTP/2: about 12-15 ms of CPU at each start), now
//     required at their first use.
//
// Only dist/ is built with these; the sources under tsx (the tests) run the
// packages as published, which do the same. Each edit names the exact text it
// replaces and how many times that text must occur, and `members` lists every
// property the patched file may still read from a binding it turned lazy: a
// new release of a package whose text differs fails the build, naming the
// file, instead of shipping a half-applied edit. The build also fails if an
// edit's file was never bundled (a stale patch).

import { readFileSync } from 'node:fs';

/**
 * @typedef {{ find: string, replace: string, count?: number }} Edit
 * @typedef {{ file: string, why: string, edits: Edit[], members?: Record<string, string[]> }} Patch
 */

/** @type {Patch[]} */
export const DEPENDENCY_PATCHES = [
  {
    file: 'find-my-way/lib/node.js',
    why: 'a static node matched its prefix with a function compiled by new Function; String#startsWith does the same (the first char is checked by the caller)',
    edits: [
      {
        find: `  const lines = []
  for (let i = 1; i < prefix.length; i++) {
    const charCode = prefix.charCodeAt(i)
    lines.push(\`path.charCodeAt(i + \${i}) === \${charCode}\`)
  }
  return new Function('path', 'i', \`'use strict'\\nreturn \${lines.join(' && ')}\`) // eslint-disable-line
}`,
        replace: `  return function matchPrefix (path, i) {
    return path.startsWith(prefix, i)
  }
}`,
      },
    ],
  },
  {
    file: 'find-my-way/lib/handler-storage.js',
    why: "a route's params object was built by a function compiled by new Function, and its constraint matcher compiled at registration; a closure builds the same object, and the matcher (never called without constraints, which Berth's routes have none of) is compiled at its first call",
    edits: [
      {
        find: `    const fnBody = ["'use strict'"]

    // Parameter values arrive by position: the first four as arguments and
    // any further ones in the extraParams array. This mirrors how the
    // router's find() collects them without allocating an array.
    fnBody.push('const fn = function _createParamsObject (param0, param1, param2, param3, extraParams) {')

    fnBody.push('const params = new NullObject()')
    for (let i = 0; i < params.length; i++) {
      const value = i < 4 ? \`param\${i}\` : \`extraParams[\${i - 4}]\`
      fnBody.push(\`params[\${JSON.stringify(params[i])}] = \${value}\`)
    }
    fnBody.push('return params')
    fnBody.push('}')

    fnBody.push('return fn')

    return new Function('NullObject', fnBody.join('\\n'))(NullObject)  // eslint-disable-line`,
        replace: `    // Parameter values arrive by position: the first four as arguments and
    // any further ones in the extraParams array (as the router's find() collects them).
    const names = params.slice()
    const count = names.length
    return function _createParamsObject (param0, param1, param2, param3, extraParams) {
      const params = new NullObject()
      if (count > 0) params[names[0]] = param0
      if (count > 1) params[names[1]] = param1
      if (count > 2) params[names[2]] = param2
      if (count > 3) params[names[3]] = param3
      for (let i = 4; i < count; i++) params[names[i]] = extraParams[i - 4]
      return params
    }`,
      },
      {
        find: `    this._getHandlerMatchingConstraints = new Function('derivedConstraints', lines.join('\\n')) // eslint-disable-line`,
        replace: `    const body = lines.join('\\n')
    this._getHandlerMatchingConstraints = function (derivedConstraints) {
      this._getHandlerMatchingConstraints = new Function('derivedConstraints', body) // eslint-disable-line
      return this._getHandlerMatchingConstraints(derivedConstraints)
    }`,
      },
    ],
  },
  {
    file: 'fastify/lib/server.js',
    why: 'node:https and node:http2 (with TLS) were loaded at the top for an https or http2 server, which Berth never asks for, and node:dns for binding "localhost" to several addresses',
    edits: [
      { find: `const https = require('node:https')\n`, replace: `const https = { createServer: (...args) => require('node:https').createServer(...args) }\n` },
      {
        find: `const http2 = require('node:http2')\n`,
        replace: `const http2 = { createServer: (...args) => require('node:http2').createServer(...args), createSecureServer: (...args) => require('node:http2').createSecureServer(...args) }\n`,
      },
      { find: `const dns = require('node:dns')\n`, replace: `const dns = { lookup: (...args) => require('node:dns').lookup(...args) }\n` },
    ],
    members: { https: ['createServer'], http2: ['createServer', 'createSecureServer'], dns: ['lookup'] },
  },
  {
    file: 'ws/lib/websocket.js',
    why: "node:https and node:tls were loaded at the top for a wss:// client connection, which Berth opens only when the exec relay dials a node whose address is https (they load then)",
    edits: [
      { find: `const https = require('https');\n`, replace: `const https = { get request() { return require('https').request; } };\n` },
      { find: `const tls = require('tls');\n`, replace: `const tls = { connect: (...args) => require('tls').connect(...args) };\n` },
    ],
    members: { https: ['request'], tls: ['connect'] },
  },
  {
    file: 'prom-client/index.js',
    why: 'the Pushgateway client (node:https, node:http, zlib) was loaded at the top; Berth never pushes metrics',
    edits: [
      {
        find: `exports.Pushgateway = require('./lib/pushgateway');\n`,
        replace: `Object.defineProperty(exports, 'Pushgateway', { configurable: true, enumerable: true, get: () => require('./lib/pushgateway') });\n`,
      },
    ],
  },
  {
    file: 'prom-client/lib/metrics/processCpuTotal.js',
    why: "@opentelemetry/api (51 modules, ~2.7 ms of a dev agent's start) was loaded at the top for exemplars of the CPU metric, which Berth never enables; it loads at its first use",
    edits: [
      {
        find: `const OtelApi = require('@opentelemetry/api');\n`,
        replace: `const OtelApi = { get trace() { return require('@opentelemetry/api').trace; }, get context() { return require('@opentelemetry/api').context; } };\n`,
      },
    ],
    members: { OtelApi: ['trace', 'context'] },
  },
];

/** Where a patched file sits in a path esbuild loads (node_modules/<file>, any depth). */
const fileOf = (path) => {
  const unix = path.replaceAll('\\', '/');
  return DEPENDENCY_PATCHES.find((p) => unix.endsWith(`/node_modules/${p.file}`));
};

/** The patched text of `patch.file` read from `path`; throws naming the file and the edit that did not fit. */
export function applyPatch(patch, source, path) {
  let text = source;
  for (const edit of patch.edits) {
    const found = text.split(edit.find).length - 1;
    const want = edit.count ?? 1;
    if (found !== want) {
      throw new Error(`dependency patch ${patch.file} (${path}): expected ${want} occurrence(s) of ${JSON.stringify(edit.find.slice(0, 80))}, found ${found}; the package changed: update scripts/dependency-patches.mjs`);
    }
    text = text.replaceAll(edit.find, edit.replace);
  }
  // Code only: comments (JSDoc names types such as tls.TLSSocket) are left out of the check.
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  for (const [binding, allowed] of Object.entries(patch.members ?? {})) {
    for (const m of code.matchAll(new RegExp(`(?<![\\w.$])${binding}\\.(\\w+)`, 'g'))) {
      if (!allowed.includes(m[1])) {
        throw new Error(`dependency patch ${patch.file} (${path}): the file reads ${binding}.${m[1]}, which the lazy ${binding} does not provide; update scripts/dependency-patches.mjs`);
      }
    }
  }
  return text;
}

/**
 * An esbuild plugin applying DEPENDENCY_PATCHES to the files it bundles.
 * `applied` collects the patches used; checkApplied() then fails a build that
 * bundled none of a patch's file.
 */
export function dependencyPatches() {
  const applied = new Set();
  return {
    applied,
    checkApplied() {
      const stale = DEPENDENCY_PATCHES.filter((p) => !applied.has(p.file)).map((p) => p.file);
      if (stale.length) throw new Error(`dependency patches for files no longer bundled: ${stale.join(', ')}; remove them from scripts/dependency-patches.mjs`);
    },
    plugin: {
      name: 'berth-dependency-patches',
      setup(build) {
        build.onLoad({ filter: /[\\/]node_modules[\\/](find-my-way|fastify|ws|prom-client)[\\/].*\.js$/ }, (args) => {
          const patch = fileOf(args.path);
          if (!patch) return undefined;
          applied.add(patch.file);
          return { contents: applyPatch(patch, readFileSync(args.path, 'utf8'), args.path), loader: 'js' };
        });
      },
    },
  };
}
