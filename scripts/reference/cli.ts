// docs/reference/cli.md: every `berth` command from the CLI's own command
// tree (src/cli buildProgram, every command built), with the help text each
// prints, its arguments and its flags. Nothing is parsed or run: the tree is
// walked and each command's help is rendered into a buffer, 80 columns wide,
// without colours, as `berth <command> --help | cat` prints it.

import type { Argument, Command, Option } from 'commander';
import { buildProgram } from '../../src/cli/index.js';
import { anchor, cell, code, generatedNote, table } from './markdown.js';

const HELP_WIDTH = 80;

/** The command's words from the top: `berth volume snapshot create`. */
function pathOf(cmd: Command): string {
  const words: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) words.unshift(c.name());
  return words.join(' ');
}

function argumentRow(arg: Argument): string[] {
  const name = `${arg.required ? '<' : '['}${arg.name()}${arg.variadic ? '...' : ''}${arg.required ? '>' : ']'}`;
  const extra = [arg.argChoices ? `one of: ${arg.argChoices.join(', ')}` : '', arg.defaultValue !== undefined ? `default: ${JSON.stringify(arg.defaultValue)}` : ''].filter(Boolean);
  return [code(name), cell([arg.description, ...extra].filter(Boolean).join('; '))];
}

function optionRow(opt: Option): string[] {
  const extra = [
    opt.argChoices ? `one of: ${opt.argChoices.join(', ')}` : '',
    opt.defaultValue !== undefined && opt.defaultValue !== false ? `default: ${JSON.stringify(opt.defaultValue)}` : '',
    opt.envVar ? `env: ${opt.envVar}` : '',
    opt.mandatory ? 'required' : '',
  ].filter(Boolean);
  return [code(opt.flags), cell([opt.description, ...extra].filter(Boolean).join('; '))];
}

/** Every command below `cmd` (itself first), depth first in definition order; hidden ones left out. */
function walk(cmd: Command): Command[] {
  const hidden = (c: Command): boolean => (c as unknown as { _hidden?: boolean })._hidden === true;
  return [cmd, ...cmd.commands.filter((c) => !hidden(c)).flatMap((c) => walk(c))];
}

/** Flags carried by at least this many commands, with the same words, are listed once, under "Common flags". */
const COMMON_AT = 10;

const flagKey = (opt: Option): string => `${opt.flags}\0${opt.description}`;

/** The Markdown of docs/reference/cli.md. */
export async function cliReference(): Promise<string> {
  let captured = '';
  const io = { stdout: (t: string): void => void (captured += t), stderr: (t: string): void => void (captured += t) };
  const program = await buildProgram({ io });
  const commands = walk(program);
  // What `--help` prints after the usage, options and commands: examples, exit codes.
  const extraOf = (cmd: Command): string => {
    cmd.configureOutput({ getOutHelpWidth: () => HELP_WIDTH, getErrHelpWidth: () => HELP_WIDTH, getOutHasColors: () => false, getErrHasColors: () => false });
    captured = '';
    cmd.outputHelp();
    const info = cmd.helpInformation();
    const at = captured.indexOf(info);
    return (at < 0 ? '' : captured.slice(at + info.length)).replace(/[ \t]+$/gm, '').trim();
  };
  const extras = new Map(commands.map((c) => [c, extraOf(c)]));
  const exitBlock = (text: string): string => {
    const at = text.search(/^Exit codes:/m);
    return at < 0 ? '' : text.slice(at);
  };
  const common = mostFrequent([...extras.values()].map(exitBlock).filter(Boolean));
  const counts = new Map<string, number>();
  for (const c of commands) for (const o of c.options) counts.set(flagKey(o), (counts.get(flagKey(o)) ?? 0) + 1);
  const isCommon = (o: Option): boolean => (counts.get(flagKey(o)) ?? 0) >= COMMON_AT;
  const commonFlags = new Map<string, Option>();
  for (const c of commands) for (const o of c.options) if (isCommon(o) && !o.hidden) commonFlags.set(flagKey(o), o);

  const out: string[] = [
    generatedNote("the CLI's command definitions (src/cli, `buildProgram`)"),
    '# `berth` command line reference\n',
    "Every command with its arguments, its flags and the rest of what `berth <command> --help` prints (examples, exit codes). Flags take one dash or two, as Nomad's do (`-json`, `--json`); every command also takes `-h, --help`. How to use them for a task: [docs/guide/](../guide/).\n",
    '## Commands\n',
    table(
      ['command', 'what it does'],
      commands.slice(1).map((c) => [`[${code(pathOf(c))}](#${anchor(pathOf(c))})`, cell(c.summary() || c.description().split('\n')[0] || '')]),
    ),
    '## Common flags\n',
    'Flags that many commands take, with the same meaning; each command below says which of them it takes.\n',
    table(['flag', 'description'], [...commonFlags.values()].map(optionRow)),
  ];
  if (common) out.push('## Exit codes\n', 'What most commands exit with; a command that differs lists its own.\n', '```text\n' + common.replace(/^Exit codes:\n?/, '') + '\n```\n');
  for (const cmd of commands) {
    const title = pathOf(cmd);
    out.push(`## ${title}\n`, '```text\n' + `Usage: ${title} ${cmd.usage()}`.trimEnd() + '\n```\n');
    if (cmd.description()) out.push(`${cmd.description().trim()}\n`);
    if (cmd.aliases().length) out.push(`Aliases: ${cmd.aliases().map(code).join(', ')}\n`);
    const args = cmd.registeredArguments;
    if (args.length) out.push(table(['argument', 'description'], args.map(argumentRow)));
    const own = cmd.options.filter((o) => !o.hidden && !isCommon(o));
    const shared = cmd.options.filter((o) => !o.hidden && isCommon(o));
    if (own.length) out.push(table(['flag', 'description'], own.map(optionRow)));
    if (shared.length) out.push(`Common flags: ${shared.map((o) => code(o.long ?? o.flags)).join(', ')} ([what they do](#common-flags)).\n`);
    const subs = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
    if (subs.length && cmd !== program) out.push(`Subcommands: ${subs.map((c) => `[${code(c.name())}](#${anchor(pathOf(c))})`).join(', ')}.\n`);
    let extra = extras.get(cmd) ?? '';
    if (common && exitBlock(extra) === common) {
      extra = extra.slice(0, extra.length - common.length).trimEnd();
      out.push('Exit codes: [as most commands](#exit-codes).\n');
    }
    if (extra) out.push('```text\n' + extra + '\n```\n');
  }
  return out.join('\n');
}

/** The most frequent of `texts` (the first of equals), or '' when there are none. */
function mostFrequent(texts: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const t of texts) counts.set(t, (counts.get(t) ?? 0) + 1);
  let best = '';
  for (const [t, n] of counts) if (n > (counts.get(best) ?? 0)) best = t;
  return best;
}
