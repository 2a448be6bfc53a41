// `berth namespace apply|list|status|inspect|delete`: namespaces as Nomad's
// command/namespace_*.go manage and show them (Nomad 1.1's output, with the
// Metadata section of later Nomad versions).

import { readFile, stat } from 'node:fs/promises';
import { Command } from 'commander';
import type { Namespace, NamespaceWriteRequest } from '../api/index.js';
import { ApiClientError } from './api-client.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { formatKV } from './job-json.js';
import { specFileName } from './spec-file-input.js';
import { UsageError } from './usage-error.js';

const NAMESPACE_HELP = `
Namespaces keep jobs, their allocations, evaluations, deployments, services and volumes apart. Every
object is in one ("default" unless it names another); a job or volume can only be registered into a
namespace that exists. The other commands take --namespace (or $NOMAD_NAMESPACE); "*" lists every
namespace where Nomad allows it (job status, alloc, eval, deployment and volume lists, service list).`;

/** Builds `berth namespace`. */
export function namespaceCommand(ctx: CommandContext): Command {
  const ns = new Command('namespace').description('Create, list, inspect and delete namespaces').addHelpText('after', NAMESPACE_HELP);
  apiCommand(
    ns
      .command('apply')
      .summary('Create or update a namespace')
      .description(
        'Create or update a namespace. Given a name, only what the flags set changes (the rest is kept); given a file (- for stdin) of api.Namespace as JSON (Name, Description, Meta), the file is the whole namespace',
      )
      .argument('<input>', 'the name, or a JSON file, or - for stdin')
      .option('--description <text>', 'an optional description for the namespace')
      .option('--quota <name>', 'the quota to attach (Berth has no quotas: any name is refused, as Nomad refuses an unknown quota)'),
    ['namespace apply -description "Production services" prod', 'namespace apply -json prod.json', 'cat prod.json | berth namespace apply -json -'],
    { jsonInput: true },
  ).action(apiAction(ctx, apply));
  apiCommand(ns.command('list').description('List namespaces'), ['namespace list', 'namespace list --json']).action(apiAction(ctx, list));
  apiCommand(
    ns.command('status').description("Show a namespace's name, description, quota and meta").argument('<namespace>', 'name or a unique prefix'),
    ['namespace status prod', 'namespace status pr --json'],
  ).action(apiAction(ctx, status));
  apiCommand(ns.command('inspect').description('Print a namespace as JSON (api.Namespace)').argument('<namespace>', 'name or a unique prefix'), ['namespace inspect prod']).action(
    apiAction(ctx, async (s, [name]) => s.out.document(await lookup(s, name as string))),
  );
  apiCommand(
    ns
      .command('delete')
      .summary('Delete a namespace')
      .description('Delete a namespace; refused while it holds jobs that are not dead, running allocations or volumes').argument('<namespace>', 'name'),
    ['namespace delete prod'],
  ).action(apiAction(ctx, remove));
  return ns;
}

async function apply(s: ApiSession, [arg]: string[], opts: Record<string, unknown>): Promise<void> {
  const target = arg as string;
  let ns: NamespaceWriteRequest;
  // Nomad's rule: an argument that is a file (or -) is read as the namespace; anything else is its name.
  if (target === '-' || (await stat(target).then((st) => st.isFile(), () => false))) {
    if (opts['description'] !== undefined || opts['quota'] !== undefined) s.out.warn('Flags are ignored when a file is specified!');
    ns = await namespaceFile(target);
  } else {
    if (target === '') throw new UsageError('Namespace name required');
    // Nomad's apply changes only what is given: the rest of an existing namespace is kept.
    const existing = await s.api.get<Namespace>(`/v1/namespace/${encodeURIComponent(target)}`).then(
      (r) => r.body,
      (err: unknown) => {
        if (err instanceof ApiClientError && err.status === 404) return undefined;
        throw err;
      },
    );
    ns = { Name: target, Description: existing?.Description ?? '', Meta: existing?.Meta ?? null, Quota: existing?.Quota ?? '' };
    if (typeof opts['description'] === 'string') ns.Description = opts['description'];
    if (typeof opts['quota'] === 'string') ns.Quota = opts['quota'];
  }
  const { index } = await s.api.request('PUT', `/v1/namespace/${encodeURIComponent(ns.Name ?? '')}`, { body: ns });
  if (s.out.json) return s.out.document({ Name: ns.Name, Index: index });
  s.out.line(`Successfully applied namespace ${JSON.stringify(ns.Name)}!`);
}

/** A JSON namespace file (or `-`, standard input) as api.Namespace. Throws UsageError naming the file. */
async function namespaceFile(file: string): Promise<NamespaceWriteRequest> {
  let text: string;
  try {
    text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`Failed to read file ${specFileName(file)}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`Failed to parse namespace ${specFileName(file)}: ${(err as Error).message} (Berth reads namespace files as JSON, api.Namespace; not HCL)`);
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new UsageError(`Failed to parse namespace ${specFileName(file)}: not a JSON object`);
  const ns = doc as NamespaceWriteRequest;
  if (typeof ns.Name !== 'string' || ns.Name === '') throw new UsageError(`${specFileName(file)}: "Name" is required`);
  return ns;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

async function list(s: ApiSession): Promise<void> {
  const { body } = await s.api.get<Namespace[]>('/v1/namespaces');
  if (s.out.json) return s.out.document(body);
  if (body.length === 0) return s.out.line('No namespaces found');
  printTable(s, body);
}

function printTable(s: ApiSession, rows: readonly Namespace[]): void {
  s.out.table(
    ['Name', 'Description'],
    rows.map((n) => [n.Name, n.Description]),
  );
}

/**
 * The namespace named `name`, or the one whose name it uniquely prefixes (Nomad's getNamespace). Throws
 * ApiClientError NOT_FOUND or CLI_AMBIGUOUS_PREFIX (listing the matches) in Nomad's words.
 */
async function lookup(s: ApiSession, name: string): Promise<Namespace> {
  const { body } = await s.api.get<Namespace[]>('/v1/namespaces', { prefix: name });
  const exact = body.find((n) => n.Name === name);
  if (exact) return exact;
  if (body.length === 0) throw new ApiClientError('NOT_FOUND', `Namespace ${JSON.stringify(name)} matched no namespaces`, 404);
  if (body.length > 1) {
    throw new ApiClientError('CLI_AMBIGUOUS_PREFIX', 'Prefix matched multiple namespaces', 0, { matches: body.map((n) => `${n.Name}  ${n.Description}`.trimEnd()) });
  }
  return body[0] as Namespace;
}

async function status(s: ApiSession, [name]: string[]): Promise<void> {
  const ns = await lookup(s, name as string);
  if (s.out.json) return s.out.document(ns);
  for (const line of formatKV([
    ['Name', ns.Name],
    ['Description', ns.Description],
    ['Quota', ns.Quota || '<none>'],
  ]))
    s.out.line(line);
  const meta = Object.entries(ns.Meta ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (meta.length) {
    s.out.line('');
    s.out.line(s.style.bold('Metadata'));
    for (const line of formatKV(meta)) s.out.line(line);
  }
}

async function remove(s: ApiSession, [name]: string[]): Promise<void> {
  const { index } = await s.api.request('DELETE', `/v1/namespace/${encodeURIComponent(name as string)}`);
  if (s.out.json) return s.out.document({ Name: name, Index: index });
  s.out.line(`Successfully deleted namespace ${JSON.stringify(name)}!`);
}
