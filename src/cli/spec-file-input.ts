// Reading job and volume files for the commands (`job run`, `plan`,
// `validate`, `volume create`...): a file or standard input of at most
// 1 MiB, the variables of a job file (--var, --var-file, NOMAD_VAR_*), the
// namespace and Nomad JSON it is sent as, and the server's refusals put back
// at their places in the file. The spec parsers are loaded on demand.

import { open } from 'node:fs/promises';
import type { Command } from 'commander';
import type * as api from '../api/index.js';
import type * as SpecFiles from '../spec-files/index.js';
import type * as Structs from '../structs/index.js';
import { ApiClientError } from './api-client.js';
import type { ApiSession } from './api-command.js';
import { nomadJobOf } from './job-json.js';
import { UsageError } from './usage-error.js';

/**
 * The spec parser (zod schemas, and HCL's WebAssembly once a file is HCL),
 * loaded by the commands that read files or follow a placement only: `job
 * status` and `job stop` talk to the API and need none of it.
 */
export const loadStructs = (): Promise<typeof Structs> => import('../structs/index.js');

/** The job and volume file readers (HCL's WebAssembly loads once a file is HCL). */
export const loadSpecFiles = (): Promise<typeof SpecFiles> => import('../spec-files/index.js');

/** The largest job or volume file read (structs' MAX_SPEC_FILE_BYTES, kept here so `job status` need not load structs). */
const MAX_SPEC_FILE_BYTES = 1024 * 1024;

/** How a file argument of `-` (standard input) is named in messages. */
export const STDIN_NAME = '<stdin>';

/** The name a spec file is given in messages: its path, or <stdin> for `-`. */
export const specFileName = (file: string): string => (file === '-' ? STDIN_NAME : file);

/** Reads standard input to its end, refusing more than MAX_SPEC_FILE_BYTES. */
async function readStdin(input: NodeJS.ReadableStream = process.stdin): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > MAX_SPEC_FILE_BYTES) throw new UsageError(`standard input is too large: more than ${MAX_SPEC_FILE_BYTES} bytes; job and volume files are at most 1 MiB`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Reads a spec file of at most 1 MiB, or standard input for `-`; a missing
 * or larger file is a usage error (nothing was sent). Reads no more than the
 * limit and one byte, whatever the file's size.
 */
export async function readSpecFile(file: string): Promise<string> {
  if (file === '-') return readStdin();
  let text: string;
  try {
    const handle = await open(file, 'r');
    try {
      const buf = Buffer.alloc(MAX_SPEC_FILE_BYTES + 1);
      let got = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buf, got, buf.length - got, null);
        if (bytesRead === 0) break;
        got += bytesRead;
        if (got === buf.length) break;
      }
      if (got > MAX_SPEC_FILE_BYTES) {
        const size = (await handle.stat()).size;
        throw new UsageError(`${file} is too large: ${size} bytes; job and volume files are at most ${MAX_SPEC_FILE_BYTES} bytes (1 MiB)`);
      }
      text = buf.subarray(0, got).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const code = (err as { code?: string }).code;
    throw new UsageError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (code ?? String(err))}`);
  }
  return text;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** `--var` and `--var-file` (Nomad's -var, -var-file), on every command that reads a job file. */
export function variableOptions(cmd: Command): Command {
  return cmd
    .option('--var <name=value>', 'set a variable the job file declares (repeatable); wins over --var-file and NOMAD_VAR_*/BERTH_VAR_*', collect, [])
    .option('--var-file <file>', 'read variable values from an HCL (name = value) or JSON file (repeatable)', collect, []);
}

/** How the CLI evaluates a job file: --var, --var-file, the NOMAD_VAR_ and BERTH_VAR_ environment, file functions allowed (as Nomad's CLI). */
async function jobFileOptions(opts: Record<string, unknown>): Promise<SpecFiles.JobFileOptions> {
  const varFiles = await Promise.all(((opts['varFile'] as string[] | undefined) ?? []).map(async (file) => ({ file, text: await readSpecFile(file) })));
  return { vars: (opts['var'] as string[] | undefined) ?? [], varFiles, env: process.env, allowFS: true };
}

/**
 * Reads and evaluates a job file as `job run`, `plan` and `validate` do
 * (`--json`: the file is JSON, whatever its name). Rejects with
 * SpecFileError or UsageError.
 */
export async function readJobFile(file: string, opts: Record<string, unknown>): Promise<SpecFiles.JobFile> {
  const { parseJobFile } = await loadSpecFiles();
  return parseJobFile(specFileName(file), await readSpecFile(file), { ...(await jobFileOptions(opts)), ...(opts['json'] ? { format: 'json' as const } : {}) });
}

/** The namespace a job file's job is for: the file's own, else the command's (Nomad's CLI sends a job to its namespace). */
export function fileNamespace(parsed: SpecFiles.JobFile, s: ApiSession): string {
  const ns = parsed.input['namespace'];
  return typeof ns === 'string' && ns !== '' ? ns : s.namespace;
}

/** A job file's job as the Nomad Job JSON `job run` sends, in `namespace`. */
export async function fileJobJson(parsed: SpecFiles.JobFile, namespace: string): Promise<api.Job> {
  return nomadJobOf({ ...parsed.job, namespace });
}

/**
 * Sends `job`, the Nomad JSON of a job file; when the server refuses it with
 * problems (at Nomad paths: `Job.TaskGroups[0].Volumes.data.Source`), throws
 * them at their places in the file instead (SpecFileError, file:line:col),
 * as the file's own problems are shown. Anything else is thrown as it came.
 */
export async function sendJobFile<T>(parsed: SpecFiles.JobFile, job: api.Job, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (err) {
    throw await locatedProblems(parsed, job, err);
  }
}

/** `err` as the file's own problems at their places when it is the server's INVALID with problems at Nomad paths; else `err` itself. */
export async function locatedProblems(parsed: SpecFiles.JobFile, job: api.Job, err: unknown): Promise<unknown> {
  if (!(err instanceof ApiClientError) || err.code !== 'INVALID') return err;
  const problems = err.details['problems'];
  const isProblem = (p: unknown): p is Structs.JobProblem => typeof (p as Structs.JobProblem)?.path === 'string' && typeof (p as Structs.JobProblem)?.message === 'string';
  if (!Array.isArray(problems) || problems.length === 0 || !problems.every(isProblem)) return err;
  const { fromNomadPaths, nomadJobToSpec } = await loadStructs();
  return parsed.problemsAt(fromNomadPaths(nomadJobToSpec({ Job: job }), problems));
}
