// Nomad's CLI spells every flag with one dash (`-detach`, `-address=...`,
// `-json`); Berth's uses two. Before commander parses, each `-name` or
// `-name=value` whose name is a long option of the command being run (known
// from the commander tree) becomes `--name`; short flags (`-n 5`, `-f`,
// `-ft`) and negative numbers pass unchanged, and an unknown one-dash word is
// refused by name with the command's options.

import type { Command, Option } from 'commander';
import { UsageError } from './usage-error.js';

/** The command path of `cmd` as a user types it: `berth job run`. */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

const takesValue = (o: Option): boolean => o.required || o.optional;

/**
 * `argv` (without node and script) with Nomad-style one-dash long options
 * rewritten as `--name`, for `program`'s tree (whichever commands of it are
 * built). Stops at `--`, and in a command whose last argument is variadic
 * (`alloc exec ID CMD...`) at that argument, so a remote command's own flags
 * pass untouched. Throws UsageError for a one-dash word that is neither a
 * long option nor a run of short ones of the command. Pure.
 */
export function normalizeFlags(program: Command, argv: readonly string[]): string[] {
  const out: string[] = [];
  let cmd = program;
  let positionals = 0;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const variadicFrom = cmd.registeredArguments.findIndex((a) => a.variadic);
    if (arg === '--' || (variadicFrom >= 0 && positionals >= variadicFrom && positionals > 0)) {
      out.push(...argv.slice(i));
      break;
    }
    const pushValue = (o: Option | undefined, inline: boolean): void => {
      if (!o || inline || !takesValue(o) || i + 1 >= argv.length) return;
      const next = argv[i + 1] as string;
      if (o.optional && next.startsWith('-')) return;
      out.push(next);
      i++;
    };
    if (!arg.startsWith('-') || arg === '-') {
      const sub = positionals === 0 ? cmd.commands.find((c) => c.name() === arg || c.aliases().includes(arg)) : undefined;
      if (sub) cmd = sub;
      else positionals++;
      out.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const inline = eq >= 0;
    if (arg.startsWith('--')) {
      out.push(arg);
      pushValue(cmd.options.find((o) => o.long === (inline ? arg.slice(0, eq) : arg)), inline);
      continue;
    }
    const name = arg.slice(1, inline ? eq : undefined);
    if (/^\d/.test(name)) {
      out.push(arg);
      continue;
    }
    const long = cmd.options.find((o) => o.long === `--${name}`);
    if (long || name === 'help') {
      out.push(`-${arg}`);
      pushValue(long, inline);
      continue;
    }
    // -n 5, -f, -ft: commander's own short options (a value may be attached: -n5).
    const shorts = cmd.options.filter((o) => o.short);
    const first = shorts.find((o) => o.short === `-${name[0]}`);
    if (name === 'h' || (first && (takesValue(first) || [...name].every((c) => c === 'h' || shorts.some((o) => o.short === `-${c}` && !takesValue(o)))))) {
      out.push(arg);
      if (name.length === 1) pushValue(first, inline);
      continue;
    }
    const known = cmd.options.map((o) => `-${(o.long ?? o.short ?? '').replace(/^-+/, '')}`);
    throw new UsageError(
      `unknown option "${inline ? arg.slice(0, eq) : arg}" for "${commandPath(cmd)}"` +
        (known.length ? `; its options (with one dash or two): ${known.join(', ')}` : '; it takes no options') +
        ` (see ${commandPath(cmd)} --help)`,
    );
  }
  return out;
}
