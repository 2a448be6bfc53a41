// Loaded with `node --import <this file> bin/berth.js ...`: appends the path
// (or node: name) of every module the process loads, ES modules and
// CommonJS alike, one per line, to the file named by BERTH_RECORD_MODULES.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';

const file = process.env.BERTH_RECORD_MODULES;
if (file) {
  register(new URL('./_record-hooks.mjs', import.meta.url), { data: { file } });
  const load = Module._load;
  Module._load = function recordingLoad(request, parent, isMain) {
    const loaded = load.call(this, request, parent, isMain);
    let name = request;
    try {
      name = Module.builtinModules.includes(request.replace(/^node:/, '')) ? `node:${request.replace(/^node:/, '')}` : Module._resolveFilename(request, parent, isMain);
    } catch {
      // recorded as requested
    }
    appendFileSync(file, `${name}\n`);
    return loaded;
  };
}
