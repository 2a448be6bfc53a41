// docs/reference/README.md: the index of the generated reference.

import { generatedNote, table } from './markdown.js';

/** The pages, in the order a reader looks for them, with what each is generated from. */
export const PAGES: readonly { file: string; title: string; from: string }[] = [
  { file: 'cli.md', title: 'Command line (`berth`)', from: "the CLI's command definitions (src/cli `buildProgram`): every command, argument and flag with its help" },
  { file: 'job-file.md', title: 'Job file', from: "the job file's block table (src/spec-files `JOB_BODY`) and the job schema (src/structs `jobSpecSchema`): every block and attribute with its type and default" },
  { file: 'volume-file.md', title: 'Volume file', from: "the volume file's table (src/spec-files `VOLUME_BODY`) and the CSI and host volume schemas (src/structs)" },
  { file: 'http-api.md', title: 'HTTP API', from: "the routes the agent's API registers (src/server/http, src/agent), with their modules' comments and declared types; Nomad's routes and Berth's additions apart" },
  { file: 'metrics.md', title: 'Metrics', from: 'the metrics registries of the server, dev and client agents (prom-client)' },
];

/** The Markdown of docs/reference/README.md. */
export function indexReference(): string {
  return [
    generatedNote('scripts/reference/readme.ts'),
    '# Reference\n',
    "Generated from the code's own definitions by `npm run docs:gen` (scripts/gen-reference.ts); `test/docs/reference.test.ts` fails when a page is not what the code generates, so these pages are current with the code they sit beside. To change one, change the definition it comes from and run `npm run docs:gen`.\n",
    table(
      ['page', 'generated from'],
      PAGES.map((p) => [`[${p.title}](${p.file})`, p.from]),
    ),
    "How to do things with Berth: [docs/guide/](../guide/). Nomad's API in Berth and how it is checked: [docs/nomad-api.md](../nomad-api.md). How Berth is built: [docs/architecture.md](../architecture.md).\n",
  ].join('\n');
}
